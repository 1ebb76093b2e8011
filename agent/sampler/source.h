/* SPDX-License-Identifier: MIT */
/*
 * source.h: how an attempt of a sampler (sampler/sampler.h) gets its stacks,
 * behind one set of operations, as curl's connection filters are: the
 * sampler keeps the schedule, the sinks, the thread cache and the counts,
 * and hands each attempt to its source, chosen once by sampler_new():
 *
 *   read    the scheduled read: the unwinder's walk of every thread (and
 *           the asyncio task graph), read again once when it tore, the
 *           stacks given to the sinks (sampler_read.c);
 *   exact   --blocking: every thread stopped with ptrace around the read,
 *           and with native: full each stopped thread's registers and stack
 *           read too and joined after the resume (sampler_exact.c);
 *   kernel  native: full: the kernel samples each thread every period of
 *           its CPU time; an attempt only drains what waits, and the source
 *           has a descriptor the caller waits on (sampler_kernel.c);
 *   idle    a filter in front of read: whether any thread ran since the
 *           last read, answered without reading when none did, and the
 *           parking of a target that stays idle (sampler_idle.c).
 *
 * Every operation but attempt and free is optional (NULL): the sampler asks
 * the first source of the chain (a filter, then the source behind it) that
 * has it, and otherwise does without. No strategy flag is tested outside its
 * own file.
 *
 * The core API below is what a source may use of its sampler; a source's
 * state is its own (it embeds struct sample_source first).
 *
 * Thread safety: as sampler.h (one thread at a time).
 */
#ifndef PYPROFD_SAMPLER_SOURCE_H
#define PYPROFD_SAMPLER_SOURCE_H

#include "base/compat.h"

#include <sys/types.h>

#include "sampler/cpucredit.h"
#include "sampler/nsampler.h"
#include "sampler/sampler.h"

struct sample_source;

struct sample_source_ops {
    const char *name; /* "read", "exact", "kernel", "idle" */
    /* Before the sampler's bookkeeping of an attempt at @now_ns (the due time
     * and jitter are still the attempt's own). */
    void (*before)(struct sample_source *src, uint64_t now_ns);
    /* The attempt at @now_ns, its bookkeeping done: read (or not), count,
     * give to the sinks. Returns 0, or -ESRCH when the process is gone. */
    int (*attempt)(struct sample_source *src, uint64_t now_ns);
    /* The @n attempts from the due one let pass on purpose (the budget); NULL: skipped. */
    void (*skip)(struct sample_source *src, uint64_t now_ns, uint64_t n);
    /* Work that waits outside the schedule (kernel samples), and the
     * descriptor that is readable while it does; the budget's factor. */
    int (*drain)(struct sample_source *src, uint64_t now_ns);
    int (*fd)(const struct sample_source *src);
    void (*factor)(struct sample_source *src, double factor);
    /* What the source knows of host thread @tid at this attempt, for cpu
     * mode: an enum cpucredit_known (sampler/cpucredit.h), CPUCREDIT_ASK
     * when nothing (the next source, then the thread's files, tell); and
     * its CPU time in *@cpu_ns if the source read it at this attempt
     * (schedstat's first number; left alone otherwise). */
    int (*on_cpu)(const struct sample_source *src, pid_t tid, uint64_t *cpu_ns);
    /* Parking (sampler.h). */
    bool (*parkable)(const struct sample_source *src);
    int (*park)(struct sample_source *src, int epfd, uint64_t token);
    bool (*parked)(const struct sample_source *src);
    void (*catch_up)(struct sample_source *src, uint64_t now_ns);
    void (*unpark)(struct sample_source *src, uint64_t now_ns, int epfd);
    /* What the source says of itself: sampler_idle_check(), sampler_native_counts(). */
    const char *(*idle_check)(const struct sample_source *src);
    enum idle_check (*idle_how)(const struct sample_source *src);
    bool (*native_counts)(const struct sample_source *src, struct nsampler_counts *out);
    /* Counts the source keeps itself, which stand for the sampler's
     * (@final: sampler_counts_final()); false: the sampler's own. */
    bool (*counts)(const struct sample_source *src, bool final, struct sampler_counts *out);
    void (*free)(struct sample_source *src);
};

struct sample_source {
    const struct sample_source_ops *ops;
    struct sample_source *next; /* a filter's: the source behind it; else NULL */
    struct sampler *s;          /* the sampler it feeds (borrowed) */
};

/* ---- the sources (each returns 0, or a negative errno and why) ---------- */

/** The scheduled read. Returns 0 or -ENOMEM. */
int sampler_read_new(struct sampler *s, struct sample_source **out);
/**
 * The exact path: stops every thread around each read; with @c_frames, reads
 * each stopped thread's C stack too (on failure of that part only, *@why says
 * why and the source reads without: the caller falls back to markers).
 * Returns 0; -EPERM when no thread can be stopped; -ENOMEM.
 */
int sampler_exact_new(struct sampler *s, bool c_frames, struct sample_source **out,
                      bool *c_frames_on, char *why, size_t whylen);
/** The kernel's samples (native: full). Returns 0, or a negative errno with why. */
int sampler_kernel_new(struct sampler *s, uint64_t now_ns, struct sample_source **out, char *why,
                       size_t whylen);
/** The idle filter in front of @next (takes it). Returns 0 or -ENOMEM (@next freed). */
int sampler_idle_new(struct sampler *s, struct sample_source *next, uint64_t now_ns,
                     struct sample_source **out);

/* ---- what a source may use of its sampler (sampler.c) -------------------- */

const struct sampler_opts *sampler_opts_of(const struct sampler *s);
pid_t sampler_pid(const struct sampler *s);
struct unwinder *sampler_unwinder(const struct sampler *s);
/** Thread @a ns_tid's TID as the kernel here knows it (the thread cache), or 0. */
pid_t sampler_host_tid(struct sampler *s, uint64_t ns_tid);
/** The sampler's counts, which the read and exact sources keep. */
struct sampler_counts *sampler_tally(struct sampler *s);
/** The unwinder's flags for this sampler's mode, with @extra. */
unsigned sampler_unwind_flags(const struct sampler *s, unsigned extra);

/**
 * Gives one stack of thread @t to every sink, under the coalescing contract
 * (sampler.h). @span: the thread's trace context (NULL: none); @plain: the
 * thread's own stack; @again_read: counted again without a read (the
 * thread's last span goes with it).
 */
void sampler_give(struct sampler *s, const struct unwind_thread *t,
                  const struct unwind_frame *frames, size_t nframes, const char *task,
                  const struct sample_span *span, bool plain, bool again_read);
/**
 * cpu mode: thread @t's stack was not given at this attempt (its read
 * failed, or its join): what its credit paid for it is owed again
 * (sampler/cpucredit.h). NULL: every thread's, the whole read failed.
 */
void sampler_unpaid(struct sampler *s, const struct unwind_thread *t);
/** Gives @x to every sink in full (no coalescing: joined or kernel stacks). */
void sampler_fan(struct sampler *s, const struct sink_sample *x);

/** The last read's result while it may be counted again (NULL: none). */
const struct unwind_result *sampler_last(const struct sampler *s);
void sampler_set_last(struct sampler *s, const struct unwind_result *r);
/** Counts an attempt answered without a read: @asleep: none on a CPU; else the last read again. */
void sampler_again(struct sampler *s, bool asleep);

/** The due time on the grid and the jitter of the attempt due now. */
uint64_t sampler_grid(const struct sampler *s);
uint64_t sampler_jitter(const struct sampler *s);
/**
 * An attempt due at @at made without a read (a parked target's, caught up):
 * the schedule moves on, the attempt is counted, as sampler_attempt()'s
 * bookkeeping does.
 */
void sampler_pass(struct sampler *s, uint64_t at);
/** The schedule only drains from @now_ns on, every @period_ns, on the grid (no jitter). */
void sampler_drain_schedule(struct sampler *s, uint64_t now_ns, uint64_t period_ns);

#endif /* PYPROFD_SAMPLER_SOURCE_H */
