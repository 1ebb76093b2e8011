/* SPDX-License-Identifier: MIT */
/*
 * target.h: one sampled process of the agent: its memory reader, unwinder,
 * asyncio walker and sampler, its current aggregation window, its place in
 * the fleet's schedule, its profile taps, and the checks that tell it went
 * stale (it ran another program, or every attempt fails).
 *
 *   target_start()  from a verdict "active" (sampler/targets.h): attaches
 *                   (reads and validates the debug table), takes a window
 *                   from the pool, starts the schedule at a spread phase;
 *   target_cut()    hands the window to the export thread with its metadata
 *                   (struct window_meta) and takes an empty one; a window
 *                   with no sample is recycled, not sent;
 *   target_stale()  once a second reads its program image's identity
 *                   (discovery/execid.h); and after t->stuck_ns of attempts
 *                   that all failed, says it must be attached again;
 *   target_free()   the partial window must have been cut first.
 *
 * A target is used by the sampling thread only; the fields other threads
 * read (snap, labels, async_snap, windows) are copied under the loop's lock.
 */
#ifndef PYPROFD_SAMPLER_TARGET_H
#define PYPROFD_SAMPLER_TARGET_H

#include "base/compat.h"

#include "aggregate/window.h"
#include "config/config.h"
#include "discovery/execid.h"
#include "discovery/proc_scan.h"
#include "pipeline.h"
#include "sampler/fleet.h"
#include "sampler/report.h"
#include "sampler/sampler.h"
#include "sampler/targets.h"

/* A target none of whose attempts succeeded for this long (and at least
 * TARGET_STUCK_MIN_ATTEMPTS of them) is attached again from scratch; each
 * further time in a row waits twice as long, up to TARGET_STUCK_MAX_NS. */
#define TARGET_STUCK_NS           10000000000ull
#define TARGET_STUCK_MAX_NS       600000000000ull
#define TARGET_STUCK_MIN_ATTEMPTS 20u
#define TARGET_EXEC_CHECK_NS      1000000000ull /* how often the program image is checked */
#define TARGET_EXEC_RETRIES       10u           /* reads of an image identity unknown at attach */

/** One sampled process. Owned by the loop; fields are the loop's to read. */
struct target {
    struct proc_key key;
    size_t job; /* index into the config's jobs */
    char job_name[64];
    char version[32];
    struct labels meta;   /* discovered labels, before relabeling */
    struct labels labels; /* after relabeling, external labels added */
    enum profile_mode mode;
    double rate;
    uint64_t interval_ns; /* sampling */
    uint64_t window_ns;   /* profile interval */
    struct memread *mr;
    struct pyruntime *rt;
    struct unwinder *u;
    struct asyncio *aio;  /* async_aware jobs on CPython 3.14+ */
    char async_note[300]; /* async_aware but unavailable: why (/targets) */
    char async_snap[320]; /* what /targets says about async, as of housekeeping */
    bool async_all;       /* async_mode all was asked for */
    /* the asyncio table search (target_async_search): files looked at, next time due */
    struct pyruntime_asyncio_memo aio_memo;
    uint64_t aio_search_at;
    struct sampler *s;
    struct fleet_slot slot;
    struct agg *win;
    uint64_t win_start;     /* monotonic */
    int64_t win_start_real; /* wall clock of the same instant */
    bool gone;              /* the sampler saw the process exit */
    struct sampler_counts snap;
    uint64_t windows, windows_dropped;
    uint64_t stacks_dropped; /* at a window's caps, in windows cut so far */
    /* is it still the program it was? */
    struct exec_id exec;
    uint64_t exec_checked;
    unsigned exec_retries;
    /* every attempt failing since (0: the last one taken), the counts then */
    uint64_t failing_since, failing_attempts, seen_taken;
    uint64_t stuck_ns;
    const char *removed_why; /* set when ended on purpose: for the log line */
};

/** The target whose fleet slot is @a s (every slot in the loop's fleet is one). */
static inline struct target *target_of_slot(struct fleet_slot *s)
{
    return (struct target *)(void *)((char *)s - offsetof(struct target, slot));
}

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
 * Whether @a t must be attached again, and why (*@a why); uses t->snap.
 * Sets t->gone when the process is found gone. @a proc_root is where its
 * /proc files are.
 */
bool target_stale(struct target *t, const char *proc_root, uint64_t now, enum target_reattach *why);

/**
 * An async-aware target whose asyncio table has not been found: looks for it
 * (discovery's work, done in housekeeping, never in a sampling attempt) at
 * most every ASYNCIO_RESCAN_NS, and hands it to the walker.
 */
void target_async_search(struct target *t, const char *proc_root, uint64_t now);

/** The /targets "async" words of @a t, in @a buf (or a static string). */
const char *target_async_words(const struct target *t, char *buf, size_t len);

/** Frees @a t; its window is recycled to @a q (cut it first to keep it). NULL is a no-op. */
void target_free(struct target *t, struct window_queue *q);

#endif /* PYPROFD_SAMPLER_TARGET_H */
