/* SPDX-License-Identifier: MIT */
/*
 * proc_events.h: the kernel's process events (the netlink proc connector,
 * <linux/cn_proc.h>) as discovery uses them: which process just exec'd, which
 * process was just forked. A pure parser of what one recv() returned, so the
 * fuzz target and the unit tests need no socket; discovery/proc_watch.h owns
 * the socket.
 *
 * A datagram is a run of netlink messages (struct nlmsghdr), each holding a
 * connector message (struct cn_msg, id CN_IDX_PROC/CN_VAL_PROC) whose data is
 * one struct proc_event. Everything is checked against the bytes received:
 * a length that runs past them, a connector id that is not the proc
 * connector's, an event shorter than its kind needs — each ends the parse of
 * that datagram as malformed (what came before it was delivered). Unknown
 * event kinds are counted and skipped: a newer kernel may send more.
 *
 * Kinds delivered: PROC_EVENTS_EXEC (the process @pid ran execve()),
 * PROC_EVENTS_FORK (a new process @pid with parent @ppid; a new thread — a
 * fork event whose child TID is not its TGID — is counted, not delivered),
 * PROC_EVENTS_ACK (the answer to a subscription: @err is its errno, 0 for
 * success). PIDs are in the initial PID namespace, as the kernel sends them.
 *
 * Thread safety: stateless; the counts belong to the caller.
 */
#ifndef PYPROFD_DISCOVERY_PROC_EVENTS_H
#define PYPROFD_DISCOVERY_PROC_EVENTS_H

#include "base/compat.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum proc_events_kind {
    PROC_EVENTS_EXEC,
    PROC_EVENTS_FORK,
    PROC_EVENTS_ACK,
};

struct proc_events_counts {
    uint64_t exec;      /* process exec events delivered */
    uint64_t fork;      /* process fork events delivered */
    uint64_t threads;   /* fork events of a new thread: skipped */
    uint64_t other;     /* kinds discovery does not use (exit, comm, uid, ...) */
    uint64_t malformed; /* datagrams cut short by a bad length or id */
};

/**
 * Called once per delivered event: @a kind, the process @a pid (its TGID),
 * @a ppid (its parent's TGID for a fork, else 0), @a err (an ack's errno,
 * else 0), the kernel's @a when_ns (ns since boot, CLOCK_BOOTTIME; 0 for an
 * ack). Returns 0 to go on, non-zero to stop the parse.
 */
typedef int (*proc_events_fn)(enum proc_events_kind kind, pid_t pid, pid_t ppid, int err,
                              uint64_t when_ns, void *arg);

/**
 * Parses the @a len bytes of one datagram @a buf (any alignment) and calls
 * @a fn for each event discovery uses, counting into @a counts. Returns the
 * number of events delivered, or -EINVAL when the datagram was malformed
 * (after delivering what preceded the fault; counts->malformed moved), or
 * what non-zero @a fn returned, negated if positive.
 */
int proc_events_parse(const void *buf, size_t len, proc_events_fn fn, void *arg,
                      struct proc_events_counts *counts);

/**
 * Writes into @a buf (at least PROC_EVENTS_SUBSCRIBE_MAX bytes) the netlink
 * message that subscribes (@a on) or unsubscribes a socket, with @a seq. When
 * @a filtered, it asks the kernel (6.6 and later) for fork and exec events
 * only; older kernels ignore that form (no ack): send the plain one then.
 * Returns the message's length.
 */
#define PROC_EVENTS_SUBSCRIBE_MAX 64
size_t proc_events_subscribe_msg(void *buf, bool on, bool filtered, uint32_t seq, pid_t self);

#endif /* PYPROFD_DISCOVERY_PROC_EVENTS_H */
