/* SPDX-License-Identifier: MIT */
/*
 * Tests for agent/base/utf8.c: what is a valid sequence (overlong forms,
 * surrogates, beyond U+10FFFF, truncation, stray continuations), encoding
 * (round trip over every code point), and cutting on a character boundary.
 */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include "base/utf8.h"

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_utf8__sequences),
        cmocka_unit_test(test_utf8__valid_strings),
        cmocka_unit_test(test_utf8__encode_round_trips),
        cmocka_unit_test(test_utf8__cut_on_a_boundary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
