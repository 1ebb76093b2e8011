/* SPDX-License-Identifier: MIT */
/*
 * Tests for agent/python/pyabi.c: the real _Py_DebugOffsets tables of Debian's
 * CPython 3.13, 3.14 and 3.15 (tests/fixtures/debug_offsets/) load into the
 * layouts the reference documents, and corrupting any entry pyprofd uses, in
 * turn, gets the table rejected with a message naming that entry.
 */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include "base/alloc.h"
#include "fixture.h"
#include "python/pyabi.h"

struct real_table {
    const char *file;
    unsigned minor;
    uint64_t hex;
};

static const struct real_table tables[] = {
    {"debug_offsets/3.13.bin", 13, 0x030d0ff0},
    {"debug_offsets/3.14.bin", 14, 0x030e08f0},
    {"debug_offsets/3.15.bin", 15, 0x030f00f0},
};

static uint8_t *load_table(const struct real_table *t, size_t *len, struct py_version *v)
{
    uint8_t *buf = fixture_load(t->file, len);
    if (!buf)
        fail_msg("cannot load fixture %s", t->file);
    assert_int_equal(pyversion_decode(buf, *len, v), 0);
    assert_true(v->hex == t->hex);
    return buf;
}

static void test_pyabi__loads_real_tables(void **state)
{
    (void)state;
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(tables); i++) {
        size_t len;
        struct py_version v;
        uint8_t *buf = load_table(&tables[i], &len, &v);
        assert_true(len == pyabi_schema_for(tables[i].minor)->table_size);
        struct py_layout l;
        char why[256];
        int err = pyabi_layout_load(&v, buf, len, &l, why, sizeof(why));
        if (err)
            fail_msg("%s: %s", tables[i].file, why);
        /* Values from the reference, Debian builds. */
        assert_int_equal(l.ts_current_frame, 72);
        assert_int_equal(l.fr_previous, 8);
        assert_int_equal(l.fr_executable, 0);
        assert_int_equal(l.fr_instr_ptr, 56);
        assert_int_equal(l.co_qualname, 128);
        assert_int_equal(l.co_filename, 112);
        assert_int_equal(l.co_linetable, 136);
        assert_int_equal(l.co_firstlineno, 68);
        assert_int_equal(l.str_ascii_data, 40);
        assert_int_equal(l.str_compact_data, 56);
        assert_int_equal(l.bytes_ob_sval, 32);
        switch (tables[i].minor) {
        case 13:
            assert_int_equal(l.ts_size, 312);
            assert_int_equal(l.fr_size, 80);
            assert_int_equal(l.fr_owner, 70);
            assert_int_equal(l.co_adaptive, 200);
            assert_int_equal(l.holds_gil_kind, PYABI_GIL_STATUS_BIT);
            assert_int_equal(l.holds_gil_mask, 1u << 5);
            assert_int_equal(l.in_threads_main, 7352);
            assert_int_equal(l.ts_current_exception, 112);
            assert_int_equal(l.ts_exc_value, 256);
            assert_true(l.tag_mask == 0);
            assert_false(l.has_base_frame || l.has_code_generation || l.has_gc_frame);
            break;
        case 14:
            assert_int_equal(l.ts_size, 832);
            assert_int_equal(l.fr_owner, 74);
            assert_int_equal(l.holds_gil_kind, PYABI_GIL_INT);
            assert_int_equal(l.ts_holds_gil, 36);
            assert_int_equal(l.in_code_generation, 7992);
            assert_true(l.has_code_generation && !l.has_base_frame);
            assert_true(l.tag_mask == 3);
            break;
        case 15:
            assert_int_equal(l.ts_size, 888);
            assert_int_equal(l.fr_size, 88);
            assert_int_equal(l.ts_base_frame, 80);
            assert_int_equal(l.ts_holds_gil, 36);
            assert_int_equal(l.ts_gil_requested, 40);
            assert_int_equal(l.ts_current_exception, 136);
            assert_int_equal(l.ts_exc_info, 144);
            assert_int_equal(l.ts_exc_value, 288);
            assert_int_equal(l.in_gc_frame, 7400 + 120);
            assert_int_equal(l.in_gc_collecting, 7400 + 112);
            assert_true(l.has_base_frame && l.has_gc_frame && l.has_gil_requested);
            break;
        default:
            fail();
        }
        alloc_free(buf);
    }
}

/* Entries only a free-threaded build uses (they hold 0 in GIL builds' tables). */
static bool ft_only(int id)
{
    return id == PYOFF_INTERP_TLBC_GENERATION || id == PYOFF_FRAME_TLBC_INDEX ||
           id == PYOFF_CODE_TLBC;
}

static void expect_rejected(const struct py_version *v, const uint8_t *table, size_t len,
                            const char *entry, const char *how)
{
    struct py_layout l;
    char why[256] = "";
    int err = pyabi_layout_load(v, table, len, &l, why, sizeof(why));
    if (err != -EPROTO)
        fail_msg("3.%u: '%s' %s was accepted (%d)", v->minor, entry, how, err);
    char quoted[96];
    snprintf(quoted, sizeof(quoted), "'%s'", entry);
    if (!strstr(why, quoted))
        fail_msg("3.%u: '%s' %s: message does not name it: %s", v->minor, entry, how, why);
}

static void test_pyabi__every_used_entry_is_validated(void **state)
{
    (void)state;
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(tables); i++) {
        size_t len;
        struct py_version v;
        uint8_t *orig = load_table(&tables[i], &len, &v);
        uint8_t *t = alloc_malloc(len);
        assert_non_null(t);
        const struct pyabi_schema *s = pyabi_schema_for(tables[i].minor);
        unsigned tested = 0;
        for (int id = 0; id < PYOFF_COUNT; id++) {
            if (!s->pos[id] || (!v.free_threaded && ft_only(id)))
                continue;
            const char *name = pyabi_entry_name((enum pyoff_id)id);
            uint64_t value;
            memcpy(&value, orig + s->pos[id], 8);

            /* far outside any section */
            memcpy(t, orig, len);
            uint64_t bad = 0x7fffffff;
            memcpy(t + s->pos[id], &bad, 8);
            expect_rejected(&v, t, len, name, "= 0x7fffffff");

            /* above 32 bits */
            memcpy(t, orig, len);
            bad = value | (1ull << 40);
            memcpy(t + s->pos[id], &bad, 8);
            expect_rejected(&v, t, len, name, "with bit 40 set");
            tested++;
        }
        /* every entry of this version's schema was exercised */
        unsigned present = 0;
        for (int id = 0; id < PYOFF_COUNT; id++)
            present += s->pos[id] != 0 && (v.free_threaded || !ft_only(id));
        assert_int_equal(tested, present);
        assert_true(tested >= 40);
        alloc_free(t);
        alloc_free(orig);
    }
}

static void test_pyabi__misaligned_and_zero_sizes_rejected(void **state)
{
    (void)state;
    size_t len;
    struct py_version v;
    uint8_t *t = load_table(&tables[2], &len, &v);
    const struct pyabi_schema *s = pyabi_schema_for(15);
    uint64_t orig;

    memcpy(&orig, t + s->pos[PYOFF_TSTATE_CURRENT_FRAME], 8);
    uint64_t odd = orig + 4;
    memcpy(t + s->pos[PYOFF_TSTATE_CURRENT_FRAME], &odd, 8);
    expect_rejected(&v, t, len, "thread_state.current_frame", "misaligned");
    memcpy(t + s->pos[PYOFF_TSTATE_CURRENT_FRAME], &orig, 8);

    memcpy(&orig, t + s->pos[PYOFF_FRAME_SIZE], 8);
    uint64_t zero = 0;
    memcpy(t + s->pos[PYOFF_FRAME_SIZE], &zero, 8);
    expect_rejected(&v, t, len, "interpreter_frame.size", "= 0");
    memcpy(t + s->pos[PYOFF_FRAME_SIZE], &orig, 8);

    /* a gc struct that would run past the interpreter state */
    memcpy(&orig, t + s->pos[PYOFF_GC_SIZE], 8);
    uint64_t huge = 300000;
    memcpy(t + s->pos[PYOFF_GC_SIZE], &huge, 8);
    expect_rejected(&v, t, len, "gc.size", "too large");
    memcpy(t + s->pos[PYOFF_GC_SIZE], &orig, 8);

    /* and the untouched table still loads */
    struct py_layout l;
    char why[256];
    assert_int_equal(pyabi_layout_load(&v, t, len, &l, why, sizeof(why)), 0);
    assert_int_equal(pyabi_layout_load(&v, t, len - 1, &l, why, sizeof(why)), -EPROTO);
    alloc_free(t);
}

static void test_pyabi__unknown_refused(void **state)
{
    (void)state;
    uint8_t table[PYABI_MAX_TABLE] = {0};
    struct py_layout l;
    char why[256];
    struct py_version v = {.hex = 0x031000f0, .major = 3, .minor = 16, .level = 0xF};
    assert_int_equal(pyabi_layout_load(&v, table, sizeof(table), &l, why, sizeof(why)), -ENOTSUP);
    assert_string_equal(why, "CPython 3.16.0 is not supported yet (supported: 3.9 to 3.15)");
    assert_null(pyabi_schema_for(12));
    assert_string_equal(pyabi_entry_name(PYOFF_TSTATE_BASE_FRAME), "thread_state.base_frame");
}

/*
 * The generated layouts (agent/python/layouts_generated.c): 3.11 and 3.12
 * fill the structure the unwinder reads, with the offsets their headers give
 * (the values below are CPython 3.11.2's and 3.12.1's, as py-spy and Austin
 * publish them too); 3.9 and 3.10 keep frame objects (3.9.18's and
 * 3.10.13's offsets); a
 * version without a layout and a layout of another version are refused.
 */
static void test_pyabi__generated_layouts(void **state)
{
    (void)state;
    struct py_layout l;
    char why[256];
    struct py_version v11 = {.hex = 0x030b02f0, .major = 3, .minor = 11, .micro = 2, .level = 0xF};
    assert_int_equal(pyabi_layout_generated(&v11, pyabi_generated_for(11), &l, why, sizeof(why)),
                     0);
    assert_int_equal(l.source, PYABI_SOURCE_GENERATED);
    assert_non_null(strstr(l.source_detail, "CPython 3.11"));
    assert_true(l.has_cframe && l.ts_cframe == 56 && l.cf_current_frame == 8);
    assert_int_equal(l.fr_previous, 48);
    assert_int_equal(l.fr_executable, 32);
    assert_int_equal(l.fr_instr_ptr, 56);
    assert_true(l.has_is_entry && l.fr_is_entry == 68);
    assert_int_equal(l.holds_gil_kind, PYABI_GIL_RUNTIME_HOLDER);
    assert_false(l.has_threads_main);
    assert_int_equal(l.ob_type, 8);

    struct py_version v12 = {.hex = 0x030c01f0, .major = 3, .minor = 12, .micro = 1, .level = 0xF};
    assert_int_equal(pyabi_layout_generated(&v12, pyabi_generated_for(12), &l, why, sizeof(why)),
                     0);
    assert_true(l.has_cframe && l.cf_current_frame == 0);
    assert_int_equal(l.fr_executable, 0); /* f_code first: a real offset of 0 */
    assert_int_equal(l.fr_previous, 8);
    assert_false(l.has_is_entry);
    assert_int_equal(l.holds_gil_kind, PYABI_GIL_INTERP_HOLDER);

    /* 3.9, 3.10: frame objects (f_back, f_code, f_lasti), co_name for a
     * name, no native_thread_id or data stack; f_lasti counts bytes on 3.9,
     * code units on 3.10, and each has its own line-table format */
    static const struct {
        unsigned minor, back, code, lasti, scale, lines;
    } fo[] = {{9, 24, 32, 104, 1, PYABI_LINES_LNOTAB}, {10, 24, 32, 96, 2, PYABI_LINES_3_10}};
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(fo); i++) {
        struct py_version v = {.hex = 0x030000f0 | (fo[i].minor << 16),
                               .major = 3,
                               .minor = fo[i].minor,
                               .level = 0xF};
        assert_non_null(pyabi_generated_for(fo[i].minor));
        assert_int_equal(pyabi_generated_for(fo[i].minor)->minor, fo[i].minor);
        assert_int_equal(
            pyabi_layout_generated(&v, pyabi_generated_for(fo[i].minor), &l, why, sizeof(why)), 0);
        assert_true(l.frame_objects && !l.has_cframe && !l.has_is_entry);
        assert_int_equal(l.ts_current_frame, 24); /* PyThreadState.frame */
        assert_int_equal(l.fr_previous, fo[i].back);
        assert_int_equal(l.fr_executable, fo[i].code);
        assert_int_equal(l.fr_instr_ptr, fo[i].lasti);
        /* f_executing (3.9) / f_state (3.10) comes after f_lasti's 8 bytes */
        assert_true(l.has_fr_state);
        assert_int_equal(l.fr_state, fo[i].lasti + 12);
        assert_int_equal(l.fr_state_live, fo[i].minor == 9 ? 1 : 0);
        assert_int_equal(l.fr_size, fo[i].lasti + 13);
        assert_int_equal(l.lasti_scale, fo[i].scale);
        assert_int_equal(l.lines, fo[i].lines);
        assert_int_equal(l.co_qualname, 112); /* co_name */
        assert_int_equal(l.co_linetable, 120);
        assert_false(l.has_native_thread_id || l.has_datastack);
        assert_int_equal(l.holds_gil_kind, PYABI_GIL_RUNTIME_HOLDER);
        assert_true(l.rt_gil_holder == 360 && l.rt_gil_locked == 368);
        assert_int_equal(l.ts_exc_value, 120); /* exc_state.exc_value, after exc_type */
    }
    /* no layout, or another version's */
    assert_null(pyabi_generated_for(8));
    assert_null(pyabi_generated_for(13));
    assert_int_equal(pyabi_layout_generated(&v12, pyabi_generated_for(11), &l, why, sizeof(why)),
                     -ENOTSUP);
    assert_int_equal(pyabi_layout_generated(&v12, NULL, &l, why, sizeof(why)), -ENOTSUP);

    /* a generated layout is validated as a live table is: a frame size of 0 */
    struct pyabi_generated bad = *pyabi_generated_for(11);
    bad.e[PYOFF_FRAME_SIZE].value = 0;
    assert_int_equal(pyabi_layout_generated(&v11, &bad, &l, why, sizeof(why)), -EPROTO);
    assert_non_null(strstr(why, "interpreter_frame.size"));
}

/*
 * A free-threaded 3.14/3.15 table, made from the GIL build's: the flag set
 * and the three per-thread bytecode entries filled in (synthetic values
 * inside their structs: no 3.14t/3.15t interpreter could be built here, see
 * docs/unwinder.md). 3.13t's real table is tests/fixtures/debug_offsets/3.13t.bin.
 */
static uint8_t *ft_table(unsigned minor, size_t *len, struct py_version *v, uint64_t tlbc[3])
{
    uint8_t *t = load_table(&tables[minor - 13], len, v);
    const struct pyabi_schema *s = pyabi_schema_for(minor);
    uint64_t one = 1, fr_size, co_size, code_gen;
    memcpy(t + 16, &one, 8); /* the free_threaded word */
    memcpy(&fr_size, t + s->pos[PYOFF_FRAME_SIZE], 8);
    memcpy(&co_size, t + s->pos[PYOFF_CODE_SIZE], 8);
    memcpy(&code_gen, t + s->pos[PYOFF_INTERP_CODE_GENERATION], 8);
    tlbc[0] = code_gen + 8; /* interpreter_state.tlbc_generation */
    tlbc[1] = fr_size - 8;  /* interpreter_frame.tlbc_index */
    tlbc[2] = co_size - 16; /* code_object.co_tlbc */
    memcpy(t + s->pos[PYOFF_INTERP_TLBC_GENERATION], &tlbc[0], 8);
    memcpy(t + s->pos[PYOFF_FRAME_TLBC_INDEX], &tlbc[1], 8);
    memcpy(t + s->pos[PYOFF_CODE_TLBC], &tlbc[2], 8);
    assert_int_equal(pyversion_decode(t, *len, v), 0);
    assert_true(v->free_threaded);
    return t;
}

static void test_pyabi__free_threaded_rules(void **state)
{
    (void)state;
    struct py_layout l;
    char why[256];
    size_t len;
    struct py_version v;

    /* 3.13t, the real table: no per-thread bytecode, 2-bit `interned` */
    uint8_t *t = fixture_load("debug_offsets/3.13t.bin", &len);
    assert_non_null(t);
    assert_int_equal(pyversion_decode(t, len, &v), 0);
    assert_true(v.free_threaded && v.minor == 13);
    if (pyabi_layout_load(&v, t, len, &l, why, sizeof(why)))
        fail_msg("3.13t: %s", why);
    assert_true(l.free_threaded && !l.has_tlbc);
    assert_int_equal(l.holds_gil_kind, PYABI_GIL_STATUS_BIT);
    assert_int_equal(l.ts_holds_gil, l.ts_status);
    assert_int_equal(l.holds_gil_mask, PYABI_STATUS_ACTIVE);
    assert_int_equal(l.str_state_shift, 0);
    /* the object header is 32 bytes: str and code fields move, thread state does not */
    assert_int_equal(l.str_ascii_data, 56);
    assert_int_equal(l.str_compact_data, 72);
    assert_int_equal(l.ts_current_frame, 72);
    assert_int_equal(l.ts_current_exception, 112);
    alloc_free(t);

    for (unsigned minor = 14; minor <= 15; minor++) {
        uint64_t tlbc[3];
        t = ft_table(minor, &len, &v, tlbc);
        if (pyabi_layout_load(&v, t, len, &l, why, sizeof(why)))
            fail_msg("3.%ut: %s", minor, why);
        assert_true(l.free_threaded && l.has_tlbc);
        assert_int_equal(l.in_tlbc_generation, tlbc[0]);
        assert_int_equal(l.fr_tlbc_index, tlbc[1]);
        assert_int_equal(l.co_tlbc, tlbc[2]);
        assert_int_equal(l.holds_gil_kind, PYABI_GIL_STATUS_BIT);
        assert_int_equal(l.holds_gil_mask, PYABI_STATUS_ACTIVE);
        assert_int_equal(l.str_state_shift, PYABI_STR_FT_SHIFT);
        assert_false(l.has_gil_requested && l.holds_gil_kind == PYABI_GIL_INT);

        /* the same table as a GIL build ignores the three entries */
        uint64_t zero = 0;
        memcpy(t + 16, &zero, 8);
        assert_int_equal(pyversion_decode(t, len, &v), 0);
        assert_int_equal(pyabi_layout_load(&v, t, len, &l, why, sizeof(why)), 0);
        assert_false(l.free_threaded || l.has_tlbc);
        alloc_free(t);

        /* each entry is validated, and an unset one is refused */
        const enum pyoff_id ids[] = {PYOFF_INTERP_TLBC_GENERATION, PYOFF_FRAME_TLBC_INDEX,
                                     PYOFF_CODE_TLBC};
        for (size_t k = 0; k < PYPROFD_ARRAY_SIZE(ids); k++) {
            t = ft_table(minor, &len, &v, tlbc);
            const struct pyabi_schema *s = pyabi_schema_for(minor);
            uint64_t bad = 0x7fffffff;
            memcpy(t + s->pos[ids[k]], &bad, 8);
            expect_rejected(&v, t, len, pyabi_entry_name(ids[k]), "far outside");
            memcpy(t + s->pos[ids[k]], &zero, 8);
            assert_int_equal(pyabi_layout_load(&v, t, len, &l, why, sizeof(why)), -EPROTO);
            assert_non_null(strstr(why, "unset in a free-threaded build"));
            alloc_free(t);
        }
    }
}

static void test_pyabi__schemas_are_consistent(void **state)
{
    (void)state;
    static const size_t sizes[] = {584, 760, 888};
    for (unsigned minor = 13; minor <= 15; minor++) {
        const struct pyabi_schema *s = pyabi_schema_for(minor);
        assert_int_equal(s->table_size, sizes[minor - 13]);
        unsigned prev = 0;
        for (int id = 0; id < PYOFF_COUNT; id++) {
            if (!s->pos[id])
                continue;
            /* positions are 8-aligned, inside the table, strictly increasing */
            assert_int_equal(s->pos[id] % 8, 0);
            assert_true((size_t)s->pos[id] + 8 <= s->table_size);
            assert_true(s->pos[id] > prev);
            prev = s->pos[id];
        }
    }
}

/*
 * Where discovery finds a runtime's first interpreter: for a version with a
 * table, the table's own entry (the one the layout loads), checked against
 * the runtime size it reports; for one without, its generated layout's; for
 * one pyprofd does not know, nowhere. Every supported version has a place.
 */
static void test_pyabi__runtime_head(void **state)
{
    (void)state;
    uint64_t off = 0;
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(tables); i++) {
        size_t len;
        struct py_version v;
        uint8_t *buf = load_table(&tables[i], &len, &v);
        struct py_layout l;
        char why[256];
        assert_int_equal(pyabi_layout_load(&v, buf, len, &l, why, sizeof(why)), 0);
        size_t need = pyabi_runtime_head_len(&v);
        assert_true(need > PYVERSION_HEADER_SIZE && need <= PYABI_RUNTIME_HEAD_MAX);
        assert_int_equal(pyabi_runtime_head(&v, buf, need, &off), 0);
        assert_true(off == l.rt_interpreters_head);
        assert_int_equal(pyabi_runtime_head(&v, buf, need - 1, &off), -EAGAIN);
        /* a runtime size that leaves no pointer at that offset */
        uint64_t size = off + 4;
        memcpy(buf + pyabi_schema_for(tables[i].minor)->pos[PYOFF_RUNTIME_SIZE], &size, 8);
        assert_int_equal(pyabi_runtime_head(&v, buf, need, &off), -EPROTO);
        alloc_free(buf);
    }
    struct py_version v11 = {.hex = 0x030b02f0, .major = 3, .minor = 11, .micro = 2, .level = 0xF};
    assert_int_equal(pyabi_runtime_head_len(&v11), 0);
    assert_int_equal(pyabi_runtime_head(&v11, NULL, 0, &off), 0);
    assert_true(off == pyabi_generated_for(11)->e[PYOFF_RUNTIME_INTERPRETERS_HEAD].value);
    struct py_version v16 = {.hex = 0x031000f0, .major = 3, .minor = 16, .level = 0xF};
    assert_int_equal(pyabi_runtime_head_len(&v16), 0);
    assert_int_equal(pyabi_runtime_head(&v16, NULL, 0, &off), -ENOTSUP);
    for (unsigned m = PYVERSION_MIN_MINOR; m <= PYVERSION_MAX_MINOR; m++) {
        struct py_version v = {
            .hex = 0x030000f0u | (m << 16), .major = 3, .minor = m, .level = 0xF};
        uint8_t start[PYABI_RUNTIME_HEAD_MAX] = {0};
        start[pyabi_runtime_head_len(&v) > 0 ? pyabi_schema_for(m)->pos[PYOFF_RUNTIME_SIZE] : 0] =
            0xff; /* a table's runtime size; its head entry 0 */
        assert_int_equal(pyabi_runtime_head(&v, start, sizeof(start), &off), 0);
    }
}

/* Where the native join finds the evaluation loops: by address from 3.12 on, by symbol before. */
static void test_pyabi__entry_frames_on_c_stack(void **state)
{
    (void)state;
    struct py_layout l;
    char why[256];
    for (unsigned m = PYVERSION_MIN_MINOR; m < PYVERSION_TABLE_MINOR; m++) {
        struct py_version v = {
            .hex = 0x030000f0u | (m << 16), .major = 3, .minor = m, .level = 0xF};
        assert_int_equal(pyabi_layout_generated(&v, pyabi_generated_for(m), &l, why, sizeof(why)),
                         0);
        assert_true(pyabi_entry_frames_on_c_stack(&l) == (m >= 12));
    }
    size_t len;
    struct py_version v;
    uint8_t *buf = load_table(&tables[0], &len, &v);
    assert_int_equal(pyabi_layout_load(&v, buf, len, &l, why, sizeof(why)), 0);
    assert_true(pyabi_entry_frames_on_c_stack(&l));
    alloc_free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pyabi__loads_real_tables),
        cmocka_unit_test(test_pyabi__every_used_entry_is_validated),
        cmocka_unit_test(test_pyabi__misaligned_and_zero_sizes_rejected),
        cmocka_unit_test(test_pyabi__unknown_refused),
        cmocka_unit_test(test_pyabi__generated_layouts),
        cmocka_unit_test(test_pyabi__free_threaded_rules),
        cmocka_unit_test(test_pyabi__schemas_are_consistent),
        cmocka_unit_test(test_pyabi__runtime_head),
        cmocka_unit_test(test_pyabi__entry_frames_on_c_stack),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
