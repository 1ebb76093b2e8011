/* SPDX-License-Identifier: MIT */
/*
 * loop.h: stage 5, the daemon: the agent's sampling thread. One thread
 * samples every target of the
 * machine (or pod); this module keeps the thread, the lock and the order of
 * the work, and hands each part to the module that knows it:
 *
 *   discovery   every refresh_interval the proc root is scanned
 *               (discovery/proc_scan.h) and each new or due process judged
 *               (daemon/targets.h: the process table and its verdicts);
 *   targets     a verdict "active" starts a target (daemon/target.h: its
 *               unwinder, sampler, window); an exited, re-exec'd or stuck
 *               one is ended, its partial window flushed;
 *   scheduling  every target's next attempt waits in the fleet's timing
 *               wheel (daemon/fleet.h), which also applies
 *               limits.cpu_budget; the thread sleeps to the next tick
 *               boundary with an attempt due (global.sampling_tick, shorter
 *               for a target whose interval is under two ticks) and makes
 *               every attempt due by then in one pass, each target once. It
 *               sleeps with a timer slack of one tick;
 *   windows     every profile_interval each target's window goes to the
 *               export thread through the window queue (aggregate/window.h);
 *   requests    loop_profile() (the HTTP server's /debug/pprof/profile)
 *               hangs taps on the targets (daemon/taps.h) and returns the
 *               parts, which the caller encodes;
 *   views       loop_snapshot() copies what /targets and /metrics show;
 *               rendering them is the HTTP side's (exporters/pull/).
 *
 * Housekeeping (every LOOP_TICK_NS, under the lock): apply a reloaded
 * config, relabel the targets whose pod changed (in place: a window is cut
 * only when the job's labels change; docs/discovery.md), scan when due, end
 * stale targets, cut windows, start and end requests, snapshot counts,
 * adjust the budget. Sampling runs outside the lock. Counting, never logging
 * per sample; the loop logs transitions only.
 *
 * Time comes from the struct clock in loop_opts (base/clock.h) and the
 * outside world from struct probe_ops and struct pod_source
 * (daemon/targets.h): a test drives the loop with loop_step() on a fake
 * clock instead of starting the thread.
 *
 * Thread safety: loop_new/loop_start/loop_stop/loop_free/loop_step from one
 * controlling thread; loop_set_config, loop_profile, loop_snapshot and
 * loop_ready from any thread, concurrently (they take the loop's lock).
 */
#ifndef PYPROFD_DAEMON_LOOP_H
#define PYPROFD_DAEMON_LOOP_H

#include "base/compat.h"

#include <sys/types.h>

#include "aggregate/window.h"
#include "base/clock.h"
#include "config/config.h"
#include "daemon/podmeta.h"
#include "daemon/report.h"
#include "daemon/taps.h"
#include "base/promtext.h"
#include "discovery/proc_watch.h"
#include "discovery/otel_process.h"

#define LOOP_TICK_NS 100000000ull /* housekeeping period */

struct loop;
struct probe_ops;  /* daemon/targets.h */
struct pod_source; /* daemon/targets.h */

/** Settings that are not in the config file. */
struct loop_opts {
    pid_t self_pid;                /* never sampled; 0: getpid() */
    struct window_queue *queue;    /* borrowed: finished windows go there */
    const struct clock *clock;     /* borrowed; NULL: clock_system */
    const struct probe_ops *probe; /* borrowed; NULL: probe_system */
    /* borrowed; NULL: the config's discovery.kubernetes (tests give their own) */
    const struct pod_source *pods;
};

/** How many targets @a cfg lets a loop sample at once (limits.max_targets, capped). */
size_t loop_max_targets(const struct pyprofd_config *cfg);
/**
 * How many aggregation windows the loop's targets under @a cfg may hold at
 * once: each its current one and one waiting in the export queue, and some
 * slack. The size of the window pool and queue (aggregate/window.h).
 */
size_t loop_window_slots(const struct pyprofd_config *cfg);

/**
 * Creates the loop for config @a cfg (takes ownership) and @a opts. Returns 0,
 * -EINVAL or -ENOMEM (@a cfg stays the caller's then). Nothing runs until
 * loop_start() or loop_step().
 */
PYPROFD_WARN_UNUSED int loop_new(struct pyprofd_config *cfg, const struct loop_opts *opts,
                                 struct loop **out);
/** Starts the sampling thread. Returns 0 or -errno. */
PYPROFD_WARN_UNUSED int loop_start(struct loop *l);
/**
 * Stops sampling: every target's window (partial) is pushed to the queue as
 * final, pending profile requests end with what they have, the thread is
 * joined. Idempotent; also ends the targets of a loop driven by loop_step().
 */
void loop_stop(struct loop *l);
/**
 * loop_stop(), waiting for the sampling thread only until @a deadline_ns
 * (CLOCK_MONOTONIC). Returns 0, or -ETIMEDOUT when the thread is still busy
 * then: nothing is flushed, and the loop is abandoned (loop_free() frees
 * nothing: the caller is expected to exit).
 */
int loop_stop_by(struct loop *l, uint64_t deadline_ns);
/** Stops if needed and frees everything (not an abandoned loop); NULL is a no-op. */
void loop_free(struct loop *l);

/**
 * One pass of the thread's work at the loop clock's current time, on the
 * calling thread: housekeeping if due (or @a force), then the attempts due.
 * For tests and tools that drive the loop without its thread; never while
 * loop_start()'s thread runs.
 */
void loop_step(struct loop *l, bool force);

/**
 * When the sampling thread would wake next (ns on the loop's clock): the next
 * tick boundary with an attempt due, or housekeeping, whichever is first. For
 * tests and tools that drive the loop with loop_step() the way the thread
 * does; never while loop_start()'s thread runs.
 */
uint64_t loop_next_wake(struct loop *l);

/**
 * Replaces the configuration (takes ownership of @a cfg), applied by the
 * sampling thread within LOOP_TICK_NS: every target's window is flushed,
 * targets are matched against the new jobs from scratch, and a scan runs at
 * once. Windows already collected are never lost.
 */
void loop_set_config(struct loop *l, struct pyprofd_config *cfg);

/** A finished profile request's result: the caller encodes it, then releases it. */
struct loop_capture {
    struct tap_part *parts; /* one per target it covered (owned) */
    size_t nparts;
    int64_t start_real;   /* when it began, ns since the epoch */
    uint64_t duration_ns; /* how long it ran */
    uint64_t max_bytes;   /* limits.max_profile_bytes when it began */
};
void loop_capture_release(struct loop_capture *c);

/**
 * Collects the next @a seconds seconds of every target (@a pid 0) or of
 * target @a pid. Blocks the calling thread; @a cancelled (may be NULL) is
 * polled every 100 ms and ends the request early with -ECANCELED. Returns 0
 * and the parts in @a out, -ENOENT when @a pid is not a current target,
 * -EBUSY when too many requests run at once, -ECANCELED, -ENOMEM; @a err says
 * why.
 */
PYPROFD_WARN_UNUSED int loop_profile(struct loop *l, uint32_t seconds, pid_t pid,
                                     bool (*cancelled)(const void *arg), const void *cancel_arg,
                                     struct loop_capture *out, char *err, size_t errlen);

/** Counts of one job: targets that are gone and those still sampled. */
struct loop_job_view {
    char name[64];
    struct sampler_counts counts;
    uint64_t windows, windows_dropped, stacks_dropped;
    /* the trace context (docs/tracing.md): thread reads in a span, changing
     * while read, unreadable; samples past the windows' span cap */
    uint64_t trace_spans, trace_torn, trace_faults, spans_over;
    uint64_t reattached[TARGET_REATTACH_REASONS];
    struct native_counts native; /* native: full jobs */
    uint64_t targets;            /* sampled now */
    /* targets sampled now by how their idle threads are found (idle_check):
     * [IDLE_CHECK_OFF] also counts those that do not look (native: full, ...) */
    uint64_t idle_check[IDLE_CHECK_HOWS];
};

/** Looks at new processes between full scans (daemon/loop_watch.c). */
struct loop_watch_counts {
    uint64_t looks;              /* processes read by a look */
    uint64_t exited_before_look; /* gone before their look */
    uint64_t again;              /* looked at again (not Python yet, young) */
};

/** One process as /targets lists it. */
struct loop_proc_view {
    int pid;
    enum proc_state state;
    char comm[32];
    char container_id[65]; /* "" when none */
    int nspid;             /* the PID inside its own PID namespace */
    char version[32];
    bool free_threaded;
    char reason[320];
    uint32_t reattaches;
    char reattach_why[160];
    bool target; /* the fields below are set */
    char job[64];
    enum profile_mode mode;
    double rate, effective_rate, interval_s;
    char async[320];
    char native[320]; /* native: full: "full" or "markers: why"; "" otherwise */
    struct native_counts native_counts;
    char idle_check[320]; /* "perf", "schedstat: why", "off: why"; "" when not looked for */
    bool parked;          /* off the schedule until one of its threads runs */
    char trace[320];      /* the trace context: how it is read, or why not ("": job has it off) */
    /* ... its reads: threads, in a span, torn, unreadable (unwind/otel_thread.h's
     * counts, copied: the views do not reach the unwinder's headers) */
    uint64_t trace_threads, trace_spans, trace_torn, trace_faults;
    struct sampler_counts counts;
    uint64_t windows, windows_dropped, stacks_dropped;
    struct labels labels, meta; /* owned by the view */
};

/** What /targets and /metrics show, copied under the loop's lock. */
struct loop_view {
    struct loop_proc_view *procs; /* listed processes only (proc_state_listed()) */
    size_t nprocs;
    struct loop_job_view *jobs;
    size_t njobs;
    uint64_t by_state[PROC_STATES]; /* every process the loop remembers */
    double factor;                  /* the budget's share of the configured rates */
    bool show_sensitive_labels;     /* server.show_sensitive_labels */
    struct podmeta_view pods;       /* discovery.kubernetes */
    uint64_t scans, scan_errors;
    struct loop_watch_counts watch;          /* looks between scans */
    struct proc_watch_stats watch_stats;     /* the watch's own (source OFF: none) */
    const struct promtext_hist *start_delay; /* the loop's: lives as long as it */
    /* process contexts read, by outcome (daemon/targets.h) */
    uint64_t context_reads[OTEL_PROCESS_FAILS];
};

/** A copy of the loop's state (caller frees it with loop_view_free()). Returns 0 or -ENOMEM. */
PYPROFD_WARN_UNUSED int loop_snapshot(struct loop *l, struct loop_view **out);
/** NULL is a no-op. */
void loop_view_free(struct loop_view *v);

/** True once the first discovery scan has completed. */
bool loop_ready(struct loop *l);

#endif /* PYPROFD_DAEMON_LOOP_H */
