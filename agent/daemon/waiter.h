/* SPDX-License-Identifier: MIT */
/*
 * waiter.h: what the agent waits for besides its schedule, with one owner.
 * Two kinds of target wake the sampling thread out of turn:
 *
 *   native: full  the kernel samples each thread every period of its CPU
 *                 time, and each sample must be drained within about a
 *                 millisecond (later, it is counted late, not kept);
 *   parked        a target whose threads stayed idle (the sampler says when:
 *                 target_parkable()) leaves the fleet's wheel, and no
 *                 attempt is made for it until one of its threads runs, when
 *                 its waker fires (sampler/runwatch.h); the attempts due
 *                 meanwhile are counted as they would have come out.
 *
 * The sampling thread sleeps on the loop's condition variable, so a helper
 * thread waits on all of their descriptors at once (one epoll set) and
 * posts what it heard under the loop's lock; it never touches a target.
 * After posting it waits until the sampling thread has taken and handled it
 * (waiter_step()), so a level-triggered descriptor that stays readable
 * until drained cannot make it spin while the sampling thread is busy. The
 * helper starts with the first target that needs it and stops with the
 * waiter. The parked table (which targets, by a token carrying an index and
 * a generation, so a stale token is ignored) is the waiter's alone.
 *
 * Locking: the helper posts under @a mu (the loop's lock) and signals
 * @a wake; waiter_pending() is read under @a mu; waiter_step() takes @a mu
 * itself; every other call is the sampling thread's, with or without @a mu
 * held, never concurrently with waiter_step().
 *
 * Errors: negative errno. Memory: the parked table grows by doubling (one
 * entry per parked target; a failed growth leaves the target on its
 * schedule).
 */
#ifndef PYPROFD_DAEMON_WAITER_H
#define PYPROFD_DAEMON_WAITER_H

#include "base/compat.h"

#include <pthread.h>

#include "base/clock.h"
#include "daemon/fleet.h"
#include "daemon/target.h"

struct waiter;

/**
 * A waiter that posts under @a mu and signals @a wake (both borrowed: the
 * loop's), and puts unparked targets back on @a fleet (borrowed). No thread
 * is started yet. Returns 0, or -ENOMEM.
 */
PYPROFD_WARN_UNUSED int waiter_new(pthread_mutex_t *mu, pthread_cond_t *wake, struct fleet *fleet,
                                   struct waiter **out);
/** Stops the helper thread, if it runs (idempotent; not with @a mu held). */
void waiter_stop(struct waiter *w);
/** Stops and frees; NULL is a no-op. Parked targets must have been removed. */
void waiter_free(struct waiter *w);

/** A new target: when native: full is active for it, its kernel samples now wake. */
void waiter_add(struct waiter *w, struct target *t);
/**
 * A target about to end: unparked first if it is parked (its attempts
 * counted up to @a now, back on the fleet's wheel), its descriptor forgotten.
 */
void waiter_remove(struct waiter *w, struct target *t, uint64_t now);

/** Whether the helper posted something not yet taken (under the loop's lock). */
bool waiter_pending(const struct waiter *w);

/**
 * The sampling thread's part, once per pass (without the lock held): takes
 * what the helper posted, drains the kernel samples of every target of
 * @a targets (@a n) when some wait, unparks the targets whose threads ran
 * (their attempts due since are made in this pass: fleet_add_ready()), and
 * lets the helper poll again. @a clock gives the times.
 */
void waiter_step(struct waiter *w, struct target *const *targets, size_t n,
                 const struct clock *clock);

/**
 * After an attempt of @a t: parks it when its sampler says its threads are
 * idle (off the fleet's wheel, its wakers in the helper's set). Does nothing
 * when the helper cannot be started or the table cannot grow.
 */
void waiter_consider(struct waiter *w, struct target *t);

/** Counts every parked target's attempts due by @a now (before its sinks change). */
void waiter_catch_up(struct waiter *w, uint64_t now);

/** Targets parked now; targets whose kernel samples are waited for. */
size_t waiter_nparked(const struct waiter *w);
size_t waiter_nnative(const struct waiter *w);

#endif /* PYPROFD_DAEMON_WAITER_H */
