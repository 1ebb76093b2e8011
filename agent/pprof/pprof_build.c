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
#include "pprof/gzip.h"
#include "pprof/pprof_build.h"
#include "profile.pb-c.h"

/*
 * Strings the encoder may add after the window's own: "" (when the window
 * has no strings at all), value type and unit, "samples", "count",
 * "thread_id", "thread_name", "task_name" and the comment.
 */
#define PPROF_EXTRA_STRINGS 9

#define PPROF_ALIGN _Alignof(max_align_t)

/* What a window holds, counted and checked before anything is allocated. */
struct pprof_plan {
    size_t nstrings; /* the window's */
    size_t nfunctions;
    size_t nlocations;
    size_t nsamples;
    size_t nslots;  /* location ids over all samples */
    size_t nlabels; /* labels over all samples */
    bool has_task;
    size_t bytes; /* of the block */
};

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

/* Counts the window's tables and checks every id they use. */
static int pprof_plan(const struct agg *a, struct pprof_plan *p)
{
    memset(p, 0, sizeof(*p));
    p->nstrings = agg_string_count(a);
    p->nfunctions = agg_function_count(a);
    p->nlocations = agg_location_count(a);
    p->nsamples = agg_sample_count(a);

    for (size_t i = 0; i < p->nstrings; i++) {
        const char *s = agg_string(a, (uint32_t)i);
        if (!s || (i == 0 && s[0] != '\0'))
            return -EINVAL;
    }
    for (size_t i = 0; i < p->nfunctions; i++) {
        const struct agg_function *f = agg_function(a, i);
        if (f->name >= p->nstrings || f->system_name >= p->nstrings || f->filename >= p->nstrings)
            return -EINVAL;
    }
    for (size_t i = 0; i < p->nlocations; i++) {
        if (agg_location(a, i)->function >= p->nfunctions)
            return -EINVAL;
    }
    for (size_t i = 0; i < p->nsamples; i++) {
        const struct agg_sample *s = agg_sample(a, i);
        if (s->nlocations && !s->locations)
            return -EINVAL;
        for (uint32_t k = 0; k < s->nlocations; k++) {
            if (s->locations[k] >= p->nlocations)
                return -EINVAL;
        }
        bool name, task;
        int err = pprof_label_value(a, p->nstrings, s->thread_name, &name);
        if (!err)
            err = pprof_label_value(a, p->nstrings, s->task_name, &task);
        if (err)
            return err;
        p->has_task |= task;
        if (__builtin_add_overflow(p->nslots, s->nlocations, &p->nslots))
            return -E2BIG;
        p->nlabels += 1u + name + task;
    }

    bool ok = pprof_room(&p->bytes, p->nstrings + PPROF_EXTRA_STRINGS, sizeof(char *));
    ok = ok && pprof_room(&p->bytes, p->nfunctions, sizeof(Perftools__Profiles__Function));
    ok = ok && pprof_room(&p->bytes, p->nfunctions, sizeof(void *));
    ok = ok && pprof_room(&p->bytes, p->nlocations, sizeof(Perftools__Profiles__Location));
    ok = ok && pprof_room(&p->bytes, p->nlocations, sizeof(void *));
    ok = ok && pprof_room(&p->bytes, p->nlocations, sizeof(Perftools__Profiles__Line));
    ok = ok && pprof_room(&p->bytes, p->nlocations, sizeof(void *));
    ok = ok && pprof_room(&p->bytes, p->nsamples, sizeof(Perftools__Profiles__Sample));
    ok = ok && pprof_room(&p->bytes, p->nsamples, sizeof(void *));
    ok = ok && pprof_room(&p->bytes, p->nsamples, 2 * sizeof(int64_t));
    ok = ok && pprof_room(&p->bytes, p->nslots, sizeof(uint64_t));
    ok = ok && pprof_room(&p->bytes, p->nlabels, sizeof(Perftools__Profiles__Label));
    ok = ok && pprof_room(&p->bytes, p->nlabels, sizeof(void *));
    return ok ? 0 : -E2BIG;
}

/* The string table: the window's strings, then the extras, each added once. */
struct pprof_strings {
    char **s;
    size_t n;
};

/*
 * Index of @str in the table, appending it if absent. The table holds the
 * window's strings (tens of thousands at most) and the encoder asks for a
 * handful, once per profile: a linear scan is cheaper than an index.
 */
static int64_t pprof_intern(struct pprof_strings *t, const char *str)
{
    for (size_t i = 0; i < t->n; i++) {
        if (strcmp(t->s[i], str) == 0)
            return (int64_t)i;
    }
    /* protobuf-c only reads through these pointers */
    t->s[t->n] = (char *)(uintptr_t)str;
    return (int64_t)t->n++;
}

/* The messages of which there is one per profile. */
struct pprof_top {
    Perftools__Profiles__Profile prof;
    Perftools__Profiles__ValueType vt[3]; /* two sample types, the period type */
    Perftools__Profiles__ValueType *vtp[2];
    Perftools__Profiles__Mapping map;
    Perftools__Profiles__Mapping *mapp;
    int64_t comment;
};

static void pprof_fill(const struct agg *a, const struct pprof_meta *m, const struct pprof_plan *p,
                       struct pprof_arena *ar, struct pprof_top *top)
{
    struct pprof_strings t = {
        .s = pprof_take(ar, p->nstrings + PPROF_EXTRA_STRINGS, sizeof(char *)),
    };
    if (p->nstrings == 0)
        pprof_intern(&t, "");
    for (size_t i = 0; i < p->nstrings; i++)
        t.s[t.n++] = (char *)(uintptr_t)agg_string(a, (uint32_t)i);

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
    top->mapp = &top->map;
    prof->n_mapping = 1;
    prof->mapping = &top->mapp;

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

    Perftools__Profiles__Function *fns =
        pprof_take(ar, p->nfunctions, sizeof(Perftools__Profiles__Function));
    Perftools__Profiles__Function **fnp = pprof_take(ar, p->nfunctions, sizeof(void *));
    for (size_t i = 0; i < p->nfunctions; i++) {
        const struct agg_function *f = agg_function(a, i);
        perftools__profiles__function__init(&fns[i]);
        fns[i].id = i + 1;
        fns[i].name = f->name;
        /*
         * A system name equal to the name says nothing more, and go tool
         * pprof then "demangles" the name as C++, deleting every <...>:
         * "<module>", "<lambda>" and "<GC>" would come out empty.
         */
        fns[i].system_name = f->system_name == f->name ? 0 : f->system_name;
        fns[i].filename = f->filename;
        fns[i].start_line = f->start_line;
        fnp[i] = &fns[i];
    }
    prof->n_function = p->nfunctions;
    prof->function = fnp;

    Perftools__Profiles__Location *locs =
        pprof_take(ar, p->nlocations, sizeof(Perftools__Profiles__Location));
    Perftools__Profiles__Location **locp = pprof_take(ar, p->nlocations, sizeof(void *));
    Perftools__Profiles__Line *lines =
        pprof_take(ar, p->nlocations, sizeof(Perftools__Profiles__Line));
    Perftools__Profiles__Line **linep = pprof_take(ar, p->nlocations, sizeof(void *));
    for (size_t i = 0; i < p->nlocations; i++) {
        const struct agg_location *l = agg_location(a, i);
        perftools__profiles__line__init(&lines[i]);
        lines[i].function_id = (uint64_t)l->function + 1;
        lines[i].line = l->line;
        lines[i].column = l->column;
        linep[i] = &lines[i];
        perftools__profiles__location__init(&locs[i]);
        locs[i].id = i + 1;
        locs[i].mapping_id = 1;
        locs[i].n_line = 1;
        locs[i].line = &linep[i];
        locp[i] = &locs[i];
    }
    prof->n_location = p->nlocations;
    prof->location = locp;

    int64_t key_tid = pprof_intern(&t, "thread_id");
    int64_t key_tname = pprof_intern(&t, "thread_name");
    int64_t key_task = p->has_task ? pprof_intern(&t, "task_name") : 0;
    Perftools__Profiles__Sample *samps =
        pprof_take(ar, p->nsamples, sizeof(Perftools__Profiles__Sample));
    Perftools__Profiles__Sample **sampp = pprof_take(ar, p->nsamples, sizeof(void *));
    int64_t *values = pprof_take(ar, p->nsamples, 2 * sizeof(int64_t));
    uint64_t *ids = pprof_take(ar, p->nslots, sizeof(uint64_t));
    Perftools__Profiles__Label *labels =
        pprof_take(ar, p->nlabels, sizeof(Perftools__Profiles__Label));
    Perftools__Profiles__Label **labelp = pprof_take(ar, p->nlabels, sizeof(void *));
    for (size_t i = 0; i < p->nsamples; i++) {
        const struct agg_sample *s = agg_sample(a, i);
        Perftools__Profiles__Sample *out = &samps[i];
        perftools__profiles__sample__init(out);
        out->n_location_id = s->nlocations;
        out->location_id = ids;
        for (uint32_t k = 0; k < s->nlocations; k++)
            *ids++ = (uint64_t)s->locations[k] + 1; /* both leaf first */
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
        (void)pprof_label_value(a, p->nstrings, s->thread_name, &use); /* checked by the plan */
        if (use) {
            l = labels++;
            perftools__profiles__label__init(l);
            l->key = key_tname;
            l->str = s->thread_name;
            *labelp++ = l;
        }
        (void)pprof_label_value(a, p->nstrings, s->task_name, &use);
        if (use) {
            l = labels++;
            perftools__profiles__label__init(l);
            l->key = key_task;
            l->str = s->task_name;
            *labelp++ = l;
        }
        out->n_label = (size_t)(labelp - out->label);
        sampp[i] = out;
    }
    prof->n_sample = p->nsamples;
    prof->sample = sampp;

    prof->n_string_table = t.n;
    prof->string_table = t.s;
}

int pprof_build(const struct agg *a, const struct pprof_meta *m, uint8_t **out, size_t *out_len)
{
    if (!m->value_type || !m->value_type[0] || !m->value_unit || !m->value_unit[0] ||
        m->period_ns < 0)
        return -EINVAL;
    size_t max = m->max_bytes ? m->max_bytes : PPROF_DEFAULT_MAX_BYTES;

    struct pprof_plan plan;
    int err = pprof_plan(a, &plan);
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
    pprof_fill(a, m, &plan, &ar, &top);

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
