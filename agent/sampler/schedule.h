/* SPDX-License-Identifier: MIT */
/*
 * schedule.h: the fixed sampling schedule of one target. Attempt k is due at
 * start + k * interval, whatever the earlier attempts cost: the due time
 * advances by exactly one interval per attempt, so a slow sample never shifts
 * later ones and a late sampler catches up by sampling back to back. When it
 * falls more than SCHEDULE_MAX_LAG_INTERVALS behind it stops catching up
 * (the due time jumps to now): those attempts are missed, and counted.
 *
 * Two counts of what did not happen. schedule_given_up(): attempts the
 * schedule gave up at such a jump; they will never be made, so the count
 * only grows (what a counter that is read while sampling goes on shows).
 * schedule_missed(): attempts the elapsed time called for minus attempts
 * made, i.e. also those merely late, which a catching-up sampler may still
 * make (what is missed once sampling has ended). Taken and failed attempts
 * are the caller's to count; missed ones are the schedule's.
 *
 * Time is passed in (now_ns): no clock is read here. Thread safety: a
 * schedule belongs to one thread.
 */
#ifndef PYPROFD_SAMPLER_SCHEDULE_H
#define PYPROFD_SAMPLER_SCHEDULE_H

#include "base/compat.h"

#include "base/rand.h"

/** Beyond this many intervals of lag the schedule gives up catching up. */
#define SCHEDULE_MAX_LAG_INTERVALS 100u

/** An embeddable value; fields are private. */
struct schedule {
    uint64_t start_ns;
    uint64_t interval_ns;
    uint64_t next_ns;
    uint64_t attempts;
    uint64_t given_up;
};

/** Starts a schedule at @a now_ns: the first attempt is due at once. @a interval_ns > 0. */
void schedule_init(struct schedule *s, uint64_t now_ns, uint64_t interval_ns);

/** When the next attempt is due (absolute, on the clock now_ns comes from). */
uint64_t schedule_due(const struct schedule *s);

/** Records an attempt made at @a now_ns (>= schedule_due()). */
void schedule_attempted(struct schedule *s, uint64_t now_ns);

/** Attempts made so far. */
uint64_t schedule_attempts(const struct schedule *s);

/** Attempts that should have happened by @a now_ns but did not (late ones too). */
uint64_t schedule_missed(const struct schedule *s, uint64_t now_ns);

/** Attempts given up for good (more than SCHEDULE_MAX_LAG_INTERVALS late); never decreases. */
uint64_t schedule_given_up(const struct schedule *s);

/**
 * The random point in its interval at which to make the attempt due at
 * @a due_ns (on the grid), as an offset in [0, @a interval_ns): uniform over
 * the whole interval, so that code that runs periodically at (a multiple of)
 * the sampling rate is seen at every phase of its cycle, not always at the
 * same one. When the last attempt was made at @a now_ns, already inside that
 * interval (it was late), the point is drawn from what is left of it, after
 * @a now_ns, so that the same moment is not sampled twice; when @a now_ns is
 * past the whole interval the attempt is due at once anyway (catching up).
 * @a rng: the caller's generator (base/rand.h).
 */
uint64_t schedule_jitter(uint64_t due_ns, uint64_t interval_ns, uint64_t now_ns,
                         struct rand_state *rng);

#endif /* PYPROFD_SAMPLER_SCHEDULE_H */
