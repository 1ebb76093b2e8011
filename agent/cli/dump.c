/* SPDX-License-Identifier: MIT */
/*
 * dump.c: `pyprofd dump PID [-a] [--native] [--no-gc] [--json]`: one sample of
 * a live process, printed for people (frames leaf first as
 * "function (file:line)") or as one JSON object (docs/unwinder.md has the
 * schema).
 */
#include "base/compat.h"

#include <getopt.h>
#include <json-c/json.h>
#include <unistd.h>

#include "base/log.h"
#include "cli/cli.h"
#include "sampler/threadstat.h"

/* A torn read is retried: the stack moved while it was copied. */
#define DUMP_ATTEMPTS 20

struct dump_opts {
    unsigned flags; /* enum unwind_flags */
    bool json;
    enum memread_backend backend;
};

static void dump_usage(FILE *out)
{
    fputs("usage: pyprofd dump [options] PID\n"
          "\n"
          "Prints the Python stack of every sampled thread of a live process, leaf first.\n"
          "\n"
          "  -a, --all-threads  every thread of every interpreter (default: the main thread)\n"
          "      --native       show <native> where C code called back into Python\n"
          "      --no-gc        no <GC> marker while the interpreter collects garbage\n"
          "      --json         one JSON object instead of text\n"
          "      --backend B    memory reader: auto (default), vm or procmem\n",
          out);
}

/* On-CPU state of a thread, or -1 when it cannot be read. */
static int dump_on_cpu(pid_t pid, uint64_t native_tid)
{
    pid_t host_tid;
    char state;
    if (threadstat_host_tid("/proc", pid, native_tid, &host_tid) ||
        threadstat_state("/proc", pid, host_tid, &state))
        return -1;
    return state == 'R';
}

static bool dump_torn(const struct unwind_result *r)
{
    for (size_t i = 0; i < r->nthreads; i++) {
        enum sample_status s = r->threads[i].status;
        if (s == SAMPLE_INCOMPLETE || s == SAMPLE_CYCLE || s == SAMPLE_READ_FAULT ||
            s == SAMPLE_BAD_FRAME)
            return true;
    }
    return false;
}

static json_object *dump_json_pos(int32_t v)
{
    return v == LINETABLE_UNKNOWN ? NULL : json_object_new_int(v);
}

static void dump_print_json(const struct cli_target *t, const struct unwind_result *r,
                            const int *on_cpu)
{
    char ver[32];
    json_object *root = json_object_new_object();
    json_object_object_add(root, "pid", json_object_new_int(t->pid));
    json_object_object_add(
        root, "python", json_object_new_string(pyversion_format(&t->rt.version, ver, sizeof(ver))));
    json_object *threads = json_object_new_array();
    for (size_t i = 0; i < r->nthreads; i++) {
        const struct unwind_thread *th = &r->threads[i];
        json_object *jt = json_object_new_object();
        json_object_object_add(jt, "thread_id",
                               json_object_new_int64((int64_t)th->native_thread_id));
        json_object_object_add(jt, "main", json_object_new_boolean(th->flags & UNWIND_THREAD_MAIN));
        json_object *st = json_object_new_object();
        json_object_object_add(st, "holds_gil",
                               json_object_new_boolean(th->flags & UNWIND_THREAD_HOLDS_GIL));
        json_object_object_add(st, "gil_requested",
                               json_object_new_boolean(th->flags & UNWIND_THREAD_GIL_REQUESTED));
        json_object_object_add(st, "on_cpu", json_object_new_boolean(on_cpu[i] == 1));
        json_object_object_add(st, "has_exception",
                               json_object_new_boolean(th->flags & UNWIND_THREAD_HAS_EXCEPTION));
        json_object_object_add(jt, "status", st);
        if (th->status != SAMPLE_OK)
            json_object_object_add(jt, "error", json_object_new_string(status_name(th->status)));
        json_object *frames = json_object_new_array();
        for (size_t k = 0; k < th->nframes; k++) {
            const struct unwind_frame *f = &th->frames[k];
            json_object *jf = json_object_new_object();
            json_object_object_add(jf, "function", json_object_new_string(f->function));
            json_object_object_add(jf, "file", json_object_new_string(f->file));
            json_object_object_add(
                jf, "line",
                json_object_new_int(f->pos.line == LINETABLE_UNKNOWN ? 0 : f->pos.line));
            json_object_object_add(jf, "end_line", dump_json_pos(f->pos.end_line));
            json_object_object_add(jf, "column", dump_json_pos(f->pos.col));
            json_object_object_add(jf, "end_column", dump_json_pos(f->pos.end_col));
            json_object_array_add(frames, jf);
        }
        json_object_object_add(jt, "frames", frames);
        json_object_array_add(threads, jt);
    }
    json_object_object_add(root, "threads", threads);
    puts(json_object_to_json_string_ext(root,
                                        JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(root);
}

static void dump_print_text(const struct cli_target *t, const struct unwind_result *r,
                            const int *on_cpu)
{
    char ver[32];
    printf("Process %d: CPython %s (%s)\n", (int)t->pid,
           pyversion_format(&t->rt.version, ver, sizeof(ver)), t->rt.path);
    for (size_t i = 0; i < r->nthreads; i++) {
        const struct unwind_thread *th = &r->threads[i];
        printf("\nThread %" PRIu64 "%s", th->native_thread_id,
               th->flags & UNWIND_THREAD_MAIN ? " (main)" : "");
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
                printf("%s%s", sep, names[k].name);
                sep = ", ";
            }
        }
        if (on_cpu[i] >= 0) {
            printf("%s%s", sep, on_cpu[i] ? "on CPU" : "idle");
            sep = ", ";
        }
        printf("%s\n", sep[0] == ',' ? "]" : "");
        if (th->status != SAMPLE_OK)
            printf("    <sample failed: %s>\n", status_describe(th->status));
        for (size_t k = 0; k < th->nframes; k++) {
            const struct unwind_frame *f = &th->frames[k];
            if (f->kind == UNWIND_FRAME_NATIVE || f->kind == UNWIND_FRAME_GC)
                printf("    %s\n", f->function);
            else
                printf("    %s (%s:%d)\n", f->function, f->file,
                       f->pos.line == LINETABLE_UNKNOWN ? 0 : f->pos.line);
        }
    }
}

static int dump_run(pid_t pid, const struct dump_opts *o)
{
    struct cli_target t;
    int status = cli_attach(pid, o->backend, true, &t);
    if (status != CLI_EXIT_OK)
        goto out;
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
    int on_cpu[UNWIND_MAX_THREADS];
    for (size_t i = 0; i < r->nthreads; i++)
        on_cpu[i] = dump_on_cpu(pid, r->threads[i].native_thread_id);
    if (o->json)
        dump_print_json(&t, r, on_cpu);
    else
        dump_print_text(&t, r, on_cpu);
    if (dump_torn(r))
        status = CLI_EXIT_FAIL;
out:
    cli_detach(&t);
    return status;
}

int cli_dump(int argc, char **argv)
{
    enum { OPT_NATIVE = 256, OPT_NO_GC, OPT_JSON, OPT_BACKEND };
    static const struct option opts[] = {
        {"all-threads", no_argument, NULL, 'a'},
        {"native", no_argument, NULL, OPT_NATIVE},
        {"no-gc", no_argument, NULL, OPT_NO_GC},
        {"json", no_argument, NULL, OPT_JSON},
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
        case OPT_JSON:
            o.json = true;
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
