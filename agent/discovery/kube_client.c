/* SPDX-License-Identifier: MIT */
/*
 * kube_client.c: the thread behind kube_client.h: the list/watch machine
 * (API server), the kubelet poll, the failure episode and its backoff
 * (base/backoff.h), the token (base/readfile.h), and applying pods to the
 * index. Requests go through kube_transport.h (libcurl), which kube_stop()
 * can wake; waits between requests are a condition variable.
 */
#include "base/compat.h"

#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>

#include "base/alloc.h"
#include "base/backoff.h"
#include "base/buf.h"
#include "base/log.h"
#include "base/rand.h"
#include "base/readfile.h"
#include "discovery/kube_client.h"
#include "discovery/kube_pod.h"

#define NS_PER_SEC        1000000000ull
#define KUBE_TOKEN_REREAD (60 * NS_PER_SEC)
#define KUBE_LOG_EVERY    (60 * NS_PER_SEC)
#define KUBE_PAGE_LIMIT   500
#define KUBE_URL_MAX      (8u << 10)

enum kube_log_kind {
    KUBE_LOG_SYNC,
    KUBE_LOG_TOKEN,
    KUBE_LOG_KINDS,
};

struct kube {
    /* options, copied */
    char *url, *node_name, *token_file;
    uint64_t watch_timeout_ns, poll_ns, min_backoff_ns, max_backoff_ns;
    uint64_t request_timeout_ns, progress_ns, saturated_ns;
    size_t max_pods;
    struct clock clock;
    enum kube_source source;

    /* shared, under mu (stopping: atomic, also read without it) */
    atomic_bool stopping;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct kube_index *ix;
    struct kube_stats st;

    pthread_t thread;
    struct kube_transport *tr; /* the thread's, but woken by kube_stop() */

    /* the thread's own */
    struct kube_stream *watch, *list;
    char *token;
    uint64_t token_read_at;
    struct rand_state rnd; /* the backoff's jitter */
    uint64_t last_expire;
    uint64_t logged_at[KUBE_LOG_KINDS];
    unsigned attempts;       /* failures in the streak: the backoff doubles with each */
    uint64_t retry_after_ns; /* the server's Retry-After for the next wait, or 0 */
    bool logged[KUBE_LOG_KINDS];
    bool token_known; /* read at least once */
    bool watched_once;
    /* the failure episode (see kube_client.h, "Logging") */
    bool healthy; /* requests make progress since healthy_since */
    uint64_t healthy_since;
    bool episode;           /* failures since the last stable period */
    bool restored_logged;   /* "restored" was said in this episode */
    unsigned episode_kinds; /* bit per enum kube_outcome logged in this episode */
    uint64_t episode_failures;
    /* the list in progress */
    size_t list_pods, list_refused;
    bool saturated;          /* a pod was refused since the last list began ("full") */
    uint64_t listed_at;      /* when the last list ended (clock_mono_now(), as deadlines) */
    bool bound_logged;       /* the pod bound was logged; a list that fits clears it */
    unsigned refused_logged; /* bit per enum kube_refusal logged once */
    struct kube_stream_counts seen_watch, seen_list;
    char rv[KUBE_MAX_TOKEN_BYTES + 1];
};

/* One request's state, seen by the body callback (kube_body()) and the decoders'. */
struct kube_xfer {
    struct kube *k;
    struct kube_request req; /* req.progress_at: the start, then the last complete event */
    enum kube_stream_mode mode;
    int decode_rc;   /* kube_stream's error, 0 */
    int stop_reason; /* KUBE_STOP_* from the event callback */
    size_t events;
    char event_msg[160];
};

enum {
    KUBE_STOP_GONE = 1, /* kube_on_event()'s verdicts that end a watch */
    KUBE_STOP_ERROR = 2,
    KUBE_STOP_NOMEM = 3,
};

const char *kube_outcome_name(enum kube_outcome o)
{
    static const char *const names[KUBE_OUTCOME_COUNT] = {
        [KUBE_OUTCOME_OK] = "ok",
        [KUBE_OUTCOME_UNAUTHORIZED] = "unauthorized",
        [KUBE_OUTCOME_FORBIDDEN] = "forbidden",
        [KUBE_OUTCOME_GONE] = "gone",
        [KUBE_OUTCOME_HTTP_ERROR] = "http_error",
        [KUBE_OUTCOME_ERROR_EVENT] = "error_event",
        [KUBE_OUTCOME_DECODE_ERROR] = "decode_error",
        [KUBE_OUTCOME_TRANSPORT] = "transport",
        [KUBE_OUTCOME_STALLED] = "stalled",
        [KUBE_OUTCOME_DEADLINE] = "deadline",
        [KUBE_OUTCOME_STOPPED] = "stopped",
    };
    return (unsigned)o < KUBE_OUTCOME_COUNT ? names[o] : "unknown";
}

const char *kube_refusal_name(enum kube_refusal r)
{
    static const char *const names[KUBE_REFUSED_COUNT] = {
        [KUBE_REFUSED_EVENT_TOO_LARGE] = "event_too_large",
        [KUBE_REFUSED_OBJECT_TOO_LARGE] = "object_too_large",
        [KUBE_REFUSED_LIST_TOO_LARGE] = "list_too_large",
        [KUBE_REFUSED_TOO_DEEP] = "too_deep",
        [KUBE_REFUSED_POD_BOUND] = "pod_bound",
        [KUBE_REFUSED_INDEX_FULL] = "index_full",
    };
    return (unsigned)r < KUBE_REFUSED_COUNT ? names[r] : "unknown";
}

static uint64_t kube_now(const struct kube *k)
{
    return clock_mono(&k->clock);
}

static bool kube_stopping(struct kube *k)
{
    return atomic_load(&k->stopping);
}

/* Adds @a n to counter @a c of k->st, under the lock (the stats are read from other threads). */
static void kube_add(struct kube *k, uint64_t *c, uint64_t n)
{
    pthread_mutex_lock(&k->mu);
    *c += n;
    pthread_mutex_unlock(&k->mu);
}

/* When a full index is to be listed again (clock_mono_now() time); 0: it is not full. */
static uint64_t kube_relist_at(const struct kube *k)
{
    return k->saturated ? k->listed_at + k->saturated_ns : 0;
}

static bool kube_relist_due(const struct kube *k)
{
    return k->saturated && clock_mono_now() >= kube_relist_at(k);
}

/* Logs a state change of @a kind at most once per KUBE_LOG_EVERY. */
static bool kube_log_due(struct kube *k, enum kube_log_kind kind)
{
    uint64_t now = clock_mono_now();
    if (k->logged[kind] && now - k->logged_at[kind] < KUBE_LOG_EVERY)
        return false;
    k->logged[kind] = true;
    k->logged_at[kind] = now;
    return true;
}

static void kube_set_error(struct kube *k, const char *fmt, ...) PYPROFD_PRINTF(2, 3);
static void kube_set_error(struct kube *k, const char *fmt, ...)
{
    char msg[sizeof(k->st.last_error)];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&k->mu);
    memcpy(k->st.last_error, msg, sizeof(msg));
    pthread_mutex_unlock(&k->mu);
}

/* ---- the failure episode, waiting ---- */

/*
 * Requests have made progress since healthy_since: once that lasted
 * KUBE_STABLE, the streak is over (the backoff starts again from
 * min_backoff) and so is the episode (its kinds may be logged again).
 */
static void kube_stable_check(struct kube *k, uint64_t now)
{
    if (!k->healthy || now - k->healthy_since < KUBE_STABLE_NS)
        return;
    k->attempts = 0;
    k->episode = false;
    k->episode_kinds = 0;
    k->episode_failures = 0;
    k->restored_logged = false;
}

/* A request made progress: a list page, a watch event, a kubelet poll. */
static void kube_progress(struct kube *k)
{
    uint64_t now = clock_mono_now();
    if (!k->healthy) {
        k->healthy = true;
        k->healthy_since = now;
        if (k->episode && !k->restored_logged) {
            k->restored_logged = true;
            log_info("kubernetes: connection to '%s' restored after %" PRIu64 " failed requests",
                     k->url, k->episode_failures);
        }
    }
    kube_stable_check(k, now);
}

/* What the decoders hold, for kube_stats(); the thread's own streams. */
static void kube_update_memory(struct kube *k)
{
    size_t mem = sizeof(*k) + kube_stream_memory(k->watch) + kube_stream_memory(k->list);
    pthread_mutex_lock(&k->mu);
    k->st.memory_bytes = mem;
    pthread_mutex_unlock(&k->mu);
}

/* Drops what outlived the grace period, and more housekeeping; at most once a second. */
static void kube_expire(struct kube *k)
{
    uint64_t now = kube_now(k);
    if (now - k->last_expire < NS_PER_SEC)
        return;
    k->last_expire = now;
    pthread_mutex_lock(&k->mu);
    kube_index_expire(k->ix, now);
    pthread_mutex_unlock(&k->mu);
    kube_update_memory(k);
    kube_stable_check(k, clock_mono_now());
}

/* Waits @a ns (real time) unless stopped. Returns false when stopping. */
static bool kube_sleep(struct kube *k, uint64_t ns)
{
    uint64_t end = clock_mono_now() + ns;
    for (;;) {
        kube_expire(k);
        if (kube_stopping(k))
            return false;
        uint64_t now = clock_mono_now();
        if (now >= end)
            return true;
        uint64_t until = end - now > NS_PER_SEC ? now + NS_PER_SEC : end;
        struct timespec ts = clock_timespec(until);
        pthread_mutex_lock(&k->mu);
        if (!kube_stopping(k))
            pthread_cond_timedwait(&k->cv, &k->mu, &ts);
        pthread_mutex_unlock(&k->mu);
    }
}

/*
 * The next wait: backoff_delay_ns() for the streak (min * 2^attempts capped
 * at max, a random point in its upper half); at least what a Retry-After
 * asked (and a little more, so that every client told the same does not
 * come back at once).
 */
static uint64_t kube_backoff(struct kube *k)
{
    uint64_t wait = backoff_delay_ns(k->attempts + 1, k->min_backoff_ns, k->max_backoff_ns,
                                     rand_next(&k->rnd), 0);
    if (k->attempts < 64)
        k->attempts++;
    uint64_t ra = k->retry_after_ns;
    k->retry_after_ns = 0;
    if (ra > wait) {
        wait = ra + rand_below(&k->rnd, ra / 20 + 1);
        kube_add(k, &k->st.retry_after, 1);
    }
    return wait;
}

static bool kube_backoff_sleep(struct kube *k)
{
    return kube_sleep(k, kube_backoff(k));
}

/* ---- the token ---- */

/*
 * Reads the token file when due (or @a force) with readfile_secret() (at
 * most 64 KiB, surrounding whitespace removed, no control character
 * inside). Returns true when the token changed. An absent file means no
 * token; an unreadable, empty or invalid one leaves the previous token in
 * use and sets the error.
 */
static bool kube_token_load(struct kube *k, bool force)
{
    if (!k->token_file)
        return false;
    uint64_t now = kube_now(k);
    if (!force && k->token_known && now - k->token_read_at < KUBE_TOKEN_REREAD)
        return false;
    k->token_known = true;
    k->token_read_at = now;
    char *tok = NULL;
    char err[sizeof(k->st.last_error) - 16];
    int rc = readfile_secret(k->token_file, &tok, err, sizeof(err));
    if (rc == -ENOENT) {
        rc = 0; /* no token file: no Authorization */
    } else if (rc == 0 && !tok[0]) {
        rc = -EINVAL;
        snprintf(err, sizeof(err), "cannot use '%s': the file is empty", k->token_file);
    }
    kube_add(k, &k->st.token_reads, 1);
    kube_add(k, &k->st.token_errors, rc != 0);
    if (rc) {
        alloc_free(tok); /* "" */
        kube_set_error(k, "token file: %s", err);
        if (kube_log_due(k, KUBE_LOG_TOKEN))
            log_warn("kubernetes: token file: %s", err);
        return false; /* the previous token, if any, stays in use */
    }
    bool changed =
        (tok == NULL) != (k->token == NULL) || (tok && k->token && strcmp(tok, k->token) != 0);
    if (k->token) {
        explicit_bzero(k->token, strlen(k->token));
        alloc_free(k->token);
    }
    k->token = tok;
    return changed;
}

/* Logs the first refusal of each reason (they are counted every time). */
static void kube_log_refusal(struct kube *k, enum kube_refusal r, const char *what)
{
    if (k->refused_logged & (1u << r))
        return;
    k->refused_logged |= 1u << r;
    log_warn("kubernetes: %s from '%s' refused (%s; counted in "
             "pyprofd_kubernetes_refused_total, logged once)",
             what, k->url, kube_refusal_name(r));
}

/* Adds what a decoder passed over since last time to the refusal counters. */
static void kube_count_passed_over(struct kube *k, const struct kube_stream *s,
                                   struct kube_stream_counts *seen)
{
    struct kube_stream_counts now;
    kube_stream_counts(s, &now);
    uint64_t ev = now.refused_event - seen->refused_event;
    uint64_t obj = now.refused_object - seen->refused_object;
    *seen = now;
    if (ev == 0 && obj == 0)
        return;
    pthread_mutex_lock(&k->mu);
    k->st.refused[KUBE_REFUSED_EVENT_TOO_LARGE] += ev;
    k->st.refused[KUBE_REFUSED_OBJECT_TOO_LARGE] += obj;
    pthread_mutex_unlock(&k->mu);
    if (ev)
        kube_log_refusal(k, KUBE_REFUSED_EVENT_TOO_LARGE, "a watch event over 4 MiB");
    if (obj)
        kube_log_refusal(k, KUBE_REFUSED_OBJECT_TOO_LARGE, "a pod object over 4 MiB");
}

/* ---- one request ---- */

static int kube_on_event(void *arg, const struct kube_event *ev);
static int kube_list_pod(void *arg, const struct kube_pod *pod);

/* The body of a 200 (kube_request.body): through the decoder of the request's mode. */
static int kube_body(void *arg, const char *data, size_t len)
{
    struct kube_xfer *x = arg;
    int rc;
    if (x->mode == KUBE_STREAM_WATCH) {
        rc = kube_stream_feed(x->k->watch, data, len, kube_on_event, x);
        kube_count_passed_over(x->k, x->k->watch, &x->k->seen_watch);
    } else {
        rc = kube_stream_list_feed(x->k->list, data, len, kube_list_pod, x);
        kube_count_passed_over(x->k, x->k->list, &x->k->seen_list);
    }
    if (rc > 0)
        x->stop_reason = rc;
    else if (rc < 0)
        x->decode_rc = rc;
    return rc;
}

/* kube_request.idle: housekeeping while a transfer waits. */
static void kube_idle(void *arg)
{
    const struct kube_xfer *x = arg;
    kube_expire(x->k);
}

struct kube_result {
    enum kube_outcome outcome;
    long status;
    int stop_reason;
    uint64_t retry_after_ns;    /* a 429 or 503 said how long to wait, capped; else 0 */
    struct kube_list_meta meta; /* a list's, when outcome is OK */
};

/*
 * GETs @a url in @a mode: the body goes through the decoder of that mode; a
 * list is finished too (its metadata in the result), so that a 200 whose
 * list does not decode is a decode error from the start. Classifies, counts
 * and records the error text.
 */
static struct kube_result kube_get(struct kube *k, const char *url, enum kube_stream_mode mode)
{
    struct kube_result r = {.outcome = KUBE_OUTCOME_TRANSPORT};
    struct kube_response resp;
    struct kube_xfer x = {
        .k = k,
        .mode = mode,
        .req = {.url = url,
                .token = k->token,
                .watch = mode == KUBE_STREAM_WATCH,
                .stopping = &k->stopping,
                .body = kube_body,
                .idle = kube_idle},
    };
    x.req.arg = &x;
    struct kube_stream *dec = mode == KUBE_STREAM_WATCH ? k->watch : k->list;
    kube_stream_reset(dec);
    /* a watch of a full index ends when its list is due */
    x.req.deadline_ns =
        mode == KUBE_STREAM_WATCH ? kube_relist_at(k) : clock_mono_now() + k->request_timeout_ns;
    if (mode == KUBE_STREAM_WATCH)
        x.req.progress_ns = k->progress_ns;
    kube_transport_get(k->tr, &x.req, &resp);
    r.status = resp.status;
    r.stop_reason = x.stop_reason;
    kube_count_passed_over(k, dec, mode == KUBE_STREAM_WATCH ? &k->seen_watch : &k->seen_list);
    int frc = 0;
    if (kube_stopping(k)) {
        r.outcome = KUBE_OUTCOME_STOPPED;
    } else if (x.stop_reason == KUBE_STOP_GONE) {
        r.outcome = KUBE_OUTCOME_GONE;
        kube_set_error(k, "watch ended by a 410 ERROR event: %s", x.event_msg);
    } else if (x.stop_reason == KUBE_STOP_ERROR) {
        r.outcome = KUBE_OUTCOME_ERROR_EVENT;
        kube_set_error(k, "watch ended by an ERROR event: %s", x.event_msg);
    } else if (x.stop_reason == KUBE_STOP_NOMEM) {
        r.outcome = KUBE_OUTCOME_TRANSPORT;
        kube_set_error(k, "out of memory applying a pod");
    } else if (resp.timed_out == KUBE_TIMEOUT_STALLED) {
        r.outcome = KUBE_OUTCOME_STALLED;
        kube_set_error(k, "the watch from '%s' completed no event in %" PRIu64 " s", url,
                       (uint64_t)(k->progress_ns / NS_PER_SEC));
    } else if (resp.timed_out == KUBE_TIMEOUT_DEADLINE && mode == KUBE_STREAM_WATCH) {
        r.outcome = KUBE_OUTCOME_OK; /* ended by the client: the full index's list is due */
    } else if (resp.timed_out == KUBE_TIMEOUT_DEADLINE) {
        r.outcome = KUBE_OUTCOME_DEADLINE;
        kube_set_error(k, "GET '%s' took longer than %" PRIu64 " s (request_timeout)", url,
                       (uint64_t)(k->request_timeout_ns / NS_PER_SEC));
    } else if (x.decode_rc != 0) {
        r.outcome = KUBE_OUTCOME_DECODE_ERROR;
        kube_set_error(k, "cannot decode the %s from '%s': %s",
                       mode == KUBE_STREAM_WATCH ? "watch stream" : "pod list", url,
                       x.decode_rc == -E2BIG    ? "larger than its bound"
                       : x.decode_rc == -ELOOP  ? "nested too deep"
                       : x.decode_rc == -ENOMEM ? "out of memory"
                                                : "malformed");
        enum kube_refusal why =
            x.decode_rc == -E2BIG ? KUBE_REFUSED_LIST_TOO_LARGE : KUBE_REFUSED_TOO_DEEP;
        if (x.decode_rc == -E2BIG || x.decode_rc == -ELOOP) {
            kube_add(k, &k->st.refused[why], 1);
            kube_log_refusal(k, why, mode == KUBE_STREAM_WATCH ? "a watch stream" : "a pod list");
        }
    } else if (resp.status != 0 && resp.status != 200) {
        r.outcome = resp.status == 401   ? KUBE_OUTCOME_UNAUTHORIZED
                    : resp.status == 403 ? KUBE_OUTCOME_FORBIDDEN
                    : resp.status == 410 ? KUBE_OUTCOME_GONE
                                         : KUBE_OUTCOME_HTTP_ERROR;
        r.retry_after_ns = resp.retry_after_ns;
        kube_set_error(k, "GET '%s': HTTP %ld %s%s", url, resp.status, resp.message,
                       resp.body_cut ? " ..." : "");
    } else if (resp.rc != CURLE_OK) {
        r.outcome = KUBE_OUTCOME_TRANSPORT;
        kube_set_error(k, "GET '%s': %s", url, curl_easy_strerror(resp.rc));
    } else if (mode == KUBE_STREAM_WATCH && !kube_stream_idle(k->watch)) {
        /* the server closed a body that ends with the connection, mid-event */
        r.outcome = KUBE_OUTCOME_TRANSPORT;
        kube_set_error(k, "GET '%s': the watch ended in the middle of an event", url);
    } else if (mode == KUBE_STREAM_LIST && (frc = kube_stream_list_finish(k->list, &r.meta)) != 0) {
        /* the transfer was fine, its list not */
        r.outcome = KUBE_OUTCOME_DECODE_ERROR;
        kube_set_error(k, "cannot decode the pod list from '%s': %s", url,
                       frc == -ENOMEM ? "out of memory" : "malformed");
    } else {
        r.outcome = KUBE_OUTCOME_OK;
    }
    pthread_mutex_lock(&k->mu);
    if (r.outcome == KUBE_OUTCOME_DECODE_ERROR)
        k->st.decode_errors++;
    if (r.outcome == KUBE_OUTCOME_UNAUTHORIZED)
        k->st.unauthorized++;
    if (resp.body_cut)
        k->st.error_bodies_cut++;
    k->st.requests[r.outcome]++;
    pthread_mutex_unlock(&k->mu);
    return r;
}

/* ---- applying pods ---- */

static void kube_synced_now(struct kube *k)
{
    /* under mu */
    k->st.last_sync_real_ns = clock_real(&k->clock);
}

/* Applies one pod record; -ENOMEM only is fatal to the caller. */
static int kube_apply_pod(struct kube *k, const struct kube_pod *pod, bool deleted)
{
    int rc = 0;
    bool filtered = k->source == KUBE_SOURCE_KUBELET && k->node_name &&
                    strcmp(pod->node_name, k->node_name) != 0;
    uint64_t now = kube_now(k);
    pthread_mutex_lock(&k->mu);
    if (filtered) {
        k->st.pods_filtered++;
    } else if (deleted) {
        kube_index_delete(k->ix, pod->uid, now);
    } else {
        if (pod->over_limit > 0)
            k->st.pods_truncated++;
        rc = kube_index_upsert(k->ix, pod, now);
        k->saturated |= rc == -ENOSPC;
        if (rc == -ENOSPC)
            rc = 0; /* counted by the index (index_full) */
    }
    pthread_mutex_unlock(&k->mu);
    return rc;
}

static int kube_on_event(void *arg, const struct kube_event *ev)
{
    struct kube_xfer *x = arg;
    struct kube *k = x->k;
    x->events++;
    x->req.progress_at = clock_mono_now();
    pthread_mutex_lock(&k->mu);
    k->st.events[ev->type]++;
    kube_synced_now(k);
    pthread_mutex_unlock(&k->mu);
    switch (ev->type) {
    case KUBE_EVENT_ADDED:
    case KUBE_EVENT_MODIFIED:
    case KUBE_EVENT_DELETED:
        kube_progress(k);
        if (!ev->pod)
            kube_add(k, &k->st.pods_invalid, 1);
        else if (kube_apply_pod(k, ev->pod, ev->type == KUBE_EVENT_DELETED) != 0)
            return KUBE_STOP_NOMEM;
        if (!x->req.deadline_ns)
            x->req.deadline_ns = kube_relist_at(k); /* full now: the transport ends the watch */
        if (ev->resource_version)
            snprintf(k->rv, sizeof(k->rv), "%s", ev->resource_version);
        return 0;
    case KUBE_EVENT_BOOKMARK:
        kube_progress(k);
        if (ev->resource_version)
            snprintf(k->rv, sizeof(k->rv), "%s", ev->resource_version);
        return 0;
    case KUBE_EVENT_GONE:
    case KUBE_EVENT_ERROR:
        snprintf(x->event_msg, sizeof(x->event_msg), "code %d: %s", ev->code,
                 ev->message ? ev->message : "");
        for (char *p = x->event_msg; *p; p++)
            if ((unsigned char)*p < 0x20 || *p == 0x7f)
                *p = ' ';
        return ev->type == KUBE_EVENT_GONE ? KUBE_STOP_GONE : KUBE_STOP_ERROR;
    case KUBE_EVENT_UNKNOWN:
        break;
    }
    return 0;
}

/* A pod of a list: applied unless the list is past the pod bound. */
static int kube_list_pod(void *arg, const struct kube_pod *pod)
{
    struct kube_xfer *x = arg;
    struct kube *k = x->k;
    if (!pod) {
        kube_add(k, &k->st.pods_invalid, 1);
        return 0;
    }
    if (k->list_pods >= k->max_pods) {
        k->list_refused++;
        k->saturated = true;
        kube_add(k, &k->st.refused[KUBE_REFUSED_POD_BOUND], 1);
        return 0;
    }
    k->list_pods++;
    return kube_apply_pod(k, pod, false) != 0 ? KUBE_STOP_NOMEM : 0;
}

/* The API server's pod list URL, with this node's field selector. */
static int kube_pods_url(struct kube *k, struct buf *u)
{
    return kube_transport_url(k->tr, u, k->url, "/api/v1/pods", k->node_name);
}

/* ---- the API server: list, watch ---- */

enum kube_step {
    KUBE_STEP_OK,
    KUBE_STEP_RETRY,  /* after the backoff */
    KUBE_STEP_AGAIN,  /* at once (a new token) */
    KUBE_STEP_RELIST, /* the resource version is gone, or the watch undecodable:
                       * list again after the backoff */
    KUBE_STEP_FULL,   /* the index is full and its list due: list again at once */
    KUBE_STEP_STOP,
};

/* A failed request: counts it into the episode, logs its kind once, decides what next. */
static enum kube_step kube_failed(struct kube *k, const struct kube_result *r)
{
    if (r->outcome == KUBE_OUTCOME_STOPPED)
        return KUBE_STEP_STOP;
    /* a failure after a stable period starts a new streak: kube_stable_check() */
    kube_stable_check(k, clock_mono_now());
    k->healthy = false;
    if (!k->episode) {
        k->episode = true;
        k->restored_logged = false;
        k->episode_kinds = 0;
        k->episode_failures = 0;
    }
    k->episode_failures++;
    if (r->retry_after_ns > k->retry_after_ns)
        k->retry_after_ns = r->retry_after_ns;
    bool first = !(k->episode_kinds & (1u << r->outcome));
    k->episode_kinds |= 1u << r->outcome;
    char err[sizeof(k->st.last_error)];
    if (first) {
        pthread_mutex_lock(&k->mu);
        memcpy(err, k->st.last_error, sizeof(err));
        pthread_mutex_unlock(&k->mu);
    }
    switch (r->outcome) {
    case KUBE_OUTCOME_GONE:
        if (first)
            log_info("kubernetes: the watch of '%s' cannot resume (%s); listing pods again", k->url,
                     err);
        return KUBE_STEP_RELIST;
    case KUBE_OUTCOME_UNAUTHORIZED:
        if (first)
            log_warn("kubernetes: authentication failed (%s); reading the token file again", err);
        if (kube_token_load(k, true))
            return KUBE_STEP_AGAIN;
        return KUBE_STEP_RETRY;
    default:
        break;
    }
    if (first)
        log_warn("kubernetes: %s; retrying with backoff%s", err,
                 r->retry_after_ns ? " (and the server's Retry-After)" : "");
    return r->outcome == KUBE_OUTCOME_DECODE_ERROR ? KUBE_STEP_RELIST : KUBE_STEP_RETRY;
}

static void kube_first_sync(struct kube *k, size_t pods)
{
    pthread_mutex_lock(&k->mu);
    bool first = !k->st.synced;
    k->st.synced = true;
    kube_synced_now(k);
    pthread_mutex_unlock(&k->mu);
    if (first && kube_log_due(k, KUBE_LOG_SYNC))
        log_info("kubernetes: first pod list from '%s': %zu pods", k->url, pods);
}

/* A list is complete (or stopped at the pod bound): sweep, and say so once. */
static void kube_list_done(struct kube *k, size_t listed)
{
    k->listed_at = clock_mono_now();
    pthread_mutex_lock(&k->mu);
    kube_index_relist_end(k->ix, kube_now(k));
    pthread_mutex_unlock(&k->mu);
    if (k->list_refused > 0) {
        if (!k->bound_logged)
            log_warn("kubernetes: the pod list from '%s' holds more than %zu pods; keeping the "
                     "first %zu (pods past the bound are refused and counted: pod_bound)",
                     k->url, k->max_pods, k->max_pods);
        k->bound_logged = true;
    } else {
        k->bound_logged = false;
    }
    kube_progress(k);
    kube_first_sync(k, listed);
}

static void kube_list_begin(struct kube *k)
{
    k->list_pods = 0;
    k->list_refused = 0;
    k->saturated = false; /* until this list refuses a pod */
    pthread_mutex_lock(&k->mu);
    kube_index_relist_begin(k->ix);
    pthread_mutex_unlock(&k->mu);
}

/* Lists every page into the index (mark and sweep over all of them). */
static enum kube_step kube_list(struct kube *k)
{
    struct buf u;
    buf_init(&u, KUBE_URL_MAX);
    char cont[KUBE_MAX_TOKEN_BYTES + 1] = "";
    size_t pods = 0;
    enum kube_step step = KUBE_STEP_OK;
    /* pods are applied as they stream in: the sweep's marks start now */
    kube_list_begin(k);
    for (;;) {
        char limit[16];
        snprintf(limit, sizeof(limit), "%d", KUBE_PAGE_LIMIT);
        if (kube_pods_url(k, &u) != 0 || kube_transport_add_param(k->tr, &u, "limit", limit) != 0 ||
            kube_transport_add_param(k->tr, &u, cont[0] ? "continue" : "resourceVersion",
                                     cont[0] ? cont : "0") != 0) {
            kube_set_error(k, "cannot build the list URL");
            step = KUBE_STEP_RETRY;
            break;
        }
        kube_token_load(k, false);
        struct kube_result r = kube_get(k, buf_str(&u), KUBE_STREAM_LIST);
        if (r.outcome != KUBE_OUTCOME_OK) {
            step = kube_failed(k, &r);
            if (step == KUBE_STEP_RELIST)
                step = KUBE_STEP_RETRY; /* a list that fails so is retried after the backoff */
            break;
        }
        const struct kube_list_meta *meta = &r.meta;
        pods += meta->items;
        kube_progress(k);
        if (meta->cont[0] && k->list_refused == 0) {
            memcpy(cont, meta->cont, sizeof(cont));
            continue;
        }
        /* the last page, or the pod bound was reached: no further page; the
         * pods of the pages not asked for are refused too, when the server
         * said how many */
        if (meta->cont[0] && meta->has_remaining)
            kube_add(k, &k->st.refused[KUBE_REFUSED_POD_BOUND], meta->remaining);
        memcpy(k->rv, meta->resource_version, sizeof(k->rv));
        kube_list_done(k, pods);
        break;
    }
    buf_release(&u);
    return step;
}

static enum kube_step kube_watch(struct kube *k)
{
    struct buf u;
    buf_init(&u, KUBE_URL_MAX);
    char tmo[24];
    uint64_t secs = k->watch_timeout_ns / NS_PER_SEC;
    snprintf(tmo, sizeof(tmo), "%" PRIu64, secs ? secs : 1);
    if (kube_pods_url(k, &u) != 0 || kube_transport_add_param(k->tr, &u, "watch", "1") != 0 ||
        kube_transport_add_param(k->tr, &u, "resourceVersion", k->rv) != 0 ||
        kube_transport_add_param(k->tr, &u, "allowWatchBookmarks", "true") != 0 ||
        kube_transport_add_param(k->tr, &u, "timeoutSeconds", tmo) != 0) {
        buf_release(&u);
        kube_set_error(k, "cannot build the watch URL");
        return KUBE_STEP_RETRY;
    }
    if (k->watched_once)
        kube_add(k, &k->st.watch_restarts, 1);
    k->watched_once = true;
    kube_token_load(k, false);
    uint64_t t0 = clock_mono_now();
    struct kube_result r = kube_get(k, buf_str(&u), KUBE_STREAM_WATCH);
    buf_release(&u);
    if (r.outcome != KUBE_OUTCOME_OK)
        return kube_failed(k, &r);
    if (kube_relist_due(k))
        return KUBE_STEP_FULL; /* ended by the client, or as the list fell due */
    /* the server ended it: resume at once, unless it does so again and again */
    if (clock_mono_now() - t0 < NS_PER_SEC)
        return KUBE_STEP_RETRY;
    kube_progress(k); /* a watch that ran its course: the server is fine (a quiet node) */
    return KUBE_STEP_OK;
}

static void kube_run_api_server(struct kube *k)
{
    bool need_list = true;
    while (!kube_stopping(k)) {
        enum kube_step s;
        if (need_list) {
            s = kube_list(k);
            if (s == KUBE_STEP_OK)
                need_list = false;
        } else {
            s = kube_relist_due(k) ? KUBE_STEP_FULL : kube_watch(k);
            if (s == KUBE_STEP_RELIST || s == KUBE_STEP_FULL) {
                need_list = true;
                kube_add(k, &k->st.relists, 1);
                kube_add(k, &k->st.saturated_relists, s == KUBE_STEP_FULL);
                /* a 410 too: every failure backs off; a full index's list is no failure */
                s = s == KUBE_STEP_FULL ? KUBE_STEP_OK : KUBE_STEP_RETRY;
            }
        }
        if (s == KUBE_STEP_STOP)
            break;
        if (s == KUBE_STEP_RETRY && !kube_backoff_sleep(k))
            break;
    }
}

/* ---- the kubelet ---- */

static void kube_run_kubelet(struct kube *k)
{
    struct buf u;
    buf_init(&u, KUBE_URL_MAX);
    while (!kube_stopping(k)) {
        bool ok = false;
        if (kube_transport_url(k->tr, &u, k->url, "/pods", NULL) == 0) {
            kube_token_load(k, false);
            kube_list_begin(k);
            struct kube_result r = kube_get(k, buf_str(&u), KUBE_STREAM_LIST);
            if (r.outcome == KUBE_OUTCOME_OK) {
                kube_list_done(k, r.meta.items);
                ok = true;
            } else if (kube_failed(k, &r) == KUBE_STEP_AGAIN) {
                continue;
            }
        }
        if (!kube_sleep(k, ok ? k->poll_ns : kube_backoff(k)))
            break;
    }
    buf_release(&u);
}

static void *kube_thread(void *arg)
{
    struct kube *k = arg;
    if (k->source == KUBE_SOURCE_KUBELET)
        kube_run_kubelet(k);
    else
        kube_run_api_server(k);
    return NULL;
}

/* ---- start, stop, queries ---- */

static void kube_free(struct kube *k)
{
    if (!k)
        return;
    kube_transport_free(k->tr);
    kube_stream_free(k->watch);
    kube_stream_free(k->list);
    kube_index_free(k->ix);
    if (k->token) {
        explicit_bzero(k->token, strlen(k->token));
        alloc_free(k->token);
    }
    alloc_free(k->url);
    alloc_free(k->node_name);
    alloc_free(k->token_file);
    pthread_cond_destroy(&k->cv);
    pthread_mutex_destroy(&k->mu);
    alloc_free(k);
}

static int kube_dup(char **dst, const char *s)
{
    *dst = NULL;
    if (!s || !*s)
        return 0;
    *dst = alloc_strdup(s);
    return *dst ? 0 : -ENOMEM;
}

int kube_start(const struct kube_opts *o, struct kube **out)
{
    *out = NULL;
    if (!o || !o->url || !*o->url ||
        (o->source != KUBE_SOURCE_API_SERVER && o->source != KUBE_SOURCE_KUBELET))
        return -EINVAL;
    struct kube *k = alloc_calloc(1, sizeof(*k));
    if (!k)
        return -ENOMEM;
    pthread_mutex_init(&k->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&k->cv, &ca);
    pthread_condattr_destroy(&ca);
    atomic_init(&k->stopping, false);
    k->source = o->source;
    k->clock = o->clock ? *o->clock : clock_system;
    k->watch_timeout_ns = o->watch_timeout_ns ? o->watch_timeout_ns : KUBE_WATCH_TIMEOUT_DEFAULT_NS;
    k->poll_ns = o->poll_interval_ns ? o->poll_interval_ns : KUBE_POLL_INTERVAL_DEFAULT_NS;
    k->min_backoff_ns = o->min_backoff_ns ? o->min_backoff_ns : NS_PER_SEC;
    k->max_backoff_ns = o->max_backoff_ns ? o->max_backoff_ns : 60 * NS_PER_SEC;
    if (k->max_backoff_ns < k->min_backoff_ns)
        k->max_backoff_ns = k->min_backoff_ns;
    k->request_timeout_ns =
        o->request_timeout_ns ? o->request_timeout_ns : KUBE_REQUEST_TIMEOUT_DEFAULT_NS;
    /* a healthy watch completes an event (a bookmark at least) this often */
    k->progress_ns = (k->watch_timeout_ns < KUBE_BOOKMARK_INTERVAL_NS ? k->watch_timeout_ns
                                                                      : KUBE_BOOKMARK_INTERVAL_NS) +
                     KUBE_PROGRESS_SLACK_NS;
    if (o->progress_timeout_ns)
        k->progress_ns = o->progress_timeout_ns;
    k->max_pods = o->max_pods ? o->max_pods : KUBE_INDEX_MAX_PODS_DEFAULT;
    k->saturated_ns =
        o->saturated_relist_ns ? o->saturated_relist_ns : KUBE_SATURATED_RELIST_DEFAULT_NS;
    rand_init(&k->rnd, rand_seed());
    int rc = -ENOMEM;
    if (kube_dup(&k->url, o->url) != 0 || kube_dup(&k->node_name, o->node_name) != 0 ||
        kube_dup(&k->token_file, o->token_file) != 0)
        goto fail;
    if (kube_index_new(o->max_pods, o->grace_ns ? o->grace_ns : KUBE_INDEX_GRACE_DEFAULT_NS,
                       &k->ix) != 0 ||
        kube_stream_new(KUBE_STREAM_WATCH, &k->watch) != 0 ||
        kube_stream_new(KUBE_STREAM_LIST, &k->list) != 0)
        goto fail;
    struct kube_transport_opts to = {.ca_file = o->ca_file,
                                     .insecure_skip_verify = o->insecure_skip_verify};
    if (kube_transport_new(&to, &k->tr) != 0)
        goto fail;
    /* the thread takes no signals: they are the main thread's */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = -pthread_create(&k->thread, NULL, kube_thread, k);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0)
        goto fail;
    *out = k;
    return 0;
fail:
    kube_free(k);
    return rc;
}

void kube_stop(struct kube *k)
{
    if (!k)
        return;
    pthread_mutex_lock(&k->mu);
    atomic_store(&k->stopping, true);
    pthread_cond_broadcast(&k->cv);
    pthread_mutex_unlock(&k->mu);
    kube_transport_wakeup(k->tr);
    pthread_join(k->thread, NULL);
    kube_free(k);
}

int kube_lookup(struct kube *k, const char *container_id, struct labels *out, uint64_t *rev)
{
    pthread_mutex_lock(&k->mu);
    int rc = kube_index_lookup(k->ix, container_id, out, rev);
    pthread_mutex_unlock(&k->mu);
    return rc;
}

uint64_t kube_generation(struct kube *k)
{
    pthread_mutex_lock(&k->mu);
    uint64_t g = kube_index_generation(k->ix);
    pthread_mutex_unlock(&k->mu);
    return g;
}

void kube_stats(struct kube *k, struct kube_stats *out)
{
    pthread_mutex_lock(&k->mu);
    *out = k->st;
    kube_index_stats(k->ix, &out->index);
    out->refused[KUBE_REFUSED_INDEX_FULL] = out->index.over_cap;
    out->memory_bytes = k->st.memory_bytes + out->index.bytes;
    pthread_mutex_unlock(&k->mu);
}

int kube_container_ids(struct kube *k, char (**ids)[KUBE_CONTAINER_ID_LEN + 1], size_t *n)
{
    pthread_mutex_lock(&k->mu);
    int rc = kube_index_ids(k->ix, ids, n);
    pthread_mutex_unlock(&k->mu);
    return rc;
}
