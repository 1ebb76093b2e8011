/* SPDX-License-Identifier: MIT */
/*
 * dispatch.h: the export thread. It pops finished windows from the window
 * queue (aggregate/window.h), encodes each once to gzipped pprof with the
 * target's labels on every sample (pprof/pprof_build.h), offers the bytes to
 * every exporter (exporter.h), and gives the window back to the pool. Encode
 * time and profile sizes are measured (histograms in metrics).
 *
 * The exporter set can be replaced at run time (a reload); the old set is
 * shut down and freed on the export thread, between two profiles.
 *
 * Thread safety: dispatch_set_exporters and dispatch_metrics from any thread;
 * new/start/stop/free from the controlling thread.
 */
#ifndef PYPROFD_EXPORTERS_DISPATCH_H
#define PYPROFD_EXPORTERS_DISPATCH_H

#include "base/compat.h"

#include "aggregate/window.h"
#include "exporters/exporter.h"

struct dispatch;

/** Creates the dispatcher for @a q (borrowed). Returns 0 or -ENOMEM. */
PYPROFD_WARN_UNUSED int dispatch_new(struct window_queue *q, uint64_t max_profile_bytes,
                                     struct dispatch **out);
/**
 * Replaces the exporters with the @a n of @a ex (taken over: the dispatcher
 * frees them). Returns 0 or -ENOMEM (then the caller still owns them).
 */
PYPROFD_WARN_UNUSED int dispatch_set_exporters(struct dispatch *d, const struct exporter *ex,
                                               size_t n, uint64_t max_profile_bytes);
PYPROFD_WARN_UNUSED int dispatch_start(struct dispatch *d);
/**
 * Closes the queue, exports what is in it until @a deadline_ns
 * (CLOCK_MONOTONIC; what is left then is dropped and counted), shuts the
 * exporters down with the same deadline and joins the thread. Idempotent.
 */
void dispatch_stop(struct dispatch *d, uint64_t deadline_ns);
void dispatch_free(struct dispatch *d);
/** Writes pyprofd_profile_* families and every exporter's own. */
PYPROFD_WARN_UNUSED int dispatch_metrics(struct dispatch *d, struct promtext *w);

#endif /* PYPROFD_EXPORTERS_DISPATCH_H */
