/* SPDX-License-Identifier: MIT */
/*
 * record.c: `pyprofd record [options] PID` and `pyprofd record [options] --
 * COMMAND ARGS...`: sample a process at a fixed rate until it exits, the
 * duration ends or Ctrl-C, then write one or more files of the recording
 * (record_output.c: pprof, folded stacks, an HTML flame graph, pstats,
 * speedscope, the Firefox Profiler's format, a source heatmap) and one
 * summary line. docs/usage.md documents every option.
 */
#include "base/compat.h"

#include <getopt.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "aggregate/agg.h"
#include "base/alloc.h"
#include "base/clock.h"
#include "base/log.h"
#include "cli/cli.h"
#include "cli/record.h"
#include "cli/version.h"
#include "discovery/otel_process.h"
#include "pprof/timeline.h"
#include "sampler/nsampler.h"
#include "sampler/sampler.h"
#include "perf/perfsample.h"
#include "unwind/otel_sdk.h"
#include "unwind/otel_thread.h"

#define RECORD_MAX_RATE   1000000.0  /* Hz */
#define RECORD_WAIT_START 30         /* seconds a launched command may take to start Python */
#define RECORD_MAX_SLACK  1000000ull /* ns: the timer slack at low rates */

static volatile sig_atomic_t record_stop;

static void record_on_signal(int sig)
{
    (void)sig;
    record_stop = 1;
}

/* "250", "10k", "10khz", "2.5kHz", "100hz" -> Hz. */
PYPROFD_STATIC int record_parse_rate(const char *s, double *out)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || !(v > 0))
        return -EINVAL;
    if (*end == 'k' || *end == 'K') {
        v *= 1000.0;
        end++;
    }
    if (strcasecmp(end, "hz") == 0)
        end += 2;
    if (*end != '\0')
        return -EINVAL;
    if (v > RECORD_MAX_RATE || v < 0.01)
        return -ERANGE;
    *out = v;
    return 0;
}

static void record_usage(FILE *out)
{
    fputs("usage: pyprofd record [options] PID\n"
          "       pyprofd record [options] -- COMMAND [ARGS...]\n"
          "\n"
          "Samples a CPython " PYVERSION_SUPPORTED " process until it exits, the duration ends\n"
          "or Ctrl-C, then writes a profile.\n"
          "\n"
          "  -r, --rate HZ          samples per second: 250, 10k, 10khz (default 100)\n"
          "  -d, --duration SECS    stop after this long (default: until exit or Ctrl-C)\n"
          "      --mode MODE        wall (default), cpu, gil or exception\n"
          "  -a, --all-threads      every thread (default: the main thread)\n"
          "      --native[=WHAT]    markers (the default): <native> where C code called\n"
          "                         back into Python; full: the C frames themselves, from\n"
          "                         the kernel's samples (perf events; cpu mode), or with\n"
          "                         --blocking read from each stopped thread (any mode)\n"
          "      --native-stack B   bytes of each thread's stack copied per sample\n"
          "                         with --native=full (default 16384, at most 65528): a\n"
          "                         deeper C stack is cut where the copy ends\n"
          "      --no-gc            no <GC> marker during garbage collection\n"
          "      --opcodes          each frame's current instruction, as a marker frame\n"
          "                         below it: <op NAME (BASE)> for a specialized one\n"
          "      --blocking         stop the target's threads around each sample\n"
          "      --idle-check HOW   perf (default), schedstat or off: how a sample finds\n"
          "                         that no thread ran since the last read, and counts\n"
          "                         that read again instead of reading (perf: context-\n"
          "                         switch records; schedstat: /proc, where perf events\n"
          "                         are refused; off: every sample reads)\n"
          "      --async-aware      asyncio tasks' await chains instead of the event loop's\n"
          "                         stack, labelled with the task name (CPython 3.14+)\n"
          "      --no-trace-context don't label samples with the OpenTelemetry trace and\n"
          "                         span a thread is in (default: labelled trace_id and\n"
          "                         span_id when the process publishes its context)\n"
          "      --async-mode M     running (default: the running task) or all (also every\n"
          "                         suspended task; only with --mode wall); implies\n"
          "                         --async-aware\n"
          "  -o, --output FILE      where to write (default: pyprofd-PID.pb.gz); give it\n"
          "                         up to 8 times to write several formats of the same\n"
          "                         recording, each from its file name\n"
          "      --format FORMAT    pprof, collapsed, html, pstats, speedscope, gecko or\n"
          "                         heatmap (default: from the file name: .pb.gz and\n"
          "                         .pprof pprof, .html html, .pstats and .prof pstats,\n"
          "                         .speedscope.json speedscope, .gecko.json gecko,\n"
          "                         .heatmap.html heatmap, else collapsed)\n"
          "                           html     a self-contained flame graph page\n"
          "                           pstats   for python -m pstats, snakeviz, IDEs\n"
          "                           speedscope  speedscope's JSON, a profile per thread\n"
          "                           gecko    the Firefox Profiler's format\n"
          "                           heatmap  a page of the target's source with each\n"
          "                                    line's samples\n"
          "      --realtime-stats   print the achieved rate every second\n"
          "      --no-progress      no live progress line (default: one on a terminal:\n"
          "                         samples, elapsed time, achieved rate)\n"
          "      --backend B        memory reader: auto (default), vm or procmem\n",
          out);
}

/* --native or --native=WHAT (getopt's optarg, NULL without "="). Returns 0 or -EINVAL. */
static int record_parse_native(struct record_opts *o)
{
    const char *what = optarg;
    if (what == NULL || strcmp(what, "markers") == 0) {
        o->unwind_flags |= UNWIND_NATIVE;
        return 0;
    }
    if (strcmp(what, "full") == 0) {
        o->native_full = true;
        return 0;
    }
    log_error("unknown --native '%s' (use markers or full)", what);
    return -EINVAL;
}

/* Launches COMMAND; returns its pid or -1. */
static pid_t record_launch(char **argv)
{
    pid_t pid = fork();
    if (pid == 0) {
        execvp(argv[0], argv);
        fprintf(stderr, "pyprofd: error: cannot run '%s': %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    return pid;
}

/* Waits until the launched @child has an initialised CPython runtime. */
static int record_wait_python(pid_t child, struct cli_target *t, enum memread_backend backend)
{
    for (int i = 0; i < RECORD_WAIT_START * 100 && !record_stop; i++) {
        int status;
        if (waitpid(child, &status, WNOHANG) == child) {
            log_error("'%d' exited before Python started (status %d)", (int)child,
                      WIFEXITED(status) ? WEXITSTATUS(status) : -1);
            return CLI_EXIT_FAIL;
        }
        struct memread *mr = NULL;
        struct pyruntime rt;
        char why[256];
        bool ready = false;
        if (memread_open(child, backend, &mr) == 0 &&
            pyruntime_locate("/proc", child, mr, &rt, why, sizeof(why)) == 0 && rt.initialized)
            ready = true; /* the runtime has an interpreter */
        memread_free(mr);
        if (ready)
            return cli_attach(child, backend, true, t);
        usleep(10000);
    }
    log_error("process %d did not start a CPython " PYVERSION_SUPPORTED " interpreter within %d s",
              (int)child, RECORD_WAIT_START);
    return CLI_EXIT_FAIL;
}

/* What the HTML report's sidebar says besides the options: the target and the counts. */
/*
 * Async-aware stacks for the attached target @t, or none with a one-line
 * note when its CPython has no asyncio table. Returns 0 or -ENOMEM.
 */
static int record_async_new(const struct record_opts *o, struct cli_target *t, struct asyncio **out)
{
    char why[256];
    *out = NULL;
    if (!o->async_aware)
        return 0;
    int err = asyncio_new(t->unwinder, t->mr, &t->rt, o->async_mode, out, why, sizeof(why));
    if (err == -ENOTSUP) {
        fprintf(stderr,
                "pyprofd: note: %s: async-aware stacks are not available, recording "
                "plain stacks\n",
                why);
        err = 0;
    } else if (err) {
        log_error("%s", why);
    }
    return err;
}

/* Says once what became of the asyncio table (ASYNCIO_INVALID: why). */
static void record_async_note(const struct asyncio *aio, bool *said, pid_t pid)
{
    if (!aio || *said || asyncio_state(aio) != ASYNCIO_INVALID)
        return;
    log_warn("process %d: %s; recording plain stacks", (int)pid, asyncio_why(aio));
    *said = true;
}

static void record_async_summary(const struct asyncio *aio, pid_t pid)
{
    if (!aio)
        return;
    if (asyncio_state(aio) == ASYNCIO_SEARCHING) {
        fprintf(stderr, "pyprofd: note: process %d never imported asyncio: plain stacks only\n",
                (int)pid);
        return;
    }
    struct asyncio_counts c = asyncio_counts(aio);
    if (asyncio_state(aio) == ASYNCIO_ACTIVE)
        fprintf(stderr,
                "pyprofd: async: %" PRIu64 " running-task stacks, %" PRIu64
                " suspended-task stacks, %" PRIu64 " between task steps, %" PRIu64 " torn\n",
                c.logical, c.suspended, c.outside_task, c.torn);
}

/* Reasons and warnings first: the summary is always the last line. */
/* How often the live progress line is redrawn. */
#define RECORD_PROGRESS_NS 250000000ull

/*
 * The live progress line on a terminal: drawn over itself (\r, then erase to
 * the end of the line), never a new line; a few times a second, not per sample.
 */
static void record_progress(struct sampler_counts c, uint64_t elapsed_ns, double duration)
{
    double secs = (double)elapsed_ns / 1e9;
    char of[32] = "";
    if (duration > 0)
        snprintf(of, sizeof(of), " of %g", duration);
    fprintf(stderr,
            "\rpyprofd: %" PRIu64 " samples, %.1f%s s, %.0f Hz, %" PRIu64 " failed, %" PRIu64
            " missed\033[K",
            c.taken, secs, of, secs > 0 ? (double)c.attempts / secs : 0.0, c.failed, c.missed);
    fflush(stderr);
}

static void record_summary(const struct sampler_counts *c, double seconds)
{
    bool by_status = false;
    for (int s = 0; s < SAMPLE_STATUS_COUNT; s++)
        by_status |= c->failed_by[s] != 0;
    if (by_status) { /* (--native=full says its own reasons) */
        fputs("pyprofd: failed samples:", stderr);
        for (int s = 0; s < SAMPLE_STATUS_COUNT; s++)
            if (c->failed_by[s])
                fprintf(stderr, " %s %" PRIu64, status_name((enum sample_status)s),
                        c->failed_by[s]);
        fputc('\n', stderr);
    }
    uint64_t stale = c->tid_pthread + c->tid_only_thread + c->tid_gone + c->tid_unresolved;
    if (stale) { /* a fork without CPython's after-fork hook (docs/unwinder.md §6) */
        const struct {
            uint64_t n;
            const char *what;
        } part[] = {
            {c->tid_pthread, "resolved from the thread's pthread"},
            {c->tid_only_thread, "resolved as its only thread"},
            {c->tid_gone, "of a thread that does not run in it"},
            {c->tid_unresolved, "unresolved (cpu mode: kept without the per-thread CPU check)"},
        };
        fprintf(stderr,
                "pyprofd: %" PRIu64 " thread samples named a thread id not of the process:", stale);
        const char *sep = " ";
        for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(part); i++) {
            if (part[i].n) {
                fprintf(stderr, "%s%" PRIu64 " %s", sep, part[i].n, part[i].what);
                sep = ", ";
            }
        }
        fputc('\n', stderr);
    }
    if (c->missed)
        fprintf(stderr,
                "pyprofd: warning: %" PRIu64 " samples were missed: the sampler could not keep "
                "up with the rate; lower it with --rate\n",
                c->missed);
    double failed_pct = c->attempts ? 100.0 * (double)c->failed / (double)c->attempts : 0;
    uint64_t due = c->attempts + c->missed;
    double missed_pct = due ? 100.0 * (double)c->missed / (double)due : 0;
    fprintf(stderr,
            "pyprofd: %" PRIu64 " samples in %.2f s (%.1f Hz achieved), %" PRIu64
            " failed (%.1f%%), %" PRIu64 " missed (%.1f%%)\n",
            c->taken, seconds, seconds > 0 ? (double)c->attempts / seconds : 0, c->failed,
            failed_pct, c->missed, missed_pct);
}

/*
 * The timer slack of the sampling thread for @a interval_ns: a twentieth of
 * an interval, at least the kernel's default (CLOCK_DEFAULT_SLACK_NS, 50 us)
 * and at most 1 ms. An attempt is made at a random point of its interval;
 * with the slack it may be made up to that much later. The kernel fires a
 * slack timer with any other timer that expires within its slack, so a wider
 * slack biases the samples toward the moments the target's own timers wake
 * its threads: with half an interval (as it was), a thread that slept on a
 * timer and then ran 1 ms in every 10 was sampled as it woke, not while it
 * ran, and its share came out at a tenth of its CPU time when the samples
 * themselves were quick (issue 26's idle check). A twentieth keeps that
 * shift within 5 % of an interval. Above 1 kHz the slack is the kernel's
 * default: a finer one bought nothing but costlier exact timers (record -r
 * 20000 took 16% more CPU per sample with 25 us).
 */
PYPROFD_STATIC uint64_t record_slack_ns(uint64_t interval_ns)
{
    uint64_t slack = interval_ns / 20;
    return slack > RECORD_MAX_SLACK         ? RECORD_MAX_SLACK
           : slack < CLOCK_DEFAULT_SLACK_NS ? CLOCK_DEFAULT_SLACK_NS
                                            : slack;
}

/*
 * How `record` waits: with the slack above. Not needed for correct samples:
 * a failure is said once, at debug level. Not SCHED_BATCH: with every CPU
 * busy its wake-ups wait for the scheduler tick, and the samples alias with
 * the target's own period (docs/agent.md, "Scheduling").
 */
static void record_thread_setup(uint64_t interval_ns)
{
    int err = clock_set_slack(record_slack_ns(interval_ns));
    if (err)
        log_debug("cannot set the timer slack: %s", strerror(-err));
}

/* What the libraries' files gave, when some were refused, stalled or too large. */
static void record_debug_files(const struct native_files *f)
{
    if (!f->debug_refused && !f->debug_stalled && !f->huge_symtabs)
        return;
    fprintf(stderr,
            "pyprofd: native: separate debug files: %" PRIu64 " used, %" PRIu64
            " refused (not a regular file the process could read, or another build), %" PRIu64
            " lookups given up (a filesystem that did not answer); %" PRIu64
            " libraries with symbol tables over %llu MiB, named by offset\n",
            f->debug_found, f->debug_refused, f->debug_stalled, f->huge_symtabs,
            NATIVE_MAX_SYMTAB >> 20);
}

/* The native line; @exact: the samples are thread stacks read while stopped (--blocking). */
static void record_native_summary(const struct nsampler_counts *n, bool exact)
{
    record_debug_files(&n->files);
    double k = n->samples ? 100.0 / (double)n->samples : 0;
    uint64_t kept = n->merged + n->cut + n->python + n->native;
    if (exact) {
        fprintf(stderr,
                "pyprofd: native: %" PRIu64 " thread stacks read while stopped: %" PRIu64
                " joined (%.1f%%), %" PRIu64 " cut at the stack copy, %" PRIu64
                " Python only, %" PRIu64 " C only; not kept: %" PRIu64 " disagreeing, %" PRIu64
                " failed\n",
                n->samples, n->merged, k * (double)n->merged, n->cut, n->python, n->native,
                n->disagree, n->failed);
        return;
    }
    fprintf(stderr,
            "pyprofd: native: %" PRIu64 " kernel samples of %" PRIu64 " threads: %" PRIu64
            " joined (%.1f%%), %" PRIu64 " cut at the stack copy, %" PRIu64 " Python only, %" PRIu64
            " C only; not kept: %" PRIu64 " disagreeing (%.1f%%), %" PRIu64 " late, %" PRIu64
            " failed; %" PRIu64
            " lost; the thread ran on between its sample and the read for %.0f us on average, "
            "at most %.0f us\n",
            n->samples, n->threads, n->merged, k * (double)n->merged, n->cut, n->python, n->native,
            n->disagree, k * (double)n->disagree, n->late, n->failed, n->lost,
            kept ? (double)n->ran_sum_ns / (double)kept / 1e3 : 0.0, (double)n->ran_max_ns / 1e3);
}

/*
 * Records from the kernel's samples (--native=full without --blocking: the
 * sampler's source is the kernel's, sampler_native_fd() readable when
 * samples wait): each kernel sample wakes the loop, which has the sampler
 * read the Python stacks at once. Returns when @end passes, on Ctrl-C, or
 * when the target or the launched @child exits.
 */
static void record_native_loop(const struct record_opts *o, struct sampler *s, uint64_t start,
                               uint64_t end, pid_t *child)
{
    bool progress = !o->realtime_stats && o->progress < 0 && isatty(STDERR_FILENO);
    uint64_t next_progress = start + RECORD_PROGRESS_NS;
    while (!record_stop) {
        uint64_t now = clock_mono_now();
        if (now >= end)
            break;
        uint64_t wait = end - now < 1000000ull ? end - now : 1000000ull;
        struct pollfd p = {.fd = sampler_native_fd(s), .events = POLLIN};
        if (poll(&p, 1, (int)((wait + 999999) / 1000000)) < 0 && errno != EINTR)
            break;
        now = clock_mono_now();
        if (sampler_native_drain(s, now) == -ESRCH)
            break; /* the target exited */
        if (*child && waitpid(*child, NULL, WNOHANG) == *child) {
            *child = 0;
            break;
        }
        if (progress && now >= next_progress) {
            record_progress(sampler_counts(s), now - start, o->duration);
            next_progress = now + RECORD_PROGRESS_NS;
        }
    }
    if (progress)
        fputs("\r\033[K", stderr);
}

/* The trace context: the published one (unwind/otel_thread.h), looked for
 * until found, and the SDK's own (unwind/otel_sdk.h) where none is published. */
struct record_trace {
    struct otel_thread *t;
    struct otel_sdk *sdk;
    bool sdk_tried, sdk_said;
    struct otel_thread_memo memo;
    uint64_t at; /* the next look */
    bool said;   /* a reason it cannot be read was said */
};

#define RECORD_TRACE_RESCAN_NS 1000000000ull

/* Looks for the process's published thread context (announced by its process
 * context, OTEP 4719) and, found, has the sampler read it with each sample. */
static void record_trace_search(const struct record_opts *o, struct record_trace *rt,
                                struct cli_target *t, struct sampler *s, uint64_t now)
{
    if (o->no_trace_context)
        return;
    if (!rt->sdk_tried) {
        rt->sdk_tried = true;
        char why[200];
        int err = otel_sdk_new(t->mr, t->rt.version.minor, t->rt.version.free_threaded, NULL,
                               &rt->sdk, why, sizeof(why));
        if (err == 0 && (err = sampler_set_sdk_context(s, rt->sdk)) != 0) {
            snprintf(why, sizeof(why), "%s", strerror(-err));
            otel_sdk_free(rt->sdk);
            rt->sdk = NULL;
        }
        if (err)
            fprintf(stderr, "pyprofd: trace context: the OpenTelemetry SDK's is not read: %s\n",
                    why);
    }
    if (rt->sdk && !rt->sdk_said && otel_sdk_state(rt->sdk) != OTEL_SDK_SEARCHING) {
        rt->sdk_said = true;
        if (otel_sdk_state(rt->sdk) == OTEL_SDK_ACTIVE)
            fprintf(stderr,
                    "pyprofd: trace context: the OpenTelemetry SDK's current span%s: "
                    "samples labelled trace_id and span_id\n",
                    rt->t ? " (where the published thread context has none)" : "");
        else
            log_warn("process %d: the OpenTelemetry SDK's context cannot be read: %s", (int)t->pid,
                     otel_sdk_why(rt->sdk));
    }
    if (rt->t || now < rt->at)
        return;
    rt->at = now + RECORD_TRACE_RESCAN_NS;
    struct otel_process pc;
    bool gone = false;
    if (otel_process_locate("/proc", t->pid, t->mr, &pc, &gone) != OTEL_PROCESS_OK)
        return;
    bool announced = pc.schema != NULL;
    otel_process_release(&pc);
    if (!announced)
        return; /* no thread context (yet): the publisher announces it there */
    struct otel_thread_locator loc;
    char why[320];
    int err = otel_thread_find("/proc", t->pid, t->mr, &rt->memo, &loc, why, sizeof(why));
    if (err == 0)
        err = otel_thread_new(t->mr, &loc, &rt->t);
    if (err == 0 && (err = sampler_set_trace_context(s, rt->t)) != 0) {
        otel_thread_free(rt->t);
        rt->t = NULL;
    }
    if (err == 0) {
        fprintf(stderr, "pyprofd: trace context: %s in %s: samples labelled trace_id and span_id\n",
                otel_thread_model_name(loc.model), loc.file);
    } else if (err != -ENOENT && !rt->said) {
        rt->said = true;
        log_warn("process %d publishes a thread context that cannot be read: %s", (int)t->pid,
                 err == -ENOMEM ? "out of memory" : why);
    }
}

static void record_trace_summary(const struct record_trace *rt)
{
    if (rt->t) {
        struct otel_thread_stats st = otel_thread_stats(rt->t);
        fprintf(stderr,
                "pyprofd: trace context: %" PRIu64 " of %" PRIu64
                " thread reads in a span, %" PRIu64 " changing while read (not labelled), %" PRIu64
                " unreadable\n",
                st.spans, st.threads, st.torn, st.faults);
    }
    if (rt->sdk && otel_sdk_state(rt->sdk) == OTEL_SDK_ACTIVE) {
        struct otel_sdk_stats st = otel_sdk_stats(rt->sdk);
        fprintf(stderr,
                "pyprofd: trace context (OpenTelemetry SDK): %" PRIu64 " of %" PRIu64
                " thread reads in a span, %" PRIu64 " changing while read (not labelled), %" PRIu64
                " unreadable\n",
                st.spans, st.threads, st.torn, st.faults);
    }
}

static int record_run(const struct record_opts *o, pid_t pid, pid_t child)
{
    struct cli_target t = {0}; /* released at out: even when attaching never happened */
    struct agg *agg = NULL;
    struct timeline *tl = NULL;
    struct cli_sources sources = CLI_SOURCES_INIT;
    struct sampler *s = NULL;
    struct asyncio *aio = NULL;
    struct pyruntime_asyncio_memo aio_memo = {0};
    struct record_trace trace = {0};
    bool async_said = false;
    int status =
        child ? record_wait_python(child, &t, o->backend) : cli_attach(pid, o->backend, true, &t);
    if (status != CLI_EXIT_OK)
        goto out;
    cli_warn_flags(&t, o->unwind_flags);
    pid = t.pid;
    struct record_report rep = {.pid = pid, .free_threaded = t.rt.version.free_threaded};
    pyversion_format(&t.rt.version, rep.python, sizeof(rep.python));
    record_cmdline(pid, rep.command, sizeof(rep.command));
    /* one window for the whole recording: room for more spans than the agent's */
    struct agg_limits lim = agg_limits_default();
    lim.spans = RECORD_MAX_SPANS;
    if (record_async_new(o, &t, &aio) || agg_new(&lim, &agg) ||
        ((record_wants(o, RECORD_SPEEDSCOPE) || record_wants(o, RECORD_GECKO)) &&
         timeline_new(0, &tl))) {
        log_error("out of memory for the profile");
        status = CLI_EXIT_FAIL;
        goto out;
    }
    /* the files are read after the recording, when the target may be gone:
     * its root and working directory are held from now */
    char sources_why[256];
    bool heatmap = record_wants(o, RECORD_HEATMAP);
    if (heatmap && cli_sources_open(pid, &sources, sources_why, sizeof(sources_why)))
        fprintf(stderr, "pyprofd: note: the heatmap will show no source: %s\n", sources_why);
    uint64_t interval = (uint64_t)llround(1e9 / o->rate);
    struct sampler_opts so = {.mode = o->mode,
                              .interval_ns = interval ? interval : 1,
                              .unwind_flags = o->unwind_flags,
                              .blocking = o->blocking,
                              .async = aio,
                              /* the kernel's samples, or with --blocking the exact path */
                              .native_full = o->native_full,
                              .native_stack = o->native_stack,
                              .idle_check = o->idle_check};
    asyncio_search(aio, "/proc", t.pid, &t.rt, &aio_memo);
    uint64_t start = clock_mono_now();
    uint64_t aio_search_at = start + ASYNCIO_RESCAN_NS;
    int64_t start_wall = clock_real_now();
    struct sample_sink window = agg_sink(agg);
    struct record_sink timed = {.inner = window, .agg = agg, .tl = tl};
    if (tl)
        window = record_sink(&timed);
    int err = sampler_new(pid, t.unwinder, &window, &so, start, &s);
    if (err) {
        log_error("cannot sample process %d: %s", (int)pid,
                  err == -EPERM ? "cannot stop its threads with ptrace (--blocking needs "
                                  "CAP_SYS_PTRACE, and no other tracer)"
                                : strerror(-err));
        status = CLI_EXIT_FAIL;
        goto out;
    }
    /* what native: full came to is the sampler's answer (sampler_native()) */
    const char *refused = sampler_native_refused(s);
    if (refused)
        fprintf(stderr,
                "pyprofd: no native frames: %s; sampling the Python frames%s, with <native> "
                "markers\n",
                refused, o->blocking ? "" : " in cpu mode");
    bool kernel = sampler_native_fd(s) >= 0;
    if (!kernel)
        record_trace_search(o, &trace, &t, s, start);
    bool exact_on = !kernel && sampler_native(s) && !refused;
    const char *idle = sampler_idle_check(s);
    if (idle && o->idle_check != IDLE_CHECK_OFF && sampler_idle_how(s) != IDLE_CHECK_PERF)
        fprintf(stderr, "pyprofd: idle threads found by %s\n", idle);
    char ver[32];
    fprintf(stderr, "pyprofd: sampling process %d (CPython %s) at %g Hz, %s mode%s%s%s%s\n",
            (int)pid, pyversion_format(&t.rt.version, ver, sizeof(ver)), o->rate,
            profile_mode_name(o->mode),
            kernel     ? ", C frames from the kernel's samples"
            : exact_on ? ", C frames read from each stopped thread"
                       : "",
            aio ? ", async-aware: " : "", aio ? asyncio_mode_name(o->async_mode) : "",
            o->duration > 0 ? "" : "; Ctrl-C to stop");

    record_thread_setup(so.interval_ns);
    uint64_t end = o->duration > 0 ? start + (uint64_t)(o->duration * 1e9) : UINT64_MAX;
    if (kernel)
        record_native_loop(o, s, start, end, &child);
    uint64_t next_stats = start + 1000000000ull, stats_attempts = 0;
    bool progress = !o->realtime_stats && o->progress < 0 && isatty(STDERR_FILENO);
    uint64_t next_progress = start + RECORD_PROGRESS_NS;
    while (!kernel && !record_stop) {
        uint64_t due = sampler_due(s);
        uint64_t wake = due < end ? due : end;
        uint64_t now = clock_mono_now();
        if (wake > now) { /* a late sampler does not sleep: it catches up */
            struct timespec ts = clock_timespec(wake);
            if (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
                continue; /* a signal: the loop condition decides */
            now = clock_mono_now();
        }
        if (due >= end)
            break; /* the duration is over */
        if (sampler_attempt(s, now) == -ESRCH)
            break; /* the target exited */
        /* asyncio imported since? (between samples, not in an attempt) */
        if (now >= aio_search_at) {
            asyncio_search(aio, "/proc", t.pid, &t.rt, &aio_memo);
            aio_search_at = now + ASYNCIO_RESCAN_NS;
        }
        record_async_note(aio, &async_said, pid);
        record_trace_search(o, &trace, &t, s, now);
        if (child && waitpid(child, NULL, WNOHANG) == child) {
            child = 0;
            break;
        }
        if (o->realtime_stats && now >= next_stats) {
            struct sampler_counts c = sampler_counts(s);
            fprintf(stderr,
                    "pyprofd: %" PRIu64 " Hz, %" PRIu64 " samples, %" PRIu64 " failed, %" PRIu64
                    " missed\n",
                    c.attempts - stats_attempts, c.taken, c.failed, c.missed);
            stats_attempts = c.attempts;
            next_stats += 1000000000ull;
        }
        if (progress && now >= next_progress) {
            record_progress(sampler_counts(s), now - start, o->duration);
            next_progress = now + RECORD_PROGRESS_NS;
        }
    }
    if (progress)
        fputs("\r\033[K", stderr); /* the summary takes the line's place */
    uint64_t stop = clock_mono_now();
    struct nsampler_counts nc = {0};
    if (kernel || exact_on)
        (void)sampler_native_counts(s, &nc);
    struct sampler_counts c = sampler_counts_final(s);
    char idle_said[320] = "";
    if (sampler_idle_check(s))
        snprintf(idle_said, sizeof(idle_said), "%s", sampler_idle_check(s));
    sampler_free(s); /* detach before writing, so a blocked target runs again */
    s = NULL;

    char defpath[64];
    const char *paths[RECORD_MAX_OUTPUTS];
    size_t npaths = o->noutputs;
    memcpy(paths, o->outputs, sizeof(paths));
    if (npaths == 0) {
        snprintf(defpath, sizeof(defpath), "pyprofd-%d.%s", (int)pid,
                 record_format_info(o->format == RECORD_AUTO ? RECORD_PPROF : o->format)->ext);
        paths[npaths++] = defpath;
    }
    rep.counts = c;
    rep.seconds = (double)(stop - start) / 1e9;
    struct record_result res = {.o = o,
                                .rep = &rep,
                                .agg = agg,
                                .tl = tl,
                                .sources = heatmap ? &sources : NULL,
                                .mode = o->mode,
                                .interval_ns = so.interval_ns,
                                .start_wall = start_wall,
                                .start_mono = start,
                                .duration_ns = (int64_t)(stop - start)};
    if (tl && timeline_dropped(tl))
        log_warn("%" PRIu64 " samples past the first %u are counted but not placed in time in "
                 "the speedscope and gecko outputs",
                 timeline_dropped(tl), TIMELINE_DEFAULT_MAX);
    for (size_t i = 0; i < npaths; i++) {
        if (record_write(&res, paths[i]))
            status = CLI_EXIT_FAIL;
        else
            fprintf(stderr, "pyprofd: wrote %s (%s)\n", paths[i],
                    record_format_info(record_format_of(o, paths[i]))->name);
    }
    record_async_summary(aio, pid);
    record_trace_summary(&trace);
    if (agg_stats(agg).spans_over)
        log_warn("%" PRIu64 " samples in spans past the first %u distinct ones are not labelled "
                 "with their span",
                 agg_stats(agg).spans_over, RECORD_MAX_SPANS);
    if (o->native_full && nc.samples)
        record_native_summary(&nc, exact_on);
    record_summary(&c, (double)(stop - start) / 1e9);
    if (idle_said[0])
        fprintf(stderr,
                "pyprofd: idle threads (%s): %" PRIu64 " samples made without a read, %" PRIu64
                " thread stacks counted again\n",
                idle_said, c.saved, c.reused);
out:
    if (child > 0) {
        int st;
        waitpid(child, &st, 0); /* the launched command runs to its end */
    }
    sampler_free(s);
    otel_thread_free(trace.t);
    otel_sdk_free(trace.sdk);
    asyncio_free(aio);
    agg_free(agg);
    timeline_free(tl);
    cli_sources_close(&sources);
    cli_detach(&t);
    return status;
}

int cli_record(int argc, char **argv)
{
    enum {
        OPT_MODE = 256,
        OPT_NATIVE,
        OPT_NO_GC,
        OPT_OPCODES,
        OPT_BLOCKING,
        OPT_FORMAT,
        OPT_STATS,
        OPT_BACKEND,
        OPT_ASYNC,
        OPT_ASYNC_MODE,
        OPT_NO_PROGRESS,
        OPT_NATIVE_STACK,
        OPT_IDLE_CHECK,
        OPT_NO_TRACE
    };
    static const struct option opts[] = {
        {"rate", required_argument, NULL, 'r'},
        {"duration", required_argument, NULL, 'd'},
        {"mode", required_argument, NULL, OPT_MODE},
        {"all-threads", no_argument, NULL, 'a'},
        {"native", optional_argument, NULL, OPT_NATIVE},
        {"native-stack", required_argument, NULL, OPT_NATIVE_STACK},
        {"no-gc", no_argument, NULL, OPT_NO_GC},
        {"opcodes", no_argument, NULL, OPT_OPCODES},
        {"blocking", no_argument, NULL, OPT_BLOCKING},
        {"output", required_argument, NULL, 'o'},
        {"format", required_argument, NULL, OPT_FORMAT},
        {"realtime-stats", no_argument, NULL, OPT_STATS},
        {"no-progress", no_argument, NULL, OPT_NO_PROGRESS},
        {"backend", required_argument, NULL, OPT_BACKEND},
        {"async-aware", no_argument, NULL, OPT_ASYNC},
        {"async-mode", required_argument, NULL, OPT_ASYNC_MODE},
        {"idle-check", required_argument, NULL, OPT_IDLE_CHECK},
        {"no-trace-context", no_argument, NULL, OPT_NO_TRACE},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct record_opts o = {
        .rate = 100, .mode = PROFILE_WALL, .progress = -1, .idle_check = IDLE_CHECK_PERF};
    int c;
    optind = 1;
    /* options may follow the PID (getopt permutes); "--" still ends them, so
     * COMMAND's own options stay its own */
    while ((c = getopt_long(argc, argv, "r:d:ao:h", opts, NULL)) != -1) {
        switch (c) {
        case 'r': {
            int err = record_parse_rate(optarg, &o.rate);
            if (err) {
                log_error(err == -ERANGE ? "rate '%s' is out of range (0.01 Hz to 1 MHz)"
                                         : "'%s' is not a rate (examples: 250, 10k, 10khz)",
                          optarg);
                return CLI_EXIT_USAGE;
            }
            break;
        }
        case 'd': {
            char *end = NULL;
            o.duration = strtod(optarg, &end);
            if (end == optarg || *end || !(o.duration > 0) || !isfinite(o.duration) ||
                o.duration > 1e9) {
                log_error("'%s' is not a duration in seconds", optarg);
                return CLI_EXIT_USAGE;
            }
            break;
        }
        case OPT_MODE:
            if (profile_mode_parse(optarg, &o.mode)) {
                log_error("unknown mode '%s' (use wall, cpu, gil or exception)", optarg);
                return CLI_EXIT_USAGE;
            }
            o.mode_given = true;
            break;
        case 'a':
            o.unwind_flags |= UNWIND_ALL_THREADS;
            break;
        case OPT_NATIVE:
            if (record_parse_native(&o))
                return CLI_EXIT_USAGE;
            break;
        case OPT_NATIVE_STACK: {
            char *end = NULL;
            unsigned long v = strtoul(optarg, &end, 10);
            if (end == optarg || *end || v < PERFSAMPLE_STACK_MIN || v > PERFSAMPLE_STACK_MAX) {
                log_error("--native-stack '%s': give bytes from %u to %u", optarg,
                          PERFSAMPLE_STACK_MIN, PERFSAMPLE_STACK_MAX);
                return CLI_EXIT_USAGE;
            }
            o.native_stack = (uint32_t)v;
            break;
        }
        case OPT_OPCODES:
            o.unwind_flags |= UNWIND_OPCODES;
            break;
        case OPT_NO_GC:
            o.unwind_flags |= UNWIND_NO_GC;
            break;
        case OPT_BLOCKING:
            o.blocking = true;
            break;
        case OPT_NO_TRACE:
            o.no_trace_context = true;
            break;
        case OPT_IDLE_CHECK:
            if (strcmp(optarg, "perf") == 0)
                o.idle_check = IDLE_CHECK_PERF;
            else if (strcmp(optarg, "schedstat") == 0)
                o.idle_check = IDLE_CHECK_SCHEDSTAT;
            else if (strcmp(optarg, "off") == 0)
                o.idle_check = IDLE_CHECK_OFF;
            else {
                log_error("unknown --idle-check '%s' (use perf, schedstat or off)", optarg);
                return CLI_EXIT_USAGE;
            }
            break;
        case 'o':
            if (o.noutputs == RECORD_MAX_OUTPUTS) {
                log_error("at most %d outputs (-o)", RECORD_MAX_OUTPUTS);
                return CLI_EXIT_USAGE;
            }
            o.outputs[o.noutputs++] = optarg;
            break;
        case OPT_FORMAT: {
            const struct record_format_info *fi = record_format_named(optarg);
            if (!fi) {
                log_error("unknown format '%s' (use pprof, collapsed, html, pstats, speedscope, "
                          "gecko or heatmap)",
                          optarg);
                return CLI_EXIT_USAGE;
            }
            o.format = fi->format;
            break;
        }
        case OPT_STATS:
            o.realtime_stats = true;
            break;
        case OPT_NO_PROGRESS:
            o.progress = 0;
            break;
        case OPT_BACKEND:
            if (cli_parse_backend(optarg, &o.backend))
                return CLI_EXIT_USAGE;
            break;
        case OPT_ASYNC:
            o.async_aware = true;
            break;
        case OPT_ASYNC_MODE:
            if (asyncio_mode_parse(optarg, &o.async_mode)) {
                log_error("unknown async mode '%s' (use running or all)", optarg);
                return CLI_EXIT_USAGE;
            }
            o.async_aware = true;
            break;
        case 'h':
            record_usage(stdout);
            return CLI_EXIT_OK;
        default:
            record_usage(stderr);
            return CLI_EXIT_USAGE;
        }
    }
    if (o.async_aware && o.async_mode == ASYNCIO_ALL && o.mode != PROFILE_WALL) {
        log_error("--async-mode all counts suspended tasks, which wait: they are not on a CPU, "
                  "hold no GIL and handle no exception, so it cannot combine with --mode %s "
                  "(use --mode wall, or --async-mode running)",
                  profile_mode_name(o.mode));
        return CLI_EXIT_USAGE;
    }
    if (o.native_full && o.async_aware) {
        log_error("--native=full does not combine with --async-aware yet");
        return CLI_EXIT_USAGE;
    }
    if (o.native_full && !o.blocking) {
        /* the kernel samples a thread only while it runs: cpu time */
        if (o.mode_given && o.mode != PROFILE_CPU) {
            log_error("--native=full samples each thread every period of its CPU time, which is "
                      "cpu mode: it cannot combine with --mode %s (with --blocking it can: each "
                      "sample stops the threads and reads their registers)",
                      profile_mode_name(o.mode));
            return CLI_EXIT_USAGE;
        }
        o.mode = PROFILE_CPU;
    }
    if (o.format != RECORD_AUTO && o.noutputs > 1) {
        log_error("--format names the format of one output; with several -o, each file's "
                  "format comes from its name (.pb.gz, .html, .pstats, .speedscope.json, "
                  ".gecko.json, .heatmap.html, else folded stacks)");
        return CLI_EXIT_USAGE;
    }
    for (size_t i = 0; i < o.noutputs; i++)
        for (size_t j = 0; j < i; j++)
            if (strcmp(o.outputs[i], o.outputs[j]) == 0) {
                log_error("'%s' is named twice with -o", o.outputs[i]);
                return CLI_EXIT_USAGE;
            }
    if (o.blocking && o.rate > 10000)
        log_warn("--blocking at %g Hz stops the target more than 10,000 times a second; "
                 "expect it to slow down a lot",
                 o.rate);

    bool command = optind > 1 && strcmp(argv[optind - 1], "--") == 0;
    if (optind >= argc) {
        log_error("record needs a PID, or -- and a command to run");
        record_usage(stderr);
        return CLI_EXIT_USAGE;
    }
    pid_t pid = 0, child = 0;
    if (!command) {
        if (optind + 1 != argc) {
            log_error("record takes one PID (use -- to run a command)");
            return CLI_EXIT_USAGE;
        }
        if (cli_parse_pid(argv[optind], &pid))
            return CLI_EXIT_USAGE;
    }

    struct sigaction sa = {.sa_handler = record_on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    record_stop = 0;
    if (command) {
        child = record_launch(argv + optind);
        if (child < 0) {
            log_error("cannot start '%s': %s", argv[optind], strerror(errno));
            return CLI_EXIT_FAIL;
        }
    }
    return record_run(&o, pid, child);
}
