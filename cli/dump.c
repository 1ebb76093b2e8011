/* SPDX-License-Identifier: MIT */
/*
 * dump.c: `pyprofd dump PID [-a] [--native] [--no-gc] [--opcodes] [--async-aware] [--json]`:
 * one sample of a live process, printed for people (frames leaf first as
 * "function (file:line)") or as one JSON object (docs/unwinder.md has the
 * schema); with --async-aware also each thread's asyncio task tree
 * (docs/async.md). In text, what the target named (functions, files, task
 * names, its interpreter's path) is shown escaped (base/termtext.h): the
 * output may go to a terminal, which must not obey it. In JSON
 * (base/jsonw.h) every control character is a \u escape: C0, DEL, and the
 * C1 controls, which JSON allows raw (the same strings to a JSON reader).
 */
#include "base/compat.h"

#include <getopt.h>
#include <unistd.h>

#include "base/jsonw.h"
#include "base/log.h"
#include "base/readfile.h"
#include "base/strnum.h"
#include "base/termtext.h"
#include "cli/cli.h"
#include "sampler/runwatch.h"
#include "sampler/threadstat.h"
#include "unwind/asyncio.h"

/* A torn read is retried: the stack moved while it was copied. */
#define DUMP_ATTEMPTS 20

/* Task-tree depth shown; deeper (or looping) awaits are cut. */
#define DUMP_TREE_DEPTH 64

struct dump_opts {
    unsigned flags; /* enum unwind_flags */
    bool json;
    bool async_aware;
    enum memread_backend backend;
};

static void dump_usage(FILE *out)
{
    fputs("usage: pyprofd dump [options] PID\n"
          "\n"
          "Prints the Python stack of every sampled thread of a live CPython " PYVERSION_SUPPORTED
          "\n"
          "process, leaf first.\n"
          "\n"
          "  -a, --all-threads  every thread of every interpreter (default: the main thread)\n"
          "      --native       show <native> where C code called back into Python\n"
          "      --no-gc        no <GC> marker while the interpreter collects garbage\n"
          "      --opcodes      each frame's current instruction, as the interpreter has\n"
          "                     it now (a specialized form, and what it specializes)\n"
          "      --async-aware  also each thread's asyncio tasks, as trees of who awaits\n"
          "                     whom, with their coroutine stacks (CPython 3.14+)\n"
          "      --json         one JSON object instead of text\n"
          "      --backend B    memory reader: auto (default), vm or procmem\n",
          out);
}

/* Whether process @pid is in a PID namespace of its own (its ids are not ours). */
static bool dump_nested(pid_t pid)
{
    uint64_t ns = 0;
    return threadstat_ns_tid("/proc", pid, pid, &ns) == 0 && ns != (uint64_t)pid;
}

/*
 * A thread's state as dump reports it. 'R' in /proc is running or waiting
 * for a CPU (preempted, throttled by a CPU quota); the two are told apart by
 * whether the thread's CPU time (schedstat) moves over a scheduler tick
 * (RUNWATCH_TICK_NS: a running thread is charged at every tick), which costs dump one tick's
 * wait when some thread is 'R'. Where schedstat cannot be read, 'R' stays
 * "runnable": which of the two it was is not known.
 */
enum dump_cpu {
    DUMP_CPU_UNKNOWN = -1,
    DUMP_CPU_IDLE,
    DUMP_CPU_ON,       /* charged CPU time during dump's look */
    DUMP_CPU_WAITING,  /* 'R' with no CPU time over a tick: waiting for a CPU */
    DUMP_CPU_RUNNABLE, /* 'R', no schedstat to tell which */
};

struct dump_thread_cpu {
    uint64_t run_ns;
    pid_t host_tid;
    bool have_run;
};

/* A thread's CPU time (ns) from its schedstat; false when it cannot be read. */
static bool dump_run_ns(pid_t pid, pid_t host_tid, uint64_t *run_ns)
{
    char path[64], buf[128];
    size_t len = 0;
    uint64_t v[3];
    snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", (int)pid, (int)host_tid);
    if (readfile_into(path, buf, sizeof(buf), &len, READFILE_INTO_KERNEL) ||
        threadstat_parse_schedstat(buf, len, v))
        return false;
    *run_ns = v[0];
    return true;
}

/* Each thread's state (enum dump_cpu) into @a out, after one tick's look when some is 'R'. */
static void dump_cpu_states(pid_t pid, const struct unwind_result *r, int *out)
{
    struct dump_thread_cpu c[UNWIND_MAX_THREADS];
    bool any = false;
    for (size_t i = 0; i < r->nthreads; i++) {
        char state;
        c[i] = (struct dump_thread_cpu){0};
        out[i] = DUMP_CPU_UNKNOWN;
        if (threadstat_host_tid("/proc", pid, r->threads[i].native_thread_id, &c[i].host_tid) ||
            threadstat_state("/proc", pid, c[i].host_tid, &state))
            continue;
        out[i] = state == 'R' ? DUMP_CPU_RUNNABLE : DUMP_CPU_IDLE;
        if (state == 'R' && dump_run_ns(pid, c[i].host_tid, &c[i].run_ns)) {
            c[i].have_run = true;
            any = true;
        }
    }
    if (!any)
        return;
    struct timespec ts = {.tv_nsec = (long)RUNWATCH_TICK_NS};
    (void)nanosleep(&ts, NULL);
    for (size_t i = 0; i < r->nthreads; i++) {
        uint64_t now;
        if (c[i].have_run && dump_run_ns(pid, c[i].host_tid, &now))
            out[i] = now != c[i].run_ns ? DUMP_CPU_ON : DUMP_CPU_WAITING;
    }
}

/* The target's threads, for the unwinder's check of the TIDs its thread states name. */
static int dump_tasks(void *ctx, uint64_t *tids, size_t max, size_t *n)
{
    const pid_t *pid = ctx;
    return threadstat_list_ns("/proc", *pid, tids, max, n);
}

/* The number after @key ("Tgid:") in /proc/@pid/status, or -1. */
static int64_t dump_status_field(int64_t pid, const char *key)
{
    char path[64], buf[4096];
    size_t len = 0;
    snprintf(path, sizeof(path), "/proc/%" PRId64 "/status", pid);
    if (readfile_into(path, buf, sizeof(buf), &len, READFILE_INTO_KERNEL) != 0)
        return -1; /* (NUL-terminated) */
    const char *at = strstr(buf, key);
    if (!at || (at != buf && at[-1] != '\n'))
        return -1;
    at += strlen(key);
    while (*at == ' ' || *at == '\t')
        at++;
    char num[24];
    size_t k = 0;
    while (k + 1 < sizeof(num) && at[k] >= '0' && at[k] <= '9') {
        num[k] = at[k];
        k++;
    }
    num[k] = '\0';
    int64_t v;
    return k && strnum_parse_i64(num, 0, INT32_MAX, &v) == 0 ? v : -1;
}

/*
 * What the TID a thread state names (@stated, not a thread of @pid) is, as
 * far as this PID namespace can tell: a thread of another process (its
 * parent's, after a fork without CPython's after-fork hook), or none now.
 * In a PID namespace of its own the target's ids cannot be looked up here.
 */
static void dump_whose(pid_t pid, bool nested, uint64_t stated, char *buf, size_t len)
{
    int64_t tgid = nested || stated == 0 || stated > INT32_MAX
                       ? -1
                       : dump_status_field((int64_t)stated, "Tgid:");
    if (stated == 0)
        snprintf(buf, len, "no thread id at all");
    else if (nested)
        snprintf(buf, len, "not a thread of this process");
    else if (tgid < 0)
        snprintf(buf, len, "no thread that runs now");
    else if (tgid == dump_status_field(pid, "PPid:"))
        snprintf(buf, len, "a thread of its parent, process %" PRId64, tgid);
    else
        snprintf(buf, len, "a thread of process %" PRId64, tgid);
}

/* How a thread's TID was resolved, in words; NULL for the thread state's own. */
static const char *dump_tid_how(enum unwind_tid_source s)
{
    switch (s) {
    case UNWIND_TID_PTHREAD:
        return "resolved from the TID in its pthread";
    case UNWIND_TID_ONLY_THREAD:
        return "resolved as the process's only thread";
    case UNWIND_TID_GONE:
        return "neither is its pthread's TID: a thread state left from a thread that does not "
               "run in this process";
    case UNWIND_TID_UNRESOLVED:
        return "not resolved";
    default:
        return NULL;
    }
}

/* Whether a thread of @r was read torn (status_torn(): worth reading again). */
static bool dump_torn(const struct unwind_result *r)
{
    for (size_t i = 0; i < r->nthreads; i++) {
        if (status_torn(r->threads[i].status))
            return true;
    }
    return false;
}

/* A position field: null when unknown. */
static void dump_json_pos(struct jsonw *w, const char *key, int32_t v)
{
    if (v == LINETABLE_UNKNOWN)
        jsonw_null(w, key);
    else
        jsonw_int(w, key, v);
}

static void dump_json_frames(struct jsonw *w, const struct unwind_frame *frames, size_t n)
{
    jsonw_array(w, "frames");
    for (size_t k = 0; k < n; k++) {
        const struct unwind_frame *f = &frames[k];
        jsonw_object(w, NULL);
        jsonw_string(w, "function", f->function);
        jsonw_string(w, "file", f->file);
        jsonw_int(w, "line", f->pos.line == LINETABLE_UNKNOWN ? 0 : f->pos.line);
        dump_json_pos(w, "end_line", f->pos.end_line);
        dump_json_pos(w, "column", f->pos.col);
        dump_json_pos(w, "end_column", f->pos.end_col);
        if (f->opname) { /* --opcodes */
            jsonw_object(w, "opcode");
            jsonw_int(w, "number", f->opcode);
            jsonw_string(w, "name", f->opname);
            jsonw_string(w, "base", f->opbase);
            jsonw_end(w);
        }
        jsonw_end(w);
    }
    jsonw_end(w);
}

static void dump_json_addr(struct jsonw *w, const char *key, uint64_t raddr)
{
    char buf[24];
    snprintf(buf, sizeof(buf), "0x%" PRIx64, raddr);
    jsonw_string(w, key, buf);
}

/* The tasks of thread @i: [{"id", "name", "running", "awaited_by", "frames"}]. */
static void dump_json_tasks(struct jsonw *w, const struct asyncio_result *ar, size_t i)
{
    jsonw_array(w, "tasks");
    for (size_t k = 0; k < ar->ntasks; k++) {
        const struct asyncio_task *tk = &ar->tasks[k];
        if (tk->thread != i)
            continue;
        jsonw_object(w, NULL);
        dump_json_addr(w, "id", tk->raddr);
        jsonw_string(w, "name", tk->name);
        jsonw_bool(w, "running", tk->running);
        jsonw_array(w, "awaited_by");
        for (size_t k2 = 0; k2 < tk->nwaiters; k2++)
            dump_json_addr(w, NULL, tk->waiters[k2]);
        jsonw_end(w);
        dump_json_frames(w, tk->frames, tk->nframes);
        jsonw_end(w);
    }
    jsonw_end(w);
}

/*
 * One JSON object on one line. JSONW_TERMINAL: DEL and the C1 controls
 * U+0080-U+009F, valid in JSON strings as they are but not on a terminal,
 * are written as \u escapes too, like the C0 controls.
 */
static void dump_print_json(const struct cli_target *t, const struct unwind_result *r,
                            const int *on_cpu, const struct asyncio_result *ar,
                            const char *async_note)
{
    char ver[32];
    struct jsonw w;
    jsonw_init_file(&w, stdout, JSONW_TERMINAL | JSONW_NOT_HTML);
    jsonw_object(&w, NULL);
    jsonw_int(&w, "pid", t->pid);
    jsonw_string(&w, "python", pyversion_format(&t->rt.version, ver, sizeof(ver)));
    bool ft = t->rt.version.free_threaded;
    jsonw_bool(&w, "free_threaded", ft);
    jsonw_array(&w, "threads");
    for (size_t i = 0; i < r->nthreads; i++) {
        const struct unwind_thread *th = &r->threads[i];
        jsonw_object(&w, NULL);
        jsonw_int(&w, "thread_id", (int64_t)th->native_thread_id);
        jsonw_string(&w, "thread_id_source", unwind_tid_source_name(th->tid_source));
        if (th->tid_source != UNWIND_TID_OWN)
            jsonw_int(&w, "stated_thread_id", (int64_t)th->stated_thread_id);
        jsonw_bool(&w, "main", th->flags & UNWIND_THREAD_MAIN);
        jsonw_int(&w, "interpreter_id", th->interp_id);
        jsonw_object(&w, "status");
        /* a free-threaded build has no GIL: the flag is the thread's
         * `attached` bit there, which in a GIL build only the holder has */
        bool attached = th->flags & UNWIND_THREAD_HOLDS_GIL;
        jsonw_bool(&w, "holds_gil", attached && !ft);
        jsonw_bool(&w, "attached", attached);
        jsonw_bool(&w, "gil_requested", th->flags & UNWIND_THREAD_GIL_REQUESTED);
        jsonw_bool(&w, "on_cpu", on_cpu[i] == DUMP_CPU_ON);
        jsonw_bool(&w, "waiting_for_cpu", on_cpu[i] == DUMP_CPU_WAITING);
        jsonw_bool(&w, "has_exception", th->flags & UNWIND_THREAD_HAS_EXCEPTION);
        jsonw_end(&w);
        if (th->status != SAMPLE_OK)
            jsonw_string(&w, "error", status_name(th->status));
        dump_json_frames(&w, th->frames, th->nframes);
        if (ar)
            dump_json_tasks(&w, ar, i);
        jsonw_end(&w);
    }
    jsonw_end(&w);
    if (async_note)
        jsonw_string(&w, "async", async_note);
    jsonw_end(&w);
    if (!jsonw_finish(&w))
        putchar('\n');
}

static void dump_print_frames(const struct unwind_frame *frames, size_t n, int indent)
{
    for (size_t k = 0; k < n; k++) {
        const struct unwind_frame *f = &frames[k];
        printf("%*s", indent, "");
        termtext_fputs(f->function, stdout); /* a marker's too: <task NAME> */
        if (f->kind == UNWIND_FRAME_NATIVE || f->kind == UNWIND_FRAME_GC ||
            f->kind == UNWIND_FRAME_TASK) {
            putchar('\n');
            continue;
        }
        fputs(" (", stdout);
        termtext_fputs(f->file, stdout);
        printf(":%d)", f->pos.line == LINETABLE_UNKNOWN ? 0 : f->pos.line);
        if (f->opname && strcmp(f->opname, f->opbase) != 0)
            printf(" %s, specialized from %s", f->opname, f->opbase);
        else if (f->opname)
            printf(" %s", f->opname);
        putchar('\n');
    }
}

static bool dump_awaits(const struct asyncio_task *child, uint64_t parent)
{
    for (size_t w = 0; w < child->nwaiters; w++) {
        if (child->waiters[w] == parent)
            return true;
    }
    return false;
}

/* Task @k and, below it, the tasks awaited by it (they list it as a waiter). */
static void dump_print_task(const struct asyncio_result *ar, size_t k, int depth)
{
    const struct asyncio_task *tk = &ar->tasks[k];
    printf("%*s<task ", 4 + 4 * depth, "");
    termtext_fputs(tk->name, stdout);
    printf(">%s\n", tk->running ? " (running)" : "");
    dump_print_frames(tk->frames, tk->nframes, 8 + 4 * depth);
    if (depth == DUMP_TREE_DEPTH) {
        printf("%*s...\n", 8 + 4 * depth, "");
        return;
    }
    for (size_t c = 0; c < ar->ntasks; c++) {
        if (c != k && dump_awaits(&ar->tasks[c], tk->raddr))
            dump_print_task(ar, c, depth + 1);
    }
}

/* Thread @i's tasks as trees: roots are tasks no task of the sample awaits
 * (their waiters, if any, are not tasks the sample saw). */
static void dump_print_tasks(const struct asyncio_result *ar, size_t i)
{
    bool header = false;
    for (size_t k = 0; k < ar->ntasks; k++) {
        const struct asyncio_task *tk = &ar->tasks[k];
        if (tk->thread != i)
            continue;
        bool root = true;
        for (size_t w = 0; w < tk->nwaiters && root; w++) {
            for (size_t p = 0; p < ar->ntasks && root; p++)
                root = ar->tasks[p].raddr != tk->waiters[w];
        }
        if (!root)
            continue;
        if (!header)
            printf("  Tasks (awaiting tasks above the tasks they await):\n");
        header = true;
        dump_print_task(ar, k, 0);
    }
}

static void dump_print_text(const struct cli_target *t, const struct unwind_result *r,
                            const int *on_cpu, const struct asyncio_result *ar,
                            const char *async_note, bool nested)
{
    char ver[32];
    bool ft = t->rt.version.free_threaded;
    printf("Process %d: CPython %s%s (", (int)t->pid,
           pyversion_format(&t->rt.version, ver, sizeof(ver)), ft ? " free-threaded" : "");
    termtext_fputs(t->rt.path, stdout);
    fputs(")\n", stdout);
    for (size_t i = 0; i < r->nthreads; i++) {
        const struct unwind_thread *th = &r->threads[i];
        bool main = th->flags & UNWIND_THREAD_MAIN;
        const char *how = dump_tid_how(th->tid_source);
        printf("\nThread %" PRIu64 "%s", th->native_thread_id, main && !how ? " (main)" : "");
        if (how) {
            /* "(main; the thread state names 1200, a thread of its parent,
             * process 1200: resolved from the TID in its pthread)" */
            char whose[96];
            dump_whose(t->pid, nested, th->stated_thread_id, whose, sizeof(whose));
            printf(" (%sthe thread state names %" PRIu64 ", %s: %s)", main ? "main; " : "",
                   th->stated_thread_id, whose, how);
        }
        if (th->interp_id != 0) /* a sub-interpreter's (the main one is 0) */
            printf(" (interpreter %" PRId64 ")", th->interp_id);
        const char *sep = " [";
        static const struct {
            unsigned flag;
            const char *name;
        } names[] = {
            {UNWIND_THREAD_HOLDS_GIL, "holds GIL"},
            {UNWIND_THREAD_GIL_REQUESTED, "waits for GIL"},
            {UNWIND_THREAD_HAS_EXCEPTION, "handling exception"},
            {UNWIND_THREAD_IN_GC, "in GC"},
        };
        for (size_t k = 0; k < PYPROFD_ARRAY_SIZE(names); k++) {
            if (th->flags & names[k].flag) {
                printf("%s%s", sep,
                       ft && names[k].flag == UNWIND_THREAD_HOLDS_GIL ? "attached" : names[k].name);
                sep = ", ";
            }
        }
        static const char *const cpu_names[] = {
            [DUMP_CPU_IDLE] = "idle",
            [DUMP_CPU_ON] = "on CPU",
            [DUMP_CPU_WAITING] = "waiting for a CPU",
            [DUMP_CPU_RUNNABLE] = "runnable",
        };
        if (on_cpu[i] >= 0) {
            printf("%s%s", sep, cpu_names[on_cpu[i]]);
            sep = ", ";
        }
        printf("%s\n", sep[0] == ',' ? "]" : "");
        if (th->status != SAMPLE_OK)
            printf("    <sample failed: %s>\n", status_describe(th->status));
        dump_print_frames(th->frames, th->nframes, 4);
        if (ar)
            dump_print_tasks(ar, i);
    }
    if (async_note) {
        fputs("\nasyncio: ", stdout);
        termtext_fputs(async_note, stdout);
        putchar('\n');
    }
}

/*
 * With --async-aware, the task walker for @t (set up before sampling: the
 * running loop and task come with the thread states), or why there is none
 * in @note. Returns 0, or -1 after logging a hard failure.
 */
static int dump_async_new(const struct cli_target *t, struct asyncio **aio, char *note,
                          size_t note_len)
{
    int err = asyncio_new(t->unwinder, t->mr, &t->rt, ASYNCIO_ALL, aio, note, note_len);
    if (err == -ENOTSUP)
        return 0; /* note: "CPython 3.13.x has no asyncio debug table" */
    if (err) {
        log_error("%s", note);
        return -1;
    }
    struct pyruntime_asyncio_memo memo = {0};
    asyncio_search(*aio, "/proc", t->pid, &t->rt, &memo);
    note[0] = '\0';
    if (asyncio_state(*aio) == ASYNCIO_SEARCHING)
        snprintf(note, note_len, "not imported by the process (no asyncio debug table mapped)");
    else if (asyncio_state(*aio) == ASYNCIO_INVALID)
        snprintf(note, note_len, "%s", asyncio_why(*aio));
    return 0;
}

static int dump_run(pid_t pid, const struct dump_opts *o)
{
    struct cli_target t;
    struct asyncio *aio = NULL;
    char note[256] = "";
    int status = cli_attach(pid, o->backend, true, &t);
    if (status != CLI_EXIT_OK)
        goto out;
    cli_warn_flags(&t, o->flags);
    /* each thread state's TID checked against the process's threads */
    unwinder_set_tasks(t.unwinder, dump_tasks, &t.pid);
    if (o->async_aware && dump_async_new(&t, &aio, note, sizeof(note))) {
        status = CLI_EXIT_FAIL;
        goto out;
    }
    const struct unwind_result *r = NULL;
    enum sample_status why = SAMPLE_OK;
    int err = 0;
    for (int attempt = 0; attempt < DUMP_ATTEMPTS; attempt++) {
        err = unwinder_sample(t.unwinder, o->flags, &r, &why);
        if (err || !dump_torn(r))
            break;
        usleep(1000);
    }
    if (err) {
        status = CLI_EXIT_FAIL;
        if (why == SAMPLE_NOT_INITIALIZED)
            log_error("the interpreter of process %d is not initialized yet", (int)pid);
        else if (why == SAMPLE_FINALIZING)
            log_error("the interpreter of process %d is finalizing (shutting down)", (int)pid);
        else if (why == SAMPLE_PROCESS_GONE)
            log_error("no such process: %d (it exited)", (int)pid);
        else
            log_error("cannot sample process %d: %s", (int)pid, status_describe(why));
        goto out;
    }
    /* the task graph right after the stacks (ALL: every task of the threads) */
    const struct asyncio_result *ar = NULL;
    if (aio && asyncio_state(aio) == ASYNCIO_ACTIVE && asyncio_sample(aio, r, &ar))
        ar = NULL;
    int on_cpu[UNWIND_MAX_THREADS];
    dump_cpu_states(pid, r, on_cpu);
    const char *shown = o->async_aware && note[0] ? note : NULL;
    if (o->json)
        dump_print_json(&t, r, on_cpu, ar, shown);
    else
        dump_print_text(&t, r, on_cpu, ar, shown, dump_nested(pid));
    if (dump_torn(r))
        status = CLI_EXIT_FAIL;
out:
    asyncio_free(aio);
    cli_detach(&t);
    return status;
}

int cli_dump(int argc, char **argv)
{
    enum { OPT_NATIVE = 256, OPT_NO_GC, OPT_JSON, OPT_BACKEND, OPT_ASYNC, OPT_OPCODES };
    static const struct option opts[] = {
        {"all-threads", no_argument, NULL, 'a'},
        {"native", no_argument, NULL, OPT_NATIVE},
        {"no-gc", no_argument, NULL, OPT_NO_GC},
        {"opcodes", no_argument, NULL, OPT_OPCODES},
        {"json", no_argument, NULL, OPT_JSON},
        {"async-aware", no_argument, NULL, OPT_ASYNC},
        {"backend", required_argument, NULL, OPT_BACKEND},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct dump_opts o = {0};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "ah", opts, NULL)) != -1) {
        switch (c) {
        case 'a':
            o.flags |= UNWIND_ALL_THREADS;
            break;
        case OPT_NATIVE:
            o.flags |= UNWIND_NATIVE;
            break;
        case OPT_NO_GC:
            o.flags |= UNWIND_NO_GC;
            break;
        case OPT_OPCODES:
            o.flags |= UNWIND_OPCODES;
            break;
        case OPT_JSON:
            o.json = true;
            break;
        case OPT_ASYNC:
            o.async_aware = true;
            break;
        case OPT_BACKEND:
            if (cli_parse_backend(optarg, &o.backend))
                return CLI_EXIT_USAGE;
            break;
        case 'h':
            dump_usage(stdout);
            return CLI_EXIT_OK;
        default:
            dump_usage(stderr);
            return CLI_EXIT_USAGE;
        }
    }
    if (optind + 1 != argc) {
        log_error(optind >= argc ? "dump needs a PID" : "dump takes one PID");
        dump_usage(stderr);
        return CLI_EXIT_USAGE;
    }
    pid_t pid;
    if (cli_parse_pid(argv[optind], &pid))
        return CLI_EXIT_USAGE;
    return dump_run(pid, &o);
}
