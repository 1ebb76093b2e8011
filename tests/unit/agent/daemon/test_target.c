/* SPDX-License-Identifier: MIT */
/*
 * Tests for agent/daemon/target.c: target_cut()'s hand-over of windows to
 * the export queue and its loss accounting, with windows from a shared pool
 * (a target holds only its current window): a cut that finds no window to
 * switch to keeps sampling into the one it has and counts one window lost;
 * a full queue loses the window it could not queue, counted once; an empty
 * window is given back, not sent and not counted; the final cut leaves the
 * target without a window.
 */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include "aggregate/window.h"
#include "base/alloc.h"
#include "base/clock.h"
#include "daemon/target_internal.h" /* a target built by hand */

#define S 1000000000ull

/* A target as far as target_cut() looks: a window, labels, no sampler. */
static struct target *target_fake(struct window_queue *q)
{
    struct target *t = alloc_calloc(1, sizeof(*t));
    assert_non_null(t);
    t->info.key.pid = 42;
    t->info.interval_ns = 10000000;
    snprintf(t->info.job_name, sizeof(t->info.job_name), "app");
    assert_int_equal(labels_set(&t->info.labels, "job", "app"), 0);
    assert_int_equal(window_get(q, &t->win), 0);
    return t;
}

static void sample(struct target *t, int n)
{
    struct unwind_frame f = {
        .kind = UNWIND_FRAME_PYTHON, .function = "f", .file = "/f.py", .pos = {1, 1, 0, 0}};
    for (int i = 0; i < n; i++)
        assert_int_equal(agg_add_in(t->win, &f, 1, 1, 0, "t", NULL, 1, 10), 0);
}

static int64_t pop_count(struct window_queue *q)
{
    struct window_item out;
    assert_int_equal(window_pop(q, clock_mono_now() + 1000000, &out), 0);
    assert_int_equal(out.meta.pid, 42);
    assert_string_equal(labels_get(&out.meta.labels, "job"), "app");
    int64_t n = agg_sample(out.agg, 0)->count;
    window_item_release(q, &out);
    return n;
}

static void test_target__cut_without_a_free_window_keeps_sampling_and_counts(void **state)
{
    (void)state;
    size_t before = alloc_in_use();
    struct window_queue *q;
    assert_int_equal(window_queue_new(2, 2, NULL, &q), 0); /* two windows in all */
    struct target *t = target_fake(q);
    sample(t, 3);
    assert_int_equal(target_cut(t, q, 10 * S, 10 * (int64_t)S, false), 0);
    assert_int_equal(t->stats.windows, 1);
    assert_int_equal(t->stats.windows_dropped, 0);
    assert_int_equal(agg_sample_count(t->win), 0); /* a fresh one */

    /* both windows in use (one queued, one held): the next cut loses its content */
    sample(t, 5);
    struct agg *held = t->win;
    assert_int_equal(target_cut(t, q, 20 * S, 20 * (int64_t)S, false), 1);
    assert_int_equal(t->stats.windows, 1);
    assert_int_equal(t->stats.windows_dropped, 1);
    assert_ptr_equal(t->win, held); /* sampling goes on into it, emptied */
    assert_int_equal(agg_sample_count(t->win), 0);
    assert_int_equal(t->win_start, 20 * S);

    /* the export thread gives one back: cuts work again */
    assert_int_equal(pop_count(q), 3);
    sample(t, 7);
    assert_int_equal(target_cut(t, q, 30 * S, 30 * (int64_t)S, false), 0);
    assert_int_equal(t->stats.windows, 2);
    assert_int_equal(t->stats.windows_dropped, 1);
    assert_int_equal(pop_count(q), 7);

    /* an empty window is given back, neither sent nor counted */
    assert_int_equal(target_cut(t, q, 40 * S, 40 * (int64_t)S, false), 0);
    assert_int_equal(window_pending(q), 0);
    assert_int_equal(t->stats.windows, 2);
    assert_int_equal(t->stats.windows_dropped, 1);

    /* the final cut sends the last window and takes none */
    sample(t, 2);
    assert_int_equal(target_cut(t, q, 45 * S, 45 * (int64_t)S, true), 0);
    assert_null(t->win);
    assert_int_equal(t->stats.windows, 3);
    assert_int_equal(pop_count(q), 2);
    size_t live, nfree;
    window_counts(q, &live, &nfree);
    assert_int_equal(live, nfree); /* every window came back */
    target_free(t, q);
    window_queue_free(q);
    assert_int_equal(alloc_in_use(), before);
}

static void test_target__full_queue_loses_the_window_once(void **state)
{
    (void)state;
    size_t before = alloc_in_use();
    struct window_queue *q;
    assert_int_equal(window_queue_new(1, 4, NULL, &q), 0); /* one queue slot */
    struct target *t = target_fake(q);
    sample(t, 3);
    assert_int_equal(target_cut(t, q, 10 * S, 10 * (int64_t)S, false), 0);
    sample(t, 4);
    /* the queue is full: this window is lost (and given back), a new one taken */
    assert_int_equal(target_cut(t, q, 20 * S, 20 * (int64_t)S, false), 1);
    assert_int_equal(t->stats.windows, 1);
    assert_int_equal(t->stats.windows_dropped, 1);
    assert_non_null(t->win);
    assert_int_equal(agg_sample_count(t->win), 0);
    size_t live, nfree;
    window_counts(q, &live, &nfree);
    assert_int_equal(live - nfree, 2); /* the queued one and the target's */
    assert_int_equal(pop_count(q), 3);
    sample(t, 1);
    assert_int_equal(target_cut(t, q, 30 * S, 30 * (int64_t)S, true), 0);
    assert_int_equal(pop_count(q), 1);
    assert_int_equal(t->stats.windows, 2);
    assert_int_equal(t->stats.windows_dropped, 1);
    target_free(t, q);
    window_queue_free(q);
    assert_int_equal(alloc_in_use(), before);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_target__cut_without_a_free_window_keeps_sampling_and_counts),
        cmocka_unit_test(test_target__full_queue_loses_the_window_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
