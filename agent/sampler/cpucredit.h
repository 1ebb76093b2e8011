/* SPDX-License-Identifier: MIT */
/*
 * cpucredit.h: what cpu mode counts for one thread (issue 38). A thread
 * counts as on a CPU only while it runs on one, not while it waits for one
 * (preempted, or its cgroup throttled by its CPU quota), although /proc says
 * 'R' for both. The thread earns its CPU time as it goes, the kernel's own
 * count (the first number of /proc/PID/task/TID/schedstat, in ns), and an
 * attempt that finds it running or waiting for a CPU ('R') pays out what it
 * has earned, in whole samples of one interval. So the samples add up to
 * the thread's CPU time, and each lands on a stack read while the thread ran
 * or waited to go on running, never on one where it sleeps. Which attempts
 * pay is the statistical part (cpucredit_earn(), cpucredit_pay()).
 *
 * Why not count a thread at the attempts that find it running, as its
 * context-switch records (perf/switches.h) tell without any read: the
 * sampler's own wake-up preempts the thread it then looks at whenever the
 * two share a CPU, so the thread is seen waiting exactly when it would have
 * been running. Measured on 2 CPUs: a looker on the thread's CPU saw it
 * running at 0 of 2,572 looks, while it ran 29 % of the time; one free to
 * move, at 0.90 of its share; the credit is blind to it. The records still
 * answer the cheap half: a thread switched out to wait (asleep) is off a
 * CPU with no read at all (sampler/runwatch.h).
 *
 * The sources say what they know of a thread at an attempt (source.h,
 * on_cpu) as an enum cpucredit_known; the sampler turns it into samples
 * (sampler.c, sampler_on_cpu()).
 *
 * A struct cpucredit is an embeddable value: zeroed it is a thread not
 * looked at yet. Pure arithmetic: no allocation, no system call, no log.
 * Thread safety: one thread at a time per value.
 */
#ifndef PYPROFD_SAMPLER_CPUCREDIT_H
#define PYPROFD_SAMPLER_CPUCREDIT_H

#include "base/compat.h"

#include <stdint.h>

/** What a source knows of a thread at an attempt (source.h, on_cpu). */
enum cpucredit_known {
    CPUCREDIT_ASK = -1,     /* nothing: its stat file says ('R' or not) */
    CPUCREDIT_OFF = 0,      /* asleep: nothing is paid now (what it ran stays earned) */
    CPUCREDIT_RUNNABLE = 1, /* running or waiting for a CPU ('R'): the credit decides */
};

#define CPUCREDIT_MAX_PAY  4u /* samples one attempt pays out for a thread, at most */
#define CPUCREDIT_MAX_OWED 8u /* samples' worth a thread may be owed; more is dropped ... */
#define CPUCREDIT_OWED_NS  100000000ull /* ... but at least this much CPU time */
#define CPUCREDIT_NO_TIME  UINT64_MAX   /* a CPU time the source did not read */

struct cpucredit {
    /* private */
    uint64_t cpu_ns;  /* the thread's CPU time at the last look */
    uint64_t owed_ns; /* earned and not paid out yet */
    bool started;     /* cpu_ns holds a look */
};

/**
 * One look at a thread at an attempt, first: its CPU time now, @a cpu_ns,
 * and what it ran since the last look is earned. Returns whether a sample
 * of @a interval_ns is owed (only then does its state matter: call
 * cpucredit_pay() if it is running or waiting for a CPU).
 *
 * The first look (or one with a CPU time lower than the last: another
 * thread behind the same TID) only starts: nothing is owed, and half an
 * interval from then on, so that what a thread's life pays is its CPU time
 * rounded to the nearest sample. Owed time beyond CPUCREDIT_MAX_OWED
 * samples (and CPUCREDIT_OWED_NS) is dropped: CPU time spent while attempts
 * were skipped, or while the thread was never seen 'R' for long, does not
 * pile onto the next stacks read.
 */
bool cpucredit_earn(struct cpucredit *c, uint64_t cpu_ns, uint64_t interval_ns);

/**
 * Then, for a thread found running or waiting for a CPU ('R'): what it is
 * owed, in whole samples of @a interval_ns, at most CPUCREDIT_MAX_PAY at
 * once (more stays owed). Returns how many samples to count it for now.
 */
unsigned cpucredit_pay(struct cpucredit *c, uint64_t interval_ns);

/**
 * What cpucredit_pay() paid, @a n samples of @a interval_ns, could not be
 * counted (the stack read for them failed: torn): it is owed again, for the
 * next attempt that finds the thread 'R' (within the cap on what is owed).
 */
void cpucredit_refund(struct cpucredit *c, unsigned n, uint64_t interval_ns);

/** Both: earns @a cpu_ns, and pays if @a runnable. */
static inline unsigned cpucredit_look(struct cpucredit *c, uint64_t cpu_ns, bool runnable,
                                      uint64_t interval_ns)
{
    return cpucredit_earn(c, cpu_ns, interval_ns) && runnable ? cpucredit_pay(c, interval_ns) : 0;
}

#endif /* PYPROFD_SAMPLER_CPUCREDIT_H */
