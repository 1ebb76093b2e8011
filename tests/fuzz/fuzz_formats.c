/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the outputs other tools open (agent/pprof/: pstats.c,
 * speedscope.c, gecko.c, heatmap.c) fed the target's text, which is
 * untrusted: function and file names and a source file's bytes.
 *
 * Input: byte 0 a thread count (1-4) and whether to keep a timeline; then
 * three NUL-separated fields: a function name, a file name (both any bytes,
 * so NUL-free but otherwise hostile) and the source text of that file (any
 * bytes, NULs included). A few samples mix those frames with fixed ones
 * (markers, an opcode marker, a recursion), on several threads and asyncio
 * tasks, each put in the timeline.
 *
 * Checked: every writer succeeds; the three JSON documents (speedscope,
 * gecko, the heatmap's data) are each exactly one valid JSON value with
 * valid UTF-8 strings (base/jsonscan.c, which refuses anything else) and
 * hold no '<' outside escapes (they sit in HTML <script> elements); the
 * pstats file is one marshalled dict, ends where its terminator is.
 */
#include "base/compat.h"

#include "aggregate/agg.h"
#include "base/buf.h"
#include "base/jsonscan.h"
#include "pprof/gecko.h"
#include "pprof/heatmap.h"
#include "pprof/pstats.h"
#include "pprof/speedscope.h"
#include "pprof/timeline.h"
#include "unwind/unwind.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct fuzz_source {
    const char *path;
    const uint8_t *text;
    size_t len;
};

static int fuzz_source_read(void *arg, const char *path, struct buf *text, char *why, size_t n)
{
    const struct fuzz_source *s = arg;
    if (strcmp(path, s->path) != 0) {
        snprintf(why, n, "not %s", s->path); /* the hostile name in the reason, too */
        return -ENOENT;
    }
    return buf_add(text, s->text, s->len) ? -EFBIG : 0;
}

/* Where each output is written: enough for the largest (the heatmap of a
 * 16 KiB source, each byte at most 6 escaped). */
static char fuzz_buf[1 << 20];

/* Runs @write into fuzz_buf; returns it, and its length in *@len. */
static char *fuzz_out(int (*write)(void *arg, FILE *f), void *arg, size_t *len)
{
    FILE *f = fmemopen(fuzz_buf, sizeof(fuzz_buf), "w");
    if (!f)
        abort();
    if (write(arg, f) != 0)
        abort();
    long n = ftell(f);
    fclose(f);
    if (n < 0 || (size_t)n >= sizeof(fuzz_buf))
        abort();
    *len = (size_t)n;
    return fuzz_buf;
}

static void fuzz_json(const char *p, size_t n)
{
    struct jsonscan *s;
    if (jsonscan_new(64, 64, 0, &s))
        abort();
    if (jsonscan_feed(s, p, n, NULL, NULL) || jsonscan_finish(s, NULL, NULL))
        abort();
    jsonscan_free(s);
    if (memchr(p, '<', n))
        abort(); /* '<' is always written as \u003c */
}

struct fuzz_ctx {
    struct agg *a;
    struct timeline *tl;
    struct fuzz_source src;
};

static int fuzz_pstats(void *arg, FILE *f)
{
    return pstats_write(((struct fuzz_ctx *)arg)->a, f);
}

static int fuzz_speedscope(void *arg, FILE *f)
{
    struct fuzz_ctx *c = arg;
    struct speedscope_meta m = {.name = c->src.path, .exporter = c->src.path, .pid = 1};
    return speedscope_write(c->a, c->tl, &m, f);
}

static int fuzz_gecko(void *arg, FILE *f)
{
    struct fuzz_ctx *c = arg;
    struct gecko_meta m = {.pid = 1,
                           .process_name = c->src.path,
                           .product = c->src.path,
                           .start_wall_ns = 1,
                           .start_mono_ns = 100,
                           .duration_ns = 1000,
                           .interval_ns = 10};
    return gecko_write(c->a, c->tl, &m, f);
}

static int fuzz_heatmap(void *arg, FILE *f)
{
    struct fuzz_ctx *c = arg;
    return heatmap_json_write(c->a, fuzz_source_read, &c->src, f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 1 << 14)
        return 0;
    unsigned threads = 1 + (data[0] & 3);
    bool timed = data[0] & 4;
    char fn[128] = "", file[128] = "";
    size_t i = 1, k = 0;
    for (; i < size && data[i]; i++)
        if (k + 1 < sizeof(fn))
            fn[k++] = (char)data[i];
    fn[k] = '\0';
    k = 0;
    for (i++; i < size && data[i]; i++)
        if (k + 1 < sizeof(file))
            file[k++] = (char)data[i];
    file[k] = '\0';
    i++;
    struct fuzz_ctx c = {
        .src = {.path = file, .text = i < size ? data + i : data, .len = i < size ? size - i : 0}};
    if (agg_new(NULL, &c.a) || (timed && timeline_new(0, &c.tl)))
        abort();

    struct unwind_frame hostile = {.kind = UNWIND_FRAME_PYTHON,
                                   .function = fn,
                                   .file = file,
                                   .first_line = 1,
                                   .pos = {2, 2, 0, 1},
                                   .opmarker = data[0] & 8 ? "<op LOAD_FAST>" : NULL};
    struct unwind_frame mod = {.kind = UNWIND_FRAME_PYTHON,
                               .function = "<module>",
                               .file = file,
                               .first_line = 1,
                               .pos = {9, 9, 0, 1}};
    struct unwind_frame gc = {.kind = UNWIND_FRAME_GC, .function = "<GC>", .file = "~"};
    struct unwind_frame stacks[3][4] = {{hostile, hostile, mod}, {gc, hostile, mod}, {mod}};
    const size_t depth[3] = {3, 3, 1};
    const char *tasks[3] = {NULL, fn, "t"};
    for (unsigned n = 0; n < 12; n++) {
        unsigned s = (n + (unsigned)size) % 3;
        if (agg_add_in(c.a, stacks[s], depth[s], 1 + n % threads, 0, n % 2 ? fn : "MainThread",
                       tasks[n % 3], 1, 10))
            continue;
        if (c.tl)
            (void)timeline_add(c.tl, 100 + 10 * n, agg_last(c.a));
    }

    size_t len;
    char *p = fuzz_out(fuzz_pstats, &c, &len);
    if (len < 2 || p[0] != '{' || p[len - 1] != '0')
        abort();
    p = fuzz_out(fuzz_speedscope, &c, &len);
    fuzz_json(p, len);
    if (c.tl) {
        p = fuzz_out(fuzz_gecko, &c, &len);
        fuzz_json(p, len);
    }
    p = fuzz_out(fuzz_heatmap, &c, &len);
    fuzz_json(p, len);
    timeline_free(c.tl);
    agg_free(c.a);
    return 0;
}
