/* SPDX-License-Identifier: MIT */
/*
 * otel_sdk.h: the current span of each sampled thread as the OpenTelemetry
 * Python SDK keeps it, read from outside, for targets that publish no thread
 * context of their own (unwind/otel_thread.h wins where both exist).
 *
 * The SDK keeps its current context in a context variable (PEP 567): a
 * ContextVar named "current_context" whose value, in a thread's context, is
 * an OpenTelemetry Context (a dict subclass) mapping the key
 * "current-span-<uuid4>" to the span, whose _context attribute is a
 * SpanContext (a tuple subclass) starting (trace_id, span_id) as ints. The
 * chain, per sampled thread:
 *
 *   tstate->context (a word the unwinder reads with the thread state)
 *     -> PyContext.ctx_vars -> the HAMT, looked up with the variable's own
 *        stored hash (root, then at most 7 levels of bitmap/array nodes and a
 *        collision node)
 *     -> the Context dict, its keys table scanned for the span key (by
 *        address)
 *     -> the span's "_context" attribute (instance dict, 3.11's and 3.12's
 *        managed values, 3.13+'s inline values: python/pyctx.h)
 *     -> the SpanContext's first two items -> two ints.
 *
 * asyncio: each task step runs in the task's own context, so a running
 * task's span is what its thread's context holds.
 *
 * Finding the variable (once, then kept: the SDK's module globals live as
 * long as the process): the first thread context whose HAMT holds a
 * ContextVar named "current_context" whose value is a heap type "Context"
 * subclassing dict; the layout is checked against the live process on the
 * way (the types' names and sizes, ContextVar's member table, a lookup by
 * the variable's hash finding what the walk found). A target that does not
 * use the SDK (yet) is looked at again at most once a second; a layout
 * check that fails stops the reader for good, with a reason.
 *
 * Every object's type is compared with the type learned for its place, every
 * size and count is bounded, and a chain whose context moved while it was
 * read is counted as torn and not used. Addresses of the chain are never
 * cached across samples (CPython reuses the memory of a finished span's
 * objects for the next one): only objects that live as long as the process
 * (the variable, the span key, types, the index of "_context" in a class's
 * shared keys) and, on 3.9-3.13, the last Context dict's (address, version
 * tag), which no other dict ever carries.
 *
 * otel_sdk_sample() does not allocate or log. Thread safety: one thread at a
 * time per struct otel_sdk.
 */
#ifndef PYPROFD_UNWIND_OTEL_SDK_H
#define PYPROFD_UNWIND_OTEL_SDK_H

#include "base/compat.h"

#include "base/clock.h"
#include "memread/memread.h"
#include "pipeline.h"

/** Where the reader stands. */
enum otel_sdk_state {
    OTEL_SDK_SEARCHING, /* no thread's context holds the SDK's variable yet */
    OTEL_SDK_ACTIVE,    /* found: spans are read */
    OTEL_SDK_INVALID,   /* a layout check failed: off for this target (otel_sdk_why()) */
};

/** Counts of one reader (cumulative). */
struct otel_sdk_stats {
    uint64_t threads;  /* thread samples looked at (after a published context) */
    uint64_t spans;    /* of which in a span */
    uint64_t none;     /* no context, no SDK context in it, or no span */
    uint64_t torn;     /* the context or an object moved while read: not used */
    uint64_t faults;   /* an object that could not be read or was not what it must be */
    uint64_t cached;   /* spans known from the Context dict's version tag (<= 3.13) */
    uint64_t searches; /* looks for the variable */
};

struct otel_sdk;

/**
 * A reader for a CPython 3.<@a minor> process behind @a mr (borrowed; must
 * outlive it), timed by @a clock (borrowed; NULL: the system's). Returns 0;
 * -ENOTSUP for a version or build without a layout (@a free_threaded), with
 * the reason in @a why; -ENOMEM.
 */
PYPROFD_WARN_UNUSED int otel_sdk_new(struct memread *mr, unsigned minor, bool free_threaded,
                                     const struct clock *clock, struct otel_sdk **out, char *why,
                                     size_t why_len);

/** The thread-state offset of tstate->context: the word to ask the unwinder for. */
uint32_t otel_sdk_context_offset(const struct otel_sdk *s);

/**
 * Reads the current span of each thread of @a r whose status is SAMPLE_OK,
 * @a word being the index in unwind_thread.words of tstate->context. A thread
 * whose span @a published already gives (indexed as r->threads; NULL: none)
 * keeps it. Returns the spans, indexed as r->threads, owned by @a s until its
 * next sample. Never fails as a whole: what could not be read is counted.
 */
const struct sample_span *otel_sdk_sample(struct otel_sdk *s, const struct unwind_result *r,
                                          size_t word, const struct sample_span *published);

enum otel_sdk_state otel_sdk_state(const struct otel_sdk *s);
/** Why it is INVALID (or what the last search found wanting); "" if nothing. */
const char *otel_sdk_why(const struct otel_sdk *s);
struct otel_sdk_stats otel_sdk_stats(const struct otel_sdk *s);

/** Frees; NULL is a no-op. */
void otel_sdk_free(struct otel_sdk *s);

#endif /* PYPROFD_UNWIND_OTEL_SDK_H */
