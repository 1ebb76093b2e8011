/* SPDX-License-Identifier: MIT */
/*
 * nsampler.h: stage 3 for mixed stacks (`record --native=full`, a job's
 * `native: full`). Where sampler.h samples on its own schedule, this one is
 * driven by the kernel: each thread of the target has a perf event
 * (perf/perfsample.h) that samples it every period of its own CPU time,
 * copying its registers and the top of its stack. Each sample wakes the
 * caller (nsampler_fd()), which calls nsampler_drain(): the Python stacks are
 * read at once (all threads, with their entry frames), each waiting sample
 * is unwound (unwind/native.h) and joined with its thread's Python stack
 * (unwind/mixed.h), and the result goes to the sink as one thread sample
 * worth one period. The samples are CPU time by construction: cpu mode.
 *
 * Honesty, per kernel sample (struct nsampler_counts):
 *   merged     joined at every entry frame;
 *   cut        joined as far as the copied stack reached, the rest Python only;
 *   python     no C frames could be unwound: the Python stack with <native>;
 *   native     a thread running no Python (C frames only);
 *   disagree   the C and Python reads disagree on where the thread is: no
 *              sample (never a wrong merge);
 *   late       the thread ran for more than max_ran_ns of CPU time between
 *              the kernel's sample and the end of the Python read (its
 *              task clock, read again after the read): it may have moved
 *              on, no sample;
 *   failed     the Python read failed (a torn stack, ...): no sample;
 *              failed_by says why, by status (native_late and
 *              native_disagree for the two above);
 *   lost       samples the kernel could not write (a full ring).
 *
 * New threads are found at a rescan of /proc/PID/task every second; a
 * thread perf_event_open refuses is counted, and when none can be opened
 * nsampler_new() fails with the reason (the caller falls back).
 *
 * Memory: nsampler_new() allocates everything; draining does not allocate,
 * except inside libdwfl, which does while it unwinds (docs/unwinder.md).
 * Thread safety: one thread at a time.
 */
#ifndef PYPROFD_SAMPLER_NSAMPLER_H
#define PYPROFD_SAMPLER_NSAMPLER_H

#include "base/compat.h"

#include <sys/types.h>

#include "base/status.h"
#include "sampler/sampler.h"
#include "sampler/tasks.h"
#include "unwind/native.h"
#include "unwind/unwind.h"

#define NSAMPLER_MAX_THREADS   TASKS_MAX /* the sampler's one cap (sampler/tasks.h) */
#define NSAMPLER_STACK_DEFAULT 16384u    /* bytes of user stack copied per sample */
#define NSAMPLER_MAX_RAN_DEFAULT                                                                   \
    1000000u /* ns the thread may run between its sample and the read */

struct nsampler_opts {
    uint64_t period_ns;    /* CPU time per sample (> 0) */
    uint32_t stack_bytes;  /* 0: NSAMPLER_STACK_DEFAULT */
    uint64_t max_ran_ns;   /* 0: NSAMPLER_MAX_RAN_DEFAULT */
    unsigned unwind_flags; /* UNWIND_NO_GC; the threads and entry frames are added */
    const char *proc_root; /* NULL: "/proc" (copied) */
    bool main_only;        /* only the process's main thread (its TID is its PID) */
};

struct nsampler_counts {
    uint64_t samples; /* kernel samples taken from the rings: the sum of the next seven */
    uint64_t merged, cut, python, native;
    uint64_t disagree, late, failed;
    uint64_t failed_by[SAMPLE_STATUS_COUNT]; /* disagree, late and failed, by reason */
    uint64_t lost;
    uint64_t threads, refused; /* threads sampled now; threads perf_event_open refused */
    uint64_t refreshes;        /* mappings read again for an address in none known */
    uint64_t ran_max_ns;       /* the most CPU time a thread ran between its sample and the read */
    uint64_t ran_sum_ns;       /* summed over the samples kept */
    struct native_files files; /* the libraries' separate debug files (unwind/native.h) */
};

struct nsampler;

/**
 * Opens sampling of every thread of @a pid through unwinder @a u (borrowed)
 * into @a sink (copied). Returns 0; or a negative errno with the reason in
 * @a why: perf_event_open's refusal (perfsample_open()) when no thread could
 * be opened, -ENOENT when the binaries cannot be read, -ENOMEM.
 */
PYPROFD_WARN_UNUSED int nsampler_new(pid_t pid, struct unwinder *u, const struct sample_sink *sink,
                                     const struct nsampler_opts *o, struct nsampler **out,
                                     char *why, size_t whylen);
void nsampler_free(struct nsampler *s);

/**
 * Samples each thread every @a period_ns of its CPU time from now on (the
 * agent's CPU budget); each sample drained from then on stands for that
 * long. Returns 0, or the first thread's refusal (-errno).
 */
int nsampler_set_period(struct nsampler *s, uint64_t period_ns);
/** The period samples stand for now. */
uint64_t nsampler_period(const struct nsampler *s);

/** An epoll descriptor, readable when a sample waits. Owned by @a s. */
int nsampler_fd(const struct nsampler *s);

/**
 * Processes every waiting sample (and rescans the threads when a second has
 * passed since the last rescan, @a now_ns on CLOCK_MONOTONIC). Returns 0, or
 * -ESRCH when the process is gone.
 */
int nsampler_drain(struct nsampler *s, uint64_t now_ns);

struct nsampler_counts nsampler_counts(const struct nsampler *s);

#endif /* PYPROFD_SAMPLER_NSAMPLER_H */
