/* SPDX-License-Identifier: MIT */
/*
 * strnum.h: checked number parsing, in place of the banned atoi/atol. The
 * whole string must be a number in range; anything else is an error, never a
 * silent 0.
 *
 * Thread safety: pure functions.
 */
#ifndef PYPROFD_BASE_STRNUM_H
#define PYPROFD_BASE_STRNUM_H

#include "base/compat.h"

/**
 * Parses decimal @a s (optional sign, no surrounding space) into @a out if it
 * lies in [@a min, @a max]. Returns 0, -EINVAL for an empty or non-numeric
 * string or trailing characters, -ERANGE when out of range. @a out is written
 * only on success.
 */
PYPROFD_WARN_UNUSED int strnum_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out);

/**
 * Parses the unsigned hexadecimal number (no 0x prefix, at most 16 digits) in
 * the first @a len bytes of @a s. Returns 0, -EINVAL or -ERANGE as above.
 */
PYPROFD_WARN_UNUSED int strnum_parse_hex_u64(const char *s, size_t len, uint64_t *out);

#endif /* PYPROFD_BASE_STRNUM_H */
