/* SPDX-License-Identifier: MIT */
/*
 * flamegraph.h: a window as the call tree a flame graph draws, in JSON: the
 * input of d3-flame-graph in `pyprofd record --format html` and on the
 * agent's page (web/). Stacks are merged from the root down by function,
 * as a flame graph is read (the folded output keeps lines apart); every
 * node holds its inclusive sample count, and "ln" is the line where the
 * function starts (else the first line sampled in it).
 *
 *   {"n": name, "f": file, "ln": line, "v": samples, "c": [children]}
 *
 * (d3-flame-graph reads "n", "v" and "c" itself; it takes "l" for a library
 * type and "d" for a delta, so neither is used.)
 *
 * "f" and "ln" are left out for markers (<native>, <GC>, <op ...>) and for
 * the nodes that name a part. It is written by base/jsonw.h, so it can sit
 * inside an HTML <script> element ('<' as \u003c) and is valid UTF-8: text
 * is made valid where it enters pyprofd (base/utf8.h), and a string that is
 * not anyway has each invalid sequence written as U+FFFD, counted.
 *
 * Thread safety: reads the windows; one thread at a time per window.
 */
#ifndef PYPROFD_PPROF_FLAMEGRAPH_H
#define PYPROFD_PPROF_FLAMEGRAPH_H

#include "base/compat.h"

#include "aggregate/agg.h"

/** One window of the tree, under a node of its own when @a name is set. */
struct flame_part {
    const struct agg *agg;
    const char *name; /* NULL: its stacks go right under the root (only with one part) */
};

/**
 * Writes the tree of @a parts (@a n of them) under a root named @a root to
 * @a out. Returns 0, -EINVAL (several parts and one without a name), -EIO
 * or -ENOMEM (it allocates the tree: output time, not per sample).
 */
PYPROFD_WARN_UNUSED int flame_json_write(const struct flame_part *parts, size_t n, const char *root,
                                         FILE *out);

#endif /* PYPROFD_PPROF_FLAMEGRAPH_H */
