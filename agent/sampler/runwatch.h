/* SPDX-License-Identifier: MIT */
/*
 * runwatch.h: which of a target's threads ran since its last read (issue
 * 26). A thread that has not run since its stack was read still has that
 * stack; one that is not on a CPU costs cpu mode nothing. So the sampler asks
 * this watch before each attempt, and reads target memory only when the
 * answer is "read":
 *
 *   RUNWATCH_SAME    (wall, gil and exception mode) no watched thread ran
 *                    since the last successful read began: that read's
 *                    result holds, and is counted again;
 *   RUNWATCH_ASLEEP  (cpu mode) every watched thread is asleep: none is
 *                    running or waiting for a CPU, so the attempt keeps no
 *                    thread, as a read would have found;
 *   RUNWATCH_READ    something ran, or the watch cannot tell.
 *
 * Which threads are watched: every thread of the process when the target is
 * sampled with all its threads (a thread that is not Python now may become
 * Python), else the process's main thread (its TID is its PID), up to the
 * sampler's one cap on a target's threads (sampler/tasks.h: TASKS_MAX); a
 * watch that cannot cover them (more threads than that, a refusal, no
 * descriptors left in the process's budget, base/fdcap.h) says "read" every
 * time.
 *
 * How it knows, the cheapest way the host allows (runwatch_how()):
 *
 *   perf       each thread's context switches in a ring (perf/switches.h):
 *              no system call; a thread is off CPU from the look that first
 *              sees its switch-out record while the ring has not moved
 *              since; one switched out to wait is asleep (cpu mode counts
 *              it for nothing, without a read), one running or preempted
 *              is left to its credit (sampler/cpucredit.h says why);
 *   schedstat  where perf events are refused: each thread's
 *              /proc/PID/task/TID/schedstat (CPU time, switches in), one
 *              pread per thread and look: unchanged over more than a
 *              scheduler tick (RUNWATCH_TICK_NS) proves the thread off CPU
 *              over that span (a running thread is charged at every tick);
 *              a target that keeps running is looked at less often (at most
 *              one look in 8 attempts while its threads run); a thread that
 *              ran since cannot be told running from waiting (cpu mode asks
 *              its credit, sampler/cpucredit.h);
 *   off        neither (or turned off): every attempt reads.
 *
 * Parking (runwatch_park(), perf only): the agent takes a target whose
 * threads stay idle off its schedule; each thread's waker (perf/switches.h)
 * wakes it when one runs (sampler.h says how the attempts are counted).
 *
 * A thread woken but not yet given a CPU, or preempted, or throttled by its
 * cgroup's CPU quota, is off a CPU although /proc says 'R': cpu mode counts
 * a thread's CPU time only, through its credit (sampler/cpucredit.h;
 * docs/agent.md, "What cpu mode counts").
 *
 * Memory: runwatch_new() allocates; a rescan of the threads may grow the
 * table (a thread was created); checks and reads allocate nothing and log
 * nothing. Thread safety: one thread at a time.
 */
#ifndef PYPROFD_SAMPLER_RUNWATCH_H
#define PYPROFD_SAMPLER_RUNWATCH_H

#include "base/compat.h"

#include <sys/types.h>

#include "pipeline.h"
#include "sampler/cpucredit.h"

enum runwatch_verdict {
    RUNWATCH_READ,
    RUNWATCH_SAME,
    RUNWATCH_ASLEEP,
};

#define RUNWATCH_TICK_NS 11000000ull /* a scheduler tick at HZ 100, and a margin */

struct runwatch_opts {
    const char *proc_root; /* NULL: "/proc" (copied) */
    bool all_threads;      /* every thread of the process, else the main one */
    enum idle_check how;   /* the most to try */
};

struct runwatch;

/**
 * Sets up the watch of process @a pid (host PID under proc_root) at
 * @a now_ns. A refusal is no error: the watch falls back and
 * runwatch_describe() says why. Returns 0 or -ENOMEM.
 */
PYPROFD_WARN_UNUSED int runwatch_new(pid_t pid, const struct runwatch_opts *o, uint64_t now_ns,
                                     struct runwatch **out);
/** Closes every watch; NULL is a no-op. */
void runwatch_free(struct runwatch *w);

/** How the threads are watched now (a perf watch may have fallen back since). */
enum idle_check runwatch_how(const struct runwatch *w);
/**
 * In words, for /targets: "perf", "schedstat: <why not perf>" or
 * "off: <why>"; with " (incomplete: <why>)" while the threads are not all
 * covered. Owned by @a w.
 */
const char *runwatch_describe(const struct runwatch *w);

/**
 * Looks at every watched thread at @a now_ns (before an attempt). @a cpu:
 * cpu mode, whose answers are RUNWATCH_ASLEEP or RUNWATCH_READ (never
 * RUNWATCH_SAME: a thread that has not run since the last read is not on a
 * CPU now).
 */
enum runwatch_verdict runwatch_check(struct runwatch *w, uint64_t now_ns, bool cpu);

/**
 * After a read that runwatch_check() asked for: it began at @a start_ns (the
 * @a now_ns of that check) and @a ok says whether its result may be counted
 * again (every thread read, nothing torn or failed).
 */
void runwatch_read(struct runwatch *w, uint64_t start_ns, bool ok);

/**
 * Parking (perf only): turns on each watched thread's waker, whose records
 * make descriptors in epoll set @a epfd readable with @a token, so that a
 * target whose threads have been idle for a while need not be looked at
 * again until one of them runs (or exits). Call right after a check that
 * found every thread idle. Returns 0 (parked), -EAGAIN (a thread ran since
 * that check: not parked), or another negative errno (not parked: a waker
 * could not be opened, the watch is not perf, ...). Costs one more
 * descriptor and two more locked pages per thread, from the first park on.
 */
PYPROFD_WARN_UNUSED int runwatch_park(struct runwatch *w, int epfd, uint64_t token);
/** Turns the wakers off and takes them out of @a epfd; not parked: a no-op. */
void runwatch_unpark(struct runwatch *w, int epfd);
/**
 * While parked: when the first watched thread was switched (its waker's
 * oldest record, CLOCK_MONOTONIC), in *@a at. False when none was, or the
 * time cannot be told.
 */
bool runwatch_woke_at(const struct runwatch *w, uint64_t *at);
/** Whether the last check saw a thread switched since the check before (or could not look). */
bool runwatch_moved(const struct runwatch *w);
/** Whether no watched thread ran since the last check (one load per thread). */
bool runwatch_still(const struct runwatch *w);

/**
 * During that read, cpu mode's question for thread @a host_tid, as the last
 * check saw it (enum cpucredit_known): CPUCREDIT_OFF when it is asleep
 * (perf: switched out to wait; schedstat: no CPU time for a tick),
 * CPUCREDIT_RUNNABLE when it is running or preempted (perf), CPUCREDIT_ASK
 * when the watch cannot tell (off, not watched, not looked at by that check,
 * switched by no record since the watch opened, or schedstat's thread that
 * ran). The schedstat watch also gives the thread's CPU time as that check
 * read it, in *@a cpu_ns (otherwise left alone).
 */
int runwatch_on_cpu(const struct runwatch *w, pid_t host_tid, uint64_t *cpu_ns);

#endif /* PYPROFD_SAMPLER_RUNWATCH_H */
