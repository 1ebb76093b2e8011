/* SPDX-License-Identifier: MIT */
/*
 * kube_client.h: a thread that keeps a kube_index (kube_index.h) of this
 * node's pods current, from the Kubernetes API server (list + watch) or the
 * kubelet (polled /pods), so that a container id found in a cgroup path
 * (discovery/proc_scan.h) can be turned into Prometheus-style
 * __meta_kubernetes_* labels (kube_pod.h) with kube_lookup().
 *
 * API server (KUBE_SOURCE_API_SERVER), with S = "fieldSelector=spec.nodeName%3D<node>"
 * when node_name is set (else every pod of the cluster, up to the pod bound):
 *   list:  GET {url}/api/v1/pods?S&limit=500&resourceVersion=0, then while
 *          metadata.continue is set GET {url}/api/v1/pods?S&limit=500&continue=<c>;
 *          the pages together replace the index (mark and sweep). Pods are
 *          applied as each streams in (kube_stream.h: no page is held whole).
 *          Pod bound: a list holding more than max_pods pods keeps the
 *          first max_pods, refuses the rest (counted: pod_bound; logged once
 *          until a list fits again) and asks for no further page;
 *   watch: GET {url}/api/v1/pods?S&watch=1&resourceVersion=<rv>
 *          &allowWatchBookmarks=true&timeoutSeconds=<watch_timeout>, decoded
 *          as it streams. ADDED/MODIFIED/DELETED update the index and the
 *          resource version, BOOKMARK the resource version. A watch the
 *          server ends normally resumes at once from the last resource
 *          version (after the backoff if it lasted under a second);
 *   full:  an index that refused a pod since the last list (the pod bound of
 *          a list, index_full on a watch event) never learns that pod from
 *          the watch, which will not send it again: while so, the client
 *          lists again saturated_relist after the last list ended (ending
 *          the watch itself then; counted: relists and saturated_relists),
 *          so a pod refused while the index was full is learned once room
 *          is made, with at most one such list per saturated_relist.
 *
 * Liveness (each outcome counted in requests[], see enum kube_outcome):
 *  - a watch with no complete event (a bookmark counts) within
 *    min(watch_timeout, KUBE_BOOKMARK_INTERVAL) + KUBE_PROGRESS_SLACK of its
 *    start or its last event is dropped (stalled) and resumed from the last
 *    resource version: the API server sends a watcher that allows bookmarks
 *    one about every minute, and ends the watch at timeoutSeconds, so a
 *    healthy watch is never that quiet;
 *  - a list page (or the kubelet's /pods) not complete within
 *    request_timeout is abandoned (deadline); 10 s to connect;
 *  - a non-200 answer's body is read to KUBE_ERRBODY_MAX bytes at most, then
 *    the connection is closed.
 * Failures: every kind (connection, TLS, timeouts, stalls, deadlines, 5xx,
 *   other statuses, undecodable bodies, ERROR events, 410 Gone) is followed
 *   by a backoff: min_backoff doubled per failure up to max_backoff, the wait
 *   uniformly random in [d/2, d]. The streak (and the doubling) starts over
 *   only once requests have made progress for KUBE_STABLE without a failure,
 *   so a server that fails a second after every success still backs off.
 *   A 429 or 503 with Retry-After (seconds or an HTTP-date) waits at least
 *   that long, capped at KUBE_RETRY_AFTER_MAX. After a 410 (the HTTP status or
 *   an ERROR event with a 410 Status) or an undecodable watch the client
 *   lists again (after the backoff); after a stall it resumes the watch.
 *   401: the token file is read again at once and the request retried
 *   without waiting if the token changed; otherwise after the backoff.
 * Kubelet (KUBE_SOURCE_KUBELET): GET {url}/pods every poll_interval, the
 *   PodList filtered to spec.nodeName == node_name when node_name is set,
 *   replacing the index each time (the pod bound applies); a failure
 *   retries with the backoff.
 *
 * Authorization: "Bearer <token>", the token being the token file's content
 * with surrounding whitespace removed; the file is read again at least every
 * 60 s and after every 401. No token file, or one that does not exist: no
 * Authorization header. A token with a control character inside, or over
 * 64 KiB, is refused (the previous token stays in use; the error is shown).
 * TLS: ca_file (CURLOPT_CAINFO; NULL: the system's CAs) or
 * insecure_skip_verify.
 *
 * Memory: the index (its own bounds, kube_index.h) plus two decoders of
 * fixed size (kube_stream.h); nothing grows with what the server sends.
 *
 * Deleted pods stay in the index for the grace period (60 s by default, on
 * opts.clock's monotonic time), so a process still terminating keeps its
 * labels. Logging is by episode: an episode starts at a failure and ends
 * once requests made progress for KUBE_STABLE; each kind of failure is
 * logged the first time it happens in an episode, and "restored" once when
 * the first request after the failures succeeds; never per attempt or event.
 *
 * Ownership: kube_start() copies the options (strings too; the clock struct
 * is copied, its arg must outlive the client). Thread safety: kube_lookup(),
 * kube_generation(), kube_stats() and kube_container_ids() may be called from
 * any thread while the client runs (the index is under a mutex);
 * kube_start()/kube_stop() by the owner. The process must have called
 * curl_global_init() before (cli/agent.c does).
 */
#ifndef PYPROFD_DISCOVERY_KUBE_CLIENT_H
#define PYPROFD_DISCOVERY_KUBE_CLIENT_H

#include "base/compat.h"

#include "base/clock.h"
#include "base/labels.h"
#include "discovery/kube_index.h"
#include "discovery/kube_stream.h"
#include "discovery/kube_transport.h"

#define KUBE_BOOKMARK_INTERVAL_NS (60ull * 1000000000ull)
#define KUBE_PROGRESS_SLACK_NS    (5ull * 1000000000ull)
#define KUBE_STABLE_NS            (30ull * 1000000000ull)
/* how often a full index (see "full" above) is listed again, at most */
#define KUBE_SATURATED_RELIST_DEFAULT_NS (120ull * 1000000000ull)

/*
 * What a zero option means. The agent always passes its configuration's
 * values (discovery.kubernetes in config.def, whose defaults these equal:
 * config.def cannot include this header, the stage order forbids it, so
 * tests/unit/agent/discovery/test_kube_client.c checks that they agree).
 */
#define KUBE_WATCH_TIMEOUT_DEFAULT_NS   (300ull * 1000000000ull)
#define KUBE_POLL_INTERVAL_DEFAULT_NS   (15ull * 1000000000ull)
#define KUBE_REQUEST_TIMEOUT_DEFAULT_NS (60ull * 1000000000ull)

enum kube_source {
    KUBE_SOURCE_API_SERVER,
    KUBE_SOURCE_KUBELET,
};

struct kube_opts {
    enum kube_source source;
    const char *url;        /* base URL ("https://10.0.0.1:443"), no trailing path needed */
    const char *node_name;  /* NULL or "": no node filter */
    const char *token_file; /* NULL, or a file that may be absent: no Authorization */
    const char *ca_file;    /* NULL: the system's CAs */
    bool insecure_skip_verify;
    uint64_t watch_timeout_ns; /* 0: KUBE_WATCH_TIMEOUT_DEFAULT_NS; rounded to s, at least 1 s */
    uint64_t poll_interval_ns; /* kubelet; 0: KUBE_POLL_INTERVAL_DEFAULT_NS */
    uint64_t min_backoff_ns;   /* 0: 1 s */
    uint64_t max_backoff_ns;   /* 0: 60 s; at least min_backoff */
    const struct clock *clock; /* NULL: clock_system */
    size_t max_pods;           /* 0: KUBE_INDEX_MAX_PODS_DEFAULT */
    uint64_t grace_ns;         /* 0: KUBE_INDEX_GRACE_DEFAULT_NS */
    uint64_t
        request_timeout_ns; /* a list page or kubelet poll; 0: KUBE_REQUEST_TIMEOUT_DEFAULT_NS */
    /* a watch without a complete event for this long is stalled; 0: derived
     * (min(watch_timeout, KUBE_BOOKMARK_INTERVAL) + KUBE_PROGRESS_SLACK) */
    uint64_t progress_timeout_ns;
    /* a full index is listed again this long after the last list; 0:
     * KUBE_SATURATED_RELIST_DEFAULT_NS (tests give less) */
    uint64_t saturated_relist_ns;
};

/** Requests by outcome (one per HTTP request; a watch counts when it ends). */
enum kube_outcome {
    KUBE_OUTCOME_OK,           /* 200, complete (a watch: ended by the server, or by the client
                                * for a full index's list) */
    KUBE_OUTCOME_UNAUTHORIZED, /* 401 */
    KUBE_OUTCOME_FORBIDDEN,    /* 403 */
    KUBE_OUTCOME_GONE,         /* 410, or a watch ended by a 410 ERROR event */
    KUBE_OUTCOME_HTTP_ERROR,   /* another non-200 status */
    KUBE_OUTCOME_ERROR_EVENT,  /* a watch ended by another ERROR event */
    KUBE_OUTCOME_DECODE_ERROR, /* a body kube_stream.h refused */
    KUBE_OUTCOME_TRANSPORT,    /* connection, TLS, timeout, a drop mid-body */
    KUBE_OUTCOME_STALLED,      /* a watch without a complete event for too long */
    KUBE_OUTCOME_DEADLINE,     /* a list page or kubelet poll over request_timeout */
    KUBE_OUTCOME_STOPPED,      /* ended by kube_stop() */
    KUBE_OUTCOME_COUNT,
};

/** The name of @a o ("ok", "unauthorized", ...), for /metrics. */
const char *kube_outcome_name(enum kube_outcome o);

/** What the server sent that the client refused to keep, by reason. */
enum kube_refusal {
    KUBE_REFUSED_EVENT_TOO_LARGE,  /* a watch event over KUBE_MAX_EVENT_BYTES: passed over */
    KUBE_REFUSED_OBJECT_TOO_LARGE, /* a pod in a list over KUBE_MAX_OBJECT_BYTES: passed over */
    KUBE_REFUSED_LIST_TOO_LARGE,   /* a list body over KUBE_MAX_LIST_BYTES: the list retried */
    KUBE_REFUSED_TOO_DEEP,         /* nesting over KUBE_MAX_DEPTH: the body dropped */
    KUBE_REFUSED_POD_BOUND,        /* pods of a list past max_pods */
    KUBE_REFUSED_INDEX_FULL,       /* pods the index had no room for (kube_index.h) */
    KUBE_REFUSED_COUNT,
};

/** The name of @a r ("event_too_large", ...), for /metrics. */
const char *kube_refusal_name(enum kube_refusal r);

struct kube_stats {
    uint64_t requests[KUBE_OUTCOME_COUNT];
    uint64_t relists;           /* lists after the first: a watch that could not resume, ... */
    uint64_t saturated_relists; /* ... and, of them, those of a full index (see "full") */
    uint64_t watch_restarts;    /* watches started after the first */
    uint64_t events[KUBE_EVENT_UNKNOWN + 1]; /* watch events by type */
    uint64_t decode_errors;                  /* bodies or events refused */
    uint64_t unauthorized;                   /* 401s */
    uint64_t token_reads, token_errors;      /* token file reads, failed ones */
    uint64_t pods_invalid;                   /* pod objects without a uid */
    uint64_t pods_truncated;                 /* pods that lost entries to a bound */
    uint64_t pods_filtered;                  /* kubelet pods of another node */
    uint64_t refused[KUBE_REFUSED_COUNT];    /* see enum kube_refusal */
    uint64_t retry_after;                    /* waits Retry-After made longer */
    uint64_t error_bodies_cut;               /* non-200 bodies cut at KUBE_ERRBODY_MAX */
    size_t memory_bytes;                     /* held: the index and the decoders */
    struct kube_index_stats index;           /* pods, containers, generation, caps */
    bool synced;                             /* the first list is done */
    int64_t last_sync_real_ns;               /* last list or watch event; 0: never */
    char last_error[256];                    /* "" when none yet */
};

struct kube;

/**
 * Copies @a o and starts the client's thread. Returns 0 with *@a out,
 * -EINVAL (no url, a bad source), -ENOMEM, or -errno of pthread_create.
 */
PYPROFD_WARN_UNUSED int kube_start(const struct kube_opts *o, struct kube **out);

/**
 * Stops the thread (promptly: a transfer in progress or a backoff wait is
 * interrupted, well under a second) and frees everything. NULL is a no-op.
 */
void kube_stop(struct kube *k);

/**
 * Adds container @a container_id's labels (64 hex, or with its
 * "<scheme>://") to @a out and stores its revision in *@a rev (may be NULL).
 * Returns 1 (found), 0 (not found) or -ENOMEM (@a out holds a part).
 */
PYPROFD_WARN_UNUSED int kube_lookup(struct kube *k, const char *container_id, struct labels *out,
                                    uint64_t *rev);

/** The index's generation: it changes whenever some lookup's answer would. */
uint64_t kube_generation(struct kube *k);

/** A copy of the counters. */
void kube_stats(struct kube *k, struct kube_stats *out);

/** Every container id that can be looked up, sorted (kube_index_ids()). */
PYPROFD_WARN_UNUSED int kube_container_ids(struct kube *k, char (**ids)[KUBE_CONTAINER_ID_LEN + 1],
                                           size_t *n);

#endif /* PYPROFD_DISCOVERY_KUBE_CLIENT_H */
