/* SPDX-License-Identifier: MIT */
/*
 * file_store.h: the `storage` output. Each profile window is written to
 * DIRECTORY as JOB-PID-YYYYMMDDTHHMMSS.mmmZ.pb.gz (job name sanitised to
 * [A-Za-z0-9_.-]), atomically: written to a hidden temporary file in the same
 * directory, then renamed, so a reader never sees half a file. Retention:
 * files of that name pattern older than @a retention_ns are deleted, then the
 * oldest while the total is over @a max_bytes; checked at most every 10 s.
 * Other files in the directory are never touched.
 *
 * Errors are counted (metrics) and the first of each kind is logged once;
 * a full disk never stops the agent. Thread safety: see exporter.h.
 */
#ifndef PYPROFD_EXPORTERS_FILE_FILE_STORE_H
#define PYPROFD_EXPORTERS_FILE_FILE_STORE_H

#include "base/compat.h"

#include "exporters/exporter.h"

/**
 * Creates the store (the directory is created, with parents, on first use).
 * Returns 0 with @a out filled (ops and ctx; free with out->ops->free(ctx)),
 * -EINVAL for an empty directory name, -ENOMEM.
 */
PYPROFD_WARN_UNUSED int file_store_new(const char *directory, uint64_t retention_ns,
                                       uint64_t max_bytes, struct exporter *out);

/** Writes the file name for a profile (exposed for tests). */
void file_store_name(const char *job, int pid, int64_t time_nanos, char *buf, size_t len);

#endif /* PYPROFD_EXPORTERS_FILE_FILE_STORE_H */
