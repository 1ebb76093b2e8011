/* SPDX-License-Identifier: MIT */
/*
 * dispatch.h: the export thread. It pops finished windows from the window
 * queue (aggregate/window.h), encodes each once to gzipped pprof with the
 * target's labels on every sample (pprof/pprof_build.h), offers the bytes to
 * every exporter (exporter.h), and gives the window back to the pool. Encode
 * time and profile sizes are measured (histograms in metrics).
 *
 * The exporter set can be replaced at run time (a reload). The new set is
 * current at once: it gets every profile from then on, and only it is in
 * /metrics. The old set is stopped on the export thread, between two
 * profiles, and given DISPATCH_RETIRE_NS to deliver what it holds; a reaper
 * thread then waits for it and frees it. Counters stay monotonic across a
 * reload: an exporter of the new set whose name and kind match one of the old
 * set's takes over the old one's counts (exporter_ops.carry), at once and
 * again when the old one has finished.
 *
 * Time: every deadline here and in the exporters' stop()/shutdown() is on
 * the dispatcher's monotonic clock (base/clock.h; clock_system unless
 * dispatch_set_clock() says otherwise), which must be the exporters' clock
 * too.
 *
 * Thread safety: dispatch_set_exporters and dispatch_metrics from any thread;
 * new/set_clock/start/stop/free from the controlling thread.
 */
#ifndef PYPROFD_EXPORTERS_DISPATCH_H
#define PYPROFD_EXPORTERS_DISPATCH_H

#include "base/compat.h"

#include "aggregate/window.h"
#include "base/clock.h"
#include "exporters/exporter.h"

/** How long a replaced exporter set may still deliver what it holds (5 s). */
#define DISPATCH_RETIRE_NS 5000000000ull
/** How long a scrape waits for a window being handed out (1 s, real time). */
#define DISPATCH_SCRAPE_WAIT_NS 1000000000ull

struct dispatch;

/** Creates the dispatcher for @a q (borrowed). Returns 0 or -ENOMEM. */
PYPROFD_WARN_UNUSED int dispatch_new(struct window_queue *q, uint64_t max_profile_bytes,
                                     struct dispatch **out);
/**
 * Sets the clock (borrowed; it must outlive @a d) the dispatcher reads and
 * gives deadlines on. Call before dispatch_start().
 */
void dispatch_set_clock(struct dispatch *d, const struct clock *clock);
/**
 * Replaces the exporters with the @a n of @a ex (taken over: the dispatcher
 * frees them), carrying the counters of the exporters they replace
 * (exporter_ops.carry). Before dispatch_start() the old set is shut down and
 * freed here, with a deadline of now. Returns 0, -E2BIG (more than 64) or
 * -ENOMEM (then the caller still owns them).
 */
PYPROFD_WARN_UNUSED int dispatch_set_exporters(struct dispatch *d, const struct exporter *ex,
                                               size_t n, uint64_t max_profile_bytes);
PYPROFD_WARN_UNUSED int dispatch_start(struct dispatch *d);
/**
 * Closes the queue, exports what is in it until @a deadline_ns
 * (the dispatcher's clock; what is left then is dropped and counted), shuts the
 * exporters down with the same deadline and joins the thread. Idempotent.
 */
void dispatch_stop(struct dispatch *d, uint64_t deadline_ns);
void dispatch_free(struct dispatch *d);
/**
 * Writes pyprofd_profile_* families and every exporter's own, as one snapshot:
 * a window is counted in encoded and in every exporter, or in none (it waits
 * up to DISPATCH_SCRAPE_WAIT_NS for a hand-out in progress).
 */
PYPROFD_WARN_UNUSED int dispatch_metrics(struct dispatch *d, struct promtext *w);

#endif /* PYPROFD_EXPORTERS_DISPATCH_H */
