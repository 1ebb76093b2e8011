/* SPDX-License-Identifier: MIT */
/*
 * Tests for cli/agent.c: `pyprofd agent` with a config file it must
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

#include "base/log.h"
#include "cli/cli.h"
#include "config/config.h"
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

/* What agent_log_listen() logs for @yaml (loaded with ${VAR} expansion), in @buf. */
static bool listen_log(const char *yaml, const char *option, bool reload, char *buf, size_t len)
{
    struct config_load_opts o = {.expand_env = true};
    struct pyprofd_config *c = NULL;
    struct config_errors e = {0};
    assert_int_equal(config_load_buffer(yaml, strlen(yaml), "t.yml", &o, &c, &e), 0);
    FILE *f = tmpfile();
    assert_non_null(f);
    log_set_sink(f);
    bool off = agent_log_listen(c, option, "t.yml", reload);
    log_set_sink(NULL);
    rewind(f);
    size_t n = fread(buf, 1, len - 1, f);
    buf[n] = '\0';
    fclose(f);
    config_free(c);
    config_errors_release(&e);
    return off;
}

/*
 * The HTTP server off: said at info level when asked for ("" in the file or
 * on the command line), warned about when ${VAR} expansion emptied the
 * address (an unset variable), at start and at a reload (not applied then).
 */
static void test_agent__warns_when_expansion_turns_http_off(void **state)
{
    (void)state;
    char buf[1024];
    unsetenv("PYPROFD_TEST_UNSET_LISTEN");
    const char *emptied = "server: {listen_address: \"${PYPROFD_TEST_UNSET_LISTEN}\"}\n";
    assert_true(listen_log(emptied, NULL, false, buf, sizeof(buf)));
    assert_non_null(strstr(buf, "pyprofd: warn: server.listen_address in 't.yml' is empty "
                                "after ${VAR} expansion (an unset variable?): HTTP server off"));
    assert_true(listen_log(emptied, NULL, true, buf, sizeof(buf)));
    assert_non_null(strstr(buf, "warn: "));
    assert_non_null(strstr(buf, "not applied now (the address is read at start only)"));
    /* asked for: information only */
    assert_true(listen_log("server: {listen_address: \"\"}\n", NULL, false, buf, sizeof(buf)));
    assert_null(strstr(buf, "warn"));
    assert_non_null(strstr(buf, "HTTP server off (server.listen_address is \"\" in 't.yml')"));
    assert_true(listen_log(emptied, "", false, buf, sizeof(buf)));
    assert_null(strstr(buf, "warn"));
    assert_non_null(strstr(buf, "HTTP server off (--web.listen-address is \"\")"));
    /* the option wins; an address: nothing to say */
    assert_false(listen_log(emptied, "127.0.0.1:0", false, buf, sizeof(buf)));
    assert_string_equal(buf, "");
    assert_false(listen_log("server: {listen_address: ':0'}\n", NULL, false, buf, sizeof(buf)));
    assert_string_equal(buf, "");
    assert_false(listen_log("", NULL, true, buf, sizeof(buf)));
    assert_string_equal(buf, "");
}

/*
 * The same through `pyprofd agent`: it starts without HTTP, says why, and
 * stops on SIGTERM.
 */
static void test_agent__start_logs_http_off_and_stops_on_sigterm(void **state)
{
    (void)state;
    char dir[] = "/tmp/pyprofd-agent-listen-XXXXXX", cfg[64], log[64], buf[8192] = "";
    assert_non_null(mkdtemp(dir));
    snprintf(cfg, sizeof(cfg), "%s/config.yml", dir);
    snprintf(log, sizeof(log), "%s/log", dir);
    FILE *f = fopen(cfg, "w");
    assert_non_null(f);
    fputs("profile_configs: []\nserver: {listen_address: \"${PYPROFD_TEST_UNSET_LISTEN}\"}\n", f);
    assert_int_equal(fclose(f), 0);
    unsetenv("PYPROFD_TEST_UNSET_LISTEN");
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        const char *a[] = {"agent", "--config.file", cfg, "--config.expand-env", NULL};
        _exit(cli_agent(4, (char **)a));
    }
    bool started = false;
    for (int i = 0; i < 1000 && !started; i++) {
        FILE *l = fopen(log, "r");
        size_t n = l ? fread(buf, 1, sizeof(buf) - 1, l) : 0;
        buf[n] = '\0';
        if (l)
            fclose(l);
        started = strstr(buf, "agent started") != NULL;
        if (!started)
            usleep(10000);
    }
    kill(pid, SIGTERM);
    int st = test_wait_child(pid, 15000);
    if (st == -1)
        test_kill_child(pid);
    unlink(cfg);
    unlink(log);
    rmdir(dir);
    if (!started)
        fail_msg("the agent did not start: %s", buf);
    assert_non_null(strstr(buf, "warn: server.listen_address in '"));
    assert_non_null(strstr(buf, "is empty after ${VAR} expansion"));
    assert_null(strstr(buf, "serving http://"));
    assert_true(st != -1);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), CLI_EXIT_OK);
}

/*
 * What agent_restart_keys() names for @yaml against a server started as
 * @addr/@lifecycle with the default limit of 4 profile requests at once.
 */
static void restart_keys(const char *yaml, const char *option, bool lc_option, const char *addr,
                         bool lifecycle, char *buf, size_t len)
{
    struct config_load_opts o = {0};
    struct pyprofd_config *c = NULL;
    struct config_errors e = {0};
    assert_int_equal(config_load_buffer(yaml, strlen(yaml), "t.yml", &o, &c, &e), 0);
    agent_restart_keys(c, option, lc_option, addr, lifecycle, 4, buf, len);
    config_free(c);
    config_errors_release(&e);
}

/*
 * A reload applies every setting but the three the HTTP server reads at start;
 * a changed one is named (and the reload logs it), an unchanged one or one a
 * command-line option fixes is not.
 */
static void test_agent__reload_names_keys_read_at_start(void **state)
{
    (void)state;
    char buf[128];
    const char *same = "server: {listen_address: \"127.0.0.1:7979\"}\n";
    const char *moved = "server: {listen_address: \"127.0.0.1:7980\", enable_lifecycle: true}\n";
    restart_keys(same, NULL, false, "127.0.0.1:7979", false, buf, sizeof(buf));
    assert_string_equal(buf, "");
    restart_keys(moved, NULL, false, "127.0.0.1:7979", false, buf, sizeof(buf));
    assert_string_equal(buf, "server.listen_address, server.enable_lifecycle");
    /* the options win over the file: nothing waits for a restart */
    restart_keys(moved, "127.0.0.1:7979", true, "127.0.0.1:7979", true, buf, sizeof(buf));
    assert_string_equal(buf, "");
    /* turned off in the file while running */
    restart_keys("server: {listen_address: \"\"}\n", NULL, false, "127.0.0.1:7979", false, buf,
                 sizeof(buf));
    assert_string_equal(buf, "server.listen_address");
    /* the built-in default against a server started from it */
    restart_keys("{}\n", NULL, false, "127.0.0.1:7979", false, buf, sizeof(buf));
    assert_string_equal(buf, "");
    /* the profile limit (no command-line option) */
    restart_keys("server: {max_concurrent_profiles: 8}\n", NULL, false, "127.0.0.1:7979", false,
                 buf, sizeof(buf));
    assert_string_equal(buf, "server.max_concurrent_profiles");
    restart_keys("server: {max_concurrent_profiles: 4}\n", NULL, false, "127.0.0.1:7979", false,
                 buf, sizeof(buf));
    assert_string_equal(buf, "");
    restart_keys("server: {listen_address: \"\", enable_lifecycle: true, max_concurrent_profiles: "
                 "64}\n",
                 NULL, false, "127.0.0.1:7979", false, buf, sizeof(buf));
    assert_string_equal(
        buf, "server.listen_address, server.enable_lifecycle, server.max_concurrent_profiles");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_agent__fifo_config_is_refused_not_waited_on),
        cmocka_unit_test(test_agent__warns_when_expansion_turns_http_off),
        cmocka_unit_test(test_agent__reload_names_keys_read_at_start),
        cmocka_unit_test(test_agent__start_logs_http_off_and_stops_on_sigterm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
