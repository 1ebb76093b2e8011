/* SPDX-License-Identifier: MIT */
/*
 * fdcap.h: the descriptors the samplers keep open between samples (cpu
 * mode's stat files, the idle watch's perf events and schedstat files),
 * counted against one process-wide cap: a quarter of RLIMIT_NOFILE, at most
 * 4096, so that sockets, pushes and scans always find descriptors. A
 * sampler that gets none does without (opens and closes per use, or gives
 * the saving up) and says so where it matters.
 *
 * Thread safety: any thread (atomics).
 */
#ifndef PYPROFD_BASE_FDCAP_H
#define PYPROFD_BASE_FDCAP_H

#include "base/compat.h"

/** Takes one descriptor of the budget: true, or false when it is used up. */
bool fdcap_take(void);
/** Gives one back (after a successful fdcap_take() whose descriptor is closed, or never opened). */
void fdcap_give(void);
/** Descriptors taken now (for tests and /metrics). */
long fdcap_used(void);

#endif /* PYPROFD_BASE_FDCAP_H */
