/* SPDX-License-Identifier: MIT */
/*
 * Tests for agent/cli/agent.c: `pyprofd agent` with a config file it must
 * not wait on. The command runs in a forked child (it blocks signals and
 * starts threads), which the test stops with SIGTERM, then SIGKILL, when it
 * does not end by itself.
 */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "test_util.h"

/* Runs `pyprofd agent ARGS...` in a child with stdout and stderr on /dev/null. */
static pid_t agent_start(int argc, const char *const *args)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    char *argv[8];
    for (int i = 0; i < argc && i < 7; i++)
        argv[i] = (char *)args[i];
    argv[argc < 7 ? argc : 7] = NULL;
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null >= 0) {
        dup2(null, 1);
        dup2(null, 2);
    }
    _exit(cli_agent(argc, argv));
}

/*
 * A FIFO as --config.file: the agent refuses it and exits 1 at once. Before,
 * it blocked in open(2) waiting for a writer with SIGTERM already blocked,
 * so that not even SIGTERM could stop it.
 */
static void test_agent__fifo_config_is_refused_not_waited_on(void **state)
{
    (void)state;
    char dir[] = "/tmp/pyprofd-agent-fifo-XXXXXX", fifo[64];
    assert_non_null(mkdtemp(dir));
    snprintf(fifo, sizeof(fifo), "%s/config.yml", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    const char *a[] = {"agent", "--config.file", fifo, "--web.listen-address", ""};
    pid_t pid = agent_start(PYPROFD_ARRAY_SIZE(a), a);
    assert_true(pid > 0);
    int st = test_wait_child(pid, 5000);
    bool ended_by_itself = st != -1, ended_by_sigterm = false;
    if (!ended_by_itself) {
        kill(pid, SIGTERM);
        st = test_wait_child(pid, 3000);
        ended_by_sigterm = st != -1;
        if (!ended_by_sigterm)
            test_kill_child(pid);
    }
    unlink(fifo);
    rmdir(dir);
    if (!ended_by_itself)
        fail_msg("the agent waited on the FIFO, and %s",
                 ended_by_sigterm ? "ended only on SIGTERM" : "ignored SIGTERM (killed)");
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), CLI_EXIT_FAIL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_agent__fifo_config_is_refused_not_waited_on),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
