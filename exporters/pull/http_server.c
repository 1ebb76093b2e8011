/* SPDX-License-Identifier: MIT */
/*
 * http_server.c: the pull/operations HTTP server on libmicrohttpd, in its
 * thread-per-connection mode so that a profile request blocking for minutes
 * holds only its own thread. The listening socket is created here rather than
 * by libmicrohttpd, which reports bind errors only through its logger: this
 * way the caller gets EADDRINUSE & co. as return values, and names resolve
 * with getaddrinfo(). libmicrohttpd never sees that socket: the gate
 * (http_gate.c) accepts, enforces the connection limits and the head
 * deadline, and passes on connections whose request head is complete
 * (MHD_add_connection). Routing is a fixed table; the daemon is reached only
 * through struct http_server_ops. What clients and the config write (query
 * arguments, Content-Length, the listen address) is parsed by http_parse.c.
 */
#include "base/compat.h"

#include "exporters/pull/http_server.h"

#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "config/config.h"
#include "exporters/pull/http_gate.h"
#include "exporters/pull/http_parse.h"
#include "web/web.h"

#define HTTP_BODY_CAP       ((uint64_t)64 << 10)
#define HTTP_MAX_QUERY_ARGS 16
#define HTTP_TEXT_MAX       1024
#define HTTP_ERR_MAX        512
#define HTTP_HANGUP_POLL_NS 100000000ull /* look at a profile client's socket this often */
#define HTTP_BACKLOG        1024 /* a burst of connects waits for the gate, not for SYN retries */

#define HTTP_TEXT_PLAIN "text/plain; charset=utf-8"

/* The routes, in the order of the table below; HTTP_ROUTE_OTHER is every unknown path. */
enum http_route {
    HTTP_ROUTE_ROOT,
    HTTP_ROUTE_UI,
    HTTP_ROUTE_PROFILE,
    HTTP_ROUTE_FLAME,
    HTTP_ROUTE_TARGETS,
    HTTP_ROUTE_METRICS,
    HTTP_ROUTE_HEALTHY,
    HTTP_ROUTE_READY,
    HTTP_ROUTE_RELOAD,
    HTTP_ROUTE_OTHER,
    HTTP_ROUTE_COUNT
};

static const struct {
    const char *path;
    const char *allow; /* the methods served, as the Allow header lists them */
} http_routes[HTTP_ROUTE_COUNT] = {
    [HTTP_ROUTE_ROOT] = {"/", "GET, HEAD"},
    [HTTP_ROUTE_UI] = {"/ui/", "GET, HEAD"}, /* and every path under it */
    [HTTP_ROUTE_PROFILE] = {"/debug/pprof/profile", "GET, HEAD"},
    [HTTP_ROUTE_FLAME] = {"/flamegraph", "GET, HEAD"},
    [HTTP_ROUTE_TARGETS] = {"/targets", "GET, HEAD"},
    [HTTP_ROUTE_METRICS] = {"/metrics", "GET, HEAD"},
    [HTTP_ROUTE_HEALTHY] = {"/-/healthy", "GET, HEAD"},
    [HTTP_ROUTE_READY] = {"/-/ready", "GET, HEAD"},
    [HTTP_ROUTE_RELOAD] = {"/-/reload", "POST, PUT"},
    [HTTP_ROUTE_OTHER] = {"other", ""},
};

/* Status codes counted per route in pyprofd_http_requests_total; the last slot is "other". */
static const unsigned http_codes[] = {200, 400, 403, 404, 405, 413, 500, 501, 503};
#define HTTP_NCODES (PYPROFD_ARRAY_SIZE(http_codes) + 1)

struct http_server {
    struct MHD_Daemon *mhd;
    struct http_gate *gate;
    uint16_t port;
    bool stopped;
    struct http_server_ops ops;
    bool enable_lifecycle;
    uint32_t max_seconds;
    uint32_t max_profiles;
    uint32_t head_timeout_ms;
    uint32_t conn_timeout_s;
    size_t metrics_cap;

    atomic_bool stopping;
    atomic_uint profiles_active; /* profile callbacks running */
    atomic_uint inflight;        /* requests between their first handler call and completion */
    _Atomic uint64_t requests[HTTP_ROUTE_COUNT][HTTP_NCODES];
};

/* Per-request state, from the first handler call to the completion notice. */
struct http_request {
    struct http_server *srv;
    uint64_t body;        /* bytes of request body seen (and ignored) */
    uint64_t deadline_ns; /* CLOCK_MONOTONIC: the body must be in by then; 0: none */
    bool short_timeout;   /* the idle timeout is cut to the deadline while the body comes */
};

/*
 * struct http_profile_request.priv: what http_profile_cancelled() looks at.
 * Lives on the connection thread's stack for the profile callback's duration.
 */
struct http_profile_watch {
    const struct http_server *srv;
    int fd;                        /* the client's socket; -1: unknown */
    _Atomic uint64_t next_poll_ns; /* CLOCK_MONOTONIC; the socket is polled at most this often */
    atomic_bool gone;              /* the client hung up */
};

/*
 * Whether the client closed its side. While the callback runs, libmicrohttpd
 * (thread per connection) does not touch the socket, so a zero-timeout poll
 * for POLLRDHUP (the peer's FIN), POLLHUP or POLLERR (a reset) is all it
 * takes; nothing is read. Rate-limited: callbacks poll every few ms.
 */
static bool http_client_gone(struct http_profile_watch *w)
{
    if (atomic_load(&w->gone))
        return true;
    if (w->fd < 0)
        return false;
    uint64_t now = clock_mono_now();
    uint64_t next = atomic_load(&w->next_poll_ns);
    if (now < next ||
        !atomic_compare_exchange_strong(&w->next_poll_ns, &next, now + HTTP_HANGUP_POLL_NS))
        return false;
    struct pollfd pfd = {.fd = w->fd, .events = POLLRDHUP};
    if (poll(&pfd, 1, 0) == 1 && (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)))
        atomic_store(&w->gone, true);
    return atomic_load(&w->gone);
}

bool http_profile_cancelled(const struct http_profile_request *req)
{
    /* priv is our own non-const watch, const only in the public struct */
    struct http_profile_watch *w = (struct http_profile_watch *)req->priv;
    return w && (atomic_load(&w->srv->stopping) || http_client_gone(w));
}

/* ---- responses ---- */

static void http_count(struct http_server *s, enum http_route route, unsigned status)
{
    size_t i = 0;
    while (i < PYPROFD_ARRAY_SIZE(http_codes) && http_codes[i] != status)
        i++;
    atomic_fetch_add_explicit(&s->requests[route][i], 1, memory_order_relaxed);
}

/*
 * Queues a response. When @a owned, @a body came from alloc_malloc() and is
 * freed by libmicrohttpd after sending (or here if that is not possible);
 * otherwise it is copied. @a hname / @a hval: one more header, or NULL.
 */
static enum MHD_Result http_reply(struct http_server *s, struct MHD_Connection *c,
                                  enum http_route route, unsigned status, const char *ctype,
                                  void *body, size_t len, bool owned, const char *hname,
                                  const char *hval)
{
    enum MHD_Result ret = MHD_NO;
    struct MHD_Response *resp;
    if (owned) {
        resp = MHD_create_response_from_buffer_with_free_callback(len, body, alloc_free);
        if (!resp)
            alloc_free(body);
    } else {
        resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_COPY);
    }
    if (!resp)
        goto out;
    if (ctype && MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype) != MHD_YES)
        goto out;
    if (hname && MHD_add_response_header(resp, hname, hval) != MHD_YES)
        goto out;
    if (MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff") != MHD_YES)
        goto out;
    /* one request per connection: only the first head of a connection passes the gate */
    if (MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close") != MHD_YES)
        goto out;
    ret = MHD_queue_response(c, status, resp);
    if (ret == MHD_YES)
        http_count(s, route, status);
out:
    if (resp)
        MHD_destroy_response(resp);
    return ret;
}

/* A plain-text response from a format string; a newline is appended. */
PYPROFD_PRINTF(7, 8)
static enum MHD_Result http_text(struct http_server *s, struct MHD_Connection *c,
                                 enum http_route route, unsigned status, const char *hname,
                                 const char *hval, const char *fmt, ...)
{
    char text[HTTP_TEXT_MAX];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(text, sizeof(text) - 1, fmt, ap);
    va_end(ap);
    size_t len = n < 0 ? 0 : (size_t)n < sizeof(text) - 1 ? (size_t)n : sizeof(text) - 2;
    text[len++] = '\n';
    text[len] = '\0';
    return http_reply(s, c, route, status, HTTP_TEXT_PLAIN, text, len, false, hname, hval);
}

/* The message of a callback's @a err buffer, or strerror(-rc). */
static const char *http_errmsg(const char *err, int rc)
{
    return err[0] ? err : strerror(rc < 0 ? -rc : rc);
}

/* ---- handlers ---- */

/*
 * An embedded file (web/web.h) of the page: "/" is agent.html, "/ui/NAME"
 * the file NAME. Served from the binary's own memory, never copied.
 */
static enum MHD_Result http_asset(struct http_server *s, struct MHD_Connection *c,
                                  enum http_route route, const char *url)
{
    const char *name = route == HTTP_ROUTE_ROOT ? "agent.html" : url + strlen("/ui/");
    const struct web_asset *a = strchr(name, '/') ? NULL : web_asset(name);
    if (!a || strcmp(name, "report.html") == 0) /* the report's page is no page of the agent */
        return http_text(s, c, route, MHD_HTTP_NOT_FOUND, NULL, NULL, "404 page not found");
    enum MHD_Result ret = MHD_NO;
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(a->len, (void *)a->data, MHD_RESPMEM_PERSISTENT);
    if (!resp)
        return MHD_NO;
    if (MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, a->type) == MHD_YES &&
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache") == MHD_YES &&
        MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff") == MHD_YES &&
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close") == MHD_YES) {
        ret = MHD_queue_response(c, MHD_HTTP_OK, resp);
        if (ret == MHD_YES)
            http_count(s, route, MHD_HTTP_OK);
    }
    MHD_destroy_response(resp);
    return ret;
}

struct http_args {
    const char *keys[HTTP_MAX_QUERY_ARGS];
    const char *values[HTTP_MAX_QUERY_ARGS];
    size_t n;
    bool overflow;
};

static enum MHD_Result http_collect_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                        const char *value)
{
    struct http_args *a = cls;
    (void)kind;
    if (a->n == HTTP_MAX_QUERY_ARGS) {
        a->overflow = true;
        return MHD_NO;
    }
    a->keys[a->n] = key;
    a->values[a->n] = value;
    a->n++;
    return MHD_YES;
}

static int http_status_of(int rc)
{
    switch (rc) {
    case -ENOENT:
    case -ESRCH:
        return MHD_HTTP_NOT_FOUND;
    case -EINVAL:
        return MHD_HTTP_BAD_REQUEST;
    case -EBUSY:
    case -EAGAIN:
    case -ECANCELED:
        return MHD_HTTP_SERVICE_UNAVAILABLE;
    default:
        return MHD_HTTP_INTERNAL_SERVER_ERROR;
    }
}

/* /debug/pprof/profile (gzipped pprof) and /flamegraph (JSON): the same collection. */
static enum MHD_Result http_profile(struct http_server *s, struct MHD_Connection *c,
                                    enum http_route R, bool head)
{
    bool flame = R == HTTP_ROUTE_FLAME;
    const char *ctype = flame ? "application/json" : "application/octet-stream";
    const char *hname = flame ? NULL : MHD_HTTP_HEADER_CONTENT_DISPOSITION;
    const char *hval = flame ? NULL : "attachment; filename=\"profile\"";
    struct http_args args = {.n = 0};
    char err[HTTP_ERR_MAX] = "";
    struct http_profile_watch watch = {.srv = s, .fd = -1};
    struct http_profile_request req = {.priv = &watch,
                                       .format = flame ? HTTP_PROFILE_FLAME : HTTP_PROFILE_PPROF};
    uint8_t *out = NULL;
    size_t out_len = 0;
    enum MHD_Result ret;

    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, http_collect_arg, &args);
    if (args.overflow) {
        ret = http_text(s, c, R, MHD_HTTP_BAD_REQUEST, NULL, NULL, "too many query parameters");
        goto out;
    }
    if (http_parse_profile_query(args.keys, args.values, args.n, s->max_seconds, &req.seconds,
                                 &req.pid, &req.mode, err, sizeof(err)) != 0) {
        ret = http_text(s, c, R, MHD_HTTP_BAD_REQUEST, NULL, NULL, "%s", err);
        goto out;
    }
    if (!s->ops.profile) {
        ret = http_text(s, c, R, MHD_HTTP_NOT_IMPLEMENTED, NULL, NULL, "profiles not available");
        goto out;
    }
    if (head) {
        /* HEAD checks the parameters; it does not spend N seconds profiling */
        ret = http_reply(s, c, R, MHD_HTTP_OK, ctype, NULL, 0, false, hname, hval);
        goto out;
    }
    if (atomic_load(&s->stopping)) {
        ret = http_text(s, c, R, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, NULL, "server is stopping");
        goto out;
    }
    if (atomic_fetch_add(&s->profiles_active, 1) >= s->max_profiles) {
        atomic_fetch_sub(&s->profiles_active, 1);
        ret =
            http_text(s, c, R, MHD_HTTP_SERVICE_UNAVAILABLE, MHD_HTTP_HEADER_RETRY_AFTER, "5",
                      "too many concurrent profile requests (limit %" PRIu32 ")", s->max_profiles);
        goto out;
    }
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (ci)
        watch.fd = (int)ci->connect_fd;
    int rc = s->ops.profile(s->ops.ctx, &req, &out, &out_len, err, sizeof(err));
    atomic_fetch_sub(&s->profiles_active, 1);
    if (rc != 0) {
        ret = http_text(s, c, R, (unsigned)http_status_of(rc), NULL, NULL, "profile failed: %s",
                        http_errmsg(err, rc));
        goto out;
    }
    ret = http_reply(s, c, R, MHD_HTTP_OK, ctype, out, out_len, true, hname, hval);
out:
    return ret;
}

static enum MHD_Result http_targets(struct http_server *s, struct MHD_Connection *c)
{
    const enum http_route R = HTTP_ROUTE_TARGETS;
    char *out = NULL;
    size_t len = 0;
    enum MHD_Result ret;
    if (!s->ops.targets_json) {
        ret = http_text(s, c, R, MHD_HTTP_NOT_IMPLEMENTED, NULL, NULL, "targets not available");
        goto out;
    }
    int rc = s->ops.targets_json(s->ops.ctx, &out, &len);
    if (rc != 0) {
        ret = http_text(s, c, R, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, NULL, "targets failed: %s",
                        strerror(-rc));
        goto out;
    }
    ret = http_reply(s, c, R, MHD_HTTP_OK, "application/json", out, len, true, NULL, NULL);
out:
    return ret;
}

/* The gate's families: connections open by state, accepted, and rejected by reason. */
static int http_connection_metrics(struct http_server *s, struct promtext *w)
{
    struct http_gate_stats st;
    http_gate_stats(s->gate, &st);
    const struct {
        const char *reason;
        uint64_t n;
    } rejected[] = {
        {"bad_request", st.bad_request},   {"head_too_large", st.head_too_large},
        {"head_timeout", st.head_timeout}, {"evicted", st.evicted},
        {"client_limit", st.client_limit}, {"connection_limit", st.connection_limit},
    };
    int rc = promtext_family(w, "pyprofd_http_connections", PROMTEXT_GAUGE,
                             "Open HTTP connections: reading their request head, or active "
                             "(handed to a server thread).");
    if (rc == 0)
        rc = promtext_sample(w, NULL, PROMTEXT_LABELS({"state", "reading"}), (double)st.reading);
    if (rc == 0)
        rc = promtext_sample(w, NULL, PROMTEXT_LABELS({"state", "active"}), (double)st.active);
    if (rc == 0)
        rc = promtext_family(w, "pyprofd_http_connections_accepted_total", PROMTEXT_COUNTER,
                             "HTTP connections accepted.");
    if (rc == 0)
        rc = promtext_sample(w, NULL, NULL, 0, (double)st.accepted);
    if (rc == 0)
        rc = promtext_family(w, "pyprofd_http_connections_rejected_total", PROMTEXT_COUNTER,
                             "HTTP connections closed before a complete request head reached "
                             "a handler, by reason.");
    for (size_t i = 0; rc == 0 && i < PYPROFD_ARRAY_SIZE(rejected); i++)
        rc = promtext_sample(w, NULL, PROMTEXT_LABELS({"reason", rejected[i].reason}),
                             (double)rejected[i].n);
    return rc;
}

/* The server's own families: requests by route and code, profiles running, connections. */
static int http_own_metrics(struct http_server *s, struct promtext *w)
{
    char code[16];
    int rc = promtext_family(w, "pyprofd_http_requests_total", PROMTEXT_COUNTER,
                             "HTTP requests answered, by handler and status code.");
    for (size_t r = 0; rc == 0 && r < HTTP_ROUTE_COUNT; r++) {
        for (size_t i = 0; rc == 0 && i < HTTP_NCODES; i++) {
            uint64_t v = atomic_load_explicit(&s->requests[r][i], memory_order_relaxed);
            if (v == 0)
                continue;
            if (i < PYPROFD_ARRAY_SIZE(http_codes))
                snprintf(code, sizeof(code), "%u", http_codes[i]);
            else
                snprintf(code, sizeof(code), "other");
            rc = promtext_sample(w, NULL,
                                 PROMTEXT_LABELS({"handler", http_routes[r].path}, {"code", code}),
                                 (double)v);
        }
    }
    if (rc == 0)
        rc = promtext_family(w, "pyprofd_http_profile_requests_in_flight", PROMTEXT_GAUGE,
                             "Profile requests being collected now.");
    if (rc == 0)
        rc = promtext_sample(w, NULL, NULL, 0, (double)atomic_load(&s->profiles_active));
    if (rc == 0)
        rc = http_connection_metrics(s, w);
    return rc;
}

static enum MHD_Result http_metrics(struct http_server *s, struct MHD_Connection *c)
{
    const enum http_route R = HTTP_ROUTE_METRICS;
    struct promtext *w = NULL;
    char *doc = NULL;
    size_t len = 0;
    enum MHD_Result ret;
    int rc = promtext_new(s->metrics_cap, &w);
    if (rc == 0 && s->ops.metrics)
        rc = s->ops.metrics(s->ops.ctx, w);
    if (rc == 0)
        rc = promtext_error(w);
    if (rc == 0)
        rc = http_own_metrics(s, w);
    if (rc == 0)
        rc = promtext_process_metrics(w);
    if (rc == 0)
        rc = promtext_take(w, &doc, &len);
    if (rc != 0) {
        ret = http_text(s, c, R, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, NULL, "metrics failed: %s",
                        rc == -E2BIG ? "document over its size cap" : strerror(-rc));
        goto out;
    }
    ret = http_reply(s, c, R, MHD_HTTP_OK, PROMTEXT_CONTENT_TYPE, doc, len, true, NULL, NULL);
out:
    promtext_free(w);
    return ret;
}

static enum MHD_Result http_reload(struct http_server *s, struct MHD_Connection *c)
{
    const enum http_route R = HTTP_ROUTE_RELOAD;
    char err[HTTP_ERR_MAX] = "";
    enum MHD_Result ret;
    if (!s->enable_lifecycle) {
        ret = http_text(s, c, R, MHD_HTTP_FORBIDDEN, NULL, NULL, "lifecycle API is not enabled");
        goto out;
    }
    if (!s->ops.reload) {
        ret = http_text(s, c, R, MHD_HTTP_NOT_IMPLEMENTED, NULL, NULL, "reload not available");
        goto out;
    }
    int rc = s->ops.reload(s->ops.ctx, err, sizeof(err));
    if (rc != 0)
        ret = http_text(s, c, R, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, NULL,
                        "failed to reload config: %s", http_errmsg(err, rc));
    else
        ret = http_reply(s, c, R, MHD_HTTP_OK, HTTP_TEXT_PLAIN, NULL, 0, false, NULL, NULL);
out:
    return ret;
}

static enum http_route http_lookup(const char *url)
{
    if (strncmp(url, "/ui/", 4) == 0)
        return HTTP_ROUTE_UI;
    enum http_route r = 0;
    while (r < HTTP_ROUTE_OTHER && strcmp(url, http_routes[r].path) != 0)
        r++;
    return r;
}

static enum MHD_Result http_route_request(struct http_server *s, struct MHD_Connection *c,
                                          const char *url, const char *method)
{
    enum http_route r = http_lookup(url);
    enum MHD_Result ret;
    bool get = strcmp(method, MHD_HTTP_METHOD_GET) == 0;
    bool head = strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
    bool post =
        strcmp(method, MHD_HTTP_METHOD_POST) == 0 || strcmp(method, MHD_HTTP_METHOD_PUT) == 0;
    if (r == HTTP_ROUTE_OTHER) {
        ret = http_text(s, c, r, MHD_HTTP_NOT_FOUND, NULL, NULL, "404 page not found");
        goto out;
    }
    if (r == HTTP_ROUTE_RELOAD ? !post : !(get || head)) {
        ret = http_text(s, c, r, MHD_HTTP_METHOD_NOT_ALLOWED, MHD_HTTP_HEADER_ALLOW,
                        http_routes[r].allow, "method not allowed");
        goto out;
    }
    switch (r) {
    case HTTP_ROUTE_ROOT:
    case HTTP_ROUTE_UI:
        ret = http_asset(s, c, r, url);
        break;
    case HTTP_ROUTE_PROFILE:
    case HTTP_ROUTE_FLAME:
        ret = http_profile(s, c, r, head);
        break;
    case HTTP_ROUTE_TARGETS:
        ret = http_targets(s, c);
        break;
    case HTTP_ROUTE_METRICS:
        ret = http_metrics(s, c);
        break;
    case HTTP_ROUTE_HEALTHY:
        ret = http_text(s, c, r, MHD_HTTP_OK, NULL, NULL, "pyprofd is healthy.");
        break;
    case HTTP_ROUTE_READY:
        if (!s->ops.ready || s->ops.ready(s->ops.ctx))
            ret = http_text(s, c, r, MHD_HTTP_OK, NULL, NULL, "pyprofd is ready.");
        else
            ret = http_text(s, c, r, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, NULL,
                            "pyprofd is not ready.");
        break;
    case HTTP_ROUTE_RELOAD:
        ret = http_reload(s, c);
        break;
    case HTTP_ROUTE_OTHER:
    case HTTP_ROUTE_COUNT:
    default:
        ret = MHD_NO;
        break;
    }
out:
    return ret;
}

/*
 * A body is coming: it must be in by the head deadline, counted from the
 * accept. libmicrohttpd calls the handler for each piece of body, which
 * checks the deadline; the idle timeout is cut to the time left meanwhile
 * (whole seconds, at least 1), so a body that stalls is not waited for
 * longer either.
 */
static void http_body_deadline(struct http_server *s, struct MHD_Connection *c,
                               struct http_request *r)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    uint64_t accepted = ci ? http_gate_accepted_ns(ci->socket_context) : 0;
    if (!accepted)
        return;
    r->deadline_ns = accepted + (uint64_t)s->head_timeout_ms * 1000000ull;
    uint64_t now = clock_mono_now();
    uint64_t left_s =
        now < r->deadline_ns ? (r->deadline_ns - now + 999999999ull) / 1000000000ull : 1;
    if (left_s < s->conn_timeout_s) {
        MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, (unsigned)left_s);
        r->short_timeout = true;
    }
}

/*
 * libmicrohttpd calls this first when the headers are in (set up the request
 * state, refuse an announced oversized body, start the body deadline), then
 * once per chunk of body (ignored), then with no more data (answer).
 */
static enum MHD_Result http_handle(void *cls, struct MHD_Connection *c, const char *url,
                                   const char *method, const char *version, const char *upload_data,
                                   size_t *upload_data_size, void **con_cls)
{
    struct http_server *s = cls;
    struct http_request *r = *con_cls;
    enum MHD_Result ret = MHD_YES;
    (void)version;
    (void)upload_data;
    if (!r) {
        r = alloc_calloc(1, sizeof(*r));
        if (!r) {
            ret = MHD_NO;
            goto out;
        }
        r->srv = s;
        *con_cls = r;
        atomic_fetch_add(&s->inflight, 1);
        const char *cl =
            MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        const char *te =
            MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
        uint64_t clen = 0;
        if (cl && (!http_parse_uint(cl, 19, &clen) || clen > HTTP_BODY_CAP)) {
            ret = http_text(s, c, http_lookup(url), MHD_HTTP_CONTENT_TOO_LARGE, NULL, NULL,
                            "request body too large (limit %" PRIu64 " bytes)", HTTP_BODY_CAP);
            goto out;
        }
        if (clen > 0 || te)
            http_body_deadline(s, c, r);
        goto out;
    }
    if (*upload_data_size != 0) {
        r->body += *upload_data_size;
        *upload_data_size = 0;
        if (r->body > HTTP_BODY_CAP)
            ret = MHD_NO; /* chunked and too long: close the connection */
        else if (r->deadline_ns && clock_mono_now() > r->deadline_ns)
            ret = MHD_NO; /* trickled past the deadline: close */
        goto out;
    }
    if (r->short_timeout) {
        MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, (unsigned)s->conn_timeout_s);
        r->short_timeout = false;
    }
    ret = http_route_request(s, c, url, method);
out:
    return ret;
}

static void http_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                           enum MHD_RequestTerminationCode toe)
{
    struct http_server *s = cls;
    (void)c;
    (void)toe;
    if (*con_cls) {
        alloc_free(*con_cls);
        *con_cls = NULL;
        atomic_fetch_sub(&s->inflight, 1);
    }
}

/* ---- connections: from the gate to libmicrohttpd ---- */

/* The gate's handoff: a connection with a complete request head. */
static int http_handoff(void *ctx, int fd, const struct sockaddr *addr, socklen_t addrlen)
{
    struct http_server *s = ctx;
    /* closes fd on failure as well */
    if (MHD_add_connection(s->mhd, fd, addr, addrlen) != MHD_YES)
        return errno ? -errno : -EIO;
    return 0;
}

/* libmicrohttpd took over a connection, or closed one: the gate keeps count. */
static void http_notify_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                                   enum MHD_ConnectionNotificationCode code)
{
    struct http_server *s = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        *socket_context = NULL;
        if (ci)
            http_gate_attach(s->gate, (int)ci->connect_fd, socket_context);
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        http_gate_detach(s->gate, *socket_context);
        *socket_context = NULL;
    }
}

/* ---- start and stop ---- */

/* Resolves and binds @a addr; returns the listening socket or -errno with a message. */
static int http_listen(const char *addr, char *err, size_t err_size)
{
    char host[256];
    char port[8];
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV,
                             .ai_family = AF_UNSPEC};
    struct addrinfo *res = NULL;
    int fd = -1;
    int rc = http_parse_address(addr, host, sizeof(host), port, sizeof(port), err, err_size);
    if (rc != 0)
        goto out;
    int gai = getaddrinfo(host[0] ? host : NULL, port, &hints, &res);
    if (gai != 0) {
        rc = gai == EAI_MEMORY ? -ENOMEM : gai == EAI_SYSTEM ? -errno : -EINVAL;
        snprintf(err, err_size, "listen address %s: %s", addr,
                 gai == EAI_SYSTEM ? strerror(-rc) : gai_strerror(gai));
        goto out;
    }
    rc = -EADDRNOTAVAIL;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        int one = 1;
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) {
            rc = -errno;
            continue;
        }
        if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == 0 &&
            bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, HTTP_BACKLOG) == 0) {
            rc = 0;
            break;
        }
        rc = -errno;
        close(fd);
        fd = -1;
    }
    if (rc != 0)
        snprintf(err, err_size, "cannot listen on %s: %s", addr, strerror(-rc));
out:
    if (res)
        freeaddrinfo(res);
    return rc != 0 ? rc : fd;
}

int http_server_start(const struct http_server_config *cfg, const struct http_server_ops *ops,
                      struct http_server **out, char *err, size_t err_size)
{
    char dummy[1];
    char addr[300];
    struct http_server *s = NULL;
    int listen_fd = -1;
    int rc = 0;
    if (!err) {
        err = dummy;
        err_size = sizeof(dummy);
    }
    if (err_size > 0)
        err[0] = '\0';
    if (cfg->listen_address)
        snprintf(addr, sizeof(addr), "%s", cfg->listen_address);
    else
        snprintf(addr, sizeof(addr), "127.0.0.1:%d", PYPROFD_DEFAULT_PORT);
    s = alloc_calloc(1, sizeof(*s));
    if (!s) {
        rc = -ENOMEM;
        snprintf(err, err_size, "out of memory");
        goto out;
    }
    s->ops = *ops;
    s->enable_lifecycle = cfg->enable_lifecycle;
    s->max_seconds =
        cfg->max_profile_seconds ? cfg->max_profile_seconds : HTTP_SERVER_DEFAULT_MAX_SECONDS;
    s->max_profiles = cfg->max_concurrent_profiles ? cfg->max_concurrent_profiles : 4;
    s->metrics_cap = cfg->metrics_cap ? cfg->metrics_cap : PROMTEXT_DEFAULT_CAP;
    s->head_timeout_ms =
        cfg->head_timeout_ms ? cfg->head_timeout_ms : HTTP_SERVER_DEFAULT_HEAD_TIMEOUT_MS;
    s->conn_timeout_s = cfg->connection_timeout_s ? cfg->connection_timeout_s : 30;
    struct http_gate_config gc = {
        .connection_limit =
            cfg->connection_limit ? cfg->connection_limit : HTTP_SERVER_DEFAULT_CONNECTION_LIMIT,
        .per_client_limit =
            cfg->per_client_limit ? cfg->per_client_limit : HTTP_SERVER_DEFAULT_PER_CLIENT_LIMIT,
        .head_timeout_ms = s->head_timeout_ms,
    };
    atomic_init(&s->stopping, false);
    atomic_init(&s->profiles_active, 0);
    atomic_init(&s->inflight, 0);
    for (size_t r = 0; r < HTTP_ROUTE_COUNT; r++)
        for (size_t i = 0; i < HTTP_NCODES; i++)
            atomic_init(&s->requests[r][i], 0);

    listen_fd = http_listen(addr, err, err_size);
    if (listen_fd < 0) {
        rc = listen_fd;
        goto out;
    }
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    if (getsockname(listen_fd, (struct sockaddr *)&ss, &sl) != 0) {
        rc = -errno;
        snprintf(err, err_size, "getsockname: %s", strerror(errno));
        goto out;
    }
    if (ss.ss_family == AF_INET6)
        s->port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    else
        s->port = ntohs(((struct sockaddr_in *)&ss)->sin_port);

    /* No listening socket: connections come from the gate (MHD_add_connection,
     * which needs the ITC to wake the daemon thread). The limit is a backstop
     * over the gate's own, with room for connections libmicrohttpd has
     * reported closed but not yet counted out. */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
                     MHD_USE_POLL | MHD_USE_ITC | MHD_USE_NO_LISTEN_SOCKET;
    s->mhd = MHD_start_daemon(flags, 0, NULL, NULL, http_handle, s, MHD_OPTION_CONNECTION_LIMIT,
                              (unsigned)(gc.connection_limit + 16), MHD_OPTION_CONNECTION_TIMEOUT,
                              (unsigned)s->conn_timeout_s, MHD_OPTION_NOTIFY_COMPLETED,
                              http_completed, s, MHD_OPTION_NOTIFY_CONNECTION,
                              http_notify_connection, s, MHD_OPTION_END);
    if (!s->mhd) {
        rc = errno ? -errno : -EIO;
        snprintf(err, err_size, "cannot start the HTTP server on %s", addr);
        goto out;
    }
    struct http_gate_ops go = {.ctx = s, .handoff = http_handoff};
    rc = http_gate_start(&gc, listen_fd, &go, &s->gate); /* takes listen_fd */
    listen_fd = -1;
    if (rc != 0) {
        snprintf(err, err_size, "cannot start the HTTP server on %s: %s", addr, strerror(-rc));
        goto out;
    }
    *out = s;
    s = NULL;
out:
    if (listen_fd >= 0)
        close(listen_fd);
    if (s) {
        if (s->mhd)
            MHD_stop_daemon(s->mhd);
        alloc_free(s);
    }
    return rc;
}

uint16_t http_server_port(const struct http_server *s)
{
    return s->port;
}

int http_server_stop(struct http_server *s, unsigned timeout_ms)
{
    int rc = 0;
    if (!s || s->stopped)
        goto out;
    atomic_store(&s->stopping, true);
    /* no new connections; those still sending their head are closed */
    http_gate_stop(s->gate);
    uint64_t deadline = clock_mono_now() + (uint64_t)timeout_ms * 1000000ull;
    while (atomic_load(&s->inflight) > 0 && clock_mono_now() < deadline) {
        struct timespec nap = {0, 10 * 1000 * 1000};
        nanosleep(&nap, NULL);
    }
    if (atomic_load(&s->inflight) > 0)
        rc = -ETIMEDOUT;
    /* detaches every connection from the gate, which lives until free */
    MHD_stop_daemon(s->mhd);
    s->mhd = NULL;
    s->stopped = true;
out:
    return rc;
}

void http_server_free(struct http_server *s)
{
    if (!s)
        return;
    (void)http_server_stop(s, 5000);
    http_gate_free(s->gate);
    alloc_free(s);
}
