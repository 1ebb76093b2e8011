/* SPDX-License-Identifier: MIT */
/*
 * strnum.c: checked number parsers (see strnum.h).
 */
#include "base/compat.h"

#include "base/strnum.h"

int strnum_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out)
{
    if (!s || !*s || *s == ' ' || *s == '\t' || *s == '\n')
        return -EINVAL;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end != '\0')
        return -EINVAL;
    if (errno == ERANGE || v < min || v > max)
        return -ERANGE;
    *out = (int64_t)v;
    return 0;
}

int strnum_parse_hex_u64(const char *s, size_t len, uint64_t *out)
{
    if (len == 0)
        return -EINVAL;
    if (len > 16)
        return -ERANGE;
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        unsigned d;
        if (c >= '0' && c <= '9')
            d = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            d = (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            d = (unsigned)(c - 'A' + 10);
        else
            return -EINVAL;
        v = (v << 4) | d;
    }
    *out = v;
    return 0;
}
