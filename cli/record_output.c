/* SPDX-License-Identifier: MIT */
/*
 * record_output.c: the files `pyprofd record` writes from one recording
 * (record.h): pprof, folded stacks, the HTML flame graph, pstats,
 * speedscope, the Firefox Profiler's format and the source heatmap, each
 * written through base/outfile.h (a temporary renamed into place, or a
 * device or /dev/stdout directly); the summary the pages
 * show; the window's sink that also keeps the samples' order in time.
 */
#include "base/compat.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/jsonw.h"
#include "base/log.h"
#include "base/outfile.h"
#include "base/utf8.h"
#include "cli/record.h"
#include "cli/version.h"
#include "pprof/collapsed.h"
#include "pprof/flamegraph.h"
#include "pprof/gecko.h"
#include "pprof/heatmap.h"
#include "pprof/pprof_build.h"
#include "pprof/pstats.h"
#include "pprof/speedscope.h"
#include "web/web.h"

/* Each format: its --format name, the default file's extension, and the
 * names it is known by (the first suffix that matches wins: longest first). */
static const struct record_format_info record_formats[] = {
    {RECORD_PPROF, "pprof", "pb.gz"},
    {RECORD_COLLAPSED, "collapsed", "txt"},
    {RECORD_HTML, "html", "html"},
    {RECORD_PSTATS, "pstats", "pstats"},
    {RECORD_SPEEDSCOPE, "speedscope", "speedscope.json"},
    {RECORD_GECKO, "gecko", "gecko.json"},
    {RECORD_HEATMAP, "heatmap", "heatmap.html"},
};

static const struct {
    const char *suffix;
    enum record_format format;
} record_suffixes[] = {
    {".speedscope.json", RECORD_SPEEDSCOPE},
    {".heatmap.html", RECORD_HEATMAP},
    {".gecko.json", RECORD_GECKO},
    {".pstats", RECORD_PSTATS},
    {".prof", RECORD_PSTATS},
    {".pb.gz", RECORD_PPROF},
    {".pprof", RECORD_PPROF},
    {".html", RECORD_HTML},
    {".htm", RECORD_HTML},
};

static bool record_ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/*
 * The command line of @pid, arguments joined by spaces ("" when unreadable),
 * as valid UTF-8 (utf8_sanitize(); a character the read's cap split is
 * dropped): the report embeds it.
 */
void record_cmdline(pid_t pid, char *out, size_t size)
{
    char path[64], raw[1024];
    snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
    out[0] = '\0';
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, raw, sizeof(raw));
    close(fd);
    if (n <= 0)
        return;
    size_t len = (size_t)n == sizeof(raw) ? utf8_trim_cut(raw, (size_t)n) : (size_t)n;
    while (len > 0 && raw[len - 1] == '\0')
        len--;
    for (size_t i = 0; i < len; i++)
        if (raw[i] == '\0' || raw[i] == '\n')
            raw[i] = ' ';
    (void)utf8_sanitize(out, size, raw, len);
}

/* The report's summary as a JSON object (docs/usage.md lists the keys). */
static int record_meta_json(const struct record_opts *o, const struct record_report *r,
                            int64_t start_wall, FILE *out)
{
    const struct sampler_counts *c = &r->counts;
    char when[32] = "";
    time_t secs = (time_t)(start_wall / 1000000000);
    struct tm tm;
    if (gmtime_r(&secs, &tm))
        strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
    struct jsonw w;
    jsonw_init_file(&w, out, 0);
    jsonw_object(&w, NULL);
    jsonw_int(&w, "pid", r->pid);
    jsonw_string(&w, "command", r->command);
    jsonw_string(&w, "python", r->python);
    jsonw_string(&w, "build", r->free_threaded ? "free-threaded" : "");
    jsonw_string(&w, "mode", profile_mode_name(o->mode));
    jsonw_string(&w, "threads", o->unwind_flags & UNWIND_ALL_THREADS ? "all" : "main");
    if (o->async_aware)
        jsonw_string(&w, "async", asyncio_mode_name(o->async_mode));
    jsonw_double(&w, "rate_hz", o->rate, 6);
    jsonw_fixed(&w, "duration_s", r->seconds, 3);
    jsonw_fixed(&w, "achieved_hz", r->seconds > 0 ? (double)c->attempts / r->seconds : 0.0, 3);
    jsonw_uint(&w, "samples", c->taken);
    jsonw_uint(&w, "attempts", c->attempts);
    jsonw_uint(&w, "failed", c->failed);
    jsonw_uint(&w, "missed", c->missed);
    jsonw_object(&w, "failed_by");
    for (int s = 0; s < SAMPLE_STATUS_COUNT; s++) {
        if (c->failed_by[s])
            jsonw_uint(&w, status_name((enum sample_status)s), c->failed_by[s]);
    }
    jsonw_end(&w);
    jsonw_string(&w, "start", when);
    jsonw_string(&w, "pyprofd", pyprofd_build.version);
    jsonw_end(&w);
    return jsonw_finish(&w);
}

/* What the report's callbacks need. */
struct record_html {
    const struct record_opts *o;
    const struct record_report *r;
    const struct agg *agg;
    int64_t start_wall;
};

static int record_html_meta(void *arg, FILE *out)
{
    const struct record_html *h = arg;
    return record_meta_json(h->o, h->r, h->start_wall, out);
}

static int record_html_tree(void *arg, FILE *out)
{
    const struct record_html *h = arg;
    struct flame_part part = {.agg = h->agg};
    return flame_json_write(&part, 1, "all", out);
}

enum record_format record_format_of(const struct record_opts *o, const char *path)
{
    if (o->format != RECORD_AUTO)
        return o->format;
    for (size_t i = 0; i < sizeof(record_suffixes) / sizeof(record_suffixes[0]); i++)
        if (record_ends_with(path, record_suffixes[i].suffix))
            return record_suffixes[i].format;
    return RECORD_COLLAPSED;
}

const struct record_format_info *record_format_info(enum record_format f)
{
    for (size_t i = 0; i < sizeof(record_formats) / sizeof(record_formats[0]); i++)
        if (record_formats[i].format == f)
            return &record_formats[i];
    return &record_formats[0];
}

bool record_wants(const struct record_opts *o, enum record_format f)
{
    if (o->noutputs == 0)
        return (o->format == RECORD_AUTO ? RECORD_PPROF : o->format) == f;
    for (size_t i = 0; i < o->noutputs; i++)
        if (record_format_of(o, o->outputs[i]) == f)
            return true;
    return false;
}

static int record_heatmap_lines(void *arg, FILE *out)
{
    const struct record_result *r = arg;
    return heatmap_json_write(r->agg, r->sources ? cli_source_read : NULL, r->sources, out);
}

static int record_heatmap_meta(void *arg, FILE *out)
{
    const struct record_result *r = arg;
    return record_meta_json(r->o, r->rep, r->start_wall, out);
}

static int record_write_one(const struct record_result *r, enum record_format format,
                            const char *path, FILE *f)
{
    const struct record_opts *o = r->o;
    char exporter[96], product[160];
    snprintf(exporter, sizeof(exporter), "pyprofd %s", pyprofd_build.version);
    switch (format) {
    case RECORD_PPROF: {
        struct pprof_meta meta = {
            .value_type = profile_mode_name(r->mode),
            .value_unit = "nanoseconds",
            .period_ns = (int64_t)r->interval_ns,
            .time_nanos = r->start_wall,
            .duration_nanos = r->duration_ns,
        };
        uint8_t *buf = NULL;
        size_t len = 0;
        int err = pprof_build(r->agg, &meta, &buf, &len);
        if (!err && fwrite(buf, 1, len, f) != len)
            err = -EIO;
        alloc_free(buf);
        return err;
    }
    case RECORD_HTML: {
        struct record_html h = {.o = o, .r = r->rep, .agg = r->agg, .start_wall = r->start_wall};
        return web_report_write(f, record_html_meta, record_html_tree, &h);
    }
    case RECORD_PSTATS:
        return pstats_write(r->agg, f);
    case RECORD_SPEEDSCOPE: {
        const char *base = strrchr(path, '/');
        struct speedscope_meta m = {
            .name = base ? base + 1 : path, .exporter = exporter, .pid = r->rep->pid};
        return speedscope_write(r->agg, r->tl, &m, f);
    }
    case RECORD_GECKO: {
        snprintf(product, sizeof(product), "pyprofd %s, CPython %s, %s mode", pyprofd_build.version,
                 r->rep->python, profile_mode_name(r->mode));
        struct gecko_meta m = {.pid = r->rep->pid,
                               .process_name = r->rep->command,
                               .product = product,
                               .start_wall_ns = r->start_wall,
                               .start_mono_ns = r->start_mono,
                               .duration_ns = (uint64_t)r->duration_ns,
                               .interval_ns = r->interval_ns};
        return gecko_write(r->agg, r->tl, &m, f);
    }
    case RECORD_HEATMAP:
        return web_heatmap_write(f, record_heatmap_meta, record_heatmap_lines, (void *)r);
    case RECORD_AUTO:
    case RECORD_COLLAPSED:
        break;
    }
    return collapsed_write(r->agg, f);
}

/*
 * Written as base/outfile.h says: a temporary under a random name in the
 * file's directory, renamed over the file (a device, FIFO or /dev/stdout is
 * written directly); no link another user planted is followed.
 */
int record_write(const struct record_result *r, const char *path)
{
    struct outfile *of = NULL;
    char why[256];
    int err = outfile_open(path, 0666, 0, &of, why, sizeof(why));
    if (!err) {
        FILE *f = outfile_stream(of);
        err = f ? record_write_one(r, record_format_of(r->o, path), path, f) : -ENOMEM;
        err = outfile_close(of, err, why, sizeof(why));
    }
    if (err)
        log_error("cannot write '%s': %s", path, why);
    return err;
}

static int record_sink_add(void *arg, const struct sink_sample *x)
{
    struct record_sink *r = arg;
    int err = r->inner.add(r->inner.arg, x);
    if (!err)
        (void)timeline_add(r->tl, x->at_ns, agg_last(r->agg)); /* a drop is counted there */
    return err;
}

static int record_sink_repeat(void *arg, const struct sink_sample *x)
{
    struct record_sink *r = arg;
    int err = r->inner.repeat(r->inner.arg, x);
    if (!err)
        (void)timeline_add(r->tl, x->at_ns, agg_last(r->agg));
    return err;
}

struct sample_sink record_sink(struct record_sink *rs)
{
    return (struct sample_sink){
        .add = record_sink_add, .repeat = rs->inner.repeat ? record_sink_repeat : NULL, .arg = rs};
}

const struct record_format_info *record_format_named(const char *name)
{
    for (size_t i = 0; i < sizeof(record_formats) / sizeof(record_formats[0]); i++)
        if (strcmp(name, record_formats[i].name) == 0)
            return &record_formats[i];
    return NULL;
}
