/* SPDX-License-Identifier: MIT */
/*
 * pyroscope.h: the Grafana Pyroscope exporter, a transport for the push
 * engine (exporters/push/push.h) that speaks one of Pyroscope's two
 * ingestion APIs over libcurl:
 *
 *  - api "push" (the default): Connect unary, POST
 *    {url}/push.v1.PusherService/Push, Content-Type application/proto,
 *    Connect-Protocol-Version 1, the body a push.v1.PushRequest
 *    (proto/push.proto) holding one series per profile: the series labels
 *    (__name__, service_name, the target's labels, external labels) and one
 *    RawSample with the gzipped pprof and a random UUID. A Connect error body
 *    ({"code": "...", "message": "..."}) becomes the result's message; its
 *    code decides: unavailable, resource_exhausted, deadline_exceeded,
 *    aborted, unknown, internal and data_loss are retried, every other code
 *    (invalid_argument, unauthenticated, ...) is dropped. Without a Connect
 *    code the HTTP status decides (endpoint.h).
 *  - api "ingest", for servers without the push API: POST
 *    {url}/ingest?name=APP{k=v,...}&from=S&until=S&format=pprof&sampleRate=HZ
 *    &spyName=pyprofd, the body the gzipped pprof as is (format=pprof selects
 *    a raw body, not a multipart form), Content-Type
 *    application/octet-stream. APP is the service_name label (else
 *    __name__), the tags the other labels not starting with "__"; the server
 *    derives __name__ from the profile's sample types itself.
 *
 * Auth, tenant, custom headers and TLS come from the endpoint (endpoint.h);
 * profiles older than Pyroscope accepts (one hour) are dropped, not sent.
 *
 * Thread safety: as push.h.
 */
#ifndef PYPROFD_EXPORTERS_PYROSCOPE_PYROSCOPE_H
#define PYPROFD_EXPORTERS_PYROSCOPE_PYROSCOPE_H

#include "base/compat.h"

#include "base/labels.h"
#include "config/config.h"
#include "exporters/exporter.h"
#include "exporters/push/push.h"

/** Pyroscope rejects profiles older than this by default (validation.reject-older-than). */
#define PYROSCOPE_MAX_AGE_NS (3600ull * 1000000000ull)

/**
 * Creates a Pyroscope exporter for remote_write entry @a rw (type pyroscope),
 * copying what it needs of it (push_exporter_new()). @a clock (borrowed, as push_exporter_new()
 * says) may be NULL (clock_system).
 * Returns 0 with @a out filled (free with out->ops->free(out->ctx)), -ENOMEM, -EINVAL (no url) or
 * another negative errno.
 */
PYPROFD_WARN_UNUSED int pyroscope_exporter_new(const struct config_remote_write *rw,
                                               const struct clock *clock, struct exporter *out);

#ifdef PYPROFD_UNITTEST
/* pyroscope.c internals reached by tests/unit/exporters/pyroscope/test_pyroscope.c */
int pyroscope_ingest_name(const struct labels *ls, char *buf, size_t len);
void pyroscope_connect_error(const char *body, struct push_result *res);
#endif

#endif /* PYPROFD_EXPORTERS_PYROSCOPE_PYROSCOPE_H */
