/* SPDX-License-Identifier: MIT */
/*
 * agg.c: interning tables and stack counts of one profile window (see
 * agg.h). Every table is an array plus an open-addressing index of at least
 * twice its capacity. Tables start small and double when full, up to the
 * caps of struct agg_limits; a doubling rebuilds the table's index from the
 * entries (their hashes are cheap to recompute, or stored). Reset clears the
 * counters and the index slots of the capacity reached, not of the caps.
 *
 * Per frame, the location is first looked up in a direct-mapped memo keyed
 * by the frame's code_id (unwind.h: an id that fixes the function, file and
 * first line, unique in the process and never reused) and position, so a
 * frame seen before costs no string hashing; frames without a code_id take
 * the interning path every time. The memo grows with the location table.
 */
#include "base/compat.h"

#include "aggregate/agg.h"
#include "base/alloc.h"
#include "base/hash.h"

#define AGG_EMPTY    UINT32_MAX
#define AGG_MEMO_MIN 256u  /* location memo entries at first, a power of two */
#define AGG_MEMO_MAX 8192u /* ... and at most */

/* Initial capacities (each at most its cap): together about 40 KiB. */
#define AGG_INIT_STRING_BYTES 4096u
#define AGG_INIT_STRINGS      128u
#define AGG_INIT_FUNCTIONS    64u
#define AGG_INIT_LOCATIONS    128u
#define AGG_INIT_SAMPLES      64u
#define AGG_INIT_STACK_SLOTS  1024u

struct agg_index {
    uint32_t *slot; /* entry index, or AGG_EMPTY */
    size_t mask;
};

/* What coalescing remembers of a thread's previous sample. */
struct agg_thread {
    uint64_t thread_id;
    uint32_t sample; /* index of the sample it was counted in */
    bool used;
};

/* A frame's location, remembered by the frame's code_id and position. The
 * strings' addresses are checked too: cheap insurance against frames made
 * by hand that reuse an id. */
struct agg_memo {
    uint64_t code_id; /* 0: empty */
    const char *function;
    const char *file;
    int32_t line, col;
    uint32_t location;
};

struct agg {
    struct agg_limits lim;
    struct agg_stats stats;
    size_t grows; /* table doublings since agg_new */

    char *str_bytes;
    size_t str_used, str_bytes_cap;
    uint32_t *str_off;
    size_t nstrings, strings_cap;
    struct agg_index str_index;

    struct agg_function *functions;
    size_t nfunctions, functions_cap;
    struct agg_index fn_index;

    struct agg_location *locations;
    size_t nlocations, locations_cap;
    struct agg_index loc_index;

    struct agg_sample *samples;
    uint64_t *sample_hash;
    size_t nsamples, samples_cap;
    uint32_t *slots;
    size_t nslots, slots_cap;
    struct agg_index sample_index;

    struct agg_thread *threads; /* direct-mapped by thread id */
    uint32_t *scratch;          /* location ids of the sample being added */
    struct agg_memo *memo;      /* direct-mapped, memo_mask + 1 entries */
    size_t memo_mask;

    struct agg_mapping *mappings; /* allocated at the first native frame */
    size_t nmappings, mappings_cap;

    uint32_t last; /* the sample counted last (agg_last()), AGG_EMPTY: none */
    size_t nspans; /* distinct span ids in the window (of lim.spans) */
};

struct agg_limits agg_limits_of(const struct agg *a)
{
    return a->lim;
}

struct agg_limits agg_limits_default(void)
{
    return (struct agg_limits){
        .string_bytes = 8u << 20,
        .strings = 65536,
        .functions = 65536,
        .locations = 262144,
        .samples = 262144,
        .stack_slots = 4u << 20,
        .threads = 1024,
        .spans = 1000,
    };
}

static uint64_t agg_mix(uint64_t h, uint64_t v)
{
    h ^= v + HASH_GOLDEN + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdull;
    return h ^ (h >> 32);
}

static uint64_t agg_hash_str(const char *s)
{
    return hash_str_from(1469598103934665603ull, s); /* (the start labels.c uses) */
}

static uint64_t agg_hash_function(uint32_t name, uint32_t file, int64_t start)
{
    return agg_mix(agg_mix(agg_mix(0, name), file), (uint64_t)start);
}

static uint64_t agg_hash_location(uint32_t fn, int64_t line, int64_t col, uint64_t address)
{
    return agg_mix(agg_mix(agg_mix(agg_mix(1, fn), (uint64_t)line), (uint64_t)col), address);
}

static size_t agg_min(size_t x, size_t y)
{
    return x < y ? x : y;
}

/* An index for @entries entries: a power of two, at least twice as many slots. */
static int agg_index_init(struct agg_index *ix, size_t entries)
{
    size_t n = 16;
    while (n < entries * 2)
        n <<= 1;
    uint32_t *slot = alloc_malloc(n * sizeof(*slot));
    if (!slot)
        return -ENOMEM;
    memset(slot, 0xff, n * sizeof(*slot));
    ix->slot = slot;
    ix->mask = n - 1;
    return 0;
}

static void agg_index_clear(struct agg_index *ix)
{
    if (ix->slot)
        memset(ix->slot, 0xff, (ix->mask + 1) * sizeof(*ix->slot));
}

/* The first empty slot on @h's probe sequence: where an entry not in the
 * index goes. */
static size_t agg_index_free_slot(const struct agg_index *ix, uint64_t h)
{
    size_t i = (size_t)h & ix->mask;
    while (ix->slot[i] != AGG_EMPTY)
        i = (i + 1) & ix->mask;
    return i;
}

/* Grows the array *@p to @want elements of @size bytes, keeping its
 * content. 0 or -ENOMEM (then *@p is untouched). */
static int agg_array_grow(void **p, size_t want, size_t size)
{
    void *n = alloc_realloc(*p, want * size);
    if (!n)
        return -ENOMEM;
    *p = n;
    return 0;
}

/* The next capacity of a table of @cap entries capped at @lim: twice as
 * many, at most @lim; 0 when it is at its cap. */
static size_t agg_next_cap(size_t cap, size_t lim)
{
    return cap >= lim ? 0 : agg_min(cap * 2, lim);
}

void agg_free(struct agg *a)
{
    if (!a)
        return;
    alloc_free(a->str_bytes);
    alloc_free(a->str_off);
    alloc_free(a->str_index.slot);
    alloc_free(a->functions);
    alloc_free(a->fn_index.slot);
    alloc_free(a->locations);
    alloc_free(a->loc_index.slot);
    alloc_free(a->mappings);
    alloc_free(a->samples);
    alloc_free(a->sample_hash);
    alloc_free(a->slots);
    alloc_free(a->sample_index.slot);
    alloc_free(a->threads);
    alloc_free(a->scratch);
    alloc_free(a->memo);
    alloc_free(a);
}

static uint32_t agg_intern(struct agg *a, const char *s);

int agg_new(const struct agg_limits *limits, struct agg **out)
{
    struct agg_limits d = agg_limits_default();
    struct agg *a = alloc_calloc(1, sizeof(*a));
    if (!a)
        return -ENOMEM;
    a->lim = limits ? *limits : d;
#define AGG_DEFAULT(f)                                                                             \
    if (!a->lim.f)                                                                                 \
    a->lim.f = d.f
    AGG_DEFAULT(string_bytes);
    AGG_DEFAULT(strings);
    AGG_DEFAULT(functions);
    AGG_DEFAULT(locations);
    AGG_DEFAULT(samples);
    AGG_DEFAULT(stack_slots);
    AGG_DEFAULT(threads);
    AGG_DEFAULT(spans);
#undef AGG_DEFAULT
    if (a->lim.strings > UINT32_MAX / 2 || a->lim.locations > UINT32_MAX / 2 ||
        a->lim.samples > UINT32_MAX / 2 || a->lim.functions > UINT32_MAX / 2 ||
        a->lim.string_bytes > UINT32_MAX) {
        agg_free(a);
        return -EINVAL;
    }
    a->str_bytes_cap = agg_min(AGG_INIT_STRING_BYTES, a->lim.string_bytes);
    a->strings_cap = agg_min(AGG_INIT_STRINGS, a->lim.strings);
    a->functions_cap = agg_min(AGG_INIT_FUNCTIONS, a->lim.functions);
    a->locations_cap = agg_min(AGG_INIT_LOCATIONS, a->lim.locations);
    a->samples_cap = agg_min(AGG_INIT_SAMPLES, a->lim.samples);
    a->slots_cap = agg_min(AGG_INIT_STACK_SLOTS, a->lim.stack_slots);
    size_t memo = AGG_MEMO_MIN;
    a->str_bytes = alloc_malloc(a->str_bytes_cap);
    a->str_off = alloc_calloc(a->strings_cap, sizeof(*a->str_off));
    a->functions = alloc_calloc(a->functions_cap, sizeof(*a->functions));
    a->locations = alloc_calloc(a->locations_cap, sizeof(*a->locations));
    a->samples = alloc_calloc(a->samples_cap, sizeof(*a->samples));
    a->sample_hash = alloc_calloc(a->samples_cap, sizeof(*a->sample_hash));
    a->slots = alloc_calloc(a->slots_cap, sizeof(*a->slots));
    a->threads = alloc_calloc(a->lim.threads, sizeof(*a->threads));
    a->scratch = alloc_calloc(AGG_MAX_LOCATIONS, sizeof(*a->scratch));
    a->memo = alloc_calloc(memo, sizeof(*a->memo));
    a->memo_mask = memo - 1;
    if (!a->str_bytes || !a->str_off || !a->functions || !a->locations || !a->samples ||
        !a->sample_hash || !a->slots || !a->threads || !a->scratch || !a->memo ||
        agg_index_init(&a->str_index, a->strings_cap) ||
        agg_index_init(&a->fn_index, a->functions_cap) ||
        agg_index_init(&a->loc_index, a->locations_cap) ||
        agg_index_init(&a->sample_index, a->samples_cap)) {
        agg_free(a);
        return -ENOMEM;
    }
    agg_reset(a);
    *out = a;
    return 0;
}

void agg_reset(struct agg *a)
{
    a->stats = (struct agg_stats){0};
    a->str_used = 0;
    a->nstrings = 0;
    a->nfunctions = 0;
    a->nlocations = 0;
    a->nmappings = 0;
    a->nsamples = 0;
    a->last = AGG_EMPTY;
    a->nslots = 0;
    a->nspans = 0;
    /* the indexes and the memo are as large as the tables grew, no larger */
    agg_index_clear(&a->str_index);
    agg_index_clear(&a->fn_index);
    agg_index_clear(&a->loc_index);
    agg_index_clear(&a->sample_index);
    memset(a->threads, 0, a->lim.threads * sizeof(*a->threads));
    memset(a->memo, 0, (a->memo_mask + 1) * sizeof(*a->memo)); /* its ids were this window's */
    (void)agg_intern(a, "");                                   /* id 0, as pprof requires */
}

size_t agg_memory(const struct agg *a)
{
    return sizeof(*a) + a->str_bytes_cap + a->strings_cap * sizeof(*a->str_off) +
           a->functions_cap * sizeof(*a->functions) + a->locations_cap * sizeof(*a->locations) +
           a->samples_cap * (sizeof(*a->samples) + sizeof(*a->sample_hash)) +
           a->slots_cap * sizeof(*a->slots) +
           (a->str_index.mask + a->fn_index.mask + a->loc_index.mask + a->sample_index.mask + 4) *
               sizeof(uint32_t) +
           a->lim.threads * sizeof(*a->threads) + AGG_MAX_LOCATIONS * sizeof(*a->scratch) +
           (a->memo_mask + 1) * sizeof(*a->memo) + a->mappings_cap * sizeof(*a->mappings);
}

size_t agg_grows(const struct agg *a)
{
    return a->grows;
}

/* Makes room for one more string (0), or says why not: -E2BIG at the cap,
 * -ENOMEM. The index is rebuilt from the strings. */
static int agg_grow_strings(struct agg *a)
{
    size_t cap = agg_next_cap(a->strings_cap, a->lim.strings);
    if (!cap)
        return -E2BIG;
    struct agg_index ix = {0};
    if (agg_index_init(&ix, cap) ||
        agg_array_grow((void **)&a->str_off, cap, sizeof(*a->str_off))) {
        alloc_free(ix.slot);
        return -ENOMEM;
    }
    for (size_t id = 0; id < a->nstrings; id++) {
        uint64_t h = agg_hash_str(a->str_bytes + a->str_off[id]);
        ix.slot[agg_index_free_slot(&ix, h)] = (uint32_t)id;
    }
    alloc_free(a->str_index.slot);
    a->str_index = ix;
    a->strings_cap = cap;
    a->grows++;
    return 0;
}

/* Makes room for @len more string bytes: 0, -E2BIG or -ENOMEM. */
static int agg_grow_string_bytes(struct agg *a, size_t len)
{
    if (a->lim.string_bytes - a->str_used < len)
        return -E2BIG;
    size_t cap = a->str_bytes_cap;
    while (cap - a->str_used < len)
        cap = agg_min(cap * 2, a->lim.string_bytes);
    if (agg_array_grow((void **)&a->str_bytes, cap, 1))
        return -ENOMEM;
    a->str_bytes_cap = cap;
    a->grows++;
    return 0;
}

/* The id of string @s, or AGG_EMPTY when it is not interned; *@slot: where
 * its index entry goes. */
static uint32_t agg_find_string(const struct agg *a, const char *s, uint64_t h, size_t *slot)
{
    size_t i = (size_t)h & a->str_index.mask;
    for (;; i = (i + 1) & a->str_index.mask) {
        uint32_t id = a->str_index.slot[i];
        if (id == AGG_EMPTY)
            break;
        if (strcmp(a->str_bytes + a->str_off[id], s) == 0)
            return id;
    }
    *slot = i;
    return AGG_EMPTY;
}

/* Interns @s; AGG_EMPTY when a cap is reached or growing failed. */
static uint32_t agg_intern(struct agg *a, const char *s)
{
    uint64_t h = agg_hash_str(s);
    size_t i = 0;
    uint32_t found = agg_find_string(a, s, h, &i);
    if (found != AGG_EMPTY)
        return found;
    size_t len = strlen(s) + 1;
    if (a->nstrings == a->strings_cap) {
        if (agg_grow_strings(a))
            return AGG_EMPTY;
        i = agg_index_free_slot(&a->str_index, h);
    }
    if (a->str_bytes_cap - a->str_used < len && agg_grow_string_bytes(a, len))
        return AGG_EMPTY;
    memcpy(a->str_bytes + a->str_used, s, len);
    a->str_off[a->nstrings] = (uint32_t)a->str_used;
    a->str_used += len;
    a->str_index.slot[i] = (uint32_t)a->nstrings;
    return (uint32_t)a->nstrings++;
}

/* Makes room for one more function: 0, -E2BIG or -ENOMEM. */
static int agg_grow_functions(struct agg *a)
{
    size_t cap = agg_next_cap(a->functions_cap, a->lim.functions);
    if (!cap)
        return -E2BIG;
    struct agg_index ix = {0};
    if (agg_index_init(&ix, cap) ||
        agg_array_grow((void **)&a->functions, cap, sizeof(*a->functions))) {
        alloc_free(ix.slot);
        return -ENOMEM;
    }
    for (size_t id = 0; id < a->nfunctions; id++) {
        const struct agg_function *fn = &a->functions[id];
        uint64_t h = agg_hash_function(fn->name, fn->filename, fn->start_line);
        ix.slot[agg_index_free_slot(&ix, h)] = (uint32_t)id;
    }
    alloc_free(a->fn_index.slot);
    a->fn_index = ix;
    a->functions_cap = cap;
    a->grows++;
    return 0;
}

/* The memo follows the location table: about two entries per location, up
 * to AGG_MEMO_MAX. It is a cache, so it starts empty again; failing to grow
 * it only keeps it small. */
static void agg_grow_memo(struct agg *a)
{
    size_t want = a->memo_mask + 1;
    while (want < AGG_MEMO_MAX && want < a->locations_cap * 2)
        want <<= 1;
    if (want == a->memo_mask + 1)
        return;
    struct agg_memo *m = alloc_calloc(want, sizeof(*m));
    if (!m)
        return;
    alloc_free(a->memo);
    a->memo = m;
    a->memo_mask = want - 1;
}

/* Makes room for one more location: 0, -E2BIG or -ENOMEM. */
static int agg_grow_locations(struct agg *a)
{
    size_t cap = agg_next_cap(a->locations_cap, a->lim.locations);
    if (!cap)
        return -E2BIG;
    struct agg_index ix = {0};
    if (agg_index_init(&ix, cap) ||
        agg_array_grow((void **)&a->locations, cap, sizeof(*a->locations))) {
        alloc_free(ix.slot);
        return -ENOMEM;
    }
    for (size_t id = 0; id < a->nlocations; id++) {
        const struct agg_location *l = &a->locations[id];
        ix.slot[agg_index_free_slot(
            &ix, agg_hash_location(l->function, l->line, l->column, l->address))] = (uint32_t)id;
    }
    alloc_free(a->loc_index.slot);
    a->loc_index = ix;
    a->locations_cap = cap;
    a->grows++;
    agg_grow_memo(a);
    return 0;
}

/* Makes room for one more sample: 0, -E2BIG or -ENOMEM. */
static int agg_grow_samples(struct agg *a)
{
    size_t cap = agg_next_cap(a->samples_cap, a->lim.samples);
    if (!cap)
        return -E2BIG;
    struct agg_index ix = {0};
    if (agg_index_init(&ix, cap))
        return -ENOMEM;
    /* the two arrays grow one after the other: the first may have grown
     * when the second fails, which is harmless (its capacity is not used) */
    if (agg_array_grow((void **)&a->samples, cap, sizeof(*a->samples)) ||
        agg_array_grow((void **)&a->sample_hash, cap, sizeof(*a->sample_hash))) {
        alloc_free(ix.slot);
        return -ENOMEM;
    }
    for (size_t id = 0; id < a->nsamples; id++)
        ix.slot[agg_index_free_slot(&ix, a->sample_hash[id])] = (uint32_t)id;
    alloc_free(a->sample_index.slot);
    a->sample_index = ix;
    a->samples_cap = cap;
    a->grows++;
    return 0;
}

/* Makes room for @n more stack slots: 0, -E2BIG or -ENOMEM. The samples'
 * location pointers are moved to the new array. */
static int agg_grow_slots(struct agg *a, size_t n)
{
    if (a->lim.stack_slots - a->nslots < n)
        return -E2BIG;
    size_t cap = a->slots_cap;
    while (cap - a->nslots < n)
        cap = agg_min(cap * 2, a->lim.stack_slots);
    uint32_t *slots = alloc_malloc(cap * sizeof(*slots));
    if (!slots)
        return -ENOMEM;
    memcpy(slots, a->slots, a->nslots * sizeof(*slots));
    for (size_t i = 0; i < a->nsamples; i++)
        a->samples[i].locations = slots + (a->samples[i].locations - a->slots);
    alloc_free(a->slots);
    a->slots = slots;
    a->slots_cap = cap;
    a->grows++;
    return 0;
}

/* The last dotted part of a qualified name: "Klass.method" -> "method". */
static const char *agg_system_name(const char *qualname)
{
    const char *dot = strrchr(qualname, '.');
    return dot && dot[1] ? dot + 1 : qualname;
}

static uint32_t agg_function_id(struct agg *a, const struct unwind_frame *f)
{
    uint32_t name = agg_intern(a, f->function);
    uint32_t file = agg_intern(a, f->file);
    /* (a C function's name is its own: no qualified name to take apart) */
    uint32_t sys = f->kind == UNWIND_FRAME_C ? name : agg_intern(a, agg_system_name(f->function));
    if (name == AGG_EMPTY || file == AGG_EMPTY || sys == AGG_EMPTY)
        return AGG_EMPTY;
    int64_t start = f->first_line;
    uint64_t h = agg_hash_function(name, file, start);
    size_t i = (size_t)h & a->fn_index.mask;
    for (;; i = (i + 1) & a->fn_index.mask) {
        uint32_t id = a->fn_index.slot[i];
        if (id == AGG_EMPTY)
            break;
        const struct agg_function *fn = &a->functions[id];
        if (fn->name == name && fn->filename == file && fn->start_line == start)
            return id;
    }
    if (a->nfunctions == a->functions_cap) {
        if (agg_grow_functions(a))
            return AGG_EMPTY;
        i = agg_index_free_slot(&a->fn_index, h);
    }
    a->functions[a->nfunctions] = (struct agg_function){
        .name = name, .system_name = sys, .filename = file, .start_line = start};
    a->fn_index.slot[i] = (uint32_t)a->nfunctions;
    return (uint32_t)a->nfunctions++;
}

/*
 * The mapping of native frame @f (+1; 0: none, or no room): by its range's
 * start and file. A window sees a few dozen files: searched in turn.
 */
static uint32_t agg_mapping_id(struct agg *a, const struct frame_mapping *m)
{
    if (!m)
        return 0;
    for (size_t i = 0; i < a->nmappings; i++) {
        const struct agg_mapping *x = &a->mappings[i];
        if (x->start == m->start && x->limit == m->limit &&
            strcmp(agg_string(a, x->filename), m->file) == 0)
            return (uint32_t)i + 1;
    }
    if (a->nmappings == a->mappings_cap) {
        size_t cap = a->mappings_cap ? a->mappings_cap * 2 : 16;
        if (cap > AGG_MAX_MAPPINGS)
            return 0;
        struct agg_mapping *grown = alloc_realloc(a->mappings, cap * sizeof(*grown));
        if (!grown)
            return 0;
        a->mappings = grown;
        a->mappings_cap = cap;
        a->grows++;
    }
    uint32_t file = agg_intern(a, m->file), build_id = agg_intern(a, m->build_id);
    if (file == AGG_EMPTY || build_id == AGG_EMPTY)
        return 0;
    a->mappings[a->nmappings] = (struct agg_mapping){.filename = file,
                                                     .build_id = build_id,
                                                     .start = m->start,
                                                     .limit = m->limit,
                                                     .offset = m->offset};
    return (uint32_t)++a->nmappings;
}

static uint32_t agg_location_id(struct agg *a, const struct unwind_frame *f)
{
    uint32_t fn = agg_function_id(a, f);
    if (fn == AGG_EMPTY)
        return AGG_EMPTY;
    int64_t line = f->pos.line == LINETABLE_UNKNOWN ? 0 : f->pos.line;
    int64_t col = f->pos.col == LINETABLE_UNKNOWN ? 0 : (int64_t)f->pos.col + 1;
    uint64_t address = f->kind == UNWIND_FRAME_C ? f->pc : 0;
    uint64_t h = agg_hash_location(fn, line, col, address);
    size_t i = (size_t)h & a->loc_index.mask;
    for (;; i = (i + 1) & a->loc_index.mask) {
        uint32_t id = a->loc_index.slot[i];
        if (id == AGG_EMPTY)
            break;
        const struct agg_location *l = &a->locations[id];
        if (l->function == fn && l->line == line && l->column == col && l->address == address)
            return id;
    }
    uint32_t mapping = address ? agg_mapping_id(a, f->mapping) : 0;
    if (a->nlocations == a->locations_cap) {
        if (agg_grow_locations(a))
            return AGG_EMPTY;
        i = agg_index_free_slot(&a->loc_index, h);
    }
    a->locations[a->nlocations] = (struct agg_location){fn, line, col, address, mapping};
    a->loc_index.slot[i] = (uint32_t)a->nlocations;
    return (uint32_t)a->nlocations++;
}

/* The location of @f: from the memo when its code_id and position were seen
 * in this window, else looked up (and remembered). AGG_EMPTY at a cap. */
static uint32_t agg_frame_location(struct agg *a, const struct unwind_frame *f)
{
    if (f->code_id == 0)
        return agg_location_id(a, f);
    uint64_t key = (uint64_t)(uint32_t)f->pos.line << 32 | (uint32_t)f->pos.col;
    struct agg_memo *m = &a->memo[hash_fmix64(f->code_id * HASH_GOLDEN ^ key) & a->memo_mask];
    if (m->code_id == f->code_id && m->line == f->pos.line && m->col == f->pos.col &&
        m->function == f->function && m->file == f->file)
        return m->location;
    uint32_t loc = agg_location_id(a, f);
    /* a new location may have grown the memo: find the entry again */
    m = &a->memo[hash_fmix64(f->code_id * HASH_GOLDEN ^ key) & a->memo_mask];
    if (loc != AGG_EMPTY)
        *m = (struct agg_memo){.code_id = f->code_id,
                               .function = f->function,
                               .file = f->file,
                               .line = f->pos.line,
                               .col = f->pos.col,
                               .location = loc};
    return loc;
}

/* Hash of a stack of location ids: independently mixed pairs, summed, so
 * the mixing of different frames overlaps in the CPU. */
static uint64_t agg_hash_locations(uint64_t h, const uint32_t *locs, size_t n)
{
    uint64_t acc = h * HASH_GOLDEN + n;
    size_t i = 0;
    for (; i + 1 < n; i += 2)
        acc += hash_fmix64(((uint64_t)locs[i] << 32 | locs[i + 1]) + i * 0xd6e8feb86659fd93ull);
    if (i < n)
        acc += hash_fmix64(((uint64_t)locs[i] << 32 | 0xffffffffu) + i * 0xd6e8feb86659fd93ull);
    return hash_fmix64(acc);
}

static int agg_drop(struct agg *a)
{
    a->stats.dropped++;
    return -E2BIG;
}

static struct agg_thread *agg_thread_slot(struct agg *a, uint64_t thread_id)
{
    return &a->threads[(size_t)(thread_id * HASH_GOLDEN >> 40) % a->lim.threads];
}

int agg_repeat_in(struct agg *a, uint64_t thread_id, int64_t interp_id, const char *thread_name,
                  int64_t count, int64_t nanos)
{
    if (!thread_name || !*thread_name)
        thread_name = "unknown";
    struct agg_thread *th = agg_thread_slot(a, thread_id);
    if (!th->used || th->thread_id != thread_id)
        return -ENOENT;
    struct agg_sample *s = &a->samples[th->sample];
    if (s->task_name != 0 || s->interp_id != interp_id ||
        strcmp(agg_string(a, s->thread_name), thread_name) != 0)
        return -ENOENT;
    s->count += count;
    s->nanos += nanos;
    a->last = th->sample;
    a->stats.added++;
    a->stats.coalesced++;
    return 0;
}

static void agg_hex(char *out, const uint8_t *b, size_t n)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[b[i] >> 4];
        out[2 * i + 1] = digits[b[i] & 15];
    }
    out[2 * n] = '\0';
}

/* The string ids of @span's trace and span ids in hex (*trace, *sid; 0 when
 * none), within the window's cap on distinct span ids (over it: none, and
 * counted). false when a string cap was hit. */
static bool agg_span_ids(struct agg *a, const struct sample_span *span, uint32_t *trace,
                         uint32_t *sid)
{
    *trace = *sid = 0;
    if (!span || !span->set)
        return true;
    char th[33], sh[17];
    agg_hex(th, span->trace_id, 16);
    agg_hex(sh, span->span_id, 8);
    size_t slot = 0;
    uint32_t known = agg_find_string(a, sh, agg_hash_str(sh), &slot);
    if (known == AGG_EMPTY) {
        if (a->nspans >= a->lim.spans) {
            a->stats.spans_over++;
            return true; /* counted without its span */
        }
        a->nspans++;
    }
    *trace = agg_intern(a, th);
    *sid = known != AGG_EMPTY ? known : agg_intern(a, sh); /* a known span: not looked up twice */
    return *trace != AGG_EMPTY && *sid != AGG_EMPTY;
}

int agg_add_in(struct agg *a, const struct unwind_frame *frames, size_t n, uint64_t thread_id,
               int64_t interp_id, const char *thread_name, const char *task_name, int64_t count,
               int64_t nanos)
{
    return agg_add_span(a, frames, n, thread_id, interp_id, thread_name, task_name, NULL, count,
                        nanos);
}

int agg_add_span(struct agg *a, const struct unwind_frame *frames, size_t n, uint64_t thread_id,
                 int64_t interp_id, const char *thread_name, const char *task_name,
                 const struct sample_span *span, int64_t count, int64_t nanos)
{
    if (!thread_name || !*thread_name)
        thread_name = "unknown";
    if (task_name && !*task_name)
        task_name = NULL;
    if (n > UNWIND_MAX_DEPTH)
        return agg_drop(a);

    uint32_t tname = agg_intern(a, thread_name);
    uint32_t task = task_name ? agg_intern(a, task_name) : 0;
    uint32_t trace, sid;
    if (tname == AGG_EMPTY || task == AGG_EMPTY || !agg_span_ids(a, span, &trace, &sid))
        return agg_drop(a);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (frames[i].opmarker) {
            /* --opcodes: the frame's instruction, a marker frame just below
             * it at the same file, line and column */
            struct unwind_frame op = {.kind = UNWIND_FRAME_PYTHON,
                                      .function = frames[i].opmarker,
                                      .file = frames[i].file,
                                      .pos = frames[i].pos};
            uint32_t loc = agg_location_id(a, &op);
            if (loc == AGG_EMPTY)
                return agg_drop(a);
            a->scratch[m++] = loc;
        }
        uint32_t loc = agg_frame_location(a, &frames[i]);
        if (loc == AGG_EMPTY)
            return agg_drop(a);
        a->scratch[m++] = loc;
    }
    n = m;

    /* A thread whose stack did not move: count it where it went last time. */
    struct agg_thread *th = agg_thread_slot(a, thread_id);
    uint32_t found = AGG_EMPTY;
    if (th->used && th->thread_id == thread_id) {
        const struct agg_sample *s = &a->samples[th->sample];
        if (s->nlocations == n && s->thread_name == tname && s->task_name == task &&
            s->interp_id == interp_id && s->span_id == sid && s->trace_id == trace &&
            (n == 0 || memcmp(s->locations, a->scratch, n * sizeof(*a->scratch)) == 0)) {
            found = th->sample;
            a->stats.coalesced++;
        }
    }
    if (found == AGG_EMPTY) {
        uint64_t h =
            agg_hash_locations(agg_mix(agg_mix(agg_mix(agg_mix(agg_mix(2, thread_id), tname), task),
                                               (uint64_t)interp_id),
                                       (uint64_t)sid << 32 | trace),
                               a->scratch, n);
        size_t i = (size_t)h & a->sample_index.mask;
        for (;; i = (i + 1) & a->sample_index.mask) {
            uint32_t id = a->sample_index.slot[i];
            if (id == AGG_EMPTY)
                break;
            const struct agg_sample *s = &a->samples[id];
            if (a->sample_hash[id] == h && s->nlocations == n && s->thread_id == thread_id &&
                s->thread_name == tname && s->task_name == task && s->interp_id == interp_id &&
                s->span_id == sid && s->trace_id == trace &&
                (n == 0 || memcmp(s->locations, a->scratch, n * sizeof(*a->scratch)) == 0)) {
                found = id;
                break;
            }
        }
        if (found == AGG_EMPTY) {
            /* a failed growth drops the sample like a cap: it is counted */
            if (a->nsamples == a->samples_cap) {
                if (agg_grow_samples(a))
                    return agg_drop(a);
                i = agg_index_free_slot(&a->sample_index, h);
            }
            if (a->slots_cap - a->nslots < n && agg_grow_slots(a, n))
                return agg_drop(a);
            uint32_t *locs = a->slots + a->nslots;
            memcpy(locs, a->scratch, n * sizeof(*locs));
            a->nslots += n;
            found = (uint32_t)a->nsamples++;
            a->samples[found] = (struct agg_sample){.locations = locs,
                                                    .nlocations = (uint32_t)n,
                                                    .thread_id = thread_id,
                                                    .thread_name = tname,
                                                    .task_name = task,
                                                    .trace_id = trace,
                                                    .span_id = sid,
                                                    .interp_id = interp_id};
            a->sample_hash[found] = h;
            a->sample_index.slot[i] = found;
        }
    }
    a->samples[found].count += count;
    a->samples[found].nanos += nanos;
    *th = (struct agg_thread){.thread_id = thread_id, .sample = found, .used = true};
    a->last = found;
    a->stats.added++;
    return 0;
}

size_t agg_string_count(const struct agg *a)
{
    return a->nstrings;
}

const char *agg_string(const struct agg *a, uint32_t id)
{
    return id < a->nstrings ? a->str_bytes + a->str_off[id] : "";
}

size_t agg_function_count(const struct agg *a)
{
    return a->nfunctions;
}

const struct agg_function *agg_function(const struct agg *a, size_t i)
{
    PYPROFD_ASSERT(i < a->nfunctions);
    return &a->functions[i];
}

size_t agg_mapping_count(const struct agg *a)
{
    return a->nmappings;
}

const struct agg_mapping *agg_mapping(const struct agg *a, size_t i)
{
    PYPROFD_ASSERT(i < a->nmappings);
    return &a->mappings[i];
}

size_t agg_location_count(const struct agg *a)
{
    return a->nlocations;
}

const struct agg_location *agg_location(const struct agg *a, size_t i)
{
    PYPROFD_ASSERT(i < a->nlocations);
    return &a->locations[i];
}

size_t agg_sample_count(const struct agg *a)
{
    return a->nsamples;
}

const struct agg_sample *agg_sample(const struct agg *a, size_t i)
{
    PYPROFD_ASSERT(i < a->nsamples);
    return &a->samples[i];
}

bool agg_function_is_opcode(const struct agg *a, size_t i)
{
    return strncmp(agg_string(a, a->functions[i].name), "<op ", 4) == 0;
}

bool agg_function_is_marker(const struct agg *a, size_t i)
{
    return strcmp(agg_string(a, a->functions[i].filename), "~") == 0;
}

size_t agg_last(const struct agg *a)
{
    return a->last == AGG_EMPTY ? SIZE_MAX : a->last;
}

struct agg_stats agg_stats(const struct agg *a)
{
    return a->stats;
}

/* ---- as a sampler's sink ------------------------------------------------- */

static int agg_sink_add(void *arg, const struct sink_sample *x)
{
    return agg_add_span(arg, x->frames, x->nframes, x->thread_id, x->interp_id, x->thread_name,
                        x->task, x->span, 1, x->nanos);
}

static int agg_sink_repeat(void *arg, const struct sink_sample *x)
{
    return agg_repeat_in(arg, x->thread_id, x->interp_id, x->thread_name, 1, x->nanos);
}

struct sample_sink agg_sink(struct agg *a)
{
    return (struct sample_sink){.add = agg_sink_add, .repeat = agg_sink_repeat, .arg = a};
}
