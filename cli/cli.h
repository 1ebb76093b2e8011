/* SPDX-License-Identifier: MIT */
/*
 * cli.h: the pyprofd subcommands and what they share: attaching to a process
 * with user-facing error messages. Each command takes (argc, argv) with
 * argv[0] the command name and returns the process exit status.
 *
 * Exit statuses: 0 success, 1 the target could not be profiled (the message
 * says why), 2 usage errors; `top` also 141 (128 + SIGPIPE, what a shell
 * shows for a writer that SIGPIPE ended) when the reader of its output went
 * away, SIGPIPE ignored or not.
 */
#ifndef PYPROFD_CLI_CLI_H
#define PYPROFD_CLI_CLI_H

#include "base/compat.h"

#include <sys/types.h>

#include "base/buf.h"
#include "base/tfile.h"
#include "discovery/pyruntime.h"
#include "memread/memread.h"
#include "pprof/heatmap.h"
#include "python/pyversion.h" /* PYVERSION_SUPPORTED: every help says the same range */
#include "unwind/asyncio.h"
#include "unwind/unwind.h"

enum { CLI_EXIT_OK = 0, CLI_EXIT_FAIL = 1, CLI_EXIT_USAGE = 2, CLI_EXIT_PIPE = 141 };

/**
 * The target's files as it could read them (cli/sources.c, over
 * base/tfile.h): its root and working directory, opened when a recording
 * starts and usable after it exits, and its credentials as they were then,
 * which decide what may be shown. For `record --format heatmap`.
 */
struct cli_sources {
    struct tfile_who who;
};
#define CLI_SOURCES_INIT                                                                           \
    {                                                                                              \
        .who = TFILE_WHO_INIT                                                                      \
    }

/**
 * Takes @a pid's root, working directory and credentials into @a s (which
 * must then be closed). Returns 0, or a negative errno with the reason in
 * @a why: every file is then refused with that reason.
 */
int cli_sources_open(pid_t pid, struct cli_sources *s, char *why, size_t whylen);
/** Lets go of what cli_sources_open() took; a CLI_SOURCES_INIT @a s is a no-op. */
void cli_sources_close(struct cli_sources *s);
/**
 * A heatmap_source_fn (pprof/heatmap.h) over a struct cli_sources: reads
 * @a path as the target could (base/tfile.h: below its root, its
 * credentials at every directory, nothing but a regular file of at most
 * HEATMAP_MAX_TEXT bytes, procfs and sysfs refused), with the reason when it
 * cannot; @a id is the file's device and inode.
 */
int cli_source_read(void *arg, const char *path, struct buf *text, struct heatmap_source_id *id,
                    char *why, size_t why_size);

/** An attached process. */
struct cli_target {
    pid_t pid;
    struct memread *mr;
    struct pyruntime rt;
    struct unwinder *unwinder; /* NULL for cli_attach(..., false) */
};

/**
 * Opens @a pid, finds its runtime, checks the version is supported and, if
 * @a unwind, validates its tables and builds an unwinder. On failure logs one
 * clear line (no such process; permission denied and what is needed; not a
 * Python process; Python too old; unsupported version; malformed table) and
 * returns CLI_EXIT_FAIL. @a t must be released with cli_detach().
 */
int cli_attach(pid_t pid, enum memread_backend backend, bool unwind, struct cli_target *t);
void cli_detach(struct cli_target *t);
/**
 * Warns once for each of @a flags the target's version cannot honour: opcodes
 * (no names before 3.13) and <native> markers (none before 3.11).
 */
void cli_warn_flags(const struct cli_target *t, unsigned flags);

/** Parses a PID argument; logs and returns -EINVAL when it is not one. */
int cli_parse_pid(const char *arg, pid_t *out);
/** Parses --backend auto|vm|procmem. */
int cli_parse_backend(const char *arg, enum memread_backend *out);

int cli_probe(int argc, char **argv);
int cli_dump(int argc, char **argv);
/** `pyprofd top PID`: a live view of the hottest functions (cli/top.c). */
int cli_top(int argc, char **argv);
int cli_record(int argc, char **argv);
int cli_agent(int argc, char **argv);
/** `pyprofd check-config`: 0 all files valid, 1 some invalid, 2 usage errors. */
int cli_check_config(int argc, char **argv);

#ifdef PYPROFD_UNITTEST
/* record.c internals reached by tests/unit/cli/test_record.c */
int record_parse_rate(const char *s, double *out);
uint64_t record_slack_ns(uint64_t interval_ns);
/* agent.c internals reached by tests/unit/cli/test_agent.c */
struct pyprofd_config;
bool agent_log_listen(const struct pyprofd_config *cfg, const char *listen_option,
                      const char *config_file, bool reload);
void agent_restart_keys(const struct pyprofd_config *cfg, const char *listen_option,
                        bool lifecycle_option, const char *listen_addr, bool lifecycle,
                        uint64_t max_profiles, char *buf, size_t len);
#endif

#endif /* PYPROFD_CLI_CLI_H */
