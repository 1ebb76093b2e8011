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
 *
 * What the target named is shown escaped (base/termtext.h): a function or
 * file name cannot send the terminal escape sequences, and a cut to the
 * terminal's width counts the escaped text. The terminal stays usable: on
 * Ctrl-Z (SIGTSTP) it is restored before top stops, and set up again and
 * redrawn when it continues. When the process exits or executes another
 * program the view is drawn a last time with a line saying so, and top ends
 * (status 0). When stdout is closed under it (`top | head -1`) top ends at
 * once with status 141, as if SIGPIPE had ended it, whether or not SIGPIPE is
 * ignored; another write error ends it with status 1.
 */
#include "base/compat.h"

#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/hash.h"
#include "base/log.h"
#include "base/termtext.h"
#include "base/utf8.h"
#include "cli/cli.h"
#include "discovery/execid.h"
#include "sampler/sampler.h"

#define TOP_MAX_FUNCTIONS 4096u /* distinct functions told apart (a power of two) */
#define TOP_MAX_WINDOW    60u   /* seconds of buckets */
#define TOP_NAME          160u
#define TOP_FILE          192u
#define TOP_EXEC_CHECK_NS 100000000ull /* how often the program image is compared */

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
    bool by_total;
};

/* The terminal while top runs: keys in cbreak mode, the cursor hidden. */
struct top_term {
    bool tty;  /* stdout is a terminal: redraw in place */
    bool keys; /* stdin is one too, and took cbreak mode */
    bool on;   /* set up now (off while stopped, and at the end) */
    struct termios saved;
};

static volatile sig_atomic_t top_stop, top_tstp, top_cont;

static void top_on_signal(int sig)
{
    (void)sig;
    top_stop = 1;
}

static void top_on_tstp(int sig)
{
    (void)sig;
    top_tstp = 1;
}

static void top_on_cont(int sig)
{
    (void)sig;
    top_cont = 1;
}

/*
 * Keys without Enter and no echo (ISIG stays: Ctrl-C and Ctrl-Z still send
 * their signals), the cursor hidden. The settings to restore are read when
 * the terminal was left to the shell (at start, after Ctrl-Z: the shell may
 * have changed them meanwhile); while set up, this only applies the mode
 * again (after a SIGSTOP that top did not see coming, the shell may have
 * reset it, and what the terminal has now is not what to restore).
 */
static void top_term_enter(struct top_term *tt)
{
    if (!tt->tty)
        return;
    if (!tt->on)
        tt->keys = isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &tt->saved) == 0;
    if (tt->keys) {
        struct termios raw = tt->saved;
        raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
        raw.c_cc[VMIN] = 0;
        raw.c_cc[VTIME] = 0;
        tt->keys = tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
    }
    fputs("\033[?25l", stdout); /* hide the cursor while redrawing */
    fflush(stdout);
    tt->on = true;
}

/* The terminal as top found it: its settings, the cursor shown. */
static void top_term_leave(struct top_term *tt)
{
    if (!tt->on)
        return;
    if (tt->keys)
        tcsetattr(STDIN_FILENO, TCSANOW, &tt->saved);
    fputs("\033[?25h", stdout);
    fflush(stdout);
    tt->on = false;
}

/*
 * Ctrl-Z: the terminal restored, then stopped as SIGTSTP would have stopped
 * it (the default action, for this one signal); returns once continued,
 * with the handler back. The caller sets the terminal up again.
 */
static void top_suspend(struct top_term *tt)
{
    top_term_leave(tt);
    struct sigaction dfl = {.sa_handler = SIG_DFL}, ours = {.sa_handler = top_on_tstp};
    sigemptyset(&dfl.sa_mask);
    sigemptyset(&ours.sa_mask);
    sigaction(SIGTSTP, &dfl, NULL);
    raise(SIGTSTP); /* stops here; an orphaned process group is not stopped */
    sigaction(SIGTSTP, &ours, NULL);
}

static void top_usage(FILE *out)
{
    fputs("usage: pyprofd top [options] PID\n"
          "\n"
          "A live view of the hottest functions of a CPython " PYVERSION_SUPPORTED
          " process: each\n"
          "function's own share (the leaf of the sampled stacks) and total share (on\n"
          "the stack) over a sliding window, with the achieved rate, failed and missed\n"
          "samples. Keys on a terminal: o sort by own, t sort by total, q quit. When\n"
          "stdout is not a terminal it prints a plain table every refresh instead.\n"
          "It ends, showing the last table, when the process exits or runs another\n"
          "program; names are shown with control characters escaped (\\x1b).\n"
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
            size_t n = utf8_cut(f->function, strlen(f->function), sizeof(s->name) - 1);
            memcpy(s->name, f->function, n);
            s->name[n] = '\0';
            n = utf8_cut(f->file, strlen(f->file), sizeof(s->file) - 1);
            memcpy(s->file, f->file, n);
            s->file[n] = '\0';
            s->line = f->first_line;
            return i;
        }
    }
    return TOP_MAX_FUNCTIONS - 1;
}

/*
 * top's sink (sampler/sampler.h): each thread sample counts its leaf as own
 * and every function on its stack once as total, in the current bucket. No
 * repeat: the stack is looked at every time.
 */
static int top_sink_add(void *arg, const struct sink_sample *x)
{
    struct top *t = arg;
    uint32_t *own = t->own + (size_t)t->cur * TOP_MAX_FUNCTIONS;
    uint32_t *total = t->total + (size_t)t->cur * TOP_MAX_FUNCTIONS;
    t->stamp++;
    for (size_t k = 0; k < x->nframes; k++) {
        uint32_t s = top_slot(t, &x->frames[k]);
        if (k == 0)
            own[s]++;
        if (t->fns[s].stamp != t->stamp) { /* recursion counts once */
            t->fns[s].stamp = t->stamp;
            total[s]++;
        }
    }
    t->bucket_samples[t->cur]++;
    return 0;
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

/* What a write error on stdout means for top's exit status (see the top of the file). */
static int top_write_status(int err)
{
    if (err == EPIPE)
        return CLI_EXIT_PIPE; /* the reader is gone, on purpose: nothing to say */
    log_error("cannot write the view to stdout: %s", strerror(err));
    return CLI_EXIT_FAIL;
}

/*
 * Draws the view; @a final, when not NULL, is a last line saying why the
 * view ends. Returns 0, or the errno of a failed write.
 */
static int top_draw(const struct top *t, struct top_row *rows, const struct cli_target *tg,
                    const struct sampler_counts *c, double rate, double elapsed, bool tty,
                    unsigned nrows, const char *final)
{
    uint64_t samples;
    size_t n = top_rows(t, rows, &samples);
    char ver[32];
    unsigned width = 100;
    if (tty) {
        struct winsize ws;
        if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 8) {
            nrows = ws.ws_row - (final ? 8u : 6u);
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
    double achieved = elapsed > 0 ? (double)c->attempts / elapsed : 0;
    printf("pyprofd top: process %d, CPython %s, every thread, last %u s\n", (int)tg->pid,
           pyversion_format(&tg->rt.version, ver, sizeof(ver)), t->window);
    printf("%.0f Hz asked, %.1f Hz achieved, %" PRIu64 " thread samples in the window, %" PRIu64
           " failed, %" PRIu64 " missed%s\n\n",
           rate, achieved, samples, c->failed, c->missed,
           tty && !final ? t->by_total ? "   [sorted by total: o own, q quit]"
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
        /* the names as the target wrote them, escaped; on a terminal cut to
         * the columns left of the line, counted on the escaped text */
        char shown[TERMTEXT_MAX_GROWTH * sizeof(where)];
        (void)termtext_escape(where, strlen(where), shown, sizeof(shown),
                              tty ? (size_t)width - 18 : SIZE_MAX, NULL);
        printf("%6.1f%% %6.1f%%  %s\n", samples ? 100.0 * (double)rows[i].own / (double)samples : 0,
               samples ? 100.0 * (double)rows[i].total / (double)samples : 0, shown);
    }
    if (final)
        printf("\n%s\n", final);
    if (!tty)
        putchar('\n');
    if (fflush(stdout) == EOF || ferror(stdout))
        return errno ? errno : EIO;
    return 0;
}

/*
 * Whether process @a pid now runs another program than @a id (read anew
 * while it is not known, zeroed); if so, says which in @a final.
 */
static bool top_executed(pid_t pid, struct memread *mr, struct exec_id *id, char *final, size_t len)
{
    if (id->random_raddr == 0 && execid_read("/proc", pid, mr, id))
        memset(id, 0, sizeof(*id));
    bool same = true;
    if (execid_check(mr, id, &same) || same)
        return false; /* gone (the next sample says so) or unchanged */
    char link[64], exe[PATH_MAX] = "", shown[TERMTEXT_MAX_GROWTH * 256];
    snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
    ssize_t n = readlink(link, exe, sizeof(exe) - 1);
    exe[n > 0 ? n : 0] = '\0';
    termtext_str(exe, shown, sizeof(shown));
    snprintf(final, len, "process %d executed a new program%s%s%s: the table above is final",
             (int)pid, exe[0] ? " (" : "", shown, exe[0] ? ")" : "");
    return true;
}

/*
 * 141 when stdout is a pipe or socket whose reader has gone (poll says
 * POLLERR), 1 when it is a terminal that hung up, 0 while it can be written.
 */
static int top_output_gone(void)
{
    struct pollfd pfd = {.fd = STDOUT_FILENO, .events = POLLOUT};
    if (poll(&pfd, 1, 0) != 1 || !(pfd.revents & (POLLERR | POLLHUP | POLLNVAL)))
        return 0;
    struct stat st;
    if (fstat(STDOUT_FILENO, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)))
        return CLI_EXIT_PIPE;
    log_error("cannot write the view to stdout: it was closed");
    return CLI_EXIT_FAIL;
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
    struct top_term tt = {.tty = isatty(STDOUT_FILENO)};
    struct exec_id exec = {0};
    struct sampler *s = NULL;
    char final[TERMTEXT_MAX_GROWTH * 256 + 128] = "";
    t.fns = alloc_calloc(TOP_MAX_FUNCTIONS, sizeof(*t.fns));
    t.own = alloc_calloc((size_t)window * TOP_MAX_FUNCTIONS, sizeof(uint32_t));
    t.total = alloc_calloc((size_t)window * TOP_MAX_FUNCTIONS, sizeof(uint32_t));
    struct top_row *rows = alloc_calloc(TOP_MAX_FUNCTIONS, sizeof(*rows));
    if (!t.fns || !t.own || !t.total || !rows) {
        log_error("out of memory");
        status = CLI_EXIT_FAIL;
        goto out;
    }
    if (execid_read("/proc", pid, tg.mr, &exec)) /* known later, then (top_executed()) */
        memset(&exec, 0, sizeof(exec));

    struct sigaction sa = {.sa_handler = top_on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    top_stop = top_tstp = top_cont = 0;
    if (tt.tty) {
        struct sigaction tstp = {.sa_handler = top_on_tstp}, cont = {.sa_handler = top_on_cont};
        sigemptyset(&tstp.sa_mask);
        sigemptyset(&cont.sa_mask);
        sigaction(SIGTSTP, &tstp, NULL);
        sigaction(SIGCONT, &cont, NULL);
    }
    top_term_enter(&tt);

    /* the agent's sampler, with top's counts as its sink: the same schedule
     * (jittered, caught up, missed counted), torn reads read again, failures
     * counted by attempt */
    uint64_t start = clock_mono_now();
    struct sample_sink sink = {.add = top_sink_add, .arg = &t};
    uint64_t interval = (uint64_t)(1e9 / rate);
    struct sampler_opts so = {.mode = PROFILE_WALL,
                              .interval_ns = interval ? interval : 1,
                              .unwind_flags = UNWIND_ALL_THREADS};
    int err = sampler_new(pid, tg.unwinder, &sink, &so, start, &s);
    if (err) {
        log_error("cannot sample process %d: %s", (int)pid, strerror(-err));
        status = CLI_EXIT_FAIL;
        goto out;
    }
    uint64_t end = duration > 0 ? start + (uint64_t)(duration * 1e9) : UINT64_MAX;
    uint64_t next_bucket = start + 1000000000ull;
    uint64_t next_draw = next_bucket;
    uint64_t next_exec_check = start + TOP_EXEC_CHECK_NS;
    uint64_t failed_seen = 0;
    while (!top_stop) {
        if (top_tstp) { /* Ctrl-Z */
            top_tstp = 0;
            uint64_t stopped = clock_mono_now();
            top_suspend(&tt);
            /* the time stopped is not missed samples, nor part of the rate:
             * the attempts due meanwhile are let pass on purpose (skipped) */
            uint64_t now = clock_mono_now(), due = sampler_due(s);
            start += now - stopped;
            if (end != UINT64_MAX)
                end += now - stopped;
            if (now > due)
                sampler_skip(s, now, (now - due) / so.interval_ns + 1);
            top_cont = 1;
        }
        if (top_cont) { /* continued (fg, or SIGCONT after a SIGSTOP) */
            top_cont = 0;
            top_term_enter(&tt);
            next_draw = clock_mono_now();
        }
        uint64_t now = clock_mono_now();
        if (now >= end)
            break;
        uint64_t wake = sampler_due(s);
        if (wake > now) { /* a late sampler does not sleep: it catches up */
            struct timespec ts = clock_timespec(wake < end ? wake : end);
            if (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
                continue;
            now = clock_mono_now();
            if (now < wake)
                continue; /* woken for the end */
        }
        if (sampler_attempt(s, now) == -ESRCH) {
            snprintf(final, sizeof(final), "process %d exited: the table above is final", (int)pid);
            break;
        }
        /* another program now? Checked often, and at once when an attempt
         * failed, so that its samples do not pass for the old program's */
        struct sampler_counts counts = sampler_counts(s);
        bool failed = counts.failed != failed_seen;
        failed_seen = counts.failed;
        if ((failed || now >= next_exec_check) &&
            top_executed(pid, tg.mr, &exec, final, sizeof(final)))
            break;
        if (now >= next_exec_check)
            next_exec_check = now + TOP_EXEC_CHECK_NS;
        for (unsigned moved = 0; now >= next_bucket; moved++) {
            if (moved < t.window) /* after a long stop: every bucket cleared once is enough */
                top_advance(&t);
            next_bucket += 1000000000ull;
        }
        if (tt.keys && tt.on) {
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
        status = top_output_gone(); /* `top | head -1`: the reader left */
        if (status != CLI_EXIT_OK)
            goto out;
        if (now >= next_draw) {
            err = top_draw(&t, rows, &tg, &counts, rate, (double)(now - start) / 1e9, tt.tty, nrows,
                           NULL);
            if (err) {
                status = top_write_status(err);
                goto out;
            }
            next_draw = now + 1000000000ull;
        }
    }
    /* the last view: after the process ended, and without a terminal also
     * when the duration or a signal ended it before a refresh */
    if (final[0] || !tt.tty) {
        struct sampler_counts counts = sampler_counts_final(s);
        err = top_draw(&t, rows, &tg, &counts, rate, (double)(clock_mono_now() - start) / 1e9,
                       tt.tty, nrows, final[0] ? final : NULL);
        if (err)
            status = top_write_status(err);
    }
    if (tt.tty && tt.on)
        fputs("\n", stdout);
out:
    top_term_leave(&tt);
    if (tt.tty) {
        signal(SIGTSTP, SIG_DFL);
        signal(SIGCONT, SIG_DFL);
    }
    sampler_free(s);
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
