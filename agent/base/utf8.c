/* SPDX-License-Identifier: MIT */
/*
 * utf8.c: UTF-8 validation, encoding, cutting and replacement (see utf8.h).
 */
#include "base/compat.h"

#include <stdatomic.h>

#include "base/utf8.h"

static _Atomic uint64_t utf8_replaced;

size_t utf8_seq_len(const unsigned char *s, size_t n, uint32_t *cp)
{
    if (n == 0)
        return 0;
    size_t len;
    uint32_t v, min;
    if (s[0] < 0x80) {
        if (cp)
            *cp = s[0];
        return 1;
    }
    if ((s[0] & 0xe0) == 0xc0) {
        len = 2, v = s[0] & 0x1fu, min = 0x80;
    } else if ((s[0] & 0xf0) == 0xe0) {
        len = 3, v = s[0] & 0x0fu, min = 0x800;
    } else if ((s[0] & 0xf8) == 0xf0) {
        len = 4, v = s[0] & 0x07u, min = 0x10000;
    } else {
        return 0; /* a continuation byte, or 0xf8-0xff */
    }
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        v = (v << 6) | (s[i] & 0x3fu);
    }
    if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
        return 0; /* overlong, beyond Unicode, a surrogate */
    if (cp)
        *cp = v;
    return len;
}

bool utf8_valid(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        if (p[i] == 0)
            return false;
        size_t l = utf8_seq_len(p + i, n - i, NULL);
        if (l == 0)
            return false;
        i += l;
    }
    return true;
}

size_t utf8_encode(uint32_t cp, unsigned char *out)
{
    if ((cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
        cp = UTF8_REPLACEMENT;
    if (cp < 0x80) {
        out[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (unsigned char)(0xc0 | (cp >> 6));
        out[1] = (unsigned char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (unsigned char)(0xe0 | (cp >> 12));
        out[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
        out[2] = (unsigned char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (unsigned char)(0xf0 | (cp >> 18));
    out[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
    out[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
    out[3] = (unsigned char)(0x80 | (cp & 0x3f));
    return 4;
}

size_t utf8_cut(const char *s, size_t n, size_t max)
{
    if (n <= max)
        return n;
    const unsigned char *p = (const unsigned char *)s;
    size_t cut = max;
    /* back over the continuation bytes before the cut, to a lead byte */
    size_t back = 0;
    while (cut > 0 && back < UTF8_MAX_SEQ && (p[cut] & 0xc0) == 0x80) {
        cut--;
        back++;
    }
    /* p[cut] starts the sequence the cut would split (or is the cut itself) */
    return cut;
}

/*
 * What the lead byte @c announces: how many continuation bytes follow (0 for
 * a byte that starts nothing) and the range the first of them must be in
 * (Unicode Table 3-7, well-formed byte sequences).
 */
static size_t utf8_lead(unsigned char c, unsigned char *lo, unsigned char *hi)
{
    *lo = 0x80;
    *hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf)
        return 1;
    if (c >= 0xe0 && c <= 0xef) {
        if (c == 0xe0)
            *lo = 0xa0; /* below: overlong */
        else if (c == 0xed)
            *hi = 0x9f; /* above: a surrogate */
        return 2;
    }
    if (c >= 0xf0 && c <= 0xf4) {
        if (c == 0xf0)
            *lo = 0x90; /* below: overlong */
        else if (c == 0xf4)
            *hi = 0x8f; /* above: beyond U+10FFFF */
        return 3;
    }
    return 0;
}

/* How many of the bytes after the lead @s[0] (at most @need, within @n) could continue it. */
static size_t utf8_continuation(const unsigned char *s, size_t n, size_t need, unsigned char lo,
                                unsigned char hi)
{
    size_t i = 1;
    for (; i <= need && i < n; i++) {
        if (i == 1 ? s[i] < lo || s[i] > hi : (s[i] & 0xc0) != 0x80)
            break;
    }
    return i - 1;
}

size_t utf8_next(const unsigned char *s, size_t n, bool *valid)
{
    PYPROFD_ASSERT(n > 0);
    size_t len = utf8_seq_len(s, n, NULL);
    *valid = len > 0;
    if (len)
        return len;
    unsigned char lo, hi;
    size_t need = utf8_lead(s[0], &lo, &hi);
    /* the lead byte and what could still have completed it; never all of it */
    size_t got = need ? utf8_continuation(s, n, need, lo, hi) : 0;
    PYPROFD_ASSERT(need == 0 || got < need);
    return 1 + got;
}

/* The length of the run of ASCII bytes at @s (< @n), which every step copies as is. */
static size_t utf8_ascii_run(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n && s[i] < 0x80)
        i++;
    return i;
}

size_t utf8_sanitize(char *out, size_t cap, const char *in, size_t n)
{
    const unsigned char *p = (const unsigned char *)in;
    size_t o = 0;
    uint64_t replaced = 0;
    if (cap == 0)
        return 0;
    for (size_t i = 0; i < n;) {
        size_t run = utf8_ascii_run(p + i, n - i);
        if (run) {
            if (run > cap - 1 - o)
                run = cap - 1 - o;
            memcpy(out + o, in + i, run);
            o += run;
            i += run;
            if (o == cap - 1)
                break;
            continue;
        }
        bool valid;
        size_t len = utf8_next(p + i, n - i, &valid);
        size_t w = valid ? len : UTF8_REPLACEMENT_LEN;
        if (w > cap - 1 - o)
            break; /* does not fit: stop on the boundary before it */
        memcpy(out + o, valid ? in + i : UTF8_REPLACEMENT_STR, w);
        o += w;
        i += len;
        replaced += !valid;
    }
    out[o] = '\0';
    if (replaced)
        utf8_count_replaced(replaced);
    return o;
}

size_t utf8_sanitized_len(const char *in, size_t n, size_t *replaced)
{
    const unsigned char *p = (const unsigned char *)in;
    size_t o = 0, bad = 0;
    for (size_t i = 0; i < n;) {
        bool valid = true;
        size_t len = 1;
        if (p[i] >= 0x80)
            len = utf8_next(p + i, n - i, &valid);
        o += valid ? len : UTF8_REPLACEMENT_LEN;
        bad += !valid;
        i += len;
    }
    if (replaced)
        *replaced = bad;
    return o;
}

size_t utf8_trim_cut(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    /* the lead byte of a cut sequence is at most 3 bytes from the end */
    for (size_t back = 1; back <= 3 && back <= n; back++) {
        size_t at = n - back;
        unsigned char lo, hi;
        size_t need = utf8_lead(p[at], &lo, &hi);
        if (need == 0) {
            if ((p[at] & 0xc0) == 0x80)
                continue; /* a continuation byte: look further back */
            return n;     /* ASCII or a byte that starts nothing */
        }
        /* a lead: cut short when fewer bytes follow than it needs, all of them plausible */
        if (back - 1 < need && utf8_continuation(p + at, back, need, lo, hi) == back - 1)
            return at;
        return n;
    }
    return n;
}

void utf8_count_replaced(uint64_t n)
{
    atomic_fetch_add_explicit(&utf8_replaced, n, memory_order_relaxed);
}

uint64_t utf8_replaced_total(void)
{
    return atomic_load_explicit(&utf8_replaced, memory_order_relaxed);
}
