/* SPDX-License-Identifier: MIT */
/* Tests for agent/base/strnum.c. */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include "base/strnum.h"

static void test_strnum__parses_in_range(void **state)
{
    (void)state;
    int64_t v = 7;
    assert_int_equal(strnum_parse_i64("1234", 1, 5000, &v), 0);
    assert_int_equal(v, 1234);
    assert_int_equal(strnum_parse_i64("-5", -10, 10, &v), 0);
    assert_int_equal(v, -5);
}

static void test_strnum__rejects_junk_and_range(void **state)
{
    (void)state;
    int64_t v = 42;
    assert_int_equal(strnum_parse_i64("", 0, 10, &v), -EINVAL);
    assert_int_equal(strnum_parse_i64("12x", 0, 100, &v), -EINVAL);
    assert_int_equal(strnum_parse_i64(" 12", 0, 100, &v), -EINVAL);
    assert_int_equal(strnum_parse_i64("abc", 0, 100, &v), -EINVAL);
    assert_int_equal(strnum_parse_i64("0", 1, 100, &v), -ERANGE);
    assert_int_equal(strnum_parse_i64("99999999999999999999", 0, INT64_MAX, &v), -ERANGE);
    assert_int_equal(v, 42); /* untouched on failure */
}

static void test_strnum__parses_hex(void **state)
{
    (void)state;
    uint64_t v;
    assert_int_equal(strnum_parse_hex_u64("7fFF0a", 6, &v), 0);
    assert_int_equal(v, 0x7fff0a);
    assert_int_equal(strnum_parse_hex_u64("ffffffffffffffff", 16, &v), 0);
    assert_true(v == UINT64_MAX);
    assert_int_equal(strnum_parse_hex_u64("10000000000000000", 17, &v), -ERANGE);
    assert_int_equal(strnum_parse_hex_u64("0x10", 4, &v), -EINVAL);
    assert_int_equal(strnum_parse_hex_u64("", 0, &v), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strnum__parses_in_range),
        cmocka_unit_test(test_strnum__rejects_junk_and_range),
        cmocka_unit_test(test_strnum__parses_hex),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
