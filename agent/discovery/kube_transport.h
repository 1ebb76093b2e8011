/* SPDX-License-Identifier: MIT */
/*
 * kube_transport.h: the HTTP side of the Kubernetes client (kube_client.h):
 * one libcurl easy handle driven through a multi handle, so that the owner
 * can wake a transfer that waits for bytes (kube_transport_wakeup(), from
 * any thread) instead of waiting for libcurl's next progress call.
 *
 * One GET at a time (kube_transport_get()): the request says where, with
 * which bearer token, how long it may take (a deadline for a list page, a
 * progress limit for a watch) and where the body of a 200 goes, as it
 * streams in; the response says how it ended. A non-200 body is kept up to
 * KUBE_ERRBODY_MAX bytes for its message, then the connection is closed, so
 * an endless error body costs nothing. Only http and https are spoken;
 * connecting may take 10 s; a list (not a watch) must also keep moving (30 s
 * without a byte ends it). TLS: the CA file given (NULL: the system's CAs),
 * or no verification at all when asked.
 *
 * Ownership: kube_transport_new() copies the options. Thread safety: a
 * transport is its owner thread's; kube_transport_wakeup() alone may be
 * called from another thread while a request runs. The process must have
 * called curl_global_init() before.
 */
#ifndef PYPROFD_DISCOVERY_KUBE_TRANSPORT_H
#define PYPROFD_DISCOVERY_KUBE_TRANSPORT_H

#include "base/compat.h"

#include <stdatomic.h>

#include <curl/curl.h>

#include "base/buf.h"

#define KUBE_RETRY_AFTER_MAX_NS (300ull * 1000000000ull)
#define KUBE_ERRBODY_MAX        4096
#define KUBE_ERRMSG_MAX         128 /* of a non-200 body, in kube_response.message */

struct kube_transport_opts {
    const char *ca_file; /* NULL: the system's CAs */
    bool insecure_skip_verify;
};

struct kube_transport;

/** Makes a transport. Returns 0 with *@a out, or -ENOMEM. */
PYPROFD_WARN_UNUSED int kube_transport_new(const struct kube_transport_opts *o,
                                           struct kube_transport **out);

/** Frees @a t (no request may run). NULL is a no-op. */
void kube_transport_free(struct kube_transport *t);

/** Wakes a request waiting for bytes, so that it sees its stop flag now. Any thread. */
void kube_transport_wakeup(struct kube_transport *t);

/**
 * Appends "?name=value" (or "&name=value" when @a u has a '?' already) to
 * @a u, the value URL-escaped. Returns 0, -ENOMEM or buf_add()'s -E2BIG.
 */
PYPROFD_WARN_UNUSED int kube_transport_add_param(struct kube_transport *t, struct buf *u,
                                                 const char *name, const char *value);

/**
 * Sets @a u to @a base (trailing '/' removed) followed by @a path and, when
 * @a node_name is not NULL, "?fieldSelector=spec.nodeName%3D<node_name>".
 * Returns 0, -ENOMEM, -ENAMETOOLONG (a node name over 490 bytes) or
 * buf_add()'s -E2BIG.
 */
PYPROFD_WARN_UNUSED int kube_transport_url(struct kube_transport *t, struct buf *u,
                                           const char *base, const char *path,
                                           const char *node_name);

/**
 * One GET; the fields the caller sets, and progress_at, which its body
 * callback moves on (and deadline_ns, which it may set while the transfer
 * runs: read before every wait).
 */
struct kube_request {
    const char *url;
    const char *token;           /* NULL: no Authorization header */
    bool watch;                  /* no low-speed limit; judged by progress_ns instead */
    uint64_t deadline_ns;        /* clock_mono_now() time it must end by; 0: none */
    uint64_t progress_ns;        /* ended as stalled this long after progress_at; 0: never */
    uint64_t progress_at;        /* set to the start by kube_transport_get() */
    const atomic_bool *stopping; /* once true, the transfer ends */
    /* the body of a 200 as it arrives: 0 goes on, anything else ends the transfer */
    int (*body)(void *arg, const char *data, size_t len);
    /* called while the transfer waits, about four times a second */
    void (*idle)(void *arg);
    void *arg;
};

enum kube_timeout {
    KUBE_TIMEOUT_NONE,
    KUBE_TIMEOUT_STALLED,  /* no progress within progress_ns */
    KUBE_TIMEOUT_DEADLINE, /* not done by deadline_ns */
};

struct kube_response {
    /* libcurl's result: CURLE_ABORTED_BY_CALLBACK when stopped or ended by
     * the body callback (the caller knows which), CURLE_OPERATION_TIMEDOUT
     * with timed_out set when the deadline passed or the transfer stalled */
    CURLcode rc;
    long status; /* the HTTP status; 0 when none came */
    enum kube_timeout timed_out;
    bool body_cut;           /* a non-200 body was longer than KUBE_ERRBODY_MAX */
    uint64_t retry_after_ns; /* a 429's or 503's Retry-After, capped at KUBE_RETRY_AFTER_MAX_NS */
    char message[KUBE_ERRMSG_MAX]; /* a non-200 body's text, printable bytes only */
};

/** Runs the GET @a r (until it ends, is stopped, times out or stalls) into @a out. */
void kube_transport_get(struct kube_transport *t, struct kube_request *r,
                        struct kube_response *out);

#endif /* PYPROFD_DISCOVERY_KUBE_TRANSPORT_H */
