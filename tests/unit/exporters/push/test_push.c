/* SPDX-License-Identifier: MIT */
/* Tests for exporters/push/push.c: the delivery engine with a fake transport
 * (the transport ops are the seam) and an injected clock: order, retries with
 * backoff and Retry-After, permanent drops, queue caps, age and retry limits,
 * write relabeling, stop and shutdown with a deadline (non-blocking stop, sends
 * aborted at the deadline), counters carried over to a replacement by the
 * dispatcher at a reload, and the metrics text of several endpoints in one
 * document. "Nothing happened yet" is never a real-time pause: with the
 * sender waiting it is push_wait_parked() (parked()), with the sender inside
 * a send that polls abort() it is wait_not_aborted(). */
#include "base/compat.h"

#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "cmocka_wrap.h"

#include "base/alloc.h"
#include "base/clock.h"
#include "config/relabel.h"
#include "exporters/dispatch.h"
#include "exporters/push/push.h"

#define SEC 1000000000ull
#define T0  ((int64_t)1795974800 * 1000000000ll) /* "now" in the fake real clock */

/* --- fake clock ------------------------------------------------------------ */

static _Atomic uint64_t fake_mono;
static _Atomic int64_t fake_real;

static uint64_t fake_clock_mono(void *arg)
{
    (void)arg;
    return atomic_load(&fake_mono);
}

static int64_t fake_clock_real(void *arg)
{
    (void)arg;
    return atomic_load(&fake_real);
}

static uint64_t fake_clock_random(void *arg)
{
    (void)arg;
    return 0;
}

/* the exporters' clock, and the dispatcher's in the reload test */
static const struct clock fake_clock = {
    .mono_ns = fake_clock_mono, .real_ns = fake_clock_real, .thread_cpu_ns = fake_clock_mono};

static void advance_to(uint64_t t)
{
    atomic_store(&fake_mono, t);
}

/* --- fake transport -------------------------------------------------------- */

struct call {
    uint64_t at; /* fake mono time of the send */
    uint64_t timeout;
    int64_t time_nanos;
    char name[32]; /* __name__ */
    char job[32];
    bool has_meta;
    size_t len;
};

struct fake_tx {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct push_result script[16]; /* outcomes of the first calls; then "always" */
    size_t nscript;
    struct push_result always;
    struct call calls[256];
    size_t ncalls;
    bool block;          /* the next send waits until unblocked */
    bool until_abort;    /* a send waits until its request's abort() says so */
    size_t entered;      /* sends started */
    size_t aborted;      /* sends that ended because abort() said so */
    size_t abort_epoch;  /* bumped by wait_not_aborted() */
    size_t said_no;      /* abort() polls begun in the current epoch that answered no */
    uint64_t advance_ns; /* each send moves the clock by this much */
    _Atomic int *freed;
};

static struct fake_tx *tx;
static _Atomic int tx_freed;
/* sends ended by abort(), every transport: counted here too, as a test may
 * look after its transport was freed with its exporter */
static _Atomic size_t tx_aborted_all;

static struct push_result result(enum push_outcome o, const char *code, uint64_t retry_after);

static void fake_send(void *tctx, const struct push_request *r, uint64_t timeout_ns,
                      struct push_result *res)
{
    struct fake_tx *t = tctx;
    pthread_mutex_lock(&t->mu);
    t->entered++;
    pthread_cond_broadcast(&t->cv);
    while (t->block)
        pthread_cond_wait(&t->cv, &t->mu);
    if (t->until_abort) {
        /* like a transport polling abort() while the server says nothing */
        bool abort = false;
        while (!abort) {
            size_t epoch = t->abort_epoch;
            pthread_mutex_unlock(&t->mu);
            abort = r->abort(r->abort_arg);
            pthread_mutex_lock(&t->mu);
            if (!abort) {
                if (epoch == t->abort_epoch)
                    t->said_no++;
                pthread_mutex_unlock(&t->mu);
                usleep(1000);
                pthread_mutex_lock(&t->mu);
            }
        }
        t->aborted++;
        atomic_fetch_add(&tx_aborted_all, 1);
        *res = result(PUSH_RETRY, "aborted", 0);
        pthread_cond_broadcast(&t->cv);
        pthread_mutex_unlock(&t->mu);
        return;
    }
    size_t i = t->ncalls;
    if (i < PYPROFD_ARRAY_SIZE(t->calls)) {
        struct call *c = &t->calls[i];
        c->at = atomic_load(&fake_mono);
        c->timeout = timeout_ns;
        c->time_nanos = r->time_nanos;
        c->len = r->len;
        const char *n = labels_get(r->labels, "__name__");
        const char *j = labels_get(r->labels, "job");
        snprintf(c->name, sizeof(c->name), "%s", n ? n : "");
        snprintf(c->job, sizeof(c->job), "%s", j ? j : "");
        for (size_t k = 0; k < r->labels->n; k++)
            c->has_meta |= strncmp(r->labels->v[k].name, "__meta", 6) == 0;
        t->ncalls++;
    }
    *res = i < t->nscript ? t->script[i] : t->always;
    if (t->advance_ns)
        atomic_fetch_add(&fake_mono, t->advance_ns);
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
}

static void fake_free(void *tctx)
{
    struct fake_tx *t = tctx;
    atomic_fetch_add(&tx_freed, 1);
    pthread_cond_destroy(&t->cv);
    pthread_mutex_destroy(&t->mu);
    alloc_free(t);
}

static const struct push_transport_ops fake_ops = {
    .kind = "fake", .send = fake_send, .free = fake_free};

static struct push_result result(enum push_outcome o, const char *code, uint64_t retry_after)
{
    struct push_result r = {.outcome = o, .retry_after_ns = retry_after};
    snprintf(r.code, sizeof(r.code), "%s", code);
    snprintf(r.message, sizeof(r.message), "%s", o == PUSH_OK ? "" : "server says no");
    return r;
}

static size_t ncalls(void)
{
    pthread_mutex_lock(&tx->mu);
    size_t n = tx->ncalls;
    pthread_mutex_unlock(&tx->mu);
    return n;
}

/* Waits (real time, up to 5 s) until the transport saw @a n calls. */
static void wait_calls(size_t n)
{
    pthread_mutex_lock(&tx->mu);
    for (int i = 0; i < 5000 && tx->ncalls < n; i++) {
        pthread_mutex_unlock(&tx->mu);
        usleep(1000);
        pthread_mutex_lock(&tx->mu);
    }
    size_t got = tx->ncalls;
    pthread_mutex_unlock(&tx->mu);
    assert_int_equal(got, n);
}

/*
 * "Nothing happened yet" for a sender inside a send of transport @a t that
 * polls abort() (until_abort), where push_wait_parked() cannot tell: waits
 * (real time, up to 5 s) until abort() has been asked once more, the poll
 * having begun after this call did, and said no. That answer was given on
 * everything the test did before the call (the stop, the clock), so the
 * send cannot be aborted until the test changes one of them; a poll that
 * began earlier does not count. Returns early if the send was aborted
 * meanwhile (which the caller's naborted() then shows).
 */
static void wait_not_aborted(struct fake_tx *t)
{
    pthread_mutex_lock(&t->mu);
    t->abort_epoch++;
    t->said_no = 0;
    const size_t aborted = t->aborted;
    for (int i = 0; i < 5000 && t->said_no == 0 && t->aborted == aborted; i++) {
        pthread_mutex_unlock(&t->mu);
        usleep(1000);
        pthread_mutex_lock(&t->mu);
    }
    bool answered = t->said_no > 0 || t->aborted != aborted;
    pthread_mutex_unlock(&t->mu);
    assert_true(answered);
}

static void set_block(bool on)
{
    pthread_mutex_lock(&tx->mu);
    tx->block = on;
    pthread_cond_broadcast(&tx->cv);
    pthread_mutex_unlock(&tx->mu);
}

/* Waits until the sender of @a ex is parked (push_wait_parked()): nothing
 * happens before the fake clock reaches the time returned (UINT64_MAX: idle). */
static uint64_t parked(const struct exporter *ex)
{
    uint64_t until = 0;
    assert_int_equal(push_wait_parked(ex->ctx, &until), 0);
    return until;
}

/* --- exporter helpers ------------------------------------------------------- */

static struct config_remote_write rw_defaults(void)
{
    struct config_remote_write rw = {
        .name = (char *)"ep",
        .remote_timeout_ns = 10 * SEC,
        .queue_max_profiles = 100,
        .queue_max_bytes = 1 << 20,
        .min_backoff_ns = 1 * SEC,
        .max_backoff_ns = 8 * SEC,
        .max_retries = 10,
    };
    return rw;
}

/* The exporter whose ops->metrics metric() and count_samples() read: the last one made. */
static struct exporter shown;

/* An exporter on a new fake transport, which `tx` then points at. */
static struct exporter make_clock(struct config_remote_write *rw, uint64_t max_age,
                                  const struct clock *clock)
{
    tx = alloc_calloc(1, sizeof(*tx));
    assert_non_null(tx);
    pthread_mutex_init(&tx->mu, NULL);
    pthread_cond_init(&tx->cv, NULL);
    tx->always = result(PUSH_OK, "200", 0);
    struct exporter ex = {0};
    assert_int_equal(push_exporter_new(rw, &fake_ops, tx, max_age, clock, &ex), 0);
    if (clock)
        push_set_random(ex.ctx, fake_clock_random, NULL);
    assert_non_null(ex.ops->metrics);
    assert_non_null(ex.ops->carry);
    assert_string_equal(ex.name, rw->name);
    assert_true(ex.ops->wants_plain);
    assert_non_null(ex.ops->stop);
    shown = ex;
    return ex;
}

static struct exporter make(struct config_remote_write *rw, uint64_t max_age)
{
    return make_clock(rw, max_age, &fake_clock);
}

static void destroy(struct exporter *ex)
{
    int before = atomic_load(&tx_freed);
    set_block(false);
    ex->ops->shutdown(ex->ctx, 0);
    ex->ops->free(ex->ctx);
    assert_int_equal(atomic_load(&tx_freed), before + 1);
    tx = NULL;
}

static int push_one(struct exporter *ex, const char *job, const char *mode_name, int64_t t,
                    size_t len)
{
    enum profile_mode mode = PROFILE_WALL;
    assert_int_equal(profile_mode_parse(mode_name, &mode), 0);
    static uint8_t bytes[8192], plain[8192];
    memset(bytes, 0xaa, sizeof(bytes));
    memset(plain, 0x55, sizeof(plain));
    struct window_meta it = {
        .mode = mode, .time_nanos = t, .period_ns = 10000000, .duration_nanos = (int64_t)SEC};
    snprintf(it.job, sizeof(it.job), "%s", job);
    assert_int_equal(labels_set(&it.labels, "job", job), 0);
    assert_int_equal(labels_set(&it.labels, "service_name", "svc"), 0);
    struct export_profile p = {
        .meta = &it, .pprof = bytes, .len = len + 1, .pprof_plain = plain, .len_plain = len};
    int err = ex->ops->push(ex->ctx, &p);
    labels_release(&it.labels);
    return err;
}

/* The metrics document: @a d's, or the shown exporter's when @a d is NULL (a writer to free). */
static struct promtext *scrape(struct dispatch *d)
{
    struct promtext *w = NULL;
    assert_int_equal(promtext_new(0, &w), 0);
    if (d)
        assert_int_equal(dispatch_metrics(d, w), 0);
    else
        assert_int_equal(shown.ops->metrics(shown.ctx, w), 0);
    return w;
}

/* The value of sample @a sample ("name{labels}") in scrape(@a dp), or -1. */
static double metric_of(struct dispatch *dp, const char *sample)
{
    struct promtext *w = scrape(dp);
    size_t len = 0;
    const char *d = promtext_data(w, &len);
    double v = -1;
    size_t sl = strlen(sample);
    for (const char *l = d; l < d + len;) {
        const char *nl = memchr(l, '\n', (size_t)(d + len - l));
        if (!nl)
            break;
        if ((size_t)(nl - l) > sl && strncmp(l, sample, sl) == 0 && l[sl] == ' ')
            v = strtod(l + sl + 1, NULL);
        l = nl + 1;
    }
    promtext_free(w);
    return v;
}

/* The value of sample @a sample in the shown exporter's metrics, or -1. */
static double metric(const char *sample)
{
    return metric_of(NULL, sample);
}

/* How many samples of scrape(@a dp) start with @a prefix. */
static size_t count_samples(struct dispatch *dp, const char *prefix)
{
    struct promtext *w = scrape(dp);
    size_t len = 0, n = 0;
    const char *d = promtext_data(w, &len);
    size_t pl = strlen(prefix);
    for (const char *l = d; l < d + len;) {
        const char *nl = memchr(l, '\n', (size_t)(d + len - l));
        if (!nl)
            break;
        n += (size_t)(nl - l) >= pl && strncmp(l, prefix, pl) == 0;
        l = nl + 1;
    }
    promtext_free(w);
    return n;
}

/* Waits (real time, up to 5 s) until transport @a t started @a n sends. */
static void wait_entered(struct fake_tx *t, size_t n)
{
    pthread_mutex_lock(&t->mu);
    for (int i = 0; i < 5000 && t->entered < n; i++) {
        pthread_mutex_unlock(&t->mu);
        usleep(1000);
        pthread_mutex_lock(&t->mu);
    }
    size_t got = t->entered;
    pthread_mutex_unlock(&t->mu);
    assert_int_equal(got, n);
}

static size_t naborted(struct fake_tx *t)
{
    pthread_mutex_lock(&t->mu);
    size_t n = t->aborted;
    pthread_mutex_unlock(&t->mu);
    return n;
}

static void set_always(struct push_result r)
{
    pthread_mutex_lock(&tx->mu);
    tx->always = r;
    pthread_mutex_unlock(&tx->mu);
}

/* Profiles dropped for any reason. */
static double dropped_total(void)
{
    static const char *const reasons[] = {"queue_full",        "too_old",   "permanent_error",
                                          "retries_exhausted", "relabeled", "shutdown"};
    double n = 0;
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(reasons); i++) {
        char sample[160];
        snprintf(sample, sizeof(sample),
                 "pyprofd_push_dropped_profiles_total{endpoint=\"ep\",reason=\"%s\"}", reasons[i]);
        double v = metric(sample);
        assert_true(v >= 0);
        n += v;
    }
    return n;
}

/* Every profile offered is delivered, dropped (counted) or queued: exactly. */
static void assert_accounted(size_t produced)
{
    double pushed = metric("pyprofd_push_profiles_total{endpoint=\"ep\"}");
    double queued = metric("pyprofd_push_queue_length{endpoint=\"ep\"}");
    assert_int_equal((uint64_t)(pushed + dropped_total() + queued), produced);
}

static double dropped(const char *reason)
{
    char sample[160];
    snprintf(sample, sizeof(sample),
             "pyprofd_push_dropped_profiles_total{endpoint=\"ep\",reason=\"%s\"}", reason);
    return metric(sample);
}

/*
 * A fake-time run: bursts of @a burst profiles every @a interval from @a t0,
 * @a nbursts of them; before each burst the fake clock is moved from one
 * attempt of the sender to the next (so every attempt is made at the time it
 * was scheduled for), the receiver being down (503) until @a up and up from
 * then on. The accounting is checked whenever the sender is parked.
 */
struct outage {
    uint64_t t0, interval, up;
    unsigned burst, nbursts;
    size_t produced;
    bool is_up;
};

static void outage_step_to(struct exporter *ex, struct outage *o, uint64_t t)
{
    for (;;) {
        uint64_t until = parked(ex);
        assert_accounted(o->produced);
        uint64_t next = until < t ? until : t;
        if (!o->is_up && next >= o->up) {
            advance_to(o->up);
            set_always(result(PUSH_OK, "200", 0));
            o->is_up = true;
            continue;
        }
        advance_to(next);
        if (next == t)
            return;
    }
}

static void outage_run(struct exporter *ex, struct outage *o)
{
    set_always(result(PUSH_RETRY, "503", 0));
    for (unsigned k = 1; k <= o->nbursts; k++) {
        uint64_t at = o->t0 + k * o->interval;
        outage_step_to(ex, o, at);
        for (unsigned j = 0; j < o->burst; j++) {
            assert_int_equal(push_one(ex, "web", "cpu", T0 + (int64_t)(k * o->interval + j), 100),
                             0);
            o->produced++;
        }
    }
    parked(ex);
    assert_accounted(o->produced);
}

/* The first send at or after @a t, or NULL. */
static const struct call *first_call_from(uint64_t t)
{
    for (size_t i = 0; i < tx->ncalls; i++) {
        if (tx->calls[i].at >= t)
            return &tx->calls[i];
    }
    return NULL;
}

static size_t calls_before(uint64_t t)
{
    size_t n = 0;
    for (size_t i = 0; i < tx->ncalls; i++)
        n += tx->calls[i].at < t;
    return n;
}

static int setup(void **state)
{
    (void)state;
    atomic_store(&fake_mono, 1000 * SEC);
    atomic_store(&fake_real, T0);
    return 0;
}

/* --- tests ----------------------------------------------------------------- */

static void test_push__metric_names(void **state)
{
    (void)state;
    assert_string_equal(push_metric_name(PROFILE_CPU), "process_cpu");
    assert_string_equal(push_metric_name(PROFILE_WALL), "wall");
    assert_string_equal(push_metric_name(PROFILE_GIL), "gil");
    assert_string_equal(push_metric_name(PROFILE_EXCEPTION), "exception");
}

static void test_push__fill_deadline(void **state)
{
    (void)state;
    const uint64_t now = 5000 * SEC, a = 4990 * SEC, g = 15 * SEC;
    struct push_fill f = {.failed_ns = now,
                          .min_ns = SEC,
                          .n = 4,
                          .max_n = 10,
                          .bytes = 400,
                          .max_bytes = 1 << 20,
                          .last_arrival_ns = a,
                          .gap_ns = g};
    /* 6 fit: the 7th arrival after the newest would drop; 1 s before it */
    assert_int_equal(push_fill_deadline_ns(&f), a + 7 * g - SEC);
    /* one fits: just before the second arrival from the newest */
    f.n = 9;
    assert_int_equal(push_fill_deadline_ns(&f), a + 2 * g - SEC);
    /* full: just before the next arrival, which is due 5 s from now */
    f.n = 10;
    assert_int_equal(push_fill_deadline_ns(&f), a + g - SEC);
    /* the arrival is overdue: once per gap, never before failed + min */
    f.last_arrival_ns = now - g + SEC / 2;
    assert_int_equal(push_fill_deadline_ns(&f), now - g + SEC / 2 + 2 * g - SEC);
    f.last_arrival_ns = now - 3 * g;
    assert_int_equal(push_fill_deadline_ns(&f), now - 3 * g + 4 * g - SEC);
    /* arrivals closer together than min_backoff: min_backoff wins */
    f.gap_ns = SEC / 10;
    f.last_arrival_ns = now;
    uint64_t d = push_fill_deadline_ns(&f);
    assert_true(d >= now + SEC);
    assert_true(d < now + SEC + SEC / 10);
    /* the margin is a quarter of the gap when that is under a second */
    f.gap_ns = 2 * SEC;
    f.n = 7;
    f.last_arrival_ns = now;
    assert_int_equal(push_fill_deadline_ns(&f), now + 4 * 2 * SEC - SEC / 2);
    /* by bytes: 400 bytes in 4 profiles, 700 allowed: 3 more fit */
    f.n = 4;
    f.bytes = 400;
    f.max_bytes = 700;
    f.gap_ns = g;
    f.last_arrival_ns = a;
    assert_int_equal(push_fill_deadline_ns(&f), a + 4 * g - SEC);
    /* ... the mean size rounded up: 401 bytes, 3 more of 101 do not fit */
    f.bytes = 401;
    f.max_bytes = 701;
    assert_int_equal(push_fill_deadline_ns(&f), a + 3 * g - SEC);
    /* unknown rate: no limit while something fits, min_backoff when full */
    f.gap_ns = 0;
    assert_int_equal(push_fill_deadline_ns(&f), UINT64_MAX);
    f.bytes = 700;
    f.max_bytes = 700;
    assert_int_equal(push_fill_deadline_ns(&f), now + SEC);
    /* an empty queue after the failed one was dropped */
    f = (struct push_fill){.failed_ns = now,
                           .min_ns = SEC,
                           .max_n = 3,
                           .max_bytes = 100,
                           .last_arrival_ns = a,
                           .gap_ns = g};
    assert_int_equal(push_fill_deadline_ns(&f), a + 4 * g - SEC);
    /* saturates */
    f = (struct push_fill){.failed_ns = UINT64_MAX - 1,
                           .min_ns = SEC,
                           .n = 1,
                           .max_n = 1000000,
                           .bytes = 1,
                           .max_bytes = UINT64_MAX,
                           .last_arrival_ns = UINT64_MAX - 5,
                           .gap_ns = UINT64_MAX / 2};
    assert_int_equal(push_fill_deadline_ns(&f), UINT64_MAX);
    f.n = 1000000;
    assert_int_equal(push_fill_deadline_ns(&f), UINT64_MAX);
    f.gap_ns = 0;
    assert_int_equal(push_fill_deadline_ns(&f), UINT64_MAX);
}

static void test_push__delivers_in_order_with_series_labels(void **state)
{
    (void)state;
    struct config_remote_write rw = rw_defaults();
    struct exporter ex = make(&rw, 0);
    for (int i = 0; i < 5; i++)
        assert_int_equal(push_one(&ex, "web", i % 2 ? "wall" : "cpu", T0 + i, 100), 0);
    wait_calls(5);
    for (size_t i = 0; i < 5; i++) {
        assert_int_equal(tx->calls[i].time_nanos, T0 + (int64_t)i);
        assert_string_equal(tx->calls[i].name, i % 2 ? "wall" : "process_cpu");
        assert_string_equal(tx->calls[i].job, "web");
        assert_int_equal(tx->calls[i].len, 100); /* the plain encoding */
    }
    assert_true(metric("pyprofd_push_profiles_total{endpoint=\"ep\"}") == 5);
    assert_true(metric("pyprofd_push_queue_length{endpoint=\"ep\"}") == 0);
    assert_true(metric("pyprofd_push_duration_seconds_count{endpoint=\"ep\"}") == 5);
    destroy(&ex);
}

static void test_push__retries_with_backoff_then_delivers_once(void **state)
{
    (void)state;
    struct config_remote_write rw = rw_defaults();
    struct exporter ex = make(&rw, 0);
    tx->nscript = 3;
    for (size_t i = 0; i < 3; i++)
        tx->script[i] = result(PUSH_RETRY, "503", 0);
    uint64_t t = atomic_load(&fake_mono);
    assert_int_equal(push_one(&ex, "web", "cpu", T0, 100), 0);
    wait_calls(1);
    /* backoffs with zero jitter: 1 s (min), 1 s, 2 s */
    const uint64_t gaps[] = {1 * SEC, 1 * SEC, 2 * SEC};
    for (size_t i = 0; i < 3; i++) {
        advance_to(t + gaps[i] - 1);
        assert_int_equal(parked(&ex), t + gaps[i]);
        assert_int_equal(ncalls(), i + 1);
        t += gaps[i];
        advance_to(t);
        wait_calls(i + 2);
        assert_int_equal(tx->calls[i + 1].at, t);
    }
    assert_int_equal(parked(&ex), UINT64_MAX);
    assert_int_equal(ncalls(), 4);
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(tx->calls[i].time_nanos, T0);
    assert_true(metric("pyprofd_push_profiles_total{endpoint=\"ep\"}") == 1);
    assert_true(metric("pyprofd_push_retries_total{endpoint=\"ep\"}") == 3);
    assert_true(metric("pyprofd_push_failures_total{endpoint=\"ep\",code=\"503\"}") == 3);
    destroy(&ex);
}

static void test_push__permanent_error_is_not_retried(void **state)
{
    (void)state;
    struct config_remote_write rw = rw_defaults();
    struct exporter ex = make(&rw, 0);
    tx->nscript = 1;
    tx->script[0] = result(PUSH_DROP, "400", 0);
    assert_int_equal(push_one(&ex, "web", "cpu", T0, 100), 0);
    wait_calls(1);
    advance_to(atomic_load(&fake_mono) + 600 * SEC);
    assert_int_equal(parked(&ex), UINT64_MAX);
    assert_int_equal(ncalls(), 1);
    /* the next profile goes at once: no backoff after a server's answer */
    assert_int_equal(push_one(&ex, "web", "cpu", T0 + 1, 100), 0);
    wait_calls(2);
    assert_int_equal(tx->calls[1].time_nanos, T0 + 1);
    assert_true(metric("pyprofd_push_dropped_profiles_total{endpoint=\"ep\","
                       "reason=\"permanent_error\"}") == 1);
    assert_true(metric("pyprofd_push_dropped_bytes_total{endpoint=\"ep\","
                       "reason=\"permanent_error\"}") == 100);
    assert_true(metric("pyprofd_push_retries_total{endpoint=\"ep\"}") == 0);
    assert_true(metric("pyprofd_push_failures_total{endpoint=\"ep\",code=\"400\"}") == 1);
    assert_true(metric("pyprofd_push_profiles_total{endpoint=\"ep\"}") == 1);
    destroy(&ex);
}

static void test_push__full_queue_drops_the_oldest(void **state)
{
    (void)state;
    struct config_remote_write rw = rw_defaults();
    rw.queue_max_profiles = 3;
    struct exporter ex = make(&rw, 0);
    set_block(true);
    assert_int_equal(push_one(&ex, "web", "cpu", T0, 100), 0);
    /* the first one is taken by the sender (blocked in send) */
    for (int i = 0; i < 1000 && metric("pyprofd_push_queue_bytes{endpoint=\"ep\"}") != 0; i++)
        usleep(1000);
    for (int i = 1; i <= 5; i++)
        assert_int_equal(push_one(&ex, "web", "cpu", T0 + i, 100), 0);
    assert_true(metric("pyprofd_push_queue_length{endpoint=\"ep\"}") == 4);
    assert_true(metric("pyprofd_push_queue_bytes{endpoint=\"ep\"}") == 300);
    assert_true(metric("pyprofd_push_dropped_profiles_total{endpoint=\"ep\","
                       "reason=\"queue_full\"}") == 2);
    assert_true(metric("pyprofd_push_dropped_bytes_total{endpoint=\"ep\","
                       "reason=\"queue_full\"}") == 200);
    set_block(false);
    wait_calls(4);
    const int64_t want[] = {T0, T0 + 3, T0 + 4, T0 + 5};
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(tx->calls[i].time_nanos, want[i]);
    destroy(&ex);

    /* by bytes: 250 bytes hold two profiles of 100 */
    rw = rw_defaults();
    rw.queue_max_bytes = 250;
    ex = make(&rw, 0);
    set_block(true);
    assert_int_equal(push_one(&ex, "web", "cpu", T0, 100), 0);
    for (int i = 0; i < 1000 && metric("pyprofd_push_queue_bytes{endpoint=\"ep\"}") != 0; i++)
        usleep(1000);
    for (int i = 1; i <= 4; i++)
        assert_int_equal(push_one(&ex, "web", "cpu", T0 + i, 100), 0);
    assert_true(metric("pyprofd_push_queue_bytes{endpoint=\"ep\"}") == 200);
    assert_true(metric("pyprofd_push_dropped_profiles_total{endpoint=\"ep\","
                       "reason=\"queue_full\"}") == 2);
    /* a profile larger than the whole queue is never queued */
    assert_int_equal(push_one(&ex, "web", "cpu", T0 + 9, 300), 0);
    assert_true(metric("pyprofd_push_dropped_bytes_total{endpoint=\"ep\","
                       "reason=\"queue_full\"}") == 500);
    set_block(false);
    wait_calls(3);
    assert_int_equal(tx->calls[1].time_nanos, T0 + 3);
    assert_int_equal(tx->calls[2].time_nanos, T0 + 4);
    destroy(&ex);
}

static void test_push__too_old_is_dropped_not_sent(void **state)
{
    (void)state;
    struct config_remote_write rw = rw_defaults();
    struct exporter ex = make(&rw, 3600 * SEC);
    /* too old on arrival */
    assert_int_equal(push_one(&ex, "web", "cpu", T0 - 2 * 3600 * (int64_t)SEC, 100), 0);
    assert_true(metric("pyprofd_push_dropped_profiles_total{endpoint=\"ep\","
                       "reason=\"too_old\"}") == 1);
    /* too old by the time it would be retried */
    tx->always = result(PUSH_RETRY, "503", 0);
    assert_int_equal(push_one(&ex, "web", "cpu", T0, 100), 0);
    wait_calls(1);
    atomic_store(&fake_real, T0 + 3601 * (int64_t)SEC);
    advance_to(atomic_load(&fake_mono) + 10 * SEC);
    assert_int_equal(parked(&ex), UINT64_MAX);
    assert_int_equal(ncalls(), 1);
    assert_true(metric("pyprofd_push_dropped_profiles_total{endpoint=\"ep\","
                       "reason=\"too_old\"}") == 2);
    assert_true(metric("pyprofd_push_queue_length{endpoint=\"ep\"}") == 0);
    destroy(&ex);
}

static void test_push__max_retries_exhausted(void **state)
{
    (void)state;
    struct config_remote_write rw = rw_defaults();
    rw.max_retries = 2;
    rw.max_backoff_ns = 1 * SEC;
    struct exporter ex = make(&rw, 0);
    tx->nscript = 3;
    for (size_t i = 0; i < 3; i++)
        tx->script[i] = result(PUSH_RETRY, "timeout", 0);
    assert_int_equal(push_one(&ex, "web", "cpu", T0, 100), 0);
    assert_int_equal(push_one(&ex, "web", "cpu", T0 + 1, 100), 0);
    uint64_t t = atomic_load(&fake_mono);
    for (size_t n = 1; n <= 3; n++) { /* after the third, the endpoint is still backing off */
        wait_calls(n);
        /* the clock moves only once the sender has taken the failure in and
         * parked (moving it earlier made its backoff start later: CI saw
         * the second attempt never come) */
        assert_int_equal(parked(&ex), t + SEC);
        t += SEC;
        advance_to(t);
    }
    wait_calls(4); /* the first is given up after 1 + 2 attempts; the second goes */
    assert_int_equal(parked(&ex), UINT64_MAX);
    assert_int_equal(tx->calls[2].time_nanos, T0);
    assert_int_equal(tx->calls[3].time_nanos, T0 + 1);
    assert_true(metric("pyprofd_push_dropped_profiles_total{endpoint=\"ep\","
                       "reason=\"retries_exhausted\"}") == 1);
    assert_true(metric("pyprofd_push_retries_total{endpoint=\"ep\"}") == 2);
    assert_true(metric("pyprofd_push_failures_total{endpoint=\"ep\",code=\"timeout\"}") == 3);
    assert_true(metric("pyprofd_push_profiles_total{endpoint=\"ep\"}") == 1);
    destroy(&ex);
}

static void test_push__retry_after_is_honoured_up_to_max_backoff(void **state)
{
    (void)state;
    struct config_remote_write rw = rw_defaults();
    struct exporter ex = make(&rw, 0);
    tx->nscript = 2;
    tx->script[0] = result(PUSH_RETRY, "429", 5 * SEC);
    tx->script[1] = result(PUSH_RETRY, "503", 100 * SEC); /* capped at max_backoff 8 s */
    uint64_t t = atomic_load(&fake_mono);
    assert_int_equal(push_one(&ex, "web", "cpu", T0, 100), 0);
    wait_calls(1);
    advance_to(t + 5 * SEC - 1);
    assert_int_equal(parked(&ex), t + 5 * SEC);
    assert_int_equal(ncalls(), 1);
    advance_to(t + 5 * SEC);
    wait_calls(2);
    advance_to(t + 13 * SEC - 1);
    assert_int_equal(parked(&ex), t + 13 * SEC);
    assert_int_equal(ncalls(), 2);
    advance_to(t + 13 * SEC);
    wait_calls(3);
    assert_true(metric("pyprofd_push_profiles_total{endpoint=\"ep\"}") == 1);
    destroy(&ex);
}

/*
 * Issue 11: the receiver is down for 40 profile intervals with max_backoff 5m
 * and a queue of 10: the backoff must not sleep past the point where the
 * queue overflows, so the first attempt after the receiver is back comes
 * before the next profile arrives, and exactly the 30 profiles the queue
 * could not hold are lost, none made after the recovery.
 */
static void test_push__outage_costs_only_what_the_queue_cannot_hold(void **state)
{
    (void)state;
    enum { Q = 10, DOWN = 40, AFTER = 10 };
    struct config_remote_write rw = rw_defaults();
    rw.queue_max_profiles = Q;
    rw.min_backoff_ns = 1 * SEC;
    rw.max_backoff_ns = 300 * SEC;
    rw.max_retries = 0;
    struct exporter ex = make(&rw, 0);
    struct outage o = {
        .t0 = atomic_load(&fake_mono), .interval = 15 * SEC, .burst = 1, .nbursts = DOWN + AFTER};
    o.up = o.t0 + DOWN * o.interval + o.interval / 2; /* halfway to the next profile */
    outage_run(&ex, &o);

    const struct call *first = first_call_from(o.up);
    assert_non_null(first);
    assert_true(first->at < o.t0 + (DOWN + 1) * o.interval); /* before the next arrival */
    assert_true(first->at - o.up <= o.interval);
    assert_true(dropped("queue_full") == DOWN - Q);
    assert_true(dropped_total() == DOWN - Q);
    assert_true(metric("pyprofd_push_profiles_total{endpoint=\"ep\"}") ==
                DOWN + AFTER - (DOWN - Q));
    assert_true(metric("pyprofd_push_queue_length{endpoint=\"ep\"}") == 0);
    /* what was delivered: the newest Q made while down, then every later one */
    for (size_t i = 0, k = DOWN - Q + 1; i < tx->ncalls; i++) {
        if (tx->calls[i].at < o.up)
            continue;
        assert_int_equal(tx->calls[i].time_nanos, T0 + (int64_t)(k * o.interval));
        k++;
    }
    /* the full queue was probed about once per arrival, not at min_backoff */
    assert_true(calls_before(o.up) <= DOWN + 10);
    destroy(&ex);
}

/*
 * The same with bursts (3 profiles at once per interval, as 3 targets give)
 * and the queue bounded by bytes (12 profiles' worth), after a profile the
 * server refused: the accounting is exact at every step, and the outage
 * costs only what the queue cannot hold.
 */
static void test_push__outage_accounting_is_exact_with_bursts_and_bytes(void **state)
{
    (void)state;
    enum { BURST = 3, DOWN = 20, AFTER = 5, HOLD = 12 };
    struct config_remote_write rw = rw_defaults();
    rw.queue_max_profiles = 1000;
    rw.queue_max_bytes = HOLD * 100;
    rw.min_backoff_ns = SEC / 2;
    rw.max_backoff_ns = 300 * SEC;
    rw.max_retries = 0;
    struct exporter ex = make(&rw, 0);
    tx->nscript = 1;
    tx->script[0] = result(PUSH_DROP, "400", 0);
    assert_int_equal(push_one(&ex, "web", "cpu", T0 - 1, 100), 0);
    wait_calls(1);
    struct outage o = {.t0 = atomic_load(&fake_mono),
                       .interval = 15 * SEC,
                       .burst = BURST,
                       .nbursts = DOWN + AFTER,
                       .produced = 1};
    o.up = o.t0 + DOWN * o.interval + o.interval / 2;
    outage_run(&ex, &o);

    const struct call *first = first_call_from(o.up);
    assert_non_null(first);
    assert_true(first->at < o.t0 + (DOWN + 1) * o.interval);
    assert_true(dropped("permanent_error") == 1);
    assert_true(dropped("queue_full") == BURST * DOWN - HOLD);
    assert_true(dropped_total() == 1 + BURST * DOWN - HOLD);
    assert_true(metric("pyprofd_push_profiles_total{endpoint=\"ep\"}") ==
                BURST * (DOWN + AFTER) - (BURST * DOWN - HOLD));
    assert_true(metric("pyprofd_push_queue_length{endpoint=\"ep\"}") == 0);
    /* probed about once per arrival while full */
    assert_true(calls_before(o.up) <= 1 + BURST * DOWN + 10);
    destroy(&ex);
}

/*
 * Retry-After is honoured up to max_backoff and up to the room in the queue:
 * a server asking for 10 min while the queue fills in under a minute is asked
 * again just before the profile that would be dropped arrives (1 s before it),
 * and then once per arrival; what the queue cannot hold meanwhile is dropped
 * oldest first and counted.
 */
static void test_push__retry_after_is_capped_by_the_room_in_the_queue(void **state)
{
    (void)state;
    enum { Q = 5 };
    const uint64_t interval = 10 * SEC;
    struct config_remote_write rw = rw_defaults();
    rw.queue_max_profiles = Q;
    rw.max_backoff_ns = 300 * SEC;
    rw.max_retries = 0;
    struct exporter ex = make(&rw, 0);
    set_always(result(PUSH_RETRY, "429", 600 * SEC));
    const uint64_t t0 = atomic_load(&fake_mono);
    size_t produced = 0;
    for (unsigned k = 1; k <= 12; k++) {
        uint64_t at = t0 + k * interval;
        for (;;) {
            uint64_t until = parked(&ex);
            assert_accounted(produced);
            if (until >= at)
                break;
            advance_to(until);
        }
        advance_to(at);
        assert_int_equal(push_one(&ex, "web", "cpu", T0 + (int64_t)k, 100), 0);
        produced++;
    }
    parked(&ex);
    assert_accounted(produced);
    /* at t0 + 10 s (the first profile), then 1 s before each arrival from
     * the sixth on, the first one that would not fit */
    assert_int_equal(tx->calls[0].at, t0 + interval);
    for (unsigned k = 6; k <= 12; k++)
        assert_int_equal(tx->calls[k - 5].at, t0 + k * interval - SEC);
    assert_int_equal(ncalls(), 8);
    /* arrivals 6 to 12 each dropped the oldest */
    assert_true(dropped("queue_full") == 12 - Q);
    assert_true(metric("pyprofd_push_queue_length{endpoint=\"ep\"}") == Q);
    /* the server takes them: the queue drains at once */
    set_always(result(PUSH_OK, "200", 0));
    advance_to(parked(&ex));
    wait_calls(8 + Q);
    parked(&ex);
    assert_accounted(produced);
    assert_true(metric("pyprofd_push_profiles_total{endpoint=\"ep\"}") == Q);
    for (unsigned i = 0; i < Q; i++)
        assert_int_equal(tx->calls[8 + i].time_nanos, T0 + 12 - Q + 1 + i);
    destroy(&ex);
}

static void test_push__write_relabel_drops_and_cleans_labels(void **state)
{
    (void)state;
    struct config_remote_write rw = rw_defaults();
    const char *src[] = {"job"};
    struct relabel_rule_spec specs[] = {
        {.source_labels = src, .nsource_labels = 1, .regex = "drop.*", .action = RELABEL_DROP},
        {.target_label = "__meta_scratch", .replacement = "x", .action = RELABEL_REPLACE},
    };
    char err[256];
    assert_int_equal(relabel_compile(specs, 2, &rw.write_relabel, err, sizeof(err)), 0);
    struct exporter ex = make(&rw, 0);
    /* copied: the exporter does not depend on the config's rules */
    relabel_free(rw.write_relabel);
    rw.write_relabel = NULL;
    assert_int_equal(push_one(&ex, "dropme", "cpu", T0, 100), 0);
    assert_int_equal(push_one(&ex, "keepme", "gil", T0 + 1, 100), 0);
    wait_calls(1);
    assert_int_equal(parked(&ex), UINT64_MAX);
    assert_int_equal(ncalls(), 1);
    assert_string_equal(tx->calls[0].job, "keepme");
    assert_string_equal(tx->calls[0].name, "gil");
    assert_false(tx->calls[0].has_meta);
    assert_true(metric("pyprofd_push_dropped_profiles_total{endpoint=\"ep\","
                       "reason=\"relabeled\"}") == 1);
    destroy(&ex);
}

struct unblocker {
    uint64_t delay_us;
};

static void *unblock_later(void *arg)
{
    struct unblocker *u = arg;
    usleep((useconds_t)u->delay_us);
    set_block(false);
    return NULL;
}

static void test_push__shutdown_drains_until_the_deadline(void **state)
{
    (void)state;
    struct config_remote_write rw = rw_defaults();
    struct exporter ex = make(&rw, 0);
    tx->advance_ns = SEC; /* every send takes one second */
    set_block(true);
    for (int i = 0; i < 5; i++)
        assert_int_equal(push_one(&ex, "web", "cpu", T0 + i, 100), 0);
    uint64_t t = atomic_load(&fake_mono);
    pthread_t th;
    struct unblocker u = {.delay_us = 50000};
    assert_int_equal(pthread_create(&th, NULL, unblock_later, &u), 0);
    ex.ops->shutdown(ex.ctx, t + 2 * SEC + SEC / 2);
    pthread_join(th, NULL);
    /* sends at t, t+1, t+2 (the last with what is left before the deadline) */
    assert_int_equal(ncalls(), 3);
    assert_int_equal(tx->calls[2].timeout, SEC / 2);
    assert_true(metric("pyprofd_push_profiles_total{endpoint=\"ep\"}") == 3);
    assert_true(metric("pyprofd_push_dropped_profiles_total{endpoint=\"ep\","
                       "reason=\"shutdown\"}") == 2);
    /* after shutdown, pushes are counted and dropped */
    assert_int_equal(push_one(&ex, "web", "cpu", T0 + 9, 100), 0);
    assert_true(metric("pyprofd_push_dropped_profiles_total{endpoint=\"ep\","
                       "reason=\"shutdown\"}") == 3);
    destroy(&ex);

    /* free without shutdown: nothing is sent any more, nothing leaks */
    ex = make(&rw, 0);
    set_block(true);
    for (int i = 0; i < 3; i++)
        assert_int_equal(push_one(&ex, "web", "cpu", T0 + i, 100), 0);
    /* wait until the sender is inside send() with the first one */
    for (int i = 0; i < 1000 && metric("pyprofd_push_queue_bytes{endpoint=\"ep\"}") != 200; i++)
        usleep(1000);
    assert_true(metric("pyprofd_push_queue_bytes{endpoint=\"ep\"}") == 200);
    struct unblocker u2 = {.delay_us = 20000};
    assert_int_equal(pthread_create(&th, NULL, unblock_later, &u2), 0);
    ex.ops->free(ex.ctx);
    pthread_join(th, NULL);
}

static void test_push__stop_does_not_block_and_sends_until_the_deadline(void **state)
{
    (void)state;
    struct config_remote_write rw = rw_defaults();
    struct exporter ex = make(&rw, 0);
    for (int i = 0; i < 2; i++)
        assert_int_equal(push_one(&ex, "web", "cpu", T0 + i, 100), 0);
    wait_calls(2);
    tx->always = result(PUSH_RETRY, "503", 0);
    assert_int_equal(push_one(&ex, "web", "cpu", T0 + 2, 100), 0);
    wait_calls(3);
    pthread_mutex_lock(&tx->mu);
    tx->until_abort = true;
    pthread_mutex_unlock(&tx->mu);
    advance_to(parked(&ex)); /* past the backoff: the retry blocks */
    wait_entered(tx, 4);
    assert_int_equal(push_one(&ex, "web", "cpu", T0 + 3, 100), 0);

    uint64_t t = atomic_load(&fake_mono);
    uint64_t r0 = clock_mono_now();
    ex.ops->stop(ex.ctx, t + 5 * SEC);
    assert_true(clock_mono_now() - r0 < SEC / 10);
    /* the counts so far (still its own: the dispatcher decides whom /metrics shows) */
    assert_true(metric("pyprofd_push_profiles_total{endpoint=\"ep\"}") == 2);
    assert_true(metric("pyprofd_push_retries_total{endpoint=\"ep\"}") == 1);
    assert_true(metric("pyprofd_push_failures_total{endpoint=\"ep\",code=\"503\"}") == 1);
    /* the send goes on until the deadline; pushes are refused meanwhile */
    assert_int_equal(push_one(&ex, "web", "cpu", T0 + 4, 100), 0);
    wait_not_aborted(tx);
    assert_int_equal(naborted(tx), 0);
    advance_to(t + 5 * SEC);
    ex.ops->shutdown(ex.ctx, t + 5 * SEC);
    assert_int_equal(naborted(tx), 1);
    /* the aborted send, the one queued behind it, the one pushed after stop */
    assert_true(metric("pyprofd_push_dropped_profiles_total{endpoint=\"ep\","
                       "reason=\"shutdown\"}") == 3);
    assert_true(metric("pyprofd_push_dropped_bytes_total{endpoint=\"ep\","
                       "reason=\"shutdown\"}") == 300);
    /* the abort is neither a failure of the endpoint nor a retry */
    assert_true(metric("pyprofd_push_failures_total{endpoint=\"ep\",code=\"aborted\"}") == -1);
    assert_true(metric("pyprofd_push_retries_total{endpoint=\"ep\"}") == 1);
    destroy(&ex);
}

/*
 * A reload through the dispatcher (exporters/dispatch.c owns the sets): the
 * replacement with the same name is in /metrics at once, alone, with the old
 * exporter's counts; what the old one counts until its deadline (a send
 * aborted, one queued behind it) is added when it has finished; an endpoint
 * of another name starts from zero; an endpoint the next reload removes
 * leaves /metrics. The counters never go down on the way.
 */
static void test_push__reload_keeps_counters_through_the_dispatcher(void **state)
{
    (void)state;
    struct window_queue *q = NULL;
    struct dispatch *d = NULL;
    assert_int_equal(window_queue_new(4, 4, NULL, &q), 0);
    assert_int_equal(dispatch_new(q, 1 << 20, &d), 0);
    dispatch_set_clock(d, &fake_clock);
    struct config_remote_write rw = rw_defaults();
    struct exporter old = make(&rw, 0);
    size_t aborted0 = atomic_load(&tx_aborted_all);
    assert_int_equal(dispatch_set_exporters(d, &old, 1, 1 << 20), 0);
    assert_int_equal(dispatch_start(d), 0);
    for (int i = 0; i < 2; i++)
        assert_int_equal(push_one(&old, "web", "cpu", T0 + i, 100), 0);
    wait_calls(2);
    tx->always = result(PUSH_RETRY, "503", 0);
    assert_int_equal(push_one(&old, "web", "cpu", T0 + 2, 100), 0);
    wait_calls(3);
    pthread_mutex_lock(&tx->mu);
    tx->until_abort = true;
    pthread_mutex_unlock(&tx->mu);
    advance_to(parked(&old)); /* past the backoff: the retry blocks */
    wait_entered(tx, 4);
    assert_int_equal(push_one(&old, "web", "cpu", T0 + 3, 100), 0);
    assert_true(metric_of(d, "pyprofd_push_profiles_total{endpoint=\"ep\"}") == 2);

    /* the reload: the same endpoint, and a new one */
    struct config_remote_write rw2 = rw_defaults();
    struct config_remote_write rw3 = rw_defaults();
    rw3.name = (char *)"other";
    struct exporter next[2] = {make(&rw2, 0), make(&rw3, 0)};
    assert_int_equal(dispatch_set_exporters(d, next, 2, 1 << 20), 0);
    assert_int_equal(count_samples(d, "pyprofd_push_profiles_total{endpoint=\"ep\"}"), 1);
    assert_true(metric_of(d, "pyprofd_push_profiles_total{endpoint=\"ep\"}") == 2);
    assert_true(metric_of(d, "pyprofd_push_retries_total{endpoint=\"ep\"}") == 1);
    assert_true(metric_of(d, "pyprofd_push_failures_total{endpoint=\"ep\",code=\"503\"}") == 1);
    assert_true(metric_of(d, "pyprofd_push_profiles_total{endpoint=\"other\"}") == 0);
    assert_true(metric_of(d, "pyprofd_push_dropped_profiles_total{endpoint=\"ep\","
                             "reason=\"shutdown\"}") == 0);
    /* the old exporter is stopped by the export thread (between two windows)
     * with DISPATCH_RETIRE_NS to go; once the clock is past that, its blocked
     * send is aborted, and the two profiles it held are counted and carried */
    double shut = 0;
    for (int i = 0; i < 5000 && shut < 2; i++) {
        shut = metric_of(d, "pyprofd_push_dropped_profiles_total{endpoint=\"ep\","
                            "reason=\"shutdown\"}");
        assert_true(shut >= 0 && shut <= 2);
        assert_true(metric_of(d, "pyprofd_push_profiles_total{endpoint=\"ep\"}") == 2);
        if (shut < 2) {
            advance_to(atomic_load(&fake_mono) + DISPATCH_RETIRE_NS / 10);
            usleep(1000);
        }
    }
    assert_true(shut == 2);
    /* the old transport is freed with its exporter by now: the global count */
    assert_int_equal(atomic_load(&tx_aborted_all) - aborted0, 1);
    assert_true(metric_of(d, "pyprofd_push_dropped_bytes_total{endpoint=\"ep\","
                             "reason=\"shutdown\"}") == 200);
    assert_int_equal(count_samples(d, "pyprofd_push_profiles_total{"), 2);
    /* the replacement delivers from the carried counts on */
    assert_int_equal(push_one(&next[0], "web", "cpu", T0 + 5, 100), 0);
    for (int i = 0; i < 5000 && metric_of(d, "pyprofd_push_profiles_total{endpoint=\"ep\"}") < 3;
         i++)
        usleep(1000);
    assert_true(metric_of(d, "pyprofd_push_profiles_total{endpoint=\"ep\"}") == 3);
    assert_true(metric_of(d, "pyprofd_push_retries_total{endpoint=\"ep\"}") == 1);
    /* a reload without "ep": it leaves /metrics */
    struct config_remote_write rw4 = rw_defaults();
    rw4.name = (char *)"other";
    struct exporter last = make(&rw4, 0);
    assert_int_equal(dispatch_set_exporters(d, &last, 1, 1 << 20), 0);
    assert_int_equal(count_samples(d, "pyprofd_push_profiles_total{endpoint=\"ep\"}"), 0);
    assert_int_equal(count_samples(d, "pyprofd_push_profiles_total{endpoint=\"other\"}"), 1);
    dispatch_stop(d, atomic_load(&fake_mono));
    dispatch_free(d);
    window_queue_free(q);
    tx = NULL;
}

static void test_push__blocked_send_is_aborted_at_the_deadline(void **state)
{
    (void)state;
    struct config_remote_write rw = rw_defaults();
    rw.remote_timeout_ns = 600 * SEC;
    struct exporter ex = make(&rw, 0);
    tx->until_abort = true;
    for (int i = 0; i < 3; i++)
        assert_int_equal(push_one(&ex, "web", "cpu", T0 + i, 100), 0);
    wait_entered(tx, 1);
    uint64_t t = atomic_load(&fake_mono);
    ex.ops->stop(ex.ctx, t + 2 * SEC);
    advance_to(t + 2 * SEC - 1);
    wait_not_aborted(tx);
    assert_int_equal(naborted(tx), 0);
    advance_to(t + 2 * SEC);
    for (int i = 0; i < 1000 && naborted(tx) == 0; i++)
        usleep(1000);
    assert_int_equal(naborted(tx), 1);
    /* shutdown with a later deadline keeps the earlier one, and returns */
    uint64_t r0 = clock_mono_now();
    ex.ops->shutdown(ex.ctx, t + 100 * SEC);
    assert_true(clock_mono_now() - r0 < SEC / 2);
    pthread_mutex_lock(&tx->mu);
    assert_int_equal(tx->entered, 1); /* the queued ones were not started */
    pthread_mutex_unlock(&tx->mu);
    destroy(&ex);
}

/* Real time: N exporters blocked in a send, stopped together, then shut down
 * one after the other, take about one deadline in all, not N. */
static void test_push__blocked_exporters_take_one_deadline_in_all(void **state)
{
    (void)state;
    enum { N = 4 };
    const uint64_t grace = 300000000ull; /* 300 ms */
    struct exporter ex[N];
    struct fake_tx *txs[N];
    char names[N][16];
    for (int i = 0; i < N; i++) {
        struct config_remote_write rw = rw_defaults();
        rw.remote_timeout_ns = 20 * SEC;
        snprintf(names[i], sizeof(names[i]), "blocked%d", i);
        rw.name = names[i];
        ex[i] = make_clock(&rw, 0, NULL);
        txs[i] = tx;
        tx->until_abort = true;
        assert_int_equal(push_one(&ex[i], "web", "cpu", T0, 100), 0);
        wait_entered(tx, 1);
    }
    uint64_t r0 = clock_mono_now();
    uint64_t deadline = r0 + grace;
    for (int i = 0; i < N; i++)
        ex[i].ops->stop(ex[i].ctx, deadline);
    for (int i = 0; i < N; i++)
        ex[i].ops->shutdown(ex[i].ctx, deadline);
    uint64_t took = clock_mono_now() - r0;
    assert_true(took >= grace - 1000000ull);
    assert_true(took < 2 * grace); /* one after the other would be N * grace */
    for (int i = 0; i < N; i++) {
        assert_int_equal(naborted(txs[i]), 1);
        tx = txs[i];
        destroy(&ex[i]);
    }
}

static void test_push__metrics_text_is_valid(void **state)
{
    (void)state;
    struct config_remote_write rw = rw_defaults();
    struct config_remote_write rw2 = rw_defaults();
    rw2.name = (char *)"second \"one\"";
    struct exporter ex = make(&rw, 0);
    struct fake_tx *tx1 = tx;
    tx1->nscript = 1;
    tx1->script[0] = result(PUSH_DROP, "400", 0);
    struct exporter ex2 = make(&rw2, 0);
    struct fake_tx *tx2 = tx;
    assert_int_equal(push_one(&ex, "web", "cpu", T0, 100), 0);
    assert_int_equal(push_one(&ex2, "web", "cpu", T0, 100), 0);
    tx = tx1;
    wait_calls(1);
    tx = tx2;
    wait_calls(1);

    /* one document, each exporter writing its own samples, as the dispatcher does */
    struct promtext *w = NULL;
    assert_int_equal(promtext_new(0, &w), 0);
    assert_int_equal(ex.ops->metrics(ex.ctx, w), 0);
    assert_int_equal(ex2.ops->metrics(ex2.ctx, w), 0);
    char *doc = NULL;
    size_t len = 0;
    assert_int_equal(promtext_take(w, &doc, &len), 0);
    promtext_free(w);
    const char *families[] = {
        "pyprofd_push_profiles_total",      "pyprofd_push_failures_total",
        "pyprofd_push_retries_total",       "pyprofd_push_dropped_profiles_total",
        "pyprofd_push_dropped_bytes_total", "pyprofd_push_queue_length",
        "pyprofd_push_queue_bytes",         "pyprofd_push_duration_seconds",
    };
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(families); i++) {
        char type[128];
        snprintf(type, sizeof(type), "# TYPE %s ", families[i]);
        const char *a = strstr(doc, type);
        assert_non_null(a);
        assert_null(strstr(a + 1, type)); /* once per document */
    }
    assert_non_null(strstr(doc, "endpoint=\"second \\\"one\\\"\""));
    if (access("/usr/bin/promtool", X_OK) == 0) {
        char path[] = "/tmp/pyprofd-test-push-metrics.XXXXXX";
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, doc, len), (ssize_t)len);
        close(fd);
        char cmd[256];
        snprintf(cmd, sizeof(cmd), "/usr/bin/promtool check metrics < %s", path);
        int rc = system(cmd);
        unlink(path);
        assert_int_equal(rc, 0);
    }
    alloc_free(doc);
    tx = tx1;
    destroy(&ex);
    tx = tx2;
    destroy(&ex2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_push__metric_names, setup),
        cmocka_unit_test_setup(test_push__fill_deadline, setup),
        cmocka_unit_test_setup(test_push__delivers_in_order_with_series_labels, setup),
        cmocka_unit_test_setup(test_push__retries_with_backoff_then_delivers_once, setup),
        cmocka_unit_test_setup(test_push__permanent_error_is_not_retried, setup),
        cmocka_unit_test_setup(test_push__full_queue_drops_the_oldest, setup),
        cmocka_unit_test_setup(test_push__too_old_is_dropped_not_sent, setup),
        cmocka_unit_test_setup(test_push__max_retries_exhausted, setup),
        cmocka_unit_test_setup(test_push__retry_after_is_honoured_up_to_max_backoff, setup),
        cmocka_unit_test_setup(test_push__outage_costs_only_what_the_queue_cannot_hold, setup),
        cmocka_unit_test_setup(test_push__outage_accounting_is_exact_with_bursts_and_bytes, setup),
        cmocka_unit_test_setup(test_push__retry_after_is_capped_by_the_room_in_the_queue, setup),
        cmocka_unit_test_setup(test_push__write_relabel_drops_and_cleans_labels, setup),
        cmocka_unit_test_setup(test_push__shutdown_drains_until_the_deadline, setup),
        cmocka_unit_test_setup(test_push__stop_does_not_block_and_sends_until_the_deadline, setup),
        cmocka_unit_test_setup(test_push__reload_keeps_counters_through_the_dispatcher, setup),
        cmocka_unit_test_setup(test_push__blocked_send_is_aborted_at_the_deadline, setup),
        cmocka_unit_test_setup(test_push__blocked_exporters_take_one_deadline_in_all, setup),
        cmocka_unit_test_setup(test_push__metrics_text_is_valid, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
