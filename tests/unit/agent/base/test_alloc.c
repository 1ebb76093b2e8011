/* SPDX-License-Identifier: MIT */
/* Tests for agent/base/alloc.c: accounting, budget and fault injection. */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include "base/alloc.h"

static void test_alloc__accounts_live_bytes(void **state)
{
    (void)state;
    size_t before = alloc_in_use();
    char *a = alloc_malloc(100);
    char *b = alloc_calloc(10, 30);
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(alloc_in_use(), before + 400);
    for (int i = 0; i < 300; i++)
        assert_int_equal(b[i], 0);
    a = alloc_realloc(a, 1000);
    assert_non_null(a);
    assert_int_equal(alloc_in_use(), before + 1300);
    a = alloc_realloc(a, 10);
    assert_non_null(a);
    assert_int_equal(alloc_in_use(), before + 310);
    alloc_free(a);
    alloc_free(b);
    alloc_free(NULL);
    assert_int_equal(alloc_in_use(), before);
}

static void test_alloc__budget_refuses_and_counts(void **state)
{
    (void)state;
    size_t before = alloc_in_use();
    uint64_t failures = alloc_failures();
    alloc_set_budget(before + 1000);
    char *a = alloc_malloc(900);
    assert_non_null(a);
    errno = 0;
    assert_null(alloc_malloc(200));
    assert_int_equal(errno, ENOMEM);
    /* a failed realloc keeps the old block */
    assert_null(alloc_realloc(a, 2000));
    a[899] = 'x';
    assert_int_equal(alloc_failures(), failures + 2);
    alloc_free(a);
    char *b = alloc_malloc(200);
    assert_non_null(b);
    alloc_free(b);
    alloc_set_budget(0);
    assert_int_equal(alloc_in_use(), before);
}

static void test_alloc__calloc_overflow_fails(void **state)
{
    (void)state;
    assert_null(alloc_calloc(SIZE_MAX / 2, 4));
    assert_null(alloc_malloc(SIZE_MAX - 4));
}

static void test_alloc__fail_nth_injects_once(void **state)
{
    (void)state;
    (void)alloc_fail_nth(3);
    void *a = alloc_malloc(1);
    void *b = alloc_malloc(1);
    void *c = alloc_malloc(1);
    void *d = alloc_malloc(1);
    assert_non_null(a);
    assert_non_null(b);
    assert_null(c);
    assert_non_null(d);
    assert_int_equal(alloc_fail_nth(0), 4);
    alloc_free(a);
    alloc_free(b);
    alloc_free(d);
}

static void test_alloc__strdup_copies(void **state)
{
    (void)state;
    char *s = alloc_strdup("pyprofd");
    char *t = alloc_strndup("profile", 4);
    assert_string_equal(s, "pyprofd");
    assert_string_equal(t, "prof");
    alloc_free(s);
    alloc_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alloc__accounts_live_bytes),
        cmocka_unit_test(test_alloc__budget_refuses_and_counts),
        cmocka_unit_test(test_alloc__calloc_overflow_fails),
        cmocka_unit_test(test_alloc__fail_nth_injects_once),
        cmocka_unit_test(test_alloc__strdup_copies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
