/* SPDX-License-Identifier: MIT */
/*
 * targets.h: the agent's table of processes and the verdict on each: is it a
 * target, of which job, and if not, why not and when to look again.
 *
 * The table remembers every process a scan reported, by identity (PID plus
 * start time, discovery/proc_scan.h), with its state:
 *
 *   new          reported by the scan, not looked at yet
 *   young        younger than min_process_age          (looked at next scan)
 *   active       a target, sampled                     (the loop owns it)
 *   not_python   no CPython 3.9+ runtime                (again in 6 refreshes;
 *                                                        each scan while < 30 s old)
 *   unsupported  a runtime pyprofd cannot read          (30 refreshes)
 *   unreadable   memory, maps or files refused          (30 refreshes)
 *   dropped      no job's relabeling kept it            (after a reload)
 *   failed       attaching failed                       (30 refreshes)
 *   over_limit   limits.max_targets reached             (next scan), or
 *                limits.max_labels_per_profile exceeded (after a reload)
 *
 * proc_judge() decides one process's verdict; the outside world it asks
 * (opening the memory reader, locating the runtime) goes through struct
 * probe_ops, so the policy is unit-tested with a fake probe. What it does not
 * do is start the target: a verdict "active" hands the caller the job, the
 * labels, the memory reader and the runtime.
 *
 * Entries are values in one array: pointers to them stay valid only until
 * the next proc_table_add() or proc_table_sweep().
 *
 * Thread safety: a table belongs to one thread at a time (the loop's lock).
 * The functions do not log; proc_judge() says in its verdict what to log.
 */
#ifndef PYPROFD_DAEMON_TARGETS_H
#define PYPROFD_DAEMON_TARGETS_H

#include "base/compat.h"

#include "base/labels.h"
#include "config/config.h"
#include "discovery/otel_process.h"
#include "discovery/proc_scan.h"
#include "discovery/pyruntime.h"
#include "memread/memread.h"
#include "daemon/report.h"

#define TARGETS_MAX_PROCS     16384u /* processes remembered between scans */
#define TARGETS_RECHECK_RARE  30u /* refresh intervals before an unsupported process is re-read */
#define TARGETS_RECHECK_OFTEN 6u  /* ... a process that is not Python */
#define TARGETS_YOUNG_NS      30000000000ll /* a process younger looks again each scan */

/** What the agent knows of one process. */
struct proc_entry {
    struct proc_key key;
    enum proc_state state;
    bool seen;           /* reported by the scan in progress (or a target still alive) */
    uint64_t recheck_ns; /* looked at again no earlier than this */
    char reason[320];    /* why not a target */
    char version[32];    /* "3.14.8" ("3.14.8t" free-threaded) once the runtime was read */
    bool free_threaded;  /* a Py_GIL_DISABLED build, once the runtime was read */
    char comm[32];
    uint64_t image;        /* its stat's stack start when judged: another means it exec'd */
    char container_id[65]; /* from its cgroup (64 hex digits), "" when none */
    uint64_t pod_rev;      /* its pod labels' revision when judged; 0: none */
    pid_t nspid;           /* its PID in its own PID namespace (= key.pid without one) */
    void *target;          /* the caller's target while PROC_ACTIVE */
    /* attached again from scratch (by the loop), and why the last time */
    uint32_t reattaches;
    char reattach_why[160];
    uint64_t stuck_ns; /* 0: the loop's default; doubled by each failing spell in a row */
};

struct proc_table;

/** A table of at most @a cap processes (0: TARGETS_MAX_PROCS). Returns 0 or -ENOMEM. */
PYPROFD_WARN_UNUSED int proc_table_new(size_t cap, struct proc_table **out);
/** Frees; the entries' targets are the caller's. NULL is a no-op. */
void proc_table_free(struct proc_table *t);

/** The entry of @a key, or NULL. */
struct proc_entry *proc_table_find(struct proc_table *t, const struct proc_key *key);
/**
 * Adds @a key as a new entry (state new, seen). When the table is full an
 * entry known not to be Python is forgotten to make room (it is looked at
 * again like a new one if still there). Returns NULL when every entry
 * matters (all Python).
 */
struct proc_entry *proc_table_add(struct proc_table *t, const struct proc_key *key);
size_t proc_table_count(const struct proc_table *t);
/** Entry @a i (< proc_table_count()). */
struct proc_entry *proc_table_at(struct proc_table *t, size_t i);
/** Sets every entry's seen flag to @a seen (before a scan: false). */
void proc_table_mark(struct proc_table *t, bool seen);
/**
 * Forgets every entry not seen. An entry that still has a target is passed
 * to @a gone first (the caller ends the target). Entries stay in order.
 */
void proc_table_sweep(struct proc_table *t, void (*gone)(struct proc_entry *p, void *arg),
                      void *arg);
/*
 * The entry's transitions besides proc_judge()'s verdicts: the only writes
 * of its state by its users (the loop), so the state machine
 *
 *   new -> (judged) -> young | not_python | unsupported | unreadable |
 *                      dropped | over_limit | active
 *   active -> failed (its target could not start)    proc_entry_fail()
 *   active -> new    (its target ended: judged again) proc_entry_requeue()
 *   active -> new    (attached again from scratch)    proc_entry_reattach()
 *   active -> active (its pod's labels changed)       proc_entry_relabelled()
 *   any    -> gone   (not seen by a scan, or exited)  proc_entry_lost(),
 *                                                     proc_table_sweep()
 *
 * lives in this file alone.
 */

/** A verdict "active" was carried out: @a p is sampled as @a target (the caller's). */
void proc_entry_activate(struct proc_entry *p, void *target);
/**
 * Starting its target failed: state failed, looked at again at @a recheck;
 * @a reason when p->reason does not already say why (NULL: keep it).
 */
void proc_entry_fail(struct proc_entry *p, const char *reason, uint64_t recheck);
/** Its target (if any) ended or must: forgotten, and @a p judged again at the next scan. */
void proc_entry_requeue(struct proc_entry *p);
/**
 * Its target ended to be attached again from scratch because of @a why
 * (words for /targets): requeued, counted; @a stuck_ns is how long the next
 * spell of failing attempts may last (0: the default).
 */
void proc_entry_reattach(struct proc_entry *p, const char *why, uint64_t stuck_ns);
/** Its target carries on with its pod's labels of revision @a pod_rev. */
void proc_entry_relabelled(struct proc_entry *p, uint64_t pod_rev);
/** The process is gone (the scan in progress found it exited): the sweep forgets it. */
void proc_entry_lost(struct proc_entry *p);

/**
 * After a config change: every verdict that depends on the config (active,
 * dropped, over_limit, failed, young) is to be made again at the next scan.
 * The caller has ended the targets.
 */
void proc_table_forget_verdicts(struct proc_table *t);

/** The outside world proc_judge() asks, for tests. */
struct probe_ops {
    /** Opens a memory reader for @a pid (memread_open()'s results). */
    int (*open)(void *arg, pid_t pid, struct memread **out);
    /** Finds the runtime (pyruntime_locate()'s results). */
    int (*locate)(void *arg, const char *proc_root, pid_t pid, struct memread *mr,
                  struct pyruntime *out, char *why, size_t why_len);
    /** Reads the OpenTelemetry process context (otel_process_locate()'s
     * results); NULL: none is looked for. */
    enum otel_process_fail (*context)(void *arg, const char *proc_root, pid_t pid,
                                      struct memread *mr, struct otel_process *out, bool *gone);
    void *arg;
};

/**
 * Process contexts read by proc_judge() (and the targets' re-reads), by
 * outcome (enum otel_process_fail): for /metrics, from any thread.
 */
uint64_t targets_context_reads(enum otel_process_fail f);
/** Counts one outcome of a process context read. */
void targets_context_count(enum otel_process_fail f);

/** The real one: memread_open(pid, MEMREAD_AUTO) and pyruntime_locate(). */
extern const struct probe_ops probe_system;

/**
 * Pod metadata for proc_judge() (discovery.kubernetes: daemon/podmeta.h;
 * a fake in tests): the __meta_kubernetes_* labels of a container.
 */
/** Every label a pod source adds starts with this. */
#define POD_SOURCE_PREFIX "__meta_kubernetes_"

struct pod_source {
    /**
     * Adds container @a container_id's pod labels to @a meta and stores
     * their revision (never 0) in *@a rev. Returns 1 (found), 0 (not found:
     * *@a rev = 0) or -ENOMEM.
     */
    int (*lookup)(void *arg, const char *container_id, struct labels *meta, uint64_t *rev);
    /** Changes whenever some lookup's answer would. */
    uint64_t (*generation)(void *arg);
    void *arg;
};

/** What proc_judge() decided. */
struct verdict {
    /* the new state; PROC_ACTIVE: start a target with what follows */
    enum proc_state state;
    bool gone;            /* the process exited meanwhile: forget it */
    bool log;             /* a state worth one log line was entered (the reason says why) */
    size_t job;           /* PROC_ACTIVE: index into cfg->jobs */
    struct labels meta;   /* PROC_ACTIVE: discovered labels (owned) */
    struct labels labels; /* PROC_ACTIVE: after relabeling, external labels added (owned) */
    struct memread *mr;   /* PROC_ACTIVE: owned */
    struct pyruntime *rt; /* PROC_ACTIVE: owned (alloc_free) */
    /* PROC_ACTIVE: the OpenTelemetry process context read (header 0: none) */
    uint64_t otel_header, otel_published;
    bool otel_thread; /* ... announces a thread context (threadlocal.schema_version) */
};

/** Releases what a verdict owns (after a failed start, say); leaves it zeroed. */
void verdict_release(struct verdict *v);

/**
 * Looks at process @a p, reported by a scan as @a info, at @a now (monotonic
 * ns) under @a cfg: its age, memory, runtime and version, its meta labels (its
 * pod's too, from @a pods when not NULL and it has a container id) and each
 * job's relabeling in turn (the first job that keeps it wins). Updates
 * @a p (state, reason, version, comm, recheck time) and fills @a v; the
 * caller starts the target for PROC_ACTIVE (or sets the state to failed)
 * and releases @a v. @a ntargets targets exist, at most @a max_targets may.
 */
void proc_judge(const struct pyprofd_config *cfg, const struct probe_ops *probe,
                const struct pod_source *pods, struct proc_entry *p, const struct proc_info *info,
                uint64_t now, size_t ntargets, size_t max_targets, struct verdict *v);

/**
 * The labels job @a job gives a process with meta labels @a meta: those, plus
 * job, through its relabel_configs (*@a keep false: dropped), then the
 * default service_name and the external labels. Returns 0 or -ENOMEM.
 */
PYPROFD_WARN_UNUSED int targets_job_labels(const struct pyprofd_config *cfg,
                                           const struct config_job *job, const struct labels *meta,
                                           struct labels *out, bool *keep);

#endif /* PYPROFD_DAEMON_TARGETS_H */
