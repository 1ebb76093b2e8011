/* SPDX-License-Identifier: MIT */
/*
 * Tests for agent/unwind/linetable.c: the decoder against what co_positions()
 * of real CPython 3.11, 3.13, 3.14 and 3.15 reports for every code unit of the code
 * objects in tests/fixtures/linetable/3.1X.txt (scripts/gen-linetable-vectors.py
 * writes them; the file format is described in their header), then each entry
 * form, malformed tables and long tables by hand. The 3.9 and 3.10 formats
 * against PyCode_Addr2Line() of those versions (3.9.txt, 3.10.txt, written by
 * scripts/gen-oldlines-vectors.py).
 *
 * The fixtures are found through the environment variable PYPROFD_SOURCE_DIR
 * (set by ctest), or else the compile-time string PYPROFD_SOURCE_DIR.
 */
#include "base/compat.h"

#include <stdarg.h>

#include "cmocka_wrap.h"

#include "base/alloc.h"
#include "base/strnum.h"
#include "unwind/linetable.h"

/* ---- the CPython vectors ---- */

/*
 * lt_fail() with a message of any length, and marked noreturn (cmocka's
 * failure longjmps out of the test) so that the analyzer knows it ends a path.
 */
static PYPROFD_NORETURN PYPROFD_PRINTF(1, 2) void lt_fail(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fail_msg("%s", msg);
    abort(); /* not reached */
}

/* What one fixture file exercised, summed over its code objects. */
struct lt_stats {
    size_t code_objects;
    size_t units;
    size_t forms[16]; /* entries per form */
    size_t max_table;
    bool negative_delta; /* a line lower than the one before it */
    bool multi_line;     /* end_line > line */
    bool line_zero;      /* a module's RESUME */
};

static char *lt_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = alloc_malloc(cap);
    while (buf) {
        if (n + 1 >= cap) {
            char *nb = alloc_realloc(buf, cap * 2);
            if (!nb) {
                alloc_free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - 1 - n, f);
        n += got;
        if (got == 0)
            break;
    }
    fclose(f);
    if (buf) {
        buf[n] = '\0';
        *len = n;
    }
    return buf;
}

static const char *lt_source_dir(void)
{
    const char *dir = getenv("PYPROFD_SOURCE_DIR");
    if (dir && *dir)
        return dir;
#ifdef PYPROFD_SOURCE_DIR
    return PYPROFD_SOURCE_DIR;
#else
    return NULL;
#endif
}

static int lt_hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* Decodes the hex string @hex into a new buffer (caller frees). */
static uint8_t *lt_unhex(const char *hex, size_t *len)
{
    size_t n = strlen(hex);
    if (n % 2)
        return NULL;
    uint8_t *out = alloc_malloc(n / 2 + 1); /* +1: an empty table is not a NULL result */
    if (!out)
        return NULL;
    for (size_t i = 0; i < n / 2; i++) {
        int hi = lt_hex_digit(hex[2 * i]), lo = lt_hex_digit(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            alloc_free(out);
            return NULL;
        }
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    *len = n / 2;
    return out;
}

static int lt_num(const char *tok, int64_t min, int64_t max, int64_t *out)
{
    if (!tok)
        return -EINVAL;
    if (strcmp(tok, "-") == 0) {
        *out = LINETABLE_UNKNOWN;
        return 0;
    }
    return strnum_parse_i64(tok, min, max, out);
}

static bool lt_pos_equal(const struct linetable_pos *a, const struct linetable_pos *b)
{
    return a->line == b->line && a->end_line == b->end_line && a->col == b->col &&
           a->end_col == b->end_col;
}

/* One code object of a fixture, as parsed. */
struct lt_vector {
    const char *version;
    int64_t index;
    const char *label;
    int32_t firstlineno;
    uint32_t units;
    uint8_t *table;
    size_t table_len;
    struct linetable_pos *want; /* per code unit */
};

static void lt_mismatch(const struct lt_vector *v, const char *how, uint32_t addrq,
                        const struct linetable_pos *got, const struct linetable_pos *want)
{
    lt_fail("%s: code %" PRId64 " %s (firstlineno %" PRId32
            ", %zu table bytes): %s at addrq %" PRIu32 ": got (%" PRId32 ", %" PRId32 ", %" PRId32
            ", %" PRId32 "), co_positions() says (%" PRId32 ", %" PRId32 ", %" PRId32 ", %" PRId32
            ")",
            v->version, v->index, v->label, v->firstlineno, v->table_len, how, addrq, got->line,
            got->end_line, got->col, got->end_col, want->line, want->end_line, want->col,
            want->end_col);
}

/* Checks one code object with the cursor (every entry) and with lookups (every unit). */
static void lt_check_vector(const struct lt_vector *v, struct lt_stats *st)
{
    struct linetable_cursor c;
    struct linetable_entry e;
    uint32_t next = 0;
    int err;
    int32_t prev_line = v->firstlineno;

    linetable_cursor_init(&c, v->table, v->table_len, v->firstlineno);
    while ((err = linetable_cursor_next(&c, &e)) == 0) {
        if (e.start != next || e.end <= e.start || e.end - e.start > 8 || e.end > v->units)
            lt_fail("%s: code %" PRId64 " %s: entry [%" PRIu32 ", %" PRIu32 ") after unit %" PRIu32
                    " of %" PRIu32,
                    v->version, v->index, v->label, e.start, e.end, next, v->units);
        for (uint32_t a = e.start; a < e.end; a++)
            if (!lt_pos_equal(&e.pos, &v->want[a]))
                lt_mismatch(v, "cursor", a, &e.pos, &v->want[a]);
        st->forms[e.form]++;
        if (e.pos.line != LINETABLE_UNKNOWN) {
            st->negative_delta |= e.pos.line < prev_line;
            st->multi_line |= e.pos.end_line > e.pos.line;
            st->line_zero |= e.pos.line == 0;
            prev_line = e.pos.line;
        }
        next = e.end;
    }
    if (err != -ENOENT || next != v->units)
        lt_fail("%s: code %" PRId64 " %s: walk ended with %d after %" PRIu32 " of %" PRIu32
                " units",
                v->version, v->index, v->label, err, next, v->units);

    for (uint32_t a = 0; a < v->units; a++) {
        struct linetable_pos got = {0};
        err = linetable_lookup(v->table, v->table_len, v->firstlineno, a, &got);
        if (err)
            lt_fail("%s: code %" PRId64 " %s: lookup of addrq %" PRIu32 " failed with %d",
                    v->version, v->index, v->label, a, err);
        if (!lt_pos_equal(&got, &v->want[a]))
            lt_mismatch(v, "lookup", a, &got, &v->want[a]);
    }
    struct linetable_pos past;
    assert_int_equal(linetable_lookup(v->table, v->table_len, v->firstlineno, v->units, &past),
                     -ENOENT);

    st->code_objects++;
    st->units += v->units;
    if (v->table_len > st->max_table)
        st->max_table = v->table_len;
}

/*
 * Parses and checks the fixture of @version. Blocks are "code", "table", runs
 * "<first> <count> <line> <end_line> <col> <end_col>", "end"; see the header
 * of the fixture files.
 */
static void lt_check_fixture(const char *version, struct lt_stats *st)
{
    const char *dir = lt_source_dir();
    if (!dir)
        lt_fail("PYPROFD_SOURCE_DIR is not set: cannot find tests/fixtures/linetable");
    char path[4096];
    snprintf(path, sizeof(path), "%s/tests/fixtures/linetable/%s.txt", dir, version);
    size_t len = 0;
    char *text = lt_read_file(path, &len);
    if (!text)
        lt_fail("cannot read '%s': %s", path, strerror(errno));

    struct lt_vector v = {.version = version};
    bool in_block = false, seen_python = false;
    uint32_t covered = 0;
    size_t lineno = 0;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        lineno++;
        char *tsave = NULL;
        char *kw = strtok_r(line, " ", &tsave);
        int64_t n[6];
        if (!kw || kw[0] == '#')
            continue;
        if (strcmp(kw, "python") == 0) {
            const char *ver = strtok_r(NULL, " ", &tsave);
            assert_non_null(ver);
            assert_int_equal(strncmp(ver, version, strlen(version)), 0);
            seen_python = true;
        } else if (strcmp(kw, "code") == 0) {
            assert_false(in_block);
            v.label = NULL;
            if (lt_num(strtok_r(NULL, " ", &tsave), 0, INT64_MAX, &n[0]) ||
                !(v.label = strtok_r(NULL, " ", &tsave)) ||
                lt_num(strtok_r(NULL, " ", &tsave), INT32_MIN, INT32_MAX, &n[1]) ||
                lt_num(strtok_r(NULL, " ", &tsave), 0, 1 << 24, &n[2]))
                lt_fail("%s:%zu: bad code line", path, lineno);
            v.index = n[0];
            v.firstlineno = (int32_t)n[1];
            v.units = (uint32_t)n[2];
            v.want = alloc_calloc(v.units + 1u, sizeof(*v.want));
            assert_non_null(v.want);
            v.table = NULL;
            covered = 0;
            in_block = true;
        } else if (strcmp(kw, "table") == 0) {
            assert_true(in_block);
            const char *hex = strtok_r(NULL, " ", &tsave);
            v.table = lt_unhex(hex ? hex : "", &v.table_len);
            if (!v.table)
                lt_fail("%s:%zu: bad table", path, lineno);
        } else if (strcmp(kw, "end") == 0) {
            if (!in_block || !v.table || covered != v.units)
                lt_fail("%s:%zu: runs cover %" PRIu32 " of %" PRIu32 " units", path, lineno,
                        covered, v.units);
            lt_check_vector(&v, st);
            alloc_free(v.table);
            alloc_free(v.want);
            v.table = NULL;
            v.want = NULL;
            in_block = false;
        } else {
            assert_true(in_block);
            if (lt_num(kw, 0, UINT32_MAX, &n[0]) ||
                lt_num(strtok_r(NULL, " ", &tsave), 1, UINT32_MAX, &n[1]))
                lt_fail("%s:%zu: bad run", path, lineno);
            for (int i = 2; i < 6; i++)
                if (lt_num(strtok_r(NULL, " ", &tsave), INT32_MIN, INT32_MAX, &n[i]))
                    lt_fail("%s:%zu: bad run", path, lineno);
            if (n[0] != covered || n[0] + n[1] > v.units)
                lt_fail("%s:%zu: run does not follow the previous one", path, lineno);
            const struct linetable_pos p = {(int32_t)n[2], (int32_t)n[3], (int32_t)n[4],
                                            (int32_t)n[5]};
            for (int64_t a = n[0]; a < n[0] + n[1]; a++)
                v.want[a] = p;
            covered = (uint32_t)(n[0] + n[1]);
        }
    }
    assert_false(in_block);
    assert_true(seen_python);
    alloc_free(text);
}

/* Every vector matches, and the fixture exercises every form and the awkward cases. */
static void lt_check_version(const char *version)
{
    struct lt_stats st = {0};
    lt_check_fixture(version, &st);
    print_message("%s: %zu code objects, %zu code units, largest table %zu bytes; entries per "
                  "form:",
                  version, st.code_objects, st.units, st.max_table);
    for (int i = 0; i < 16; i++)
        print_message(" %d:%zu", i, st.forms[i]);
    print_message("\n");
    assert_true(st.code_objects > 100);
    for (int i = 0; i < 16; i++)
        if (st.forms[i] == 0)
            lt_fail("%s: no entry of form %d in the vectors", version, i);
    assert_true(st.max_table > 4096);
    assert_true(st.negative_delta);
    assert_true(st.multi_line);
    assert_true(st.line_zero);
}

static void test_linetable__matches_cpython_3_11(void **state)
{
    (void)state;
    lt_check_version("3.11");
}

static void test_linetable__matches_cpython_3_13(void **state)
{
    (void)state;
    lt_check_version("3.13");
}

static void test_linetable__matches_cpython_3_14(void **state)
{
    (void)state;
    lt_check_version("3.14");
}

static void test_linetable__matches_cpython_3_15(void **state)
{
    (void)state;
    lt_check_version("3.15");
}

/*
 * CPython 3.9 (co_lnotab) and 3.10 (co_linetable): every instruction offset
 * of every code object in tests/fixtures/linetable/3.9.txt / 3.10.txt
 * (scripts/gen-oldlines-vectors.py: what CPython's own PyCode_Addr2Line()
 * said) gives the same line. Returns the code objects checked; *@none counts
 * offsets CPython had no line for (-1), *@max_table the largest table,
 * *@empty the code objects whose table is empty (issue 37: 3.9's lambdas and
 * one-line functions; functions given an empty table).
 */
static size_t lt_check_old(const char *version, size_t *none, size_t *max_table, size_t *empty)
{
    const char *dir = lt_source_dir();
    if (!dir)
        lt_fail("PYPROFD_SOURCE_DIR is not set: cannot find tests/fixtures/linetable");
    char path[4096];
    snprintf(path, sizeof(path), "%s/tests/fixtures/linetable/%s.txt", dir, version);
    size_t len = 0;
    char *text = lt_read_file(path, &len);
    if (!text)
        lt_fail("cannot read '%s': %s", path, strerror(errno));
    bool lnotab = strcmp(version, "3.9") == 0;
    uint8_t *table = NULL;
    size_t table_len = 0, codes = 0, lineno = 0;
    int64_t first = 0, size = 0, covered = 0;
    const char *label = "";
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        lineno++;
        char *tsave = NULL;
        char *kw = strtok_r(line, " ", &tsave);
        int64_t n[3];
        if (!kw || kw[0] == '#' || strcmp(kw, "python") == 0)
            continue;
        if (strcmp(kw, "code") == 0) {
            if (lt_num(strtok_r(NULL, " ", &tsave), 0, INT64_MAX, &n[0]) ||
                !(label = strtok_r(NULL, " ", &tsave)) ||
                lt_num(strtok_r(NULL, " ", &tsave), INT32_MIN, INT32_MAX, &first) ||
                lt_num(strtok_r(NULL, " ", &tsave), 0, 1 << 24, &size))
                lt_fail("%s:%zu: bad code line", path, lineno);
            covered = 0;
        } else if (strcmp(kw, "table") == 0) {
            const char *hex = strtok_r(NULL, " ", &tsave);
            table = lt_unhex(hex ? hex : "", &table_len);
            if (!table)
                lt_fail("%s:%zu: bad table", path, lineno);
            *max_table = table_len > *max_table ? table_len : *max_table;
            *empty += table_len == 0;
        } else if (strcmp(kw, "end") == 0) {
            if (!table || covered != size)
                lt_fail("%s:%zu: runs cover %" PRId64 " of %" PRId64 " bytes", path, lineno,
                        covered, size);
            alloc_free(table);
            table = NULL;
            codes++;
        } else {
            if (lt_num(kw, 0, UINT32_MAX, &n[0]) ||
                lt_num(strtok_r(NULL, " ", &tsave), 1, UINT32_MAX, &n[1]) ||
                lt_num(strtok_r(NULL, " ", &tsave), INT32_MIN, INT32_MAX, &n[2]) ||
                n[0] != covered || !table)
                lt_fail("%s:%zu: bad run", path, lineno);
            for (int64_t at = n[0]; at < n[0] + n[1]; at += 2) {
                struct linetable_pos p = {0};
                int err = lnotab ? linetable_lookup_lnotab(table, table_len, (int32_t)first,
                                                           (uint32_t)at, &p)
                                 : linetable_lookup_3_10(table, table_len, (int32_t)first,
                                                         (uint32_t)at, &p);
                int32_t got = err == -ENOENT ? LINETABLE_UNKNOWN : p.line;
                if ((err && err != -ENOENT) || got != (int32_t)n[2] ||
                    (!err && (p.end_line != LINETABLE_UNKNOWN || p.col != LINETABLE_UNKNOWN)))
                    lt_fail("%s %s (code at line %" PRId64 "): byte %" PRId64
                            ": line %d (error %d), CPython says %" PRId64,
                            version, label, first, at, got, err, n[2]);
                *none += n[2] == LINETABLE_UNKNOWN;
            }
            covered = n[0] + n[1];
        }
    }
    alloc_free(table);
    alloc_free(text);
    return codes;
}

static void test_linetable__matches_cpython_3_9_lnotab(void **state)
{
    (void)state;
    size_t none = 0, max_table = 0, empty = 0;
    size_t codes = lt_check_old("3.9", &none, &max_table, &empty);
    print_message("3.9: %zu code objects, largest co_lnotab %zu bytes, %zu empty\n", codes,
                  max_table, empty);
    assert_true(codes > 100);
    assert_true(max_table > 512);
    assert_true(empty > 10); /* every instruction on co_firstlineno */
    assert_int_equal(none, 0);
}

static void test_linetable__matches_cpython_3_10_linetable(void **state)
{
    (void)state;
    size_t none = 0, max_table = 0, empty = 0;
    size_t codes = lt_check_old("3.10", &none, &max_table, &empty);
    print_message("3.10: %zu code objects, largest co_linetable %zu bytes, %zu offsets with no "
                  "line, %zu empty tables\n",
                  codes, max_table, none, empty);
    assert_true(codes > 100);
    assert_true(none > 0);  /* the -128 "no line" entries occur */
    assert_true(empty > 0); /* functions given an empty table: no line at all */
}

/* Hand-written: big jumps take several pairs, negative deltas, malformed tables. */
static void test_linetable__old_formats_by_hand(void **state)
{
    (void)state;
    struct linetable_pos p;
    /* 3.9: +300 bytes (255 + 45) then +200 lines (127 + 73); then -5 lines at byte 310 */
    const uint8_t lnotab[] = {255, 0, 45, 127, 0, 73, 10, (uint8_t)-5};
    assert_int_equal(linetable_lookup_lnotab(lnotab, sizeof(lnotab), 10, 0, &p), 0);
    assert_int_equal(p.line, 10);
    assert_int_equal(linetable_lookup_lnotab(lnotab, sizeof(lnotab), 10, 299, &p), 0);
    assert_int_equal(p.line, 10);
    assert_int_equal(linetable_lookup_lnotab(lnotab, sizeof(lnotab), 10, 300, &p), 0);
    assert_int_equal(p.line, 210);
    assert_int_equal(linetable_lookup_lnotab(lnotab, sizeof(lnotab), 10, 5000, &p), 0);
    assert_int_equal(p.line, 205);
    assert_int_equal(p.col, LINETABLE_UNKNOWN);
    assert_int_equal(linetable_lookup_lnotab(lnotab, 3, 10, 0, &p), -EINVAL);
    assert_int_equal(linetable_lookup_lnotab(NULL, 0, 7, 40, &p), 0);
    assert_int_equal(p.line, 7);
    /* pairs that move neither the offset nor the line: still co_firstlineno */
    const uint8_t zeros[] = {0, 0, 0, 0, 0, 0};
    assert_int_equal(linetable_lookup_lnotab(zeros, sizeof(zeros), 7, 0, &p), 0);
    assert_int_equal(p.line, 7);
    assert_int_equal(linetable_lookup_lnotab(zeros, sizeof(zeros), 7, 64, &p), 0);
    assert_int_equal(p.line, 7);
    /* 3.10 and 3.11+: an empty table has no line anywhere (PyCode_Addr2Line() is -1) */
    assert_int_equal(linetable_lookup_3_10(NULL, 0, 7, 0, &p), -ENOENT);
    assert_int_equal(linetable_lookup(NULL, 0, 7, 0, &p), -ENOENT);
    /* 3.10: ranges of zero bytes only: no instruction has a line */
    assert_int_equal(linetable_lookup_3_10(zeros, sizeof(zeros), 7, 0, &p), -ENOENT);

    /* 3.10: [0,6) line 2; a zero-width step of +100; [6,10) line 102; [10,12) no line;
     * [12,14) line 101 */
    const uint8_t lt310[] = {6, 1, 0, 100, 4, 0, 2, (uint8_t)-128, 2, (uint8_t)-1};
    assert_int_equal(linetable_lookup_3_10(lt310, sizeof(lt310), 1, 0, &p), 0);
    assert_int_equal(p.line, 2);
    assert_int_equal(linetable_lookup_3_10(lt310, sizeof(lt310), 1, 6, &p), 0);
    assert_int_equal(p.line, 102);
    assert_int_equal(linetable_lookup_3_10(lt310, sizeof(lt310), 1, 11, &p), 0);
    assert_int_equal(p.line, LINETABLE_UNKNOWN);
    assert_int_equal(linetable_lookup_3_10(lt310, sizeof(lt310), 1, 13, &p), 0);
    assert_int_equal(p.line, 101);
    assert_int_equal(linetable_lookup_3_10(lt310, sizeof(lt310), 1, 14, &p), -ENOENT);
    assert_int_equal(linetable_lookup_3_10(lt310, 5, 1, 0, &p), -EINVAL);

    /* lines outside int32_t */
    uint8_t up[] = {1, 127, 1, 127};
    assert_int_equal(linetable_lookup_lnotab(up, sizeof(up), INT32_MAX - 100, 10, &p), -EINVAL);
    assert_int_equal(linetable_lookup_3_10(up, sizeof(up), INT32_MAX - 100, 1, &p), -EINVAL);
}

/* ---- hand-written tables ---- */

#define LT_HEAD(form, units) ((uint8_t)(0x80u | (unsigned)(form) << 3 | ((units)-1u)))

static void lt_expect(const uint8_t *table, size_t len, int32_t first, uint32_t addrq, int32_t line,
                      int32_t end_line, int32_t col, int32_t end_col)
{
    struct linetable_pos p = {0};
    assert_int_equal(linetable_lookup(table, len, first, addrq, &p), 0);
    assert_int_equal(p.line, line);
    assert_int_equal(p.end_line, end_line);
    assert_int_equal(p.col, col);
    assert_int_equal(p.end_col, end_col);
}

static void test_linetable__short_forms(void **state)
{
    (void)state;
    /* forms 0-9, one unit each: column group form*8, then (s >> 4) and width s & 15 */
    uint8_t t[20];
    for (unsigned f = 0; f <= 9; f++) {
        t[2 * f] = LT_HEAD(f, 1);
        t[2 * f + 1] = (uint8_t)((f % 8) << 4 | f);
    }
    for (uint32_t f = 0; f <= 9; f++) {
        int32_t col = (int32_t)(f * 8 + f % 8);
        lt_expect(t, sizeof(t), 42, f, 42, 42, col, col + (int32_t)f);
    }
    /* the largest a short form can say */
    static const uint8_t big[] = {LT_HEAD(9, 8), 0xff};
    lt_expect(big, sizeof(big), 1, 7, 1, 1, 87, 102);
}

static void test_linetable__one_line_forms_move_the_line(void **state)
{
    (void)state;
    static const uint8_t t[] = {
        LT_HEAD(10, 2), 4,   9,   /* units 0-1: line 10 */
        LT_HEAD(11, 1), 0,   255, /* unit 2: line 11 */
        LT_HEAD(12, 3), 200, 201, /* units 3-5: line 13 */
        LT_HEAD(10, 1), 1,   0,   /* unit 6: line 13 */
    };
    lt_expect(t, sizeof(t), 10, 0, 10, 10, 4, 9);
    lt_expect(t, sizeof(t), 10, 1, 10, 10, 4, 9);
    lt_expect(t, sizeof(t), 10, 2, 11, 11, 0, 255);
    lt_expect(t, sizeof(t), 10, 5, 13, 13, 200, 201);
    lt_expect(t, sizeof(t), 10, 6, 13, 13, 1, 0);
}

static void test_linetable__no_column_form(void **state)
{
    (void)state;
    static const uint8_t t[] = {
        LT_HEAD(13, 1), 0x00,             /* +0 */
        LT_HEAD(13, 1), 0x07,             /* -3 */
        LT_HEAD(13, 1), 0x40 | 0x10, 0x1f /* +(0x10 | 0x1f << 6) >> 1 = +1000 */
    };
    lt_expect(t, sizeof(t), 100, 0, 100, 100, LINETABLE_UNKNOWN, LINETABLE_UNKNOWN);
    lt_expect(t, sizeof(t), 100, 1, 97, 97, LINETABLE_UNKNOWN, LINETABLE_UNKNOWN);
    lt_expect(t, sizeof(t), 100, 2, 1097, 1097, LINETABLE_UNKNOWN, LINETABLE_UNKNOWN);
}

static void test_linetable__long_form(void **state)
{
    (void)state;
    static const uint8_t t[] = {
        /* a module's RESUME: line 1 - 1 = 0, end_line 1, columns 0-0 */
        LT_HEAD(14, 1),
        0x03,
        0x01,
        0x01,
        0x01,
        /* +2 lines, spanning 3 more, columns 5000 to 7 (multi-byte varints) */
        LT_HEAD(14, 2),
        0x04,
        0x03,
        0x40 | (5001 & 63),
        0x40 | ((5001 >> 6) & 63),
        5001 >> 12,
        0x08,
        /* columns encoded 0 are unknown, each on its own */
        LT_HEAD(14, 1),
        0x00,
        0x00,
        0x00,
        0x05,
        LT_HEAD(14, 1),
        0x00,
        0x00,
        0x03,
        0x00,
    };
    lt_expect(t, sizeof(t), 1, 0, 0, 1, 0, 0);
    lt_expect(t, sizeof(t), 1, 2, 2, 5, 5000, 7);
    lt_expect(t, sizeof(t), 1, 3, 2, 2, LINETABLE_UNKNOWN, 4);
    lt_expect(t, sizeof(t), 1, 4, 2, 2, 2, LINETABLE_UNKNOWN);
}

static void test_linetable__no_location_keeps_the_running_line(void **state)
{
    (void)state;
    static const uint8_t t[] = {
        LT_HEAD(11, 1),
        2,
        3,              /* line 8 */
        LT_HEAD(15, 4), /* units 1-4: nothing */
        LT_HEAD(0, 1),
        0x12, /* line still 8 */
        LT_HEAD(15, 1),
        LT_HEAD(11, 1),
        0,
        1, /* line 9 */
    };
    lt_expect(t, sizeof(t), 7, 0, 8, 8, 2, 3);
    for (uint32_t a = 1; a <= 4; a++)
        lt_expect(t, sizeof(t), 7, a, LINETABLE_UNKNOWN, LINETABLE_UNKNOWN, LINETABLE_UNKNOWN,
                  LINETABLE_UNKNOWN);
    lt_expect(t, sizeof(t), 7, 5, 8, 8, 1, 3);
    lt_expect(t, sizeof(t), 7, 6, LINETABLE_UNKNOWN, LINETABLE_UNKNOWN, LINETABLE_UNKNOWN,
              LINETABLE_UNKNOWN);
    lt_expect(t, sizeof(t), 7, 7, 9, 9, 0, 1);
}

/* CPython marks "no line" with -1 itself: a running line of -1 reads as unknown, -2 does not. */
static void test_linetable__negative_lines_as_cpython_reports_them(void **state)
{
    (void)state;
    static const uint8_t minus1[] = {LT_HEAD(13, 1), 0x03};
    lt_expect(minus1, sizeof(minus1), 0, 0, LINETABLE_UNKNOWN, LINETABLE_UNKNOWN, LINETABLE_UNKNOWN,
              LINETABLE_UNKNOWN);
    static const uint8_t minus2[] = {LT_HEAD(13, 1), 0x05, LT_HEAD(0, 1), 0x01};
    lt_expect(minus2, sizeof(minus2), 0, 0, -2, -2, LINETABLE_UNKNOWN, LINETABLE_UNKNOWN);
    lt_expect(minus2, sizeof(minus2), 0, 1, -2, -2, 0, 1);
}

static void test_linetable__past_the_end_is_enoent(void **state)
{
    (void)state;
    static const uint8_t t[] = {LT_HEAD(10, 3), 0, 1, LT_HEAD(15, 2)};
    struct linetable_pos p = {7, 7, 7, 7};
    lt_expect(t, sizeof(t), 1, 4, LINETABLE_UNKNOWN, LINETABLE_UNKNOWN, LINETABLE_UNKNOWN,
              LINETABLE_UNKNOWN);
    assert_int_equal(linetable_lookup(t, sizeof(t), 1, 5, &p), -ENOENT);
    assert_int_equal(linetable_lookup(t, sizeof(t), 1, UINT32_MAX, &p), -ENOENT);
    assert_int_equal(linetable_lookup(NULL, 0, 1, 0, &p), -ENOENT);
    assert_int_equal(p.line, 7); /* untouched on error */
}

static void test_linetable__rejects_malformed_tables(void **state)
{
    (void)state;
    static const struct {
        const char *what;
        uint8_t bytes[12];
        size_t len;
    } bad[] = {
        {"no start bit", {0x50, 0x00}, 2},
        {"no start bit on the second entry", {LT_HEAD(10, 1), 1, 2, 0x01, 0x00}, 5},
        {"short form without its byte", {LT_HEAD(3, 2)}, 1},
        {"one-line form with one byte", {LT_HEAD(12, 1), 5}, 2},
        {"no-column form without varint", {LT_HEAD(13, 1)}, 1},
        {"varint continued past the end", {LT_HEAD(13, 1), 0x41}, 2},
        {"long form cut after two varints", {LT_HEAD(14, 1), 0x02, 0x01}, 3},
        {"long form cut in its last varint", {LT_HEAD(14, 1), 0x02, 0x01, 0x01, 0x45}, 5},
        {"varint runs into the next entry", {LT_HEAD(14, 1), 0x02, 0x01, LT_HEAD(10, 1), 1, 2}, 6},
        {"six-group varint", {LT_HEAD(13, 1), 0x40, 0x40, 0x40, 0x40, 0x40, 0x00}, 7},
        {"six-group varint, long form",
         {LT_HEAD(14, 1), 0x00, 0x00, 0x41, 0x41, 0x41, 0x41, 0x41, 0x01, 0x01},
         10},
    };
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(bad); i++) {
        struct linetable_pos p = {7, 7, 7, 7};
        int err = linetable_lookup(bad[i].bytes, bad[i].len, 1, 8, &p);
        if (err != -EINVAL)
            lt_fail("%s: got %d, want -EINVAL", bad[i].what, err);
        assert_int_equal(p.line, 7);
    }
    /* a five-group varint is the longest allowed: 2^30 - 1 */
    static const uint8_t five[] = {LT_HEAD(14, 1), 0x00, 0x00, 0x7f, 0x7f, 0x7f, 0x7f, 0x3f, 0x01};
    lt_expect(five, sizeof(five), 1, 0, 1, 1, (1 << 30) - 2, 0);
}

static void test_linetable__rejects_lines_outside_int32(void **state)
{
    (void)state;
    struct linetable_pos p;
    static const uint8_t up[] = {LT_HEAD(11, 1), 0, 1};
    assert_int_equal(linetable_lookup(up, sizeof(up), INT32_MAX, 0, &p), -EINVAL);
    static const uint8_t down[] = {LT_HEAD(13, 1), 0x03};
    assert_int_equal(linetable_lookup(down, sizeof(down), INT32_MIN, 0, &p), -EINVAL);
    /* the line fits but line + end_line delta does not */
    static const uint8_t span[] = {LT_HEAD(14, 1), 0x00, 0x02, 0x01, 0x01};
    assert_int_equal(linetable_lookup(span, sizeof(span), INT32_MAX - 1, 0, &p), -EINVAL);
    lt_expect(span, sizeof(span), INT32_MAX - 2, 0, INT32_MAX - 2, INT32_MAX, 0, 0);
}

/* Only the bytes up to the entry asked for are read, as CPython does. */
static void test_linetable__validates_up_to_the_entry_found(void **state)
{
    (void)state;
    static const uint8_t t[] = {LT_HEAD(10, 2), 3, 4, 0x00, 0x00};
    lt_expect(t, sizeof(t), 5, 1, 5, 5, 3, 4);
    struct linetable_pos p;
    assert_int_equal(linetable_lookup(t, sizeof(t), 5, 2, &p), -EINVAL);
}

static void test_linetable__cursor_walks_and_errors_are_sticky(void **state)
{
    (void)state;
    static const uint8_t t[] = {LT_HEAD(10, 8), 0,    1,    LT_HEAD(15, 1), LT_HEAD(14, 3),
                                0x04,           0x00, 0x00, 0x00,           0x7f};
    struct linetable_cursor c;
    struct linetable_entry e = {0};
    linetable_cursor_init(&c, t, sizeof(t), 3);
    assert_int_equal(linetable_cursor_next(&c, &e), 0);
    assert_int_equal(e.start, 0);
    assert_int_equal(e.end, 8);
    assert_int_equal(e.form, 10);
    assert_int_equal(linetable_cursor_next(&c, &e), 0);
    assert_int_equal(e.start, 8);
    assert_int_equal(e.end, 9);
    assert_int_equal(e.form, LINETABLE_FORM_NONE);
    assert_int_equal(e.pos.line, LINETABLE_UNKNOWN);
    assert_int_equal(linetable_cursor_next(&c, &e), 0);
    assert_int_equal(e.start, 9);
    assert_int_equal(e.end, 12);
    assert_int_equal(e.pos.line, 5);
    assert_int_equal(e.pos.col, LINETABLE_UNKNOWN);
    assert_int_equal(linetable_cursor_next(&c, &e), -EINVAL); /* 0x7f: no start bit */
    assert_int_equal(linetable_cursor_next(&c, &e), -EINVAL);
    assert_int_equal(e.start, 9); /* untouched */

    linetable_cursor_init(&c, t, 3, 3);
    assert_int_equal(linetable_cursor_next(&c, &e), 0);
    assert_int_equal(linetable_cursor_next(&c, &e), -ENOENT);
    assert_int_equal(linetable_cursor_next(&c, &e), -ENOENT);
}

/* No 4096-byte cap as in CPython's debugging helpers: tables of any length decode. */
static void test_linetable__decodes_tables_over_4096_bytes(void **state)
{
    (void)state;
    const size_t entries = 20000; /* 3 bytes each: 60000 bytes */
    uint8_t *t = alloc_malloc(entries * 3);
    assert_non_null(t);
    for (size_t i = 0; i < entries; i++) {
        t[3 * i] = LT_HEAD(11, 2); /* line + 1, two units */
        t[3 * i + 1] = (uint8_t)(i % 200);
        t[3 * i + 2] = (uint8_t)(i % 200 + 3);
    }
    lt_expect(t, entries * 3, 1, 0, 2, 2, 0, 3);
    lt_expect(t, entries * 3, 1, 4095, 2049, 2049, 2047 % 200, 2047 % 200 + 3);
    lt_expect(t, entries * 3, 1, 39999, 20001, 20001, 19999 % 200, 19999 % 200 + 3);
    struct linetable_pos p;
    assert_int_equal(linetable_lookup(t, entries * 3, 1, 40000, &p), -ENOENT);
    alloc_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_linetable__matches_cpython_3_11),
        cmocka_unit_test(test_linetable__matches_cpython_3_13),
        cmocka_unit_test(test_linetable__matches_cpython_3_14),
        cmocka_unit_test(test_linetable__matches_cpython_3_15),
        cmocka_unit_test(test_linetable__matches_cpython_3_9_lnotab),
        cmocka_unit_test(test_linetable__matches_cpython_3_10_linetable),
        cmocka_unit_test(test_linetable__old_formats_by_hand),
        cmocka_unit_test(test_linetable__short_forms),
        cmocka_unit_test(test_linetable__one_line_forms_move_the_line),
        cmocka_unit_test(test_linetable__no_column_form),
        cmocka_unit_test(test_linetable__long_form),
        cmocka_unit_test(test_linetable__no_location_keeps_the_running_line),
        cmocka_unit_test(test_linetable__negative_lines_as_cpython_reports_them),
        cmocka_unit_test(test_linetable__past_the_end_is_enoent),
        cmocka_unit_test(test_linetable__rejects_malformed_tables),
        cmocka_unit_test(test_linetable__rejects_lines_outside_int32),
        cmocka_unit_test(test_linetable__validates_up_to_the_entry_found),
        cmocka_unit_test(test_linetable__cursor_walks_and_errors_are_sticky),
        cmocka_unit_test(test_linetable__decodes_tables_over_4096_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
