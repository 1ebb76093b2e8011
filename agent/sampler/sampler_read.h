/* SPDX-License-Identifier: MIT */
/*
 * sampler_read.h: the two steps of a read (sampler_read.c), for the sources
 * that read on the schedule: the read source itself, and the exact path,
 * which stops the threads around sampler_read_collect() and gives after the resume.
 * Internal to the sampler stage.
 *
 * Thread safety: as sampler.h (one thread at a time).
 */
#ifndef PYPROFD_SAMPLER_SAMPLER_READ_H
#define PYPROFD_SAMPLER_SAMPLER_READ_H

#include "base/compat.h"

#include "sampler/sampler.h"

/** One read: the unwinder's result (owned by it until its next sample) and the task graph's. */
struct sampler_read_result {
    const struct unwind_result *r;
    const struct asyncio_result *ar; /* NULL: plain stacks */
    const struct sample_span *spans; /* each thread's (as r->threads), NULL: not read */
    enum sample_status why;          /* the unwinder's, when err */
    int err;                         /* unwinder_sample()'s */
    bool gone;                       /* the task graph's read found the process gone */
};

/** Reads the target (@a extra_flags for the unwinder), once more when it tore. */
void sampler_read_collect(struct sampler *s, unsigned extra_flags, struct sampler_read_result *rd);

/**
 * Joins thread @a i's C frames with its Python frames @a t: true with the
 * joined stack in *@a out (*@a n frames), false when none is kept.
 */
typedef bool (*sampler_read_join_fn)(void *arg, size_t i, const struct unwind_thread *t,
                                     const struct unwind_frame **out, size_t *n);

/**
 * Counts read @a rd (taken, or failed by its first failed thread's status)
 * and gives each thread's stack to the sinks, through @a join (with @a arg)
 * when set. Returns 0, or -ESRCH when the process is gone.
 */
int sampler_read_give(struct sampler *s, const struct sampler_read_result *rd,
                      sampler_read_join_fn join, void *arg);

#endif /* PYPROFD_SAMPLER_SAMPLER_READ_H */
