/* SPDX-License-Identifier: MIT */
/*
 * timeline.h: the order in time of a window's samples, for the outputs that
 * show time (speedscope's time order, the Firefox Profiler's tracks): one
 * entry per thread sample, its time and the aggregated sample (agg_last())
 * it was counted in, in the order they were added. `record` keeps one only
 * when such an output was asked for.
 *
 * Memory grows with the samples (16 bytes each), doubling, up to a cap given
 * at timeline_new(); an entry past the cap, or one whose growth failed, is
 * dropped and counted (timeline_dropped()), so a long recording keeps its
 * first samples in order and says how many more there were. The doubling is
 * the only allocation adding makes (amortised, as the window's), never logs.
 *
 * Thread safety: one thread at a time.
 */
#ifndef PYPROFD_PPROF_TIMELINE_H
#define PYPROFD_PPROF_TIMELINE_H

#include "base/compat.h"

/** The default cap: 4 Mi entries (64 MiB). */
#define TIMELINE_DEFAULT_MAX (4u << 20)

struct timeline_entry {
    uint64_t at_ns;  /* CLOCK_MONOTONIC */
    uint32_t sample; /* index of the window's sample */
};

struct timeline;

/** An empty timeline of at most @a max entries (0: TIMELINE_DEFAULT_MAX). Returns 0 or -ENOMEM. */
PYPROFD_WARN_UNUSED int timeline_new(size_t max, struct timeline **out);
/** Frees; NULL is a no-op. */
void timeline_free(struct timeline *t);
/** Appends (@a at_ns, @a sample). Returns 0, or -E2BIG when it was dropped and counted. */
int timeline_add(struct timeline *t, uint64_t at_ns, size_t sample);
/** The entries, in the order added; valid until the next timeline_add(). */
const struct timeline_entry *timeline_entries(const struct timeline *t, size_t *n);
/** Entries dropped at the cap or for want of memory. */
uint64_t timeline_dropped(const struct timeline *t);

#endif /* PYPROFD_PPROF_TIMELINE_H */
