/* SPDX-License-Identifier: MIT */
/*
 * perfsample.c: per-thread perf events with user registers and stack copies
 * (see perfsample.h).
 */
#include "base/compat.h"

#include <fcntl.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/bytes.h"
#include "unwind/perfsample.h"

#define PERFSAMPLE_TYPE                                                                            \
    (PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_READ | PERF_SAMPLE_REGS_USER |               \
     PERF_SAMPLE_STACK_USER)
/* the largest record: its size is 16 bits (the kernel shortens a stack copy
 * that would not fit) */
#define PERFSAMPLE_RECORD_MAX 65536u

struct perfsample {
    int fd;
    struct perf_event_mmap_page *meta;
    size_t map_len;
    const uint8_t *data; /* the ring: data_size bytes after the first page */
    uint64_t data_size;  /* a power of two */
    uint64_t lost;
    uint8_t *rec; /* one record copied out of the ring */
};

/* ---- parsing ------------------------------------------------------------ */

/* A cursor over one record: every read is checked against its end. */
struct perfsample_cur {
    const uint8_t *p, *end;
    bool bad;
};

static uint64_t perfsample_u64(struct perfsample_cur *c)
{
    if (c->bad || (size_t)(c->end - c->p) < 8) {
        c->bad = true;
        return 0;
    }
    uint64_t v = load_le64(c->p);
    c->p += 8;
    return v;
}

int perfsample_parse(const uint8_t *rec, size_t len, struct perfsample_record *out)
{
    if (len < sizeof(struct perf_event_header))
        return -EINVAL;
    uint32_t type = load_le32(rec);
    uint16_t size = load_le16(rec + 6);
    if (size < sizeof(struct perf_event_header) || size > len || size % 8)
        return -EINVAL;
    if (type != PERF_RECORD_SAMPLE)
        return -ENOMSG;
    struct perfsample_cur c = {.p = rec + sizeof(struct perf_event_header), .end = rec + size};
    memset(out, 0, sizeof(*out));
    uint64_t ids = perfsample_u64(&c);
    out->pid = (uint32_t)ids;
    out->tid = (uint32_t)(ids >> 32);
    out->time_ns = perfsample_u64(&c);
    out->cpu_ns = perfsample_u64(&c); /* PERF_SAMPLE_READ, read_format 0: the count */
    uint64_t abi = perfsample_u64(&c);
    if (abi != PERF_SAMPLE_REGS_ABI_NONE) {
        if (abi != PERF_SAMPLE_REGS_ABI_64)
            return -EINVAL; /* a 32-bit thread: not what the registers mean here */
        for (size_t i = 0; i < PERFSAMPLE_NREGS; i++)
            out->regs[i] = perfsample_u64(&c);
        out->regs_valid = !c.bad;
    }
    uint64_t stack = perfsample_u64(&c);
    if (c.bad)
        return -EINVAL;
    if (stack) {
        if (stack > PERFSAMPLE_STACK_MAX || stack % 8 || (uint64_t)(c.end - c.p) < stack + 8)
            return -EINVAL;
        out->stack = c.p;
        c.p += stack;
        uint64_t dyn = perfsample_u64(&c);
        if (c.bad || dyn > stack)
            return -EINVAL;
        out->stack_len = (size_t)dyn;
        if (!dyn)
            out->stack = NULL;
    }
    return c.p == c.end ? 0 : -EINVAL;
}

/* ---- the event ---------------------------------------------------------- */

static long perfsample_syscall(struct perf_event_attr *a, pid_t tid, int cpu)
{
    return syscall(SYS_perf_event_open, a, tid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

static void perfsample_attr(struct perf_event_attr *a, uint64_t period_ns, uint32_t stack)
{
    memset(a, 0, sizeof(*a));
    a->size = sizeof(*a);
    a->type = PERF_TYPE_SOFTWARE;
    a->config = PERF_COUNT_SW_TASK_CLOCK; /* the thread's own CPU time */
    a->sample_period = period_ns ? period_ns : 1;
    a->sample_type = PERFSAMPLE_TYPE;
    a->sample_regs_user = PERFSAMPLE_REGS_MASK;
    a->sample_stack_user = stack;
    a->exclude_kernel = 1; /* what paranoid 2 allows, and all a user stack needs */
    a->exclude_hv = 1;
    a->wakeup_events = 1; /* poll() wakes at every sample: the Python stack is read at once */
    a->use_clockid = 1;   /* sample times on the clock the Python stacks are read on */
    a->clockid = CLOCK_MONOTONIC;
}

/* /proc/sys/kernel/perf_event_paranoid, or INT32_MIN when it cannot be read. */
static int perfsample_paranoid(void)
{
    int fd = open("/proc/sys/kernel/perf_event_paranoid", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return INT32_MIN;
    char buf[32];
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return INT32_MIN;
    buf[n] = '\0';
    char *end;
    long v = strtol(buf, &end, 10);
    return end == buf || v < -1000 || v > 1000 ? INT32_MIN : (int)v;
}

/* Words for a refusal @err (negative errno) of perf_event_open. */
static void perfsample_why(int err, char *why, size_t whylen)
{
    int paranoid = perfsample_paranoid();
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

int perfsample_open(pid_t pid, pid_t tid, uint64_t period_ns, uint32_t stack_bytes,
                    unsigned ring_pages_log2, struct perfsample **out, char *why, size_t whylen)
{
    (void)pid;
    uint32_t stack = stack_bytes & ~7u;
    stack = stack < PERFSAMPLE_STACK_MIN   ? PERFSAMPLE_STACK_MIN
            : stack > PERFSAMPLE_STACK_MAX ? PERFSAMPLE_STACK_MAX
                                           : stack;
    if (ring_pages_log2 > 10)
        ring_pages_log2 = 10;
    long page = sysconf(_SC_PAGESIZE);
    uint64_t data_size = (uint64_t)page << ring_pages_log2;
    if (data_size < 2 * PERFSAMPLE_RECORD_MAX) {
        snprintf(why, whylen, "a ring of 2^%u pages cannot hold two samples of %u stack bytes",
                 ring_pages_log2, stack);
        return -EINVAL;
    }
    struct perfsample *p = alloc_calloc(1, sizeof(*p));
    if (p)
        p->rec = alloc_malloc(PERFSAMPLE_RECORD_MAX);
    if (!p || !p->rec) {
        perfsample_free(p);
        snprintf(why, whylen, "out of memory");
        return -ENOMEM;
    }
    p->fd = -1;
    struct perf_event_attr a;
    perfsample_attr(&a, period_ns, stack);
    long fd = perfsample_syscall(&a, tid, -1);
    if (fd < 0) {
        int err = -errno;
        perfsample_why(err, why, whylen);
        perfsample_free(p);
        return err;
    }
    p->fd = (int)fd;
    p->map_len = (size_t)page + data_size;
    void *m = mmap(NULL, p->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, p->fd, 0);
    if (m == MAP_FAILED) {
        int err = -errno;
        snprintf(why, whylen,
                 "cannot map the sample ring (%s): perf_event_mlock_kb or RLIMIT_MEMLOCK "
                 "too small?",
                 strerror(-err));
        p->map_len = 0;
        perfsample_free(p);
        return err;
    }
    p->meta = m;
    p->data = (const uint8_t *)m + page;
    p->data_size = data_size;
    *out = p;
    snprintf(why, whylen, "sampling");
    return 0;
}

void perfsample_free(struct perfsample *p)
{
    if (!p)
        return;
    if (p->map_len)
        munmap(p->meta, p->map_len);
    if (p->fd >= 0)
        close(p->fd);
    alloc_free(p->rec);
    alloc_free(p);
}

int perfsample_cpu_ns(const struct perfsample *p, uint64_t *out)
{
    uint64_t v;
    ssize_t n = read(p->fd, &v, sizeof(v));
    if (n != (ssize_t)sizeof(v))
        return n < 0 ? -errno : -EIO;
    *out = v;
    return 0;
}

int perfsample_set_period(struct perfsample *p, uint64_t period_ns)
{
    uint64_t v = period_ns ? period_ns : 1;
    return ioctl(p->fd, PERF_EVENT_IOC_PERIOD, &v) ? -errno : 0;
}

int perfsample_fd(const struct perfsample *p)
{
    return p->fd;
}

uint64_t perfsample_lost(const struct perfsample *p)
{
    return p->lost;
}

int perfsample_next(struct perfsample *p, struct perfsample_record *out)
{
    for (;;) {
        uint64_t head = __atomic_load_n(&p->meta->data_head, __ATOMIC_ACQUIRE);
        uint64_t tail = p->meta->data_tail;
        if (head == tail)
            return 0;
        uint64_t avail = head - tail, mask = p->data_size - 1;
        /* records are 8-aligned and a multiple of 8 long: a header never wraps */
        const uint8_t *h = p->data + (tail & mask);
        uint16_t size = load_le16(h + 6);
        if (avail > p->data_size || size < sizeof(struct perf_event_header) || size % 8 ||
            size > avail) {
            __atomic_store_n(&p->meta->data_tail, head, __ATOMIC_RELEASE);
            return -EINVAL;
        }
        uint64_t first = p->data_size - (tail & mask);
        if (first >= size) {
            memcpy(p->rec, h, size);
        } else {
            memcpy(p->rec, h, (size_t)first);
            memcpy(p->rec + first, p->data, (size_t)(size - first));
        }
        __atomic_store_n(&p->meta->data_tail, tail + size, __ATOMIC_RELEASE);
        uint32_t type = load_le32(p->rec);
        if (type == PERF_RECORD_LOST && size >= 24) {
            p->lost += load_le64(p->rec + 16); /* header, id, lost */
            continue;
        }
        int err = perfsample_parse(p->rec, size, out);
        if (err == -ENOMSG)
            continue;
        return err ? err : 1;
    }
}

int perfsample_probe(char *why, size_t whylen)
{
    struct perf_event_attr a;
    perfsample_attr(&a, 1000000000ull, PERFSAMPLE_STACK_MIN);
    a.disabled = 1;
    long fd = perfsample_syscall(&a, (pid_t)syscall(SYS_gettid), -1);
    int err = fd < 0 ? -errno : 0;
    if (fd >= 0)
        close((int)fd);
    perfsample_why(err, why, whylen);
    return err;
}
