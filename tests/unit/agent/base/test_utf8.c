/* SPDX-License-Identifier: MIT */
/*
 * Tests for agent/base/utf8.c: what is a valid sequence (overlong forms,
 * surrogates, beyond U+10FFFF, truncation, stray continuations), encoding
 * (round trip over every code point), cutting on a character boundary, and
 * replacing invalid sequences with U+FFFD as CPython does: checked against
 * Debian's own /usr/bin/python3 (bytes.decode("utf-8", "replace")) over every
 * string of one and two bytes, the interesting ones of three and four, and
 * random ones.
 */
#include "base/compat.h"

#include <unistd.h>

#include "cmocka_wrap.h"

#include "base/utf8.h"
#include "test_util.h"

static void test_utf8__sequences(void **state)
{
    (void)state;
    uint32_t cp = 0;
    assert_int_equal(utf8_seq_len((const unsigned char *)"a", 1, &cp), 1);
    assert_int_equal(cp, 'a');
    assert_int_equal(utf8_seq_len((const unsigned char *)"\xc3\xa4", 2, &cp), 2);
    assert_int_equal(cp, 0xe4);
    assert_int_equal(utf8_seq_len((const unsigned char *)"\xe2\x82\xac", 3, &cp), 3);
    assert_int_equal(cp, 0x20ac);
    assert_int_equal(utf8_seq_len((const unsigned char *)"\xf0\x9f\x98\x80", 4, &cp), 4);
    assert_int_equal(cp, 0x1f600);
    /* invalid */
    static const char *const bad[] = {
        "\x80",             /* stray continuation */
        "\xc0\xaf",         /* overlong '/' */
        "\xe0\x80\xaf",     /* overlong */
        "\xed\xa0\x80",     /* surrogate U+D800 */
        "\xf4\x90\x80\x80", /* U+110000 */
        "\xf8\x88\x80\x80", /* 5-byte form */
        "\xc3",             /* cut short */
        "\xc3\x41",         /* not a continuation */
    };
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(bad); i++)
        assert_int_equal(utf8_seq_len((const unsigned char *)bad[i], strlen(bad[i]), NULL), 0);
    assert_int_equal(utf8_seq_len((const unsigned char *)"\xe2\x82\xac", 2, NULL), 0);
    assert_int_equal(utf8_seq_len((const unsigned char *)"x", 0, NULL), 0);
}

static void test_utf8__valid_strings(void **state)
{
    (void)state;
    assert_true(utf8_valid("", 0));
    assert_true(utf8_valid("za\xc5\xbc\xc3\xb3\xc5\x82\xc4\x87", 10));
    assert_false(utf8_valid("a\0b", 3));
    assert_false(utf8_valid("ab\xff", 3));
    assert_false(utf8_valid("\xe2\x82", 2));
}

static void test_utf8__encode_round_trips(void **state)
{
    (void)state;
    unsigned char out[UTF8_MAX_SEQ];
    for (uint32_t cp = 1; cp <= 0x10ffff; cp++) {
        size_t n = utf8_encode(cp, out);
        uint32_t back = 0;
        if (cp >= 0xd800 && cp <= 0xdfff) {
            assert_int_equal(n, 3);
            assert_int_equal(utf8_seq_len(out, n, &back), 3);
            assert_int_equal(back, UTF8_REPLACEMENT);
            continue;
        }
        assert_int_equal(utf8_seq_len(out, n, &back), n);
        assert_int_equal(back, cp);
    }
    assert_int_equal(utf8_encode(0x110000, out), 3); /* U+FFFD */
}

static void test_utf8__cut_on_a_boundary(void **state)
{
    (void)state;
    const char *s = "ab\xe2\x82\xac"
                    "cd"; /* a b EURO c d: 7 bytes */
    assert_int_equal(utf8_cut(s, 7, 100), 7);
    assert_int_equal(utf8_cut(s, 7, 7), 7);
    assert_int_equal(utf8_cut(s, 7, 6), 6);
    assert_int_equal(utf8_cut(s, 7, 5), 5); /* after the euro sign */
    assert_int_equal(utf8_cut(s, 7, 4), 2); /* inside it: before it */
    assert_int_equal(utf8_cut(s, 7, 3), 2);
    assert_int_equal(utf8_cut(s, 7, 2), 2);
    assert_int_equal(utf8_cut(s, 7, 0), 0);
    const char *emoji = "\xf0\x9f\x98\x80\xf0\x9f\x98\x80";
    for (size_t max = 4; max < 8; max++)
        assert_int_equal(utf8_cut(emoji, 8, max), 4);
    for (size_t max = 0; max < 4; max++)
        assert_int_equal(utf8_cut(emoji, 8, max), 0);
}

/* Sanitised @in (@n bytes, NULs allowed) as a fresh C string (cmocka's test_malloc). */
static char *sanitized(const char *in, size_t n, size_t *len)
{
    size_t need = utf8_sanitized_len(in, n, NULL);
    char *out = test_malloc(need + 1);
    *len = utf8_sanitize(out, need + 1, in, n);
    assert_int_equal(*len, need);
    return out;
}

static void check_sanitized(const char *in, size_t n, const char *want, size_t want_len,
                            size_t want_replaced)
{
    size_t len, replaced = 99;
    uint64_t before = utf8_replaced_total();
    assert_int_equal(utf8_sanitized_len(in, n, &replaced), want_len);
    assert_int_equal(replaced, want_replaced);
    assert_int_equal(utf8_replaced_total(), before); /* sizing counts nothing */
    char *out = sanitized(in, n, &len);
    assert_int_equal(len, want_len);
    assert_memory_equal(out, want, want_len);
    assert_int_equal(out[len], '\0');
    assert_int_equal(utf8_replaced_total() - before, want_replaced);
    test_free(out);
}

#define FFFD UTF8_REPLACEMENT_STR

/* Literal byte strings: sizeof - 1 keeps NULs inside. */
#define CHECK(in, want, nrep) check_sanitized(in, sizeof(in) - 1, want, sizeof(want) - 1, nrep)

static void test_utf8__replaces_maximal_subparts(void **state)
{
    (void)state;
    CHECK("", "", 0);
    CHECK("plain ascii", "plain ascii", 0);
    CHECK("za\xc5\xbc\xc3\xb3\xc5\x82\xc4\x87 \xf0\x9f\x98\x80",
          "za\xc5\xbc\xc3\xb3\xc5\x82\xc4\x87 \xf0\x9f\x98\x80", 0);
    CHECK("a\0b", "a\0b", 0);            /* NUL is valid UTF-8 */
    CHECK(FFFD, FFFD, 0);                /* a real U+FFFD is not a replacement */
    CHECK("\xe2\x82\xff", FFFD FFFD, 2); /* E2 82 cut short, then FF */
    CHECK("\xe2\x82", FFFD, 1);
    CHECK("\xf0\x9f\x98", FFFD, 1);
    CHECK("\xf0\x80\x80", FFFD FFFD FFFD, 3); /* F0 takes 90-BF next */
    CHECK("\xe0\x80\xaf", FFFD FFFD FFFD, 3); /* overlong: E0 takes A0-BF */
    CHECK("\xc0\xaf", FFFD FFFD, 2);
    CHECK("\xed\xa0\x80", FFFD FFFD FFFD, 3);          /* a surrogate: ED takes 80-9F */
    CHECK("\xed\x9f\xbf", "\xed\x9f\xbf", 0);          /* U+D7FF */
    CHECK("\xf4\x90\x80\x80", FFFD FFFD FFFD FFFD, 4); /* beyond U+10FFFF */
    CHECK("\xf4\x8f\xbf\xbf", "\xf4\x8f\xbf\xbf", 0);  /* U+10FFFF */
    CHECK("\xf5\x80", FFFD FFFD, 2);
    CHECK("\x80\xbf", FFFD FFFD, 2); /* stray continuation bytes, one each */
    CHECK("\xff\xfe", FFFD FFFD, 2);
    CHECK("\xe1\x80\xe2\x82\xacx",
          FFFD "\xe2\x82\xac"
               "x",
          1);
    /* Unicode 15, Table 3-8 (U+FFFD for non-shortest form sequences and its neighbours) */
    CHECK("\x61\xf1\x80\x80\xe1\x80\xc2\x62\x80\x63\x80\xbf\x64",
          "a" FFFD FFFD FFFD "b" FFFD "c" FFFD FFFD "d", 6);
}

static void test_utf8__sanitize_cuts_on_a_boundary(void **state)
{
    (void)state;
    char out[16];
    const char in[] = "ab\xff"
                      "\xe2\x82\xac"
                      "c"; /* a b FF EURO c */
    const size_t n = sizeof(in) - 1;
    /* the whole result is a b FFFD EURO c: 9 bytes */
    static const size_t kept[] = {0, 0, 1, 2, 2, 2, 5, 5, 5, 8, 9, 9};
    for (size_t cap = 1; cap < PYPROFD_ARRAY_SIZE(kept); cap++) {
        memset(out, 'x', sizeof(out));
        uint64_t before = utf8_replaced_total();
        size_t len = utf8_sanitize(out, cap, in, n);
        assert_int_equal(len, kept[cap]);
        assert_int_equal(out[len], '\0');
        assert_int_equal(out[cap], 'x'); /* nothing beyond the cap */
        assert_true(utf8_valid(out, len));
        /* only a U+FFFD that was written counts */
        assert_int_equal(utf8_replaced_total() - before, len >= 5 ? 1 : 0);
    }
    memset(out, 'x', sizeof(out));
    assert_int_equal(utf8_sanitize(out, 0, in, n), 0);
    assert_int_equal(out[0], 'x'); /* cap 0: nothing written */
}

static void test_utf8__counter_adds_up(void **state)
{
    (void)state;
    char out[64];
    uint64_t before = utf8_replaced_total();
    utf8_count_replaced(5);
    assert_int_equal(utf8_replaced_total() - before, 5);
    (void)utf8_sanitize(out, sizeof(out), "\xff\xff\xff", 3);
    assert_int_equal(utf8_replaced_total() - before, 8);
    (void)utf8_sanitize(out, sizeof(out), "valid \xc3\xa4", 8);
    assert_int_equal(utf8_replaced_total() - before, 8);
}

static void test_utf8__trims_a_sequence_cut_short(void **state)
{
    (void)state;
    const struct {
        const char *s;
        size_t n, want;
    } cases[] = {
        {"", 0, 0},
        {"abc", 3, 3},
        {"ab\xe2\x82\xac", 5, 5},   /* whole */
        {"ab\xe2\x82", 4, 2},       /* EURO cut after 2 bytes */
        {"ab\xe2", 3, 2},           /* ... after 1 */
        {"ab\xf0\x9f\x98", 5, 2},   /* an emoji cut after 3 */
        {"ab\xc3", 3, 2},           /* a 2-byte sequence cut after 1 */
        {"ab\xe0\x80", 4, 4},       /* E0 80 could never be completed: left */
        {"ab\xed\xa0", 4, 4},       /* a surrogate's start: left */
        {"ab\xff", 3, 3},           /* invalid, not cut: left */
        {"ab\x80", 3, 3},           /* a stray continuation byte: left */
        {"\xe2\x82\xac\x82", 4, 4}, /* a stray continuation after a whole sequence */
        {"ab\xf4\x8f\xbf", 5, 2},   /* U+10FFFF cut short */
        {"ab\xf4\x90\xbf", 5, 5},   /* F4 90: beyond U+10FFFF, not a cut */
    };
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(cases); i++) {
        size_t got = utf8_trim_cut(cases[i].s, cases[i].n);
        if (got != cases[i].want)
            fail_msg("case %zu: %zu, want %zu", i, got, cases[i].want);
    }
}

/* ---- the same as CPython, checked against Debian's own python3 ---- */

/* Bytes that decide the decoder's paths: ASCII, each continuation range, each lead class. */
static const unsigned char probe_bytes[] = {0x00, 0x41, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf,
                                            0xc0, 0xc1, 0xc2, 0xdf, 0xe0, 0xe1, 0xec, 0xed, 0xee,
                                            0xef, 0xf0, 0xf1, 0xf3, 0xf4, 0xf5, 0xf8, 0xfe, 0xff};

static uint64_t rng_next(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static void put_hex(FILE *f, const unsigned char *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%02x", b[i]);
    fputc('\n', f);
}

/* A random string mixing valid characters (whole or cut) with invalid bytes. */
static size_t random_string(uint64_t *x, unsigned char *b, size_t cap)
{
    size_t n = 0, want = rng_next(x) % 40;
    while (n + UTF8_MAX_SEQ <= cap && n < want) {
        uint64_t r = rng_next(x);
        switch (r % 4) {
        case 0:
            b[n++] = (unsigned char)(r >> 8); /* any byte */
            break;
        case 1:
            b[n++] = probe_bytes[(r >> 8) % sizeof(probe_bytes)];
            break;
        default: { /* a character, sometimes cut short */
            static const uint32_t tops[] = {0x80, 0x800, 0x10000, 0x110000};
            uint32_t cp = (uint32_t)((r >> 8) % tops[(r >> 40) % 4]);
            unsigned char enc[UTF8_MAX_SEQ];
            size_t len = utf8_encode(cp, enc);
            if (len > 1 && (r >> 50) % 4 == 0)
                len = 1 + (r >> 52) % (len - 1);
            memcpy(b + n, enc, len);
            n += len;
        }
        }
    }
    return n;
}

static const char python_replace[] =
    "import codecs, sys\n"
    "errors = 0\n"
    "def count(e):\n"
    "    global errors\n"
    "    errors += 1\n"
    "    return ('\\ufffd', e.end)\n"
    "codecs.register_error('count', count)\n"
    "with open(sys.argv[1]) as f, open(sys.argv[2], 'w') as o:\n"
    "    for line in f:\n"
    "        errors = 0\n"
    "        out = bytes.fromhex(line.strip()).decode('utf-8', 'count').encode('utf-8')\n"
    "        o.write(f'{out.hex()} {errors}\\n')\n";

static void test_utf8__sanitize_matches_python(void **state)
{
    (void)state;
    char dir[] = "/tmp/test_utf8.XXXXXX";
    char in_path[64], out_path[64], script[64], cmd[512], msg[256];
    assert_non_null(mkdtemp(dir));
    snprintf(in_path, sizeof(in_path), "%s/in", dir);
    snprintf(out_path, sizeof(out_path), "%s/out", dir);
    snprintf(script, sizeof(script), "%s/replace.py", dir);
    FILE *f = fopen(script, "w");
    assert_non_null(f);
    fputs(python_replace, f);
    assert_int_equal(fclose(f), 0);

    /* every string of 1 and 2 bytes; of 3 and 4 bytes over the probe bytes; random ones */
    f = fopen(in_path, "w");
    assert_non_null(f);
    size_t lines = 0;
    unsigned char b[64];
    const size_t np = sizeof(probe_bytes);
    for (unsigned i = 0; i < 256; i++, lines++)
        put_hex(f, (b[0] = (unsigned char)i, b), 1);
    for (unsigned i = 0; i < 65536; i++, lines++) {
        b[0] = (unsigned char)(i >> 8);
        b[1] = (unsigned char)i;
        put_hex(f, b, 2);
    }
    for (size_t i = 0; i < np * np * np; i++, lines++) {
        b[0] = probe_bytes[i / (np * np)];
        b[1] = probe_bytes[i / np % np];
        b[2] = probe_bytes[i % np];
        put_hex(f, b, 3);
    }
    /* four bytes: the leads with a narrowed second byte, ended by a few kinds of byte */
    static const unsigned char leads4[] = {0xe0, 0xed, 0xf0, 0xf4};
    static const unsigned char ends4[] = {0x41, 0x80, 0xbf, 0xc2, 0xff};
    const size_t ne = sizeof(ends4);
    for (size_t i = 0; i < sizeof(leads4) * np * np * ne; i++, lines++) {
        b[0] = leads4[i / (np * np * ne)];
        b[1] = probe_bytes[i / (np * ne) % np];
        b[2] = probe_bytes[i / ne % np];
        b[3] = ends4[i % ne];
        put_hex(f, b, 4);
    }
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < 20000; i++, lines++)
        put_hex(f, b, random_string(&x, b, sizeof(b)));
    assert_int_equal(fclose(f), 0);

    snprintf(cmd, sizeof(cmd), "/usr/bin/python3 %s %s %s 2>&1", script, in_path, out_path);
    int rc = test_run(cmd, msg, sizeof(msg));
    if (rc != 0)
        fail_msg("/usr/bin/python3 failed (%d): %s", rc, msg);

    FILE *in = fopen(in_path, "r"), *want = fopen(out_path, "r");
    assert_non_null(in);
    assert_non_null(want);
    char in_line[256], want_line[1024];
    size_t checked = 0, with_errors = 0;
    while (fgets(in_line, sizeof(in_line), in)) {
        assert_non_null(fgets(want_line, sizeof(want_line), want));
        unsigned char bytes[64];
        size_t n = 0;
        for (const char *p = in_line; p[0] && p[0] != '\n'; p += 2) {
            unsigned v;
            assert_int_equal(sscanf(p, "%2x", &v), 1);
            bytes[n++] = (unsigned char)v;
        }
        size_t len, replaced;
        assert_int_equal(utf8_sanitized_len((const char *)bytes, n, &replaced),
                         utf8_sanitized_len((const char *)bytes, n, NULL));
        char *out = sanitized((const char *)bytes, n, &len);
        char got[1024];
        size_t o = 0;
        for (size_t i = 0; i < len; i++)
            o += (size_t)snprintf(got + o, sizeof(got) - o, "%02x", (unsigned char)out[i]);
        snprintf(got + o, sizeof(got) - o, " %zu\n", replaced);
        test_free(out);
        if (strcmp(got, want_line) != 0)
            fail_msg("input %.*s: pyprofd %.*s, python3 %s", (int)strcspn(in_line, "\n"), in_line,
                     (int)strcspn(got, "\n"), got, want_line);
        checked++;
        with_errors += replaced > 0;
    }
    assert_null(fgets(want_line, sizeof(want_line), want));
    fclose(in);
    fclose(want);
    assert_int_equal(checked, lines);
    assert_true(with_errors > lines / 4); /* the inputs did exercise the replacement */
    unlink(in_path);
    unlink(out_path);
    unlink(script);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_utf8__sequences),
        cmocka_unit_test(test_utf8__valid_strings),
        cmocka_unit_test(test_utf8__encode_round_trips),
        cmocka_unit_test(test_utf8__cut_on_a_boundary),
        cmocka_unit_test(test_utf8__replaces_maximal_subparts),
        cmocka_unit_test(test_utf8__sanitize_cuts_on_a_boundary),
        cmocka_unit_test(test_utf8__counter_adds_up),
        cmocka_unit_test(test_utf8__trims_a_sequence_cut_short),
        cmocka_unit_test(test_utf8__sanitize_matches_python),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
