/* SPDX-License-Identifier: MIT */
/*
 * bytes.h: loads of fixed-width integers from byte buffers, such as a copy of
 * a target's object. The pointer need not be aligned (the loads go through
 * memcpy, which compilers turn into one move). The byte order is the host's:
 * pyprofd reads processes of the machine it runs on, whose memory has that
 * order (little-endian on every platform pyprofd supports).
 *
 * The caller checks that the bytes are there (p + width within its buffer).
 * Thread safety: pure functions.
 */
#ifndef PYPROFD_BASE_BYTES_H
#define PYPROFD_BASE_BYTES_H

#include "base/compat.h"

/** The 8 bytes at @a p as an unsigned 64-bit integer. */
static inline uint64_t load_u64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof(v));
    return v;
}

/** The 4 bytes at @a p as an unsigned 32-bit integer. */
static inline uint32_t load_u32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof(v));
    return v;
}

#endif /* PYPROFD_BASE_BYTES_H */
