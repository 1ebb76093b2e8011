/* SPDX-License-Identifier: MIT */
/*
 * probe_fake.h: a struct probe_ops (daemon/targets.h) over synthetic
 * CPython images (pyimage.h), for tests that drive the sampling loop without
 * real processes. Each PID is told what it is: a Python process with an
 * image, a process that is not Python, or one that exited. Opening a Python
 * process installs a copy of its image into a fresh memread_fake, so the
 * targets the loop starts really attach, and sample that image's threads
 * and frames.
 *
 * Readers handed out stay tied to their process: once probe_fake_exit() is
 * called, every read through them fails with -ESRCH, as reads of an exited
 * process do. Each read may also cost CPU time on a fake clock, to drive the
 * agent's CPU budget.
 *
 * The probe must outlive every reader it opened. Thread safety: none.
 */
#ifndef PYPROFD_TESTS_PROBE_FAKE_H
#define PYPROFD_TESTS_PROBE_FAKE_H

#include "base/compat.h"

#include <sys/types.h>

#include "clock_fake.h"
#include "pyimage.h"
#include "daemon/targets.h"

#define PROBE_FAKE_MAX_PROCS 16

struct probe_fake;

/** A probe that knows no process yet; @a clock (may be NULL) is charged for reads. */
struct probe_fake *probe_fake_new(struct clock_fake *clock);
/** Frees; the readers it opened must be gone. NULL is a no-op. */
void probe_fake_free(struct probe_fake *pf);
/** The ops to hand to the loop or proc_judge() (borrowed from @a pf). */
const struct probe_ops *probe_fake_ops(struct probe_fake *pf);

/**
 * From now on process @a pid runs Python with image @a img (borrowed, built
 * and not installed), or with @a img NULL is not Python (no runtime found).
 * An unknown PID is a process that is gone.
 */
void probe_fake_set(struct probe_fake *pf, pid_t pid, struct pyimage *img);
/** Process @a pid exited: opens, lookups and reads of it fail with -ESRCH. */
void probe_fake_exit(struct probe_fake *pf, pid_t pid);
/** Every later read through a reader of this probe costs @a ns of thread CPU time. */
void probe_fake_read_cost(struct probe_fake *pf, uint64_t ns);

/** How many times the runtime of @a pid was looked for (the process judged past its age). */
unsigned probe_fake_locates(const struct probe_fake *pf, pid_t pid);

#endif /* PYPROFD_TESTS_PROBE_FAKE_H */
