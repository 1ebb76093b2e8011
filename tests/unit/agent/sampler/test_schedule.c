/* SPDX-License-Identifier: MIT */
/* Tests for agent/sampler/schedule.c with a hand-driven clock. */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include "sampler/schedule.h"

#define MS 1000000ull

static void test_schedule__due_times_do_not_drift(void **state)
{
    (void)state;
    struct schedule s;
    schedule_init(&s, 1000 * MS, 10 * MS);
    assert_true(schedule_due(&s) == 1000 * MS);
    /* each attempt takes 7 ms, started a little late: due times stay on the grid */
    uint64_t now = 1000 * MS;
    for (int i = 0; i < 100; i++) {
        now = schedule_due(&s) + 2 * MS;
        schedule_attempted(&s, now);
        now += 7 * MS;
    }
    assert_true(schedule_due(&s) == 1000 * MS + 100 * 10 * MS);
    assert_int_equal(schedule_missed(&s, now - 7 * MS), 0);
    assert_int_equal(schedule_attempts(&s), 100);
}

static void test_schedule__late_sampler_catches_up(void **state)
{
    (void)state;
    struct schedule s;
    schedule_init(&s, 0, 10 * MS);
    schedule_attempted(&s, 0);
    /* one attempt took 35 ms: the next three are due already, back to back */
    uint64_t now = 35 * MS;
    assert_true(schedule_due(&s) == 10 * MS);
    assert_int_equal(schedule_missed(&s, now), 3);
    assert_int_equal(schedule_given_up(&s), 0); /* late, not lost: they will be made */
    int burst = 0;
    while (schedule_due(&s) <= now) {
        schedule_attempted(&s, now);
        burst++;
    }
    assert_int_equal(burst, 3);
    assert_int_equal(schedule_missed(&s, now), 0);
    assert_int_equal(schedule_given_up(&s), 0);
    assert_true(schedule_due(&s) == 40 * MS);
}

static void test_schedule__hopeless_lag_is_missed(void **state)
{
    (void)state;
    struct schedule s;
    schedule_init(&s, 0, 1 * MS);
    schedule_attempted(&s, 0);
    /* stalled for 1 s: 999 attempts were due; it gives up catching up */
    uint64_t now = 1000 * MS;
    schedule_attempted(&s, now);
    assert_true(schedule_due(&s) == now);
    assert_int_equal(schedule_missed(&s, now), 1001 - 2);
    /* given up for good: the 998 that the attempt due at once does not make up */
    assert_int_equal(schedule_given_up(&s), 1001 - 3);
    schedule_attempted(&s, now);
    assert_int_equal(schedule_missed(&s, now), 1001 - 3);
    assert_int_equal(schedule_given_up(&s), 1001 - 3);
    assert_int_equal(schedule_missed(&s, 0), 0);
    /* on time from here: both stay */
    for (uint64_t k = 1; k <= 10; k++)
        schedule_attempted(&s, now + k * MS);
    assert_int_equal(schedule_missed(&s, now + 10 * MS), 1001 - 3);
    assert_int_equal(schedule_given_up(&s), 1001 - 3);
}

/*
 * What a counter read while sampling goes on needs: schedule_given_up()
 * never decreases, although the lag (schedule_missed()) goes up and down as
 * a slow sampler falls behind and catches up; at the end, the lag left plus
 * what was given up is exactly what was due and not made.
 */
static void test_schedule__given_up_only_grows(void **state)
{
    (void)state;
    struct schedule s;
    schedule_init(&s, 0, 1 * MS);
    uint64_t now = 0, last = 0, made = 0;
    bool lag_fell = false;
    uint64_t prev_lag = 0;
    for (int i = 0; i < 2000; i++) {
        /* every 97th attempt stalls: 50 ms (caught up) or 300 ms (given up) */
        if (i % 97 == 96)
            now += (i % 2 ? 50 : 300) * MS;
        if (schedule_due(&s) > now)
            now = schedule_due(&s);
        schedule_attempted(&s, now);
        made++;
        uint64_t lag = schedule_missed(&s, now);
        lag_fell |= lag < prev_lag;
        prev_lag = lag;
        assert_true(schedule_given_up(&s) >= last);
        last = schedule_given_up(&s);
    }
    assert_true(lag_fell); /* the raw lag is not a counter */
    assert_true(last > 0);
    uint64_t due = now / MS + 1;
    assert_int_equal(made, schedule_attempts(&s));
    /* the final count: at least what was given up, and exactly what is owed */
    uint64_t final = schedule_missed(&s, now);
    assert_true(final >= last);
    assert_int_equal(final, due - made);
}

/*
 * schedule_jitter(): a point of the whole interval, uniform; after a late
 * attempt already inside the interval, a point of what is left of it (never
 * the same moment again); past the whole interval, any point (due at once).
 */
static void test_schedule__jitter_covers_the_whole_interval(void **state)
{
    (void)state;
    const uint64_t iv = 10000000, due = 5000000000ull;
    struct rand_state rng;
    rand_init(&rng, 12345);
    uint64_t tenths[10] = {0};
    for (int k = 0; k < 20000; k++) {
        uint64_t j = schedule_jitter(due, iv, due - iv / 2, &rng); /* made in time */
        assert_true(j < iv);
        tenths[j * 10 / iv]++;
    }
    for (size_t i = 0; i < 10; i++)
        assert_true(tenths[i] > 1700 && tenths[i] < 2300);
    uint64_t lo = UINT64_MAX;
    for (int k = 0; k < 20000; k++) {
        uint64_t now = due + 7 * iv / 10; /* the last attempt was 70% into this interval */
        uint64_t j = schedule_jitter(due, iv, now, &rng);
        assert_true(due + j > now && j < iv);
        lo = j < lo ? j : lo;
    }
    assert_true(lo <= 7 * iv / 10 + iv / 100); /* from all that is left */
    bool early = false;
    for (int k = 0; k < 1000; k++) /* a whole interval behind: anywhere */
        early |= schedule_jitter(due, iv, due + 3 * iv, &rng) < iv / 2;
    assert_true(early);
    assert_int_equal(schedule_jitter(due, 1, due, &rng), 0); /* 1 ns: nothing to draw */
    assert_true(rng.s != 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_schedule__due_times_do_not_drift),
        cmocka_unit_test(test_schedule__late_sampler_catches_up),
        cmocka_unit_test(test_schedule__hopeless_lag_is_missed),
        cmocka_unit_test(test_schedule__given_up_only_grows),
        cmocka_unit_test(test_schedule__jitter_covers_the_whole_interval),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
