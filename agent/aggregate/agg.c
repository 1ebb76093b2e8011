/* SPDX-License-Identifier: MIT */
/*
 * agg.c: interning tables and stack counts of one profile window (see
 * agg.h). Every table is an array plus an open-addressing index of twice its
 * capacity, allocated once; reset only clears counters and index slots.
 *
 * Per frame, the location is first looked up in a direct-mapped memo keyed
 * by the frame's code_id (unwind.h: an id that fixes the function, file and
 * first line, unique in the process and never reused) and position, so a
 * frame seen before costs no string hashing; frames without a code_id take
 * the interning path every time.
 */
#include "base/compat.h"

#include "aggregate/agg.h"
#include "base/alloc.h"
#include "base/hash.h"

#define AGG_EMPTY      UINT32_MAX
#define AGG_MEMO_SLOTS 8192u /* location memo entries, a power of two */

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

    char *str_bytes;
    size_t str_used;
    uint32_t *str_off;
    size_t nstrings;
    struct agg_index str_index;

    struct agg_function *functions;
    size_t nfunctions;
    struct agg_index fn_index;

    struct agg_location *locations;
    size_t nlocations;
    struct agg_index loc_index;

    struct agg_sample *samples;
    uint64_t *sample_hash;
    size_t nsamples;
    uint32_t *slots;
    size_t nslots;
    struct agg_index sample_index;

    struct agg_thread *threads; /* direct-mapped by thread id */
    uint32_t *scratch;          /* location ids of the sample being added */
    struct agg_memo *memo;      /* AGG_MEMO_SLOTS, direct-mapped */
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
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static int agg_index_init(struct agg_index *ix, size_t entries)
{
    size_t n = 16;
    while (n < entries * 2)
        n <<= 1;
    ix->slot = alloc_malloc(n * sizeof(*ix->slot));
    if (!ix->slot)
        return -ENOMEM;
    ix->mask = n - 1;
    memset(ix->slot, 0xff, n * sizeof(*ix->slot));
    return 0;
}

static void agg_index_clear(struct agg_index *ix)
{
    if (ix->slot)
        memset(ix->slot, 0xff, (ix->mask + 1) * sizeof(*ix->slot));
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
#undef AGG_DEFAULT
    if (a->lim.strings > UINT32_MAX / 2 || a->lim.locations > UINT32_MAX / 2 ||
        a->lim.samples > UINT32_MAX / 2 || a->lim.functions > UINT32_MAX / 2 ||
        a->lim.string_bytes > UINT32_MAX) {
        agg_free(a);
        return -EINVAL;
    }
    a->str_bytes = alloc_malloc(a->lim.string_bytes);
    a->str_off = alloc_calloc(a->lim.strings, sizeof(*a->str_off));
    a->functions = alloc_calloc(a->lim.functions, sizeof(*a->functions));
    a->locations = alloc_calloc(a->lim.locations, sizeof(*a->locations));
    a->samples = alloc_calloc(a->lim.samples, sizeof(*a->samples));
    a->sample_hash = alloc_calloc(a->lim.samples, sizeof(*a->sample_hash));
    a->slots = alloc_calloc(a->lim.stack_slots, sizeof(*a->slots));
    a->threads = alloc_calloc(a->lim.threads, sizeof(*a->threads));
    a->scratch = alloc_calloc(UNWIND_MAX_DEPTH, sizeof(*a->scratch));
    a->memo = alloc_calloc(AGG_MEMO_SLOTS, sizeof(*a->memo));
    if (!a->str_bytes || !a->str_off || !a->functions || !a->locations || !a->samples ||
        !a->sample_hash || !a->slots || !a->threads || !a->scratch || !a->memo ||
        agg_index_init(&a->str_index, a->lim.strings) ||
        agg_index_init(&a->fn_index, a->lim.functions) ||
        agg_index_init(&a->loc_index, a->lim.locations) ||
        agg_index_init(&a->sample_index, a->lim.samples)) {
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
    a->nsamples = 0;
    a->nslots = 0;
    agg_index_clear(&a->str_index);
    agg_index_clear(&a->fn_index);
    agg_index_clear(&a->loc_index);
    agg_index_clear(&a->sample_index);
    memset(a->threads, 0, a->lim.threads * sizeof(*a->threads));
    memset(a->memo, 0, AGG_MEMO_SLOTS * sizeof(*a->memo)); /* its ids were this window's */
    (void)agg_intern(a, "");                               /* id 0, as pprof requires */
}

/* Interns @s; AGG_EMPTY when a cap is reached. */
static uint32_t agg_intern(struct agg *a, const char *s)
{
    uint64_t h = agg_hash_str(s);
    size_t i = (size_t)h & a->str_index.mask;
    for (;; i = (i + 1) & a->str_index.mask) {
        uint32_t id = a->str_index.slot[i];
        if (id == AGG_EMPTY)
            break;
        if (strcmp(a->str_bytes + a->str_off[id], s) == 0)
            return id;
    }
    size_t len = strlen(s) + 1;
    if (a->nstrings == a->lim.strings || a->lim.string_bytes - a->str_used < len)
        return AGG_EMPTY;
    memcpy(a->str_bytes + a->str_used, s, len);
    a->str_off[a->nstrings] = (uint32_t)a->str_used;
    a->str_used += len;
    a->str_index.slot[i] = (uint32_t)a->nstrings;
    return (uint32_t)a->nstrings++;
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
    uint32_t sys = agg_intern(a, agg_system_name(f->function));
    if (name == AGG_EMPTY || file == AGG_EMPTY || sys == AGG_EMPTY)
        return AGG_EMPTY;
    int64_t start = f->first_line;
    uint64_t h = agg_mix(agg_mix(agg_mix(0, name), file), (uint64_t)start);
    size_t i = (size_t)h & a->fn_index.mask;
    for (;; i = (i + 1) & a->fn_index.mask) {
        uint32_t id = a->fn_index.slot[i];
        if (id == AGG_EMPTY)
            break;
        const struct agg_function *fn = &a->functions[id];
        if (fn->name == name && fn->filename == file && fn->start_line == start)
            return id;
    }
    if (a->nfunctions == a->lim.functions)
        return AGG_EMPTY;
    a->functions[a->nfunctions] = (struct agg_function){
        .name = name, .system_name = sys, .filename = file, .start_line = start};
    a->fn_index.slot[i] = (uint32_t)a->nfunctions;
    return (uint32_t)a->nfunctions++;
}

static uint32_t agg_location_id(struct agg *a, const struct unwind_frame *f)
{
    uint32_t fn = agg_function_id(a, f);
    if (fn == AGG_EMPTY)
        return AGG_EMPTY;
    int64_t line = f->pos.line == LINETABLE_UNKNOWN ? 0 : f->pos.line;
    int64_t col = f->pos.col == LINETABLE_UNKNOWN ? 0 : (int64_t)f->pos.col + 1;
    uint64_t h = agg_mix(agg_mix(agg_mix(1, fn), (uint64_t)line), (uint64_t)col);
    size_t i = (size_t)h & a->loc_index.mask;
    for (;; i = (i + 1) & a->loc_index.mask) {
        uint32_t id = a->loc_index.slot[i];
        if (id == AGG_EMPTY)
            break;
        const struct agg_location *l = &a->locations[id];
        if (l->function == fn && l->line == line && l->column == col)
            return id;
    }
    if (a->nlocations == a->lim.locations)
        return AGG_EMPTY;
    a->locations[a->nlocations] = (struct agg_location){fn, line, col};
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
    struct agg_memo *m =
        &a->memo[hash_fmix64(f->code_id * HASH_GOLDEN ^ key) & (AGG_MEMO_SLOTS - 1)];
    if (m->code_id == f->code_id && m->line == f->pos.line && m->col == f->pos.col &&
        m->function == f->function && m->file == f->file)
        return m->location;
    uint32_t loc = agg_location_id(a, f);
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

int agg_repeat(struct agg *a, uint64_t thread_id, const char *thread_name, int64_t count,
               int64_t nanos)
{
    if (!thread_name || !*thread_name)
        thread_name = "unknown";
    struct agg_thread *th = agg_thread_slot(a, thread_id);
    if (!th->used || th->thread_id != thread_id)
        return -ENOENT;
    struct agg_sample *s = &a->samples[th->sample];
    if (s->task_name != 0 || strcmp(agg_string(a, s->thread_name), thread_name) != 0)
        return -ENOENT;
    s->count += count;
    s->nanos += nanos;
    a->stats.added++;
    a->stats.coalesced++;
    return 0;
}

int agg_add(struct agg *a, const struct unwind_frame *frames, size_t n, uint64_t thread_id,
            const char *thread_name, const char *task_name, int64_t count, int64_t nanos)
{
    if (!thread_name || !*thread_name)
        thread_name = "unknown";
    if (task_name && !*task_name)
        task_name = NULL;
    if (n > UNWIND_MAX_DEPTH)
        return agg_drop(a);

    uint32_t tname = agg_intern(a, thread_name);
    uint32_t task = task_name ? agg_intern(a, task_name) : 0;
    if (tname == AGG_EMPTY || task == AGG_EMPTY)
        return agg_drop(a);
    for (size_t i = 0; i < n; i++) {
        uint32_t loc = agg_frame_location(a, &frames[i]);
        if (loc == AGG_EMPTY)
            return agg_drop(a);
        a->scratch[i] = loc;
    }

    /* A thread whose stack did not move: count it where it went last time. */
    struct agg_thread *th = agg_thread_slot(a, thread_id);
    uint32_t found = AGG_EMPTY;
    if (th->used && th->thread_id == thread_id) {
        const struct agg_sample *s = &a->samples[th->sample];
        if (s->nlocations == n && s->thread_name == tname && s->task_name == task &&
            (n == 0 || memcmp(s->locations, a->scratch, n * sizeof(*a->scratch)) == 0)) {
            found = th->sample;
            a->stats.coalesced++;
        }
    }
    if (found == AGG_EMPTY) {
        uint64_t h =
            agg_hash_locations(agg_mix(agg_mix(agg_mix(2, thread_id), tname), task), a->scratch, n);
        size_t i = (size_t)h & a->sample_index.mask;
        for (;; i = (i + 1) & a->sample_index.mask) {
            uint32_t id = a->sample_index.slot[i];
            if (id == AGG_EMPTY)
                break;
            const struct agg_sample *s = &a->samples[id];
            if (a->sample_hash[id] == h && s->nlocations == n && s->thread_id == thread_id &&
                s->thread_name == tname && s->task_name == task &&
                (n == 0 || memcmp(s->locations, a->scratch, n * sizeof(*a->scratch)) == 0)) {
                found = id;
                break;
            }
        }
        if (found == AGG_EMPTY) {
            if (a->nsamples == a->lim.samples || a->lim.stack_slots - a->nslots < n)
                return agg_drop(a);
            uint32_t *locs = a->slots + a->nslots;
            memcpy(locs, a->scratch, n * sizeof(*locs));
            a->nslots += n;
            found = (uint32_t)a->nsamples++;
            a->samples[found] = (struct agg_sample){.locations = locs,
                                                    .nlocations = (uint32_t)n,
                                                    .thread_id = thread_id,
                                                    .thread_name = tname,
                                                    .task_name = task};
            a->sample_hash[found] = h;
            a->sample_index.slot[i] = found;
        }
    }
    a->samples[found].count += count;
    a->samples[found].nanos += nanos;
    *th = (struct agg_thread){.thread_id = thread_id, .sample = found, .used = true};
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

struct agg_stats agg_stats(const struct agg *a)
{
    return a->stats;
}
