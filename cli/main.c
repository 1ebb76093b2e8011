/* SPDX-License-Identifier: MIT */
/*
 * main.c: the pyprofd command line. Wiring only: pick the subcommand and hand
 * it the arguments. The commands live in cli/, the pipeline stages in
 * agent/<stage>/ (discovery -> unwinder -> sampler -> aggregation -> pprof ->
 * exporters); see docs/architecture.md.
 *
 * Two executables are built from this file. `pyprofd` has every command.
 * `pyprofd-lite` (compiled with PYPROFD_LITE) has only probe, dump and record,
 * which need no network code, and is linked without libcurl, libmicrohttpd
 * and the TLS stack they bring (~5.7 MB of resident libraries, twice what
 * record itself uses; docs/usage.md). `pyprofd record|dump|probe ...` first
 * execs the pyprofd-lite next to its own executable (/proc/self/exe's
 * directory) with the same argv. The command runs in-process as before when
 * there is none (ENOENT) or it may not be run (EACCES), when PYPROFD_NO_LITE
 * is set to anything but "" or "0", and when pyprofd was started with raised
 * privileges (AT_SECURE: file capabilities or setuid, which pyprofd-lite
 * would not get); any other exec failure is logged, then the same. The agent
 * and check-config never exec.
 */
#include "base/compat.h"

#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "base/log.h"
#include "cli/cli.h"
#include "cli/version.h"

#ifdef PYPROFD_LITE
#define PROG "pyprofd-lite"
#else
#define PROG "pyprofd"
#endif

static void usage(FILE *out)
{
    fputs("usage: " PROG " <command> [options]\n"
          "\n"
          "commands:\n"
          "  record [options] PID | record [options] -- COMMAND [ARGS...]\n"
          "          sample a process at a fixed rate and write a pprof profile\n"
#ifndef PYPROFD_LITE
          "  agent [--config.file FILE] [options]\n"
          "          run as a daemon: find every Python process, sample each, serve and\n"
          "          store one pprof profile per target and interval\n"
          "  check-config [--config.expand-env] [--print] FILE...\n"
          "          validate agent config files; list every error with its line:column\n"
#endif
          "  dump [-a] [--native] [--json] PID\n"
          "          print the Python stacks of a live process, leaf first\n"
          "  top [-r HZ] [-w SECS] PID\n"
          "          a live view of the hottest functions (own and total share)\n"
          "  probe [--backend auto|vm|procmem] PID...\n"
          "          find the CPython runtime in each process and show its version\n"
          "  version print the " PROG " version\n"
          "  help    show this help\n"
          "\n"
          "pyprofd reads CPython " PYVERSION_SUPPORTED " processes from outside; it needs\n"
          "root or CAP_SYS_PTRACE. CAP_CHECKPOINT_RESTORE (CAP_SYS_ADMIN before Linux\n"
          "5.9) is optional: it opens /proc/PID/map_files, which also reaches a deleted\n"
          "or replaced interpreter; without it files are opened via /proc/PID/root.\n"
#ifdef PYPROFD_LITE
          "\n"
          "pyprofd-lite is pyprofd without the agent's network code (smaller in memory);\n"
          "`pyprofd record|dump|probe` runs it when it is next to pyprofd.\n"
#endif
          ,
          out);
}

#ifndef PYPROFD_LITE
/*
 * Replaces this process with the pyprofd-lite in the directory of
 * /proc/self/exe, same argv. Returns only when it did not: no such file or
 * not executable (silently), disabled by PYPROFD_NO_LITE or AT_SECURE, or
 * another error (logged); the caller then runs the command itself.
 */
static void exec_lite(char **argv)
{
    const char *off = getenv("PYPROFD_NO_LITE");
    if (off && off[0] != '\0' && strcmp(off, "0") != 0)
        return;
    if (getauxval(AT_SECURE)) /* capabilities from pyprofd's file would be lost */
        return;
    static const char lite[] = "pyprofd-lite";
    char path[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
    if (n <= 0)
        return;
    path[n] = '\0';
    char *slash = strrchr(path, '/');
    if (!slash || (size_t)(slash + 1 - path) + sizeof(lite) > sizeof(path))
        return;
    memcpy(slash + 1, lite, sizeof(lite));
    execv(path, argv);
    if (errno != ENOENT && errno != EACCES)
        log_warn("cannot run %s (%s); running the command in pyprofd", path, strerror(errno));
}
#endif

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
#ifndef PYPROFD_LITE
    if (strcmp(cmd, "dump") == 0 || strcmp(cmd, "record") == 0 || strcmp(cmd, "probe") == 0 ||
        strcmp(cmd, "top") == 0)
        exec_lite(argv);
#endif
    if (strcmp(cmd, "dump") == 0)
        return cli_dump(argc - 1, argv + 1);
    if (strcmp(cmd, "top") == 0)
        return cli_top(argc - 1, argv + 1);
    if (strcmp(cmd, "record") == 0)
        return cli_record(argc - 1, argv + 1);
#ifndef PYPROFD_LITE
    if (strcmp(cmd, "agent") == 0)
        return cli_agent(argc - 1, argv + 1);
    if (strcmp(cmd, "check-config") == 0)
        return cli_check_config(argc - 1, argv + 1);
#endif
    if (strcmp(cmd, "probe") == 0)
        return cli_probe(argc - 1, argv + 1);
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        /* the layout of Prometheus' own tools' --version */
        printf(PROG ", version %s (revision: %s)\n", pyprofd_build.version, pyprofd_build.revision);
        printf("  build date:  %s\n", pyprofd_build.date);
        printf("  compiler:    %s\n", pyprofd_build.compiler);
        printf("  build type:  %s\n", pyprofd_build.build_type);
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
