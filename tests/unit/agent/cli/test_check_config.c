/* SPDX-License-Identifier: MIT */
/* Tests for agent/cli/check_config.c: exit statuses of `pyprofd check-config`. */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include <fcntl.h>
#include <unistd.h>

#include "cli/cli.h"

static int run(int argc, const char *const *args)
{
    char *argv[8];
    for (int i = 0; i < argc; i++)
        argv[i] = (char *)args[i];
    argv[argc] = NULL;
    /* keep the test log readable: the command writes to stdout and stderr */
    fflush(stdout);
    fflush(stderr);
    int out = dup(1), err = dup(2), null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    dup2(null, 2);
    int rc = cli_check_config(argc, argv);
    fflush(stdout);
    fflush(stderr);
    dup2(out, 1);
    dup2(err, 2);
    close(out);
    close(err);
    close(null);
    return rc;
}

static void write_file(char *path, const char *body)
{
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, body, strlen(body)), (ssize_t)strlen(body));
    close(fd);
}

static void test_check_config__exit_statuses(void **state)
{
    (void)state;
    char good[] = "/tmp/pyprofd-cc-good-XXXXXX", bad[] = "/tmp/pyprofd-cc-bad-XXXXXX";
    write_file(good, "profile_configs:\n  - job_name: python\n");
    write_file(bad, "global:\n  mode: turbo\n");
    {
        const char *a[] = {"check-config", good};
        assert_int_equal(run(2, a), CLI_EXIT_OK);
    }
    {
        const char *a[] = {"check-config", "--print", good};
        assert_int_equal(run(3, a), CLI_EXIT_OK);
    }
    {
        const char *a[] = {"check-config", good, bad};
        assert_int_equal(run(3, a), CLI_EXIT_FAIL);
    }
    {
        const char *a[] = {"check-config", "/nonexistent/pyprofd.yml"};
        assert_int_equal(run(2, a), CLI_EXIT_FAIL);
    }
    {
        const char *a[] = {"check-config"};
        assert_int_equal(run(1, a), CLI_EXIT_USAGE);
    }
    {
        const char *a[] = {"check-config", "--no-such-flag", good};
        assert_int_equal(run(3, a), CLI_EXIT_USAGE);
    }
    {
        const char *a[] = {"check-config", "--config.expand-env", good};
        assert_int_equal(run(3, a), CLI_EXIT_OK);
    }
    unlink(good);
    unlink(bad);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check_config__exit_statuses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
