/* SPDX-License-Identifier: MIT */
/*
 * target_internal.h: the fields of struct target (daemon/target.h). For
 * target.c and its unit test only: everyone else goes through target.h.
 */
#ifndef PYPROFD_DAEMON_TARGET_INTERNAL_H
#define PYPROFD_DAEMON_TARGET_INTERNAL_H

#include "base/compat.h"

#include "daemon/target.h"
#include "unwind/otel_sdk.h"
#include "unwind/otel_thread.h"

struct target {
    struct target_info info;
    struct target_stats stats; /* counts as of the last housekeeping */
    char version[32];
    struct memread *mr;
    struct pyruntime *rt;
    struct unwinder *u;
    struct asyncio *aio;  /* async_aware jobs on CPython 3.14+ */
    char async_note[300]; /* async_aware but unavailable: why (/targets) */
    bool async_all;       /* async_mode all was asked for */
    /* the asyncio table search (target_async_search): files looked at, next time due */
    struct pyruntime_asyncio_memo aio_memo;
    uint64_t aio_search_at;
    /* the OpenTelemetry contexts (docs/tracing.md): the process context's
     * header (0: none found yet) and timestamp, when it is looked at next,
     * and whether it changed since the labels were made; the thread
     * context's reader once found, and its search */
    bool trace_on; /* the job's trace_context */
    uint64_t otel_header, otel_published, otel_at, otel_backoff;
    bool otel_thread;  /* the process context announces a thread context */
    bool otel_changed; /* the labels are to be made again (target_context_meta()) */
    struct otel_thread *tctx;
    struct otel_thread_memo tctx_memo;
    uint64_t tctx_at, tctx_backoff;
    /* the OpenTelemetry Python SDK's own context, read where no thread
     * context is published (NULL: off, or a build without a layout: sdk_note) */
    struct otel_sdk *sdk;
    char sdk_note[160];
    struct sampler *s;
    struct fleet_slot slot;
    struct agg *win;
    uint64_t win_start;     /* monotonic */
    int64_t win_start_real; /* wall clock of the same instant */
    bool gone;              /* the sampler saw the process exit */
    /* is it still the program it was? */
    struct exec_id exec;
    uint64_t exec_checked;
    unsigned exec_retries;
    /* every attempt failing since (0: the last one taken), the counts then */
    uint64_t failing_since, failing_attempts, seen_taken;
    uint64_t stuck_ns;
};

#endif /* PYPROFD_DAEMON_TARGET_INTERNAL_H */
