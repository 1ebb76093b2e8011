/* SPDX-License-Identifier: MIT */
/*
 * proc_scan_parse.h: the pure parsers of discovery's /proc scanner
 * (discovery/proc_scan.h): the text of /proc/PID/stat, /proc/PID/status and
 * /proc/PID/cgroup, a PID's digits, and btime from the proc root's stat.
 * Inputs are untrusted and need not be NUL-terminated; nothing here reads a
 * file, allocates or keeps state.
 *
 * Container id (see docs/discovery.md): the cgroup path is the "0::" line's
 * (cgroup v2) unless v1 lines exist and it holds no container id (a hybrid
 * host); then the "name=systemd" line's, else the line whose controllers
 * include "cpu", else the first line's. The id is the right-most path
 * component of the form [prefix]<64 lowercase hex>[.scope] with prefix "",
 * "docker-", "cri-containerd-", "crio-", "libpod-" or "nerdctl-", or
 * <slice>:<prefix without '-'>:<64 hex> (a systemd-driver cgroupsPath on the
 * cgroupfs driver), searched in the chosen path first, then in the other
 * lines. The runtime comes from the prefix (docker, containerd, cri-o,
 * podman; nerdctl's is containerd) or, without a prefix, from a "docker"
 * component above the id; otherwise it is unknown ("").
 *
 * Thread safety: pure functions, reentrant.
 */
#ifndef PYPROFD_DISCOVERY_PROC_SCAN_PARSE_H
#define PYPROFD_DISCOVERY_PROC_SCAN_PARSE_H

#include "base/compat.h"

#include <sys/types.h>

/** Length of a container id (hex digits). */
#define PROC_SCAN_CONTAINER_ID_LEN 64
/** btime and start times above 2^32 s (year 2106) are garbage. */
#define PROC_SCAN_SECONDS_MAX (INT64_C(1) << 32)

/**
 * A PID: the decimal digits [@a s, @a s + @a n) (no sign, no space), at most
 * INT32_MAX. Returns 0, or -EINVAL for anything else.
 */
PYPROFD_WARN_UNUSED int proc_scan_parse_pid(const char *s, size_t n, pid_t *out);

/** The fields pyprofd takes from /proc/PID/stat. */
struct proc_stat {
    pid_t pid;
    const char *comm; /* points into the text; not NUL-terminated */
    size_t comm_len;
    char state;
    pid_t ppid;
    uint32_t flags;
    uint64_t start_ticks;
    uint64_t start_stack; /* field 28: the stack's start, new at each exec (ASLR); 0 when
                           * hidden (no ptrace access) or the line ends before it */
};

/**
 * Parses a stat line of @a len bytes (a trailing newline is allowed). comm is
 * what lies between the first '(' and the LAST ')'. Returns 0, or -EINVAL when
 * a field is missing, not a number or out of range.
 */
PYPROFD_WARN_UNUSED int proc_scan_parse_stat(const char *text, size_t len, struct proc_stat *out);

/** The fields pyprofd takes from /proc/PID/status. */
struct proc_status {
    uint32_t uid; /* real uid */
    pid_t ppid;
    pid_t tgid;  /* Tgid:, 0 when there is no such line */
    pid_t nspid; /* last NSpid: value, 0 when there is no NSpid: line */
    bool has_ppid;
};

/**
 * Parses status text of @a len bytes; an unfinished last line is ignored.
 * Returns 0, or -EINVAL when Uid: is missing or a line pyprofd reads is
 * malformed. Unknown lines are skipped.
 */
PYPROFD_WARN_UNUSED int proc_scan_parse_status(const char *text, size_t len,
                                               struct proc_status *out);

/** The result of parsing /proc/PID/cgroup. */
struct proc_cgroup {
    const char *path; /* points into the text; not NUL-terminated; NULL if no line */
    size_t path_len;
    char container_id[PROC_SCAN_CONTAINER_ID_LEN + 1]; /* "" when none */
    const char *runtime;                               /* static string; "" when unknown or no id */
};

/**
 * Parses cgroup text of @a len bytes ("hierarchy-id:controllers:path" lines;
 * an unfinished last line is ignored, as are lines without two ':'). Chooses
 * the cgroup path and finds the container id by the rules at the top of this
 * header. Returns 0 (even when nothing was found) or -EINVAL when the text
 * holds a NUL byte.
 */
PYPROFD_WARN_UNUSED int proc_scan_parse_cgroup(const char *text, size_t len,
                                               struct proc_cgroup *out);

/**
 * Looks for a container id in one cgroup path of @a len bytes (right-most
 * matching component). Returns true and fills @a id (65 bytes) and
 * *@a runtime (static string, "" when unknown), or false.
 */
bool proc_scan_container_id(const char *path, size_t len, char *id, const char **runtime);

/** The btime value of a <proc_root>/stat text. Returns 0 or -ENOENT/-EINVAL. */
PYPROFD_WARN_UNUSED int proc_scan_parse_btime(const char *text, size_t len, int64_t *btime);

#endif /* PYPROFD_DISCOVERY_PROC_SCAN_PARSE_H */
