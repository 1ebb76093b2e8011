/* SPDX-License-Identifier: MIT */
/*
 * loop.h: the agent's sampling thread. One thread samples every target of the
 * machine (or pod):
 *
 *   discovery   every refresh_interval it scans the proc root
 *               (discovery/proc_scan.h); a new process old enough
 *               (min_process_age) whose runtime is found (discovery/
 *               pyruntime.h) and supported gets its meta labels, which each
 *               job's relabel_configs see in turn: the first job that keeps it
 *               samples it. Processes that are not Python are remembered by
 *               (pid, start time) and looked at again only rarely; so are
 *               unsupported versions and unreadable processes, which /targets
 *               lists with the reason.
 *   scheduling  each target has its own fixed schedule (sampler/schedule.h)
 *               at its job's rate, started at a spread phase so targets are
 *               not sampled in bursts; a binary heap orders them by due time.
 *               The thread sleeps with an absolute-time wait until the next due
 *               attempt.
 *   budget      the thread's own CPU time is measured every second against
 *               limits.cpu_budget; when over, every target's effective rate is
 *               lowered by the same factor (a fair share) and the attempts let
 *               pass are counted as skipped; it recovers slowly when under.
 *   windows     each target's samples go to its current window (aggregate/
 *               agg.h); every profile_interval the window is swapped for an
 *               empty one and handed to the export thread through the window
 *               queue (aggregate/window.h). A target that exits has its partial
 *               window flushed the same way, and so has every target when the
 *               loop stops.
 *   requests    loop_profile() (the HTTP server's /debug/pprof/profile) hangs
 *               a tap window on every matching target for N seconds and
 *               returns the merged pprof, each sample labelled with its
 *               target's labels.
 *
 * Counting, never logging per sample: per target the sampler's counts (taken,
 * failed by reason, missed, skipped); per job the totals of targets that are
 * gone are kept, so counters never go down. The loop logs transitions only
 * (a target found, lost, or refused, with the reason).
 *
 * Thread safety: loop_new/loop_start/loop_stop/loop_free from one controlling
 * thread; loop_set_config, loop_profile, loop_targets_json, loop_metrics and
 * loop_ready from any thread, concurrently (they take the loop's lock; the
 * sampling itself runs outside it).
 */
#ifndef PYPROFD_SAMPLER_LOOP_H
#define PYPROFD_SAMPLER_LOOP_H

#include "base/compat.h"

#include <sys/types.h>

#include "aggregate/window.h"
#include "config/config.h"
#include "base/promtext.h"

struct loop;

/** Settings that are not in the config file. */
struct loop_opts {
    pid_t self_pid;             /* never sampled; 0: getpid() */
    struct window_queue *queue; /* borrowed: finished windows go there */
};

/**
 * Creates the loop for config @a cfg (takes ownership) and @a opts. Returns 0,
 * -EINVAL or -ENOMEM. Nothing runs until loop_start().
 */
PYPROFD_WARN_UNUSED int loop_new(struct pyprofd_config *cfg, const struct loop_opts *opts,
                                 struct loop **out);
/** Starts the sampling thread. Returns 0 or -errno. */
PYPROFD_WARN_UNUSED int loop_start(struct loop *l);
/**
 * Stops sampling: every target's window (partial) is pushed to the queue as
 * final, pending profile requests end with what they have, the thread is
 * joined. Idempotent.
 */
void loop_stop(struct loop *l);
/** Stops if needed and frees everything; NULL is a no-op. */
void loop_free(struct loop *l);

/**
 * Replaces the configuration (takes ownership of @a cfg). Applied by the
 * sampling thread within ~100 ms: every target's window is flushed, targets
 * are matched against the new jobs from scratch, and a scan runs at once.
 * Windows already collected are never lost. Returns 0.
 */
int loop_set_config(struct loop *l, struct pyprofd_config *cfg);

/**
 * Collects a profile of the next @a seconds seconds of every target (@a pid
 * 0) or of target @a pid, merged into one gzipped pprof (caller owns *@a out;
 * alloc_free). Blocks the calling thread. @a cancelled (may be NULL) is
 * polled every 100 ms; when it says so the request ends early with -ECANCELED.
 * Returns 0, -ENOENT when @a pid is not a current target, -EBUSY when too many
 * requests run at once, -ECANCELED, -E2BIG, -ENOMEM; @a err says why.
 */
PYPROFD_WARN_UNUSED int loop_profile(struct loop *l, uint32_t seconds, pid_t pid,
                                     bool (*cancelled)(const void *arg), const void *cancel_arg,
                                     uint8_t **out, size_t *out_len, char *err, size_t errlen);

/** The /targets JSON document (caller owns *@a out; alloc_free). Returns 0 or -ENOMEM. */
PYPROFD_WARN_UNUSED int loop_targets_json(struct loop *l, char **out, size_t *out_len);
/** Writes the loop's metric families (pyprofd_targets, pyprofd_samples_*, ...) into @a w. */
PYPROFD_WARN_UNUSED int loop_metrics(struct loop *l, struct promtext *w);
/**
 * The limits of one aggregation window for a per-target memory cap of
 * @a target_bytes (limits.target_memory_bytes): the defaults scaled so that a
 * target's windows in flight fit, never below small sane minimums.
 */
struct agg_limits loop_window_limits(uint64_t target_bytes);

/** True once the first discovery scan has completed. */
bool loop_ready(struct loop *l);

#endif /* PYPROFD_SAMPLER_LOOP_H */
