/* SPDX-License-Identifier: MIT */
/*
 * Tests for agent/base/buf.c: appends, the cap (refused, buffer unchanged),
 * printf output longer than the stack buffer, take, reset, allocation
 * failure.
 */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include "base/alloc.h"
#include "base/buf.h"

static void test_buf__appends_and_terminates(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 1000);
    assert_string_equal(buf_str(&b), "");
    assert_int_equal(buf_len(&b), 0);
    assert_int_equal(buf_adds(&b, "abc"), 0);
    assert_int_equal(buf_addc(&b, '-'), 0);
    assert_int_equal(buf_add(&b, "xyz", 2), 0);
    assert_int_equal(buf_addf(&b, "%d/%s", 42, "q"), 0);
    assert_string_equal(buf_str(&b), "abc-xy42/q");
    assert_int_equal(buf_len(&b), 10);
    buf_reset(&b);
    assert_string_equal(buf_str(&b), "");
    assert_int_equal(buf_adds(&b, "again"), 0);
    assert_string_equal(buf_str(&b), "again");
    buf_release(&b);
    assert_string_equal(buf_str(&b), "");
}

static void test_buf__cap_refuses_and_keeps(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 8);
    assert_int_equal(buf_adds(&b, "12345678"), 0); /* exactly the cap */
    assert_int_equal(buf_addc(&b, '9'), -E2BIG);
    assert_int_equal(buf_addf(&b, "%s", "more"), -E2BIG);
    assert_string_equal(buf_str(&b), "12345678");
    buf_reset(&b);
    assert_int_equal(buf_adds(&b, "123456789"), -E2BIG);
    assert_string_equal(buf_str(&b), "");
    buf_release(&b);
    /* a zero cap takes nothing, and a zeroed struct releases as a no-op */
    buf_init(&b, 0);
    assert_int_equal(buf_addc(&b, 'x'), -E2BIG);
    buf_release(&b);
    struct buf z = {0};
    buf_release(&z);
}

static void test_buf__long_printf(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 100000);
    char big[3000];
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    assert_int_equal(buf_addf(&b, "<%s>", big), 0);
    assert_int_equal(buf_len(&b), sizeof(big) + 1);
    assert_int_equal(buf_str(&b)[0], '<');
    assert_int_equal(buf_str(&b)[sizeof(big)], '>');
    /* the cap applies to printf output too */
    struct buf c;
    buf_init(&c, 100);
    assert_int_equal(buf_addf(&c, "%s", big), -E2BIG);
    assert_int_equal(buf_len(&c), 0);
    buf_release(&b);
    buf_release(&c);
}

static void test_buf__take_hands_over(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 64);
    size_t len = 99;
    char *empty = buf_take(&b, &len);
    assert_non_null(empty);
    assert_string_equal(empty, "");
    assert_int_equal(len, 0);
    alloc_free(empty);
    assert_int_equal(buf_adds(&b, "kept"), 0);
    char *s = buf_take(&b, &len);
    assert_string_equal(s, "kept");
    assert_int_equal(len, 4);
    /* the buffer is empty and usable again, same cap */
    assert_string_equal(buf_str(&b), "");
    assert_int_equal(buf_adds(&b, "more"), 0);
    alloc_free(s);
    buf_release(&b);
}

static void test_buf__allocation_failure_leaves_it_unchanged(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 1 << 20);
    assert_int_equal(buf_adds(&b, "start"), 0);
    char big[200];
    memset(big, 'b', sizeof(big));
    for (uint64_t n = 1; n <= 3; n++) {
        (void)alloc_fail_nth(n);
        int err = buf_add(&b, big, sizeof(big));
        (void)alloc_fail_nth(0);
        if (err) {
            assert_int_equal(err, -ENOMEM);
            assert_string_equal(buf_str(&b), "start");
        }
    }
    buf_release(&b);
}

/* A FILE over a buffer: what is written lands in it; past the cap, writes fail and say why. */
static void test_buf__stream(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 64);
    struct buf_stream bs = {.b = &b};
    FILE *f = buf_fopen(&bs);
    assert_non_null(f);
    fprintf(f, "%s=%d;", "x", 42);
    fputs("tail", f);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(bs.err, 0);
    assert_string_equal(buf_str(&b), "x=42;tail");

    buf_reset(&b);
    f = buf_fopen(&bs);
    assert_non_null(f);
    for (int i = 0; i < 100; i++)
        fputs("0123456789", f);
    /* buffered: the failure shows at the flush at the latest */
    assert_int_not_equal(fclose(f), 0);
    assert_int_equal(bs.err, -E2BIG);
    assert_true(buf_len(&b) <= 64);
    buf_release(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_buf__stream),
        cmocka_unit_test(test_buf__appends_and_terminates),
        cmocka_unit_test(test_buf__cap_refuses_and_keeps),
        cmocka_unit_test(test_buf__long_printf),
        cmocka_unit_test(test_buf__take_hands_over),
        cmocka_unit_test(test_buf__allocation_failure_leaves_it_unchanged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
