/* SPDX-License-Identifier: MIT */
/*
 * dispatch.c: the export thread (see dispatch.h).
 */
#include "base/compat.h"

#include <pthread.h>
#include <stdatomic.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/log.h"
#include "exporters/dispatch.h"
#include "pprof/pprof_build.h"

#define DISPATCH_MAX_EXPORTERS 64u
#define DISPATCH_POP_WAIT_NS   200000000ull /* how long the export thread waits for a window */

/*
 * A set of exporters: the outputs of one config. The export thread uses the
 * current set; a reload makes a new set current and the old one retired. Only
 * the export thread moves retired sets on (between two windows, so never one
 * it is using), stopping them (non-blocking) and handing them to the reaper
 * thread, which waits for them to finish and frees them. Nothing blocks the
 * export thread, and no set is freed while in use.
 */
struct dispatch_set {
    struct exporter ex[DISPATCH_MAX_EXPORTERS];
    size_t n;
    uint64_t max_bytes;
    uint64_t deadline; /* when retired: until when it may deliver */
    struct dispatch_set *next;
};

struct dispatch {
    struct window_queue *q;
    const struct clock *clock;
    pthread_t thread, reaper;
    bool running, reaper_running, reaper_quit;
    uint64_t deadline;  /* set by stop: 0 = none; under mu */
    pthread_mutex_t mu; /* guards everything below that is not atomic */
    pthread_cond_t reap_cond;
    /*
     * Held while a window is counted as encoded and handed to every exporter,
     * and while /metrics renders, so that one scrape shows each window either
     * everywhere or nowhere: encoded = delivered + dropped + queued holds for
     * every endpoint in every scrape. Taken before mu, never inside it.
     */
    pthread_mutex_t publish_mu;
    struct dispatch_set *cur;     /* never NULL */
    struct dispatch_set *retired; /* replaced, not yet stopped (export thread's to move) */
    struct dispatch_set *reaping; /* stopped, for the reaper to finish and free */
    _Atomic uint64_t encoded, encode_errors, too_big, dropped_at_stop, push_errors;
    struct promtext_hist encode_seconds, profile_bytes, window_seconds;
};

/* Two phases: every exporter stops (non-blocking), then each is waited for. */
static void dispatch_set_stop(struct dispatch_set *set, uint64_t deadline)
{
    for (size_t i = 0; i < set->n; i++) {
        if (set->ex[i].ops->stop)
            set->ex[i].ops->stop(set->ex[i].ctx, deadline);
    }
}

/*
 * Hands what the exporters of @a from counted since their last carry to
 * their namesakes in @a to (same name, same carry function: the same kind of
 * series). Called with d->mu held, which keeps @a to from being retired.
 */
static void dispatch_carry(const struct dispatch_set *from, const struct dispatch_set *to)
{
    for (size_t i = 0; from != to && i < from->n; i++) {
        const struct exporter *old = &from->ex[i];
        for (size_t j = 0; old->ops->carry && old->name && j < to->n; j++) {
            const struct exporter *cur = &to->ex[j];
            if (cur->ops->carry == old->ops->carry && cur->name &&
                strcmp(cur->name, old->name) == 0) {
                old->ops->carry(old->ctx, cur->ctx);
                break;
            }
        }
    }
}

/*
 * Stops @a set, waits for it until shortly after @a deadline, carries what its
 * exporters counted meanwhile to the current set, and frees it.
 */
static void dispatch_set_free(struct dispatch *d, struct dispatch_set *set, uint64_t deadline)
{
    if (!set)
        return;
    dispatch_set_stop(set, deadline);
    for (size_t i = 0; i < set->n; i++) {
        if (set->ex[i].ops->shutdown)
            set->ex[i].ops->shutdown(set->ex[i].ctx, deadline);
    }
    pthread_mutex_lock(&d->mu);
    dispatch_carry(set, d->cur);
    pthread_mutex_unlock(&d->mu);
    for (size_t i = 0; i < set->n; i++) {
        if (set->ex[i].ops->free)
            set->ex[i].ops->free(set->ex[i].ctx);
    }
    alloc_free(set);
}

static void dispatch_one(struct dispatch *d, struct window_item *it)
{
    pthread_mutex_lock(&d->mu);
    const struct dispatch_set *set = d->cur; /* stays valid: only this thread retires it */
    pthread_mutex_unlock(&d->mu);
    bool plain = false, labelled = false;
    for (size_t i = 0; i < set->n; i++) {
        plain |= set->ex[i].ops->wants_plain;
        labelled |= !set->ex[i].ops->wants_plain;
    }
    labelled |= set->n == 0; /* still encode: the metrics describe every window */

    const struct window_meta *w = &it->meta;
    struct pprof_part part = {.agg = it->agg, .labels = &w->labels};
    struct pprof_meta m = {
        .value_type = profile_mode_name(w->mode),
        .value_unit = "nanoseconds",
        .period_ns = w->period_ns,
        .time_nanos = w->time_nanos,
        .duration_nanos = w->duration_nanos,
        .max_bytes = (size_t)set->max_bytes,
    };
    struct export_profile p = {.meta = w};
    uint8_t *gz = NULL, *gz_plain = NULL;
    uint64_t t0 = clock_mono(d->clock);
    int err = labelled ? pprof_build_multi(&part, 1, &m, &gz, &p.len) : 0;
    if (!err && plain) {
        part.labels = NULL;
        err = pprof_build_multi(&part, 1, &m, &gz_plain, &p.len_plain);
    }
    promtext_hist_observe(&d->encode_seconds, (double)(clock_mono(d->clock) - t0) / 1e9);
    if (err) {
        atomic_fetch_add(err == -E2BIG ? &d->too_big : &d->encode_errors, 1);
        goto out;
    }
    p.pprof = gz;
    p.pprof_plain = gz_plain;
    pthread_mutex_lock(&d->publish_mu);
    atomic_fetch_add(&d->encoded, 1);
    promtext_hist_observe(&d->profile_bytes, (double)(labelled ? p.len : p.len_plain));
    promtext_hist_observe(&d->window_seconds, (double)w->duration_nanos / 1e9);
    for (size_t i = 0; i < set->n; i++) {
        if (set->ex[i].ops->push(set->ex[i].ctx, &p))
            atomic_fetch_add(&d->push_errors, 1);
    }
    pthread_mutex_unlock(&d->publish_mu);
out:
    alloc_free(gz);
    alloc_free(gz_plain);
}

/*
 * Moves the sets a reload replaced to the reaper. Each gets DISPATCH_RETIRE_NS
 * to deliver what it still holds (the new set receives everything from now
 * on); what is left then is counted by the exporter as dropped at shutdown.
 */
static void dispatch_retire(struct dispatch *d)
{
    pthread_mutex_lock(&d->mu);
    struct dispatch_set *list = d->retired;
    d->retired = NULL;
    pthread_mutex_unlock(&d->mu);
    while (list) {
        struct dispatch_set *set = list;
        list = list->next;
        set->deadline = clock_mono(d->clock) + DISPATCH_RETIRE_NS;
        dispatch_set_stop(set, set->deadline);
        pthread_mutex_lock(&d->mu);
        set->next = d->reaping;
        d->reaping = set;
        pthread_cond_signal(&d->reap_cond);
        pthread_mutex_unlock(&d->mu);
    }
}

static void *dispatch_reaper(void *arg)
{
    struct dispatch *d = arg;
    pthread_mutex_lock(&d->mu);
    for (;;) {
        while (!d->reaping && !d->reaper_quit)
            pthread_cond_wait(&d->reap_cond, &d->mu);
        struct dispatch_set *set = d->reaping;
        if (!set)
            break; /* quit, nothing left */
        d->reaping = set->next;
        pthread_mutex_unlock(&d->mu);
        dispatch_set_free(d, set, set->deadline);
        pthread_mutex_lock(&d->mu);
    }
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

static void *dispatch_main(void *arg)
{
    struct dispatch *d = arg;
    for (;;) {
        dispatch_retire(d);
        pthread_mutex_lock(&d->mu);
        uint64_t deadline = d->deadline;
        pthread_mutex_unlock(&d->mu);
        struct window_item it;
        /* the queue's wait is on the system's clock, whatever d->clock is */
        int err = window_pop(d->q, clock_mono_now() + DISPATCH_POP_WAIT_NS, &it);
        if (err == -EPIPE)
            break;
        if (err)
            continue;
        if (deadline && clock_mono(d->clock) >= deadline)
            atomic_fetch_add(&d->dropped_at_stop, 1);
        else
            dispatch_one(d, &it);
        window_item_release(d->q, &it);
    }
    dispatch_retire(d);
    return NULL;
}

static struct dispatch_set *dispatch_set_new(const struct exporter *ex, size_t n,
                                             uint64_t max_bytes)
{
    struct dispatch_set *set = alloc_calloc(1, sizeof(*set));
    if (set) {
        if (n)
            memcpy(set->ex, ex, n * sizeof(*ex));
        set->n = n;
        set->max_bytes = max_bytes;
    }
    return set;
}

int dispatch_new(struct window_queue *q, uint64_t max_profile_bytes, struct dispatch **out)
{
    struct dispatch *d = alloc_calloc(1, sizeof(*d));
    if (!d)
        return -ENOMEM;
    d->q = q;
    d->clock = &clock_system;
    d->cur = dispatch_set_new(NULL, 0, max_profile_bytes);
    static const double secs[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                  0.05,   0.1,   0.25,   0.5,   1,    2.5};
    static const double windows[] = {1, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600};
    static const double bytes[] = {1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216};
    if (!d->cur || promtext_hist_init(&d->encode_seconds, secs, PYPROFD_ARRAY_SIZE(secs)) ||
        promtext_hist_init(&d->profile_bytes, bytes, PYPROFD_ARRAY_SIZE(bytes)) ||
        promtext_hist_init(&d->window_seconds, windows, PYPROFD_ARRAY_SIZE(windows))) {
        alloc_free(d->cur);
        alloc_free(d);
        return -ENOMEM;
    }
    pthread_mutex_init(&d->mu, NULL);
    pthread_mutex_init(&d->publish_mu, NULL);
    pthread_cond_init(&d->reap_cond, NULL);
    *out = d;
    return 0;
}

void dispatch_set_clock(struct dispatch *d, const struct clock *clock)
{
    d->clock = clock;
}

int dispatch_set_exporters(struct dispatch *d, const struct exporter *ex, size_t n,
                           uint64_t max_profile_bytes)
{
    if (n > DISPATCH_MAX_EXPORTERS)
        return -E2BIG;
    struct dispatch_set *set = dispatch_set_new(ex, n, max_profile_bytes);
    if (!set)
        return -ENOMEM;
    pthread_mutex_lock(&d->mu);
    struct dispatch_set *old = d->cur;
    d->cur = set;
    /* from this scrape on the new set is shown, with what the old one counted */
    dispatch_carry(old, set);
    bool running = d->running;
    if (running) { /* the export thread may be using it: it retires it itself */
        old->next = d->retired;
        d->retired = old;
    }
    pthread_mutex_unlock(&d->mu);
    if (!running)
        dispatch_set_free(d, old, clock_mono(d->clock));
    return 0;
}

int dispatch_start(struct dispatch *d)
{
    int err = pthread_create(&d->reaper, NULL, dispatch_reaper, d);
    if (err)
        return -err;
    err = pthread_create(&d->thread, NULL, dispatch_main, d);
    pthread_mutex_lock(&d->mu);
    d->reaper_running = true;
    d->running = err == 0;
    pthread_mutex_unlock(&d->mu);
    return -err;
}

void dispatch_stop(struct dispatch *d, uint64_t deadline_ns)
{
    pthread_mutex_lock(&d->mu);
    bool running = d->running, reaper = d->reaper_running;
    d->deadline = deadline_ns;
    pthread_mutex_unlock(&d->mu);
    window_close(d->q);
    if (running) {
        pthread_join(d->thread, NULL); /* what is queued went out until the deadline */
        pthread_mutex_lock(&d->mu);
        d->running = false;
        pthread_mutex_unlock(&d->mu);
    }
    /* the current outputs and those still reaping all end by the deadline */
    pthread_mutex_lock(&d->mu);
    struct dispatch_set *cur = d->cur, *retired = d->retired;
    d->retired = NULL;
    for (struct dispatch_set *s = d->reaping; s; s = s->next) {
        if (s->deadline > deadline_ns)
            s->deadline = deadline_ns;
        dispatch_set_stop(s, deadline_ns);
    }
    d->cur = dispatch_set_new(NULL, 0, cur->max_bytes);
    if (!d->cur) { /* keep a valid (empty) current set */
        d->cur = cur;
        cur = NULL;
        for (size_t i = 0; i < d->cur->n; i++)
            if (d->cur->ex[i].ops->stop)
                d->cur->ex[i].ops->stop(d->cur->ex[i].ctx, deadline_ns);
    }
    d->reaper_quit = true;
    pthread_cond_signal(&d->reap_cond);
    pthread_mutex_unlock(&d->mu);
    if (cur)
        dispatch_set_stop(cur, deadline_ns);
    for (struct dispatch_set *s = retired; s; s = s->next)
        dispatch_set_stop(s, deadline_ns);
    if (reaper) {
        pthread_join(d->reaper, NULL);
        pthread_mutex_lock(&d->mu);
        d->reaper_running = false;
        pthread_mutex_unlock(&d->mu);
    }
    dispatch_set_free(d, cur, deadline_ns);
    while (retired) {
        struct dispatch_set *next = retired->next;
        dispatch_set_free(d, retired, deadline_ns);
        retired = next;
    }
}

void dispatch_free(struct dispatch *d)
{
    if (!d)
        return;
    dispatch_stop(d, clock_mono(d->clock));
    while (d->reaping) { /* only when the reaper never ran */
        struct dispatch_set *next = d->reaping->next;
        dispatch_set_free(d, d->reaping, clock_mono(d->clock));
        d->reaping = next;
    }
    dispatch_set_free(d, d->cur, clock_mono(d->clock));
    pthread_mutex_destroy(&d->mu);
    pthread_mutex_destroy(&d->publish_mu);
    pthread_cond_destroy(&d->reap_cond);
    alloc_free(d);
}

int dispatch_metrics(struct dispatch *d, struct promtext *w)
{
    /*
     * A window being handed out waits for exporters that only queue it, or
     * for the file store's write and fsync. A disk that hangs must not hang
     * /metrics: after DISPATCH_SCRAPE_WAIT_NS the scrape goes on unlocked and
     * may show that one window in some places and not yet in others.
     */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until); /* timedlock, not clocklock: TSan knows it */
    until.tv_sec += (time_t)(DISPATCH_SCRAPE_WAIT_NS / 1000000000u);
    bool locked = pthread_mutex_timedlock(&d->publish_mu, &until) == 0;
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
    pthread_mutex_lock(&d->mu); /* the current set cannot be retired meanwhile */
    for (size_t i = 0; !err && i < d->cur->n; i++) {
        if (d->cur->ex[i].ops->metrics)
            err = d->cur->ex[i].ops->metrics(d->cur->ex[i].ctx, w);
    }
    pthread_mutex_unlock(&d->mu);
    if (locked)
        pthread_mutex_unlock(&d->publish_mu);
    return err;
}
