/* SPDX-License-Identifier: MIT */
/*
 * pyctx_image.c: synthetic images of the OpenTelemetry SDK's current span in
 * a CPython 3.9-3.15 process (see pyctx_image.h). Objects are laid out front
 * to back in one arena; each is placed with the offsets of the version's
 * pyctx_layout.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "pyctx_image.h"

#define PYCTX_IMAGE_ARENA  (64u * 1024u)
#define PYCTX_IMAGE_PAGE   4096u
#define PYCTX_KEYS_UNICODE 1u /* a dict keys table of str keys, 16-byte entries (3.11+) */
#define PYCTX_STR_STATE    ((1u << 2) | (1u << 5) | (1u << 6)) /* 1-byte kind, compact, ASCII */
#define PYCTX_INT_DIGITS   5u /* room in each int: a 128-bit trace id */
#define PYCTX_SPANCTX_LEN                                                                          \
    6u /* trace_id, span_id, is_remote, trace_flags, trace_state, is_valid                         \
        */

/* the SDK variable's hash; FOLD_HASH's, whose halves xor to -1 */
#define PYCTX_VAR_HASH      0x0123456789abcdefull
#define PYCTX_VAR_HASH_FOLD 0x12345678edcba987ull

struct pyctx_image {
    const struct pyctx_layout *l;
    struct pyctx_model m;
    unsigned flags;
    uint8_t *mem;
    size_t used;
    struct memread_fake *fake; /* once installed */
    uint64_t addr[PYCTX_IMAGE_NOBJ];
    /* types and str objects used while building */
    uint64_t t_str, t_var, t_bitmap, t_array, t_collision, t_dict, t_spanctx;
    uint64_t span_key, baggage_key, attr_names[4];
    uint64_t var_slot;    /* the main HAMT's value slot of the SDK variable */
    uint64_t attr_slot;   /* where the span's _context pointer is */
    uint64_t attr_key_at; /* its dict entry's key word, 0 when it is in a values array */
    uint8_t trace_id[16], span_id[8];
};

/* ---- the arena ------------------------------------------------------------------------- */

static uint8_t *at(struct pyctx_image *img, uint64_t raddr)
{
    if (raddr < PYCTX_IMAGE_BASE || raddr - PYCTX_IMAGE_BASE >= PYCTX_IMAGE_ARENA)
        abort(); /* the builder's own bug */
    return img->mem + (raddr - PYCTX_IMAGE_BASE);
}

static uint64_t get64(struct pyctx_image *img, uint64_t raddr)
{
    uint64_t v;
    memcpy(&v, at(img, raddr), 8);
    return v;
}

/* Builds: local bytes only (nothing is installed yet). */
static void put64(struct pyctx_image *img, uint64_t raddr, uint64_t v)
{
    memcpy(at(img, raddr), &v, 8);
}

static void put32(struct pyctx_image *img, uint64_t raddr, uint32_t v)
{
    memcpy(at(img, raddr), &v, 4);
}

/* @len zeroed bytes, 16-aligned. */
static uint64_t alloc(struct pyctx_image *img, size_t len)
{
    size_t start = (img->used + 15u) & ~(size_t)15u;
    if (start + len > PYCTX_IMAGE_ARENA)
        abort();
    img->used = start + len;
    return PYCTX_IMAGE_BASE + start;
}

/* An object of @len bytes whose type is @type (refcount 1). */
static uint64_t object(struct pyctx_image *img, uint64_t type, size_t len)
{
    uint64_t o = alloc(img, len);
    put64(img, o, 1);
    put64(img, o + img->l->ob_type, type);
    return o;
}

/* sizeof(PyObject): the type pointer is its last word */
static uint32_t header(const struct pyctx_image *img)
{
    return img->l->ob_type + 8;
}

static uint64_t cstring(struct pyctx_image *img, const char *text)
{
    size_t len = strlen(text) + 1;
    uint64_t a = alloc(img, len);
    memcpy(at(img, a), text, len);
    return a;
}

static uint64_t type(struct pyctx_image *img, const char *name, uint64_t basicsize,
                     uint64_t itemsize, uint64_t flags)
{
    const struct pyctx_layout *l = img->l;
    uint64_t t = alloc(img, l->ht_cached_keys + 16);
    put64(img, t, 1);
    put64(img, t + l->tp_name, cstring(img, name));
    put64(img, t + l->tp_basicsize, basicsize);
    put64(img, t + l->tp_itemsize, itemsize);
    put64(img, t + l->tp_flags, flags);
    return t;
}

/* A compact ASCII str (its length is the word after the header). */
static uint64_t str(struct pyctx_image *img, const char *text)
{
    const struct pyctx_layout *l = img->l;
    size_t len = strlen(text);
    uint64_t s = object(img, img->t_str, l->str_ascii_data + len + 1);
    put64(img, s + header(img), len);
    put32(img, s + l->str_state, PYCTX_STR_STATE);
    memcpy(at(img, s + l->str_ascii_data), text, len);
    return s;
}

/* ---- dicts ----------------------------------------------------------------------------- */

/*
 * A keys table of @n entries (@keys, @values; a key 0 is a deleted entry):
 * 3.9/3.10 dk_size 8 and 24-byte entries; 3.11+ 8 index bytes and entries of
 * @kind. Sets *@slots[i] to the address of entry i's key word when @slots.
 */
static uint64_t keys_table(struct pyctx_image *img, const uint64_t *keys, const uint64_t *values,
                           size_t n, unsigned kind, uint64_t *slots)
{
    const struct pyctx_layout *l = img->l;
    const size_t index_bytes = 8;
    bool general = !img->m.keys_log2 || kind == PYCTX_KEYS_GENERAL;
    size_t esize = general ? l->entry_size : l->uentry_size;
    size_t kofs = general ? 8 : 0;
    uint64_t k = alloc(img, l->keys_indices + index_bytes + esize * n);
    put64(img, k, 1);
    if (img->m.keys_log2) {
        *at(img, k + l->keys_log2_index_bytes) = 3;
        *at(img, k + l->keys_kind) = (uint8_t)kind;
    } else {
        put64(img, k + l->keys_size, index_bytes);
    }
    put64(img, k + l->keys_nentries, n);
    memset(at(img, k + l->keys_indices), 0xff, index_bytes);
    uint64_t e = k + l->keys_indices + index_bytes;
    for (size_t i = 0; i < n; i++, e += esize) {
        *at(img, k + l->keys_indices + i) = (uint8_t)i;
        if (general)
            put64(img, e, 0x1000 + i); /* the key's hash: never read */
        put64(img, e + kofs, keys[i]);
        put64(img, e + kofs + 8, values ? values[i] : 0);
        if (slots)
            slots[i] = e + kofs;
    }
    return k;
}

/* A dict of type @t over @keys (a combined table when @values is 0). */
static uint64_t dict(struct pyctx_image *img, uint64_t t, uint64_t keys, uint64_t values,
                     uint64_t used)
{
    const struct pyctx_layout *l = img->l;
    uint64_t d = object(img, t, l->dict_size);
    put64(img, d + l->dict_used, used);
    put64(img, d + l->dict_keys, keys);
    put64(img, d + l->dict_values, values);
    return d;
}

/* ---- the HAMT -------------------------------------------------------------------------- */

struct hitem {
    uint64_t key, value;
    uint32_t h;
};

static uint32_t fold(uint64_t h)
{
    uint32_t x = (uint32_t)h ^ (uint32_t)(h >> 32);
    return x == UINT32_MAX ? UINT32_MAX - 1 : x; /* -1 is -2 */
}

/*
 * The node holding @items (n >= 1) at @shift: a collision node when they all
 * have one hash, else a bitmap node, a sub-tree in place of each slot more
 * than one item shares. Reports where @track's value is in *@slot.
 */
static uint64_t hamt_node(struct pyctx_image *img, const struct hitem *items, size_t n,
                          unsigned shift, uint64_t track, uint64_t *slot)
{
    const struct pyctx_layout *l = img->l;
    bool same = n > 1;
    for (size_t i = 1; i < n; i++)
        same = same && items[i].h == items[0].h;
    if (same) {
        uint64_t c = object(img, img->t_collision, l->collision_array + 16 * n);
        put64(img, c + l->ob_size, 2 * n);
        for (size_t i = 0; i < n; i++) {
            put64(img, c + l->collision_array + 16 * i, items[i].key);
            put64(img, c + l->collision_array + 16 * i + 8, items[i].value);
            if (items[i].key == track)
                *slot = c + l->collision_array + 16 * i + 8;
        }
        return c;
    }
    uint32_t bitmap = 0;
    for (size_t i = 0; i < n; i++)
        bitmap |= 1u << ((items[i].h >> shift) & 31u);
    unsigned slots = (unsigned)__builtin_popcount(bitmap);
    uint64_t b = object(img, img->t_bitmap, l->bitmap_array + 16u * slots);
    put64(img, b + l->ob_size, 2u * slots);
    put32(img, b + l->bitmap_bitmap, bitmap);
    unsigned j = 0;
    for (unsigned bit = 0; bit < 32; bit++) {
        if (!(bitmap & (1u << bit)))
            continue;
        struct hitem sub[8];
        size_t m = 0;
        for (size_t i = 0; i < n; i++) {
            if (((items[i].h >> shift) & 31u) == bit && m < PYPROFD_ARRAY_SIZE(sub))
                sub[m++] = items[i];
        }
        uint64_t pair = b + l->bitmap_array + 16u * j++;
        if (m == 1) {
            put64(img, pair, sub[0].key);
            put64(img, pair + 8, sub[0].value);
            if (sub[0].key == track)
                *slot = pair + 8;
        } else {
            put64(img, pair + 8, hamt_node(img, sub, m, shift + 5, track, slot));
        }
    }
    return b;
}

/* An array node root over @items, a bitmap node under each slot used. */
static uint64_t hamt_array(struct pyctx_image *img, const struct hitem *items, size_t n,
                           uint64_t track, uint64_t *slot)
{
    const struct pyctx_layout *l = img->l;
    uint64_t a = object(img, img->t_array, l->array_size);
    for (unsigned i = 0; i < 32; i++) {
        struct hitem sub[8];
        size_t m = 0;
        for (size_t k = 0; k < n; k++) {
            if ((items[k].h & 31u) == i && m < PYPROFD_ARRAY_SIZE(sub))
                sub[m++] = items[k];
        }
        if (m)
            put64(img, a + l->array_array + 8u * i, hamt_node(img, sub, m, 5, track, slot));
    }
    return a;
}

static uint64_t hamt(struct pyctx_image *img, uint64_t root, size_t count)
{
    const struct pyctx_layout *l = img->l;
    uint64_t h = object(img, img->addr[PYCTX_IMAGE_TYPE_HAMT], l->hamt_size);
    put64(img, h + l->hamt_root, root);
    put64(img, h + l->hamt_count, count);
    return h;
}

static uint64_t context(struct pyctx_image *img, uint64_t hamt_obj)
{
    uint64_t c = object(img, img->addr[PYCTX_IMAGE_TYPE_CONTEXT], img->l->ctx_size);
    put64(img, c + img->l->ctx_vars, hamt_obj);
    return c;
}

static uint64_t contextvar(struct pyctx_image *img, const char *name, uint64_t hash)
{
    uint64_t v = object(img, img->t_var, img->l->var_size);
    put64(img, v + img->l->var_name, str(img, name));
    put64(img, v + img->l->var_hash, hash);
    return v;
}

/* ---- ints ------------------------------------------------------------------------------ */

/* Writes the size word of the int at @o: @nd digits, @negative. */
static void int_size(struct pyctx_image *img, uint64_t o, uint64_t nd, bool negative)
{
    uint64_t w;
    if (img->m.long_lv_tag)
        w = nd << 3 | (nd == 0 ? 1u : negative ? 2u : 0u);
    else
        w = negative ? (uint64_t) - (int64_t)nd : nd;
    put64(img, o + img->l->long_size, w);
}

/* Writes the big-endian @len bytes of @be into the int at @o as 30-bit digits. */
static void int_value(struct pyctx_image *img, uint64_t o, const uint8_t *be, size_t len)
{
    uint32_t d[PYCTX_INT_DIGITS] = {0};
    unsigned nd = 0;
    for (unsigned bit = 0; bit < 8 * len; bit++) {
        if (!((be[len - 1 - bit / 8] >> (bit % 8)) & 1))
            continue;
        d[bit / PYCTX_LONG_SHIFT] |= 1u << (bit % PYCTX_LONG_SHIFT);
        nd = bit / PYCTX_LONG_SHIFT + 1;
    }
    for (unsigned i = 0; i < PYCTX_INT_DIGITS; i++)
        put32(img, o + img->l->long_digits + 4 * i, d[i]);
    int_size(img, o, nd, false);
}

/* ---- the span -------------------------------------------------------------------------- */

/* The span class, its shared keys ("_name", "_context", "_kind", "_attributes"). */
static void span_class(struct pyctx_image *img)
{
    const struct pyctx_layout *l = img->l;
    static const char *const names[4] = {"_name", "_context", "_kind", "_attributes"};
    uint64_t flags = PYCTX_TPFLAGS_HEAPTYPE;
    uint64_t basicsize = header(img);
    int64_t dictoffset = -1; /* meaningless for a managed dict (3.11+) */
    if (img->m.attrs == PYCTX_ATTRS_DICTOFFSET) {
        basicsize += 16; /* __dict__, __weakref__ */
        dictoffset = header(img);
    } else {
        flags |= PYCTX_TPFLAGS_MANAGED_DICT;
    }
    if (img->m.attrs == PYCTX_ATTRS_INLINE)
        flags |= PYCTX_TPFLAGS_INLINE_VALUES;
    uint64_t t = type(img, "_Span", basicsize, 0, flags);
    put64(img, t + l->tp_dictoffset, (uint64_t)dictoffset);
    for (size_t i = 0; i < 4; i++)
        img->attr_names[i] = str(img, names[i]);
    put64(img, t + l->ht_cached_keys,
          keys_table(img, img->attr_names, NULL, 4, PYCTX_KEYS_SPLIT, NULL));
    img->addr[PYCTX_IMAGE_TYPE_SPAN] = t;
}

/* The span (its attributes the version's way, _context = @sc). */
static void span(struct pyctx_image *img, uint64_t sc)
{
    const struct pyctx_layout *l = img->l;
    uint64_t t = img->addr[PYCTX_IMAGE_TYPE_SPAN];
    uint64_t basicsize = get64(img, t + l->tp_basicsize);
    uint64_t values[4] = {str(img, "checkout"), sc, str(img, "INTERNAL"), 0};
    bool inline_values = img->m.attrs == PYCTX_ATTRS_INLINE;
    /* room for 3.11's two words before the object, and 3.13's inline values after it */
    uint64_t base = alloc(img, 32 + basicsize + (inline_values ? l->values_array + 8 * 4 : 0));
    uint64_t o = base + 32;
    put64(img, o, 1);
    put64(img, o + l->ob_type, t);
    bool use_dict = img->m.attrs == PYCTX_ATTRS_DICTOFFSET || (img->flags & PYCTX_IMAGE_ATTR_DICT);
    uint64_t d = 0;
    if (use_dict && (img->flags & PYCTX_IMAGE_SPLIT_DICT)) {
        /* a split table: the class's keys, the values apart by index */
        uint64_t v = alloc(img, l->values_array + 8 * 4);
        for (size_t i = 0; i < 4; i++)
            put64(img, v + l->values_array + 8 * i, values[i]);
        d = dict(img, img->t_dict, get64(img, t + l->ht_cached_keys), v, 3);
        img->attr_slot = v + l->values_array + 8;
    } else if (use_dict) {
        uint64_t slots[4];
        uint64_t k = keys_table(img, img->attr_names, values, 4, PYCTX_KEYS_UNICODE, slots);
        d = dict(img, img->t_dict, k, 0, 3);
        img->attr_key_at = slots[1];
        img->attr_slot = slots[1] + 8;
    }
    switch (img->m.attrs) {
    case PYCTX_ATTRS_DICTOFFSET:
        put64(img, o + get64(img, t + l->tp_dictoffset), d);
        break;
    case PYCTX_ATTRS_MANAGED_311:
    case PYCTX_ATTRS_MANAGED_312:
        if (d) {
            put64(img, o + (uint64_t)(int64_t)l->managed_dict, d);
        } else {
            uint64_t v = alloc(img, 8 * 4);
            for (size_t i = 0; i < 4; i++)
                put64(img, v + 8 * i, values[i]);
            img->attr_slot = v + 8;
            if (img->m.attrs == PYCTX_ATTRS_MANAGED_311)
                put64(img, o + (uint64_t)(int64_t)l->managed_values, v);
            else
                put64(img, o + (uint64_t)(int64_t)l->managed_dict, v - 1); /* tagged */
        }
        break;
    case PYCTX_ATTRS_INLINE: {
        uint64_t v = o + basicsize;
        *at(img, v + l->values_capacity) = 4;
        *at(img, v + l->values_valid) = d ? 0 : 1;
        for (size_t i = 0; i < 4 && !d; i++)
            put64(img, v + l->values_array + 8 * i, values[i]);
        if (d)
            put64(img, o + (uint64_t)(int64_t)l->managed_dict, d);
        else
            img->attr_slot = v + l->values_array + 8;
        break;
    }
    }
    img->addr[PYCTX_IMAGE_SPAN] = o;
}

/* ---- building -------------------------------------------------------------------------- */

static void types(struct pyctx_image *img)
{
    const struct pyctx_layout *l = img->l;
    img->addr[PYCTX_IMAGE_TYPE_CONTEXT] = type(img, img->m.context_type, l->ctx_size, 0, 0);
    img->t_var = type(img, img->m.contextvar_type, l->var_size, 0, 0);
    img->addr[PYCTX_IMAGE_TYPE_CONTEXTVAR] = img->t_var;
    /* PyMemberDef {name, type, offset, flags, doc}: "name" first, then the end */
    uint64_t members = alloc(img, 2 * 40);
    put64(img, members, cstring(img, "name"));
    put32(img, members + 8, 16); /* an object member */
    put64(img, members + 16, l->var_name);
    put32(img, members + 24, 1); /* read-only */
    put64(img, img->t_var + l->tp_members, members);
    img->addr[PYCTX_IMAGE_MEMBERS] = members;
    img->addr[PYCTX_IMAGE_TYPE_HAMT] = type(img, "hamt", l->hamt_size, 0, 0);
    img->t_bitmap = type(img, "hamt_bitmap_node", l->bitmap_array, 8, 0);
    img->t_array = type(img, "hamt_array_node", l->array_size, 0, 0);
    img->t_collision = type(img, "hamt_collision_node", l->collision_array, 8, 0);
    img->addr[PYCTX_IMAGE_TYPE_INT] =
        type(img, "int", l->long_digits, 4, PYCTX_TPFLAGS_LONG_SUBCLASS);
    img->t_str = type(img, "str", l->str_ascii_data, 1, 0);
    img->t_dict = type(img, "dict", l->dict_size, 0, PYCTX_TPFLAGS_DICT_SUBCLASS);
    img->addr[PYCTX_IMAGE_TYPE_OTEL_CONTEXT] =
        type(img, "Context", l->dict_size, 0, PYCTX_TPFLAGS_HEAPTYPE | PYCTX_TPFLAGS_DICT_SUBCLASS);
    img->t_spanctx = type(img, "SpanContext", l->tuple_item, 8,
                          PYCTX_TPFLAGS_HEAPTYPE | PYCTX_TPFLAGS_TUPLE_SUBCLASS);
    span_class(img);
}

/* The SDK's Contexts: one holding a baggage entry, a deleted one and the span; one without. */
static void otel_contexts(struct pyctx_image *img)
{
    const struct pyctx_layout *l = img->l;
    uint64_t t = img->addr[PYCTX_IMAGE_TYPE_OTEL_CONTEXT];
    img->span_key = str(img, "current-span-5b3ec1e6-7a29-4a43-9b9e-0c6a3f1e2d47");
    img->baggage_key = str(img, "baggage-0f6b1a2c-3d4e-4f50-8a9b-c1d2e3f40516");
    uint64_t bag = str(img, "{}");
    uint64_t k1[3] = {img->baggage_key, 0, img->span_key};
    uint64_t v1[3] = {bag, 0, img->addr[PYCTX_IMAGE_SPAN]};
    uint64_t c1 = dict(img, t, keys_table(img, k1, v1, 3, PYCTX_KEYS_UNICODE, NULL), 0, 2);
    uint64_t c2 = dict(img, t, keys_table(img, k1, v1, 1, PYCTX_KEYS_UNICODE, NULL), 0, 1);
    if (l->dict_version) {
        put64(img, c1 + l->dict_version, 7001);
        put64(img, c2 + l->dict_version, 7002);
    }
    img->addr[PYCTX_IMAGE_OTEL_CONTEXT] = c1;
    img->addr[PYCTX_IMAGE_OTEL_NOSPAN] = c2;
}

/* The thread contexts, their HAMTs and the variables in them. */
static void thread_contexts(struct pyctx_image *img)
{
    uint64_t h64 = img->flags & PYCTX_IMAGE_FOLD_HASH ? PYCTX_VAR_HASH_FOLD : PYCTX_VAR_HASH;
    uint32_t h = fold(h64);
    uint64_t var = contextvar(img, "current_context", h64);
    img->addr[PYCTX_IMAGE_VAR] = var;
    /* others: one sharing the first level's slot, one the first two levels', one apart */
    uint32_t hs[3] = {h ^ (1u << 7), h ^ (1u << 12), h ^ 3u};
    const char *names[3] = {"request_id", "tenant", "locale"};
    struct hitem items[6];
    size_t n = 0;
    if (img->flags & PYCTX_IMAGE_COLLISION) {
        /* another library's variable of the same name and hash, before the SDK's,
         * holding its own "Context" class (no dict) */
        uint64_t other = contextvar(img, "current_context", h64);
        uint64_t t = type(img, "Context", img->l->dict_size, 0, PYCTX_TPFLAGS_HEAPTYPE);
        items[n++] = (struct hitem){other, object(img, t, img->l->dict_size), h};
    }
    items[n++] = (struct hitem){var, img->addr[PYCTX_IMAGE_OTEL_CONTEXT], h};
    for (size_t i = 0; i < 3; i++) {
        uint64_t v = contextvar(img, names[i], hs[i]);
        items[n++] = (struct hitem){v, str(img, names[i]), hs[i]};
    }
    uint64_t slot = 0, unused = 0;
    uint64_t root = img->flags & PYCTX_IMAGE_ARRAY_ROOT ? hamt_array(img, items, n, var, &slot)
                                                        : hamt_node(img, items, n, 0, var, &slot);
    img->var_slot = slot;
    img->addr[PYCTX_IMAGE_HAMT] = hamt(img, root, n);
    img->addr[PYCTX_IMAGE_HAMT_SPARE] = hamt(img, root, n);
    img->addr[PYCTX_IMAGE_CONTEXT] = context(img, img->addr[PYCTX_IMAGE_HAMT]);

    /* another thread: the SDK's Context without a span, and the variable apart */
    struct hitem nospan[2] = {{var, img->addr[PYCTX_IMAGE_OTEL_NOSPAN], h}, items[n - 1]};
    uint64_t r2 = hamt_node(img, nospan, 2, 0, 0, &unused);
    img->addr[PYCTX_IMAGE_CONTEXT_NOSPAN] = context(img, hamt(img, r2, 2));
    /* a thread whose context never saw the SDK */
    uint64_t r3 = hamt_node(img, &items[n - 2], 2, 0, 0, &unused);
    img->addr[PYCTX_IMAGE_CONTEXT_NOSDK] = context(img, hamt(img, r3, 2));
}

struct pyctx_image *pyctx_image_new(unsigned minor, unsigned flags)
{
    const struct pyctx_layout *l = pyctx_layout_for(minor);
    if (!l)
        return NULL;
    struct pyctx_image *img = alloc_calloc(1, sizeof(*img));
    if (!img)
        return NULL;
    img->mem = alloc_calloc(1, PYCTX_IMAGE_ARENA);
    if (!img->mem) {
        alloc_free(img);
        return NULL;
    }
    img->l = l;
    (void)pyctx_model_for(minor, &img->m);
    img->flags = flags;
    img->used = 64; /* nothing at the base itself */
    types(img);
    /* the span's ids: W3C trace context's example */
    static const uint8_t tid[16] = {0x0a, 0xf7, 0x65, 0x19, 0x16, 0xcd, 0x43, 0xdd,
                                    0x84, 0x48, 0xeb, 0x21, 0x1c, 0x80, 0x31, 0x9c};
    static const uint8_t sid[8] = {0xb7, 0xad, 0x6b, 0x71, 0x69, 0x20, 0x33, 0x31};
    uint64_t t_int = img->addr[PYCTX_IMAGE_TYPE_INT];
    uint64_t ilen = l->long_digits + 4 * (PYCTX_INT_DIGITS + 1);
    img->addr[PYCTX_IMAGE_TRACE_INT] = object(img, t_int, ilen);
    img->addr[PYCTX_IMAGE_SPAN_INT] = object(img, t_int, ilen);
    uint64_t sc = object(img, img->t_spanctx, l->tuple_item + 8 * PYCTX_SPANCTX_LEN);
    put64(img, sc + l->ob_size, PYCTX_SPANCTX_LEN);
    put64(img, sc + l->tuple_item, img->addr[PYCTX_IMAGE_TRACE_INT]);
    put64(img, sc + l->tuple_item + 8, img->addr[PYCTX_IMAGE_SPAN_INT]);
    img->addr[PYCTX_IMAGE_SPANCONTEXT] = sc;
    pyctx_image_set_ids(img, tid, sid);
    span(img, sc);
    otel_contexts(img);
    thread_contexts(img);
    return img;
}

void pyctx_image_free(struct pyctx_image *img)
{
    if (!img)
        return;
    alloc_free(img->mem);
    alloc_free(img);
}

const struct pyctx_layout *pyctx_image_layout(const struct pyctx_image *img)
{
    return img->l;
}

uint64_t pyctx_image_addr(const struct pyctx_image *img, enum pyctx_image_obj which)
{
    return (unsigned)which < PYCTX_IMAGE_NOBJ ? img->addr[which] : 0;
}

/* The bytes used, to the end of their page: a process maps whole pages. */
static size_t mapped(const struct pyctx_image *img)
{
    return (img->used + PYCTX_IMAGE_PAGE - 1) & ~(size_t)(PYCTX_IMAGE_PAGE - 1);
}

uint8_t *pyctx_image_bytes(struct pyctx_image *img, size_t *len)
{
    *len = mapped(img);
    return img->mem;
}

int pyctx_image_install(struct pyctx_image *img, struct memread_fake *fake)
{
    int err = memread_fake_add(fake, PYCTX_IMAGE_BASE, img->mem, mapped(img));
    if (!err)
        img->fake = fake;
    return err;
}

/* ---- changes --------------------------------------------------------------------------- */

void pyctx_image_poke(struct pyctx_image *img, uint64_t raddr, const void *data, size_t len)
{
    if (len == 0)
        return;
    (void)at(img, raddr + len - 1);
    memcpy(at(img, raddr), data, len);
    if (img->fake && memread_fake_poke(img->fake, raddr, data, len) != 0)
        abort();
}

void pyctx_image_poke64(struct pyctx_image *img, uint64_t raddr, uint64_t v)
{
    pyctx_image_poke(img, raddr, &v, 8);
}

/* Mirrors the local bytes of [@raddr, +@len) into the fake. */
static void sync(struct pyctx_image *img, uint64_t raddr, size_t len)
{
    if (img->fake && memread_fake_poke(img->fake, raddr, at(img, raddr), len) != 0)
        abort();
}

void pyctx_image_ids(const struct pyctx_image *img, struct sample_span *out)
{
    memcpy(out->trace_id, img->trace_id, 16);
    memcpy(out->span_id, img->span_id, 8);
    out->set = true;
}

void pyctx_image_set_ids(struct pyctx_image *img, const uint8_t trace_id[16],
                         const uint8_t span_id[8])
{
    const struct pyctx_layout *l = img->l;
    size_t len = l->long_digits + 4 * PYCTX_INT_DIGITS;
    memcpy(img->trace_id, trace_id, 16);
    memcpy(img->span_id, span_id, 8);
    int_value(img, img->addr[PYCTX_IMAGE_TRACE_INT], trace_id, 16);
    int_value(img, img->addr[PYCTX_IMAGE_SPAN_INT], span_id, 8);
    sync(img, img->addr[PYCTX_IMAGE_TRACE_INT], len);
    sync(img, img->addr[PYCTX_IMAGE_SPAN_INT], len);
}

void pyctx_image_int_size(struct pyctx_image *img, bool trace, uint64_t ndigits, bool negative)
{
    uint64_t o = img->addr[trace ? PYCTX_IMAGE_TRACE_INT : PYCTX_IMAGE_SPAN_INT];
    int_size(img, o, ndigits, negative);
    sync(img, o + img->l->long_size, 8);
}

void pyctx_image_in_span(struct pyctx_image *img, bool in_span)
{
    pyctx_image_poke64(img, img->var_slot,
                       img->addr[in_span ? PYCTX_IMAGE_OTEL_CONTEXT : PYCTX_IMAGE_OTEL_NOSPAN]);
}

void pyctx_image_bump_version(struct pyctx_image *img)
{
    uint64_t at_version = img->addr[PYCTX_IMAGE_OTEL_CONTEXT] + img->l->dict_version;
    if (img->l->dict_version)
        pyctx_image_poke64(img, at_version, get64(img, at_version) + 1);
}

void pyctx_image_set_attr(struct pyctx_image *img, uint64_t value)
{
    if (img->attr_key_at)
        pyctx_image_poke64(img, img->attr_key_at, value ? img->attr_names[1] : 0);
    pyctx_image_poke64(img, img->attr_slot, value);
}
