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
 * Byte 0 also picks the heatmap's source budget (all of it, or 0-448 bytes),
 * and the file is also named "/other/name.py" (one file, two names).
 *
 * Checked: every writer succeeds; the three JSON documents (speedscope,
 * gecko, the heatmap's data) are each exactly one valid JSON value with
 * valid UTF-8 strings (base/jsonscan.c, which refuses anything else) and
 * hold no '<' outside escapes (they sit in HTML <script> elements); the
 * heatmap holds one copy of the text, within its budget, or a reason; the
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

#define FUZZ_OTHER_NAME "/other/name.py"

struct fuzz_source {
    const char *path;
    const uint8_t *text;
    size_t len;
    unsigned given; /* texts given */
};

/* The hostile file, also under a second name (one file: one copy in the page). */
static int fuzz_source_read(void *arg, const char *path, struct buf *text,
                            struct heatmap_source_id *id, char *why, size_t n)
{
    struct fuzz_source *s = arg;
    if (strcmp(path, s->path) != 0 && strcmp(path, FUZZ_OTHER_NAME) != 0) {
        snprintf(why, n, "not %s", s->path); /* the hostile name in the reason, too */
        return -ENOENT;
    }
    *id = (struct heatmap_source_id){.dev = 1, .ino = 2};
    if (buf_add(text, s->text, s->len))
        return -EFBIG;
    s->given++;
    return 0;
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
    size_t budget; /* of the heatmap's source text */
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
    c->src.given = 0;
    return heatmap_json_write_budget(c->a, fuzz_source_read, &c->src, c->budget, f);
}

/*
 * The heatmap's own checks: the text's bytes in the page within the budget;
 * one copy of the file however many of its names the source read (a
 * "same_as" for the second when the first has its text); a reason for a file
 * without text.
 */
static void fuzz_heatmap_check(const struct fuzz_ctx *c, const char *p, size_t len)
{
    const char *text = memmem(p, len, "\"text\":", 7);
    if (text) {
        const char *end = memmem(text, len - (size_t)(text - p), ",\"lines\":", 9);
        if (!end || (size_t)(end - text - 7) > c->budget)
            abort();
        if (memmem(end, len - (size_t)(end - p), "\"text\":", 7))
            abort(); /* a second copy */
        if (c->src.given == 2 && !memmem(p, len, "\"same_as\":", 10))
            abort();
    } else if (!memmem(p, len, "\"error\":", 8)) {
        abort(); /* neither text nor a reason */
    }
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
        .src = {.path = file, .text = i < size ? data + i : data, .len = i < size ? size - i : 0},
        /* byte 0's high bits: the whole budget, or a small one the text may not fit */
        .budget = data[0] & 0x10 ? (size_t)(data[0] >> 5) * 64 : HEATMAP_MAX_PAGE_TEXT};
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
    struct unwind_frame other = {.kind = UNWIND_FRAME_PYTHON,
                                 .function = "other",
                                 .file = FUZZ_OTHER_NAME,
                                 .first_line = 1,
                                 .pos = {3, 3, 0, 1}};
    struct unwind_frame gc = {.kind = UNWIND_FRAME_GC, .function = "<GC>", .file = "~"};
    struct unwind_frame stacks[3][4] = {{hostile, hostile, mod}, {gc, hostile, mod}, {other}};
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
    fuzz_heatmap_check(&c, p, len);
    timeline_free(c.tl);
    agg_free(c.a);
    return 0;
}
