/* SPDX-License-Identifier: MIT */
/*
 * collapsed.h: Brendan Gregg's folded stack format, the other output of
 * `pyprofd record`: one line per distinct stack, frames root first separated
 * by ';', each frame as "qualname (file:line)" (markers as their bare name),
 * then a space and the sample count, lines sorted. flamegraph.pl, speedscope
 * and inferno read it.
 *
 * Thread safety: reads the window; one thread at a time.
 */
#ifndef PYPROFD_PPROF_COLLAPSED_H
#define PYPROFD_PPROF_COLLAPSED_H

#include "base/compat.h"

#include "aggregate/agg.h"

/** Writes @a a to @a out. Returns 0, -EIO or -ENOMEM (it allocates: output time, not per sample).
 */
PYPROFD_WARN_UNUSED int collapsed_write(const struct agg *a, FILE *out);

#endif /* PYPROFD_PPROF_COLLAPSED_H */
