/* SPDX-License-Identifier: MIT */
/*
 * dispatch.c: the export thread (see dispatch.h).
 */
#include "base/compat.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "base/alloc.h"
#include "base/log.h"
#include "exporters/dispatch.h"
#include "pprof/pprof_build.h"

#define DISPATCH_MAX_EXPORTERS 64u
#define DISPATCH_RETIRE_NS     5000000000ull /* a replaced exporter's time to deliver */

struct dispatch {
    struct window_queue *q;
    pthread_t thread;
    bool running;
    uint64_t deadline;  /* set by stop: 0 = none; under mu */
    pthread_mutex_t mu; /* guards the exporter sets and the deadline */
    struct exporter ex[DISPATCH_MAX_EXPORTERS];
    size_t nex;
    struct exporter retired[DISPATCH_MAX_EXPORTERS]; /* replaced, to free on the thread */
    size_t nretired;
    uint64_t max_bytes;
    _Atomic uint64_t encoded, encode_errors, too_big, dropped_at_stop, push_errors;
    struct promtext_hist encode_seconds, profile_bytes, window_seconds;
};

static void dispatch_free_set(struct exporter *ex, size_t n, uint64_t deadline)
{
    for (size_t i = 0; i < n; i++) {
        if (ex[i].ops->shutdown)
            ex[i].ops->shutdown(ex[i].ctx, deadline);
        if (ex[i].ops->free)
            ex[i].ops->free(ex[i].ctx);
    }
}

static void dispatch_one(struct dispatch *d, struct window_item *it)
{
    pthread_mutex_lock(&d->mu);
    struct exporter ex[DISPATCH_MAX_EXPORTERS];
    size_t n = d->nex;
    memcpy(ex, d->ex, n * sizeof(*ex));
    pthread_mutex_unlock(&d->mu);
    /* the sets only change on this thread's watch (retired sets are freed here) */
    bool plain = false, labelled = false;
    for (size_t i = 0; i < n; i++) {
        plain |= ex[i].ops->wants_plain;
        labelled |= !ex[i].ops->wants_plain;
    }
    labelled |= n == 0; /* still encode: the metrics describe every window */

    struct pprof_part part = {.agg = it->agg, .labels = &it->labels};
    struct pprof_meta m = {
        .value_type = it->value_type,
        .value_unit = "nanoseconds",
        .period_ns = it->period_ns,
        .time_nanos = it->time_nanos,
        .duration_nanos = it->duration_nanos,
        .max_bytes = (size_t)d->max_bytes,
    };
    struct export_profile p = {.item = it};
    uint8_t *gz = NULL, *gz_plain = NULL;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    int err = labelled ? pprof_build_multi(&part, 1, &m, &gz, &p.len) : 0;
    if (!err && plain) {
        part.labels = NULL;
        err = pprof_build_multi(&part, 1, &m, &gz_plain, &p.len_plain);
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    promtext_hist_observe(&d->encode_seconds,
                          (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9);
    if (err) {
        atomic_fetch_add(err == -E2BIG ? &d->too_big : &d->encode_errors, 1);
        goto out;
    }
    p.pprof = gz;
    p.pprof_plain = gz_plain;
    atomic_fetch_add(&d->encoded, 1);
    promtext_hist_observe(&d->profile_bytes, (double)(labelled ? p.len : p.len_plain));
    promtext_hist_observe(&d->window_seconds, (double)it->duration_nanos / 1e9);
    for (size_t i = 0; i < n; i++) {
        if (ex[i].ops->push(ex[i].ctx, &p))
            atomic_fetch_add(&d->push_errors, 1);
    }
out:
    alloc_free(gz);
    alloc_free(gz_plain);
}

/*
 * Frees the exporters a reload replaced. Each gets DISPATCH_RETIRE_NS to
 * deliver what it still holds (the new set receives everything from now on);
 * what is left then is counted by the exporter as dropped at shutdown.
 */
static void dispatch_reap(struct dispatch *d)
{
    struct exporter old[DISPATCH_MAX_EXPORTERS];
    pthread_mutex_lock(&d->mu);
    size_t n = d->nretired;
    memcpy(old, d->retired, n * sizeof(*old));
    d->nretired = 0;
    pthread_mutex_unlock(&d->mu);
    if (n)
        dispatch_free_set(old, n, window_now_ns() + DISPATCH_RETIRE_NS);
}

static void *dispatch_main(void *arg)
{
    struct dispatch *d = arg;
    for (;;) {
        dispatch_reap(d);
        pthread_mutex_lock(&d->mu);
        uint64_t deadline = d->deadline;
        pthread_mutex_unlock(&d->mu);
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
        struct window_item it;
        int err = window_pop(d->q, now + 200000000ull, &it);
        if (err == -EPIPE)
            break;
        if (err)
            continue;
        if (deadline && window_now_ns() >= deadline)
            atomic_fetch_add(&d->dropped_at_stop, 1);
        else
            dispatch_one(d, &it);
        window_item_release(d->q, &it);
    }
    dispatch_reap(d);
    return NULL;
}

int dispatch_new(struct window_queue *q, uint64_t max_profile_bytes, struct dispatch **out)
{
    struct dispatch *d = alloc_calloc(1, sizeof(*d));
    if (!d)
        return -ENOMEM;
    d->q = q;
    d->max_bytes = max_profile_bytes;
    static const double secs[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                  0.05,   0.1,   0.25,   0.5,   1,    2.5};
    static const double windows[] = {1, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600};
    static const double bytes[] = {1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216};
    if (promtext_hist_init(&d->encode_seconds, secs, PYPROFD_ARRAY_SIZE(secs)) ||
        promtext_hist_init(&d->profile_bytes, bytes, PYPROFD_ARRAY_SIZE(bytes)) ||
        promtext_hist_init(&d->window_seconds, windows, PYPROFD_ARRAY_SIZE(windows))) {
        alloc_free(d);
        return -EINVAL;
    }
    pthread_mutex_init(&d->mu, NULL);
    *out = d;
    return 0;
}

int dispatch_set_exporters(struct dispatch *d, const struct exporter *ex, size_t n,
                           uint64_t max_profile_bytes)
{
    if (n > DISPATCH_MAX_EXPORTERS)
        return -E2BIG;
    struct exporter old[DISPATCH_MAX_EXPORTERS];
    size_t nold = 0;
    pthread_mutex_lock(&d->mu);
    if (d->nretired + d->nex > DISPATCH_MAX_EXPORTERS || !d->running) {
        /* not running (or a burst of reloads): free the old set here */
        memcpy(old, d->ex, d->nex * sizeof(*old));
        nold = d->nex;
    } else {
        memcpy(d->retired + d->nretired, d->ex, d->nex * sizeof(*d->ex));
        d->nretired += d->nex;
    }
    memcpy(d->ex, ex, n * sizeof(*ex));
    d->nex = n;
    d->max_bytes = max_profile_bytes;
    pthread_mutex_unlock(&d->mu);
    dispatch_free_set(old, nold, 0);
    return 0;
}

int dispatch_start(struct dispatch *d)
{
    int err = pthread_create(&d->thread, NULL, dispatch_main, d);
    if (err)
        return -err;
    pthread_mutex_lock(&d->mu);
    d->running = true;
    pthread_mutex_unlock(&d->mu);
    return 0;
}

void dispatch_stop(struct dispatch *d, uint64_t deadline_ns)
{
    pthread_mutex_lock(&d->mu);
    bool running = d->running;
    d->deadline = deadline_ns;
    pthread_mutex_unlock(&d->mu);
    window_close(d->q);
    if (running) {
        pthread_join(d->thread, NULL);
        pthread_mutex_lock(&d->mu);
        d->running = false;
        pthread_mutex_unlock(&d->mu);
    }
    pthread_mutex_lock(&d->mu);
    struct exporter ex[DISPATCH_MAX_EXPORTERS];
    size_t n = d->nex;
    memcpy(ex, d->ex, n * sizeof(*ex));
    d->nex = 0;
    pthread_mutex_unlock(&d->mu);
    dispatch_free_set(ex, n, deadline_ns);
}

void dispatch_free(struct dispatch *d)
{
    if (!d)
        return;
    dispatch_stop(d, window_now_ns());
    dispatch_reap(d);
    pthread_mutex_destroy(&d->mu);
    alloc_free(d);
}

int dispatch_metrics(struct dispatch *d, struct promtext *w)
{
    int err = promtext_family(w, "pyprofd_profiles_encoded_total", PROMTEXT_COUNTER,
                              "Profile windows encoded to pprof.");
    if (!err)
        err = promtext_sample(w, NULL, NULL, 0, (double)atomic_load(&d->encoded));
    if (!err)
        err = promtext_family(w, "pyprofd_profiles_encode_errors_total", PROMTEXT_COUNTER,
                              "Profile windows that could not be encoded, by reason.");
    if (!err)
        err = promtext_sample(w, NULL, PROMTEXT_LABELS({"reason", "too_large"}),
                              (double)atomic_load(&d->too_big));
    if (!err)
        err = promtext_sample(w, NULL, PROMTEXT_LABELS({"reason", "other"}),
                              (double)atomic_load(&d->encode_errors));
    if (!err)
        err = promtext_family(w, "pyprofd_profiles_dropped_at_shutdown_total", PROMTEXT_COUNTER,
                              "Profile windows still queued when the shutdown deadline passed.");
    if (!err)
        err = promtext_sample(w, NULL, NULL, 0, (double)atomic_load(&d->dropped_at_stop));
    if (!err)
        err = promtext_family(w, "pyprofd_export_errors_total", PROMTEXT_COUNTER,
                              "Profiles an output refused (see the output's own metrics).");
    if (!err)
        err = promtext_sample(w, NULL, NULL, 0, (double)atomic_load(&d->push_errors));
    if (!err)
        err = promtext_family(w, "pyprofd_profile_encode_duration_seconds", PROMTEXT_HISTOGRAM,
                              "Time to encode one profile window to gzipped pprof.");
    if (!err)
        err = promtext_histogram(w, NULL, 0, &d->encode_seconds);
    if (!err)
        err = promtext_family(w, "pyprofd_profile_size_bytes", PROMTEXT_HISTOGRAM,
                              "Size of each encoded (gzipped) profile window.");
    if (!err)
        err = promtext_histogram(w, NULL, 0, &d->profile_bytes);
    if (!err)
        err = promtext_family(w, "pyprofd_profile_window_duration_seconds", PROMTEXT_HISTOGRAM,
                              "Time each encoded profile covers: profile_interval, or less for "
                              "a target that exited, a reload or a shutdown.");
    if (!err)
        err = promtext_histogram(w, NULL, 0, &d->window_seconds);
    pthread_mutex_lock(&d->mu);
    for (size_t i = 0; !err && i < d->nex; i++) {
        if (d->ex[i].ops->metrics)
            err = d->ex[i].ops->metrics(d->ex[i].ctx, w);
    }
    pthread_mutex_unlock(&d->mu);
    return err;
}
