/* SPDX-License-Identifier: MIT */
/*
 * pprof_build.c: window -> gzipped pprof (see pprof_build.h). The protobuf-c
 * structures point into the window's own tables wherever the wire types
 * allow it (strings); the rest (messages, pointer arrays, 64-bit id arrays)
 * is carved out of one block sized up front, so a build does three
 * allocations whatever the window's size: that block, the serialized bytes
 * and the gzip output.
 */
#include "base/compat.h"

#include <protobuf-c/protobuf-c.h>

#include "base/alloc.h"
#include "base/hash.h"
#include "base/utf8.h"
#include "pprof/gzip.h"
#include "pprof/pprof_build.h"
#include "profile.pb-c.h"

/*
 * Strings the encoder may add after the window's own: "" (when the window
 * has no strings at all), value type and unit, "samples", "count",
 * "thread_id", "thread_name", "task_name", "interpreter_id", "trace_id",
 * "span_id" and the comment.
 */
#define PPROF_EXTRA_STRINGS 11

#define PPROF_ALIGN _Alignof(max_align_t)

/* What the windows hold, counted and checked before anything is allocated. */
struct pprof_plan {
    size_t nstrings; /* the windows', all of them */
    size_t nfunctions;
    size_t nlocations;
    size_t nmappings; /* the windows' native files, besides mapping 1 */
    size_t nsamples;
    size_t nslots;      /* location ids over all samples */
    size_t nlabels;     /* Label messages: each sample's own, each part's once */
    size_t nlabelrefs;  /* label pointers: every label of every sample */
    size_t npartlabels; /* part labels written, over all parts (each adds two strings) */
    bool has_task;
    bool has_span;    /* a sample in a trace's span: labelled trace_id and span_id */
    bool has_interp;  /* a sample of a sub-interpreter: labelled interpreter_id */
    size_t fix_bytes; /* valid UTF-8 copies of strings that are not (pprof_fix()) */
    size_t bytes;     /* of the block */
};

/*
 * Every string_table entry must be valid UTF-8: a proto3 string that is not
 * makes strict decoders (Python's protobuf, Go's for proto3 messages) refuse
 * the whole profile. Text is made valid where it enters pyprofd
 * (base/utf8.h), so this never finds anything to do; it keeps the promise
 * for a string that came another way. The plan adds up the room the valid
 * copies of such strings take (the bytes utf8_sanitize() writes, and a
 * NUL), the fill makes them in the block as it interns them.
 */
static bool pprof_fix_room(size_t *fix, const char *s)
{
    size_t n = strlen(s);
    if (utf8_valid(s, n))
        return true;
    size_t need = utf8_sanitized_len(s, n, NULL) + 1;
    return !__builtin_add_overflow(*fix, need, fix);
}

/* Whether a part's label may be written: a non-empty value, a name of its own. */
static bool pprof_part_label_ok(const struct label *l)
{
    return l->name && l->name[0] && l->value && l->value[0] && strcmp(l->name, "thread_id") != 0 &&
           strcmp(l->name, "thread_name") != 0 && strcmp(l->name, "task_name") != 0;
}

/*
 * Whether the names of @ls strictly increase, so none repeats: what labels.h
 * promises, checked because a set made by hand need not keep the promise and
 * the quadratic search for repeats is then only needed for those.
 */
static bool pprof_part_labels_unique(const struct labels *ls)
{
    for (size_t i = 1; i < ls->n; i++) {
        const char *prev = ls->v[i - 1].name, *name = ls->v[i].name;
        if (!prev || !name || strcmp(prev, name) >= 0)
            return false;
    }
    return true;
}

/*
 * Whether label @i of @ls is written: it may be (pprof_part_label_ok) and no
 * earlier label of the same name is (one value per key, the first). The plan
 * and the fill both decide through this, so they cannot disagree.
 */
static bool pprof_part_label_used(const struct labels *ls, size_t i, bool unique)
{
    const struct label *l = &ls->v[i];
    if (!pprof_part_label_ok(l))
        return false;
    for (size_t j = 0; !unique && j < i; j++) {
        if (pprof_part_label_ok(&ls->v[j]) && strcmp(ls->v[j].name, l->name) == 0)
            return false;
    }
    return true;
}

/* How many labels each sample of @part gets from the part: none when it has no samples. */
static size_t pprof_part_nlabels(const struct pprof_part *part)
{
    const struct labels *ls = part->labels;
    if (!ls || agg_sample_count(part->agg) == 0)
        return 0;
    bool unique = pprof_part_labels_unique(ls);
    size_t n = 0;
    for (size_t i = 0; i < ls->n; i++)
        n += pprof_part_label_used(ls, i, unique);
    return n;
}

/* A bump allocator over the block; sizes were checked by the plan. */
struct pprof_arena {
    uint8_t *base;
    size_t size;
    size_t used;
};

/* Adds the room for @n elements of @size, aligned, to *total; false on overflow. */
static bool pprof_room(size_t *total, size_t n, size_t size)
{
    size_t bytes;
    if (__builtin_mul_overflow(n, size, &bytes) || bytes > SIZE_MAX - PPROF_ALIGN)
        return false;
    bytes = (bytes + PPROF_ALIGN - 1) & ~(PPROF_ALIGN - 1);
    return !__builtin_add_overflow(*total, bytes, total);
}

static void *pprof_take(struct pprof_arena *ar, size_t n, size_t size)
{
    size_t bytes = ((n * size) + PPROF_ALIGN - 1) & ~(PPROF_ALIGN - 1);
    PYPROFD_ASSERT(bytes <= ar->size - ar->used);
    void *p = ar->base + ar->used;
    ar->used += bytes;
    return p;
}

/* The index size for @n strings: a power of two at least twice @n. */
static size_t pprof_index_slots(size_t n)
{
    size_t slots = 16;
    while (slots < 2 * n)
        slots <<= 1;
    return slots;
}

/* A string id usable as a label value: in range and not "". */
static int pprof_label_value(const struct agg *a, size_t nstrings, uint32_t id, bool *use)
{
    *use = false;
    if (id == 0)
        return 0;
    if (id >= nstrings)
        return -EINVAL;
    const char *s = agg_string(a, id);
    if (!s)
        return -EINVAL;
    *use = s[0] != '\0';
    return 0;
}

/* Counts one window's tables into @p and checks every id they use. */
static int pprof_plan_part(const struct pprof_part *part, struct pprof_plan *p)
{
    const struct agg *a = part->agg;
    size_t nstrings = agg_string_count(a);
    size_t nfunctions = agg_function_count(a);
    size_t nlocations = agg_location_count(a);
    size_t nsamples = agg_sample_count(a);
    size_t partlabels = pprof_part_nlabels(part);

    for (size_t i = 0; i < nstrings; i++) {
        const char *s = agg_string(a, (uint32_t)i);
        if (!s || (i == 0 && s[0] != '\0'))
            return -EINVAL;
        if (!pprof_fix_room(&p->fix_bytes, s))
            return -E2BIG;
    }
    if (part->labels && nsamples) { /* the labels the fill writes (pprof_part_label_used()) */
        const struct labels *ls = part->labels;
        bool unique = pprof_part_labels_unique(ls);
        for (size_t i = 0; i < ls->n; i++) {
            if (pprof_part_label_used(ls, i, unique) &&
                (!pprof_fix_room(&p->fix_bytes, ls->v[i].name) ||
                 !pprof_fix_room(&p->fix_bytes, ls->v[i].value)))
                return -E2BIG;
        }
    }
    for (size_t i = 0; i < nfunctions; i++) {
        const struct agg_function *f = agg_function(a, i);
        if (f->name >= nstrings || f->system_name >= nstrings || f->filename >= nstrings)
            return -EINVAL;
    }
    size_t nmappings = agg_mapping_count(a);
    for (size_t i = 0; i < nmappings; i++) {
        const struct agg_mapping *m = agg_mapping(a, i);
        if (m->filename >= nstrings || m->build_id >= nstrings)
            return -EINVAL;
    }
    for (size_t i = 0; i < nlocations; i++) {
        const struct agg_location *l = agg_location(a, i);
        if (l->function >= nfunctions || l->mapping > nmappings)
            return -EINVAL;
    }
    for (size_t i = 0; i < nsamples; i++) {
        const struct agg_sample *s = agg_sample(a, i);
        if (s->nlocations && !s->locations)
            return -EINVAL;
        for (uint32_t k = 0; k < s->nlocations; k++) {
            if (s->locations[k] >= nlocations)
                return -EINVAL;
        }
        bool name, task, trace, span;
        int err = pprof_label_value(a, nstrings, s->thread_name, &name);
        if (!err)
            err = pprof_label_value(a, nstrings, s->task_name, &task);
        if (!err)
            err = pprof_label_value(a, nstrings, s->trace_id, &trace);
        if (!err)
            err = pprof_label_value(a, nstrings, s->span_id, &span);
        if (err)
            return err;
        p->has_task |= task;
        p->has_span |= trace || span;
        p->has_interp |= s->interp_id != 0;
        size_t own = 1u + name + task + trace + span + (s->interp_id != 0);
        if (__builtin_add_overflow(p->nslots, s->nlocations, &p->nslots) ||
            __builtin_add_overflow(p->nlabels, own, &p->nlabels) ||
            __builtin_add_overflow(p->nlabelrefs, own + partlabels, &p->nlabelrefs))
            return -E2BIG;
    }
    /* the part's labels are made once and shared by its samples */
    if (__builtin_add_overflow(p->nlabels, partlabels, &p->nlabels) ||
        __builtin_add_overflow(p->nstrings, nstrings, &p->nstrings) ||
        __builtin_add_overflow(p->nfunctions, nfunctions, &p->nfunctions) ||
        __builtin_add_overflow(p->nlocations, nlocations, &p->nlocations) ||
        __builtin_add_overflow(p->nmappings, nmappings, &p->nmappings) ||
        __builtin_add_overflow(p->nsamples, nsamples, &p->nsamples) ||
        __builtin_add_overflow(p->npartlabels, partlabels, &p->npartlabels))
        return -E2BIG;
    return 0;
}

/* Counts all parts and sizes the block. */
static int pprof_plan(const struct pprof_part *parts, size_t nparts, const struct pprof_meta *m,
                      struct pprof_plan *p)
{
    memset(p, 0, sizeof(*p));
    for (size_t k = 0; k < nparts; k++) {
        int err = pprof_plan_part(&parts[k], p);
        if (err)
            return err;
    }
    if (!pprof_fix_room(&p->fix_bytes, m->value_type) ||
        !pprof_fix_room(&p->fix_bytes, m->value_unit) ||
        (m->comment && !pprof_fix_room(&p->fix_bytes, m->comment)))
        return -E2BIG;
    size_t extra_strings = PPROF_EXTRA_STRINGS;
    bool ok = !__builtin_add_overflow(extra_strings, 2 * p->npartlabels, &extra_strings) &&
              extra_strings >= PPROF_EXTRA_STRINGS;
    ok = ok && p->nstrings < UINT32_MAX / 4 && extra_strings < UINT32_MAX / 4;
    ok = ok && pprof_room(&p->bytes, p->nstrings + extra_strings, sizeof(char *));
    ok = ok &&
         pprof_room(&p->bytes, pprof_index_slots(p->nstrings + extra_strings), sizeof(uint32_t));
    ok = ok && pprof_room(&p->bytes, p->nstrings, sizeof(uint32_t)); /* remaps */
    ok = ok && pprof_room(&p->bytes, p->nfunctions, sizeof(Perftools__Profiles__Function));
    ok = ok && pprof_room(&p->bytes, p->nfunctions, sizeof(void *));
    ok = ok && pprof_room(&p->bytes, p->nmappings, sizeof(Perftools__Profiles__Mapping));
    ok = ok && pprof_room(&p->bytes, p->nmappings + 1, sizeof(void *));
    ok = ok && pprof_room(&p->bytes, p->nlocations, sizeof(Perftools__Profiles__Location));
    ok = ok && pprof_room(&p->bytes, p->nlocations, sizeof(void *));
    ok = ok && pprof_room(&p->bytes, p->nlocations, sizeof(Perftools__Profiles__Line));
    ok = ok && pprof_room(&p->bytes, p->nlocations, sizeof(void *));
    ok = ok && pprof_room(&p->bytes, p->nsamples, sizeof(Perftools__Profiles__Sample));
    ok = ok && pprof_room(&p->bytes, p->nsamples, sizeof(void *));
    ok = ok && pprof_room(&p->bytes, p->nsamples, 2 * sizeof(int64_t));
    ok = ok && pprof_room(&p->bytes, p->nslots, sizeof(uint64_t));
    ok = ok && pprof_room(&p->bytes, p->nlabels, sizeof(Perftools__Profiles__Label));
    ok = ok && pprof_room(&p->bytes, p->nlabelrefs, sizeof(void *));
    ok = ok && pprof_room(&p->bytes, p->fix_bytes, 1);
    return ok ? 0 : -E2BIG;
}

/*
 * The string table: the windows' strings, then the extras, each string once.
 * One window's strings are already unique (agg.h); merged windows share most
 * of theirs (the same files and functions), so an open-addressing index over
 * the table maps each window's ids to table ids (remap).
 */
struct pprof_strings {
    char **s;
    size_t n;
    size_t cap;     /* of s, as planned */
    uint32_t *slot; /* table id + 1; 0 = empty */
    size_t mask;
    char *fix; /* room left for valid copies (pprof_fix_room()) */
    size_t fix_left;
};

static uint64_t pprof_hash(const char *str)
{
    return hash_str(str);
}

/* @str, or its valid UTF-8 copy in the block when it is not valid (counted). */
static const char *pprof_fix(struct pprof_strings *t, const char *str)
{
    size_t n = strlen(str);
    if (utf8_valid(str, n))
        return str;
    size_t need = utf8_sanitized_len(str, n, NULL) + 1;
    PYPROFD_ASSERT(need <= t->fix_left); /* the plan made room */
    char *copy = t->fix;
    (void)utf8_sanitize(copy, need, str, n);
    t->fix += need;
    t->fix_left -= need;
    return copy;
}

/* Index of @str (as valid UTF-8) in the table, appending it if absent. */
static int64_t pprof_intern(struct pprof_strings *t, const char *str)
{
    str = pprof_fix(t, str);
    size_t i = (size_t)pprof_hash(str) & t->mask;
    while (t->slot[i]) {
        size_t id = t->slot[i] - 1u;
        if (strcmp(t->s[id], str) == 0)
            return (int64_t)id;
        i = (i + 1) & t->mask;
    }
    PYPROFD_ASSERT(t->n < t->cap);
    /* protobuf-c only reads through these pointers */
    t->s[t->n] = (char *)(uintptr_t)str;
    t->slot[i] = (uint32_t)(t->n + 1);
    return (int64_t)t->n++;
}

/* The messages of which there is one per profile. */
struct pprof_top {
    Perftools__Profiles__Profile prof;
    Perftools__Profiles__ValueType vt[3]; /* two sample types, the period type */
    Perftools__Profiles__ValueType *vtp[2];
    Perftools__Profiles__Mapping map;
    int64_t comment;
};

static void pprof_fill(const struct pprof_part *parts, size_t nparts, const struct pprof_meta *m,
                       const struct pprof_plan *p, struct pprof_arena *ar, struct pprof_top *top)
{
    size_t nstr = p->nstrings + PPROF_EXTRA_STRINGS + 2 * p->npartlabels;
    size_t slots = pprof_index_slots(nstr);
    struct pprof_strings t = {
        .s = pprof_take(ar, nstr, sizeof(char *)),
        .cap = nstr,
        .slot = pprof_take(ar, slots, sizeof(uint32_t)),
        .mask = slots - 1,
    };
    uint32_t *remap = pprof_take(ar, p->nstrings, sizeof(uint32_t));
    t.fix = pprof_take(ar, p->fix_bytes, 1);
    t.fix_left = p->fix_bytes;
    /* Each window's strings in turn; "" is first, as string 0 of every window (agg.h). */
    pprof_intern(&t, "");
    size_t roff = 0;
    for (size_t k = 0; k < nparts; k++) {
        size_t n = agg_string_count(parts[k].agg);
        for (size_t i = 0; i < n; i++)
            remap[roff + i] = (uint32_t)pprof_intern(&t, agg_string(parts[k].agg, (uint32_t)i));
        roff += n;
    }

    Perftools__Profiles__Profile *prof = &top->prof;
    Perftools__Profiles__ValueType *vt = top->vt;
    perftools__profiles__profile__init(prof);

    /*
     * One mapping for every location, saying that functions, files and lines
     * are known: without it go tool pprof makes one up and tries to
     * symbolize it ("Main binary filename not available").
     */
    perftools__profiles__mapping__init(&top->map);
    top->map.id = 1;
    top->map.has_functions = true;
    top->map.has_filenames = true;
    top->map.has_line_numbers = true;
    /* and one for each file native frames are in (UNWIND_FRAME_C), with its
     * build id and range, ids 2 on in part order: their locations carry
     * addresses a server can symbolise again by build id */
    Perftools__Profiles__Mapping *maps =
        pprof_take(ar, p->nmappings, sizeof(Perftools__Profiles__Mapping));
    Perftools__Profiles__Mapping **mapp = pprof_take(ar, p->nmappings + 1, sizeof(void *));
    mapp[0] = &top->map;
    prof->n_mapping = p->nmappings + 1;
    prof->mapping = mapp;

    int64_t value_type = pprof_intern(&t, m->value_type);
    int64_t value_unit = pprof_intern(&t, m->value_unit);
    perftools__profiles__value_type__init(&vt[0]);
    vt[0].type = pprof_intern(&t, "samples");
    vt[0].unit = pprof_intern(&t, "count");
    perftools__profiles__value_type__init(&vt[1]);
    vt[1].type = value_type;
    vt[1].unit = value_unit;
    perftools__profiles__value_type__init(&vt[2]);
    vt[2].type = value_type;
    vt[2].unit = value_unit;
    top->vtp[0] = &vt[0];
    top->vtp[1] = &vt[1];
    prof->n_sample_type = 2;
    prof->sample_type = top->vtp;
    prof->period_type = &vt[2];
    prof->period = m->period_ns;
    prof->time_nanos = m->time_nanos;
    prof->duration_nanos = m->duration_nanos;
    if (m->comment && m->comment[0]) {
        top->comment = pprof_intern(&t, m->comment);
        prof->n_comment = 1;
        prof->comment = &top->comment;
    }
    int64_t key_tid = pprof_intern(&t, "thread_id");
    int64_t key_tname = pprof_intern(&t, "thread_name");
    int64_t key_task = p->has_task ? pprof_intern(&t, "task_name") : 0;
    int64_t key_interp = p->has_interp ? pprof_intern(&t, "interpreter_id") : 0;
    /* the names Pyroscope keeps out of its series and links spans by */
    int64_t key_trace = p->has_span ? pprof_intern(&t, "trace_id") : 0;
    int64_t key_span = p->has_span ? pprof_intern(&t, "span_id") : 0;

    Perftools__Profiles__Function *fns =
        pprof_take(ar, p->nfunctions, sizeof(Perftools__Profiles__Function));
    Perftools__Profiles__Function **fnp = pprof_take(ar, p->nfunctions, sizeof(void *));
    Perftools__Profiles__Location *locs =
        pprof_take(ar, p->nlocations, sizeof(Perftools__Profiles__Location));
    Perftools__Profiles__Location **locp = pprof_take(ar, p->nlocations, sizeof(void *));
    Perftools__Profiles__Line *lines =
        pprof_take(ar, p->nlocations, sizeof(Perftools__Profiles__Line));
    Perftools__Profiles__Line **linep = pprof_take(ar, p->nlocations, sizeof(void *));
    Perftools__Profiles__Sample *samps =
        pprof_take(ar, p->nsamples, sizeof(Perftools__Profiles__Sample));
    Perftools__Profiles__Sample **sampp = pprof_take(ar, p->nsamples, sizeof(void *));
    int64_t *values = pprof_take(ar, p->nsamples, 2 * sizeof(int64_t));
    uint64_t *ids = pprof_take(ar, p->nslots, sizeof(uint64_t));
    Perftools__Profiles__Label *labels =
        pprof_take(ar, p->nlabels, sizeof(Perftools__Profiles__Label));
    Perftools__Profiles__Label **labelp = pprof_take(ar, p->nlabelrefs, sizeof(void *));
    const Perftools__Profiles__Label *labels_end = labels + p->nlabels;
    Perftools__Profiles__Label *const *labelp_end = labelp + p->nlabelrefs;
    const uint64_t *ids_end = ids + p->nslots;

    /*
     * Windows are concatenated: part k's string, function and location ids
     * are its own plus the counts of the parts before it, so every id stays
     * dense and in array order. A function seen by two windows appears twice,
     * which pprof allows and consumers merge by name.
     */
    size_t foff = 0, loff = 0, moff = 0, nsamp = 0;
    for (size_t k = 0; k < nparts; k++) {
        const struct agg *a = parts[k].agg;
        size_t nstrings = agg_string_count(a);
        const uint32_t *sid = remap; /* this window's string id -> table id */
        remap += nstrings;
        size_t nfunctions = agg_function_count(a);
        size_t nlocations = agg_location_count(a);
        size_t nmappings = agg_mapping_count(a);
        size_t nsamples = agg_sample_count(a);

        for (size_t i = 0; i < nmappings; i++) {
            const struct agg_mapping *am = agg_mapping(a, i);
            Perftools__Profiles__Mapping *pm = &maps[moff + i];
            perftools__profiles__mapping__init(pm);
            pm->id = moff + i + 2;
            pm->memory_start = am->start;
            pm->memory_limit = am->limit;
            pm->file_offset = am->offset;
            pm->filename = sid[am->filename];
            pm->build_id = sid[am->build_id];
            pm->has_functions = true; /* every frame is named: its symbol, or FILE+0xSTART */
            mapp[moff + i + 1] = pm;
        }

        for (size_t i = 0; i < nfunctions; i++) {
            const struct agg_function *f = agg_function(a, i);
            Perftools__Profiles__Function *fn = &fns[foff + i];
            perftools__profiles__function__init(fn);
            fn->id = foff + i + 1;
            fn->name = sid[f->name];
            /*
             * A system name equal to the name says nothing more, and go tool
             * pprof then "demangles" the name as C++, deleting every <...>:
             * "<module>", "<lambda>" and "<GC>" would come out empty.
             */
            fn->system_name = f->system_name == f->name ? 0 : sid[f->system_name];
            fn->filename = sid[f->filename];
            fn->start_line = f->start_line;
            fnp[foff + i] = fn;
        }
        for (size_t i = 0; i < nlocations; i++) {
            const struct agg_location *l = agg_location(a, i);
            size_t j = loff + i;
            perftools__profiles__line__init(&lines[j]);
            lines[j].function_id = foff + (uint64_t)l->function + 1;
            lines[j].line = l->line;
            lines[j].column = l->column;
            linep[j] = &lines[j];
            perftools__profiles__location__init(&locs[j]);
            locs[j].id = j + 1;
            locs[j].mapping_id = l->mapping ? moff + l->mapping + 1 : 1;
            locs[j].address = l->address;
            locs[j].n_line = 1;
            locs[j].line = &linep[j];
            locp[j] = &locs[j];
        }

        /*
         * The part's own labels, shared by all its samples; a part without
         * samples has no one to give them to, so they (and their strings)
         * are left out, as the plan counted.
         */
        Perftools__Profiles__Label *plabels = labels;
        size_t nplabels = 0;
        const struct labels *ls = parts[k].labels;
        if (ls && nsamples) {
            bool unique = pprof_part_labels_unique(ls);
            for (size_t i = 0; i < ls->n; i++) {
                if (!pprof_part_label_used(ls, i, unique))
                    continue;
                Perftools__Profiles__Label *l = labels++;
                perftools__profiles__label__init(l);
                l->key = pprof_intern(&t, ls->v[i].name);
                l->str = pprof_intern(&t, ls->v[i].value);
                nplabels++;
            }
        }
        PYPROFD_ASSERT(nplabels == pprof_part_nlabels(&parts[k]));

        for (size_t i = 0; i < nsamples; i++) {
            const struct agg_sample *s = agg_sample(a, i);
            Perftools__Profiles__Sample *out = &samps[nsamp];
            perftools__profiles__sample__init(out);
            out->n_location_id = s->nlocations;
            out->location_id = ids;
            for (uint32_t q = 0; q < s->nlocations; q++)
                *ids++ = loff + (uint64_t)s->locations[q] + 1; /* both leaf first */
            out->n_value = 2;
            out->value = values;
            *values++ = s->count;
            *values++ = s->nanos;

            out->label = labelp;
            Perftools__Profiles__Label *l = labels++;
            perftools__profiles__label__init(l);
            l->key = key_tid;
            l->num = (int64_t)s->thread_id;
            *labelp++ = l;
            bool use = false;
            (void)pprof_label_value(a, nstrings, s->thread_name, &use); /* checked by the plan */
            if (use) {
                l = labels++;
                perftools__profiles__label__init(l);
                l->key = key_tname;
                l->str = sid[s->thread_name];
                *labelp++ = l;
            }
            (void)pprof_label_value(a, nstrings, s->task_name, &use);
            if (use) {
                l = labels++;
                perftools__profiles__label__init(l);
                l->key = key_task;
                l->str = sid[s->task_name];
                *labelp++ = l;
            }
            (void)pprof_label_value(a, nstrings, s->trace_id, &use);
            if (use) {
                l = labels++;
                perftools__profiles__label__init(l);
                l->key = key_trace;
                l->str = sid[s->trace_id];
                *labelp++ = l;
            }
            (void)pprof_label_value(a, nstrings, s->span_id, &use);
            if (use) {
                l = labels++;
                perftools__profiles__label__init(l);
                l->key = key_span;
                l->str = sid[s->span_id];
                *labelp++ = l;
            }
            if (s->interp_id != 0) {
                l = labels++;
                perftools__profiles__label__init(l);
                l->key = key_interp;
                l->num = s->interp_id;
                *labelp++ = l;
            }
            for (size_t q = 0; q < nplabels; q++)
                *labelp++ = &plabels[q];
            out->n_label = (size_t)(labelp - out->label);
            sampp[nsamp++] = out;
        }
        foff += nfunctions;
        loff += nlocations;
        moff += nmappings;
    }
    /* the plan and the fill agree: every reserved element was made, no more */
    PYPROFD_ASSERT(labels == labels_end && labelp == labelp_end && ids == ids_end);
    PYPROFD_ASSERT(nsamp == p->nsamples && foff == p->nfunctions && loff == p->nlocations &&
                   moff == p->nmappings);
    PYPROFD_ASSERT(ar->used == ar->size);
    (void)labels_end;
    (void)labelp_end;
    (void)ids_end;
    prof->n_function = p->nfunctions;
    prof->function = fnp;
    prof->n_location = p->nlocations;
    prof->location = locp;
    prof->n_sample = p->nsamples;
    prof->sample = sampp;

    prof->n_string_table = t.n;
    prof->string_table = t.s;
}

int pprof_build_multi(const struct pprof_part *parts, size_t nparts, const struct pprof_meta *m,
                      uint8_t **out, size_t *out_len)
{
    if (!m->value_type || !m->value_type[0] || !m->value_unit || !m->value_unit[0] ||
        m->period_ns < 0 || (nparts && !parts))
        return -EINVAL;
    for (size_t k = 0; k < nparts; k++) {
        if (!parts[k].agg)
            return -EINVAL;
    }
    size_t max = m->max_bytes ? m->max_bytes : PPROF_DEFAULT_MAX_BYTES;

    struct pprof_plan plan;
    int err = pprof_plan(parts, nparts, m, &plan);
    if (err)
        return err;

    struct pprof_top top;
    struct pprof_arena ar = {.size = plan.bytes};
    uint8_t *packed = NULL;
    ar.base = alloc_calloc(1, plan.bytes ? plan.bytes : 1);
    if (!ar.base) {
        err = -ENOMEM;
        goto out;
    }
    pprof_fill(parts, nparts, m, &plan, &ar, &top);

    size_t len = perftools__profiles__profile__get_packed_size(&top.prof);
    if (len > max) {
        err = -E2BIG;
        goto out;
    }
    packed = alloc_malloc(len ? len : 1);
    if (!packed) {
        err = -ENOMEM;
        goto out;
    }
    size_t done = perftools__profiles__profile__pack(&top.prof, packed);
    PYPROFD_ASSERT(done == len);
    (void)done;
    err = gzip_compress(packed, len, max, out, out_len);
out:
    alloc_free(packed);
    alloc_free(ar.base);
    return err;
}

int pprof_build(const struct agg *a, const struct pprof_meta *m, uint8_t **out, size_t *out_len)
{
    struct pprof_part part = {.agg = a, .labels = NULL};
    return pprof_build_multi(&part, 1, m, out, out_len);
}
