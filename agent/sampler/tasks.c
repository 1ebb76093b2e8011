/* SPDX-License-Identifier: MIT */
/*
 * tasks.c: a target's threads, listed once for the whole sampler (see
 * tasks.h).
 */
#include "base/compat.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/strnum.h"
#include "sampler/tasks.h"

/* A getdents64 record's fixed part: inode, offset, length, type, then the name. */
#define TASKS_DIRENT_NAME 19u

bool tasks_parse(const void *buf, size_t len, pid_t *tids, size_t max, size_t *n, bool *more)
{
    const unsigned char *p = buf;
    size_t at = 0;
    while (at < len) {
        if (len - at < TASKS_DIRENT_NAME + 1)
            return false;
        size_t reclen = (size_t)p[at + 16] | (size_t)p[at + 17] << 8;
        if (reclen < TASKS_DIRENT_NAME + 1 || reclen > len - at)
            return false;
        const char *name = (const char *)p + at + TASKS_DIRENT_NAME;
        size_t namelen = strnlen(name, reclen - TASKS_DIRENT_NAME);
        if (namelen == reclen - TASKS_DIRENT_NAME)
            return false; /* no terminating NUL inside the record */
        int64_t tid;
        if (namelen && namelen <= 10 && strnum_parse_i64(name, 1, INT32_MAX, &tid) == 0) {
            if (*n < max)
                tids[(*n)++] = (pid_t)tid;
            else if (more)
                *more = true;
        }
        at += reclen;
    }
    return true;
}

int tasks_list(const char *proc_root, pid_t pid, pid_t *tids, size_t max, size_t *n, bool *more)
{
    char path[PATH_MAX];
    *n = 0;
    if (more)
        *more = false;
    int len = snprintf(path, sizeof(path), "%s/%d/task", proc_root, (int)pid);
    if (len < 0 || (size_t)len >= sizeof(path))
        return -ENAMETOOLONG;
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? -ESRCH : -errno;
    /* aligned for the kernel's records (8-byte inode and offset fields) */
    union {
        uint64_t align;
        unsigned char bytes[4096];
    } buf;
    int err = 0;
    for (;;) {
        long got = syscall(SYS_getdents64, fd, buf.bytes, sizeof(buf.bytes));
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            err = errno == ENOENT ? -ESRCH : -errno;
            break;
        }
        if (got == 0)
            break;
        if (!tasks_parse(buf.bytes, (size_t)got, tids, max, n, more)) {
            err = -EIO;
            break;
        }
    }
    close(fd);
    return err;
}
