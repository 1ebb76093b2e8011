/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: CPython location tables (agent/unwind/linetable.c).
 *
 * Input: bytes 0-3 are co_firstlineno (int32, little-endian), bytes 4-7 the
 * code unit to look up (uint32, little-endian), the rest is the table. A
 * shorter input is zero-padded to 8 bytes and has an empty table. The seeds
 * in seeds/linetable/ are real CPython 3.14 tables in this format, written by
 * scripts/gen-linetable-vectors.py.
 *
 * Besides the sanitizers, it checks that the cursor's walk is contiguous and
 * each entry well formed, and that linetable_lookup() agrees with the walk.
 */
#include "base/compat.h"

#include "unwind/linetable.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool fuzz_pos_equal(const struct linetable_pos *a, const struct linetable_pos *b)
{
    return a->line == b->line && a->end_line == b->end_line && a->col == b->col &&
           a->end_col == b->end_col;
}

/* Invariants of any entry the cursor returns, @start being where the previous one ended. */
static void fuzz_check_entry(const struct linetable_entry *e, uint32_t start)
{
    const struct linetable_pos *p = &e->pos;
    PYPROFD_ASSERT(e->start == start);
    PYPROFD_ASSERT(e->end > e->start && e->end - e->start <= 8);
    PYPROFD_ASSERT(e->form <= 15);
    if (e->form != LINETABLE_FORM_LONG)
        PYPROFD_ASSERT(p->end_line == p->line);
    if (e->form == LINETABLE_FORM_NONE)
        PYPROFD_ASSERT(p->line == LINETABLE_UNKNOWN && p->col == LINETABLE_UNKNOWN &&
                       p->end_col == LINETABLE_UNKNOWN);
    if (e->form == LINETABLE_FORM_NO_COLUMN)
        PYPROFD_ASSERT(p->col == LINETABLE_UNKNOWN && p->end_col == LINETABLE_UNKNOWN);
    if (e->form <= LINETABLE_FORM_SHORT_MAX)
        PYPROFD_ASSERT(p->col >= (int32_t)e->form * 8 && p->col < (int32_t)e->form * 8 + 16 &&
                       p->end_col >= p->col && p->end_col <= p->col + 15);
    if (e->form == LINETABLE_FORM_LONG)
        PYPROFD_ASSERT(p->col >= -1 && p->end_col >= -1 &&
                       (p->line == LINETABLE_UNKNOWN || p->end_line >= p->line));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t head[8] = {0};
    memcpy(head, data, size < 8 ? size : 8);
    uint32_t first_u = (uint32_t)head[0] | (uint32_t)head[1] << 8 | (uint32_t)head[2] << 16 |
                       (uint32_t)head[3] << 24;
    int32_t first;
    memcpy(&first, &first_u, sizeof(first));
    uint32_t addrq = (uint32_t)head[4] | (uint32_t)head[5] << 8 | (uint32_t)head[6] << 16 |
                     (uint32_t)head[7] << 24;
    const uint8_t *table = size > 8 ? data + 8 : NULL;
    size_t len = size > 8 ? size - 8 : 0;

    /* The walk: remember the entry holding addrq and the last unit covered. */
    struct linetable_cursor c;
    struct linetable_entry e;
    struct linetable_pos want = {0};
    int want_err = 1; /* 1: not decided yet */
    uint32_t units = 0;
    size_t entries = 0;
    int err;
    linetable_cursor_init(&c, table, len, first);
    while ((err = linetable_cursor_next(&c, &e)) == 0) {
        fuzz_check_entry(&e, units);
        units = e.end;
        entries++;
        if (want_err == 1 && addrq >= e.start && addrq < e.end) {
            want = e.pos;
            want_err = 0;
        }
    }
    PYPROFD_ASSERT(err == -ENOENT || err == -EINVAL);
    PYPROFD_ASSERT(entries <= len);
    PYPROFD_ASSERT(linetable_cursor_next(&c, &e) == err); /* sticky */
    if (want_err == 1)
        want_err = err;

    struct linetable_pos got = {0};
    PYPROFD_ASSERT(linetable_lookup(table, len, first, addrq, &got) == want_err);
    if (want_err == 0)
        PYPROFD_ASSERT(fuzz_pos_equal(&got, &want));

    /* The last unit the walk reached decodes, and the one after it does not. */
    if (units > 0) {
        PYPROFD_ASSERT(linetable_lookup(table, len, first, units - 1, &got) == 0);
        PYPROFD_ASSERT(linetable_lookup(table, len, first, units, &got) == err);
    }
    return 0;
}
