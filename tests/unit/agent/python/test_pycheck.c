/* SPDX-License-Identifier: MIT */
/*
 * Tests for agent/python/pycheck.c: a size and a field are checked with the
 * message that names the entry, the first failure is the one kept, and a
 * failed validation returns 0 for everything after it.
 */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include "python/pycheck.h"

static void test_pycheck__sizes(void **state)
{
    (void)state;
    char why[128] = "";
    struct pycheck c = {.why = why, .why_len = sizeof(why)};
    assert_int_equal(pycheck_size(&c, "debug offsets", "thread_state.size", 888, 4096), 888);
    assert_false(c.failed);
    assert_int_equal(pycheck_size(&c, "debug offsets", "thread_state.size", 0, 4096), 0);
    assert_true(c.failed);
    assert_string_equal(why, "debug offsets: 'thread_state.size' = 0 is not a size larger than 0");
    /* the first failure stays, and nothing passes after it */
    assert_int_equal(pycheck_size(&c, "debug offsets", "code_object.size", 9000, 1024), 0);
    assert_string_equal(why, "debug offsets: 'thread_state.size' = 0 is not a size larger than 0");
    assert_int_equal(pycheck_field(&c, "debug offsets", "code_object.filename", 8, 0, 16, 8), 0);

    c = (struct pycheck){.why = why, .why_len = sizeof(why)};
    assert_int_equal(pycheck_size(&c, "asyncio offsets", "task_object.size", 9000, 1024), 0);
    assert_string_equal(
        why, "asyncio offsets: 'task_object.size' = 9000 exceeds pyprofd's limit of 1024");
}

static void test_pycheck__fields(void **state)
{
    (void)state;
    char why[128] = "";
    struct pycheck c = {.why = why, .why_len = sizeof(why)};
    /* inside, aligned to the width (a 16-byte field to 8) */
    assert_int_equal(pycheck_field(&c, "t", "s.a", 8, 0, 16, 8), 8);
    assert_int_equal(pycheck_field(&c, "t", "s.b", 8, 0, 24, 16), 8);
    assert_int_equal(pycheck_field(&c, "t", "s.c", 3, 0, 4, 1), 3);
    /* nested: at its outer section's @base, bounded by the outer size */
    assert_int_equal(pycheck_field(&c, "t", "s.d", 8, 32, 48, 8), 40);
    assert_false(c.failed);

    assert_int_equal(pycheck_field(&c, "t", "s.e", 12, 0, 16, 8), 0);
    assert_string_equal(why, "t: 's.e' = 12 + field width is outside its section of size 16");
    c = (struct pycheck){.why = why, .why_len = sizeof(why)};
    assert_int_equal(pycheck_field(&c, "t", "s.f", 12, 32, 48, 8), 0);
    assert_string_equal(why, "t: 's.f' = 12 + field width is outside its section of size 16");
    c = (struct pycheck){.why = why, .why_len = sizeof(why)};
    assert_int_equal(pycheck_field(&c, "t", "s.g", 4, 0, 16, 8), 0);
    assert_string_equal(why, "t: 's.g' = 4 is not aligned to 8");
    c = (struct pycheck){.why = why, .why_len = sizeof(why)};
    assert_int_equal(pycheck_field(&c, "t", "s.h", (uint64_t)UINT32_MAX + 8, 0, UINT64_MAX / 2, 8),
                     0);
    assert_true(c.failed);
    /* a fail recorded without a message buffer */
    c = (struct pycheck){0};
    pycheck_fail(&c, "t", "s.i", 1, "is", 2);
    assert_true(c.failed);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pycheck__sizes),
        cmocka_unit_test(test_pycheck__fields),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
