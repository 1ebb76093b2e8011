/* SPDX-License-Identifier: MIT */
/*
 * unwind.h: stage 2 of the pipeline. Reads the Python stacks of a live
 * process from outside, without stopping it, through the memread seam and the
 * target's own validated offsets (python/pyabi.h).
 *
 * One sample: runtime -> interpreters (all, sub-interpreters included) ->
 * threads (the main thread of the main interpreter, or all with
 * UNWIND_ALL_THREADS) -> frames. Each thread's data-stack chunks are copied
 * whole and the frame chain is walked in that local copy, so one read covers
 * dozens of frames and the stack is read as one near-consistent image. Frames
 * outside the chunks (entry frames on the C stack, generator frames, the 3.15
 * base frame) are read one by one.
 *
 * A walk is checked for tearing: on 3.15 it must end exactly at the thread's
 * base frame; on 3.13/3.14 at an entry frame with no previous frame. A chain
 * that loops, exceeds UNWIND_MAX_DEPTH, holds an impossible frame owner or
 * cannot be read gives the thread a failure status (base/status.h) and no
 * frames: a torn stack is counted, never reported as a real one. A code object
 * that cannot be read degrades to "<unreadable frame>" / "<unknown function>"
 * / "<unknown file>", never to a lost sample.
 *
 * Code-object metadata is cached (unwind/codecache.h) and invalidated by the
 * interpreter's code_object_generation (3.14+) or, on 3.13, by re-reading the
 * cached code objects in one batched read per sample and comparing fields.
 * See docs/unwinder.md.
 *
 * The code cache and its reader are shared with the asyncio walker of the
 * same target (unwinder_resolve_code()): one copy of each code object's
 * names and line table, one invalidation.
 *
 * Memory: in proportion to use. unwinder_new() allocates small: the frame
 * slots, the walked chain and the code cache start small and double when a
 * sample needs more than any before, up to UNWIND_MAX_FRAMES /
 * UNWIND_MAX_DEPTH / the cache's caps (unwind/codecache.h); that growth is
 * the only allocation unwinder_sample() makes (a few times in an unwinder's
 * life, never in steady state), and it never logs. The buffers a sample uses
 * and leaves nothing in (chunk copies, their re-reads, the visited set, the
 * line-table buffer: ~2.3 MiB) are a struct unwind_scratch, which the
 * unwinders of one sampling thread share (unwinder_new_shared()) or each
 * unwinder owns (unwinder_new()).
 *
 * Thread safety: one thread at a time per unwinder; unwinders that share a
 * scratch must all be used (sampled, unwinder_resolve_code(),
 * unwinder_resolve_again()) from one thread at a time, as one sampling
 * thread does when it samples its targets one after another.
 */
#ifndef PYPROFD_UNWIND_UNWIND_H
#define PYPROFD_UNWIND_UNWIND_H

#include "base/compat.h"

#include "base/status.h"
#include "memread/memread.h"
#include "pipeline.h"
#include "python/pyabi.h"
#include "unwind/linetable.h"

/* UNWIND_MAX_DEPTH, UNWIND_THREAD_WORDS, the frame and the thread sample
 * (struct unwind_frame, unwind_thread, unwind_result) are in pipeline.h. */
#define UNWIND_MAX_THREADS      512u /* threads per sample */
#define UNWIND_MAX_INTERPRETERS 256u
#define UNWIND_MAX_FRAMES       65536u /* frames per sample, all threads */

enum unwind_flags {
    UNWIND_ALL_THREADS = 1 << 0, /* every thread of every interpreter */
    UNWIND_NATIVE = 1 << 1,      /* <native> where C called back into Python */
    UNWIND_NO_GC = 1 << 2,       /* no <GC> marker */
    /* Modes: threads that do not qualify are left out before their frames
     * are read (they cost the thread-state read only). */
    UNWIND_ONLY_GIL = 1 << 3,       /* threads holding the GIL */
    UNWIND_ONLY_EXCEPTION = 1 << 4, /* threads handling an exception */
    UNWIND_ONLY_ON_CPU = 1 << 5,    /* threads the kernel has on a CPU (see unwinder_set_on_cpu) */
    UNWIND_OPCODES = 1 << 6, /* each Python frame's current opcode (one more read per sample) */
    /* For mixed stacks (unwind/mixed.h), 3.12+: a <native> marker at every
     * entry frame, the outermost included, with frame_raddr the entry
     * frame's address, which is on the C stack, in the frame of the
     * evaluation loop that pushed it. Implies UNWIND_NATIVE's markers. */
    UNWIND_ENTRIES = 1 << 7,
};

struct pyruntime; /* discovery/pyruntime.h: where the runtime is */
struct unwinder;
struct unwind_scratch;

/**
 * A scratch for the unwinders of one sampling thread (see above): allocated
 * whole (~2.3 MiB, mostly untouched until a deep stack needs it). Owned by
 * the caller, who frees it after every unwinder using it. Returns 0 or
 * -ENOMEM.
 */
PYPROFD_WARN_UNUSED int unwind_scratch_new(struct unwind_scratch **out);

/** Frees; NULL is a no-op. */
void unwind_scratch_free(struct unwind_scratch *s);

/**
 * Attaches to the runtime @a rt (from pyruntime_locate()) through @a mr
 * (borrowed; must outlive the unwinder): reads the _Py_DebugOffsets table,
 * validates it and allocates every buffer sampling needs. Returns 0; -ENOTSUP
 * (unsupported version, or free-threaded) or -EPROTO (table fails validation)
 * with the reason in @a why; memread errors; -ENOMEM.
 */
PYPROFD_WARN_UNUSED int unwinder_new(struct memread *mr, const struct pyruntime *rt,
                                     struct unwinder **out, char *why, size_t why_len);

/**
 * unwinder_new() with the per-sample buffers in @a scratch (borrowed; must
 * outlive the unwinder; every unwinder sharing it used from one thread at a
 * time). @a scratch NULL: the unwinder allocates its own.
 */
PYPROFD_WARN_UNUSED int unwinder_new_shared(struct memread *mr, const struct pyruntime *rt,
                                            struct unwind_scratch *scratch, struct unwinder **out,
                                            char *why, size_t why_len);

/**
 * Takes one sample with @a flags (enum unwind_flags). Returns 0 and the
 * result in @a out (per-thread status inside), or a negative errno when no
 * thread could be looked at, with *@a status saying why: SAMPLE_PROCESS_GONE,
 * SAMPLE_PERMISSION, SAMPLE_READ_FAULT, SAMPLE_NOT_INITIALIZED,
 * SAMPLE_FINALIZING.
 *
 * Without UNWIND_ALL_THREADS, while the main interpreter is first in the
 * list and its threads.main is set (CPython's main() is running the main
 * module), the runtime's interpreter list head and finalizing flag are not
 * read: threads.main, read in the same call as the thread, says the runtime
 * is initialised and not finalizing (docs/unwinder.md). An embedding program
 * that never sets threads.main has them read on every sample.
 */
PYPROFD_WARN_UNUSED int unwinder_sample(struct unwinder *u, unsigned flags,
                                        const struct unwind_result **out,
                                        enum sample_status *status);

/**
 * Sets how UNWIND_ONLY_ON_CPU asks whether a thread (by its native thread id
 * as the target sees it) is on a CPU; without it every thread qualifies.
 * @a ctx is borrowed.
 */
void unwinder_set_on_cpu(struct unwinder *u, bool (*on_cpu)(void *ctx, uint64_t native_tid),
                         void *ctx);

/**
 * Sets how the unwinder lists the target's threads: @a list fills @a tids
 * with the ids of the target's threads as the target sees them (its own PID
 * namespace), at most @a max, sets *@a n and returns 0, or a negative errno
 * (-E2BIG when there are more than @a max: that listing is not used). @a ctx
 * is borrowed; NULL @a list: thread ids are taken as the thread states give
 * them (the default).
 *
 * With it, a thread state whose TID is none of the target's threads (a
 * process forked without CPython's after-fork hook keeps its parent's) is
 * resolved (unwind_thread.tid_source): to the TID glibc keeps in the
 * thread's struct pthread when that is the target's; to the only thread of
 * a single-threaded process for the main thread state alone in its
 * interpreter when no pthread TID can be had; else it keeps the TID it
 * names, as UNWIND_TID_GONE (its pthread names no thread of the target: it
 * does not run here, and UNWIND_ONLY_ON_CPU leaves it out) or
 * UNWIND_TID_UNRESOLVED (UNWIND_ONLY_ON_CPU keeps it without asking). The
 * list is asked for at the first sample, then only when a thread state
 * names a TID it does not hold (a new thread), at most once per sample; a
 * resolution is kept per thread state until the list changes. A sample
 * never allocates or logs for it. docs/unwinder.md §6.
 */
void unwinder_set_tasks(struct unwinder *u,
                        int (*list)(void *ctx, uint64_t *tids, size_t max, size_t *n), void *ctx);

/**
 * Asks every sampled thread's read to also bring the 8-byte words at
 * @a offsets into unwind_thread.words[@a first .. @a first + @a n), in the
 * same system call as the thread state (each validated by the caller to lie
 * inside the thread state, and offset + 8 <= PYABI_MAX_TSTATE). Slots belong
 * to their users: UNWIND_WORDS_ASYNCIO (asyncio's running loop, task and task
 * list) and UNWIND_WORD_CONTEXT (the context variables, unwind/otel_sdk.h).
 * @a offsets NULL stops those @a n slots (read as 0 from then on). Returns 0,
 * or -EINVAL for a bad offset or slot.
 */
PYPROFD_WARN_UNUSED int unwinder_set_thread_words(struct unwinder *u, size_t first,
                                                  const uint32_t *offsets, size_t n);

/**
 * A number that changes whenever names the unwinder handed out may be gone:
 * its code cache was cleared (an interpreter's code_object_generation moved,
 * or the cache was full) or an entry dropped (a 3.13 re-check failed).
 */
uint64_t unwinder_code_epoch(const struct unwinder *u);

/**
 * Resolves a Python frame the walk did not see (a suspended coroutine's, for
 * unwind/asyncio.h): the code object at @a code_raddr executing the
 * instruction at @a instr_ptr (in bytecode copy @a tlbc of a free-threaded
 * 3.14+ target: the frame's tlbc_index; 0 otherwise), through the unwinder's
 * code cache and its reader, into @a f as unwinder_sample() would (kind UNWIND_FRAME_PYTHON, or
 * UNWIND_FRAME_UNREADABLE with placeholder names; frame_raddr 0). Returns
 * false when the code object could not be read. Strings belong to the
 * unwinder, valid until its next sample or until the cache is cleared.
 *
 * Reading a code object into a full cache clears it: unwinder_code_epoch()
 * then moves, and the names of frames resolved before, this sample's own
 * included, are gone: see unwinder_resolve_again(). Call it between
 * unwinder_sample() calls, from the thread that samples; it does not
 * allocate.
 */
bool unwinder_resolve_code(struct unwinder *u, uint64_t code_raddr, uint64_t instr_ptr,
                           uint32_t tlbc, struct unwind_frame *f);

/**
 * Resolves the frames of the latest sample again, after
 * unwinder_resolve_code() cleared the code cache under them (the frames are
 * kept raw, so no remote read but code objects); each thread gets a new
 * stack_key. Returns false when the cache filled up and was cleared again
 * meanwhile: this sample's names cannot all be trusted.
 */
PYPROFD_WARN_UNUSED bool unwinder_resolve_again(struct unwinder *u);

/** The validated layout in use. */
const struct py_layout *unwinder_layout(const struct unwinder *u);

/** Frees; NULL is a no-op. The memread is not closed. */
void unwinder_free(struct unwinder *u);

#endif /* PYPROFD_UNWIND_UNWIND_H */
