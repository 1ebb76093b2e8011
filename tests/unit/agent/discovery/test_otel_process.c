/* SPDX-License-Identifier: MIT */
/*
 * Tests for agent/discovery/otel_process.c: the OpenTelemetry process
 * context (OTEP 4719). Headers and ProcessContext payloads are written by
 * hand here (a small protobuf writer, so the test does not share the
 * decoder's generated code), read through a fake memory image, and a reader
 * that moves the header's timestamp stands for a publisher caught writing.
 */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include "base/alloc.h"
#include "base/labels.h"
#include "discovery/otel_process.h"
#include "discovery/proc_maps.h"
#include "memread_fake.h"

/* ---- a protobuf writer ----------------------------------------------------------- */

struct pb {
    uint8_t b[8192];
    size_t n;
};

static void pb_raw(struct pb *p, const void *d, size_t n)
{
    assert_true(n <= sizeof(p->b) - p->n);
    memcpy(p->b + p->n, d, n);
    p->n += n;
}

static void pb_varint(struct pb *p, uint64_t v)
{
    do {
        uint8_t c = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v)
            c |= 0x80;
        pb_raw(p, &c, 1);
    } while (v);
}

static void pb_key(struct pb *p, unsigned field, unsigned wire)
{
    pb_varint(p, (uint64_t)field << 3 | wire);
}

static void pb_len(struct pb *p, unsigned field, const void *d, size_t n)
{
    pb_key(p, field, 2);
    pb_varint(p, n);
    pb_raw(p, d, n);
}

static void pb_str(struct pb *p, unsigned field, const char *s)
{
    pb_len(p, field, s, strlen(s));
}

static void pb_sub(struct pb *p, unsigned field, const struct pb *m)
{
    pb_len(p, field, m->b, m->n);
}

/* AnyValue constructors (each resets @v) */
static void any_str(struct pb *v, const char *s)
{
    v->n = 0;
    pb_str(v, 1, s);
}

static void any_bool(struct pb *v, bool b)
{
    v->n = 0;
    pb_key(v, 2, 0);
    pb_varint(v, b);
}

static void any_int(struct pb *v, int64_t i)
{
    v->n = 0;
    pb_key(v, 3, 0);
    pb_varint(v, (uint64_t)i);
}

static void any_double(struct pb *v, double d)
{
    v->n = 0;
    pb_key(v, 4, 1);
    pb_raw(v, &d, 8);
}

static void any_bytes(struct pb *v, const void *d, size_t n)
{
    v->n = 0;
    pb_len(v, 7, d, n);
}

/* An AnyValue holding an ArrayValue of the strings @s[0..n). */
static void any_str_array(struct pb *v, const char *const *s, size_t n)
{
    struct pb arr = {.n = 0}, one;
    for (size_t i = 0; i < n; i++) {
        any_str(&one, s[i]);
        pb_sub(&arr, 1, &one);
    }
    v->n = 0;
    pb_sub(v, 5, &arr);
}

/* Appends KeyValue {key, value} as field @field of @p. */
static void pb_kv(struct pb *p, unsigned field, const char *key, const struct pb *value)
{
    struct pb kv = {.n = 0};
    pb_str(&kv, 1, key);
    if (value)
        pb_sub(&kv, 2, value);
    pb_sub(p, field, &kv);
}

/* ProcessContext {resource = @res (Resource's bytes), attributes = @attrs (KeyValues as field 2)}
 */
static void pb_context(struct pb *out, const struct pb *res, const struct pb *attrs)
{
    out->n = 0;
    if (res)
        pb_sub(out, 1, res);
    if (attrs)
        pb_raw(out, attrs->b, attrs->n);
}

/* ---- headers and images --------------------------------------------------------- */

static void header(uint8_t h[OTEL_PROCESS_HEADER_SIZE], const char *sig, uint32_t version,
                   uint32_t size, uint64_t ns, uint64_t payload)
{
    memcpy(h, sig, 8);
    memcpy(h + 8, &version, 4);
    memcpy(h + 12, &size, 4);
    memcpy(h + 16, &ns, 8);
    memcpy(h + 24, &payload, 8);
}

#define HDR_RADDR     0x7f3a00001000ull
#define PAYLOAD_RADDR 0x7f3a00002000ull
#define NS            123456789ull

/* A Resource with service.name = @name and one threadlocal schema; returns
 * where the Resource field ends (the one prefix that is a whole message). */
static size_t small_context(struct pb *out, const char *name)
{
    struct pb res = {.n = 0}, attrs = {.n = 0}, v;
    any_str(&v, name);
    pb_kv(&res, 1, "service.name", &v);
    any_str(&v, "tlsdesc_v1_dev");
    pb_kv(&attrs, 2, "threadlocal.schema_version", &v);
    pb_context(out, &res, &attrs);
    return out->n - attrs.n;
}

/* A fake process whose OTEL_CTX header at HDR_RADDR points to @payload at PAYLOAD_RADDR. */
static void image(struct memread_fake **fake, struct memread **mr, const struct pb *payload,
                  uint32_t version, uint64_t ns)
{
    assert_int_equal(memread_fake_open(fake, mr), 0);
    uint8_t page[4096] = {0};
    header(page, "OTEL_CTX", version, (uint32_t)payload->n, ns, PAYLOAD_RADDR);
    assert_int_equal(memread_fake_add(*fake, HDR_RADDR, page, sizeof(page)), 0);
    assert_int_equal(memread_fake_add(*fake, PAYLOAD_RADDR, payload->b, payload->n), 0);
}

/* ---- the header --------------------------------------------------------------------- */

static void test_otel_process__header(void **state)
{
    (void)state;
    uint8_t buf[OTEL_PROCESS_HEADER_SIZE + 1];
    uint8_t *h = buf + 1; /* any alignment */
    struct otel_process_header hd;

    for (uint32_t v = 1; v <= 2; v++) {
        header(h, "OTEL_CTX", v, 100, NS, PAYLOAD_RADDR);
        assert_int_equal(otel_process_parse_header(h, &hd), OTEL_PROCESS_OK);
        assert_int_equal(hd.version, v);
        assert_int_equal(hd.payload_size, 100);
        assert_int_equal(hd.published_ns, NS);
        assert_int_equal(hd.payload, PAYLOAD_RADDR);
    }
    header(h, "OTEL_CTY", 2, 100, NS, PAYLOAD_RADDR);
    assert_int_equal(otel_process_parse_header(h, &hd), OTEL_PROCESS_BAD_HEADER);
    header(h, "otel_ctx", 2, 100, NS, PAYLOAD_RADDR);
    assert_int_equal(otel_process_parse_header(h, &hd), OTEL_PROCESS_BAD_HEADER);
    header(h, "OTEL_CTX", 3, 100, NS, PAYLOAD_RADDR);
    assert_int_equal(otel_process_parse_header(h, &hd), OTEL_PROCESS_VERSION);
    header(h, "OTEL_CTX", 0, 100, NS, PAYLOAD_RADDR);
    assert_int_equal(otel_process_parse_header(h, &hd), OTEL_PROCESS_VERSION);
    /* a timestamp of 0: the publisher is writing */
    header(h, "OTEL_CTX", 2, 100, 0, PAYLOAD_RADDR);
    assert_int_equal(otel_process_parse_header(h, &hd), OTEL_PROCESS_TORN);
    header(h, "OTEL_CTX", 2, 0, NS, PAYLOAD_RADDR);
    assert_int_equal(otel_process_parse_header(h, &hd), OTEL_PROCESS_BAD_HEADER);
    header(h, "OTEL_CTX", 2, 100, NS, 0);
    assert_int_equal(otel_process_parse_header(h, &hd), OTEL_PROCESS_BAD_HEADER);
    header(h, "OTEL_CTX", 2, OTEL_PROCESS_MAX_PAYLOAD, NS, PAYLOAD_RADDR);
    assert_int_equal(otel_process_parse_header(h, &hd), OTEL_PROCESS_OK);
    header(h, "OTEL_CTX", 2, OTEL_PROCESS_MAX_PAYLOAD + 1, NS, PAYLOAD_RADDR);
    assert_int_equal(otel_process_parse_header(h, &hd), OTEL_PROCESS_TOO_BIG);
    header(h, "OTEL_CTX", 2, UINT32_MAX, NS, PAYLOAD_RADDR);
    assert_int_equal(otel_process_parse_header(h, &hd), OTEL_PROCESS_TOO_BIG);

    assert_string_equal(otel_process_fail_name(OTEL_PROCESS_OK), "ok");
    assert_string_equal(otel_process_fail_name(OTEL_PROCESS_TORN), "torn");
    assert_string_equal(otel_process_fail_name(OTEL_PROCESS_BAD_PAYLOAD), "bad_payload");
    assert_string_equal(otel_process_fail_name(OTEL_PROCESS_READ_FAULT), "read_fault");
    assert_string_equal(otel_process_fail_name(OTEL_PROCESS_FAILS), "?");
}

/* ---- the payload -------------------------------------------------------------------- */

static void test_otel_process__decode_scalars_kept(void **state)
{
    (void)state;
    struct pb res = {.n = 0}, attrs = {.n = 0}, v, inner = {.n = 0}, payload;
    any_str(&v, "checkout");
    pb_kv(&res, 1, "service.name", &v);
    any_bool(&v, true);
    pb_kv(&res, 1, "feature.on", &v);
    any_bool(&v, false);
    pb_kv(&res, 1, "feature.off", &v);
    any_int(&v, -42);
    pb_kv(&res, 1, "process.pid.delta", &v);
    any_double(&v, 0.25);
    pb_kv(&res, 1, "ratio", &v);
    /* not scalars: dropped and counted */
    const char *const two[] = {"a", "b"};
    any_str_array(&v, two, 2);
    pb_kv(&res, 1, "an.array", &v);
    any_str(&v, "x");
    pb_kv(&inner, 1, "nested", &v);
    v.n = 0;
    pb_sub(&v, 6, &inner);
    pb_kv(&res, 1, "a.kvlist", &v);
    any_bytes(&v, "\x01\x02", 2);
    pb_kv(&res, 1, "some.bytes", &v);
    pb_kv(&res, 1, "no.value", NULL);
    any_str(&v, "keyless");
    pb_kv(&res, 1, "", &v);
    /* a repeated key keeps its first value, and is not dropped */
    any_str(&v, "second");
    pb_kv(&res, 1, "service.name", &v);
    /* the thread context's keys, among ProcessContext.attributes */
    any_str(&v, "tlsdesc_v1_dev");
    pb_kv(&attrs, 2, "threadlocal.schema_version", &v);
    any_str(&v, "later");
    pb_kv(&attrs, 2, "threadlocal.schema_version", &v);
    const char *const keys[] = {"http.route", "http.method"};
    any_str_array(&v, keys, 2);
    /* a key that is no string names nothing */
    struct pb arr = {.n = 0}, one;
    any_str(&one, keys[0]);
    pb_sub(&arr, 1, &one);
    any_str(&one, keys[1]);
    pb_sub(&arr, 1, &one);
    any_int(&one, 7);
    pb_sub(&arr, 1, &one);
    v.n = 0;
    pb_sub(&v, 5, &arr);
    pb_kv(&attrs, 2, "threadlocal.attribute_key_map", &v);
    any_str(&v, "not a resource attribute");
    pb_kv(&attrs, 2, "other", &v);
    pb_context(&payload, &res, &attrs);

    struct otel_process c;
    bool nomem = true;
    assert_int_equal(otel_process_decode(payload.b, payload.n, &c, &nomem), OTEL_PROCESS_OK);
    assert_false(nomem);
    static const char *const want[][2] = {
        {"service.name", "checkout"}, {"feature.on", "true"}, {"feature.off", "false"},
        {"process.pid.delta", "-42"}, {"ratio", "0.25"},
    };
    assert_int_equal(c.nresource, PYPROFD_ARRAY_SIZE(want));
    for (size_t i = 0; i < c.nresource; i++) {
        assert_string_equal(c.resource[i].key, want[i][0]);
        assert_string_equal(c.resource[i].value, want[i][1]);
    }
    assert_int_equal(c.dropped, 5); /* array, kvlist, bytes, no value, empty key */
    assert_string_equal(otel_process_get(&c, "service.name"), "checkout");
    assert_null(otel_process_get(&c, "an.array"));
    assert_null(otel_process_get(&c, "other"));
    assert_non_null(c.schema);
    assert_string_equal(c.schema, "tlsdesc_v1_dev"); /* the first */
    assert_int_equal(c.nkeys, 3);
    assert_string_equal(c.keys[0], "http.route");
    assert_string_equal(c.keys[1], "http.method");
    assert_string_equal(c.keys[2], "");
    assert_int_equal(c.header_raddr, 0);
    otel_process_release(&c);
    assert_null(c.resource);
    assert_null(c.keys);
    assert_null(c.schema);
    assert_int_equal(c.nresource, 0);
    otel_process_release(&c); /* a zeroed struct: no-op */

    /* an empty payload is an empty ProcessContext */
    assert_int_equal(otel_process_decode("", 0, &c, &nomem), OTEL_PROCESS_OK);
    assert_int_equal(c.nresource, 0);
    assert_null(c.schema);
    assert_int_equal(c.nkeys, 0);
    otel_process_release(&c);
}

/* Over the caps: attributes, key map entries, key and value lengths. */
static void test_otel_process__decode_caps(void **state)
{
    (void)state;
    struct pb res = {.n = 0}, v, payload;
    char key[300], val[400];
    for (unsigned i = 0; i < OTEL_PROCESS_MAX_ATTRS + 6; i++) {
        snprintf(key, sizeof(key), "k%u", i);
        any_str(&v, "v");
        pb_kv(&res, 1, key, &v);
    }
    pb_context(&payload, &res, NULL);
    struct otel_process c;
    bool nomem;
    assert_int_equal(otel_process_decode(payload.b, payload.n, &c, &nomem), OTEL_PROCESS_OK);
    assert_int_equal(c.nresource, OTEL_PROCESS_MAX_ATTRS);
    assert_int_equal(c.dropped, 6);
    assert_string_equal(c.resource[OTEL_PROCESS_MAX_ATTRS - 1].key, "k63");
    otel_process_release(&c);

    /* a long key and value are cut to their caps */
    memset(key, 'k', sizeof(key) - 1);
    key[sizeof(key) - 1] = '\0';
    memset(val, 'v', sizeof(val) - 1);
    val[sizeof(val) - 1] = '\0';
    res.n = 0;
    any_str(&v, val);
    pb_kv(&res, 1, key, &v);
    pb_context(&payload, &res, NULL);
    assert_int_equal(otel_process_decode(payload.b, payload.n, &c, &nomem), OTEL_PROCESS_OK);
    assert_int_equal(c.nresource, 1);
    assert_int_equal(strlen(c.resource[0].key), OTEL_PROCESS_MAX_KEY);
    assert_int_equal(strlen(c.resource[0].value), OTEL_PROCESS_MAX_VALUE);
    otel_process_release(&c);

    /* a key map longer than uint8 indices reach */
    struct pb arr = {.n = 0}, one, attrs = {.n = 0};
    for (unsigned i = 0; i < OTEL_PROCESS_MAX_KEYS + 10; i++) {
        any_str(&one, "k");
        pb_sub(&arr, 1, &one);
    }
    v.n = 0;
    pb_sub(&v, 5, &arr);
    pb_kv(&attrs, 2, "threadlocal.attribute_key_map", &v);
    pb_context(&payload, NULL, &attrs);
    assert_int_equal(otel_process_decode(payload.b, payload.n, &c, &nomem), OTEL_PROCESS_OK);
    assert_int_equal(c.nkeys, OTEL_PROCESS_MAX_KEYS);
    otel_process_release(&c);

    /* a payload over the cap is not looked at */
    assert_int_equal(otel_process_decode(payload.b, OTEL_PROCESS_MAX_PAYLOAD + 1, &c, &nomem),
                     OTEL_PROCESS_TOO_BIG);
    assert_int_equal(c.nresource, 0);
}

/* An AnyValue of @depth arrays within each other around a string, as KeyValue "deep"
 * of field @field in @out (reset). */
static void deep_value(struct pb *out, unsigned field, unsigned depth, bool kvlist)
{
    static struct pb cur, wrap; /* large: kept off the stack */
    any_str(&cur, "leaf");
    for (unsigned i = 0; i < depth; i++) {
        wrap.n = 0;
        if (kvlist) { /* AnyValue{kvlist {KeyValue{"k", cur}}} */
            struct pb *list = alloc_calloc(1, sizeof(*list));
            assert_non_null(list);
            pb_kv(list, 1, "k", &cur);
            pb_sub(&wrap, 6, list);
            alloc_free(list);
        } else { /* AnyValue{array {cur}} */
            struct pb *arr = alloc_calloc(1, sizeof(*arr));
            assert_non_null(arr);
            pb_sub(arr, 1, &cur);
            pb_sub(&wrap, 5, arr);
            alloc_free(arr);
        }
        cur = wrap;
    }
    out->n = 0;
    pb_kv(out, field, "deep", &cur);
}

static void test_otel_process__decode_refuses_deep_nesting(void **state)
{
    (void)state;
    static struct pb res, payload;
    struct otel_process c;
    bool nomem;
    for (int kvlist = 0; kvlist <= 1; kvlist++) {
        /* a little nesting is a value like any other: not a scalar, dropped */
        deep_value(&res, 1, 3, kvlist);
        pb_context(&payload, &res, NULL);
        assert_int_equal(otel_process_decode(payload.b, payload.n, &c, &nomem), OTEL_PROCESS_OK);
        assert_int_equal(c.nresource, 0);
        assert_int_equal(c.dropped, 1);
        otel_process_release(&c);
        /* 100 levels are refused before protobuf-c recurses into them */
        deep_value(&res, 1, 100, kvlist);
        pb_context(&payload, &res, NULL);
        assert_int_equal(otel_process_decode(payload.b, payload.n, &c, &nomem),
                         OTEL_PROCESS_BAD_PAYLOAD);
        assert_false(nomem);
        assert_null(c.resource);
        assert_int_equal(c.nresource, 0);
        /* the same among ProcessContext.attributes */
        deep_value(&res, 2, 100, kvlist);
        assert_int_equal(otel_process_decode(res.b, res.n, &c, &nomem), OTEL_PROCESS_BAD_PAYLOAD);
    }
}

static void test_otel_process__decode_refuses_garbage(void **state)
{
    (void)state;
    struct pb payload;
    size_t whole = small_context(&payload, "checkout");
    struct otel_process c;
    bool nomem;
    assert_int_equal(otel_process_decode(payload.b, payload.n, &c, &nomem), OTEL_PROCESS_OK);
    otel_process_release(&c);
    /* every prefix cut inside a field: refused, nothing kept; the one that
     * ends between the two fields is the resource alone */
    for (size_t n = 1; n < payload.n; n++) {
        enum otel_process_fail f = otel_process_decode(payload.b, n, &c, &nomem);
        if (n == whole) {
            assert_int_equal(f, OTEL_PROCESS_OK);
            assert_string_equal(otel_process_get(&c, "service.name"), "checkout");
            assert_null(c.schema);
            otel_process_release(&c);
            continue;
        }
        if (f != OTEL_PROCESS_BAD_PAYLOAD)
            fail_msg("a payload cut at %zu of %zu: %s", n, payload.n, otel_process_fail_name(f));
        assert_int_equal(c.nresource, 0);
        assert_null(c.schema);
    }
    static const struct {
        const char *bytes;
        size_t len;
    } bad[] = {
        {"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", 12}, /* a varint past 10 bytes */
        {"\x0b\x0c", 2},                                          /* a group (wire type 3) */
        {"\x0f", 1},                                              /* wire type 7 */
        {"\x02\x00", 2},                                          /* field 0 */
        {"\x0a\x05\x0a\x03", 4},                                  /* a length past the end */
        {"\x09\x01\x02\x03", 4},                                  /* a fixed64 cut short */
        {"\x08\x01", 2}, /* resource as a varint: not a ProcessContext */
    };
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(bad); i++) {
        if (otel_process_decode(bad[i].bytes, bad[i].len, &c, &nomem) != OTEL_PROCESS_BAD_PAYLOAD)
            fail_msg("bad payload %zu was taken", i);
        assert_false(nomem);
        assert_int_equal(c.nresource, 0);
    }
}

/* ---- labels ------------------------------------------------------------------------- */

static void test_otel_process__meta_labels(void **state)
{
    (void)state;
    struct pb res = {.n = 0}, attrs = {.n = 0}, v, payload;
    any_str(&v, "checkout");
    pb_kv(&res, 1, "service.name", &v);
    any_str(&v, "prod");
    pb_kv(&res, 1, "deployment.environment-name", &v);
    any_str(&v, "shadowed");
    pb_kv(&res, 1, "service_name", &v); /* the same label as service.name */
    any_str(&v, "x");
    pb_kv(&res, 1, "Pod/\xc3\xa9", &v); /* two bytes of UTF-8: two '_' */
    pb_context(&payload, &res, NULL);
    struct otel_process c;
    bool nomem;
    assert_int_equal(otel_process_decode(payload.b, payload.n, &c, &nomem), OTEL_PROCESS_OK);
    struct labels meta;
    labels_init(&meta);
    assert_int_equal(otel_process_meta_labels(&c, &meta), 0);
    assert_string_equal(labels_get(&meta, "__meta_otel_resource_service_name"), "checkout");
    assert_string_equal(labels_get(&meta, "__meta_otel_resource_deployment_environment_name"),
                        "prod");
    assert_string_equal(labels_get(&meta, "__meta_otel_resource_Pod___"), "x");
    assert_null(labels_get(&meta, "__meta_otel_threadlocal_schema"));
    assert_int_equal(meta.n, 3);
    for (size_t i = 0; i < meta.n; i++)
        assert_true(labels_valid_name(meta.v[i].name));
    labels_release(&meta);
    otel_process_release(&c);

    /* a context that announces the thread context says which schema */
    any_str(&v, "tlsdesc_v1_dev");
    pb_kv(&attrs, 2, "threadlocal.schema_version", &v);
    pb_context(&payload, &res, &attrs);
    assert_int_equal(otel_process_decode(payload.b, payload.n, &c, &nomem), OTEL_PROCESS_OK);
    labels_init(&meta);
    assert_int_equal(otel_process_meta_labels(&c, &meta), 0);
    assert_string_equal(labels_get(&meta, "__meta_otel_threadlocal_schema"), "tlsdesc_v1_dev");
    assert_string_equal(labels_get(&meta, "__meta_otel_resource_service_name"), "checkout");
    assert_int_equal(meta.n, 4);
    labels_release(&meta);
    otel_process_release(&c);
}

/* ---- reading from a process ----------------------------------------------------------- */

static void test_otel_process__read_ok_and_changed(void **state)
{
    (void)state;
    struct pb payload;
    small_context(&payload, "checkout");
    for (uint32_t version = 1; version <= 2; version++) {
        struct memread_fake *fake;
        struct memread *mr;
        image(&fake, &mr, &payload, version, NS);
        struct otel_process c;
        bool gone = true;
        assert_int_equal(otel_process_read(mr, HDR_RADDR, &c, &gone), OTEL_PROCESS_OK);
        assert_false(gone);
        assert_int_equal(c.header_raddr, HDR_RADDR);
        assert_int_equal(c.published_ns, NS);
        assert_string_equal(otel_process_get(&c, "service.name"), "checkout");
        assert_string_equal(c.schema, "tlsdesc_v1_dev");
        /* header, payload, timestamp again */
        assert_int_equal(memread_fake_calls(fake), 3);

        assert_int_equal(otel_process_changed(mr, HDR_RADDR, c.published_ns), 0);
        uint64_t later = NS + 1000;
        assert_int_equal(memread_fake_poke(fake, HDR_RADDR + 16, &later, 8), 0);
        assert_int_equal(otel_process_changed(mr, HDR_RADDR, c.published_ns), 1);
        uint64_t zero = 0; /* being written: read it again */
        assert_int_equal(memread_fake_poke(fake, HDR_RADDR + 16, &zero, 8), 0);
        assert_int_equal(otel_process_changed(mr, HDR_RADDR, c.published_ns), 1);
        /* the mapping gone */
        assert_int_equal(otel_process_changed(mr, 0x1000, c.published_ns), -EFAULT);
        memread_fake_fail_next(fake, -ESRCH);
        assert_int_equal(otel_process_changed(mr, HDR_RADDR, c.published_ns), -ESRCH);
        otel_process_release(&c);
        memread_free(mr);
    }
}

/*
 * A publisher caught writing: a reader that moves the header's timestamp
 * each time the payload is read (up to @moves times), as a writer that
 * published again while the reader copied the payload.
 */
struct mover {
    struct memread *inner;
    struct memread_fake *fake;
    unsigned moves, payload_reads;
    uint64_t ns;
};

static int mover_readv(void *priv, const struct memread_iov *iov, size_t n)
{
    struct mover *mv = priv;
    int err = memread_readv(mv->inner, iov, n);
    for (size_t i = 0; i < n; i++) {
        if (iov[i].raddr != PAYLOAD_RADDR)
            continue;
        mv->payload_reads++;
        if (mv->moves) {
            mv->moves--;
            mv->ns++;
            assert_int_equal(memread_fake_poke(mv->fake, HDR_RADDR + 16, &mv->ns, 8), 0);
        }
    }
    return err;
}

static void mover_close(void *priv)
{
    struct mover *mv = priv;
    memread_free(mv->inner);
}

static const struct memread_ops mover_ops = {
    .name = "mover", .readv = mover_readv, .close = mover_close};

static void test_otel_process__read_torn(void **state)
{
    (void)state;
    struct pb payload;
    small_context(&payload, "checkout");
    /* moved on every read: torn after the tries, nothing kept */
    struct mover mv = {.moves = 100, .ns = NS};
    struct memread *mr;
    image(&mv.fake, &mv.inner, &payload, 2, NS);
    assert_int_equal(memread_new_custom(&mover_ops, &mv, &mr), 0);
    struct otel_process c;
    bool gone = true;
    assert_int_equal(otel_process_read(mr, HDR_RADDR, &c, &gone), OTEL_PROCESS_TORN);
    assert_false(gone);
    assert_int_equal(mv.payload_reads, 3);
    assert_int_equal(c.nresource, 0);
    assert_null(c.resource);
    assert_null(c.schema);
    memread_free(mr);

    /* moved once: the second try reads it, with the new timestamp */
    mv = (struct mover){.moves = 1, .ns = NS};
    image(&mv.fake, &mv.inner, &payload, 2, NS);
    assert_int_equal(memread_new_custom(&mover_ops, &mv, &mr), 0);
    assert_int_equal(otel_process_read(mr, HDR_RADDR, &c, &gone), OTEL_PROCESS_OK);
    assert_int_equal(mv.payload_reads, 2);
    assert_int_equal(c.published_ns, NS + 1);
    assert_string_equal(otel_process_get(&c, "service.name"), "checkout");
    otel_process_release(&c);
    memread_free(mr);

    /* a timestamp of 0 that stays: torn, and the payload is never read */
    mv = (struct mover){.moves = 0};
    image(&mv.fake, &mv.inner, &payload, 2, 0);
    assert_int_equal(memread_new_custom(&mover_ops, &mv, &mr), 0);
    assert_int_equal(otel_process_read(mr, HDR_RADDR, &c, &gone), OTEL_PROCESS_TORN);
    assert_int_equal(mv.payload_reads, 0);
    assert_int_equal(memread_fake_calls(mv.fake), 3);
    memread_free(mr);
}

static void test_otel_process__read_failures(void **state)
{
    (void)state;
    struct pb payload;
    small_context(&payload, "checkout");
    struct memread_fake *fake;
    struct memread *mr;
    struct otel_process c;
    bool gone;

    /* the payload outside the image */
    assert_int_equal(memread_fake_open(&fake, &mr), 0);
    uint8_t h[OTEL_PROCESS_HEADER_SIZE];
    header(h, "OTEL_CTX", 2, (uint32_t)payload.n, NS, 0x5000);
    assert_int_equal(memread_fake_add(fake, HDR_RADDR, h, sizeof(h)), 0);
    assert_int_equal(otel_process_read(mr, HDR_RADDR, &c, &gone), OTEL_PROCESS_READ_FAULT);
    assert_false(gone);
    assert_int_equal(c.nresource, 0);
    /* the header outside it */
    assert_int_equal(otel_process_read(mr, 0x9000, &c, &gone), OTEL_PROCESS_READ_FAULT);
    assert_false(gone);
    /* the process gone */
    memread_fake_fail_next(fake, -ESRCH);
    assert_int_equal(otel_process_read(mr, HDR_RADDR, &c, &gone), OTEL_PROCESS_READ_FAULT);
    assert_true(gone);
    memread_free(mr);

    /* a payload mapped but shorter than the header says */
    image(&fake, &mr, &payload, 2, NS);
    uint32_t longer = (uint32_t)payload.n + 1;
    assert_int_equal(memread_fake_poke(fake, HDR_RADDR + 12, &longer, 4), 0);
    assert_int_equal(otel_process_read(mr, HDR_RADDR, &c, &gone), OTEL_PROCESS_READ_FAULT);
    /* a header refused: said at once, not retried */
    unsigned calls = memread_fake_calls(fake);
    uint32_t v3 = 3;
    assert_int_equal(memread_fake_poke(fake, HDR_RADDR + 8, &v3, 4), 0);
    assert_int_equal(otel_process_read(mr, HDR_RADDR, &c, &gone), OTEL_PROCESS_VERSION);
    assert_int_equal(memread_fake_calls(fake), calls + 1);
    assert_int_equal(memread_fake_poke(fake, HDR_RADDR, "OTEL_CTZ", 8), 0);
    assert_int_equal(otel_process_read(mr, HDR_RADDR, &c, &gone), OTEL_PROCESS_BAD_HEADER);
    memread_free(mr);

    /* a payload that is no ProcessContext */
    struct pb junk = {.n = 0};
    pb_raw(&junk, "\x0b\x0c\x0d", 3);
    image(&fake, &mr, &junk, 2, NS);
    assert_int_equal(otel_process_read(mr, HDR_RADDR, &c, &gone), OTEL_PROCESS_BAD_PAYLOAD);
    assert_false(gone);
    assert_null(c.resource);
    memread_free(mr);
}

/* ---- finding the mapping ------------------------------------------------------------------ */

static int find_in(const char *text, uint64_t *raddr)
{
    struct proc_maps *maps = NULL;
    assert_int_equal(proc_maps_parse(text, strlen(text), 64, &maps), 0);
    int err = otel_process_find(maps, raddr);
    proc_maps_free(maps);
    return err;
}

static void test_otel_process__find(void **state)
{
    (void)state;
    static const char base[] =
        "55d0c0a00000-55d0c0a01000 r--p 00000000 08:01 1234    /usr/bin/python3.12\n"
        "7f3a00000000-7f3a00001000 rw-p 00000000 00:00 0 \n";
    static const char *const names[] = {"[anon_shmem:OTEL_CTX]", "[anon:OTEL_CTX]",
                                        "/memfd:OTEL_CTX (deleted)"};
    char text[1024];
    uint64_t raddr;
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(names); i++) {
        snprintf(text, sizeof(text), "%s7f3a00001000-7f3a00002000 r--s 00000000 00:01 77 %s\n",
                 base, names[i]);
        raddr = 0;
        assert_int_equal(find_in(text, &raddr), 0);
        assert_int_equal(raddr, HDR_RADDR);
        /* one that cannot be read is skipped for a later one that can */
        snprintf(text, sizeof(text),
                 "%s7f3a00001000-7f3a00002000 ---p 00000000 00:01 77 %s\n"
                 "7f3a00005000-7f3a00006000 r--p 00000000 00:01 78 %s\n",
                 base, names[i], names[i]);
        raddr = 0;
        assert_int_equal(find_in(text, &raddr), 0);
        assert_int_equal(raddr, 0x7f3a00005000ull);
        /* and alone it is not found */
        snprintf(text, sizeof(text), "%s7f3a00001000-7f3a00002000 ---p 00000000 00:01 77 %s\n",
                 base, names[i]);
        assert_int_equal(find_in(text, &raddr), -ENOENT);
    }
    /* names that are not the OTEP's */
    assert_int_equal(find_in(base, &raddr), -ENOENT);
    snprintf(text, sizeof(text),
             "%s7f3a00001000-7f3a00002000 r--p 00000000 00:00 0 [anon:OTEL]\n"
             "7f3a00002000-7f3a00003000 r--p 00000000 08:01 99 /tmp/OTEL_CTX\n",
             base);
    assert_int_equal(find_in(text, &raddr), -ENOENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_otel_process__header),
        cmocka_unit_test(test_otel_process__decode_scalars_kept),
        cmocka_unit_test(test_otel_process__decode_caps),
        cmocka_unit_test(test_otel_process__decode_refuses_deep_nesting),
        cmocka_unit_test(test_otel_process__decode_refuses_garbage),
        cmocka_unit_test(test_otel_process__meta_labels),
        cmocka_unit_test(test_otel_process__read_ok_and_changed),
        cmocka_unit_test(test_otel_process__read_torn),
        cmocka_unit_test(test_otel_process__read_failures),
        cmocka_unit_test(test_otel_process__find),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
