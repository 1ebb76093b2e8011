/* SPDX-License-Identifier: MIT */
/*
 * kube_watch_probe: runs the Kubernetes pod-metadata client
 * (agent/discovery/kube_client.h) against a server named on the command line
 * and prints what its index holds, for tests driven by a fake API server.
 *
 * Usage:
 *   kube_watch_probe --url URL [--source api_server|kubelet] [--node NAME]
 *                    [--token-file PATH] [--ca-file PATH] [--insecure]
 *                    [--watch-timeout SECS] [--poll SECS] [--min-backoff SECS]
 *                    [--max-backoff SECS] [--grace SECS] [--max-pods N]
 *                    [--request-timeout SECS] [--progress-timeout SECS]
 *                    [--seconds N] [--debug]
 * SECS may have a fraction ("0.2"). Defaults: api_server, no node filter, no
 * token, the system CAs, the client's own defaults for the times, grace 60,
 * 10 seconds.
 *
 * Output (stdout): one JSON object per line: one at start, then one whenever,
 * at a check every 100 ms, the generation or the synced flag differs from the
 * last line's, and one more at exit (the last line, with "final": true).
 * Keys, in this order:
 *
 *   {"generation": <uint>, "synced": <bool>, "final": <bool>,
 *    "stats": {"requests": {"ok": n, "unauthorized": n, "forbidden": n, "gone": n,
 *                           "http_error": n, "error_event": n, "decode_error": n,
 *                           "transport": n, "stalled": n, "deadline": n,
 *                           "stopped": n},
 *              "relists": n, "watch_restarts": n,
 *              "events": {"added": n, "modified": n, "deleted": n, "bookmark": n,
 *                         "error": n, "gone": n, "unknown": n},
 *              "decode_errors": n, "unauthorized": n, "token_reads": n,
 *              "token_errors": n, "pods_invalid": n, "pods_truncated": n,
 *              "pods_filtered": n, "pods": n, "pods_terminating": n,
 *              "containers": n, "over_cap": n, "evicted": n, "duplicate_ids": n,
 *              "refused": {"event_too_large": n, "object_too_large": n,
 *                          "list_too_large": n, "too_deep": n, "pod_bound": n,
 *                          "index_full": n},
 *              "retry_after": n, "error_bodies_cut": n, "memory_bytes": n,
 *              "last_sync_real_ns": n, "last_error": "text"},
 *    "containers": {"<64 hex id>": {"rev": <uint>, "labels": {"<name>": "<value>", ...}},
 *                   ...}}
 *
 * Containers are sorted by id, labels by name; "rev" is the revision as an
 * unsigned 64-bit number. Log lines of the client go to stderr (--debug: all
 * of them), and so does "kube_watch_probe: stopped in <n> ms" at exit. Exit
 * status 0, or 2 for bad arguments / a client that did not start.
 */
#include "base/compat.h"

#include <json-c/json_object.h>
#include <unistd.h>

#include <curl/curl.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/strnum.h"
#include "discovery/kube_client.h"

#define NS_PER_SEC 1000000000ull

static int probe_secs(const char *s, uint64_t *out)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || !end || *end || end == s || !(v >= 0) || v > 1e6)
        return -EINVAL;
    *out = (uint64_t)(v * (double)NS_PER_SEC);
    return 0;
}

static void probe_add_u64(struct json_object *o, const char *key, uint64_t v)
{
    json_object_object_add(o, key, json_object_new_uint64(v));
}

static struct json_object *probe_stats(const struct kube_stats *st)
{
    struct json_object *o = json_object_new_object();
    struct json_object *req = json_object_new_object();
    for (int i = 0; i < KUBE_OUTCOME_COUNT; i++)
        probe_add_u64(req, kube_outcome_name((enum kube_outcome)i), st->requests[i]);
    json_object_object_add(o, "requests", req);
    probe_add_u64(o, "relists", st->relists);
    probe_add_u64(o, "watch_restarts", st->watch_restarts);
    struct json_object *ev = json_object_new_object();
    for (int i = 0; i <= KUBE_EVENT_UNKNOWN; i++)
        probe_add_u64(ev, kube_event_type_name((enum kube_event_type)i), st->events[i]);
    json_object_object_add(o, "events", ev);
    probe_add_u64(o, "decode_errors", st->decode_errors);
    probe_add_u64(o, "unauthorized", st->unauthorized);
    probe_add_u64(o, "token_reads", st->token_reads);
    probe_add_u64(o, "token_errors", st->token_errors);
    probe_add_u64(o, "pods_invalid", st->pods_invalid);
    probe_add_u64(o, "pods_truncated", st->pods_truncated);
    probe_add_u64(o, "pods_filtered", st->pods_filtered);
    probe_add_u64(o, "pods", st->index.pods);
    probe_add_u64(o, "pods_terminating", st->index.pods_terminating);
    probe_add_u64(o, "containers", st->index.containers);
    probe_add_u64(o, "over_cap", st->index.over_cap);
    probe_add_u64(o, "evicted", st->index.evicted);
    probe_add_u64(o, "duplicate_ids", st->index.duplicate_ids);
    struct json_object *ref = json_object_new_object();
    for (int i = 0; i < KUBE_REFUSED_COUNT; i++)
        probe_add_u64(ref, kube_refusal_name((enum kube_refusal)i), st->refused[i]);
    json_object_object_add(o, "refused", ref);
    probe_add_u64(o, "retry_after", st->retry_after);
    probe_add_u64(o, "error_bodies_cut", st->error_bodies_cut);
    probe_add_u64(o, "memory_bytes", st->memory_bytes);
    json_object_object_add(o, "last_sync_real_ns", json_object_new_int64(st->last_sync_real_ns));
    json_object_object_add(o, "last_error", json_object_new_string(st->last_error));
    return o;
}

static int probe_print(struct kube *k, bool final)
{
    struct kube_stats st;
    kube_stats(k, &st);
    struct json_object *top = json_object_new_object();
    probe_add_u64(top, "generation", st.index.generation);
    json_object_object_add(top, "synced", json_object_new_boolean(st.synced));
    json_object_object_add(top, "final", json_object_new_boolean(final));
    json_object_object_add(top, "stats", probe_stats(&st));
    struct json_object *ctrs = json_object_new_object();
    char(*ids)[KUBE_CONTAINER_ID_LEN + 1] = NULL;
    size_t n = 0;
    if (kube_container_ids(k, &ids, &n) != 0) {
        json_object_put(top);
        json_object_put(ctrs);
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        struct labels ls;
        labels_init(&ls);
        uint64_t rev = 0;
        if (kube_lookup(k, ids[i], &ls, &rev) != 1) {
            labels_release(&ls);
            continue; /* expired in between */
        }
        struct json_object *c = json_object_new_object();
        probe_add_u64(c, "rev", rev);
        struct json_object *lo = json_object_new_object();
        for (size_t j = 0; j < ls.n; j++)
            json_object_object_add(lo, ls.v[j].name, json_object_new_string(ls.v[j].value));
        json_object_object_add(c, "labels", lo);
        json_object_object_add(ctrs, ids[i], c);
        labels_release(&ls);
    }
    alloc_free(ids);
    json_object_object_add(top, "containers", ctrs);
    printf("%s\n", json_object_to_json_string_ext(top, JSON_C_TO_STRING_PLAIN |
                                                           JSON_C_TO_STRING_NOSLASHESCAPE));
    fflush(stdout);
    json_object_put(top);
    return 0;
}

static void probe_usage(void)
{
    fprintf(stderr,
            "usage: kube_watch_probe --url URL [--source api_server|kubelet] [--node NAME]\n"
            "  [--token-file PATH] [--ca-file PATH] [--insecure] [--watch-timeout SECS]\n"
            "  [--poll SECS] [--min-backoff SECS] [--max-backoff SECS] [--grace SECS]\n"
            "  [--max-pods N] [--request-timeout SECS] [--progress-timeout SECS]\n"
            "  [--seconds N] [--debug]\n");
}

int main(int argc, char **argv)
{
    struct kube_opts o = {.source = KUBE_SOURCE_API_SERVER};
    uint64_t run_ns = 10 * NS_PER_SEC;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool takes = true;
        int rc = 0;
        if (strcmp(a, "--insecure") == 0) {
            o.insecure_skip_verify = true;
            takes = false;
        } else if (strcmp(a, "--debug") == 0) {
            log_set_level(LOG_LEVEL_DEBUG);
            takes = false;
        } else if (!v) {
            rc = -EINVAL;
        } else if (strcmp(a, "--url") == 0) {
            o.url = v;
        } else if (strcmp(a, "--node") == 0) {
            o.node_name = v;
        } else if (strcmp(a, "--token-file") == 0) {
            o.token_file = v;
        } else if (strcmp(a, "--ca-file") == 0) {
            o.ca_file = v;
        } else if (strcmp(a, "--source") == 0) {
            if (strcmp(v, "api_server") == 0)
                o.source = KUBE_SOURCE_API_SERVER;
            else if (strcmp(v, "kubelet") == 0)
                o.source = KUBE_SOURCE_KUBELET;
            else
                rc = -EINVAL;
        } else if (strcmp(a, "--watch-timeout") == 0) {
            rc = probe_secs(v, &o.watch_timeout_ns);
        } else if (strcmp(a, "--poll") == 0) {
            rc = probe_secs(v, &o.poll_interval_ns);
        } else if (strcmp(a, "--min-backoff") == 0) {
            rc = probe_secs(v, &o.min_backoff_ns);
        } else if (strcmp(a, "--max-backoff") == 0) {
            rc = probe_secs(v, &o.max_backoff_ns);
        } else if (strcmp(a, "--grace") == 0) {
            rc = probe_secs(v, &o.grace_ns);
        } else if (strcmp(a, "--request-timeout") == 0) {
            rc = probe_secs(v, &o.request_timeout_ns);
        } else if (strcmp(a, "--progress-timeout") == 0) {
            rc = probe_secs(v, &o.progress_timeout_ns);
        } else if (strcmp(a, "--seconds") == 0) {
            rc = probe_secs(v, &run_ns);
        } else if (strcmp(a, "--max-pods") == 0) {
            int64_t n = 0;
            rc = strnum_parse_i64(v, 1, 1000000, &n);
            o.max_pods = (size_t)n;
        } else {
            rc = -EINVAL;
        }
        if (rc != 0) {
            fprintf(stderr, "kube_watch_probe: bad argument '%s'\n", a);
            probe_usage();
            return 2;
        }
        if (takes)
            i++;
    }
    if (!o.url) {
        probe_usage();
        return 2;
    }
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fprintf(stderr, "kube_watch_probe: curl_global_init failed\n");
        return 2;
    }
    struct kube *k = NULL;
    int rc = kube_start(&o, &k);
    if (rc != 0) {
        fprintf(stderr, "kube_watch_probe: cannot start: %s\n", strerror(-rc));
        curl_global_cleanup();
        return 2;
    }
    uint64_t end = clock_mono_now() + run_ns;
    uint64_t last_gen = 0;
    bool last_synced = false, printed = false;
    while (clock_mono_now() < end) {
        struct kube_stats st;
        kube_stats(k, &st);
        if (!printed || st.index.generation != last_gen || st.synced != last_synced) {
            if (probe_print(k, false) != 0)
                break;
            printed = true;
            last_gen = st.index.generation;
            last_synced = st.synced;
        }
        usleep(100 * 1000);
    }
    probe_print(k, true);
    uint64_t t0 = clock_mono_now();
    kube_stop(k);
    fprintf(stderr, "kube_watch_probe: stopped in %" PRIu64 " ms\n",
            (clock_mono_now() - t0) / 1000000);
    curl_global_cleanup();
    return 0;
}
