/* SPDX-License-Identifier: MIT */
/*
 * pystr.h: reading Python str and bytes objects out of a target.
 *
 * A str is decoded from a local copy of its object (header plus inline data)
 * into UTF-8: compact ASCII, and compact Latin-1 / UCS-2 / UCS-4 strings
 * (names like "zażółć" or "日本語"), with the data offsets the target's table
 * gives. Legacy (non-compact) strings never name code in practice and are
 * refused. The result is valid UTF-8: lone surrogates (Python keeps a file
 * name's undecodable bytes as U+DC80-U+DCFF), out-of-range code points and
 * bytes above 0x7f in an object flagged ASCII become U+FFFD, one each,
 * counted with base/utf8.h's replacements (utf8_count_replaced()); more than
 * PYSTR_MAX_CHARS code points are cut off there.
 *
 * The object bytes are untrusted: lengths are checked against the copy and the
 * caps before any byte is read.
 *
 * No allocation, no logging. Thread safety: reentrant.
 */
#ifndef PYPROFD_UNWIND_PYSTR_H
#define PYPROFD_UNWIND_PYSTR_H

#include "base/compat.h"

#include "memread/memread.h"
#include "python/pyabi.h"

/** Code points kept of one string (Tachyon refuses names longer than 1024). */
#define PYSTR_MAX_CHARS 1024u
/** Bytes to read at once when the length is not known yet: header + this much data. */
#define PYSTR_SPECULATIVE_DATA 192u

/**
 * Decodes the str whose first @a len bytes are at @a obj into @a out
 * (@a out_cap bytes, always NUL-terminated when @a out_cap > 0; 4 *
 * PYSTR_MAX_CHARS + 1 is always enough). Returns the UTF-8 length; -EAGAIN
 * with *@a need set when the copy is too short (copy *@a need bytes and call
 * again); -EINVAL for an impossible header; -ENOTSUP for a legacy string.
 */
PYPROFD_WARN_UNUSED long pystr_decode(const struct py_layout *l, const uint8_t *obj, size_t len,
                                      char *out, size_t out_cap, size_t *need);
/** pystr_decode() keeping at most @a max_chars code points (<= PYSTR_MAX_CHARS). */
PYPROFD_WARN_UNUSED long pystr_decode_n(const struct py_layout *l, const uint8_t *obj, size_t len,
                                        char *out, size_t out_cap, size_t max_chars, size_t *need);

/**
 * Reads and decodes the str at @a raddr (one read when it is short, two
 * otherwise). Returns the UTF-8 length or a negative errno (memread errors
 * pass through).
 */
PYPROFD_WARN_UNUSED long pystr_read(struct memread *mr, const struct py_layout *l, uint64_t raddr,
                                    char *out, size_t out_cap);
/** pystr_read() keeping at most @a max_chars code points (<= PYSTR_MAX_CHARS). */
PYPROFD_WARN_UNUSED long pystr_read_n(struct memread *mr, const struct py_layout *l, uint64_t raddr,
                                      char *out, size_t out_cap, size_t max_chars);

/**
 * Reads the bytes object at @a raddr into @a out (at most @a cap bytes).
 * Returns its length; -E2BIG if it is longer than @a cap; -EINVAL for a
 * negative size; memread errors.
 */
PYPROFD_WARN_UNUSED long pybytes_read(struct memread *mr, const struct py_layout *l, uint64_t raddr,
                                      uint8_t *out, size_t cap);

#endif /* PYPROFD_UNWIND_PYSTR_H */
