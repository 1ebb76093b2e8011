/* SPDX-License-Identifier: MIT */
/* Tests for agent/python/pyversion.c: header decoding and the support decision. */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include "python/pyabi.h"
#include "python/pyversion.h"

static void make_header(unsigned char *h, const char *cookie, uint64_t version, uint64_t ft)
{
    memcpy(h, cookie, 8);
    memcpy(h + 8, &version, 8);
    memcpy(h + 16, &ft, 8);
}

static void test_pyversion__decodes_debian_versions(void **state)
{
    (void)state;
    static const struct {
        uint64_t hex;
        unsigned minor, micro;
        const char *name;
    } cases[] = {
        {0x030d0ff0, 13, 15, "3.13.15"},
        {0x030e08f0, 14, 8, "3.14.8"},
        {0x030f00f0, 15, 0, "3.15.0"},
    };
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(cases); i++) {
        unsigned char h[PYVERSION_HEADER_SIZE];
        make_header(h, "xdebugpy", cases[i].hex, 0);
        struct py_version v;
        assert_int_equal(pyversion_decode(h, sizeof(h), &v), 0);
        assert_int_equal(v.major, 3);
        assert_int_equal(v.minor, cases[i].minor);
        assert_int_equal(v.micro, cases[i].micro);
        assert_int_equal(v.level, PY_RELEASE_FINAL);
        assert_false(v.free_threaded);
        char buf[32];
        assert_string_equal(pyversion_format(&v, buf, sizeof(buf)), cases[i].name);
        char why[128] = "unchanged";
        assert_int_equal(pyversion_check_supported(&v, why, sizeof(why)), 0);
        assert_string_equal(why, "");
    }
}

static void test_pyversion__rejects_bad_cookie_and_short_header(void **state)
{
    (void)state;
    unsigned char h[PYVERSION_HEADER_SIZE];
    struct py_version v;
    make_header(h, "xdebugpz", 0x030e08f0, 0);
    assert_int_equal(pyversion_decode(h, sizeof(h), &v), -ENOENT);
    make_header(h, "xdebugpy", 0x030e08f0, 0);
    assert_int_equal(pyversion_decode(h, 23, &v), -EAGAIN);
}

static void test_pyversion__rejects_implausible_words(void **state)
{
    (void)state;
    unsigned char h[PYVERSION_HEADER_SIZE];
    struct py_version v;
    make_header(h, "xdebugpy", 0x020700f0, 0); /* Python 2 */
    assert_int_equal(pyversion_decode(h, sizeof(h), &v), -EPROTO);
    make_header(h, "xdebugpy", 0x1030e08f0ull, 0); /* high bits */
    assert_int_equal(pyversion_decode(h, sizeof(h), &v), -EPROTO);
    make_header(h, "xdebugpy", 0x030e0830, 0); /* release level 3 */
    assert_int_equal(pyversion_decode(h, sizeof(h), &v), -EPROTO);
    make_header(h, "xdebugpy", 0x030e08f0, 7); /* free-threaded flag 7 */
    assert_int_equal(pyversion_decode(h, sizeof(h), &v), -EPROTO);
}

static void test_pyversion__unsupported_versions_are_named(void **state)
{
    (void)state;
    static const struct {
        uint64_t hex, ft;
        const char *why;
    } cases[] = {
        {0x031000f0, 0, "CPython 3.16.0 is not supported yet (supported: 3.9 to 3.15)"},
        {0x030812f0, 0, "CPython 3.8.18 is not supported (supported: 3.9 to 3.15)"},
        {0x030f00b1, 0,
         "CPython 3.15.0b1 is a pre-release; only final releases are supported "
         "(pre-release table layouts change)"},
        {0x030f00c2, 0,
         "CPython 3.15.0rc2 is a pre-release; only final releases are supported "
         "(pre-release table layouts change)"},
    };
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(cases); i++) {
        unsigned char h[PYVERSION_HEADER_SIZE];
        make_header(h, "xdebugpy", cases[i].hex, cases[i].ft);
        struct py_version v;
        assert_int_equal(pyversion_decode(h, sizeof(h), &v), 0);
        char why[160];
        assert_int_equal(pyversion_check_supported(&v, why, sizeof(why)), -ENOTSUP);
        assert_string_equal(why, cases[i].why);
    }
    /* free-threaded builds of a supported version are supported */
    unsigned char h[PYVERSION_HEADER_SIZE];
    make_header(h, "xdebugpy", 0x030e08f0, 1);
    struct py_version v;
    assert_int_equal(pyversion_decode(h, sizeof(h), &v), 0);
    assert_true(v.free_threaded);
    char why[160] = "x";
    assert_int_equal(pyversion_check_supported(&v, why, sizeof(why)), 0);
    assert_string_equal(why, "");
}

/*
 * The supported range is one fact: PYVERSION_SUPPORTED, the cut-offs and
 * pyversion_minor_supported() say the same, and every minor in it is read,
 * by a table schema from PYVERSION_TABLE_MINOR on, by a generated layout
 * before (the help texts' side: tests/scripts/test_help_versions.sh).
 */
static void test_pyversion__one_supported_range(void **state)
{
    (void)state;
    assert_string_equal(PYVERSION_SUPPORTED, "3.9 to 3.15");
    char text[32];
    snprintf(text, sizeof(text), "3.%d to 3.%d", PYVERSION_MIN_MINOR, PYVERSION_MAX_MINOR);
    assert_string_equal(PYVERSION_SUPPORTED, text);
    assert_false(pyversion_minor_supported(PYVERSION_MIN_MINOR - 1));
    assert_false(pyversion_minor_supported(PYVERSION_MAX_MINOR + 1));
    for (unsigned m = PYVERSION_MIN_MINOR; m <= PYVERSION_MAX_MINOR; m++) {
        assert_true(pyversion_minor_supported(m));
        if (m >= PYVERSION_TABLE_MINOR)
            assert_non_null(pyabi_schema_for(m));
        else
            assert_non_null(pyabi_generated_for(m));
    }
    /* known by their PY_VERSION string: those before Py_Version, none before the range */
    for (unsigned m = 0; m <= PYVERSION_MAX_MINOR + 1; m++)
        assert_true(pyversion_minor_by_string(m) ==
                    (m >= PYVERSION_MIN_MINOR && m < PYVERSION_SYMBOL_MINOR));
    assert_true(pyversion_minor_by_string(9) && pyversion_minor_by_string(10));
    assert_false(pyversion_minor_by_string(11));
    assert_null(pyabi_schema_for(PYVERSION_TABLE_MINOR - 1));
    assert_null(pyabi_schema_for(PYVERSION_MAX_MINOR + 1));
}

static void test_pyversion__formats_alpha(void **state)
{
    (void)state;
    struct py_version v = {.major = 3, .minor = 16, .micro = 0, .level = 0xA, .serial = 2};
    char buf[32];
    assert_string_equal(pyversion_format(&v, buf, sizeof(buf)), "3.16.0a2");
}

/* 3.9, 3.10: PY_VERSION in a binary's read-only data, on its own or as a merged tail */
static void test_pyversion__scan_finds_py_version_strings(void **state)
{
    (void)state;
    struct py_version v;
    char name[32];
    static const char own[] = "abc\0%.80s (%.80s) %.80s\0003.9.2\0more";
    assert_int_equal(pyversion_scan(own, sizeof(own), 9, &v), 24);
    assert_int_equal(v.hex, 0x030902f0u);
    assert_string_equal(pyversion_format(&v, name, sizeof(name)), "3.9.2");
    /* the tail of the prefix it was merged into; any minor asked */
    static const char tail[] = "x\0/root/.pyenv/versions/3.10.13\0";
    assert_int_equal(pyversion_scan(tail, sizeof(tail), 0, &v), 24);
    assert_true(v.minor == 10 && v.micro == 13);
    /* not a version: digits or a dot before, no NUL after, the wrong minor,
     * leading zeros, pre-releases, the end of the buffer */
    static const char *const no[] = {"13.9.2", "1.3.9.2", "3.9.2rc1", "3.9.02",
                                     "3.09.2", "3.9.",    "3.9.2"};
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(no); i++) {
        size_t len = strlen(no[i]) + (i + 1 < PYPROFD_ARRAY_SIZE(no)); /* the last: no NUL */
        assert_int_equal(pyversion_scan(no[i], len, 0, &v), -ENOENT);
    }
    assert_int_equal(pyversion_scan("3.11.2", 7, 9, &v), -ENOENT);
    assert_int_equal(pyversion_scan("", 0, 0, &v), -ENOENT);
    /* a version named only by a file name shows no micro */
    struct py_version named = {.major = 3, .minor = 9, .level = 0xF, .micro_unknown = true};
    assert_string_equal(pyversion_format(&named, name, sizeof(name)), "3.9");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pyversion__decodes_debian_versions),
        cmocka_unit_test(test_pyversion__rejects_bad_cookie_and_short_header),
        cmocka_unit_test(test_pyversion__rejects_implausible_words),
        cmocka_unit_test(test_pyversion__unsupported_versions_are_named),
        cmocka_unit_test(test_pyversion__one_supported_range),
        cmocka_unit_test(test_pyversion__formats_alpha),
        cmocka_unit_test(test_pyversion__scan_finds_py_version_strings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
