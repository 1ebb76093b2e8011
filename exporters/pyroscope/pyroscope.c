/* SPDX-License-Identifier: MIT */
/*
 * pyroscope.c: the Grafana Pyroscope transport for the push engine: Connect
 * unary push.v1.PusherService/Push or the older /ingest (see pyroscope.h).
 */
#include "base/compat.h"

#include <json-c/json.h>

#include "push.pb-c.h"

#include "base/alloc.h"
#include "base/clock.h"
#include "base/curlopt.h"
#include "base/rand.h"
#include "exporters/push/endpoint.h"
#include "exporters/pyroscope/pyroscope.h"

#ifndef PYPROFD_VERSION
#define PYPROFD_VERSION "unknown"
#endif

#define PYRO_RESP_MAX 65536u /* response bytes kept (error messages) */
#define PYRO_URL_MAX  16384u
#define PYRO_NAME_MAX 8192u

struct pyroscope {
    struct push_endpoint ep;
    enum config_pyroscope_api api;
    const struct clock *clock; /* borrowed */
    CURL *h;
    CURLM *m;   /* runs h (push_endpoint_perform); its connection cache persists */
    char *resp; /* PYRO_RESP_MAX + 1 */
    size_t resp_len;
    char errbuf[CURL_ERROR_SIZE];
};

static size_t pyro_write(char *ptr, size_t size, size_t nmemb, void *ud)
{
    struct pyroscope *p = ud;
    size_t n = size * nmemb;
    size_t room = PYRO_RESP_MAX - p->resp_len;
    size_t k = n < room ? n : room;
    memcpy(p->resp + p->resp_len, ptr, k);
    p->resp_len += k;
    return n; /* the rest is read and ignored */
}

/* A random (version 4) UUID as text: 36 characters and a NUL. */
static void pyro_uuid(char out[37])
{
    uint8_t b[16];
    rand_fill_os(b, sizeof(b));
    b[6] = (uint8_t)((b[6] & 0x0f) | 0x40);
    b[8] = (uint8_t)((b[8] & 0x3f) | 0x80);
    snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
             b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
}

/* --- Connect errors -------------------------------------------------------- */

static const char *const pyro_grpc_names[] = {
    "ok",
    "canceled",
    "unknown",
    "invalid_argument",
    "deadline_exceeded",
    "not_found",
    "already_exists",
    "permission_denied",
    "resource_exhausted",
    "failed_precondition",
    "aborted",
    "out_of_range",
    "unimplemented",
    "internal",
    "unavailable",
    "data_loss",
    "unauthenticated",
};

static bool pyro_code_retryable(const char *code)
{
    static const char *const retry[] = {
        "unavailable", "resource_exhausted", "deadline_exceeded", "aborted",
        "unknown",     "internal",           "data_loss",
    };
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(retry); i++) {
        if (strcmp(code, retry[i]) == 0)
            return true;
    }
    return false;
}

/*
 * Reads a Connect error body {"code": "...", "message": "..."} (code also as
 * a number, as some /ingest errors write it): the message becomes
 * "<code>: <message>" and the code decides retry or drop. A body that is not
 * such JSON leaves @a res as the HTTP classification made it.
 */
PYPROFD_STATIC void pyroscope_connect_error(const char *body, struct push_result *res)
{
    if (!body || body[0] != '{')
        return;
    struct json_tokener *tok = json_tokener_new();
    if (!tok)
        return;
    json_object *o = json_tokener_parse_ex(tok, body, (int)strlen(body));
    json_tokener_free(tok);
    json_object *jc = NULL, *jm = NULL;
    const char *code = NULL;
    if (!o || !json_object_is_type(o, json_type_object) ||
        !json_object_object_get_ex(o, "code", &jc))
        goto out;
    if (json_object_is_type(jc, json_type_string)) {
        code = json_object_get_string(jc);
    } else if (json_object_is_type(jc, json_type_int)) {
        int64_t n = json_object_get_int64(jc);
        if (n > 0 && n < (int64_t)PYPROFD_ARRAY_SIZE(pyro_grpc_names))
            code = pyro_grpc_names[n];
    }
    if (!code || !code[0])
        goto out;
    const char *msg = "";
    if (json_object_object_get_ex(o, "message", &jm) && json_object_is_type(jm, json_type_string))
        msg = json_object_get_string(jm);
    char text[sizeof(res->message)];
    snprintf(text, sizeof(text), "%s: %s", code, msg);
    for (char *c = text; *c; c++) {
        if ((unsigned char)*c < 0x20)
            *c = ' ';
    }
    memcpy(res->message, text, sizeof(res->message));
    res->outcome = pyro_code_retryable(code) ? PUSH_RETRY : PUSH_DROP;
    if (res->outcome == PUSH_DROP)
        res->retry_after_ns = 0;
out:
    json_object_put(o);
}

/* --- request bodies and URLs ------------------------------------------------ */

/* The PushRequest for @a r, packed into *out (caller frees). */
static int pyro_encode_push(const struct push_request *r, uint8_t **out, size_t *len)
{
    int err = -ENOMEM;
    size_t n = r->labels->n;
    char uuid[37];
    Types__V1__LabelPair *pairs = alloc_calloc(n ? n : 1, sizeof(*pairs));
    /* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers */
    Types__V1__LabelPair **pp = alloc_calloc(n ? n : 1, sizeof(*pp));
    *out = NULL;
    if (!pairs || !pp)
        goto out;
    for (size_t i = 0; i < n; i++) {
        types__v1__label_pair__init(&pairs[i]);
        pairs[i].name = r->labels->v[i].name;
        pairs[i].value = r->labels->v[i].value;
        pp[i] = &pairs[i];
    }
    pyro_uuid(uuid);
    Push__V1__RawSample sample = PUSH__V1__RAW_SAMPLE__INIT;
    /* protobuf-c only reads through these pointers */
    sample.raw_profile.data = (uint8_t *)(uintptr_t)r->pprof;
    sample.raw_profile.len = r->len;
    sample.id = uuid;
    Push__V1__RawSample *sp = &sample;
    Push__V1__RawProfileSeries series = PUSH__V1__RAW_PROFILE_SERIES__INIT;
    series.n_labels = n;
    series.labels = pp;
    series.n_samples = 1;
    series.samples = &sp;
    Push__V1__RawProfileSeries *serp = &series;
    Push__V1__PushRequest req = PUSH__V1__PUSH_REQUEST__INIT;
    req.n_series = 1;
    req.series = &serp;
    *len = push__v1__push_request__get_packed_size(&req);
    *out = alloc_malloc(*len ? *len : 1);
    if (!*out)
        goto out;
    push__v1__push_request__pack(&req, *out);
    err = 0;
out:
    alloc_free(pairs);
    alloc_free(pp);
    return err;
}

static void pyro_sanitize(char *s, const char *allowed_extra)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  (c != '\0' && strchr(allowed_extra, c) != NULL);
        if (!ok)
            *s = '_';
    }
}

/*
 * The /ingest name: "APP{k=v,...}". APP (service_name, else __name__) keeps
 * letters, digits and "_.-/"; values lose ",{}=" (the separators). Returns 0
 * or -ENAMETOOLONG.
 */
PYPROFD_STATIC int pyroscope_ingest_name(const struct labels *ls, char *buf, size_t len)
{
    const char *app = labels_get(ls, "service_name");
    if (!app || !app[0])
        app = labels_get(ls, "__name__");
    if (!app || !app[0])
        app = "unknown_service";
    if (len == 0)
        return -ENAMETOOLONG;
    size_t o = 0;
    int n = snprintf(buf, len, "%s{", app);
    if (n < 0 || (size_t)n >= len)
        return -ENAMETOOLONG;
    buf[n - 1] = '\0';
    pyro_sanitize(buf, "_.-/");
    buf[n - 1] = '{';
    o = (size_t)n;
    bool first = true;
    for (size_t i = 0; i < ls->n; i++) {
        const char *k = ls->v[i].name;
        if ((k[0] == '_' && k[1] == '_') || strcmp(k, "service_name") == 0)
            continue;
        n = snprintf(buf + o, len - o, "%s%s=", first ? "" : ",", k);
        if (n < 0 || (size_t)n >= len - o)
            return -ENAMETOOLONG;
        o += (size_t)n;
        size_t vstart = o;
        n = snprintf(buf + o, len - o, "%s", ls->v[i].value);
        if (n < 0 || (size_t)n >= len - o)
            return -ENAMETOOLONG;
        o += (size_t)n;
        for (size_t j = vstart; j < o; j++) {
            if (buf[j] == ',' || buf[j] == '{' || buf[j] == '}' || buf[j] == '=')
                buf[j] = '_';
        }
        first = false;
    }
    if (o + 2 > len)
        return -ENAMETOOLONG;
    buf[o++] = '}';
    buf[o] = '\0';
    return 0;
}

static int pyro_ingest_url(struct pyroscope *p, const struct push_request *r, char *url, size_t len)
{
    char name[PYRO_NAME_MAX];
    int err = pyroscope_ingest_name(r->labels, name, sizeof(name));
    if (err)
        return err;
    char *enc = curl_easy_escape(p->h, name, 0);
    if (!enc)
        return -ENOMEM;
    int64_t from = r->time_nanos / 1000000000ll;
    int64_t until = (r->time_nanos + r->duration_nanos) / 1000000000ll;
    long rate = r->period_ns > 0 ? (long)((1e9 / (double)r->period_ns) + 0.5) : 100;
    char path[PYRO_URL_MAX];
    int n = snprintf(path, sizeof(path),
                     "/ingest?name=%s&from=%lld&until=%lld&format=pprof&sampleRate=%ld"
                     "&spyName=pyprofd",
                     enc, (long long)from, (long long)until, rate);
    curl_free(enc);
    if (n < 0 || (size_t)n >= sizeof(path))
        return -ENAMETOOLONG;
    return push_endpoint_url(&p->ep, path, url, len);
}

/* --- send ------------------------------------------------------------------ */

static int pyro_header(struct curl_slist **hdrs, const char *h)
{
    struct curl_slist *l = curl_slist_append(*hdrs, h);
    if (!l)
        return -ENOMEM;
    *hdrs = l;
    return 0;
}

static void pyro_send(void *tctx, const struct push_request *r, uint64_t timeout_ns,
                      struct push_result *res)
{
    struct pyroscope *p = tctx;
    struct curl_slist *hdrs = NULL;
    uint8_t *body = NULL;
    size_t body_len = 0;
    char url[PYRO_URL_MAX], msg[256], h[128];
    int err;
    memset(res, 0, sizeof(*res));
    res->outcome = PUSH_RETRY;
    snprintf(res->code, sizeof(res->code), "internal");

    curl_easy_reset(p->h);
    if (p->api == CONFIG_PYROSCOPE_API_INGEST) {
        err = pyro_ingest_url(p, r, url, sizeof(url));
    } else {
        err = push_endpoint_url(&p->ep, "/push.v1.PusherService/Push", url, sizeof(url));
        if (!err)
            err = pyro_encode_push(r, &body, &body_len);
    }
    if (err) {
        /* nothing a later attempt could change */
        res->outcome = err == -ENOMEM ? PUSH_RETRY : PUSH_DROP;
        snprintf(res->message, sizeof(res->message), "cannot build the request: %s",
                 strerror(-err));
        goto out;
    }
    err = push_endpoint_apply(&p->ep, p->h, &hdrs, msg, sizeof(msg));
    if (err) {
        snprintf(res->code, sizeof(res->code), "credentials");
        snprintf(res->message, sizeof(res->message), "%s", msg);
        goto out;
    }
    uint64_t ms = timeout_ns / 1000000u;
    if (ms == 0)
        ms = 1;
    snprintf(h, sizeof(h), "Connect-Timeout-Ms: %llu", (unsigned long long)ms);
    if (p->api == CONFIG_PYROSCOPE_API_INGEST)
        err = pyro_header(&hdrs, "Content-Type: application/octet-stream");
    else
        err = pyro_header(&hdrs, "Content-Type: application/proto") ||
              pyro_header(&hdrs, "Connect-Protocol-Version: 1") || pyro_header(&hdrs, h);
    /* no "Expect: 100-continue" round trip */
    err = err || pyro_header(&hdrs, "Expect:");
    if (err) {
        snprintf(res->message, sizeof(res->message), "out of memory");
        goto out;
    }
    const uint8_t *data = body ? body : r->pprof;
    size_t len = body ? body_len : r->len;
    p->resp_len = 0;
    p->errbuf[0] = '\0';
    curl_easy_setopt(p->h, CURLOPT_URL, url);
    curl_easy_setopt(p->h, CURLOPT_POST, 1L);
    curl_easy_setopt(p->h, CURLOPT_POSTFIELDS, data);
    curl_easy_setopt(p->h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    curl_easy_setopt(p->h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(p->h, CURLOPT_USERAGENT, "pyprofd/" PYPROFD_VERSION);
    curl_easy_setopt(p->h, CURLOPT_WRITEFUNCTION, pyro_write);
    curl_easy_setopt(p->h, CURLOPT_WRITEDATA, p);
    curl_easy_setopt(p->h, CURLOPT_ERRORBUFFER, p->errbuf);
    curl_easy_setopt(p->h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(p->h, CURLOPT_TIMEOUT_MS, (long)ms);
    curl_easy_setopt(p->h, CURLOPT_CONNECTTIMEOUT_MS, (long)ms);
    curlopt_http_only(p->h);
    CURLcode rc = push_endpoint_perform(p->m, p->h, r);
    long status = 0;
    curl_easy_getinfo(p->h, CURLINFO_RESPONSE_CODE, &status);
    struct curl_header *ra = NULL;
    const char *retry_after = NULL;
    if (rc == CURLE_OK &&
        curl_easy_header(p->h, "Retry-After", 0, CURLH_HEADER, -1, &ra) == CURLHE_OK)
        retry_after = ra->value;
    p->resp[p->resp_len] = '\0';
    push_classify_http(rc, status, p->resp, retry_after, clock_real(p->clock), res);
    if (rc != CURLE_OK && p->errbuf[0])
        snprintf(res->message, sizeof(res->message), "%s", p->errbuf);
    if (rc == CURLE_OK && res->outcome != PUSH_OK)
        pyroscope_connect_error(p->resp, res);
out:
    curl_slist_free_all(hdrs);
    alloc_free(body);
}

static void pyro_free(void *tctx)
{
    struct pyroscope *p = tctx;
    if (!p)
        return;
    if (p->h)
        curl_easy_cleanup(p->h);
    if (p->m)
        curl_multi_cleanup(p->m);
    push_endpoint_release(&p->ep);
    alloc_free(p->resp);
    alloc_free(p);
}

static const struct push_transport_ops pyro_ops = {
    .kind = "pyroscope",
    .send = pyro_send,
    .free = pyro_free,
};

int pyroscope_exporter_new(const struct config_remote_write *rw, const struct clock *clock,
                           struct exporter *out)
{
    int err = -ENOMEM;
    struct pyroscope *p = alloc_calloc(1, sizeof(*p));
    if (!p)
        goto fail;
    err = push_endpoint_init(&p->ep, rw);
    if (err)
        goto fail;
    err = -ENOMEM;
    p->resp = alloc_malloc(PYRO_RESP_MAX + 1);
    p->h = curl_easy_init();
    p->m = curl_multi_init();
    if (!p->resp || !p->h || !p->m)
        goto fail;
    p->api = rw->api;
    p->clock = clock ? clock : &clock_system;
    /* push_exporter_new owns p from here, on failure too */
    return push_exporter_new(rw, &pyro_ops, p, PYROSCOPE_MAX_AGE_NS, clock, out);
fail:
    pyro_free(p);
    return err;
}
