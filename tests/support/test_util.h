/* SPDX-License-Identifier: MIT */
/*
 * test_util.h: helpers shared by the tests: starting child programs that
 * announce themselves with one line on stdout, and stopping them.
 */
#ifndef PYPROFD_TESTS_TEST_UTIL_H
#define PYPROFD_TESTS_TEST_UTIL_H

#include "base/compat.h"

#include <sys/types.h>

/**
 * Starts @a argv[0] (a path) with @a argv and waits up to 10 s for its first
 * stdout line, stored without newline in @a line. Returns the child's pid, or
 * -1 (the child is killed and reaped). The child's stdout is then closed.
 */
pid_t test_spawn(char *const argv[], char *line, size_t line_len);

/**
 * Waits up to @a timeout_ms for child @a pid to end and reaps it. Returns its
 * waitpid() status, or -1 when it is still running (it is left running).
 */
int test_wait_child(pid_t pid, unsigned timeout_ms);

/** SIGKILLs and reaps a child started by test_spawn(). */
void test_kill_child(pid_t pid);

/**
 * Runs the shell command @a cmd, stores up to @a out_len-1 bytes of its stdout
 * in @a out (NUL-terminated, trailing newline removed) and returns its exit
 * status (-1 if it could not run or was killed).
 */
int test_run(const char *cmd, char *out, size_t out_len);

/**
 * Remembers a started target process so that test_kill_targets() can stop it
 * when a test fails half-way (a failed assertion leaves the test function at
 * once). At most 64 are tracked.
 */
void test_track_target(pid_t pid);
/** Forgets @a pid (it was stopped normally). */
void test_untrack_target(pid_t pid);
/** SIGKILLs every tracked target: a cmocka teardown (@a state is unused). */
int test_kill_targets(void **state);

/** Path of a fake program built by tests/support (PYPROFD_FAKE_DIR/name). */
const char *test_fake_path(const char *name, char *buf, size_t len);

#endif
