/* SPDX-License-Identifier: MIT */
/* Tests for agent/base/backoff.c: the retry delay of the push engine and the Kubernetes client. */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include "base/backoff.h"

#define SEC 1000000000ull

static void test_backoff__bounds(void **state)
{
    (void)state;
    const uint64_t mn = 500000000ull, mx = 300 * SEC;
    const uint64_t rnds[] = {0, 1, 12345, UINT64_MAX / 3, UINT64_MAX};
    for (unsigned a = 0; a < 80; a++) {
        uint64_t cap = mn;
        for (unsigned i = 1; i < a && cap < mx; i++)
            cap = cap * 2 > mx ? mx : cap * 2;
        for (size_t r = 0; r < PYPROFD_ARRAY_SIZE(rnds); r++) {
            uint64_t b = backoff_delay_ns(a, mn, mx, rnds[r], BACKOFF_DELAY_AT_LEAST_MIN);
            assert_true(b >= mn);
            assert_true(b <= mx);
            assert_true(b <= cap);
            assert_true(b >= cap / 2);
            b = backoff_delay_ns(a, mn, mx, rnds[r], 0);
            assert_true(b <= cap);
            assert_true(b >= cap / 2);
        }
    }
}

static void test_backoff__values(void **state)
{
    (void)state;
    const uint64_t mn = 500000000ull, mx = 300 * SEC;
    /* the push engine's: the first retry waits min; jitter spreads later ones over [cap/2, cap] */
    assert_int_equal(backoff_delay_ns(1, mn, mx, 0, BACKOFF_DELAY_AT_LEAST_MIN), mn);
    assert_int_equal(backoff_delay_ns(4, SEC, mx, 0, BACKOFF_DELAY_AT_LEAST_MIN), 4 * SEC);
    assert_int_equal(backoff_delay_ns(4, SEC, mx, 4 * SEC, BACKOFF_DELAY_AT_LEAST_MIN), 8 * SEC);
    assert_int_equal(backoff_delay_ns(100, SEC, 10 * SEC, 0, BACKOFF_DELAY_AT_LEAST_MIN), 5 * SEC);
    /* max below min is treated as min */
    assert_int_equal(backoff_delay_ns(3, 2 * SEC, SEC, 99, BACKOFF_DELAY_AT_LEAST_MIN), 2 * SEC);
    /* the Kubernetes client's: the first wait too is in [min/2, min] */
    assert_int_equal(backoff_delay_ns(1, SEC, 60 * SEC, 0, 0), SEC / 2);
    assert_int_equal(backoff_delay_ns(1, SEC, 60 * SEC, SEC / 2, 0), SEC);
    assert_int_equal(backoff_delay_ns(0, SEC, 60 * SEC, 7, 0), SEC / 2 + 7);
    assert_int_equal(backoff_delay_ns(3, SEC, 60 * SEC, 0, 0), 2 * SEC);
    assert_int_equal(backoff_delay_ns(64, SEC, 60 * SEC, 30 * SEC, 0), 60 * SEC);
    /* an odd delay: the whole of [d/2, d] is reachable */
    assert_int_equal(backoff_delay_ns(1, 5, 5, 3, 0), 5);
    assert_int_equal(backoff_delay_ns(1, 5, 5, 4, 0), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_backoff__bounds),
        cmocka_unit_test(test_backoff__values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
