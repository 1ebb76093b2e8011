/* SPDX-License-Identifier: MIT */
/*
 * backoff.h: how long to wait before retrying a failed request, written once
 * for every client that retries (the push engine, exporters/push/push.c; the
 * Kubernetes client, discovery/kube_client.c): exponential in the number of
 * failures so far, capped, with "equal jitter" (half of the delay fixed, half
 * random) so that clients that failed together do not come back together.
 *
 * The random number is an argument (base/rand.h, or a test's fixed value)
 * and so is everything else: pure arithmetic, no clock.
 *
 * Thread safety: pure functions.
 */
#ifndef PYPROFD_BASE_BACKOFF_H
#define PYPROFD_BASE_BACKOFF_H

#include "base/compat.h"

/** Flags of backoff_delay_ns(). */
enum backoff_delay_flags {
    /* never less than @a min_ns: the first retry waits exactly min_ns (the
     * push engine's min_backoff: "attempts are never closer together") */
    BACKOFF_DELAY_AT_LEAST_MIN = 1 << 0,
};

/**
 * The wait before retry @a attempt (1 = the first retry; 0 counts as 1):
 * d = @a min_ns * 2^(attempt-1), capped at @a max_ns (which is raised to
 * @a min_ns when below it, and no doubling overflows), then a point in
 * [d/2, d] picked by @a rnd (d/2 + rnd % (d - d/2 + 1)). With
 * BACKOFF_DELAY_AT_LEAST_MIN in @a flags, a result under @a min_ns is
 * raised to it.
 */
uint64_t backoff_delay_ns(unsigned attempt, uint64_t min_ns, uint64_t max_ns, uint64_t rnd,
                          unsigned flags);

#endif /* PYPROFD_BASE_BACKOFF_H */
