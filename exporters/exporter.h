/* SPDX-License-Identifier: MIT */
/*
 * exporter.h: stage 7, the sinks a finished profile goes to. The export
 * thread (exporters/dispatch.h) encodes each window once and offers the
 * bytes to every configured exporter through struct exporter_ops: the local
 * directory (exporters/file/), and the push backends.
 *
 * Contract for an exporter:
 *  - push() is called on the export thread only, one profile at a time. It
 *    must not block for long: a backend that talks to the network keeps its
 *    own bounded queue and thread. It copies what it keeps (the bytes and
 *    labels are the caller's and go away when push returns). It returns 0,
 *    or a negative errno that the dispatcher counts (the exporter itself
 *    counts its own reasons, in metrics()).
 *  - metrics() may be called from any thread at any time (an HTTP scrape).
 *    It writes the exporter's own samples; families several exporters share
 *    (one per endpoint, say) are told apart by a label, and promtext groups
 *    them (base/promtext.h). The dispatcher asks only the current set: an
 *    exporter a reload replaced is gone from /metrics from that moment.
 *  - carry() (optional) keeps counters monotonic across a reload: it adds
 *    what the exporter counted since its last carry() to @a to, the
 *    exporter of the new set with the same name (struct exporter.name) and
 *    the same carry function. The dispatcher calls it when the new set
 *    becomes current and again after the old exporter's shutdown(), for
 *    what it counted until its deadline. Thread-safe against both
 *    exporters' own work.
 *  - stop() (optional) starts shutting down without blocking: no more
 *    pushes come, what is queued is delivered until @a deadline_ns (on the
 *    dispatcher's monotonic clock, the exporter's too), and work still in
 *    flight then (a network send) is aborted. The dispatcher calls stop()
 *    on every exporter of a set first, then shutdown() on each, so N
 *    exporters take one deadline, not N.
 *  - shutdown() does what stop() does if it was not called, then waits until
 *    it is done, which must be shortly after @a deadline_ns whatever the
 *    network does; free() releases everything (NULL ctx allowed).
 */
#ifndef PYPROFD_EXPORTERS_EXPORTER_H
#define PYPROFD_EXPORTERS_EXPORTER_H

#include "base/compat.h"

#include "base/promtext.h"
#include "pipeline.h"

/** One encoded profile, as offered to every exporter. All borrowed. */
struct export_profile {
    const struct window_meta *meta; /* target labels, job, pid, mode, times */
    const uint8_t *pprof;           /* gzipped pprof; every sample carries the target labels */
    size_t len;
    /* The same window without the target labels on its samples (push backends
     * send those as series labels instead; Pyroscope would turn sample labels
     * into more series). NULL unless an exporter's ops set wants_plain. */
    const uint8_t *pprof_plain;
    size_t len_plain;
};

struct exporter_ops {
    const char *kind; /* "file", "pyroscope", "parca" */
    bool wants_plain; /* needs export_profile.pprof_plain */
    int (*push)(void *ctx, const struct export_profile *p);
    int (*metrics)(void *ctx, struct promtext *w);
    void (*carry)(void *ctx, void *to);            /* may be NULL */
    void (*stop)(void *ctx, uint64_t deadline_ns); /* may be NULL */
    void (*shutdown)(void *ctx, uint64_t deadline_ns);
    void (*free)(void *ctx);
};

struct exporter {
    const struct exporter_ops *ops;
    void *ctx;
    /* who it is across a reload (a remote_write name), for carry(); borrowed
     * from ctx until ops->free; NULL: no continuity */
    const char *name;
};

#endif /* PYPROFD_EXPORTERS_EXPORTER_H */
