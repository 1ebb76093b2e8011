/* SPDX-License-Identifier: MIT */
/*
 * Tests for agent/python/pyasync.c: the real asyncio debug tables of Debian's
 * CPython 3.14 and 3.15 (tests/fixtures/debug_offsets/asyncio-3.1X.bin, with
 * the main tables 3.1X.bin) load into the layouts the reference documents;
 * corrupting any entry async walking uses, in either table, in turn, gets the
 * tables rejected with a message naming that entry; 3.13 has no schema.
 */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include "base/alloc.h"
#include "fixture.h"
#include "python/pyasync.h"

struct tables {
    uint8_t *debug, *aio;
    size_t debug_len, aio_len;
    struct py_version v;
    struct py_layout base;
};

static void load(unsigned minor, struct tables *t)
{
    char rel[64];
    snprintf(rel, sizeof(rel), "debug_offsets/3.%u.bin", minor);
    t->debug = fixture_load(rel, &t->debug_len);
    snprintf(rel, sizeof(rel), "debug_offsets/asyncio-3.%u.bin", minor);
    t->aio = fixture_load(rel, &t->aio_len);
    assert_non_null(t->debug);
    assert_non_null(t->aio);
    assert_int_equal(t->aio_len, PYASYNC_TABLE_SIZE);
    assert_int_equal(pyversion_decode(t->debug, t->debug_len, &t->v), 0);
    char why[256];
    assert_int_equal(pyabi_layout_load(&t->v, t->debug, t->debug_len, &t->base, why, sizeof(why)),
                     0);
}

static void unload(struct tables *t)
{
    alloc_free(t->debug);
    alloc_free(t->aio);
}

static int load_async(const struct tables *t, const uint8_t *debug, const uint8_t *aio,
                      struct pyasync_layout *l, char *why, size_t why_len)
{
    return pyasync_layout_load(&t->v, &t->base, debug, t->debug_len, aio, t->aio_len, l, why,
                               why_len);
}

static void test_pyasync__loads_real_tables(void **state)
{
    (void)state;
    for (unsigned minor = 14; minor <= 15; minor++) {
        struct tables t;
        load(minor, &t);
        struct pyasync_layout l;
        char why[256];
        int err = load_async(&t, t.debug, t.aio, &l, why, sizeof(why));
        if (err)
            fail_msg("3.%u: %s", minor, why);
        /* Debian's values, reference §9.2 and §1.3 */
        assert_int_equal(l.task_size, 168);
        assert_int_equal(l.task_name, 136);
        assert_int_equal(l.task_awaited_by, 96);
        assert_int_equal(l.task_is_task, 108);
        assert_int_equal(l.task_awaited_by_is_set, 109);
        assert_int_equal(l.task_coro, 128);
        assert_int_equal(l.task_node, 152);
        assert_int_equal(l.gen_iframe, 72);
        assert_int_equal(l.gen_frame_state, 67);
        assert_int_equal(l.fr_stackpointer, 64);
        assert_int_equal(l.ob_type, 8);
        assert_int_equal(l.tp_flags, 168);
        assert_int_equal(l.set_table, 40);
        assert_int_equal(l.set_mask, 32);
        assert_int_equal(l.llist_next, 0);
        if (minor == 14) {
            assert_int_equal(l.ts_running_loop, 864);
            assert_int_equal(l.ts_running_task, 872);
            assert_int_equal(l.ts_tasks_head, 880);
            assert_int_equal(l.in_tasks_head, 10880);
            assert_int_equal(l.await_below_sp, 8);
            assert_int_equal(pyasync_frame_state(&l, -1), PYASYNC_FS_AWAITING);
            assert_int_equal(pyasync_frame_state(&l, 0), PYASYNC_FS_EXECUTING);
            assert_int_equal(pyasync_frame_state(&l, -3), PYASYNC_FS_CREATED);
            assert_int_equal(pyasync_frame_state(&l, 4), PYASYNC_FS_GONE);
        } else {
            assert_int_equal(l.ts_running_loop, 1024);
            assert_int_equal(l.ts_running_task, 1032);
            assert_int_equal(l.ts_tasks_head, 1048);
            assert_int_equal(l.in_tasks_head, 10856);
            assert_int_equal(l.await_below_sp, 16);
            assert_int_equal(pyasync_frame_state(&l, 2), PYASYNC_FS_AWAITING);
            assert_int_equal(pyasync_frame_state(&l, 3), PYASYNC_FS_AWAITING);
            assert_int_equal(pyasync_frame_state(&l, 4), PYASYNC_FS_EXECUTING);
            assert_int_equal(pyasync_frame_state(&l, 0), PYASYNC_FS_CREATED);
            assert_int_equal(pyasync_frame_state(&l, 5), PYASYNC_FS_GONE);
        }
        assert_int_equal(pyasync_frame_state(&l, 99), PYASYNC_FS_GONE);
        unload(&t);
    }
}

static void expect_rejected(const struct tables *t, const uint8_t *debug, const uint8_t *aio,
                            const char *entry, const char *how)
{
    struct pyasync_layout l;
    char why[256] = "";
    int err = load_async(t, debug, aio, &l, why, sizeof(why));
    if (err != -EPROTO)
        fail_msg("3.%u: '%s' %s was accepted (%d)", t->v.minor, entry, how, err);
    char quoted[96];
    snprintf(quoted, sizeof(quoted), "'%s'", entry);
    if (!strstr(why, quoted))
        fail_msg("3.%u: '%s' %s: message does not name it: %s", t->v.minor, entry, how, why);
}

static void test_pyasync__every_entry_is_validated(void **state)
{
    (void)state;
    for (unsigned minor = 14; minor <= 15; minor++) {
        struct tables t;
        load(minor, &t);
        const struct pyasync_schema *s = pyasync_schema_for(minor);
        uint8_t *debug = alloc_malloc(t.debug_len), *aio = alloc_malloc(t.aio_len);
        assert_non_null(debug);
        assert_non_null(aio);
        for (int id = 0; id < PYAIO_COUNT; id++) {
            const char *name = pyasync_entry_name((enum pyaio_id)id);
            bool in_aio = pyasync_entry_table((enum pyaio_id)id) == PYAIO_TABLE_ASYNCIO;
            const uint8_t *orig = in_aio ? t.aio : t.debug;
            uint8_t *copy = in_aio ? aio : debug;
            size_t len = in_aio ? t.aio_len : t.debug_len;
            uint64_t value;
            memcpy(&value, orig + s->pos[id], 8);
            const uint64_t bad[] = {0x7fffffff, value | (1ull << 40)};
            for (size_t b = 0; b < PYPROFD_ARRAY_SIZE(bad); b++) {
                memcpy(debug, t.debug, t.debug_len);
                memcpy(aio, t.aio, t.aio_len);
                memcpy(copy + s->pos[id], &bad[b], 8);
                PYPROFD_ASSERT((size_t)s->pos[id] + 8 <= len);
                expect_rejected(&t, debug, aio, name, b ? "with bit 40 set" : "= 0x7fffffff");
            }
        }
        alloc_free(debug);
        alloc_free(aio);
        unload(&t);
    }
}

static void test_pyasync__misaligned_zero_and_short_rejected(void **state)
{
    (void)state;
    struct tables t;
    load(15, &t);
    const struct pyasync_schema *s = pyasync_schema_for(15);
    uint64_t v;
    /* a misaligned pointer field */
    memcpy(&v, t.aio + s->pos[PYAIO_TASK_CORO], 8);
    uint64_t odd = v + 4;
    memcpy(t.aio + s->pos[PYAIO_TASK_CORO], &odd, 8);
    expect_rejected(&t, t.debug, t.aio, "asyncio_task_object.task_coro", "misaligned");
    memcpy(t.aio + s->pos[PYAIO_TASK_CORO], &v, 8);
    /* a zero size */
    memcpy(&v, t.aio + s->pos[PYAIO_TASK_SIZE], 8);
    uint64_t zero = 0;
    memcpy(t.aio + s->pos[PYAIO_TASK_SIZE], &zero, 8);
    expect_rejected(&t, t.debug, t.aio, "asyncio_task_object.size", "= 0");
    memcpy(t.aio + s->pos[PYAIO_TASK_SIZE], &v, 8);
    /* a generator too small for the frame it embeds */
    memcpy(&v, t.debug + s->pos[PYAIO_GEN_SIZE], 8);
    uint64_t small = 100;
    memcpy(t.debug + s->pos[PYAIO_GEN_SIZE], &small, 8);
    expect_rejected(&t, t.debug, t.aio, "gen_object.gi_iframe", "outside a small generator");
    memcpy(t.debug + s->pos[PYAIO_GEN_SIZE], &v, 8);
    /* a thread state smaller than the public one */
    memcpy(&v, t.aio + s->pos[PYAIO_TSTATE_SIZE], 8);
    small = 512;
    memcpy(t.aio + s->pos[PYAIO_TSTATE_SIZE], &small, 8);
    expect_rejected(&t, t.debug, t.aio, "asyncio_thread_state.size", "below thread_state.size");
    memcpy(t.aio + s->pos[PYAIO_TSTATE_SIZE], &v, 8);

    struct pyasync_layout l;
    char why[256];
    assert_int_equal(load_async(&t, t.debug, t.aio, &l, why, sizeof(why)), 0);
    assert_int_equal(pyasync_layout_load(&t.v, &t.base, t.debug, t.debug_len, t.aio,
                                         PYASYNC_TABLE_SIZE - 1, &l, why, sizeof(why)),
                     -EPROTO);
    unload(&t);
}

static void test_pyasync__no_table_before_3_14(void **state)
{
    (void)state;
    assert_null(pyasync_schema_for(13));
    assert_null(pyasync_schema_for(16));
    assert_non_null(pyasync_schema_for(14));
    struct tables t;
    load(14, &t);
    struct py_version v13 = t.v;
    v13.minor = 13;
    struct pyasync_layout l;
    char why[256] = "";
    assert_int_equal(pyasync_layout_load(&v13, &t.base, t.debug, t.debug_len, t.aio, t.aio_len, &l,
                                         why, sizeof(why)),
                     -ENOTSUP);
    assert_non_null(strstr(why, "has no asyncio debug table"));
    unload(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pyasync__loads_real_tables),
        cmocka_unit_test(test_pyasync__every_entry_is_validated),
        cmocka_unit_test(test_pyasync__misaligned_zero_and_short_rejected),
        cmocka_unit_test(test_pyasync__no_table_before_3_14),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
