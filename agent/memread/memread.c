/* SPDX-License-Identifier: MIT */
/*
 * memread.c: backend selection and the common entry points of the memread
 * seam (see memread.h).
 */
#include "base/compat.h"

#include <signal.h>

#include "base/alloc.h"
#include "memread/memread.h"
#include "memread/memread_internal.h"

struct memread {
    const struct memread_ops *ops;
    void *priv;
    pid_t pid;
};

static int memread_check_alive(pid_t pid)
{
    if (pid <= 0)
        return -ESRCH;
    if (kill(pid, 0) == 0 || errno == EPERM)
        return 0;
    return -ESRCH;
}

int memread_open(pid_t pid, enum memread_backend backend, struct memread **out)
{
    int err = memread_check_alive(pid);
    if (err)
        return err;
    struct memread_proc *p = alloc_calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    p->pid = pid;
    p->mem_fd = -1;
    p->auto_fallback = backend == MEMREAD_AUTO;
    if (backend == MEMREAD_PROCMEM) {
        p->use_procmem = true;
        err = memread_procmem_open(p);
        if (err) {
            alloc_free(p);
            return err;
        }
    }
    err = memread_new_custom(&memread_vm_ops, p, out);
    if (!err)
        (*out)->pid = pid;
    return err;
}

int memread_new_custom(const struct memread_ops *ops, void *priv, struct memread **out)
{
    struct memread *mr = alloc_calloc(1, sizeof(*mr));
    if (!mr) {
        if (ops->close)
            ops->close(priv);
        return -ENOMEM;
    }
    mr->ops = ops;
    mr->priv = priv;
    *out = mr;
    return 0;
}

int memread_readv(struct memread *mr, const struct memread_iov *iov, size_t n)
{
    if (n > MEMREAD_MAX_IOV)
        return -EINVAL;
    for (size_t i = 0; i < n; i++) {
        /* past the end of the address space: unmapped, like any wild address
         * (a torn read can hand the caller one; it must fail like the others,
         * not as a usage error the caller would not retry around) */
        if (iov[i].len > 0 && iov[i].raddr + iov[i].len - 1 < iov[i].raddr)
            return -EFAULT;
    }
    return mr->ops->readv(mr->priv, iov, n);
}

int memread_read(struct memread *mr, uint64_t raddr, void *buf, size_t len)
{
    struct memread_iov iov = {.raddr = raddr, .local = buf, .len = len};
    return memread_readv(mr, &iov, 1);
}

const char *memread_backend_name(const struct memread *mr)
{
    if (mr->ops == &memread_vm_ops) {
        const struct memread_proc *p = mr->priv;
        return p->use_procmem ? MEMREAD_PROCMEM_NAME : MEMREAD_VM_NAME;
    }
    return mr->ops->name;
}

pid_t memread_pid(const struct memread *mr)
{
    return mr->pid;
}

void memread_free(struct memread *mr)
{
    if (!mr)
        return;
    if (mr->ops->close)
        mr->ops->close(mr->priv);
    alloc_free(mr);
}

const char *memread_strerror(int err)
{
    switch (err) {
    case 0:
        return "success";
    case -ESRCH:
        return "process is gone";
    case -EPERM:
        return "operation not permitted"; /* what refused it: discovery/privileges.h */
    case -EFAULT:
        return "address not mapped or short read";
    case -EINVAL:
        return "invalid read request";
    case -ENOMEM:
        return "out of memory";
    default:
        return strerror(-err);
    }
}
