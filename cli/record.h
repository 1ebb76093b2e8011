/* SPDX-License-Identifier: MIT */
/*
 * record.h: what the two halves of `pyprofd record` share: the options
 * (record.c parses them and samples) and the outputs (record_output.c: the
 * formats, the summary the pages show, the files written from one
 * recording, and the window's sink that also keeps the samples' order in
 * time). Internal to cli/; one thread.
 */
#ifndef PYPROFD_CLI_RECORD_H
#define PYPROFD_CLI_RECORD_H

#include "base/compat.h"

#include "aggregate/agg.h"
#include "cli/cli.h"
#include "pprof/timeline.h"
#include "sampler/sampler.h"

enum record_format {
    RECORD_AUTO,
    RECORD_PPROF,
    RECORD_COLLAPSED,
    RECORD_HTML,
    RECORD_PSTATS,
    RECORD_SPEEDSCOPE,
    RECORD_GECKO,
    RECORD_HEATMAP,
};

#define RECORD_MAX_OUTPUTS 8 /* -o given this many times: one file per format */

struct record_format_info {
    enum record_format format;
    const char *name; /* --format NAME */
    const char *ext;  /* of the default file, pyprofd-PID.EXT */
};

/* The options of one recording (docs/usage.md). */
struct record_opts {
    double rate;
    double duration; /* seconds; 0 = until the target exits or Ctrl-C */
    enum profile_mode mode;
    bool mode_given;
    unsigned unwind_flags;
    bool native_full;      /* --native=full: mixed stacks from the kernel's samples */
    uint32_t native_stack; /* --native-stack: bytes of stack copied per sample (0: default) */
    bool blocking;
    bool realtime_stats;
    int progress;                            /* -1: on a terminal (default), 0: never */
    const char *outputs[RECORD_MAX_OUTPUTS]; /* -o, each once */
    size_t noutputs;
    enum record_format format;
    enum memread_backend backend;
    bool async_aware;
    enum asyncio_mode async_mode;
    enum idle_check idle_check; /* --idle-check (default perf) */
    bool no_trace_context;      /* --no-trace-context */
};

/* Distinct span ids one recording labels (agg_limits.spans): a recording is
 * one window, so it keeps more than an agent's window does. */
#define RECORD_MAX_SPANS 65536u
/* What the pages' sidebar says besides the options: the target and the counts. */
struct record_report {
    pid_t pid;
    char python[48];
    bool free_threaded;
    char command[1024]; /* its command line, read when it was attached */
    struct sampler_counts counts;
    double seconds;
};

/* Everything an output may be written from. */
struct record_result {
    const struct record_opts *o;
    const struct record_report *rep;
    const struct agg *agg;
    const struct timeline *tl;   /* NULL unless speedscope or gecko was asked for */
    struct cli_sources *sources; /* NULL unless heatmap was asked for */
    enum profile_mode mode;
    uint64_t interval_ns;
    int64_t start_wall;
    uint64_t start_mono;
    int64_t duration_ns;
};

/*
 * The window's sink with the timeline beside it: each thread sample the
 * window keeps is also put in the timeline, with its time (speedscope's and
 * the Firefox Profiler's order). No allocation but the timeline's doubling.
 */
struct record_sink {
    struct sample_sink inner;
    struct agg *agg;
    struct timeline *tl;
};

/** The format named @a name (--format), or NULL. */
const struct record_format_info *record_format_named(const char *name);
/** The format @a f's entry. */
const struct record_format_info *record_format_info(enum record_format f);
/** The format of output @a path: --format, else from its name (collapsed when unknown). */
enum record_format record_format_of(const struct record_opts *o, const char *path);
/** Whether any output of @a o is in format @a f (the default file when none is named). */
bool record_wants(const struct record_opts *o, enum record_format f);
/** The command line of @a pid as valid UTF-8, arguments joined by spaces ("" when unreadable). */
void record_cmdline(pid_t pid, char *out, size_t size);
/**
 * Writes @a path in its format through base/outfile.h (atomically by a
 * temporary renamed into place; a device, FIFO or /dev/stdout directly);
 * logs why on failure ("cannot write 'PATH': No space left on device").
 * Returns 0 or -errno.
 */
int record_write(const struct record_result *r, const char *path);
/** The sink for @a rs (filled in by the caller), which feeds rs->inner and rs->tl. */
struct sample_sink record_sink(struct record_sink *rs);

#endif /* PYPROFD_CLI_RECORD_H */
