/* SPDX-License-Identifier: MIT */
/*
 * pipeline.h: the types that cross stages, in data-flow order. Each stage
 * includes this instead of the header of the stage that produces the value,
 * so a later stage never compiles against an earlier stage's internals (an
 * exporter never sees CPython's ABI tables, the aggregation never sees the
 * unwinder):
 *
 *   discovery -> unwind -> sampler -> aggregate -> pprof -> exporters
 *
 *   enum profile_mode   what a sample stands for; chosen by the config or
 *                       the command line, obeyed by the sampler, named in
 *                       pprof's sample type and in push series names;
 *   struct window_meta  what goes with one finished window of one target
 *                       from the sampling thread to the encoder and every
 *                       output.
 *
 * Header only; no state. See docs/architecture.md.
 */
#ifndef PYPROFD_PIPELINE_H
#define PYPROFD_PIPELINE_H

#include "base/compat.h"

#include "base/labels.h"

/** What a sample stands for (docs/usage.md, "Modes"). */
enum profile_mode {
    PROFILE_WALL,      /* every sampled thread, whatever it does */
    PROFILE_CPU,       /* threads the kernel has on a CPU */
    PROFILE_GIL,       /* threads holding the GIL */
    PROFILE_EXCEPTION, /* threads handling an exception */
    PROFILE_MODES      /* how many */
};

/** "wall", "cpu", "gil", "exception" (the config's and pprof's names), or "?". */
static inline const char *profile_mode_name(enum profile_mode m)
{
    switch (m) {
    case PROFILE_WALL:
        return "wall";
    case PROFILE_CPU:
        return "cpu";
    case PROFILE_GIL:
        return "gil";
    case PROFILE_EXCEPTION:
        return "exception";
    case PROFILE_MODES:
    default:
        return "?";
    }
}

/** Parses a mode's name. Returns 0, or -EINVAL for anything else. */
static inline int profile_mode_parse(const char *name, enum profile_mode *out)
{
    for (int m = 0; m < PROFILE_MODES; m++) {
        if (strcmp(name, profile_mode_name((enum profile_mode)m)) == 0) {
            *out = (enum profile_mode)m;
            return 0;
        }
    }
    return -EINVAL;
}

/** One finished window of one target: who, what kind, which time span. */
struct window_meta {
    struct labels labels; /* the target's labels after relabeling, external labels added */
    char job[64];         /* job_name */
    int pid;
    enum profile_mode mode;
    int64_t period_ns;      /* time one sample stands for */
    int64_t time_nanos;     /* window start, ns since the epoch */
    int64_t duration_nanos; /* how long it covers; windows of a target tile time */
    bool final;             /* the target's last window (it exited, or the agent stops) */
};

#endif /* PYPROFD_PIPELINE_H */
