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
    int burst = 0;
    while (schedule_due(&s) <= now) {
        schedule_attempted(&s, now);
        burst++;
    }
    assert_int_equal(burst, 3);
    assert_int_equal(schedule_missed(&s, now), 0);
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
    schedule_attempted(&s, now);
    assert_int_equal(schedule_missed(&s, now), 1001 - 3);
    assert_int_equal(schedule_missed(&s, 0), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_schedule__due_times_do_not_drift),
        cmocka_unit_test(test_schedule__late_sampler_catches_up),
        cmocka_unit_test(test_schedule__hopeless_lag_is_missed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
