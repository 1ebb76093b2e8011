/* SPDX-License-Identifier: MIT */
/*
 * perfsample.c: per-thread perf events with user registers and stack copies
 * (see perfsample.h).
 */
#include "base/compat.h"

#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/bytes.h"
#include "perf/perfevent.h"
#include "perf/perfsample.h"

#define PERFSAMPLE_TYPE                                                                            \
    (PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_READ | PERF_SAMPLE_REGS_USER |               \
     PERF_SAMPLE_STACK_USER)
/* the largest record: its size is 16 bits (the kernel shortens a stack copy
 * that would not fit) */
#define PERFSAMPLE_RECORD_MAX 65536u

struct perfsample {
    struct perfevent ev; /* its page, and the ring after it */
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
    if (p) {
        p->ev = PERFEVENT_CLOSED;
        p->rec = alloc_malloc(PERFSAMPLE_RECORD_MAX);
    }
    if (!p || !p->rec) {
        perfsample_free(p);
        snprintf(why, whylen, "out of memory");
        return -ENOMEM;
    }
    struct perf_event_attr a;
    perfsample_attr(&a, period_ns, stack);
    int err = perfevent_open(&a, tid, ring_pages_log2, true, &p->ev, why, whylen);
    if (err) {
        perfsample_free(p);
        return err;
    }
    *out = p;
    snprintf(why, whylen, "sampling");
    return 0;
}

void perfsample_free(struct perfsample *p)
{
    if (!p)
        return;
    perfevent_close(&p->ev);
    alloc_free(p->rec);
    alloc_free(p);
}

int perfsample_cpu_ns(const struct perfsample *p, uint64_t *out)
{
    uint64_t v;
    ssize_t n = read(p->ev.fd, &v, sizeof(v));
    if (n != (ssize_t)sizeof(v))
        return n < 0 ? -errno : -EIO;
    *out = v;
    return 0;
}

int perfsample_set_period(struct perfsample *p, uint64_t period_ns)
{
    uint64_t v = period_ns ? period_ns : 1;
    return ioctl(p->ev.fd, PERF_EVENT_IOC_PERIOD, &v) ? -errno : 0;
}

int perfsample_fd(const struct perfsample *p)
{
    return p->ev.fd;
}

uint64_t perfsample_lost(const struct perfsample *p)
{
    return p->lost;
}

int perfsample_next(struct perfsample *p, struct perfsample_record *out)
{
    for (;;) {
        uint64_t head = perfevent_head(&p->ev);
        uint64_t tail = p->ev.page->data_tail;
        if (head == tail)
            return 0;
        uint64_t avail = head - tail, mask = p->ev.data_size - 1;
        /* records are 8-aligned and a multiple of 8 long: a header never wraps */
        const uint8_t *h = p->ev.data + (tail & mask);
        uint16_t size = load_le16(h + 6);
        if (avail > p->ev.data_size || size < sizeof(struct perf_event_header) || size % 8 ||
            size > avail) {
            __atomic_store_n(&p->ev.page->data_tail, head, __ATOMIC_RELEASE);
            return -EINVAL;
        }
        uint64_t first = p->ev.data_size - (tail & mask);
        if (first >= size) {
            memcpy(p->rec, h, size);
        } else {
            memcpy(p->rec, h, (size_t)first);
            memcpy(p->rec + first, p->ev.data, (size_t)(size - first));
        }
        __atomic_store_n(&p->ev.page->data_tail, tail + size, __ATOMIC_RELEASE);
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
    return perfevent_probe(&a, why, whylen);
}
