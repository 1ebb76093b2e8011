/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: a thread's context-switch ring (agent/perf/switches.c) and a
 * schedstat line (agent/sampler/threadstat.c). The kernel writes the ring,
 * but what the parsers are handed must never take them outside it: the
 * first 24 bytes of the input are three head values (now, before, and a
 * spare), the rest is the ring, cut to a power of two.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "perf/switches.h"
#include "sampler/threadstat.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint64_t v[3];
    int err = threadstat_parse_schedstat((const char *)data, size, v);
    PYPROFD_ASSERT(err == 0 || err == -EINVAL);
    if (size < 24 + 8)
        return 0;
    uint64_t now, before, spare;
    memcpy(&now, data, 8);
    memcpy(&before, data + 8, 8);
    memcpy(&spare, data + 16, 8);
    uint64_t ring = 8;
    while (ring * 2 <= size - 24)
        ring *= 2;
    /* a copy of exactly the ring's size, so that a read past it is seen */
    uint8_t *copy = alloc_malloc(ring);
    if (!copy)
        return 0;
    memcpy(copy, data + 24, ring);
    uint64_t heads[3] = {now, before, now & ~(uint64_t)7};
    for (size_t i = 0; i < 3; i++) {
        enum switches_state st = switches_parse_state(copy, ring, heads[i]);
        PYPROFD_ASSERT(st >= SWITCHES_NONE && st <= SWITCHES_UNKNOWN);
    }
    struct switches_since s = switches_parse_since(copy, ring, before, now);
    s = switches_parse_since(copy, ring, before & ~(uint64_t)7,
                             (before & ~(uint64_t)7) - (spare % 512));
    (void)s;
    uint64_t t;
    (void)switches_parse_first_time(copy, ring, before, now, &t);
    (void)switches_parse_first_time(copy, ring, before & ~(uint64_t)7,
                                    (before & ~(uint64_t)7) - ((spare % 64) * 8), &t);
    alloc_free(copy);
    return 0;
}
