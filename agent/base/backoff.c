/* SPDX-License-Identifier: MIT */
/*
 * backoff.c: the retry delay (see backoff.h).
 */
#include "base/compat.h"

#include "base/backoff.h"

uint64_t backoff_delay_ns(unsigned attempt, uint64_t min_ns, uint64_t max_ns, uint64_t rnd,
                          unsigned flags)
{
    if (max_ns < min_ns)
        max_ns = min_ns;
    uint64_t d = min_ns;
    for (unsigned i = 1; i < attempt && d < max_ns; i++)
        d = d > max_ns / 2 ? max_ns : d * 2;
    if (d > max_ns)
        d = max_ns;
    uint64_t half = d / 2;
    uint64_t r = half + rnd % (d - half + 1);
    if ((flags & BACKOFF_DELAY_AT_LEAST_MIN) && r < min_ns)
        r = min_ns;
    return r;
}
