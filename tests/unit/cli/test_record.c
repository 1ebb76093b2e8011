/* SPDX-License-Identifier: MIT */
/* Tests for cli/record.c: option parsing, the sampling thread's timer slack. */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include "cli/cli.h"

static void test_record__parses_rates(void **state)
{
    (void)state;
    double hz = 0;
    assert_int_equal(record_parse_rate("250", &hz), 0);
    assert_true(hz == 250);
    assert_int_equal(record_parse_rate("10k", &hz), 0);
    assert_true(hz == 10000);
    assert_int_equal(record_parse_rate("10khz", &hz), 0);
    assert_true(hz == 10000);
    assert_int_equal(record_parse_rate("2.5kHz", &hz), 0);
    assert_true(hz == 2500);
    assert_int_equal(record_parse_rate("100Hz", &hz), 0);
    assert_true(hz == 100);
    assert_int_equal(record_parse_rate("fast", &hz), -EINVAL);
    assert_int_equal(record_parse_rate("10m", &hz), -EINVAL);
    assert_int_equal(record_parse_rate("0", &hz), -EINVAL);
    assert_int_equal(record_parse_rate("-5", &hz), -EINVAL);
    assert_int_equal(record_parse_rate("1000k", &hz), 0);
    assert_true(hz == 1000000);
    assert_int_equal(record_parse_rate("2000k", &hz), -ERANGE);
}

/* The sampling thread's timer slack: a twentieth of an interval, at least the
 * kernel's default, never over 1 ms. */
static void test_record__timer_slack_follows_the_interval(void **state)
{
    (void)state;
    assert_true(record_slack_ns(50000) == 50000);        /* 20 kHz: the kernel's default */
    assert_true(record_slack_ns(100000) == 50000);       /* 10 kHz */
    assert_true(record_slack_ns(200000) == 50000);       /* 5 kHz */
    assert_true(record_slack_ns(1000000) == 50000);      /* 1 kHz */
    assert_true(record_slack_ns(4000000) == 200000);     /* 250 Hz */
    assert_true(record_slack_ns(10000000) == 500000);    /* 100 Hz */
    assert_true(record_slack_ns(20000000) == 1000000);   /* 50 Hz: capped */
    assert_true(record_slack_ns(1000000000) == 1000000); /* 1 Hz */
    assert_true(record_slack_ns(1) == 50000);            /* never under the default */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_record__parses_rates),
        cmocka_unit_test(test_record__timer_slack_follows_the_interval),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
