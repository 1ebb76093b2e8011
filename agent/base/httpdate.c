/* SPDX-License-Identifier: MIT */
/*
 * httpdate.c: the three forms of HTTP-date and Retry-After (see httpdate.h).
 */
#include "base/compat.h"

#include "base/httpdate.h"

#define NS_PER_SEC 1000000000ull

static bool hd_space(char c)
{
    return c == ' ' || c == '\t';
}

static const char *hd_skip_space(const char *p)
{
    while (hd_space(*p))
        p++;
    return p;
}

static bool hd_alpha(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* @a n digits (exactly, or 1..n when @a up_to) at *@a p into *@a v. */
static bool hd_digits(const char **p, unsigned n, bool up_to, int *v)
{
    unsigned k = 0;
    int x = 0;
    while (k < n && (*p)[k] >= '0' && (*p)[k] <= '9') {
        x = x * 10 + ((*p)[k] - '0');
        k++;
    }
    if (k == 0 || (!up_to && k != n))
        return false;
    if ((*p)[k] >= '0' && (*p)[k] <= '9')
        return false; /* more digits than the field has */
    *p += k;
    *v = x;
    return true;
}

/* A month's three-letter name (case as HTTP writes it, any case accepted). */
static bool hd_month(const char **p, int *mon)
{
    static const char names[] = "janfebmaraprmayjunjulaugsepoctnovdec";
    char m[3];
    for (int i = 0; i < 3; i++) {
        char c = (*p)[i];
        if (!hd_alpha(c))
            return false;
        m[i] = (char)(c | 0x20);
    }
    for (int i = 0; i < 12; i++)
        if (memcmp(names + 3 * i, m, 3) == 0) {
            *mon = i + 1;
            *p += 3;
            return !hd_alpha(**p);
        }
    return false;
}

/* "hh:mm:ss" */
static bool hd_time(const char **p, int *h, int *m, int *s)
{
    return hd_digits(p, 2, false, h) && *(*p)++ == ':' && hd_digits(p, 2, false, m) &&
           *(*p)++ == ':' && hd_digits(p, 2, false, s) && *h < 24 && *m < 60 && *s < 61;
}

/* Days since 1970-01-01 of a proleptic Gregorian date. */
static int64_t hd_days(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static bool hd_leap(int y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static bool hd_gmt(const char **p)
{
    const char *q = hd_skip_space(*p);
    if (!((q[0] | 0x20) == 'g' && (q[1] | 0x20) == 'm' && (q[2] | 0x20) == 't'))
        return false;
    *p = q + 3;
    return true;
}

/* The year of @a t (seconds since the epoch). */
static int hd_year_of(int64_t t)
{
    int64_t days = t / 86400 - (t % 86400 < 0);
    int y = 1970;
    /* a few iterations at most for any date near now */
    for (;;) {
        int64_t len = hd_leap(y) ? 366 : 365;
        if (days < 0) {
            y--;
            days += hd_leap(y) ? 366 : 365;
        } else if (days >= len) {
            days -= len;
            y++;
        } else {
            return y;
        }
        if (y < 1 || y > 9999)
            return y;
    }
}

int http_date_parse(const char *s, int64_t now_s, int64_t *out)
{
    const char *p = hd_skip_space(s);
    int day = 0, mon = 0, year = 0, h = 0, mi = 0, se = 0;
    size_t wd = 0;
    while (hd_alpha(p[wd]))
        wd++;
    if (wd < 3 || wd > 9)
        return -EINVAL;
    p += wd;
    if (*p == ',') {
        /* IMF-fixdate or RFC 850 */
        p = hd_skip_space(p + 1);
        if (!hd_digits(&p, 2, true, &day))
            return -EINVAL;
        if (*p == '-') {
            p++;
            if (!hd_month(&p, &mon) || *p++ != '-')
                return -EINVAL;
            const char *y = p;
            if (hd_digits(&p, 2, false, &year)) {
                /* RFC 9110: more than 50 years ahead of now means the past century */
                int now_year = hd_year_of(now_s);
                year += now_year - now_year % 100;
                if (year > now_year + 50)
                    year -= 100;
            } else if (p = y, !hd_digits(&p, 4, false, &year))
                return -EINVAL;
        } else {
            p = hd_skip_space(p);
            if (!hd_month(&p, &mon))
                return -EINVAL;
            p = hd_skip_space(p);
            if (!hd_digits(&p, 4, false, &year))
                return -EINVAL;
        }
        p = hd_skip_space(p);
        if (!hd_time(&p, &h, &mi, &se) || !hd_gmt(&p))
            return -EINVAL;
    } else {
        /* asctime: "Sun Nov  6 08:49:37 1994" */
        p = hd_skip_space(p);
        if (!hd_month(&p, &mon))
            return -EINVAL;
        p = hd_skip_space(p);
        if (!hd_digits(&p, 2, true, &day))
            return -EINVAL;
        p = hd_skip_space(p);
        if (!hd_time(&p, &h, &mi, &se))
            return -EINVAL;
        p = hd_skip_space(p);
        if (!hd_digits(&p, 4, false, &year))
            return -EINVAL;
    }
    if (*hd_skip_space(p) != '\0')
        return -EINVAL;
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int dim = mdays[mon - 1] + (mon == 2 && hd_leap(year));
    if (day < 1 || day > dim)
        return -EINVAL;
    *out = hd_days(year, mon, day) * 86400 + h * 3600 + mi * 60 + se;
    return 0;
}

uint64_t http_retry_after_ns(const char *value, int64_t now_real_ns)
{
    if (!value)
        return 0;
    const char *p = hd_skip_space(value);
    if (*p >= '0' && *p <= '9') {
        uint64_t secs = 0;
        const uint64_t most = UINT64_MAX / NS_PER_SEC;
        for (; *p >= '0' && *p <= '9'; p++) {
            uint64_t d = (uint64_t)(*p - '0');
            if (secs > most / 10 || (secs == most / 10 && d > most % 10))
                return UINT64_MAX;
            secs = secs * 10 + d;
        }
        while (hd_space(*p) || *p == '\r' || *p == '\n')
            p++;
        if (*p)
            return 0;
        return secs * NS_PER_SEC;
    }
    int64_t t = 0;
    int64_t now_s = now_real_ns / (int64_t)NS_PER_SEC;
    if (http_date_parse(value, now_s, &t) != 0)
        return 0;
    /* a date before the epoch is past (and would overflow in ns); one
     * centuries ahead means "a very long time" */
    if (t <= 0)
        return 0;
    if (t > INT64_MAX / (int64_t)NS_PER_SEC)
        return UINT64_MAX;
    int64_t at = t * (int64_t)NS_PER_SEC;
    return at > now_real_ns ? (uint64_t)(at - now_real_ns) : 0;
}
