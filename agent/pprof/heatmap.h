/* SPDX-License-Identifier: MIT */
/*
 * heatmap.h: a window as the per-line data of the heatmap
 * (`pyprofd record --format heatmap`, web/heatmap.html): for each source
 * file the samples were in, its text and, per line,
 *
 *   own    samples whose innermost Python frame was at that line (time in C
 *          code the line called, and <GC> while it ran, included);
 *   total  samples with a frame at that line anywhere in the stack, each
 *          sample once however deep a recursion;
 *   ops    with --opcodes, the instructions the frames at that line were
 *          executing, by samples.
 *
 * A file is a Python frame's co_filename: markers ("~") and C frames have
 * none. Its text comes from a callback (`record` reads it through the
 * target's root, cli/sources.c); a file it cannot give is listed with the
 * reason and its counts. Files are ordered by the samples that had a frame
 * in them, most first; at most HEATMAP_MAX_FILES files ("left_off": how many
 * more there were).
 *
 * The JSON (strings escaped as flamegraph.h's, '<' included, so that it can
 * sit in an HTML <script> element; text made valid UTF-8):
 *
 *   {"samples": N, "files": [{"path", "samples", "own", "error"?,
 *     "text": [line, ...]?, "lines": [[line, own, total, {"OP": n}?], ...]}],
 *    "left_off"?: N}
 *
 * Thread safety: reads the window; one thread at a time.
 */
#ifndef PYPROFD_PPROF_HEATMAP_H
#define PYPROFD_PPROF_HEATMAP_H

#include "base/compat.h"

#include "aggregate/agg.h"
#include "base/buf.h"

#define HEATMAP_MAX_FILES 500u
#define HEATMAP_MAX_TEXT  (4u << 20) /* bytes of one file's text a source callback may give */

/**
 * Gives the text of source file @a path (as the target named it) in @a text
 * (a buffer of at most HEATMAP_MAX_TEXT bytes), or fails with a negative errno and a reason in @a
 * why.
 */
typedef int (*heatmap_source_fn)(void *arg, const char *path, struct buf *text, char *why,
                                 size_t why_size);

/**
 * Writes the heatmap data of @a a to @a out, reading each file through
 * @a source (may be NULL: no text). Returns 0, -EIO or -ENOMEM (it allocates
 * tables the size of the window: output time, not per sample).
 */
PYPROFD_WARN_UNUSED int heatmap_json_write(const struct agg *a, heatmap_source_fn source, void *arg,
                                           FILE *out);

#endif /* PYPROFD_PPROF_HEATMAP_H */
