/* SPDX-License-Identifier: MIT */
/*
 * top.c: `pyprofd top PID`: a live view of the hottest functions of a
 * process, like py-spy's top. Every thread is sampled at a fixed rate; each
 * sample counts its leaf function as "own" and every function on its stack
 * (once, however deep the recursion) as "total", into one-second buckets, and
 * the view sums the last WINDOW seconds. On a terminal it redraws in place
 * once a second and reads keys (o / t: sort by own / total; q or Ctrl-C:
 * quit), restoring the terminal on the way out; otherwise it prints a plain
 * table every refresh, for logs and pipes.
 *
 * Functions are keyed by the unwinder's code_id (the same id: the same
 * function, file and first line); at most TOP_MAX_FUNCTIONS are told apart,
 * later ones count under "<other>". Nothing is allocated per sample.
 */
#include "base/compat.h"

#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/hash.h"
#include "base/log.h"
#include "cli/cli.h"
#include "sampler/schedule.h"

#define TOP_MAX_FUNCTIONS 4096u /* distinct functions told apart (a power of two) */
#define TOP_MAX_WINDOW    60u   /* seconds of buckets */
#define TOP_NAME          160u
#define TOP_FILE          192u

struct top_fn {
    uint64_t code_id; /* 0: free slot */
    char name[TOP_NAME];
    char file[TOP_FILE];
    int32_t line;   /* first line */
    uint32_t stamp; /* the last sample that counted it in total */
};

struct top {
    struct top_fn *fns;                      /* TOP_MAX_FUNCTIONS, open addressing by code_id */
    uint32_t *own, *total;                   /* [bucket][function] */
    uint64_t bucket_samples[TOP_MAX_WINDOW]; /* thread samples per bucket */
    unsigned window, cur;
    uint32_t stamp;
    uint64_t attempts, failed, missed;
    bool by_total;
};

static volatile sig_atomic_t top_stop;

static void top_on_signal(int sig)
{
    (void)sig;
    top_stop = 1;
}

static void top_usage(FILE *out)
{
    fputs("usage: pyprofd top [options] PID\n"
          "\n"
          "A live view of the hottest functions of a CPython 3.13-3.15 process: each\n"
          "function's own share (the leaf of the sampled stacks) and total share (on\n"
          "the stack) over a sliding window, with the achieved rate, failed and missed\n"
          "samples. Keys on a terminal: o sort by own, t sort by total, q quit. When\n"
          "stdout is not a terminal it prints a plain table every refresh instead.\n"
          "\n"
          "  -r, --rate HZ        samples per second (default 100)\n"
          "  -w, --window SECS    the sliding window (default 10, at most 60)\n"
          "  -d, --duration SECS  stop after this long (default: until q, Ctrl-C or exit)\n"
          "  -n, --rows N         rows when stdout is not a terminal (default 10)\n"
          "      --backend B      memory reader: auto (default), vm or procmem\n",
          out);
}

/* The slot of @f's function, or TOP_MAX_FUNCTIONS - 1 ("<other>") when full. */
static uint32_t top_slot(struct top *t, const struct unwind_frame *f)
{
    uint64_t id = f->code_id ? f->code_id : (uint64_t)(uintptr_t)f->function;
    uint32_t mask = TOP_MAX_FUNCTIONS - 2; /* the last slot is "<other>" */
    uint32_t i = (uint32_t)hash_fmix64(id) & mask;
    for (unsigned probes = 0; probes < 64; probes++, i = (i + 1) & mask) {
        struct top_fn *s = &t->fns[i];
        if (s->code_id == id)
            return i;
        if (s->code_id == 0) {
            s->code_id = id;
            snprintf(s->name, sizeof(s->name), "%s", f->function);
            snprintf(s->file, sizeof(s->file), "%s", f->file);
            s->line = f->first_line;
            return i;
        }
    }
    return TOP_MAX_FUNCTIONS - 1;
}

/* Whether a thread of @r was read torn (and so is worth reading again). */
static bool top_torn(const struct unwind_result *r)
{
    for (size_t i = 0; i < r->nthreads; i++) {
        if (r->threads[i].status == SAMPLE_INCOMPLETE || r->threads[i].status == SAMPLE_CYCLE)
            return true;
    }
    return false;
}

static void top_count(struct top *t, const struct unwind_result *r)
{
    uint32_t *own = t->own + (size_t)t->cur * TOP_MAX_FUNCTIONS;
    uint32_t *total = t->total + (size_t)t->cur * TOP_MAX_FUNCTIONS;
    for (size_t i = 0; i < r->nthreads; i++) {
        const struct unwind_thread *th = &r->threads[i];
        if (th->status != SAMPLE_OK) {
            t->failed++;
            continue;
        }
        if (th->nframes == 0)
            continue; /* no Python running in it */
        t->stamp++;
        for (size_t k = 0; k < th->nframes; k++) {
            uint32_t s = top_slot(t, &th->frames[k]);
            if (k == 0)
                own[s]++;
            if (t->fns[s].stamp != t->stamp) { /* recursion counts once */
                t->fns[s].stamp = t->stamp;
                total[s]++;
            }
        }
        t->bucket_samples[t->cur]++;
    }
}

/* Moves to a fresh bucket (the oldest one's counts are dropped). */
static void top_advance(struct top *t)
{
    t->cur = (t->cur + 1) % t->window;
    memset(t->own + (size_t)t->cur * TOP_MAX_FUNCTIONS, 0, TOP_MAX_FUNCTIONS * sizeof(uint32_t));
    memset(t->total + (size_t)t->cur * TOP_MAX_FUNCTIONS, 0, TOP_MAX_FUNCTIONS * sizeof(uint32_t));
    t->bucket_samples[t->cur] = 0;
}

struct top_row {
    uint32_t slot;
    uint64_t own, total;
};

static int top_cmp_own(const void *a, const void *b)
{
    const struct top_row *x = a, *y = b;
    if (x->own != y->own)
        return x->own < y->own ? 1 : -1;
    return x->total < y->total ? 1 : x->total > y->total ? -1 : 0;
}

static int top_cmp_total(const void *a, const void *b)
{
    const struct top_row *x = a, *y = b;
    if (x->total != y->total)
        return x->total < y->total ? 1 : -1;
    return x->own < y->own ? 1 : x->own > y->own ? -1 : 0;
}

/* Sums the window into @rows (sorted); returns how many and the sample total. */
static size_t top_rows(const struct top *t, struct top_row *rows, uint64_t *samples)
{
    size_t n = 0;
    *samples = 0;
    for (unsigned b = 0; b < t->window; b++)
        *samples += t->bucket_samples[b];
    for (uint32_t s = 0; s < TOP_MAX_FUNCTIONS; s++) {
        if (s != TOP_MAX_FUNCTIONS - 1 && t->fns[s].code_id == 0)
            continue;
        uint64_t own = 0, total = 0;
        for (unsigned b = 0; b < t->window; b++) {
            own += t->own[(size_t)b * TOP_MAX_FUNCTIONS + s];
            total += t->total[(size_t)b * TOP_MAX_FUNCTIONS + s];
        }
        if (total)
            rows[n++] = (struct top_row){s, own, total};
    }
    qsort(rows, n, sizeof(*rows), t->by_total ? top_cmp_total : top_cmp_own);
    return n;
}

static void top_draw(const struct top *t, struct top_row *rows, const struct cli_target *tg,
                     double rate, double elapsed, bool tty, unsigned nrows)
{
    uint64_t samples;
    size_t n = top_rows(t, rows, &samples);
    char ver[32];
    unsigned width = 100;
    if (tty) {
        struct winsize ws;
        if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 6) {
            nrows = ws.ws_row - 6u;
            width = ws.ws_col > 40 ? ws.ws_col : 40;
        }
        fputs("\033[H\033[2J", stdout);
    } else {
        time_t now = time(NULL);
        struct tm tm;
        char when[16];
        strftime(when, sizeof(when), "%H:%M:%S", localtime_r(&now, &tm));
        printf("--- %s\n", when);
    }
    double achieved = elapsed > 0 ? (double)t->attempts / elapsed : 0;
    printf("pyprofd top: process %d, CPython %s, every thread, last %u s\n", (int)tg->pid,
           pyversion_format(&tg->rt.version, ver, sizeof(ver)), t->window);
    printf("%.0f Hz asked, %.1f Hz achieved, %" PRIu64 " thread samples in the window, %" PRIu64
           " failed, %" PRIu64 " missed%s\n\n",
           rate, achieved, samples, t->failed, t->missed,
           tty ? t->by_total ? "   [sorted by total: o own, q quit]"
                             : "   [sorted by own: t total, q quit]"
               : "");
    printf("%7s %7s  %s\n", "OWN", "TOTAL", "FUNCTION (FILE:LINE)");
    for (size_t i = 0; i < n && i < nrows; i++) {
        const struct top_fn *f = &t->fns[rows[i].slot];
        char where[TOP_NAME + TOP_FILE + 32];
        if (rows[i].slot == TOP_MAX_FUNCTIONS - 1)
            snprintf(where, sizeof(where), "<other>");
        else if (f->file[0] == '~')
            snprintf(where, sizeof(where), "%s", f->name);
        else
            snprintf(where, sizeof(where), "%s (%s:%d)", f->name, f->file, (int)f->line);
        if (tty && strlen(where) > width - 18)
            where[width - 18] = '\0';
        printf("%6.1f%% %6.1f%%  %s\n", samples ? 100.0 * (double)rows[i].own / (double)samples : 0,
               samples ? 100.0 * (double)rows[i].total / (double)samples : 0, where);
    }
    if (!tty)
        putchar('\n');
    fflush(stdout);
}

static int top_run(pid_t pid, double rate, unsigned window, double duration, unsigned nrows,
                   enum memread_backend backend)
{
    struct cli_target tg;
    int status = cli_attach(pid, backend, true, &tg);
    if (status != CLI_EXIT_OK) {
        cli_detach(&tg);
        return status;
    }
    struct top t = {.window = window};
    t.fns = alloc_calloc(TOP_MAX_FUNCTIONS, sizeof(*t.fns));
    t.own = alloc_calloc((size_t)window * TOP_MAX_FUNCTIONS, sizeof(uint32_t));
    t.total = alloc_calloc((size_t)window * TOP_MAX_FUNCTIONS, sizeof(uint32_t));
    struct top_row *rows = alloc_calloc(TOP_MAX_FUNCTIONS, sizeof(*rows));
    if (!t.fns || !t.own || !t.total || !rows) {
        log_error("out of memory");
        status = CLI_EXIT_FAIL;
        goto out;
    }
    bool tty = isatty(STDOUT_FILENO);
    bool keys = tty && isatty(STDIN_FILENO);
    struct termios saved;
    if (keys && tcgetattr(STDIN_FILENO, &saved) == 0) {
        struct termios raw = saved;
        raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
        raw.c_cc[VMIN] = 0;
        raw.c_cc[VTIME] = 0;
        if (tcsetattr(STDIN_FILENO, TCSANOW, &raw) != 0)
            keys = false;
    } else {
        keys = false;
    }
    if (tty)
        fputs("\033[?25l", stdout); /* hide the cursor while redrawing */

    struct sigaction sa = {.sa_handler = top_on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    top_stop = 0;

    uint64_t interval = (uint64_t)(1e9 / rate);
    uint64_t start = clock_mono_now(), due = start;
    /* as in the sampler, each attempt after the first at a random point of its
     * interval (schedule_jitter()): on the grid, a target whose period is the
     * interval (100 Hz, the default) would be seen at one phase only */
    uint64_t jitter = 0, rng = (start ^ ((uint64_t)(uint32_t)pid << 32)) | 1u;
    uint64_t end = duration > 0 ? start + (uint64_t)(duration * 1e9) : UINT64_MAX;
    uint64_t next_bucket = start + 1000000000ull;
    uint64_t next_draw = next_bucket;
    while (!top_stop) {
        uint64_t now = clock_mono_now();
        if (now >= end)
            break;
        uint64_t wake = due + jitter;
        if (wake > now) {
            struct timespec ts = clock_timespec(wake < end ? wake : end);
            if (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
                continue;
            now = clock_mono_now();
            if (now < wake)
                continue;                   /* woken for the end */
        } else if (now - wake > interval) { /* late by whole intervals: missed, not caught up */
            uint64_t late = (now - due) / interval;
            t.missed += late;
            due += late * interval;
        }
        due += interval;
        jitter = schedule_jitter(due, interval, now, &rng);
        const struct unwind_result *r = NULL;
        enum sample_status st;
        t.attempts++;
        /* a stack that changed while it was read is read again at once, one
         * time, as the sampler does: fast-changing stacks would be left out */
        int err = 0;
        for (int attempt = 0; attempt < 2; attempt++) {
            err = unwinder_sample(tg.unwinder, UNWIND_ALL_THREADS, &r, &st);
            if (err || !top_torn(r))
                break;
        }
        if (err == -ESRCH || st == SAMPLE_PROCESS_GONE) {
            if (tty)
                fputs("\033[?25h", stdout);
            log_info("process %d exited", (int)pid);
            break;
        }
        if (err)
            t.failed++;
        else
            top_count(&t, r);
        while (now >= next_bucket) {
            top_advance(&t);
            next_bucket += 1000000000ull;
        }
        if (keys) {
            struct pollfd pfd = {.fd = STDIN_FILENO, .events = POLLIN};
            char c;
            while (poll(&pfd, 1, 0) == 1 && read(STDIN_FILENO, &c, 1) == 1) {
                if (c == 'q' || c == 'Q')
                    top_stop = 1;
                else if (c == 'o' || c == 't') {
                    t.by_total = c == 't';
                    next_draw = now; /* show the new order at once */
                }
            }
        }
        if (now >= next_draw) {
            top_draw(&t, rows, &tg, rate, (double)(now - start) / 1e9, tty, nrows);
            next_draw = now + 1000000000ull;
        }
    }
    if (!tty) /* the last window, also when it ended before a refresh */
        top_draw(&t, rows, &tg, rate, (double)(clock_mono_now() - start) / 1e9, false, nrows);
    if (keys)
        tcsetattr(STDIN_FILENO, TCSANOW, &saved);
    if (tty)
        fputs("\033[?25h\n", stdout);
out:
    alloc_free(rows);
    alloc_free(t.fns);
    alloc_free(t.own);
    alloc_free(t.total);
    cli_detach(&tg);
    return status;
}

int cli_top(int argc, char **argv)
{
    enum { OPT_BACKEND = 256 };
    static const struct option opts[] = {
        {"rate", required_argument, NULL, 'r'},
        {"window", required_argument, NULL, 'w'},
        {"duration", required_argument, NULL, 'd'},
        {"rows", required_argument, NULL, 'n'},
        {"backend", required_argument, NULL, OPT_BACKEND},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    double rate = 100, duration = 0;
    unsigned window = 10, nrows = 10;
    enum memread_backend backend = MEMREAD_AUTO;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "r:w:d:n:h", opts, NULL)) != -1) {
        char *end = NULL;
        switch (c) {
        case 'r':
            rate = strtod(optarg, &end);
            if (end == optarg || *end || !(rate >= 1 && rate <= 10000)) {
                log_error("bad --rate '%s': want 1 to 10000 samples per second", optarg);
                return CLI_EXIT_USAGE;
            }
            break;
        case 'w': {
            unsigned long w = strtoul(optarg, &end, 10);
            if (end == optarg || *end || w < 1 || w > TOP_MAX_WINDOW) {
                log_error("bad --window '%s': want 1 to %u seconds", optarg, TOP_MAX_WINDOW);
                return CLI_EXIT_USAGE;
            }
            window = (unsigned)w;
            break;
        }
        case 'd':
            duration = strtod(optarg, &end);
            if (end == optarg || *end || !(duration > 0)) {
                log_error("bad --duration '%s': want seconds", optarg);
                return CLI_EXIT_USAGE;
            }
            break;
        case 'n': {
            unsigned long n = strtoul(optarg, &end, 10);
            if (end == optarg || *end || n < 1 || n > 1000) {
                log_error("bad --rows '%s': want 1 to 1000", optarg);
                return CLI_EXIT_USAGE;
            }
            nrows = (unsigned)n;
            break;
        }
        case OPT_BACKEND:
            if (cli_parse_backend(optarg, &backend))
                return CLI_EXIT_USAGE;
            break;
        case 'h':
            top_usage(stdout);
            return CLI_EXIT_OK;
        default:
            top_usage(stderr);
            return CLI_EXIT_USAGE;
        }
    }
    if (optind + 1 != argc) {
        log_error(optind >= argc ? "top needs a PID" : "top takes one PID");
        top_usage(stderr);
        return CLI_EXIT_USAGE;
    }
    pid_t pid;
    if (cli_parse_pid(argv[optind], &pid))
        return CLI_EXIT_USAGE;
    return top_run(pid, rate, window, duration, nrows, backend);
}
