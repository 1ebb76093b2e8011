/* SPDX-License-Identifier: MIT */
/*
 * http_gate.h: the HTTP server's front door. It owns the listening socket,
 * accepts every connection itself and hands one to libmicrohttpd only once
 * its whole request head (request line and header fields) is in, so that a
 * slow or broken client never holds a server thread while it trickles
 * bytes (slowloris). Until then the gate only peeks at the socket
 * (MSG_PEEK): libmicrohttpd still reads the head itself.
 *
 * Invariants:
 *   - at most cfg.connection_limit connections are open at once, counting
 *     those still sending their head ("reading") and those handed off
 *     ("active", until libmicrohttpd reports them closed);
 *   - at most cfg.per_client_limit of them come from one client address
 *     (IPv4, IPv4-mapped IPv6 counted as IPv4, or the full IPv6 address);
 *   - a reading connection is closed cfg.head_timeout_ms after it was
 *     accepted however fast it trickles (408 Request Timeout);
 *   - a request line or header field that cannot be HTTP/1.x is answered
 *     400 Bad Request and closed as soon as its first wrong byte arrives; a
 *     head over HTTP_GATE_HEAD_MAX bytes gets 431;
 *   - when a new connection would exceed a limit, the oldest connection
 *     still reading its head (of that client for the per-client limit, of
 *     anyone for the total) is closed with 503 to make room; only when all
 *     are active is the new one refused with 503. Complete requests thus
 *     always find room while slow ones hold slots.
 *
 * Threads: one gate thread accepts and watches reading connections. The
 * handoff callback runs on it. http_gate_attach() and http_gate_detach()
 * are called from the libmicrohttpd thread that reports connections,
 * http_gate_accepted_ns() from any thread; they and http_gate_stats() are
 * thread-safe.
 */
#ifndef PYPROFD_EXPORTERS_PULL_HTTP_GATE_H
#define PYPROFD_EXPORTERS_PULL_HTTP_GATE_H

#include "base/compat.h"

#include <sys/socket.h>

/** Longest request head (request line, header fields, final empty line) accepted. */
#define HTTP_GATE_HEAD_MAX 16384

/** Settings; every field must be non-zero (the server fills in its defaults). */
struct http_gate_config {
    uint32_t connection_limit; /* open connections, reading and active */
    uint32_t per_client_limit; /* of those, from one client address; capped at the total */
    uint32_t head_timeout_ms;  /* from accept to the end of the head */
};

/** Where complete requests go. */
struct http_gate_ops {
    void *ctx;
    /**
     * Takes ownership of the connected socket @a fd (non-blocking, its
     * request head complete and still unread) from the client at @a addr
     * (borrowed, @a addrlen bytes). Returns 0, or a negative errno when the
     * connection could not be taken; @a fd is closed by the callee in both
     * cases. Runs on the gate thread; must not block.
     */
    int (*handoff)(void *ctx, int fd, const struct sockaddr *addr, socklen_t addrlen);
};

/** Counters since start (monotonic) and current gauges; see http_gate_stats(). */
struct http_gate_stats {
    uint64_t accepted;         /* connections accepted */
    uint64_t handed_off;       /* complete heads passed on */
    uint64_t bad_request;      /* 400: malformed request line or header field */
    uint64_t head_too_large;   /* 431: head over HTTP_GATE_HEAD_MAX */
    uint64_t head_timeout;     /* 408: head not complete within head_timeout_ms */
    uint64_t evicted;          /* 503: a reading connection closed to make room */
    uint64_t client_limit;     /* 503: refused, its client's connections all active */
    uint64_t connection_limit; /* 503: refused, all connections active */
    uint64_t reading;          /* now: connections sending their head */
    uint64_t active;           /* now: connections handed off and not yet closed */
};

/** Result of http_head_scan(). */
enum http_head_result {
    HTTP_HEAD_MORE, /* well-formed so far, not complete */
    HTTP_HEAD_DONE, /* complete */
    HTTP_HEAD_BAD,  /* cannot be an HTTP/1.x request head */
};

/**
 * Incremental scanner state for http_head_scan(); zero it before the first
 * call. Fields are private.
 */
struct http_head_scan {
    uint32_t state;
    uint32_t count;  /* bytes in the current state's token */
    size_t total;    /* bytes scanned so far */
    const char *why; /* on HTTP_HEAD_BAD: what was wrong, a static string */
};

/**
 * Scans the next @a len bytes of a request head (the bytes that follow
 * those of the previous calls). Strict HTTP/1.x (RFC 9112): up to 4 empty
 * lines, then METHOD SP request-target SP HTTP/d.d, then "name: value"
 * fields, each line ending in CRLF or LF, then an empty line. Rejects
 * control characters, a bare CR, obs-fold, a method over 32 characters and
 * HTTP/0.9 request lines. On HTTP_HEAD_DONE, *@a end (may be NULL) is the
 * head's length counted from the first call; bytes after it are not looked
 * at. After HTTP_HEAD_DONE or HTTP_HEAD_BAD the state must not be reused.
 * Pure function.
 */
enum http_head_result http_head_scan(struct http_head_scan *st, const char *buf, size_t len,
                                     size_t *end);

struct http_gate;

/**
 * Starts the gate thread on the listening socket @a listen_fd, which the
 * gate takes ownership of (closed by http_gate_stop(), also on failure).
 * @a cfg and @a ops are copied. Returns 0 and the gate in @a out (the caller
 * owns it; end with http_gate_free()), or -ENOMEM, -EINVAL or another
 * -errno.
 */
PYPROFD_WARN_UNUSED int http_gate_start(const struct http_gate_config *cfg, int listen_fd,
                                        const struct http_gate_ops *ops, struct http_gate **out);

/**
 * libmicrohttpd has taken over the handed-off socket @a fd: the gate now
 * counts the connection as active and stores its token in
 * *@a socket_context (for http_gate_detach() and http_gate_accepted_ns()).
 * An unknown @a fd leaves *@a socket_context NULL.
 */
void http_gate_attach(struct http_gate *g, int fd, void **socket_context);

/** The connection of @a socket_context (may be NULL) is closed: frees its slot. */
void http_gate_detach(struct http_gate *g, void *socket_context);

/**
 * CLOCK_MONOTONIC time, in ns, at which the connection of @a socket_context
 * (NULL: returns 0) was accepted.
 */
uint64_t http_gate_accepted_ns(const void *socket_context);

/** Fills @a out with the gate's counters. */
void http_gate_stats(const struct http_gate *g, struct http_gate_stats *out);

/**
 * Stops accepting: joins the gate thread, closes the connections still
 * reading their head and the listening socket. Active connections stay
 * counted until detached. A second call is a no-op. Not to be called from
 * the handoff callback.
 */
void http_gate_stop(struct http_gate *g);

/** Stops if needed and frees; NULL is a no-op. Nothing may attach or detach afterwards. */
void http_gate_free(struct http_gate *g);

#endif /* PYPROFD_EXPORTERS_PULL_HTTP_GATE_H */
