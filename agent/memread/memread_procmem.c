/* SPDX-License-Identifier: MIT */
/*
 * memread_procmem.c: the /proc/PID/mem backend. One pread(2) per range. The
 * kernel answers EIO for an unmapped address and end-of-file once the target's
 * address space is gone, which is how an exited process shows up here.
 */
#include "base/compat.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include "memread/memread_internal.h"

int memread_procmem_open(struct memread_proc *p)
{
    if (p->mem_fd >= 0)
        return 0;
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/mem", (int)p->pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT || errno == ESRCH)
            return -ESRCH;
        if (errno == EACCES || errno == EPERM)
            return -EPERM;
        return -errno;
    }
    p->mem_fd = fd;
    return 0;
}

static bool memread_procmem_gone(pid_t pid)
{
    return kill(pid, 0) < 0 && errno == ESRCH;
}

int memread_procmem_readv(struct memread_proc *p, const struct memread_iov *iov, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (iov[i].len == 0)
            continue;
        if (iov[i].raddr > (uint64_t)INT64_MAX)
            return -EFAULT; /* pread's offset is signed */
        ssize_t got = pread(p->mem_fd, iov[i].local, iov[i].len, (off_t)iov[i].raddr);
        if (got < 0) {
            if (errno == EIO || errno == EFAULT)
                return -EFAULT;
            if (errno == EACCES || errno == EPERM)
                return -EPERM;
            if (errno == ESRCH)
                return -ESRCH;
            return -errno;
        }
        if (got == 0 && memread_procmem_gone(p->pid))
            return -ESRCH;
        if ((size_t)got != iov[i].len)
            return -EFAULT;
    }
    return 0;
}
