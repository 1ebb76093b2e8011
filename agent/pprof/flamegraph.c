/* SPDX-License-Identifier: MIT */
/*
 * flamegraph.c: the call tree of windows, as JSON (see flamegraph.h).
 *
 * Nodes live in one array; node 0 is the root. A child is found through an
 * open-addressing index keyed by (parent, function), so building costs one
 * probe per frame of each distinct stack, whatever the fan-out.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/jsonw.h"
#include "pprof/flamegraph.h"

/* The fn of the node that names part k is FLAME_PART_NODE - k: no function has such an index. */
#define FLAME_PART_NODE UINT32_MAX

/* The tree nests two levels per frame (a node and its "c"), under the root and a part's node. */
_Static_assert(JSONW_MAX_DEPTH >= 2 * (AGG_MAX_LOCATIONS + 2) + 1, "the deepest tree fits");

struct flame_node {
    uint32_t fn; /* function index in its part's window, or a part's (is_part) */
    bool is_part;
    int64_t line;         /* the first line seen, for a function with no start line */
    uint32_t part;        /* which part */
    uint32_t first_child; /* 0: none (the root is nobody's child) */
    uint32_t next_sibling;
    uint32_t last_child;
    int64_t value;
};

struct flame_slot {
    uint64_t key;  /* (parent << 32) | fn */
    uint32_t node; /* 0: empty */
};

struct flame_tree {
    struct flame_node *nodes;
    size_t n, cap;
    struct flame_slot *index;
    size_t index_cap; /* a power of two, kept at least twice n */
};

static uint64_t flame_hash(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return k;
}

static void flame_index_put(struct flame_slot *index, size_t cap, uint64_t key, uint32_t node)
{
    size_t i = (size_t)flame_hash(key) & (cap - 1);
    while (index[i].node)
        i = (i + 1) & (cap - 1);
    index[i].key = key;
    index[i].node = node;
}

static int flame_grow(struct flame_tree *t)
{
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 1024;
        struct flame_node *nodes = alloc_realloc(t->nodes, cap * sizeof(*nodes));
        if (!nodes)
            return -ENOMEM;
        t->nodes = nodes;
        t->cap = cap;
    }
    if (2 * (t->n + 1) > t->index_cap) {
        size_t cap = t->index_cap ? 2 * t->index_cap : 2048;
        struct flame_slot *index = alloc_calloc(cap, sizeof(*index));
        if (!index)
            return -ENOMEM;
        for (size_t i = 0; i < t->index_cap; i++)
            if (t->index[i].node)
                flame_index_put(index, cap, t->index[i].key, t->index[i].node);
        alloc_free(t->index);
        t->index = index;
        t->index_cap = cap;
    }
    return 0;
}

/* The child of @parent for function @fn (of @part), made when missing; 0 when out of memory. */
static uint32_t flame_child(struct flame_tree *t, uint32_t parent, uint32_t fn, int64_t line,
                            uint32_t part, bool is_part)
{
    uint64_t key = ((uint64_t)parent << 32) | fn;
    for (size_t i = (size_t)flame_hash(key) & (t->index_cap - 1); t->index[i].node;
         i = (i + 1) & (t->index_cap - 1))
        if (t->index[i].key == key)
            return t->index[i].node;
    if (flame_grow(t))
        return 0;
    uint32_t id = (uint32_t)t->n++;
    t->nodes[id] = (struct flame_node){.fn = fn, .is_part = is_part, .line = line, .part = part};
    struct flame_node *p = &t->nodes[parent];
    if (p->last_child)
        t->nodes[p->last_child].next_sibling = id;
    else
        p->first_child = id;
    p->last_child = id;
    flame_index_put(t->index, t->index_cap, key, id);
    return id;
}

static void flame_emit(const struct flame_tree *t, const struct flame_part *parts, uint32_t id,
                       const char *root, struct jsonw *w)
{
    const struct flame_node *nd = &t->nodes[id];
    jsonw_object(w, NULL);
    if (id == 0) {
        jsonw_string(w, "n", root);
    } else if (nd->is_part) {
        jsonw_string(w, "n", parts[nd->part].name);
    } else {
        const struct agg *a = parts[nd->part].agg;
        const struct agg_function *fn = agg_function(a, nd->fn);
        const char *file = agg_string(a, fn->filename);
        jsonw_string(w, "n", agg_string(a, fn->name));
        if (strcmp(file, "~") != 0) { /* markers have no place in a file */
            jsonw_string(w, "f", file);
            jsonw_int(w, "ln", fn->start_line ? fn->start_line : nd->line);
        }
    }
    jsonw_int(w, "v", nd->value);
    if (nd->first_child) {
        jsonw_array(w, "c");
        for (uint32_t c = nd->first_child; c; c = t->nodes[c].next_sibling)
            flame_emit(t, parts, c, root, w);
        jsonw_end(w);
    }
    jsonw_end(w);
}

int flame_json_write(const struct flame_part *parts, size_t n, const char *root, FILE *out)
{
    struct flame_tree t = {0};
    int err = flame_grow(&t);
    for (size_t p = 0; p < n && !err; p++)
        if ((n > 1 && !parts[p].name) || n > UINT32_MAX / 2)
            err = -EINVAL;
    if (!err)
        t.nodes[t.n++] = (struct flame_node){0}; /* the root */
    for (size_t p = 0; p < n && !err; p++) {
        uint32_t top = 0;
        if (parts[p].name &&
            !(top = flame_child(&t, 0, FLAME_PART_NODE - (uint32_t)p, 0, (uint32_t)p, true))) {
            err = -ENOMEM;
            break;
        }
        const struct agg *a = parts[p].agg;
        for (size_t i = 0; i < agg_sample_count(a) && !err; i++) {
            const struct agg_sample *s = agg_sample(a, i);
            if (s->count <= 0)
                continue;
            t.nodes[0].value += s->count;
            if (top)
                t.nodes[top].value += s->count;
            uint32_t at = top;
            for (uint32_t k = s->nlocations; k-- > 0;) { /* root first */
                const struct agg_location *loc = agg_location(a, s->locations[k]);
                at = flame_child(&t, at, loc->function, loc->line, (uint32_t)p, false);
                if (!at) {
                    err = -ENOMEM;
                    break;
                }
                t.nodes[at].value += s->count;
            }
        }
    }
    if (!err) {
        struct jsonw w;
        jsonw_init_file(&w, out, 0);
        flame_emit(&t, parts, 0, root, &w);
        err = jsonw_finish(&w);
    }
    alloc_free(t.nodes);
    alloc_free(t.index);
    return err;
}
