/* SPDX-License-Identifier: MIT */
/* Tests for agent/base/log.c: levels, format, lazy arguments. */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include <json-c/json.h>

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

/* Formats one message with @a format into @a buf. */
static void format_one(enum log_format format, char *buf, size_t size, const char *msg)
{
    memset(buf, 0, size);
    FILE *sink = fmemopen(buf, size, "w");
    assert_non_null(sink);
    log_set_sink(sink);
    log_set_format(format);
    log_warn("%s", msg);
    fflush(sink);
    log_set_format(LOG_FORMAT_TEXT);
    log_set_sink(NULL);
    fclose(sink);
}

static void test_log__logfmt_and_json(void **state)
{
    (void)state;
    char buf[16384];
    /* a quote, a backslash, a newline, a control byte, UTF-8, a stray byte, a C1 control */
    const char *msg = "cannot read '/x': \"a\\b\"\nnext\x01 caf\xc3\xa9 \xff \xc2\x9b";
    format_one(LOG_FORMAT_LOGFMT, buf, sizeof(buf), msg);
    assert_int_equal(strncmp(buf, "ts=", 3), 0);
    assert_true(buf[7] == '-' && buf[26] == 'Z'); /* ts=YYYY-MM-DDTHH:MM:SS.mmmZ */
    assert_non_null(strstr(buf, " level=warn msg=\"cannot read '/x': \\\"a\\\\b\\\"\\nnext"
                                "\\x01 caf\xc3\xa9 \\xff \\xc2\\x9b\"\n"));
    assert_null(strchr(buf, '\n') + 1 == buf + strlen(buf) ? NULL : "two lines");

    format_one(LOG_FORMAT_JSON, buf, sizeof(buf), msg);
    json_object *o = json_tokener_parse(buf);
    assert_non_null(o);
    json_object *v = NULL;
    assert_true(json_object_object_get_ex(o, "level", &v));
    assert_string_equal(json_object_get_string(v), "warn");
    assert_true(json_object_object_get_ex(o, "ts", &v));
    assert_int_equal(strlen(json_object_get_string(v)), 24);
    assert_true(json_object_object_get_ex(o, "msg", &v));
    /* what is valid comes back as it was; the stray byte as \u00ff */
    assert_string_equal(json_object_get_string(v),
                        "cannot read '/x': \"a\\b\"\nnext\x01 caf\xc3\xa9 \xc3\xbf \xc2\x9b");
    assert_null(strstr(buf, "\xc2\x9b")); /* written as \u009b */
    assert_non_null(strstr(buf, "\\u009b"));
    json_object_put(o);

    /* the longest message, every byte escaped, stays one whole JSON line */
    char big[1100];
    memset(big, 1, sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    format_one(LOG_FORMAT_JSON, buf, sizeof(buf), big);
    o = json_tokener_parse(buf);
    assert_non_null(o);
    json_object_put(o);
    assert_int_equal(buf[strlen(buf) - 1], '\n');
}

/*
 * Text is for terminals: what a process chose (its name, a path, a function
 * name) is shown, never obeyed, and a message stays one line; UTF-8 is kept.
 */
static void test_log__text_escapes_controls(void **state)
{
    (void)state;
    char buf[16384];
    format_one(LOG_FORMAT_TEXT, buf, sizeof(buf),
               "process 7 (\x1b]0;pwned\x07\x1b[31mred) a\nb caf\xc3\xa9 \xc2\x9b \xff");
    assert_string_equal(buf, "pyprofd: warn: process 7 (\\x1b]0;pwned\\x07\\x1b[31mred) "
                             "a\\x0ab caf\xc3\xa9 \\xc2\\x9b \\xff\n");

    /* the longest message, every byte escaped: still at most 1 KiB, no escape cut */
    char big[1100];
    memset(big, 0x1b, sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    format_one(LOG_FORMAT_TEXT, buf, sizeof(buf), big);
    size_t len = strlen(buf);
    assert_true(len <= 1023);
    assert_int_equal(buf[len - 1], '\n');
    assert_int_equal(strncmp(buf + len - 5, "\\x1b\n", 5), 0);
    assert_int_equal((len - 1 - strlen("pyprofd: warn: ")) % 4, 0);
}

static void test_log__parses_format_names(void **state)
{
    (void)state;
    enum log_format f;
    assert_int_equal(log_format_parse("logfmt", &f), 0);
    assert_int_equal(f, LOG_FORMAT_LOGFMT);
    assert_int_equal(log_format_parse("json", &f), 0);
    assert_int_equal(f, LOG_FORMAT_JSON);
    assert_int_equal(log_format_parse("text", &f), 0);
    assert_int_equal(f, LOG_FORMAT_TEXT);
    assert_int_equal(log_format_parse("yaml", &f), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_log__filters_by_level_without_evaluating),
        cmocka_unit_test(test_log__long_message_is_truncated_with_newline),
        cmocka_unit_test(test_log__logfmt_and_json),
        cmocka_unit_test(test_log__text_escapes_controls),
        cmocka_unit_test(test_log__parses_format_names),
        cmocka_unit_test(test_log__parses_level_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
