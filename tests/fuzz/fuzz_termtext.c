/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: escaping target text for a terminal (agent/base/termtext.c).
 * The first two bytes pick the output buffer size (1..256) and the column
 * budget (0..254, 255: none); the rest is the text. Checks that what the
 * terminal would get holds no control character (C0, DEL, C1) and is valid
 * UTF-8, that a cut output is a prefix of the whole one and stays inside its
 * budget, and that the width function agrees with the escaper.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/termtext.h"
#include "base/utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Whether @a s (@a n bytes) is something a terminal only shows. */
static bool fuzz_inert(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        uint32_t cp = 0;
        size_t k = utf8_seq_len(u + i, n - i, &cp);
        if (k == 0 || cp < 0x20 || (cp >= 0x7f && cp <= 0x9f))
            return false;
        i += k;
    }
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    size_t out_size = (size_t)data[0] + 1;
    size_t max_cols = data[1] == 255 ? SIZE_MAX : data[1];
    const char *s = (const char *)data + 2;
    size_t n = size - 2;
    size_t full_size = TERMTEXT_MAX_GROWTH * n + 1;
    char *full = alloc_malloc(full_size);
    char *cut = alloc_malloc(out_size);
    char *again = alloc_malloc(out_size);
    if (!full || !cut || !again)
        goto out;

    size_t cols = 0;
    size_t took = termtext_escape(s, n, full, full_size, SIZE_MAX, &cols);
    size_t len = strlen(full);
    PYPROFD_ASSERT(took == n);
    PYPROFD_ASSERT(len < full_size);
    PYPROFD_ASSERT(fuzz_inert(full, len));
    PYPROFD_ASSERT(cols == termtext_width(s, n));
    PYPROFD_ASSERT(cols >= n / UTF8_MAX_SEQ); /* every piece is at least one column */

    size_t cut_cols = 0;
    size_t cut_took = termtext_escape(s, n, cut, out_size, max_cols, &cut_cols);
    size_t cut_len = strlen(cut);
    PYPROFD_ASSERT(cut_took <= n);
    PYPROFD_ASSERT(cut_len < out_size && cut_cols <= max_cols);
    PYPROFD_ASSERT(memcmp(cut, full, cut_len) == 0);
    PYPROFD_ASSERT(cut_cols == termtext_width(s, cut_took));
    /* the cut is where a piece ends: escaping just the bytes taken gives the same */
    size_t again_took = termtext_escape(s, cut_took, again, out_size, SIZE_MAX, NULL);
    PYPROFD_ASSERT(again_took == cut_took && strcmp(again, cut) == 0);
    PYPROFD_ASSERT(cut_took == n || cut_len < len);
out:
    alloc_free(full);
    alloc_free(cut);
    alloc_free(again);
    return 0;
}
