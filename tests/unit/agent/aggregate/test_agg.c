/* SPDX-License-Identifier: MIT */
/* Tests for agent/aggregate/agg.c: interning, coalescing, caps. */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include "aggregate/agg.h"
#include "pprof/collapsed.h"

static struct unwind_frame frame(const char *fn, const char *file, int32_t first, int32_t line,
                                 uint64_t code)
{
    return (struct unwind_frame){.kind = UNWIND_FRAME_PYTHON,
                                 .function = fn,
                                 .file = file,
                                 .first_line = first,
                                 .code_raddr = code,
                                 .pos = {line, line, 4, 9}};
}

static void test_agg__interns_and_counts(void **state)
{
    (void)state;
    struct agg *a;
    assert_int_equal(agg_new(NULL, &a), 0);
    struct unwind_frame s1[] = {frame("Klass.leaf", "/a.py", 10, 12, 0x100),
                                frame("main", "/a.py", 1, 3, 0x200)};
    struct unwind_frame s2[] = {frame("other", "/b.py", 5, 6, 0x300),
                                frame("main", "/a.py", 1, 3, 0x200)};
    assert_int_equal(agg_add(a, s1, 2, 7, "MainThread", NULL, 1, 1000), 0);
    assert_int_equal(agg_add(a, s1, 2, 7, "MainThread", NULL, 1, 1000), 0); /* coalesced */
    assert_int_equal(agg_add(a, s2, 2, 7, "MainThread", NULL, 1, 1000), 0);
    assert_int_equal(agg_add(a, s1, 2, 7, "MainThread", NULL, 1, 1000), 0); /* found again */
    assert_int_equal(agg_add(a, s1, 2, 8, "worker", "task-1", 1, 1000), 0);
    struct agg_stats st = agg_stats(a);
    assert_int_equal(st.added, 5);
    assert_int_equal(st.coalesced, 1);
    assert_int_equal(st.dropped, 0);
    assert_int_equal(agg_sample_count(a), 3);
    assert_int_equal(agg_function_count(a), 3);
    assert_int_equal(agg_location_count(a), 3);
    assert_string_equal(agg_string(a, 0), "");
    const struct agg_sample *first = agg_sample(a, 0);
    assert_int_equal(first->count, 3);
    assert_int_equal(first->nanos, 3000);
    assert_int_equal(first->nlocations, 2);
    const struct agg_location *leaf = agg_location(a, first->locations[0]);
    const struct agg_function *fn = agg_function(a, leaf->function);
    assert_string_equal(agg_string(a, fn->name), "Klass.leaf");
    assert_string_equal(agg_string(a, fn->system_name), "leaf");
    assert_string_equal(agg_string(a, fn->filename), "/a.py");
    assert_int_equal(fn->start_line, 10);
    assert_int_equal(leaf->line, 12);
    assert_int_equal(leaf->column, 5); /* 1-based */
    assert_string_equal(agg_string(a, first->thread_name), "MainThread");
    assert_int_equal(first->task_name, 0);
    const struct agg_sample *task = agg_sample(a, 2);
    assert_string_equal(agg_string(a, task->task_name), "task-1");
    assert_int_equal(task->thread_id, 8);
    /* the same stack of another thread shares locations */
    assert_int_equal(task->locations[0], first->locations[0]);

    /* folded output, root first; the same stack of two threads is one line */
    char buf[1024] = "";
    FILE *f = fmemopen(buf, sizeof(buf), "w");
    assert_int_equal(collapsed_write(a, f), 0);
    fclose(f);
    assert_string_equal(buf, "main (/a.py:3);Klass.leaf (/a.py:12) 4\n"
                             "main (/a.py:3);other (/b.py:6) 1\n");
    agg_reset(a);
    assert_int_equal(agg_sample_count(a), 0);
    assert_int_equal(agg_string_count(a), 1);
    agg_free(a);
}

static void test_agg__repeat_counts_the_last_stack(void **state)
{
    (void)state;
    struct agg *a;
    assert_int_equal(agg_new(NULL, &a), 0);
    struct unwind_frame f[] = {frame("leaf", "/a.py", 1, 2, 0x10),
                               frame("main", "/a.py", 9, 9, 0x20)};
    assert_int_equal(agg_repeat(a, 7, "t", 1, 10), -ENOENT); /* nothing yet */
    assert_int_equal(agg_add(a, f, 2, 7, "t", NULL, 1, 10), 0);
    assert_int_equal(agg_repeat(a, 7, "t", 1, 10), 0);
    assert_int_equal(agg_repeat(a, 7, "renamed", 1, 10), -ENOENT);
    assert_int_equal(agg_repeat(a, 8, "t", 1, 10), -ENOENT);
    assert_int_equal(agg_sample_count(a), 1);
    assert_int_equal(agg_sample(a, 0)->count, 2);
    assert_int_equal(agg_sample(a, 0)->nanos, 20);
    agg_reset(a);
    assert_int_equal(agg_repeat(a, 7, "t", 1, 10), -ENOENT); /* a new window */
    agg_free(a);
}

static void test_agg__caps_drop_and_count(void **state)
{
    (void)state;
    struct agg_limits lim = {.samples = 2, .locations = 3};
    struct agg *a;
    assert_int_equal(agg_new(&lim, &a), 0);
    char names[10][8];
    for (int i = 0; i < 10; i++) {
        snprintf(names[i], sizeof(names[i]), "f%d", i);
        struct unwind_frame f = frame(names[i], "/x.py", 1, 2, 0x1000u + (unsigned)i);
        int err = agg_add(a, &f, 1, 1, "t", NULL, 1, 10);
        assert_int_equal(err, i < 2 ? 0 : -E2BIG);
    }
    struct agg_stats st = agg_stats(a);
    assert_int_equal(st.added, 2);
    assert_int_equal(st.dropped, 8);
    assert_int_equal(agg_sample_count(a), 2);
    assert_true(agg_location_count(a) <= 3);
    agg_free(a);
    agg_free(NULL);
}

static void test_agg__empty_names_are_replaced(void **state)
{
    (void)state;
    struct agg *a;
    assert_int_equal(agg_new(NULL, &a), 0);
    struct unwind_frame f = frame("f", "/x.py", 1, 2, 0x10);
    assert_int_equal(agg_add(a, &f, 1, 1, "", "", 1, 10), 0);
    const struct agg_sample *s = agg_sample(a, 0);
    assert_string_equal(agg_string(a, s->thread_name), "unknown");
    assert_int_equal(s->task_name, 0);
    agg_free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_agg__interns_and_counts),
        cmocka_unit_test(test_agg__repeat_counts_the_last_stack),
        cmocka_unit_test(test_agg__caps_drop_and_count),
        cmocka_unit_test(test_agg__empty_names_are_replaced),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
