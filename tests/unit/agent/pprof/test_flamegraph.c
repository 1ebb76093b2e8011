/* SPDX-License-Identifier: MIT */
/* Tests for agent/pprof/flamegraph.c: the call tree the HTML report and the agent's page draw. */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include "aggregate/agg.h"
#include "base/alloc.h"
#include "base/utf8.h"
#include "pprof/flamegraph.h"
#include "unwind/unwind.h"

static struct unwind_frame frame(const char *fn, const char *file, int32_t first, int32_t line)
{
    return (struct unwind_frame){.kind = UNWIND_FRAME_PYTHON,
                                 .function = fn,
                                 .file = file,
                                 .first_line = first,
                                 .pos = {line, line, 1, 2}};
}

/* The tree of @parts as a string (static buffer). */
static const char *tree(const struct flame_part *parts, size_t n, int *err)
{
    static char out[8192];
    memset(out, 0, sizeof(out));
    FILE *f = fmemopen(out, sizeof(out) - 1, "w");
    assert_non_null(f);
    *err = flame_json_write(parts, n, "all", f);
    fclose(f);
    return out;
}

/* Stacks merge from the root by function, whatever the line; values are inclusive. */
static void test_flamegraph__merges_by_function(void **state)
{
    (void)state;
    struct agg *a;
    assert_int_equal(agg_new(NULL, &a), 0);
    struct unwind_frame s1[] = {frame("leaf", "/a.py", 10, 12), frame("main", "/a.py", 1, 3)};
    struct unwind_frame s2[] = {frame("leaf", "/a.py", 10, 14), frame("main", "/a.py", 1, 4)};
    struct unwind_frame s3[] = {frame("other", "/b.py", 0, 6), frame("main", "/a.py", 1, 3)};
    struct unwind_frame s4[] = {frame("main", "/a.py", 1, 5)};
    assert_int_equal(agg_add_in(a, s1, 2, 7, 0, "MainThread", NULL, 3, 1000), 0);
    assert_int_equal(agg_add_in(a, s2, 2, 8, 0, "worker", NULL, 2, 1000), 0);
    assert_int_equal(agg_add_in(a, s3, 2, 7, 0, "MainThread", NULL, 1, 1000), 0);
    assert_int_equal(agg_add_in(a, s4, 1, 7, 0, "MainThread", NULL, 4, 1000), 0);
    struct flame_part p = {.agg = a};
    int err;
    const char *json = tree(&p, 1, &err);
    assert_int_equal(err, 0);
    /* "ln" is where the function starts; other has none, so its first line sampled */
    assert_string_equal(json, "{\"n\":\"all\",\"v\":10,\"c\":["
                              "{\"n\":\"main\",\"f\":\"/a.py\",\"ln\":1,\"v\":10,\"c\":["
                              "{\"n\":\"leaf\",\"f\":\"/a.py\",\"ln\":10,\"v\":5},"
                              "{\"n\":\"other\",\"f\":\"/b.py\",\"ln\":6,\"v\":1}]}]}");
    agg_free(a);
}

/* Target-made names cannot break the JSON nor end the <script> element they sit in. */
static void test_flamegraph__escapes_strings(void **state)
{
    (void)state;
    struct agg *a;
    assert_int_equal(agg_new(NULL, &a), 0);
    struct unwind_frame s[] = {frame("f\"</script>\\\n\x01\x7f\xc3\xa9", "/x<y>.py", 1, 1)};
    struct unwind_frame m[] = {{.kind = UNWIND_FRAME_GC, .function = "<GC>", .file = "~"}};
    assert_int_equal(agg_add_in(a, s, 1, 7, 0, "MainThread", NULL, 1, 1), 0);
    assert_int_equal(agg_add_in(a, m, 1, 7, 0, "MainThread", NULL, 2, 1), 0);
    struct flame_part p = {.agg = a};
    int err;
    const char *json = tree(&p, 1, &err);
    assert_int_equal(err, 0);
    assert_null(strchr(json, '<'));
    assert_non_null(strstr(json, "\"n\":\"f\\\"\\u003c/script>\\\\\\u000a\\u0001\\u007f\xc3\xa9\","
                                 "\"f\":\"/x\\u003cy>.py\""));
    /* a marker has no file nor line */
    assert_non_null(strstr(json, "{\"n\":\"\\u003cGC>\",\"v\":2}"));
    agg_free(a);
}

/*
 * Text that is not valid UTF-8 (none should reach the tree: it is made valid
 * where it enters pyprofd) is still written as valid UTF-8, U+FFFD per
 * maximal invalid subsequence as Python's decoder writes, and counted; valid
 * text, a real U+FFFD included, is written as it is.
 */
static void test_flamegraph__writes_only_valid_utf8(void **state)
{
    (void)state;
    struct agg *a;
    assert_int_equal(agg_new(NULL, &a), 0);
    struct unwind_frame s[] = {
        frame("run\xe2\x82\xff\xc3\xa9\xef\xbf\xbd", "/srv/\xff\xfe\x1b[31mapp.py", 1, 1)};
    assert_int_equal(agg_add_in(a, s, 1, 7, 0, "Main\xc0Thread", NULL, 1, 1), 0);
    struct flame_part p = {.agg = a, .name = "svc\xed\xa0\x80 (pid 1)"};
    int err;
    uint64_t before = utf8_replaced_total();
    const char *json = tree(&p, 1, &err);
    assert_int_equal(err, 0);
    assert_true(utf8_valid(json, strlen(json)));
    assert_non_null(strstr(json, "\"n\":\"run" UTF8_REPLACEMENT_STR UTF8_REPLACEMENT_STR
                                 "\xc3\xa9" UTF8_REPLACEMENT_STR "\""));
    assert_non_null(strstr(json, "\"f\":\"/srv/" UTF8_REPLACEMENT_STR UTF8_REPLACEMENT_STR
                                 "\\u001b[31mapp.py\""));
    assert_non_null(
        strstr(json, "\"n\":\"svc" UTF8_REPLACEMENT_STR UTF8_REPLACEMENT_STR UTF8_REPLACEMENT_STR
                     " (pid 1)\""));
    /* run 2, file 2, part name 3 */
    assert_int_equal(utf8_replaced_total() - before, 7);
    agg_free(a);
}

/* Several windows: each under a node of its own name; a part without a name is refused. */
static void test_flamegraph__parts(void **state)
{
    (void)state;
    struct agg *a, *b;
    assert_int_equal(agg_new(NULL, &a), 0);
    assert_int_equal(agg_new(NULL, &b), 0);
    struct unwind_frame s[] = {frame("main", "/a.py", 1, 3)};
    assert_int_equal(agg_add_in(a, s, 1, 7, 0, "MainThread", NULL, 2, 1), 0);
    assert_int_equal(agg_add_in(b, s, 1, 9, 0, "MainThread", NULL, 3, 1), 0);
    struct flame_part parts[] = {{.agg = a, .name = "web (pid 7)"}, {.agg = b, .name = "job"}};
    int err;
    const char *json = tree(parts, 2, &err);
    assert_int_equal(err, 0);
    assert_string_equal(json,
                        "{\"n\":\"all\",\"v\":5,\"c\":["
                        "{\"n\":\"web (pid 7)\",\"v\":2,\"c\":[{\"n\":\"main\",\"f\":\"/a.py\","
                        "\"ln\":1,\"v\":2}]},"
                        "{\"n\":\"job\",\"v\":3,\"c\":[{\"n\":\"main\",\"f\":\"/a.py\","
                        "\"ln\":1,\"v\":3}]}]}");
    parts[1].name = NULL;
    tree(parts, 2, &err);
    assert_int_equal(err, -EINVAL);
    /* nothing at all: a root with no samples */
    json = tree(parts, 0, &err);
    assert_int_equal(err, 0);
    assert_string_equal(json, "{\"n\":\"all\",\"v\":0}");
    agg_free(a);
    agg_free(b);
}

/* A wide and deep tree (the index grows) fails cleanly at every allocation. */
static void test_flamegraph__survives_allocation_failures(void **state)
{
    (void)state;
    struct agg *a;
    assert_int_equal(agg_new(NULL, &a), 0);
    char names[3000][8];
    for (int i = 0; i < 3000; i++) {
        snprintf(names[i], sizeof(names[i]), "f%d", i);
        struct unwind_frame s[] = {frame(names[i], "/w.py", i, i), frame("main", "/a.py", 1, 1)};
        assert_int_equal(agg_add_in(a, s, 2, 7, 0, "MainThread", NULL, 1, 1), 0);
    }
    struct flame_part p = {.agg = a};
    bool done = false;
    for (uint64_t nth = 1; !done; nth++) {
        assert_true(nth < 100);
        size_t before = alloc_in_use();
        FILE *f = fopen("/dev/null", "w");
        assert_non_null(f);
        alloc_fail_nth(nth);
        int err = flame_json_write(&p, 1, "all", f);
        alloc_fail_nth(0);
        fclose(f);
        if (err == 0)
            done = true;
        else
            assert_int_equal(err, -ENOMEM);
        assert_int_equal(alloc_in_use(), before);
    }
    agg_free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flamegraph__merges_by_function),
        cmocka_unit_test(test_flamegraph__escapes_strings),
        cmocka_unit_test(test_flamegraph__writes_only_valid_utf8),
        cmocka_unit_test(test_flamegraph__parts),
        cmocka_unit_test(test_flamegraph__survives_allocation_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
