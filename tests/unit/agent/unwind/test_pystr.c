/* SPDX-License-Identifier: MIT */
/*
 * Tests for agent/unwind/pystr.c: str objects laid out as CPython lays them
 * out (offsets from the real 3.15 table), decoded from local copies and read
 * through the fake memory backend.
 */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include "base/alloc.h"
#include "fixture.h"
#include "memread_fake.h"
#include "base/utf8.h"
#include "python/pyabi.h"
#include "unwind/pystr.h"

static struct py_layout layout;

static int pystr_setup(void **state)
{
    (void)state;
    size_t len;
    uint8_t *t = fixture_load("debug_offsets/3.15.bin", &len);
    assert_non_null(t);
    struct py_version v;
    char why[256];
    assert_int_equal(pyversion_decode(t, len, &v), 0);
    assert_int_equal(pyabi_layout_load(&v, t, len, &layout, why, sizeof(why)), 0);
    alloc_free(t);
    return 0;
}

/* Builds a compact str object: @kind 1/2/4, @ascii, @n code points from @cps. */
static size_t make_str(uint8_t *obj, size_t cap, unsigned kind, bool ascii, const uint32_t *cps,
                       size_t n)
{
    memset(obj, 0, cap);
    int64_t len = (int64_t)n;
    memcpy(obj + layout.str_length, &len, 8);
    uint32_t state = (kind << 2) | (1u << 5) | (ascii ? 1u << 6 : 0);
    memcpy(obj + layout.str_state, &state, 4);
    size_t data = ascii ? layout.str_ascii_data : layout.str_compact_data;
    for (size_t i = 0; i < n; i++) {
        if (kind == 1)
            obj[data + i] = (uint8_t)cps[i];
        else if (kind == 2) {
            uint16_t u = (uint16_t)cps[i];
            memcpy(obj + data + 2 * i, &u, 2);
        } else
            memcpy(obj + data + 4 * i, &cps[i], 4);
    }
    return data + n * kind + kind; /* with the terminator CPython keeps */
}

static void expect_decodes(unsigned kind, bool ascii, const uint32_t *cps, size_t n,
                           const char *utf8)
{
    uint8_t obj[8192];
    size_t len = make_str(obj, sizeof(obj), kind, ascii, cps, n);
    char out[4 * PYSTR_MAX_CHARS + 1];
    size_t need = 0;
    long got = pystr_decode(&layout, obj, len, out, sizeof(out), &need);
    assert_int_equal(got, (long)strlen(utf8));
    assert_string_equal(out, utf8);
}

static void test_pystr__decodes_every_compact_kind(void **state)
{
    (void)state;
    static const uint32_t ascii[] = {'s', 'p', 'i', 'n'};
    static const uint32_t latin1[] = {'c', 'a', 'f', 0xE9};
    static const uint32_t polish[] = {'z', 'a', 0x17C, 0xF3, 0x142, 0x107}; /* zażółć */
    static const uint32_t japanese[] = {0x65E5, 0x672C, 0x8A9E};            /* 日本語 */
    static const uint32_t emoji[] = {'f', 0x1F40D};                         /* f🐍 */
    expect_decodes(1, true, ascii, 4, "spin");
    expect_decodes(1, false, latin1, 4, "caf\xc3\xa9");
    expect_decodes(2, false, polish, 6, "za\xc5\xbc\xc3\xb3\xc5\x82\xc4\x87");
    expect_decodes(2, false, japanese, 3, "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e");
    expect_decodes(4, false, emoji, 2, "f\xf0\x9f\x90\x8d");
    expect_decodes(1, true, ascii, 0, "");
}

static void test_pystr__bad_code_points_become_replacement(void **state)
{
    (void)state;
    static const uint32_t surrogate[] = {'a', 0xD800, 'b'};
    static const uint32_t too_big[] = {0x110000};
    static const uint32_t fake_ascii[] = {'a', 0xE9};
    expect_decodes(2, false, surrogate, 3,
                   "a\xef\xbf\xbd"
                   "b");
    expect_decodes(4, false, too_big, 1, "\xef\xbf\xbd");
    expect_decodes(1, true, fake_ascii, 2, "a\xef\xbf\xbd");

    /* a script named b"\xff\xfe.py": Python's co_filename holds U+DCFF U+DCFE */
    static const uint32_t escaped[] = {'/', 0xDCFF, 0xDCFE, '.', 'p', 'y'};
    uint64_t before = utf8_replaced_total();
    expect_decodes(2, false, escaped, 6, "/\xef\xbf\xbd\xef\xbf\xbd.py");
    assert_int_equal(utf8_replaced_total() - before, 2); /* counted, one each */
    static const uint32_t real_fffd[] = {0xFFFD, 'x'};
    expect_decodes(2, false, real_fffd, 2, "\xef\xbf\xbdx");
    assert_int_equal(utf8_replaced_total() - before, 2); /* a real U+FFFD is not a replacement */

    /* whatever the code points, in every kind, the result is valid UTF-8 */
    static const uint32_t edges[] = {0x7F,    0x80,     0xFF,     0x7FF,      0x800,  0xD7FF,
                                     0xD800,  0xDBFF,   0xDC00,   0xDFFF,     0xE000, 0xFFFF,
                                     0x10000, 0x10FFFF, 0x110000, 0xFFFFFFFF, 'a',    0};
    uint32_t cps[64];
    uint64_t x = 88172645463325252ull;
    for (unsigned round = 0; round < 2000; round++) {
        size_t n = 1 + round % 63u;
        unsigned kind = (unsigned[]){1, 2, 4}[round % 3u];
        uint32_t mask = kind == 1 ? 0xFF : kind == 2 ? 0xFFFF : 0xFFFFFFFF;
        for (size_t i = 0; i < n; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            cps[i] =
                (x & 1 ? edges[(x >> 1) % PYPROFD_ARRAY_SIZE(edges)] : (uint32_t)(x >> 8)) & mask;
            if (cps[i] == 0)
                cps[i] = 'z'; /* a NUL would end the C string early */
        }
        uint8_t obj[1024];
        size_t len = make_str(obj, sizeof(obj), kind, kind == 1 && round % 2u, cps, n);
        char out[4 * PYSTR_MAX_CHARS + 1];
        size_t need = 0;
        long got = pystr_decode(&layout, obj, len, out, sizeof(out), &need);
        assert_true(got >= 0);
        assert_true(utf8_valid(out, (size_t)got));
    }
}

static void test_pystr__asks_for_more_and_caps_length(void **state)
{
    (void)state;
    static uint32_t many[2000];
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(many); i++)
        many[i] = 'x';
    uint8_t obj[8192];
    (void)make_str(obj, sizeof(obj), 1, true, many, 2000);
    char out[4 * PYSTR_MAX_CHARS + 1];
    size_t need = 0;
    assert_int_equal(pystr_decode(&layout, obj, 60, out, sizeof(out), &need), -EAGAIN);
    assert_int_equal(need, layout.str_ascii_data + PYSTR_MAX_CHARS);
    long n = pystr_decode(&layout, obj, need, out, sizeof(out), &need);
    assert_int_equal(n, PYSTR_MAX_CHARS); /* cut at the cap, not an error */
    /* a small output buffer stops at a character boundary */
    static const uint32_t japanese[] = {0x65E5, 0x672C, 0x8A9E};
    size_t len = make_str(obj, sizeof(obj), 2, false, japanese, 3);
    char small[8];
    assert_int_equal(pystr_decode(&layout, obj, len, small, sizeof(small), &need), 6);
    assert_string_equal(small, "\xe6\x97\xa5\xe6\x9c\xac");
}

static void test_pystr__rejects_impossible_headers(void **state)
{
    (void)state;
    uint8_t obj[256] = {0};
    char out[64];
    size_t need;
    int64_t len = -1;
    uint32_t st = (1u << 2) | (1u << 5) | (1u << 6);
    memcpy(obj + layout.str_length, &len, 8);
    memcpy(obj + layout.str_state, &st, 4);
    assert_int_equal(pystr_decode(&layout, obj, sizeof(obj), out, sizeof(out), &need), -EINVAL);
    len = 3;
    st = (3u << 2) | (1u << 5); /* kind 3 */
    memcpy(obj + layout.str_length, &len, 8);
    memcpy(obj + layout.str_state, &st, 4);
    assert_int_equal(pystr_decode(&layout, obj, sizeof(obj), out, sizeof(out), &need), -EINVAL);
    st = (1u << 2); /* not compact: a legacy string */
    memcpy(obj + layout.str_state, &st, 4);
    assert_int_equal(pystr_decode(&layout, obj, sizeof(obj), out, sizeof(out), &need), -ENOTSUP);
    assert_int_equal(pystr_decode(&layout, obj, 10, out, sizeof(out), &need), -EAGAIN);
}

static void test_pystr__reads_through_memread(void **state)
{
    (void)state;
    struct memread_fake *fake;
    struct memread *mr;
    assert_int_equal(memread_fake_open(&fake, &mr), 0);
    static const uint32_t polish[] = {'z', 'a', 0x17C, 0xF3, 0x142, 0x107};
    uint8_t obj[512];
    size_t len = make_str(obj, sizeof(obj), 2, false, polish, 6);
    /* the object ends its mapping: the speculative read must fall back */
    assert_int_equal(memread_fake_add(fake, 0x10000, obj, len), 0);
    static uint32_t long_name[300];
    for (size_t i = 0; i < 300; i++)
        long_name[i] = 'a' + (uint32_t)(i % 26);
    uint8_t big[2048];
    size_t big_len = make_str(big, sizeof(big), 1, true, long_name, 300);
    assert_int_equal(memread_fake_add(fake, 0x20000, big, big_len), 0);
    char out[4 * PYSTR_MAX_CHARS + 1];
    assert_int_equal(pystr_read(mr, &layout, 0x10000, out, sizeof(out)), 10);
    assert_string_equal(out, "za\xc5\xbc\xc3\xb3\xc5\x82\xc4\x87");
    assert_int_equal(pystr_read(mr, &layout, 0x20000, out, sizeof(out)), 300);
    assert_int_equal(out[299], 'a' + 299 % 26);
    assert_int_equal(pystr_read(mr, &layout, 0x90000, out, sizeof(out)), -EFAULT);
    memread_fake_fail_next(fake, -ESRCH);
    assert_int_equal(pystr_read(mr, &layout, 0x10000, out, sizeof(out)), -ESRCH);

    /* bytes */
    uint8_t bytes[64] = {0};
    int64_t n = 5;
    memcpy(bytes + layout.bytes_ob_size, &n, 8);
    memcpy(bytes + layout.bytes_ob_sval, "\x80\x01\x02\x03\x04", 5);
    assert_int_equal(memread_fake_add(fake, 0x30000, bytes, sizeof(bytes)), 0);
    uint8_t got[16];
    assert_int_equal(pybytes_read(mr, &layout, 0x30000, got, sizeof(got)), 5);
    assert_memory_equal(got, "\x80\x01\x02\x03\x04", 5);
    assert_int_equal(pybytes_read(mr, &layout, 0x30000, got, 4), -E2BIG);
    n = -2;
    memcpy(bytes + layout.bytes_ob_size, &n, 8);
    assert_int_equal(memread_fake_add(fake, 0x40000, bytes, sizeof(bytes)), 0);
    assert_int_equal(pybytes_read(mr, &layout, 0x40000, got, sizeof(got)), -EINVAL);
    memread_free(mr);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pystr__decodes_every_compact_kind),
        cmocka_unit_test(test_pystr__bad_code_points_become_replacement),
        cmocka_unit_test(test_pystr__asks_for_more_and_caps_length),
        cmocka_unit_test(test_pystr__rejects_impossible_headers),
        cmocka_unit_test(test_pystr__reads_through_memread),
    };
    return cmocka_run_group_tests(tests, pystr_setup, NULL);
}
