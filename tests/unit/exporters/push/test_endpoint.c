/* SPDX-License-Identifier: MIT */
/* Tests for exporters/push/endpoint.c: the outcome classification table,
 * Retry-After parsing, and the headers a real libcurl request carries (auth,
 * tenant, custom headers, rotated secret files, server_name), recorded by a
 * small HTTP server on a loopback socket; push_endpoint_perform() completing
 * requests and ending one early when its abort callback says so. */
#include "base/compat.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmocka_wrap.h"

#include "base/alloc.h"
#include "base/readfile.h"
#include "exporters/push/endpoint.h"

/* --- a loopback server that records the last request's head ------------------ */

static int srv_fd = -1;
static int srv_port;
static pthread_t srv_thread;
static pthread_mutex_t srv_mu = PTHREAD_MUTEX_INITIALIZER;
static char srv_last[8192];

static void *srv_main(void *arg)
{
    (void)arg;
    for (;;) {
        int c = accept(srv_fd, NULL, NULL);
        if (c < 0)
            break;
        char buf[8192];
        size_t n = 0;
        while (n < sizeof(buf) - 1) {
            ssize_t r = read(c, buf + n, sizeof(buf) - 1 - n);
            if (r <= 0)
                break;
            n += (size_t)r;
            buf[n] = '\0';
            if (strstr(buf, "\r\n\r\n"))
                break;
        }
        buf[n] = '\0';
        pthread_mutex_lock(&srv_mu);
        memcpy(srv_last, buf, n + 1);
        pthread_mutex_unlock(&srv_mu);
        static const char resp[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n"
                                   "Connection: close\r\n\r\n";
        ssize_t w = write(c, resp, sizeof(resp) - 1);
        (void)w;
        close(c);
    }
    return NULL;
}

static int srv_setup(void **state)
{
    (void)state;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof(a);
    srv_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (srv_fd < 0 || bind(srv_fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
        listen(srv_fd, 8) != 0 || getsockname(srv_fd, (struct sockaddr *)&a, &al) != 0)
        return -1;
    srv_port = ntohs(a.sin_port);
    return pthread_create(&srv_thread, NULL, srv_main, NULL) == 0 ? 0 : -1;
}

static int srv_teardown(void **state)
{
    (void)state;
    shutdown(srv_fd, SHUT_RDWR);
    pthread_join(srv_thread, NULL);
    close(srv_fd);
    srv_fd = -1;
    return 0;
}

/*
 * One GET of @a path through endpoint @a e; returns push_endpoint_apply()'s
 * result, and with 0 the value of header @a name in the recorded request in
 * @a val ("" when absent).
 */
static int request(const struct push_endpoint *e, const char *name, char *val, size_t vlen,
                   char *err, size_t errlen)
{
    CURL *h = curl_easy_init();
    assert_non_null(h);
    struct curl_slist *hdrs = NULL;
    char url[512];
    assert_int_equal(push_endpoint_url(e, "/probe", url, sizeof(url)), 0);
    int rc = push_endpoint_apply(e, h, &hdrs, err, errlen);
    if (rc == 0) {
        curl_easy_setopt(h, CURLOPT_URL, url);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 5000L);
        pthread_mutex_lock(&srv_mu);
        srv_last[0] = '\0';
        pthread_mutex_unlock(&srv_mu);
        assert_int_equal(curl_easy_perform(h), CURLE_OK);
        val[0] = '\0';
        char needle[128];
        snprintf(needle, sizeof(needle), "\r\n%s: ", name);
        pthread_mutex_lock(&srv_mu);
        const char *p = strcasestr(srv_last, needle);
        if (p) {
            p += strlen(needle);
            size_t n = strcspn(p, "\r\n");
            snprintf(val, vlen, "%.*s", (int)(n < vlen ? n : vlen - 1), p);
        }
        pthread_mutex_unlock(&srv_mu);
    }
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(h);
    return rc;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static struct config_remote_write rw_for(const char *url)
{
    struct config_remote_write rw = {.name = (char *)"ep", .url = (char *)url};
    return rw;
}

/* --- tests ----------------------------------------------------------------- */

static void test_endpoint__classification_table(void **state)
{
    (void)state;
    static const struct {
        CURLcode rc;
        long status;
        enum push_outcome want;
        const char *code;
    } cases[] = {
        {CURLE_OK, 200, PUSH_OK, "200"},
        {CURLE_OK, 204, PUSH_OK, "204"},
        {CURLE_OK, 400, PUSH_DROP, "400"},
        {CURLE_OK, 401, PUSH_DROP, "401"},
        {CURLE_OK, 403, PUSH_DROP, "403"},
        {CURLE_OK, 404, PUSH_DROP, "404"},
        {CURLE_OK, 408, PUSH_RETRY, "408"},
        {CURLE_OK, 413, PUSH_DROP, "413"},
        {CURLE_OK, 422, PUSH_DROP, "422"},
        {CURLE_OK, 429, PUSH_RETRY, "429"},
        {CURLE_OK, 500, PUSH_RETRY, "500"},
        {CURLE_OK, 502, PUSH_RETRY, "502"},
        {CURLE_OK, 503, PUSH_RETRY, "503"},
        {CURLE_OK, 504, PUSH_RETRY, "504"},
        {CURLE_OK, 301, PUSH_DROP, "301"},
        {CURLE_OK, 0, PUSH_RETRY, "recv"},
        {CURLE_OPERATION_TIMEDOUT, 0, PUSH_RETRY, "timeout"},
        {CURLE_COULDNT_CONNECT, 0, PUSH_RETRY, "connect"},
        {CURLE_COULDNT_RESOLVE_HOST, 0, PUSH_RETRY, "connect"},
        {CURLE_PEER_FAILED_VERIFICATION, 0, PUSH_RETRY, "tls"},
        {CURLE_SSL_CONNECT_ERROR, 0, PUSH_RETRY, "tls"},
        {CURLE_GOT_NOTHING, 0, PUSH_RETRY, "recv"},
        {CURLE_SEND_ERROR, 0, PUSH_RETRY, "send"},
        {CURLE_WRITE_ERROR, 0, PUSH_RETRY, "curl_23"},
        /* local and permanent: the same request fails the same way every time */
        {CURLE_URL_MALFORMAT, 0, PUSH_DROP, "url"},
        {CURLE_UNSUPPORTED_PROTOCOL, 0, PUSH_DROP, "url"},
        {CURLE_SSL_CACERT_BADFILE, 0, PUSH_DROP, "tls_config"},
        {CURLE_SSL_CERTPROBLEM, 0, PUSH_DROP, "tls_config"},
        {CURLE_SSL_CRL_BADFILE, 0, PUSH_DROP, "tls_config"},
        {CURLE_NOT_BUILT_IN, 0, PUSH_DROP, "curl_4"},
        {CURLE_OUT_OF_MEMORY, 0, PUSH_RETRY, "curl_27"},
    };
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(cases); i++) {
        struct push_result r;
        memset(&r, 0x5a, sizeof(r));
        push_classify_http(cases[i].rc, cases[i].status, NULL, NULL, 0, &r);
        assert_int_equal(r.outcome, cases[i].want);
        assert_string_equal(r.code, cases[i].code);
        assert_int_equal(r.retry_after_ns, 0);
        if (cases[i].want == PUSH_OK)
            assert_string_equal(r.message, "");
        else
            assert_true(r.message[0] != '\0');
    }
    /* the body becomes the message: whitespace folded, control bytes replaced, cut */
    struct push_result r;
    push_classify_http(CURLE_OK, 400, "  bad\n\tlabel\x01 name  ", NULL, 0, &r);
    assert_string_equal(r.message, "bad label? name");
    char big[1000];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    push_classify_http(CURLE_OK, 500, big, NULL, 0, &r);
    assert_int_equal(strlen(r.message), sizeof(r.message) - 1);
    push_classify_http(CURLE_OK, 400, NULL, NULL, 0, &r);
    assert_string_equal(r.message, "HTTP status 400");
}

static void test_endpoint__retry_after_seconds_and_dates(void **state)
{
    (void)state;
    const uint64_t s = 1000000000ull;
    /* Wed, 21 Oct 2015 07:28:00 GMT */
    const int64_t date = 1445412480ll * 1000000000ll;
    assert_int_equal(push_parse_retry_after("120", 0), 120 * s);
    assert_int_equal(push_parse_retry_after(" 3 ", 0), 3 * s);
    assert_int_equal(push_parse_retry_after("0", 0), 0);
    assert_int_equal(push_parse_retry_after("12abc", 0), 0);
    assert_int_equal(push_parse_retry_after("soon", 0), 0);
    assert_int_equal(push_parse_retry_after("", 0), 0);
    assert_int_equal(push_parse_retry_after(NULL, 0), 0);
    assert_true(push_parse_retry_after("99999999999999999999999", 0) == UINT64_MAX);
    assert_int_equal(
        push_parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", date - 30 * (int64_t)s), 30 * s);
    assert_int_equal(
        push_parse_retry_after("Wednesday, 21-Oct-15 07:28:00 GMT", date - 5 * (int64_t)s), 5 * s);
    assert_int_equal(push_parse_retry_after("Wed Oct 21 07:28:00 2015", date - 7 * (int64_t)s),
                     7 * s);
    assert_int_equal(push_parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", date + 1), 0);
    /* honoured on retryable answers only */
    struct push_result r;
    push_classify_http(CURLE_OK, 503, "", "7", 0, &r);
    assert_int_equal(r.outcome, PUSH_RETRY);
    assert_int_equal(r.retry_after_ns, 7 * s);
    push_classify_http(CURLE_OK, 429, "slow down", "Wed, 21 Oct 2015 07:28:00 GMT",
                       date - 60 * (int64_t)s, &r);
    assert_int_equal(r.retry_after_ns, 60 * s);
    assert_string_equal(r.message, "slow down");
    push_classify_http(CURLE_OK, 400, "", "7", 0, &r);
    assert_int_equal(r.retry_after_ns, 0);
}

static void test_endpoint__init_copies_and_builds_urls(void **state)
{
    (void)state;
    struct push_endpoint e;
    struct config_remote_write rw = rw_for("https://pyro.example:4040/base//");
    rw.tenant_id = (char *)"t1";
    assert_int_equal(push_endpoint_init(&e, &rw), 0);
    assert_string_equal(e.url, "https://pyro.example:4040/base");
    assert_string_equal(e.name, "ep");
    assert_string_equal(e.tenant_id, "t1");
    assert_null(e.basic_user);
    char url[128];
    assert_int_equal(push_endpoint_url(&e, "/push.v1.PusherService/Push", url, sizeof(url)), 0);
    assert_string_equal(url, "https://pyro.example:4040/base/push.v1.PusherService/Push");
    assert_int_equal(push_endpoint_url(&e, "/x", url, 10), -ENAMETOOLONG);
    push_endpoint_release(&e);
    push_endpoint_release(&e); /* zeroed: no-op */

    rw = rw_for("https://10.0.0.1/");
    rw.tls_server_name = (char *)"pyro.internal";
    assert_int_equal(push_endpoint_init(&e, &rw), 0);
    assert_int_equal(push_endpoint_url(&e, "/ingest?a=1", url, sizeof(url)), 0);
    assert_string_equal(url, "https://pyro.internal/ingest?a=1");
    assert_string_equal(e.connect_to->data, "pyro.internal:443:10.0.0.1:443");
    assert_string_equal(e.host_header, "Host: 10.0.0.1");
    push_endpoint_release(&e);
}

static void test_endpoint__basic_auth_file_is_reread_per_request(void **state)
{
    (void)state;
    char dir[] = "/tmp/pyprofd-test-endpoint.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char pwfile[128], url[64], val[256], err[256];
    snprintf(pwfile, sizeof(pwfile), "%s/password", dir);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/", srv_port);
    write_file(pwfile, "secret1\n");

    struct config_remote_write rw = rw_for(url);
    rw.basic_auth_username = (char *)"user";
    rw.basic_auth_password_file = pwfile;
    rw.tenant_id = (char *)"tenant-a";
    assert_int_equal(labels_set(&rw.headers, "X-Extra", "extra value"), 0);
    struct push_endpoint e;
    assert_int_equal(push_endpoint_init(&e, &rw), 0);
    labels_release(&rw.headers);

    assert_int_equal(request(&e, "Authorization", val, sizeof(val), err, sizeof(err)), 0);
    assert_string_equal(val, "Basic dXNlcjpzZWNyZXQx");
    assert_int_equal(request(&e, "X-Scope-OrgID", val, sizeof(val), err, sizeof(err)), 0);
    assert_string_equal(val, "tenant-a");
    assert_int_equal(request(&e, "X-Extra", val, sizeof(val), err, sizeof(err)), 0);
    assert_string_equal(val, "extra value");

    /* rotated: the next request carries the new secret */
    write_file(pwfile, "  secret2  \n");
    assert_int_equal(request(&e, "Authorization", val, sizeof(val), err, sizeof(err)), 0);
    assert_string_equal(val, "Basic dXNlcjpzZWNyZXQy");

    /* unreadable, too large, or with a line break inside: the request fails */
    unlink(pwfile);
    assert_int_equal(request(&e, "Authorization", val, sizeof(val), err, sizeof(err)), -ENOENT);
    assert_non_null(strstr(err, pwfile));
    FILE *f = fopen(pwfile, "w");
    assert_non_null(f);
    for (int i = 0; i < READFILE_SECRET_MAX + 1; i++)
        fputc('a', f);
    fclose(f);
    assert_int_equal(request(&e, "Authorization", val, sizeof(val), err, sizeof(err)), -EFBIG);
    write_file(pwfile, "line1\nline2\n");
    assert_int_equal(request(&e, "Authorization", val, sizeof(val), err, sizeof(err)), -EINVAL);
    /* a FIFO is refused at once: opening it would hold the sender until a writer came */
    unlink(pwfile);
    assert_int_equal(mkfifo(pwfile, 0600), 0);
    alarm(10);
    assert_int_equal(request(&e, "Authorization", val, sizeof(val), err, sizeof(err)), -EINVAL);
    alarm(0);
    assert_non_null(strstr(err, "not a regular file (a FIFO)"));
    push_endpoint_release(&e);

    /* inline password */
    rw = rw_for(url);
    rw.basic_auth_username = (char *)"user";
    rw.basic_auth_password = (char *)"inline";
    assert_int_equal(push_endpoint_init(&e, &rw), 0);
    assert_int_equal(request(&e, "Authorization", val, sizeof(val), err, sizeof(err)), 0);
    assert_string_equal(val, "Basic dXNlcjppbmxpbmU=");
    assert_int_equal(request(&e, "X-Scope-OrgID", val, sizeof(val), err, sizeof(err)), 0);
    assert_string_equal(val, "");
    push_endpoint_release(&e);

    unlink(pwfile);
    rmdir(dir);
}

static void test_endpoint__authorization_credentials_and_overrides(void **state)
{
    (void)state;
    char dir[] = "/tmp/pyprofd-test-endpoint.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char tokfile[128], url[64], val[256], err[256];
    snprintf(tokfile, sizeof(tokfile), "%s/token", dir);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", srv_port);
    write_file(tokfile, "tok-1\n");

    struct config_remote_write rw = rw_for(url);
    rw.authorization_credentials_file = tokfile;
    struct push_endpoint e;
    assert_int_equal(push_endpoint_init(&e, &rw), 0);
    assert_int_equal(request(&e, "Authorization", val, sizeof(val), err, sizeof(err)), 0);
    assert_string_equal(val, "Bearer tok-1");
    write_file(tokfile, "tok-2");
    assert_int_equal(request(&e, "Authorization", val, sizeof(val), err, sizeof(err)), 0);
    assert_string_equal(val, "Bearer tok-2");
    push_endpoint_release(&e);

    /* the scheme's name is case-insensitive: libcurl writes Bearer its way */
    rw = rw_for(url);
    rw.authorization_type = (char *)"bearer";
    rw.authorization_credentials = (char *)"abc";
    assert_int_equal(push_endpoint_init(&e, &rw), 0);
    assert_int_equal(request(&e, "Authorization", val, sizeof(val), err, sizeof(err)), 0);
    assert_string_equal(val, "Bearer abc");
    push_endpoint_release(&e);

    /* a type libcurl does not know is sent as written */
    rw = rw_for(url);
    rw.authorization_type = (char *)"Token";
    rw.authorization_credentials = (char *)"abc";
    assert_int_equal(push_endpoint_init(&e, &rw), 0);
    assert_int_equal(request(&e, "Authorization", val, sizeof(val), err, sizeof(err)), 0);
    assert_string_equal(val, "Token abc");
    push_endpoint_release(&e);

    /* basic auth with a colon in the user name, as libcurl's options allow */
    rw = rw_for(url);
    rw.basic_auth_username = (char *)"us:er";
    rw.basic_auth_password = (char *)"pw";
    assert_int_equal(push_endpoint_init(&e, &rw), 0);
    assert_int_equal(request(&e, "Authorization", val, sizeof(val), err, sizeof(err)), 0);
    assert_string_equal(val, "Basic dXM6ZXI6cHc="); /* base64("us:er:pw") */
    push_endpoint_release(&e);

    /* a custom header of the same name wins over the generated one */
    rw = rw_for(url);
    rw.authorization_credentials = (char *)"abc";
    rw.tenant_id = (char *)"from-config";
    assert_int_equal(labels_set(&rw.headers, "Authorization", "Custom xyz"), 0);
    assert_int_equal(labels_set(&rw.headers, "X-Scope-OrgID", "from-headers"), 0);
    assert_int_equal(push_endpoint_init(&e, &rw), 0);
    labels_release(&rw.headers);
    assert_int_equal(request(&e, "Authorization", val, sizeof(val), err, sizeof(err)), 0);
    assert_string_equal(val, "Custom xyz");
    assert_int_equal(request(&e, "X-Scope-OrgID", val, sizeof(val), err, sizeof(err)), 0);
    assert_string_equal(val, "from-headers");
    push_endpoint_release(&e);

    /* server_name: the request goes to the configured host, named server_name in the URL */
    rw = rw_for(url);
    rw.tls_server_name = (char *)"pyro.test";
    assert_int_equal(push_endpoint_init(&e, &rw), 0);
    assert_int_equal(request(&e, "Host", val, sizeof(val), err, sizeof(err)), 0);
    char want[64];
    snprintf(want, sizeof(want), "127.0.0.1:%d", srv_port);
    assert_string_equal(val, want);
    push_endpoint_release(&e);

    unlink(tokfile);
    rmdir(dir);
}

/*
 * A CA file that cannot be loaded fails every request the same way, before
 * anything is sent: it is dropped as "tls_config", not retried forever.
 */
static void test_endpoint__bad_tls_file_is_permanent(void **state)
{
    (void)state;
    char url[64], err[256] = "";
    snprintf(url, sizeof(url), "https://127.0.0.1:%d", srv_port);
    struct config_remote_write rw = rw_for(url);
    rw.tls_ca_file = (char *)"/nonexistent/pyprofd-test/ca.pem";
    struct push_endpoint e;
    assert_int_equal(push_endpoint_init(&e, &rw), 0);
    CURL *h = curl_easy_init();
    CURLM *m = curl_multi_init();
    assert_non_null(h);
    assert_non_null(m);
    struct curl_slist *hdrs = NULL;
    char full[128];
    assert_int_equal(push_endpoint_url(&e, "/probe", full, sizeof(full)), 0);
    assert_int_equal(push_endpoint_apply(&e, h, &hdrs, err, sizeof(err)), 0);
    curl_easy_setopt(h, CURLOPT_URL, full);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 5000L);
    struct push_request r = {0};
    CURLcode rc = push_endpoint_perform(m, h, &r);
    struct push_result res;
    push_classify_http(rc, 0, NULL, NULL, 0, &res);
    assert_int_equal(rc, CURLE_SSL_CACERT_BADFILE);
    assert_int_equal(res.outcome, PUSH_DROP);
    assert_string_equal(res.code, "tls_config");
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(h);
    curl_multi_cleanup(m);
    push_endpoint_release(&e);
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static _Atomic uint64_t abort_at; /* mono ns; 0: never */

static bool abort_after(void *arg)
{
    (void)arg;
    uint64_t at = atomic_load(&abort_at);
    return at && mono_ns() >= at;
}

static void test_endpoint__perform_completes_and_aborts_when_told(void **state)
{
    (void)state;
    CURL *h = curl_easy_init();
    CURLM *m = curl_multi_init();
    assert_non_null(h);
    assert_non_null(m);
    struct push_request r = {.abort = abort_after};
    char url[64];
    atomic_store(&abort_at, 0);

    /* a server that answers: done, twice with the same handles */
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/probe", srv_port);
    for (int i = 0; i < 2; i++) {
        curl_easy_reset(h);
        curl_easy_setopt(h, CURLOPT_URL, url);
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 5000L);
        assert_int_equal(push_endpoint_perform(m, h, &r), CURLE_OK);
        long status = 0;
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
        assert_int_equal(status, 200);
    }

    /* a server that accepts and never answers (the connection completes in
     * the listen backlog) */
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof(a);
    int bh = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(bh >= 0);
    assert_int_equal(bind(bh, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(bh, 8), 0);
    assert_int_equal(getsockname(bh, (struct sockaddr *)&a, &al), 0);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/push", ntohs(a.sin_port));
    curl_easy_reset(h);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, "profile");
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 20000L);
    uint64_t t0 = mono_ns();
    atomic_store(&abort_at, t0 + 300000000ull);
    CURLcode rc = push_endpoint_perform(m, h, &r);
    uint64_t took = mono_ns() - t0;
    assert_int_equal(rc, CURLE_ABORTED_BY_CALLBACK);
    assert_true(took >= 300000000ull);
    /* libcurl alone would notice only about once a second while idle */
    assert_true(took < 300000000ull + 3 * PUSH_ABORT_POLL_MS * 1000000ull);
    struct push_result res;
    push_classify_http(rc, 0, NULL, NULL, 0, &res);
    assert_int_equal(res.outcome, PUSH_RETRY);
    assert_string_equal(res.code, "aborted");

    /* without an abort the caller's timeout still ends it */
    atomic_store(&abort_at, 0);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 200L);
    t0 = mono_ns();
    assert_int_equal(push_endpoint_perform(m, h, &r), CURLE_OPERATION_TIMEDOUT);
    assert_true(mono_ns() - t0 < 2000000000ull);
    /* a request without an abort callback works too */
    struct push_request plain = {0};
    assert_int_equal(push_endpoint_perform(m, h, &plain), CURLE_OPERATION_TIMEDOUT);

    close(bh);
    curl_easy_cleanup(h);
    curl_multi_cleanup(m);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_endpoint__classification_table),
        cmocka_unit_test(test_endpoint__retry_after_seconds_and_dates),
        cmocka_unit_test(test_endpoint__init_copies_and_builds_urls),
        cmocka_unit_test(test_endpoint__basic_auth_file_is_reread_per_request),
        cmocka_unit_test(test_endpoint__authorization_credentials_and_overrides),
        cmocka_unit_test(test_endpoint__bad_tls_file_is_permanent),
        cmocka_unit_test(test_endpoint__perform_completes_and_aborts_when_told),
    };
    int rc = cmocka_run_group_tests(tests, srv_setup, srv_teardown);
    curl_global_cleanup();
    return rc;
}
