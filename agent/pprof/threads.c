/* SPDX-License-Identifier: MIT */
/* threads.c: a window's samples by thread (threads.h). */
#include "base/compat.h"

#include "base/alloc.h"
#include "pprof/threads.h"

static int out_thread_cmp_id(const void *x, const void *y)
{
    const struct out_thread *a = x, *b = y;
    return a->id < b->id ? -1 : a->id > b->id;
}

static int out_thread_cmp_show(const void *x, const void *y)
{
    const struct out_thread *a = x, *b = y;
    if (a->main != b->main)
        return a->main ? -1 : 1;
    if (a->samples != b->samples)
        return a->samples > b->samples ? -1 : 1;
    return out_thread_cmp_id(x, y);
}

static size_t out_threads_find(const struct out_thread *t, size_t n, uint64_t id)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int out_threads_build(const struct agg *a, int64_t pid, struct out_threads *out)
{
    size_t ns = agg_sample_count(a);
    *out = (struct out_threads){0};
    out->t = alloc_calloc(ns ? ns : 1, sizeof(*out->t));
    out->of = alloc_calloc(ns ? ns : 1, sizeof(*out->of));
    uint32_t *rank = alloc_calloc(ns ? ns : 1, sizeof(*rank));
    if (!out->t || !out->of || !rank) {
        alloc_free(rank);
        out_threads_release(out);
        return -ENOMEM;
    }
    /* the distinct ids, sorted; then each sample's place among them */
    size_t n = 0;
    for (size_t i = 0; i < ns; i++)
        out->t[n++] = (struct out_thread){.id = agg_sample(a, i)->thread_id, .name = UINT32_MAX};
    qsort(out->t, n, sizeof(*out->t), out_thread_cmp_id);
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        if (u == 0 || out->t[u - 1].id != out->t[i].id)
            out->t[u++] = out->t[i];
    out->n = u;
    for (size_t i = 0; i < ns; i++) {
        const struct agg_sample *s = agg_sample(a, i);
        size_t k = out_threads_find(out->t, u, s->thread_id);
        struct out_thread *t = &out->t[k];
        if (t->name == UINT32_MAX)
            t->name = s->thread_name;
        t->samples += s->count;
        t->nanos += s->nanos;
        out->of[i] = (uint32_t)k;
    }
    /* display order, and the samples' indices moved with it */
    for (size_t k = 0; k < u; k++) {
        out->t[k].name = out->t[k].name == UINT32_MAX ? 0 : out->t[k].name;
        out->t[k].main = pid > 0 && out->t[k].id == (uint64_t)pid;
    }
    struct out_thread *sorted = alloc_calloc(u ? u : 1, sizeof(*sorted));
    if (!sorted) {
        alloc_free(rank);
        out_threads_release(out);
        return -ENOMEM;
    }
    memcpy(sorted, out->t, u * sizeof(*sorted));
    qsort(sorted, u, sizeof(*sorted), out_thread_cmp_show);
    for (size_t k = 0; k < u; k++)
        rank[out_threads_find(out->t, u, sorted[k].id)] = (uint32_t)k;
    for (size_t i = 0; i < ns; i++)
        out->of[i] = rank[out->of[i]];
    alloc_free(out->t);
    out->t = sorted;
    alloc_free(rank);
    return 0;
}

int out_threads_order(const struct out_threads *th, const struct timeline *tl, uint32_t **order,
                      size_t **start)
{
    size_t n = 0;
    const struct timeline_entry *e = timeline_entries(tl, &n);
    uint32_t *o = alloc_calloc(n ? n : 1, sizeof(*o));
    size_t *st = alloc_calloc(th->n + 1, sizeof(*st));
    size_t *fill = alloc_calloc(th->n + 1, sizeof(*fill));
    if (!o || !st || !fill) {
        alloc_free(o);
        alloc_free(st);
        alloc_free(fill);
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++)
        st[th->of[e[i].sample] + 1]++;
    for (size_t k = 0; k < th->n; k++)
        st[k + 1] += st[k];
    memcpy(fill, st, (th->n + 1) * sizeof(*fill));
    for (size_t i = 0; i < n; i++)
        o[fill[th->of[e[i].sample]]++] = (uint32_t)i;
    alloc_free(fill);
    *order = o;
    *start = st;
    return 0;
}

void out_threads_release(struct out_threads *o)
{
    alloc_free(o->t);
    alloc_free(o->of);
    *o = (struct out_threads){0};
}
