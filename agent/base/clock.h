/* SPDX-License-Identifier: MIT */
/*
 * clock.h: the one clock seam. Everything that schedules, times out,
 * measures or stamps reads time through a struct clock it was given, so a
 * test can run it on a fake clock (tests/support/clock_fake.h) and decide
 * exactly when "now" is; clock_system is the real one:
 *
 *   mono_ns        CLOCK_MONOTONIC, ns: deadlines, intervals, ages;
 *   real_ns        CLOCK_REALTIME, ns since the epoch: profile time stamps;
 *   thread_cpu_ns  CLOCK_THREAD_CPUTIME_ID of the calling thread: budgets.
 *
 * Pure arithmetic modules (schedule, fleet, backoff) take `now` as an
 * argument instead; the clock is read by their callers.
 *
 * Thread safety: clock_system may be used from any thread; a fake clock is
 * as thread-safe as its implementation says.
 */
#ifndef PYPROFD_BASE_CLOCK_H
#define PYPROFD_BASE_CLOCK_H

#include "base/compat.h"

#include <time.h>

struct clock {
    uint64_t (*mono_ns)(void *arg);
    int64_t (*real_ns)(void *arg);
    uint64_t (*thread_cpu_ns)(void *arg);
    void *arg;
};

/** The system's clocks. */
extern const struct clock clock_system;

/** The same, read directly (for code with no clock to be given). */
uint64_t clock_mono_now(void);
int64_t clock_real_now(void);
uint64_t clock_thread_cpu_now(void);

static inline uint64_t clock_mono(const struct clock *c)
{
    return c->mono_ns(c->arg);
}

static inline int64_t clock_real(const struct clock *c)
{
    return c->real_ns(c->arg);
}

static inline uint64_t clock_thread_cpu(const struct clock *c)
{
    return c->thread_cpu_ns(c->arg);
}

/**
 * How a sampling thread waits (called by the thread itself):
 *
 *   clock_set_slack  the thread's timer slack (prctl PR_SET_TIMERSLACK) to
 *                    @a slack_ns: the kernel may fire its sleeps up to that
 *                    much late, and so fold them into other timers' wake-ups
 *                    instead of programming one interrupt per sleep.
 *
 * Returns 0 or -errno; it is not required for correctness, so callers log a
 * failure once and go on. (Sampling threads do not run SCHED_BATCH: when
 * every CPU is busy a batch thread's wake-up waits for the scheduler tick, so
 * samples fall on a 4 ms grid and alias with a target's own period; see
 * docs/agent.md, "Scheduling".)
 */
int clock_set_slack(uint64_t slack_ns);
/** The kernel's default timer slack (50 us): the sampling threads never go under it. */
#define CLOCK_DEFAULT_SLACK_NS 50000ull

/** @a ns (on the clock's own scale) as a struct timespec, e.g. for pthread_cond_timedwait(). */
static inline struct timespec clock_timespec(uint64_t ns)
{
    return (struct timespec){.tv_sec = (time_t)(ns / 1000000000ull),
                             .tv_nsec = (long)(ns % 1000000000ull)};
}

#endif /* PYPROFD_BASE_CLOCK_H */
