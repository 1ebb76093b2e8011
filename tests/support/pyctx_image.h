/* SPDX-License-Identifier: MIT */
/*
 * pyctx_image.h: builds a synthetic memory image of what the OpenTelemetry
 * Python SDK's current span is made of in a CPython 3.9-3.15 process, for the
 * tests of unwind/otel_sdk.c: the type objects (names, sizes, flags,
 * ContextVar's member table, a span class's shared keys), thread contexts
 * (PyContext) with their HAMTs of context variables (bitmap nodes; an array
 * node root and a collision node on request), the SDK's ContextVar
 * "current_context" among others, the SDK's Contexts (dict subclasses, one
 * with the span key, one without), a span whose "_context" is kept the
 * version's way, its SpanContext (a tuple subclass) and two ints. Every
 * offset comes from pyctx_layout_for() and pyctx_model_for(); what the
 * layout does not name (a str's length, a member table's fields, an
 * object's header size) is written where those say it is.
 *
 * The image is one arena of memory at PYCTX_IMAGE_BASE, built locally; a
 * test installs it into a memread_fake, after which every change made through
 * this API is written to both. A fuzz target may patch the local bytes
 * (pyctx_image_bytes()) before installing.
 *
 * Errors: pyctx_image_new() returns NULL for a minor without a layout or when
 * memory runs out; a change to an installed image that the fake refuses
 * aborts (the image is the test's own, such a failure is a bug). Thread
 * safety: none; one image per test.
 */
#ifndef PYPROFD_TESTS_PYCTX_IMAGE_H
#define PYPROFD_TESTS_PYCTX_IMAGE_H

#include "base/compat.h"

#include "memread_fake.h"
#include "pipeline.h"
#include "python/pyctx.h"

#define PYCTX_IMAGE_BASE 0x7f5500000000ull

/** How the image is built (pyctx_image_new()). */
enum pyctx_image_flags {
    PYCTX_IMAGE_ARRAY_ROOT = 1 << 0, /* the main HAMT's root is an array node */
    PYCTX_IMAGE_COLLISION = 1 << 1,  /* another variable has the SDK's hash: a collision node */
    PYCTX_IMAGE_ATTR_DICT = 1 << 2,  /* 3.11+: the span's attributes in a dict, not values */
    PYCTX_IMAGE_SPLIT_DICT = 1 << 3, /* the span's dict (3.11+: with ATTR_DICT) shares its
                                      * class's keys, its values apart */
    PYCTX_IMAGE_FOLD_HASH = 1 << 4,  /* the SDK variable's hash folds to -1 (the HAMT uses -2) */
};

/** Objects a test may want the address of (pyctx_image_addr()). */
enum pyctx_image_obj {
    PYCTX_IMAGE_CONTEXT,         /* the thread context (PyContext) holding the SDK's Context */
    PYCTX_IMAGE_CONTEXT_NOSPAN,  /* another thread's context: the SDK's Context without a span */
    PYCTX_IMAGE_CONTEXT_NOSDK,   /* a thread context without the SDK's variable */
    PYCTX_IMAGE_HAMT,            /* CONTEXT's ctx_vars */
    PYCTX_IMAGE_HAMT_SPARE,      /* a copy of HAMT at another address (the same root) */
    PYCTX_IMAGE_VAR,             /* the SDK's ContextVar */
    PYCTX_IMAGE_OTEL_CONTEXT,    /* the SDK's Context holding the span */
    PYCTX_IMAGE_OTEL_NOSPAN,     /* the SDK's Context without the span key */
    PYCTX_IMAGE_SPAN,            /* the span object */
    PYCTX_IMAGE_SPANCONTEXT,     /* its _context */
    PYCTX_IMAGE_TRACE_INT,       /* SpanContext[0] */
    PYCTX_IMAGE_SPAN_INT,        /* SpanContext[1] */
    PYCTX_IMAGE_TYPE_CONTEXT,    /* the type objects */
    PYCTX_IMAGE_TYPE_CONTEXTVAR, /* whose tp_members is MEMBERS */
    PYCTX_IMAGE_TYPE_HAMT,
    PYCTX_IMAGE_TYPE_INT,
    PYCTX_IMAGE_TYPE_OTEL_CONTEXT,
    PYCTX_IMAGE_TYPE_SPAN,
    PYCTX_IMAGE_MEMBERS, /* ContextVar's member table */
    PYCTX_IMAGE_NOBJ,
};

struct pyctx_image;

/**
 * A new image for CPython 3.@a minor (9-15, default build) with @a flags
 * (enum pyctx_image_flags), the thread context in a span whose ids are those
 * of pyctx_image_ids() until changed. Caller owns it (pyctx_image_free()).
 */
struct pyctx_image *pyctx_image_new(unsigned minor, unsigned flags);
void pyctx_image_free(struct pyctx_image *img);

/** The layout the image was built with. */
const struct pyctx_layout *pyctx_image_layout(const struct pyctx_image *img);

/** The address of @a which (0 for one the image has none of). */
uint64_t pyctx_image_addr(const struct pyctx_image *img, enum pyctx_image_obj which);

/**
 * The local bytes, @a len of them at PYCTX_IMAGE_BASE (what is used, to the
 * end of its page, as a process maps whole pages); writable until installed.
 */
uint8_t *pyctx_image_bytes(struct pyctx_image *img, size_t *len);

/** Maps the image into @a fake (once). Returns 0 or memread_fake_add()'s error. */
int pyctx_image_install(struct pyctx_image *img, struct memread_fake *fake);

/** Writes @a len bytes at @a raddr inside the image (and the fake, once installed). */
void pyctx_image_poke(struct pyctx_image *img, uint64_t raddr, const void *data, size_t len);
void pyctx_image_poke64(struct pyctx_image *img, uint64_t raddr, uint64_t v);

/** The ids the span holds now, as the reader must give them (big-endian, set). */
void pyctx_image_ids(const struct pyctx_image *img, struct sample_span *out);

/**
 * Gives the span the ids @a trace_id and @a span_id (big-endian): rewrites the
 * two ints' digits (at most 5 and 3 of them). The Context's version tag is
 * left alone (pyctx_image_bump_version()).
 */
void pyctx_image_set_ids(struct pyctx_image *img, const uint8_t trace_id[16],
                         const uint8_t span_id[8]);

/**
 * Sets the size word of the trace id's (@a trace) or the span id's int to
 * @a ndigits digits, negative when @a negative, the version's way (ob_size,
 * or 3.12+'s lv_tag); the digits are left as they are.
 */
void pyctx_image_int_size(struct pyctx_image *img, bool trace, uint64_t ndigits, bool negative);

/** The thread context's SDK variable holds the Context with the span (true) or without. */
void pyctx_image_in_span(struct pyctx_image *img, bool in_span);

/** Changes the version tag of the Context with the span (3.9-3.13; a no-op after). */
void pyctx_image_bump_version(struct pyctx_image *img);

/**
 * Sets the span's "_context" to @a value; 0 unsets it (a NULL values slot, or
 * its dict entry deleted).
 */
void pyctx_image_set_attr(struct pyctx_image *img, uint64_t value);

#endif /* PYPROFD_TESTS_PYCTX_IMAGE_H */
