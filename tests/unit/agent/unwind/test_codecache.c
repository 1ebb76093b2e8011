/* SPDX-License-Identifier: MIT */
/* Tests for agent/unwind/codecache.c: lookup, copies, clearing when full. */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include "unwind/codecache.h"

static struct code_info info(uint64_t raddr, const char *name)
{
    static const uint8_t table[] = {0x80, 0x00, 0xd8, 0x04};
    return (struct code_info){.raddr = raddr,
                              .qualname = name,
                              .filename = "/app/x.py",
                              .linetable = table,
                              .linetable_len = sizeof(table),
                              .firstlineno = 7};
}

static void test_codecache__stores_copies(void **state)
{
    (void)state;
    struct codecache *c;
    assert_int_equal(codecache_new(8, 4096, &c), 0);
    char name[16] = "outer";
    struct code_info in = info(0x1000, name);
    struct code_info *e = codecache_insert(c, &in);
    assert_non_null(e);
    name[0] = 'X'; /* the cache holds its own copy */
    assert_ptr_equal(codecache_find(c, 0x1000), e);
    assert_string_equal(e->qualname, "outer");
    assert_string_equal(e->filename, "/app/x.py");
    assert_int_equal(e->linetable_len, 4);
    assert_int_equal(e->linetable[2], 0xd8);
    assert_int_equal(e->firstlineno, 7);
    assert_null(codecache_find(c, 0x2000));
    assert_int_equal(codecache_count(c), 1);
    /* re-inserting the same address replaces it */
    in = info(0x1000, "renamed");
    e = codecache_insert(c, &in);
    assert_string_equal(codecache_find(c, 0x1000)->qualname, "renamed");
    assert_int_equal(codecache_count(c), 1);
    codecache_clear(c);
    assert_null(codecache_find(c, 0x1000));
    codecache_free(c);
    codecache_free(NULL);
}

static void test_codecache__clears_when_full(void **state)
{
    (void)state;
    struct codecache *c;
    assert_int_equal(codecache_new(16, 4096, &c), 0);
    /* 16 slots hold at most 12 entries; the 13th clears the table */
    for (uint64_t i = 1; i <= 13; i++) {
        struct code_info in = info(i * 64, "f");
        assert_non_null(codecache_insert(c, &in));
    }
    assert_int_equal(codecache_overflows(c), 1);
    assert_int_equal(codecache_count(c), 1);
    assert_non_null(codecache_find(c, 13 * 64));
    assert_null(codecache_find(c, 64));
    /* an item too large for the arena is refused, not truncated */
    static char huge[5000];
    memset(huge, 'q', sizeof(huge) - 1);
    struct code_info in = info(0x9999, huge);
    assert_null(codecache_insert(c, &in));
    /* the arena filling up also clears */
    static char mid[1500];
    memset(mid, 'm', sizeof(mid) - 1);
    for (uint64_t i = 20; i < 24; i++) {
        in = info(i * 64, mid);
        assert_non_null(codecache_insert(c, &in));
    }
    assert_int_equal(codecache_overflows(c), 2);
    codecache_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_codecache__stores_copies),
        cmocka_unit_test(test_codecache__clears_when_full),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
