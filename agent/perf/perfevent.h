/* SPDX-License-Identifier: MIT */
/*
 * perfevent.h: the perf-event stage's common part. One perf event on one
 * thread of another process (perf_event_open with cpu -1), with its ring
 * buffer mapped, and the words for a refusal. Its two users:
 *
 *   perf/perfsample.h  the kernel's samples of a thread, with registers and
 *                      a stack copy (native frames, issue 25);
 *   perf/switches.h    the thread's context switches (whether it ran since
 *                      a moment, without a system call: issue 26).
 *
 * What the kernel asks: ptrace read access to the thread (CAP_SYS_PTRACE for
 * another user's process), perf_event_paranoid <= 2 for events that exclude
 * the kernel, or CAP_PERFMON (CAP_SYS_ADMIN stands in) at any level; the
 * container runtime's seccomp profile allows the call only with one of
 * those capabilities. A mapped ring is locked memory: perf_event_mlock_kb
 * per CPU and user, then RLIMIT_MEMLOCK, unless CAP_IPC_LOCK.
 *
 * Ownership: a struct perfevent owns its descriptor and mapping. Errors:
 * negative errno, with words in @a why. Thread safety: one thread at a time
 * per event; perfevent_why() and perfevent_probe() from any thread.
 */
#ifndef PYPROFD_PERF_PERFEVENT_H
#define PYPROFD_PERF_PERFEVENT_H

#include "base/compat.h"

#include <linux/perf_event.h>
#include <sys/types.h>

struct perfevent {
    int fd;                            /* -1: closed */
    struct perf_event_mmap_page *page; /* the kernel's page: data_head, ... */
    size_t map_len;                    /* 0: not mapped */
    const uint8_t *data;               /* the ring: data_size bytes after the page */
    uint64_t data_size;                /* a power of two */
};

/** An event that is not open (fd -1), for structures set up before perfevent_open(). */
#define PERFEVENT_CLOSED ((struct perfevent){.fd = -1})

/**
 * Opens event @a attr on thread @a tid (as this process's PID namespace sees
 * it) and maps its page and a ring of 2^@a ring_pages_log2 pages (at most
 * 2^10). @a writable: the reader moves data_tail and the kernel never
 * overwrites what was not read (records are lost instead); read-only: the
 * kernel overwrites the oldest records and data_head always moves (with
 * write_backward, the newest record starts at data_head). Returns 0, or a
 * negative errno with words in @a why (the event is then closed).
 */
PYPROFD_WARN_UNUSED int perfevent_open(struct perf_event_attr *attr, pid_t tid,
                                       unsigned ring_pages_log2, bool writable,
                                       struct perfevent *out, char *why, size_t whylen);

/** Unmaps and closes; a closed event is a no-op. */
void perfevent_close(struct perfevent *e);

/**
 * The kernel's data_head, with acquire order: the records it covers are
 * written. It changes whenever a record is written.
 */
static inline uint64_t perfevent_head(const struct perfevent *e)
{
    return __atomic_load_n(&e->page->data_head, __ATOMIC_ACQUIRE);
}

/**
 * Words for @a err, a negative errno of perf_event_open() (0: permitted),
 * with this host's perf_event_paranoid.
 */
void perfevent_why(int err, char *why, size_t whylen);

/**
 * Whether this process may open @a attr on another process's threads, and
 * if not why: opens and closes it (disabled) on one of its own threads, so a
 * seccomp refusal or a paranoid setting shows at once. Returns 0 or the
 * negative errno of the refusal, with words in @a why either way.
 */
int perfevent_probe(const struct perf_event_attr *attr, char *why, size_t whylen);

#endif /* PYPROFD_PERF_PERFEVENT_H */
