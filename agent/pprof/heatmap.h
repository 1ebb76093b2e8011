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
 * none. Its text comes from a callback (`record` reads it as the target
 * could, through its root: cli/sources.c); a file it cannot give is listed
 * with the reason and its counts. Files are ordered by the samples that had
 * a frame in them, most first; at most HEATMAP_MAX_FILES files ("left_off":
 * how many more there were).
 *
 * What the page holds of the files' text is bounded, whatever the target
 * names:
 *   - one copy per file: a file the callback identifies (device and inode)
 *     as one already in the page, under another name (a link, a hard link),
 *     gets "same_as", the index in "files" of that earlier one, in place of
 *     its own "text";
 *   - the text of all files together takes at most HEATMAP_MAX_PAGE_TEXT
 *     bytes of the JSON, escapes included; a file whose text does not fit
 *     in what is left is listed with the reason "left out: ..." (a smaller
 *     one after it may still fit), and "text_left_off" counts them;
 *   - a file holding a NUL byte is not text (no Python source holds one: a
 *     compiled or binary file): refused with a reason. Lines end at a
 *     newline (a carriage return before it dropped); any other control
 *     byte but tab is shown as its Unicode control picture (U+2401-U+241F,
 *     U+2421 for DEL), one character of 3 bytes, and an invalid UTF-8
 *     sequence as U+FFFD (base/jsonw.h's JSONW_STRING_PICTURES); so a byte
 *     of source costs at most 6 bytes of page ('<' as \u003c). The budget
 *     is counted by the code that writes the text (a counting writer).
 *
 * The JSON (written by base/jsonw.h, '<' escaped, so that it can sit in an
 * HTML <script> element; text made valid UTF-8):
 *
 *   {"samples": N, "files": [{"path", "samples", "own", "error"?,
 *     "text": [line, ...]?, "same_as": K?,
 *     "lines": [[line, own, total, {"OP": n}?], ...]}],
 *    "left_off"?: N, "text_left_off"?: N}
 *
 * Thread safety: reads the window; one thread at a time.
 */
#ifndef PYPROFD_PPROF_HEATMAP_H
#define PYPROFD_PPROF_HEATMAP_H

#include "base/compat.h"

#include "aggregate/agg.h"
#include "base/buf.h"

#define HEATMAP_MAX_FILES     500u
#define HEATMAP_MAX_TEXT      (4u << 20)  /* bytes of one file's text a source callback may give */
#define HEATMAP_MAX_PAGE_TEXT (64u << 20) /* bytes of JSON the files' text may take in all */

/** Which file a source is: two names of one file give the same. */
struct heatmap_source_id {
    uint64_t dev, ino; /* both 0: not known (then taken for no other file) */
};

/**
 * Gives the text of source file @a path (as the target named it) in @a text
 * (a buffer of at most HEATMAP_MAX_TEXT bytes) and which file it is in
 * @a id (left zero when unknown), or fails with a negative errno and a
 * reason in @a why.
 */
typedef int (*heatmap_source_fn)(void *arg, const char *path, struct buf *text,
                                 struct heatmap_source_id *id, char *why, size_t why_size);

/**
 * Writes the heatmap data of @a a to @a out, reading each file through
 * @a source (may be NULL: no text). Returns 0, -EIO or -ENOMEM (it allocates
 * tables the size of the window: output time, not per sample).
 */
PYPROFD_WARN_UNUSED int heatmap_json_write(const struct agg *a, heatmap_source_fn source, void *arg,
                                           FILE *out);

#ifdef PYPROFD_UNITTEST
/** Tests only: heatmap_json_write() with @a budget in place of HEATMAP_MAX_PAGE_TEXT. */
PYPROFD_WARN_UNUSED int heatmap_json_write_budget(const struct agg *a, heatmap_source_fn source,
                                                  void *arg, size_t budget, FILE *out);
#endif

#endif /* PYPROFD_PPROF_HEATMAP_H */
