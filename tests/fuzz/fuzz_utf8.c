/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: agent/base/utf8.c's replacement of invalid UTF-8, the
 * boundary every string from outside passes (utf8_sanitize()). The first
 * byte sets the output size (its value + 1, or the full size when 255); the
 * rest is the text. Checks: the output is valid UTF-8 (NULs aside), fits,
 * is what utf8_sanitized_len() announced when it all fits, is a prefix of
 * the whole result cut on a character boundary otherwise, changes nothing
 * when sanitised again, leaves valid input as it was, and
 * utf8_trim_cut() only ever removes one cut-short sequence at the end.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Valid UTF-8 where NUL bytes are allowed (utf8_valid() refuses them). */
static bool fuzz_valid(const char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        size_t l = utf8_seq_len((const unsigned char *)s + i, n - i, NULL);
        if (l == 0)
            return false;
        i += l;
    }
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    const char *in = (const char *)data + 1;
    size_t n = size - 1;
    size_t replaced = 0;
    size_t need = utf8_sanitized_len(in, n, &replaced);
    PYPROFD_ASSERT(need >= n && need <= n + 2 * replaced);
    size_t cap = data[0] == 255 ? need + 1 : (size_t)data[0] + 1;
    char *whole = alloc_malloc(need + 1);
    char *out = alloc_malloc(cap);
    char *again = alloc_malloc(need + 1);
    if (!whole || !out || !again)
        goto out;
    size_t wlen = utf8_sanitize(whole, need + 1, in, n);
    PYPROFD_ASSERT(wlen == need && whole[wlen] == '\0' && fuzz_valid(whole, wlen));
    PYPROFD_ASSERT(replaced > 0 || (wlen == n && memcmp(whole, in, n) == 0));

    size_t olen = utf8_sanitize(out, cap, in, n);
    PYPROFD_ASSERT(olen < cap && out[olen] == '\0' && olen <= wlen);
    PYPROFD_ASSERT(memcmp(out, whole, olen) == 0 && fuzz_valid(out, olen));
    /* cut on a boundary, and no earlier than it had to be */
    PYPROFD_ASSERT(olen == wlen || utf8_cut(whole, wlen, cap - 1) == olen);

    size_t again_rep = 99;
    PYPROFD_ASSERT(utf8_sanitized_len(whole, wlen, &again_rep) == wlen && again_rep == 0);
    PYPROFD_ASSERT(utf8_sanitize(again, wlen + 1, whole, wlen) == wlen);
    PYPROFD_ASSERT(memcmp(again, whole, wlen) == 0);

    size_t t = utf8_trim_cut(in, n);
    PYPROFD_ASSERT(t <= n && n - t <= 3);
    if (t < n) {
        /* what was trimmed is one U+FFFD at the end of the whole result */
        size_t trep = 0, tlen = utf8_sanitized_len(in, t, &trep);
        PYPROFD_ASSERT(trep + 1 == replaced && tlen + UTF8_REPLACEMENT_LEN == wlen);
        PYPROFD_ASSERT(memcmp(whole + tlen, UTF8_REPLACEMENT_STR, UTF8_REPLACEMENT_LEN) == 0);
    }
out:
    alloc_free(whole);
    alloc_free(out);
    alloc_free(again);
    return 0;
}
