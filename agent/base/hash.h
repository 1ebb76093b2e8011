/* SPDX-License-Identifier: MIT */
/*
 * hash.h: the hash mixing every bounded table of pyprofd uses, written once:
 * the golden-ratio multiplier that spreads equally spaced keys (addresses,
 * PIDs), MurmurHash3's 64-bit finaliser, and a combiner for keys of several
 * words. Not for anything an adversary chooses freely: the tables that hold
 * outside input also bound their probe lengths and sizes.
 *
 * Header only; pure; thread-safe.
 */
#ifndef PYPROFD_BASE_HASH_H
#define PYPROFD_BASE_HASH_H

#include "base/compat.h"

/** 2^64 / phi: multiplying by it spreads keys that differ in their high or low bits. */
#define HASH_GOLDEN 0x9E3779B97F4A7C15ull

/** MurmurHash3's fmix64: every input bit affects every output bit. */
static inline uint64_t hash_fmix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

/** Mixes @a v into the running hash @a h (order matters). */
static inline uint64_t hash_combine(uint64_t h, uint64_t v)
{
    return hash_fmix64(h ^ (v + HASH_GOLDEN + (h << 6) + (h >> 2)));
}

#endif /* PYPROFD_BASE_HASH_H */
