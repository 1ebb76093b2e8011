/* SPDX-License-Identifier: MIT */
/*
 * sampler_internal.h: what sampler.c and sampler_exact.c (the exact path of
 * native: full with blocking) share: the sampler's state and its cache of
 * the target's threads. Not for other stages: sampler.h is the interface.
 *
 * Thread safety: as sampler.h (one thread at a time).
 */
#ifndef PYPROFD_SAMPLER_SAMPLER_INTERNAL_H
#define PYPROFD_SAMPLER_SAMPLER_INTERNAL_H

#include "base/compat.h"

#include "base/utf8.h"
#include "sampler/runwatch.h"
#include "sampler/sampler.h"
#include "sampler/schedule.h"

#define SAMPLER_THREADS       256u          /* threads whose name and host TID are cached */
#define SAMPLER_NAME_REFRESH  1000000000ull /* re-read a thread's name after 1 s */
#define SAMPLER_MAX_TRACED    1024u
#define SAMPLER_COMM_MAX      15u /* a thread's name as the kernel keeps it (TASK_COMM_LEN - 1) */
#define SAMPLER_SINKS         (1 + SAMPLER_MAX_TAPS) /* [0]: the window, then the taps */
#define SAMPLER_EXACT_THREADS 64u /* threads whose C stacks the exact path reads per sample */
#define SAMPLER_REFRESH_NS    1000000000ull
/* attempts in a row answered without a read before a target may be parked:
 * at 100 Hz 80 ms, so a thread that wakes every few tens of ms stays on the
 * schedule (parking costs system calls at both ends) */
#define SAMPLER_PARK_AFTER 8u

/* A target thread as the kernel knows it. */
struct sampler_thread {
    uint64_t ns_tid; /* 0 = free slot */
    pid_t host_tid;
    uint64_t named_ns;
    char comm[SAMPLER_COMM_MAX + 1];                        /* as read: any bytes */
    char name[SAMPLER_COMM_MAX * UTF8_REPLACEMENT_LEN + 1]; /* ... as valid UTF-8 */
    uint64_t last_key;         /* stack_key of the thread's last own stack given to the sinks */
    bool added[SAMPLER_SINKS]; /* ... and whether each sink took it (the coalescing contract) */
    int stat_fd1;              /* cpu mode: /proc/PID/task/TID/stat kept open, fd + 1; 0: none */
};

struct sampler_exact;

struct sampler {
    /* what every attempt touches first, together (an idle target's attempt
     * touches little else: docs/performance.md, issue 26) */
    struct nsampler *ns;    /* native: full: the kernel's samples (NULL: not asked, or refused) */
    struct runwatch *watch; /* idle_check: whether the threads ran since the last read */
    /* the last read's result, while it may be counted again (plain stacks,
     * nothing failed): owned by the unwinder, untouched until its next sample */
    const struct unwind_result *last;
    unsigned quiet;   /* attempts in a row answered without a read */
    bool parked;      /* sampler_park(): attempts are counted at sampler_catch_up() */
    bool no_park;     /* parking failed for a reason that will not pass */
    bool park_asleep; /* ... as cpu mode's "none on a CPU", else as the last read again */
    struct schedule sched;
    uint64_t last_attempt_ns;
    uint64_t now_ns; /* of the attempt in progress */
    uint64_t jitter; /* the next attempt is made this long after it is due */
    /* how long after the middle of their interval the attempts are made
     * (the loop's tick, its timer slack, the wake-up), averaged: at an
     * unpark the attempts due within it before the first switch are made
     * reading, as they would have been made after it (sampler_catch_up()) */
    int64_t late_ns;
    uint64_t unparked_ns;  /* the last unpark: attempts due before it are not measured */
    struct rand_state rng; /* for the jitter */
    struct sampler_counts counts;
    struct sampler_opts opts;
    pid_t pid;
    struct unwinder *u;
    /* [0]: the window (its takes count as thread samples); then the taps,
     * add NULL = a free slot */
    struct sample_sink sinks[SAMPLER_SINKS];
    size_t nsinks; /* sinks[nsinks...] are free */
    /* native: full with blocking, the exact path: each stopped thread's
     * registers and stack read through ptrace, unwound after the resume */
    struct sampler_exact *exact;
    uint64_t native_period; /* the configured period: interval_ns */
    char native_state[320]; /* sampler_native(): "" when not asked */
    pid_t *traced;          /* blocking mode: seized TIDs */
    int *pending;           /* a signal each stopped thread was about to get */
    bool *was_running;      /* cpu mode: each stopped thread was on a CPU ('R') before the stop */
    size_t ntraced;
    struct sampler_thread threads[SAMPLER_THREADS];
};

/* The cached kernel view of thread @ns_tid (host TID, name), looked up or
 * refreshed (@refresh: its name too, once a second). */
struct sampler_thread *sampler_thread_get(struct sampler *s, uint64_t ns_tid, bool refresh);
/* sampler_thread_get() with the name refreshed. */
struct sampler_thread *sampler_thread(struct sampler *s, uint64_t ns_tid);

/* ---- sampler_exact.c: native: full with blocking ------------------------ */

/* Sets up the exact path (s->exact); on failure says why in @why (the caller falls back). */
int sampler_exact_new(struct sampler *s, char *why, size_t whylen);
void sampler_exact_free(struct sampler_exact *x);
/* While the threads are stopped: thread @i of the read @t's registers and stack top. */
void sampler_exact_capture(struct sampler *s, size_t i, const struct unwind_thread *t);
/* The slot of the exact path's thread @i holds nothing (the read failed). */
void sampler_exact_forget(struct sampler *s, size_t i);
/* After the resume: thread @i's C frames joined with @t's Python frames (false: none kept). */
bool sampler_exact_join(struct sampler *s, size_t i, const struct unwind_thread *t,
                        const struct unwind_frame **out, size_t *n);
/* Its counts (sampler_native_counts()). */
struct nsampler_counts sampler_exact_counts(const struct sampler *s);

#endif /* PYPROFD_SAMPLER_SAMPLER_INTERNAL_H */
