/* SPDX-License-Identifier: MIT */
/*
 * Tests for agent/discovery/kube_client.c against a small HTTP/1.1 server on
 * loopback in a thread of this test (one response per connection, the body
 * ended by closing it): list then watch, a watch the server ends (resumed
 * from the bookmark's resource version), a watch dropped in the middle of an
 * event (resumed from the last whole one), a 410 ERROR event (relist), a
 * relist sweeping pods, a 401 answered by re-reading the token file, the
 * kubelet source with its node filter, kube_stop() during a silent watch;
 * and a hostile server's ways: a watch that trickles a never-ending event
 * (stalled, resumed), an endless error body (cut), 429 with Retry-After,
 * 410 a moment into every watch (the backoff grows), more pods than the
 * bound (no further page), a full index (listed again, at a bounded rate),
 * a list slower than request_timeout.
 */
#include "base/compat.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <unistd.h>

#include <curl/curl.h>

#include "cmocka_wrap.h"

#include "base/buf.h"
#include "base/clock.h"
#include "config/config.h"
#include "discovery/kube_client.h"

#define MS 1000000ull

/* ---- the server ---- */

struct srv;
/* Writes the response to request @a path (with @a auth, "" when none) on @a fd. */
typedef void (*srv_handler)(struct srv *s, int fd, const char *path, const char *auth);

struct srv {
    int lfd;
    uint16_t port;
    pthread_t thread;
    atomic_bool stop;
    srv_handler handler;
    pthread_mutex_t mu;
    char paths[64][512]; /* requests seen, in order */
    char auths[64][64];
    size_t n;
    int state; /* the handler's own */
};

static void srv_send(int fd, const char *s)
{
    size_t len = strlen(s);
    while (len > 0) {
        ssize_t n = send(fd, s, len, MSG_NOSIGNAL);
        if (n <= 0)
            return;
        s += n;
        len -= (size_t)n;
    }
}

static void srv_head(int fd, int status)
{
    char h[160];
    snprintf(h, sizeof(h),
             "HTTP/1.1 %d X\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n",
             status);
    srv_send(fd, h);
}

/* Keeps @a fd open, sending nothing, until the client goes or the server stops. */
static void srv_hold(struct srv *s, int fd)
{
    while (!atomic_load(&s->stop)) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 20) > 0) {
            char c[256];
            if (recv(fd, c, sizeof(c), 0) <= 0)
                return;
        }
    }
}

static void *srv_main(void *arg)
{
    struct srv *s = arg;
    while (!atomic_load(&s->stop)) {
        struct pollfd p = {.fd = s->lfd, .events = POLLIN};
        if (poll(&p, 1, 20) <= 0)
            continue;
        int fd = accept(s->lfd, NULL, NULL);
        if (fd < 0)
            continue;
        char req[8192];
        size_t len = 0;
        while (len + 1 < sizeof(req)) {
            ssize_t n = recv(fd, req + len, sizeof(req) - 1 - len, 0);
            if (n <= 0)
                break;
            len += (size_t)n;
            req[len] = '\0';
            if (strstr(req, "\r\n\r\n"))
                break;
        }
        req[len] = '\0';
        char path[512] = "", auth[64] = "";
        sscanf(req, "GET %511s", path);
        const char *a = strstr(req, "Authorization: ");
        if (a)
            sscanf(a + 15, "%63[^\r\n]", auth);
        pthread_mutex_lock(&s->mu);
        if (s->n < 64) {
            snprintf(s->paths[s->n], sizeof(s->paths[0]), "%s", path);
            snprintf(s->auths[s->n], sizeof(s->auths[0]), "%s", auth);
            s->n++;
        }
        pthread_mutex_unlock(&s->mu);
        s->handler(s, fd, path, auth);
        close(fd);
    }
    return NULL;
}

static void srv_start(struct srv *s, srv_handler h)
{
    memset(s, 0, sizeof(*s));
    s->handler = h;
    pthread_mutex_init(&s->mu, NULL);
    s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(s->lfd >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(s->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(s->lfd, 16), 0);
    socklen_t sl = sizeof(sa);
    assert_int_equal(getsockname(s->lfd, (struct sockaddr *)&sa, &sl), 0);
    s->port = ntohs(sa.sin_port);
    assert_int_equal(pthread_create(&s->thread, NULL, srv_main, s), 0);
}

static void srv_stop(struct srv *s)
{
    atomic_store(&s->stop, true);
    pthread_join(s->thread, NULL);
    close(s->lfd);
    pthread_mutex_destroy(&s->mu);
}

static size_t srv_count(struct srv *s, const char *needle)
{
    size_t n = 0;
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < s->n; i++)
        if (strstr(s->paths[i], needle))
            n++;
    pthread_mutex_unlock(&s->mu);
    return n;
}

/* ---- pods ---- */

static void pod_json(struct buf *b, const char *uid, const char *node, unsigned id, const char *rv)
{
    assert_int_equal(buf_addf(b,
                              "{\"metadata\":{\"uid\":\"%s\",\"name\":\"pod-%s\",\"namespace\":"
                              "\"ns\",\"resourceVersion\":\"%s\"},\"spec\":{\"nodeName\":\"%s\"},"
                              "\"status\":{\"containerStatuses\":[{\"name\":\"c\",\"containerID\":"
                              "\"containerd://%064x\"}]}}",
                              uid, uid, rv, node, id),
                     0);
}

static void send_page(int fd, const char *rv, const char *cont, const char *uids,
                      const char *node_of_b)
{
    struct buf b;
    buf_init(&b, 1 << 16);
    assert_int_equal(buf_addf(&b,
                              "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"%s\","
                              "\"continue\":\"%s\"},\"items\":[",
                              rv, cont),
                     0);
    for (const char *u = uids; *u; u++) {
        char uid[2] = {*u, 0};
        if (u != uids)
            assert_int_equal(buf_addc(&b, ','), 0);
        pod_json(&b, uid, *u == 'b' && node_of_b ? node_of_b : "n1", (unsigned)*u, rv);
    }
    assert_int_equal(buf_adds(&b, "]}"), 0);
    srv_head(fd, 200);
    srv_send(fd, buf_str(&b));
    buf_release(&b);
}

static void send_list(int fd, const char *rv, const char *uids, const char *node_of_b)
{
    send_page(fd, rv, "", uids, node_of_b);
}

static void send_event(int fd, const char *type, const char *uid, unsigned id, const char *rv)
{
    struct buf b;
    buf_init(&b, 1 << 16);
    assert_int_equal(buf_addf(&b, "{\"type\":\"%s\",\"object\":", type), 0);
    pod_json(&b, uid, "n1", id, rv);
    assert_int_equal(buf_adds(&b, "}\n"), 0);
    /* in two pieces, cut inside the object */
    const char *t = buf_str(&b);
    char first[64];
    snprintf(first, sizeof(first), "%.40s", t);
    srv_send(fd, first);
    usleep(2000);
    srv_send(fd, t + strlen(first));
    buf_release(&b);
}

static bool has_id(struct kube *k, unsigned id)
{
    char hex[65];
    snprintf(hex, sizeof(hex), "%064x", id);
    int rc = kube_lookup(k, hex, NULL, NULL);
    assert_true(rc == 0 || rc == 1);
    return rc == 1;
}

/* Waits up to 5 s for @a cond. */
#define WAIT_FOR(cond)                                                                             \
    do {                                                                                           \
        for (int w_ = 0; w_ < 500 && !(cond); w_++)                                                \
            usleep(10000);                                                                         \
        assert_true(cond);                                                                         \
    } while (0)

static struct kube_opts opts_for(struct srv *s, char *url, size_t len)
{
    snprintf(url, len, "http://127.0.0.1:%u/", s->port);
    struct kube_opts o = {
        .source = KUBE_SOURCE_API_SERVER,
        .url = url,
        .node_name = "n1",
        .watch_timeout_ns = 5000 * MS,
        .min_backoff_ns = 20 * MS,
        .max_backoff_ns = 100 * MS,
    };
    return o;
}

/* ---- list, watch, resume, 410, relist ---- */

static void watch_handler(struct srv *s, int fd, const char *path, const char *auth)
{
    (void)auth;
    bool watch = strstr(path, "watch=1") != NULL;
    if (!watch) {
        /* the first list has a and b, in two pages; the relist only c */
        if (s->state < 3 && !strstr(path, "continue="))
            send_page(fd, "9", "page/2", "a", NULL);
        else if (s->state < 3)
            send_list(fd, "10", "b", NULL);
        else
            send_list(fd, "30", "c", NULL);
        return;
    }
    srv_head(fd, 200);
    switch (s->state++) {
    case 0:
        send_event(fd, "ADDED", "d", 'd', "11");
        send_event(fd, "MODIFIED", "a", 'A', "12"); /* a's container restarted */
        srv_send(fd, "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\",\"metadata\":"
                     "{\"resourceVersion\":\"20\"}}}\n");
        usleep(1100 * 1000); /* a watch that lasted over a second resumes at once */
        break;               /* ended by the server */
    case 1:
        send_event(fd, "DELETED", "d", 'd', "21");
        srv_send(fd, "{\"type\":\"ADDED\",\"object\":{\"meta"); /* dropped mid-event */
        usleep(100 * 1000);
        break;
    case 2:
        srv_send(fd, "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\","
                     "\"metadata\":{},\"status\":\"Failure\",\"message\":\"too old resource "
                     "version: 20 (25)\",\"reason\":\"Expired\",\"code\":410}}\n");
        srv_hold(s, fd);
        break;
    default:
        srv_hold(s, fd); /* silent */
        break;
    }
}

static void test_kube_client__list_watch_relist(void **state)
{
    (void)state;
    struct srv s;
    srv_start(&s, watch_handler);
    char url[64];
    struct kube_opts o = opts_for(&s, url, sizeof(url));
    struct kube *k = NULL;
    assert_int_equal(kube_start(&o, &k), 0);
    /* after the relist: c only; a, b (swept) and d (deleted) in grace */
    WAIT_FOR(srv_count(&s, "watch=1&resourceVersion=30") >= 1);
    WAIT_FOR(has_id(k, 'c'));
    assert_true(has_id(k, 'a'));
    assert_true(has_id(k, 'A'));
    assert_true(has_id(k, 'b'));
    assert_true(has_id(k, 'd'));
    struct kube_stats st;
    kube_stats(k, &st);
    assert_true(st.synced);
    assert_int_equal(st.relists, 1);
    assert_int_equal(st.events[KUBE_EVENT_ADDED], 1);
    assert_int_equal(st.events[KUBE_EVENT_MODIFIED], 1);
    assert_int_equal(st.events[KUBE_EVENT_DELETED], 1);
    assert_int_equal(st.events[KUBE_EVENT_BOOKMARK], 1);
    assert_int_equal(st.events[KUBE_EVENT_GONE], 1);
    assert_int_equal(st.requests[KUBE_OUTCOME_GONE], 1);
    assert_int_equal(st.requests[KUBE_OUTCOME_TRANSPORT], 1); /* the drop mid-event */
    assert_int_equal(st.requests[KUBE_OUTCOME_OK], 4);        /* 3 list pages, 1 watch */
    assert_int_equal(st.index.pods, 1);
    assert_int_equal(st.index.pods_terminating, 3);
    assert_true(st.last_sync_real_ns > 0);
    /* the URLs: node selector, list from the cache, the second page, watch resumed from the
     * bookmark */
    assert_int_equal(srv_count(&s, "/api/v1/pods?fieldSelector=spec.nodeName%3Dn1&limit=500&"
                                   "continue=page%2F2"),
                     1);
    assert_int_equal(srv_count(&s, "/api/v1/pods?fieldSelector=spec.nodeName%3Dn1&limit=500&"
                                   "resourceVersion=0"),
                     2);
    assert_int_equal(srv_count(&s, "watch=1&resourceVersion=10&allowWatchBookmarks=true&"
                                   "timeoutSeconds=5"),
                     1);
    assert_int_equal(srv_count(&s, "watch=1&resourceVersion=20&"), 1);
    assert_int_equal(srv_count(&s, "watch=1&resourceVersion=21&"), 1);
    /* no token file: no Authorization */
    assert_string_equal(s.auths[0], "");
    /* stops promptly in the middle of a silent watch */
    uint64_t t0 = clock_mono_now();
    kube_stop(k);
    assert_true(clock_mono_now() - t0 < 1000 * MS);
    srv_stop(&s);
}

/* ---- 401 and the token file ---- */

static char token_path[64];

static void auth_handler(struct srv *s, int fd, const char *path, const char *auth)
{
    (void)s;
    if (strcmp(auth, "Bearer second") != 0) {
        srv_head(fd, 401);
        srv_send(fd, "{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":\"Unauthorized\","
                     "\"reason\":\"Unauthorized\",\"code\":401}");
        return;
    }
    if (strstr(path, "watch=1")) {
        srv_head(fd, 200);
        srv_hold(s, fd);
        return;
    }
    send_list(fd, "5", "a", NULL);
}

static void write_token(const char *text)
{
    FILE *f = fopen(token_path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_kube_client__401_rereads_the_token(void **state)
{
    (void)state;
    snprintf(token_path, sizeof(token_path), "/tmp/test_kube_client.%d.token", (int)getpid());
    write_token("first\n");
    struct srv s;
    srv_start(&s, auth_handler);
    char url[64];
    struct kube_opts o = opts_for(&s, url, sizeof(url));
    o.token_file = token_path;
    struct kube *k = NULL;
    assert_int_equal(kube_start(&o, &k), 0);
    WAIT_FOR(srv_count(&s, "/api/v1/pods") >= 2);
    /* the server counts a request before the client has taken its 401 in */
    struct kube_stats st;
    WAIT_FOR((kube_stats(k, &st), st.unauthorized >= 2));
    assert_false(st.synced);
    assert_non_null(strstr(st.last_error, "401"));
    /* the rotated token (with its newline) is used at the next 401 */
    write_token("  second\n");
    WAIT_FOR(has_id(k, 'a'));
    /* the list's pods enter the index before the list is marked synced */
    WAIT_FOR((kube_stats(k, &st), st.synced));
    assert_true(st.token_reads >= 2);
    pthread_mutex_lock(&s.mu);
    assert_string_equal(s.auths[0], "Bearer first");
    assert_string_equal(s.auths[s.n - 1], "Bearer second");
    pthread_mutex_unlock(&s.mu);
    kube_stop(k);
    srv_stop(&s);
    unlink(token_path);
}

/* ---- the kubelet ---- */

static void kubelet_handler(struct srv *s, int fd, const char *path, const char *auth)
{
    (void)auth;
    if (strcmp(path, "/pods") != 0) {
        srv_head(fd, 404);
        return;
    }
    if (s->state++ == 0)
        send_list(fd, "", "ab", "other-node");
    else
        send_list(fd, "", "c", NULL);
}

static void test_kube_client__kubelet_polls(void **state)
{
    (void)state;
    struct srv s;
    srv_start(&s, kubelet_handler);
    char url[64];
    struct kube_opts o = opts_for(&s, url, sizeof(url));
    o.source = KUBE_SOURCE_KUBELET;
    o.poll_interval_ns = 100 * MS;
    o.grace_ns = 1; /* swept pods go at once */
    struct kube *k = NULL;
    assert_int_equal(kube_start(&o, &k), 0);
    WAIT_FOR(has_id(k, 'c'));
    WAIT_FOR(!has_id(k, 'a'));
    assert_false(has_id(k, 'b')); /* another node's */
    struct kube_stats st;
    kube_stats(k, &st);
    assert_true(st.synced);
    assert_true(st.pods_filtered >= 1);
    kube_stop(k);
    srv_stop(&s);
}

/* ---- a server that never answers ---- */

static void silent_handler(struct srv *s, int fd, const char *path, const char *auth)
{
    (void)path;
    (void)auth;
    srv_hold(s, fd);
}

static void test_kube_client__stop_interrupts_a_request(void **state)
{
    (void)state;
    struct srv s;
    srv_start(&s, silent_handler);
    char url[64];
    struct kube_opts o = opts_for(&s, url, sizeof(url));
    struct kube *k = NULL;
    assert_int_equal(kube_start(&o, &k), 0);
    WAIT_FOR(srv_count(&s, "/api/v1/pods") >= 1);
    usleep(50 * 1000);
    uint64_t t0 = clock_mono_now();
    kube_stop(k);
    assert_true(clock_mono_now() - t0 < 1000 * MS);
    srv_stop(&s);
    /* nothing listens: stop interrupts the backoff's wait */
    o.url = "http://127.0.0.1:1";
    o.min_backoff_ns = o.max_backoff_ns = 30000 * MS;
    assert_int_equal(kube_start(&o, &k), 0);
    struct kube_stats st;
    do {
        usleep(10000);
        kube_stats(k, &st);
    } while (st.requests[KUBE_OUTCOME_TRANSPORT] == 0);
    usleep(50 * 1000);
    t0 = clock_mono_now();
    kube_stop(k);
    assert_true(clock_mono_now() - t0 < 1000 * MS);
    assert_non_null(strstr(st.last_error, "127.0.0.1:1"));
    /* and a client that never started anything */
    struct kube_opts bad = {.url = NULL};
    assert_int_equal(kube_start(&bad, &k), -EINVAL);
    kube_stop(NULL);
}

/* ---- liveness, bounds and backoff (issue 28) ---- */

/* Request times, as the server saw them (ms on the monotonic clock). */
static uint64_t req_ms[64];

static void note_time(struct srv *s)
{
    pthread_mutex_lock(&s->mu);
    if (s->n > 0 && s->n <= 64)
        req_ms[s->n - 1] = clock_mono_now() / MS;
    pthread_mutex_unlock(&s->mu);
}

/* A watch that trickles a never-ending event: stalled, resumed from the same version. */
static void trickle_handler(struct srv *s, int fd, const char *path, const char *auth)
{
    (void)auth;
    if (!strstr(path, "watch=1")) {
        send_list(fd, "7", "a", NULL);
        return;
    }
    srv_head(fd, 200);
    if (s->state++ > 0) {
        srv_hold(s, fd);
        return;
    }
    srv_send(fd, "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"annotations\":{\"x\":\"");
    while (!atomic_load(&s->stop)) {
        if (send(fd, "y", 1, MSG_NOSIGNAL) != 1)
            return;
        usleep(20 * 1000);
    }
}

static void test_kube_client__stalled_watch_is_resumed(void **state)
{
    (void)state;
    struct srv s;
    srv_start(&s, trickle_handler);
    char url[64];
    struct kube_opts o = opts_for(&s, url, sizeof(url));
    o.progress_timeout_ns = 300 * MS;
    struct kube *k = NULL;
    assert_int_equal(kube_start(&o, &k), 0);
    WAIT_FOR(srv_count(&s, "watch=1&resourceVersion=7&") >= 2);
    struct kube_stats st;
    kube_stats(k, &st);
    assert_int_equal(st.requests[KUBE_OUTCOME_STALLED], 1);
    assert_int_equal(st.relists, 0); /* resumed, not listed again */
    assert_int_equal(srv_count(&s, "resourceVersion=0"), 1);
    assert_non_null(strstr(st.last_error, "completed no event"));
    assert_true(has_id(k, 'a'));
    kube_stop(k);
    srv_stop(&s);
}

/* 500 with an endless body: read to the cap, then the connection is closed. */
static _Atomic uint64_t endless_sent;

static void endless_handler(struct srv *s, int fd, const char *path, const char *auth)
{
    (void)path;
    (void)auth;
    (void)s;
    srv_head(fd, 500);
    static char junk[1 << 16];
    memset(junk, 'e', sizeof(junk));
    for (int i = 0; i < 1024; i++) { /* 64 MiB at most */
        ssize_t n = send(fd, junk, sizeof(junk), MSG_NOSIGNAL);
        if (n <= 0)
            return;
        atomic_fetch_add(&endless_sent, (uint64_t)n);
    }
}

static void test_kube_client__error_body_is_cut(void **state)
{
    (void)state;
    struct srv s;
    srv_start(&s, endless_handler);
    char url[64];
    struct kube_opts o = opts_for(&s, url, sizeof(url));
    o.min_backoff_ns = o.max_backoff_ns = 200 * MS;
    struct kube *k = NULL;
    assert_int_equal(kube_start(&o, &k), 0);
    struct kube_stats st;
    WAIT_FOR((kube_stats(k, &st), st.error_bodies_cut >= 2));
    assert_true(st.requests[KUBE_OUTCOME_HTTP_ERROR] >= 2);
    assert_non_null(strstr(st.last_error, "HTTP 500 eeee"));
    kube_stop(k);
    srv_stop(&s);
    /* what the socket buffers took before the close, not the 64 MiB on offer */
    assert_true(atomic_load(&endless_sent) < 2 * 16 * (1u << 20));
}

/* 429 with Retry-After: 1: the next request waits a second, whatever the backoff. */
static void busy_handler(struct srv *s, int fd, const char *path, const char *auth)
{
    (void)auth;
    note_time(s);
    if (s->state++ == 0) {
        srv_send(fd,
                 "HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\n"
                 "Retry-After: 1\r\nConnection: close\r\n\r\n{\"kind\":\"Status\",\"code\":429}");
        return;
    }
    if (strstr(path, "watch=1")) {
        srv_head(fd, 200);
        srv_hold(s, fd);
        return;
    }
    send_list(fd, "3", "a", NULL);
}

static void test_kube_client__retry_after_is_honoured(void **state)
{
    (void)state;
    struct srv s;
    srv_start(&s, busy_handler);
    char url[64];
    struct kube_opts o = opts_for(&s, url, sizeof(url));
    struct kube *k = NULL;
    assert_int_equal(kube_start(&o, &k), 0);
    WAIT_FOR(has_id(k, 'a'));
    struct kube_stats st;
    kube_stats(k, &st);
    assert_int_equal(st.retry_after, 1);
    assert_int_equal(st.requests[KUBE_OUTCOME_HTTP_ERROR], 1);
    /* backoff alone would wait 10..20 ms */
    assert_true(req_ms[1] - req_ms[0] >= 1000);
    assert_true(req_ms[1] - req_ms[0] < 1500);
    kube_stop(k);
    srv_stop(&s);
}

/* 410 a moment into every watch: each relist waits longer, the list's success notwithstanding. */
static void gone_handler(struct srv *s, int fd, const char *path, const char *auth)
{
    (void)auth;
    note_time(s);
    if (!strstr(path, "watch=1")) {
        send_list(fd, "3", "a", NULL);
        return;
    }
    srv_head(fd, 200);
    srv_send(fd, "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"4\"}}}\n"
                 "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,"
                 "\"reason\":\"Expired\"}}\n");
    srv_hold(s, fd);
}

static void test_kube_client__gone_backs_off(void **state)
{
    (void)state;
    struct srv s;
    srv_start(&s, gone_handler);
    char url[64];
    struct kube_opts o = opts_for(&s, url, sizeof(url));
    o.min_backoff_ns = 20 * MS;
    o.max_backoff_ns = 160 * MS;
    struct kube *k = NULL;
    assert_int_equal(kube_start(&o, &k), 0);
    WAIT_FOR(srv_count(&s, "resourceVersion=0") >= 6);
    kube_stop(k);
    /* list, watch, list, ...: the wait before each list doubles from [10, 20] ms to [80, 160] */
    pthread_mutex_lock(&s.mu);
    uint64_t gap5 = req_ms[10] - req_ms[9];
    pthread_mutex_unlock(&s.mu);
    assert_true(srv_count(&s, "resourceVersion=0") >= 6);
    assert_true(gap5 >= 80);
    srv_stop(&s);
}

/* More pods than the bound: the first max_pods are kept, no further page is asked. */
static void pages_handler(struct srv *s, int fd, const char *path, const char *auth)
{
    (void)auth;
    if (strstr(path, "watch=1")) {
        srv_head(fd, 200);
        srv_hold(s, fd);
        return;
    }
    /* pages of two pods, forever */
    char uids[3] = {(char)('a' + 2 * s->state), (char)('a' + 2 * s->state + 1), 0};
    s->state++;
    send_page(fd, "8", "more", uids, NULL);
}

static void test_kube_client__pod_bound_stops_paging(void **state)
{
    (void)state;
    struct srv s;
    srv_start(&s, pages_handler);
    char url[64];
    struct kube_opts o = opts_for(&s, url, sizeof(url));
    o.max_pods = 3;
    struct kube *k = NULL;
    assert_int_equal(kube_start(&o, &k), 0);
    WAIT_FOR(srv_count(&s, "watch=1&resourceVersion=8&") >= 1);
    struct kube_stats st;
    kube_stats(k, &st);
    assert_int_equal(srv_count(&s, "continue=more"), 1); /* two pages, then the watch */
    assert_int_equal(st.refused[KUBE_REFUSED_POD_BOUND], 1);
    assert_true(has_id(k, 'a') && has_id(k, 'b') && has_id(k, 'c'));
    assert_false(has_id(k, 'd'));
    assert_true(st.synced);
    kube_stop(k);
    srv_stop(&s);
}

/*
 * A full index lists again, at a bounded rate, until a list fits: the pod a
 * watch event brought while it was full (index_full), and those past the
 * pod bound of a list (pod_bound), are learned once room is made, without
 * the watch ending or failing (the client ends it); a list that fits ends it.
 */
static size_t full_lists;

static void full_handler(struct srv *s, int fd, const char *path, const char *auth)
{
    (void)auth;
    note_time(s);
    if (!strstr(path, "watch=1")) {
        /* 1st: fits; 2nd: d and e past the bound; 3rd: a and b gone, room for d and e */
        const char *lists[] = {"abc", "abcde", "cde"};
        send_list(fd, "8", lists[full_lists < 3 ? full_lists : 2], NULL);
        full_lists++;
        return;
    }
    srv_head(fd, 200);
    if (s->state++ == 0)
        send_event(fd, "ADDED", "d", 'd', "9"); /* no room: refused */
    srv_hold(s, fd); /* a healthy, quiet watch: the server never ends it here */
}

static void test_kube_client__full_index_lists_again(void **state)
{
    (void)state;
    full_lists = 0;
    struct srv s;
    srv_start(&s, full_handler);
    char url[64];
    struct kube_opts o = opts_for(&s, url, sizeof(url));
    o.max_pods = 3;
    o.saturated_relist_ns = 300 * MS;
    struct kube *k = NULL;
    assert_int_equal(kube_start(&o, &k), 0);
    WAIT_FOR(has_id(k, 'd') && has_id(k, 'e'));
    usleep(700 * 1000); /* the index is not full now: no further list */
    /* a and b made the room (not named by the last list: evicted) */
    assert_false(has_id(k, 'a') || has_id(k, 'b'));
    assert_true(has_id(k, 'c'));
    struct kube_stats st;
    kube_stats(k, &st);
    kube_stop(k);
    assert_int_equal(st.index.pods, 3);
    assert_int_equal(srv_count(&s, "resourceVersion=0"), 3);
    assert_int_equal(st.relists, 2);
    assert_int_equal(st.saturated_relists, 2);
    assert_int_equal(st.refused[KUBE_REFUSED_INDEX_FULL], 1);
    assert_int_equal(st.refused[KUBE_REFUSED_POD_BOUND], 2);
    assert_int_equal(st.requests[KUBE_OUTCOME_STALLED] + st.requests[KUBE_OUTCOME_DEADLINE] +
                         st.requests[KUBE_OUTCOME_TRANSPORT],
                     0);
    assert_int_equal(st.requests[KUBE_OUTCOME_OK], 5); /* 3 lists, 2 watches ended for them */
    /* the bound on the rate: each list at least saturated_relist after the one before
     * (requests: list, watch, list, watch, list, watch) */
    pthread_mutex_lock(&s.mu);
    uint64_t gap1 = req_ms[2] - req_ms[0], gap2 = req_ms[4] - req_ms[2];
    pthread_mutex_unlock(&s.mu);
    assert_true(gap1 >= 300 && gap2 >= 300);
    srv_stop(&s);
}

/* A list that trickles past request_timeout is abandoned. */
static void slow_list_handler(struct srv *s, int fd, const char *path, const char *auth)
{
    (void)auth;
    (void)path;
    srv_head(fd, 200);
    srv_send(fd, "{\"kind\":\"PodList\",\"items\":[");
    while (!atomic_load(&s->stop)) {
        if (send(fd, " ", 1, MSG_NOSIGNAL) != 1)
            return;
        usleep(20 * 1000);
    }
}

static void test_kube_client__list_deadline(void **state)
{
    (void)state;
    struct srv s;
    srv_start(&s, slow_list_handler);
    char url[64];
    struct kube_opts o = opts_for(&s, url, sizeof(url));
    o.request_timeout_ns = 300 * MS;
    struct kube *k = NULL;
    assert_int_equal(kube_start(&o, &k), 0);
    struct kube_stats st;
    WAIT_FOR((kube_stats(k, &st), st.requests[KUBE_OUTCOME_DEADLINE] >= 2));
    assert_false(st.synced);
    assert_non_null(strstr(st.last_error, "request_timeout"));
    assert_true(st.memory_bytes > 0 && st.memory_bytes < (1u << 20));
    kube_stop(k);
    srv_stop(&s);
}

/* A zero option falls back to the configuration's own default (config.def), not another value. */
static void test_kube_client__defaults_are_the_configs(void **state)
{
    (void)state;
    struct pyprofd_config *c = NULL;
    assert_int_equal(config_default(&c), 0);
    assert_true(c->discovery.kubernetes.watch_timeout_ns == KUBE_WATCH_TIMEOUT_DEFAULT_NS);
    assert_true(c->discovery.kubernetes.poll_interval_ns == KUBE_POLL_INTERVAL_DEFAULT_NS);
    assert_true(c->discovery.kubernetes.request_timeout_ns == KUBE_REQUEST_TIMEOUT_DEFAULT_NS);
    config_free(c);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kube_client__defaults_are_the_configs),
        cmocka_unit_test(test_kube_client__list_watch_relist),
        cmocka_unit_test(test_kube_client__401_rereads_the_token),
        cmocka_unit_test(test_kube_client__kubelet_polls),
        cmocka_unit_test(test_kube_client__stop_interrupts_a_request),
        cmocka_unit_test(test_kube_client__stalled_watch_is_resumed),
        cmocka_unit_test(test_kube_client__error_body_is_cut),
        cmocka_unit_test(test_kube_client__retry_after_is_honoured),
        cmocka_unit_test(test_kube_client__gone_backs_off),
        cmocka_unit_test(test_kube_client__pod_bound_stops_paging),
        cmocka_unit_test(test_kube_client__full_index_lists_again),
        cmocka_unit_test(test_kube_client__list_deadline),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
