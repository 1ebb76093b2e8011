/* SPDX-License-Identifier: MIT */
/*
 * gecko.h: a recording in the Firefox Profiler's Gecko profile format
 * (`pyprofd record --format gecko`), the JSON Firefox's own profiler emits
 * and profiler.firefox.com processes on load, wrapped as the Firefox
 * DevTools' performance panel saved it:
 *
 *   {"systemHost": {"name": "Firefox"}, "duration": MS, "profile": GECKO}
 *
 * which profiler.firefox.com unwraps and speedscope's Firefox importer
 * requires. In the profile, one thread per sampled thread with its name
 * and id; the process's main thread (else the most sampled one) is named
 * "GeckoMain", the name both tools look for, with the command line as its
 * process name. Each sample keeps the time it was taken (a timeline,
 * timeline.h: required), in milliseconds from meta.startTime (the
 * recording's start, since the epoch), and each thread's last sample is
 * one of no stack at the recording's end (speedscope's importer closes the
 * open frames only there; the Firefox Profiler leaves it out of its call
 * trees). Frames carry a category: Python,
 * Native (C frames), GC (<GC>) or Other (other markers); a Python frame's
 * location is "qualname (file:first line)" with the sampled line in its
 * line column, a C frame's "symbol (in library)". With async-aware stacks,
 * each run of a thread's samples in one asyncio task is an interval marker
 * named after the task ("<task NAME>").
 *
 * docs/usage.md says what each tool shows of it (speedscope's importer shows
 * the main thread only, without markers' frames).
 *
 * Thread safety: reads the window; one thread at a time.
 */
#ifndef PYPROFD_PPROF_GECKO_H
#define PYPROFD_PPROF_GECKO_H

#include "base/compat.h"

#include "aggregate/agg.h"
#include "pprof/timeline.h"

struct gecko_meta {
    int64_t pid;
    const char *process_name; /* the command line ("" or NULL: "python") */
    const char *product;      /* meta.product: "pyprofd VERSION, CPython X.Y, MODE mode" */
    int64_t start_wall_ns;    /* CLOCK_REALTIME at the start */
    uint64_t start_mono_ns;   /* CLOCK_MONOTONIC at the same moment: the timeline's clock */
    uint64_t duration_ns;
    uint64_t interval_ns;
};

/**
 * Writes @a a in the order of @a tl to @a out. Returns 0, -EINVAL (no
 * timeline), -EIO or -ENOMEM (it allocates per-thread tables: output time,
 * not per sample).
 */
PYPROFD_WARN_UNUSED int gecko_write(const struct agg *a, const struct timeline *tl,
                                    const struct gecko_meta *m, FILE *out);

#endif /* PYPROFD_PPROF_GECKO_H */
