/* SPDX-License-Identifier: MIT */
/*
 * asyncio.h: async-aware stacks (CPython 3.14+). Turns an unwinder sample
 * into *logical* stacks: for a thread whose event loop runs a task, the
 * frames of the running task's coroutines (from the thread's own stack, up to
 * and including the task's outermost coroutine), then a marker frame
 * "<task NAME>", then the suspended coroutine frames of the task awaiting it
 * and its marker, and so on up to a task nobody awaits (the root). In
 * ASYNCIO_ALL mode every suspended leaf task (one no task awaits) of a
 * sampled thread also becomes a sample of its own, with its await chain: one
 * sees where work waits.
 *
 * The offsets come from the target: the _Py_AsyncioModuleDebugOffsets table
 * (section .AsyncioDebug of the _asyncio extension module, or of the file
 * holding the runtime when _asyncio is built in) and the main table, both
 * validated once (python/pyasync.h). Finding the table is discovery's job
 * (discovery/pyruntime.h, pyruntime_find_asyncio()), done by the caller
 * between samples; the walker is told with asyncio_attach_table(), or
 * asyncio_refuse_table() when discovery found it malformed. States:
 *
 *   ASYNCIO_SEARCHING  from asyncio_new(): no table yet, plain stacks. The
 *                      table exists only once the target imported asyncio
 *                      (3.14 maps the extension module then): callers look
 *                      again at most every ASYNCIO_RESCAN_NS.
 *   ASYNCIO_ACTIVE     the table was attached and is valid: logical stacks.
 *   ASYNCIO_INVALID    the table failed validation, could not be read, or
 *                      discovery found it malformed (asyncio_why() says
 *                      which): plain stacks for good, never looked at again.
 *
 * What a sample reads, beyond the unwinder's own read: the running loop and
 * task of each thread come with the thread state (unwinder_set_thread_words,
 * no extra read); then one read per task on the running task's await chain,
 * one batched read for all task names, one batched read per coroutine level
 * of suspended tasks, and code objects not in the cache. ASYNCIO_ALL also
 * walks each sampled thread's task list (one read per task). Code objects
 * are read and cached by the unwinder (unwinder_resolve_code(): its reader,
 * its cache, its invalidation); when the walker's reads fill that cache, the
 * thread stacks of the sample are resolved again, and a sample whose code
 * objects do not fit the cache together gets SAMPLE_NO_MEMORY.
 *
 * Torn reads: the graph changes while it is read. The running task's
 * coroutine must be on its thread's stack (else the loop is between two
 * steps of the task, in C, and the thread's own stack is kept: counted as
 * outside_task); a task object must look like one (flags 0/1, a name that is
 * a str or an int); an await chain may not loop or exceed its cap. A thread
 * whose graph fails these gets SAMPLE_ASYNC_TORN and no sample, never a
 * made-up chain.
 *
 * Memory: everything is allocated by asyncio_new() and bounded (tasks,
 * frames, waiters per sample); asyncio_sample() does not allocate, log, open
 * files or read /proc: it reads the target's memory only. Thread safety: one
 * thread at a time (the one that samples), except asyncio_state() and
 * asyncio_why(), which any thread may call.
 */
#ifndef PYPROFD_UNWIND_ASYNCIO_H
#define PYPROFD_UNWIND_ASYNCIO_H

#include "base/compat.h"

#include "memread/memread.h"
#include "python/pyasync.h"
#include "unwind/unwind.h"

#define ASYNCIO_MAX_TASKS   2048u  /* tasks looked at per sample */
#define ASYNCIO_MAX_WAITERS 8192u  /* awaited-by edges per sample */
#define ASYNCIO_MAX_FRAMES  16384u /* frames of logical stacks per sample */
#define ASYNCIO_MAX_CHAIN   64u    /* coroutines per task (await inside await) */
#define ASYNCIO_MAX_DEPTH   128u   /* tasks from a leaf task to its root */
/* A task name is kept to 255 code points, as CPython's own tools show it,
 * cut on a character boundary: at most this many bytes of UTF-8. */
#define ASYNCIO_NAME_CHARS 255u
#define ASYNCIO_NAME_MAX   (4u * ASYNCIO_NAME_CHARS)
/* Bytes of task names (and their "<task NAME>" markers) one sample keeps:
 * when the names of a sample's tasks need more, later ones are cut to fit. */
#define ASYNCIO_NAME_ARENA (256u << 10)
/* While ASYNCIO_SEARCHING, callers look for the table at most this often. */
#define ASYNCIO_RESCAN_NS 1000000000ull

enum asyncio_mode {
    ASYNCIO_RUNNING, /* the running task of each thread */
    ASYNCIO_ALL,     /* ... and every suspended leaf task, each as its own sample */
};

/** "running", "all". */
const char *asyncio_mode_name(enum asyncio_mode m);
/** Parses a mode name. Returns 0 or -EINVAL. */
PYPROFD_WARN_UNUSED int asyncio_mode_parse(const char *name, enum asyncio_mode *out);

/** Where the walker is with its table (see above). */
enum asyncio_state {
    ASYNCIO_SEARCHING, /* no table yet: asyncio not imported (plain stacks meanwhile) */
    ASYNCIO_ACTIVE,    /* the table was attached and is valid */
    ASYNCIO_INVALID,   /* the table is unusable (asyncio_why): plain stacks */
};

/** One sample to count: a thread's own stack, a logical stack, or a suspended task. */
struct asyncio_sample {
    size_t thread;             /* index into the unwind result's threads */
    const char *task_name;     /* NULL: the thread's own stack (frames as the unwinder gave) */
    enum sample_status status; /* SAMPLE_OK, or SAMPLE_ASYNC_TORN / the thread's failure */
    bool suspended;            /* ASYNCIO_ALL: a suspended task, not the thread's activity */
    size_t nframes;
    const struct unwind_frame *frames; /* leaf first */
};

/** A task seen by a sample (ASYNCIO_ALL: every task of the sampled threads). */
struct asyncio_task {
    uint64_t raddr;
    const char *name;
    size_t thread;   /* index into the unwind result's threads */
    bool running;    /* its thread's running task */
    size_t nwaiters; /* tasks awaiting it (their addresses in waiters) */
    const uint64_t *waiters;
    size_t nframes; /* its coroutines, leaf first (the running task: from its thread's stack) */
    const struct unwind_frame *frames;
};

/** The result of one asyncio_sample(); owned by the walker, valid until its next call. */
struct asyncio_result {
    size_t nsamples;
    const struct asyncio_sample *samples;
    size_t ntasks;
    const struct asyncio_task *tasks;
};

struct asyncio_counts {
    uint64_t logical;      /* threads counted with a running task's logical stack */
    uint64_t suspended;    /* suspended-task samples (ASYNCIO_ALL) */
    uint64_t outside_task; /* a running task whose coroutine was not on the stack */
    uint64_t torn;         /* threads dropped with SAMPLE_ASYNC_TORN */
};

struct asyncio;

/**
 * Prepares async-aware stacks for the target sampled by @a u through @a mr
 * (both borrowed; they must outlive the walker), whose runtime is @a rt
 * (borrowed for the call: its version and address are kept). The walker
 * starts ASYNCIO_SEARCHING: plain stacks until asyncio_attach_table().
 * Returns 0; -ENOTSUP when the version has no asyncio table (CPython 3.13:
 * @a why says so, plain stacks only); -ENOMEM.
 */
PYPROFD_WARN_UNUSED int asyncio_new(struct unwinder *u, struct memread *mr,
                                    const struct pyruntime *rt, enum asyncio_mode mode,
                                    struct asyncio **out, char *why, size_t why_len);

/**
 * Gives the walker its asyncio debug table: the @a size bytes at @a raddr in
 * the target (discovery's pyruntime_find_asyncio()). Reads it together with
 * the main table, validates both (python/pyasync.h) and switches async
 * walking on. Returns 0 (ASYNCIO_ACTIVE); -EPROTO when the table is too
 * small, cannot be read or fails validation (ASYNCIO_INVALID: asyncio_why()
 * says why); -ESRCH when the process is gone (still ASYNCIO_SEARCHING);
 * -EALREADY unless ASYNCIO_SEARCHING. Between samples, on the thread that
 * samples: it changes what the unwinder reads with each thread state.
 */
PYPROFD_WARN_UNUSED int asyncio_attach_table(struct asyncio *a, uint64_t raddr, uint64_t size);

struct pyruntime;
struct pyruntime_asyncio_memo;

/**
 * The caller's search in one call, between samples: while @a a is
 * ASYNCIO_SEARCHING, looks for its table in process @a pid (its /proc files
 * under @a proc_root, its runtime @a rt, the files already looked at in
 * @a memo) with discovery's pyruntime_find_asyncio(), and attaches it
 * (asyncio_attach_table()) or refuses a malformed one
 * (asyncio_refuse_table()). Not found yet: nothing changes; look again
 * later. asyncio_state() says what became of it. NULL @a a is a no-op.
 */
void asyncio_search(struct asyncio *a, const char *proc_root, pid_t pid, const struct pyruntime *rt,
                    struct pyruntime_asyncio_memo *memo);

/**
 * Records that discovery found the table malformed (@a why, copied as
 * valid UTF-8, says how): ASYNCIO_INVALID, plain stacks for good. A no-op unless
 * ASYNCIO_SEARCHING. Thread safety: as asyncio_attach_table().
 */
void asyncio_refuse_table(struct asyncio *a, const char *why);

/**
 * Turns the unwinder's latest result @a r (from unwinder_sample() on the
 * walker's unwinder, just before) into samples. Always returns a result in
 * @a out listing every thread of @a r, in order, followed by ASYNCIO_ALL's
 * suspended tasks; threads whose sample failed keep their status. Reads the
 * target's memory only. Returns 0, or -ESRCH when the process is gone.
 */
PYPROFD_WARN_UNUSED int asyncio_sample(struct asyncio *a, const struct unwind_result *r,
                                       const struct asyncio_result **out);

/** The table's state; safe from any thread. */
enum asyncio_state asyncio_state(const struct asyncio *a);
/** Why the table is ASYNCIO_INVALID ("" otherwise); safe from any thread once INVALID. */
const char *asyncio_why(const struct asyncio *a);
struct asyncio_counts asyncio_counts(const struct asyncio *a);
/** The mode the walker was made with. */
enum asyncio_mode asyncio_get_mode(const struct asyncio *a);
/** The validated layout, or NULL until the table is found. */
const struct pyasync_layout *asyncio_layout(const struct asyncio *a);

/** Frees; NULL is a no-op. Stops the unwinder's extra thread-state words. */
void asyncio_free(struct asyncio *a);

#endif /* PYPROFD_UNWIND_ASYNCIO_H */
