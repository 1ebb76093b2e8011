/* SPDX-License-Identifier: MIT */
/*
 * parca.c: the Parca transport for the push engine: WriteRaw as one unary
 * gRPC call over HTTP/2 with libcurl (see parca.h). The engine calls
 * parca_send() on the endpoint's sender thread; everything here is that
 * thread's, including the one easy handle whose connection cache keeps the
 * HTTP/2 connection open between pushes.
 */
#include "base/compat.h"

#include <limits.h>
#include <strings.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/curlopt.h"
#include "base/strnum.h"
#include "base/utf8.h"
#include "exporters/parca/parca.h"
#include "exporters/push/endpoint.h"
#include "profilestore.pb-c.h"

#ifndef PYPROFD_VERSION
#define PYPROFD_VERSION "unknown"
#endif

#define PARCA_FRAME_HEADER 5u /* compressed flag + 4-byte big-endian length */

/* The gRPC status codes pyprofd names in messages (grpc status.h order). */
static const char *const parca_code_names[] = {
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
};

enum {
    PARCA_GRPC_OK = 0,
    PARCA_GRPC_UNKNOWN = 2,
    PARCA_GRPC_DEADLINE_EXCEEDED = 4,
    PARCA_GRPC_PERMISSION_DENIED = 7,
    PARCA_GRPC_RESOURCE_EXHAUSTED = 8,
    PARCA_GRPC_ABORTED = 10,
    PARCA_GRPC_UNIMPLEMENTED = 12,
    PARCA_GRPC_INTERNAL = 13,
    PARCA_GRPC_UNAVAILABLE = 14,
    PARCA_GRPC_UNAUTHENTICATED = 16,
};

struct parca_transport {
    struct push_endpoint ep;
    CURL *h;   /* reused for every request */
    CURLM *m;  /* runs h (push_endpoint_perform): its connection cache keeps the h2 connection */
    char *url; /* push_endpoint_url() of PARCA_WRITERAW_PATH */
    bool tls;  /* https: h2 through ALPN; http: h2 with prior knowledge */
    bool fresh_connections;    /* a new connection for every request (see parca_exporter_new) */
    const struct clock *clock; /* borrowed; real time for Retry-After dates */
    struct parca_reply rep;
    char errbuf[CURL_ERROR_SIZE];
};

/*
 * The framed WriteRawRequest. The labels and the profile are borrowed into
 * the protobuf-c structs for packing only (protobuf-c's field types are not
 * const; packing never writes through them).
 *
 * `normalized` is true: the normalization it refers to maps native
 * instruction addresses through their mappings, and pyprofd's profiles have
 * none to map (every Location has address 0, under one synthetic mapping at
 * 0 that says functions, files and lines are already known), so the server
 * must not try.
 */
PYPROFD_STATIC int parca_encode(const struct push_request *r, uint8_t **out, size_t *out_len)
{
    int err = 0;
    size_t n = r->labels ? r->labels->n : 0;
    Parca__Profilestore__V1alpha1__Label *lv = NULL;
    Parca__Profilestore__V1alpha1__Label **lp = NULL;
    uint8_t *buf = NULL;

    *out = NULL;
    *out_len = 0;
    if (n) {
        lv = alloc_calloc(n, sizeof(*lv));
        /* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers */
        lp = alloc_calloc(n, sizeof(*lp));
        if (!lv || !lp) {
            err = -ENOMEM;
            goto out;
        }
    }
    for (size_t i = 0; i < n; i++) {
        parca__profilestore__v1alpha1__label__init(&lv[i]);
        lv[i].name = (char *)r->labels->v[i].name;
        lv[i].value = (char *)r->labels->v[i].value;
        lp[i] = &lv[i];
    }

    Parca__Profilestore__V1alpha1__LabelSet set;
    parca__profilestore__v1alpha1__label_set__init(&set);
    set.n_labels = n;
    set.labels = lp;

    Parca__Profilestore__V1alpha1__RawSample sample;
    parca__profilestore__v1alpha1__raw_sample__init(&sample);
    sample.raw_profile.data = (uint8_t *)r->pprof;
    sample.raw_profile.len = r->len;
    Parca__Profilestore__V1alpha1__RawSample *samplep = &sample;

    Parca__Profilestore__V1alpha1__RawProfileSeries series;
    parca__profilestore__v1alpha1__raw_profile_series__init(&series);
    series.labels = &set;
    series.n_samples = 1;
    series.samples = &samplep;
    Parca__Profilestore__V1alpha1__RawProfileSeries *seriesp = &series;

    Parca__Profilestore__V1alpha1__WriteRawRequest req;
    parca__profilestore__v1alpha1__write_raw_request__init(&req);
    req.n_series = 1;
    req.series = &seriesp;
    req.normalized = true;

    size_t len = parca__profilestore__v1alpha1__write_raw_request__get_packed_size(&req);
    if (len > PARCA_MAX_MESSAGE) {
        err = -EMSGSIZE;
        goto out;
    }
    buf = alloc_malloc(PARCA_FRAME_HEADER + len);
    if (!buf) {
        err = -ENOMEM;
        goto out;
    }
    buf[0] = 0; /* not compressed: the profile inside is gzipped already */
    buf[1] = (uint8_t)(len >> 24);
    buf[2] = (uint8_t)(len >> 16);
    buf[3] = (uint8_t)(len >> 8);
    buf[4] = (uint8_t)len;
    size_t packed = parca__profilestore__v1alpha1__write_raw_request__pack(&req, buf + 5);
    PYPROFD_ASSERT(packed == len);
    (void)packed;
    *out = buf;
    *out_len = PARCA_FRAME_HEADER + len;
    buf = NULL;
out:
    alloc_free(buf);
    alloc_free(lp);
    alloc_free(lv);
    return err;
}

PYPROFD_STATIC void parca_reply_init(struct parca_reply *rep)
{
    memset(rep, 0, sizeof(*rep));
    rep->grpc_status = -1;
}

/* A byte fit for a log line: control characters become '?' (tabs and line breaks a space). */
static char parca_printable(unsigned char c)
{
    char out = (char)c;
    if (c == '\t' || c == '\r' || c == '\n')
        out = ' ';
    else if (c < 0x20 || c == 0x7f)
        out = '?';
    return out;
}

/*
 * grpc-message is percent-encoded UTF-8 (gRPC's PROTOCOL-HTTP2.md): libcurl
 * decodes it (curl_easy_unescape(): %XX becomes the byte, a '%' not followed
 * by two hex digits stays as it is, as gRPC's decoders do). Control
 * characters are replaced for the log. The output is cut to @a cap - 1 bytes
 * without splitting a UTF-8 sequence (utf8_cut()) and is always
 * NUL-terminated (cap > 0). Returns the bytes written.
 */
PYPROFD_STATIC size_t parca_percent_decode(const char *in, size_t len, char *out, size_t cap)
{
    size_t o = 0;
    int dlen = 0;
    char *dec = NULL;
    if (cap == 0)
        goto out;
    /* an empty value: nothing to decode (curl_easy_unescape() reads 0 as "use strlen") */
    if (len > 0 && len <= INT_MAX)
        dec = curl_easy_unescape(NULL, in, (int)len, &dlen);
    if (dec) {
        o = utf8_cut(dec, (size_t)dlen, cap - 1);
        for (size_t i = 0; i < o; i++)
            out[i] = parca_printable((unsigned char)dec[i]);
    }
    out[o] = '\0';
out:
    curl_free(dec);
    return o;
}

/*
 * Takes what a reply said in grpc-status, grpc-message and Retry-After (each
 * NULL when absent; values as libcurl gives them, surrounding blanks
 * removed).
 */
PYPROFD_STATIC void parca_reply_values(struct parca_reply *rep, const char *grpc_status,
                                       const char *grpc_message, const char *retry_after)
{
    if (grpc_status) {
        /* a status that is not 1 to 4 digits is UNKNOWN, as gRPC clients take it */
        size_t n = strlen(grpc_status);
        int64_t code = 0;
        if (n > 0 && n <= 4 && strspn(grpc_status, "0123456789") == n &&
            strnum_parse_i64(grpc_status, 0, 9999, &code) == 0)
            rep->grpc_status = (int)code;
        else
            rep->grpc_status = PARCA_GRPC_UNKNOWN;
    }
    if (grpc_message) {
        parca_percent_decode(grpc_message, strlen(grpc_message), rep->grpc_message,
                             sizeof(rep->grpc_message));
        rep->grpc_message_seen = true;
    }
    /* kept whole (a date too, if it fits); push_parse_retry_after() reads it */
    rep->retry_after[0] = '\0';
    if (retry_after && strlen(retry_after) < sizeof(rep->retry_after))
        snprintf(rep->retry_after, sizeof(rep->retry_after), "%s", retry_after);
}

/*
 * Header @a name of the last response on @a h: from the trailers (where a
 * gRPC server puts the status after a message) or else from the headers (a
 * trailers-only reply, or a proxy's own answer); NULL when it has neither.
 */
static const char *parca_header(CURL *h, const char *name)
{
    struct curl_header *hdr = NULL;
    if (curl_easy_header(h, name, 0, CURLH_TRAILER, -1, &hdr) == CURLHE_OK ||
        curl_easy_header(h, name, 0, CURLH_HEADER, -1, &hdr) == CURLHE_OK)
        return hdr->value;
    return NULL;
}

/* What the last response on @a h said, read through libcurl's header API. */
static void parca_reply_read(struct parca_reply *rep, CURL *h)
{
    parca_reply_values(rep, parca_header(h, "grpc-status"), parca_header(h, "grpc-message"),
                       parca_header(h, "retry-after"));
}

/* Keeps the first PARCA_BODY_KEEP bytes of the body, printable, for the error message. */
PYPROFD_STATIC void parca_reply_body(struct parca_reply *rep, const char *data, size_t len)
{
    for (size_t i = 0; i < len && rep->body_len < PARCA_BODY_KEEP; i++)
        rep->body[rep->body_len++] = parca_printable((unsigned char)data[i]);
    rep->body[rep->body_len] = '\0';
}

/*
 * grpc-timeout: at most 8 digits and a unit (H M S m u n). The exact value in
 * the largest unit that holds it, else rounded up in the smallest unit whose
 * value fits. Returns 0, -EINVAL for 0, -ENOSPC when @a cap is too small.
 */
PYPROFD_STATIC int parca_grpc_timeout(uint64_t ns, char *buf, size_t cap)
{
    static const struct {
        char unit;
        uint64_t ns;
    } units[] = {
        {'H', 3600000000000ull}, {'M', 60000000000ull}, {'S', 1000000000ull},
        {'m', 1000000ull},       {'u', 1000ull},        {'n', 1ull},
    };
    const uint64_t max = 99999999u;
    int err = 0;
    size_t pick = PYPROFD_ARRAY_SIZE(units);
    uint64_t value = 0;

    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(units) && pick == PYPROFD_ARRAY_SIZE(units); i++) {
        if (ns % units[i].ns == 0 && ns / units[i].ns <= max) {
            pick = i;
            value = ns / units[i].ns;
        }
    }
    for (size_t i = PYPROFD_ARRAY_SIZE(units); i-- > 0 && pick == PYPROFD_ARRAY_SIZE(units);) {
        uint64_t v = ns / units[i].ns + (ns % units[i].ns != 0);
        if (v <= max) {
            pick = i;
            value = v;
        }
    }
    if (ns == 0) {
        err = -EINVAL;
    } else {
        int w = snprintf(buf, cap, "%" PRIu64 "%c", value, units[pick].unit);
        if (w < 0 || (size_t)w >= cap)
            err = -ENOSPC;
    }
    return err;
}

/* gRPC's mapping of an HTTP status to a gRPC code, for replies without grpc-status. */
PYPROFD_STATIC int parca_http_to_grpc(long http_status)
{
    int code = PARCA_GRPC_UNKNOWN;
    switch (http_status) {
    case 400:
    case 431:
        code = PARCA_GRPC_INTERNAL;
        break;
    case 401:
        code = PARCA_GRPC_UNAUTHENTICATED;
        break;
    case 403:
        code = PARCA_GRPC_PERMISSION_DENIED;
        break;
    case 404:
        code = PARCA_GRPC_UNIMPLEMENTED;
        break;
    case 429:
    case 502:
    case 503:
    case 504:
        code = PARCA_GRPC_UNAVAILABLE;
        break;
    default:
        break;
    }
    return code;
}

/*
 * The outcome of one call. A transport error is retried, with the codes
 * every push transport uses (push_classify_http(): "timeout", "connect",
 * "tls", ...) and libcurl's own message when it has one. Otherwise the gRPC
 * code is grpc-status, unless the HTTP status is not 200 or grpc-status is
 * missing: then it is the HTTP mapping (200 without grpc-status: UNKNOWN).
 */
PYPROFD_STATIC void parca_classify(CURLcode rc, const char *curl_err, long http_version,
                                   const struct parca_reply *rep, int64_t now_real_ns,
                                   struct push_result *res)
{
    memset(res, 0, sizeof(*res));
    if (rc != CURLE_OK) {
        push_classify_http(rc, 0, NULL, NULL, now_real_ns, res);
        if (curl_err && *curl_err &&
            snprintf(res->message, sizeof(res->message), "%s", curl_err) < 0)
            res->message[0] = '\0';
    } else {
        bool mapped = rep->http_status != 200 || rep->grpc_status < 0;
        int code = mapped ? parca_http_to_grpc(rep->http_status) : rep->grpc_status;
        char name[32];
        if (code >= 0 && (size_t)code < PYPROFD_ARRAY_SIZE(parca_code_names))
            snprintf(name, sizeof(name), "%s", parca_code_names[code]);
        else
            snprintf(name, sizeof(name), "code %d", code);

        if (code == PARCA_GRPC_OK)
            res->outcome = PUSH_OK;
        else if (code == PARCA_GRPC_UNAVAILABLE || code == PARCA_GRPC_RESOURCE_EXHAUSTED ||
                 code == PARCA_GRPC_DEADLINE_EXCEEDED || code == PARCA_GRPC_ABORTED)
            res->outcome = PUSH_RETRY;
        else
            res->outcome = PUSH_DROP;
        snprintf(res->code, sizeof(res->code), "grpc_%d", code);

        const char *detail = rep->grpc_message_seen ? rep->grpc_message : rep->body;
        const char *sep = *detail ? ": " : "";
        bool h1 = http_version != CURL_HTTP_VERSION_2_0 && rep->http_status;
        int w = 0;
        if (code == PARCA_GRPC_OK)
            res->message[0] = '\0';
        else if (mapped)
            w = snprintf(res->message, sizeof(res->message), "%s (HTTP %ld%s%s)%s%s", name,
                         rep->http_status, h1 ? " over HTTP/1.x, not HTTP/2" : "",
                         rep->grpc_status < 0 ? ", no grpc-status" : "", sep, detail);
        else
            w = snprintf(res->message, sizeof(res->message), "%s%s%s", name, sep, detail);
        if (w < 0)
            res->message[0] = '\0';
        if (res->outcome == PUSH_RETRY && rep->retry_after[0])
            res->retry_after_ns = push_parse_retry_after(rep->retry_after, now_real_ns);
    }
}

static size_t parca_on_body(char *data, size_t size, size_t n, void *arg)
{
    parca_reply_body(arg, data, size * n);
    return size * n;
}

static int parca_add_header(struct curl_slist **list, const char *h)
{
    int err = 0;
    struct curl_slist *l = curl_slist_append(*list, h);
    if (l)
        *list = l;
    else
        err = -ENOMEM;
    return err;
}

static void parca_local_error(struct push_result *res, enum push_outcome outcome, const char *code,
                              const char *what, int err)
{
    res->outcome = outcome;
    snprintf(res->code, sizeof(res->code), "%s", code);
    if (snprintf(res->message, sizeof(res->message), "%s: %s", what, strerror(-err)) < 0)
        res->message[0] = '\0';
}

static void parca_send(void *tctx, const struct push_request *r, uint64_t timeout_ns,
                       struct push_result *res)
{
    struct parca_transport *t = tctx;
    uint8_t *frame = NULL;
    size_t flen = 0;
    struct curl_slist *hdrs = NULL;
    char tmo[32], tmo_header[48];
    CURL *h = t->h;
    int err;

    memset(res, 0, sizeof(*res));
    err = parca_encode(r, &frame, &flen);
    if (err == -EMSGSIZE) {
        parca_local_error(res, PUSH_DROP, "too_large", "cannot send a WriteRaw request over 64 MiB",
                          err);
        goto out;
    } else if (err) {
        parca_local_error(res, PUSH_RETRY, "local", "cannot encode the WriteRaw request", err);
        goto out;
    }

    /* reset keeps the connection cache: the next request reuses the connection */
    curl_easy_reset(h);
    parca_reply_init(&t->rep);
    t->errbuf[0] = '\0';
    curlopt_http_only(h);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "pyprofd/" PYPROFD_VERSION);
    err = push_endpoint_apply(&t->ep, h, &hdrs, res->message, sizeof(res->message));
    if (err) {
        res->outcome = PUSH_RETRY;
        snprintf(res->code, sizeof(res->code), "credentials");
        goto out;
    }
    err = parca_add_header(&hdrs, "Content-Type: application/grpc");
    if (!err)
        err = parca_add_header(&hdrs, "TE: trailers");
    if (!err)
        err = parca_add_header(&hdrs, "Expect:");
    if (!err && parca_grpc_timeout(timeout_ns, tmo, sizeof(tmo)) == 0) {
        snprintf(tmo_header, sizeof(tmo_header), "grpc-timeout: %s", tmo);
        err = parca_add_header(&hdrs, tmo_header);
    }
    if (err) {
        parca_local_error(res, PUSH_RETRY, "local", "cannot build the request headers", err);
        goto out;
    }

    uint64_t timeout_ms = timeout_ns / 1000000u + (timeout_ns % 1000000u != 0);
    if (timeout_ms > (uint64_t)LONG_MAX)
        timeout_ms = (uint64_t)LONG_MAX;
    curl_easy_setopt(h, CURLOPT_URL, t->url);
    curl_easy_setopt(h, CURLOPT_HTTP_VERSION,
                     t->tls ? (long)CURL_HTTP_VERSION_2TLS
                            : (long)CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE);
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, frame);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)flen);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, parca_on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &t->rep);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, t->errbuf);
    if (t->fresh_connections)
        curl_easy_setopt(h, CURLOPT_FORBID_REUSE, 1L);

    CURLcode rc = push_endpoint_perform(t->m, h, r);
    long status = 0, version = 0;
    if (curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status) == CURLE_OK && status)
        t->rep.http_status = status;
    if (rc == CURLE_OK)
        parca_reply_read(&t->rep, h);
    if (curl_easy_getinfo(h, CURLINFO_HTTP_VERSION, &version) != CURLE_OK)
        version = 0;
    parca_classify(rc, t->errbuf, version, &t->rep, clock_real(t->clock), res);
    /* nothing in the handle may point at this call's buffers once they are freed */
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, NULL);
out:
    curl_slist_free_all(hdrs);
    alloc_free(frame);
}

static void parca_transport_free(void *tctx)
{
    struct parca_transport *t = tctx;
    if (t) {
        if (t->h)
            curl_easy_cleanup(t->h);
        if (t->m)
            curl_multi_cleanup(t->m);
        push_endpoint_release(&t->ep);
        alloc_free(t->url);
        alloc_free(t);
    }
}

static const struct push_transport_ops parca_transport_ops = {
    .kind = "parca",
    .send = parca_send,
    .free = parca_transport_free,
};

int parca_exporter_new(const struct config_remote_write *rw, const struct clock *clock,
                       struct exporter *out)
{
    int err = 0;
    struct parca_transport *t = NULL;
    const curl_version_info_data *vi = curl_version_info(CURLVERSION_NOW);
    bool tls = rw->url && strncasecmp(rw->url, "https://", 8) == 0;

    if (!vi || !(vi->features & CURL_VERSION_HTTP2)) {
        err = -EPROTONOSUPPORT;
        goto out;
    }
    if (!rw->url || (!tls && strncasecmp(rw->url, "http://", 7) != 0)) {
        err = -EINVAL;
        goto out;
    }
    t = alloc_calloc(1, sizeof(*t));
    if (!t) {
        err = -ENOMEM;
        goto out;
    }
    err = push_endpoint_init(&t->ep, rw);
    if (err)
        goto out;
    /* room for the URL with server_name in place of the host, and the path */
    size_t ulen = strlen(t->ep.url) + (t->ep.server_name ? strlen(t->ep.server_name) : 0) +
                  sizeof(PARCA_WRITERAW_PATH) + 16;
    t->url = alloc_malloc(ulen);
    t->h = curl_easy_init();
    t->m = curl_multi_init();
    if (!t->url || !t->h || !t->m) {
        err = -ENOMEM;
        goto out;
    }
    err = push_endpoint_url(&t->ep, PARCA_WRITERAW_PATH, t->url, ulen);
    if (err)
        goto out;
    t->tls = tls;
    /*
     * libcurl 7.88.0 and 7.88.1 (Debian 12's) break the second request on a
     * reused prior-knowledge h2c connection ("Error in the HTTP2 framing
     * layer"; curl issue #10634, fixed in 8.0.0). With those, each cleartext
     * request opens its own connection; TLS connections are not affected.
     */
    t->fresh_connections = !tls && vi->version_num >= 0x075800 && vi->version_num < 0x080000;
    t->clock = clock ? clock : &clock_system;
    /* the engine owns the transport from here, on failure too */
    err = push_exporter_new(rw, &parca_transport_ops, t, PARCA_MAX_AGE_NS, clock, out);
    t = NULL;
out:
    parca_transport_free(t);
    return err;
}
