/* SPDX-License-Identifier: MIT */
/* Tests for agent/base/log.c: levels, format, lazy arguments. */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include "base/log.h"

static int evaluated;

static int count_evaluation(void)
{
    return ++evaluated;
}

static void test_log__filters_by_level_without_evaluating(void **state)
{
    (void)state;
    char buf[512] = "";
    FILE *sink = fmemopen(buf, sizeof(buf), "w");
    assert_non_null(sink);
    log_set_sink(sink);
    log_set_level(LOG_LEVEL_WARN);
    evaluated = 0;
    log_debug("hidden %d", count_evaluation());
    log_info("hidden %d", count_evaluation());
    log_warn("cannot read '%s': %s", "/proc/1/maps", "Permission denied");
    log_error("kept %d", count_evaluation());
    fflush(sink);
    assert_int_equal(evaluated, 1);
    assert_string_equal(buf, "pyprofd: warn: cannot read '/proc/1/maps': Permission denied\n"
                             "pyprofd: error: kept 1\n");
    log_set_sink(NULL);
    log_set_level(LOG_LEVEL_INFO);
    fclose(sink);
}

static void test_log__long_message_is_truncated_with_newline(void **state)
{
    (void)state;
    char buf[4096] = "";
    char big[3000];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    FILE *sink = fmemopen(buf, sizeof(buf), "w");
    assert_non_null(sink);
    log_set_sink(sink);
    log_error("%s", big);
    fflush(sink);
    size_t len = strlen(buf);
    assert_true(len < 1024);
    assert_int_equal(buf[len - 1], '\n');
    log_set_sink(NULL);
    fclose(sink);
}

static void test_log__parses_level_names(void **state)
{
    (void)state;
    enum log_level l;
    assert_int_equal(log_level_parse("debug", &l), 0);
    assert_int_equal(l, LOG_LEVEL_DEBUG);
    assert_int_equal(log_level_parse("error", &l), 0);
    assert_int_equal(l, LOG_LEVEL_ERROR);
    assert_int_equal(log_level_parse("verbose", &l), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_log__filters_by_level_without_evaluating),
        cmocka_unit_test(test_log__long_message_is_truncated_with_newline),
        cmocka_unit_test(test_log__parses_level_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
