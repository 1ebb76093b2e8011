/* SPDX-License-Identifier: MIT */
/*
 * loop_internal.h: the sampling loop's state, shared by its parts: loop.c
 * (the thread, housekeeping, targets' lifecycle), loop_requests.c (profile
 * requests) and loop_view.c (the snapshot for /targets and /metrics). Not
 * for anyone else: use loop.h.
 */
#ifndef PYPROFD_DAEMON_LOOP_INTERNAL_H
#define PYPROFD_DAEMON_LOOP_INTERNAL_H

#include "base/compat.h"

#include <pthread.h>

#include "base/promtext.h"
#include "daemon/fleet.h"
#include "daemon/loop.h"
#include "daemon/podmeta.h"
#include "daemon/target.h"
#include "daemon/targets.h"
#include "daemon/waiter.h"
#include "discovery/proc_watch.h"

#define LOOP_MAX_JOBS_STATS 1024u
#define LOOP_TARGETS_CAP    100000u /* the most max_targets can mean */

struct loop {
    pthread_mutex_t mu;
    pthread_cond_t wake; /* the sampling thread sleeps on it */
    pthread_t thread;
    /* the per-sample buffers of every target's unwinder: the targets are
     * sampled one at a time by this loop's thread; freed after them */
    struct unwind_scratch *scratch;
    bool running, stop, stopped, ready, kick;
    struct pyprofd_config *cfg;
    struct pyprofd_config *pending_cfg;
    struct loop_opts opts;
    struct proc_scan *scan;
    struct proc_table *procs;
    struct fleet *fleet;
    struct target **targets;
    size_t ntargets, cap_targets, max_targets;
    struct tap_request *requests;
    size_t nrequests;
    struct podmeta *pods;       /* discovery.kubernetes; NULL: never enabled */
    uint64_t pods_gen;          /* the pod source's generation the table was last checked at */
    struct loop_job_view *jobs; /* totals of targets that are gone, by job name */
    size_t njobs;
    uint64_t next_scan, next_tick, scans, scan_errors, phase_seq;
    /* the two clocks read together at the start of housekeeping: a window's
     * wall-clock start is its monotonic start on this pair, so windows tile */
    uint64_t hk_mono;
    int64_t hk_real;
    /* what wakes the sampling thread besides the schedule: kernel samples
     * (native: full) and parked targets' wakers, and the parked table */
    struct waiter *waiter;
    bool abandoned; /* loop_stop_by() gave up on the sampling thread: free nothing */
    /* new processes between scans (loop_watch.c) */
    struct proc_watch *watch;     /* discovery.watch; NULL: none */
    struct proc_watch *watch_old; /* replaced by a reload: freed outside the lock */
    uint64_t watch_due;           /* the earliest look the watch has queued */
    bool looking, look_exec;      /* a look between scans is reading (the scan's filter) */
    enum proc_state look_known;   /* the state of the entry the filter kept from a look */
    struct loop_watch_counts watch_counts;
    struct promtext_hist start_delay; /* process start -> its first attempt, seconds */
};

static inline uint64_t loop_now(const struct loop *l)
{
    return clock_mono(l->opts.clock);
}

static inline int64_t loop_real_at(const struct loop *l, uint64_t mono)
{
    return l->hk_real + ((int64_t)mono - (int64_t)l->hk_mono);
}

/*
 * Judges the process @info a scan or a look reported and starts its target if
 * it is one. Returns the process's state (PROC_NEW when it is gone or the
 * table had no room).
 */
enum proc_state loop_consider(struct loop *l, const struct proc_info *info, uint64_t now);

/* ---- loop_watch.c: looks at new processes between full scans ---- */

/* (Re)starts the watch discovery.watch of @cfg asks for, when it or the proc
 * root changed from @old (NULL: at the start). Under the lock. */
void loop_watch_configure(struct loop *l, const struct pyprofd_config *cfg,
                          const struct pyprofd_config *old);
/* Frees a watch a reload replaced; NOT under the lock (its thread may wait for it). */
void loop_watch_reap(struct loop *l);
/* Looks at the processes whose look is due by @now (under the lock). */
void loop_watch_look(struct loop *l, uint64_t now);
/* The scan's filter during a look: whether to read and judge @p again (@comm and
 * @start_stack: its stat's now). */
bool loop_watch_filter(struct loop *l, struct proc_entry *p, const char *comm,
                       uint64_t start_stack);
/* A target was started for @info: its start delay is counted. */
void loop_watch_started(struct loop *l, struct target *t, const struct proc_info *info);

/* The job totals entry named @name in @v (@n of them), made if missing; NULL when full. */
struct loop_job_view *loop_job(struct loop_job_view *v, size_t *n, const char *name);
/* Adds a target's counts and windows (@t: target_stats()) to @j. */
void loop_job_add(struct loop_job_view *j, const struct target_stats *t);
/* Starts, attaches and ends requests as their time comes (housekeeping, under the lock). */
void loop_requests_tick(struct loop *l, uint64_t now);
/* Marks @r done and wakes the thread waiting for it. */
void loop_request_done(struct tap_request *r);

#endif /* PYPROFD_DAEMON_LOOP_INTERNAL_H */
