/* SPDX-License-Identifier: MIT */
/*
 * Tests for exporters/pull/http_gate.c: the request-head scanner, a pure
 * function, over well-formed, incomplete and malformed heads, fed whole and
 * one byte at a time. The gate's connection handling (limits, eviction,
 * deadlines, error replies) is tested through the server in
 * test_http_server.c, on real sockets.
 */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include "exporters/pull/http_gate.h"

/* Scans @a s (of @a len bytes) in pieces of @a step bytes. */
static enum http_head_result scan(const char *s, size_t len, size_t step, size_t *end,
                                  const char **why)
{
    struct http_head_scan st = {0};
    enum http_head_result r = HTTP_HEAD_MORE;
    for (size_t i = 0; i < len && r == HTTP_HEAD_MORE; i += step)
        r = http_head_scan(&st, s + i, len - i < step ? len - i : step, end);
    *why = st.why;
    return r;
}

static void check(const char *s, size_t len, enum http_head_result want, size_t want_end)
{
    static const size_t steps[] = {1, 2, 7, SIZE_MAX};
    for (size_t k = 0; k < PYPROFD_ARRAY_SIZE(steps); k++) {
        size_t end = 0;
        const char *why = NULL;
        enum http_head_result r = scan(s, len, steps[k] == SIZE_MAX ? len : steps[k], &end, &why);
        if (r != want || (want == HTTP_HEAD_DONE && end != want_end) ||
            (want == HTTP_HEAD_BAD) != (why != NULL))
            fail_msg("'%.*s' in steps of %zu: result %d end %zu (want %d end %zu), why %s",
                     (int)len, s, steps[k], (int)r, end, (int)want, want_end, why ? why : "-");
    }
}

#define CHECK(lit, want, end) check(lit, sizeof(lit) - 1, want, end)

static void test_http_gate__complete_heads(void **state)
{
    (void)state;
    CHECK("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:7979\r\n\r\n", HTTP_HEAD_DONE, 47);
    CHECK("GET / HTTP/1.0\r\n\r\n", HTTP_HEAD_DONE, 18);
    CHECK("GET / HTTP/1.1\n\n", HTTP_HEAD_DONE, 16); /* bare LF ends lines too */
    CHECK("\r\nGET / HTTP/1.1\r\n\r\n", HTTP_HEAD_DONE, 20);
    CHECK("\r\n\n\r\n\nGET / HTTP/1.1\r\n\r\n", HTTP_HEAD_DONE, 24);
    /* what Prometheus and curl send */
    CHECK("GET /metrics HTTP/1.1\r\nHost: node:7979\r\nUser-Agent: Prometheus/3.0.0\r\n"
          "Accept: application/openmetrics-text;version=1.0.0;q=0.5,*/*;q=0.1\r\n"
          "Accept-Encoding: gzip\r\nX-Prometheus-Scrape-Timeout-Seconds: 10\r\n\r\n",
          HTTP_HEAD_DONE, 204);
    CHECK("POST /-/reload HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc", HTTP_HEAD_DONE,
          55); /* the body is not looked at */
    CHECK("GET /debug/pprof/profile?seconds=5&pid=42 HTTP/1.1\r\nA:\r\nB:\t v \xc3\xa9\r\n\r\n",
          HTTP_HEAD_DONE, 68); /* empty value, tab, obs-text */
    CHECK("M-SEARCH * HTTP/1.1\r\n\r\n", HTTP_HEAD_DONE, 23);
    CHECK("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", HTTP_HEAD_DONE, 18); /* libmicrohttpd says 505 */
}

static void test_http_gate__incomplete_heads(void **state)
{
    (void)state;
    CHECK("", HTTP_HEAD_MORE, 0);
    CHECK("G", HTTP_HEAD_MORE, 0);
    CHECK("GET /metrics HTTP/1.", HTTP_HEAD_MORE, 0);
    CHECK("GET /metrics HTTP/1.1\r\n", HTTP_HEAD_MORE, 0);
    CHECK("GET /metrics HTTP/1.1\r\nHost: x\r\n", HTTP_HEAD_MORE, 0);
    CHECK("GET /metrics HTTP/1.1\r\nHost: x\r\n\r", HTTP_HEAD_MORE, 0);
    CHECK("\r\n", HTTP_HEAD_MORE, 0);
}

static void test_http_gate__malformed_heads(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        size_t len;
        const char *why;
    } bad[] = {
#define B(lit, why) {lit, sizeof(lit) - 1, why}
        B("garbage\r\n", "malformed request line"),
        B("\x16\x03\x01\x02\x00", "malformed request line"), /* TLS ClientHello */
        B("\x00", "malformed request line"),
        B(" GET / HTTP/1.1\r\n", "malformed request line"),
        B("GET\r\n", "malformed request line"),
        B("GET /\r\n", "malformed request line"), /* HTTP/0.9 */
        B("GET  / HTTP/1.1\r\n", "malformed request line"),
        B("GET / HTTP/1.1 \r\n", "malformed request line"),
        B("GET / HTTP/1.1x\r\n", "malformed request line"),
        B("GET / http/1.1\r\n", "malformed request line"),
        B("GET / HTTP/11\r\n", "malformed request line"),
        B("GET / FOO/1.1\r\n", "malformed request line"),
        B("GET /a\x7f HTTP/1.1\r\n", "malformed request line"),
        B("GET /\xc3\xa9 HTTP/1.1\r\n", "malformed request line"),
        B("GET / HTTP/1.1\rX", "malformed request line"),
        B("G(T / HTTP/1.1\r\n", "malformed request line"),
        B("\r\r\n", "malformed request line"),
        B("\r\n\r\n\r\n\r\n\r\n", "too many empty lines before the request line"),
        B("ABCDEFGHIJKLMNOPQRSTUVWXYZABCDEFG / HTTP/1.1\r\n", "request method too long"),
        B("GET / HTTP/1.1\r\nHost x\r\n", "malformed header field"),
        B("GET / HTTP/1.1\r\nHost : x\r\n", "malformed header field"),
        B("GET / HTTP/1.1\r\n: x\r\n", "malformed header field"),
        B("GET / HTTP/1.1\r\nHost: a\x01z\r\n", "malformed header field"),
        B("GET / HTTP/1.1\r\nHost: a\x00z\r\n", "malformed header field"),
        B("GET / HTTP/1.1\r\nHost: a\rz\r\n", "malformed header field"),
        B("GET / HTTP/1.1\r\nHost: x\r\n\rX", "malformed header field"),
        B("GET / HTTP/1.1\r\nA: 1\r\n folded\r\n", "obsolete line folding"),
        B("GET / HTTP/1.1\r\n\tA: 1\r\n", "obsolete line folding"),
#undef B
    };
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(bad); i++) {
        check(bad[i].s, bad[i].len, HTTP_HEAD_BAD, 0);
        size_t end = 0;
        const char *why = NULL;
        assert_int_equal(scan(bad[i].s, bad[i].len, 1, &end, &why), HTTP_HEAD_BAD);
        assert_string_equal(why, bad[i].why);
    }
}

/* The verdict comes at the first wrong byte: nothing after it is needed. */
static void test_http_gate__bad_at_first_wrong_byte(void **state)
{
    (void)state;
    struct http_head_scan st = {0};
    assert_int_equal(http_head_scan(&st, "\x16", 1, NULL), HTTP_HEAD_BAD);
    struct http_head_scan st2 = {0};
    assert_int_equal(http_head_scan(&st2, "GET /x HTTP/1.1\r\nHo", 19, NULL), HTTP_HEAD_MORE);
    assert_int_equal(http_head_scan(&st2, "\x01", 1, NULL), HTTP_HEAD_BAD);
    assert_string_equal(st2.why, "malformed header field");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_http_gate__complete_heads),
        cmocka_unit_test(test_http_gate__incomplete_heads),
        cmocka_unit_test(test_http_gate__malformed_heads),
        cmocka_unit_test(test_http_gate__bad_at_first_wrong_byte),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
