/* SPDX-License-Identifier: MIT */
/* Tests for agent/base/rand.c: xorshift64, its seeds and the byte filler. */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include "base/rand.h"

static void test_rand__is_xorshift64(void **state)
{
    (void)state;
    struct rand_state r;
    rand_init(&r, 1);
    /* Marsaglia's xorshift64 (13, 7, 17) from 1, written out */
    uint64_t x = 1;
    for (int i = 0; i < 1000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        assert_true(rand_next(&r) == x);
    }
    assert_true(x != 0);
}

static void test_rand__same_seed_same_numbers(void **state)
{
    (void)state;
    struct rand_state a, b, z;
    rand_init(&a, 0x1234);
    rand_init(&b, 0x1234);
    for (int i = 0; i < 100; i++)
        assert_true(rand_next(&a) == rand_next(&b));
    /* 0 is a fixed point of xorshift: it is never the state */
    rand_init(&z, 0);
    assert_true(rand_next(&z) != 0);
}

static void test_rand__below(void **state)
{
    (void)state;
    struct rand_state r;
    rand_init(&r, rand_seed());
    bool seen[10] = {false};
    for (int i = 0; i < 10000; i++) {
        uint64_t v = rand_below(&r, 10);
        assert_true(v < 10);
        seen[v] = true;
    }
    for (int i = 0; i < 10; i++)
        assert_true(seen[i]);
    assert_true(rand_below(&r, 0) == 0);
    assert_true(rand_below(&r, 1) == 0);
}

static void test_rand__seeds_differ(void **state)
{
    (void)state;
    uint64_t a = rand_seed(), b = rand_seed();
    assert_true(a != 0);
    assert_true(b != 0);
    assert_true(a != b);
    uint8_t x[16] = {0}, y[16] = {0};
    rand_fill_os(x, sizeof(x));
    rand_fill_os(y, sizeof(y));
    assert_memory_not_equal(x, y, sizeof(x));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rand__is_xorshift64),
        cmocka_unit_test(test_rand__same_seed_same_numbers),
        cmocka_unit_test(test_rand__below),
        cmocka_unit_test(test_rand__seeds_differ),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
