/* SPDX-License-Identifier: MIT */
/*
 * perfsample.h: the kernel's own samples of one thread, for native (C)
 * stacks: a per-thread perf event (the software task-clock, which counts
 * only while the thread is on a CPU; these machines have no hardware PMU)
 * that at every period copies the thread's user registers and the top of its
 * user stack into a ring buffer shared with pyprofd, without stopping the
 * thread. The copy is unwound later with the binaries' DWARF call-frame
 * information (unwind/native.h), as `perf record --call-graph dwarf` does.
 *
 *   perfsample_open()   opens the event on thread @a tid of another process
 *                       (CAP_SYS_PTRACE or CAP_PERFMON, perf_event_paranoid,
 *                       the runtime's seccomp profile: perfsample_probe());
 *   perfsample_next()   the next sample in the ring, copied out, or none;
 *   perfsample_parse()  one PERF_RECORD_SAMPLE record of the layout this
 *                       module asks for, bounds-checked: the ring is filled
 *                       by the kernel, but its contents describe another
 *                       process (a stack copy is untrusted memory), and the
 *                       fuzz target feeds it anything.
 *
 * Ownership: a struct perfsample owns its file descriptor and mapping; a
 * struct perfsample_record points into a buffer the caller owns (the ring's
 * copy, valid until the next perfsample_next()).
 *
 * Errors: negative errno. perfsample_open() says why in words too: EACCES
 * (perf_event_paranoid, or no capability), EPERM (a seccomp filter, or the
 * process may not be traced), ENOENT/ESRCH (the thread is gone), ENOSYS.
 *
 * Thread safety: one thread at a time per struct perfsample.
 */
#ifndef PYPROFD_PERF_PERFSAMPLE_H
#define PYPROFD_PERF_PERFSAMPLE_H

#include "base/compat.h"

#include <sys/types.h>

/* The user registers asked for (x86-64), in the order the kernel writes them
 * (ascending bit of enum perf_event_x86_regs). */
enum perfsample_reg {
    PERFSAMPLE_AX,
    PERFSAMPLE_BX,
    PERFSAMPLE_CX,
    PERFSAMPLE_DX,
    PERFSAMPLE_SI,
    PERFSAMPLE_DI,
    PERFSAMPLE_BP,
    PERFSAMPLE_SP,
    PERFSAMPLE_IP,
    PERFSAMPLE_R8,
    PERFSAMPLE_R9,
    PERFSAMPLE_R10,
    PERFSAMPLE_R11,
    PERFSAMPLE_R12,
    PERFSAMPLE_R13,
    PERFSAMPLE_R14,
    PERFSAMPLE_R15,
    PERFSAMPLE_NREGS
};

/* The kernel's bit for each of them (enum perf_event_x86_regs). */
#define PERFSAMPLE_REGS_MASK 0x0000000000ff01ffull /* AX..IP (0-8), R8..R15 (16-23) */

#define PERFSAMPLE_STACK_MIN 1024u  /* bytes of user stack copied per sample, at least */
#define PERFSAMPLE_STACK_MAX 65528u /* ... at most (the kernel's limit) */

/** One sample, as parsed. Pointers into the buffer given to perfsample_parse(). */
struct perfsample_record {
    uint32_t pid, tid; /* as the agent's PID namespace sees them */
    uint64_t time_ns;  /* perf_clock (CLOCK_MONOTONIC with use_clockid) */
    uint64_t cpu_ns;   /* the thread's CPU time (the task clock) at the sample */
    bool regs_valid;   /* false: the thread was in the kernel with no user state */
    uint64_t regs[PERFSAMPLE_NREGS];
    const uint8_t *stack; /* the copy of the user stack from regs[SP] up */
    size_t stack_len;     /* bytes of it that hold data (the kernel's dyn_size) */
};

/**
 * Parses one PERF_RECORD_SAMPLE record of @a len bytes at @a rec (header
 * included) with this module's sample layout. Returns 0, -ENOMSG for another
 * record type (not an error: lost counts, throttling), or -EINVAL for a
 * malformed one. Never reads outside [rec, rec + len).
 */
PYPROFD_WARN_UNUSED int perfsample_parse(const uint8_t *rec, size_t len,
                                         struct perfsample_record *out);

struct perfsample;

/**
 * Opens sampling of thread @a tid (of process @a pid, for the messages) every
 * @a period_ns of its CPU time, copying @a stack_bytes (rounded to 8, clamped
 * to PERFSAMPLE_STACK_MIN..MAX) of its user stack per sample into a ring of
 * 2^@a ring_pages_log2 pages. Returns 0, or a negative errno with the reason
 * in @a why.
 */
PYPROFD_WARN_UNUSED int perfsample_open(pid_t pid, pid_t tid, uint64_t period_ns,
                                        uint32_t stack_bytes, unsigned ring_pages_log2,
                                        struct perfsample **out, char *why, size_t whylen);
/** Closes; NULL is a no-op. */
void perfsample_free(struct perfsample *p);

/**
 * The next sample in the ring, copied out of it (records may wrap), in
 * @a out (valid until the next call). Returns 1 (a sample), 0 (the ring is
 * empty), or -EINVAL (a malformed record: the ring is reset). Records that
 * are not samples are skipped; PERF_RECORD_LOST adds to perfsample_lost().
 */
int perfsample_next(struct perfsample *p, struct perfsample_record *out);
/**
 * The thread's CPU time now (the task clock's count, one read()): less the
 * sample's cpu_ns, how long the thread ran since that sample. Returns 0 or
 * a negative errno.
 */
int perfsample_cpu_ns(const struct perfsample *p, uint64_t *out);
/**
 * Samples every @a period_ns of the thread's CPU time from the next sample
 * on (PERF_EVENT_IOC_PERIOD: the agent's CPU budget). Returns 0 or a
 * negative errno.
 */
int perfsample_set_period(struct perfsample *p, uint64_t period_ns);
/**
 * The event's file descriptor, for poll()/epoll: readable when a sample is
 * in the ring (every sample wakes). Owned by @a p.
 */
int perfsample_fd(const struct perfsample *p);
/** Samples the kernel could not write because the ring was full. */
uint64_t perfsample_lost(const struct perfsample *p);

/**
 * Whether this process may sample another's threads this way, and if not
 * why: opens and closes an event on one of its own threads (a seccomp
 * refusal or a paranoid setting shows at once) and reads
 * /proc/sys/kernel/perf_event_paranoid. Returns 0 or the negative errno of
 * the refusal, with words in @a why either way.
 */
int perfsample_probe(char *why, size_t whylen);

#endif /* PYPROFD_PERF_PERFSAMPLE_H */
