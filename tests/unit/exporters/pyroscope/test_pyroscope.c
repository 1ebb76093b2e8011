/* SPDX-License-Identifier: MIT */
/* Tests for exporters/pyroscope/pyroscope.c: the /ingest name, Connect error
 * bodies and their retry/drop decision, and construction and teardown. (The
 * wire protocol is exercised against a receiver that follows the upstream API
 * in tests/integration/test_pyroscope.py.) */
#include "base/compat.h"

#include <curl/curl.h>

#include "cmocka_wrap.h"

#include "exporters/pyroscope/pyroscope.h"

static void test_pyroscope__ingest_name(void **state)
{
    (void)state;
    struct labels ls = {0};
    char buf[256];
    assert_int_equal(labels_set(&ls, "__name__", "process_cpu"), 0);
    assert_int_equal(labels_set(&ls, "service_name", "my app:v2"), 0);
    assert_int_equal(labels_set(&ls, "job", "web"), 0);
    assert_int_equal(labels_set(&ls, "pod", "a,b{c}=d"), 0);
    assert_int_equal(pyroscope_ingest_name(&ls, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "my_app_v2{job=web,pod=a_b_c__d}");
    assert_int_equal(pyroscope_ingest_name(&ls, buf, 12), -ENAMETOOLONG);
    labels_del(&ls, "service_name");
    assert_int_equal(pyroscope_ingest_name(&ls, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "process_cpu{job=web,pod=a_b_c__d}");
    labels_release(&ls);
    assert_int_equal(pyroscope_ingest_name(&ls, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "unknown_service{}");
}

static void test_pyroscope__connect_errors_decide_retry(void **state)
{
    (void)state;
    static const struct {
        const char *body;
        enum push_outcome before, after;
        const char *message;
    } cases[] = {
        {"{\"code\":\"invalid_argument\",\"message\":\"bad __name__\"}", PUSH_DROP, PUSH_DROP,
         "invalid_argument: bad __name__"},
        {"{\"code\":\"unavailable\",\"message\":\"ingester down\"}", PUSH_RETRY, PUSH_RETRY,
         "unavailable: ingester down"},
        /* 409 would be dropped by status; Connect's aborted is retryable */
        {"{\"code\":\"aborted\",\"message\":\"x\"}", PUSH_DROP, PUSH_RETRY, "aborted: x"},
        /* 501 would be retried by status; unimplemented is permanent */
        {"{\"code\":\"unimplemented\"}", PUSH_RETRY, PUSH_DROP, "unimplemented: "},
        {"{\"code\":8,\"message\":\"rate\\nlimited\"}", PUSH_RETRY, PUSH_RETRY,
         "resource_exhausted: rate limited"},
        {"{\"code\":3}", PUSH_DROP, PUSH_DROP, "invalid_argument: "},
        /* not a Connect error: the HTTP classification stands */
        {"upstream connect error", PUSH_RETRY, PUSH_RETRY, "orig"},
        {"{\"message\":\"no code\"}", PUSH_DROP, PUSH_DROP, "orig"},
        {"{\"code\":99}", PUSH_DROP, PUSH_DROP, "orig"},
        {"{\"code\":\"unavail", PUSH_RETRY, PUSH_RETRY, "orig"},
        {"[]", PUSH_DROP, PUSH_DROP, "orig"},
    };
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(cases); i++) {
        struct push_result r = {.outcome = cases[i].before, .retry_after_ns = 5};
        snprintf(r.message, sizeof(r.message), "orig");
        pyroscope_connect_error(cases[i].body, &r);
        assert_int_equal(r.outcome, cases[i].after);
        assert_string_equal(r.message, cases[i].message);
    }
    struct push_result r = {.outcome = PUSH_RETRY};
    pyroscope_connect_error(NULL, &r);
    assert_int_equal(r.outcome, PUSH_RETRY);
}

static void test_pyroscope__new_and_free(void **state)
{
    (void)state;
    struct config_remote_write rw = {
        .name = (char *)"pyro",
        .url = (char *)"http://127.0.0.1:1/",
        .remote_timeout_ns = 1000000000ull,
        .queue_max_profiles = 10,
        .queue_max_bytes = 1 << 20,
        .min_backoff_ns = 1000000ull,
        .max_backoff_ns = 2000000ull,
        .max_retries = 1,
    };
    struct exporter ex = {0};
    assert_int_equal(pyroscope_exporter_new(&rw, NULL, &ex), 0);
    assert_string_equal(ex.ops->kind, "pyroscope");
    assert_true(ex.ops->wants_plain);
    ex.ops->shutdown(ex.ctx, 0);
    ex.ops->free(ex.ctx);
    rw.url = NULL;
    assert_int_equal(pyroscope_exporter_new(&rw, NULL, &ex), -EINVAL);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pyroscope__ingest_name),
        cmocka_unit_test(test_pyroscope__connect_errors_decide_retry),
        cmocka_unit_test(test_pyroscope__new_and_free),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
