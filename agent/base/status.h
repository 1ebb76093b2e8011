/* SPDX-License-Identifier: MIT */
/*
 * status.h: per-sample outcomes (generated from status.def) and their
 * counters. Each sampled thread ends in exactly one status; failures are
 * counted and exported as self-metrics, never logged per event.
 *
 * Thread safety: status_name() is pure. A struct status_counters belongs to
 * one sampler thread; readers on other threads get a copy through the window
 * hand-off (later issues).
 */
#ifndef PYPROFD_BASE_STATUS_H
#define PYPROFD_BASE_STATUS_H

#include "base/compat.h"

enum sample_status {
#define STATUS(id, name, stage, desc) SAMPLE_##id,
#include "base/status.def"
#undef STATUS
    SAMPLE_STATUS_COUNT
};

/** Counters, one per status. Zero-initialise. */
struct status_counters {
    uint64_t count[SAMPLE_STATUS_COUNT];
};

/** Lower-case name, e.g. "incomplete", for metrics and messages. */
const char *status_name(enum sample_status s);
/** Pipeline stage that produces @a s ("memread", "unwind", ...). */
const char *status_stage(enum sample_status s);
/** One-line description. */
const char *status_describe(enum sample_status s);

/** Maps a memread error (-ESRCH, -EPERM, -EFAULT, ...) to a status. */
enum sample_status status_from_errno(int err);

static inline void status_count(struct status_counters *c, enum sample_status s)
{
    c->count[s]++;
}

#endif /* PYPROFD_BASE_STATUS_H */
