/* SPDX-License-Identifier: MIT */
/* Tests for agent/config/envexpand.c: ${VAR} and ${VAR:-default}. */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include "base/alloc.h"
#include "config/config.h"

/* A fixed environment: NODE=worker-7, EMPTY="", everything else unset. */
static const char *fake_getenv(const char *name, void *ctx)
{
    (void)ctx;
    if (strcmp(name, "NODE") == 0)
        return "worker-7";
    if (strcmp(name, "EMPTY") == 0)
        return "";
    if (strcmp(name, "BIG") == 0)
        return (const char *)ctx;
    return NULL;
}

static char *expand(const char *in, char **missing)
{
    struct config_load_opts o = {.expand_env = true, .getenv_fn = fake_getenv};
    char *out = NULL;
    assert_int_equal(config_expand_env(in, &o, &out, missing), 0);
    return out;
}

static void check(const char *in, const char *want)
{
    char *missing = NULL;
    char *out = expand(in, &missing);
    assert_string_equal(out, want);
    alloc_free(out);
    alloc_free(missing);
}

static void test_envexpand__braced_forms(void **state)
{
    (void)state;
    check("${NODE}", "worker-7");
    check("node=${NODE}!", "node=worker-7!");
    check("${NODE}${NODE}", "worker-7worker-7");
    check("${NODE:-x}", "worker-7");
    check("${UNSET:-fallback}", "fallback");
    check("${EMPTY:-fallback}", "fallback"); /* empty counts as unset for :- */
    check("${EMPTY}", "");
    check("${UNSET:-}", "");
    check("plain text", "plain text");
    check("", "");
}

static void test_envexpand__leaves_templates_and_dollars(void **state)
{
    (void)state;
    check("$1", "$1");
    check("${1}", "${1}");
    check("${1}x", "${1}x");
    check("$NODE", "$NODE"); /* only the braced form expands */
    check("foo$", "foo$");
    check("a$$b", "a$b");
    check("$${name}", "${name}");
    check("${a b}", "${a b}");
    check("${NODE:=x}", "${NODE:=x}");
    check("^/usr/bin/python3(\\.[0-9]+)?$", "^/usr/bin/python3(\\.[0-9]+)?$");
}

static void test_envexpand__reports_missing_and_errors(void **state)
{
    (void)state;
    struct config_load_opts o = {.expand_env = true, .getenv_fn = fake_getenv};
    char *out = NULL, *missing = NULL;
    assert_int_equal(config_expand_env("a${UNSET}b${OTHER}", &o, &out, &missing), 0);
    assert_string_equal(out, "ab");
    assert_string_equal(missing, "UNSET");
    alloc_free(out);
    alloc_free(missing);
    out = NULL;
    assert_int_equal(config_expand_env("x${NODE", &o, &out, NULL), -EINVAL);
    assert_null(out);
    /* the cap applies to the result */
    size_t big = CONFIG_MAX_SCALAR / 2 + 1;
    char *val = alloc_malloc(big + 1);
    assert_non_null(val);
    memset(val, 'v', big);
    val[big] = '\0';
    o.getenv_ctx = val;
    assert_int_equal(config_expand_env("${BIG}", &o, &out, NULL), 0);
    alloc_free(out);
    assert_int_equal(config_expand_env("${BIG}${BIG}", &o, &out, NULL), -E2BIG);
    alloc_free(val);
}

static const char *real_name(void)
{
    return "PYPROFD_TEST_ENVEXPAND";
}

static void test_envexpand__defaults_to_getenv(void **state)
{
    (void)state;
    char *out = NULL;
    assert_int_equal(setenv(real_name(), "from-env", 1), 0);
    assert_int_equal(config_expand_env("${PYPROFD_TEST_ENVEXPAND}", NULL, &out, NULL), 0);
    assert_string_equal(out, "from-env");
    alloc_free(out);
    unsetenv(real_name());
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_envexpand__braced_forms),
        cmocka_unit_test(test_envexpand__leaves_templates_and_dollars),
        cmocka_unit_test(test_envexpand__reports_missing_and_errors),
        cmocka_unit_test(test_envexpand__defaults_to_getenv),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
