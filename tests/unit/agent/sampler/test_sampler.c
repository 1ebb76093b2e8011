/* SPDX-License-Identifier: MIT */
/* Tests for agent/sampler/sampler.c: when attempts are made (the jitter over
 * the fixed schedule). The stack walk itself is covered by the live tests. */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include "aggregate/agg.h"
#include "sampler/sampler.h"

#define INTERVAL 10000000ull /* 100 Hz */
#define START    1000000000ull

static void test_sampler__first_attempt_is_due_at_once(void **state)
{
    (void)state;
    struct agg *a;
    struct sampler *s;
    assert_int_equal(agg_new(NULL, &a), 0);
    struct sampler_opts o = {.mode = PROFILE_WALL, .interval_ns = INTERVAL};
    /* wall mode without blocking never touches the unwinder before an attempt */
    assert_int_equal(sampler_new(1, NULL, a, &o, START, &s), 0);
    assert_int_equal(sampler_due(s), START);
    sampler_free(s);
    agg_free(a);
}

static void test_sampler__attempts_are_spread_over_each_whole_interval(void **state)
{
    (void)state;
    struct agg *a;
    struct sampler *s;
    assert_int_equal(agg_new(NULL, &a), 0);
    struct sampler_opts o = {.mode = PROFILE_WALL, .interval_ns = INTERVAL};
    assert_int_equal(sampler_new(1, NULL, a, &o, START, &s), 0);
    uint64_t buckets[10] = {0};
    uint64_t now = START;
    for (uint64_t k = 1; k <= 10000; k++) {
        sampler_idle(s, now); /* the attempt due now passes; the next is k intervals in */
        uint64_t due = sampler_due(s);
        uint64_t grid = START + k * INTERVAL;
        assert_true(due >= grid);
        assert_true(due < grid + INTERVAL); /* in its own interval */
        buckets[(due - grid) * 10 / INTERVAL]++;
        now = due;
    }
    /* roughly uniform: every tenth of the interval gets 1000 +- 20%, the last
     * ones too (a target whose period is the interval is seen all over it) */
    for (size_t i = 0; i < 10; i++)
        assert_true(buckets[i] > 800 && buckets[i] < 1200);
    /* the schedule itself did not move: nothing was missed */
    assert_int_equal(sampler_counts(s).missed, 0);
    assert_int_equal(sampler_counts_final(s).missed, 0);
    assert_int_equal(sampler_counts(s).skipped, 0);
    sampler_free(s);
    agg_free(a);
}

/*
 * An attempt made late, already in the next interval (its point was at the
 * end of its own, and the tick or the timer slack added some): the next one
 * is drawn from what is left of its interval, so it is not made at once (the
 * same moment sampled twice), and nothing counts as missed. One that is a
 * whole interval behind is due at once (catching up).
 */
static void test_sampler__a_late_attempt_leaves_the_next_its_own_moment(void **state)
{
    (void)state;
    struct agg *a;
    struct sampler *s;
    assert_int_equal(agg_new(NULL, &a), 0);
    struct sampler_opts o = {.mode = PROFILE_WALL, .interval_ns = INTERVAL};
    assert_int_equal(sampler_new(1, NULL, a, &o, START, &s), 0);
    sampler_idle(s, START);
    uint64_t lo = UINT64_MAX;
    for (uint64_t k = 1; k <= 1000; k++) {
        /* attempt k (due at grid) made 30% into interval k + 1 */
        uint64_t grid = START + k * INTERVAL;
        uint64_t now = grid + INTERVAL + 3 * INTERVAL / 10;
        sampler_idle(s, now);
        uint64_t due = sampler_due(s);
        assert_true(due > now);
        assert_true(due < grid + 2 * INTERVAL);
        lo = due - now < lo ? due - now : lo;
    }
    assert_true(lo < INTERVAL / 20); /* drawn from all that is left */
    assert_int_equal(sampler_counts_final(s).missed, 0);
    /* a whole interval and more behind: due at once */
    uint64_t now = START + 1003 * INTERVAL;
    sampler_idle(s, now);
    assert_true(sampler_due(s) <= now);
    sampler_free(s);
    agg_free(a);
}

static void test_sampler__skipped_runs_keep_the_grid(void **state)
{
    (void)state;
    struct agg *a;
    struct sampler *s;
    assert_int_equal(agg_new(NULL, &a), 0);
    struct sampler_opts o = {.mode = PROFILE_WALL, .interval_ns = INTERVAL};
    assert_int_equal(sampler_new(1, NULL, a, &o, START, &s), 0);
    sampler_skip(s, START, 5);
    uint64_t due = sampler_due(s);
    assert_true(due >= START + 5 * INTERVAL && due < START + 6 * INTERVAL);
    assert_int_equal(sampler_counts(s).skipped, 5);
    sampler_free(s);
    agg_free(a);
}

/*
 * missed while sampling goes on only grows (a counter in /metrics): a sampler
 * that falls 5 intervals behind and catches up shows no missed attempts, one
 * that stalls past the schedule's lag limit shows what it gave up, and the
 * final counts add what was still owed when sampling ended.
 */
static void test_sampler__missed_is_a_counter_while_sampling(void **state)
{
    (void)state;
    struct agg *a;
    struct sampler *s;
    assert_int_equal(agg_new(NULL, &a), 0);
    struct sampler_opts o = {.mode = PROFILE_WALL, .interval_ns = INTERVAL};
    assert_int_equal(sampler_new(1, NULL, a, &o, START, &s), 0);
    sampler_idle(s, START);
    /* 5 intervals late: late, not missed, and made up back to back */
    uint64_t now = START + 6 * INTERVAL;
    sampler_idle(s, now);
    assert_int_equal(sampler_counts(s).missed, 0);
    while (sampler_due(s) <= now)
        sampler_idle(s, now);
    assert_int_equal(sampler_counts(s).missed, 0);
    /* ending now would owe at most the attempt whose interval starts now (its
     * jittered time is still to come) */
    assert_true(sampler_counts_final(s).missed <= 1);
    /* stalled for 2 s (200 intervals, over the limit of 100): given up */
    now += 200 * INTERVAL;
    sampler_idle(s, now);
    uint64_t lost = sampler_counts(s).missed;
    assert_true(lost >= 195 && lost <= 200);
    for (int i = 0; i < 50; i++) {
        now = sampler_due(s) > now ? sampler_due(s) : now;
        sampler_idle(s, now);
        assert_int_equal(sampler_counts(s).missed, lost); /* never down */
    }
    /* ended 4 intervals late: those whose whole interval has gone by (2 at
     * least) are owed for good now */
    now += 4 * INTERVAL + INTERVAL / 2;
    sampler_idle(s, now);
    assert_int_equal(sampler_counts(s).missed, lost);
    assert_true(sampler_counts_final(s).missed >= lost + 2);
    sampler_free(s);
    agg_free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sampler__missed_is_a_counter_while_sampling),
        cmocka_unit_test(test_sampler__first_attempt_is_due_at_once),
        cmocka_unit_test(test_sampler__attempts_are_spread_over_each_whole_interval),
        cmocka_unit_test(test_sampler__a_late_attempt_leaves_the_next_its_own_moment),
        cmocka_unit_test(test_sampler__skipped_runs_keep_the_grid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
