/* SPDX-License-Identifier: MIT */
/*
 * http_server.h: the pull and operations HTTP server (libmicrohttpd). It
 * serves Go-compatible CPU profiles at /debug/pprof/profile, the target list,
 * Prometheus metrics and the /-/ lifecycle endpoints (docs/http.md). The
 * server knows nothing about the daemon: it reaches it only through the
 * callbacks of struct http_server_ops.
 *
 * Routes (anything else 404; a known path with another method 405 + Allow;
 * HEAD is accepted wherever GET is):
 *   GET  /                        the agent's page (web/agent.html, text/html)
 *   GET  /ui/NAME                 the page's files, embedded (web/web.h)
 *   GET  /debug/pprof/profile     ?seconds=N (1..max, default 30) &pid=P &mode=M
 *   GET  /flamegraph              the same request as JSON (pprof/flamegraph.h):
 *                                 ops.profile with format HTTP_PROFILE_FLAME
 *   GET  /targets                 application/json from ops.targets_json
 *   GET  /metrics                 PROMTEXT_CONTENT_TYPE from ops.metrics + the
 *                                 server's own and process_* metrics
 *   GET  /-/healthy               200 "pyprofd is healthy.\n"
 *   GET  /-/ready                 200 or 503 from ops.ready
 *   POST|PUT /-/reload            ops.reload; 403 unless enable_lifecycle
 *
 * Connections (http_gate.h): a gate thread accepts every connection and
 * reads its request head itself; only a complete head reaches libmicrohttpd,
 * which serves it on a thread of its own (thread-per-connection mode), so a
 * profile request blocked for N seconds never delays /metrics or the others,
 * and a client trickling its head holds no thread. The head must be complete
 * within head_timeout_ms of the accept (else 408), be well-formed HTTP/1.x
 * (else 400 at the first wrong byte) and fit in 16 KiB (else 431).
 * At most connection_limit connections are open, per_client_limit from one
 * client address; a new connection over either limit displaces the oldest
 * one still sending its head (503), so complete requests get through while
 * slow ones hold slots, and is refused with 503 only when every slot serves
 * a request. Every response closes its connection (no keep-alive: a second
 * request on the connection would bypass the gate). A request body must be
 * complete within the same deadline; bodies are ignored, and one larger
 * than 64 KiB is refused (413 when announced by Content-Length, otherwise
 * the connection is closed).
 *
 * Thread safety of the callbacks: every callback may be called from several
 * server threads AT THE SAME TIME (two scrapes of /metrics, a profile request
 * during a /targets request, ...). The daemon must make them safe: lock its
 * own state or read snapshots. Callbacks must not call http_server_stop().
 *
 * Shutdown: http_server_stop() first stops accepting connections (closing
 * those still sending their request head) and marks every profile request
 * cancelled; profile callbacks must then return soon
 * (poll http_profile_cancelled() at least every 100 ms, or watch the daemon's
 * own shutdown flag, and return -ECANCELED). It waits for in-flight requests
 * until the deadline, then closes all connections and joins the server's
 * threads: a callback that never returns makes stop wait for it.
 */
#ifndef PYPROFD_EXPORTERS_PULL_HTTP_SERVER_H
#define PYPROFD_EXPORTERS_PULL_HTTP_SERVER_H

#include "base/compat.h"

#include "base/promtext.h"

/** Longest profile a request may ask for unless configured otherwise (1 hour). */
#define HTTP_SERVER_DEFAULT_MAX_SECONDS 3600
/** seconds= when the request gives none, as Go's net/http/pprof. */
#define HTTP_SERVER_DEFAULT_SECONDS 30
/** Open connections, reading their head or being served, unless configured otherwise. */
#define HTTP_SERVER_DEFAULT_CONNECTION_LIMIT 128
/** Open connections from one client address unless configured otherwise. */
#define HTTP_SERVER_DEFAULT_PER_CLIENT_LIMIT 16
/** From accept to a complete request head (and body) unless configured otherwise. */
#define HTTP_SERVER_DEFAULT_HEAD_TIMEOUT_MS 10000

/** What a profile request asks for; passed to ops.profile. */
enum http_profile_format {
    HTTP_PROFILE_PPROF, /* /debug/pprof/profile: gzipped pprof */
    HTTP_PROFILE_FLAME, /* /flamegraph: the call tree as JSON (pprof/flamegraph.h) */
};

struct http_profile_request {
    uint32_t seconds; /* 1..max_profile_seconds */
    int32_t pid;      /* a target's pid, or 0 for all targets */
    int32_t mode;     /* an enum profile_mode: only targets sampled in it; -1: any */
    enum http_profile_format format;
    const void *priv; /* private to the server: for http_profile_cancelled() */
};

/**
 * Whether the profile request @a req should end now (the callback then
 * returns -ECANCELED): the server is stopping, or the client hung up (closed
 * or reset its connection; its socket is looked at no more than every
 * 100 ms). Thread-safe, cheap: poll it.
 */
bool http_profile_cancelled(const struct http_profile_request *req);

/**
 * The daemon's side. @a ctx is passed back to every callback. Any callback
 * may be NULL: its route answers 501, except ready (NULL: always ready).
 * Error strings are written into the caller's @a err buffer (NUL-terminated,
 * may be left empty; the server then uses strerror()).
 */
struct http_server_ops {
    void *ctx;
    /**
     * Collects a profile for @a req->seconds seconds (blocking this server
     * thread) and returns it, gzipped pprof, in @a out / @a out_len: the
     * buffer comes from alloc_malloc() and ownership passes to the server,
     * which frees it with alloc_free() once sent. Returns 0, or a negative
     * errno that picks the HTTP status: -ENOENT / -ESRCH (pid is not a
     * current target) 404, -EINVAL 400, -EBUSY / -EAGAIN / -ECANCELED 503,
     * anything else 500. On error @a out is not set.
     */
    int (*profile)(void *ctx, const struct http_profile_request *req, uint8_t **out,
                   size_t *out_len, char *err, size_t err_size);
    /**
     * The JSON document for GET /targets, in @a out (alloc_malloc(), owned by
     * the server afterwards) of @a out_len bytes. Returns 0 or -errno (500).
     */
    int (*targets_json)(void *ctx, char **out, size_t *out_len);
    /**
     * Writes the daemon's metric families into @a w (borrowed for the call).
     * The server appends its own pyprofd_http_* families and process_* after
     * them, so the daemon must not write those names. Returns 0 or -errno
     * (500); a document over the cap (promtext_error()) is a 500 as well.
     */
    int (*metrics)(void *ctx, struct promtext *w);
    /** Whether the daemon is ready to serve (e.g. first scan done). */
    bool (*ready)(void *ctx);
    /** Reloads the configuration. Returns 0 or -errno with a message in @a err (500). */
    int (*reload)(void *ctx, char *err, size_t err_size);
};

/** Settings; zero fields take the defaults given. */
struct http_server_config {
    const char *listen_address;       /* "host:port"; NULL: "127.0.0.1:PYPROFD_DEFAULT_PORT" */
    bool enable_lifecycle;            /* serve POST/PUT /-/reload */
    uint32_t max_profile_seconds;     /* 0: HTTP_SERVER_DEFAULT_MAX_SECONDS */
    uint32_t max_concurrent_profiles; /* 0: 4; more at once get 503 */
    uint32_t connection_limit;        /* 0: HTTP_SERVER_DEFAULT_CONNECTION_LIMIT */
    uint32_t per_client_limit;        /* 0: HTTP_SERVER_DEFAULT_PER_CLIENT_LIMIT */
    uint32_t head_timeout_ms;         /* 0: HTTP_SERVER_DEFAULT_HEAD_TIMEOUT_MS */
    uint32_t connection_timeout_s;    /* 0: 30 s of inactivity closes a served connection */
    size_t metrics_cap;               /* 0: PROMTEXT_DEFAULT_CAP */
};

struct http_server;

/**
 * Binds the listen address and starts serving. The address is "host:port":
 * an IPv4 literal, an IPv6 literal in brackets ("[::1]:9867") or a host name
 * (resolved; the first address that binds is used); port 0 picks a free port
 * (see http_server_port()). @a ops is copied; ops->ctx must outlive the
 * server. On success returns 0 and stores the server in @a out (the caller
 * owns it; end with http_server_free()). On failure returns -EINVAL (bad
 * address or config), -EADDRINUSE, -EADDRNOTAVAIL, -EACCES, -ENOMEM or
 * another -errno, with a message in @a err (may be NULL).
 */
PYPROFD_WARN_UNUSED int http_server_start(const struct http_server_config *cfg,
                                          const struct http_server_ops *ops,
                                          struct http_server **out, char *err, size_t err_size);

/** The port the server listens on (useful with port 0). */
uint16_t http_server_port(const struct http_server *s);

/**
 * Stops accepting, cancels profile requests, waits up to @a timeout_ms for
 * in-flight requests to finish, then closes the remaining connections and
 * joins the server's threads (see the top of this file). Returns 0, or
 * -ETIMEDOUT when requests were still running at the deadline (they were
 * still waited for). A second call is a no-op returning 0. Not to be called
 * from a callback.
 */
int http_server_stop(struct http_server *s, unsigned timeout_ms);

/** Stops (5 s deadline) if still running and frees; NULL is a no-op. */
void http_server_free(struct http_server *s);

#endif /* PYPROFD_EXPORTERS_PULL_HTTP_SERVER_H */
