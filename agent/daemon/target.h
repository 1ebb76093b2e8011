/* SPDX-License-Identifier: MIT */
/*
 * target.h: one sampled process of the agent: its memory reader, unwinder,
 * asyncio walker and sampler, its current aggregation window, its place in
 * the fleet's schedule, its profile taps, and the checks that tell it went
 * stale (it ran another program, or every attempt fails).
 *
 *   target_start()  from a verdict "active" (daemon/targets.h): attaches
 *                   (reads and validates the debug table), takes a window
 *                   from the pool, starts the schedule at a spread phase;
 *   target_cut()    hands the window to the export thread with its metadata
 *                   (struct window_meta) and takes an empty one; a window
 *                   with no sample is recycled, not sent;
 *   target_sample() one attempt (or a skip) when the fleet says it is due;
 *   target_housekeep()  every housekeeping: counts snapshot, staleness
 *                   (once a second its program image's identity,
 *                   discovery/execid.h; after stuck_ns of attempts that all
 *                   failed, it must be attached again), the asyncio table
 *                   search, the window cut when due;
 *   target_relabel() its pod changed: new labels, the window cut between;
 *   target_finish() the last window, final counts; target_free().
 *
 * struct target is opaque: the loop and its neighbours see what it is
 * (target_info()) and what it did (target_stats()), and change it only
 * through these functions. What happens to its process entry (requeued,
 * attached again, forgotten) is the process table's (targets.h).
 *
 * A target is used by the sampling thread only; what other threads read
 * (its info's labels, its stats) is copied under the loop's lock.
 */
#ifndef PYPROFD_DAEMON_TARGET_H
#define PYPROFD_DAEMON_TARGET_H

#include "base/compat.h"

#include "aggregate/window.h"
#include "config/config.h"
#include "discovery/execid.h"
#include "discovery/proc_scan.h"
#include "pipeline.h"
#include "daemon/fleet.h"
#include "daemon/report.h"
#include "sampler/sampler.h"
#include "unwind/otel_thread.h"
#include "daemon/targets.h"

/* A target none of whose attempts succeeded for this long (and at least
 * TARGET_STUCK_MIN_ATTEMPTS of them) is attached again from scratch; each
 * further time in a row waits twice as long, up to TARGET_STUCK_MAX_NS. */
#define TARGET_STUCK_NS           10000000000ull
#define TARGET_STUCK_MAX_NS       600000000000ull
#define TARGET_STUCK_MIN_ATTEMPTS 20u
#define TARGET_EXEC_CHECK_NS      1000000000ull /* how often the program image is checked */
#define TARGET_EXEC_RETRIES       10u           /* reads of an image identity unknown at attach */

struct target; /* opaque: its fields are target.c's (target_internal.h) */

/**
 * What a target is: fixed at start, the labels and meta labels replaced
 * only by target_relabel(). Read-only outside target.c; valid while the
 * target lives.
 */
struct target_info {
    struct proc_key key;
    size_t job; /* index into the config's jobs */
    char job_name[64];
    enum profile_mode mode;
    double rate;
    uint64_t interval_ns; /* sampling */
    uint64_t window_ns;   /* profile interval */
    struct labels meta;   /* discovered labels, before relabeling */
    struct labels labels; /* after relabeling, external labels added */
};

/** What a target has done, as of its last housekeeping (or its end). */
struct target_stats {
    struct sampler_counts counts;
    uint64_t windows, windows_dropped;
    uint64_t stacks_dropped; /* at a window's caps, in windows cut so far */
    char async[320];         /* what /targets says about async ("" when not async-aware) */
    /* native: full: "full", or "markers: " and why perf events were refused;
     * "" when the job did not ask for it */
    char native[320];
    struct native_counts native_counts;
    /* how idle threads are found (sampler_idle_check()): "perf", "schedstat: why",
     * "off: why"; "" when not used (native: full, async-aware wall mode) */
    char idle_check[320];
    enum idle_check idle_how; /* ... as a value (sampler_idle_how()) */
    bool parked;              /* off the schedule until one of its threads runs (sampler_park()) */
    /* the trace context (docs/tracing.md): what /targets says ("" when the
     * job has it off), the reader's counts, samples over the span cap */
    char trace[320];
    struct otel_thread_stats trace_counts;
    uint64_t spans_over;
};

/** @a t's identity and configuration. */
const struct target_info *target_info(const struct target *t);
/** @a t's counts and windows as of its last housekeeping (copy under the loop's lock). */
const struct target_stats *target_stats(const struct target *t);
/** Whether the process was seen to exit (by a sample or a check): to be ended. */
bool target_gone(const struct target *t);
/**
 * What native: full came to for @a t (sampler_native()): NULL when its job
 * did not ask, "full", or "markers: " and why perf events were refused.
 */
const char *target_native(const struct target *t);
/** native: full asked for and refused: why (sampler_native_refused()); else NULL. */
const char *target_native_refused(const struct target *t);
/** With native: full active, the descriptor readable when kernel samples wait; else -1. */
int target_native_fd(const struct target *t);
/** With native: full active, the kernel samples every interval / @a factor of CPU time. */
void target_native_factor(struct target *t, double factor);
/**
 * Hangs a profile request's sink on @a t's sampler (sampler_add_tap()):
 * returns 0 or -EBUSY; target_remove_tap() takes it off by its arg.
 */
PYPROFD_WARN_UNUSED int target_add_tap(struct target *t, const struct sample_sink *tap);
void target_remove_tap(struct target *t, const void *arg);
/**
 * Parking (daemon/waiter.h owns it): whether @a t's threads stayed idle long
 * enough to leave the schedule; target_park() registers its wakers in
 * @a epfd with @a token (0, or a negative errno: it stays on the schedule);
 * target_catch_up() counts its attempts due by @a now as they would have
 * come out; target_unpark() does that and puts it back on its schedule.
 * On the sampling thread (sampler.h, "Parking").
 */
bool target_parkable(const struct target *t);
PYPROFD_WARN_UNUSED int target_park(struct target *t, int epfd, uint64_t token);
void target_unpark(struct target *t, uint64_t now, int epfd);
void target_catch_up(struct target *t, uint64_t now);
/** @a t's place in the fleet's schedule. */
struct fleet_slot *target_slot(struct target *t);
/** The target whose fleet slot is @a s (every slot in the loop's fleet is one). */
struct target *target_of_slot(struct fleet_slot *s);
/**
 * Processes @a t's waiting kernel samples (native: full; else a no-op) at
 * @a now, on the sampling thread: sets it gone when the process is.
 */
void target_native_drain(struct target *t, uint64_t now);
/** When @a t's next attempt is due (sampler_due()). */
uint64_t target_due(const struct target *t);
/**
 * How long the next spell of failing attempts of @a t's process may last
 * before it is attached again, when it is now attached again for @a why:
 * twice this one's after TARGET_FAILING (up to TARGET_STUCK_MAX_NS), else 0
 * (the default, TARGET_STUCK_NS).
 */
uint64_t target_next_stuck_ns(const struct target *t, enum target_reattach why);

/**
 * The attempt due at @a now, or, @a skip > 0, that one and the @a skip - 1
 * after it let pass on purpose (the CPU budget). A target seen gone only
 * lets its attempts pass. Sets the gone flag when the process exited.
 */
void target_sample(struct target *t, uint64_t now, uint64_t skip);

/**
 * Housekeeping for @a t at @a now / @a now_real: its counts snapshot, the
 * staleness checks (exit, exec(), stuck), the asyncio table search, and the cut
 * of its window when it is due. Returns TARGET_KEEP, TARGET_GONE (the
 * process exited), or TARGET_STALE with the reason in *@a why and words
 * for the log and /targets in @a what.
 */
enum target_check { TARGET_KEEP, TARGET_GONE, TARGET_STALE };
enum target_check target_housekeep(struct target *t, struct window_queue *q, const char *proc_root,
                                   uint64_t now, int64_t now_real, enum target_reattach *why,
                                   char *what, size_t whatlen);

/**
 * Ends @a t's sampling: its last window handed over as final at @a now /
 * @a now_real, its final counts in its stats. Free it with target_free()
 * after taking what is wanted from it.
 */
void target_finish(struct target *t, struct window_queue *q, uint64_t now, int64_t now_real);

/** What target_start() needs besides the verdict. All borrowed. */
struct target_env {
    const struct pyprofd_config *cfg;
    struct window_queue *queue; /* windows come from its pool and go to it */
    uint64_t phase_seq;         /* spreads phases: the n-th target started */
    /* the sampling thread's unwinder scratch, shared by its targets
     * (unwind/unwind.h); NULL: each unwinder has its own */
    struct unwind_scratch *scratch;
};

/**
 * Starts sampling the process of entry @a p as the verdict @a v says (takes
 * its memory reader, runtime and labels on success), at @a now (monotonic) /
 * @a now_real (the same instant on the wall clock). Returns 0 and the target
 * in *@a out; or a negative errno with the reason in p->reason (the verdict
 * keeps what it owns).
 */
PYPROFD_WARN_UNUSED int target_start(const struct target_env *env, struct proc_entry *p,
                                     struct verdict *v, uint64_t now, int64_t now_real,
                                     struct target **out);

/**
 * Hands @a t's window to the export queue (@a final: its last) covering
 * [win_start, @a now) and starts an empty one at @a now / @a now_real. With
 * no window to switch to (pool and queue full) the content is dropped and
 * counted, and sampling goes on into the same window. Returns 1 when a
 * window was dropped, else 0.
 */
int target_cut(struct target *t, struct window_queue *q, uint64_t now, int64_t now_real,
               bool final);

/**
 * Its pod changed: @a t carries on with discovered labels @a meta and, when
 * @a labels differ from its own, those labels, its window cut at @a now /
 * @a now_real (the samples before it keep the old labels). Takes both sets
 * (they are left empty). Returns whether the labels changed (a window cut).
 */
bool target_relabel(struct target *t, struct window_queue *q, struct labels *meta,
                    struct labels *labels, uint64_t now, int64_t now_real);

/**
 * When the OpenTelemetry process context of @a t appeared, changed or went
 * away since its labels were made (found by target_housekeep()): reads it
 * and fills @a meta (initialised here) with @a t's discovered labels, the
 * context's as they are now, and returns 1: relabel with it
 * (target_relabel()). 0: nothing changed (@a meta left empty); -ENOMEM.
 */
PYPROFD_WARN_UNUSED int target_context_meta(struct target *t, const char *proc_root,
                                            struct labels *meta);

/** Frees @a t; its window is recycled to @a q (cut it first to keep it). NULL is a no-op. */
void target_free(struct target *t, struct window_queue *q);

#endif /* PYPROFD_DAEMON_TARGET_H */
