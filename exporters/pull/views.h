/* SPDX-License-Identifier: MIT */
/*
 * views.h: what the HTTP server shows of the sampling loop, rendered from a
 * snapshot (daemon/loop.h's struct loop_view, copied under the loop's lock,
 * so rendering never holds the sampling thread up):
 *
 *   views_targets_json()   the /targets document (base/jsonw.h);
 *   views_agent_metrics()  the loop's families of /metrics (base/promtext.h):
 *                          discovered processes by state, targets, samples,
 *                          failures by reason, reattaches, profiles, budget.
 *
 * docs/http.md and docs/agent.md describe both. Thread safety: reentrant.
 */
#ifndef PYPROFD_EXPORTERS_PULL_VIEWS_H
#define PYPROFD_EXPORTERS_PULL_VIEWS_H

#include "base/compat.h"

#include "base/promtext.h"
#include "daemon/loop.h"

/**
 * The /targets document of @a v (caller owns *@a out, NUL-terminated;
 * alloc_free). Returns 0 or -ENOMEM.
 */
PYPROFD_WARN_UNUSED int views_targets_json(const struct loop_view *v, char **out, size_t *out_len);

/**
 * The /debug/pprof/profile document of a finished request @a c: one gzipped
 * pprof with the samples of every part sampled in @a mode (an enum
 * profile_mode; -1: every part), each labelled with its target's labels
 * (caller owns *@a out; alloc_free). The sample type is the parts' mode, or
 * "time" when they differ. Returns 0, -E2BIG (larger than c->max_bytes) or
 * -ENOMEM, with @a err saying so.
 */
PYPROFD_WARN_UNUSED int views_profile_pprof(const struct loop_capture *c, int mode, uint8_t **out,
                                            size_t *out_len, char *err, size_t errlen);

/**
 * The /flamegraph document of @a c: the call tree of the parts sampled in
 * @a mode (-1: every part) as pprof/flamegraph.h's JSON, each part under a
 * node "SERVICE (pid N)" (its service_name label, else its job), or right
 * under the root when the request was for one pid. Same ownership and
 * errors as views_profile_pprof().
 */
PYPROFD_WARN_UNUSED int views_profile_flame(const struct loop_capture *c, int mode, bool one_pid,
                                            uint8_t **out, size_t *out_len, char *err,
                                            size_t errlen);

/** Writes the loop's metric families of @a v into @a w. Returns 0 or promtext's error. */
PYPROFD_WARN_UNUSED int views_agent_metrics(const struct loop_view *v, struct promtext *w);

#endif /* PYPROFD_EXPORTERS_PULL_VIEWS_H */
