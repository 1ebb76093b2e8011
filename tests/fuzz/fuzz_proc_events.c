/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: a datagram of the kernel's proc connector
 * (discovery/proc_events.c). The socket only takes the kernel's messages,
 * but the parser must stay inside what recv() returned whatever it holds:
 * every event delivered names a positive PID, the counts add up, and a
 * parse of any prefix delivers no more than the whole.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "discovery/proc_events.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int on_event(enum proc_events_kind kind, pid_t pid, pid_t ppid, int err, uint64_t when,
                    void *arg)
{
    (void)when;
    int *n = arg;
    PYPROFD_ASSERT(kind == PROC_EVENTS_ACK || pid > 0);
    PYPROFD_ASSERT(ppid >= 0);
    PYPROFD_ASSERT(err >= 0 && err < 4096 + 1);
    (*n)++;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* a copy of exactly @size bytes: a read past it is ASan's to catch */
    unsigned char *buf = alloc_malloc(size ? size : 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    int n = 0;
    struct proc_events_counts c = {0};
    int rc = proc_events_parse(buf, size, on_event, &n, &c);
    PYPROFD_ASSERT(rc == -EINVAL || rc == n);
    PYPROFD_ASSERT(c.malformed == (rc == -EINVAL ? 1u : 0u));
    PYPROFD_ASSERT(c.exec + c.fork <= (uint64_t)n);
    int m = 0;
    struct proc_events_counts d = {0};
    (void)proc_events_parse(buf, size / 2, on_event, &m, &d);
    PYPROFD_ASSERT(m <= n);
    alloc_free(buf);
    return 0;
}
