/* SPDX-License-Identifier: MIT */
/*
 * pprof_build.h: stage 6, the pprof encoder. Turns one aggregated window
 * (aggregate/agg.h) into a gzipped perftools.profiles.Profile
 * (proto/profile.proto), the format `go tool pprof`, Grafana Pyroscope and
 * Parca all read.
 *
 * The profile it writes obeys the strictest of those consumers:
 *  - string_table is agg's string table in id order (entry 0 is ""), followed
 *    by the few strings the encoder adds (sample and label names), each once;
 *    every entry is valid UTF-8, as proto3 requires of a string (Python's
 *    protobuf and Go's refuse the whole profile otherwise): text is made
 *    valid where it enters pyprofd (base/utf8.h), and a string that is not
 *    anyway (a window or label set filled another way) is written with
 *    U+FFFD for each invalid sequence, counted; two strings that become
 *    equal are one entry;
 *  - Function and Location ids are dense, 1..N in array order (Parca looks
 *    them up by id - 1); Function i and Location i are agg's entry i;
 *  - each Location has exactly one Line, address 0 (Python frames have no
 *    native address) and mapping 1, the only Mapping: no addresses, no file,
 *    has_functions/has_filenames/has_line_numbers set, which tells go tool
 *    pprof there is nothing to symbolize (without any Mapping it invents one
 *    and tries);
 *  - Function.system_name is written only when it differs from the name
 *    (go tool pprof treats a name equal to its system name as C++ to
 *    demangle and strips "<...>" from it, emptying "<module>");
 *  - sample_type is [samples/count, <value_type>/<value_unit>], so value[0] is
 *    the number of samples and value[1] the time they stand for; period_type
 *    is <value_type>/<value_unit>; no default_sample_type, so consumers show
 *    the last (time) column by default;
 *  - location_id is leaf first; labels are "thread_id" (numeric, num),
 *    "thread_name" and, for asyncio tasks, "task_name" (strings); a label with
 *    an empty string value is never written, nor is a key twice on a sample.
 *
 * Empty parts (pprof_build_multi()): a window with no samples is normal (an
 * idle target in cpu mode, a target found late in a request, one whose every
 * sample failed or was dropped at a cap). Such a part adds no sample, so its
 * labels are written nowhere and their names and values are not added to
 * string_table either; its window's own tables (strings, functions,
 * locations, possibly left by dropped samples) are concatenated like any
 * other part's, so the ids of later parts do not depend on which parts were
 * empty. A profile of empty parts only is a valid profile with no samples.
 *
 * Memory: all intermediate structures live in one block allocated per call
 * (alloc_*); everything but the result is freed before returning, on every
 * path. Sizes are bounded by the window's own caps (struct agg_limits) and by
 * the output cap in struct pprof_meta.
 *
 * Thread safety: reads the window only; the caller must make sure no one
 * adds to it meanwhile (agg.h). No shared state otherwise.
 */
#ifndef PYPROFD_PPROF_PPROF_BUILD_H
#define PYPROFD_PPROF_PPROF_BUILD_H

#include "base/compat.h"

#include "aggregate/agg.h"
#include "base/labels.h"

/** Default cap on both the serialized and the gzipped profile. */
#define PPROF_DEFAULT_MAX_BYTES (16u << 20)

/** What the window does not know about itself. */
struct pprof_meta {
    /* Type of the time column and of period_type: "cpu", "wall", ...; use only
     * [A-Za-z0-9_] (Pyroscope rejects '-', Parca parses it as PromQL). */
    const char *value_type;
    const char *value_unit; /* "nanoseconds" */
    int64_t period_ns;      /* Profile.period: nanoseconds between samples, >= 0 */
    int64_t time_nanos;     /* window start, ns since the Unix epoch */
    int64_t duration_nanos; /* window length, ns */
    const char *comment;    /* free text for people; NULL or "": none */
    size_t max_bytes;       /* cap on the serialized and on the gzipped size;
                               0: PPROF_DEFAULT_MAX_BYTES */
};

/**
 * Encodes window @a a (borrowed, read only) described by @a m (borrowed) as a
 * gzipped pprof Profile. Returns 0 with the bytes in *@a out (caller owns;
 * alloc_free()) and their number in *@a out_len; -EINVAL when @a m is
 * incomplete (value_type/value_unit NULL or empty, negative period) or the
 * window refers to an id it does not have (a bug in the aggregator); -E2BIG
 * when the profile is larger than the cap; -ENOMEM. On failure *@a out is
 * left untouched and nothing stays allocated.
 */
PYPROFD_WARN_UNUSED int pprof_build(const struct agg *a, const struct pprof_meta *m, uint8_t **out,
                                    size_t *out_len);

/** One window of a merged profile and the labels every one of its samples gets. */
struct pprof_part {
    const struct agg *agg;       /* borrowed, read only */
    const struct labels *labels; /* borrowed; NULL: none. Labels with an empty name or value
                                    or named thread_id/thread_name/task_name are skipped, as
                                    is any but the first written label of a name (a set
                                    built by hand may repeat one; labels.h's do not) */
};

/**
 * Encodes @a nparts windows as one profile, as pprof_build() does for one:
 * the windows' tables are concatenated (ids stay dense, 1..N in array order)
 * and each sample of part k also carries part k's labels as string labels
 * (how the HTTP server tells targets apart in one profile); a part without
 * samples adds its tables but no label and no label string (see "Empty
 * parts" above). All parts share @a m: one sample type, one period. The same
 * window may be given in several parts. Same returns as pprof_build(); also
 * -EINVAL for a NULL window. nparts == 0 gives an empty profile.
 */
PYPROFD_WARN_UNUSED int pprof_build_multi(const struct pprof_part *parts, size_t nparts,
                                          const struct pprof_meta *m, uint8_t **out,
                                          size_t *out_len);

#endif /* PYPROFD_PPROF_PPROF_BUILD_H */
