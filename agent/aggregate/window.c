/* SPDX-License-Identifier: MIT */
/*
 * window.c: the bounded window queue and pool between the sampling and the
 * export thread (see window.h).
 */
#include "base/compat.h"

#include <pthread.h>

#include "aggregate/window.h"
#include "base/alloc.h"

struct window_queue {
    pthread_mutex_t mu;
    pthread_cond_t cond;       /* signalled on push and close */
    struct window_item *items; /* ring */
    size_t cap, head, n;
    bool closed;
    struct agg **pool; /* free windows */
    size_t npool;
    size_t pool_cap; /* windows in existence, free or not, at most */
    size_t live;
    struct agg_limits limits;
};

struct agg_limits window_limits_for(uint64_t target_bytes)
{
    struct agg_limits d = agg_limits_default();
    /* rough bytes of one default window, all tables full */
    double full = (double)d.string_bytes + (double)d.strings * 12.0 + (double)d.functions * 40.0 +
                  (double)d.locations * 40.0 + (double)d.samples * 64.0 +
                  (double)d.stack_slots * 4.0 + (double)d.threads * 64.0;
    double f = (double)target_bytes / WINDOW_PER_TARGET / full;
    if (f > 1.0)
        f = 1.0;
#define WINDOW_SCALE(field, min)                                                                   \
    d.field = (size_t)((double)d.field * f) < (min) ? (min) : (size_t)((double)d.field * f)
    WINDOW_SCALE(string_bytes, 65536u);
    WINDOW_SCALE(strings, 1024u);
    WINDOW_SCALE(functions, 1024u);
    WINDOW_SCALE(locations, 4096u);
    WINDOW_SCALE(samples, 4096u);
    WINDOW_SCALE(stack_slots, 65536u);
    WINDOW_SCALE(threads, 256u);
#undef WINDOW_SCALE
    return d;
}

static bool window_limits_equal(const struct agg_limits *a, const struct agg_limits *b)
{
    return a->string_bytes == b->string_bytes && a->strings == b->strings &&
           a->functions == b->functions && a->locations == b->locations &&
           a->samples == b->samples && a->stack_slots == b->stack_slots &&
           a->threads == b->threads && a->spans == b->spans;
}

int window_queue_new(size_t queue_cap, size_t pool_cap, const struct agg_limits *limits,
                     struct window_queue **out)
{
    if (queue_cap == 0 || pool_cap == 0)
        return -EINVAL;
    struct window_queue *q = alloc_calloc(1, sizeof(*q));
    if (!q)
        return -ENOMEM;
    q->items = alloc_calloc(queue_cap, sizeof(*q->items));
    /* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers */
    q->pool = alloc_calloc(pool_cap, sizeof(*q->pool));
    if (!q->items || !q->pool) {
        alloc_free(q->items);
        alloc_free(q->pool);
        alloc_free(q);
        return -ENOMEM;
    }
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&q->cond, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&q->mu, NULL);
    q->cap = queue_cap;
    q->pool_cap = pool_cap;
    q->limits = limits ? *limits : agg_limits_default();
    *out = q;
    return 0;
}

void window_item_release(struct window_queue *q, struct window_item *item)
{
    window_recycle(q, item->agg);
    item->agg = NULL;
    labels_release(&item->meta.labels);
}

void window_queue_free(struct window_queue *q)
{
    if (!q)
        return;
    for (size_t i = 0; i < q->n; i++) {
        struct window_item *it = &q->items[(q->head + i) % q->cap];
        agg_free(it->agg);
        labels_release(&it->meta.labels);
    }
    for (size_t i = 0; i < q->npool; i++)
        agg_free(q->pool[i]);
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->cond);
    alloc_free(q->items);
    alloc_free(q->pool);
    alloc_free(q);
}

int window_get(struct window_queue *q, struct agg **out)
{
    struct agg *a = NULL, *stale = NULL;
    bool create = false;
    int err = 0;
    pthread_mutex_lock(&q->mu);
    if (q->npool) {
        a = q->pool[--q->npool];
        struct agg_limits lim = agg_limits_of(a);
        if (!window_limits_equal(&lim, &q->limits)) {
            stale = a; /* made before the limits changed: a new one instead */
            a = NULL;
            create = true; /* its place among the live windows is the new one's */
        }
    } else if (q->live >= q->pool_cap) {
        err = -EAGAIN;
    } else {
        q->live++; /* reserved; made outside the lock */
        create = true;
    }
    struct agg_limits limits = q->limits;
    pthread_mutex_unlock(&q->mu);
    agg_free(stale);
    if (create) {
        err = agg_new(&limits, &a);
        if (err) {
            pthread_mutex_lock(&q->mu);
            q->live--;
            pthread_mutex_unlock(&q->mu);
        }
    }
    if (!err)
        *out = a;
    return err;
}

void window_recycle(struct window_queue *q, struct agg *a)
{
    if (!a)
        return;
    /* not kept: grown (its memory was one target's need, not what a fresh
     * window needs), made before the limits changed, or spares enough */
    bool small = agg_grows(a) == 0;
    if (small)
        agg_reset(a);
    pthread_mutex_lock(&q->mu);
    PYPROFD_ASSERT(q->npool < q->pool_cap);
    struct agg_limits lim = agg_limits_of(a);
    bool keep = small && window_limits_equal(&lim, &q->limits) && q->npool < WINDOW_POOL_SPARE;
    if (keep)
        q->pool[q->npool++] = a;
    else
        q->live--;
    pthread_mutex_unlock(&q->mu);
    if (!keep)
        agg_free(a);
}

void window_queue_set_limits(struct window_queue *q, const struct agg_limits *limits)
{
    pthread_mutex_lock(&q->mu);
    q->limits = *limits;
    pthread_mutex_unlock(&q->mu);
}

int window_push(struct window_queue *q, struct window_item *item)
{
    int err = 0;
    pthread_mutex_lock(&q->mu);
    if (q->closed)
        err = -EPIPE;
    else if (q->n == q->cap)
        err = -ENOSPC;
    else {
        q->items[(q->head + q->n) % q->cap] = *item;
        q->n++;
        memset(item, 0, sizeof(*item));
        pthread_cond_signal(&q->cond);
    }
    pthread_mutex_unlock(&q->mu);
    return err;
}

int window_pop(struct window_queue *q, uint64_t deadline_ns, struct window_item *out)
{
    struct timespec ts = {.tv_sec = (time_t)(deadline_ns / 1000000000ull),
                          .tv_nsec = (long)(deadline_ns % 1000000000ull)};
    int err = 0;
    pthread_mutex_lock(&q->mu);
    while (q->n == 0 && !q->closed && err == 0) {
        if (pthread_cond_timedwait(&q->cond, &q->mu, &ts) == ETIMEDOUT)
            err = -ETIMEDOUT;
    }
    if (q->n) {
        *out = q->items[q->head];
        memset(&q->items[q->head], 0, sizeof(q->items[q->head]));
        q->head = (q->head + 1) % q->cap;
        q->n--;
        err = 0;
    } else if (q->closed) {
        err = -EPIPE;
    }
    pthread_mutex_unlock(&q->mu);
    return err;
}

int window_grow_pool(struct window_queue *q, size_t pool_cap)
{
    int err = 0;
    pthread_mutex_lock(&q->mu);
    if (pool_cap > q->pool_cap) {
        /* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers */
        struct agg **pool = alloc_realloc(q->pool, pool_cap * sizeof(*pool));
        if (pool) {
            q->pool = pool;
            q->pool_cap = pool_cap;
        } else {
            err = -ENOMEM;
        }
    }
    /* every queued item holds a pool window: as many slots as windows, so a
     * push never finds the queue full while windows are to be had */
    if (!err && pool_cap > q->cap) {
        struct window_item *items = alloc_calloc(pool_cap, sizeof(*items));
        if (items) {
            for (size_t i = 0; i < q->n; i++)
                items[i] = q->items[(q->head + i) % q->cap];
            alloc_free(q->items);
            q->items = items;
            q->head = 0;
            q->cap = pool_cap;
        } else {
            err = -ENOMEM;
        }
    }
    pthread_mutex_unlock(&q->mu);
    return err;
}

void window_close(struct window_queue *q)
{
    pthread_mutex_lock(&q->mu);
    q->closed = true;
    pthread_cond_broadcast(&q->cond);
    pthread_mutex_unlock(&q->mu);
}

void window_counts(struct window_queue *q, size_t *live, size_t *free_windows)
{
    pthread_mutex_lock(&q->mu);
    *live = q->live;
    *free_windows = q->npool;
    pthread_mutex_unlock(&q->mu);
}

size_t window_pending(struct window_queue *q)
{
    pthread_mutex_lock(&q->mu);
    size_t n = q->n;
    pthread_mutex_unlock(&q->mu);
    return n;
}
