/* SPDX-License-Identifier: MIT */
/*
 * file_store.h: the `storage` output. Each profile window is written to
 * DIRECTORY as JOB-PID-YYYYMMDDTHHMMSS.mmmZ.pb.gz (job name sanitised to
 * [A-Za-z0-9_.-]), atomically and without following any link planted in the
 * directory (base/outfile.h): written to a temporary under a random name
 * (.pyprofd-tmp-<16 hex digits>, created O_EXCL | O_NOFOLLOW), fsync'ed,
 * then renamed over the name, so a reader never sees half a file; a name
 * that exists and is not a regular file is refused. The directory is opened
 * once, at creation (made with its parents), and every file is created,
 * listed, renamed and deleted relative to that descriptor; its own name must
 * not be a symbolic link. If it could not be made or opened at creation, or
 * was removed since, each write tries again.
 *
 * Retention: files of that name pattern older than @a retention_ns are
 * deleted, then the oldest while the total is over @a max_bytes; checked at
 * most every 10 s, also after a failed write. Temporaries (outfile's, and the
 * .tmp-NAME of earlier versions) older than a minute were left by a crash and
 * are deleted too. Other files in the directory are never touched.
 *
 * Errors are counted (metrics) and the first of each kind is logged once;
 * a full disk never stops the agent. Thread safety: see exporter.h.
 */
#ifndef PYPROFD_EXPORTERS_FILE_FILE_STORE_H
#define PYPROFD_EXPORTERS_FILE_FILE_STORE_H

#include "base/compat.h"

#include "exporters/exporter.h"

/**
 * Creates the store, and the directory with its parents, which it opens and
 * holds. Returns 0 with @a out filled (ops and ctx; free with
 * out->ops->free(ctx)), -EINVAL for an empty directory name, -ELOOP when the
 * directory's own name is a symbolic link (refused), -ENOMEM. Any other
 * failure to make or open the directory is not one here: each write tries
 * again, counting and logging its error.
 */
PYPROFD_WARN_UNUSED int file_store_new(const char *directory, uint64_t retention_ns,
                                       uint64_t max_bytes, struct exporter *out);

/** Writes the file name for a profile (exposed for tests). */
void file_store_name(const char *job, int pid, int64_t time_nanos, char *buf, size_t len);

#endif /* PYPROFD_EXPORTERS_FILE_FILE_STORE_H */
