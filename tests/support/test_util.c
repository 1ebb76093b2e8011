/* SPDX-License-Identifier: MIT */
/*
 * test_util.c: child-process helpers for the tests (see test_util.h).
 */
#include "base/compat.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_util.h"

pid_t test_spawn(char *const argv[], char *line, size_t line_len)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        execv(argv[0], argv);
        _exit(127);
    }
    close(fds[1]);
    size_t len = 0;
    bool ok = false;
    while (len + 1 < line_len) {
        struct pollfd p = {.fd = fds[0], .events = POLLIN};
        if (poll(&p, 1, 10000) <= 0)
            break;
        ssize_t n = read(fds[0], line + len, 1);
        if (n <= 0)
            break;
        if (line[len] == '\n') {
            ok = true;
            break;
        }
        len++;
    }
    line[len] = '\0';
    close(fds[0]);
    if (!ok) {
        test_kill_child(pid);
        return -1;
    }
    return pid;
}

int test_wait_child(pid_t pid, unsigned timeout_ms)
{
    for (unsigned waited = 0;; waited += 10) {
        int st = 0;
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            return st;
        if (r < 0 && errno != EINTR)
            return -1;
        if (waited >= timeout_ms)
            return -1;
        usleep(10000);
    }
}

void test_kill_child(pid_t pid)
{
    if (pid <= 0)
        return;
    kill(pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
}

int test_run(const char *cmd, char *out, size_t out_len)
{
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    size_t len = fread(out, 1, out_len - 1, p);
    out[len] = '\0';
    while (len > 0 && out[len - 1] == '\n')
        out[--len] = '\0';
    int status = pclose(p);
    if (status < 0 || !WIFEXITED(status))
        return -1;
    return WEXITSTATUS(status);
}

const char *test_fake_path(const char *name, char *buf, size_t len)
{
    const char *dir = getenv("PYPROFD_FAKE_DIR");
    snprintf(buf, len, "%s/%s", dir ? dir : ".", name);
    return buf;
}

static pid_t test_targets[64];

void test_track_target(pid_t pid)
{
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(test_targets); i++) {
        if (test_targets[i] == 0) {
            test_targets[i] = pid;
            return;
        }
    }
}

void test_untrack_target(pid_t pid)
{
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(test_targets); i++) {
        if (test_targets[i] == pid)
            test_targets[i] = 0;
    }
}

int test_kill_targets(void **state)
{
    (void)state;
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(test_targets); i++) {
        if (test_targets[i] > 0)
            kill(test_targets[i], SIGKILL); /* also ends a container-mode unshare */
        test_targets[i] = 0;
    }
    return 0;
}
