/* SPDX-License-Identifier: MIT */
/*
 * window.h: the hand-off between the sampling thread and the export thread.
 * When a target's profile interval ends (or the target exits, or the agent
 * stops) the sampling thread wraps the finished aggregation window in a
 * struct window_item and pushes it; the export thread pops it, encodes it to
 * pprof and gives it to the outputs, then hands the window back to the pool.
 * This is the only place the two threads share data (a mutex-guarded queue).
 *
 * Both the queue and the pool are bounded: window_push() on a full queue
 * refuses (the caller counts the loss and keeps sampling into the window it
 * has); at most pool_cap windows exist at once (free, held by a target, or
 * queued), so the memory of all windows is bounded by pool_cap x the window
 * limits. That bound is a cap, not what is resident: a window holds memory
 * in proportion to what was counted in it (aggregate/agg.h), and the pool
 * keeps only WINDOW_POOL_SPARE free windows, as small as they started: a
 * window coming back beyond that, or one that grew, is freed. So the windows
 * in memory are those in use, the ones being sampled into and the ones
 * waiting for or in the export thread, plus a few spares.
 *
 * Thread safety: every function may be called from any thread.
 */
#ifndef PYPROFD_AGGREGATE_WINDOW_H
#define PYPROFD_AGGREGATE_WINDOW_H

#include "base/compat.h"

#include "aggregate/agg.h"
#include "pipeline.h"

#define WINDOW_PER_TARGET 2u /* windows a target holds at once: current + in flight */
#define WINDOW_POOL_SPARE 8u /* free windows the pool keeps for window_get() */

/** A finished window and what the encoder and the outputs need to know about it. */
struct window_item {
    struct agg *agg;         /* owned by the item; back to the pool with window_recycle() */
    struct window_meta meta; /* its labels are owned by the item too */
};

struct window_queue;

/**
 * Creates a queue of at most @a queue_cap items and a pool of at most
 * @a pool_cap windows made with @a limits (copied). Returns 0 or -ENOMEM/-EINVAL.
 */
PYPROFD_WARN_UNUSED int window_queue_new(size_t queue_cap, size_t pool_cap,
                                         const struct agg_limits *limits,
                                         struct window_queue **out);
/** Frees the queue, the items still in it and the pool; NULL is a no-op. */
void window_queue_free(struct window_queue *q);

/**
 * An empty window from the pool, or a new one while fewer than pool_cap exist.
 * Returns 0, -EAGAIN when all pool_cap windows are in use, -ENOMEM.
 */
PYPROFD_WARN_UNUSED int window_get(struct window_queue *q, struct agg **out);
/**
 * Gives a window back: it is reset and kept for window_get() when it never
 * grew and fewer than WINDOW_POOL_SPARE are free, else freed. NULL is a no-op.
 */
void window_recycle(struct window_queue *q, struct agg *a);
/** Windows that exist now (free, held or queued), and of them the free ones. */
void window_counts(struct window_queue *q, size_t *live, size_t *free_windows);

/**
 * Queues @a item (moved: on success the queue owns its window and labels and
 * @a item is zeroed). Returns 0, -ENOSPC when the queue is full, or -EPIPE after
 * window_close() (the item is left with the caller either way).
 */
PYPROFD_WARN_UNUSED int window_push(struct window_queue *q, struct window_item *item);
/**
 * Takes the oldest item into @a out (the caller owns it: recycle its window,
 * release its labels). Waits until @a deadline_ns (CLOCK_MONOTONIC) for one.
 * Returns 0, -ETIMEDOUT, or -EPIPE when the queue is closed and empty.
 */
PYPROFD_WARN_UNUSED int window_pop(struct window_queue *q, uint64_t deadline_ns,
                                   struct window_item *out);
/**
 * Lets the pool hold up to @a pool_cap windows and the queue as many items
 * (never shrinks; queued items keep their order). Returns 0 or -ENOMEM.
 */
PYPROFD_WARN_UNUSED int window_grow_pool(struct window_queue *q, size_t pool_cap);
/** After this, pushes fail and pops return what is left, then -EPIPE. */
void window_close(struct window_queue *q);
/** Items waiting. */
size_t window_pending(struct window_queue *q);
/** Frees an item's window (to the pool) and labels. */
void window_item_release(struct window_queue *q, struct window_item *item);

/**
 * The limits of one window for a per-target memory cap of @a target_bytes
 * (limits.target_memory_bytes): the defaults scaled so that the windows a
 * target has at once (WINDOW_PER_TARGET: the current one and one in flight)
 * fit, never below small sane minimums.
 */
struct agg_limits window_limits_for(uint64_t target_bytes);

/**
 * From now on, windows are made with @a limits (a reload changed
 * limits.target_memory_bytes): a pooled window made with others is freed
 * instead of being handed out or taken back, and replaced by a new one.
 * Windows in use keep theirs until they come back.
 */
void window_queue_set_limits(struct window_queue *q, const struct agg_limits *limits);

#endif /* PYPROFD_AGGREGATE_WINDOW_H */
