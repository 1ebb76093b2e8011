/* SPDX-License-Identifier: MIT */
/*
 * Tests for agent/base/termtext.c: which bytes are shown escaped (C0, DEL,
 * C1 in both its UTF-8 and its raw form, bytes that are not UTF-8) and which
 * are kept (printable ASCII, valid UTF-8), cutting to a byte or column
 * budget without splitting an escape or a character, the widths the cut uses,
 * and writing to a stream.
 */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include "base/termtext.h"

/* The escaped form of the @a n bytes at @a s, in a buffer large enough for all of it. */
static const char *esc(const char *s, size_t n)
{
    static char out[1024];
    assert_true(TERMTEXT_MAX_GROWTH * n + 1 <= sizeof(out));
    assert_int_equal(termtext_escape(s, n, out, sizeof(out), SIZE_MAX, NULL), n);
    return out;
}

#define ESC(lit) esc(lit, sizeof(lit) - 1)

static void test_termtext__controls_are_escaped(void **state)
{
    (void)state;
    /* what retitled the tmux pane and turned the screen red */
    assert_string_equal(ESC("\x1b]0;pwned\x07"), "\\x1b]0;pwned\\x07");
    assert_string_equal(ESC("f\x1b[31mred"), "f\\x1b[31mred");
    /* every C0 control, tab, newline and carriage return included, and DEL */
    assert_string_equal(ESC("a\tb\nc\rd\x01\x1f\x7f"), "a\\x09b\\x0ac\\x0dd\\x01\\x1f\\x7f");
    /* NUL inside the given length is a control like the others */
    assert_string_equal(ESC("a\0b"), "a\\x00b");
    /* C1 controls: U+009B (CSI) and U+0085 (NEL) as UTF-8, each byte shown */
    assert_string_equal(ESC("x\xc2\x9b"
                            "31my\xc2\x85"),
                        "x\\xc2\\x9b31my\\xc2\\x85");
    /* and as raw 8-bit bytes, which are not UTF-8 */
    assert_string_equal(ESC("x\x9b"
                            "31m\x90"),
                        "x\\x9b31m\\x90");
    /* bytes that are not UTF-8: overlong, surrogate, beyond U+10FFFF, cut short */
    assert_string_equal(ESC("\xc0\xaf"), "\\xc0\\xaf");
    assert_string_equal(ESC("\xed\xa0\x80"), "\\xed\\xa0\\x80");
    assert_string_equal(ESC("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");
    assert_string_equal(ESC("ok\xe6\x97"), "ok\\xe6\\x97");
    /* a valid character right after an invalid byte is kept */
    assert_string_equal(ESC("\xff\xc3\xa9"), "\\xff\xc3\xa9");
}

static void test_termtext__printable_text_is_kept(void **state)
{
    (void)state;
    static const char *const kept[] = {
        "burn_half (/app/shares.py:12)",
        "<module>",
        "Klass.method.<locals>.inner",
        "C:\\path\\x1b",                        /* a backslash is text, kept as it is */
        "za\xc5\xbc\xc3\xb3\xc5\x82\xc4\x87",   /* zażółć */
        "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e", /* 日本語 */
        "\xf0\x9f\x98\x80",                     /* U+1F600 */
        "\xc2\xa0\xc2\xa1",                     /* U+00A0, U+00A1: just past C1 */
        "~",
    };
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(kept); i++)
        assert_string_equal(esc(kept[i], strlen(kept[i])), kept[i]);
    assert_string_equal(ESC(""), "");
}

/* A cut to a byte budget keeps whole escapes and whole characters. */
static void test_termtext__cut_to_bytes_never_splits(void **state)
{
    (void)state;
    char out[16];
    const char *s = "ab\x1b"
                    "cd";
    /* room for "ab" and 3 bytes: not enough for \x1b */
    assert_int_equal(termtext_escape(s, strlen(s), out, 6, SIZE_MAX, NULL), 2);
    assert_string_equal(out, "ab");
    assert_int_equal(termtext_escape(s, strlen(s), out, 7, SIZE_MAX, NULL), 3);
    assert_string_equal(out, "ab\\x1b");
    /* a C1 control is one piece of 8 bytes */
    assert_int_equal(termtext_escape("\xc2\x9bz", 3, out, 8, SIZE_MAX, NULL), 0);
    assert_string_equal(out, "");
    assert_int_equal(termtext_escape("\xc2\x9bz", 3, out, 9, SIZE_MAX, NULL), 2);
    assert_string_equal(out, "\\xc2\\x9b");
    /* a 3-byte character is not split */
    assert_int_equal(termtext_escape("a\xe6\x97\xa5", 4, out, 4, SIZE_MAX, NULL), 1);
    assert_string_equal(out, "a");
    /* size 1: only the NUL; size 0: nothing written at all */
    assert_int_equal(termtext_escape("abc", 3, out, 1, SIZE_MAX, NULL), 0);
    assert_string_equal(out, "");
    out[0] = 'X';
    assert_int_equal(termtext_escape("abc", 3, out, 0, SIZE_MAX, NULL), 0);
    assert_int_equal(out[0], 'X');
}

/* Columns count the escaped text; a cut to a column budget uses them. */
static void test_termtext__widths_count_the_escaped_text(void **state)
{
    (void)state;
    assert_int_equal(termtext_width("abc", 3), 3);
    assert_int_equal(termtext_width("\x1b[31m", 5), 4 + 4);
    assert_int_equal(termtext_width("\xc2\x9b", 2), 8);
    assert_int_equal(termtext_width("\xff", 1), 4);
    assert_int_equal(termtext_width("\xc3\xa9", 2), 1);         /* é */
    assert_int_equal(termtext_width("\xe6\x97\xa5", 3), 2);     /* 日 */
    assert_int_equal(termtext_width("\xea\xb0\x80", 3), 2);     /* 가 U+AC00 */
    assert_int_equal(termtext_width("\xf0\x9f\x98\x80", 4), 2); /* U+1F600 */
    assert_int_equal(termtext_width("\xe2\x82\xac", 3), 1);     /* € U+20AC */

    char out[64];
    size_t cols = 99;
    /* 10 columns: "ab" (2) + \x1b (4) + "cd" (2) + \x1b would be 12 */
    const char *s = "ab\x1b"
                    "cd\x1b"
                    "ef";
    assert_int_equal(termtext_escape(s, strlen(s), out, sizeof(out), 10, &cols), 5);
    assert_string_equal(out, "ab\\x1bcd");
    assert_int_equal(cols, 8);
    /* a wide character does not fit in the last column */
    assert_int_equal(termtext_escape("a\xe6\x97\xa5", 4, out, sizeof(out), 2, &cols), 1);
    assert_string_equal(out, "a");
    assert_int_equal(cols, 1);
    assert_int_equal(termtext_escape("a\xe6\x97\xa5", 4, out, sizeof(out), 3, &cols), 4);
    assert_int_equal(cols, 3);
    /* no columns: nothing */
    assert_int_equal(termtext_escape("a", 1, out, sizeof(out), 0, &cols), 0);
    assert_int_equal(cols, 0);
}

static void test_termtext__str_and_fputs(void **state)
{
    (void)state;
    char buf[8];
    /* termtext_str() keeps what fits and returns its buffer */
    assert_ptr_equal(termtext_str("a\x1b"
                                  "bcdef",
                                  buf, sizeof(buf)),
                     buf);
    assert_string_equal(buf, "a\\x1bbc"); /* 7 bytes and the NUL */

    /* termtext_fputs() writes all of a long name, in pieces */
    char big[3000];
    for (size_t i = 0; i < sizeof(big) - 1; i++)
        big[i] = i % 3 == 0 ? '\x1b' : 'x';
    big[sizeof(big) - 1] = '\0';
    static char text[8192];
    memset(text, 0, sizeof(text));
    FILE *f = fmemopen(text, sizeof(text), "w");
    assert_non_null(f);
    assert_int_equal(termtext_fputs(big, f), 0);
    assert_int_equal(termtext_fputs("", f), 0);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(strlen(text), 1000 * 4 + 1999);
    assert_null(strchr(text, '\x1b'));
    assert_int_equal(strncmp(text, "\\x1bxx\\x1bxx", 12), 0);

    /* a failed write is reported */
    f = fopen("/dev/full", "w");
    assert_non_null(f);
    setvbuf(f, NULL, _IONBF, 0);
    assert_int_equal(termtext_fputs("abc", f), EOF);
    fclose(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_termtext__controls_are_escaped),
        cmocka_unit_test(test_termtext__printable_text_is_kept),
        cmocka_unit_test(test_termtext__cut_to_bytes_never_splits),
        cmocka_unit_test(test_termtext__widths_count_the_escaped_text),
        cmocka_unit_test(test_termtext__str_and_fputs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
