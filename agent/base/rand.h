/* SPDX-License-Identifier: MIT */
/*
 * rand.h: the one pseudo-random generator of pyprofd, for jitter (retry
 * backoff, sampling schedules) and as the fallback where the kernel's
 * randomness is unavailable. xorshift64 (Marsaglia, shifts 13, 7, 17):
 * fast, a state of one word, period 2^64 - 1; not for secrets.
 *
 * Each user keeps its own state (struct rand_state, an embeddable value;
 * its field is private), so that no lock is shared and a test can replay a
 * sequence from a known seed: rand_init() with the same seed gives the same
 * numbers. rand_seed() gives a seed that differs between processes, threads
 * and calls.
 *
 * Thread safety: a state is one thread's at a time (or the caller's lock's);
 * rand_seed() and rand_fill_os() may be called from any thread.
 */
#ifndef PYPROFD_BASE_RAND_H
#define PYPROFD_BASE_RAND_H

#include "base/compat.h"

struct rand_state {
    /* private: never 0 once initialised */
    uint64_t s;
};

/**
 * Starts @a r at @a seed, used as it is (0, which xorshift cannot leave,
 * becomes a fixed non-zero constant): the same seed, the same sequence.
 */
void rand_init(struct rand_state *r, uint64_t seed);

/**
 * The next number: one xorshift64 step. Inline: the sampler draws one per
 * attempt.
 */
static inline uint64_t rand_next(struct rand_state *r)
{
    uint64_t x = r->s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    r->s = x;
    return x;
}

/** A number in [0, @a n) (rand_next() % @a n; the bias is negligible for jitter); 0 when n is 0. */
uint64_t rand_below(struct rand_state *r, uint64_t n);

/**
 * A seed for rand_init(): 8 bytes of getrandom(2) when the kernel has them
 * at once, else the clocks, the pid, the thread and a counter mixed
 * (hash_fmix64). Never 0.
 */
uint64_t rand_seed(void);

/**
 * Fills @a n bytes at @a p with the kernel's randomness (getrandom(2), not
 * waiting for the entropy pool), or, when it has none to give, from a
 * generator seeded with rand_seed(). For identifiers (a request id), not
 * for keys.
 */
void rand_fill_os(void *p, size_t n);

#endif /* PYPROFD_BASE_RAND_H */
