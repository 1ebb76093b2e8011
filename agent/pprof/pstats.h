/* SPDX-License-Identifier: MIT */
/*
 * pstats.h: a window as the file Python's pstats module loads
 * (`pyprofd record --format pstats`): what cProfile's dump_stats() writes,
 * one marshalled dictionary
 *
 *   {(file, first line, function): (cc, nc, tt, ct, {caller: (nc, cc, tt, ct)})}
 *
 * read by `python3 -m pstats FILE`, pstats.Stats(FILE), snakeviz and the
 * IDEs, on every CPython pyprofd samples (marshal format 4: small tuples,
 * 'u' strings, 'i' and 'l' integers, 'g' binary floats; all read since 3.4).
 *
 * A sampler cannot count calls, so the counts are sample counts, in cProfile's
 * shape (docs/usage.md): nc, "ncalls", is how many frames of the function the
 * samples held (a recursive function's every frame), cc, the primitive calls
 * pstats shows after a '/', how many samples held it at all. tt ("tottime")
 * is the time of the samples it was the innermost function of, ct
 * ("cumtime") the time of the samples it was anywhere in, each sample once
 * however deep the recursion (as the flame graph's table counts). Times are
 * seconds of the mode's time, one interval per sample. A caller entry counts
 * the same for the samples in which that caller called the function
 * directly: nc every such pair of frames, cc and ct each sample once, tt
 * the samples where the function was innermost.
 *
 * The function is the qualified name; the file and line are co_filename and
 * co_firstlineno. Markers (<GC>, <native>, <task ...>) are functions of file
 * "~" and line 0, cProfile's place for built-ins; --opcodes' markers are left
 * out (they are a place in their frame's function, not a function). Text is
 * written as valid UTF-8 (an invalid sequence as U+FFFD, counted), which
 * marshal requires.
 *
 * Thread safety: reads the window; one thread at a time.
 */
#ifndef PYPROFD_PPROF_PSTATS_H
#define PYPROFD_PPROF_PSTATS_H

#include "base/compat.h"

#include "aggregate/agg.h"

/**
 * Writes @a a to @a out. Returns 0, -EIO or -ENOMEM (it allocates tables
 * the size of the window: output time, not per sample).
 */
PYPROFD_WARN_UNUSED int pstats_write(const struct agg *a, FILE *out);

#endif /* PYPROFD_PPROF_PSTATS_H */
