/* SPDX-License-Identifier: MIT */
/*
 * utf8.c: UTF-8 validation, encoding and cutting (see utf8.h).
 */
#include "base/compat.h"

#include "base/utf8.h"

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
