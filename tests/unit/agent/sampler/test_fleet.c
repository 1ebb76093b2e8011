/* SPDX-License-Identifier: MIT */
/*
 * Tests for agent/sampler/fleet.c: due-time order under every change, the
 * budget factor falling and recovering, the share of attempts the credit
 * lets through. Pure arithmetic: times and CPU readings are made up.
 */
#include "base/compat.h"

#include <math.h>

#include "cmocka_wrap.h"

#include "sampler/fleet.h"

#define SEC 1000000000ull

static void test_fleet__first_is_always_the_earliest(void **state)
{
    (void)state;
    struct fleet *f;
    assert_int_equal(fleet_new(64, &f), 0);
    struct fleet_slot s[64];
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; i < 64; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        assert_int_equal(fleet_add(f, &s[i], x % 1000000), 0);
    }
    struct fleet_slot extra;
    assert_int_equal(fleet_add(f, &extra, 5), -ENOSPC);
    /* move some, remove some, and keep checking the order */
    for (int round = 0; round < 2000; round++) {
        struct fleet_slot *first = fleet_first(f);
        for (size_t i = 0; i < 64; i++) {
            if (s[i].heap < fleet_count(f) && fleet_count(f) && &s[i] != first)
                assert_true(first->due <= s[i].due || s[i].heap >= fleet_count(f));
        }
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        fleet_update(f, first, first->due + 1 + x % 5000);
    }
    uint64_t last = 0;
    size_t n = fleet_count(f);
    for (size_t i = 0; i < n; i++) {
        struct fleet_slot *first = fleet_first(f);
        assert_true(first->due >= last);
        last = first->due;
        fleet_remove(f, first);
    }
    assert_null(fleet_first(f));
    fleet_free(f);
}

static void test_fleet__grow_and_remove_in_the_middle(void **state)
{
    (void)state;
    struct fleet *f;
    assert_int_equal(fleet_new(2, &f), 0);
    struct fleet_slot a, b, c;
    assert_int_equal(fleet_add(f, &a, 30), 0);
    assert_int_equal(fleet_add(f, &b, 10), 0);
    assert_int_equal(fleet_add(f, &c, 20), -ENOSPC);
    assert_int_equal(fleet_grow(f, 8), 0);
    assert_int_equal(fleet_add(f, &c, 20), 0);
    assert_ptr_equal(fleet_first(f), &b);
    fleet_remove(f, &c);
    fleet_remove(f, &b);
    assert_ptr_equal(fleet_first(f), &a);
    assert_int_equal(fleet_count(f), 1);
    fleet_free(f);
}

static void test_fleet__budget_falls_and_recovers(void **state)
{
    (void)state;
    struct fleet *f;
    assert_int_equal(fleet_new(1, &f), 0);
    uint64_t now = 1000 * SEC, cpu = 0;
    fleet_budget_start(f, now, cpu);
    assert_true(fleet_factor(f) == 1.0);
    /* not a period yet: nothing changes */
    assert_false(fleet_budget(f, now + SEC / 2, cpu + SEC / 2, 0.1));
    /* 40% of a CPU against a 10% budget: a quarter of the rates */
    now += SEC, cpu += 4 * SEC / 10;
    assert_true(fleet_budget(f, now, cpu, 0.1));
    assert_true(fabs(fleet_factor(f) - 0.25) < 1e-9);
    /* at the budget: unchanged */
    now += SEC, cpu += SEC / 10;
    assert_true(fleet_budget(f, now, cpu, 0.1));
    assert_true(fabs(fleet_factor(f) - 0.25) < 1e-9);
    /* well under it: +25% per period, up to 1 */
    double want = 0.25;
    for (int i = 0; i < 10; i++) {
        now += SEC, cpu += SEC / 100;
        assert_true(fleet_budget(f, now, cpu, 0.1));
        want = want * 1.25 > 1.0 ? 1.0 : want * 1.25;
        assert_true(fabs(fleet_factor(f) - want) < 1e-9);
    }
    assert_true(fleet_factor(f) == 1.0);
    /* a hopeless budget still leaves a floor */
    for (int i = 0; i < 10; i++) {
        now += SEC, cpu += SEC;
        (void)fleet_budget(f, now, cpu, 0.0001);
    }
    assert_true(fleet_factor(f) >= FLEET_MIN_FACTOR);
    fleet_free(f);
}

/* Share of due attempts taken at a given factor, over many attempts. */
static double taken_share(struct fleet *f, uint64_t attempts)
{
    struct fleet_slot s;
    assert_int_equal(fleet_add(f, &s, 0), 0);
    uint64_t done = 0, taken = 0;
    while (done < attempts) {
        uint64_t skip = fleet_take(f, &s);
        if (skip == 0) {
            taken++;
            done++;
        } else {
            done += skip;
        }
    }
    fleet_remove(f, &s);
    return (double)taken / (double)done;
}

static void test_fleet__credit_takes_the_factors_share(void **state)
{
    (void)state;
    struct fleet *f;
    assert_int_equal(fleet_new(4, &f), 0);
    assert_true(taken_share(f, 1000) == 1.0);
    fleet_budget_start(f, 0, 0);
    assert_true(fleet_budget(f, SEC, 4 * SEC / 10, 0.1)); /* factor 0.25 */
    double share = taken_share(f, 100000);
    print_message("factor 0.25: %.4f of the attempts taken\n", share);
    assert_true(fabs(share - 0.25) < 0.001);
    fleet_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fleet__first_is_always_the_earliest),
        cmocka_unit_test(test_fleet__grow_and_remove_in_the_middle),
        cmocka_unit_test(test_fleet__budget_falls_and_recovers),
        cmocka_unit_test(test_fleet__credit_takes_the_factors_share),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
