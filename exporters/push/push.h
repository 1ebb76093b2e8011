/* SPDX-License-Identifier: MIT */
/*
 * push.h: the delivery engine every push exporter (Pyroscope, Parca) shares.
 * A backend supplies only a transport (struct push_transport_ops: turn one
 * profile into one request and say what happened); the engine does the rest,
 * the same way for every backend:
 *
 *  - push() (export thread) copies the profile and its series labels into a
 *    bounded queue per endpoint (queue_max_profiles, queue_max_bytes); when
 *    full, the OLDEST queued profile is dropped and counted. It never blocks.
 *  - one sender thread per endpoint takes profiles in order and calls the
 *    transport's send() with remote_timeout. Outcomes:
 *      PUSH_OK      delivered: counted, latency observed;
 *      PUSH_RETRY   connection error, timeout, 408/429/5xx, gRPC
 *                   UNAVAILABLE/RESOURCE_EXHAUSTED/DEADLINE_EXCEEDED/ABORTED:
 *                   the profile stays at the head of the queue and is tried
 *                   again after an exponential backoff with jitter between
 *                   min_backoff and max_backoff (backoff_delay_ns(),
 *                   base/backoff.h; Retry-After, when the server
 *                   sends one, is honoured up to max_backoff), at most
 *                   max_retries times (0: no limit but age). Neither the
 *                   backoff nor Retry-After may outlast the room left in the
 *                   queue: the next attempt is made at the latest just
 *                   before the arrival that would drop the oldest profile
 *                   (push_fill_deadline_ns(), at the observed rate of
 *                   arrivals), so a full queue is probed once per arrival
 *                   and an outage costs only the profiles the queue cannot
 *                   hold;
 *      PUSH_DROP    4xx and other permanent errors (INVALID_ARGUMENT, ...):
 *                   dropped and counted, the server's message logged once per
 *                   distinct code.
 *    A profile older than the backend accepts (max_age, e.g. Pyroscope's one
 *    hour) is dropped and counted instead of being sent.
 *  - series labels: the target's labels (relabelled, external labels added)
 *    plus __name__ from the mode (push_metric_name()), then the endpoint's
 *    write_relabel_configs; a profile they drop is counted, not sent.
 *  - stop(deadline) (exporter.h), non-blocking: no more pushes are taken,
 *    the sender keeps delivering until the deadline, then stops; a send still
 *    in flight at the deadline is aborted (the transport is told through
 *    push_request.abort), and what is left, the aborted send included, is
 *    counted as dropped with reason "shutdown". shutdown(deadline) is
 *    stop() if not called yet (the earlier deadline wins), then waits for the
 *    sender, so it returns shortly after the deadline whatever the network
 *    does.
 *  - metrics (per endpoint, label endpoint="<name>"): pushed, failed by code,
 *    retried, dropped by reason (count and bytes), queue length and bytes,
 *    push latency histogram.
 *
 * Time is injected (a struct clock, base/clock.h) so backoff and age are
 * testable; the jitter source too, in unit tests (push_set_random()).
 *
 * Queue accounting: queue_max_profiles and queue_max_bytes (the gzipped pprof
 * bytes) bound the profiles WAITING; the one being sent is out of the queue
 * (so at most max_profiles + 1 are held). A profile that comes back for a
 * retry goes to the head again; when the queue is full meanwhile it is the
 * oldest, so it is the one dropped. Every profile push() took (returned 0
 * for) is at any moment counted in exactly one of pushed, dropped (by
 * reason) and the queue length (waiting or being sent).
 *
 * Metrics: ops->metrics writes the pyprofd_push_* families with this
 * endpoint's samples, labelled endpoint="<name>"; the families the endpoints
 * share are grouped by the writer (base/promtext.h). Across a reload the
 * dispatcher keeps them monotonic (exporter.h, carry): ops->carry adds what
 * this exporter counted since the last carry to its replacement with the same
 * name (exporter.name is the endpoint name); the latency histogram is not
 * carried (it restarts).
 *
 * Thread safety: as exporter.h. The transport's send() runs on the sender
 * thread only; its context is the transport's.
 */
#ifndef PYPROFD_EXPORTERS_PUSH_PUSH_H
#define PYPROFD_EXPORTERS_PUSH_PUSH_H

#include "base/compat.h"

#include "base/clock.h"
#include "base/labels.h"
#include "config/config.h"
#include "exporters/exporter.h"

enum push_outcome { PUSH_OK, PUSH_RETRY, PUSH_DROP };

/** What one send attempt came to; filled by the transport. */
struct push_result {
    enum push_outcome outcome;
    char code[32];           /* for metrics: "200", "503", "grpc_14", "timeout", "connect", ... */
    uint64_t retry_after_ns; /* from Retry-After; 0: none */
    char message[256];       /* the server's error message, or the local error; "" on success */
};

/** One profile as the transport sees it. All borrowed for the call. */
struct push_request {
    const struct labels *labels; /* final series labels, __name__ and service_name included */
    const uint8_t *pprof;        /* gzipped pprof */
    size_t len;
    enum profile_mode mode;
    int64_t period_ns;
    int64_t time_nanos; /* window start, epoch ns */
    int64_t duration_nanos;
    /*
     * Asks whether the send must end now (the exporter was stopped and its
     * deadline has passed): a transport that blocks calls abort(abort_arg)
     * at least every PUSH_ABORT_POLL_MS while it waits and gives up when it
     * returns true (the outcome then does not matter: the engine counts the
     * profile as dropped at shutdown). Cheap and thread-safe (it takes the
     * exporter's lock briefly); never NULL when the engine calls send().
     */
    bool (*abort)(void *abort_arg);
    void *abort_arg;
};

/** How often a blocked transport must ask push_request.abort, at most (ms). */
#define PUSH_ABORT_POLL_MS 100

struct push_transport_ops {
    const char *kind; /* "pyroscope", "parca" */
    /**
     * Sends @a r once, giving up after @a timeout_ns or as soon as
     * r->abort() says so. Must classify the outcome in @a res (never leave it
     * PUSH_OK on failure). Blocking is fine: this runs on the endpoint's
     * sender thread.
     */
    void (*send)(void *tctx, const struct push_request *r, uint64_t timeout_ns,
                 struct push_result *res);
    /** Frees the transport context; NULL allowed. */
    void (*free)(void *tctx);
};

/** The series name (__name__) for a mode: cpu -> process_cpu, wall -> wall, gil -> gil,
 *  exception -> exception (documented in docs/exporters.md). */
const char *push_metric_name(enum profile_mode mode);

/** What push_fill_deadline_ns() needs to know about a queue; all times mono ns. */
struct push_fill {
    uint64_t failed_ns;        /* when the failed attempt ended */
    uint64_t min_ns;           /* min_backoff: attempts are never closer together */
    uint64_t n, max_n;         /* profiles waiting (the failed one included), queue_max_profiles */
    uint64_t bytes, max_bytes; /* their bytes, queue_max_bytes */
    uint64_t last_arrival_ns;  /* when the newest profile was queued */
    uint64_t gap_ns;           /* mean time between arrivals; 0: not known */
};

/** The most push_fill_deadline_ns() keeps before an arrival (at most a quarter of the gap). */
#define PUSH_FILL_MARGIN_NS 1000000000ull

/**
 * The latest time the next attempt of a failing endpoint may start so that
 * its queue does not overflow first: backoff and Retry-After are capped by
 * it. With f the profiles that still fit (by count, and by bytes at the
 * queue's mean profile size), the (f+1)-th arrival after the newest one
 * would drop the oldest, so the deadline is just before it:
 * last_arrival + (f+1) * gap - min(gap / 4, PUSH_FILL_MARGIN_NS). It is
 * never before failed + min: a deadline earlier than that is moved on by
 * whole gaps, so a full queue is probed once per arrival, just before it
 * (no more often than a healthy endpoint sends, nor than min_backoff).
 * gap_ns 0 (unknown: fewer than two arrivals, or all at one instant):
 * UINT64_MAX (no cap) while something still fits, failed + min when nothing
 * does. Saturates instead of overflowing. Pure; tested.
 */
uint64_t push_fill_deadline_ns(const struct push_fill *f);

/**
 * Creates a push exporter for endpoint @a rw, sending with @a ops / @a tctx.
 * @a rw's values are used as they are, defaults and bounds being the
 * loader's (config.def); remote_timeout, min_backoff, queue.max_profiles or
 * queue.max_bytes 0 is refused (-EINVAL). What is needed of @a rw is copied, its compiled
 * write_relabel rules too (compiled again), so the exporter does not depend on the config's
 * lifetime. The exporter takes ownership of @a tctx, on failure too.
 * @a max_age_ns: profiles older than this are dropped, not sent (0: no
 * limit). @a clock (borrowed: it must outlive the exporter; NULL:
 * clock_system) gives "now" for backoff, age and the deadlines of stop() and
 * shutdown(); with any other clock than clock_system the sender re-reads it
 * at least every millisecond while it waits, so a test that moves its clock
 * forward is noticed promptly. Starts the sender thread. Returns 0 with
 * @a out filled (out->name is the endpoint name), or -EINVAL, -ENOMEM or -errno.
 */
PYPROFD_WARN_UNUSED int push_exporter_new(const struct config_remote_write *rw,
                                          const struct push_transport_ops *ops, void *tctx,
                                          uint64_t max_age_ns, const struct clock *clock,
                                          struct exporter *out);

#ifdef PYPROFD_UNITTEST
/**
 * For tests/unit/exporters/push/test_push.c: the jitter of push exporter
 * @a ctx's backoff comes from @a random(@a arg) instead of its own
 * xorshift (base/rand.h, seeded with rand_seed()). Call
 * it before the first push().
 */
void push_set_random(void *ctx, uint64_t (*random)(void *arg), void *arg);

/**
 * For tests/unit/exporters/push/test_push.c, with an injected clock: waits
 * (real time, up to 5 s) until the sender of push exporter @a ctx is parked,
 * that is waiting on its condition variable, having acted on every push()
 * and stop() made so far, until a time the injected clock has not reached:
 * nothing happens before the clock is moved to *@a until (UINT64_MAX: idle,
 * nothing queued), or something is pushed or stopped. A deterministic "nothing
 * happened yet", unlike a real-time sleep. Returns 0 with *@a until set, or
 * -ETIMEDOUT (the sender is busy in a send, or has ended).
 */
int push_wait_parked(void *ctx, uint64_t *until);
#endif

#endif /* PYPROFD_EXPORTERS_PUSH_PUSH_H */
