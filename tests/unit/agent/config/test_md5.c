/* SPDX-License-Identifier: MIT */
/* Tests for agent/config/md5.c: the test suite of RFC 1321, appendix A.5. */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include "config/md5.h"

static void md5_hex(const unsigned char d[MD5_DIGEST_LEN], char out[33])
{
    for (size_t i = 0; i < MD5_DIGEST_LEN; i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void test_md5__rfc1321_vectors(void **state)
{
    (void)state;
    static const struct {
        const char *in, *hex;
    } v[] = {
        {"", "d41d8cd98f00b204e9800998ecf8427e"},
        {"a", "0cc175b9c0f1b6a831c399e269772661"},
        {"abc", "900150983cd24fb0d6963f7d28e17f72"},
        {"message digest", "f96b697d7cb7938d525a2f31aaf161d0"},
        {"abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"},
        {"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
         "d174ab98d277d9f5a5611c2c9f419d9f"},
        {"1234567890123456789012345678901234567890123456789012345678901234567890123456789"
         "0",
         "57edf4a22be3c955ac49da2e2107b67a"},
    };
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(v); i++) {
        unsigned char d[MD5_DIGEST_LEN];
        char hex[33];
        md5_sum(v[i].in, strlen(v[i].in), d);
        md5_hex(d, hex);
        assert_string_equal(hex, v[i].hex);
    }
}

/* Feeding the input in pieces of every size gives the same digest. */
static void test_md5__incremental_matches_one_shot(void **state)
{
    (void)state;
    char buf[300];
    unsigned char want[MD5_DIGEST_LEN];
    for (size_t i = 0; i < sizeof(buf); i++)
        buf[i] = (char)(i * 7 + 1);
    md5_sum(buf, sizeof(buf), want);
    for (size_t step = 1; step <= 130; step++) {
        struct md5 m;
        unsigned char got[MD5_DIGEST_LEN];
        md5_init(&m);
        for (size_t off = 0; off < sizeof(buf); off += step)
            md5_update(&m, buf + off, off + step > sizeof(buf) ? sizeof(buf) - off : step);
        md5_final(&m, got);
        assert_memory_equal(got, want, MD5_DIGEST_LEN);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_md5__rfc1321_vectors),
        cmocka_unit_test(test_md5__incremental_matches_one_shot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
