/* SPDX-License-Identifier: MIT */
/*
 * linetable.h: decoder of CPython's location table (unwind, stage 2). A code
 * object's co_linetable (PEP 626, with the columns of PEP 657) maps each code
 * unit of its bytecode to a source position; the unwinder uses it to turn a
 * frame's instruction pointer into a line number. The decoder reports
 * exactly what code.co_positions() reports for the same table, field by field
 * (tests/unit/agent/unwind/test_linetable.c checks it against dumps of real
 * CPython 3.13, 3.14 and 3.15 made by scripts/gen-linetable-vectors.py).
 *
 * The table is a sequence of entries, each covering 1 to 8 code units:
 *  - a first byte with the top bit set: form = (b >> 3) & 15, units = (b & 7) + 1;
 *  - then, by form (varints are little-endian 6-bit groups, 0x40 meaning
 *    "more follows"; a signed varint keeps the sign in its lowest bit):
 *      0-9    short: one byte s; col = form * 8 + (s >> 4), end_col = col + (s & 15);
 *      10-12  one line: line += form - 10; bytes col, end_col;
 *      13     no column: signed varint line delta; col and end_col unknown;
 *      14     long: signed varint line delta, varints end_line - line,
 *             col + 1 and end_col + 1 (0 meaning unknown);
 *      15     no location: all four fields unknown; the running line is kept.
 *    Every form but 15 reports end_line = line unless it gives one (form 14).
 * The running line starts at co_firstlineno. The code unit of a frame is
 * addrq = (instr_ptr - (code + co_code_adaptive offset)) / 2.
 *
 * Unknown fields are LINETABLE_UNKNOWN (-1), where co_positions() says None.
 * As in CPython, a running line that reaches -1 through its deltas is also
 * reported as unknown (CPython uses -1 as its own "no line" marker), while
 * other values, 0 (a module's first instruction) or negative ones, are
 * reported as they are. Columns are 0-based offsets in UTF-8 bytes.
 *
 * The bytes are untrusted (copied out of another process): no read goes past
 * @a len, varints longer than five groups (30 bits) are malformed, a byte with
 * the top bit set where a varint byte is due (the next entry's first byte: the
 * entry was truncated) is malformed, as is an entry that does not start with
 * the top bit, a line outside int32_t, or a table of more than UINT32_MAX code
 * units. CPython's own reader trusts its tables and accepts some of these. A
 * walk stops at the entry that holds the code unit asked for, so only the bytes
 * up to it are read and validated; every entry takes at least one byte, so a
 * walk costs at most @a len steps. There is no cap on @a len: the caller
 * bounds the copy it makes.
 *
 * Nothing here allocates, logs or keeps global state: it runs per sample.
 *
 * Thread safety: linetable_lookup() is pure and reentrant. A cursor belongs to
 * one thread at a time; it borrows the table bytes, which must outlive it.
 */
#ifndef PYPROFD_UNWIND_LINETABLE_H
#define PYPROFD_UNWIND_LINETABLE_H

#include "base/compat.h"

#include "pipeline.h"

/** Form codes of an entry (its first byte's bits 3-6). */
enum linetable_form {
    LINETABLE_FORM_SHORT_MAX = 9, /* 0-9: short form, column group in the code */
    LINETABLE_FORM_ONE_LINE0 = 10,
    LINETABLE_FORM_ONE_LINE1 = 11,
    LINETABLE_FORM_ONE_LINE2 = 12,
    LINETABLE_FORM_NO_COLUMN = 13,
    LINETABLE_FORM_LONG = 14,
    LINETABLE_FORM_NONE = 15,
};

/* LINETABLE_UNKNOWN and struct linetable_pos (a frame carries one) are in
 * pipeline.h. */

/** One decoded entry: code units [start, end) share @c pos. */
struct linetable_entry {
    uint32_t start;
    uint32_t end;  /* start + 1 .. start + 8 */
    unsigned form; /* enum linetable_form, 0-15 */
    struct linetable_pos pos;
};

/**
 * A resumable walk over a table, entry by entry. An embeddable value: the
 * fields are private (set by linetable_cursor_init(), read by nothing else).
 */
struct linetable_cursor {
    uint32_t magic_;       /* set by init, checked by a debug assertion */
    int err_;              /* sticky: 0, -ENOENT or -EINVAL */
    const uint8_t *table_; /* borrowed */
    size_t len_;
    size_t off_;    /* next byte to read */
    uint64_t addr_; /* first code unit of the next entry */
    int64_t line_;  /* running line */
};

/**
 * Starts a walk over the @a len bytes at @a table (borrowed; may be NULL when
 * @a len is 0) with the running line at @a firstlineno (co_firstlineno).
 */
void linetable_cursor_init(struct linetable_cursor *c, const uint8_t *table, size_t len,
                           int32_t firstlineno);

/**
 * Decodes the next entry into @a out. Returns 0; -ENOENT after the last entry;
 * -EINVAL when the entry is malformed (see above). Errors are sticky: every
 * later call returns the same one. @a out is written only on success.
 */
PYPROFD_WARN_UNUSED int linetable_cursor_next(struct linetable_cursor *c,
                                              struct linetable_entry *out);

/**
 * Position of code unit @a addrq in the @a len bytes at @a table (borrowed;
 * may be NULL when @a len is 0), whose running line starts at @a firstlineno.
 * Returns 0 and the position in @a out (which may have unknown fields);
 * -ENOENT when the table ends before @a addrq (co_positions() would have
 * stopped earlier); -EINVAL when the table is malformed before or at the entry
 * holding @a addrq. @a out is written only on success.
 */
PYPROFD_WARN_UNUSED int linetable_lookup(const uint8_t *table, size_t len, int32_t firstlineno,
                                         uint32_t addrq, struct linetable_pos *out);

/*
 * The line tables of CPython 3.9 and 3.10, which map byte offsets into
 * co_code to lines only (a position they return has its line set, and its
 * end line and columns unknown, as CPython 3.9 and 3.10 know none). Both are sequences of two-byte
 * pairs (unsigned byte delta, signed line delta); a trailing odd byte is malformed.
 *
 *  - 3.9, co_lnotab: the line starts at co_firstlineno; walking the pairs,
 *    each adds its byte delta to a running offset, and while that offset is
 *    not past the one asked for, its line delta to the line. A lookup never
 *    fails on a well-formed table (offsets past the last pair are on the
 *    last line), as CPython's PyCode_Addr2Line().
 *  - 3.10, co_linetable (PEP 626): each pair is a range of byte-delta bytes
 *    following the previous one, on the running line plus its line delta; a
 *    line delta of -128 means "no line" (the running line is kept). Ranges of
 *    zero bytes only move the running line. An offset past the last range
 *    is -ENOENT (CPython says -1).
 *
 * The caller handles f_lasti == -1 (a frame that has not started: its first
 * line), as CPython's own getters do. Bounds: at most @a len / 2 steps, the
 * running line kept in 64 bits and checked against int32_t (-EINVAL).
 */

/** 3.9: the line of byte offset @a addr in co_lnotab. Returns 0 or -EINVAL. */
PYPROFD_WARN_UNUSED int linetable_lookup_lnotab(const uint8_t *table, size_t len,
                                                int32_t firstlineno, uint32_t addr,
                                                struct linetable_pos *out);

/**
 * 3.10: the line of byte offset @a addr in co_linetable. Returns 0 (the line
 * may be LINETABLE_UNKNOWN), -ENOENT past the last range, or -EINVAL.
 */
PYPROFD_WARN_UNUSED int linetable_lookup_3_10(const uint8_t *table, size_t len, int32_t firstlineno,
                                              uint32_t addr, struct linetable_pos *out);

#endif /* PYPROFD_UNWIND_LINETABLE_H */
