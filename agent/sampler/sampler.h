/* SPDX-License-Identifier: MIT */
/*
 * sampler.h: stage 3. Samples one target on its fixed schedule
 * (sampler/schedule.h) in one of four modes, and hands the samples the mode
 * keeps to its sinks (struct sample_sink, pipeline.h): the aggregation window
 * (agg_sink(), aggregate/agg.h), profile requests' taps, `top`'s counts. The agent,
 * `record` and `top` all sample through it:
 *
 *   wall       every sampled thread, whatever it does;
 *   cpu        threads running on a CPU, not waiting for one (issue 38:
 *              sampler/cpucredit.h says how each source knows);
 *   gil        threads holding the GIL;
 *   exception  threads handling an exception.
 *
 * The mode's test runs before a thread's frames are read. Each kept thread
 * sample is worth one sampling interval of its mode's time (in cpu mode a
 * thread's credit may count one stack for a few intervals at once).
 *
 * Outcomes are counted, never logged: attempts taken, attempts failed (by
 * status: the process went away, a torn stack, a read fault, ...), and
 * attempts missed because the sampler could not keep up. None is folded into
 * the profile. An attempt the idle check answers without a read (idle_check)
 * is taken, and also counted as saved; the thread samples it counts again as
 * reused. An attempt that read a torn stack or task graph (status_torn(),
 * base/status.def) is read again at once, one time, and counted as retried.
 *
 * With blocking set, every thread of the target is stopped with ptrace around
 * each sample (exact stacks, at a cost to the target); with native_full too,
 * each thread's C stack is read while it is stopped (the exact path).
 *
 * With native_full, the kernel drives: each thread of the target is sampled
 * every interval of its own CPU time (a perf event), and sampler_native_fd()
 * becomes readable when samples wait; the caller then calls
 * sampler_native_drain() soon (each sample is kept only when the Python
 * stack is read within a millisecond of the thread's CPU time). The
 * scheduled attempts then only drain what waits and look for new threads,
 * every SAMPLER_NATIVE_DRAIN_NS. Counts: attempts are the kernel's samples.
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

#include "base/status.h"
#include "unwind/asyncio.h"
#include "pipeline.h"
#include "sampler/report.h"
#include "sampler/runwatch.h"
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
    /* native: full (not with async): without blocking (mode cpu only), the
     * samples come from the kernel's samples of each thread, every
     * interval_ns of its CPU time, with their C frames (sampler/nsampler.h),
     * not from the schedule. With blocking (any mode), the exact path: on
     * the schedule, each stopped thread's registers (PTRACE_GETREGS) and the
     * top of its stack are read with its Python stack, and unwound after the
     * resume (no time between the two reads: nothing late).
     * Where perf events are refused the sampler falls back to the schedule
     * with UNWIND_NATIVE markers, and sampler_native() says why. */
    bool native_full;
    uint32_t native_stack; /* bytes of user stack per kernel sample; 0: the default */
    /* Idle threads (sampler/runwatch.h): before each attempt, whether the
     * threads ran since the last read; when none did, the attempt counts
     * that read's stacks again (in cpu mode: when every thread is asleep,
     * it finds none on a CPU) without reading the target. IDLE_CHECK_OFF (0): every attempt reads.
     * Not with blocking, native_full or (counting again) async. */
    enum idle_check idle_check;
};

/** How often a native_full sampler's scheduled attempt drains (and looks for new threads). */
#define SAMPLER_NATIVE_DRAIN_NS 100000000ull

/**
 * Sinks besides the window that a sampler may also feed at once
 * (sampler_add_tap()): one per running profile request, so at least the
 * most server.max_concurrent_profiles allows (CONFIG_MAX_CONCURRENT_PROFILES,
 * checked in loop_requests.c). A sampler visits its sinks up to the highest
 * slot in use, so one with no tap visits only its window; what the slots
 * cost is a sink (24 bytes) each and a byte per cached thread (of
 * SAMPLER_THREADS) each: 15 KiB of a sampler's 44 KiB (29 KiB with 4).
 */
#define SAMPLER_MAX_TAPS 64

struct sampler;
struct nsampler_counts;

/**
 * Prepares sampling of @a pid through @a u (borrowed; the unwinder of that
 * process) into @a window (copied; what it points to is borrowed): the sink
 * whose takes count as thread samples. The schedule starts at @a now_ns.
 * Returns 0, -EINVAL for bad options (native_full with async, or without
 * blocking in a mode other than cpu), -EPERM when blocking cannot attach, -ENOMEM. A refusal
 * of native_full is no error: the sampler falls back (sampler_native()).
 */
PYPROFD_WARN_UNUSED int sampler_new(pid_t pid, struct unwinder *u, const struct sample_sink *window,
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
 * From the next attempt on, gives samples to @a window (copied) instead of
 * the current window sink, whose window the caller may then hand to an
 * encoder. No sample is lost or counted twice across the switch.
 */
void sampler_set_window(struct sampler *s, const struct sample_sink *window);

/**
 * Also gives every sample to @a tap (copied; its arg is borrowed until
 * sampler_remove_tap()), for a profile that spans other times than the
 * windows (an HTTP request's N seconds). Returns 0, or -EBUSY when
 * SAMPLER_MAX_TAPS taps are attached.
 */
PYPROFD_WARN_UNUSED int sampler_add_tap(struct sampler *s, const struct sample_sink *tap);
/** Detaches the tap whose arg is @a arg; none is a no-op. */
void sampler_remove_tap(struct sampler *s, const void *arg);

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

/**
 * What native_full came to: NULL when it was not asked for; "full" when the
 * kernel's samples are read; else "markers: " and why perf events were
 * refused (a fallback). Owned by @a s.
 */
const char *sampler_native(const struct sampler *s);

struct otel_thread;

/**
 * Reads each sampled thread's OpenTelemetry thread context through @a t
 * (borrowed; NULL: stop) with every scheduled read from now on: the samples
 * carry the span (struct sink_sample.span), and a thread whose span changed
 * is not counted as a repeat of its last stack. Not with native_full's
 * kernel samples (they are taken asynchronously). Returns 0, or -ENOMEM
 * (the sampler keeps a span per cached thread: 8 KiB, allocated at the first
 * set).
 */
PYPROFD_WARN_UNUSED int sampler_set_trace_context(struct sampler *s, struct otel_thread *t);

/** The reader sampler_set_trace_context() set, or NULL. */
struct otel_thread *sampler_trace_context(const struct sampler *s);

struct otel_sdk;

/**
 * Reads each sampled thread's current span as the OpenTelemetry Python SDK
 * keeps it, through @a k (borrowed; NULL: stop), for the threads the
 * published thread context (sampler_set_trace_context()) gives none: the
 * thread state's context comes with every thread's read (the unwinder's
 * UNWIND_WORD_CONTEXT). As sampler_set_trace_context() otherwise. Returns 0,
 * -ENOMEM or -EINVAL (an offset the unwinder refuses).
 */
PYPROFD_WARN_UNUSED int sampler_set_sdk_context(struct sampler *s, struct otel_sdk *k);

/** The reader sampler_set_sdk_context() set, or NULL. */
struct otel_sdk *sampler_sdk_context(const struct sampler *s);

/** With native: full asked for and refused: why (the words after "markers: "); else NULL. */
const char *sampler_native_refused(const struct sampler *s);

/** With native: full active, its epoll descriptor (readable when samples wait); else -1. */
int sampler_native_fd(const struct sampler *s);

/**
 * Processes the kernel's samples that wait (native: full), at @a now_ns.
 * Returns 0 (also when native: full is not active), or -ESRCH when the
 * process is gone.
 */
int sampler_native_drain(struct sampler *s, uint64_t now_ns);

/**
 * With native: full active, samples every interval / @a factor of each
 * thread's CPU time from now on (the agent's CPU budget: the kernel takes
 * fewer samples; each stands for the longer period). A no-op otherwise.
 */
void sampler_native_factor(struct sampler *s, double factor);

/**
 * Parking (the agent; idle_check perf): a target whose attempts have been
 * answered without a read SAMPLER_PARK_AFTER times in a row (its threads are
 * idle) need not be attempted at all until one of its threads runs: each
 * watched thread's waker (sampler/runwatch.h) then makes a descriptor in
 * the caller's epoll set @a epfd readable with @a token, and the caller
 * unparks it. Meanwhile sampler_catch_up() counts the attempts that fell
 * due, each as the answer it would have had (the wakers' records say when a
 * thread first ran; those due within the schedule's usual lateness before
 * that are left to the unpark, which makes them at once, reading): call it
 * before the sinks change (a window cut, a tap) and before reading the
 * counts. sampler_park() returns 0, or a negative
 * errno when the target stays on the schedule.
 */
bool sampler_parkable(const struct sampler *s);
PYPROFD_WARN_UNUSED int sampler_park(struct sampler *s, int epfd, uint64_t token);
bool sampler_parked(const struct sampler *s);
void sampler_catch_up(struct sampler *s, uint64_t now_ns);
/** Catches up to @a now_ns and puts the target back on its schedule. */
void sampler_unpark(struct sampler *s, uint64_t now_ns, int epfd);

/** How idle threads are found (idle_check): runwatch_describe()'s words, or NULL when off. */
const char *sampler_idle_check(const struct sampler *s);
/** ... as a value: what the watch does now (IDLE_CHECK_OFF when the sampler does not look). */
enum idle_check sampler_idle_how(const struct sampler *s);

/** The counts of the kernel's samples (native: full active): true; else false. */
bool sampler_native_counts(const struct sampler *s, struct nsampler_counts *out);

#endif /* PYPROFD_SAMPLER_SAMPLER_H */
