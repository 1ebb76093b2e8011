/* SPDX-License-Identifier: MIT */
/*
 * procfs_fake.h: a fake proc root in a temporary directory, for tests of
 * what scans /proc (discovery/proc_scan.h) or reads a target's /proc files
 * (sampler/threadstat.h) through a configurable proc root. It holds what
 * those read: <root>/stat (btime), and per process stat, status, cmdline,
 * cgroup, comm, schedstat, exe and cwd (symbolic links), and optionally
 * threads (task/TID/stat, status and comm; schedstat with
 * procfs_fake_thread_cpu()).
 *
 * Every helper fails the running cmocka test on an error.
 *
 * Thread safety: none (one test thread).
 */
#ifndef PYPROFD_TESTS_PROCFS_FAKE_H
#define PYPROFD_TESTS_PROCFS_FAKE_H

#include "base/compat.h"

#include <sys/types.h>

struct procfs_fake;

/** An empty proc root whose machine booted at @a btime_s (seconds since the epoch). */
struct procfs_fake *procfs_fake_new(int64_t btime_s);
/** Removes the directory tree and frees; NULL is a no-op. */
void procfs_fake_free(struct procfs_fake *f);
/** The root's path (borrowed). */
const char *procfs_fake_root(const struct procfs_fake *f);

/**
 * The start time (clock ticks after boot, stat field 22) of a process that
 * is @a age_ns old at wall-clock time @a now_real_ns, at the system's clock
 * tick rate (as proc_scan uses by default).
 */
uint64_t procfs_fake_start_ticks(const struct procfs_fake *f, int64_t now_real_ns, int64_t age_ns);

/**
 * Adds process @a pid named @a comm that started @a start_ticks after boot:
 * uid 0, running /usr/bin/python3 -m app in /srv/app, in a plain cgroup.
 */
void procfs_fake_add(struct procfs_fake *f, pid_t pid, const char *comm, uint64_t start_ticks);
/** Adds thread @a tid of process @a pid, named @a name, in state @a state ('R', 'S', ...). */
void procfs_fake_thread(struct procfs_fake *f, pid_t pid, pid_t tid, const char *name, char state);
/**
 * Rewrites thread @a tid's stat file with state @a state and @a cpu_ns of
 * CPU time (utime, in clock ticks; stime 0), and with @a schedstat its
 * schedstat too (@a cpu_ns exactly), each in place (the same file: a
 * sampler may keep it open).
 */
void procfs_fake_thread_cpu(struct procfs_fake *f, pid_t pid, pid_t tid, const char *name,
                            char state, uint64_t cpu_ns, bool schedstat);
/** Replaces process @a pid's cgroup file with @a text (a container's, say). */
void procfs_fake_cgroup(struct procfs_fake *f, pid_t pid, const char *text);
/** Removes the file at @a rel under the root (a kernel without it). */
void procfs_fake_unlink(struct procfs_fake *f, const char *rel);
/** Removes process @a pid's directory: it exited. */
void procfs_fake_remove(struct procfs_fake *f, pid_t pid);

#endif /* PYPROFD_TESTS_PROCFS_FAKE_H */
