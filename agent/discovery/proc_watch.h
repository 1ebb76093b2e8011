/* SPDX-License-Identifier: MIT */
/*
 * proc_watch.h: new processes between discovery's full scans (issue 38). A
 * full scan of the proc root every refresh interval (10 s) misses a process
 * that lives 0.3 s; reading every process's files every 100 ms would cost a
 * core. The watch tells the daemon which PIDs are new, as they come, so it
 * looks at those alone, a short delay after their exec (the runtime is set
 * up by then): discovery/proc_scan.h's proc_scan_pids() reads them.
 *
 * Sources, the first that works (discovery.watch: auto), or the one asked:
 *   netlink  the kernel's proc connector (proc_events.h): an event per
 *            fork and exec, as it happens. Needs CAP_NET_ADMIN and the
 *            initial user, PID and network namespaces (a privileged
 *            DaemonSet with hostPID and hostNetwork, or root on the host);
 *            on kernels >= 6.6 the kernel sends fork and exec events only.
 *   poll     the last PID the kernel handed out (the fifth field of
 *            <proc root>/loadavg) every PROC_WATCH_POLL_NS: when it moved,
 *            the PIDs in between that are processes (their status's Tgid is
 *            their PID) are new; past PROC_WATCH_RANGE_MAX of them, the
 *            proc root's listing is read instead. No exec event: a process
 *            seen before its exec is looked at again by the daemon
 *            (proc_watch_again()). Any privilege; needs the proc root to be
 *            of the agent's own PID namespace (loadavg counts the reader's).
 *   off      nothing between scans (also what is left when neither works).
 * Both sources need <proc root>/self to be the agent itself: the PIDs they
 * name are the agent's namespace's, the proc root must number them alike.
 *
 * The watch runs its own thread, which only reads the source and keeps a
 * bounded queue of (PID, due time) entries: a PID queued again moves its due
 * time (a fork, then its exec). A full queue, or a netlink socket that
 * overran, sets the "missed" flag: the daemon then scans at once.
 *
 * Errors: proc_watch_new() returns -ENOMEM or, for a source asked by name
 * that cannot work, -EOPNOTSUPP with the reason in its message buffer; with
 * auto, a source that does not work is said in the message and the next is
 * tried. It never logs.
 *
 * Thread safety: every function may be called from any thread; @notify is
 * called from the watch's thread with none of its locks held.
 */
#ifndef PYPROFD_DISCOVERY_PROC_WATCH_H
#define PYPROFD_DISCOVERY_PROC_WATCH_H

#include "base/compat.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/clock.h"

#define PROC_WATCH_DELAY_NS  40000000ull /* a new process is looked at this long after exec */
#define PROC_WATCH_POLL_NS   20000000ull /* poll: loadavg read this often */
#define PROC_WATCH_BATCH_NS  5000000ull  /* netlink: events gathered this long per wake-up */
#define PROC_WATCH_QUEUE_MAX 4096u       /* PIDs waiting for their look */
#define PROC_WATCH_RANGE_MAX 64u         /* poll: new PIDs checked one by one up to this */

/** discovery.watch, and the source in use. */
enum proc_watch_source {
    PROC_WATCH_AUTO, /* asked only: netlink, else poll */
    PROC_WATCH_NETLINK,
    PROC_WATCH_POLL,
    PROC_WATCH_OFF,
};
#define PROC_WATCH_SOURCES 4

/** "auto", "netlink", "poll", "off". */
const char *proc_watch_source_name(enum proc_watch_source s);
/** The source named @a name; -EINVAL for none. */
int proc_watch_source_parse(const char *name, enum proc_watch_source *out);

struct proc_watch_opts {
    const char *proc_root;       /* copied */
    enum proc_watch_source want; /* AUTO, NETLINK, POLL or OFF */
    const struct clock *clock;   /* NULL: clock_system; due times are on its mono scale */
    uint64_t delay_ns;           /* 0: PROC_WATCH_DELAY_NS */
    uint64_t poll_ns;            /* 0: PROC_WATCH_POLL_NS */
    /* called when an entry due at @due was queued (not under any watch lock) */
    void (*notify)(void *arg, uint64_t due);
    void *notify_arg;
};

/** A PID whose look is due. */
struct proc_watch_item {
    pid_t pid;
    bool exec;     /* it exec'd since it was queued (netlink) */
    uint8_t tries; /* looks asked again by proc_watch_again() */
};

struct proc_watch_stats {
    enum proc_watch_source source;
    uint64_t exec, fork; /* netlink events of processes */
    uint64_t new_pid;    /* poll: new processes found */
    uint64_t threads;    /* new threads skipped (netlink events, poll's PIDs) */
    uint64_t missed;     /* queue full or socket overrun: a full scan was asked */
    uint64_t malformed;  /* netlink datagrams that did not parse */
    uint64_t wakeups;    /* the thread's wake-ups (its cost) */
    uint64_t queued;     /* waiting now */
};

struct proc_watch;

/**
 * Starts a watch with @a opts. On success *@a out is the watch (with source
 * OFF when nothing works under auto) and @a msg says, when it is not empty,
 * why a source was passed over. Returns 0, -ENOMEM, or -EOPNOTSUPP (a source
 * asked by name does not work: @a msg says why).
 */
PYPROFD_WARN_UNUSED int proc_watch_new(const struct proc_watch_opts *opts, struct proc_watch **out,
                                       char *msg, size_t msglen);
/** Stops the thread, unsubscribes and frees. NULL is a no-op. */
void proc_watch_free(struct proc_watch *w);

/** The source in use. */
enum proc_watch_source proc_watch_source(const struct proc_watch *w);

/**
 * Moves up to @a cap entries due by @a now into @a out, earliest first, and
 * returns how many. *@a next is the due time of the earliest left
 * (UINT64_MAX: none).
 */
size_t proc_watch_take(struct proc_watch *w, uint64_t now, struct proc_watch_item *out, size_t cap,
                       uint64_t *next);

/** Queues @a pid again, due at @a due, with @a tries (a look that came too early). */
void proc_watch_again(struct proc_watch *w, pid_t pid, uint64_t due, uint8_t tries);

/** Whether events were lost since the last call (the flag is cleared). */
bool proc_watch_missed(struct proc_watch *w);

/** A copy of the counters. */
void proc_watch_stats(struct proc_watch *w, struct proc_watch_stats *out);

#endif /* PYPROFD_DISCOVERY_PROC_WATCH_H */
