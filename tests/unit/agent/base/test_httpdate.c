/* SPDX-License-Identifier: MIT */
/*
 * Tests for agent/base/httpdate.c: the three HTTP-date forms (checked
 * against libcurl's own date parser over two centuries of dates), what is
 * refused, and Retry-After as seconds or a date.
 */
#include "base/compat.h"

#include <curl/curl.h>

#include "cmocka_wrap.h"

#include "base/httpdate.h"

/* 2026-12-03T00:00:00Z: places two-digit years */
#define NOW 1796256000ll

static int64_t parse(const char *s)
{
    int64_t t = -1;
    if (http_date_parse(s, NOW, &t) != 0)
        fail_msg("'%s' refused", s);
    return t;
}

static void test_httpdate__three_forms(void **state)
{
    (void)state;
    /* RFC 9110's own example: 784111777 */
    assert_int_equal(parse("Sun, 06 Nov 1994 08:49:37 GMT"), 784111777);
    assert_int_equal(parse("Sunday, 06-Nov-94 08:49:37 GMT"), 784111777);
    assert_int_equal(parse("Sun Nov  6 08:49:37 1994"), 784111777);
    assert_int_equal(parse("  Thu, 01 Jan 1970 00:00:00 GMT \t"), 0);
    assert_int_equal(parse("Tue, 29 Feb 2028 23:59:59 gmt"), 1835481599);
    assert_int_equal(parse("Friday, 31-Dec-99 23:59:59 GMT"), 946684799);
    assert_int_equal(parse("Saturday, 01-Jan-00 00:00:00 GMT"), 946684800);
    /* RFC 9110: a two-digit year more than 50 years ahead is in the last century */
    assert_int_equal(parse("Wednesday, 01-Jan-76 00:00:00 GMT"), 3345062400ll);
    assert_int_equal(parse("Saturday, 01-Jan-77 00:00:00 GMT"), 220924800ll);
    int64_t t;
    assert_int_equal(http_date_parse("Thursday, 01-Jan-70 00:00:00 GMT", 0, &t), 0);
    assert_int_equal(t, 0);
}

static void test_httpdate__refuses(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "soon",
        "Sun, 6 Nov 1994 08:49:37",        /* no GMT */
        "Sun, 06 Nov 1994 08:49:37 GMT x", /* something after */
        "Sun, 06 Noz 1994 08:49:37 GMT",   /* month */
        "Sun, 31 Nov 1994 08:49:37 GMT",   /* day */
        "Sun, 29 Feb 1900 08:49:37 GMT",   /* not a leap year */
        "Sun, 06 Nov 1994 24:00:00 GMT",   /* hour */
        "Sun, 06 Nov 1994 08:60:00 GMT",   /* minute */
        "Sun, 06 Nov 94 08:49:37 GMT",     /* a two-digit year in IMF-fixdate */
        "Sun, 006 Nov 1994 08:49:37 GMT",  /* three digits */
        "Sun Nov  6 08:49:37",             /* asctime without year */
        "Sun Nov  6 8:49:37 1994",         /* one-digit hour */
        "Sunday,06-Nov-1994x08:49:37 GMT",
        "S, 06 Nov 1994 08:49:37 GMT", /* weekday too short */
        "Sun, 00 Nov 1994 08:49:37 GMT",
    };
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(bad); i++) {
        int64_t t;
        if (http_date_parse(bad[i], NOW, &t) == 0)
            fail_msg("'%s' accepted as %" PRId64, bad[i], t);
    }
}

/*
 * Every third day from 1970 to 2100 at a varying time, in the three forms:
 * the date itself, and what libcurl's parser reads (IMF-fixdate, asctime).
 */
static void test_httpdate__agrees_with_libcurl(void **state)
{
    (void)state;
    static const char *const wd[] = {"Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"};
    static const char *const wdl[] = {"Thursday", "Friday",  "Saturday", "Sunday",
                                      "Monday",   "Tuesday", "Wednesday"};
    static const char *const mon[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                      "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    for (int64_t day = 0; day < 47847; day += 3) {
        int64_t t = day * 86400 + (day * 7919) % 86400;
        time_t tt = (time_t)t;
        struct tm tm;
        gmtime_r(&tt, &tm);
        char forms[3][64];
        snprintf(forms[0], sizeof(forms[0]), "%s, %02d %s %04d %02d:%02d:%02d GMT", wd[day % 7],
                 tm.tm_mday, mon[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
        snprintf(forms[1], sizeof(forms[1]), "%s, %02d-%s-%02d %02d:%02d:%02d GMT", wdl[day % 7],
                 tm.tm_mday, mon[tm.tm_mon], (tm.tm_year + 1900) % 100, tm.tm_hour, tm.tm_min,
                 tm.tm_sec);
        snprintf(forms[2], sizeof(forms[2]), "%s %s %2d %02d:%02d:%02d %04d", wd[day % 7],
                 mon[tm.tm_mon], tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, tm.tm_year + 1900);
        for (int f = 0; f < 3; f++) {
            /* RFC 850's two-digit years name 1977..2076 seen from NOW */
            int year = tm.tm_year + 1900;
            if (f == 1 && (year < 1977 || year > 2076))
                continue;
            int64_t mine = -1;
            assert_int_equal(http_date_parse(forms[f], NOW, &mine), 0);
            if (mine != t || (f != 1 && (int64_t)curl_getdate(forms[f], NULL) != t))
                fail_msg("'%s': %" PRId64 ", curl %ld, want %" PRId64, forms[f], mine,
                         (long)curl_getdate(forms[f], NULL), t);
        }
    }
}

static void test_httpdate__retry_after(void **state)
{
    (void)state;
    const uint64_t s = 1000000000ull;
    const int64_t date = 1445412480ll * 1000000000ll; /* Wed, 21 Oct 2015 07:28:00 GMT */
    assert_int_equal(http_retry_after_ns("120", 0), 120 * s);
    assert_int_equal(http_retry_after_ns(" 30\r\n", 0), 30 * s);
    assert_int_equal(http_retry_after_ns("0", 0), 0);
    assert_int_equal(http_retry_after_ns("-5", 0), 0);
    assert_int_equal(http_retry_after_ns("1.5", 0), 0);
    assert_int_equal(http_retry_after_ns(NULL, 0), 0);
    assert_int_equal(http_retry_after_ns("18446744073", 0), 18446744073ull * s);
    assert_true(http_retry_after_ns("18446744074", 0) == UINT64_MAX);
    assert_true(http_retry_after_ns("99999999999999999999999", 0) == UINT64_MAX);
    assert_int_equal(http_retry_after_ns("Wed, 21 Oct 2015 07:28:00 GMT", date - 30 * (int64_t)s),
                     30 * s);
    assert_int_equal(http_retry_after_ns("Wed, 21 Oct 2015 07:28:00 GMT", date + 1), 0);
    assert_true(http_retry_after_ns("Fri, 01 Jan 9999 00:00:00 GMT", 0) > 200ull * 365 * 86400 * s);
    /* before the epoch: past, and no overflow on the way (found by fuzz_push_replies) */
    assert_int_equal(http_retry_after_ns("Mon, 01 Jan 0001 00:00:00 GMT", date), 0);
    assert_int_equal(http_retry_after_ns("Wed, 31 Dec 1969 23:59:59 GMT", date), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_httpdate__three_forms),
        cmocka_unit_test(test_httpdate__refuses),
        cmocka_unit_test(test_httpdate__agrees_with_libcurl),
        cmocka_unit_test(test_httpdate__retry_after),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
