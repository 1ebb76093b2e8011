/* SPDX-License-Identifier: MIT */
/*
 * speedscope.h: a window in speedscope's file format
 * (`pyprofd record --format speedscope`), the JSON its schema
 * (file-format-schema.json, shipped in the speedscope package) describes:
 *
 *   {"$schema": ..., "shared": {"frames": [{name, file, line}]},
 *    "profiles": [{"type": "sampled", "name", "unit", "startValue",
 *                  "endValue", "samples": [[frame, ...]], "weights": [...]}],
 *    "name", "activeProfileIndex", "exporter"}
 *
 * One sampled profile per thread (threads.h's order: the main thread first,
 * and active), named "NAME (TID)". A frame is a function: its qualified
 * name, file and first line (markers have no file), as the flame graph
 * draws them. Stacks are root first. Weights are time in nanoseconds, one
 * interval per sample: the time of the mode (wall, CPU, GIL held or
 * exception handled) each sample stands for.
 *
 * With a timeline (timeline.h) the samples are in the order they were taken,
 * so speedscope's "Time Order" view is the recording; consecutive samples of
 * one thread in the same stack are one entry with their weights summed.
 * Without one, one entry per distinct stack (no time order).
 *
 * Thread safety: reads the window; one thread at a time.
 */
#ifndef PYPROFD_PPROF_SPEEDSCOPE_H
#define PYPROFD_PPROF_SPEEDSCOPE_H

#include "base/compat.h"

#include "aggregate/agg.h"
#include "pprof/timeline.h"

struct speedscope_meta {
    const char *name;     /* the file's "name", which speedscope shows as the title */
    const char *exporter; /* "pyprofd VERSION" */
    int64_t pid;          /* whose main thread goes first (0: none) */
};

/**
 * Writes @a a, in the order of @a tl when not NULL, to @a out. Returns 0,
 * -EIO or -ENOMEM (it allocates tables the size of the window and of the
 * timeline: output time, not per sample).
 */
PYPROFD_WARN_UNUSED int speedscope_write(const struct agg *a, const struct timeline *tl,
                                         const struct speedscope_meta *m, FILE *out);

#endif /* PYPROFD_PPROF_SPEEDSCOPE_H */
