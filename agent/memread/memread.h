/* SPDX-License-Identifier: MIT */
/*
 * memread.h: the seam for every read of another process's memory.
 *
 * Remote addresses are uint64_t values named *_raddr, never pointers. A
 * struct memread is bound to one process and one backend:
 *  - MEMREAD_VM:      process_vm_readv(2), several ranges in one system call;
 *  - MEMREAD_PROCMEM: pread(2) on /proc/PID/mem, for kernels or sandboxes
 *                     without process_vm_readv;
 *  - MEMREAD_AUTO:    VM, switching to PROCMEM for good if the kernel answers
 *                     ENOSYS;
 *  - custom ops:      memread_new_custom(), used by tests (an in-memory image)
 *                     and anything else that must pretend to be a process.
 *
 * Results (every read function): 0 when every byte of every range was read,
 * otherwise one of
 *  -ESRCH   the process is gone (exited, or reaped);
 *  -EPERM   the kernel refused access (ptrace access mode check failed; needs
 *           root or CAP_SYS_PTRACE);
 *  -EFAULT  a range is unmapped or only partly readable (a short read), or
 *           lies (partly) beyond the end of the address space: addresses
 *           come from the target's memory, so a wild one is the target's
 *           data, not the caller's bug;
 *  -EINVAL  bad arguments (more than MEMREAD_MAX_IOV ranges);
 * plus other negative errno values from the kernel, passed through. The
 * contents of the local buffers are unspecified after a failure.
 *
 * Per-sample use: reads neither allocate nor log.
 *
 * Thread safety: a struct memread may be used by one thread at a time.
 */
#ifndef PYPROFD_MEMREAD_MEMREAD_H
#define PYPROFD_MEMREAD_MEMREAD_H

#include "base/compat.h"

#include <sys/types.h>

/** At most this many ranges per memread_readv() call (the kernel's IOV_MAX). */
#define MEMREAD_MAX_IOV 1024

enum memread_backend {
    MEMREAD_AUTO = 0,
    MEMREAD_VM,
    MEMREAD_PROCMEM,
};

/** One range to copy: @c len bytes at remote @c raddr into local @c local. */
struct memread_iov {
    uint64_t raddr;
    void *local;
    size_t len;
};

struct memread;

/** Backend implementation, for memread_new_custom(). */
struct memread_ops {
    const char *name;
    /** Reads all @a n ranges; returns 0 or a negative errno as described above. */
    int (*readv)(void *priv, const struct memread_iov *iov, size_t n);
    /** Releases @a priv; may be NULL. */
    void (*close)(void *priv);
};

/**
 * Opens a reader for process @a pid with @a backend. Returns 0 and the reader
 * in @a out (caller owns it; memread_free()), or -ESRCH if no such process,
 * -EPERM if /proc/PID/mem may not be opened (PROCMEM), -ENOMEM.
 */
PYPROFD_WARN_UNUSED int memread_open(pid_t pid, enum memread_backend backend, struct memread **out);

/**
 * Wraps @a ops and @a priv (takes ownership of @a priv: ops->close runs in
 * memread_free, also when this function fails). @a ops is borrowed and must
 * outlive the reader.
 */
PYPROFD_WARN_UNUSED int memread_new_custom(const struct memread_ops *ops, void *priv,
                                           struct memread **out);

/** Reads @a n ranges (n <= MEMREAD_MAX_IOV) in as few system calls as the backend allows. */
PYPROFD_WARN_UNUSED int memread_readv(struct memread *mr, const struct memread_iov *iov, size_t n);

/** Reads @a len bytes at @a raddr into @a buf. */
PYPROFD_WARN_UNUSED int memread_read(struct memread *mr, uint64_t raddr, void *buf, size_t len);

/** Name of the backend in use ("process_vm_readv", "/proc/pid/mem", or the custom name). */
const char *memread_backend_name(const struct memread *mr);

/** The process this reader was opened on (0 for custom readers). */
pid_t memread_pid(const struct memread *mr);

/** Closes the reader; NULL is a no-op. */
void memread_free(struct memread *mr);

/** Short description of a memread result, for callers' messages. */
const char *memread_strerror(int err);

#endif /* PYPROFD_MEMREAD_MEMREAD_H */
