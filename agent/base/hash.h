/* SPDX-License-Identifier: MIT */
/*
 * hash.h: the hash mixing every bounded table of pyprofd uses, written once:
 * the golden-ratio multiplier that spreads equally spaced keys (addresses,
 * PIDs), MurmurHash3's 64-bit finaliser, a combiner for keys of several
 * words, and FNV-1a for strings and bytes. Not for anything an adversary chooses freely: the tables
 * that hold outside input also bound their probe lengths and sizes.
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

/** FNV-1a's offset basis: the running hash of nothing. */
#define HASH_FNV_BASIS 0xcbf29ce484222325ull

/** FNV-1a over the @a len bytes at @a p, continuing the running hash @a h. */
static inline uint64_t hash_fnv1a(uint64_t h, const void *p, size_t len)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < len; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

/** FNV-1a over the NUL-terminated @a s (its bytes, not the NUL), continuing @a h. */
static inline uint64_t hash_str_from(uint64_t h, const char *s)
{
    for (const unsigned char *c = (const unsigned char *)s; *c; c++)
        h = (h ^ *c) * 0x100000001b3ull;
    return h;
}

/** FNV-1a of the NUL-terminated @a s. */
static inline uint64_t hash_str(const char *s)
{
    return hash_str_from(HASH_FNV_BASIS, s);
}

/** Mixes @a v into the running hash @a h (order matters). */
static inline uint64_t hash_combine(uint64_t h, uint64_t v)
{
    return hash_fmix64(h ^ (v + HASH_GOLDEN + (h << 6) + (h >> 2)));
}

#endif /* PYPROFD_BASE_HASH_H */
