/* SPDX-License-Identifier: MIT */
/*
 * otel_sdk_objects.c: the CPython objects the SDK's span is reached through,
 * as the reader of otel_sdk.h sees them in the target's memory: bounded
 * reads (from what the sample read ahead when it did), types learned and
 * checked against the layout, the HAMT, dicts and their keys tables, a span's
 * _context attribute by version, ints (see otel_sdk_internal.h).
 */
#include "base/compat.h"

#include <stdarg.h>

#include "base/bytes.h"
#include "unwind/otel_sdk_internal.h"

/* ---- reading ------------------------------------------------------------------------ */

/* The slot of @addr among this sample's reads ahead: its own, or the free one
 * it would take; NULL when the table is full. */
struct sdk_pf *sdk_pf_find(struct otel_sdk *s, uint64_t addr)
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
ssize_t sdk_read(struct otel_sdk *s, uint64_t addr, void *buf, size_t need, size_t want)
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

int sdk_word(struct otel_sdk *s, uint64_t addr, uint64_t *out)
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
int sdk_cstr(struct otel_sdk *s, uint64_t addr, char out[SDK_NAME_MAX])
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
int sdk_ascii(struct otel_sdk *s, uint64_t addr, char *out, size_t cap)
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

PYPROFD_PRINTF(2, 3) void sdk_invalid(struct otel_sdk *s, const char *fmt, ...)
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
struct sdk_type *sdk_type(struct otel_sdk *s, uint64_t addr, bool keep_other)
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
enum sdk_kind sdk_kind_of(struct otel_sdk *s, const uint8_t *obj)
{
    const struct sdk_type *t = sdk_type(s, load_le64(obj + s->l->ob_type), false);
    return t ? t->kind : SDK_K_OTHER;
}

/* ---- the HAMT ----------------------------------------------------------------------- */

uint32_t sdk_fold(uint64_t h)
{
    int32_t x = (int32_t)((uint32_t)(h & 0xffffffffu) ^ (uint32_t)(h >> 32));
    return (uint32_t)(x == -1 ? -2 : x);
}

/*
 * Looks @key up in the HAMT whose root node is @root, by its folded hash
 * @h32. Returns 0 with *@value set (0: absent), -EAGAIN when a node is not
 * what it must be (freed under the read), or a read error.
 */
int sdk_hamt_find(struct otel_sdk *s, uint64_t root, uint64_t key, uint32_t h32, uint64_t *value)
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
bool sdk_hamt_each(struct otel_sdk *s, uint64_t root,
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
int sdk_dict_find(struct otel_sdk *s, uint64_t dict, uint64_t key, const char *text, bool prefix,
                  uint64_t *found_key, uint64_t *value)
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
int32_t sdk_attr_ix(struct otel_sdk *s, struct sdk_type *t)
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

/*
 * Where instance @span of class @t keeps _context in a values slot, @ix being
 * its index in the class's shared keys and @pre the 48 bytes from span - 32
 * (3.11+: the managed words, then the header): the bytes to read, *@len at
 * *@at (3.11, 3.12: the slot; 3.13+: the values' header and slots up to it).
 * false when it keeps its attributes in its dict instead. Reads nothing.
 */
bool sdk_attr_place(const struct otel_sdk *s, const struct sdk_type *t, uint32_t ix, uint64_t span,
                    const uint8_t *pre, uint64_t *at, size_t *len)
{
    const struct pyctx_layout *l = s->l;
    uint64_t w = load_le64(pre + 32 + l->managed_dict);
    switch (s->m.attrs) {
    case PYCTX_ATTRS_MANAGED_311: {
        uint64_t values = load_le64(pre + 32 + l->managed_values);
        *at = values + 8u * ix;
        *len = 8;
        return values != 0;
    }
    case PYCTX_ATTRS_MANAGED_312:
        *at = w + 1 + 8u * ix; /* the word holds values - 1 */
        *len = 8;
        return (w & 1) != 0;
    case PYCTX_ATTRS_INLINE:
        *at = span + (uint64_t)t->basicsize;
        *len = l->values_array + 8u * (ix + 1);
        return (t->flags & PYCTX_TPFLAGS_INLINE_VALUES) && t->basicsize > 0 &&
               t->basicsize < 4096 && *len <= SDK_VALUES_READ;
    case PYCTX_ATTRS_DICTOFFSET:
        break;
    }
    return false;
}

/* The _context attribute of the span at @span (0: not set). Returns 0, -EAGAIN
 * or a read error. */
int sdk_span_context(struct otel_sdk *s, uint64_t span, uint64_t *out)
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
    uint64_t dict = 0;
    if (s->m.attrs == PYCTX_ATTRS_DICTOFFSET) {
        if (t->dictoffset <= 0 || t->dictoffset > 4096 || t->dictoffset % 8)
            return -EAGAIN;
        int err = sdk_word(s, span + (uint64_t)t->dictoffset, &dict);
        if (err)
            return err;
    } else {
        if (!(t->flags & PYCTX_TPFLAGS_MANAGED_DICT))
            return -EAGAIN;
        int32_t ix = sdk_attr_ix(s, t);
        uint64_t at, w = load_le64(pre + 32 + l->managed_dict);
        size_t len;
        if (ix >= 0 && sdk_attr_place(s, t, (uint32_t)ix, span, pre, &at, &len)) {
            uint8_t v[SDK_VALUES_READ];
            ssize_t got = sdk_read(s, at, v, len, len);
            if (got < 0)
                return (int)got;
            if (s->m.attrs != PYCTX_ATTRS_INLINE) {
                *out = load_le64(v); /* the slot itself */
                return 0;
            }
            if (v[l->values_valid] && (uint32_t)ix < v[l->values_capacity]) {
                *out = load_le64(v + l->values_array + 8u * (uint32_t)ix);
                return 0;
            }
        } else if (s->m.attrs == PYCTX_ATTRS_MANAGED_312 && (w & 1)) {
            return 0; /* values, and no "_context" among its class's keys: not set */
        }
        dict = w; /* the dict (3.12: the word is no tagged values pointer here) */
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
bool sdk_int(const struct otel_sdk *s, const uint8_t *b, size_t n, unsigned digits, uint8_t *out,
             size_t len)
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
