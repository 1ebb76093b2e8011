/* SPDX-License-Identifier: MIT */
/*
 * Tests for agent/base/jsonw.c: commas and nesting, escapes (for HTML
 * pages, terminals, and the heatmap's lines), numbers, json-c's pretty
 * layout, the bound on depth, errors kept until the end, and the three
 * sinks writing the same bytes.
 */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include <json-c/json.h>
#include <math.h>

#include "base/buf.h"
#include "base/jsonw.h"
#include "base/utf8.h"

/* A writer into a buffer, and what it wrote. */
struct doc {
    struct buf b;
    struct jsonw w;
};

static struct jsonw *doc_open(struct doc *d, unsigned flags)
{
    buf_init(&d->b, 1 << 20);
    jsonw_init_buf(&d->w, &d->b, flags);
    return &d->w;
}

/* Finishes @d: returns what it holds (valid until doc_close()); the error in *@err. */
static const char *doc_end(struct doc *d, int *err)
{
    *err = jsonw_finish(&d->w);
    return buf_str(&d->b);
}

static void doc_close(struct doc *d)
{
    buf_release(&d->b);
}

/* One string value @s (@n bytes) written alone with @flags and @sflags: the document. */
static const char *one_string(struct doc *d, const char *s, size_t n, unsigned flags,
                              unsigned sflags)
{
    int err;
    jsonw_stringn(doc_open(d, flags), NULL, s, n, sflags);
    const char *out = doc_end(d, &err);
    assert_int_equal(err, 0);
    return out;
}

/* The writer places commas; empty containers are "{}" and "[]". */
static void test_jsonw__nesting_and_commas(void **state)
{
    (void)state;
    struct doc d;
    struct jsonw *w = doc_open(&d, 0);
    jsonw_object(w, NULL);
    jsonw_string(w, "a", "x");
    jsonw_array(w, "b");
    jsonw_int(w, NULL, 1);
    jsonw_object(w, NULL);
    jsonw_end(w);
    jsonw_array(w, NULL);
    jsonw_end(w);
    jsonw_null(w, NULL);
    jsonw_end(w);
    jsonw_bool(w, "c", true);
    jsonw_bool(w, "d", false);
    jsonw_object(w, "e");
    jsonw_uint(w, "f", 2);
    jsonw_end(w);
    jsonw_end(w);
    int err;
    assert_string_equal(
        doc_end(&d, &err),
        "{\"a\":\"x\",\"b\":[1,{},[],null],\"c\":true,\"d\":false,\"e\":{\"f\":2}}");
    assert_int_equal(err, 0);
    assert_int_equal(jsonw_bytes(w), strlen(buf_str(&d.b)));
    doc_close(&d);

    /* a scalar is a document too */
    w = doc_open(&d, 0);
    jsonw_int(w, NULL, -7);
    assert_string_equal(doc_end(&d, &err), "-7");
    assert_int_equal(err, 0);
    doc_close(&d);
}

/* Quotes, backslashes, C0 controls and DEL as escapes; '<' as \u003c; UTF-8 as it is. */
static void test_jsonw__escapes(void **state)
{
    (void)state;
    struct doc d;
    static const char s[] = "q\"b\\n\n\x01\x1f\x7f\t</script><!--> & / \xc3\xa9"
                            "\xe2\x80\xa8\xe2\x80\xa9\xf0\x9f\x98\x80";
    assert_string_equal(one_string(&d, s, sizeof(s) - 1, 0, 0),
                        "\"q\\\"b\\\\n\\u000a\\u0001\\u001f\\u007f\\u0009\\u003c/script>"
                        "\\u003c!--> & / \xc3\xa9\xe2\x80\xa8\xe2\x80\xa9\xf0\x9f\x98\x80\"");
    doc_close(&d);
    /* NUL bytes inside: \u0000 */
    assert_string_equal(one_string(&d, "a\0b", 3, 0, 0), "\"a\\u0000b\"");
    doc_close(&d);
    /* the C1 controls: as they are, or escaped for a terminal (U+00A0 is no control) */
    static const char c1[] = "\xc2\x80\xc2\x85\xc2\x9b\xc2\x9f\xc2\xa0";
    assert_string_equal(one_string(&d, c1, sizeof(c1) - 1, 0, 0), "\""
                                                                  "\xc2\x80\xc2\x85\xc2\x9b"
                                                                  "\xc2\x9f\xc2\xa0\"");
    doc_close(&d);
    assert_string_equal(one_string(&d, c1, sizeof(c1) - 1, JSONW_TERMINAL, 0),
                        "\"\\u0080\\u0085\\u009b\\u009f\xc2\xa0\"");
    doc_close(&d);
    /* a document no page embeds keeps '<' */
    assert_string_equal(one_string(&d, "<GC>", 4, JSONW_NOT_HTML, 0), "\"<GC>\"");
    doc_close(&d);
    /* keys are escaped the same way */
    struct jsonw *w = doc_open(&d, 0);
    jsonw_object(w, NULL);
    jsonw_int(w, "<k\"\n>", 1);
    jsonw_end(w);
    int err;
    assert_string_equal(doc_end(&d, &err), "{\"\\u003ck\\\"\\u000a>\":1}");
    assert_int_equal(err, 0);
    doc_close(&d);
}

/* Each invalid sequence is one U+FFFD, counted; a counting writer counts none. */
static void test_jsonw__invalid_utf8(void **state)
{
    (void)state;
    struct doc d;
    /* a stray byte, an overlong '/', a surrogate, a sequence cut short at the end */
    static const char s[] = "a\xff"
                            "b\xc0\xaf"
                            "c\xed\xa0\x80"
                            "d\xe2\x80";
    uint64_t before = utf8_replaced_total();
    const char *out = one_string(&d, s, sizeof(s) - 1, 0, 0);
    uint64_t written = utf8_replaced_total() - before;
    char want[128] = "\"";
    before = utf8_replaced_total();
    size_t wn = utf8_sanitize(want + 1, sizeof(want) - 2, s, sizeof(s) - 1);
    assert_int_equal(utf8_replaced_total() - before, written); /* as many, counted once */
    assert_int_equal(written, 7);
    memcpy(want + 1 + wn, "\"", 2);
    assert_string_equal(out, want); /* as utf8_sanitize() replaces */

    before = utf8_replaced_total();
    struct jsonw c;
    jsonw_init_count(&c, 0);
    jsonw_string(&c, NULL, s);
    assert_int_equal(jsonw_finish(&c), 0);
    assert_int_equal(utf8_replaced_total(), before);
    assert_int_equal(jsonw_bytes(&c), strlen(out));
    doc_close(&d);
}

/* A line of text as a page shows it: control pictures, a tab as \t, '<' still escaped. */
static void test_jsonw__pictures(void **state)
{
    (void)state;
    struct doc d;
    static const char s[] = "a<\"\\\t\x01\x7f\r\xff\xc3\xa9\xc2\x85z";
    assert_string_equal(one_string(&d, s, sizeof(s) - 1, 0, JSONW_STRING_PICTURES),
                        "\"a\\u003c\\\"\\\\\\t\xe2\x90\x81\xe2\x90\xa1\xe2\x90\x8d"
                        "\xef\xbf\xbd\xc3\xa9\xc2\x85z\"");
    doc_close(&d);
}

/* Integers exactly; doubles with the digits asked for, whole ones as N.0; no NaN. */
static void test_jsonw__numbers(void **state)
{
    (void)state;
    struct doc d;
    struct jsonw *w = doc_open(&d, 0);
    jsonw_array(w, NULL);
    jsonw_int(w, NULL, INT64_MIN);
    jsonw_int(w, NULL, INT64_MAX);
    jsonw_uint(w, NULL, UINT64_MAX);
    jsonw_double(w, NULL, 100, 17);
    jsonw_double(w, NULL, 0.1, 17);
    jsonw_double(w, NULL, -3, 6);
    jsonw_double(w, NULL, 97.3, 6);
    jsonw_double(w, NULL, 1e20, 6);
    jsonw_double(w, NULL, NAN, 6);
    jsonw_fixed(w, NULL, 1.5, 3);
    jsonw_fixed(w, NULL, 0.0000016, 6);
    jsonw_fixed(w, NULL, 1700000000123.456789, 3);
    jsonw_fixed(w, NULL, -INFINITY, 3);
    jsonw_end(w);
    int err;
    assert_string_equal(doc_end(&d, &err),
                        "[-9223372036854775808,9223372036854775807,18446744073709551615,"
                        "100.0,0.10000000000000001,-3.0,97.3,1e+20,null,"
                        "1.500,0.000002,1700000000123.457,null]");
    assert_int_equal(err, 0);
    doc_close(&d);
}

/* JSONW_PRETTY is json-c's JSON_C_TO_STRING_PRETTY, byte for byte (what /targets was). */
static void test_jsonw__pretty_is_json_c_layout(void **state)
{
    (void)state;
    struct doc d;
    struct jsonw *w = doc_open(&d, JSONW_PRETTY);
    jsonw_object(w, NULL);
    jsonw_array(w, "targets");
    jsonw_object(w, NULL);
    jsonw_int(w, "pid", 42);
    jsonw_string(w, "comm", "python3");
    jsonw_object(w, "labels");
    jsonw_end(w);
    jsonw_array(w, "list");
    jsonw_bool(w, NULL, true);
    jsonw_null(w, NULL);
    jsonw_end(w);
    jsonw_double(w, "rate", 100, 17);
    jsonw_double(w, "effective", 99.87654321, 17);
    jsonw_end(w);
    jsonw_end(w);
    jsonw_array(w, "empty");
    jsonw_end(w);
    jsonw_uint(w, "big", UINT64_MAX);
    jsonw_end(w);
    int err;
    const char *mine = doc_end(&d, &err);
    assert_int_equal(err, 0);

    json_object *root = json_object_new_object();
    json_object *targets = json_object_new_array();
    json_object *t = json_object_new_object();
    json_object_object_add(t, "pid", json_object_new_int(42));
    json_object_object_add(t, "comm", json_object_new_string("python3"));
    json_object_object_add(t, "labels", json_object_new_object());
    json_object *list = json_object_new_array();
    json_object_array_add(list, json_object_new_boolean(1));
    json_object_array_add(list, NULL);
    json_object_object_add(t, "list", list);
    json_object_object_add(t, "rate", json_object_new_double(100));
    json_object_object_add(t, "effective", json_object_new_double(99.87654321));
    json_object_array_add(targets, t);
    json_object_object_add(root, "targets", targets);
    json_object_object_add(root, "empty", json_object_new_array());
    json_object_object_add(root, "big", json_object_new_uint64(UINT64_MAX));
    assert_string_equal(mine, json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY));
    json_object_put(root);
    doc_close(&d);
}

/* Misuse is -EINVAL, kept until the end. */
static void test_jsonw__misuse_is_kept_until_finish(void **state)
{
    (void)state;
    struct doc d;
    int err;
    /* a value with no key in an object */
    struct jsonw *w = doc_open(&d, 0);
    jsonw_object(w, NULL);
    jsonw_int(w, NULL, 1);
    jsonw_int(w, "k", 2);
    jsonw_end(w);
    (void)doc_end(&d, &err);
    assert_int_equal(err, -EINVAL);
    assert_int_equal(jsonw_error(w), -EINVAL);
    doc_close(&d);
    /* a key in an array */
    w = doc_open(&d, 0);
    jsonw_array(w, NULL);
    jsonw_int(w, "k", 1);
    (void)doc_end(&d, &err);
    assert_int_equal(err, -EINVAL);
    doc_close(&d);
    /* a key at the top level */
    w = doc_open(&d, 0);
    jsonw_int(w, "k", 1);
    (void)doc_end(&d, &err);
    assert_int_equal(err, -EINVAL);
    doc_close(&d);
    /* an end with nothing open */
    w = doc_open(&d, 0);
    jsonw_end(w);
    (void)doc_end(&d, &err);
    assert_int_equal(err, -EINVAL);
    doc_close(&d);
    /* a second top-level value */
    w = doc_open(&d, 0);
    jsonw_int(w, NULL, 1);
    jsonw_int(w, NULL, 2);
    (void)doc_end(&d, &err);
    assert_int_equal(err, -EINVAL);
    doc_close(&d);
    /* a container left open, and no value at all */
    w = doc_open(&d, 0);
    jsonw_array(w, NULL);
    (void)doc_end(&d, &err);
    assert_int_equal(err, -EINVAL);
    doc_close(&d);
    (void)doc_open(&d, 0);
    (void)doc_end(&d, &err);
    assert_int_equal(err, -EINVAL);
    doc_close(&d);
}

/* JSONW_MAX_DEPTH levels are fine; one more is -ELOOP. */
static void test_jsonw__depth_is_bounded(void **state)
{
    (void)state;
    struct jsonw c;
    jsonw_init_count(&c, 0);
    for (unsigned i = 0; i < JSONW_MAX_DEPTH; i++)
        jsonw_array(&c, NULL);
    assert_int_equal(jsonw_error(&c), 0);
    for (unsigned i = 0; i < JSONW_MAX_DEPTH; i++)
        jsonw_end(&c);
    assert_int_equal(jsonw_finish(&c), 0);
    assert_int_equal(jsonw_bytes(&c), 2 * JSONW_MAX_DEPTH);

    jsonw_init_count(&c, 0);
    for (unsigned i = 0; i <= JSONW_MAX_DEPTH; i++)
        jsonw_object(&c, i ? "k" : NULL);
    assert_int_equal(jsonw_finish(&c), -ELOOP);
}

/* The buffer's cap is the writer's: -E2BIG, and the buffer holds no more than its cap. */
static void test_jsonw__buffer_cap(void **state)
{
    (void)state;
    struct buf b;
    struct jsonw w;
    buf_init(&b, 10);
    jsonw_init_buf(&w, &b, 0);
    jsonw_array(&w, NULL);
    jsonw_string(&w, NULL, "0123456789");
    jsonw_int(&w, NULL, 1);
    jsonw_end(&w);
    assert_int_equal(jsonw_finish(&w), -E2BIG);
    assert_true(buf_len(&b) <= 10);
    buf_release(&b);
}

/* A stream's write error is -EIO; so is a stream already in error at the end. */
static void test_jsonw__stream_errors(void **state)
{
    (void)state;
    FILE *f = fopen("/dev/full", "w");
    assert_non_null(f);
    setvbuf(f, NULL, _IONBF, 0);
    struct jsonw w;
    jsonw_init_file(&w, f, 0);
    jsonw_string(&w, NULL, "x");
    assert_int_equal(jsonw_finish(&w), -EIO);
    fclose(f);

    char mem[64];
    f = fmemopen(mem, sizeof(mem), "w");
    assert_non_null(f);
    jsonw_init_file(&w, f, 0);
    jsonw_array(&w, NULL);
    jsonw_uint(&w, NULL, 12345);
    jsonw_end(&w);
    assert_int_equal(jsonw_finish(&w), 0);
    fclose(f);
    assert_string_equal(mem, "[12345]");
}

/* Pieces gathered across the stage's edge, and one larger than it, reach every sink alike. */
static void test_jsonw__sinks_agree(void **state)
{
    (void)state;
    static char mem[1 << 16];
    char big[3 * JSONW_STAGE];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    FILE *f = fmemopen(mem, sizeof(mem), "w");
    assert_non_null(f);
    struct buf b;
    buf_init(&b, 1 << 16);
    struct jsonw w[3];
    jsonw_init_file(&w[0], f, JSONW_PRETTY);
    jsonw_init_buf(&w[1], &b, JSONW_PRETTY);
    jsonw_init_count(&w[2], JSONW_PRETTY);
    for (int k = 0; k < 3; k++) {
        jsonw_array(&w[k], NULL);
        for (int i = 0; i < 300; i++) {
            jsonw_object(&w[k], NULL);
            jsonw_int(&w[k], "i", i);
            jsonw_string(&w[k], "s", i == 150 ? big : "<a\n>");
            jsonw_end(&w[k]);
        }
        jsonw_end(&w[k]);
        assert_int_equal(jsonw_finish(&w[k]), 0);
    }
    long n = ftell(f);
    fclose(f);
    assert_int_equal(n, buf_len(&b));
    assert_int_equal(jsonw_bytes(&w[2]), buf_len(&b));
    assert_memory_equal(mem, buf_str(&b), buf_len(&b));
    assert_true(buf_len(&b) > 4 * JSONW_STAGE);
    assert_non_null(strstr(buf_str(&b), big));
    buf_release(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_jsonw__nesting_and_commas),
        cmocka_unit_test(test_jsonw__escapes),
        cmocka_unit_test(test_jsonw__invalid_utf8),
        cmocka_unit_test(test_jsonw__pictures),
        cmocka_unit_test(test_jsonw__numbers),
        cmocka_unit_test(test_jsonw__pretty_is_json_c_layout),
        cmocka_unit_test(test_jsonw__misuse_is_kept_until_finish),
        cmocka_unit_test(test_jsonw__depth_is_bounded),
        cmocka_unit_test(test_jsonw__buffer_cap),
        cmocka_unit_test(test_jsonw__stream_errors),
        cmocka_unit_test(test_jsonw__sinks_agree),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
