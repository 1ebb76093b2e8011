/* SPDX-License-Identifier: MIT */
/*
 * Tests for exporters/pull/http_server.c: a server on 127.0.0.1:0 with test
 * callbacks standing in for the daemon, driven by real HTTP requests through
 * libcurl. Covers every route, status codes, content types, query checking,
 * the lifecycle switch, 405 + Allow, HEAD, body caps, concurrency (a long
 * profile request does not block /metrics), stopping mid-profile and a
 * profile client that hangs up. Raw sockets play the hostile clients: a
 * malformed request line, a head or body trickled past its deadline, a
 * slowloris flood from one address, a client over its connection limit.
 */
#include "base/compat.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cmocka_wrap.h"

#include "base/alloc.h"
#include "exporters/pull/http_parse.h"
#include "exporters/pull/http_server.h"
#include "pipeline.h"

/* ---- the daemon's stand-in ---- */

struct fake {
    unsigned ms_per_second; /* how long a profile "second" lasts */
    int profile_rc;         /* returned instead of a profile when not 0 */
    bool ready;
    int reload_rc;
    int metrics_rc;
    bool metrics_big; /* write more than any small cap */
    atomic_int profile_calls;
    atomic_int reload_calls;
    atomic_bool saw_cancel;
    _Atomic uint64_t cancel_ms; /* now_ms() when the cancel was seen */
    atomic_uint last_seconds;
    atomic_int last_pid;
};

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int fake_profile(void *ctx, const struct http_profile_request *req, uint8_t **out,
                        size_t *out_len, char *err, size_t err_size)
{
    struct fake *f = ctx;
    atomic_fetch_add(&f->profile_calls, 1);
    atomic_store(&f->last_seconds, req->seconds);
    atomic_store(&f->last_pid, req->pid);
    if (req->pid == 999) {
        snprintf(err, err_size, "pid 999 is not a target");
        return -ESRCH;
    }
    if (f->profile_rc != 0)
        return f->profile_rc;
    uint64_t end = now_ms() + (uint64_t)req->seconds * f->ms_per_second;
    while (now_ms() < end) {
        if (http_profile_cancelled(req)) {
            atomic_store(&f->cancel_ms, now_ms());
            atomic_store(&f->saw_cancel, true);
            snprintf(err, err_size, "shutting down");
            return -ECANCELED;
        }
        struct timespec nap = {0, 10 * 1000 * 1000};
        nanosleep(&nap, NULL);
    }
    char text[96];
    int n = snprintf(text, sizeof(text), "profile seconds=%u pid=%d%s%s", (unsigned)req->seconds,
                     (int)req->pid,
                     req->mode < 0 ? "" : profile_mode_name((enum profile_mode)req->mode),
                     req->format == HTTP_PROFILE_FLAME ? " flame" : "");
    *out = alloc_malloc((size_t)n);
    if (!*out)
        return -ENOMEM;
    memcpy(*out, text, (size_t)n);
    *out_len = (size_t)n;
    return 0;
}

static int fake_targets(void *ctx, char **out, size_t *out_len)
{
    (void)ctx;
    static const char json[] = "{\"targets\":[]}\n";
    *out = alloc_strdup(json);
    *out_len = sizeof(json) - 1;
    return *out ? 0 : -ENOMEM;
}

static int fake_metrics(void *ctx, struct promtext *w)
{
    struct fake *f = ctx;
    int rc = f->metrics_rc;
    if (rc == 0)
        rc = promtext_family(w, "pyprofd_targets", PROMTEXT_GAUGE, "Targets by state.");
    if (rc == 0)
        rc = promtext_sample(w, NULL, PROMTEXT_LABELS({"state", "active"}), 3);
    for (int i = 0; rc == 0 && f->metrics_big && i < 10000; i++) {
        char v[16];
        snprintf(v, sizeof(v), "%d", i);
        rc = promtext_sample(w, NULL, PROMTEXT_LABELS({"state", v}), i);
    }
    /* a daemon that ignores the writer's errors: the server checks promtext_error() */
    return f->metrics_big ? 0 : rc;
}

static bool fake_ready(void *ctx)
{
    struct fake *f = ctx;
    return f->ready;
}

static int fake_reload(void *ctx, char *err, size_t err_size)
{
    struct fake *f = ctx;
    atomic_fetch_add(&f->reload_calls, 1);
    if (f->reload_rc != 0)
        snprintf(err, err_size, "config.yml:3:5: unknown key \"nope\"");
    return f->reload_rc;
}

static struct fake g_fake;
static struct http_server *g_srv;
static long g_timeout_s; /* of a curl request */

static struct http_server_ops fake_ops(void)
{
    struct http_server_ops ops = {
        .ctx = &g_fake,
        .profile = fake_profile,
        .targets_json = fake_targets,
        .metrics = fake_metrics,
        .ready = fake_ready,
        .reload = fake_reload,
    };
    return ops;
}

static void start_with(const struct http_server_config *cfg, const struct http_server_ops *ops)
{
    char err[256];
    int rc = http_server_start(cfg, ops, &g_srv, err, sizeof(err));
    if (rc != 0)
        fail_msg("start: %d %s", rc, err);
    assert_true(http_server_port(g_srv) > 0);
}

static int server_setup(void **state)
{
    (void)state;
    memset(&g_fake, 0, sizeof(g_fake));
    g_fake.ms_per_second = 10;
    g_fake.ready = true;
    g_timeout_s = 40;
    struct http_server_config cfg = {.listen_address = "127.0.0.1:0"};
    struct http_server_ops ops = fake_ops();
    start_with(&cfg, &ops);
    return 0;
}

static int server_teardown(void **state)
{
    (void)state;
    http_server_free(g_srv);
    g_srv = NULL;
    return 0;
}

/* ---- the client ---- */

struct resp {
    long status;
    char ctype[128];
    char allow[64];
    char disposition[128];
    char retry_after[16];
    char body[1 << 17];
    size_t len;
    double elapsed_s;
};

static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
    struct resp *r = arg;
    size_t len = size * n;
    size_t room = sizeof(r->body) - 1 - r->len;
    size_t take = len < room ? len : room;
    memcpy(r->body + r->len, data, take);
    r->len += take;
    r->body[r->len] = '\0';
    return len;
}

static void keep_header(const char *line, size_t len, const char *name, char *dst, size_t dsize)
{
    size_t nl = strlen(name);
    if (len <= nl + 1 || strncasecmp(line, name, nl) != 0 || line[nl] != ':')
        return;
    const char *v = line + nl + 1;
    const char *end = line + len;
    while (v < end && *v == ' ')
        v++;
    while (end > v && (end[-1] == '\r' || end[-1] == '\n'))
        end--;
    snprintf(dst, dsize, "%.*s", (int)(end - v), v);
}

static size_t on_header(char *data, size_t size, size_t n, void *arg)
{
    struct resp *r = arg;
    size_t len = size * n;
    keep_header(data, len, "Content-Type", r->ctype, sizeof(r->ctype));
    keep_header(data, len, "Allow", r->allow, sizeof(r->allow));
    keep_header(data, len, "Content-Disposition", r->disposition, sizeof(r->disposition));
    keep_header(data, len, "Retry-After", r->retry_after, sizeof(r->retry_after));
    return len;
}

/* One request to @a port; @a body (may be NULL) is sent with POST/PUT. Returns curl's code. */
static CURLcode request_port(uint16_t port, const char *method, const char *path, const char *body,
                             size_t body_len, struct resp *r)
{
    char url[512];
    memset(r, 0, sizeof(*r));
    snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", (unsigned)port, path);
    CURL *c = curl_easy_init();
    assert_non_null(c);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, g_timeout_s);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    if (strcmp(method, "HEAD") == 0) {
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    } else if (strcmp(method, "GET") != 0) {
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
        if (body) {
            curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
            curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)body_len);
        }
    }
    uint64_t t0 = now_ms();
    CURLcode rc = curl_easy_perform(c);
    r->elapsed_s = (double)(now_ms() - t0) / 1000.0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
    curl_easy_cleanup(c);
    return rc;
}

static void request(const char *method, const char *path, struct resp *r)
{
    CURLcode rc = request_port(http_server_port(g_srv), method, path, NULL, 0, r);
    if (rc != CURLE_OK)
        fail_msg("%s %s: %s", method, path, curl_easy_strerror(rc));
}

static struct resp g_resp; /* big: not on the stack */

/* ---- tests ---- */

static void test_http_server__landing_health_ready(void **state)
{
    (void)state;
    struct resp *r = &g_resp;
    request("GET", "/", r);
    assert_int_equal(r->status, 200);
    assert_string_equal(r->ctype, "text/html; charset=utf-8");
    assert_non_null(strstr(r->body, "href=\"/metrics\""));
    assert_non_null(strstr(r->body, "href=\"/targets\""));
    assert_non_null(strstr(r->body, "/debug/pprof/profile"));
    assert_non_null(strstr(r->body, "src=\"/ui/agent.js\""));
    /* the page's files come from the binary */
    request("GET", "/ui/d3.min.js", r);
    assert_int_equal(r->status, 200);
    assert_string_equal(r->ctype, "application/javascript; charset=utf-8");
    assert_non_null(strstr(r->body, "d3js.org v7"));
    request("GET", "/ui/d3-flamegraph.min.js", r);
    assert_int_equal(r->status, 200);
    request("GET", "/ui/pyprofd.css", r);
    assert_int_equal(r->status, 200);
    assert_string_equal(r->ctype, "text/css; charset=utf-8");
    /* nothing else: unknown names, the report's page, paths with more parts */
    static const char *const absent[] = {"/ui/", "/ui/nope.js", "/ui/report.html",
                                         "/ui/x/d3.min.js", "/ui/%2e%2e/agent.js"};
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(absent); i++) {
        request("GET", absent[i], r);
        assert_int_equal(r->status, 404);
    }
    request("POST", "/ui/agent.js", r);
    assert_int_equal(r->status, 405);

    request("GET", "/-/healthy", r);
    assert_int_equal(r->status, 200);
    assert_string_equal(r->body, "pyprofd is healthy.\n");
    assert_string_equal(r->ctype, "text/plain; charset=utf-8");

    request("GET", "/-/ready", r);
    assert_int_equal(r->status, 200);
    g_fake.ready = false;
    request("GET", "/-/ready", r);
    assert_int_equal(r->status, 503);
    assert_string_equal(r->body, "pyprofd is not ready.\n");
}

static void test_http_server__targets_and_metrics(void **state)
{
    (void)state;
    struct resp *r = &g_resp;
    request("GET", "/targets", r);
    assert_int_equal(r->status, 200);
    assert_string_equal(r->ctype, "application/json");
    assert_string_equal(r->body, "{\"targets\":[]}\n");

    request("GET", "/metrics", r);
    assert_int_equal(r->status, 200);
    assert_string_equal(r->ctype, "text/plain; version=0.0.4; charset=utf-8");
    assert_non_null(strstr(r->body, "# TYPE pyprofd_targets gauge\n"
                                    "pyprofd_targets{state=\"active\"} 3\n"));
    assert_non_null(
        strstr(r->body, "pyprofd_http_requests_total{handler=\"/targets\",code=\"200\"} 1\n"));
    assert_non_null(strstr(r->body, "\nprocess_cpu_seconds_total "));
    assert_non_null(strstr(r->body, "\nprocess_open_fds "));
    assert_int_equal(r->body[r->len - 1], '\n');
}

static void test_http_server__unknown_paths_404(void **state)
{
    (void)state;
    struct resp *r = &g_resp;
    static const char *const paths[] = {"/nope", "/metrics/", "/debug/pprof/", "/-/quit",
                                        "/debug/pprof/heap"};
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(paths); i++) {
        request("GET", paths[i], r);
        assert_int_equal(r->status, 404);
    }
    request("POST", "/nope", r);
    assert_int_equal(r->status, 404);
}

static void test_http_server__wrong_method_405_with_allow(void **state)
{
    (void)state;
    struct resp *r = &g_resp;
    request("POST", "/metrics", r);
    assert_int_equal(r->status, 405);
    assert_string_equal(r->allow, "GET, HEAD");
    request("DELETE", "/", r);
    assert_int_equal(r->status, 405);
    assert_string_equal(r->allow, "GET, HEAD");
    request("PUT", "/debug/pprof/profile", r);
    assert_int_equal(r->status, 405);
    request("GET", "/-/reload", r);
    assert_int_equal(r->status, 405);
    assert_string_equal(r->allow, "POST, PUT");
    assert_int_equal(atomic_load(&g_fake.profile_calls), 0);
}

static void test_http_server__head_where_get(void **state)
{
    (void)state;
    struct resp *r = &g_resp;
    request("HEAD", "/metrics", r);
    assert_int_equal(r->status, 200);
    assert_string_equal(r->ctype, "text/plain; version=0.0.4; charset=utf-8");
    assert_int_equal(r->len, 0);
    request("HEAD", "/-/healthy", r);
    assert_int_equal(r->status, 200);
    /* HEAD on the profile checks the query but does not profile */
    request("HEAD", "/debug/pprof/profile?seconds=5", r);
    assert_int_equal(r->status, 200);
    assert_string_equal(r->ctype, "application/octet-stream");
    request("HEAD", "/debug/pprof/profile?seconds=0", r);
    assert_int_equal(r->status, 400);
    assert_int_equal(atomic_load(&g_fake.profile_calls), 0);
}

static void test_http_server__profile(void **state)
{
    (void)state;
    struct resp *r = &g_resp;
    request("GET", "/debug/pprof/profile?seconds=3&pid=42", r);
    assert_int_equal(r->status, 200);
    assert_string_equal(r->ctype, "application/octet-stream");
    assert_string_equal(r->disposition, "attachment; filename=\"profile\"");
    assert_string_equal(r->body, "profile seconds=3 pid=42");
    /* default: 30 seconds of all targets, as Go's net/http/pprof */
    g_fake.ms_per_second = 0;
    request("GET", "/debug/pprof/profile", r);
    assert_int_equal(r->status, 200);
    assert_string_equal(r->body, "profile seconds=30 pid=0");
    /* a mode; the flame graph takes the same collection */
    request("GET", "/debug/pprof/profile?seconds=2&mode=cpu", r);
    assert_int_equal(r->status, 200);
    assert_string_equal(r->body, "profile seconds=2 pid=0cpu");
    request("GET", "/flamegraph?seconds=2&pid=7&mode=gil", r);
    assert_int_equal(r->status, 200);
    assert_string_equal(r->ctype, "application/json");
    assert_string_equal(r->body, "profile seconds=2 pid=7gil flame");
    request("GET", "/flamegraph?mode=fast", r);
    assert_int_equal(r->status, 400);
    assert_string_equal(r->body, "mode must be wall, cpu, gil or exception\n");
    request("GET", "/debug/pprof/profile?seconds=3600&debug=1", r);
    assert_int_equal(r->status, 200);
    assert_int_equal(atomic_load(&g_fake.last_seconds), 3600);
    /* a pid that is not a target: the callback's -ESRCH is a 404 with its message */
    request("GET", "/debug/pprof/profile?seconds=1&pid=999", r);
    assert_int_equal(r->status, 404);
    assert_string_equal(r->body, "profile failed: pid 999 is not a target\n");
    assert_string_equal(r->ctype, "text/plain; charset=utf-8");
}

static void test_http_server__profile_bad_query_400(void **state)
{
    (void)state;
    struct resp *r = &g_resp;
    static const char *const queries[] = {
        "seconds=0",    "seconds=abc",
        "seconds=-1",   "seconds=3601",
        "seconds=1.5",  "seconds=",
        "seconds",      "seconds=+5",
        "seconds=%205", "seconds=99999999999",
        "pid=0",        "pid=-3",
        "pid=x",        "pid=2147483648",
        "pid=",         "seconds=1&seconds=2",
        "pid=1&pid=2",  "seconds=0x10",
    };
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(queries); i++) {
        char path[128];
        snprintf(path, sizeof(path), "/debug/pprof/profile?%s", queries[i]);
        request("GET", path, r);
        if (r->status != 400)
            fail_msg("%s: status %ld", queries[i], r->status);
        assert_string_equal(r->ctype, "text/plain; charset=utf-8");
        assert_true(r->len > 1 && r->body[r->len - 1] == '\n');
    }
    request("GET", "/debug/pprof/profile?seconds=0", r);
    assert_string_equal(r->body, "seconds must be an integer from 1 to 3600\n");
    request("GET",
            "/debug/pprof/profile?a=1&b=2&c=3&d=4&e=5&f=6&g=7&h=8&i=9&j=10&k=11&l=12&m=13"
            "&n=14&o=15&p=16&q=17",
            r);
    assert_int_equal(r->status, 400);
    assert_int_equal(atomic_load(&g_fake.profile_calls), 0);
}

static void test_http_server__profile_errors_map_to_status(void **state)
{
    (void)state;
    struct resp *r = &g_resp;
    g_fake.profile_rc = -EBUSY;
    request("GET", "/debug/pprof/profile?seconds=1", r);
    assert_int_equal(r->status, 503);
    g_fake.profile_rc = -EIO;
    request("GET", "/debug/pprof/profile?seconds=1", r);
    assert_int_equal(r->status, 500);
    assert_string_equal(r->body, "profile failed: Input/output error\n");
    g_fake.profile_rc = -EINVAL;
    request("GET", "/debug/pprof/profile?seconds=1", r);
    assert_int_equal(r->status, 400);
}

static void test_http_server__max_seconds_is_configurable(void **state)
{
    (void)state;
    struct resp *r = &g_resp;
    struct http_server_config cfg = {.listen_address = "127.0.0.1:0", .max_profile_seconds = 10};
    struct http_server_ops ops = fake_ops();
    http_server_free(g_srv);
    start_with(&cfg, &ops);
    g_fake.ms_per_second = 0;
    request("GET", "/debug/pprof/profile?seconds=11", r);
    assert_int_equal(r->status, 400);
    assert_string_equal(r->body, "seconds must be an integer from 1 to 10\n");
    /* the default (30) is capped by the maximum */
    request("GET", "/debug/pprof/profile", r);
    assert_int_equal(r->status, 200);
    assert_string_equal(r->body, "profile seconds=10 pid=0");
}

static void test_http_server__lifecycle_off_403(void **state)
{
    (void)state;
    struct resp *r = &g_resp;
    request("POST", "/-/reload", r);
    assert_int_equal(r->status, 403);
    assert_string_equal(r->body, "lifecycle API is not enabled\n");
    request("PUT", "/-/reload", r);
    assert_int_equal(r->status, 403);
    assert_int_equal(atomic_load(&g_fake.reload_calls), 0);
}

static void test_http_server__lifecycle_on_reloads(void **state)
{
    (void)state;
    struct resp *r = &g_resp;
    struct http_server_config cfg = {.listen_address = "127.0.0.1:0", .enable_lifecycle = true};
    struct http_server_ops ops = fake_ops();
    http_server_free(g_srv);
    start_with(&cfg, &ops);
    request("POST", "/-/reload", r);
    assert_int_equal(r->status, 200);
    request("PUT", "/-/reload", r);
    assert_int_equal(r->status, 200);
    assert_int_equal(atomic_load(&g_fake.reload_calls), 2);
    g_fake.reload_rc = -EINVAL;
    request("POST", "/-/reload", r);
    assert_int_equal(r->status, 500);
    assert_string_equal(r->body, "failed to reload config: config.yml:3:5: unknown key \"nope\"\n");
    /* a small body is ignored; a big one is refused before the callback runs */
    g_fake.reload_rc = 0;
    assert_int_equal(request_port(http_server_port(g_srv), "POST", "/-/reload", "x=1", 3, r),
                     CURLE_OK);
    assert_int_equal(r->status, 200);
    static char big[100 << 10];
    memset(big, 'a', sizeof(big));
    CURLcode rc = request_port(http_server_port(g_srv), "POST", "/-/reload", big, sizeof(big), r);
    assert_true(rc == CURLE_OK || rc == CURLE_SEND_ERROR || rc == CURLE_RECV_ERROR);
    if (rc == CURLE_OK)
        assert_int_equal(r->status, 413);
    assert_int_equal(atomic_load(&g_fake.reload_calls), 4);
}

static void test_http_server__metrics_failures_500(void **state)
{
    (void)state;
    struct resp *r = &g_resp;
    g_fake.metrics_rc = -EIO;
    request("GET", "/metrics", r);
    assert_int_equal(r->status, 500);
    assert_string_equal(r->body, "metrics failed: Input/output error\n");
    g_fake.metrics_rc = 0;
    struct http_server_config cfg = {.listen_address = "127.0.0.1:0", .metrics_cap = 4096};
    struct http_server_ops ops = fake_ops();
    http_server_free(g_srv);
    start_with(&cfg, &ops);
    g_fake.metrics_big = true;
    request("GET", "/metrics", r);
    assert_int_equal(r->status, 500);
    assert_string_equal(r->body, "metrics failed: document over its size cap\n");
}

static void test_http_server__missing_callbacks(void **state)
{
    (void)state;
    struct resp *r = &g_resp;
    struct http_server_config cfg = {.listen_address = "127.0.0.1:0", .enable_lifecycle = true};
    struct http_server_ops ops = {.ctx = &g_fake};
    http_server_free(g_srv);
    start_with(&cfg, &ops);
    request("GET", "/debug/pprof/profile?seconds=1", r);
    assert_int_equal(r->status, 501);
    request("GET", "/targets", r);
    assert_int_equal(r->status, 501);
    request("POST", "/-/reload", r);
    assert_int_equal(r->status, 501);
    request("GET", "/-/ready", r); /* no ready callback: always ready */
    assert_int_equal(r->status, 200);
    request("GET", "/metrics", r); /* only the server's own and process metrics */
    assert_int_equal(r->status, 200);
    assert_non_null(strstr(r->body, "process_threads"));
}

struct bg {
    pthread_t thread;
    const char *path;
    uint16_t port;
    struct resp r;
    CURLcode rc;
};

static void *bg_run(void *arg)
{
    struct bg *b = arg;
    b->rc = request_port(b->port, "GET", b->path, NULL, 0, &b->r);
    return NULL;
}

static struct bg *bg_start(const char *path)
{
    struct bg *b = alloc_calloc(1, sizeof(*b));
    assert_non_null(b);
    b->path = path;
    b->port = http_server_port(g_srv);
    assert_int_equal(pthread_create(&b->thread, NULL, bg_run, b), 0);
    return b;
}

static void bg_join(struct bg *b)
{
    pthread_join(b->thread, NULL);
}

/* Waits until @a n profile callbacks have started. */
static void wait_profiles(int n)
{
    uint64_t end = now_ms() + 5000;
    while (atomic_load(&g_fake.profile_calls) < n && now_ms() < end) {
        struct timespec nap = {0, 5 * 1000 * 1000};
        nanosleep(&nap, NULL);
    }
    assert_int_equal(atomic_load(&g_fake.profile_calls), n);
}

static void test_http_server__profile_does_not_block_others(void **state)
{
    (void)state;
    struct resp *r = &g_resp;
    g_fake.ms_per_second = 1000;
    struct bg *b = bg_start("/debug/pprof/profile?seconds=2");
    wait_profiles(1);
    uint64_t t0 = now_ms();
    request("GET", "/metrics", r);
    assert_int_equal(r->status, 200);
    assert_non_null(strstr(r->body, "pyprofd_http_profile_requests_in_flight 1\n"));
    request("GET", "/-/healthy", r);
    assert_int_equal(r->status, 200);
    request("GET", "/targets", r);
    assert_int_equal(r->status, 200);
    assert_true(now_ms() - t0 < 1000);
    bg_join(b);
    assert_int_equal(b->rc, CURLE_OK);
    assert_int_equal(b->r.status, 200);
    assert_string_equal(b->r.body, "profile seconds=2 pid=0");
    assert_true(b->r.elapsed_s >= 1.9);
    alloc_free(b);
}

static void test_http_server__too_many_profiles_503(void **state)
{
    (void)state;
    struct resp *r = &g_resp;
    struct http_server_config cfg = {.listen_address = "127.0.0.1:0", .max_concurrent_profiles = 1};
    struct http_server_ops ops = fake_ops();
    http_server_free(g_srv);
    start_with(&cfg, &ops);
    g_fake.ms_per_second = 1000;
    struct bg *b = bg_start("/debug/pprof/profile?seconds=1");
    wait_profiles(1);
    request("GET", "/debug/pprof/profile?seconds=1", r);
    assert_int_equal(r->status, 503);
    assert_string_equal(r->retry_after, "5");
    assert_string_equal(r->body, "too many concurrent profile requests (limit 1)\n");
    bg_join(b);
    assert_int_equal(b->r.status, 200);
    alloc_free(b);
    /* the slot is free again */
    g_fake.ms_per_second = 0;
    request("GET", "/debug/pprof/profile?seconds=1", r);
    assert_int_equal(r->status, 200);
}

static void test_http_server__stop_cancels_profile(void **state)
{
    (void)state;
    g_fake.ms_per_second = 1000;
    uint16_t port = http_server_port(g_srv);
    struct bg *b = bg_start("/debug/pprof/profile?seconds=30");
    wait_profiles(1);
    uint64_t t0 = now_ms();
    assert_int_equal(http_server_stop(g_srv, 5000), 0);
    assert_true(now_ms() - t0 < 2000);
    assert_int_equal(http_server_stop(g_srv, 5000), 0); /* again: no-op */
    bg_join(b);
    assert_true(atomic_load(&g_fake.saw_cancel));
    assert_true(b->r.elapsed_s < 3);
    /* the request got its answer (503) or its connection closed, but quickly */
    if (b->rc == CURLE_OK)
        assert_int_equal(b->r.status, 503);
    alloc_free(b);
    /* nothing listens any more */
    struct resp *r = &g_resp;
    assert_int_not_equal(request_port(port, "GET", "/-/healthy", NULL, 0, r), CURLE_OK);
}

static void test_http_server__client_hangup_cancels_profile(void **state)
{
    (void)state;
    struct resp *r = &g_resp;
    struct http_server_config cfg = {.listen_address = "127.0.0.1:0", .max_concurrent_profiles = 1};
    struct http_server_ops ops = fake_ops();
    http_server_free(g_srv);
    start_with(&cfg, &ops);
    g_fake.ms_per_second = 1000;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons(http_server_port(g_srv)),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    static const char get[] = "GET /debug/pprof/profile?seconds=30 HTTP/1.1\r\n"
                              "Host: 127.0.0.1\r\n\r\n";
    assert_int_equal(write(fd, get, sizeof(get) - 1), (ssize_t)(sizeof(get) - 1));
    wait_profiles(1);
    /* a client that stays is not cancelled */
    struct timespec second = {1, 0};
    nanosleep(&second, NULL);
    assert_false(atomic_load(&g_fake.saw_cancel));
    uint64_t closed = now_ms();
    close(fd);
    uint64_t end = closed + 3000;
    while (!atomic_load(&g_fake.saw_cancel) && now_ms() < end) {
        struct timespec nap = {0, 5 * 1000 * 1000};
        nanosleep(&nap, NULL);
    }
    assert_true(atomic_load(&g_fake.saw_cancel));
    assert_true(atomic_load(&g_fake.cancel_ms) - closed < 1000);
    /* the slot is free again (the only one) */
    g_fake.ms_per_second = 0;
    end = now_ms() + 2000;
    do {
        request("GET", "/debug/pprof/profile?seconds=1", r);
    } while (r->status == 503 && now_ms() < end);
    assert_int_equal(r->status, 200);
    request("GET", "/metrics", r);
    assert_non_null(strstr(r->body, "pyprofd_http_profile_requests_in_flight 0\n"));
}

static void test_http_server__start_errors(void **state)
{
    (void)state;
    char err[256];
    char addr[64];
    struct http_server *s = NULL;
    struct http_server_ops ops = fake_ops();
    struct http_server_config cfg = {.listen_address = addr};

    snprintf(addr, sizeof(addr), "127.0.0.1:%u", (unsigned)http_server_port(g_srv));
    assert_int_equal(http_server_start(&cfg, &ops, &s, err, sizeof(err)), -EADDRINUSE);
    assert_non_null(strstr(err, addr));
    assert_non_null(strstr(err, "in use"));

    static const char *const bad[] = {
        "nonsense", "127.0.0.1", "127.0.0.1:", "127.0.0.1:99999", "127.0.0.1:http",
        "::1:80",   "[::1]80",   "[::1",       "127.0.0.1:-1",    "no.such.host.invalid:80"};
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(bad); i++) {
        cfg.listen_address = bad[i];
        int rc = http_server_start(&cfg, &ops, &s, err, sizeof(err));
        if (rc != -EINVAL)
            fail_msg("%s: %d (%s)", bad[i], rc, err);
        assert_non_null(strstr(err, bad[i]));
    }
    cfg.listen_address = "192.0.2.1:0"; /* TEST-NET-1: not ours */
    assert_int_equal(http_server_start(&cfg, &ops, &s, NULL, 0), -EADDRNOTAVAIL);
}

static void test_http_server__ipv6_and_hostname(void **state)
{
    (void)state;
    char err[256];
    struct http_server *s = NULL;
    struct http_server_ops ops = fake_ops();
    struct http_server_config cfg = {.listen_address = "localhost:0"};
    assert_int_equal(http_server_start(&cfg, &ops, &s, err, sizeof(err)), 0);
    assert_true(http_server_port(s) > 0);
    http_server_free(s);

    cfg.listen_address = "[::1]:0";
    int rc = http_server_start(&cfg, &ops, &s, err, sizeof(err));
    if (rc == -EADDRNOTAVAIL || rc == -EAFNOSUPPORT)
        skip(); /* no IPv6 loopback here */
    assert_int_equal(rc, 0);
    char url[64];
    snprintf(url, sizeof(url), "http://[::1]:%u/-/healthy", (unsigned)http_server_port(s));
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &g_resp);
    memset(&g_resp, 0, sizeof(g_resp));
    assert_int_equal(curl_easy_perform(c), CURLE_OK);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    assert_int_equal(status, 200);
    assert_string_equal(g_resp.body, "pyprofd is healthy.\n");
    http_server_free(s);
}

static void test_http_server__parse_query_directly(void **state)
{
    (void)state;
    const char *keys[] = {"pid", "seconds", "other", NULL, "mode"};
    const char *values[] = {"17", "5", NULL, "x", "exception"};
    uint32_t sec = 0;
    int32_t pid = -1, mode = 7;
    char err[128];
    assert_int_equal(
        http_parse_profile_query(keys, values, 4, 3600, &sec, &pid, &mode, err, sizeof(err)), 0);
    assert_int_equal(sec, 5);
    assert_int_equal(pid, 17);
    assert_int_equal(mode, -1);
    assert_int_equal(
        http_parse_profile_query(keys, values, 5, 3600, &sec, &pid, &mode, err, sizeof(err)), 0);
    assert_int_equal(mode, PROFILE_EXCEPTION);
    assert_int_equal(
        http_parse_profile_query(keys, values, 0, 3600, &sec, &pid, &mode, err, sizeof(err)), 0);
    assert_int_equal(sec, 30);
    assert_int_equal(pid, 0);
    const char *nv[] = {NULL};
    const char *nk[] = {"pid"};
    assert_int_equal(http_parse_profile_query(nk, nv, 1, 3600, &sec, &pid, &mode, err, sizeof(err)),
                     -EINVAL);
    assert_string_equal(err, "pid must be a positive integer");
    /* mode: a name, once */
    const char *mk[] = {"mode", "mode"};
    const char *mv[] = {"cpu", "gil"};
    const char *mbad[] = {"CPU", NULL};
    assert_int_equal(http_parse_profile_query(mk, mv, 2, 3600, &sec, &pid, &mode, err, sizeof(err)),
                     -EINVAL);
    assert_string_equal(err, "mode given more than once");
    assert_int_equal(
        http_parse_profile_query(mk, mbad, 1, 3600, &sec, &pid, &mode, err, sizeof(err)), -EINVAL);
    assert_int_equal(
        http_parse_profile_query(mk, mbad + 1, 1, 3600, &sec, &pid, &mode, err, sizeof(err)),
        -EINVAL);
    /* a tiny error buffer is fine */
    assert_int_equal(http_parse_profile_query(nk, nv, 1, 3600, &sec, &pid, &mode, err, 4), -EINVAL);
    assert_int_equal(http_parse_profile_query(nk, nv, 1, 3600, &sec, &pid, &mode, NULL, 0),
                     -EINVAL);
    assert_int_equal(
        http_parse_profile_query(keys, values, 0, 0, &sec, &pid, &mode, err, sizeof(err)), -EINVAL);
}

/* ---- hostile clients, on raw sockets ---- */

/*
 * A connection to the server from @a src (an address of the 127/8 loopback
 * net, so that tests can be several clients), or -1 if it did not connect
 * within 2 s.
 */
static int raw_connect(const char *src)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    assert_int_equal(inet_pton(AF_INET, src, &a.sin_addr), 1);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    a.sin_port = htons(http_server_port(g_srv));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        struct pollfd p = {.fd = fd, .events = POLLOUT};
        int soerr = 0;
        socklen_t len = sizeof(soerr);
        if (errno != EINPROGRESS || poll(&p, 1, 2000) != 1 ||
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0 || soerr != 0) {
            close(fd);
            return -1;
        }
    }
    return fd;
}

/* Sends @a s; false if the server has closed the connection. */
static bool raw_send(int fd, const char *s)
{
    size_t len = strlen(s);
    return send(fd, s, len, MSG_NOSIGNAL) == (ssize_t)len;
}

/*
 * Reads what the server sends into @a buf (NUL-terminated) until it closes
 * the connection or @a timeout_ms pass. Returns whether it closed.
 */
static bool raw_read_to_close(int fd, char *buf, size_t size, int timeout_ms)
{
    size_t len = 0;
    uint64_t end = now_ms() + (uint64_t)timeout_ms;
    buf[0] = '\0';
    for (;;) {
        uint64_t now = now_ms();
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, now < end ? (int)(end - now) : 0) != 1)
            return false;
        char tmp[4096];
        ssize_t n = recv(fd, tmp, sizeof(tmp), 0);
        if (n <= 0)
            return n == 0 || errno == ECONNRESET;
        size_t take = (size_t)n < size - 1 - len ? (size_t)n : size - 1 - len;
        memcpy(buf + len, tmp, take);
        len += take;
        buf[len] = '\0';
    }
}

/* Whether the server has closed @a fd already (a reply before the close is read and dropped). */
static bool raw_closed(int fd)
{
    char buf[512];
    return raw_read_to_close(fd, buf, sizeof(buf), 0);
}

/* The value of the sample @a series ("name{labels}") in a metrics document, or -1. */
static double metric(const char *doc, const char *series)
{
    char key[256];
    snprintf(key, sizeof(key), "\n%s ", series);
    const char *p = strstr(doc, key);
    return p ? strtod(p + strlen(key), NULL) : -1;
}

static void test_http_server__malformed_request_line_400(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "garbage\r\n",                                  /* no target, no version */
        "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", /* a TLS ClientHello: no line end at all */
        "GET /metrics\r\n\r\n",                         /* HTTP/0.9 */
        "GET  /metrics HTTP/1.1\r\n\r\n",               /* two spaces */
        "GET /metrics HTTP/1.1\r\nHost: x\r\n\001bad: 1\r\n\r\n",
        "\r\n\r\n\r\n\r\n\r\n\r\n", /* empty lines and nothing else */
    };
    char buf[2048];
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(bad); i++) {
        int fd = raw_connect("127.0.0.1");
        assert_true(fd >= 0);
        assert_true(raw_send(fd, bad[i]));
        uint64_t t0 = now_ms();
        /* at once, not at the 10 s head deadline (5 s: the test machine may be busy) */
        bool closed = raw_read_to_close(fd, buf, sizeof(buf), 5000);
        uint64_t took = now_ms() - t0;
        close(fd);
        if (!closed || strncmp(buf, "HTTP/1.1 400 ", 13) != 0)
            fail_msg("request %zu: closed %d after %" PRIu64 " ms, got '%.40s'", i, closed, took,
                     buf);
        assert_non_null(strstr(buf, "\r\nConnection: close\r\n"));
        assert_non_null(strstr(buf, "\r\n\r\nbad request: "));
    }
    /* a head over 16 KiB: 431 */
    static char big[20000];
    snprintf(big, sizeof(big), "GET /metrics HTTP/1.1\r\nX-Big: ");
    memset(big + strlen(big), 'a', sizeof(big) - 1 - strlen(big));
    int fd = raw_connect("127.0.0.1");
    assert_true(fd >= 0);
    assert_true(raw_send(fd, big));
    assert_true(raw_read_to_close(fd, buf, sizeof(buf), 5000));
    close(fd);
    assert_memory_equal(buf, "HTTP/1.1 431 ", 13);

    struct resp *r = &g_resp;
    request("GET", "/metrics", r);
    assert_int_equal(r->status, 200);
    assert_true(
        metric(r->body, "pyprofd_http_connections_rejected_total{reason=\"bad_request\"}") ==
        (double)PYPROFD_ARRAY_SIZE(bad));
    assert_true(
        metric(r->body, "pyprofd_http_connections_rejected_total{reason=\"head_too_large\"}") == 1);
}

static void test_http_server__one_request_per_connection(void **state)
{
    (void)state;
    char buf[2048];
    int fd = raw_connect("127.0.0.1");
    assert_true(fd >= 0);
    /* HTTP/1.1 keeps a connection open by default: not here */
    assert_true(raw_send(fd, "GET /-/healthy HTTP/1.1\r\nHost: x\r\n\r\n"));
    assert_true(raw_read_to_close(fd, buf, sizeof(buf), 5000));
    close(fd);
    assert_memory_equal(buf, "HTTP/1.1 200 ", 13);
    assert_non_null(strstr(buf, "\r\nConnection: close\r\n"));
    assert_non_null(strstr(buf, "\r\n\r\npyprofd is healthy.\n"));
}

static void test_http_server__head_deadline_cuts_trickle(void **state)
{
    (void)state;
    char buf[2048];
    struct http_server_config cfg = {.listen_address = "127.0.0.1:0", .head_timeout_ms = 500};
    struct http_server_ops ops = fake_ops();
    http_server_free(g_srv);
    start_with(&cfg, &ops);

    /* one header line every 100 ms: an idle timeout would never fire */
    int fd = raw_connect("127.0.0.1");
    assert_true(fd >= 0);
    uint64_t t0 = now_ms();
    bool sent = raw_send(fd, "GET /metrics HTTP/1.1\r\n");
    while (sent && !raw_closed(fd) && now_ms() - t0 < 6000) {
        struct timespec nap = {0, 100 * 1000 * 1000};
        nanosleep(&nap, NULL);
        sent = raw_send(fd, "X-Slow: 1\r\n");
    }
    uint64_t took = now_ms() - t0;
    close(fd);
    if (took < 450 || took > 5000)
        fail_msg("the trickling connection lasted %" PRIu64 " ms (deadline 500 ms)", took);

    /* the 408 reaches a client that stops sending */
    fd = raw_connect("127.0.0.1");
    assert_true(fd >= 0);
    assert_true(raw_send(fd, "GET /metrics HTTP/1.1\r\nHost: x\r\n"));
    assert_true(raw_read_to_close(fd, buf, sizeof(buf), 5000));
    close(fd);
    assert_memory_equal(buf, "HTTP/1.1 408 ", 13);
    assert_non_null(strstr(buf, "request head not complete within 500 ms\n"));

    /* a slow head that completes in time is served */
    fd = raw_connect("127.0.0.1");
    assert_true(fd >= 0);
    assert_true(raw_send(fd, "GET /-/healthy HTTP/1.1\r\n"));
    struct timespec nap = {0, 300 * 1000 * 1000};
    nanosleep(&nap, NULL);
    assert_true(raw_send(fd, "Host: x\r\n\r\n"));
    assert_true(raw_read_to_close(fd, buf, sizeof(buf), 5000));
    close(fd);
    assert_memory_equal(buf, "HTTP/1.1 200 ", 13);

    struct resp *r = &g_resp;
    request("GET", "/metrics", r);
    assert_true(
        metric(r->body, "pyprofd_http_connections_rejected_total{reason=\"head_timeout\"}") == 2);
}

static void test_http_server__slow_body_cut_at_deadline(void **state)
{
    (void)state;
    struct http_server_config cfg = {
        .listen_address = "127.0.0.1:0", .enable_lifecycle = true, .head_timeout_ms = 500};
    struct http_server_ops ops = fake_ops();
    http_server_free(g_srv);
    start_with(&cfg, &ops);
    int fd = raw_connect("127.0.0.1");
    assert_true(fd >= 0);
    uint64_t t0 = now_ms();
    bool sent = raw_send(fd, "POST /-/reload HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n");
    while (sent && !raw_closed(fd) && now_ms() - t0 < 6000) {
        struct timespec nap = {0, 100 * 1000 * 1000};
        nanosleep(&nap, NULL);
        sent = raw_send(fd, "x");
    }
    uint64_t took = now_ms() - t0;
    close(fd);
    if (took < 450 || took > 5000)
        fail_msg("the trickled body lasted %" PRIu64 " ms (deadline 500 ms)", took);
    assert_int_equal(atomic_load(&g_fake.reload_calls), 0);
}

/* The defect's attack: hundreds of connections from one address trickling their heads. */
static void test_http_server__metrics_answers_under_slowloris(void **state)
{
    (void)state;
    enum { NSLOW = 300 };
    static int fds[NSLOW];
    int connected = 0;
    for (int i = 0; i < NSLOW; i++) {
        fds[i] = raw_connect("127.0.0.1");
        if (fds[i] >= 0 && raw_send(fds[i], "GET /metrics HTTP/1.1\r\nHost: x\r\n"))
            connected++;
    }
    /* a scraper from the same address, on a fresh connection */
    struct resp *r = &g_resp;
    g_timeout_s = 5;
    CURLcode rc = request_port(http_server_port(g_srv), "GET", "/metrics", NULL, 0, r);
    int closed = 0;
    for (int i = 0; i < NSLOW; i++) {
        if (fds[i] >= 0) {
            closed += raw_closed(fds[i]);
            close(fds[i]);
        }
    }
    if (rc != CURLE_OK || r->status != 200)
        fail_msg("/metrics under %d slow connections: %s, status %ld after %.2f s", connected,
                 curl_easy_strerror(rc), r->status, r->elapsed_s);
    assert_int_equal(connected, NSLOW);
    /* the slow ones held at most their client's share, the older ones made room */
    double reading = metric(r->body, "pyprofd_http_connections{state=\"reading\"}");
    double evicted = metric(r->body, "pyprofd_http_connections_rejected_total{reason=\"evicted\"}");
    if (reading < 0 || reading > HTTP_SERVER_DEFAULT_PER_CLIENT_LIMIT ||
        evicted < NSLOW - HTTP_SERVER_DEFAULT_PER_CLIENT_LIMIT)
        fail_msg("reading %.0f, evicted %.0f", reading, evicted);
    assert_true(closed >= NSLOW - HTTP_SERVER_DEFAULT_PER_CLIENT_LIMIT);
}

static void test_http_server__per_client_limit(void **state)
{
    (void)state;
    enum { LIMIT = 4, NSLOW = 10 };
    struct resp *r = &g_resp;
    char buf[2048];
    struct http_server_config cfg = {.listen_address = "127.0.0.1:0",
                                     .per_client_limit = LIMIT,
                                     .connection_limit = 16,
                                     .max_concurrent_profiles = 8};
    struct http_server_ops ops = fake_ops();
    http_server_free(g_srv);
    start_with(&cfg, &ops);

    /* slow heads from 127.0.0.2: only the newest LIMIT stay */
    int fds[NSLOW];
    for (int i = 0; i < NSLOW; i++) {
        fds[i] = raw_connect("127.0.0.2");
        assert_true(fds[i] >= 0);
        assert_true(raw_send(fds[i], "GET / HTTP/1.1\r\n"));
    }
    request("GET", "/-/healthy", r); /* from 127.0.0.1, accepted after all of them */
    assert_int_equal(r->status, 200);
    for (int i = 0; i < NSLOW; i++) {
        bool closed = raw_read_to_close(fds[i], buf, sizeof(buf), i < NSLOW - LIMIT ? 5000 : 0);
        if (closed != (i < NSLOW - LIMIT))
            fail_msg("slow connection %d: closed %d", i, closed);
        if (closed)
            assert_memory_equal(buf, "HTTP/1.1 503 ", 13);
        close(fds[i]);
    }

    /* LIMIT requests being served from 127.0.0.2: a further one is refused, 127.0.0.1 is not */
    g_fake.ms_per_second = 1000;
    for (int i = 0; i < LIMIT; i++) {
        fds[i] = raw_connect("127.0.0.2");
        assert_true(fds[i] >= 0);
        assert_true(raw_send(fds[i], "GET /debug/pprof/profile?seconds=30 HTTP/1.1\r\n\r\n"));
    }
    wait_profiles(LIMIT);
    int fd = raw_connect("127.0.0.2");
    assert_true(fd >= 0);
    assert_true(raw_send(fd, "GET /-/healthy HTTP/1.1\r\n\r\n"));
    assert_true(raw_read_to_close(fd, buf, sizeof(buf), 5000));
    close(fd);
    assert_memory_equal(buf, "HTTP/1.1 503 ", 13);
    assert_non_null(strstr(buf, "too many connections from your address (limit 4)\n"));
    request("GET", "/metrics", r);
    assert_int_equal(r->status, 200);
    assert_true(metric(r->body, "pyprofd_http_connections{state=\"active\"}") >= LIMIT);
    assert_true(
        metric(r->body, "pyprofd_http_connections_rejected_total{reason=\"client_limit\"}") == 1);
    for (int i = 0; i < LIMIT; i++)
        close(fds[i]); /* the profiles end with their clients */
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, server_setup, server_teardown)
    const struct CMUnitTest tests[] = {
        T(test_http_server__landing_health_ready),
        T(test_http_server__targets_and_metrics),
        T(test_http_server__unknown_paths_404),
        T(test_http_server__wrong_method_405_with_allow),
        T(test_http_server__head_where_get),
        T(test_http_server__profile),
        T(test_http_server__profile_bad_query_400),
        T(test_http_server__profile_errors_map_to_status),
        T(test_http_server__max_seconds_is_configurable),
        T(test_http_server__lifecycle_off_403),
        T(test_http_server__lifecycle_on_reloads),
        T(test_http_server__metrics_failures_500),
        T(test_http_server__missing_callbacks),
        T(test_http_server__profile_does_not_block_others),
        T(test_http_server__too_many_profiles_503),
        T(test_http_server__stop_cancels_profile),
        T(test_http_server__client_hangup_cancels_profile),
        T(test_http_server__start_errors),
        T(test_http_server__ipv6_and_hostname),
        T(test_http_server__parse_query_directly),
        T(test_http_server__malformed_request_line_400),
        T(test_http_server__one_request_per_connection),
        T(test_http_server__head_deadline_cuts_trickle),
        T(test_http_server__slow_body_cut_at_deadline),
        T(test_http_server__metrics_answers_under_slowloris),
        T(test_http_server__per_client_limit),
    };
#undef T
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
