/* SPDX-License-Identifier: MIT */
/* Tests for agent/aggregate/window.c: the bounded hand-off between the
 * sampling and the export thread, and its window pool. */
#include "base/compat.h"

#include <pthread.h>

#include "cmocka_wrap.h"

#include "aggregate/window.h"
#include "base/alloc.h"
#include "base/clock.h"

static struct window_item item_with(struct window_queue *q, int pid)
{
    struct window_item it = {.meta = {.pid = pid, .mode = PROFILE_WALL}};
    assert_int_equal(window_get(q, &it.agg), 0);
    assert_int_equal(labels_set(&it.meta.labels, "job", "j"), 0);
    return it;
}

static void test_window__fifo_and_moves_ownership(void **state)
{
    (void)state;
    size_t before = alloc_in_use();
    struct window_queue *q;
    assert_int_equal(window_queue_new(4, 8, NULL, &q), 0);
    for (int pid = 1; pid <= 3; pid++) {
        struct window_item it = item_with(q, pid);
        assert_int_equal(window_push(q, &it), 0);
        assert_null(it.agg); /* moved */
        assert_int_equal(it.meta.labels.n, 0);
    }
    assert_int_equal(window_pending(q), 3);
    for (int pid = 1; pid <= 3; pid++) {
        struct window_item out;
        assert_int_equal(window_pop(q, clock_mono_now() + 1000000, &out), 0);
        assert_int_equal(out.meta.pid, pid);
        assert_string_equal(labels_get(&out.meta.labels, "job"), "j");
        window_item_release(q, &out);
    }
    struct window_item out;
    assert_int_equal(window_pop(q, clock_mono_now() + 1000000, &out), -ETIMEDOUT);
    window_queue_free(q);
    assert_int_equal(alloc_in_use(), before);
}

static void test_window__full_queue_refuses_and_keeps_the_item(void **state)
{
    (void)state;
    struct window_queue *q;
    assert_int_equal(window_queue_new(2, 8, NULL, &q), 0);
    struct window_item a = item_with(q, 1), b = item_with(q, 2), c = item_with(q, 3);
    assert_int_equal(window_push(q, &a), 0);
    assert_int_equal(window_push(q, &b), 0);
    assert_int_equal(window_push(q, &c), -ENOSPC);
    assert_non_null(c.agg); /* still the caller's */
    window_item_release(q, &c);
    window_queue_free(q); /* frees the queued two */
}

static void test_window__pool_is_capped_and_reuses(void **state)
{
    (void)state;
    struct window_queue *q;
    assert_int_equal(window_queue_new(2, 2, NULL, &q), 0);
    struct agg *a, *b, *c;
    assert_int_equal(window_get(q, &a), 0);
    assert_int_equal(window_get(q, &b), 0);
    assert_int_equal(window_get(q, &c), -EAGAIN);
    window_recycle(q, a);
    assert_int_equal(window_get(q, &c), 0);
    assert_ptr_equal(c, a); /* the same memory again */
    window_recycle(q, b);
    window_recycle(q, c);
    window_queue_free(q);
}

static void test_window__close_drains_then_reports_epipe(void **state)
{
    (void)state;
    struct window_queue *q;
    assert_int_equal(window_queue_new(2, 4, NULL, &q), 0);
    struct window_item a = item_with(q, 7);
    assert_int_equal(window_push(q, &a), 0);
    window_close(q);
    struct window_item late = item_with(q, 8);
    assert_int_equal(window_push(q, &late), -EPIPE);
    window_item_release(q, &late);
    struct window_item out;
    assert_int_equal(window_pop(q, clock_mono_now() + 1000000, &out), 0);
    assert_int_equal(out.meta.pid, 7);
    window_item_release(q, &out);
    assert_int_equal(window_pop(q, clock_mono_now() + 1000000, &out), -EPIPE);
    window_queue_free(q);
}

static void test_window__grow_keeps_queued_items_in_order(void **state)
{
    (void)state;
    struct window_queue *q;
    assert_int_equal(window_queue_new(3, 3, NULL, &q), 0);
    struct window_item out;
    /* wrap the ring: push 3, pop 2, push 2 */
    for (int pid = 1; pid <= 3; pid++) {
        struct window_item it = item_with(q, pid);
        assert_int_equal(window_push(q, &it), 0);
    }
    for (int i = 0; i < 2; i++) {
        assert_int_equal(window_pop(q, clock_mono_now() + 1000000, &out), 0);
        window_item_release(q, &out);
    }
    for (int pid = 4; pid <= 5; pid++) {
        struct window_item it = item_with(q, pid);
        assert_int_equal(window_push(q, &it), 0);
    }
    struct agg *spare;
    assert_int_equal(window_get(q, &spare), -EAGAIN); /* all 3 windows are queued */
    assert_int_equal(window_grow_pool(q, 6), 0);
    assert_int_equal(window_get(q, &spare), 0);
    window_recycle(q, spare);
    for (int pid = 6; pid <= 8; pid++) { /* room in the queue for the new windows */
        struct window_item it = item_with(q, pid);
        assert_int_equal(window_push(q, &it), 0);
    }
    for (int pid = 3; pid <= 8; pid++) {
        assert_int_equal(window_pop(q, clock_mono_now() + 1000000, &out), 0);
        assert_int_equal(out.meta.pid, pid);
        window_item_release(q, &out);
    }
    window_queue_free(q);
}

static bool limits_equal(struct agg_limits a, struct agg_limits b)
{
    return a.string_bytes == b.string_bytes && a.strings == b.strings &&
           a.functions == b.functions && a.locations == b.locations && a.samples == b.samples &&
           a.stack_slots == b.stack_slots && a.threads == b.threads;
}

/* A reload that changes limits.target_memory_bytes (cli/agent.c): windows made
 * from then on have the new limits; those made before are not handed out again. */
static void test_window__set_limits_applies_to_windows_made_afterwards(void **state)
{
    (void)state;
    size_t before = alloc_in_use();
    const struct agg_limits before_lim = window_limits_for(16u << 20);
    const struct agg_limits after_lim = window_limits_for(2u << 20);
    assert_false(limits_equal(before_lim, after_lim));
    struct window_queue *q;
    assert_int_equal(window_queue_new(4, 4, &before_lim, &q), 0);
    /* before: a window in the pool, one in use, one queued for export */
    struct agg *pooled, *in_use;
    assert_int_equal(window_get(q, &pooled), 0);
    assert_int_equal(window_get(q, &in_use), 0);
    struct window_item queued = item_with(q, 1);
    assert_true(limits_equal(agg_limits_of(queued.agg), before_lim));
    assert_int_equal(window_push(q, &queued), 0);
    assert_true(limits_equal(agg_limits_of(pooled), before_lim));
    window_recycle(q, pooled);

    window_queue_set_limits(q, &after_lim);

    /* the pooled one is replaced by a after_lim one */
    struct agg *a;
    assert_int_equal(window_get(q, &a), 0);
    assert_true(limits_equal(agg_limits_of(a), after_lim));
    /* the one in use keeps its limits until it comes back, and is not reused */
    assert_true(limits_equal(agg_limits_of(in_use), before_lim));
    size_t held = alloc_in_use();
    window_recycle(q, in_use);
    assert_true(alloc_in_use() < held); /* freed at once, not kept in the pool */
    struct agg *b;
    assert_int_equal(window_get(q, &b), 0);
    assert_true(limits_equal(agg_limits_of(b), after_lim));
    /* so is the one the export thread had */
    struct window_item out;
    assert_int_equal(window_pop(q, clock_mono_now() + 1000000, &out), 0);
    window_item_release(q, &out);
    struct agg *c;
    assert_int_equal(window_get(q, &c), 0);
    assert_true(limits_equal(agg_limits_of(c), after_lim));
    /* windows freed on the way took their places along: still pool_cap in all */
    struct agg *d, *e;
    assert_int_equal(window_get(q, &d), 0);
    assert_true(limits_equal(agg_limits_of(d), after_lim));
    assert_int_equal(window_get(q, &e), -EAGAIN);
    /* after_lim windows go back to the pool and are reused */
    window_recycle(q, d);
    assert_int_equal(window_get(q, &e), 0);
    assert_ptr_equal(e, d);
    window_recycle(q, a);
    window_recycle(q, b);
    window_recycle(q, c);
    window_recycle(q, e);
    window_queue_free(q);
    assert_int_equal(alloc_in_use(), before);
}

struct consumer {
    struct window_queue *q;
    int got;
};

static void *consume(void *arg)
{
    struct consumer *c = arg;
    struct window_item out;
    while (window_pop(c->q, clock_mono_now() + 5000000000ull, &out) == 0) {
        c->got++;
        window_item_release(c->q, &out);
    }
    return NULL;
}

static void test_window__pop_wakes_for_a_push_from_another_thread(void **state)
{
    (void)state;
    struct window_queue *q;
    assert_int_equal(window_queue_new(8, 16, NULL, &q), 0);
    struct consumer c = {.q = q};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, consume, &c), 0);
    for (int i = 0; i < 100; i++) {
        struct window_item it = item_with(q, i);
        while (window_push(q, &it) == -ENOSPC)
            ; /* the consumer catches up */
    }
    window_close(q);
    pthread_join(th, NULL);
    assert_int_equal(c.got, 100);
    window_queue_free(q);
}

/* Fills @a with @n distinct stacks (one per thread): grows its sample table. */
static void fill(struct agg *a, size_t n)
{
    struct unwind_frame f = {
        .kind = UNWIND_FRAME_PYTHON, .function = "f", .file = "/f.py", .pos = {1, 1, 0, 0}};
    for (size_t tid = 0; tid < n; tid++)
        assert_int_equal(agg_add_in(a, &f, 1, tid, 0, "t", NULL, 1, 10), 0);
}

static void test_window__pool_keeps_a_few_small_spares(void **state)
{
    (void)state;
    size_t before = alloc_in_use();
    struct window_queue *q;
    assert_int_equal(window_queue_new(32, 32, NULL, &q), 0);
    size_t empty = alloc_in_use();
    struct agg *w[20];
    for (size_t i = 0; i < 20; i++)
        assert_int_equal(window_get(q, &w[i]), 0);
    size_t live, nfree;
    window_counts(q, &live, &nfree);
    assert_int_equal(live, 20);
    assert_int_equal(nfree, 0);
    size_t one = agg_memory(w[0]);
    for (size_t i = 0; i < 20; i++)
        window_recycle(q, w[i]);
    /* what is left is WINDOW_POOL_SPARE fresh windows, not the 20 once in use */
    window_counts(q, &live, &nfree);
    assert_int_equal(live, WINDOW_POOL_SPARE);
    assert_int_equal(nfree, WINDOW_POOL_SPARE);
    assert_true(alloc_in_use() - empty <= WINDOW_POOL_SPARE * (one + 256));
    window_queue_free(q);
    assert_int_equal(alloc_in_use(), before);
}

static void test_window__a_grown_window_is_freed_when_it_comes_back(void **state)
{
    (void)state;
    struct window_queue *q;
    assert_int_equal(window_queue_new(4, 4, NULL, &q), 0);
    struct agg *a, *b;
    assert_int_equal(window_get(q, &a), 0);
    size_t small = agg_memory(a);
    fill(a, 1000);
    assert_true(agg_grows(a) > 0);
    assert_true(agg_memory(a) > 2 * small);
    window_recycle(q, a);
    size_t live, nfree;
    window_counts(q, &live, &nfree);
    assert_int_equal(live, 0);
    assert_int_equal(nfree, 0);
    assert_int_equal(window_get(q, &b), 0);
    assert_int_equal(agg_grows(b), 0);
    assert_int_equal(agg_memory(b), small);
    window_recycle(q, b);
    window_queue_free(q);
}

/* The cap counts windows in existence exactly, whether they came back to
 * the pool or were freed on the way. */
static void test_window__cap_counts_freed_windows_out(void **state)
{
    (void)state;
    enum { CAP = WINDOW_POOL_SPARE + 4 };
    struct window_queue *q;
    assert_int_equal(window_queue_new(CAP, CAP, NULL, &q), 0);
    struct agg *w[CAP], *extra;
    for (int round = 0; round < 3; round++) {
        for (size_t i = 0; i < CAP; i++)
            assert_int_equal(window_get(q, &w[i]), 0);
        assert_int_equal(window_get(q, &extra), -EAGAIN);
        fill(w[0], 500); /* one of them grows: freed when it comes back */
        for (size_t i = 0; i < CAP; i++)
            window_recycle(q, w[i]);
        size_t live, nfree;
        window_counts(q, &live, &nfree);
        assert_int_equal(live, WINDOW_POOL_SPARE);
        assert_int_equal(nfree, WINDOW_POOL_SPARE);
    }
    window_queue_free(q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_window__fifo_and_moves_ownership),
        cmocka_unit_test(test_window__full_queue_refuses_and_keeps_the_item),
        cmocka_unit_test(test_window__pool_is_capped_and_reuses),
        cmocka_unit_test(test_window__close_drains_then_reports_epipe),
        cmocka_unit_test(test_window__pop_wakes_for_a_push_from_another_thread),
        cmocka_unit_test(test_window__grow_keeps_queued_items_in_order),
        cmocka_unit_test(test_window__set_limits_applies_to_windows_made_afterwards),
        cmocka_unit_test(test_window__pool_keeps_a_few_small_spares),
        cmocka_unit_test(test_window__a_grown_window_is_freed_when_it_comes_back),
        cmocka_unit_test(test_window__cap_counts_freed_windows_out),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
