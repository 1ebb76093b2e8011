/* SPDX-License-Identifier: MIT */
/*
 * fleet.h: which target is due next, and how much of its rate the CPU budget
 * allows: the scheduling arithmetic of the agent's sampling thread, with no
 * clock and no I/O (time and CPU readings are passed in, as schedule.h does
 * for one target).
 *
 *   due times  every target has a slot (struct fleet_slot, embedded in the
 *              caller's target) holding when its next attempt is due; a
 *              binary heap keeps the earliest first. The caller updates a
 *              slot's due time after each attempt (its sampler's schedule
 *              decides it).
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
#ifndef PYPROFD_SAMPLER_FLEET_H
#define PYPROFD_SAMPLER_FLEET_H

#include "base/compat.h"

#define FLEET_BUDGET_NS  1000000000ull /* budget measurement period */
#define FLEET_MIN_FACTOR 0.001
#define FLEET_MAX_SKIP   100000u /* attempts let pass in one go, at most */

/** One target's place in the fleet. Embeddable value; fields are private. */
struct fleet_slot {
    uint64_t due;  /* next attempt due (monotonic ns) */
    double credit; /* attempts earned by the budget, 1.0 at the start */
    size_t heap;   /* index in the heap while added */
};

struct fleet;

/** A fleet for at most @a cap slots (> 0). Returns 0 or -ENOMEM/-EINVAL. */
PYPROFD_WARN_UNUSED int fleet_new(size_t cap, struct fleet **out);
/** Frees; the slots are the caller's. NULL is a no-op. */
void fleet_free(struct fleet *f);
/** Room for @a cap slots (never shrinks). Returns 0 or -ENOMEM. */
PYPROFD_WARN_UNUSED int fleet_grow(struct fleet *f, size_t cap);

/** Adds @a s (borrowed until fleet_remove()) due at @a due. Returns 0 or -ENOSPC. */
PYPROFD_WARN_UNUSED int fleet_add(struct fleet *f, struct fleet_slot *s, uint64_t due);
/** Takes @a s out. */
void fleet_remove(struct fleet *f, struct fleet_slot *s);
/** Moves @a s to its new due time @a due. */
void fleet_update(struct fleet *f, struct fleet_slot *s, uint64_t due);
/** The slot due first, or NULL when empty. */
struct fleet_slot *fleet_first(const struct fleet *f);
/** Slots in the fleet. */
size_t fleet_count(const struct fleet *f);

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

#endif /* PYPROFD_SAMPLER_FLEET_H */
