/* SPDX-License-Identifier: MIT */
/*
 * agg.h: stage 4, aggregation. Turns samples (stacks of unwinder frames,
 * leaf first, with their thread) into counts over a profile window, in the
 * shape pprof wants: interned strings, functions, locations and whole
 * stacks, so memory grows with the number of *distinct* stacks, not with the
 * number of samples. A thread whose stack did not change since its previous
 * sample is counted without hashing anything.
 *
 * Tables (all ids dense and 0-based here; pprof ids are index + 1):
 *   strings    id 0 is always "" (pprof requires it)
 *   functions  (name, system name, file name, start line)
 *   locations  one per (function, line, column); a frame with an opcode
 *              (UNWIND_OPCODES) adds its marker "<op NAME (BASE)>" as a
 *              location of its own just below it, at the same position; a
 *              native frame (UNWIND_FRAME_C) one per (function, address)
 *   mappings   the files native frames are in (file, build id, range), at
 *              most AGG_MAX_MAPPINGS per window (a frame past them keeps its
 *              address with no mapping)
 *   samples    one per distinct (stack, thread id, thread name, task name,
 *              interpreter, trace and span), with the summed count and
 *              nanoseconds
 *
 * Everything is bounded by struct agg_limits: a sample that would exceed a
 * cap is dropped and counted (agg_stats), never grows the window further.
 *
 * Memory follows use, not the caps: agg_new() takes about 40 KiB (see
 * agg_memory()), and a table that fills up doubles, up to its cap. That is
 * the one allocation adding a sample may make: it happens only when a table
 * is full, at most about a dozen times per table in a window's life (each
 * doubling rebuilds the table's index: amortised, a constant per entry), and
 * never logs. A doubling that fails (out of memory, over the budget of
 * base/alloc.h) drops the sample and counts it as a cap does. agg_reset()
 * keeps the memory reached and clears only that, never the caps' worth.
 *
 * Thread safety: one thread at a time (the sampler); the encoder reads a
 * window only after the sampler handed it over.
 */
#ifndef PYPROFD_AGGREGATE_AGG_H
#define PYPROFD_AGGREGATE_AGG_H

#include "base/compat.h"

#include "pipeline.h"

/** Caps of one window. Zero fields take the defaults of agg_limits_default(). */
struct agg_limits {
    size_t string_bytes; /* all interned strings, terminators included */
    size_t strings;
    size_t functions;
    size_t locations;
    size_t samples;     /* distinct stacks */
    size_t stack_slots; /* location ids stored for all distinct stacks */
    size_t threads;     /* threads remembered for coalescing */
    size_t spans;       /* distinct span ids (trace context labels, agg_add_span()) */
};

/** The defaults: 8 MiB of strings, 64k strings/functions, 256k locations/samples, 1000 spans. */
struct agg_limits agg_limits_default(void);

struct agg_function {
    uint32_t name;        /* string id: the qualified name */
    uint32_t system_name; /* string id: the plain name (last part of the qualname) */
    uint32_t filename;    /* string id */
    int64_t start_line;   /* co_firstlineno, 0 when unknown */
};

/** Most locations of one sample: each frame, and each frame's opcode marker. */
#define AGG_MAX_LOCATIONS (2u * UNWIND_MAX_DEPTH)

struct agg_location {
    uint32_t function; /* index into the function table */
    int64_t line;      /* 0 when unknown */
    int64_t column;    /* 1-based as pprof counts them, 0 when unknown */
    uint64_t address;  /* a native frame's; 0 for Python frames and markers */
    uint32_t mapping;  /* index into the mapping table + 1; 0: none */
};

#define AGG_MAX_MAPPINGS 1024u

struct agg_mapping {
    uint32_t filename; /* string id */
    uint32_t build_id; /* string id ("" when unknown) */
    uint64_t start, limit, offset;
};

struct agg_sample {
    const uint32_t *locations; /* location indices, leaf first */
    uint32_t nlocations;
    uint64_t thread_id;   /* native thread id as the target sees it */
    uint32_t thread_name; /* string id, never 0 ("" is not a label value) */
    uint32_t task_name;   /* string id, 0 when there is none */
    uint32_t trace_id;    /* string id of the trace id in hex (32 digits), 0: none */
    uint32_t span_id;     /* string id of the span id in hex (16 digits), 0: none */
    int64_t interp_id;    /* the interpreter the thread state belongs to (0: the main one) */
    int64_t count;        /* samples */
    int64_t nanos;        /* time they stand for */
};

struct agg_stats {
    uint64_t added;      /* samples counted */
    uint64_t coalesced;  /* of which counted as a repeat of the thread's previous stack */
    uint64_t dropped;    /* samples dropped because a cap was reached */
    uint64_t spans_over; /* samples counted without their span: the window had lim.spans */
};

struct agg;

/** The limits window @a a was made with. */
struct agg_limits agg_limits_of(const struct agg *a);

/** Creates an empty window with @a limits (NULL: defaults). Returns 0 or -ENOMEM. */
PYPROFD_WARN_UNUSED int agg_new(const struct agg_limits *limits, struct agg **out);
/** Frees; NULL is a no-op. */
void agg_free(struct agg *a);
/** Empties the window (tables, samples, stats) keeping its memory. */
void agg_reset(struct agg *a);
/** Bytes of heap @a a holds now (its tables at their present capacities). */
size_t agg_memory(const struct agg *a);
/** How many times a table of @a a doubled since agg_new() (0: it is as small as it started). */
size_t agg_grows(const struct agg *a);

/**
 * Counts one sample: @a frames (leaf first, borrowed) of thread @a thread_id
 * named @a thread_name (NULL or "" becomes "unknown"), optionally in asyncio
 * task @a task_name (NULL: none), worth @a count samples and @a nanos
 * nanoseconds. Returns 0, or -E2BIG when a cap was hit (the sample is dropped
 * and counted).
 *
 * A frame with a non-zero code_id finds its location through a memo keyed
 * by (code_id, line, column), so frames made by hand must leave code_id 0 or
 * keep unwind.h's contract for it (same id: same function, file and first
 * line). Frames from several unwinders may be mixed in one window.
 *
 * @a interp_id: the interpreter of the thread state (0: the main one);
 * samples of different interpreters are kept apart and a sub-interpreter's
 * are labelled with it.
 */
PYPROFD_WARN_UNUSED int agg_add_in(struct agg *a, const struct unwind_frame *frames, size_t n,
                                   uint64_t thread_id, int64_t interp_id, const char *thread_name,
                                   const char *task_name, int64_t count, int64_t nanos);

/**
 * agg_add_in() for a sample taken in a trace's span (@a span, NULL or not set:
 * none): it is kept apart from the thread's other samples and labelled with
 * trace_id and span_id (lowercase hex). A window keeps at most lim.spans
 * distinct span ids; a sample in a further span is counted without its span
 * (agg_stats.spans_over).
 */
PYPROFD_WARN_UNUSED int agg_add_span(struct agg *a, const struct unwind_frame *frames, size_t n,
                                     uint64_t thread_id, int64_t interp_id, const char *thread_name,
                                     const char *task_name, const struct sample_span *span,
                                     int64_t count, int64_t nanos);

/**
 * Counts one more sample of thread @a thread_id (of interpreter
 * @a interp_id) in the stack it was last counted in, when the caller knows
 * the frames did not change (the unwinder says so): no frame is looked at.
 * Returns 0, or -ENOENT when the window has no previous sample of that
 * thread under that name (then use agg_add_in()).
 */
PYPROFD_WARN_UNUSED int agg_repeat_in(struct agg *a, uint64_t thread_id, int64_t interp_id,
                                      const char *thread_name, int64_t count, int64_t nanos);

/**
 * Read side, for the encoders. Indices are 0-based; the pointers are valid
 * until the next add/repeat/reset (a table may move when it grows).
 */
size_t agg_string_count(const struct agg *a);
const char *agg_string(const struct agg *a, uint32_t id);
size_t agg_function_count(const struct agg *a);
const struct agg_function *agg_function(const struct agg *a, size_t i);
size_t agg_location_count(const struct agg *a);
const struct agg_location *agg_location(const struct agg *a, size_t i);
size_t agg_sample_count(const struct agg *a);
size_t agg_mapping_count(const struct agg *a);
const struct agg_mapping *agg_mapping(const struct agg *a, size_t i);
const struct agg_sample *agg_sample(const struct agg *a, size_t i);
struct agg_stats agg_stats(const struct agg *a);

/**
 * The index of the sample the last successful agg_add_in() or agg_repeat_in()
 * counted in, or SIZE_MAX when none did since agg_new()/agg_reset(): what a
 * caller keeping the samples' order in time (pprof/timeline.h) records.
 */
size_t agg_last(const struct agg *a);

/**
 * Whether function @a i of @a a is an --opcodes marker ("<op NAME (BASE)>",
 * a place in its frame's function rather than a function), which the
 * per-function outputs (pstats, the heatmap's own time) skip.
 */
bool agg_function_is_opcode(const struct agg *a, size_t i);

/** Whether function @a i of @a a is a marker of file "~" (<GC>, <native>, <task ...>). */
bool agg_function_is_marker(const struct agg *a, size_t i);

/**
 * @a a (borrowed) as a sampler's sink (struct sample_sink, pipeline.h): add
 * is agg_add_in(), repeat agg_repeat_in(), each sample counted once and worth
 * its nanos. On the sampling thread only, as every agg_* call.
 */
struct sample_sink agg_sink(struct agg *a);

#endif /* PYPROFD_AGGREGATE_AGG_H */
