/* SPDX-License-Identifier: MIT */
/*
 * Tests for exporters/parca/parca.c: the gRPC frame and the WriteRawRequest
 * inside it (unpacked again with protobuf-c), what is taken from the reply's
 * grpc-status, grpc-message and Retry-After values, grpc-message decoding,
 * grpc-timeout, and how replies and transport errors are classified. Reading
 * those values from real headers and trailers (libcurl's header API) is the
 * exchange with a real gRPC server in tests/integration/test_parca.py.
 */
#include "base/compat.h"

#include "cmocka_wrap.h"
#include "test_util.h"

#include "base/alloc.h"
#include "base/labels.h"
#include "config/relabel.h"
#include "exporters/parca/parca.h"
#include "profilestore.pb-c.h"

/* "now" for Retry-After dates: Wed, 21 Oct 2015 07:28:00 GMT */
#define NOW (1445412480ll * 1000000000ll)

static const uint8_t fake_pprof[] = {0x1f, 0x8b, 0x08, 0x00, 0x01, 0x02, 0x03, 0x00, 0xff};

static void test_parca__frame_round_trips_through_protobuf_c(void **state)
{
    (void)state;
    struct labels ls;
    labels_init(&ls);
    assert_int_equal(labels_set(&ls, "__name__", "process_cpu"), 0);
    assert_int_equal(labels_set(&ls, "service_name", "shop"), 0);
    assert_int_equal(labels_set(&ls, "job", "web"), 0);
    struct push_request r = {.labels = &ls, .pprof = fake_pprof, .len = sizeof(fake_pprof)};

    uint8_t *frame = NULL;
    size_t len = 0;
    assert_int_equal(parca_encode(&r, &frame, &len), 0);
    assert_true(len > 5);
    assert_int_equal(frame[0], 0); /* not compressed */
    size_t mlen =
        (size_t)frame[1] << 24 | (size_t)frame[2] << 16 | (size_t)frame[3] << 8 | frame[4];
    assert_int_equal(mlen, len - 5);

    Parca__Profilestore__V1alpha1__WriteRawRequest *req =
        parca__profilestore__v1alpha1__write_raw_request__unpack(NULL, mlen, frame + 5);
    assert_non_null(req);
    assert_true(req->normalized);
    assert_int_equal(req->n_series, 1);
    Parca__Profilestore__V1alpha1__RawProfileSeries *s = req->series[0];
    assert_non_null(s->labels);
    assert_int_equal(s->labels->n_labels, 3);
    /* the set's order: sorted by name */
    assert_string_equal(s->labels->labels[0]->name, "__name__");
    assert_string_equal(s->labels->labels[0]->value, "process_cpu");
    assert_string_equal(s->labels->labels[1]->name, "job");
    assert_string_equal(s->labels->labels[1]->value, "web");
    assert_string_equal(s->labels->labels[2]->name, "service_name");
    assert_string_equal(s->labels->labels[2]->value, "shop");
    assert_int_equal(s->n_samples, 1);
    assert_int_equal(s->samples[0]->raw_profile.len, sizeof(fake_pprof));
    assert_memory_equal(s->samples[0]->raw_profile.data, fake_pprof, sizeof(fake_pprof));
    assert_int_equal(s->samples[0]->n_executable_info, 0);
    parca__profilestore__v1alpha1__write_raw_request__free_unpacked(req, NULL);
    alloc_free(frame);
    labels_release(&ls);
}

/* The exact bytes for a tiny request: field numbers and nesting as Parca's schema has them. */
static void test_parca__frame_bytes_follow_the_schema(void **state)
{
    (void)state;
    struct labels ls;
    labels_init(&ls);
    assert_int_equal(labels_set(&ls, "a", "b"), 0);
    const uint8_t prof[] = {0xaa};
    struct push_request r = {.labels = &ls, .pprof = prof, .len = 1};
    const uint8_t want[] = {
        0x00, 0x00, 0x00, 0x00, 0x13,      /* frame: flag 0, length 19 */
        0x12, 0x0f,                        /* series (2) */
        0x0a, 0x08,                        /*   labels (1): LabelSet */
        0x0a, 0x06,                        /*     labels (1): Label */
        0x0a, 0x01, 'a',  0x12, 0x01, 'b', /*       name (1), value (2) */
        0x12, 0x03, 0x0a, 0x01, 0xaa,      /*   samples (2): raw_profile (1) */
        0x18, 0x01,                        /* normalized (3) = true */
    };
    uint8_t *frame = NULL;
    size_t len = 0;
    assert_int_equal(parca_encode(&r, &frame, &len), 0);
    assert_int_equal(len, sizeof(want));
    assert_memory_equal(frame, want, sizeof(want));
    alloc_free(frame);
    labels_release(&ls);
}

static void test_parca__encode_without_labels(void **state)
{
    (void)state;
    struct push_request r = {.labels = NULL, .pprof = fake_pprof, .len = sizeof(fake_pprof)};
    uint8_t *frame = NULL;
    size_t len = 0;
    assert_int_equal(parca_encode(&r, &frame, &len), 0);
    Parca__Profilestore__V1alpha1__WriteRawRequest *req =
        parca__profilestore__v1alpha1__write_raw_request__unpack(NULL, len - 5, frame + 5);
    assert_non_null(req);
    assert_int_equal(req->n_series, 1);
    assert_true(req->series[0]->labels == NULL || req->series[0]->labels->n_labels == 0);
    parca__profilestore__v1alpha1__write_raw_request__free_unpacked(req, NULL);
    alloc_free(frame);
}

static void test_parca__encode_fails_cleanly_without_memory(void **state)
{
    (void)state;
    struct labels ls;
    labels_init(&ls);
    assert_int_equal(labels_set(&ls, "__name__", "wall"), 0);
    struct push_request r = {.labels = &ls, .pprof = fake_pprof, .len = sizeof(fake_pprof)};
    uint8_t *frame = NULL;
    size_t len = 0;

    alloc_fail_nth(0);
    assert_int_equal(parca_encode(&r, &frame, &len), 0);
    alloc_free(frame);
    uint64_t n = alloc_fail_nth(0);
    assert_true(n >= 2);
    for (uint64_t i = 1; i <= n; i++) {
        size_t before = alloc_in_use();
        alloc_fail_nth(i);
        assert_int_equal(parca_encode(&r, &frame, &len), -ENOMEM);
        assert_null(frame);
        assert_int_equal(len, 0);
        assert_int_equal(alloc_in_use(), before);
    }
    alloc_fail_nth(0);
    labels_release(&ls);
}

static void test_parca__grpc_status_and_message_from_reply_values(void **state)
{
    (void)state;
    struct parca_reply rep;
    parca_reply_init(&rep);
    assert_int_equal(rep.grpc_status, -1);
    assert_false(rep.grpc_message_seen);
    /* a reply without any of them */
    parca_reply_values(&rep, NULL, NULL, NULL);
    assert_int_equal(rep.grpc_status, -1);
    assert_false(rep.grpc_message_seen);
    assert_string_equal(rep.retry_after, "");
    /* OK with an empty message */
    parca_reply_values(&rep, "0", "", NULL);
    assert_int_equal(rep.grpc_status, 0);
    assert_true(rep.grpc_message_seen);
    assert_string_equal(rep.grpc_message, "");
    /* a percent-encoded message */
    parca_reply_init(&rep);
    parca_reply_values(&rep, "14", "try%20again%20later", NULL);
    assert_int_equal(rep.grpc_status, 14);
    assert_string_equal(rep.grpc_message, "try again later");
}

static void test_parca__unparsable_grpc_status_is_unknown(void **state)
{
    (void)state;
    static const char *const bad[] = {"1x", "", "99999", "-1", "+5", " 3", "0x1"};
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(bad); i++) {
        struct parca_reply rep;
        parca_reply_init(&rep);
        parca_reply_values(&rep, bad[i], NULL, NULL);
        assert_int_equal(rep.grpc_status, 2);
    }
    struct parca_reply rep;
    parca_reply_init(&rep);
    parca_reply_values(&rep, "9999", NULL, NULL);
    assert_int_equal(rep.grpc_status, 9999);
}

static void test_parca__retry_after_is_kept_whole(void **state)
{
    (void)state;
    struct parca_reply rep;
    parca_reply_init(&rep);
    parca_reply_values(&rep, NULL, NULL, "7");
    assert_string_equal(rep.retry_after, "7");
    parca_reply_values(&rep, NULL, NULL, "Wed, 21 Oct 2015 07:28:00 GMT");
    assert_string_equal(rep.retry_after, "Wed, 21 Oct 2015 07:28:00 GMT");
    /* too long to be a delay or a date: none */
    char longer[sizeof(rep.retry_after) + 1];
    memset(longer, '1', sizeof(longer) - 1);
    longer[sizeof(longer) - 1] = '\0';
    parca_reply_values(&rep, NULL, NULL, longer);
    assert_string_equal(rep.retry_after, "");
    parca_reply_values(&rep, NULL, NULL, "3");
    parca_reply_values(&rep, NULL, NULL, NULL);
    assert_string_equal(rep.retry_after, "");
}

static void test_parca__percent_decodes_grpc_message(void **state)
{
    (void)state;
    char out[64];
    const char *in = "bad%20label%3A%20%22x%22";
    assert_int_equal(parca_percent_decode(in, strlen(in), out, sizeof(out)), 14);
    assert_string_equal(out, "bad label: \"x\"");
    in = "%E2%82%AC%e2%82%ac";
    parca_percent_decode(in, strlen(in), out, sizeof(out));
    assert_string_equal(out, "\xe2\x82\xac\xe2\x82\xac");
    /* malformed escapes are kept as they are */
    in = "100% sure %zz %4";
    parca_percent_decode(in, strlen(in), out, sizeof(out));
    assert_string_equal(out, "100% sure %zz %4");
    /* control characters never reach the log */
    in = "a%0Ab%00c%1Bd";
    parca_percent_decode(in, strlen(in), out, sizeof(out));
    assert_string_equal(out, "a b?c?d");
    /* decoding stops at the length given, not at a NUL */
    parca_percent_decode("abcdef", 3, out, sizeof(out));
    assert_string_equal(out, "abc");
}

static void test_parca__percent_decode_cuts_at_a_character_boundary(void **state)
{
    (void)state;
    char out[5];
    const char *in = "ab%E2%82%ACcd";
    /* room for 4 bytes: "ab" and the first two of the euro sign's three */
    assert_int_equal(parca_percent_decode(in, strlen(in), out, sizeof(out)), 2);
    assert_string_equal(out, "ab");
    char six[6];
    assert_int_equal(parca_percent_decode(in, strlen(in), six, sizeof(six)), 5);
    assert_string_equal(six, "ab\xe2\x82\xac");
    char one[1];
    assert_int_equal(parca_percent_decode(in, strlen(in), one, sizeof(one)), 0);
    assert_string_equal(one, "");
    assert_int_equal(parca_percent_decode(in, strlen(in), one, 0), 0);
}

static void test_parca__body_is_capped_and_printable(void **state)
{
    (void)state;
    struct parca_reply rep;
    parca_reply_init(&rep);
    char big[2000];
    memset(big, 'x', sizeof(big));
    big[0] = '<';
    big[1] = '\n';
    parca_reply_body(&rep, big, sizeof(big));
    parca_reply_body(&rep, big, sizeof(big));
    assert_int_equal(rep.body_len, PARCA_BODY_KEEP);
    assert_int_equal(strlen(rep.body), PARCA_BODY_KEEP);
    assert_memory_equal(rep.body, "< xx", 4);
}

static void test_parca__grpc_timeout_format(void **state)
{
    (void)state;
    char buf[16];
    static const struct {
        uint64_t ns;
        const char *want;
    } cases[] = {
        {10000000000ull, "10S"},
        {1500000000ull, "1500m"},
        {120000000000ull, "2M"},
        {3600000000000ull, "1H"},
        {1ull, "1n"},
        {99999999ull, "99999999n"},
        {123456789012ull, "123457m"},
        {250000ull, "250u"},
        {UINT64_MAX, "5124096H"},
    };
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(cases); i++) {
        assert_int_equal(parca_grpc_timeout(cases[i].ns, buf, sizeof(buf)), 0);
        assert_string_equal(buf, cases[i].want);
    }
    assert_int_equal(parca_grpc_timeout(0, buf, sizeof(buf)), -EINVAL);
    assert_int_equal(parca_grpc_timeout(10000000000ull, buf, 3), -ENOSPC);
}

static void test_parca__http_status_mapping(void **state)
{
    (void)state;
    assert_int_equal(parca_http_to_grpc(400), 13);
    assert_int_equal(parca_http_to_grpc(401), 16);
    assert_int_equal(parca_http_to_grpc(403), 7);
    assert_int_equal(parca_http_to_grpc(404), 12);
    assert_int_equal(parca_http_to_grpc(429), 14);
    assert_int_equal(parca_http_to_grpc(431), 13);
    assert_int_equal(parca_http_to_grpc(502), 14);
    assert_int_equal(parca_http_to_grpc(503), 14);
    assert_int_equal(parca_http_to_grpc(504), 14);
    assert_int_equal(parca_http_to_grpc(200), 2);
    assert_int_equal(parca_http_to_grpc(500), 2);
    assert_int_equal(parca_http_to_grpc(0), 2);
}

static void reply(struct parca_reply *rep, long http, int grpc, const char *msg)
{
    parca_reply_init(rep);
    rep->http_status = http;
    rep->grpc_status = grpc;
    if (msg) {
        snprintf(rep->grpc_message, sizeof(rep->grpc_message), "%s", msg);
        rep->grpc_message_seen = true;
    }
}

static void test_parca__classifies_grpc_codes(void **state)
{
    (void)state;
    struct parca_reply rep;
    struct push_result res;

    reply(&rep, 200, 0, NULL);
    parca_classify(CURLE_OK, "", CURL_HTTP_VERSION_2_0, &rep, NOW, &res);
    assert_int_equal(res.outcome, PUSH_OK);
    assert_string_equal(res.code, "grpc_0");
    assert_string_equal(res.message, "");

    static const int retried[] = {4, 8, 10, 14};
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(retried); i++) {
        reply(&rep, 200, retried[i], "later");
        parca_classify(CURLE_OK, "", CURL_HTTP_VERSION_2_0, &rep, NOW, &res);
        assert_int_equal(res.outcome, PUSH_RETRY);
    }
    assert_string_equal(res.code, "grpc_14");
    assert_string_equal(res.message, "UNAVAILABLE: later");

    static const int dropped[] = {1, 2, 3, 5, 6, 7, 9, 11, 12, 13, 15, 16, 17};
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(dropped); i++) {
        reply(&rep, 200, dropped[i], NULL);
        parca_classify(CURLE_OK, "", CURL_HTTP_VERSION_2_0, &rep, NOW, &res);
        assert_int_equal(res.outcome, PUSH_DROP);
    }
    assert_string_equal(res.code, "grpc_17");
    assert_string_equal(res.message, "code 17");

    reply(&rep, 200, 3, "missing __name__ label");
    parca_classify(CURLE_OK, "", CURL_HTTP_VERSION_2_0, &rep, NOW, &res);
    assert_int_equal(res.outcome, PUSH_DROP);
    assert_string_equal(res.code, "grpc_3");
    assert_string_equal(res.message, "INVALID_ARGUMENT: missing __name__ label");
}

static void test_parca__classifies_replies_without_grpc_status(void **state)
{
    (void)state;
    struct parca_reply rep;
    struct push_result res;

    reply(&rep, 503, -1, NULL);
    parca_reply_body(&rep, "no healthy upstream", 19);
    snprintf(rep.retry_after, sizeof(rep.retry_after), "3");
    parca_classify(CURLE_OK, "", CURL_HTTP_VERSION_2_0, &rep, NOW, &res);
    assert_int_equal(res.outcome, PUSH_RETRY);
    assert_string_equal(res.code, "grpc_14");
    assert_string_equal(res.message, "UNAVAILABLE (HTTP 503, no grpc-status): no healthy upstream");
    assert_int_equal(res.retry_after_ns, 3000000000ull);
    /* an HTTP-date: ten seconds from now */
    snprintf(rep.retry_after, sizeof(rep.retry_after), "Wed, 21 Oct 2015 07:28:10 GMT");
    parca_classify(CURLE_OK, "", CURL_HTTP_VERSION_2_0, &rep, NOW, &res);
    assert_int_equal(res.retry_after_ns, 10000000000ull);

    /* a non-200 status wins over a grpc-status */
    reply(&rep, 401, 0, NULL);
    parca_classify(CURLE_OK, "", CURL_HTTP_VERSION_2_0, &rep, NOW, &res);
    assert_int_equal(res.outcome, PUSH_DROP);
    assert_string_equal(res.code, "grpc_16");

    /* 200 without grpc-status: UNKNOWN, and an HTTP/1.1 reply says so */
    reply(&rep, 200, -1, NULL);
    parca_classify(CURLE_OK, "", CURL_HTTP_VERSION_1_1, &rep, NOW, &res);
    assert_int_equal(res.outcome, PUSH_DROP);
    assert_string_equal(res.code, "grpc_2");
    assert_non_null(strstr(res.message, "HTTP/1.x"));

    /* Retry-After does not matter for what is not retried */
    reply(&rep, 404, -1, NULL);
    snprintf(rep.retry_after, sizeof(rep.retry_after), "3");
    parca_classify(CURLE_OK, "", CURL_HTTP_VERSION_2_0, &rep, NOW, &res);
    assert_int_equal(res.outcome, PUSH_DROP);
    assert_string_equal(res.code, "grpc_12");
    assert_int_equal(res.retry_after_ns, 0);
}

static void test_parca__transport_errors_are_retried(void **state)
{
    (void)state;
    struct parca_reply rep;
    struct push_result res;
    reply(&rep, 0, -1, NULL);

    parca_classify(CURLE_OPERATION_TIMEDOUT, "Operation timed out after 10000 ms", 0, &rep, NOW,
                   &res);
    assert_int_equal(res.outcome, PUSH_RETRY);
    assert_string_equal(res.code, "timeout");
    assert_string_equal(res.message, "Operation timed out after 10000 ms");

    parca_classify(CURLE_COULDNT_CONNECT, "", 0, &rep, NOW, &res);
    assert_int_equal(res.outcome, PUSH_RETRY);
    assert_string_equal(res.code, "connect");
    assert_string_equal(res.message, curl_easy_strerror(CURLE_COULDNT_CONNECT));

    parca_classify(CURLE_PEER_FAILED_VERIFICATION, NULL, 0, &rep, NOW, &res);
    assert_int_equal(res.outcome, PUSH_RETRY);
    assert_string_equal(res.code, "tls");

    /* even after a grpc-status: the call did not complete */
    reply(&rep, 200, 0, NULL);
    parca_classify(CURLE_HTTP2_STREAM, "", CURL_HTTP_VERSION_2_0, &rep, NOW, &res);
    assert_int_equal(res.outcome, PUSH_RETRY);
    assert_string_equal(res.code, "curl_92");
    parca_classify(CURLE_RECV_ERROR, "", CURL_HTTP_VERSION_2_0, &rep, NOW, &res);
    assert_int_equal(res.outcome, PUSH_RETRY);
    assert_string_equal(res.code, "recv");
}

static struct config_remote_write rw_for(const char *url)
{
    struct config_remote_write rw = {
        .name = (char *)"parca-0",
        .type = CONFIG_PUSH_PARCA,
        .url = (char *)url,
        .remote_timeout_ns = 10000000000ull,
        .queue_max_profiles = 10,
        .queue_max_bytes = 1 << 20,
        .min_backoff_ns = 500000000ull,
        .max_backoff_ns = 5000000000ull,
        .max_retries = 10,
    };
    char err[128];
    assert_int_equal(relabel_compile(NULL, 0, &rw.write_relabel, err, sizeof(err)), 0);
    return rw;
}

static void test_parca__new_refuses_other_schemes(void **state)
{
    (void)state;
    static const char *const bad[] = {"ftp://127.0.0.1:7070", "127.0.0.1:7070", "h2c://x"};
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(bad); i++) {
        struct config_remote_write rw = rw_for(bad[i]);
        struct exporter ex = {0};
        assert_int_equal(parca_exporter_new(&rw, NULL, &ex), -EINVAL);
        assert_null(ex.ops);
        /* not taken: still the caller's */
        assert_non_null(rw.write_relabel);
        relabel_free(rw.write_relabel);
    }
}

static void test_parca__new_and_free(void **state)
{
    (void)state;
    static const char *const good[] = {"http://127.0.0.1:7070", "HTTPS://parca.example:443/base"};
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(good); i++) {
        struct config_remote_write rw = rw_for(good[i]);
        struct exporter ex = {0};
        size_t before = alloc_in_use();
        assert_int_equal(parca_exporter_new(&rw, NULL, &ex), 0);
        /* copied by the engine: the caller's rules stay the caller's */
        assert_non_null(rw.write_relabel);
        relabel_free(rw.write_relabel);
        assert_string_equal(ex.ops->kind, "parca");
        ex.ops->shutdown(ex.ctx, 0);
        ex.ops->free(ex.ctx);
        assert_true(alloc_in_use() <= before);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parca__frame_round_trips_through_protobuf_c),
        cmocka_unit_test(test_parca__frame_bytes_follow_the_schema),
        cmocka_unit_test(test_parca__encode_without_labels),
        cmocka_unit_test(test_parca__encode_fails_cleanly_without_memory),
        cmocka_unit_test(test_parca__grpc_status_and_message_from_reply_values),
        cmocka_unit_test(test_parca__unparsable_grpc_status_is_unknown),
        cmocka_unit_test(test_parca__retry_after_is_kept_whole),
        cmocka_unit_test(test_parca__percent_decodes_grpc_message),
        cmocka_unit_test(test_parca__percent_decode_cuts_at_a_character_boundary),
        cmocka_unit_test(test_parca__body_is_capped_and_printable),
        cmocka_unit_test(test_parca__grpc_timeout_format),
        cmocka_unit_test(test_parca__http_status_mapping),
        cmocka_unit_test(test_parca__classifies_grpc_codes),
        cmocka_unit_test(test_parca__classifies_replies_without_grpc_status),
        cmocka_unit_test(test_parca__transport_errors_are_retried),
        cmocka_unit_test(test_parca__new_refuses_other_schemes),
        cmocka_unit_test(test_parca__new_and_free),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
