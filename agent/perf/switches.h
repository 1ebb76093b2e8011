/* SPDX-License-Identifier: MIT */
/*
 * switches.h: whether a thread of another process ran since a moment, with
 * no system call (issue 26). A perf event on the thread (the software dummy
 * event: it counts nothing) asks the kernel for a record at each of its
 * context switches (context_switch), and at its forks and its exit (task),
 * in a ring of one page mapped read-only and written backward: the kernel
 * overwrites the oldest records, data_head moves with every record, and the
 * newest record starts at data_head. So:
 *
 *   - data_head unchanged since a look: the thread was not switched in or
 *     out, created no thread and did not exit meanwhile;
 *   - the newest record says where it is now: switched in (running),
 *     switched out while runnable (preempted: /proc says 'R'), switched out
 *     to wait (asleep), or exited.
 *
 * A thread asleep at one look whose head has not moved since has not run
 * since: its stack is the one read then. That is the proof sampler/runwatch.h
 * uses to count an idle thread without reading it.
 *
 * The records are 8 bytes (a switch) or 32 (a fork, an exit) and the ring is
 * 4 KiB: a watcher reads only the newest and, between two looks, walks the
 * newer ones for a fork (switches_since()); more than a ring's worth since the
 * last look is reported as such.
 *
 * Cost to the thread: the kernel writes one record at each of its context
 * switches (docs/performance.md measures it). Locked memory: two pages per
 * thread (perf/perfevent.h says whose limit).
 *
 * Ownership: a struct switches owns its event. Errors: negative errno with
 * words (perfevent_open()). Thread safety: one thread at a time per watch.
 */
#ifndef PYPROFD_PERF_SWITCHES_H
#define PYPROFD_PERF_SWITCHES_H

#include "base/compat.h"

#include <sys/types.h>

#include "perf/perfevent.h"

/** Where a thread is, by its newest record. */
enum switches_state {
    SWITCHES_NONE,      /* no record since the event was opened: ask /proc */
    SWITCHES_RUNNING,   /* switched in (or it forked: it was running) */
    SWITCHES_PREEMPTED, /* switched out while runnable ('R' in /proc) */
    SWITCHES_ASLEEP,    /* switched out to wait */
    SWITCHES_EXITED,    /* the thread exited */
    SWITCHES_UNKNOWN,   /* a record of another kind, or malformed */
};

struct switches {
    struct perfevent ev;
};

/**
 * Opens the watch of thread @a tid (this process's PID namespace). Returns 0,
 * or a negative errno with words in @a why (perfevent_open()).
 */
PYPROFD_WARN_UNUSED int switches_open(pid_t tid, struct switches *out, char *why, size_t whylen);

/**
 * Opens the waker of thread @a tid: the same records in a ring of its own,
 * but created disabled, and once enabled (switches_enable()) waking pollers
 * of its descriptor at every record, so that a thread that has been idle for
 * a while can be left alone until it next runs (sampler/runwatch.h,
 * parking). Disabled it writes nothing and costs the thread nothing. Returns
 * 0 or a negative errno with words in @a why.
 */
PYPROFD_WARN_UNUSED int switches_open_waker(pid_t tid, struct switches *out, char *why,
                                            size_t whylen);

/**
 * A waker's records carry their time (CLOCK_MONOTONIC): the time of the
 * oldest record written between head @a before and head @a now, in *@a t.
 * False when there is none, or more than the ring holds, or a malformed one.
 */
bool switches_first_time(const struct switches *w, uint64_t before, uint64_t now, uint64_t *t);
/** Its parser over a ring image (bounds-checked, fuzzed). */
bool switches_parse_first_time(const uint8_t *ring, uint64_t size, uint64_t before, uint64_t now,
                               uint64_t *t);

/** Enables or disables a waker. Returns 0 or a negative errno. */
int switches_enable(struct switches *w, bool on);

/** Closes; a closed watch (ev.fd -1) is a no-op. */
void switches_close(struct switches *w);

/** The ring's head now: it moves with every record. */
static inline uint64_t switches_head(const struct switches *w)
{
    return perfevent_head(&w->ev);
}

/** The state by the newest record at @a head (a value switches_head() gave). */
enum switches_state switches_state(const struct switches *w, uint64_t head);

/** What the records between two looks hold (switches_since()). */
struct switches_since {
    bool forked;  /* the thread created a thread or process */
    bool overrun; /* more than the ring holds was written: unknown */
    bool bad;     /* a malformed record */
};

/**
 * Walks the records written between head @a before and head @a now (newest
 * first).
 */
struct switches_since switches_since(const struct switches *w, uint64_t before, uint64_t now);

/**
 * The parsers behind switches_state() and switches_since(), over a ring
 * image of @a size bytes (a power of two, at least 8) as the kernel leaves
 * it: bounds-checked, never read outside [ring, ring + size) (fuzzed).
 */
enum switches_state switches_parse_state(const uint8_t *ring, uint64_t size, uint64_t head);
struct switches_since switches_parse_since(const uint8_t *ring, uint64_t size, uint64_t before,
                                           uint64_t now);

/**
 * Whether this process may watch other processes' threads this way, and if
 * not why (perfevent_probe()). Returns 0 or the negative errno.
 */
int switches_probe(char *why, size_t whylen);

#endif /* PYPROFD_PERF_SWITCHES_H */
