/* SPDX-License-Identifier: MIT */
/* Tests for agent/config/duration.c: Prometheus durations and sizes. */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include "config/config.h"

#define MS  1000000ull
#define SEC 1000000000ull

static void test_duration__parses_prometheus_forms(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        uint64_t ns;
    } ok[] = {
        {"0", 0},
        {"0s", 0},
        {"15s", 15 * SEC},
        {"500ms", 500 * MS},
        {"1m30s", 90 * SEC},
        {"1h30m", 5400 * SEC},
        {"1d", 86400 * SEC},
        {"2w", 14 * 86400 * SEC},
        {"1y", 365 * 86400 * SEC},
        {"1y2w3d4h5m6s7ms", (((((365 + 14 + 3) * 24ull + 4) * 60 + 5) * 60 + 6) * 1000 + 7) * MS},
        {"90m", 5400 * SEC},
        {"120s", 120 * SEC},
        {"1m0s", 60 * SEC},
    };
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(ok); i++) {
        uint64_t ns = 42;
        assert_int_equal(config_parse_duration(ok[i].s, &ns), 0);
        assert_true(ns == ok[i].ns);
    }
}

static void test_duration__rejects_bad_forms(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",    "s",   "15",  "1.5h", "-1s", "+1s", "1m1d",  "1s1m",  "1s1s", "1ms1s",
        "1us", "1ns", "1 s", " 1s",  "1s ", "1S",  "1h-1m", "0x10s", "1mm",  "1sms",
    };
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(bad); i++) {
        uint64_t ns = 42;
        int rc = config_parse_duration(bad[i], &ns);
        if (rc != -EINVAL)
            fail_msg("'%s' gave %d", bad[i], rc);
        assert_true(ns == 42);
    }
    uint64_t ns;
    assert_int_equal(config_parse_duration(NULL, &ns), -EINVAL);
}

static void test_duration__overflow_is_erange(void **state)
{
    (void)state;
    uint64_t ns;
    /* Like Prometheus, the result must fit int64 nanoseconds (~292 years). */
    assert_int_equal(config_parse_duration("292y", &ns), 0);
    assert_int_equal(config_parse_duration("293y", &ns), -ERANGE);
    assert_int_equal(config_parse_duration("99999999999999999999s", &ns), -ERANGE);
    assert_int_equal(config_parse_duration("18446744073709551615ms", &ns), -ERANGE);
}

static void test_duration__formats_canonically(void **state)
{
    (void)state;
    static const struct {
        uint64_t ns;
        const char *s;
    } v[] = {
        {0, "0s"},
        {999999, "0s"}, /* below a millisecond */
        {500 * MS, "500ms"},
        {15 * SEC, "15s"},
        {90 * SEC, "1m30s"},
        {5400 * SEC, "1h30m"},
        {86400 * SEC, "1d"},
        {14 * 86400 * SEC, "2w"},
        {90 * 86400 * SEC, "90d"}, /* not 12w6d */
        {365 * 86400 * SEC, "1y"},
        {(86400 + 1) * SEC + 1 * MS, "1d1s1ms"},
    };
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(v); i++) {
        char buf[64];
        config_format_duration(v[i].ns, buf, sizeof(buf));
        assert_string_equal(buf, v[i].s);
        uint64_t back;
        if (v[i].ns % MS == 0) {
            assert_int_equal(config_parse_duration(buf, &back), 0);
            assert_true(back == v[i].ns);
        }
    }
    char small[4];
    config_format_duration(5400 * SEC, small, sizeof(small));
    assert_true(strlen(small) < sizeof(small));
}

static void test_duration__sizes(void **state)
{
    (void)state;
    uint64_t n = 0;
    assert_int_equal(config_parse_size("100B", &n), 0);
    assert_true(n == 100);
    assert_int_equal(config_parse_size("4MB", &n), 0);
    assert_true(n == 4u << 20);
    assert_int_equal(config_parse_size("512KiB", &n), 0);
    assert_true(n == 512u << 10);
    assert_int_equal(config_parse_size("1GB", &n), 0);
    assert_true(n == 1u << 30);
    assert_int_equal(config_parse_size("2TiB", &n), 0);
    assert_true(n == 2ull << 40);
    assert_int_equal(config_parse_size("15EB", &n), 0);
    assert_true(n == 15ull << 60);
    assert_int_equal(config_parse_size("16EB", &n), -ERANGE);
    assert_int_equal(config_parse_size("99999999999999999999B", &n), -ERANGE);
    static const char *const bad[] = {"", "4", "MB", "4 MB", "4mb", "4M", "1.5GB", "-1B", "4MBs"};
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(bad); i++)
        assert_int_equal(config_parse_size(bad[i], &n), -EINVAL);
    char buf[32];
    config_format_size(4u << 20, buf, sizeof(buf));
    assert_string_equal(buf, "4MiB");
    config_format_size(1000, buf, sizeof(buf));
    assert_string_equal(buf, "1000B");
    config_format_size(0, buf, sizeof(buf));
    assert_string_equal(buf, "0B");
    config_format_size(3ull << 60, buf, sizeof(buf));
    assert_string_equal(buf, "3EiB");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_duration__parses_prometheus_forms),
        cmocka_unit_test(test_duration__rejects_bad_forms),
        cmocka_unit_test(test_duration__overflow_is_erange),
        cmocka_unit_test(test_duration__formats_canonically),
        cmocka_unit_test(test_duration__sizes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
