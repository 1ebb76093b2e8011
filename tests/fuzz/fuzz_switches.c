/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: a thread's context-switch ring (agent/perf/switches.c) and a
 * schedstat line (agent/sampler/threadstat.c). The kernel writes the ring,
 * but what the parsers are handed must never take them outside it: the
 * first 24 bytes of the input are three head values (now, before, and a
 * spare), the rest is the ring, cut to a power of two (an input too short
 * for the heads is a ring of its own). The whole input is also a schedstat
 * line, and a stat line (its state and CPU time: cpu mode's last resort).
 * The answers must be in range and agree with each other.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "perf/switches.h"
#include "sampler/threadstat.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_schedstat(const uint8_t *data, size_t size)
{
    uint64_t v[3];
    int err = threadstat_parse_schedstat((const char *)data, size, v);
    PYPROFD_ASSERT(err == 0 || err == -EINVAL);
    if (err)
        return;
    PYPROFD_ASSERT(memchr(data, '\n', size) != NULL);
    /* the numbers read back as themselves */
    char line[80];
    int n = snprintf(line, sizeof(line), "%llu %llu %llu\n", (unsigned long long)v[0],
                     (unsigned long long)v[1], (unsigned long long)v[2]);
    PYPROFD_ASSERT(n > 0 && (size_t)n < sizeof(line));
    uint64_t w[3];
    PYPROFD_ASSERT(threadstat_parse_schedstat(line, (size_t)n, w) == 0);
    PYPROFD_ASSERT(w[0] == v[0] && w[1] == v[1] && w[2] == v[2]);
}

static void check_cputime(const uint8_t *data, size_t size)
{
    char st = 0, st2 = 0;
    uint64_t ticks;
    int err = threadstat_parse_cputime((const char *)data, size, &st, &ticks);
    PYPROFD_ASSERT(err == 0 || err == -EINVAL);
    if (err)
        return;
    /* the state is the one threadstat_parse_state() finds, and a ')' is there */
    PYPROFD_ASSERT(threadstat_parse_state((const char *)data, size, &st2) == 0 && st == st2);
    PYPROFD_ASSERT(memchr(data, ')', size) != NULL);
}

static void check_state(const uint8_t *ring, uint64_t size, uint64_t head)
{
    enum switches_state st = switches_parse_state(ring, size, head);
    PYPROFD_ASSERT(st >= SWITCHES_NONE && st <= SWITCHES_UNKNOWN);
    PYPROFD_ASSERT((st == SWITCHES_NONE) == (head == 0));
    if (head % 8)
        PYPROFD_ASSERT(st == SWITCHES_UNKNOWN);
}

static void check_since(const uint8_t *ring, uint64_t size, uint64_t before, uint64_t now)
{
    struct switches_since s = switches_parse_since(ring, size, before, now);
    uint64_t written = before - now;
    if (written == 0)
        PYPROFD_ASSERT(!s.forked && !s.overrun && !s.bad);
    if (written > size)
        PYPROFD_ASSERT(s.overrun);
    /* an overrun walks nothing; a bad record ends the walk */
    PYPROFD_ASSERT(!(s.overrun && (s.forked || s.bad)));
    /* the waker's parser walks the same records (of 16 bytes or more): where
     * it finds a time, the walk found every record whole */
    uint64_t t;
    if (switches_parse_first_time(ring, size, before, now, &t)) {
        PYPROFD_ASSERT(written > 0 && written <= size);
        PYPROFD_ASSERT(!s.overrun && !s.bad);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_schedstat(data, size);
    check_cputime(data, size);
    bool heads = size >= 24 + 8;
    const uint8_t *body = heads ? data + 24 : data;
    size_t body_len = heads ? size - 24 : size;
    if (body_len < 8)
        return 0;
    uint64_t now = (uint64_t)-8, before = 0, spare = 16;
    if (heads) {
        memcpy(&now, data, 8);
        memcpy(&before, data + 8, 8);
        memcpy(&spare, data + 16, 8);
    }
    uint64_t ring = 8;
    while (ring * 2 <= body_len)
        ring *= 2;
    /* a copy of exactly the ring's size, so that a read past it is seen */
    uint8_t *copy = alloc_malloc(ring);
    if (!copy)
        return 0;
    memcpy(copy, body, ring);
    uint64_t aligned = before & ~(uint64_t)7;
    uint64_t heads_seen[4] = {now, before, now & ~(uint64_t)7, 0};
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(heads_seen); i++)
        check_state(copy, ring, heads_seen[i]);
    check_since(copy, ring, before, now);
    check_since(copy, ring, before, before);
    /* heads a walk can follow: 8-aligned, within a ring's worth or just past it */
    check_since(copy, ring, aligned, aligned - (spare % (2 * ring + 8)));
    check_since(copy, ring, aligned, aligned - ((spare % (ring / 8 + 2)) * 8));
    /* and the rings the parsers refuse: not a power of two, smaller than a header */
    if (ring > 8)
        check_state(copy, ring - 8, now);
    check_state(copy, 4, now & ~(uint64_t)7);
    struct switches_since s = switches_parse_since(copy, ring - 1, aligned, aligned - 8);
    PYPROFD_ASSERT(!s.forked);
    alloc_free(copy);
    return 0;
}
