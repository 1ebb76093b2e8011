/* SPDX-License-Identifier: MIT */
/*
 * memread_internal.h: what the built-in backends share with memread.c. Not for
 * use outside agent/memread/.
 */
#ifndef PYPROFD_MEMREAD_INTERNAL_H
#define PYPROFD_MEMREAD_INTERNAL_H

#include "base/compat.h"

#include <sys/types.h>

#include "memread/memread.h"

/** State of the process_vm_readv and /proc/PID/mem backends. */
struct memread_proc {
    pid_t pid;
    int mem_fd; /* /proc/PID/mem, or -1 until needed */
    bool use_procmem;
    bool auto_fallback; /* switch to /proc/PID/mem when the kernel says ENOSYS */
};

extern const struct memread_ops memread_vm_ops;
/** Backend names, as memread_backend_name() reports them. */
#define MEMREAD_VM_NAME      "process_vm_readv"
#define MEMREAD_PROCMEM_NAME "/proc/pid/mem"

/** Opens /proc/PID/mem for @a p. Returns 0, -ESRCH or -EPERM. */
int memread_procmem_open(struct memread_proc *p);

/** Reads via pread on /proc/PID/mem (the PROCMEM backend's readv). */
int memread_procmem_readv(struct memread_proc *p, const struct memread_iov *iov, size_t n);

#endif /* PYPROFD_MEMREAD_INTERNAL_H */
