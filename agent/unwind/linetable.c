/* SPDX-License-Identifier: MIT */
/*
 * linetable.c: CPython location-table decoder (see linetable.h). Every byte
 * comes from another process, so each read checks the offset against the
 * length first, and the running line is kept in 64 bits and range-checked
 * after each change, so a hostile table cannot overflow it.
 */
#include "base/compat.h"

#include "unwind/linetable.h"

#define LINETABLE_CURSOR_MAGIC 0x4c54424cu /* "LTBL" */

/* Entry bytes: the first has the top bit; varint bytes never do. */
#define LT_START_BIT   0x80u
#define LT_VARINT_MORE 0x40u
#define LT_VARINT_BITS 0x3fu
/* Five 6-bit groups: 30 bits, more than any real line or column. */
#define LT_VARINT_MAX_SHIFT 28u

void linetable_cursor_init(struct linetable_cursor *c, const uint8_t *table, size_t len,
                           int32_t firstlineno)
{
    PYPROFD_ASSERT(table || len == 0);
    *c = (struct linetable_cursor){
        .magic_ = LINETABLE_CURSOR_MAGIC,
        .table_ = table,
        .len_ = len,
        .line_ = firstlineno,
    };
}

static int lt_byte(struct linetable_cursor *c, uint8_t *out)
{
    if (c->off_ >= c->len_)
        return -EINVAL;
    *out = c->table_[c->off_++];
    return 0;
}

static int lt_varint(struct linetable_cursor *c, uint32_t *out)
{
    uint32_t val = 0;
    unsigned shift = 0;
    for (;;) {
        uint8_t b;
        if (lt_byte(c, &b) || (b & LT_START_BIT))
            return -EINVAL;
        val |= (uint32_t)(b & LT_VARINT_BITS) << shift;
        if (!(b & LT_VARINT_MORE))
            break;
        shift += 6;
        if (shift > LT_VARINT_MAX_SHIFT)
            return -EINVAL;
    }
    *out = val;
    return 0;
}

static int lt_svarint(struct linetable_cursor *c, int32_t *out)
{
    uint32_t u;
    if (lt_varint(c, &u))
        return -EINVAL;
    /* u < 2^30, so both halves fit an int32_t */
    int32_t mag = (int32_t)(u >> 1);
    *out = (u & 1u) ? -mag : mag;
    return 0;
}

static bool lt_line_ok(int64_t line)
{
    return line >= INT32_MIN && line <= INT32_MAX;
}

/* Decodes the body of an entry of @form into @pos, moving the running line. */
static int lt_decode_body(struct linetable_cursor *c, unsigned form, struct linetable_pos *pos)
{
    uint8_t b0, b1;
    int32_t delta;
    uint32_t end_delta, col1, end_col1;

    if (form <= LINETABLE_FORM_SHORT_MAX) {
        if (lt_byte(c, &b0))
            return -EINVAL;
        pos->col = (int32_t)(form * 8u + (b0 >> 4));
        pos->end_col = pos->col + (int32_t)(b0 & 15u);
        pos->line = pos->end_line = (int32_t)c->line_;
        return 0;
    }
    switch (form) {
    case LINETABLE_FORM_ONE_LINE0:
    case LINETABLE_FORM_ONE_LINE1:
    case LINETABLE_FORM_ONE_LINE2:
        if (lt_byte(c, &b0) || lt_byte(c, &b1))
            return -EINVAL;
        c->line_ += form - LINETABLE_FORM_ONE_LINE0;
        if (!lt_line_ok(c->line_))
            return -EINVAL;
        pos->line = pos->end_line = (int32_t)c->line_;
        pos->col = b0;
        pos->end_col = b1;
        return 0;
    case LINETABLE_FORM_NO_COLUMN:
        if (lt_svarint(c, &delta))
            return -EINVAL;
        c->line_ += delta;
        if (!lt_line_ok(c->line_))
            return -EINVAL;
        pos->line = pos->end_line = (int32_t)c->line_;
        pos->col = pos->end_col = LINETABLE_UNKNOWN;
        return 0;
    case LINETABLE_FORM_LONG:
        if (lt_svarint(c, &delta) || lt_varint(c, &end_delta) || lt_varint(c, &col1) ||
            lt_varint(c, &end_col1))
            return -EINVAL;
        c->line_ += delta;
        if (!lt_line_ok(c->line_) || !lt_line_ok(c->line_ + end_delta))
            return -EINVAL;
        pos->line = (int32_t)c->line_;
        pos->end_line = (int32_t)(c->line_ + end_delta);
        /* both < 2^30; an encoded 0 becomes -1, LINETABLE_UNKNOWN */
        pos->col = (int32_t)col1 - 1;
        pos->end_col = (int32_t)end_col1 - 1;
        return 0;
    default: /* LINETABLE_FORM_NONE: the running line stays */
        pos->line = pos->end_line = LINETABLE_UNKNOWN;
        pos->col = pos->end_col = LINETABLE_UNKNOWN;
        return 0;
    }
}

int linetable_cursor_next(struct linetable_cursor *c, struct linetable_entry *out)
{
    PYPROFD_ASSERT(c->magic_ == LINETABLE_CURSOR_MAGIC);
    if (c->err_)
        return c->err_;
    if (c->off_ >= c->len_) {
        c->err_ = -ENOENT;
        return c->err_;
    }

    uint8_t head = c->table_[c->off_++];
    struct linetable_entry e = {0};
    e.form = (head >> 3) & 15u;
    uint64_t end = c->addr_ + (head & 7u) + 1u;
    if (!(head & LT_START_BIT) || end > UINT32_MAX || lt_decode_body(c, e.form, &e.pos) != 0) {
        c->err_ = -EINVAL;
        return c->err_;
    }
    e.start = (uint32_t)c->addr_;
    e.end = (uint32_t)end;
    c->addr_ = end;
    *out = e;
    return 0;
}

int linetable_lookup(const uint8_t *table, size_t len, int32_t firstlineno, uint32_t addrq,
                     struct linetable_pos *out)
{
    struct linetable_cursor c;
    struct linetable_entry e;
    linetable_cursor_init(&c, table, len, firstlineno);
    /* Entries are contiguous from unit 0, so the first that ends past addrq holds it. */
    for (;;) {
        int err = linetable_cursor_next(&c, &e);
        if (err)
            return err;
        if (addrq < e.end) {
            *out = e.pos;
            return 0;
        }
    }
}

/* --- 3.9 and 3.10 ------------------------------------------------------ */

static void lt_line_only(struct linetable_pos *out, int64_t line)
{
    int32_t l = line == -1 ? LINETABLE_UNKNOWN : (int32_t)line;
    *out = (struct linetable_pos){l, LINETABLE_UNKNOWN, LINETABLE_UNKNOWN, LINETABLE_UNKNOWN};
}

int linetable_lookup_lnotab(const uint8_t *table, size_t len, int32_t firstlineno, uint32_t addr,
                            struct linetable_pos *out)
{
    PYPROFD_ASSERT(table || len == 0);
    if (len % 2)
        return -EINVAL;
    int64_t line = firstlineno;
    uint64_t at = 0;
    for (size_t i = 0; i < len; i += 2) {
        at += table[i];
        if (at > addr)
            break;
        line += (int8_t)table[i + 1];
        if (line < INT32_MIN || line > INT32_MAX)
            return -EINVAL;
    }
    lt_line_only(out, line);
    return 0;
}

int linetable_lookup_3_10(const uint8_t *table, size_t len, int32_t firstlineno, uint32_t addr,
                          struct linetable_pos *out)
{
    PYPROFD_ASSERT(table || len == 0);
    if (len % 2)
        return -EINVAL;
    int64_t computed = firstlineno;
    uint64_t end = 0;
    for (size_t i = 0; i < len; i += 2) {
        uint64_t start = end;
        end += table[i];
        int8_t delta = (int8_t)table[i + 1];
        bool none = delta == -128;
        if (!none) {
            computed += delta;
            if (computed < INT32_MIN || computed > INT32_MAX)
                return -EINVAL;
        }
        if (start <= addr && addr < end) {
            lt_line_only(out, none ? -1 : computed);
            return 0;
        }
    }
    return -ENOENT;
}
