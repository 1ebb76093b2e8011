/* SPDX-License-Identifier: MIT */
/*
 * Tests for agent/sampler/cpucredit.c: what cpu mode counts for a thread
 * that /proc lists as 'R' when nothing tells running from waiting (issue
 * 38). The looks are made up here (CPU times, states), as the sampler would
 * hand them over at each attempt.
 */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include "sampler/cpucredit.h"

#define I 10000000ull /* 100 Hz */

static void test_cpucredit__the_first_look_only_starts(void **state)
{
    (void)state;
    struct cpucredit c = {0};
    assert_int_equal(cpucredit_look(&c, 5 * I, true, I), 0);
    /* half an interval owed from the start: the total is rounded, not cut */
    assert_int_equal(cpucredit_look(&c, 5 * I + I / 2, true, I), 1);
    assert_int_equal(cpucredit_look(&c, 5 * I + I / 2 + I - 1, true, I), 0);
    assert_int_equal(cpucredit_look(&c, 5 * I + I / 2 + I, true, I), 1);
    assert_int_equal(cpucredit_look(&c, 5 * I, true, 0), 0); /* no interval: nothing */
}

/* Always running: one sample per interval of CPU time, at every attempt. */
static void test_cpucredit__a_running_thread_is_counted_at_every_attempt(void **state)
{
    (void)state;
    struct cpucredit c = {0};
    uint64_t cpu = 0;
    unsigned paid = 0;
    (void)cpucredit_look(&c, cpu, true, I);
    for (int k = 0; k < 1000; k++) {
        cpu += I;
        unsigned n = cpucredit_look(&c, cpu, true, I);
        assert_int_equal(n, 1);
        paid += n;
    }
    assert_int_equal(paid, 1000);
}

/*
 * Runnable all the time, running a third of it (three busy processes on one
 * CPU, or a 33 % quota): 'R' at every attempt, a sample at one in three.
 */
static void test_cpucredit__waiting_for_a_cpu_is_not_counted(void **state)
{
    (void)state;
    struct cpucredit c = {0};
    uint64_t cpu = 0;
    unsigned paid = 0;
    (void)cpucredit_look(&c, cpu, true, I);
    for (int k = 0; k < 3000; k++) {
        cpu += I / 3;
        paid += cpucredit_look(&c, cpu, true, I);
    }
    assert_true(paid >= 999 && paid <= 1001);
    /* throttled in bursts: 30 ms run, then 70 ms waiting (a 30 % quota of 100 ms) */
    struct cpucredit q = {0};
    cpu = 0;
    paid = 0;
    (void)cpucredit_look(&q, cpu, true, I);
    for (int k = 0; k < 1000; k++) {
        cpu += k % 10 < 3 ? I : 0;
        paid += cpucredit_look(&q, cpu, true, I);
    }
    assert_int_equal(paid, 300);
}

/* CPU time earned between attempts that found the thread asleep is paid at the next 'R'. */
static void test_cpucredit__paid_only_where_the_thread_is_runnable(void **state)
{
    (void)state;
    struct cpucredit c = {0};
    (void)cpucredit_look(&c, 0, false, I);
    assert_int_equal(cpucredit_look(&c, 2 * I, false, I), 0); /* asleep: nothing now */
    assert_int_equal(cpucredit_look(&c, 3 * I, false, I), 0);
    /* 3.5 intervals owed: three paid at once, half an interval stays */
    assert_int_equal(cpucredit_look(&c, 3 * I, true, I), 3);
    assert_int_equal(cpucredit_look(&c, 3 * I + I / 2, true, I), 1);
    /* at most CPUCREDIT_MAX_PAY at once; the rest at the next ones */
    assert_int_equal(cpucredit_look(&c, 9 * I + I / 2, true, I), CPUCREDIT_MAX_PAY);
    assert_int_equal(cpucredit_look(&c, 9 * I + I / 2, true, I), 2);
    assert_int_equal(cpucredit_look(&c, 9 * I + I / 2, true, I), 0);
}

/* More owed than CPUCREDIT_MAX_OWED samples (and CPUCREDIT_OWED_NS) is dropped. */
static void test_cpucredit__what_is_owed_has_a_cap(void **state)
{
    (void)state;
    struct cpucredit c = {0};
    (void)cpucredit_look(&c, 0, false, I);
    assert_int_equal(cpucredit_look(&c, 100 * I, false, I), 0);
    unsigned paid = 0;
    for (int k = 0; k < 10; k++)
        paid += cpucredit_look(&c, 100 * I, true, I);
    uint64_t cap =
        CPUCREDIT_MAX_OWED * I > CPUCREDIT_OWED_NS ? CPUCREDIT_MAX_OWED * I : CPUCREDIT_OWED_NS;
    assert_int_equal(paid, cap / I);
    /* at 1 kHz ten samples booked at once (the kernel books CPU time at its ticks):
     * not capped, paid over the next few attempts */
    uint64_t fast = 1000000;
    struct cpucredit k1 = {0};
    (void)cpucredit_look(&k1, 0, true, fast);
    paid = 0;
    for (int k = 1; k < 1010; k++)
        paid += cpucredit_look(&k1, (uint64_t)((k < 1000 ? k : 1000) / 10) * 10 * fast, true, fast);
    assert_int_equal(paid, 1000);
}

/* Paid for a stack that could not be read (torn): owed again, up to the cap. */
static void test_cpucredit__a_refund_is_owed_again(void **state)
{
    (void)state;
    struct cpucredit c = {0};
    cpucredit_refund(&c, 3, I); /* not started: nothing */
    (void)cpucredit_look(&c, 0, true, I);
    assert_int_equal(cpucredit_look(&c, 3 * I, true, I), 3);
    cpucredit_refund(&c, 3, I);
    assert_int_equal(cpucredit_look(&c, 3 * I, true, I), 3);
    assert_int_equal(cpucredit_look(&c, 3 * I, true, I), 0);
    cpucredit_refund(&c, 100, I); /* more than the cap */
    unsigned paid = 0;
    for (int k = 0; k < 10; k++)
        paid += cpucredit_look(&c, 3 * I, true, I);
    uint64_t cap =
        CPUCREDIT_MAX_OWED * I > CPUCREDIT_OWED_NS ? CPUCREDIT_MAX_OWED * I : CPUCREDIT_OWED_NS;
    assert_int_equal(paid, cap / I);
}

/* A CPU time lower than the last: another thread behind the same TID, which starts over. */
static void test_cpucredit__a_new_thread_starts_over(void **state)
{
    (void)state;
    struct cpucredit c = {0};
    (void)cpucredit_look(&c, 50 * I, true, I);
    assert_int_equal(cpucredit_look(&c, 51 * I, true, I), 1);
    assert_int_equal(cpucredit_look(&c, 2 * I, true, I), 0); /* not 51 - 2 intervals back */
    assert_int_equal(cpucredit_look(&c, 3 * I, true, I), 1);
}

/*
 * Exact in total: whatever the states and the CPU time at each look (a
 * made-up mix of running, waiting and sleeping), what is paid plus what is
 * owed is the CPU time since the first look and half an interval, as long
 * as the cap was not reached; and a thread 'R' at every look is never owed
 * more than a few samples.
 */
static void test_cpucredit__pays_its_cpu_time_in_total(void **state)
{
    (void)state;
    uint64_t x = 88172645463325252ull; /* xorshift64 */
    struct cpucredit c = {0};
    uint64_t cpu = 1000, paid = 0, most_owed = 0;
    (void)cpucredit_look(&c, cpu, true, I);
    for (int k = 0; k < 20000; k++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        cpu += (x % 4 == 0) ? 0 : (x >> 8) % (I + 1); /* asleep a quarter of the time */
        bool runnable = (x >> 40) % 3 != 0;
        paid += cpucredit_look(&c, cpu, runnable, I);
        assert_int_equal(paid * I + c.owed_ns, cpu - 1000 + I / 2);
        if (c.owed_ns > most_owed)
            most_owed = c.owed_ns;
    }
    assert_true(most_owed < CPUCREDIT_MAX_OWED * I);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cpucredit__the_first_look_only_starts),
        cmocka_unit_test(test_cpucredit__a_running_thread_is_counted_at_every_attempt),
        cmocka_unit_test(test_cpucredit__waiting_for_a_cpu_is_not_counted),
        cmocka_unit_test(test_cpucredit__paid_only_where_the_thread_is_runnable),
        cmocka_unit_test(test_cpucredit__what_is_owed_has_a_cap),
        cmocka_unit_test(test_cpucredit__a_refund_is_owed_again),
        cmocka_unit_test(test_cpucredit__a_new_thread_starts_over),
        cmocka_unit_test(test_cpucredit__pays_its_cpu_time_in_total),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
