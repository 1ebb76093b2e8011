/* SPDX-License-Identifier: MIT */
/*
 * perfevent.c: one perf event on one thread, mapped; refusals in words (see
 * perfevent.h).
 */
#include "base/compat.h"

#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/readfile.h"
#include "perf/perfevent.h"

#define PERFEVENT_RING_LOG2_MAX 10u

static long perfevent_syscall(struct perf_event_attr *a, pid_t tid)
{
    return syscall(SYS_perf_event_open, a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

/* /proc/sys/kernel/perf_event_paranoid, or INT32_MIN when it cannot be read. */
static int perfevent_paranoid(void)
{
    char buf[32];
    size_t n = 0;
    if (readfile_into("/proc/sys/kernel/perf_event_paranoid", buf, sizeof(buf), &n,
                      READFILE_INTO_KERNEL | READFILE_INTO_ONCE) ||
        n == 0)
        return INT32_MIN;
    char *end;
    long v = strtol(buf, &end, 10);
    return end == buf || v < -1000 || v > 1000 ? INT32_MIN : (int)v;
}

void perfevent_why(int err, char *why, size_t whylen)
{
    int paranoid = perfevent_paranoid();
    char level[48] = "unknown";
    if (paranoid != INT32_MIN)
        snprintf(level, sizeof(level), "%d", paranoid);
    switch (err) {
    case 0:
        snprintf(why, whylen, "perf events permitted (perf_event_paranoid %s)", level);
        break;
    case -EACCES:
        snprintf(why, whylen,
                 "perf_event_open refused (EACCES): perf_event_paranoid is %s; above 2, or "
                 "without CAP_SYS_PTRACE on another user's process, it needs CAP_PERFMON",
                 level);
        break;
    case -EPERM:
        snprintf(why, whylen,
                 "perf_event_open refused (EPERM): a seccomp filter (container runtimes allow "
                 "it only with CAP_PERFMON or CAP_SYS_ADMIN), or the process may not be traced");
        break;
    case -ENOSYS:
        snprintf(why, whylen,
                 "perf_event_open not available (ENOSYS): no perf events in this kernel, or a "
                 "seccomp filter answering ENOSYS");
        break;
    case -ESRCH:
    case -ENOENT:
        snprintf(why, whylen, "the thread is gone");
        break;
    default:
        snprintf(why, whylen, "perf_event_open failed: %s", strerror(-err));
        break;
    }
}

int perfevent_open(struct perf_event_attr *attr, pid_t tid, unsigned ring_pages_log2, bool writable,
                   struct perfevent *out, char *why, size_t whylen)
{
    *out = PERFEVENT_CLOSED;
    if (ring_pages_log2 > PERFEVENT_RING_LOG2_MAX)
        ring_pages_log2 = PERFEVENT_RING_LOG2_MAX;
    long page = sysconf(_SC_PAGESIZE);
    uint64_t data_size = (uint64_t)page << ring_pages_log2;
    long fd = perfevent_syscall(attr, tid);
    if (fd < 0) {
        int err = -errno;
        perfevent_why(err, why, whylen);
        return err;
    }
    size_t len = (size_t)page + (size_t)data_size;
    void *m =
        mmap(NULL, len, writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, (int)fd, 0);
    if (m == MAP_FAILED) {
        int err = -errno;
        close((int)fd);
        snprintf(why, whylen,
                 "cannot map the event's ring (%s): the memory-locking limit "
                 "(kernel.perf_event_mlock_kb per CPU, then RLIMIT_MEMLOCK; CAP_IPC_LOCK lifts "
                 "it) is used up?",
                 strerror(-err));
        return err;
    }
    out->fd = (int)fd;
    out->page = m;
    out->map_len = len;
    out->data = (const uint8_t *)m + page;
    out->data_size = data_size;
    return 0;
}

void perfevent_close(struct perfevent *e)
{
    if (e->map_len)
        munmap(e->page, e->map_len);
    if (e->fd >= 0)
        close(e->fd);
    *e = PERFEVENT_CLOSED;
}

int perfevent_probe(const struct perf_event_attr *attr, char *why, size_t whylen)
{
    struct perf_event_attr a = *attr;
    a.disabled = 1;
    long fd = perfevent_syscall(&a, (pid_t)syscall(SYS_gettid));
    int err = fd < 0 ? -errno : 0;
    if (fd >= 0)
        close((int)fd);
    perfevent_why(err, why, whylen);
    return err;
}
