/* SPDX-License-Identifier: MIT */
/*
 * Tests for agent/discovery/kube_stream.c: watch events split at every byte
 * boundary, the size and depth bounds (an oversize event or list item passed
 * over and counted, the stream going on), memory that does not follow the
 * input, garbage, 410 Gone, and PodList bodies delivered pod by pod.
 */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include "base/alloc.h"
#include "base/buf.h"
#include "discovery/kube_stream.h"
#include "fixture.h"

/* What the callback saw, as one line per event: "type rv code". */
struct seen {
    struct buf log;
    size_t n;
    int stop_at; /* stop (return 7) at this event, 1-based; 0 never */
};

static int record_event(void *arg, const struct kube_event *ev)
{
    struct seen *s = arg;
    s->n++;
    const char *name = ev->pod ? ev->pod->name : "";
    assert_int_equal(buf_addf(&s->log, "%s %s %.32s %d\n", kube_event_type_name(ev->type),
                              ev->resource_version ? ev->resource_version : "-", name, ev->code),
                     0);
    return s->stop_at && s->n == (size_t)s->stop_at ? 7 : 0;
}

static void seen_init(struct seen *s)
{
    memset(s, 0, sizeof(*s));
    buf_init(&s->log, 1 << 20);
}

static const char stream_text[] =
    "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\",\"uid\":\"u1\","
    "\"resourceVersion\":\"10\"}}}\n"
    "{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\",\"uid\":"
    "\"u1\",\"resourceVersion\":\"11\",\"labels\":{\"x\":\"\\u00e9\\\"\"}}}}\r\n"
    "\n"
    "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"resourceVersion\":"
    "\"12\"}}}\n"
    "{\"type\":\"DELETED\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\",\"uid\":"
    "\"u1\",\"resourceVersion\":\"13\"}}}\n"
    "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":"
    "\"Failure\",\"message\":\"internal\",\"code\":500}}\n"
    "{\"type\":\"SOMETHING\",\"object\":{}}\n"
    "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},"
    "\"status\":\"Failure\",\"message\":\"too old resource version: 5 (13)\",\"reason\":"
    "\"Expired\",\"code\":410}}\n";

static const char stream_expect[] = "added 10 a 0\n"
                                    "modified 11 a 0\n"
                                    "bookmark 12  0\n"
                                    "deleted 13 a 0\n"
                                    "error -  500\n"
                                    "unknown -  0\n"
                                    "gone -  410\n";

static void test_kube_stream__decodes_every_type(void **state)
{
    (void)state;
    struct kube_stream *s = NULL;
    assert_int_equal(kube_stream_new(KUBE_STREAM_WATCH, &s), 0);
    struct seen seen;
    seen_init(&seen);
    assert_int_equal(kube_stream_feed(s, stream_text, strlen(stream_text), record_event, &seen), 0);
    assert_string_equal(buf_str(&seen.log), stream_expect);
    assert_true(kube_stream_idle(s));
    buf_release(&seen.log);
    kube_stream_free(s);
}

static void test_kube_stream__chunked_at_every_boundary(void **state)
{
    (void)state;
    size_t len = strlen(stream_text);
    struct kube_stream *s = NULL;
    assert_int_equal(kube_stream_new(KUBE_STREAM_WATCH, &s), 0);
    /* two pieces, cut at every position */
    for (size_t cut = 0; cut <= len; cut++) {
        struct seen seen;
        seen_init(&seen);
        kube_stream_reset(s);
        assert_int_equal(kube_stream_feed(s, stream_text, cut, record_event, &seen), 0);
        assert_int_equal(kube_stream_feed(s, stream_text + cut, len - cut, record_event, &seen), 0);
        assert_string_equal(buf_str(&seen.log), stream_expect);
        buf_release(&seen.log);
    }
    /* one byte at a time */
    struct seen seen;
    seen_init(&seen);
    kube_stream_reset(s);
    for (size_t i = 0; i < len; i++)
        assert_int_equal(kube_stream_feed(s, stream_text + i, 1, record_event, &seen), 0);
    assert_string_equal(buf_str(&seen.log), stream_expect);
    assert_true(kube_stream_idle(s));
    buf_release(&seen.log);
    /* cut short: not idle */
    kube_stream_reset(s);
    assert_int_equal(kube_stream_feed(s, stream_text, 20, NULL, NULL), 0);
    assert_false(kube_stream_idle(s));
    assert_int_equal(kube_stream_pending(s), 20);
    kube_stream_free(s);
}

static void test_kube_stream__callback_stops_the_feed(void **state)
{
    (void)state;
    struct kube_stream *s = NULL;
    assert_int_equal(kube_stream_new(KUBE_STREAM_WATCH, &s), 0);
    struct seen seen;
    seen_init(&seen);
    seen.stop_at = 2;
    assert_int_equal(kube_stream_feed(s, stream_text, strlen(stream_text), record_event, &seen), 7);
    assert_int_equal(seen.n, 2);
    buf_release(&seen.log);
    kube_stream_free(s);
}

/* An ADDED event whose pod name is @a name_len bytes of 'a'. */
static char *big_event(size_t name_len, size_t *len)
{
    struct buf b;
    buf_init(&b, name_len + 1024);
    assert_int_equal(buf_adds(&b, "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\""), 0);
    for (size_t i = 0; i < name_len; i++)
        assert_int_equal(buf_addc(&b, 'a'), 0);
    assert_int_equal(buf_adds(&b, "\",\"uid\":\"u\"}}}\n"), 0);
    return buf_take(&b, len);
}

static void test_kube_stream__oversize_event_is_passed_over(void **state)
{
    (void)state;
    struct kube_stream *s = NULL;
    assert_int_equal(kube_stream_new(KUBE_STREAM_WATCH, &s), 0);
    size_t mem = kube_stream_memory(s);
    size_t len;
    /* just under the limit: fine (a name that long is not kept: over_limit) */
    char *ok = big_event(KUBE_MAX_EVENT_BYTES - 100, &len);
    assert_true(len <= KUBE_MAX_EVENT_BYTES);
    struct seen seen;
    seen_init(&seen);
    for (size_t off = 0; off < len; off += 65536) {
        size_t n = len - off < 65536 ? len - off : 65536;
        assert_int_equal(kube_stream_feed(s, ok + off, n, record_event, &seen), 0);
    }
    assert_int_equal(seen.n, 1);
    alloc_free(ok);
    /* over it: scanned to its end, not passed on, counted; the stream goes on */
    char *big = big_event(KUBE_MAX_EVENT_BYTES, &len);
    for (size_t off = 0; off < len; off += 65536) {
        size_t n = len - off < 65536 ? len - off : 65536;
        assert_int_equal(kube_stream_feed(s, big + off, n, record_event, &seen), 0);
        assert_int_equal(kube_stream_memory(s), mem);
    }
    assert_int_equal(seen.n, 1);
    struct kube_stream_counts c;
    kube_stream_counts(s, &c);
    assert_int_equal(c.refused_event, 1);
    buf_reset(&seen.log);
    seen.n = 0;
    assert_int_equal(kube_stream_feed(s, stream_text, strlen(stream_text), record_event, &seen), 0);
    assert_string_equal(buf_str(&seen.log), stream_expect);
    /* a whole oversize event in one call, between two others */
    kube_stream_reset(s);
    assert_int_equal(kube_stream_feed(s, stream_text, strlen(stream_text), NULL, NULL), 0);
    assert_int_equal(kube_stream_feed(s, big, len, NULL, NULL), 0);
    assert_int_equal(kube_stream_feed(s, stream_text, strlen(stream_text), NULL, NULL), 0);
    kube_stream_counts(s, &c);
    assert_int_equal(c.refused_event, 2);
    alloc_free(big);
    buf_release(&seen.log);
    kube_stream_free(s);
}

/*
 * What a hostile server sends costs no memory: a 3 MiB managedFields of
 * [{},{},...] inside the pod, and a container with 10k env vars: only the
 * record's fields are kept.
 */
static void test_kube_stream__memory_does_not_follow_the_input(void **state)
{
    (void)state;
    struct kube_stream *s = NULL;
    assert_int_equal(kube_stream_new(KUBE_STREAM_WATCH, &s), 0);
    size_t mem = kube_stream_memory(s);
    size_t in_use = alloc_in_use();
    struct seen seen;
    seen_init(&seen);
    const char *head = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"n\",\"uid\":\"u\","
                       "\"managedFields\":[";
    assert_int_equal(kube_stream_feed(s, head, strlen(head), record_event, &seen), 0);
    size_t before_pod = alloc_in_use();
    static char chunk[3 * 21845];
    for (size_t i = 0; i < sizeof(chunk); i += 3)
        memcpy(chunk + i, "{},", 3);
    for (int i = 0; i < 48; i++) {
        assert_int_equal(kube_stream_feed(s, chunk, sizeof(chunk), record_event, &seen), 0);
        assert_int_equal(alloc_in_use(), before_pod);
    }
    const char *mid = "{}]},\"spec\":{\"containers\":[{\"name\":\"app\",\"env\":[";
    assert_int_equal(kube_stream_feed(s, mid, strlen(mid), record_event, &seen), 0);
    char env[128];
    for (int i = 0; i < 10000; i++) {
        int n = snprintf(env, sizeof(env), "%s{\"name\":\"VAR_%d\",\"value\":\"%064d\"}",
                         i ? "," : "", i, i);
        assert_int_equal(kube_stream_feed(s, env, (size_t)n, record_event, &seen), 0);
    }
    assert_true(alloc_in_use() <= before_pod + 8192);
    const char *tail = "]}]}}}\n";
    assert_int_equal(kube_stream_feed(s, tail, strlen(tail), record_event, &seen), 0);
    assert_string_equal(buf_str(&seen.log), "added - n 0\n");
    buf_release(&seen.log);
    assert_int_equal(kube_stream_memory(s), mem);
    assert_int_equal(alloc_in_use(), in_use);
    kube_stream_free(s);
}

static char *nested_event(int depth)
{
    struct buf b;
    buf_init(&b, 2 * (size_t)depth + 4096);
    assert_int_equal(buf_adds(&b, "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"uid\":\"u\"},"
                                  "\"x\":"),
                     0);
    for (int i = 0; i < depth; i++)
        assert_int_equal(buf_addc(&b, '['), 0);
    for (int i = 0; i < depth; i++)
        assert_int_equal(buf_addc(&b, ']'), 0);
    assert_int_equal(buf_adds(&b, "}}\n"), 0);
    return buf_take(&b, NULL);
}

static void test_kube_stream__depth_is_bounded(void **state)
{
    (void)state;
    struct kube_stream *s = NULL;
    assert_int_equal(kube_stream_new(KUBE_STREAM_WATCH, &s), 0);
    /* the event object and "object" are two levels already */
    char *ok = nested_event(KUBE_MAX_DEPTH - 3);
    struct seen seen;
    seen_init(&seen);
    assert_int_equal(kube_stream_feed(s, ok, strlen(ok), record_event, &seen), 0);
    assert_int_equal(seen.n, 1);
    char *deep = nested_event(KUBE_MAX_DEPTH + 10);
    assert_int_equal(kube_stream_feed(s, deep, strlen(deep), record_event, &seen), -ELOOP);
    assert_int_equal(seen.n, 1);
    char *very = nested_event(100000);
    kube_stream_reset(s);
    assert_int_equal(kube_stream_feed(s, very, strlen(very), record_event, &seen), -ELOOP);
    alloc_free(ok);
    alloc_free(deep);
    alloc_free(very);
    buf_release(&seen.log);
    kube_stream_free(s);
}

static void test_kube_stream__garbage_is_an_error(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "hello\n",
        "[1,2]\n",
        "5\n",
        "null\n",
        "\"str\"\n",
        "{\"type\":5,\"object\":{}}\n",
        "{\"type\":\"ADDED\"}\n",
        "{\"type\":\"ADDED\",\"object\":[]}\n",
        "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{}}}\n",
        "{\"type\":\"ADDED\",\"object\":{\"a\":\"\xff\xfe\"}}\n",
        "{\"type\":\"ADDED\",\"object\":{\"a\":1,}}\n",
        "{\"type\":\"ADDED\" \"object\":{}}\n",
        "}\n",
    };
    struct kube_stream *s = NULL;
    assert_int_equal(kube_stream_new(KUBE_STREAM_WATCH, &s), 0);
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(bad); i++) {
        kube_stream_reset(s);
        struct seen seen;
        seen_init(&seen);
        int rc = kube_stream_feed(s, bad[i], strlen(bad[i]), record_event, &seen);
        if (rc != -EBADMSG)
            fail_msg("case %zu (%s): %d", i, bad[i], rc);
        assert_int_equal(seen.n, 0);
        buf_release(&seen.log);
    }
    /* a list decoder refuses watch feeds and vice versa */
    assert_int_equal(kube_stream_list_feed(s, "{}", 2, NULL, NULL), -EINVAL);
    kube_stream_free(s);
}

static void test_kube_stream__gone_is_distinct(void **state)
{
    (void)state;
    static const char *const gone[] = {
        "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410}}\n",
        "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"reason\":\"Expired\"}}\n",
        "{\"type\":\"ERROR\",\"object\":{\"reason\":\"Gone\",\"code\":\"x\"}}\n",
    };
    struct kube_stream *s = NULL;
    assert_int_equal(kube_stream_new(KUBE_STREAM_WATCH, &s), 0);
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(gone); i++) {
        struct seen seen;
        seen_init(&seen);
        assert_int_equal(kube_stream_feed(s, gone[i], strlen(gone[i]), record_event, &seen), 0);
        assert_int_equal(seen.n, 1);
        assert_true(strncmp(buf_str(&seen.log), "gone ", 5) == 0);
        buf_release(&seen.log);
    }
    /* another code, or no object at all, is a plain error */
    const char *err = "{\"type\":\"ERROR\",\"object\":{\"code\":403,\"reason\":\"Forbidden\"}}\n"
                      "{\"type\":\"ERROR\"}\n";
    struct seen seen;
    seen_init(&seen);
    assert_int_equal(kube_stream_feed(s, err, strlen(err), record_event, &seen), 0);
    assert_string_equal(buf_str(&seen.log), "error -  403\nerror -  0\n");
    buf_release(&seen.log);
    kube_stream_free(s);
}

struct pods_seen {
    size_t n;
    char names[8][32];
};

static int record_pod(void *arg, const struct kube_pod *pod)
{
    struct pods_seen *p = arg;
    if (p->n < 8)
        snprintf(p->names[p->n], sizeof(p->names[0]), "%s", pod ? pod->name : "(not a pod)");
    p->n++;
    return 0;
}

static const char list_text[] =
    "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"4711\","
    "\"continue\":\"eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ\"},\"items\":[{\"metadata\":{\"name\":"
    "\"p1\",\"uid\":\"u1\"}},7,{\"metadata\":{\"name\":\"p2\",\"uid\":\"u2\"}},{\"metadata\":"
    "{\"name\":\"no-uid\"}},[{}]]}\n";

static void test_kube_stream__decodes_a_list(void **state)
{
    (void)state;
    struct pods_seen pods = {0};
    struct kube_list_meta meta;
    assert_int_equal(
        kube_stream_decode_list(list_text, strlen(list_text), record_pod, &pods, &meta), 0);
    assert_int_equal(pods.n, 3);
    assert_string_equal(pods.names[0], "p1");
    assert_string_equal(pods.names[1], "p2");
    assert_string_equal(pods.names[2], "(not a pod)");
    assert_int_equal(meta.skipped, 2);
    assert_int_equal(meta.items, 5);
    assert_string_equal(meta.resource_version, "4711");
    assert_string_equal(meta.cont, "eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ");
    assert_false(meta.has_remaining);
    /* remainingItemCount: an integer, else absent */
    const char *rem = "{\"metadata\":{\"remainingItemCount\":95000},\"items\":[]}";
    assert_int_equal(kube_stream_decode_list(rem, strlen(rem), NULL, NULL, &meta), 0);
    assert_true(meta.has_remaining);
    assert_int_equal(meta.remaining, 95000);
    rem = "{\"metadata\":{\"remainingItemCount\":-1},\"items\":[]}";
    assert_int_equal(kube_stream_decode_list(rem, strlen(rem), NULL, NULL, &meta), 0);
    assert_false(meta.has_remaining);
    assert_int_equal(
        kube_stream_decode_list(list_text, strlen(list_text), record_pod, &pods, &meta), 0);
    /* fed at every boundary: each pod as soon as it is complete */
    size_t len = strlen(list_text);
    const char *p2_end = strstr(list_text, "\"u2\"}}") + 6;
    struct kube_stream *s = NULL;
    assert_int_equal(kube_stream_new(KUBE_STREAM_LIST, &s), 0);
    for (size_t cut = 0; cut <= len; cut++) {
        kube_stream_reset(s);
        memset(&pods, 0, sizeof(pods));
        assert_int_equal(kube_stream_list_feed(s, list_text, cut, record_pod, &pods), 0);
        assert_true(list_text + cut >= p2_end ? pods.n >= 2 : pods.n <= 1);
        assert_int_equal(kube_stream_list_feed(s, list_text + cut, len - cut, record_pod, &pods),
                         0);
        assert_int_equal(kube_stream_list_finish(s, &meta), 0);
        assert_int_equal(pods.n, 3);
    }
    assert_int_equal(kube_stream_feed(s, "{}", 2, NULL, NULL), -EINVAL);
    kube_stream_free(s);
    /* items null or absent: no pods */
    memset(&pods, 0, sizeof(pods));
    const char *empty = "{\"kind\":\"PodList\",\"metadata\":{},\"items\":null}";
    assert_int_equal(kube_stream_decode_list(empty, strlen(empty), record_pod, &pods, &meta), 0);
    assert_int_equal(pods.n, 0);
    assert_string_equal(meta.resource_version, "");
    const char *bare = "{}";
    assert_int_equal(kube_stream_decode_list(bare, 2, record_pod, &pods, &meta), 0);
}

/* A list item over KUBE_MAX_OBJECT_BYTES is passed over; a body over KUBE_MAX_LIST_BYTES ends. */
static void test_kube_stream__list_bounds(void **state)
{
    (void)state;
    struct kube_stream *s = NULL;
    assert_int_equal(kube_stream_new(KUBE_STREAM_LIST, &s), 0);
    size_t mem = kube_stream_memory(s);
    struct pods_seen pods = {0};
    const char *head = "{\"items\":[{\"metadata\":{\"uid\":\"big\",\"name\":\"";
    assert_int_equal(kube_stream_list_feed(s, head, strlen(head), record_pod, &pods), 0);
    static char chunk[1 << 16];
    memset(chunk, 'x', sizeof(chunk));
    for (size_t n = 0; n <= KUBE_MAX_OBJECT_BYTES; n += sizeof(chunk))
        assert_int_equal(kube_stream_list_feed(s, chunk, sizeof(chunk), record_pod, &pods), 0);
    const char *rest = "\"}},{\"metadata\":{\"uid\":\"u2\",\"name\":\"p2\"}}],"
                       "\"metadata\":{\"resourceVersion\":\"9\"}}";
    assert_int_equal(kube_stream_list_feed(s, rest, strlen(rest), record_pod, &pods), 0);
    struct kube_list_meta meta;
    assert_int_equal(kube_stream_list_finish(s, &meta), 0);
    assert_int_equal(pods.n, 1);
    assert_string_equal(pods.names[0], "p2");
    assert_int_equal(meta.items, 2);
    assert_string_equal(meta.resource_version, "9"); /* metadata after items is fine */
    struct kube_stream_counts c;
    kube_stream_counts(s, &c);
    assert_int_equal(c.refused_object, 1);
    assert_int_equal(kube_stream_memory(s), mem);
    /* a body over its bound: -E2BIG, sticky */
    kube_stream_reset(s);
    memset(chunk, ' ', sizeof(chunk));
    assert_int_equal(kube_stream_list_feed(s, "{\"items\":[", 10, NULL, NULL), 0);
    int rc = 0;
    uint64_t fed = 10;
    while (rc == 0 && fed < 2ull * KUBE_MAX_LIST_BYTES) {
        rc = kube_stream_list_feed(s, chunk, sizeof(chunk), NULL, NULL);
        fed += sizeof(chunk);
    }
    assert_int_equal(rc, -E2BIG);
    assert_true(fed > KUBE_MAX_LIST_BYTES && fed <= KUBE_MAX_LIST_BYTES + sizeof(chunk) + 10);
    assert_int_equal(kube_stream_list_feed(s, "]}", 2, NULL, NULL), -E2BIG);
    assert_int_equal(kube_stream_list_finish(s, NULL), -E2BIG);
    kube_stream_free(s);
}

static void test_kube_stream__refuses_bad_lists(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "   ",
        "{\"items\":[]",     /* cut short */
        "{\"items\":{}}",    /* not an array */
        "[]",                /* not an object */
        "{\"items\":[]} {}", /* a second value */
        "{\"items\":[]} x",  /* trailing garbage */
        "{\"items\":[]}5",   /* trailing number, never completed */
        "{\"metadata\":{\"resourceVersion\":7}, \"items\":[]} ]",
    };
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(bad); i++) {
        int rc = kube_stream_decode_list(bad[i], strlen(bad[i]), NULL, NULL, NULL);
        if (rc != -EBADMSG)
            fail_msg("case %zu (%s): %d", i, bad[i], rc);
    }
    /* a resourceVersion of the wrong type is ignored; an over-long one refused */
    const char *wrong = "{\"metadata\":{\"resourceVersion\":7},\"items\":[]}";
    struct kube_list_meta meta;
    assert_int_equal(kube_stream_decode_list(wrong, strlen(wrong), NULL, NULL, &meta), 0);
    assert_string_equal(meta.resource_version, "");
    struct buf b;
    buf_init(&b, 1 << 16);
    assert_int_equal(buf_adds(&b, "{\"metadata\":{\"resourceVersion\":\""), 0);
    for (int i = 0; i < KUBE_MAX_TOKEN_BYTES + 1; i++)
        assert_int_equal(buf_addc(&b, '1'), 0);
    assert_int_equal(buf_adds(&b, "\"},\"items\":[]}"), 0);
    assert_int_equal(kube_stream_decode_list(buf_str(&b), buf_len(&b), NULL, NULL, &meta),
                     -EBADMSG);
    buf_release(&b);
}

static void test_kube_stream__list_of_fixtures(void **state)
{
    (void)state;
    static const char *const files[] = {
        "kube/deployment_containerd.json", "kube/statefulset_crio.json",
        "kube/daemonset_docker.json",      "kube/pending_no_status.json",
        "kube/wrong_types.json",
    };
    struct buf b;
    buf_init(&b, 1 << 20);
    assert_int_equal(buf_adds(&b, "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":"
                                  "\"1\"},\"items\":["),
                     0);
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(files); i++) {
        size_t len = 0;
        uint8_t *f = fixture_load(files[i], &len);
        assert_non_null(f);
        assert_int_equal(buf_add(&b, f, len), 0);
        if (i + 1 < PYPROFD_ARRAY_SIZE(files))
            assert_int_equal(buf_addc(&b, ','), 0);
        alloc_free(f);
    }
    assert_int_equal(buf_adds(&b, "]}"), 0);
    struct pods_seen pods = {0};
    assert_int_equal(kube_stream_decode_list(buf_str(&b), buf_len(&b), record_pod, &pods, NULL), 0);
    assert_int_equal(pods.n, 5);
    assert_string_equal(pods.names[0], "checkout-7d9f8b6c5d-x2kqp");
    buf_release(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kube_stream__decodes_every_type),
        cmocka_unit_test(test_kube_stream__chunked_at_every_boundary),
        cmocka_unit_test(test_kube_stream__callback_stops_the_feed),
        cmocka_unit_test(test_kube_stream__oversize_event_is_passed_over),
        cmocka_unit_test(test_kube_stream__memory_does_not_follow_the_input),
        cmocka_unit_test(test_kube_stream__depth_is_bounded),
        cmocka_unit_test(test_kube_stream__garbage_is_an_error),
        cmocka_unit_test(test_kube_stream__gone_is_distinct),
        cmocka_unit_test(test_kube_stream__decodes_a_list),
        cmocka_unit_test(test_kube_stream__list_bounds),
        cmocka_unit_test(test_kube_stream__refuses_bad_lists),
        cmocka_unit_test(test_kube_stream__list_of_fixtures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
