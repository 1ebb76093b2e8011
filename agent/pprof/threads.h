/* SPDX-License-Identifier: MIT */
/*
 * threads.h: a window's samples grouped by thread, for the outputs that
 * show one profile or track per thread (speedscope, the Firefox Profiler).
 * A thread is its native id; its name is the one its first sample carried.
 * Threads come in display order: the process's main thread (id == pid)
 * first, then by samples, most first, then by id.
 *
 * Thread safety: reads the window; one thread at a time.
 */
#ifndef PYPROFD_PPROF_THREADS_H
#define PYPROFD_PPROF_THREADS_H

#include "base/compat.h"

#include "aggregate/agg.h"
#include "pprof/timeline.h"

struct out_thread {
    uint64_t id;
    uint32_t name;   /* string id of the window */
    int64_t samples; /* summed counts */
    int64_t nanos;
    bool main; /* the process's main thread */
};

struct out_threads {
    struct out_thread *t; /* in display order */
    size_t n;
    uint32_t *of; /* per sample of the window: its thread's index in t */
};

/** Groups @a a's samples; @a pid: the process (its main thread goes first). Returns 0 or -ENOMEM.
 */
PYPROFD_WARN_UNUSED int out_threads_build(const struct agg *a, int64_t pid,
                                          struct out_threads *out);
/**
 * The entries of @a tl grouped by thread: (*@a order)[(*@a start)[k] ..
 * (*@a start)[k + 1]) are the indices of thread k's entries, in the order
 * they were added (time order). Both arrays are the caller's (alloc_free()).
 * Returns 0 or -ENOMEM.
 */
PYPROFD_WARN_UNUSED int out_threads_order(const struct out_threads *th, const struct timeline *tl,
                                          uint32_t **order, size_t **start);

/** Frees what out_threads_build() allocated. */
void out_threads_release(struct out_threads *o);

#endif /* PYPROFD_PPROF_THREADS_H */
