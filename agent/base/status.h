/* SPDX-License-Identifier: MIT */
/*
 * status.h: per-sample outcomes, generated from status.def. Each sampled
 * thread ends in exactly one status; failures are counted (the sampler's
 * failed_by, sampler/report.h) and exported as self-metrics, never logged per
 * event. Whether an outcome is a torn read, worth reading again at once, is
 * the table's torn column (status_torn()), for every reader alike.
 *
 * Thread safety: every function is pure.
 */
#ifndef PYPROFD_BASE_STATUS_H
#define PYPROFD_BASE_STATUS_H

#include "base/compat.h"

enum sample_status {
#define STATUS(id, name, torn, desc) SAMPLE_##id,
#include "base/status.def"
#undef STATUS
    SAMPLE_STATUS_COUNT
};
_Static_assert(SAMPLE_STATUS_COUNT <= 64, "status_torn() keeps the torn column in 64 bits");

/** Lower-case name, e.g. "incomplete", for metrics and messages. */
const char *status_name(enum sample_status s);
/**
 * Whether @a s is a torn read: memory that moved while it was read, which a
 * second read made at once almost always gets right (status.def's torn
 * column, as a bit mask: asked for every thread of every attempt).
 */
static inline bool status_torn(enum sample_status s)
{
    static const uint64_t torn = 0
#define STATUS(id, name, torn, desc) | ((uint64_t)(torn) << SAMPLE_##id)
#include "base/status.def"
#undef STATUS
        ;
    return (unsigned)s < SAMPLE_STATUS_COUNT && (torn >> s) & 1u;
}
/** One-line description. */
const char *status_describe(enum sample_status s);

/** Maps a memread error (-ESRCH, -EPERM, -EFAULT, ...) to a status. */
enum sample_status status_from_errno(int err);

#endif /* PYPROFD_BASE_STATUS_H */
