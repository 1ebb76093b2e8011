/* SPDX-License-Identifier: MIT */
/*
 * push.c: the delivery engine shared by the push exporters (see push.h): a
 * bounded queue per endpoint, one sender thread, backoff with jitter, age and
 * retry limits, write relabeling, counted drops, and the push_* metrics.
 */
#include "base/compat.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "base/alloc.h"
#include "base/backoff.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/rand.h"
#include "config/relabel.h"
#include "exporters/push/push.h"

#define PUSH_RING_MIN  16u
#define PUSH_MAX_CODES 32u        /* distinct failure codes kept per endpoint; then "other" */
#define PUSH_FAKE_POLL 1000000ull /* re-read an injected clock this often while waiting */
#define PUSH_IDLE_WAIT 60000000000ull
#define PUSH_ARRIVALS  64u /* arrivals the mean gap between them is taken over */

enum push_drop_reason {
    PUSH_DROP_QUEUE_FULL,
    PUSH_DROP_TOO_OLD,
    PUSH_DROP_PERMANENT,
    PUSH_DROP_RETRIES,
    PUSH_DROP_RELABELED,
    PUSH_DROP_SHUTDOWN,
    PUSH_DROP_NREASONS,
};

static const char *const push_drop_names[PUSH_DROP_NREASONS] = {
    "queue_full", "too_old", "permanent_error", "retries_exhausted", "relabeled", "shutdown",
};

struct push_item {
    struct labels labels;
    uint8_t *pprof;
    size_t len;
    enum profile_mode mode;
    int64_t period_ns, time_nanos, duration_nanos;
    unsigned attempts; /* failed attempts so far */
};

struct push_code_count {
    char code[32];
    uint64_t n;
    uint64_t carried; /* of n, what was handed to a successor (push_carry) */
    bool logged;      /* a permanent error with this code was logged */
};

/* The counters, as far as they were handed to a successor. */
struct push_carried {
    uint64_t pushed, retries;
    uint64_t dropped[PUSH_DROP_NREASONS], dropped_bytes[PUSH_DROP_NREASONS];
};

struct push_exporter {
    struct exporter_ops xops; /* the exporter's ops point here */
    const struct push_transport_ops *tops;
    void *tctx;
    char *name;
    struct relabel_rules *write_relabel;
    const struct clock *clock; /* borrowed */
    bool fake_clock;           /* not clock_system: re-read it while waiting */
    uint64_t max_age_ns, timeout_ns, min_backoff_ns, max_backoff_ns, max_retries;
    uint64_t max_items, max_bytes;

    pthread_mutex_t mu; /* guards everything below up to the atomics */
    pthread_cond_t cv;  /* CLOCK_MONOTONIC */
    struct push_item *ring;
    size_t cap, head, n;
    uint64_t bytes;
    bool inflight;
    uint64_t next_send; /* mono ns; 0: now */
    unsigned fail_streak;
    uint64_t failed_at; /* mono ns: when the last failed attempt ended */
    /* when the last PUSH_ARRIVALS queued profiles arrived (mono ns, a ring),
     * for their rate: push_fill_deadline() */
    uint64_t arrivals[PUSH_ARRIVALS];
    size_t narrivals, arrivals_next;
    bool stopping, unreachable, thread_running;
    uint64_t deadline;
    /* for push_wait_parked(): bumped by every push and stop; the sender
     * notes the value it acted on when it parks in push_wait() */
    uint64_t seq, parked_seq;
    bool parked;
    uint64_t parked_until;         /* mono ns; UINT64_MAX: idle */
    uint64_t (*random)(void *arg); /* the jitter; NULL: rng */
    void *random_arg;
    struct rand_state rng; /* seeded with rand_seed() */
    pthread_t thread;
    struct push_code_count codes[PUSH_MAX_CODES];
    size_t ncodes;
    struct push_carried carried; /* what push_carry() handed on so far */

    _Atomic uint64_t pushed, retries;
    _Atomic uint64_t dropped[PUSH_DROP_NREASONS], dropped_bytes[PUSH_DROP_NREASONS];
    struct promtext_hist duration;
};

/* --- time ----------------------------------------------------------------- */

static uint64_t push_mono(const struct push_exporter *pe)
{
    return clock_mono(pe->clock);
}

static int64_t push_real(const struct push_exporter *pe)
{
    return clock_real(pe->clock);
}

static uint64_t push_random(struct push_exporter *pe)
{
    if (pe->random)
        return pe->random(pe->random_arg);
    return rand_next(&pe->rng);
}

/*
 * Waits on the condition until mono time @a until (0: a long idle wait).
 * Called with mu held. With an injected clock the real wait is short, so a
 * test moving the clock is seen at once.
 */
static void push_wait(struct push_exporter *pe, uint64_t until)
{
    uint64_t now = push_mono(pe);
    uint64_t d = until == 0 ? PUSH_IDLE_WAIT : (until > now ? until - now : 0);
    if (pe->fake_clock && d > PUSH_FAKE_POLL)
        d = PUSH_FAKE_POLL;
    /* the condition variable waits on the system's CLOCK_MONOTONIC */
    struct timespec ts = clock_timespec(clock_mono_now() + d);
    pe->parked = true;
    pe->parked_seq = pe->seq;
    pe->parked_until = until == 0 ? UINT64_MAX : until;
    pthread_cond_timedwait(&pe->cv, &pe->mu, &ts);
    pe->parked = false;
}

/* --- public helpers ------------------------------------------------------- */

const char *push_metric_name(enum profile_mode mode)
{
    /* Pyroscope's own name for CPU time; the others by the mode's name */
    return mode == PROFILE_CPU ? "process_cpu" : profile_mode_name(mode);
}

static uint64_t push_sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

uint64_t push_fill_deadline_ns(const struct push_fill *f)
{
    uint64_t earliest = push_sat_add(f->failed_ns, f->min_ns);
    uint64_t fits = f->n < f->max_n ? f->max_n - f->n : 0;
    if (f->n > 0 && f->bytes > 0) {
        /* what still fits by bytes, at the mean size of what is queued */
        uint64_t room = f->bytes < f->max_bytes ? f->max_bytes - f->bytes : 0;
        uint64_t mean = f->bytes / f->n + (f->bytes % f->n != 0);
        uint64_t by_bytes = room / mean;
        if (by_bytes < fits)
            fits = by_bytes;
    }
    if (f->gap_ns == 0)
        return fits > 0 ? UINT64_MAX : earliest;
    uint64_t g = f->gap_ns;
    uint64_t margin = g / 4 < PUSH_FILL_MARGIN_NS ? g / 4 : PUSH_FILL_MARGIN_NS;
    /* last_arrival + (fits + 1) * g - margin, saturating */
    if (fits >= UINT64_MAX / g)
        return UINT64_MAX;
    uint64_t t = push_sat_add(f->last_arrival_ns, (fits + 1) * g - margin);
    if (t < earliest) {
        uint64_t k = (earliest - t) / g + ((earliest - t) % g != 0);
        if (k > (UINT64_MAX - t) / g)
            return UINT64_MAX;
        t += k * g;
    }
    return t;
}

/* --- the queue (mu held) -------------------------------------------------- */

static void push_item_release(struct push_item *it)
{
    labels_release(&it->labels);
    alloc_free(it->pprof);
    memset(it, 0, sizeof(*it));
}

static void push_count_drop(struct push_exporter *pe, enum push_drop_reason r, size_t len)
{
    atomic_fetch_add(&pe->dropped[r], 1);
    atomic_fetch_add(&pe->dropped_bytes[r], (uint64_t)len);
}

static void push_drop_item(struct push_exporter *pe, struct push_item *it, enum push_drop_reason r)
{
    push_count_drop(pe, r, it->len);
    push_item_release(it);
}

static int push_ring_grow(struct push_exporter *pe)
{
    if (pe->n < pe->cap)
        return 0;
    size_t ncap = pe->cap ? pe->cap * 2 : PUSH_RING_MIN;
    if (ncap > pe->max_items)
        ncap = (size_t)pe->max_items;
    if (ncap <= pe->cap)
        return -ENOSPC;
    struct push_item *v = alloc_calloc(ncap, sizeof(*v));
    if (!v)
        return -ENOMEM;
    for (size_t i = 0; pe->cap && i < pe->n; i++) /* n > 0 implies cap > 0 */
        v[i] = pe->ring[(pe->head + i) % pe->cap];
    alloc_free(pe->ring);
    pe->ring = v;
    pe->cap = ncap;
    pe->head = 0;
    return 0;
}

/* Removes the oldest waiting profile into @a out. n > 0. */
static void push_ring_pop(struct push_exporter *pe, struct push_item *out)
{
    *out = pe->ring[pe->head];
    memset(&pe->ring[pe->head], 0, sizeof(*out));
    pe->head = (pe->head + 1) % pe->cap;
    pe->n--;
    pe->bytes -= out->len;
}

static bool push_full(const struct push_exporter *pe, size_t len)
{
    return pe->n >= pe->max_items || pe->bytes + len > pe->max_bytes;
}

static bool push_too_old(const struct push_exporter *pe, int64_t time_nanos)
{
    return pe->max_age_ns && push_real(pe) - time_nanos > (int64_t)pe->max_age_ns;
}

/* --- failures and logging (mu held) --------------------------------------- */

static struct push_code_count *push_code(struct push_exporter *pe, const char *code)
{
    if (!code[0])
        code = "unknown";
    for (size_t i = 0; i < pe->ncodes; i++) {
        if (strcmp(pe->codes[i].code, code) == 0)
            return &pe->codes[i];
    }
    if (pe->ncodes == PUSH_MAX_CODES)
        return &pe->codes[PUSH_MAX_CODES - 1]; /* "other" */
    struct push_code_count *c = &pe->codes[pe->ncodes++];
    /* the last slot collects every code beyond the first ones */
    snprintf(c->code, sizeof(c->code), "%s", pe->ncodes == PUSH_MAX_CODES ? "other" : code);
    return c;
}

/* Notes that a profile was queued at @a now, for the rate of arrivals. */
static void push_note_arrival(struct push_exporter *pe, uint64_t now)
{
    pe->arrivals[pe->arrivals_next] = now;
    pe->arrivals_next = (pe->arrivals_next + 1) % PUSH_ARRIVALS;
    if (pe->narrivals < PUSH_ARRIVALS)
        pe->narrivals++;
}

/*
 * push_fill_deadline_ns() for the queue as it is, the gap being the mean over
 * the last PUSH_ARRIVALS arrivals (profiles come one per target and mode per
 * profile_interval, in bursts at the end of each interval: the mean over
 * several bursts is the interval divided by the burst size, which makes a
 * full queue probed once per arrival, the last time just before the next
 * burst).
 */
static uint64_t push_fill_deadline(const struct push_exporter *pe)
{
    struct push_fill f = {
        .failed_ns = pe->failed_at,
        .min_ns = pe->min_backoff_ns,
        .n = pe->n,
        .max_n = pe->max_items,
        .bytes = pe->bytes,
        .max_bytes = pe->max_bytes,
    };
    if (pe->narrivals > 0) {
        size_t newest = (pe->arrivals_next + PUSH_ARRIVALS - 1) % PUSH_ARRIVALS;
        size_t oldest = pe->narrivals < PUSH_ARRIVALS ? 0 : pe->arrivals_next;
        f.last_arrival_ns = pe->arrivals[newest];
        if (pe->narrivals > 1)
            f.gap_ns = (pe->arrivals[newest] - pe->arrivals[oldest]) / (pe->narrivals - 1);
    }
    return push_fill_deadline_ns(&f);
}

static void push_on_result(struct push_exporter *pe, struct push_item *it,
                           const struct push_result *res, uint64_t now)
{
    if (res->outcome == PUSH_OK) {
        atomic_fetch_add(&pe->pushed, 1);
        pe->fail_streak = 0;
        pe->next_send = 0;
        if (pe->unreachable)
            log_info("push endpoint '%s' recovered", pe->name);
        pe->unreachable = false;
        push_item_release(it);
        return;
    }
    struct push_code_count *c = push_code(pe, res->code);
    c->n++;
    if (res->outcome == PUSH_DROP) {
        /* the server answered: it is reachable, the profile is not acceptable */
        pe->fail_streak = 0;
        pe->next_send = 0;
        if (pe->unreachable)
            log_info("push endpoint '%s' recovered", pe->name);
        pe->unreachable = false;
        if (!c->logged)
            log_error("push endpoint '%s' refused a profile (%s): %s; dropped, not retried",
                      pe->name, c->code, res->message[0] ? res->message : "no message");
        c->logged = true;
        push_drop_item(pe, it, PUSH_DROP_PERMANENT);
        return;
    }
    it->attempts++;
    if (pe->fail_streak < 64)
        pe->fail_streak++;
    pe->failed_at = now;
    if (!pe->unreachable)
        log_warn("push endpoint '%s' unreachable (%s): %s; retrying", pe->name, c->code,
                 res->message[0] ? res->message : "no message");
    pe->unreachable = true;
    uint64_t delay = backoff_delay_ns(pe->fail_streak, pe->min_backoff_ns, pe->max_backoff_ns,
                                      push_random(pe), BACKOFF_DELAY_AT_LEAST_MIN);
    uint64_t ra =
        res->retry_after_ns < pe->max_backoff_ns ? res->retry_after_ns : pe->max_backoff_ns;
    if (ra > delay)
        delay = ra;
    if (pe->max_retries && it->attempts > pe->max_retries) {
        push_drop_item(pe, it, PUSH_DROP_RETRIES);
    } else if ((pe->n > 0 && push_full(pe, it->len)) || push_ring_grow(pe)) {
        push_drop_item(pe, it, PUSH_DROP_QUEUE_FULL); /* it is the oldest */
    } else {
        pe->head = (pe->head + pe->cap - 1) % pe->cap;
        pe->ring[pe->head] = *it;
        pe->n++;
        pe->bytes += it->len;
        atomic_fetch_add(&pe->retries, 1);
    }
    /* neither the backoff nor Retry-After may outlast the room in the queue */
    uint64_t fill = push_fill_deadline(pe);
    pe->next_send = delay < fill - now ? now + delay : fill;
}

/* --- the sender ----------------------------------------------------------- */

/* push_request.abort: stopped and past the deadline. */
static bool push_send_aborted(void *arg)
{
    struct push_exporter *pe = arg;
    pthread_mutex_lock(&pe->mu);
    bool abort = pe->stopping && push_mono(pe) >= pe->deadline;
    pthread_mutex_unlock(&pe->mu);
    return abort;
}

static void *push_sender_main(void *arg)
{
    struct push_exporter *pe = arg;
    pthread_mutex_lock(&pe->mu);
    for (;;) {
        uint64_t now = push_mono(pe);
        if (pe->stopping && now >= pe->deadline)
            break;
        if (pe->n == 0) {
            if (pe->stopping)
                break;
            push_wait(pe, 0);
            continue;
        }
        if (now < pe->next_send) {
            uint64_t until = pe->next_send;
            if (pe->stopping && pe->deadline < until)
                until = pe->deadline;
            push_wait(pe, until);
            continue;
        }
        struct push_item it;
        push_ring_pop(pe, &it);
        if (push_too_old(pe, it.time_nanos)) {
            push_drop_item(pe, &it, PUSH_DROP_TOO_OLD);
            continue;
        }
        uint64_t timeout = pe->timeout_ns;
        if (pe->stopping && pe->deadline - now < timeout)
            timeout = pe->deadline - now;
        pe->inflight = true;
        pthread_mutex_unlock(&pe->mu);

        struct push_request req = {
            .labels = &it.labels,
            .pprof = it.pprof,
            .len = it.len,
            .mode = it.mode,
            .period_ns = it.period_ns,
            .time_nanos = it.time_nanos,
            .duration_nanos = it.duration_nanos,
            .abort = push_send_aborted,
            .abort_arg = pe,
        };
        struct push_result res = {.outcome = PUSH_RETRY};
        /* the latency histogram is of real time, whatever the clock */
        uint64_t t0 = clock_mono_now();
        pe->tops->send(pe->tctx, &req, timeout, &res);
        uint64_t t1 = clock_mono_now();
        promtext_hist_observe(&pe->duration, (double)(t1 - t0) / 1e9);
        res.code[sizeof(res.code) - 1] = '\0';
        res.message[sizeof(res.message) - 1] = '\0';

        pthread_mutex_lock(&pe->mu);
        pe->inflight = false;
        now = push_mono(pe);
        /* aborted at the deadline, or failed too late to be tried again: not
         * a failure of the endpoint, a profile shutdown did not let through */
        if (res.outcome == PUSH_RETRY && pe->stopping && now >= pe->deadline)
            push_drop_item(pe, &it, PUSH_DROP_SHUTDOWN);
        else
            push_on_result(pe, &it, &res, now);
    }
    while (pe->n > 0) {
        struct push_item it;
        push_ring_pop(pe, &it);
        push_drop_item(pe, &it, PUSH_DROP_SHUTDOWN);
    }
    pthread_mutex_unlock(&pe->mu);
    return NULL;
}

#ifdef PYPROFD_UNITTEST
void push_set_random(void *ctx, uint64_t (*random)(void *arg), void *arg)
{
    struct push_exporter *pe = ctx;
    pthread_mutex_lock(&pe->mu);
    pe->random = random;
    pe->random_arg = arg;
    pthread_mutex_unlock(&pe->mu);
}

int push_wait_parked(void *ctx, uint64_t *until)
{
    struct push_exporter *pe = ctx;
    const uint64_t give_up = clock_mono_now() + 5000000000ull;
    const struct timespec nap = {.tv_sec = 0, .tv_nsec = 200000};
    int err = -ETIMEDOUT;
    pthread_mutex_lock(&pe->mu);
    for (;;) {
        /* parked after seeing every push and stop, and woken by nothing
         * before its deadline: the clock has not reached it yet */
        if (pe->parked && pe->parked_seq == pe->seq && pe->parked_until > push_mono(pe)) {
            *until = pe->parked_until;
            err = 0;
            break;
        }
        if (clock_mono_now() >= give_up)
            break;
        pthread_mutex_unlock(&pe->mu);
        nanosleep(&nap, NULL);
        pthread_mutex_lock(&pe->mu);
    }
    pthread_mutex_unlock(&pe->mu);
    return err;
}
#endif

/* --- exporter ops --------------------------------------------------------- */

/* Drops "__"-prefixed labels except __name__, which is (re)set when missing. */
static int push_series_finish(struct labels *ls, const char *metric)
{
    size_t i = 0;
    while (i < ls->n) {
        const char *nm = ls->v[i].name;
        if (nm[0] == '_' && nm[1] == '_' && strcmp(nm, "__name__") != 0) {
            labels_del(ls, nm);
            continue;
        }
        i++;
    }
    const char *cur = labels_get(ls, "__name__");
    return cur && cur[0] ? 0 : labels_set(ls, "__name__", metric);
}

static int push_push(void *ctx, const struct export_profile *p)
{
    struct push_exporter *pe = ctx;
    const struct window_meta *wi = p->meta;
    const uint8_t *bytes = p->pprof_plain ? p->pprof_plain : p->pprof;
    size_t len = p->pprof_plain ? p->len_plain : p->len;
    const char *metric = push_metric_name(wi->mode);
    struct push_item it = {
        .len = len,
        .mode = wi->mode,
        .period_ns = wi->period_ns,
        .time_nanos = wi->time_nanos,
        .duration_nanos = wi->duration_nanos,
    };
    bool keep = true;
    int err = labels_copy(&it.labels, &wi->labels);
    if (!err)
        err = labels_set(&it.labels, "__name__", metric);
    if (!err)
        err = relabel_apply(pe->write_relabel, &it.labels, &keep);
    if (err)
        goto out;
    if (!keep) {
        push_count_drop(pe, PUSH_DROP_RELABELED, len);
        goto out;
    }
    err = push_series_finish(&it.labels, metric);
    if (err)
        goto out;
    if (push_too_old(pe, it.time_nanos)) {
        push_count_drop(pe, PUSH_DROP_TOO_OLD, len);
        goto out;
    }
    if (len > pe->max_bytes) {
        push_count_drop(pe, PUSH_DROP_QUEUE_FULL, len);
        goto out;
    }
    it.pprof = alloc_malloc(len ? len : 1);
    if (!it.pprof) {
        err = -ENOMEM;
        goto out;
    }
    memcpy(it.pprof, bytes, len);

    pthread_mutex_lock(&pe->mu);
    pe->seq++;
    if (pe->stopping) {
        push_count_drop(pe, PUSH_DROP_SHUTDOWN, len);
    } else {
        while (pe->n > 0 && push_full(pe, len)) {
            struct push_item old;
            push_ring_pop(pe, &old);
            push_drop_item(pe, &old, PUSH_DROP_QUEUE_FULL);
        }
        err = push_ring_grow(pe);
        if (!err) {
            pe->ring[(pe->head + pe->n) % pe->cap] = it;
            pe->n++;
            pe->bytes += len;
            memset(&it, 0, sizeof(it));
            push_note_arrival(pe, push_mono(pe));
            /* backing off: the queue has less room now, so try sooner if
             * the backoff would let it overflow */
            if (pe->fail_streak > 0 && pe->next_send > 0) {
                uint64_t fill = push_fill_deadline(pe);
                if (fill < pe->next_send)
                    pe->next_send = fill;
            }
            pthread_cond_broadcast(&pe->cv);
        }
    }
    pthread_mutex_unlock(&pe->mu);
out:
    push_item_release(&it);
    return err;
}

/* --- metrics -------------------------------------------------------------- */

/*
 * exporter_ops.metrics: the pyprofd_push_* families with this endpoint's
 * samples (endpoint="<name>"); promtext groups them with the other
 * endpoints' (docs/exporters.md, Metrics).
 */
static int push_metrics(void *ctx, struct promtext *w)
{
    struct push_exporter *pe = ctx;
    const char *ep = pe->name;
    int err = promtext_family(w, "pyprofd_push_profiles_total", PROMTEXT_COUNTER,
                              "Profiles delivered to the endpoint.");
    if (!err)
        err = promtext_sample(w, NULL, PROMTEXT_LABELS({"endpoint", ep}),
                              (double)atomic_load(&pe->pushed));
    if (!err)
        err = promtext_family(w, "pyprofd_push_failures_total", PROMTEXT_COUNTER,
                              "Failed send attempts, by HTTP status or error kind (timeout, "
                              "connect, tls, ...).");
    pthread_mutex_lock(&pe->mu);
    for (size_t i = 0; i < pe->ncodes && !err; i++)
        err =
            promtext_sample(w, NULL, PROMTEXT_LABELS({"endpoint", ep}, {"code", pe->codes[i].code}),
                            (double)pe->codes[i].n);
    double queued = (double)(pe->n + (pe->inflight ? 1u : 0u));
    double queued_bytes = (double)pe->bytes;
    pthread_mutex_unlock(&pe->mu);
    if (!err)
        err = promtext_family(w, "pyprofd_push_retries_total", PROMTEXT_COUNTER,
                              "Send attempts scheduled again after a retryable failure.");
    if (!err)
        err = promtext_sample(w, NULL, PROMTEXT_LABELS({"endpoint", ep}),
                              (double)atomic_load(&pe->retries));
    if (!err)
        err = promtext_family(w, "pyprofd_push_dropped_profiles_total", PROMTEXT_COUNTER,
                              "Profiles not delivered, by reason.");
    for (size_t r = 0; r < PUSH_DROP_NREASONS && !err; r++)
        err = promtext_sample(w, NULL,
                              PROMTEXT_LABELS({"endpoint", ep}, {"reason", push_drop_names[r]}),
                              (double)atomic_load(&pe->dropped[r]));
    if (!err)
        err = promtext_family(w, "pyprofd_push_dropped_bytes_total", PROMTEXT_COUNTER,
                              "Bytes of gzipped pprof not delivered, by reason.");
    for (size_t r = 0; r < PUSH_DROP_NREASONS && !err; r++)
        err = promtext_sample(w, NULL,
                              PROMTEXT_LABELS({"endpoint", ep}, {"reason", push_drop_names[r]}),
                              (double)atomic_load(&pe->dropped_bytes[r]));
    if (!err)
        err = promtext_family(w, "pyprofd_push_queue_length", PROMTEXT_GAUGE,
                              "Profiles waiting or being sent.");
    if (!err)
        err = promtext_sample(w, NULL, PROMTEXT_LABELS({"endpoint", ep}), queued);
    if (!err)
        err = promtext_family(w, "pyprofd_push_queue_bytes", PROMTEXT_GAUGE,
                              "Bytes of gzipped pprof waiting.");
    if (!err)
        err = promtext_sample(w, NULL, PROMTEXT_LABELS({"endpoint", ep}), queued_bytes);
    if (!err)
        err = promtext_family(w, "pyprofd_push_duration_seconds", PROMTEXT_HISTOGRAM,
                              "Time per send attempt, any outcome.");
    if (!err)
        err = promtext_histogram(w, PROMTEXT_LABELS({"endpoint", ep}), &pe->duration);
    return err;
}

/* --- counters across a reload ------------------------------------------------ */

/* Adds to @a dst what @a now has beyond what was handed on (@a carried), and notes it handed. */
static void push_add(_Atomic uint64_t *dst, uint64_t now, uint64_t *carried)
{
    if (now > *carried)
        atomic_fetch_add(dst, now - *carried);
    *carried = now;
}

/*
 * exporter_ops.carry: hands what @a ctx counted since the last call to @a to,
 * the push exporter replacing it (exporter.h), so the endpoint's series stay
 * monotonic; the latency histogram is not carried (it restarts). The two
 * exporters' locks are never held together.
 */
static void push_carry(void *ctx, void *to_ctx)
{
    struct push_exporter *pe = ctx, *to = to_ctx;
    struct push_code_count codes[PUSH_MAX_CODES];
    size_t ncodes = 0;
    pthread_mutex_lock(&pe->mu);
    struct push_carried *c = &pe->carried;
    push_add(&to->pushed, atomic_load(&pe->pushed), &c->pushed);
    push_add(&to->retries, atomic_load(&pe->retries), &c->retries);
    for (size_t r = 0; r < PUSH_DROP_NREASONS; r++) {
        push_add(&to->dropped[r], atomic_load(&pe->dropped[r]), &c->dropped[r]);
        push_add(&to->dropped_bytes[r], atomic_load(&pe->dropped_bytes[r]), &c->dropped_bytes[r]);
    }
    for (size_t i = 0; i < pe->ncodes; i++) {
        struct push_code_count *src = &pe->codes[i];
        if (src->n > src->carried) {
            codes[ncodes] = *src;
            codes[ncodes++].n = src->n - src->carried;
            src->carried = src->n;
        }
    }
    pthread_mutex_unlock(&pe->mu);
    pthread_mutex_lock(&to->mu);
    for (size_t i = 0; i < ncodes; i++)
        push_code(to, codes[i].code)->n += codes[i].n;
    pthread_mutex_unlock(&to->mu);
}

/* --- stop, shutdown, free --------------------------------------------------- */

static void push_stop(void *ctx, uint64_t deadline_ns)
{
    struct push_exporter *pe = ctx;
    pthread_mutex_lock(&pe->mu);
    if (!pe->stopping || deadline_ns < pe->deadline)
        pe->deadline = deadline_ns;
    pe->stopping = true;
    pe->seq++;
    pthread_cond_broadcast(&pe->cv);
    pthread_mutex_unlock(&pe->mu);
}

static void push_shutdown(void *ctx, uint64_t deadline_ns)
{
    struct push_exporter *pe = ctx;
    push_stop(pe, deadline_ns);
    pthread_mutex_lock(&pe->mu);
    bool join = pe->thread_running;
    pe->thread_running = false;
    pthread_mutex_unlock(&pe->mu);
    if (join)
        pthread_join(pe->thread, NULL);
}

static void push_free(void *ctx)
{
    struct push_exporter *pe = ctx;
    if (!pe)
        return;
    push_shutdown(pe, 0);
    for (size_t i = 0; i < pe->n; i++)
        push_item_release(&pe->ring[(pe->head + i) % pe->cap]);
    alloc_free(pe->ring);
    if (pe->tops && pe->tops->free)
        pe->tops->free(pe->tctx);
    relabel_free(pe->write_relabel);
    alloc_free(pe->name);
    pthread_cond_destroy(&pe->cv);
    pthread_mutex_destroy(&pe->mu);
    alloc_free(pe);
}

/*
 * A copy of compiled rules @a r (NULL: none), compiled again from their specs
 * (relabel_spec() gives each as compiled, defaults filled in), so the
 * exporter owns its rules whatever becomes of the config's.
 */
static int push_relabel_copy(const struct relabel_rules *r, struct relabel_rules **out)
{
    int err = 0;
    size_t n = relabel_count(r);
    struct relabel_rule_spec *specs = NULL;
    char msg[256];
    *out = NULL;
    if (!r)
        goto out;
    specs = alloc_calloc(n ? n : 1, sizeof(*specs));
    if (!specs) {
        err = -ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        specs[i] = *relabel_spec(r, i);
    err = relabel_compile(specs, n, out, msg, sizeof(msg));
out:
    alloc_free(specs);
    return err;
}

int push_exporter_new(const struct config_remote_write *rw, const struct push_transport_ops *ops,
                      void *tctx, uint64_t max_age_ns, const struct clock *clock,
                      struct exporter *out)
{
    int err = -ENOMEM;
    bool mu = false, cv = false;
    pthread_condattr_t ca;
    struct push_exporter *pe = NULL;
    /* the loader's bounds (config.def) make none of these 0; a struct built by hand might */
    if (!rw->remote_timeout_ns || !rw->min_backoff_ns || !rw->queue_max_profiles ||
        !rw->queue_max_bytes) {
        err = -EINVAL;
        goto fail;
    }
    pe = alloc_calloc(1, sizeof(*pe));
    if (!pe)
        goto fail;
    pe->tops = ops;
    pe->tctx = tctx;
    tctx = NULL;
    pe->name = alloc_strdup(rw->name ? rw->name : ops->kind);
    if (!pe->name)
        goto fail;
    pe->clock = clock ? clock : &clock_system;
    pe->fake_clock = pe->clock != &clock_system;
    rand_init(&pe->rng, rand_seed());
    pe->max_age_ns = max_age_ns;
    /* as the config gave them: its defaults are config.def's, written once */
    pe->timeout_ns = rw->remote_timeout_ns;
    pe->min_backoff_ns = rw->min_backoff_ns;
    pe->max_backoff_ns = rw->max_backoff_ns; /* never below min: the loader checks */
    pe->max_retries = rw->max_retries;
    pe->max_items = rw->queue_max_profiles;
    pe->max_bytes = rw->queue_max_bytes;
    err =
        promtext_hist_init(&pe->duration, promtext_buckets_seconds, promtext_buckets_seconds_count);
    if (!err)
        err = push_relabel_copy(rw->write_relabel, &pe->write_relabel);
    if (err)
        goto fail;
    err = -pthread_mutex_init(&pe->mu, NULL);
    if (err)
        goto fail;
    mu = true;
    err = -pthread_condattr_init(&ca);
    if (err)
        goto fail;
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    err = -pthread_cond_init(&pe->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (err)
        goto fail;
    cv = true;
    pe->xops = (struct exporter_ops){
        .kind = ops->kind,
        .wants_plain = true,
        .push = push_push,
        .metrics = push_metrics,
        .carry = push_carry,
        .stop = push_stop,
        .shutdown = push_shutdown,
        .free = push_free,
    };
    pe->thread_running = true;
    err = -pthread_create(&pe->thread, NULL, push_sender_main, pe);
    if (err) {
        pe->thread_running = false;
        goto fail;
    }
    out->ops = &pe->xops;
    out->ctx = pe;
    out->name = pe->name;
    return 0;
fail:
    if (pe) {
        if (cv)
            pthread_cond_destroy(&pe->cv);
        if (mu)
            pthread_mutex_destroy(&pe->mu);
        if (pe->tops && pe->tops->free)
            pe->tops->free(pe->tctx);
        relabel_free(pe->write_relabel);
        alloc_free(pe->name);
        alloc_free(pe);
    } else if (ops && ops->free) {
        ops->free(tctx);
    }
    return err;
}
