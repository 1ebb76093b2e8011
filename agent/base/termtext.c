/* SPDX-License-Identifier: MIT */
/*
 * termtext.c: escaping target text for a terminal (see termtext.h).
 */
#include "base/compat.h"

#include "base/termtext.h"
#include "base/utf8.h"

/*
 * Code points a terminal shows two columns wide: the East Asian wide and
 * full-width blocks and the emoji blocks, taken broadly (whole blocks where
 * most of a block is wide: counting a narrow one as 2 only cuts a line
 * early). Sorted, not overlapping.
 */
static const struct {
    uint32_t lo, hi;
} termtext_wide[] = {
    {0x1100, 0x115F},   {0x231A, 0x231B},   {0x2329, 0x232A},   {0x23E9, 0x23FA},
    {0x25FD, 0x25FE},   {0x2600, 0x27BF},   {0x2B1B, 0x2B55},   {0x2E80, 0x303E},
    {0x3041, 0xA4CF},   {0xA960, 0xA97F},   {0xAC00, 0xD7A3},   {0xF900, 0xFAFF},
    {0xFE10, 0xFE19},   {0xFE30, 0xFE6F},   {0xFF00, 0xFF60},   {0xFFE0, 0xFFE6},
    {0x16FE0, 0x16FE4}, {0x17000, 0x18CFF}, {0x1AFF0, 0x1B2FF}, {0x1F000, 0x1FAFF},
    {0x20000, 0x3FFFD},
};

static size_t termtext_cp_width(uint32_t cp)
{
    size_t lo = 0, hi = PYPROFD_ARRAY_SIZE(termtext_wide);
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cp < termtext_wide[mid].lo)
            hi = mid;
        else if (cp > termtext_wide[mid].hi)
            lo = mid + 1;
        else
            return 2;
    }
    return 1;
}

/*
 * The piece of text that starts at @a s (@a n > 0 bytes left): how many
 * input bytes it covers (*@a len), whether they are shown escaped, and its
 * columns. A piece is one character kept as it is, one escaped byte, or the
 * two escaped bytes of a C1 control.
 */
static void termtext_piece(const unsigned char *s, size_t n, size_t *len, bool *escaped,
                           size_t *cols)
{
    unsigned char c = s[0];
    *len = 1;
    *escaped = true;
    if (c < 0x20 || c == 0x7f) {
        *cols = TERMTEXT_MAX_GROWTH;
        return;
    }
    if (c < 0x80) {
        *escaped = false;
        *cols = 1;
        return;
    }
    uint32_t cp = 0;
    size_t k = utf8_seq_len(s, n, &cp);
    if (k == 0) { /* not UTF-8: this byte alone */
        *cols = TERMTEXT_MAX_GROWTH;
        return;
    }
    *len = k;
    if (cp >= 0x80 && cp <= 0x9f) { /* C1: both bytes of it */
        *cols = TERMTEXT_MAX_GROWTH * k;
        return;
    }
    *escaped = false;
    *cols = termtext_cp_width(cp);
}

size_t termtext_escape(const char *s, size_t n, char *out, size_t size, size_t max_cols,
                       size_t *cols)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, o = 0, w = 0;
    while (i < n) {
        size_t len, pw;
        bool escaped;
        termtext_piece(u + i, n - i, &len, &escaped, &pw);
        size_t bytes = escaped ? TERMTEXT_MAX_GROWTH * len : len;
        if (size == 0 || bytes > size - 1 - o || pw > max_cols - w)
            break;
        if (escaped) {
            for (size_t k = 0; k < len; k++) {
                out[o++] = '\\';
                out[o++] = 'x';
                out[o++] = hex[u[i + k] >> 4];
                out[o++] = hex[u[i + k] & 0xf];
            }
        } else {
            memcpy(out + o, s + i, len);
            o += len;
        }
        i += len;
        w += pw;
    }
    if (size > 0)
        out[o] = '\0';
    if (cols)
        *cols = w;
    return i;
}

const char *termtext_str(const char *s, char *buf, size_t size)
{
    (void)termtext_escape(s, strlen(s), buf, size, SIZE_MAX, NULL);
    return buf;
}

size_t termtext_width(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t w = 0;
    for (size_t i = 0; i < n;) {
        size_t len, pw;
        bool escaped;
        termtext_piece(u + i, n - i, &len, &escaped, &pw);
        i += len;
        w += pw;
    }
    return w;
}

int termtext_fputs(const char *s, FILE *f)
{
    char buf[1024];
    size_t n = strlen(s);
    do {
        size_t took = termtext_escape(s, n, buf, sizeof(buf), SIZE_MAX, NULL);
        if (fputs(buf, f) == EOF)
            return EOF;
        s += took;
        n -= took;
    } while (n > 0);
    return 0;
}
