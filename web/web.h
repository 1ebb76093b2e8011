/* SPDX-License-Identifier: MIT */
/*
 * web.h: the browser side of pyprofd, built into the binary. The flame
 * graph library (d3 and d3-flame-graph, fetched from the npm registry at
 * build time by scripts/fetch-web-assets.sh, pinned by version and hash) and
 * pyprofd's own pages, scripts and style (web/) are embedded as
 * byte arrays (cmake/PyprofdEmbed.cmake), so neither the HTML report nor the
 * agent's page needs the network or files on disk.
 *
 *   web_asset()         one embedded file by name: what the agent serves at
 *                       /ui/NAME and its page at /;
 *   web_report_write()  the self-contained HTML flame graph of
 *                       `pyprofd record --format html`;
 *   web_heatmap_write() the self-contained source heatmap of
 *                       `pyprofd record --format heatmap`.
 *
 * docs/usage.md describes the report and the page. Thread safety: the
 * assets are constant; web_report_write() touches only its arguments.
 */
#ifndef PYPROFD_WEB_WEB_H
#define PYPROFD_WEB_WEB_H

#include "base/compat.h"

struct web_asset {
    const char *name; /* "d3.min.js", "agent.html", ... */
    const char *type; /* its Content-Type */
    const unsigned char *data;
    size_t len; /* data[len] is a NUL, not counted */
};

/** Every embedded file; the table ends with an entry whose name is NULL. */
extern const struct web_asset web_assets[];

/** The embedded file @a name, or NULL when there is none. */
const struct web_asset *web_asset(const char *name);

/**
 * Writes the HTML report to @a out: the page (report.html) with the styles
 * and scripts inlined, and the data that two callbacks write, given @a arg:
 * @a write_meta a JSON object (what the sidebar shows; docs/usage.md lists
 * its keys) and @a write_tree the call tree (pprof/flamegraph.h's JSON).
 * Both must escape '<' in strings. Returns 0, what a callback returned
 * (negative errno), -ENOENT (no page: a broken build) or -EIO.
 */
PYPROFD_WARN_UNUSED int web_report_write(FILE *out, int (*write_meta)(void *arg, FILE *out),
                                         int (*write_tree)(void *arg, FILE *out), void *arg);

/**
 * Writes the heatmap page of `pyprofd record --format heatmap` (heatmap.html)
 * the same way: @a write_meta the summary, @a write_lines the per-line data
 * (pprof/heatmap.h's JSON). Returns as web_report_write().
 */
PYPROFD_WARN_UNUSED int web_heatmap_write(FILE *out, int (*write_meta)(void *arg, FILE *out),
                                          int (*write_lines)(void *arg, FILE *out), void *arg);

#endif /* PYPROFD_WEB_WEB_H */
