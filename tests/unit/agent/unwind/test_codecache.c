/* SPDX-License-Identifier: MIT */
/* Tests for agent/unwind/codecache.c: lookup, copies, clearing when full,
 * ids, remembered positions. */
#include "base/compat.h"

#include "base/alloc.h"
#include "cmocka_wrap.h"

#include "python/pyabi.h"
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
    assert_int_equal(codecache_new(8, 8, 4096, &c), 0);
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
    assert_int_equal(codecache_new(16, 16, 4096, &c), 0);
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

static void test_codecache__ids_are_never_reused(void **state)
{
    (void)state;
    struct codecache *a, *b;
    assert_int_equal(codecache_new(16, 16, 4096, &a), 0);
    assert_int_equal(codecache_new(16, 16, 4096, &b), 0);
    struct code_info in = info(0x1000, "f");
    uint64_t first = codecache_insert(a, &in)->id;
    assert_true(first >= CODECACHE_FIRST_ID);
    /* the same address in another cache (another process): another id */
    uint64_t other = codecache_insert(b, &in)->id;
    assert_int_not_equal(other, first);
    /* the same address again (a freed and reused code object): another id */
    in = info(0x1000, "g");
    uint64_t again = codecache_insert(a, &in)->id;
    assert_int_not_equal(again, first);
    assert_int_not_equal(again, other);
    assert_int_equal(codecache_find(a, 0x1000)->id, again);
    /* after a clear, too */
    codecache_clear(a);
    in = info(0x1000, "f");
    uint64_t after = codecache_insert(a, &in)->id;
    assert_int_not_equal(after, first);
    assert_int_not_equal(after, again);
    codecache_free(a);
    codecache_free(b);
}

static void test_codecache__positions_are_remembered_per_entry(void **state)
{
    (void)state;
    struct codecache *c;
    assert_int_equal(codecache_new(16, 16, 4096, &c), 0);
    /* one entry per code unit, one line apart, no columns (short form
     * 0x80 | (13 << 3) | len-1 = 0xe8 + lines) */
    static const uint8_t lines_a[] = {0xe8, 0x02, 0xe8, 0x02, 0xe8, 0x02, 0xe8,
                                      0x02, 0xe8, 0x02, 0xe8, 0x02, 0xe8, 0x02};
    static const uint8_t lines_b[] = {0xe8, 0x14, 0xe8, 0x02, 0xe8, 0x02, 0xe8,
                                      0x02, 0xe8, 0x02, 0xe8, 0x02, 0xe8, 0x02};
    struct code_info in = info(0x1000, "f");
    in.linetable = lines_a;
    in.linetable_len = sizeof(lines_a);
    struct code_info *e = codecache_insert(c, &in);
    int32_t expect[7];
    for (uint32_t u = 0; u < 7; u++) {
        struct linetable_pos p;
        assert_int_equal(linetable_lookup(lines_a, sizeof(lines_a), 7, u, &p), 0);
        expect[u] = p.line;
    }
    /* more units than remembered, in a loop: every answer is the table's */
    for (int round = 0; round < 3; round++) {
        for (uint32_t u = 0; u < 7; u++) {
            struct linetable_pos p;
            assert_int_equal(codecache_position(e, u, &p), 0);
            assert_int_equal(p.line, expect[u]);
            assert_int_equal(codecache_position(e, u, &p), 0); /* remembered */
            assert_int_equal(p.line, expect[u]);
        }
    }
    assert_int_not_equal(expect[0], expect[1]);
    struct linetable_pos p, q;
    assert_int_equal(codecache_position(e, 0, &p), 0); /* unit 0 remembered... */
    /* ... but a new code object at the address: nothing remembered survives */
    in.linetable = lines_b;
    e = codecache_insert(c, &in);
    assert_int_equal(linetable_lookup(lines_b, sizeof(lines_b), 7, 0, &q), 0);
    assert_int_not_equal(q.line, expect[0]);
    assert_int_equal(codecache_position(e, 0, &p), 0);
    assert_int_equal(p.line, q.line);
    /* past the table */
    assert_int_equal(codecache_position(e, 100, &p), -ENOENT);
    codecache_free(c);
}

/*
 * Issue 37: a line table read empty is a table, not a missing one. CPython
 * 3.9 leaves co_lnotab empty when every instruction is on co_firstlineno (a
 * lambda, a one-line function): PyCode_Addr2Line() says co_firstlineno, and
 * so must the cache (it said nothing: the frame came out at line 0). 3.10+
 * say no line for an empty table (-1), as the cache does; a table that could
 * not be read (NULL) has no line in any version.
 */
static void test_codecache__empty_table_is_a_table(void **state)
{
    (void)state;
    struct codecache *c;
    assert_int_equal(codecache_new(16, 16, 4096, &c), 0);
    static const uint8_t none[1] = {0};
    const unsigned kinds[] = {PYABI_LINES_LNOTAB, PYABI_LINES_3_10, PYABI_LINES_LOCATIONS};
    for (size_t k = 0; k < PYPROFD_ARRAY_SIZE(kinds); k++) {
        struct code_info in = info(0x1000 + 64 * k, "<lambda>");
        in.lines = kinds[k];
        in.firstlineno = 42;
        in.linetable = none; /* read, 0 bytes long */
        in.linetable_len = 0;
        struct code_info *e = codecache_insert(c, &in);
        assert_non_null(e);
        assert_non_null(e->linetable);
        assert_int_equal(e->linetable_len, 0);
        struct linetable_pos p = {0};
        for (uint32_t at = 0; at < 8; at += 2) {
            if (kinds[k] == PYABI_LINES_LNOTAB) {
                assert_int_equal(codecache_position(e, at, &p), 0);
                assert_int_equal(p.line, 42);
            } else {
                assert_int_equal(codecache_position(e, at, &p), -ENOENT);
            }
        }
        in.raddr += 0x10000; /* not read at all */
        in.linetable = NULL;
        e = codecache_insert(c, &in);
        assert_non_null(e);
        assert_null(e->linetable);
        assert_int_equal(codecache_position(e, 0, &p), -ENOENT);
    }
    codecache_free(c);
}

/* A cache starts small and grows with its entries (the table doubles, the
 * arena takes new blocks) up to its caps, keeping every entry and string;
 * only at the caps is it cleared. */
static void test_codecache__grows_to_its_caps(void **state)
{
    (void)state;
    struct codecache *c;
    size_t before = alloc_in_use();
    assert_int_equal(codecache_new(16, 1024, 1u << 20, &c), 0);
    size_t fresh = codecache_memory(c);
    assert_int_equal(alloc_in_use() - before, fresh);
    assert_true(fresh < 8192);
    const char *names[700];
    char name[32];
    for (uint64_t i = 1; i <= 700; i++) {
        snprintf(name, sizeof(name), "function_number_%" PRIu64, i);
        struct code_info in = info(i * 64, name);
        struct code_info *e = codecache_insert(c, &in);
        assert_non_null(e);
        names[i - 1] = e->qualname;
    }
    assert_int_equal(codecache_overflows(c), 0);
    assert_int_equal(codecache_count(c), 700);
    assert_true(codecache_memory(c) > fresh);
    assert_int_equal(alloc_in_use() - before, codecache_memory(c));
    for (uint64_t i = 1; i <= 700; i++) {
        struct code_info *e = codecache_find(c, i * 64);
        assert_non_null(e);
        snprintf(name, sizeof(name), "function_number_%" PRIu64, i);
        assert_string_equal(e->qualname, name);
        assert_ptr_equal(e->qualname, names[i - 1]); /* strings never move */
        assert_int_equal(e->linetable[2], 0xd8);
    }
    /* 1024 slots hold 768: the 769th entry clears, and memory stays */
    for (uint64_t i = 701; i <= 769; i++) {
        struct code_info in = info(i * 64, "f");
        assert_non_null(codecache_insert(c, &in));
    }
    assert_int_equal(codecache_overflows(c), 1);
    assert_int_equal(codecache_count(c), 1);
    size_t full = codecache_memory(c);
    for (uint64_t i = 1; i <= 700; i++) {
        struct code_info in = info(i * 64, "g");
        assert_non_null(codecache_insert(c, &in));
    }
    assert_int_equal(codecache_memory(c), full); /* blocks reused */
    codecache_free(c);
    assert_int_equal(alloc_in_use(), before);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_codecache__stores_copies),
        cmocka_unit_test(test_codecache__clears_when_full),
        cmocka_unit_test(test_codecache__ids_are_never_reused),
        cmocka_unit_test(test_codecache__positions_are_remembered_per_entry),
        cmocka_unit_test(test_codecache__grows_to_its_caps),
        cmocka_unit_test(test_codecache__empty_table_is_a_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
