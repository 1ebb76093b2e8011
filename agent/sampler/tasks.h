/* SPDX-License-Identifier: MIT */
/*
 * tasks.h: a target's threads as its kernel lists them (/proc/PID/task),
 * listed in one place for every part of the sampler that follows them: the
 * idle watch (runwatch), the kernel's samples (nsampler), the exact path's
 * stop, the thread cache's host TIDs and the unwinder's check of the TIDs
 * thread states name (threadstat). One cap for all of
 * them, TASKS_MAX: the threads of one target the sampler watches, samples
 * from the kernel or stops, which is as many as the unwinder walks
 * (UNWIND_MAX_THREADS): a thread past it has no Python stack pyprofd would
 * read, so watching it would buy nothing. (The thread cache of names is a
 * cache of 256 entries, not a cap: a thread it evicted is looked up again.)
 *
 * The listing reads the directory with getdents64 into a buffer on the
 * stack: no allocation (the exact path lists at every attempt), no
 * descriptor kept.
 *
 * Thread safety: every function is thread-safe (no state).
 */
#ifndef PYPROFD_SAMPLER_TASKS_H
#define PYPROFD_SAMPLER_TASKS_H

#include "base/compat.h"

#include <sys/types.h>

#include "unwind/unwind.h"

#define TASKS_MAX UNWIND_MAX_THREADS /* threads of one target followed, at most */

/**
 * Lists the threads of process @a pid (its host PID under @a proc_root) into
 * @a tids, at most @a max (the first ones the kernel lists); *@a n gets how
 * many, *@a more (may be NULL) whether there were more. Returns 0, -ESRCH
 * when the process is gone, or another negative errno (the listing failed).
 */
PYPROFD_WARN_UNUSED int tasks_list(const char *proc_root, pid_t pid, pid_t *tids, size_t max,
                                   size_t *n, bool *more);

/**
 * Parses the records of a getdents64 buffer (@a len bytes) as thread ids
 * (names that are decimal numbers, 1 to INT32_MAX), appending them to
 * @a tids (*@a n of @a max used). Returns false when a record is malformed
 * (the rest is not read). Pure; the fuzzed part of tasks_list().
 */
bool tasks_parse(const void *buf, size_t len, pid_t *tids, size_t max, size_t *n, bool *more);

#endif /* PYPROFD_SAMPLER_TASKS_H */
