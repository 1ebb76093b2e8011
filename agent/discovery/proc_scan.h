/* SPDX-License-Identifier: MIT */
/*
 * proc_scan.h: the /proc scanner of discovery (stage 1). One run lists the
 * numeric entries of a proc root, reads a few small files of each process and
 * returns what relabeling needs (struct proc_info, turned into meta labels by
 * proc_scan_meta_labels()). It does not decide whether a process is Python
 * (the daemon runs discovery/pyruntime on the candidates) and it never logs:
 * what happened is counted in struct proc_scan_stats.
 *
 * Files read, relative to the directory fd of <root>/PID (so a PID reused
 * mid-read cannot mix two processes: once the process is gone, every openat
 * on the old directory fd fails with ENOENT/ESRCH):
 *   stat     pid, comm, state, ppid, flags, start time (field 22, clock ticks
 *            since boot); parsed from the LAST ')' because comm may contain
 *            spaces and parentheses;
 *   status   Uid: (real uid), PPid:, NSpid: (last value: the pid inside the
 *            innermost PID namespace);
 *   cmdline  NUL-separated argv, joined with single spaces, capped (a
 *            character the cap splits is dropped);
 *   exe, cwd readlink; exe may carry a " (deleted)" suffix (stripped, flagged);
 *   cgroup   cgroup path and container id (rules in proc_scan_parse.h).
 * Plus <root>/stat once per run for btime (boot time, seconds since the epoch).
 *
 * Skipped (counted, not reported): the agent itself; zombies and dead tasks
 * (state 'Z' or 'X'); kernel threads, recognised by PF_KTHREAD (0x00200000)
 * in the stat flags field alone. "ppid == 2" is deliberately not used: inside
 * a container's PID namespace pid 2 is an ordinary process.
 *
 * Required files are stat and status: ENOENT/ESRCH on any file counts the
 * process as vanished (a normal race), any other error on stat, status,
 * cmdline or cgroup counts it as unreadable; in both cases it is not reported.
 * exe and cwd need ptrace-read access, so an error other than ENOENT/ESRCH
 * there (typically EACCES) leaves the field empty, counts fields_denied and
 * still reports the process.
 *
 * Every file comes through a fixed buffer (PROC_SCAN_READ_MAX bytes): longer
 * files are cut; stat must fit whole (else malformed), status and cgroup are
 * parsed up to their last complete line. Garbage is counted as malformed,
 * never trusted.
 *
 * Identity: a process is (pid, start_ticks), struct proc_key. A PID reused by
 * a new process has a different start time, so proc_key_equal() tells them
 * apart.
 *
 * The parsers of these files' text are in discovery/proc_scan_parse.h, which
 * this header includes.
 *
 * Thread safety: a struct proc_scan is used by one thread at a time.
 */
#ifndef PYPROFD_DISCOVERY_PROC_SCAN_H
#define PYPROFD_DISCOVERY_PROC_SCAN_H

#include "base/compat.h"

#include <sys/types.h>

#include "base/labels.h"
#include "discovery/proc_scan_parse.h"

/** Default cap on processes reported by one run. */
#define PROC_SCAN_MAX_PROCS 65536
/** Default cap on the bytes of strings held by one run's results. */
#define PROC_SCAN_MAX_BYTES (32u << 20)
/** Size of the buffer each /proc file is read through. */
#define PROC_SCAN_READ_MAX 16384
/** Cap on the joined command line (bytes, without the NUL). */
#define PROC_SCAN_CMDLINE_MAX 4096
/** Default cap on the uid -> user name cache (entries; cleared when full). */
#define PROC_SCAN_USER_CACHE_MAX 256
/** The kernel's PF_KTHREAD task flag, as shown in field 9 of stat. */
#define PROC_SCAN_PF_KTHREAD 0x00200000u

/** A process's identity: a PID plus its start time, so PID reuse is seen. */
struct proc_key {
    pid_t pid;            /* in the PID namespace of the proc root */
    uint64_t start_ticks; /* stat field 22: clock ticks after boot */
};

/** Whether @a a and @a b are the same process (same pid and start time). */
bool proc_key_equal(const struct proc_key *a, const struct proc_key *b);

/*
 * One process. Strings are never NULL ("" when unknown or unreadable), are
 * valid UTF-8 (what the files hold with every invalid sequence replaced by
 * U+FFFD, utf8_sanitize() in base/utf8.h, so up to three times as long; a
 * comm of 15 bytes, cut by the kernel, loses a character it split) and are
 * owned by the struct (one block, @c strings_); they live until the next
 * proc_scan_run()/proc_scan_free() for results of a scan, or until
 * proc_info_release() for a copy made with proc_info_copy().
 */
struct proc_info {
    struct proc_key key;
    pid_t ppid;
    pid_t nspid;                   /* last NSpid: value; = pid when the line is absent */
    uint32_t uid;                  /* real uid (first value of Uid:) */
    char state;                    /* stat state letter: R, S, D, T, t, ... */
    uint32_t flags;                /* stat field 9 */
    uint64_t start_stack;          /* stat field 28: new at each exec; 0 when hidden */
    int64_t start_time_ns;         /* wall-clock start (epoch ns), -1 when btime is unknown */
    int64_t age_ns;                /* now - start_time_ns (>= 0), -1 when unknown */
    const char *comm;              /* as in stat, at most 64 bytes */
    const char *cmdline;           /* argv joined with ' ', at most PROC_SCAN_CMDLINE_MAX bytes */
    const char *exe;               /* readlink exe without " (deleted)"; "" if denied */
    bool exe_deleted;              /* exe had the " (deleted)" suffix */
    const char *cwd;               /* readlink cwd; "" if denied */
    const char *username;          /* user name of uid; "" when the lookup failed */
    const char *cgroup_path;       /* chosen cgroup path (see above); "" if none */
    const char *container_id;      /* 64 hex digits, or "" */
    const char *container_runtime; /* "docker", "containerd", "cri-o", "podman" or "" */
    char *strings_;                /* private: the block the strings above live in */
};

/** Makes @a dst an owned copy of @a src. Returns 0 or -ENOMEM (@a dst zeroed). */
PYPROFD_WARN_UNUSED int proc_info_copy(struct proc_info *dst, const struct proc_info *src);
/** Frees a copy made by proc_info_copy(); a zeroed struct is a no-op. Leaves it zeroed. */
void proc_info_release(struct proc_info *info);

/**
 * Adds the meta labels of @a info to @a out (existing names are replaced):
 * __meta_process_pid, __process_pid__, __meta_process_nspid,
 * __meta_process_ppid, __meta_process_exe, __meta_process_executable_name
 * (basename of exe), __meta_process_comm, __meta_process_commandline,
 * __meta_process_cwd, __meta_process_uid, __meta_process_username,
 * __meta_process_cgroup_path, always (possibly ""); __container_id__ only when
 * a container id was found, and __meta_container_runtime only when its runtime
 * is known too. Returns 0 or -ENOMEM (@a out may then hold some of them).
 */
PYPROFD_WARN_UNUSED int proc_scan_meta_labels(const struct proc_info *info, struct labels *out);

/**
 * User lookup: stores the name of @a uid in @a buf (NUL-terminated, at most
 * @a len bytes with the NUL) and returns 0, or returns a negative errno
 * (-ENOENT: no such user). The default uses getpwuid_r(), i.e. the agent's own
 * passwd database (in a container: the container's, not the host's).
 */
typedef int (*proc_scan_user_fn)(uint32_t uid, char *buf, size_t len, void *arg);

/**
 * Optional filter called with each process's key, comm (as in stat, not
 * sanitised) and stack start (stat's field 28: another at each exec; 0 when
 * hidden) right after its stat was
 * parsed (self, zombies and kernel threads are already skipped). Returning
 * false skips the rest of the reads; the process is not reported and counts
 * as filtered. The daemon uses it to avoid re-reading processes it already
 * knows (live targets, known non-Python processes) and to mark them alive.
 */
typedef bool (*proc_scan_filter_fn)(const struct proc_key *key, const char *comm,
                                    uint64_t start_stack, void *arg);

struct proc_scan_opts {
    const char *proc_root;         /* NULL: "/proc" (copied) */
    pid_t self_pid;                /* pid to skip; 0: readlink <proc_root>/self, else getpid() */
    size_t max_procs;              /* 0: PROC_SCAN_MAX_PROCS */
    size_t max_bytes;              /* 0: PROC_SCAN_MAX_BYTES */
    long clk_tck;                  /* clock ticks per second; 0: sysconf(_SC_CLK_TCK) */
    proc_scan_user_fn user_lookup; /* NULL: getpwuid_r */
    void *user_lookup_arg;
    size_t user_cache_max;      /* 0: PROC_SCAN_USER_CACHE_MAX */
    proc_scan_filter_fn filter; /* NULL: report every process */
    void *filter_arg;
};

/** What the last run saw; every listed numeric entry lands in exactly one bucket. */
struct proc_scan_stats {
    uint64_t seen;     /* numeric entries of the proc root */
    uint64_t reported; /* in the results */
    uint64_t skipped_self;
    uint64_t skipped_zombie;  /* state Z or X */
    uint64_t skipped_kthread; /* PF_KTHREAD */
    uint64_t filtered;        /* the filter said no */
    uint64_t vanished;        /* ENOENT/ESRCH mid-read: exited, a normal race */
    uint64_t unreadable;      /* another error on stat, status, cmdline or cgroup */
    uint64_t malformed;       /* garbage in stat, status or cgroup */
    uint64_t over_cap;        /* not reported: max_procs or max_bytes reached */
    /* not buckets: */
    uint64_t fields_denied; /* exe/cwd left empty: EACCES etc. (process reported) */
    uint64_t user_lookups;  /* calls of the user lookup (cache misses) */
    bool btime_known;       /* <root>/stat had a btime line: ages are valid */
};

struct proc_scan;

/**
 * Creates a scanner. @a opts may be NULL (all defaults); it is copied, the
 * function pointers' args are borrowed for the scanner's lifetime. Returns
 * NULL with errno ENOMEM, or EINVAL for a proc root longer than PATH_MAX.
 */
struct proc_scan *proc_scan_new(const struct proc_scan_opts *opts);
/** Frees the scanner and its results; NULL is a no-op. */
void proc_scan_free(struct proc_scan *scan);

/**
 * Scans the proc root. @a now_ns is the current CLOCK_REALTIME in ns, used
 * for ages. Previous results are freed first. Returns 0; -errno when the proc
 * root cannot be listed (nothing reported); -ENOMEM when memory ran out
 * (allocation failure or the allocator's budget): the results gathered until
 * then stay readable.
 */
PYPROFD_WARN_UNUSED int proc_scan_run(struct proc_scan *scan, int64_t now_ns);

/**
 * Reads the @a n processes @a pids of the proc root, as proc_scan_run()
 * would (filter, buckets, caps), without listing it: for discovery between
 * full scans (discovery/proc_watch.h). A PID that is not a process (a
 * thread's TID: its status's Tgid is another) counts as vanished. Returns
 * as proc_scan_run(). The boot time is read once per scanner.
 */
PYPROFD_WARN_UNUSED int proc_scan_pids(struct proc_scan *scan, const pid_t *pids, size_t n,
                                       int64_t now_ns);

/** Number of processes reported by the last run. */
size_t proc_scan_count(const struct proc_scan *scan);
/** Process @a i (< proc_scan_count()), in directory order; borrowed until the next run. */
const struct proc_info *proc_scan_get(const struct proc_scan *scan, size_t i);
/** Counters of the last run (borrowed). */
const struct proc_scan_stats *proc_scan_stats(const struct proc_scan *scan);

#endif /* PYPROFD_DISCOVERY_PROC_SCAN_H */
