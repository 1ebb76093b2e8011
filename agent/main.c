/* SPDX-License-Identifier: MIT */
/*
 * main.c: the pyprofd command line. Wiring only: parse arguments, run the
 * pipeline stages a command needs, print, exit. The stages themselves live in
 * agent/<stage>/ (discovery -> unwinder -> sampler -> aggregation -> pprof ->
 * exporters); see docs/architecture.md.
 */
#include "base/compat.h"

#include <getopt.h>

#include "base/log.h"
#include "base/strnum.h"
#include "discovery/pyruntime.h"
#include "memread/memread.h"
#include "python/pyversion.h"

#ifndef PYPROFD_VERSION
#define PYPROFD_VERSION "unknown"
#endif

enum { EXIT_USAGE = 2 };

static void usage(FILE *out)
{
    fputs("usage: pyprofd <command> [options]\n"
          "\n"
          "commands:\n"
          "  probe [--backend auto|vm|procmem] PID...\n"
          "          find the CPython runtime in each process and show its version\n"
          "  version print the pyprofd version\n"
          "  help    show this help\n"
          "\n"
          "pyprofd reads CPython 3.13, 3.14 and 3.15 processes from outside; it needs\n"
          "root or CAP_SYS_PTRACE (and CAP_SYS_ADMIN to open /proc/PID/map_files).\n",
          out);
}

static int parse_backend(const char *s, enum memread_backend *out)
{
    if (strcmp(s, "auto") == 0)
        *out = MEMREAD_AUTO;
    else if (strcmp(s, "vm") == 0)
        *out = MEMREAD_VM;
    else if (strcmp(s, "procmem") == 0)
        *out = MEMREAD_PROCMEM;
    else
        return -EINVAL;
    return 0;
}

/* Probes one process; returns 0 when it is a supported CPython, 1 otherwise. */
static int probe_one(pid_t pid, enum memread_backend backend)
{
    struct memread *mr = NULL;
    int err = memread_open(pid, backend, &mr);
    if (err) {
        log_error("cannot open memory of pid %d: %s", (int)pid, memread_strerror(err));
        return 1;
    }
    struct pyruntime rt;
    char why[512];
    err = pyruntime_locate("/proc", pid, mr, &rt, why, sizeof(why));
    if (err) {
        log_error("pid %d is not a CPython 3.13+ process: %s", (int)pid, why);
        memread_free(mr);
        return 1;
    }
    char ver[32];
    pyversion_format(&rt.version, ver, sizeof(ver));
    int supported = pyversion_check_supported(&rt.version, why, sizeof(why));
    printf("pid %d: CPython %s\n", (int)pid, ver);
    printf("  runtime   0x%" PRIx64 " (.PyRuntime, %" PRIu64 " bytes)\n", rt.raddr,
           rt.section_size);
    printf("  file      %s%s (mapped at 0x%" PRIx64 ", opened via %s)\n", rt.path,
           rt.deleted ? " (deleted)" : "", rt.map_start, rt.opened_via);
    printf("  table     cookie xdebugpy, version word 0x%08" PRIx64 ", free-threaded %s\n",
           rt.version.hex, rt.version.free_threaded ? "yes" : "no");
    printf("  reader    %s\n", memread_backend_name(mr));
    printf("  supported %s\n", supported == 0 ? "yes" : why);
    memread_free(mr);
    return supported == 0 ? 0 : 1;
}

static int cmd_probe(int argc, char **argv)
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
            if (parse_backend(optarg, &backend)) {
                log_error("unknown backend '%s' (use auto, vm or procmem)", optarg);
                return EXIT_USAGE;
            }
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return EXIT_USAGE;
        }
    }
    if (optind >= argc) {
        log_error("probe needs at least one PID");
        return EXIT_USAGE;
    }
    int status = 0;
    for (int i = optind; i < argc; i++) {
        int64_t pid;
        if (strnum_parse_i64(argv[i], 1, INT32_MAX, &pid)) {
            log_error("'%s' is not a process id", argv[i]);
            return EXIT_USAGE;
        }
        if (probe_one((pid_t)pid, backend))
            status = 1;
    }
    return status;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "probe") == 0)
        return cmd_probe(argc - 1, argv + 1);
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        printf("pyprofd %s\n", PYPROFD_VERSION);
        return 0;
    }
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        usage(stdout);
        return 0;
    }
    log_error("unknown command '%s'", cmd);
    usage(stderr);
    return EXIT_USAGE;
}
