/* SPDX-License-Identifier: MIT */
/*
 * memread_vm.c: the process_vm_readv(2) backend. One system call copies all
 * ranges; the kernel stops at the first range it cannot copy, so a total below
 * the requested one is reported as -EFAULT (the caller treats the sample as
 * torn), not retried. The same ops also serve MEMREAD_PROCMEM and the AUTO
 * fallback (use_procmem), so a reader can switch without replacing its ops.
 */
#include "base/compat.h"

#include <sys/uio.h>
#include <unistd.h>

#include "base/alloc.h"
#include "memread/memread_internal.h"

static int memread_vm_errno(int e)
{
    switch (e) {
    case EACCES:
    case EPERM:
        return -EPERM;
    case ESRCH:
        return -ESRCH;
    case EFAULT:
    case EIO:
        return -EFAULT;
    default:
        return -e;
    }
}

static int memread_vm_readv(void *priv, const struct memread_iov *iov, size_t n)
{
    struct memread_proc *p = priv;
    if (p->use_procmem)
        return memread_procmem_readv(p, iov, n);

    struct iovec local[MEMREAD_MAX_IOV];
    struct iovec remote[MEMREAD_MAX_IOV];
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        local[i].iov_base = iov[i].local;
        local[i].iov_len = iov[i].len;
        remote[i].iov_base = (void *)(uintptr_t)iov[i].raddr;
        remote[i].iov_len = iov[i].len;
        total += iov[i].len;
    }
    if (total == 0)
        return 0;
    ssize_t got = process_vm_readv(p->pid, local, n, remote, n, 0);
    if (got < 0) {
        int e = errno;
        if (e == ENOSYS && p->auto_fallback) {
            int err = memread_procmem_open(p);
            if (err)
                return err;
            p->use_procmem = true;
            return memread_procmem_readv(p, iov, n);
        }
        return memread_vm_errno(e);
    }
    return (size_t)got == total ? 0 : -EFAULT;
}

static void memread_vm_close(void *priv)
{
    struct memread_proc *p = priv;
    if (!p)
        return;
    if (p->mem_fd >= 0)
        close(p->mem_fd);
    alloc_free(p);
}

const struct memread_ops memread_vm_ops = {
    .name = MEMREAD_VM_NAME,
    .readv = memread_vm_readv,
    .close = memread_vm_close,
};
