/* SPDX-License-Identifier: MIT */
/*
 * fleet.h: which targets are due, and how much of its rate the CPU budget
 * allows: the scheduling arithmetic of the agent's sampling thread, with no
 * clock and no I/O (time and CPU readings are passed in, as schedule.h does
 * for one target).
 *
 *   ticks      time is cut into ticks of fleet_tick() ns, aligned on the
 *              clock's zero (tick boundary k is at k * tick). The sampling
 *              thread sleeps to a boundary and there takes, in one pass,
 *              every attempt due by then: an attempt due at d is made at the
 *              first boundary >= d (up to one tick late), never early.
 *   due times  every target has a slot (struct fleet_slot, embedded in the
 *              caller's target) holding when its next attempt is due. Slots
 *              wait in a timing wheel of FLEET_WHEEL buckets, one per tick
 *              (a slot due more than a turn ahead waits in its bucket for the
 *              turn to come round): insert, move and remove are O(1).
 *              fleet_collect() moves every slot due by now to a ready list,
 *              fleet_pop() hands them out one by one; the caller makes the
 *              attempt and puts the slot back with fleet_update() at its new
 *              due time. A slot put back still due (at or before the last
 *              collect's time: the target is late) is ready again in the same
 *              pass, after every slot that was ready: a late target catches
 *              up back to back, as schedule.h says, taking turns with the
 *              other late ones, and no target waits for another's catch-up.
 *   budget     fleet_budget() compares the sampling thread's CPU time with
 *              limits.cpu_budget once per FLEET_BUDGET_NS. Over it, every
 *              target's effective rate is lowered by the same factor (fair:
 *              each keeps its configured proportion); under 80% of it, the
 *              factor recovers by 25% per period, up to 1. The factor stays in
 *              [FLEET_MIN_FACTOR, 1].
 *   credit     each due attempt earns a slot `factor` credit; a whole credit
 *              buys an attempt. fleet_take() says whether the due attempt is
 *              made, or how many due attempts to let pass at once (one
 *              wake-up per taken sample, not per skipped one).
 *
 * Thread safety: a fleet belongs to one thread (the sampling thread).
 */
#ifndef PYPROFD_DAEMON_FLEET_H
#define PYPROFD_DAEMON_FLEET_H

#include "base/compat.h"

#define FLEET_BUDGET_NS  1000000000ull /* budget measurement period */
#define FLEET_MIN_FACTOR 0.001
#define FLEET_MAX_SKIP   100000u    /* attempts let pass in one go, at most */
#define FLEET_WHEEL      512u       /* buckets (ticks) in one turn of the wheel, a power of 2 */
#define FLEET_TICK_NS    1000000ull /* the tick of a new fleet */

/**
 * One target's place in the fleet. Embeddable value; fields are private
 * (due may be read). 32 bytes: what a pass touches per target.
 */
struct fleet_slot {
    uint64_t due;              /* next attempt due (monotonic ns) */
    uint64_t when;             /* the boundary (in ticks) it is taken at */
    struct fleet_slot *next;   /* in its bucket or a ready list */
    struct fleet_slot **pprev; /* what points at it; NULL: in no list */
    double credit;             /* attempts earned by the budget, 1.0 at the start */
};

struct fleet;

/** A fleet for at most @a cap slots (> 0). Returns 0 or -ENOMEM/-EINVAL. */
PYPROFD_WARN_UNUSED int fleet_new(size_t cap, struct fleet **out);
/** Frees; the slots are the caller's. NULL is a no-op. */
void fleet_free(struct fleet *f);
/** Room for @a cap slots (never shrinks). Returns 0 (no allocation: the wheel has no per-slot
 * storage). */
PYPROFD_WARN_UNUSED int fleet_grow(struct fleet *f, size_t cap);

/** Adds @a s (borrowed until fleet_remove()) due at @a due. Returns 0 or -ENOSPC. */
PYPROFD_WARN_UNUSED int fleet_add(struct fleet *f, struct fleet_slot *s, uint64_t due);
/**
 * Adds @a s as fleet_add() does, but already due: ready at once (the next
 * fleet_collect() and fleet_pop() hand it out), not at the first boundary
 * not collected yet, which can be a tick and the timer slack away. For a
 * slot whose attempts fell due while it was out of the fleet and must be
 * made now (a parked target whose thread runs: its attempts see the run).
 * Returns 0 or -ENOSPC.
 */
PYPROFD_WARN_UNUSED int fleet_add_ready(struct fleet *f, struct fleet_slot *s, uint64_t due);
/** Takes @a s out, wherever it waits (a bucket, the ready list, popped). */
void fleet_remove(struct fleet *f, struct fleet_slot *s);
/**
 * Sets @a s's due time to @a due and puts it back (after fleet_pop(), or to
 * move it): when @a due is at or before the last fleet_collect()'s time, ready
 * again once the slots ready now have been popped; else in the wheel, taken
 * at the first boundary >= @a due that is after the last fleet_collect().
 */
void fleet_update(struct fleet *f, struct fleet_slot *s, uint64_t due);
/** Slots in the fleet. */
size_t fleet_count(const struct fleet *f);

/** The tick (ns). */
uint64_t fleet_tick(const struct fleet *f);
/**
 * Sets the tick to @a tick_ns (> 0) and re-files every waiting slot: O(slots),
 * for when the tick must change (a target's interval is shorter than it).
 */
void fleet_set_tick(struct fleet *f, uint64_t tick_ns);

/**
 * Moves every waiting slot whose boundary is <= @a now_ns (so due by then) to
 * the ready list. Returns how many are ready.
 */
size_t fleet_collect(struct fleet *f, uint64_t now_ns);
/** The next ready slot (out of every list until fleet_update()), or NULL. */
struct fleet_slot *fleet_pop(struct fleet *f);
/**
 * When to wake next: the boundary at which the earliest waiting slot is
 * taken (ns, a multiple of the tick), 0 when slots are ready, or UINT64_MAX
 * when none waits. Looks at the buckets of one turn of the wheel (a bitmap
 * skips empty ones); only when they hold nothing for this turn does it walk
 * every slot.
 */
uint64_t fleet_next_wake(const struct fleet *f);

/**
 * The due attempt of @a s under the budget: 0 when it is to be made now,
 * else the number (>= 1) of due attempts to let pass, this one included.
 */
uint64_t fleet_take(const struct fleet *f, struct fleet_slot *s);

/**
 * Starts (or restarts) budget measurement at @a now_ns with the sampling
 * thread's CPU time @a cpu_ns.
 */
void fleet_budget_start(struct fleet *f, uint64_t now_ns, uint64_t cpu_ns);
/**
 * Adjusts the factor when a budget period has passed since the last call
 * that did: @a cpu_ns is the sampling thread's CPU time now, @a budget the
 * share of one CPU it may use (0: no budget). Returns true when it did.
 */
bool fleet_budget(struct fleet *f, uint64_t now_ns, uint64_t cpu_ns, double budget);
/** The share of every target's rate the budget allows, in [FLEET_MIN_FACTOR, 1]. */
double fleet_factor(const struct fleet *f);

#endif /* PYPROFD_DAEMON_FLEET_H */
