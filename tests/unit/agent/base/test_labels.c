/* SPDX-License-Identifier: MIT */
/* Tests for agent/base/labels.c. */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include "base/alloc.h"
#include "base/labels.h"
#include "base/utf8.h"

static void test_labels__set_get_replace_sorted(void **state)
{
    (void)state;
    struct labels ls = {0};
    assert_int_equal(labels_set(&ls, "job", "python"), 0);
    assert_int_equal(labels_set(&ls, "__meta_process_pid", "12"), 0);
    assert_int_equal(labels_set(&ls, "zone", "a"), 0);
    assert_int_equal(labels_set(&ls, "job", "web"), 0); /* replaces */
    assert_int_equal(ls.n, 3);
    assert_string_equal(labels_get(&ls, "job"), "web");
    assert_null(labels_get(&ls, "nope"));
    /* byte order: '_' (0x5f) sorts before lower-case letters */
    assert_string_equal(ls.v[0].name, "__meta_process_pid");
    assert_string_equal(ls.v[1].name, "job");
    assert_string_equal(ls.v[2].name, "zone");
    assert_int_equal(labels_setn(&ls, "n", "abcdef", 3), 0);
    assert_string_equal(labels_get(&ls, "n"), "abc");
    assert_int_equal(labels_set(&ls, "empty", ""), 0);
    assert_string_equal(labels_get(&ls, "empty"), "");
    labels_release(&ls);
    assert_int_equal(ls.n, 0);
    labels_release(&ls); /* released twice: no-op */
}

static void test_labels__del_copy_equal_hash(void **state)
{
    (void)state;
    struct labels a = {0}, b = {0};
    assert_int_equal(labels_set(&a, "b", "2"), 0);
    assert_int_equal(labels_set(&a, "a", "1"), 0);
    assert_int_equal(labels_set(&a, "c", "3"), 0);
    assert_int_equal(labels_set(&b, "old", "x"), 0);
    assert_int_equal(labels_copy(&b, &a), 0);
    assert_true(labels_equal(&a, &b));
    assert_true(labels_hash(&a) == labels_hash(&b));
    labels_del(&b, "b");
    labels_del(&b, "missing");
    assert_int_equal(b.n, 2);
    assert_false(labels_equal(&a, &b));
    assert_null(labels_get(&b, "b"));
    assert_string_equal(labels_get(&b, "c"), "3");
    /* name/value boundaries count: ("ab","c") differs from ("a","bc") */
    struct labels x = {0}, y = {0};
    assert_int_equal(labels_set(&x, "ab", "c"), 0);
    assert_int_equal(labels_set(&y, "a", "bc"), 0);
    assert_true(labels_hash(&x) != labels_hash(&y));
    assert_false(labels_equal(&x, &y));
    labels_release(&a);
    labels_release(&b);
    labels_release(&x);
    labels_release(&y);
}

static void test_labels__valid_name(void **state)
{
    (void)state;
    assert_true(labels_valid_name("job"));
    assert_true(labels_valid_name("_x9"));
    assert_true(labels_valid_name("__meta_process_pid"));
    assert_false(labels_valid_name(""));
    assert_false(labels_valid_name("9a"));
    assert_false(labels_valid_name("a-b"));
    assert_false(labels_valid_name("a.b"));
    assert_false(labels_valid_name(NULL));
}

static void test_labels__cap_and_oom_leave_set_unchanged(void **state)
{
    (void)state;
    struct labels ls = {0};
    char name[32];
    for (int i = 0; i < LABELS_MAX; i++) {
        snprintf(name, sizeof(name), "l%05d", i);
        assert_int_equal(labels_set(&ls, name, "v"), 0);
    }
    assert_int_equal(labels_set(&ls, "one_more", "v"), -ENOMEM);
    assert_int_equal(labels_set(&ls, "l00000", "w"), 0); /* replacing still works */
    assert_int_equal(ls.n, LABELS_MAX);
    labels_release(&ls);

    /* every allocation of a set/copy failing in turn */
    struct labels src = {0};
    assert_int_equal(labels_set(&src, "a", "1"), 0);
    assert_int_equal(labels_set(&src, "b", "2"), 0);
    for (uint64_t n = 1; n <= 8; n++) {
        struct labels d = {0};
        assert_int_equal(labels_set(&d, "keep", "me"), 0);
        alloc_fail_nth(n);
        int rc = labels_copy(&d, &src);
        alloc_fail_nth(0);
        if (rc == 0) {
            assert_true(labels_equal(&d, &src));
        } else {
            assert_int_equal(rc, -ENOMEM);
            assert_string_equal(labels_get(&d, "keep"), "me");
        }
        alloc_fail_nth(n);
        rc = labels_set(&d, "zz", "v");
        alloc_fail_nth(0);
        assert_true(rc == 0 || rc == -ENOMEM);
        labels_release(&d);
    }
    labels_release(&src);
}

/* Values are valid UTF-8 whatever was given: U+FFFD as Python's decoder writes, counted. */
static void test_labels__values_are_valid_utf8(void **state)
{
    (void)state;
    struct labels ls = {0};
    uint64_t before = utf8_replaced_total();
    assert_int_equal(labels_set(&ls, "cmd", "python3 /srv/\xff\xfe\x1b[31mapp.py \xe2\x82"), 0);
    assert_string_equal(labels_get(&ls, "cmd"),
                        "python3 /srv/\xef\xbf\xbd\xef\xbf\xbd\x1b[31mapp.py "
                        "\xef\xbf\xbd");
    assert_int_equal(utf8_replaced_total() - before, 3);
    /* setn stops at its length, and at a NUL before it */
    assert_int_equal(labels_setn(&ls, "n", "ab\xc3\xa4\xff", 4), 0);
    assert_string_equal(labels_get(&ls, "n"), "ab\xc3\xa4");
    assert_int_equal(labels_setn(&ls, "n", "ab\xc3\xa4\xff", 5), 0);
    assert_string_equal(labels_get(&ls, "n"), "ab\xc3\xa4\xef\xbf\xbd");
    assert_int_equal(labels_setn(&ls, "z", "a\0\xff", 3), 0);
    assert_string_equal(labels_get(&ls, "z"), "a");
    assert_int_equal(utf8_replaced_total() - before, 4);
    /* valid text is kept byte for byte, a real U+FFFD included */
    assert_int_equal(labels_set(&ls, "ok", "za\xc5\xbc\xc3\xb3\xc5\x82\xc4\x87 \xef\xbf\xbd"), 0);
    assert_string_equal(labels_get(&ls, "ok"), "za\xc5\xbc\xc3\xb3\xc5\x82\xc4\x87 \xef\xbf\xbd");
    assert_int_equal(utf8_replaced_total() - before, 4);
    labels_release(&ls);

    /* a copy of a set built by hand, around labels_set(), is valid too */
    char name[] = "cmd", value[] = "a\xff"
                                   "b";
    struct label one = {.name = name, .value = value};
    struct labels hand = {.v = &one, .n = 1, .cap = 1}, copy = {0};
    assert_int_equal(labels_copy(&copy, &hand), 0);
    assert_string_equal(labels_get(&copy, "cmd"), "a\xef\xbf\xbd"
                                                  "b");
    assert_int_equal(utf8_replaced_total() - before, 5);
    labels_release(&copy);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_labels__set_get_replace_sorted),
        cmocka_unit_test(test_labels__del_copy_equal_hash),
        cmocka_unit_test(test_labels__valid_name),
        cmocka_unit_test(test_labels__cap_and_oom_leave_set_unchanged),
        cmocka_unit_test(test_labels__values_are_valid_utf8),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
