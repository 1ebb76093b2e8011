/* SPDX-License-Identifier: MIT */
/*
 * threadstat.h: what the kernel says about a target's threads: their state
 * ('R' in /proc/PID/task/TID/stat: running, or waiting for a CPU; the two
 * are not told apart there) and CPU time (schedstat), for cpu mode's credit
 * (sampler/cpucredit.h) and the idle watch; which host TID a thread id
 * from inside a container's PID namespace is; and which ids the target's
 * threads have there (for the unwinder's check of the TIDs thread states
 * name).
 *
 * The stat line is untrusted text; the state letter is the one after the
 * *last* ')' since the command name may itself contain ") ".
 *
 * These read /proc, so the sampler calls them only in modes that need them,
 * or (the listing) when a thread state names a TID it has not seen.
 * Thread safety: reentrant.
 */
#ifndef PYPROFD_SAMPLER_THREADSTAT_H
#define PYPROFD_SAMPLER_THREADSTAT_H

#include "base/compat.h"

#include <sys/types.h>

/**
 * The state letter of a /proc/.../stat line (@a len bytes at @a text). Returns
 * 0 and sets *@a state, or -EINVAL when the line has no state after its
 * command name.
 */
PYPROFD_WARN_UNUSED int threadstat_parse_state(const char *text, size_t len, char *state);

/**
 * The state letter and the CPU time (utime + stime, fields 14 and 15, in
 * clock ticks: threadstat_tick_ns()) of a /proc/.../stat line (@a len bytes
 * at @a text): cpu mode's last resort where the kernel has no schedstat
 * (sampler/cpucredit.h). Returns 0, or -EINVAL when the line does not have
 * them.
 */
PYPROFD_WARN_UNUSED int threadstat_parse_cputime(const char *text, size_t len, char *state,
                                                 uint64_t *ticks);

/** A clock tick of threadstat_parse_cputime() in nanoseconds (USER_HZ: 10 ms on Linux). */
uint64_t threadstat_tick_ns(void);

/**
 * The three numbers of a /proc/.../schedstat line ("%llu %llu %llu\n": CPU
 * time in ns, time spent waiting for a CPU in ns, times switched in), into
 * @a out. Returns 0, or -EINVAL for anything else.
 */
PYPROFD_WARN_UNUSED int threadstat_parse_schedstat(const char *text, size_t len, uint64_t out[3]);

/**
 * Reads the state of thread @a host_tid of @a pid. Returns 0 and the letter, or
 * -ESRCH when the thread is gone, or another negative errno.
 */
PYPROFD_WARN_UNUSED int threadstat_state(const char *proc_root, pid_t pid, pid_t host_tid,
                                         char *state);

/**
 * Translates @a ns_tid, a thread id as the target sees it, into the host TID
 * under @a proc_root. When the target shares our PID namespace it is the same
 * number. Returns 0, or -ENOENT when no thread of @a pid has that id.
 */
PYPROFD_WARN_UNUSED int threadstat_host_tid(const char *proc_root, pid_t pid, uint64_t ns_tid,
                                            pid_t *host_tid);

/**
 * Lists the threads of @a pid by the ids the target knows them by (its own
 * PID namespace: the innermost NSpid), into @a ns_tids, at most @a max; *@a n
 * gets how many. In our PID namespace that is one listing of
 * /proc/PID/task and one read of its status (sampler/tasks.h); in a
 * namespace of its own each thread's status is read too. A thread that ends
 * meanwhile is left out. Returns 0, -E2BIG when it has more than @a max
 * threads (the list is incomplete), -ESRCH when it is gone, or another
 * negative errno.
 */
PYPROFD_WARN_UNUSED int threadstat_list_ns(const char *proc_root, pid_t pid, uint64_t *ns_tids,
                                           size_t max, size_t *n);

/**
 * The inverse: thread @a host_tid's id as the target sees it (the innermost
 * NSpid of its status; @a host_tid itself without NSpid). Returns 0, or
 * -ESRCH/-ENOENT when the thread is gone.
 */
PYPROFD_WARN_UNUSED int threadstat_ns_tid(const char *proc_root, pid_t pid, pid_t host_tid,
                                          uint64_t *ns_tid);

/**
 * Reads the name of thread @a host_tid (/proc/PID/task/TID/comm, at most 15
 * bytes) into @a buf without the newline, as it is: any bytes, perhaps a
 * character cut in two (the sampler makes it valid UTF-8). Returns 0 or a
 * negative errno.
 */
PYPROFD_WARN_UNUSED int threadstat_comm(const char *proc_root, pid_t pid, pid_t host_tid, char *buf,
                                        size_t len);

#endif /* PYPROFD_SAMPLER_THREADSTAT_H */
