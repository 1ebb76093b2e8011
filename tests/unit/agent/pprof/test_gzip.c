/* SPDX-License-Identifier: MIT */
/* Tests for agent/pprof/gzip.c. */
#include "base/compat.h"

#include <zlib.h>

#include "cmocka_wrap.h"

#include "base/alloc.h"
#include "pprof/gzip.h"

#define BIG (1u << 20)

/* Deterministic bytes: text-like (compressible) or noise (not). */
static void fill(uint8_t *p, size_t n, bool noise)
{
    uint32_t x = 2463534242u;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        p[i] = noise ? (uint8_t)x : (uint8_t)("pyprofd samples python stacks "[i % 30]);
    }
}

static void round_trip(size_t n, bool noise)
{
    size_t before = alloc_in_use();
    uint8_t *in = alloc_malloc(n ? n : 1);
    assert_non_null(in);
    fill(in, n, noise);

    uint8_t *gz = NULL, *back = NULL;
    size_t gz_len = 0, back_len = 0;
    assert_int_equal(gzip_compress(in, n, SIZE_MAX, &gz, &gz_len), 0);
    assert_true(gz_len >= 18); /* 10-byte header, 8-byte trailer */
    assert_int_equal(gz[0], 0x1f);
    assert_int_equal(gz[1], 0x8b);
    assert_int_equal(gz[2], 8); /* deflate */
    if (!noise && n > 1000)
        assert_true(gz_len < n / 10);

    assert_int_equal(gzip_decompress(gz, gz_len, n, &back, &back_len), 0);
    assert_non_null(back);
    assert_int_equal(back_len, n);
    assert_memory_equal(back, in, n);

    alloc_free(back);
    alloc_free(gz);
    alloc_free(in);
    assert_int_equal(alloc_in_use(), before);
}

static void test_gzip__round_trips(void **state)
{
    (void)state;
    round_trip(0, false);
    round_trip(1, false);
    round_trip(5000, false);
    round_trip(BIG, false);
    round_trip(5000, true);
    round_trip(BIG, true);
}

/* zlib's own reader agrees that the output is gzip. */
static void test_gzip__output_is_read_by_zlib(void **state)
{
    (void)state;
    uint8_t in[3000], back[3000];
    fill(in, sizeof(in), false);
    uint8_t *gz = NULL;
    size_t gz_len = 0;
    assert_int_equal(gzip_compress(in, sizeof(in), SIZE_MAX, &gz, &gz_len), 0);

    z_stream zs;
    memset(&zs, 0, sizeof(zs));
    assert_int_equal(inflateInit2(&zs, 15 + 16), Z_OK);
    zs.next_in = gz;
    zs.avail_in = (uInt)gz_len;
    zs.next_out = back;
    zs.avail_out = sizeof(back);
    assert_int_equal(inflate(&zs, Z_FINISH), Z_STREAM_END);
    assert_int_equal(zs.total_out, sizeof(in));
    inflateEnd(&zs);
    assert_memory_equal(back, in, sizeof(in));
    alloc_free(gz);
}

static void test_gzip__compress_respects_cap(void **state)
{
    (void)state;
    size_t before = alloc_in_use();
    uint8_t in[4096];
    fill(in, sizeof(in), true);
    uint8_t *gz = NULL;
    size_t gz_len = 0;
    assert_int_equal(gzip_compress(in, sizeof(in), SIZE_MAX, &gz, &gz_len), 0);
    alloc_free(gz);

    uint8_t *gz2 = NULL;
    size_t gz2_len = 0;
    assert_int_equal(gzip_compress(in, sizeof(in), gz_len, &gz2, &gz2_len), 0); /* exact fit */
    assert_int_equal(gz2_len, gz_len);
    alloc_free(gz2);

    gz2 = NULL;
    assert_int_equal(gzip_compress(in, sizeof(in), gz_len - 1, &gz2, &gz2_len), -E2BIG);
    assert_null(gz2);
    assert_int_equal(gzip_compress(in, sizeof(in), 0, &gz2, &gz2_len), -E2BIG);
    assert_null(gz2);
    assert_int_equal(alloc_in_use(), before);
}

static void test_gzip__decompress_respects_cap(void **state)
{
    (void)state;
    size_t before = alloc_in_use();
    uint8_t in[10000];
    fill(in, sizeof(in), false);
    uint8_t *gz = NULL, *back = NULL;
    size_t gz_len = 0, back_len = 0;
    assert_int_equal(gzip_compress(in, sizeof(in), SIZE_MAX, &gz, &gz_len), 0);

    assert_int_equal(gzip_decompress(gz, gz_len, sizeof(in), &back, &back_len), 0);
    alloc_free(back);
    back = NULL;
    assert_int_equal(gzip_decompress(gz, gz_len, sizeof(in) - 1, &back, &back_len), -E2BIG);
    assert_null(back);
    assert_int_equal(gzip_decompress(gz, gz_len, 0, &back, &back_len), -E2BIG);
    assert_null(back);
    alloc_free(gz);
    assert_int_equal(alloc_in_use(), before);
}

/* A bomb (64 MiB of zeros, ~64 KiB compressed) never costs more than the cap. */
static void test_gzip__bomb_stays_within_cap(void **state)
{
    (void)state;
    size_t n = 64u << 20;
    uint8_t *zeros = alloc_calloc(1, n);
    assert_non_null(zeros);
    uint8_t *gz = NULL, *back = NULL;
    size_t gz_len = 0, back_len = 0;
    assert_int_equal(gzip_compress(zeros, n, SIZE_MAX, &gz, &gz_len), 0);
    alloc_free(zeros);
    assert_true(gz_len < n / 500);

    size_t before = alloc_in_use();
    /* the cap plus zlib's inflate state (about 7 KiB plus a 32 KiB window) */
    alloc_set_budget(before + BIG + 1 + (128u << 10));
    assert_int_equal(gzip_decompress(gz, gz_len, BIG, &back, &back_len), -E2BIG);
    alloc_set_budget(0);
    assert_null(back);
    assert_int_equal(alloc_in_use(), before);
    alloc_free(gz);
}

static void expect_invalid(const uint8_t *p, size_t n)
{
    size_t before = alloc_in_use();
    uint8_t *back = NULL;
    size_t back_len = 0;
    assert_int_equal(gzip_decompress(p, n, BIG, &back, &back_len), -EINVAL);
    assert_null(back);
    assert_int_equal(alloc_in_use(), before);
}

static void test_gzip__rejects_corrupt_input(void **state)
{
    (void)state;
    uint8_t in[5000];
    fill(in, sizeof(in), false);
    uint8_t *gz = NULL;
    size_t gz_len = 0;
    assert_int_equal(gzip_compress(in, sizeof(in), SIZE_MAX, &gz, &gz_len), 0);

    expect_invalid(gz, 0);
    for (size_t cut = 1; cut < gz_len; cut += 7) /* truncated anywhere */
        expect_invalid(gz, cut);
    expect_invalid(gz, gz_len - 1);

    uint8_t *bad = alloc_malloc(gz_len + 1);
    assert_non_null(bad);
    memcpy(bad, gz, gz_len);
    bad[gz_len] = 0; /* trailing byte */
    expect_invalid(bad, gz_len + 1);

    bad[0] = 0x1e; /* magic */
    expect_invalid(bad, gz_len);
    bad[0] = 0x1f;
    bad[gz_len - 5] ^= 0x01; /* the CRC-32 */
    expect_invalid(bad, gz_len);
    bad[gz_len - 5] ^= 0x01;
    bad[gz_len - 1] ^= 0x01; /* the length (ISIZE) */
    expect_invalid(bad, gz_len);
    bad[gz_len - 1] ^= 0x01;
    memcpy(bad, gz, gz_len);
    bad[gz_len / 2] ^= 0x55; /* the data */
    expect_invalid(bad, gz_len);
    alloc_free(bad);

    /* a zlib stream (RFC 1950) of the same data is not gzip */
    uint8_t z[6000];
    uLongf z_len = sizeof(z);
    assert_int_equal(compress2(z, &z_len, in, sizeof(in), 6), Z_OK);
    expect_invalid(z, z_len);

    uint8_t noise[512];
    fill(noise, sizeof(noise), true);
    expect_invalid(noise, sizeof(noise));
    alloc_free(gz);
}

/* Fails each allocation in turn: -ENOMEM, nothing leaked, then success. */
static void test_gzip__survives_allocation_failures(void **state)
{
    (void)state;
    uint8_t in[20000];
    fill(in, sizeof(in), false);
    uint8_t *gz = NULL;
    size_t gz_len = 0;
    assert_int_equal(gzip_compress(in, sizeof(in), SIZE_MAX, &gz, &gz_len), 0);

    for (int dir = 0; dir < 2; dir++) {
        bool done = false;
        for (uint64_t nth = 1; !done; nth++) {
            assert_true(nth < 100);
            size_t before = alloc_in_use();
            uint8_t *out = NULL;
            size_t out_len = 0;
            alloc_fail_nth(nth);
            int err = dir == 0 ? gzip_compress(in, sizeof(in), SIZE_MAX, &out, &out_len)
                               : gzip_decompress(gz, gz_len, sizeof(in), &out, &out_len);
            alloc_fail_nth(0);
            if (err == 0) { /* fewer than nth allocations: all were tried */
                alloc_free(out);
                done = true;
            } else {
                assert_int_equal(err, -ENOMEM);
                assert_null(out);
            }
            assert_int_equal(alloc_in_use(), before);
        }
    }
    alloc_free(gz);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gzip__round_trips),
        cmocka_unit_test(test_gzip__output_is_read_by_zlib),
        cmocka_unit_test(test_gzip__compress_respects_cap),
        cmocka_unit_test(test_gzip__decompress_respects_cap),
        cmocka_unit_test(test_gzip__bomb_stays_within_cap),
        cmocka_unit_test(test_gzip__rejects_corrupt_input),
        cmocka_unit_test(test_gzip__survives_allocation_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
