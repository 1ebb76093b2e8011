/* SPDX-License-Identifier: MIT */
/*
 * rand.c: xorshift64 and its seeds (see rand.h).
 */
#include "base/compat.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sys/random.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/hash.h"
#include "base/rand.h"

void rand_init(struct rand_state *r, uint64_t seed)
{
    r->s = seed ? seed : HASH_GOLDEN;
}

uint64_t rand_below(struct rand_state *r, uint64_t n)
{
    return n ? rand_next(r) % n : 0;
}

uint64_t rand_seed(void)
{
    static _Atomic uint64_t calls;
    uint64_t v = 0;
    if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v) || v == 0) {
        uint64_t x = clock_mono_now() ^ (uint64_t)clock_real_now() * HASH_GOLDEN;
        x ^= (uint64_t)getpid() << 32 ^ (uint64_t)pthread_self();
        x ^= atomic_fetch_add(&calls, 1) * HASH_GOLDEN;
        v = hash_fmix64(x);
    }
    return v ? v : HASH_GOLDEN;
}

void rand_fill_os(void *p, size_t n)
{
    unsigned char *b = p;
    ssize_t got = getrandom(b, n, GRND_NONBLOCK);
    if (got == (ssize_t)n)
        return;
    struct rand_state r;
    rand_init(&r, rand_seed());
    for (size_t i = 0; i < n; i++)
        b[i] = (unsigned char)(rand_next(&r) >> 24);
}
