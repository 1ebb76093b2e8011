/* SPDX-License-Identifier: MIT */
/*
 * pipeline.h: the types that cross stages, in data-flow order. Each stage
 * includes this instead of the header of the stage that produces the value,
 * so a later stage never compiles against an earlier stage's internals (an
 * exporter never sees CPython's ABI tables, the aggregation never sees the
 * unwinder):
 *
 *   discovery -> unwind -> sampler -> aggregate -> pprof -> exporters
 *
 *   enum profile_mode   what a sample stands for; chosen by the config or
 *                       the command line, obeyed by the sampler, named in
 *                       pprof's sample type and in push series names;
 *   struct unwind_frame one frame of a sampled stack with its source
 *                       position (struct linetable_pos): made by the
 *                       unwinder, counted by the aggregation;
 *   struct unwind_thread one sampled thread (flags, status, frames) and
 *   struct unwind_result one sample of a process (its threads): from the
 *                       unwinder to the sampler;
 *   struct sink_sample  one thread's stack as the sampler hands it on, and
 *   struct sample_sink  where it goes (the aggregation window, a profile
 *                       request's tap, top's counts): from the sampler to
 *                       whatever consumes samples, which the sampler never
 *                       includes;
 *   struct window_meta  what goes with one finished window of one target
 *                       from the sampling thread to the encoder and every
 *                       output.
 *
 * The frame and thread types keep the unwind_ prefix of the stage that makes
 * them; unwind/unwind.h includes this header for them.
 *
 * Header only; no state. See docs/architecture.md.
 */
#ifndef PYPROFD_PIPELINE_H
#define PYPROFD_PIPELINE_H

#include "base/compat.h"

#include "base/labels.h"
#include "base/status.h"

/** What a sample stands for (docs/usage.md, "Modes"). */
enum profile_mode {
    PROFILE_WALL,      /* every sampled thread, whatever it does */
    PROFILE_CPU,       /* threads the kernel has on a CPU */
    PROFILE_GIL,       /* threads holding the GIL */
    PROFILE_EXCEPTION, /* threads handling an exception */
    PROFILE_MODES      /* how many */
};

/** "wall", "cpu", "gil", "exception" (the config's and pprof's names), or "?". */
static inline const char *profile_mode_name(enum profile_mode m)
{
    switch (m) {
    case PROFILE_WALL:
        return "wall";
    case PROFILE_CPU:
        return "cpu";
    case PROFILE_GIL:
        return "gil";
    case PROFILE_EXCEPTION:
        return "exception";
    case PROFILE_MODES:
    default:
        return "?";
    }
}

/** Parses a mode's name. Returns 0, or -EINVAL for anything else. */
static inline int profile_mode_parse(const char *name, enum profile_mode *out)
{
    for (int m = 0; m < PROFILE_MODES; m++) {
        if (strcmp(name, profile_mode_name((enum profile_mode)m)) == 0) {
            *out = (enum profile_mode)m;
            return 0;
        }
    }
    return -EINVAL;
}

/**
 * How a sampler finds that no thread of its target ran since the last read
 * (docs/agent.md, "Idle threads cost no reads"): one enum from the
 * configuration (a job's idle_check, record's --idle-check) to the watch
 * that does it (sampler/runwatch.h) and /metrics. 0 is off.
 */
enum idle_check {
    IDLE_CHECK_OFF,       /* every attempt reads */
    IDLE_CHECK_SCHEDSTAT, /* /proc/PID/task/TID/schedstat */
    IDLE_CHECK_PERF,      /* context-switch records (falls back to schedstat) */
    IDLE_CHECK_HOWS       /* how many */
};

/** "off", "schedstat", "perf" (the config's names, and /metrics' method label). */
static inline const char *idle_check_name(enum idle_check h)
{
    switch (h) {
    case IDLE_CHECK_SCHEDSTAT:
        return "schedstat";
    case IDLE_CHECK_PERF:
        return "perf";
    case IDLE_CHECK_OFF:
    case IDLE_CHECK_HOWS:
    default:
        return "off";
    }
}

#define UNWIND_MAX_DEPTH     1536u /* frames per thread, markers included */
#define UNWIND_THREAD_WORDS  4u    /* see unwinder_set_thread_words() */
#define UNWIND_WORDS_ASYNCIO 0u    /* slots 0-2: asyncio's (unwind/asyncio.h) */
#define UNWIND_WORD_CONTEXT  3u    /* slot 3: tstate->context (unwind/otel_sdk.h) */

/** A position field that is not known (co_positions() reports None). */
#define LINETABLE_UNKNOWN (-1)

/** A source position (unwind/linetable.h); each field may be LINETABLE_UNKNOWN. */
struct linetable_pos {
    int32_t line;     /* first line, 1-based (0 for a module's RESUME) */
    int32_t end_line; /* last line */
    int32_t col;      /* first column, 0-based UTF-8 byte offset */
    int32_t end_col;  /* one past the last column */
};

enum unwind_frame_kind {
    UNWIND_FRAME_PYTHON,
    UNWIND_FRAME_NATIVE,     /* synthetic "<native>" */
    UNWIND_FRAME_GC,         /* synthetic "<GC>" */
    UNWIND_FRAME_UNREADABLE, /* its code object could not be read */
    UNWIND_FRAME_TASK,       /* synthetic "<task NAME>" of async-aware stacks (unwind/asyncio.h) */
    UNWIND_FRAME_C,          /* a native (C) function of a mixed stack (unwind/mixed.h) */
};

/**
 * Where a native frame's code is (UNWIND_FRAME_C): one loaded file of the
 * target, as pprof's Mapping says it, so that a server (Parca, Pyroscope)
 * can symbolise by build id what the node could not.
 */
struct frame_mapping {
    const char *file;     /* the path as the target names it */
    const char *build_id; /* lowercase hex of the GNU build id, or "" */
    uint64_t start;       /* the file's lowest mapped address... */
    uint64_t limit;       /* ...and one past its highest */
    uint64_t offset;      /* the file offset mapped at start */
};

/** One frame. Strings belong to the unwinder and stay valid until its next sample. */
struct unwind_frame {
    enum unwind_frame_kind kind;
    const char *function; /* co_qualname, or a marker name */
    const char *file;     /* co_filename; "~" for markers */
    int32_t first_line;   /* co_firstlineno; 0 for markers and unreadable frames */
    uint64_t code_raddr;
    struct linetable_pos pos; /* of the current instruction; fields may be LINETABLE_UNKNOWN */
    /* Identity of (function, file, first_line), for consumers that memoize
     * per code object: two frames with the same non-zero code_id, from any
     * unwinder of this process at any time, have equal function, file and
     * first_line. Never reused (a code object freed and its address reused,
     * another process, a cleared cache: a new id). 0: not known (frames built
     * by hand). */
    uint64_t code_id;
    /* The _PyInterpreterFrame this frame was read from (0 for markers): a
     * coroutine's frame is at a fixed place inside it, which is how
     * async-aware stacks find where the running task starts. */
    uint64_t frame_raddr;
    /* With UNWIND_OPCODES, a Python frame's current instruction as the
     * interpreter has it now (a specialized form where the adaptive
     * interpreter rewrote it): its opcode, its name, the name of the
     * instruction it specializes and the marker profiles show for it
     * (python/pyopcode.h). opname NULL: not asked for, not a Python frame,
     * or not readable. */
    const char *opname, *opbase, *opmarker;
    uint8_t opcode;
    /* UNWIND_FRAME_C: the frame's address (the sampled instruction, or a
     * return address) and the file it is in (NULL: none known); 0 and NULL
     * for every other kind */
    uint64_t pc;
    const struct frame_mapping *mapping;
};

enum unwind_thread_flags {
    UNWIND_THREAD_MAIN = 1 << 0,
    UNWIND_THREAD_HOLDS_GIL = 1 << 1,
    UNWIND_THREAD_GIL_REQUESTED = 1 << 2, /* 3.15 only */
    UNWIND_THREAD_HAS_EXCEPTION = 1 << 3,
    UNWIND_THREAD_IN_GC = 1 << 4, /* its interpreter is collecting garbage */
};

/**
 * Where a thread's native_thread_id comes from (docs/unwinder.md §6, "Thread
 * ids that are not the process's"). A thread state keeps the TID of the
 * thread that made it; a process forked without CPython's after-fork hook
 * (uWSGI's workers, an embedder) keeps its parent's. With a task lister
 * (unwinder_set_tasks()) each TID is checked against the target's threads.
 */
enum unwind_tid_source {
    UNWIND_TID_OWN,     /* the thread state's own id: a thread of the target (or not checked) */
    UNWIND_TID_PTHREAD, /* not the target's: the TID glibc keeps in the thread's struct pthread */
    UNWIND_TID_ONLY_THREAD, /* not the target's, no pthread TID: the single-threaded process's
                             * only thread, for the main thread state alone in its interpreter */
    UNWIND_TID_GONE,        /* not the target's, and neither is its pthread's TID: a thread
                             * state left from a thread that does not run in this process (one
                             * the parent had at the fork); never on a CPU */
    UNWIND_TID_UNRESOLVED,  /* not the target's, and nothing says which it is: cpu mode keeps it
                             * without the per-thread CPU check */
    UNWIND_TID_SOURCES      /* how many */
};

/** "thread_state", "pthread", "only_thread", "gone", "unresolved" (dump's JSON, /metrics), or "?".
 */
static inline const char *unwind_tid_source_name(enum unwind_tid_source s)
{
    switch (s) {
    case UNWIND_TID_OWN:
        return "thread_state";
    case UNWIND_TID_PTHREAD:
        return "pthread";
    case UNWIND_TID_ONLY_THREAD:
        return "only_thread";
    case UNWIND_TID_GONE:
        return "gone";
    case UNWIND_TID_UNRESOLVED:
        return "unresolved";
    default:
        return "?";
    }
}

/** One sampled thread. */
struct unwind_thread {
    uint64_t tstate_raddr;
    /* kernel TID in the target's PID namespace: the thread state's own, or
     * what it was resolved to (tid_source) */
    uint64_t native_thread_id;
    uint64_t stated_thread_id; /* the TID the thread state names (<= 3.10: its pthread's) */
    enum unwind_tid_source tid_source;
    uint64_t thread_id; /* pthread_t */
    int64_t interp_id;
    unsigned flags;            /* enum unwind_thread_flags */
    enum sample_status status; /* SAMPLE_OK, or why there are no frames */
    bool unchanged;            /* the same frames as this thread's previous sample */
    /* identifies the resolved stack: equal keys from one unwinder, equal frames */
    uint64_t stack_key;
    size_t nframes;
    const struct unwind_frame *frames; /* leaf first */
    /* the thread-state words asked for with unwinder_set_thread_words(),
     * read with the thread state in the same system call (0 when not asked) */
    uint64_t words[UNWIND_THREAD_WORDS];
};

/** The result of one sample; owned by the unwinder. */
struct unwind_result {
    size_t nthreads;
    const struct unwind_thread *threads;
};

/** One finished window of one target: who, what kind, which time span. */
struct window_meta {
    struct labels labels; /* the target's labels after relabeling, external labels added */
    char job[64];         /* job_name */
    int pid;
    enum profile_mode mode;
    int64_t period_ns;      /* time one sample stands for */
    int64_t time_nanos;     /* window start, ns since the epoch */
    int64_t duration_nanos; /* how long it covers; windows of a target tile time */
    bool final;             /* the target's last window (it exited, or the agent stops) */
};

/**
 * The trace and span a thread was in when sampled (OpenTelemetry's ids, W3C
 * byte order), from its published thread context (unwind/otel_thread.h).
 */
struct sample_span {
    uint8_t trace_id[16];
    uint8_t span_id[8];
    bool set; /* false: not in a span (or not known) */
};

/** One thread's stack as a sink gets it; valid during the call only. */
struct sink_sample {
    const struct unwind_frame *frames; /* leaf first, nframes >= 1; NULL in a repeat */
    size_t nframes;
    uint64_t thread_id; /* the thread's native id */
    int64_t interp_id;
    const char *thread_name;        /* valid UTF-8 */
    const char *task;               /* the asyncio task a logical stack belongs to, or NULL */
    const struct sample_span *span; /* the thread's trace and span, or NULL (none) */
    int64_t nanos;                  /* the time it stands for: one interval */
    uint64_t at_ns;                 /* when it was taken (CLOCK_MONOTONIC): the attempt's time, or
                                     * the kernel's sample time with native_full; 0 when unknown */
};

/**
 * Where a sampler's samples go: the aggregation window (agg_sink(), aggregate/agg.h),
 * a profile request's tap, or a command's own counting (top).
 *
 *   add     takes a thread's stack in full; returns 0 when it kept it, else
 *           an error (a full window drops and counts the sample itself);
 *   repeat  may be NULL. Counts the thread's stack once more as the same
 *           stack as this sink's last add for that thread; returns 0, or
 *           -ENOENT when it no longer has that stack (then add follows).
 *
 * The coalescing contract, in one place: the sampler calls repeat instead of
 * add only when the unwinder says the thread's stack is unchanged since its
 * last sample (unwind_thread.unchanged, same stack_key), and this sink's last
 * call for the thread was an add of that stack that returned 0 (or a repeat
 * that did). Switching a sink (sampler_set_window(), a new tap) and a
 * logical asyncio stack in between forget it, so the next call is an add.
 * Called on the sampling thread, per thread sample: must not block, log or
 * allocate more than the aggregation does.
 */
struct sample_sink {
    int (*add)(void *arg, const struct sink_sample *x);
    int (*repeat)(void *arg, const struct sink_sample *x);
    void *arg;
};

#endif /* PYPROFD_PIPELINE_H */
