/* SPDX-License-Identifier: MIT */
/*
 * Tests for the outputs other tools open (agent/pprof/): pstats.c,
 * speedscope.c, gecko.c, heatmap.c, timeline.c and threads.c, on windows
 * made by hand. The consumers themselves (Python's pstats, the speedscope
 * app, chromium) read real recordings in tests/integration/test_formats.py.
 */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include "aggregate/agg.h"
#include "base/buf.h"
#include "pprof/gecko.h"
#include "pprof/heatmap.h"
#include "pprof/pstats.h"
#include "pprof/speedscope.h"
#include "pprof/threads.h"
#include "pprof/timeline.h"
#include "unwind/unwind.h"

static struct unwind_frame frame(const char *fn, const char *file, int32_t first, int32_t line)
{
    return (struct unwind_frame){.kind = UNWIND_FRAME_PYTHON,
                                 .function = fn,
                                 .file = file,
                                 .first_line = first,
                                 .pos = {line, line, 1, 2}};
}

/* What @write wrote, in a static buffer; *@len its length (binary output). */
static char out_buf[1 << 16];

static FILE *out_open(void)
{
    memset(out_buf, 0, sizeof(out_buf));
    FILE *f = fmemopen(out_buf, sizeof(out_buf) - 1, "w");
    assert_non_null(f);
    return f;
}

static size_t out_close(FILE *f)
{
    long n = ftell(f);
    fclose(f);
    return (size_t)n;
}

static bool has_bytes(const char *hay, size_t n, const void *needle, size_t m)
{
    return memmem(hay, n, needle, m) != NULL;
}

/* Recursion counts once per sample in cc and ct, every frame in nc. */
static void test_pstats__recursion_and_callers(void **state)
{
    (void)state;
    struct agg *a;
    assert_int_equal(agg_new(NULL, &a), 0);
    struct unwind_frame rec[] = {frame("f", "/a.py", 10, 11), frame("f", "/a.py", 10, 12),
                                 frame("main", "/a.py", 1, 3)};
    struct unwind_frame flat[] = {frame("main", "/a.py", 1, 4)};
    assert_int_equal(agg_add_in(a, rec, 3, 7, 0, "MainThread", NULL, 2, 2000000000), 0);
    assert_int_equal(agg_add_in(a, flat, 1, 7, 0, "MainThread", NULL, 1, 1000000000), 0);
    FILE *f = out_open();
    assert_int_equal(pstats_write(a, f), 0);
    size_t n = out_close(f);
    assert_int_equal(out_buf[0], '{');
    assert_int_equal(out_buf[n - 1], '0');
    /* the key of f: (u"/a.py", 10, u"f") */
    static const char key_f[] = ")\x03u\x05\x00\x00\x00/a.pyi\x0a\x00\x00\x00u\x01\x00\x00\x00"
                                "f";
    assert_true(has_bytes(out_buf, n, key_f, sizeof(key_f) - 1));
    /* f: cc 2 (samples), nc 4 (frames), tt 2.0 s, ct 2.0 s */
    static const char f_counts[] = ")\x05i\x02\x00\x00\x00i\x04\x00\x00\x00g";
    assert_true(has_bytes(out_buf, n, f_counts, sizeof(f_counts) - 1));
    double two = 2.0;
    char tt[9] = "g";
    memcpy(tt + 1, &two, 8);
    assert_true(has_bytes(out_buf, n, tt, 9));
    /* main: cc 3, nc 3, no caller (an empty dict) */
    static const char main_counts[] = ")\x05i\x03\x00\x00\x00i\x03\x00\x00\x00g";
    assert_true(has_bytes(out_buf, n, main_counts, sizeof(main_counts) - 1));
    /* f's callers: f itself (nc 2, cc 2) and main (nc 2, cc 2) */
    static const char edge[] = ")\x04i\x02\x00\x00\x00i\x02\x00\x00\x00g";
    assert_true(has_bytes(out_buf, n, edge, sizeof(edge) - 1));
    agg_free(a);
}

/* A count past 32 bits is a marshal long; an invalid name becomes U+FFFD; op markers are left out.
 */
static void test_pstats__long_counts_text_and_opcodes(void **state)
{
    (void)state;
    struct agg *a;
    assert_int_equal(agg_new(NULL, &a), 0);
    struct unwind_frame s[] = {frame("g\xff", "/b.py", 1, 2)};
    s[0].opmarker = "<op LOAD_FAST>";
    int64_t big = (int64_t)1 << 33; /* 2^33: digits 0, 0, 8 in base 2^15 */
    assert_int_equal(agg_add_in(a, s, 1, 7, 0, "MainThread", NULL, big, 1), 0);
    FILE *f = out_open();
    assert_int_equal(pstats_write(a, f), 0);
    size_t n = out_close(f);
    static const char lng[] = "l\x03\x00\x00\x00\x00\x00\x00\x00\x08\x00";
    assert_true(has_bytes(out_buf, n, lng, sizeof(lng) - 1));
    static const char name[] = "u\x04\x00\x00\x00g\xef\xbf\xbd";
    assert_true(has_bytes(out_buf, n, name, sizeof(name) - 1));
    assert_false(has_bytes(out_buf, n, "LOAD_FAST", 9));
    agg_free(a);
}

/* Two threads, the main one first; samples in time order; a run of one stack is one entry. */
static void test_speedscope__threads_and_time_order(void **state)
{
    (void)state;
    struct agg *a;
    struct timeline *tl;
    assert_int_equal(agg_new(NULL, &a), 0);
    assert_int_equal(timeline_new(0, &tl), 0);
    struct unwind_frame x[] = {frame("x", "/a.py", 5, 6), frame("main", "/a.py", 1, 2)};
    struct unwind_frame y[] = {frame("y", "/a.py", 8, 9), frame("main", "/a.py", 1, 2)};
    struct unwind_frame w[] = {frame("work", "/w.py", 3, 4)};
    const struct {
        struct unwind_frame *f;
        size_t n;
        uint64_t tid;
    } seq[] = {{w, 1, 43}, {x, 2, 42}, {x, 2, 42}, {y, 2, 42}, {x, 2, 42}, {w, 1, 43}};
    /* (the worker's two samples are its consecutive ones: one entry) */
    for (size_t i = 0; i < sizeof(seq) / sizeof(seq[0]); i++) {
        assert_int_equal(agg_add_in(a, seq[i].f, seq[i].n, seq[i].tid, 0,
                                    seq[i].tid == 42 ? "MainThread" : "worker", NULL, 1, 10),
                         0);
        assert_int_equal(timeline_add(tl, 100 + i, agg_last(a)), 0);
    }
    struct speedscope_meta m = {.name = "t.speedscope.json", .exporter = "pyprofd test", .pid = 42};
    FILE *f = out_open();
    assert_int_equal(speedscope_write(a, tl, &m, f), 0);
    out_close(f);
    /* frames: work 0, x 1, main 2, y 3 (the window's function order) */
    assert_non_null(strstr(out_buf, "\"frames\":[{\"name\":\"work\",\"file\":\"/w.py\",\"line\":3},"
                                    "{\"name\":\"x\",\"file\":\"/a.py\",\"line\":5},"
                                    "{\"name\":\"main\",\"file\":\"/a.py\",\"line\":1},"
                                    "{\"name\":\"y\",\"file\":\"/a.py\",\"line\":8}]"));
    assert_non_null(strstr(out_buf, "\"profiles\":[{\"type\":\"sampled\",\"name\":"
                                    "\"MainThread (42)\",\"unit\":\"nanoseconds\",\"startValue\":0,"
                                    "\"samples\":[[2,1],[2,3],[2,1]],\"weights\":[20,10,10],"
                                    "\"endValue\":40},"
                                    "{\"type\":\"sampled\",\"name\":\"worker (43)\","));
    assert_non_null(strstr(out_buf, "\"samples\":[[0]],\"weights\":[20],\"endValue\":20}"));
    assert_non_null(strstr(out_buf, "\"name\":\"t.speedscope.json\",\"activeProfileIndex\":0"));
    /* without a timeline: one entry per distinct stack */
    f = out_open();
    assert_int_equal(speedscope_write(a, NULL, &m, f), 0);
    out_close(f);
    assert_non_null(strstr(out_buf, "\"samples\":[[2,1],[2,3]],\"weights\":[30,10]"));
    timeline_free(tl);
    agg_free(a);
}

/* Stacks share prefixes; samples carry their times; task runs are markers; the main thread is
 * GeckoMain; each thread ends with a sample of no stack. */
static void test_gecko__tables(void **state)
{
    (void)state;
    struct agg *a;
    struct timeline *tl;
    assert_int_equal(agg_new(NULL, &a), 0);
    assert_int_equal(timeline_new(0, &tl), 0);
    struct unwind_frame x[] = {frame("x", "/a.py", 5, 6), frame("main", "/a.py", 1, 2)};
    struct unwind_frame y[] = {frame("y", "/a.py", 8, 9), frame("main", "/a.py", 1, 2)};
    struct unwind_frame gc[] = {{.kind = UNWIND_FRAME_GC, .function = "<GC>", .file = "~"},
                                frame("main", "/a.py", 1, 2)};
    uint64_t t0 = 1000000000;
    assert_int_equal(agg_add_in(a, x, 2, 42, 0, "MainThread", "job", 1, 1000000), 0);
    assert_int_equal(timeline_add(tl, t0 + 1000000, agg_last(a)), 0);
    assert_int_equal(agg_add_in(a, y, 2, 42, 0, "MainThread", "job", 1, 1000000), 0);
    assert_int_equal(timeline_add(tl, t0 + 2000000, agg_last(a)), 0);
    assert_int_equal(agg_add_in(a, gc, 2, 42, 0, "MainThread", NULL, 1, 1000000), 0);
    assert_int_equal(timeline_add(tl, t0 + 3000000, agg_last(a)), 0);
    struct gecko_meta m = {.pid = 42,
                           .process_name = "python3 app.py",
                           .product = "pyprofd test",
                           .start_wall_ns = 1700000000000000000,
                           .start_mono_ns = t0,
                           .duration_ns = 5000000,
                           .interval_ns = 1000000};
    FILE *f = out_open();
    assert_int_equal(gecko_write(a, tl, &m, f), 0);
    out_close(f);
    static const char head[] = "{\"systemHost\":{\"name\":\"Firefox\"},\"duration\":5.000,";
    assert_memory_equal(out_buf, head, sizeof(head) - 1);
    assert_non_null(strstr(out_buf, "\"version\":36,\"interval\":1.000000,"
                                    "\"startTime\":1700000000000.000"));
    assert_non_null(strstr(out_buf, "{\"name\":\"GeckoMain\",\"processType\":\"default\","
                                    "\"processName\":\"python3 app.py (pid 42)\",\"pid\":42,"
                                    "\"tid\":42,\"registerTime\":1.000"));
    /* frames: main 0, x 1, y 2, <GC> 3; stacks: [main], [main,x], [main,y], [main,<GC>] */
    assert_non_null(strstr(out_buf, "\"data\":[[1,1.000,0],[2,2.000,0],[3,3.000,0],"
                                    "[null,5.000,0]]"));
    assert_non_null(strstr(out_buf, "\"stackTable\":{\"schema\":{\"prefix\":0,\"frame\":1},"
                                    "\"data\":[[null,0],[0,1],[0,2],[0,3]]}"));
    /* the task's run: from its first sample to one interval past its last */
    assert_non_null(strstr(out_buf, "\"data\":[[4,1.000,3.000,1,3,null]]"));
    assert_non_null(strstr(out_buf, "[0,false,0,null,2,2,0,0],[1,false,0,null,6,2,0,0],"
                                    "[2,false,0,null,9,2,0,0],[3,false,0,null,null,null,2,0]"));
    assert_non_null(strstr(out_buf, "\"stringTable\":[\"main (/a.py:1)\",\"x (/a.py:5)\","
                                    "\"y (/a.py:8)\",\"\\u003cGC>\",\"\\u003ctask job>\"]"));
    /* no timeline, no file */
    f = out_open();
    assert_int_equal(gecko_write(a, NULL, &m, f), -EINVAL);
    out_close(f);
    timeline_free(tl);
    agg_free(a);
}

static int source_calls;

static int fake_source(void *arg, const char *path, struct buf *text, struct heatmap_source_id *id,
                       char *why, size_t size)
{
    (void)arg;
    (void)id; /* unknown: never taken for another file */
    source_calls++;
    if (strcmp(path, "/a.py") == 0) {
        static const char src[] = "first\r\nsecond </script>\n\x01\xff\t\x7f\r.\n";
        assert_int_equal(buf_add(text, src, sizeof(src) - 1), 0);
        return 0;
    }
    snprintf(why, size, "no %s", path);
    return -ENOENT;
}

/* own: the innermost Python line (C frames and markers skipped); total once per sample. */
static void test_heatmap__lines(void **state)
{
    (void)state;
    struct agg *a;
    assert_int_equal(agg_new(NULL, &a), 0);
    struct unwind_frame s1[] = {{.kind = UNWIND_FRAME_GC, .function = "<GC>", .file = "~"},
                                frame("f", "/a.py", 1, 2),
                                frame("f", "/a.py", 1, 2),
                                frame("main", "/b.py", 1, 3)};
    s1[1].opmarker = "<op CALL (CALL)>";
    struct unwind_frame s2[] = {frame("main", "/b.py", 1, 3)};
    assert_int_equal(agg_add_in(a, s1, 4, 7, 0, "MainThread", NULL, 3, 3), 0);
    assert_int_equal(agg_add_in(a, s2, 1, 7, 0, "MainThread", NULL, 1, 1), 0);
    source_calls = 0;
    FILE *f = out_open();
    assert_int_equal(heatmap_json_write(a, fake_source, NULL, f), 0);
    out_close(f);
    assert_int_equal(source_calls, 2);
    /* /b.py has 4 samples with a frame in it, /a.py 3: /b.py first */
    assert_non_null(strstr(out_buf, "{\"samples\":4,\"files\":[{\"path\":\"/b.py\",\"samples\":4,"
                                    "\"own\":1,\"error\":\"no /b.py\",\"lines\":[[3,1,4]]},"));
    /* control bytes as their pictures (U+2401 and U+2421 for DEL, U+240D for a
     * carriage return inside a line), a tab as \t, invalid UTF-8 as U+FFFD */
    assert_non_null(strstr(out_buf, "{\"path\":\"/a.py\",\"samples\":3,\"own\":3,\"text\":"
                                    "[\"first\",\"second \\u003c/script>\","
                                    "\"\xe2\x90\x81\xef\xbf\xbd\\t\xe2\x90\xa1\xe2\x90\x8d.\"],"
                                    "\"lines\":[[2,3,3,{\"CALL (CALL)\":3}]]}"));
    assert_null(strstr(out_buf, "text_left_off"));
    agg_free(a);
}

/* Files a test's source gives: a name, its text and which file it is. */
struct fake_file {
    const char *path, *text;
    size_t len; /* 0: strlen(text) */
    uint64_t dev, ino;
};

static const struct fake_file *fake_files;

static int fake_files_source(void *arg, const char *path, struct buf *text,
                             struct heatmap_source_id *id, char *why, size_t size)
{
    (void)arg;
    source_calls++;
    for (const struct fake_file *ff = fake_files; ff->path; ff++) {
        if (strcmp(path, ff->path) != 0)
            continue;
        assert_int_equal(buf_add(text, ff->text, ff->len ? ff->len : strlen(ff->text)), 0);
        *id = (struct heatmap_source_id){.dev = ff->dev, .ino = ff->ino};
        return 0;
    }
    snprintf(why, size, "no %s", path);
    return -ENOENT;
}

/* A window where file @paths[i] has a frame in 10 - i samples (files in that order). */
static struct agg *window_of(const char *const *paths, size_t n)
{
    struct agg *a;
    assert_int_equal(agg_new(NULL, &a), 0);
    for (size_t i = 0; i < n; i++) {
        struct unwind_frame fr[] = {frame("f", paths[i], 1, 2)};
        assert_int_equal(agg_add_in(a, fr, 1, 7, 0, "MainThread", NULL, 10 - (int64_t)i, 1), 0);
    }
    return a;
}

static size_t count_of(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* Two names of one file (device, inode) give one text: the later one points at the earlier. */
static void test_heatmap__one_copy_per_file(void **state)
{
    (void)state;
    static const struct fake_file files[] = {
        {"/app/a.py", "one = 'ONE'\n", 0, 8, 100},
        {"/app/b.py", "two = 'TWO'\n", 0, 8, 101},
        {"/link/a.py", "one = 'ONE'\n", 0, 8, 100},
        {"/other/a.py", "one = 'ONE'\n", 0, 9, 100}, /* another device: another file */
        {"/unknown.py", "one = 'ONE'\n", 0, 0, 0},   /* no identity: never shared */
        {"/hard/a.py", "one = 'ONE'\n", 0, 8, 100},
        {NULL, NULL, 0, 0, 0}};
    static const char *const paths[] = {"/app/a.py",   "/app/b.py",   "/link/a.py",
                                        "/other/a.py", "/unknown.py", "/hard/a.py"};
    fake_files = files;
    struct agg *a = window_of(paths, PYPROFD_ARRAY_SIZE(paths));
    source_calls = 0;
    FILE *f = out_open();
    assert_int_equal(heatmap_json_write(a, fake_files_source, NULL, f), 0);
    out_close(f);
    assert_int_equal(source_calls, 6);
    assert_non_null(strstr(out_buf, "{\"path\":\"/app/a.py\",\"samples\":10,\"own\":10,"
                                    "\"text\":[\"one = 'ONE'\"],"));
    assert_non_null(strstr(out_buf, "{\"path\":\"/link/a.py\",\"samples\":8,\"own\":8,"
                                    "\"same_as\":0,\"lines\""));
    assert_non_null(strstr(out_buf, "{\"path\":\"/hard/a.py\",\"samples\":5,\"own\":5,"
                                    "\"same_as\":0,\"lines\""));
    /* a.py's text three times: its own, the other device's, the unknown one's */
    assert_int_equal(count_of(out_buf, "ONE"), 3);
    assert_int_equal(count_of(out_buf, "TWO"), 1);
    assert_int_equal(count_of(out_buf, "same_as"), 2);
    agg_free(a);
}

/* The texts' bytes in the page, escapes included, stop at the budget; later names of a
 * file already in the page cost nothing, and a smaller text after a large one may fit. */
static void test_heatmap__source_budget(void **state)
{
    (void)state;
    /* every kind of escape in one line: its JSON is its budget */
    static const char tricky[] = "a<\"\\\t\x01\x7f\xff\xc3\xa9\r\nz\n";
    static const struct fake_file files[] = {
        {"/t.py", tricky, 0, 1, 1},
        {"/big.py", "0123456789012345678901234567890123456789\n", 0, 1, 2},
        {"/t2.py", tricky, 0, 1, 1},
        {"/small.py", "s\n", 0, 1, 3},
        {NULL, NULL, 0, 0, 0}};
    static const char *const paths[] = {"/t.py", "/big.py", "/t2.py", "/small.py"};
    static const char tricky_json[] =
        "[\"a\\u003c\\\"\\\\\\t\xe2\x90\x81\xe2\x90\xa1\xef\xbf\xbd\xc3\xa9\",\"z\"]";
    const size_t tricky_len = sizeof(tricky_json) - 1, small_len = sizeof("[\"s\"]") - 1;
    fake_files = files;
    struct agg *a = window_of(paths, PYPROFD_ARRAY_SIZE(paths));

    /* room for the tricky text and the small one, not for the big one */
    FILE *f = out_open();
    assert_int_equal(
        heatmap_json_write_budget(a, fake_files_source, NULL, tricky_len + small_len, f), 0);
    out_close(f);
    char want[256];
    snprintf(want, sizeof(want), "{\"path\":\"/t.py\",\"samples\":10,\"own\":10,\"text\":%s,",
             tricky_json);
    assert_non_null(strstr(out_buf, want));
    snprintf(want, sizeof(want),
             "{\"path\":\"/big.py\",\"samples\":9,\"own\":9,\"error\":\"left out: the page's "
             "source budget is spent (%zu of its %zu bytes left, this text takes 44)\",",
             small_len, tricky_len + small_len);
    assert_non_null(strstr(out_buf, want));
    assert_non_null(strstr(out_buf, "{\"path\":\"/t2.py\",\"samples\":8,\"own\":8,"
                                    "\"same_as\":0,"));
    assert_non_null(strstr(out_buf, "{\"path\":\"/small.py\",\"samples\":7,\"own\":7,"
                                    "\"text\":[\"s\"],"));
    assert_non_null(strstr(out_buf, "]}],\"text_left_off\":1}"));

    /* one byte short: the tricky text is left out too; the small one still fits */
    f = out_open();
    assert_int_equal(heatmap_json_write_budget(a, fake_files_source, NULL, tricky_len - 1, f), 0);
    out_close(f);
    assert_null(strstr(out_buf, "\xe2\x90\x81"));
    assert_int_equal(count_of(out_buf, "left out: the page's source budget"), 3);
    assert_non_null(strstr(out_buf, "\"text\":[\"s\"]"));
    assert_non_null(strstr(out_buf, "\"text_left_off\":3}"));

    /* no budget at all: every text is left out, every name listed */
    f = out_open();
    assert_int_equal(heatmap_json_write_budget(a, fake_files_source, NULL, 0, f), 0);
    out_close(f);
    assert_null(strstr(out_buf, "\"text\""));
    assert_int_equal(count_of(out_buf, "\"path\""), 4);
    assert_non_null(strstr(out_buf, "\"text_left_off\":4}"));
    agg_free(a);
}

/* A file with a NUL byte is not text: refused, nothing of it in the page. */
static void test_heatmap__nul_is_not_text(void **state)
{
    (void)state;
    static const char bin[] = "x = 'BINARY'\n\0\0\0\n";
    static const struct fake_file files[] = {{"/bin.py", bin, sizeof(bin) - 1, 1, 1},
                                             {"/ok.py", "ok = 1\n", 0, 1, 2},
                                             {NULL, NULL, 0, 0, 0}};
    static const char *const paths[] = {"/bin.py", "/ok.py"};
    fake_files = files;
    struct agg *a = window_of(paths, PYPROFD_ARRAY_SIZE(paths));
    FILE *f = out_open();
    assert_int_equal(heatmap_json_write(a, fake_files_source, NULL, f), 0);
    out_close(f);
    assert_non_null(strstr(out_buf, "{\"path\":\"/bin.py\",\"samples\":10,\"own\":10,"
                                    "\"error\":\"not text: it holds a NUL byte\",\"lines\""));
    assert_null(strstr(out_buf, "BINARY"));
    assert_non_null(strstr(out_buf, "\"text\":[\"ok = 1\"]"));
    assert_null(strstr(out_buf, "text_left_off")); /* a refusal, not the budget */
    agg_free(a);
}

static void test_timeline__cap(void **state)
{
    (void)state;
    struct timeline *tl;
    assert_int_equal(timeline_new(3, &tl), 0);
    for (int i = 0; i < 5; i++)
        (void)timeline_add(tl, (uint64_t)i, (size_t)i);
    size_t n;
    const struct timeline_entry *e = timeline_entries(tl, &n);
    assert_int_equal(n, 3);
    assert_int_equal(e[2].sample, 2);
    assert_int_equal(timeline_dropped(tl), 2);
    timeline_free(tl);
}

/* The main thread first even when others have more samples; then by samples. */
static void test_threads__order(void **state)
{
    (void)state;
    struct agg *a;
    assert_int_equal(agg_new(NULL, &a), 0);
    struct unwind_frame s[] = {frame("f", "/a.py", 1, 2)};
    assert_int_equal(agg_add_in(a, s, 1, 9, 0, "small", NULL, 2, 1), 0);
    assert_int_equal(agg_add_in(a, s, 1, 5, 0, "big", NULL, 9, 1), 0);
    assert_int_equal(agg_add_in(a, s, 1, 100, 0, "MainThread", NULL, 1, 1), 0);
    struct out_threads th;
    assert_int_equal(out_threads_build(a, 100, &th), 0);
    assert_int_equal(th.n, 3);
    assert_int_equal(th.t[0].id, 100);
    assert_int_equal(th.t[1].id, 5);
    assert_int_equal(th.t[2].id, 9);
    assert_int_equal(th.of[0], 2);
    assert_int_equal(th.of[1], 1);
    assert_int_equal(th.of[2], 0);
    out_threads_release(&th);
    agg_free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pstats__recursion_and_callers),
        cmocka_unit_test(test_pstats__long_counts_text_and_opcodes),
        cmocka_unit_test(test_speedscope__threads_and_time_order),
        cmocka_unit_test(test_gecko__tables),
        cmocka_unit_test(test_heatmap__lines),
        cmocka_unit_test(test_heatmap__one_copy_per_file),
        cmocka_unit_test(test_heatmap__source_budget),
        cmocka_unit_test(test_heatmap__nul_is_not_text),
        cmocka_unit_test(test_timeline__cap),
        cmocka_unit_test(test_threads__order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
