/* SPDX-License-Identifier: MIT */
/*
 * exporters.h: the exporter factory, the one place that knows which exporter
 * serves which part of the configuration: `storage` is the file store
 * (exporters/file/), each `remote_write` entry a push exporter of its type
 * (Pyroscope, Parca). The daemon builds a config's outputs here and hands them
 * to the dispatcher; a new backend is a new case here, not a change to the
 * daemon's wiring.
 *
 * Ownership: the configuration is only read (an exporter copies what it
 * keeps, its write_relabel rules included), so it may be freed or handed on
 * at once; the exporters made are the caller's (exporters_free(), or the
 * dispatcher once it took them).
 *
 * Thread safety: call from one thread at a time; curl_global_init() must have
 * run (the push exporters create libcurl handles).
 */
#ifndef PYPROFD_EXPORTERS_EXPORTERS_H
#define PYPROFD_EXPORTERS_EXPORTERS_H

#include "base/compat.h"

#include "config/config.h"
#include "exporters/exporter.h"

/**
 * Creates the exporter for remote_write entry @a rw, chosen by rw->type.
 * Returns 0 with @a out filled (free with out->ops->free(out->ctx)), -EINVAL
 * for an unknown type, or the backend's error (pyroscope.h, parca.h).
 */
PYPROFD_WARN_UNUSED int exporter_new_for(const struct config_remote_write *rw,
                                         struct exporter *out);

/**
 * Creates every output of @a cfg, in order: the storage directory when
 * storage.directory is set, then each remote_write endpoint, into @a ex
 * (room for @a max) and their number into *@a n. Returns 0, or -E2BIG (more
 * outputs than @a max) or the error of the output that failed, with a
 * message naming it in @a err (size @a errlen); then nothing is left made
 * (*@a n is 0).
 */
PYPROFD_WARN_UNUSED int exporters_new(const struct pyprofd_config *cfg, struct exporter *ex,
                                      size_t max, size_t *n, char *err, size_t errlen);

/** Frees the @a n exporters at @a ex (each one's ops->free). */
void exporters_free(struct exporter *ex, size_t n);

#endif /* PYPROFD_EXPORTERS_EXPORTERS_H */
