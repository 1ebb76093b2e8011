/* SPDX-License-Identifier: MIT */
/*
 * parca.h: the Parca push exporter. Each profile becomes one unary gRPC call
 * parca.profilestore.v1alpha1.ProfileStoreService/WriteRaw, spoken with
 * libcurl over HTTP/2: cleartext h2 with prior knowledge for http:// URLs,
 * ALPN-negotiated h2 for https:// ones. The request is one length-prefixed
 * message (flag byte 0, 4-byte big-endian length) holding a WriteRawRequest
 * with one series: the profile's series labels (__name__ included) as a
 * LabelSet, and one RawSample whose raw_profile is the gzipped pprof;
 * `normalized` is set (see parca.c). The outcome is grpc-status /
 * grpc-message, read through libcurl's header API (curl_easy_header()) from
 * the trailers, or from the headers of a trailers-only reply; a reply
 * without grpc-status, or with an HTTP status other than 200, is classified
 * by gRPC's HTTP-to-status mapping.
 *
 * Retried (PUSH_RETRY): UNAVAILABLE (14), RESOURCE_EXHAUSTED (8),
 * DEADLINE_EXCEEDED (4), ABORTED (10), and transport errors and timeouts;
 * every other status is dropped (PUSH_DROP). Queueing, backoff, age limits
 * and metrics are the shared engine's (exporters/push/push.h); TLS, the
 * bearer token and custom headers come from exporters/push/endpoint.h.
 *
 * Thread safety: parca_exporter_new() is called at start-up (it creates the
 * libcurl handle, so curl_global_init() must have run, or run implicitly on
 * this thread, before any other thread uses libcurl); the exporter it
 * returns follows exporter.h.
 */
#ifndef PYPROFD_EXPORTERS_PARCA_PARCA_H
#define PYPROFD_EXPORTERS_PARCA_PARCA_H

#include "base/compat.h"

#include <curl/curl.h>

#include "config/config.h"
#include "exporters/exporter.h"
#include "exporters/push/push.h"

/** The gRPC method, appended to the endpoint's URL. */
#define PARCA_WRITERAW_PATH "/parca.profilestore.v1alpha1.ProfileStoreService/WriteRaw"

/**
 * Profiles older than this are dropped by the engine, not sent: Parca takes
 * old timestamps, but a profile that has waited an hour is not worth
 * delaying newer ones for (the same bound as Pyroscope's ingestion window).
 */
#define PARCA_MAX_AGE_NS (3600ull * 1000000000ull)

/** The largest request sent (Parca's server accepts gRPC messages up to 64 MiB). */
#define PARCA_MAX_MESSAGE (64u << 20)

/** The most bytes of a reply body kept (for the error message); the rest is read and discarded. */
#define PARCA_BODY_KEEP 512u

/**
 * Creates the Parca exporter for remote_write entry @a rw (type parca):
 * copies its endpoint settings (push_endpoint_init), creates the libcurl
 * handle that every request of this endpoint reuses (so the HTTP/2
 * connection is kept), and hands the transport to push_exporter_new() with
 * max age PARCA_MAX_AGE_NS; @a rw is only read (push_exporter_new()
 * copies its write_relabel rules); @a clock (borrowed, as push_exporter_new()
 * says) may be NULL (clock_system). Returns 0 with @a out
 * filled, -EPROTONOSUPPORT when libcurl lacks HTTP/2, -EINVAL when the URL
 * is neither http:// nor https:// (or cannot take tls_config.server_name), -ENOMEM, or an error of
 * push_exporter_new().
 */
PYPROFD_WARN_UNUSED int parca_exporter_new(const struct config_remote_write *rw,
                                           const struct clock *clock, struct exporter *out);

/* Internal: what one reply said (its headers and trailers, the start of its body). */
struct parca_reply {
    long http_status;       /* CURLINFO_RESPONSE_CODE; 0 when none */
    int grpc_status;        /* -1 when no grpc-status was seen */
    bool grpc_message_seen; /* grpc_message holds a decoded grpc-message */
    char grpc_message[256];
    char retry_after[64]; /* Retry-After (from a proxy's 429/503, say); "" when none */
    char body[PARCA_BODY_KEEP + 1];
    size_t body_len; /* bytes kept in body (NUL-terminated) */
};

#ifdef PYPROFD_UNITTEST
/* parca.c internals reached by tests/unit/exporters/parca/test_parca.c */
int parca_encode(const struct push_request *r, uint8_t **out, size_t *out_len);
void parca_reply_init(struct parca_reply *rep);
void parca_reply_values(struct parca_reply *rep, const char *grpc_status, const char *grpc_message,
                        const char *retry_after);
void parca_reply_body(struct parca_reply *rep, const char *data, size_t len);
size_t parca_percent_decode(const char *in, size_t len, char *out, size_t cap);
int parca_grpc_timeout(uint64_t ns, char *buf, size_t cap);
int parca_http_to_grpc(long http_status);
void parca_classify(CURLcode rc, const char *curl_err, long http_version,
                    const struct parca_reply *rep, int64_t now_real_ns, struct push_result *res);
#endif

#endif /* PYPROFD_EXPORTERS_PARCA_PARCA_H */
