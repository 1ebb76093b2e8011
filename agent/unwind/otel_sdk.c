/* SPDX-License-Identifier: MIT */
/*
 * otel_sdk.c: the OpenTelemetry Python SDK's current span of sampled threads,
 * read through their context variables (see otel_sdk.h).
 */
#include "base/compat.h"

#include <stdarg.h>

#include "base/alloc.h"
#include "base/bytes.h"
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
#define SDK_SEARCH_CONTEXTS 4u   /* thread contexts looked at per search */
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

/* ---- reading ------------------------------------------------------------------------ */

/* The slot of @addr among this sample's reads ahead: its own, or the free one
 * it would take; NULL when the table is full. */
static struct sdk_pf *sdk_pf_find(struct otel_sdk *s, uint64_t addr)
{
    if (!s->ahead)
        return NULL;
    uint32_t h = (uint32_t)((addr >> 3) * 0x9e3779b1u) & (SDK_PF_SLOTS - 1);
    for (uint32_t n = 0; n < SDK_PF_SLOTS; n++, h = (h + 1) & (SDK_PF_SLOTS - 1)) {
        struct sdk_pf *p = &s->ahead->pf[h];
        if (p->gen != s->pf_gen || p->addr == addr)
            return p;
    }
    return NULL;
}

/*
 * Reads at least @need, and @want if it can, bytes at @addr into @buf (@want
 * <= its size). A speculative length that reaches past the mapping is cut to
 * the page's end, then to @need. Returns the bytes read or a negative errno.
 */
static ssize_t sdk_read(struct otel_sdk *s, uint64_t addr, void *buf, size_t need, size_t want)
{
    if (addr == 0 || addr % 8 != 0)
        return -EFAULT;
    const struct sdk_pf *p = sdk_pf_find(s, addr);
    if (p && p->gen == s->pf_gen && p->addr == addr && p->len >= need) {
        size_t len = p->len < want ? p->len : want;
        memcpy(buf, s->ahead->bytes + p->off, len);
        return (ssize_t)len;
    }
    int err = memread_read(s->mr, addr, buf, want);
    if (err != -EFAULT || want <= need)
        return err ? err : (ssize_t)want;
    size_t page = SDK_PAGE - (addr & (SDK_PAGE - 1));
    if (page > need && page < want && memread_read(s->mr, addr, buf, page) == 0)
        return (ssize_t)page;
    err = memread_read(s->mr, addr, buf, need);
    return err ? err : (ssize_t)need;
}

static int sdk_word(struct otel_sdk *s, uint64_t addr, uint64_t *out)
{
    uint8_t w[8];
    ssize_t n = sdk_read(s, addr, w, 8, 8);
    if (n < 0)
        return (int)n;
    *out = load_le64(w);
    return 0;
}

/* A NUL-terminated name of at most SDK_NAME_MAX - 1 bytes at @addr (a type's
 * tp_name), without reading past its page unless it must. */
static int sdk_cstr(struct otel_sdk *s, uint64_t addr, char out[SDK_NAME_MAX])
{
    if (addr == 0)
        return -EFAULT;
    size_t page = SDK_PAGE - (addr & (SDK_PAGE - 1));
    size_t len = page < SDK_NAME_MAX ? page : SDK_NAME_MAX;
    int err = memread_read(s->mr, addr, out, len);
    if (!err && len < SDK_NAME_MAX && !memchr(out, 0, len))
        err = memread_read(s->mr, addr, out, len = SDK_NAME_MAX);
    if (err)
        return err;
    if (!memchr(out, 0, len))
        return -EPROTO;
    return 0;
}

/* The text of an ASCII str at @addr, if its type is str and it fits @cap - 1
 * bytes; -EPROTO for anything else. */
static int sdk_ascii(struct otel_sdk *s, uint64_t addr, char *out, size_t cap)
{
    const struct pyctx_layout *l = s->l;
    uint8_t b[128];
    size_t want = l->str_ascii_data + cap;
    if (want > sizeof(b))
        return -EINVAL;
    ssize_t n = sdk_read(s, addr, b, l->str_ascii_data, want);
    if (n < 0)
        return (int)n;
    uint64_t length = load_le64(b + 16); /* PyASCIIObject.length follows the header */
    uint32_t state = load_le32(b + l->str_state);
    if (!PYABI_STR_COMPACT(state, 0) || !PYABI_STR_ASCII(state, 0) || length >= cap ||
        l->str_ascii_data + length > (size_t)n)
        return -EPROTO;
    memcpy(out, b + l->str_ascii_data, length);
    out[length] = '\0';
    return 0;
}

/* ---- types ------------------------------------------------------------------------- */

PYPROFD_PRINTF(2, 3) static void sdk_invalid(struct otel_sdk *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->why, sizeof(s->why), fmt, ap);
    va_end(ap);
    s->state = OTEL_SDK_INVALID;
}

/*
 * What the type at @addr is, read once. Types of the chain's places are kept
 * (and so are other classes when @keep_other: a span's); anything else is
 * read again when met again (a torn read's stray pointer takes no room).
 * Returns NULL when it cannot be read or kept. A type whose name says what it
 * is but whose size disagrees with the layout makes the reader invalid.
 */
static struct sdk_type *sdk_type(struct otel_sdk *s, uint64_t addr, bool keep_other)
{
    for (size_t i = 0; i < s->ntypes; i++) {
        if (s->types[i].addr == addr)
            return &s->types[i];
    }
    if (s->ntypes == SDK_TYPES || addr == 0)
        return NULL;
    const struct pyctx_layout *l = s->l;
    uint8_t t[512];
    size_t len = l->tp_dictoffset + 8;
    char name[SDK_NAME_MAX];
    if (len > sizeof(t) || sdk_read(s, addr, t, len, len) < 0 ||
        sdk_cstr(s, load_le64(t + l->tp_name), name) != 0)
        return NULL;
    struct sdk_type ty = {.addr = addr,
                          .flags = load_le64(t + l->tp_flags),
                          .basicsize = (int64_t)load_le64(t + l->tp_basicsize),
                          .dictoffset = (int64_t)load_le64(t + l->tp_dictoffset),
                          .attr_ix = -1};
    int64_t itemsize = (int64_t)load_le64(t + l->tp_itemsize);
    bool heap = ty.flags & PYCTX_TPFLAGS_HEAPTYPE;
    struct {
        const char *name;
        enum sdk_kind kind;
        int64_t basicsize, itemsize;
    } known[] = {
        {s->m.context_type, SDK_K_CONTEXT, l->ctx_size, 0},
        {s->m.contextvar_type, SDK_K_CONTEXTVAR, l->var_size, 0},
        {"hamt", SDK_K_HAMT, l->hamt_size, 0},
        {"hamt_bitmap_node", SDK_K_BITMAP, l->bitmap_array, 8},
        {"hamt_array_node", SDK_K_ARRAY, l->array_size, 0},
        {"hamt_collision_node", SDK_K_COLLISION, l->collision_array, 8},
        {"int", SDK_K_INT, l->long_digits, 4},
        {"str", SDK_K_STR, -1, -1},
    };
    for (size_t i = 0; !heap && i < PYPROFD_ARRAY_SIZE(known); i++) {
        if (strcmp(name, known[i].name) != 0)
            continue;
        if (known[i].basicsize >= 0 &&
            (ty.basicsize != known[i].basicsize || itemsize != known[i].itemsize)) {
            sdk_invalid(s,
                        "layout check: type %s has size %lld/%lld, not %lld/%lld as this "
                        "version's headers give",
                        name, (long long)ty.basicsize, (long long)itemsize,
                        (long long)known[i].basicsize, (long long)known[i].itemsize);
            return NULL;
        }
        ty.kind = known[i].kind;
    }
    if (heap && strcmp(name, SDK_CONTEXT_TYPE) == 0 && (ty.flags & PYCTX_TPFLAGS_DICT_SUBCLASS))
        ty.kind = SDK_K_OTEL_CONTEXT;
    if (heap && strcmp(name, SDK_SPANCTX_TYPE) == 0 && (ty.flags & PYCTX_TPFLAGS_TUPLE_SUBCLASS))
        ty.kind = SDK_K_SPANCONTEXT;
    if (ty.kind == SDK_K_CONTEXTVAR) {
        /* the type's first member is "name", at var_name */
        uint8_t md[24];
        char mname[SDK_NAME_MAX];
        uint64_t members = load_le64(t + l->tp_members);
        if (sdk_read(s, members, md, sizeof(md), sizeof(md)) < 0 ||
            sdk_cstr(s, load_le64(md), mname) != 0)
            return NULL;
        if (strcmp(mname, "name") != 0 || load_le64(md + 16) != l->var_name) {
            sdk_invalid(s, "layout check: %s's first member is \"%s\" at %llu, not \"name\" at %u",
                        s->m.contextvar_type, mname, (unsigned long long)load_le64(md + 16),
                        l->var_name);
            return NULL;
        }
    }
    /* span classes are kept, up to SDK_SPAN_CLASSES: a stray pointer's type
     * (a torn read) takes no more room than that from the chain's own */
    size_t classes = 0;
    for (size_t i = 0; i < s->ntypes; i++)
        classes += s->types[i].kind == SDK_K_OTHER;
    if (ty.kind == SDK_K_OTHER && (!keep_other || classes >= SDK_SPAN_CLASSES)) {
        s->other = ty;
        return &s->other;
    }
    s->types[s->ntypes] = ty;
    return &s->types[s->ntypes++];
}

/* The kind of the object whose header @obj holds (its first 16 bytes). */
static enum sdk_kind sdk_kind_of(struct otel_sdk *s, const uint8_t *obj)
{
    const struct sdk_type *t = sdk_type(s, load_le64(obj + s->l->ob_type), false);
    return t ? t->kind : SDK_K_OTHER;
}

/* ---- the HAMT ----------------------------------------------------------------------- */

static uint32_t sdk_fold(uint64_t h)
{
    int32_t x = (int32_t)((uint32_t)(h & 0xffffffffu) ^ (uint32_t)(h >> 32));
    return (uint32_t)(x == -1 ? -2 : x);
}

/*
 * Looks @key up in the HAMT whose root node is @root, by its folded hash
 * @h32. Returns 0 with *@value set (0: absent), -EAGAIN when a node is not
 * what it must be (freed under the read), or a read error.
 */
static int sdk_hamt_find(struct otel_sdk *s, uint64_t root, uint64_t key, uint32_t h32,
                         uint64_t *value)
{
    const struct pyctx_layout *l = s->l;
    uint8_t *b = s->buf;
    uint64_t node = root;
    *value = 0;
    for (unsigned depth = 0, shift = 0; depth < SDK_HAMT_DEPTH; depth++, shift += 5) {
        ssize_t n = sdk_read(s, node, b, l->bitmap_array, SDK_NODE_READ(l));
        if (n < 0)
            return (int)n;
        enum sdk_kind k = sdk_kind_of(s, b);
        uint64_t nwords = load_le64(b + l->ob_size);
        if (k == SDK_K_BITMAP) {
            uint32_t bitmap = load_le32(b + l->bitmap_bitmap);
            if (shift > 30)
                return -EAGAIN;
            uint32_t bit = 1u << ((h32 >> shift) & 31u);
            if (!(bitmap & bit))
                return 0;
            unsigned i = (unsigned)__builtin_popcount(bitmap & (bit - 1));
            if (nwords > SDK_NODE_WORDS || 2u * i + 1 >= nwords)
                return -EAGAIN;
            size_t at = l->bitmap_array + 16u * i;
            uint8_t pair[16];
            if (at + 16 <= (size_t)n)
                memcpy(pair, b + at, 16);
            else if ((n = sdk_read(s, node + at, pair, 16, 16)) < 0)
                return (int)n;
            uint64_t k0 = load_le64(pair), v0 = load_le64(pair + 8);
            if (k0 == 0) {
                node = v0; /* a sub-tree */
                continue;
            }
            if (k0 == key)
                *value = v0;
            return 0;
        }
        if (k == SDK_K_ARRAY) {
            if ((size_t)n < l->array_size || shift > 30)
                return n < 0 ? (int)n : -EAGAIN;
            node = load_le64(b + l->array_array + 8u * ((h32 >> shift) & 31u));
            if (node == 0)
                return 0;
            continue;
        }
        if (k == SDK_K_COLLISION) {
            if (nwords > SDK_NODE_WORDS || nwords % 2)
                return -EAGAIN;
            size_t len = l->collision_array + 8 * nwords;
            if ((size_t)n < len && (n = sdk_read(s, node, b, len, len)) < 0)
                return (int)n;
            for (size_t i = 0; i + 1 < nwords; i += 2) {
                if (load_le64(b + l->collision_array + 8 * i) == key) {
                    *value = load_le64(b + l->collision_array + 8 * i + 8);
                    return 0;
                }
            }
            return 0;
        }
        return -EAGAIN;
    }
    return -EAGAIN;
}

/*
 * Calls @fn for the items of the HAMT under @root (at most SDK_SEARCH_ITEMS,
 * depth-first, bounded depth, at most SDK_SEARCH_NODES nodes read: nodes that
 * point back at themselves would otherwise be read 32^7 times) until it
 * returns true. Returns true when it did.
 */
static bool sdk_hamt_each(struct otel_sdk *s, uint64_t root,
                          bool (*fn)(struct otel_sdk *s, uint64_t key, uint64_t value))
{
    const struct pyctx_layout *l = s->l;
    struct sdk_frame {
        uint64_t node;
        unsigned depth;
    } stack[SDK_HAMT_DEPTH * 32];
    size_t sp = 0, items = 0, nodes = 0;
    stack[sp++] = (struct sdk_frame){root, 0};
    uint8_t node[SDK_NODE_WORDS * 8 + 512];
    while (sp > 0 && items < SDK_SEARCH_ITEMS && nodes < SDK_SEARCH_NODES) {
        nodes++;
        uint64_t at = stack[--sp].node;
        unsigned depth = stack[sp].depth;
        size_t want = l->array_size > l->bitmap_array + 8 * SDK_NODE_WORDS
                          ? l->array_size
                          : l->bitmap_array + 8 * SDK_NODE_WORDS;
        ssize_t n = sdk_read(s, at, node, l->bitmap_array, want);
        if (n < 0)
            return false;
        enum sdk_kind k = sdk_kind_of(s, node);
        if (s->state == OTEL_SDK_INVALID)
            return false;
        uint64_t nwords = load_le64(node + l->ob_size);
        size_t first = k == SDK_K_BITMAP ? l->bitmap_array : l->collision_array;
        if (k == SDK_K_ARRAY) {
            if ((size_t)n < l->array_size)
                continue;
            for (unsigned i = 0; i < 32 && depth + 1 < SDK_HAMT_DEPTH; i++) {
                uint64_t child = load_le64(node + l->array_array + 8 * i);
                if (child && sp < PYPROFD_ARRAY_SIZE(stack))
                    stack[sp++] = (struct sdk_frame){child, depth + 1};
            }
            continue;
        }
        if ((k != SDK_K_BITMAP && k != SDK_K_COLLISION) || nwords > SDK_NODE_WORDS ||
            first + 8 * nwords > (size_t)n)
            continue;
        for (size_t i = 0; i + 1 < nwords; i += 2) {
            uint64_t key = load_le64(node + first + 8 * i);
            uint64_t value = load_le64(node + first + 8 * i + 8);
            if (key == 0 && k == SDK_K_BITMAP) {
                if (depth + 1 < SDK_HAMT_DEPTH && sp < PYPROFD_ARRAY_SIZE(stack))
                    stack[sp++] = (struct sdk_frame){value, depth + 1};
                continue;
            }
            items++;
            if (fn(s, key, value))
                return true;
            if (s->state == OTEL_SDK_INVALID)
                return false;
        }
    }
    return false;
}

/* ---- dicts -------------------------------------------------------------------------- */

/*
 * Looks up a str key in the dict at @dict: by address when @key is set, else
 * by its text (@text, a prefix when @prefix), setting *@found_key. Returns 0
 * with *@value (0: absent), -EAGAIN for a dict that is not one, or a read
 * error.
 */
static int sdk_dict_find(struct otel_sdk *s, uint64_t dict, uint64_t key, const char *text,
                         bool prefix, uint64_t *found_key, uint64_t *value)
{
    const struct pyctx_layout *l = s->l;
    uint8_t d[64];
    *value = 0;
    ssize_t n = sdk_read(s, dict, d, l->dict_size, l->dict_size);
    if (n < 0)
        return (int)n;
    uint64_t keys = load_le64(d + l->dict_keys), values = load_le64(d + l->dict_values);
    uint8_t *b = s->buf;
    /* the keys object's header, and (speculatively) a few entries */
    n = sdk_read(s, keys, b, l->keys_indices, SDK_KEYS_READ(l));
    if (n < 0)
        return (int)n;
    uint64_t nentries = load_le64(b + l->keys_nentries);
    size_t index_bytes, esize, kofs;
    if (s->m.keys_log2) {
        uint8_t log2 = b[l->keys_log2_index_bytes];
        if (log2 > 16)
            return -EAGAIN;
        index_bytes = (size_t)1 << log2;
        bool general = b[l->keys_kind] == PYCTX_KEYS_GENERAL;
        esize = general ? l->entry_size : l->uentry_size;
        kofs = general ? 8 : 0;
    } else {
        uint64_t size = load_le64(b + l->keys_size);
        size_t ix = size <= 0xff ? 1 : size <= 0xffff ? 2 : 4;
        if (size > SDK_INDEX_BYTES)
            return -EAGAIN;
        index_bytes = size * ix;
        esize = l->entry_size;
        kofs = 8;
    }
    if (nentries > SDK_DICT_ENTRIES || index_bytes > SDK_INDEX_BYTES)
        return -EAGAIN;
    size_t at = l->keys_indices + index_bytes, len = esize * nentries;
    const uint8_t *e = b + at;
    if (len > sizeof(s->ebuf))
        return -EAGAIN;
    if (at + len > (size_t)n) {
        if ((n = sdk_read(s, keys + at, s->ebuf, len, len)) < 0)
            return (int)n;
        e = s->ebuf;
    }
    for (size_t i = 0; i < nentries; i++) {
        uint64_t k = load_le64(e + i * esize + kofs);
        if (k == 0 || (key && k != key))
            continue;
        if (!key) {
            char t[64];
            int err = sdk_ascii(s, k, t, sizeof(t));
            if (err == -ESRCH)
                return err;
            if (err || (prefix ? strncmp(t, text, strlen(text)) != 0 : strcmp(t, text) != 0))
                continue;
            *found_key = k;
        }
        if (!values) {
            *value = load_le64(e + i * esize + kofs + 8);
            return 0;
        }
        /* a split table: the values are apart, by entry index */
        return sdk_word(s, values + l->values_array + 8 * i, value);
    }
    return 0;
}

/* ---- the span's _context ------------------------------------------------------------ */

/* The index of "_context" in the shared keys of class @t (3.11+), or -2. */
static int32_t sdk_attr_ix(struct otel_sdk *s, struct sdk_type *t)
{
    if (t->attr_ix != -1)
        return t->attr_ix;
    /* what cannot be read now is asked again next time (-1); a class whose
     * shared keys hold no "_context" has none for good (-2: they only grow) */
    uint64_t keys = 0;
    if (sdk_word(s, t->addr + s->l->ht_cached_keys, &keys) != 0)
        return -1;
    t->attr_ix = -2;
    if (keys == 0)
        return t->attr_ix;
    /* the shared keys object alone (no dict around it) */
    const struct pyctx_layout *l = s->l;
    uint8_t *b = s->buf;
    ssize_t n = sdk_read(s, keys, b, l->keys_indices, l->keys_indices);
    if (n < 0)
        return t->attr_ix = -1;
    if (b[l->keys_kind] != PYCTX_KEYS_SPLIT || b[l->keys_log2_index_bytes] > 16)
        return t->attr_ix;
    uint64_t nentries = load_le64(b + l->keys_nentries);
    size_t at = l->keys_indices + ((size_t)1 << b[l->keys_log2_index_bytes]);
    if (nentries > SDK_DICT_ENTRIES)
        return t->attr_ix;
    uint8_t e[SDK_DICT_ENTRIES * 16];
    if (sdk_read(s, keys + at, e, nentries * l->uentry_size, nentries * l->uentry_size) < 0)
        return t->attr_ix = -1;
    for (size_t i = 0; i < nentries; i++) {
        uint64_t k = load_le64(e + i * l->uentry_size);
        char text[16];
        if (k && (k == s->attr_key ||
                  (sdk_ascii(s, k, text, sizeof(text)) == 0 && strcmp(text, SDK_ATTR) == 0))) {
            s->attr_key = k;
            t->attr_ix = (int32_t)i;
            break;
        }
    }
    return t->attr_ix;
}

/* The _context attribute of the span at @span (0: not set). Returns 0, -EAGAIN
 * or a read error. */
static int sdk_span_context(struct otel_sdk *s, uint64_t span, uint64_t *out)
{
    const struct pyctx_layout *l = s->l;
    /* 3.11+: the words before the object (managed dict and values), then its
     * header; before, the header alone */
    uint8_t pre[48];
    size_t before = s->m.attrs == PYCTX_ATTRS_DICTOFFSET ? 0 : 32;
    *out = 0;
    ssize_t n = sdk_read(s, span - before, pre + 32 - before, before + 16, before + 16);
    if (n < 0)
        return (int)n;
    /* a span class: learned on first sight, and kept */
    struct sdk_type *t = sdk_type(s, load_le64(pre + 32 + l->ob_type), true);
    if (!t)
        return -EAGAIN;
    if (t->kind != SDK_K_OTHER || !(t->flags & PYCTX_TPFLAGS_HEAPTYPE))
        return -EAGAIN;
    uint64_t dict = 0, values = 0;
    int32_t ix = -2;
    switch (s->m.attrs) {
    case PYCTX_ATTRS_DICTOFFSET:
        if (t->dictoffset <= 0 || t->dictoffset > 4096 || t->dictoffset % 8)
            return -EAGAIN;
        {
            int err = sdk_word(s, span + (uint64_t)t->dictoffset, &dict);
            if (err)
                return err;
        }
        break;
    case PYCTX_ATTRS_MANAGED_311:
        if (!(t->flags & PYCTX_TPFLAGS_MANAGED_DICT))
            return -EAGAIN;
        values = load_le64(pre + 32 + l->managed_values);
        dict = load_le64(pre + 32 + l->managed_dict);
        if (values && (ix = sdk_attr_ix(s, t)) >= 0)
            return sdk_word(s, values + 8u * (uint32_t)ix, out);
        break;
    case PYCTX_ATTRS_MANAGED_312: {
        if (!(t->flags & PYCTX_TPFLAGS_MANAGED_DICT))
            return -EAGAIN;
        uint64_t w = load_le64(pre + 32 + l->managed_dict);
        if (w & 1) {
            if ((ix = sdk_attr_ix(s, t)) < 0)
                return 0;
            return sdk_word(s, w + 1 + 8u * (uint32_t)ix, out);
        }
        dict = w;
        break;
    }
    case PYCTX_ATTRS_INLINE:
        if (!(t->flags & PYCTX_TPFLAGS_MANAGED_DICT))
            return -EAGAIN;
        if ((t->flags & PYCTX_TPFLAGS_INLINE_VALUES) && (ix = sdk_attr_ix(s, t)) >= 0 &&
            t->basicsize > 0 && t->basicsize < 4096) {
            uint8_t v[SDK_VALUES_READ];
            size_t len = l->values_array + 8u * ((uint32_t)ix + 1);
            if (len <= sizeof(v)) {
                ssize_t got = sdk_read(s, span + (uint64_t)t->basicsize, v, len, len);
                if (got < 0)
                    return (int)got;
                if (v[l->values_valid] && (uint32_t)ix < v[l->values_capacity]) {
                    *out = load_le64(v + l->values_array + 8u * (uint32_t)ix);
                    return 0;
                }
            }
        }
        dict = load_le64(pre + 32 + l->managed_dict);
        break;
    }
    if (!dict)
        return 0;
    uint64_t found = 0;
    int err = sdk_dict_find(s, dict, s->attr_key, SDK_ATTR, false, &found, out);
    if (!err && found)
        s->attr_key = found;
    return err;
}

/* ---- ids ---------------------------------------------------------------------------- */

/* An int of at most @digits 30-bit digits from @b (@n bytes of it) into the
 * big-endian @out (@len bytes). false for a negative or longer one. */
static bool sdk_int(const struct otel_sdk *s, const uint8_t *b, size_t n, unsigned digits,
                    uint8_t *out, size_t len)
{
    const struct pyctx_layout *l = s->l;
    uint64_t size = load_le64(b + l->long_size);
    uint64_t nd;
    if (s->m.long_lv_tag) {
        if ((size & 3) == 2)
            return false; /* negative */
        nd = (size & 3) == 1 ? 0 : size >> 3;
    } else {
        if ((int64_t)size < 0)
            return false;
        nd = size;
    }
    if (nd > digits || l->long_digits + 4 * nd > n)
        return false;
    memset(out, 0, len);
    /* digits little-endian, 30 bits each, into bytes from the end */
    unsigned bit = 0;
    for (uint64_t i = 0; i < nd; i++, bit += PYCTX_LONG_SHIFT) {
        uint64_t d = load_le32(b + l->long_digits + 4 * i) & ((1u << PYCTX_LONG_SHIFT) - 1);
        for (unsigned j = 0; j < PYCTX_LONG_SHIFT; j++) {
            if (!((d >> j) & 1))
                continue;
            unsigned at = bit + j;
            if (at >= 8 * len)
                return false;
            out[len - 1 - at / 8] |= (uint8_t)(1u << (at % 8));
        }
    }
    return true;
}

/* ---- the search ---------------------------------------------------------------------- */

static bool sdk_is_var(struct otel_sdk *s, uint64_t key, uint64_t value)
{
    const struct pyctx_layout *l = s->l;
    uint8_t v[128], h[32];
    if (l->var_size > sizeof(v) || sdk_read(s, key, v, l->var_size, l->var_size) < 0 ||
        sdk_kind_of(s, v) != SDK_K_CONTEXTVAR)
        return false;
    char name[32];
    if (sdk_ascii(s, load_le64(v + l->var_name), name, sizeof(name)) != 0 ||
        strcmp(name, SDK_VAR_NAME) != 0)
        return false;
    if (sdk_read(s, value, h, 16, 16) < 0 || sdk_kind_of(s, h) != SDK_K_OTEL_CONTEXT)
        return false;
    s->var = key;
    s->var_hash = sdk_fold(load_le64(v + l->var_hash));
    return true;
}

/* Looks for the SDK's variable in the context at @ctx. Returns true when found
 * and checked. */
static bool sdk_search(struct otel_sdk *s, uint64_t ctx)
{
    const struct pyctx_layout *l = s->l;
    uint8_t c[64], h[64];
    if (sdk_read(s, ctx, c, l->ctx_size, l->ctx_size) < 0 || sdk_kind_of(s, c) != SDK_K_CONTEXT)
        return false;
    uint64_t hamt = load_le64(c + l->ctx_vars);
    if (sdk_read(s, hamt, h, l->hamt_size, l->hamt_size) < 0 || sdk_kind_of(s, h) != SDK_K_HAMT)
        return false;
    uint64_t root = load_le64(h + l->hamt_root);
    if (!sdk_hamt_each(s, root, sdk_is_var))
        return false;
    /* the stored hash finds what the walk found */
    uint64_t value;
    if (sdk_hamt_find(s, root, s->var, s->var_hash, &value) != 0 || value == 0) {
        s->var = 0;
        sdk_invalid(s, "layout check: the stored hash of ContextVar \"%s\" does not find it",
                    SDK_VAR_NAME);
        return false;
    }
    return true;
}

/* ---- per sample ------------------------------------------------------------------- */

static struct sdk_memo *sdk_memo_slot(struct otel_sdk *s, uint64_t tstate)
{
    return &s->memo[(tstate >> 4) % SDK_MEMO_SLOTS];
}

/* A span read whose context has had its second look (pd->again). */
static void sdk_settle(struct otel_sdk *s, const struct sdk_pending *pd)
{
    if (pd->again != pd->hamt) {
        s->stats.torn++; /* the thread set a variable meanwhile */
        return;
    }
    if (pd->version)
        *sdk_memo_slot(s, pd->tstate) = (struct sdk_memo){
            .tstate = pd->tstate, .dict = pd->dict, .version = pd->version, .span = pd->got};
    *pd->out = pd->got;
    if (pd->got.set)
        s->stats.spans++;
    else
        s->stats.none++;
}

/* The second look at the contexts of the spans read this sample, in one call
 * (one by one if it fails). */
static void sdk_recheck(struct otel_sdk *s)
{
    struct memread_iov iov[SDK_BATCH];
    for (size_t j = 0; j < s->npend; j++)
        iov[j] = (struct memread_iov){s->pend[j].ctx + s->l->ctx_vars, &s->pend[j].again, 8};
    bool batch = s->npend > 0 && memread_readv(s->mr, iov, s->npend) == 0;
    for (size_t j = 0; j < s->npend; j++) {
        struct sdk_pending *pd = &s->pend[j];
        if (!batch && memread_read(s->mr, iov[j].raddr, &pd->again, 8) != 0) {
            s->stats.faults++;
            continue;
        }
        pd->again = load_le64(&pd->again);
        sdk_settle(s, pd);
    }
    s->npend = 0;
}

/* Whether the thread at @tstate is still in the Context @dict (its header
 * @d) it was in last: the same address and version tag (<= 3.13). */
static bool sdk_memo_hit(struct otel_sdk *s, uint64_t tstate, uint64_t dict, const uint8_t *d)
{
    const struct sdk_memo *mm = sdk_memo_slot(s, tstate);
    uint64_t version = s->l->dict_version ? load_le64(d + s->l->dict_version) : 0;
    return version && mm->tstate == tstate && mm->dict == dict && mm->version == version;
}

/* The span of the thread whose state is at @tstate, its context at @ctx; a
 * span read waits in s->pend for sdk_recheck(). */
static void sdk_thread(struct otel_sdk *s, uint64_t tstate, uint64_t ctx, struct sample_span *out)
{
    const struct pyctx_layout *l = s->l;
    uint8_t c[64], h[64], d[64];
    out->set = false;
    s->stats.threads++;
    if (!ctx) {
        s->stats.none++;
        return;
    }
    int err;
    uint64_t hamt, root, dict, span, sc;
    if (sdk_read(s, ctx, c, l->ctx_size, l->ctx_size) < 0)
        goto fault;
    if (sdk_kind_of(s, c) != SDK_K_CONTEXT)
        goto torn;
    hamt = load_le64(c + l->ctx_vars);
    if (sdk_read(s, hamt, h, l->hamt_size, l->hamt_size) < 0)
        goto fault;
    if (sdk_kind_of(s, h) != SDK_K_HAMT)
        goto torn;
    root = load_le64(h + l->hamt_root);
    if ((err = sdk_hamt_find(s, root, s->var, s->var_hash, &dict)) != 0)
        goto fail;
    if (!dict) {
        s->stats.none++;
        return;
    }
    /* the Context: one whose (address, version) was seen holds what it held */
    struct sdk_memo *mm = sdk_memo_slot(s, tstate);
    if (sdk_read(s, dict, d, l->dict_size, l->dict_size) < 0)
        goto fault;
    if (sdk_kind_of(s, d) != SDK_K_OTEL_CONTEXT)
        goto torn;
    uint64_t version = l->dict_version ? load_le64(d + l->dict_version) : 0;
    if (sdk_memo_hit(s, tstate, dict, d)) {
        *out = mm->span;
        s->stats.cached++;
        if (out->set)
            s->stats.spans++;
        else
            s->stats.none++;
        return;
    }
    if (!s->span_key) {
        /* the key is made when the SDK is imported; a Context without it has no span */
        if ((err = sdk_dict_find(s, dict, 0, SDK_SPAN_PREFIX, true, &s->span_key, &span)) != 0)
            goto fail;
    } else {
        uint64_t k;
        if ((err = sdk_dict_find(s, dict, s->span_key, NULL, false, &k, &span)) != 0)
            goto fail;
    }
    struct sample_span got = {.set = false};
    if (span) {
        if ((err = sdk_span_context(s, span, &sc)) != 0)
            goto fail;
        if (sc) {
            /* the SpanContext's first two items, then both ints (an int at
             * the end of its mapping: what it holds) */
            uint8_t tu[64], ti[64], si[64];
            size_t tlen = l->tuple_item + 16, ilen = SDK_INT_READ(l);
            if (sdk_read(s, sc, tu, tlen, tlen) < 0)
                goto fault;
            if (sdk_kind_of(s, tu) != SDK_K_SPANCONTEXT || load_le64(tu + l->ob_size) < 2)
                goto torn;
            uint64_t tid = load_le64(tu + l->tuple_item), sid = load_le64(tu + l->tuple_item + 8);
            ssize_t nt = sdk_read(s, tid, ti, l->long_digits, ilen);
            ssize_t ns = nt < 0 ? nt : sdk_read(s, sid, si, l->long_digits, ilen);
            if (ns < 0)
                goto fault;
            if (sdk_kind_of(s, ti) != SDK_K_INT || sdk_kind_of(s, si) != SDK_K_INT ||
                !sdk_int(s, ti, (size_t)nt, 5, got.trace_id, 16) ||
                !sdk_int(s, si, (size_t)ns, 3, got.span_id, 8))
                goto torn;
            static const uint8_t zero[16];
            got.set = memcmp(got.span_id, zero, 8) != 0; /* 0: INVALID_SPAN */
        }
    }
    /* the context's HAMT once more, after everything: if it moved, the thread
     * set a variable meanwhile (sdk_recheck(), for all threads in one call) */
    struct sdk_pending pd = {.out = out,
                             .got = got,
                             .tstate = tstate,
                             .ctx = ctx,
                             .hamt = hamt,
                             .dict = dict,
                             .version = version};
    if (s->npend < SDK_BATCH) {
        s->pend[s->npend++] = pd;
        return;
    }
    if (sdk_word(s, ctx + l->ctx_vars, &pd.again) != 0)
        goto fault;
    sdk_settle(s, &pd);
    return;
fail:
    if (err != -EAGAIN)
        goto fault;
torn:
    s->stats.torn++;
    return;
fault:
    s->stats.faults++;
}

/*
 * Reads @len bytes at each of the @n addresses a->next[] (0: none) in one
 * call, for sdk_read() to find during this sample. A call that fails (one
 * range unmapped) leaves them to be read one by one.
 */
static void sdk_prefetch(struct otel_sdk *s, size_t n, size_t len)
{
    struct sdk_ahead *a = s->ahead;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t at = a->next[i];
        size_t want = len ? len : a->len[i];
        if (!at || at % 8 || want == 0 || a->used + want > SDK_PF_BYTES)
            continue;
        struct sdk_pf *p = sdk_pf_find(s, at);
        if (!p || p->gen == s->pf_gen)
            continue; /* no room, or already read */
        /* claimed now (len 0: not usable until the call succeeds), so that a
         * second thread with the same address does not read it twice */
        *p = (struct sdk_pf){.addr = at, .gen = s->pf_gen, .off = (uint32_t)a->used};
        a->iov[k] = (struct memread_iov){at, a->bytes + a->used, want};
        a->slot[k] = (uint32_t)(p - a->pf);
        a->used += want;
        k++;
    }
    if (k == 0 || memread_readv(s->mr, a->iov, k) != 0)
        return;
    for (size_t j = 0; j < k; j++)
        a->pf[a->slot[j]].len = (uint32_t)a->iov[j].len;
}

/*
 * Where the _context of span a->dict[@i] is, for a class already known, as
 * sdk_span_context() will read it (3.11+: a values slot, or 3.13+'s inline
 * values): into a->next[@i] and a->len[@i]; 0 when it is elsewhere.
 */
static void sdk_attr_ahead(struct otel_sdk *s, size_t i, size_t before)
{
    const struct pyctx_layout *l = s->l;
    struct sdk_ahead *a = s->ahead;
    uint64_t span = a->dict[i];
    uint8_t pre[48];
    a->next[i] = 0;
    a->len[i] = 0;
    if (!span || before != 32 || sdk_read(s, span - 32, pre, 48, 48) < 0)
        return;
    uint64_t taddr = load_le64(pre + 32 + l->ob_type);
    const struct sdk_type *t = NULL;
    for (size_t j = 0; j < s->ntypes && !t; j++)
        t = s->types[j].addr == taddr ? &s->types[j] : NULL;
    if (!t || t->kind != SDK_K_OTHER || t->attr_ix < 0)
        return;
    uint32_t ix = (uint32_t)t->attr_ix;
    uint64_t w = load_le64(pre + 32 + l->managed_dict);
    switch (s->m.attrs) {
    case PYCTX_ATTRS_MANAGED_311: {
        uint64_t values = load_le64(pre + 32 + l->managed_values);
        a->next[i] = values ? values + 8u * ix : 0;
        a->len[i] = 8;
        break;
    }
    case PYCTX_ATTRS_MANAGED_312:
        a->next[i] = (w & 1) ? w + 1 + 8u * ix : 0;
        a->len[i] = 8;
        break;
    case PYCTX_ATTRS_INLINE:
        if ((t->flags & PYCTX_TPFLAGS_INLINE_VALUES) && t->basicsize > 0 && t->basicsize < 4096 &&
            l->values_array + 8u * (ix + 1) <= SDK_VALUES_READ) {
            a->next[i] = span + (uint64_t)t->basicsize;
            a->len[i] = l->values_array + 8u * (ix + 1);
        }
        break;
    case PYCTX_ATTRS_DICTOFFSET:
        break;
    }
}

/*
 * The links of every thread's chain read level by level, each level for all
 * threads in one call (context, HAMT, root node, the SDK's Context, its keys,
 * the span, the SpanContext, the two ints): a sample costs about nine calls
 * for its threads, not nine per thread. Nothing is judged here: the
 * per-thread walk (sdk_thread()) reads the same addresses, finds them read,
 * and checks and counts as it would without. Deeper HAMT levels, values
 * arrays and long keys tables are read there, one by one.
 */
static void sdk_batch(struct otel_sdk *s, const struct unwind_result *r, size_t n, size_t word)
{
    const struct pyctx_layout *l = s->l;
    struct sdk_ahead *a = s->ahead;
    s->pf_gen++;
    a->used = 0;
    n = n < SDK_BATCH ? n : SDK_BATCH;
    for (size_t i = 0; i < n; i++) {
        const struct unwind_thread *t = &r->threads[i];
        a->next[i] = t->status == SAMPLE_OK && !s->spans[i].set ? t->words[word] : 0;
        a->len[i] = 0;
    }
    uint8_t b[64];
    sdk_prefetch(s, n, l->ctx_size);
    for (size_t i = 0; i < n; i++) { /* contexts -> their HAMTs */
        uint64_t at = a->next[i];
        a->next[i] = at && sdk_read(s, at, b, l->ctx_size, l->ctx_size) > 0 &&
                             sdk_kind_of(s, b) == SDK_K_CONTEXT
                         ? load_le64(b + l->ctx_vars)
                         : 0;
    }
    sdk_prefetch(s, n, l->hamt_size);
    for (size_t i = 0; i < n; i++) { /* HAMTs -> their root nodes */
        uint64_t at = a->next[i];
        a->next[i] = at && sdk_read(s, at, b, l->hamt_size, l->hamt_size) > 0 &&
                             sdk_kind_of(s, b) == SDK_K_HAMT
                         ? load_le64(b + l->hamt_root)
                         : 0;
    }
    sdk_prefetch(s, n, SDK_NODE_READ(l));
    for (size_t i = 0; i < n; i++) { /* root nodes -> the SDK's Context dicts */
        uint64_t at = a->next[i], dict = 0;
        a->next[i] = a->dict[i] =
            at && sdk_hamt_find(s, at, s->var, s->var_hash, &dict) == 0 ? dict : 0;
    }
    sdk_prefetch(s, n, l->dict_size);
    if (!s->span_key)
        return;                      /* found by its text, on the per-thread walk */
    for (size_t i = 0; i < n; i++) { /* Contexts -> their keys tables */
        uint64_t at = a->next[i];
        a->next[i] = at && sdk_read(s, at, b, l->dict_size, l->dict_size) > 0 &&
                             sdk_kind_of(s, b) == SDK_K_OTEL_CONTEXT &&
                             !sdk_memo_hit(s, r->threads[i].tstate_raddr, at, b)
                         ? load_le64(b + l->dict_keys)
                         : 0;
    }
    sdk_prefetch(s, n, SDK_KEYS_READ(l));
    size_t before = s->m.attrs == PYCTX_ATTRS_DICTOFFSET ? 0 : 32;
    for (size_t i = 0; i < n; i++) { /* keys -> the spans (and the words before them) */
        uint64_t span = 0, k;
        if (a->next[i] && sdk_dict_find(s, a->dict[i], s->span_key, NULL, false, &k, &span) == 0 &&
            span)
            a->next[i] = span - before;
        else
            a->next[i] = 0;
        a->dict[i] = a->next[i] ? span : 0; /* (from here on: the span) */
    }
    sdk_prefetch(s, n, before + 16);
    for (size_t i = 0; i < n; i++) /* spans -> where their _context is */
        sdk_attr_ahead(s, i, before);
    sdk_prefetch(s, n, 0);
    for (size_t i = 0; i < n; i++) { /* spans -> their SpanContexts */
        uint64_t sc = 0;
        a->next[i] = a->dict[i] && sdk_span_context(s, a->dict[i], &sc) == 0 ? sc : 0;
    }
    sdk_prefetch(s, n, l->tuple_item + 16);
    size_t m = 0;
    memcpy(a->dict, a->next, n * sizeof(a->next[0])); /* (from here on: the SpanContext) */
    for (size_t i = 0; i < n; i++) {                  /* SpanContexts -> the two ints */
        uint64_t at = a->dict[i];
        if (at && sdk_read(s, at, b, l->tuple_item + 16, l->tuple_item + 16) > 0 &&
            sdk_kind_of(s, b) == SDK_K_SPANCONTEXT) {
            a->next[m++] = load_le64(b + l->tuple_item);
            a->next[m++] = load_le64(b + l->tuple_item + 8);
        }
    }
    sdk_prefetch(s, m, SDK_INT_READ(l));
}

const struct sample_span *otel_sdk_sample(struct otel_sdk *s, const struct unwind_result *r,
                                          size_t word, const struct sample_span *published)
{
    size_t n = r->nthreads < UNWIND_MAX_THREADS ? r->nthreads : UNWIND_MAX_THREADS;
    for (size_t i = 0; i < n; i++)
        s->spans[i] = published ? published[i] : (struct sample_span){.set = false};
    if (s->state == OTEL_SDK_INVALID || word >= UNWIND_THREAD_WORDS)
        return s->spans;
    if (s->state == OTEL_SDK_SEARCHING) {
        uint64_t now = clock_mono(s->clock);
        if (now < s->next_search_ns)
            return s->spans;
        s->next_search_ns = now + SDK_SEARCH_NS;
        s->stats.searches++;
        unsigned looked = 0;
        for (size_t i = 0; i < n && looked < SDK_SEARCH_CONTEXTS; i++) {
            uint64_t ctx = r->threads[i].words[word];
            if (r->threads[i].status != SAMPLE_OK || !ctx)
                continue;
            looked++;
            if (sdk_search(s, ctx)) {
                s->state = OTEL_SDK_ACTIVE;
                /* the one allocation a sample makes, once per process; without
                 * it each thread's chain is read on its own */
                s->ahead = alloc_calloc(1, sizeof(*s->ahead));
                s->why[0] = '\0';
                break;
            }
            if (s->state == OTEL_SDK_INVALID)
                break;
        }
        if (s->state == OTEL_SDK_SEARCHING)
            snprintf(s->why, sizeof(s->why),
                     "no thread's context holds the SDK's \"%s\" variable (yet)", SDK_VAR_NAME);
        if (s->state != OTEL_SDK_ACTIVE)
            return s->spans;
    }
    if (s->ahead)
        sdk_batch(s, r, n, word);
    for (size_t i = 0; i < n; i++) {
        const struct unwind_thread *t = &r->threads[i];
        if (t->status != SAMPLE_OK || s->spans[i].set)
            continue;
        sdk_thread(s, t->tstate_raddr, t->words[word], &s->spans[i]);
        if (s->state == OTEL_SDK_INVALID)
            break;
    }
    sdk_recheck(s);
    s->pf_gen++; /* what was read ahead is this sample's only */
    return s->spans;
}

/* ---- lifecycle ---------------------------------------------------------------------- */

int otel_sdk_new(struct memread *mr, unsigned minor, bool free_threaded, const struct clock *clock,
                 struct otel_sdk **out, char *why, size_t why_len)
{
    const struct pyctx_layout *l = pyctx_layout_for(minor);
    if (!l || free_threaded) {
        snprintf(why, why_len,
                 "the SDK's context is read on CPython 3.9-3.15 default builds, not %s3.%u",
                 free_threaded ? "free-threaded " : "", minor);
        return -ENOTSUP;
    }
    struct otel_sdk *s = alloc_calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->mr = mr;
    s->clock = clock ? clock : &clock_system;
    s->l = l;
    (void)pyctx_model_for(minor, &s->m);
    s->state = OTEL_SDK_SEARCHING;
    s->pf_gen = 1; /* the zeroed slots are free */
    *out = s;
    return 0;
}

uint32_t otel_sdk_context_offset(const struct otel_sdk *s)
{
    return s->l->ts_context;
}

enum otel_sdk_state otel_sdk_state(const struct otel_sdk *s)
{
    return s->state;
}

const char *otel_sdk_why(const struct otel_sdk *s)
{
    return s->why;
}

struct otel_sdk_stats otel_sdk_stats(const struct otel_sdk *s)
{
    return s->stats;
}

void otel_sdk_free(struct otel_sdk *s)
{
    if (!s)
        return;
    alloc_free(s->ahead);
    alloc_free(s);
}
