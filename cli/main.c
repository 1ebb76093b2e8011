/* SPDX-License-Identifier: MIT */
/*
 * main.c: the pyprofd command line. Wiring only: pick the subcommand and hand
 * it the arguments. The commands live in cli/, the pipeline stages in
 * agent/<stage>/ (discovery -> unwinder -> sampler -> aggregation -> pprof ->
 * exporters); see docs/architecture.md.
 */
#include "base/compat.h"

#include <malloc.h>

#include "base/log.h"
#include "cli/cli.h"

#ifndef PYPROFD_VERSION
#define PYPROFD_VERSION "unknown"
#endif

static void usage(FILE *out)
{
    fputs("usage: pyprofd <command> [options]\n"
          "\n"
          "commands:\n"
          "  record [options] PID | record [options] -- COMMAND [ARGS...]\n"
          "          sample a process at a fixed rate and write a pprof profile\n"
          "  agent [--config.file FILE] [options]\n"
          "          run as a daemon: find every Python process, sample each, serve and\n"
          "          store one pprof profile per target and interval\n"
          "  check-config [--config.expand-env] [--print] FILE...\n"
          "          validate agent config files; list every error with its line:column\n"
          "  dump [-a] [--native] [--json] PID\n"
          "          print the Python stacks of a live process, leaf first\n"
          "  probe [--backend auto|vm|procmem] PID...\n"
          "          find the CPython runtime in each process and show its version\n"
          "  version print the pyprofd version\n"
          "  help    show this help\n"
          "\n"
          "pyprofd reads CPython 3.13, 3.14 and 3.15 processes from outside; it needs\n"
          "root or CAP_SYS_PTRACE. CAP_CHECKPOINT_RESTORE (CAP_SYS_ADMIN before Linux\n"
          "5.9) is optional: it opens /proc/PID/map_files, which also reaches a deleted\n"
          "or replaced interpreter; without it files are opened via /proc/PID/root.\n",
          out);
}

int main(int argc, char **argv)
{
    /*
     * A fixed mmap threshold: glibc otherwise raises it each time a large
     * block is freed (every encoded profile), after which the large, mostly
     * untouched tables of new aggregation windows come from the heap and are
     * cleared page by page. Measured: the agent with one target, 54 MB
     * resident without this, 38 MB with it.
     */
    (void)mallopt(M_MMAP_THRESHOLD, 128 * 1024);
    if (argc < 2) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "dump") == 0)
        return cli_dump(argc - 1, argv + 1);
    if (strcmp(cmd, "record") == 0)
        return cli_record(argc - 1, argv + 1);
    if (strcmp(cmd, "agent") == 0)
        return cli_agent(argc - 1, argv + 1);
    if (strcmp(cmd, "check-config") == 0)
        return cli_check_config(argc - 1, argv + 1);
    if (strcmp(cmd, "probe") == 0)
        return cli_probe(argc - 1, argv + 1);
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        printf("pyprofd %s\n", PYPROFD_VERSION);
        return CLI_EXIT_OK;
    }
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        usage(stdout);
        return CLI_EXIT_OK;
    }
    log_error("unknown command '%s'", cmd);
    usage(stderr);
    return CLI_EXIT_USAGE;
}
