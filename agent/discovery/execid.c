/* SPDX-License-Identifier: MIT */
/*
 * execid.c: a process's program image, by its AT_RANDOM bytes (see execid.h).
 */
#include "base/compat.h"

#include <limits.h>

#include "base/bytes.h"
#include "base/readfile.h"
#include "discovery/execid.h"

#define EXECID_AT_NULL   0u
#define EXECID_AT_RANDOM 25u

int execid_auxv_value(const uint8_t *data, size_t len, uint64_t type, uint64_t *value)
{
    for (size_t off = 0; off + 16 <= len; off += 16) {
        uint64_t t = load_le64(data + off), v = load_le64(data + off + 8);
        if (t == EXECID_AT_NULL)
            return -ENOENT;
        if (t == type) {
            if (v == 0)
                return -ENOENT;
            *value = v;
            return 0;
        }
    }
    return -EINVAL; /* ran out before AT_NULL */
}

int execid_parse_auxv(const uint8_t *data, size_t len, uint64_t *raddr)
{
    return execid_auxv_value(data, len, EXECID_AT_RANDOM, raddr);
}

int execid_read(const char *proc_root, pid_t pid, struct memread *mr, struct exec_id *out)
{
    memset(out, 0, sizeof(*out));
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%d/auxv", proc_root, (int)pid);
    char buf[EXECID_AUXV_MAX + 1]; /* (and readfile_into()'s NUL) */
    size_t have = 0;
    int err =
        readfile_into(path, buf, sizeof(buf), &have, READFILE_INTO_KERNEL | READFILE_INTO_GONE);
    if (err)
        return err; /* -ESRCH: it exited */
    if (have == 0)
        return -ESRCH; /* a zombie's (or kernel thread's) vector is empty */
    uint64_t raddr = 0;
    err = execid_parse_auxv((const uint8_t *)buf, have, &raddr);
    if (err)
        return err;
    err = memread_read(mr, raddr, out->random, sizeof(out->random));
    if (err) {
        memset(out, 0, sizeof(*out));
        return err;
    }
    out->random_raddr = raddr;
    return 0;
}

int execid_check(struct memread *mr, const struct exec_id *id, bool *same)
{
    *same = true;
    if (id->random_raddr == 0)
        return 0;
    uint8_t now[EXECID_RANDOM_LEN];
    int err = memread_read(mr, id->random_raddr, now, sizeof(now));
    if (err == -EFAULT) {
        *same = false; /* the address is not in the process's image any more */
        return 0;
    }
    if (err)
        return err;
    *same = memcmp(now, id->random, sizeof(now)) == 0;
    return 0;
}
