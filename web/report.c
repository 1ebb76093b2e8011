/* SPDX-License-Identifier: MIT */
/*
 * report.c: the self-contained HTML flame graph (see web.h). report.html is
 * the page; each of its marker comments below is replaced by what the page
 * would otherwise load: the styles, the libraries and the data.
 */
#include "base/compat.h"

#include "web/web.h"

const struct web_asset *web_asset(const char *name)
{
    for (const struct web_asset *a = web_assets; a->name; a++)
        if (strcmp(a->name, name) == 0)
            return a;
    return NULL;
}

/* An embedded asset into an inline element; '</' never occurs in them (checked at build). */
static void report_inline(FILE *out, const char *open, const char *name, const char *close)
{
    const struct web_asset *a = web_asset(name);
    fputs(open, out);
    if (a)
        fwrite(a->data, 1, a->len, out);
    fputs(close, out);
}

/* A page and what its markers stand for. */
struct web_page {
    const char *page;           /* "report.html" */
    const char *const *scripts; /* inlined in order at <!--pyprofd:scripts-->, NULL-terminated */
    const char *data_id;        /* the id of the second data element */
};

static int web_page_write(FILE *out, const struct web_page *pg,
                          int (*write_meta)(void *arg, FILE *out),
                          int (*write_data)(void *arg, FILE *out), void *arg)
{
    static const char marker_style[] = "<!--pyprofd:style-->";
    static const char marker_scripts[] = "<!--pyprofd:scripts-->";
    static const char marker_data[] = "<!--pyprofd:data-->";
    const struct web_asset *page = web_asset(pg->page);
    if (!page)
        return -ENOENT;
    const char *p = (const char *)page->data;
    int err = 0;
    while (*p && !err) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) + 1 : strlen(p);
        const char *m = memchr(p, '<', len) ? strstr(p, "<!--pyprofd:") : NULL;
        if (m && m < p + len && strncmp(m, marker_style, sizeof(marker_style) - 1) == 0) {
            report_inline(out, "<style>\n", "pyprofd.css", "</style>\n");
        } else if (m && m < p + len &&
                   strncmp(m, marker_scripts, sizeof(marker_scripts) - 1) == 0) {
            for (const char *const *sc = pg->scripts; *sc; sc++)
                report_inline(out, "<script>\n", *sc, "\n</script>\n");
        } else if (m && m < p + len && strncmp(m, marker_data, sizeof(marker_data) - 1) == 0) {
            fputs("<script type=\"application/json\" id=\"pyprofd-meta\">", out);
            err = write_meta(arg, out);
            fprintf(out, "</script>\n<script type=\"application/json\" id=\"%s\">", pg->data_id);
            if (!err)
                err = write_data(arg, out);
            fputs("</script>\n", out);
        } else {
            fwrite(p, 1, len, out);
        }
        p += len;
    }
    if (!err && ferror(out))
        err = -EIO;
    return err;
}

int web_report_write(FILE *out, int (*write_meta)(void *arg, FILE *out),
                     int (*write_tree)(void *arg, FILE *out), void *arg)
{
    static const char *const scripts[] = {
        "d3.min.js", "d3-flamegraph.min.js", "summary.js", "flame.js", "report.js", NULL};
    static const struct web_page pg = {"report.html", scripts, "pyprofd-tree"};
    return web_page_write(out, &pg, write_meta, write_tree, arg);
}

int web_heatmap_write(FILE *out, int (*write_meta)(void *arg, FILE *out),
                      int (*write_lines)(void *arg, FILE *out), void *arg)
{
    static const char *const scripts[] = {"summary.js", "heatmap.js", NULL};
    static const struct web_page pg = {"heatmap.html", scripts, "pyprofd-heatmap"};
    return web_page_write(out, &pg, write_meta, write_lines, arg);
}
