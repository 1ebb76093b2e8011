/* SPDX-License-Identifier: MIT */
/* Tests for cli/check_config.c: exit statuses of `pyprofd check-config`. */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "test_util.h"

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

/*
 * A FIFO given as the config file: check-config says so and fails at once.
 * It runs in a child so that a blocking open fails the test (the child is
 * killed after 5 s) rather than hanging it.
 */
static void test_check_config__fifo_fails_at_once(void **state)
{
    (void)state;
    char dir[] = "/tmp/pyprofd-cc-fifo-XXXXXX", fifo[64];
    assert_non_null(mkdtemp(dir));
    snprintf(fifo, sizeof(fifo), "%s/config.yml", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        const char *a[] = {"check-config", fifo};
        _exit(run(2, a));
    }
    int st = test_wait_child(pid, 5000);
    if (st == -1)
        test_kill_child(pid);
    unlink(fifo);
    rmdir(dir);
    assert_true(st != -1); /* it did not block */
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), CLI_EXIT_FAIL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check_config__exit_statuses),
        cmocka_unit_test(test_check_config__fifo_fails_at_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
