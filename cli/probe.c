/* SPDX-License-Identifier: MIT */
/*
 * probe.c: `pyprofd probe PID...`: where each process's CPython runtime is and
 * which version it is, read live from its memory.
 */
#include "base/compat.h"

#include <getopt.h>

#include "base/log.h"
#include "base/termtext.h"
#include "cli/cli.h"
#include "discovery/otel_process.h"
#include "perf/perfsample.h"
#include "unwind/otel_thread.h"

static void probe_usage(FILE *out)
{
    fputs("usage: pyprofd probe [--backend auto|vm|procmem] PID...\n"
          "\n"
          "Finds the Python runtime in each process and shows its version, where it is,\n"
          "what its debug table says and whether pyprofd reads it (CPython " PYVERSION_SUPPORTED
          ").\n",
          out);
}

/* What the process publishes of its OpenTelemetry contexts (docs/tracing.md). */
static void probe_trace_context(struct cli_target *t)
{
    struct otel_process pc;
    bool gone = false;
    enum otel_process_fail f = otel_process_locate("/proc", t->pid, t->mr, &pc, &gone);
    if (f == OTEL_PROCESS_ABSENT) {
        printf("  otel      no process context (OTEL_CTX) published\n");
        return;
    }
    if (f != OTEL_PROCESS_OK) {
        printf("  otel      a process context that cannot be read: %s\n",
               otel_process_fail_name(f));
        return;
    }
    char key[OTEL_PROCESS_MAX_KEY * 4 + 1], text[OTEL_PROCESS_MAX_VALUE * 4 + 1];
    printf("  otel      process context at 0x%" PRIx64 ", published at %" PRIu64
           " ns (CLOCK_BOOTTIME), %zu resource attributes%s\n",
           pc.header_raddr, pc.published_ns, pc.nresource, pc.dropped ? " (some not scalars)" : "");
    for (size_t i = 0; i < pc.nresource; i++) {
        /* the target's text: escaped for the terminal */
        printf("            %s = %s\n", termtext_str(pc.resource[i].key, key, sizeof(key)),
               termtext_str(pc.resource[i].value, text, sizeof(text)));
    }
    bool announced = pc.schema != NULL;
    if (announced)
        printf("  thread    context announced (%s), %zu attribute keys\n",
               termtext_str(pc.schema, key, sizeof(key)), pc.nkeys);
    otel_process_release(&pc);
    if (!announced)
        return;
    struct otel_thread_memo memo = {0};
    struct otel_thread_locator loc;
    char why[320];
    int err = otel_thread_find("/proc", t->pid, t->mr, &memo, &loc, why, sizeof(why));
    if (err)
        printf("  thread    %s\n",
               err == -ENOMEM ? "out of memory" : termtext_str(why, text, sizeof(text)));
    else
        printf("  thread    " OTEL_THREAD_SYMBOL " in %s, %s: samples are labelled trace_id, "
               "span_id\n",
               termtext_str(loc.file, text, sizeof(text)), otel_thread_model_name(loc.model));
}

static int probe_one(pid_t pid, enum memread_backend backend)
{
    struct cli_target t;
    int status = cli_attach(pid, backend, true, &t);
    if (status != CLI_EXIT_OK) {
        cli_detach(&t);
        return status;
    }
    char ver[32];
    const struct pyruntime *rt = &t.rt;
    const struct py_layout *l = unwinder_layout(t.unwinder);
    printf("pid %d: CPython %s%s\n", (int)pid, pyversion_format(&rt->version, ver, sizeof(ver)),
           l->free_threaded ? " (free-threaded)" : "");
    printf("  runtime   0x%" PRIx64 " (%s, %" PRIu64 " bytes)\n", rt->raddr,
           rt->no_table ? rt->found_by : ".PyRuntime", rt->section_size);
    fputs("  file      ", stdout);
    termtext_fputs(rt->path, stdout); /* the target's file name: shown, not obeyed */
    printf("%s (mapped at 0x%" PRIx64 ", opened via %s)\n", rt->deleted ? " (deleted)" : "",
           rt->map_start, rt->opened_via);
    if (rt->no_table) {
        if (rt->version_from && strcmp(rt->version_from, "Py_Version") != 0)
            printf("  version   from %s\n", rt->version_from);
        else
            printf("  version   Py_Version 0x%08" PRIx64 "\n", rt->version.hex);
        printf("  table     none (before 3.13): generated layout, from %s\n",
               l->source_detail ? l->source_detail : "?");
        printf("  checked   thread state -> its interpreter; running code object is %s; "
               "its file name is %s\n",
               rt->code_type ? "PyCode_Type" : "(PyCode_Type not exported: unchecked)",
               rt->unicode_type ? "a str" : "(PyUnicode_Type not exported: unchecked)");
        /* type introspection: the binary's own member tables */
        printf("  members   %u offsets of the layout confirmed by the target's own %s member "
               "tables\n",
               l->members_agreed,
               l->frame_objects ? "PyCode_Type and PyFrame_Type" : "PyCode_Type");
    } else {
        printf("  table     target's own: cookie xdebugpy, version word 0x%08" PRIx64
               ", %zu bytes, validated\n",
               rt->version.hex, l->table_size);
    }
    printf("  layout    thread state %u B, frame %u B, code object %u B%s%s\n", l->ts_size,
           l->fr_size, l->co_size, l->has_base_frame ? ", base frame" : "",
           l->has_code_generation ? ", code generation counter" : "");
    if (l->free_threaded)
        printf("  build     free-threaded: no GIL; gil mode samples the threads attached to "
               "the interpreter%s\n",
               l->has_tlbc ? "; per-thread bytecode copies" : "");
    else
        printf("  build     with a GIL\n");
    printf("  reader    %s\n", memread_backend_name(t.mr));
    /* what the kernel lets this process sample of the target's threads: the
     * registers and stack copies native stacks are unwound from */
    char why[256];
    struct perfsample *ps = NULL;
    bool perf = perfsample_open(pid, pid, 1000000000ull, PERFSAMPLE_STACK_MIN, 5, &ps, why,
                                sizeof(why)) == 0;
    if (perf) {
        perfsample_free(ps);
        snprintf(why, sizeof(why),
                 "permitted: the kernel's samples of its threads (user "
                 "registers and stack copies) can be read");
    }
    printf("  perf      %s\n", why);
    /* and so what --native=full does here (docs/usage.md, "Native frames") */
    if (!perf)
        printf("  native    --native=full falls back to <native> markers here\n");
    else if (!pyabi_entry_frames_on_c_stack(l))
        printf("  native    --native=full: C and Python frames joined, from the kernel's "
               "samples (at the C frames named _PyEval_EvalFrameDefault: Python %u.%u keeps no "
               "entry frames on the C stack)\n",
               l->version.major, l->version.minor);
    else
        printf("  native    --native=full: C and Python frames joined, from the kernel's "
               "samples\n");
    probe_trace_context(&t);
    printf("  supported yes\n");
    cli_detach(&t);
    return CLI_EXIT_OK;
}

int cli_probe(int argc, char **argv)
{
    static const struct option opts[] = {
        {"backend", required_argument, NULL, 'b'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    enum memread_backend backend = MEMREAD_AUTO;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "b:h", opts, NULL)) != -1) {
        switch (c) {
        case 'b':
            if (cli_parse_backend(optarg, &backend))
                return CLI_EXIT_USAGE;
            break;
        case 'h':
            probe_usage(stdout);
            return CLI_EXIT_OK;
        default:
            probe_usage(stderr);
            return CLI_EXIT_USAGE;
        }
    }
    if (optind >= argc) {
        log_error("probe needs at least one PID");
        probe_usage(stderr);
        return CLI_EXIT_USAGE;
    }
    int status = CLI_EXIT_OK;
    for (int i = optind; i < argc; i++) {
        pid_t pid;
        if (cli_parse_pid(argv[i], &pid))
            return CLI_EXIT_USAGE;
        if (probe_one(pid, backend) != CLI_EXIT_OK)
            status = CLI_EXIT_FAIL;
    }
    return status;
}
