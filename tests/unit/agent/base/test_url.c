/* SPDX-License-Identifier: MIT */
/* Tests for agent/base/url.c: the password of a URL's userinfo is never shown. */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include "base/url.h"

static void expect(const char *in, const char *want)
{
    char out[256];
    assert_int_equal(url_redact(in, out, sizeof(out)), strlen(want));
    assert_string_equal(out, want);
}

static void test_url__hides_the_password(void **state)
{
    (void)state;
    expect("http://bob:pw@h:4040/x?y=1", "http://bob:<secret>@h:4040/x?y=1");
    expect("https://:pw@p.example/", "https://:<secret>@p.example/");
    /* the last '@' before the path: an '@' inside the password is hidden too */
    expect("http://bob:p@ss@h/", "http://bob:<secret>@h/");
    /* a ':' in the password */
    expect("http://bob:a:b@h", "http://bob:<secret>@h");
    /* no password: the user name stays */
    expect("https://bob@h/", "https://bob@h/");
    /* an '@' after the path is not userinfo */
    expect("http://h/a:b@c", "http://h/a:b@c");
    expect("http://h:80/?q=a:b@c", "http://h:80/?q=a:b@c");
    /* not a URL at all */
    expect("bob:pw@h", "bob:pw@h");
    expect("", "");
}

static void test_url__cuts_like_snprintf(void **state)
{
    (void)state;
    const char *u = "http://bob:pw@host/";
    char small[12];
    size_t n = url_redact(u, small, sizeof(small));
    assert_int_equal(n, strlen("http://bob:<secret>@host/"));
    assert_string_equal(small, "http://bob:");
    assert_true(n <= strlen(u) + 8);
    assert_int_equal(url_redact(u, NULL, 0), n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_url__hides_the_password),
        cmocka_unit_test(test_url__cuts_like_snprintf),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
