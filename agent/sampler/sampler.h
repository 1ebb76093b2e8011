/* SPDX-License-Identifier: MIT */
/*
 * sampler.h: stage 3. Samples one target on its fixed schedule
 * (sampler/schedule.h) in one of four modes, and feeds the samples the mode
 * keeps into an aggregation window (aggregate/agg.h):
 *
 *   wall       every sampled thread, whatever it does;
 *   cpu        threads the kernel has on a CPU (/proc/PID/task/TID/stat 'R');
 *   gil        threads holding the GIL;
 *   exception  threads handling an exception.
 *
 * The mode's test runs before a thread's frames are read. Each kept thread
 * sample is worth one sampling interval of its mode's time.
 *
 * Outcomes are counted, never logged: attempts taken, attempts failed (by
 * status: the process went away, a torn stack, a read fault, ...), and
 * attempts missed because the sampler could not keep up. None is folded into
 * the profile.
 *
 * With blocking set, every thread of the target is stopped with ptrace around
 * each sample (exact stacks, at a cost to the target).
 *
 * With an asyncio walker (unwind/asyncio.h), threads running asyncio tasks
 * are counted with their logical (await-chain) stacks instead, labelled with
 * the task name; a torn task graph is a failed attempt like a torn stack.
 *
 * Thread safety: one thread at a time.
 */
#ifndef PYPROFD_SAMPLER_SAMPLER_H
#define PYPROFD_SAMPLER_SAMPLER_H

#include "base/compat.h"

#include <sys/types.h>

#include "aggregate/agg.h"
#include "base/status.h"
#include "unwind/asyncio.h"
#include "pipeline.h"
#include "sampler/report.h"
#include "unwind/unwind.h"

struct sampler_opts {
    enum profile_mode mode;
    uint64_t interval_ns;  /* > 0 */
    unsigned unwind_flags; /* UNWIND_ALL_THREADS, UNWIND_NATIVE, UNWIND_NO_GC, UNWIND_OPCODES */
    bool blocking;         /* stop the target's threads with ptrace around each sample */
    /* where the target's /proc files are (discovery.proc_root; copied):
     * thread names, host TIDs, cpu mode's on-CPU states; NULL: "/proc" */
    const char *proc_root;
    /* async-aware stacks (borrowed; NULL: plain stacks): each thread running
     * an asyncio task is counted with its logical stack, labelled with the
     * task's name; in ASYNCIO_ALL mode suspended tasks are counted too */
    struct asyncio *async;
};

/** Windows besides the main one that a sampler may also feed at once (sampler_add_tap). */
#define SAMPLER_MAX_TAPS 4

struct sampler;

/**
 * Prepares sampling of @a pid through @a u (borrowed; the unwinder of that
 * process) into @a agg (borrowed). The schedule starts at @a now_ns. Returns 0,
 * -EINVAL for bad options, -EPERM when blocking cannot attach, -ENOMEM.
 */
PYPROFD_WARN_UNUSED int sampler_new(pid_t pid, struct unwinder *u, struct agg *agg,
                                    const struct sampler_opts *opts, uint64_t now_ns,
                                    struct sampler **out);
/** Releases (and detaches ptrace in blocking mode); NULL is a no-op. */
void sampler_free(struct sampler *s);

/**
 * When to make the next attempt (CLOCK_MONOTONIC nanoseconds): its due time
 * on the fixed schedule plus a random offset in the interval (none for the
 * first attempt), so periodic code is not sampled at the same phase every
 * time. The schedule's due times and the missed count do not depend on the
 * offset.
 */
uint64_t sampler_due(const struct sampler *s);

/**
 * Makes the attempt that is due, at @a now_ns. Returns 0 (taken or failed:
 * see the counts), or -ESRCH when the process is gone (sampling should stop).
 */
int sampler_attempt(struct sampler *s, uint64_t now_ns);

/**
 * Lets the due attempt and the @a n - 1 after it pass without sampling, at
 * @a now_ns, on purpose (the agent's CPU budget): the schedule moves on by
 * @a n intervals at once (one wake-up, not n) and they count as skipped,
 * neither taken, failed nor missed.
 */
void sampler_skip(struct sampler *s, uint64_t now_ns, uint64_t n);

/**
 * Lets the due attempt pass without sampling or counting it anywhere: for a
 * target that is known to be gone and about to be removed.
 */
void sampler_idle(struct sampler *s, uint64_t now_ns);

/**
 * From the next attempt on, adds samples to @a agg (borrowed) instead of the
 * current window, which the caller may then hand to an encoder. No sample is
 * lost or counted twice across the switch.
 */
void sampler_set_window(struct sampler *s, struct agg *agg);

/**
 * Also adds every sample to @a tap (borrowed until sampler_remove_tap()), for a
 * profile that spans other times than the windows (an HTTP request's N
 * seconds). Returns 0, or -EBUSY when SAMPLER_MAX_TAPS taps are attached.
 */
PYPROFD_WARN_UNUSED int sampler_add_tap(struct sampler *s, struct agg *tap);
/** Detaches @a tap; not attached is a no-op. */
void sampler_remove_tap(struct sampler *s, const struct agg *tap);

/**
 * The counts while sampling goes on: missed counts the attempts given up for
 * good (schedule_given_up()), so every field only grows from one call to the
 * next and can be exported as a counter.
 */
struct sampler_counts sampler_counts(const struct sampler *s);
/**
 * The counts once sampling has ended: missed also counts the attempts whose
 * whole interval (where their random point lay) had gone by at the last
 * attempt, and that will now never be made. At least what sampler_counts()
 * said.
 */
struct sampler_counts sampler_counts_final(const struct sampler *s);

#endif /* PYPROFD_SAMPLER_SAMPLER_H */
