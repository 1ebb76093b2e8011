/* SPDX-License-Identifier: MIT */
/*
 * Tests for agent/base/jsonscan.c: the tokens of a document, the same tokens
 * however the input is split, RFC 8259's edges (numbers, escapes, surrogates,
 * whitespace, UTF-8), what is refused and that refusals stick, nesting,
 * texts cut on a character boundary, several values in a row, and that the
 * memory held does not grow with the input.
 */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include "base/alloc.h"
#include "base/buf.h"
#include "base/jsonscan.h"

/* The tokens as one line: {  }  [  ]  k:"…"  s:"…"  n:…  T F N  | (end), flags as !cut etc. */
static int show_token(void *arg, const struct jsonscan_token *t)
{
    struct buf *b = arg;
    int rc = 0;
    switch (t->type) {
    case JSONSCAN_OBJECT_BEGIN:
        rc = buf_addf(b, "{%u ", t->depth);
        break;
    case JSONSCAN_OBJECT_END:
        rc = buf_addf(b, "}%u ", t->depth);
        break;
    case JSONSCAN_ARRAY_BEGIN:
        rc = buf_addf(b, "[%u ", t->depth);
        break;
    case JSONSCAN_ARRAY_END:
        rc = buf_addf(b, "]%u ", t->depth);
        break;
    case JSONSCAN_KEY:
    case JSONSCAN_STRING:
    case JSONSCAN_NUMBER: {
        char kind = t->type == JSONSCAN_KEY ? 'k' : t->type == JSONSCAN_STRING ? 's' : 'n';
        assert_int_equal(strlen(t->text) <= t->len, true);
        rc = buf_addf(b, "%c%u:\"", kind, t->depth);
        for (size_t i = 0; rc == 0 && i < t->len; i++) {
            unsigned char c = (unsigned char)t->text[i];
            rc = (c < 0x20 || c == '"') ? buf_addf(b, "\\x%02x", c) : buf_add(b, &t->text[i], 1);
        }
        if (rc == 0)
            rc = buf_addf(b, "\"%s%s%s", t->flags & JSONSCAN_CUT ? "!cut" : "",
                          t->flags & JSONSCAN_HAS_NUL ? "!nul" : "",
                          t->flags & JSONSCAN_REPLACED ? "!rep" : "");
        if (rc == 0 && t->full_len != t->len)
            rc = buf_addf(b, "/%" PRIu64, t->full_len);
        if (rc == 0)
            rc = buf_adds(b, " ");
        break;
    }
    case JSONSCAN_TRUE:
        rc = buf_addf(b, "T%u ", t->depth);
        break;
    case JSONSCAN_FALSE:
        rc = buf_addf(b, "F%u ", t->depth);
        break;
    case JSONSCAN_NULL:
        rc = buf_addf(b, "N%u ", t->depth);
        break;
    case JSONSCAN_END:
        rc = buf_adds(b, "| ");
        break;
    }
    assert_int_equal(rc, 0);
    return 0;
}

/*
 * Scans @a in (single value, or a sequence when @a multi) in pieces of
 * @a piece bytes (0: whole). Returns the result and the tokens in @a out.
 */
static int scan(const char *in, size_t len, bool multi, size_t piece, size_t cap, struct buf *out)
{
    struct jsonscan *s = NULL;
    assert_int_equal(jsonscan_new(16, cap, multi ? JSONSCAN_MULTI : 0, &s), 0);
    buf_reset(out);
    int rc = 0;
    if (piece == 0)
        piece = len ? len : 1;
    for (size_t at = 0; at < len && rc == 0; at += piece) {
        size_t n = len - at < piece ? len - at : piece;
        rc = jsonscan_feed(s, in + at, n, show_token, out);
    }
    if (rc == 0)
        rc = jsonscan_finish(s, show_token, out);
    jsonscan_free(s);
    return rc;
}

static void expect_tokens(const char *in, const char *want)
{
    struct buf b;
    buf_init(&b, 1 << 20);
    size_t len = strlen(in);
    /* the same tokens whatever the pieces */
    for (size_t piece = 0; piece <= len; piece += piece < 4 ? 1 : 7) {
        int rc = scan(in, len, false, piece, 64, &b);
        if (rc != 0 || strcmp(buf_str(&b), want) != 0)
            fail_msg("input %s, pieces of %zu: rc %d, tokens\n  %s\nwanted\n  %s", in, piece, rc,
                     buf_str(&b), want);
    }
    buf_release(&b);
}

static void expect_refused(const char *in, size_t len, int want)
{
    struct buf b;
    buf_init(&b, 1 << 20);
    for (size_t piece = 0; piece <= len; piece++) {
        int rc = scan(in, len, false, piece, 64, &b);
        if (rc != want)
            fail_msg("input '%.*s' (%zu bytes), pieces of %zu: rc %d, wanted %d", (int)len, in, len,
                     piece, rc, want);
    }
    buf_release(&b);
}

static void test_jsonscan__tokens_of_a_document(void **state)
{
    (void)state;
    expect_tokens("{\"type\":\"ADDED\",\"object\":{\"a\":[1,-2.5e+3,true,false,null,{}],\"b\":[]}}",
                  "{0 k1:\"type\" s1:\"ADDED\" k1:\"object\" {1 k2:\"a\" [2 n3:\"1\" "
                  "n3:\"-2.5e+3\" T3 F3 N3 {3 }3 ]2 k2:\"b\" [2 ]2 }1 }0 | ");
    expect_tokens(" \t\r\n[ 1 , \"x\" ]\n ", "[0 n1:\"1\" s1:\"x\" ]0 | ");
    /* scalars at the top level; a number ends with the input */
    expect_tokens("\"just a string\"", "s0:\"just a string\" | ");
    expect_tokens("0", "n0:\"0\" | ");
    expect_tokens("-0.0e-0", "n0:\"-0.0e-0\" | ");
    expect_tokens("true", "T0 | ");
    /* an empty key is a key */
    expect_tokens("{\"\":\"\"}", "{0 k1:\"\" s1:\"\" }0 | ");
}

static void test_jsonscan__escapes_and_unicode(void **state)
{
    (void)state;
    expect_tokens("\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"", "s0:\"\\x22\\/\\x08\\x0c\\x0a\\x0d\\x09\" | ");
    /* \u escapes: BMP, a surrogate pair, raw UTF-8 kept as it is */
    expect_tokens(
        "\"\\u00e9\\u20AC\\ud83d\\ude00 \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"",
        "s0:\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80 \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\" "
        "| ");
    /* lone surrogates become U+FFFD, marked */
    expect_tokens("\"a\\ud800b\"", "s0:\"a\xef\xbf\xbd"
                                   "b\"!rep | ");
    expect_tokens("\"\\udc00\"", "s0:\"\xef\xbf\xbd\"!rep | ");
    expect_tokens("\"\\ud800\\n\"", "s0:\"\xef\xbf\xbd\\x0a\"!rep | ");
    expect_tokens("\"\\ud800\\ud800\\udc00\"", "s0:\"\xef\xbf\xbd\xf0\x90\x80\x80\"!rep | ");
    expect_tokens("\"\\ud800\"", "s0:\"\xef\xbf\xbd\"!rep | ");
    /* U+0000 is kept and marked */
    expect_tokens("\"a\\u0000b\"", "s0:\"a\\x00b\"!nul | ");
}

static void test_jsonscan__refuses_what_rfc8259_does(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "   ",
        "{",
        "}",
        "[1,]",
        "{\"a\":1,}",
        "[1 2]",
        "{\"a\" 1}",
        "{a:1}",
        "{'a':1}",
        "['a']",
        "01",
        "-",
        "1.",
        ".5",
        "1e",
        "1e+",
        "+1",
        "NaN",
        "Infinity",
        "tru",
        "nul",
        "truex",
        "[true false]",
        "\"a",
        "\"\\x\"",
        "\"\\u12\"",
        "\"\\u12g4\"",
        "{} {}",
        "[]]",
        "{\"a\"}",
        "{\"a\":}",
        "[,1]",
        "/**/1",
        "1 // x",
        "[1]\v",
        "\"\t\"",
        "\"\n\"",
        "{\"a\":1]",
        "[1}",
        "{\"a\":1 \"b\":2}",
        "\xef\xbb\xbf{}", /* a byte order mark */
    };
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(bad); i++)
        expect_refused(bad[i], strlen(bad[i]), -EBADMSG);
    /* invalid UTF-8 inside a string */
    static const char *const bad_utf8[] = {
        "\"\x80\"",         "\"\xc0\xaf\"",         "\"\xc1\xbf\"",         "\"\xe0\x80\xaf\"",
        "\"\xed\xa0\x80\"", "\"\xf4\x90\x80\x80\"", "\"\xf5\x80\x80\x80\"", "\"\xff\"",
        "\"\xc3\"",         "\"\xc3\x41\"",         "\"\xe2\x82\"",         "\"\xf0\x9f\x98\"",
    };
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(bad_utf8); i++)
        expect_refused(bad_utf8[i], strlen(bad_utf8[i]), -EBADMSG);
    /* a NUL byte is a control character */
    expect_refused("\"a\0\"", 4, -EBADMSG);
    expect_refused("[1]\0", 4, -EBADMSG);
}

static void test_jsonscan__errors_stick(void **state)
{
    (void)state;
    struct jsonscan *s = NULL;
    assert_int_equal(jsonscan_new(8, 64, JSONSCAN_MULTI, &s), 0);
    assert_int_equal(jsonscan_feed(s, "[1,,", 4, NULL, NULL), -EBADMSG);
    assert_int_equal(jsonscan_feed(s, "2]", 2, NULL, NULL), -EBADMSG);
    assert_int_equal(jsonscan_finish(s, NULL, NULL), -EBADMSG);
    assert_false(jsonscan_idle(s));
    jsonscan_reset(s);
    assert_true(jsonscan_idle(s));
    assert_int_equal(jsonscan_feed(s, "[1,2]", 5, NULL, NULL), 0);
    assert_int_equal(jsonscan_finish(s, NULL, NULL), 0);
    jsonscan_free(s);
}

static void test_jsonscan__nesting_is_bounded(void **state)
{
    (void)state;
    struct jsonscan *s = NULL;
    assert_int_equal(jsonscan_new(3, 64, 0, &s), 0);
    assert_int_equal(jsonscan_feed(s, "[[[1]]]", 7, NULL, NULL), 0);
    assert_int_equal(jsonscan_finish(s, NULL, NULL), 0);
    jsonscan_reset(s);
    assert_int_equal(jsonscan_feed(s, "[[{\"a\":[", 8, NULL, NULL), -ELOOP);
    assert_int_equal(jsonscan_feed(s, "]}]]", 4, NULL, NULL), -ELOOP);
    jsonscan_free(s);
    /* the deepest a scanner can be made for works at that depth */
    assert_int_equal(jsonscan_new(JSONSCAN_MAX_DEPTH, 64, 0, &s), 0);
    char deep[2 * JSONSCAN_MAX_DEPTH + 2];
    for (unsigned i = 0; i < JSONSCAN_MAX_DEPTH; i++) {
        deep[i] = '[';
        deep[2 * JSONSCAN_MAX_DEPTH - 1 - i] = ']';
    }
    assert_int_equal(jsonscan_feed(s, deep, 2 * JSONSCAN_MAX_DEPTH, NULL, NULL), 0);
    assert_int_equal(jsonscan_finish(s, NULL, NULL), 0);
    jsonscan_reset(s);
    assert_int_equal(jsonscan_feed(s, "[", 1, NULL, NULL), 0);
    assert_int_equal(jsonscan_feed(s, deep, JSONSCAN_MAX_DEPTH, NULL, NULL), -ELOOP);
    jsonscan_free(s);
    assert_int_equal(jsonscan_new(0, 64, 0, &s), -EINVAL);
    assert_int_equal(jsonscan_new(JSONSCAN_MAX_DEPTH + 1, 64, 0, &s), -EINVAL);
    assert_int_equal(jsonscan_new(4, 8, 0, &s), -EINVAL);
}

static void test_jsonscan__texts_are_cut_on_a_character(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 1 << 20);
    /* 16 bytes kept: "abcdefghijklmno" is 15, then a 2-byte character does not fit */
    const char *in =
        "[\"abcdefghijklmno\xc3\xa9xyz\",\"\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9"
        "\\u00e9\\u00e9\\u00e9\\u00e9\",1234567890123456789012345,\"0123456789abcdef\"]";
    for (size_t piece = 0; piece < strlen(in); piece++) {
        assert_int_equal(scan(in, strlen(in), false, piece, 16, &b), 0);
        assert_string_equal(
            buf_str(&b), "[0 s1:\"abcdefghijklmno\"!cut/20 "
                         "s1:\"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\"!"
                         "cut/18 n1:\"1234567890123456\"!cut/25 s1:\"0123456789abcdef\" ]0 | ");
    }
    buf_release(&b);
}

struct count {
    size_t tokens, ends;
    uint64_t last_value_bytes;
    struct jsonscan *s;
};

static int count_token(void *arg, const struct jsonscan_token *t)
{
    struct count *c = arg;
    c->tokens++;
    if (t->type == JSONSCAN_END) {
        c->ends++;
        c->last_value_bytes = jsonscan_value_bytes(c->s);
    }
    return 0;
}

static void test_jsonscan__a_sequence_of_values(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 1 << 20);
    const char *in = "{\"type\":\"ADDED\"}\n{\"type\":\"DELETED\"}\n\n  12 \"x\"[]\n";
    for (size_t piece = 0; piece < strlen(in); piece++) {
        assert_int_equal(scan(in, strlen(in), true, piece, 64, &b), 0);
        assert_string_equal(buf_str(&b), "{0 k1:\"type\" s1:\"ADDED\" }0 | {0 k1:\"type\" "
                                         "s1:\"DELETED\" }0 | n0:\"12\" | s0:\"x\" | [0 ]0 | ");
    }
    /* single-value mode refuses the second */
    assert_int_equal(scan(in, strlen(in), false, 0, 64, &b), -EBADMSG);
    buf_release(&b);
    /* the bytes of each value, and idle in between */
    struct count c = {0};
    assert_int_equal(jsonscan_new(8, 64, JSONSCAN_MULTI, &c.s), 0);
    assert_int_equal(jsonscan_feed(c.s, "  {\"a\": 1}", 10, count_token, &c), 0);
    assert_int_equal(c.last_value_bytes, 8);
    assert_true(jsonscan_idle(c.s));
    assert_int_equal(jsonscan_feed(c.s, "\n[1,", 4, count_token, &c), 0);
    assert_false(jsonscan_idle(c.s));
    assert_int_equal(jsonscan_value_bytes(c.s), 3);
    assert_int_equal(jsonscan_depth(c.s), 1);
    assert_int_equal(jsonscan_finish(c.s, count_token, &c), -EBADMSG);
    assert_int_equal(jsonscan_offset(c.s), 14);
    jsonscan_free(c.s);
}

static int stop_at_key(void *arg, const struct jsonscan_token *t)
{
    (void)arg;
    return t->type == JSONSCAN_KEY ? 42 : 0;
}

static void test_jsonscan__callback_stops_the_feed(void **state)
{
    (void)state;
    struct jsonscan *s = NULL;
    assert_int_equal(jsonscan_new(8, 64, 0, &s), 0);
    assert_int_equal(jsonscan_feed(s, "{\"a\":1}", 7, stop_at_key, NULL), 42);
    jsonscan_free(s);
}

struct skipper {
    struct jsonscan *s;
    struct buf *out;
};

/* Skips every array; shows the tokens like show_token(). */
static int skip_arrays(void *arg, const struct jsonscan_token *t)
{
    struct skipper *k = arg;
    if (t->type == JSONSCAN_ARRAY_BEGIN || t->type == JSONSCAN_KEY)
        jsonscan_skip(k->s); /* a key's request has no effect */
    return show_token(k->out, t);
}

static void test_jsonscan__skipped_containers(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 1 << 16);
    struct skipper k = {NULL, &b};
    assert_int_equal(jsonscan_new(16, 64, 0, &k.s), 0);
    const char *in = "{\"a\":[1,{\"x\":[2]},\"s\"],\"b\":{\"c\":3},\"d\":[]}";
    for (size_t piece = 1; piece <= strlen(in); piece++) {
        jsonscan_reset(k.s);
        buf_reset(&b);
        for (size_t at = 0; at < strlen(in); at += piece) {
            size_t n = strlen(in) - at < piece ? strlen(in) - at : piece;
            assert_int_equal(jsonscan_feed(k.s, in + at, n, skip_arrays, &k), 0);
        }
        assert_int_equal(jsonscan_finish(k.s, skip_arrays, &k), 0);
        assert_string_equal(buf_str(&b),
                            "{0 k1:\"a\" [1 ]1 k1:\"b\" {1 k2:\"c\" n2:\"3\" }1 k1:\"d\" "
                            "[1 ]1 }0 | ");
    }
    /* what is skipped is still checked */
    jsonscan_reset(k.s);
    assert_int_equal(jsonscan_feed(k.s, "[1,{\"a\":\"\xff\"}]", 14, skip_arrays, &k), -EBADMSG);
    jsonscan_reset(k.s);
    assert_int_equal(jsonscan_feed(k.s, "[1,]", 4, skip_arrays, &k), -EBADMSG);
    jsonscan_free(k.s);
    buf_release(&b);
}

static void test_jsonscan__memory_does_not_follow_the_input(void **state)
{
    (void)state;
    struct count c = {0};
    assert_int_equal(jsonscan_new(64, 4096, 0, &c.s), 0);
    size_t before = alloc_in_use();
    size_t mem = jsonscan_memory(c.s);
    assert_true(mem < 4096 + 1024);
    /* 8 MiB: an array of empty objects and one long string, fed in 64 KiB pieces */
    static char chunk[1 << 16];
    assert_int_equal(jsonscan_feed(c.s, "[\"", 2, count_token, &c), 0);
    memset(chunk, 'x', sizeof(chunk));
    for (int i = 0; i < 64; i++)
        assert_int_equal(jsonscan_feed(c.s, chunk, sizeof(chunk), count_token, &c), 0);
    assert_int_equal(jsonscan_feed(c.s, "\"", 1, count_token, &c), 0);
    for (size_t i = 0; i + 3 <= sizeof(chunk); i += 3)
        memcpy(chunk + i, ",{}", 3);
    for (int i = 0; i < 64; i++)
        assert_int_equal(jsonscan_feed(c.s, chunk, sizeof(chunk) / 3 * 3, count_token, &c), 0);
    assert_int_equal(jsonscan_feed(c.s, "]", 1, count_token, &c), 0);
    assert_int_equal(jsonscan_finish(c.s, count_token, &c), 0);
    assert_int_equal(alloc_in_use(), before);
    assert_int_equal(jsonscan_memory(c.s), mem);
    assert_int_equal(c.ends, 1);
    assert_int_equal(c.tokens, 1 + 1 + 64 * (sizeof(chunk) / 3) * 2 + 1 + 1);
    jsonscan_free(c.s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_jsonscan__tokens_of_a_document),
        cmocka_unit_test(test_jsonscan__escapes_and_unicode),
        cmocka_unit_test(test_jsonscan__refuses_what_rfc8259_does),
        cmocka_unit_test(test_jsonscan__errors_stick),
        cmocka_unit_test(test_jsonscan__nesting_is_bounded),
        cmocka_unit_test(test_jsonscan__texts_are_cut_on_a_character),
        cmocka_unit_test(test_jsonscan__a_sequence_of_values),
        cmocka_unit_test(test_jsonscan__callback_stops_the_feed),
        cmocka_unit_test(test_jsonscan__skipped_containers),
        cmocka_unit_test(test_jsonscan__memory_does_not_follow_the_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
