/* SPDX-License-Identifier: MIT */
/*
 * bytes.h: loads of little-endian integers from byte buffers (copies of
 * another process's memory, ELF files, wire formats), at any alignment,
 * without type punning. pyprofd reads x86-64 and AArch64 Linux targets, both
 * little-endian; the loads are written for a little-endian host too and a
 * static assertion keeps it honest.
 *
 * Header only; pure; thread-safe.
 */
#ifndef PYPROFD_BASE_BYTES_H
#define PYPROFD_BASE_BYTES_H

#include "base/compat.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "pyprofd reads little-endian targets");

static inline uint64_t load_le64(const void *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof(v));
    return v;
}

static inline uint32_t load_le32(const void *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof(v));
    return v;
}

static inline uint16_t load_le16(const void *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof(v));
    return v;
}

#endif /* PYPROFD_BASE_BYTES_H */
