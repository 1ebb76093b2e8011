/* SPDX-License-Identifier: MIT */
/* timeline.c: a growing array of (time, sample), capped (timeline.h). */
#include "base/compat.h"

#include "base/alloc.h"
#include "pprof/timeline.h"

#define TIMELINE_INIT 1024u

struct timeline {
    struct timeline_entry *e;
    size_t n, cap, max;
    uint64_t dropped;
};

int timeline_new(size_t max, struct timeline **out)
{
    struct timeline *t = alloc_calloc(1, sizeof(*t));
    if (!t)
        return -ENOMEM;
    t->max = max ? max : TIMELINE_DEFAULT_MAX;
    *out = t;
    return 0;
}

void timeline_free(struct timeline *t)
{
    if (!t)
        return;
    alloc_free(t->e);
    alloc_free(t);
}

int timeline_add(struct timeline *t, uint64_t at_ns, size_t sample)
{
    if (sample > UINT32_MAX || t->n == t->max) {
        t->dropped++;
        return -E2BIG;
    }
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : TIMELINE_INIT;
        if (cap > t->max)
            cap = t->max;
        struct timeline_entry *e = alloc_realloc(t->e, cap * sizeof(*e));
        if (!e) {
            t->dropped++;
            return -E2BIG;
        }
        t->e = e;
        t->cap = cap;
    }
    t->e[t->n++] = (struct timeline_entry){.at_ns = at_ns, .sample = (uint32_t)sample};
    return 0;
}

const struct timeline_entry *timeline_entries(const struct timeline *t, size_t *n)
{
    *n = t->n;
    return t->e;
}

uint64_t timeline_dropped(const struct timeline *t)
{
    return t->dropped;
}
