/* SPDX-License-Identifier: MIT */
/*
 * otel_sdk_internal.h: the reader of the OpenTelemetry Python SDK's span
 * (otel_sdk.h) inside: its bounds, its state, and the object model
 * otel_sdk_objects.c gives otel_sdk.c (reading the target's memory through
 * what a sample read ahead; types; the HAMT; dicts; a span's _context; ints).
 * For those two files and nothing else. Errors as otel_sdk.h: a negative
 * errno from the memread seam, -EAGAIN for an object that is not what its
 * place wants (freed under the read: torn). Thread safety: one thread at a
 * time per struct otel_sdk.
 */
#ifndef PYPROFD_UNWIND_OTEL_SDK_INTERNAL_H
#define PYPROFD_UNWIND_OTEL_SDK_INTERNAL_H

#include "base/compat.h"

#include "python/pyabi.h"
#include "python/pyctx.h"
#include "unwind/otel_sdk.h"
#include "unwind/unwind.h"

/* What the SDK names (opentelemetry-api: context/contextvars_context.py,
 * trace/propagation/__init__.py, trace/span.py) */
#define SDK_VAR_NAME     "current_context"
#define SDK_SPAN_PREFIX  "current-span-"
#define SDK_ATTR         "_context"
#define SDK_CONTEXT_TYPE "Context"
#define SDK_SPANCTX_TYPE "SpanContext"

/* bounds on what the target's memory may claim */
#define SDK_HAMT_DEPTH      8u   /* 7 levels of 5 bits of a 32-bit hash, then a collision node */
#define SDK_NODE_WORDS      64u  /* a bitmap or collision node: at most 32 pairs */
#define SDK_SEARCH_ITEMS    256u /* HAMT items looked at per context while searching */
#define SDK_SEARCH_NODES    256u /* and HAMT nodes read */
#define SDK_SEARCH_CONTEXTS 16u  /* thread contexts looked at per search */
#define SDK_DICT_ENTRIES    256u /* entries of a dict (a Context has a handful) */
#define SDK_INDEX_BYTES     (1u << 16)
#define SDK_TYPES           32u /* types kept */
#define SDK_SPAN_CLASSES    8u  /* of them, span classes (the rest: the chain's own types) */
#define SDK_NAME_MAX        64u
#define SDK_SEARCH_NS       1000000000ull /* a target without the variable: again after 1 s */
#define SDK_MEMO_SLOTS      256u          /* per-thread (Context dict, version) memo */
#define SDK_BUF             (SDK_DICT_ENTRIES * 24u + 64u)
#define SDK_PAGE            4096u
/* what one sample reads ahead for its first SDK_BATCH threads at once (a
 * reader per target: its size counts with hundreds of targets) */
#define SDK_BATCH        64u
#define SDK_PF_SLOTS     1024u /* a power of two, > 9 * SDK_BATCH */
#define SDK_PF_BYTES     (SDK_BATCH * 1024u)
#define SDK_KEYS_READ(l) ((l)->keys_indices + 8u + 16u * 24u) /* a keys table's start */
#define SDK_VALUES_READ  (8u + 8u * 32u) /* 3.13+ inline values: up to the 32nd attribute */
#define SDK_INT_READ(l)  ((l)->long_digits + 4u * 5u) /* an int of up to 5 digits */
/* a HAMT node read at once: an array node, or a bitmap node's first 16 pairs */
#define SDK_NODE_READ(l)                                                                           \
    ((l)->array_size > (l)->bitmap_array + 16u * 16u ? (l)->array_size                             \
                                                     : (l)->bitmap_array + 16u * 16u)

enum sdk_kind {
    SDK_K_OTHER,
    SDK_K_CONTEXT,    /* PyContext */
    SDK_K_CONTEXTVAR, /* PyContextVar */
    SDK_K_HAMT,
    SDK_K_BITMAP,
    SDK_K_ARRAY,
    SDK_K_COLLISION,
    SDK_K_OTEL_CONTEXT, /* the SDK's Context (a dict subclass) */
    SDK_K_SPANCONTEXT,  /* the SDK's SpanContext (a tuple subclass) */
    SDK_K_INT,
    SDK_K_STR,
};

struct sdk_type {
    uint64_t addr;
    enum sdk_kind kind;
    uint64_t flags;
    int64_t basicsize, dictoffset;
    int32_t attr_ix; /* index of "_context" in the class's shared keys; -1 unknown, -2 none */
};

struct sdk_memo {
    uint64_t tstate, dict, version;
    struct sample_span span;
};

struct sdk_pf {
    uint64_t addr, gen;
    uint32_t off, len;
};

struct sdk_ahead {
    struct sdk_pf pf[SDK_PF_SLOTS]; /* by address; valid for one sample (generation) */
    size_t used;
    uint8_t bytes[SDK_PF_BYTES];
    struct memread_iov iov[2 * SDK_BATCH];
    uint32_t slot[2 * SDK_BATCH];
    uint64_t next[2 * SDK_BATCH], dict[SDK_BATCH];
    uint32_t len[SDK_BATCH]; /* with sdk_prefetch()'s len 0: each its own */
};

struct otel_sdk {
    struct memread *mr;
    const struct clock *clock;
    const struct pyctx_layout *l;
    struct pyctx_model m;
    enum otel_sdk_state state;
    char why[192];
    struct otel_sdk_stats stats;
    uint64_t next_search_ns;
    /* found once, kept */
    uint64_t var;      /* the SDK's ContextVar */
    uint32_t var_hash; /* its hash as the HAMT folds it */
    uint64_t span_key; /* the "current-span-<uuid>" str */
    uint64_t attr_key; /* the "_context" str (dict lookups) */
    struct sdk_type types[SDK_TYPES];
    size_t ntypes;
    struct sdk_type other; /* the last type read that is not kept */
    struct sdk_memo memo[SDK_MEMO_SLOTS];
    /* the reads batched across a sample's threads (sdk_batch()), allocated
     * when the SDK is found (most targets never use it); NULL: none */
    struct sdk_ahead *ahead;
    uint64_t pf_gen;
    /* spans read, waiting for their contexts' second look (sdk_recheck()) */
    struct sdk_pending {
        struct sample_span *out, got;
        uint64_t tstate, ctx, hamt, dict, version, again;
    } pend[SDK_BATCH];
    size_t npend;
    uint8_t buf[SDK_BUF];  /* nodes, keys tables */
    uint8_t ebuf[SDK_BUF]; /* a dict's entries, while their keys are read */
    struct sample_span spans[UNWIND_MAX_THREADS];
};

/* The object model (each documented where otel_sdk_objects.c defines it). */
struct sdk_pf *sdk_pf_find(struct otel_sdk *s, uint64_t addr);
ssize_t sdk_read(struct otel_sdk *s, uint64_t addr, void *buf, size_t need, size_t want);
int sdk_word(struct otel_sdk *s, uint64_t addr, uint64_t *out);
int sdk_cstr(struct otel_sdk *s, uint64_t addr, char out[SDK_NAME_MAX]);
int sdk_ascii(struct otel_sdk *s, uint64_t addr, char *out, size_t cap);
PYPROFD_PRINTF(2, 3) void sdk_invalid(struct otel_sdk *s, const char *fmt, ...);
struct sdk_type *sdk_type(struct otel_sdk *s, uint64_t addr, bool keep_other);
enum sdk_kind sdk_kind_of(struct otel_sdk *s, const uint8_t *obj);
uint32_t sdk_fold(uint64_t h);
int sdk_hamt_find(struct otel_sdk *s, uint64_t root, uint64_t key, uint32_t h32, uint64_t *value);
bool sdk_hamt_each(struct otel_sdk *s, uint64_t root,
                   bool (*fn)(struct otel_sdk *s, uint64_t key, uint64_t value));
int sdk_dict_find(struct otel_sdk *s, uint64_t dict, uint64_t key, const char *text, bool prefix,
                  uint64_t *found_key, uint64_t *value);
int32_t sdk_attr_ix(struct otel_sdk *s, struct sdk_type *t);
bool sdk_attr_place(const struct otel_sdk *s, const struct sdk_type *t, uint32_t ix, uint64_t span,
                    const uint8_t *pre, uint64_t *at, size_t *len);
int sdk_span_context(struct otel_sdk *s, uint64_t span, uint64_t *out);
bool sdk_int(const struct otel_sdk *s, const uint8_t *b, size_t n, unsigned digits, uint8_t *out,
             size_t len);

#endif /* PYPROFD_UNWIND_OTEL_SDK_INTERNAL_H */
