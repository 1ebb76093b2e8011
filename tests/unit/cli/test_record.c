/* SPDX-License-Identifier: MIT */
/* Tests for cli/record.c: option parsing. */
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_record__parses_rates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
