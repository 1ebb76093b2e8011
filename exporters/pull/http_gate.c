/* SPDX-License-Identifier: MIT */
/*
 * http_gate.c: accepts connections for the HTTP server and holds each in an
 * epoll set until its request head is complete, then hands it to
 * libmicrohttpd (http_gate.h). libmicrohttpd has no deadline for a request
 * head (its timeout is an idle timeout that every trickled byte resets), no
 * per-client limit that spares a scraper sharing the attacker's address, and
 * it closes on some malformed request lines without a 400 while others (a
 * TLS handshake, binary noise) hold their slot until the idle timeout. The
 * gate does all of that before a server thread exists for the connection.
 *
 * The head is read with MSG_PEEK so that libmicrohttpd still finds it in the
 * socket; edge-triggered epoll reports each new arrival although the data
 * stays queued. Every peek starts at the beginning of the queue, so a head
 * trickled in k pieces costs k copies of at most HTTP_GATE_HEAD_MAX bytes,
 * bounded by the head deadline.
 */
#include "base/compat.h"

#include "exporters/pull/http_gate.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/clock.h"

#define GATE_METHOD_MAX      32
#define GATE_LEAD_MAX        4  /* empty lines tolerated before the request line (RFC 9112: >= 1) */
#define GATE_ACCEPT_BATCH    64 /* accepts per wake-up, so reading connections get a turn */
#define GATE_EVENTS          64
#define GATE_TICK_MS         1000           /* longest epoll wait */
#define GATE_DRAIN_MAX       (64u << 10)    /* unread bytes discarded before an error reply */
#define GATE_PAUSE_NS        100000000ull   /* no descriptors left: retry accept after 100 ms */
#define GATE_HANDED_STALE_NS 10000000000ull /* handed off but never attached: lost */

/* epoll_data.u64: a slot's index in the low half, the low half of its seq in the high half */
#define GATE_EV_LISTEN UINT32_MAX
#define GATE_EV_WAKE   (UINT32_MAX - 1)

/* ---- the head scanner ---- */

enum {
    HS_LEAD,    /* empty lines before the request line */
    HS_LEAD_CR, /* CR of an empty line seen */
    HS_METHOD,
    HS_TARGET0, /* first byte of the request target */
    HS_TARGET,
    HS_VERSION, /* count: bytes of "HTTP/d.d" seen */
    HS_RL_CR,   /* CR ending the request line seen */
    HS_LINE,    /* start of a header field or of the final empty line */
    HS_NAME,
    HS_VALUE,
    HS_FIELD_CR, /* CR ending a field line seen */
    HS_END_CR,   /* CR of the final empty line seen */
};

static bool hs_tchar(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

static bool hs_vchar(unsigned char c)
{
    return c > 0x20 && c < 0x7f;
}

static enum http_head_result hs_bad(struct http_head_scan *st, const char *why)
{
    st->why = why;
    return HTTP_HEAD_BAD;
}

/* One byte; returns HTTP_HEAD_MORE to go on. */
static enum http_head_result hs_step(struct http_head_scan *st, unsigned char c)
{
    static const char version[] = "HTTP/d.d";
    const char *rl = "malformed request line";
    const char *field = "malformed header field";
    switch (st->state) {
    case HS_LEAD:
        if ((c == '\r' || c == '\n') && ++st->count > GATE_LEAD_MAX)
            return hs_bad(st, "too many empty lines before the request line");
        if (c == '\r')
            st->state = HS_LEAD_CR;
        else if (c == '\n')
            st->state = HS_LEAD;
        else if (hs_tchar(c)) {
            st->state = HS_METHOD;
            st->count = 1;
        } else
            return hs_bad(st, rl);
        break;
    case HS_LEAD_CR:
        if (c != '\n')
            return hs_bad(st, rl);
        st->state = HS_LEAD;
        break;
    case HS_METHOD:
        if (c == ' ')
            st->state = HS_TARGET0;
        else if (!hs_tchar(c))
            return hs_bad(st, rl);
        else if (++st->count > GATE_METHOD_MAX)
            return hs_bad(st, "request method too long");
        break;
    case HS_TARGET0:
    case HS_TARGET:
        if (hs_vchar(c))
            st->state = HS_TARGET;
        else if (c == ' ' && st->state == HS_TARGET) {
            st->state = HS_VERSION;
            st->count = 0;
        } else
            return hs_bad(st, rl);
        break;
    case HS_VERSION:
        if (st->count == sizeof(version) - 1) {
            if (c == '\r')
                st->state = HS_RL_CR;
            else if (c == '\n')
                st->state = HS_LINE;
            else
                return hs_bad(st, rl);
        } else if (version[st->count] == 'd' ? !(c >= '0' && c <= '9')
                                             : c != (unsigned char)version[st->count]) {
            return hs_bad(st, rl);
        } else {
            st->count++;
        }
        break;
    case HS_RL_CR:
        if (c != '\n')
            return hs_bad(st, rl);
        st->state = HS_LINE;
        break;
    case HS_LINE:
        if (c == '\r')
            st->state = HS_END_CR;
        else if (c == '\n')
            return HTTP_HEAD_DONE;
        else if (c == ' ' || c == '\t')
            return hs_bad(st, "obsolete line folding");
        else if (hs_tchar(c))
            st->state = HS_NAME;
        else
            return hs_bad(st, field);
        break;
    case HS_NAME:
        if (c == ':')
            st->state = HS_VALUE;
        else if (!hs_tchar(c))
            return hs_bad(st, field);
        break;
    case HS_VALUE:
        if (c == '\r')
            st->state = HS_FIELD_CR;
        else if (c == '\n')
            st->state = HS_LINE;
        else if (c != '\t' && c != ' ' && !hs_vchar(c) && c < 0x80)
            return hs_bad(st, field);
        break;
    case HS_FIELD_CR:
        if (c != '\n')
            return hs_bad(st, field);
        st->state = HS_LINE;
        break;
    case HS_END_CR:
        if (c != '\n')
            return hs_bad(st, field);
        return HTTP_HEAD_DONE;
    default:
        return hs_bad(st, "scanner reused");
    }
    return HTTP_HEAD_MORE;
}

enum http_head_result http_head_scan(struct http_head_scan *st, const char *buf, size_t len,
                                     size_t *end)
{
    enum http_head_result r = HTTP_HEAD_MORE;
    for (size_t i = 0; i < len && r == HTTP_HEAD_MORE; i++) {
        st->total++;
        r = hs_step(st, (unsigned char)buf[i]);
    }
    if (r == HTTP_HEAD_DONE && end)
        *end = st->total;
    return r;
}

/* ---- connections ---- */

enum gate_state {
    GATE_FREE,
    GATE_READING, /* in the epoll set, head incomplete */
    GATE_HANDED,  /* passed to the handoff callback, not yet attached */
    GATE_ACTIVE,  /* attached: libmicrohttpd serves it */
};

/* A client address as the per-client limit counts it. */
struct gate_key {
    uint8_t len;
    uint8_t a[16];
};

struct gate_conn {
    enum gate_state state;
    int fd;
    uint64_t seq;       /* accept order: the oldest has the smallest */
    uint64_t since_ns;  /* accepted */
    uint64_t handed_ns; /* GATE_HANDED since */
    struct gate_key key;
    struct sockaddr_storage addr;
    socklen_t addrlen;
    /* gate thread only: */
    size_t peeked; /* head bytes already scanned */
    struct http_head_scan scan;
};

struct http_gate {
    struct http_gate_config cfg;
    struct http_gate_ops ops;
    int listen_fd;
    int epoll_fd;
    int wake_fd;
    bool accepting;         /* listen_fd is in the epoll set */
    uint64_t accept_resume; /* when !accepting: put it back at this time */
    pthread_t thread;
    bool thread_started;
    bool stopped;
    atomic_bool stop;
    char *scratch; /* HTTP_GATE_HEAD_MAX + 1 bytes, gate thread only */

    /* lock guards the state, fd and key of every slot; the other fields of a
     * READING slot belong to the gate thread */
    pthread_mutex_t lock;
    struct gate_conn *conns; /* cfg.connection_limit slots */

    atomic_uint_least64_t reading;
    atomic_uint_least64_t active;
    atomic_uint_least64_t accepted;
    atomic_uint_least64_t handed_off;
    atomic_uint_least64_t bad_request;
    atomic_uint_least64_t head_too_large;
    atomic_uint_least64_t head_timeout;
    atomic_uint_least64_t evicted;
    atomic_uint_least64_t client_limit;
    atomic_uint_least64_t connection_limit;
};

static void gate_key_of(const struct sockaddr_storage *ss, struct gate_key *k)
{
    memset(k, 0, sizeof(*k));
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *sin = (const struct sockaddr_in *)ss;
        k->len = 4;
        memcpy(k->a, &sin->sin_addr, 4);
    } else if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)ss;
        if (IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr)) {
            k->len = 4;
            memcpy(k->a, &sin6->sin6_addr.s6_addr[12], 4);
        } else {
            k->len = 16;
            memcpy(k->a, &sin6->sin6_addr, 16);
        }
    }
}

static bool gate_key_eq(const struct gate_key *a, const struct gate_key *b)
{
    return a->len == b->len && memcmp(a->a, b->a, a->len) == 0;
}

/*
 * Answers @a code and closes @a fd. The unread input is discarded first:
 * closing a socket with unread data sends a reset, which can destroy the
 * reply before the client reads it.
 */
static void gate_reply_close(struct http_gate *g, int fd, unsigned code, const char *phrase,
                             const char *msg)
{
    char resp[512];
    size_t drained = 0;
    while (drained < GATE_DRAIN_MAX) {
        ssize_t n = recv(fd, g->scratch, HTTP_GATE_HEAD_MAX + 1, MSG_DONTWAIT);
        if (n <= 0)
            break;
        drained += (size_t)n;
    }
    int n = snprintf(resp, sizeof(resp),
                     "HTTP/1.1 %u %s\r\n"
                     "Content-Type: text/plain; charset=utf-8\r\n"
                     "X-Content-Type-Options: nosniff\r\n"
                     "Content-Length: %zu\r\n"
                     "Connection: close\r\n"
                     "\r\n"
                     "%s\n",
                     code, phrase, strlen(msg) + 1, msg);
    if (n > 0 && (size_t)n < sizeof(resp))
        (void)send(fd, resp, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
    close(fd);
}

/* Frees READING slot @a c, with g->lock held; its socket is closed already. */
static void gate_forget_locked(struct http_gate *g, struct gate_conn *c)
{
    PYPROFD_ASSERT(c->state == GATE_READING);
    c->state = GATE_FREE;
    c->fd = -1;
    atomic_fetch_sub(&g->reading, 1);
}

/* Closes reading connection @a c without a word (the client left), with g->lock held. */
static void gate_close_locked(struct http_gate *g, struct gate_conn *c)
{
    close(c->fd); /* also leaves the epoll set: the socket is not shared */
    gate_forget_locked(g, c);
}

/* Answers reading connection @a c with @a code and closes it, with g->lock held. */
static void gate_drop_locked(struct http_gate *g, struct gate_conn *c, unsigned code,
                             const char *phrase, const char *msg)
{
    gate_reply_close(g, c->fd, code, phrase, msg);
    gate_forget_locked(g, c);
}

static void gate_close(struct http_gate *g, struct gate_conn *c)
{
    pthread_mutex_lock(&g->lock);
    gate_close_locked(g, c);
    pthread_mutex_unlock(&g->lock);
}

static void gate_drop(struct http_gate *g, struct gate_conn *c, unsigned code, const char *phrase,
                      const char *msg)
{
    pthread_mutex_lock(&g->lock);
    gate_drop_locked(g, c, code, phrase, msg);
    pthread_mutex_unlock(&g->lock);
}

static void gate_handoff(struct http_gate *g, struct gate_conn *c, uint64_t now)
{
    struct sockaddr_storage addr = c->addr;
    socklen_t addrlen = c->addrlen;
    int fd = c->fd;
    (void)epoll_ctl(g->epoll_fd, EPOLL_CTL_DEL, fd, NULL);
    pthread_mutex_lock(&g->lock);
    c->state = GATE_HANDED;
    c->handed_ns = now;
    atomic_fetch_sub(&g->reading, 1);
    atomic_fetch_add(&g->active, 1);
    pthread_mutex_unlock(&g->lock);
    atomic_fetch_add(&g->handed_off, 1);
    if (g->ops.handoff(g->ops.ctx, fd, (const struct sockaddr *)&addr, addrlen) != 0) {
        /* the callee closed fd; only this thread reuses slots, so c is still ours */
        pthread_mutex_lock(&g->lock);
        if (c->state == GATE_HANDED) {
            c->state = GATE_FREE;
            c->fd = -1;
            atomic_fetch_sub(&g->active, 1);
        }
        pthread_mutex_unlock(&g->lock);
    }
}

static uint64_t gate_ev_data(const struct http_gate *g, const struct gate_conn *c)
{
    return (uint64_t)(uint32_t)c->seq << 32 | (uint64_t)(c - g->conns);
}

/*
 * New bytes (or a hang-up, in @a events) on reading connection @a c, the one
 * accepted as number @a seq (low 32 bits).
 */
static void gate_on_input(struct http_gate *g, struct gate_conn *c, uint32_t seq, uint32_t events,
                          uint64_t now)
{
    char msg[128];
    pthread_mutex_lock(&g->lock); /* a handed-off slot may be changing on another thread */
    bool mine = c->state == GATE_READING && (uint32_t)c->seq == seq;
    pthread_mutex_unlock(&g->lock);
    if (!mine)
        return; /* an event of a connection dropped or handed off earlier in the same batch,
                 * whose slot may even hold a new one by now */
    ssize_t n = recv(c->fd, g->scratch, HTTP_GATE_HEAD_MAX + 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        gate_close(g, c); /* the client left */
        return;
    }
    if (n > 0 && (size_t)n > c->peeked) {
        size_t end = 0;
        enum http_head_result r =
            http_head_scan(&c->scan, g->scratch + c->peeked, (size_t)n - c->peeked, &end);
        c->peeked = (size_t)n;
        if (r == HTTP_HEAD_DONE && end <= HTTP_GATE_HEAD_MAX) {
            gate_handoff(g, c, now);
            return;
        }
        if (r == HTTP_HEAD_BAD) {
            atomic_fetch_add(&g->bad_request, 1);
            snprintf(msg, sizeof(msg), "bad request: %s", c->scan.why);
            gate_drop(g, c, 400, "Bad Request", msg);
            return;
        }
        if (c->peeked > HTTP_GATE_HEAD_MAX) {
            atomic_fetch_add(&g->head_too_large, 1);
            snprintf(msg, sizeof(msg), "request head too large (limit %d bytes)",
                     HTTP_GATE_HEAD_MAX);
            gate_drop(g, c, 431, "Request Header Fields Too Large", msg);
            return;
        }
    }
    if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))
        gate_close(g, c); /* half a head and nothing more will come */
}

enum gate_choice {
    GATE_ADMIT,       /* into *slot */
    GATE_EVICT,       /* *victim, a reading connection, must make room */
    GATE_FULL_CLIENT, /* every connection of this client is active */
    GATE_FULL_SERVER, /* every connection is active */
};

/*
 * Where a new connection from @a key (socket @a fd) goes, with g->lock held:
 * a free slot within both limits, or the oldest reading connection to evict
 * (of this client when it is at its limit, of anyone when the total is),
 * or nowhere.
 */
static enum gate_choice gate_choose_locked(struct http_gate *g, int fd, const struct gate_key *key,
                                           struct gate_conn **slot, struct gate_conn **victim)
{
    struct gate_conn *oldest_mine = NULL;
    struct gate_conn *oldest_any = NULL;
    uint32_t mine = 0;
    uint32_t total = 0;
    *slot = NULL;
    *victim = NULL;
    for (uint32_t i = 0; i < g->cfg.connection_limit; i++) {
        struct gate_conn *c = &g->conns[i];
        if (c->state == GATE_HANDED && c->fd == fd) {
            /* accept() reused the descriptor: libmicrohttpd closed this one unannounced */
            c->state = GATE_FREE;
            c->fd = -1;
            atomic_fetch_sub(&g->active, 1);
        }
        if (c->state == GATE_FREE) {
            if (!*slot)
                *slot = c;
            continue;
        }
        total++;
        bool reading = c->state == GATE_READING;
        if (gate_key_eq(&c->key, key)) {
            mine++;
            if (reading && (!oldest_mine || c->seq < oldest_mine->seq))
                oldest_mine = c;
        }
        if (reading && (!oldest_any || c->seq < oldest_any->seq))
            oldest_any = c;
    }
    if (mine >= g->cfg.per_client_limit) {
        *victim = oldest_mine;
        return oldest_mine ? GATE_EVICT : GATE_FULL_CLIENT;
    }
    if (total >= g->cfg.connection_limit) {
        *victim = oldest_any;
        return oldest_any ? GATE_EVICT : GATE_FULL_SERVER;
    }
    return GATE_ADMIT;
}

/*
 * Admits the new socket @a fd: a slot within the limits, making room by
 * evicting the oldest reading connection when needed, or a 503.
 */
static void gate_admit(struct http_gate *g, int fd, const struct sockaddr_storage *ss, socklen_t sl,
                       uint64_t now)
{
    char msg[128];
    struct gate_key key;
    struct gate_conn *slot = NULL;
    struct gate_conn *victim = NULL;
    const struct gate_conn *looked = NULL;
    enum gate_choice choice;
    gate_key_of(ss, &key);

    for (;;) {
        pthread_mutex_lock(&g->lock);
        choice = gate_choose_locked(g, fd, &key, &slot, &victim);
        if (choice != GATE_EVICT || victim == looked)
            break; /* with the lock held */
        pthread_mutex_unlock(&g->lock);
        /* Accepts come before input events, so the victim's head may be
         * complete but not yet seen (a client that connects and sends at
         * once, evicted by a burst of connects from its own address). Look
         * first: a complete head goes on, a bad one is answered, and either
         * way the slot is no longer reading. */
        looked = victim;
        gate_on_input(g, victim, (uint32_t)victim->seq, 0, now);
    }
    if (choice == GATE_FULL_CLIENT || choice == GATE_FULL_SERVER) {
        uint32_t limit =
            choice == GATE_FULL_CLIENT ? g->cfg.per_client_limit : g->cfg.connection_limit;
        atomic_fetch_add(choice == GATE_FULL_CLIENT ? &g->client_limit : &g->connection_limit, 1);
        snprintf(msg, sizeof(msg), "too many connections%s (limit %" PRIu32 ")",
                 choice == GATE_FULL_CLIENT ? " from your address" : "", limit);
        pthread_mutex_unlock(&g->lock);
        gate_reply_close(g, fd, 503, "Service Unavailable", msg);
        return;
    }
    if (choice == GATE_EVICT) {
        PYPROFD_ASSERT(victim);
        atomic_fetch_add(&g->evicted, 1);
        gate_drop_locked(g, victim, 503, "Service Unavailable",
                         "too many connections; this one had not sent a complete request");
        slot = victim;
    }
    PYPROFD_ASSERT(slot);
    memset(slot, 0, sizeof(*slot));
    slot->state = GATE_READING;
    slot->fd = fd;
    slot->seq = atomic_load(&g->accepted);
    slot->since_ns = now;
    slot->key = key;
    memcpy(&slot->addr, ss, sizeof(*ss));
    slot->addrlen = sl;
    atomic_fetch_add(&g->reading, 1);
    pthread_mutex_unlock(&g->lock);

    /* edge-triggered: each arrival is an event although peeking leaves the data queued;
     * data already queued is reported at once */
    struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | EPOLLET,
                             .data.u64 = gate_ev_data(g, slot)};
    if (epoll_ctl(g->epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0)
        gate_drop(g, slot, 503, "Service Unavailable", "cannot watch the connection");
}

static void gate_pause_accept(struct http_gate *g, uint64_t now)
{
    (void)epoll_ctl(g->epoll_fd, EPOLL_CTL_DEL, g->listen_fd, NULL);
    g->accepting = false;
    g->accept_resume = now + GATE_PAUSE_NS;
}

static void gate_accept(struct http_gate *g, uint64_t now)
{
    for (int i = 0; i < GATE_ACCEPT_BATCH; i++) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        memset(&ss, 0, sizeof(ss));
        int fd = accept4(g->listen_fd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                gate_pause_accept(g, now); /* EMFILE & co: the queue waits for us */
            return;
        }
        atomic_fetch_add(&g->accepted, 1);
        gate_admit(g, fd, &ss, sl, clock_mono_now());
    }
}

/*
 * Closes reading connections past their deadline, forgets lost handoffs,
 * resumes accepting after a pause. Returns the ms until the next deadline.
 */
static int gate_expire(struct http_gate *g, uint64_t now)
{
    char msg[128];
    const uint64_t head_ns = (uint64_t)g->cfg.head_timeout_ms * 1000000ull;
    uint64_t next = now + (uint64_t)GATE_TICK_MS * 1000000ull;
    pthread_mutex_lock(&g->lock);
    for (uint32_t i = 0; i < g->cfg.connection_limit; i++) {
        struct gate_conn *c = &g->conns[i];
        if (c->state == GATE_READING) {
            uint64_t due = c->since_ns + head_ns;
            if (due <= now) {
                atomic_fetch_add(&g->head_timeout, 1);
                snprintf(msg, sizeof(msg), "request head not complete within %" PRIu32 " ms",
                         g->cfg.head_timeout_ms);
                gate_drop_locked(g, c, 408, "Request Timeout", msg);
            } else if (due < next) {
                next = due;
            }
        } else if (c->state == GATE_HANDED && now - c->handed_ns >= GATE_HANDED_STALE_NS) {
            c->state = GATE_FREE;
            c->fd = -1;
            atomic_fetch_sub(&g->active, 1);
        }
    }
    pthread_mutex_unlock(&g->lock);
    if (!g->accepting) {
        if (g->accept_resume <= now) {
            struct epoll_event ev = {.events = EPOLLIN, .data.u64 = GATE_EV_LISTEN};
            g->accepting = epoll_ctl(g->epoll_fd, EPOLL_CTL_ADD, g->listen_fd, &ev) == 0;
            if (!g->accepting)
                g->accept_resume = now + GATE_PAUSE_NS;
        }
        if (!g->accepting && g->accept_resume < next)
            next = g->accept_resume;
    }
    return (int)((next - now + 999999ull) / 1000000ull);
}

static void *gate_main(void *arg)
{
    struct http_gate *g = arg;
    struct epoll_event ev[GATE_EVENTS];
    int timeout_ms = GATE_TICK_MS;
    while (!atomic_load(&g->stop)) {
        int n = epoll_wait(g->epoll_fd, ev, GATE_EVENTS, timeout_ms);
        uint64_t now = clock_mono_now();
        if (n < 0 && errno != EINTR) {
            struct timespec nap = {0, 10 * 1000 * 1000};
            nanosleep(&nap, NULL);
        }
        for (int i = 0; i < n; i++) {
            uint32_t idx = (uint32_t)ev[i].data.u64;
            uint32_t seq = (uint32_t)(ev[i].data.u64 >> 32);
            if (idx == GATE_EV_WAKE)
                continue; /* the loop condition says why */
            if (idx == GATE_EV_LISTEN)
                gate_accept(g, now);
            else if (idx < g->cfg.connection_limit)
                gate_on_input(g, &g->conns[idx], seq, ev[i].events, now);
        }
        timeout_ms = gate_expire(g, clock_mono_now());
    }
    return NULL;
}

int http_gate_start(const struct http_gate_config *cfg, int listen_fd,
                    const struct http_gate_ops *ops, struct http_gate **out)
{
    struct http_gate *g = NULL;
    int rc = 0;
    *out = NULL;
    if (!cfg->connection_limit || cfg->connection_limit >= GATE_EV_WAKE || !cfg->per_client_limit ||
        !cfg->head_timeout_ms || !ops->handoff) {
        rc = -EINVAL;
        goto out;
    }
    g = alloc_calloc(1, sizeof(*g));
    if (!g) {
        rc = -ENOMEM;
        goto out;
    }
    g->cfg = *cfg;
    if (g->cfg.per_client_limit > g->cfg.connection_limit)
        g->cfg.per_client_limit = g->cfg.connection_limit;
    g->ops = *ops;
    g->listen_fd = listen_fd;
    g->epoll_fd = -1;
    g->wake_fd = -1;
    atomic_init(&g->stop, false);
    pthread_mutex_init(&g->lock, NULL);
    g->conns = alloc_calloc(cfg->connection_limit, sizeof(*g->conns));
    g->scratch = alloc_malloc(HTTP_GATE_HEAD_MAX + 1);
    if (!g->conns || !g->scratch) {
        rc = -ENOMEM;
        goto out;
    }
    for (uint32_t i = 0; i < cfg->connection_limit; i++)
        g->conns[i].fd = -1;
    int fl = fcntl(listen_fd, F_GETFL);
    if (fl < 0 || fcntl(listen_fd, F_SETFL, fl | O_NONBLOCK) != 0) {
        rc = -errno;
        goto out;
    }
    g->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    g->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (g->epoll_fd < 0 || g->wake_fd < 0) {
        rc = -errno;
        goto out;
    }
    struct epoll_event lev = {.events = EPOLLIN, .data.u64 = GATE_EV_LISTEN};
    struct epoll_event wev = {.events = EPOLLIN, .data.u64 = GATE_EV_WAKE};
    if (epoll_ctl(g->epoll_fd, EPOLL_CTL_ADD, listen_fd, &lev) != 0 ||
        epoll_ctl(g->epoll_fd, EPOLL_CTL_ADD, g->wake_fd, &wev) != 0) {
        rc = -errno;
        goto out;
    }
    g->accepting = true;
    *out = g; /* before the thread starts: the handoff callback may look for it */
    rc = -pthread_create(&g->thread, NULL, gate_main, g);
    if (rc != 0) {
        *out = NULL;
        goto out;
    }
    g->thread_started = true;
    g = NULL;
out:
    if (g)
        http_gate_free(g);
    else if (rc != 0)
        close(listen_fd);
    return rc;
}

void http_gate_attach(struct http_gate *g, int fd, void **socket_context)
{
    *socket_context = NULL;
    pthread_mutex_lock(&g->lock);
    for (uint32_t i = 0; i < g->cfg.connection_limit; i++) {
        struct gate_conn *c = &g->conns[i];
        if (c->state == GATE_HANDED && c->fd == fd) {
            c->state = GATE_ACTIVE;
            *socket_context = c;
            break;
        }
    }
    pthread_mutex_unlock(&g->lock);
}

void http_gate_detach(struct http_gate *g, void *socket_context)
{
    struct gate_conn *c = socket_context;
    if (!c)
        return;
    pthread_mutex_lock(&g->lock);
    if (c->state == GATE_ACTIVE) {
        c->state = GATE_FREE;
        c->fd = -1;
        atomic_fetch_sub(&g->active, 1);
    }
    pthread_mutex_unlock(&g->lock);
}

uint64_t http_gate_accepted_ns(const void *socket_context)
{
    const struct gate_conn *c = socket_context;
    return c ? c->since_ns : 0;
}

void http_gate_stats(const struct http_gate *g, struct http_gate_stats *out)
{
    memset(out, 0, sizeof(*out));
    out->accepted = atomic_load(&g->accepted);
    out->handed_off = atomic_load(&g->handed_off);
    out->bad_request = atomic_load(&g->bad_request);
    out->head_too_large = atomic_load(&g->head_too_large);
    out->head_timeout = atomic_load(&g->head_timeout);
    out->evicted = atomic_load(&g->evicted);
    out->client_limit = atomic_load(&g->client_limit);
    out->connection_limit = atomic_load(&g->connection_limit);
    out->reading = atomic_load(&g->reading);
    out->active = atomic_load(&g->active);
}

void http_gate_stop(struct http_gate *g)
{
    if (!g || g->stopped)
        return;
    if (g->thread_started) {
        uint64_t one = 1;
        atomic_store(&g->stop, true);
        ssize_t w = write(g->wake_fd, &one, sizeof(one)); /* cannot fail: a fresh eventfd */
        (void)w;
        pthread_join(g->thread, NULL);
        g->thread_started = false;
    }
    pthread_mutex_lock(&g->lock);
    for (uint32_t i = 0; g->conns && i < g->cfg.connection_limit; i++)
        if (g->conns[i].state == GATE_READING)
            gate_close_locked(g, &g->conns[i]);
    pthread_mutex_unlock(&g->lock);
    if (g->listen_fd >= 0)
        close(g->listen_fd);
    if (g->epoll_fd >= 0)
        close(g->epoll_fd);
    if (g->wake_fd >= 0)
        close(g->wake_fd);
    g->listen_fd = g->epoll_fd = g->wake_fd = -1;
    g->stopped = true;
}

void http_gate_free(struct http_gate *g)
{
    if (!g)
        return;
    http_gate_stop(g);
    pthread_mutex_destroy(&g->lock);
    alloc_free(g->conns);
    alloc_free(g->scratch);
    alloc_free(g);
}
