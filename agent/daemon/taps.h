/* SPDX-License-Identifier: MIT */
/*
 * taps.h: on-demand profiles (the HTTP server's /debug/pprof/profile). A
 * request hangs a tap, an extra aggregation window, on every target it wants
 * (every target, or the one with its PID) for its seconds, including targets
 * found while it runs; each tap is one part of the result, kept with its
 * target's labels, mode and period. A tap is one more sink of the target's
 * sampler (sampler.h); the part remembers the target it hangs on while it
 * does, so taps are tracked here alone. The caller turns the parts into one
 * profile (the encoder is not the sampler's business).
 *
 * The loop runs these on its sampling thread under its lock; the thread that
 * asked waits on the loop (loop_profile()) and then owns the parts
 * (tap_parts_release()). At most SAMPLER_MAX_TAPS requests run at once
 * (the HTTP server admits server.max_concurrent_profiles of them, 64 at most).
 *
 * Thread safety: none of its own; the loop's lock.
 */
#ifndef PYPROFD_DAEMON_TAPS_H
#define PYPROFD_DAEMON_TAPS_H

#include "base/compat.h"

#include <sys/types.h>

#include "aggregate/agg.h"
#include "base/labels.h"
#include "pipeline.h"

struct target;

/** One target's share of a request's profile. */
struct tap_part {
    struct agg *agg;      /* owned */
    struct labels labels; /* the target's labels (owned) */
    enum profile_mode mode;
    int64_t period_ns;
    pid_t pid;         /* the target's, as the agent sees it */
    struct target *on; /* the target it hangs on (borrowed); NULL once taken off */
};

/** A profile request. The asking thread creates it; the loop drives it. */
struct tap_request {
    pid_t pid;          /* 0: every target */
    uint64_t seconds;   /* how long to collect */
    uint64_t max_bytes; /* limits.max_profile_bytes when it started */
    uint64_t deadline;  /* monotonic; set when started */
    bool started, done, cancelled;
    int err; /* when done: 0 or why there is no profile */
    char errmsg[160];
    struct agg_limits limits; /* each tap's */
    struct tap_part *parts;
    size_t nparts, cap;
    void *waiter;             /* the loop's: what the asking thread waits on */
    struct tap_request *next; /* the loop's list */
};

/** Whether @a r, running, wants target @a t. */
bool taps_wants(const struct tap_request *r, const struct target *t);

/**
 * Starts @a r at @a now: room for @a max_parts parts (the most targets there
 * can be), taps made with @a limits. Returns 0, or -ENOMEM (r->err and
 * errmsg set, r done).
 */
PYPROFD_WARN_UNUSED int taps_begin(struct tap_request *r, uint64_t now, size_t max_parts,
                                   const struct agg_limits *limits, uint64_t max_bytes);

/** Hangs a tap of @a r on @a t (a full target or request is left out). */
void taps_attach(struct tap_request *r, struct target *t);

/**
 * Takes every tap of the requests in list @a r (linked by next) off @a t
 * (the target ends; the parts keep what they have).
 */
void taps_detach_target(struct tap_request *r, struct target *t);

/** Ends @a r: takes its taps off their targets and marks it done. */
void taps_finish(struct tap_request *r);

/** Frees @a r's parts (the taps must be off every target). */
void taps_release(struct tap_request *r);

#endif /* PYPROFD_DAEMON_TAPS_H */
