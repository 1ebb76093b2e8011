/* SPDX-License-Identifier: MIT */
/*
 * switches.c: a thread's context switches, forks and exit in a backward ring
 * (see switches.h).
 */
#include "base/compat.h"

#include <sys/ioctl.h>
#include <time.h>

#include "base/bytes.h"
#include "perf/switches.h"

/* The records asked for: no sample fields, no sample_id: a switch is its
 * 8-byte header; a fork or exit 8 + 24. */
#define SWITCHES_HEADER 8u

static void switches_attr(struct perf_event_attr *a)
{
    memset(a, 0, sizeof(*a));
    a->size = sizeof(*a);
    a->type = PERF_TYPE_SOFTWARE;
    a->config = PERF_COUNT_SW_DUMMY; /* counts nothing: only the side-band records */
    a->context_switch = 1;
    a->task = 1;           /* PERF_RECORD_FORK and PERF_RECORD_EXIT */
    a->write_backward = 1; /* the newest record starts at data_head */
    a->exclude_kernel = 1; /* what perf_event_paranoid 2 allows */
    a->exclude_hv = 1;
    /* nobody polls it: wake (an irq_work) only once per ring's worth */
    a->watermark = 1;
    a->wakeup_watermark = 4096;
}

int switches_open(pid_t tid, struct switches *out, char *why, size_t whylen)
{
    struct perf_event_attr a;
    switches_attr(&a);
    return perfevent_open(&a, tid, 0, false, &out->ev, why, whylen);
}

int switches_open_waker(pid_t tid, struct switches *out, char *why, size_t whylen)
{
    struct perf_event_attr a;
    switches_attr(&a);
    a.disabled = 1;
    a.wakeup_watermark = SWITCHES_HEADER; /* every record wakes */
    /* each record ends with its time (sample_id), on the loop's clock */
    a.sample_id_all = 1;
    a.sample_type = PERF_SAMPLE_TIME;
    a.use_clockid = 1;
    a.clockid = CLOCK_MONOTONIC;
    return perfevent_open(&a, tid, 0, false, &out->ev, why, whylen);
}

int switches_enable(struct switches *w, bool on)
{
    return ioctl(w->ev.fd, on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0) ? -errno : 0;
}

void switches_close(struct switches *w)
{
    perfevent_close(&w->ev);
}

/* The header at ring offset @pos (8-aligned, so it never wraps). */
static void switches_header(const uint8_t *ring, uint64_t size, uint64_t pos, uint32_t *type,
                            uint16_t *misc, uint16_t *len)
{
    const uint8_t *h = ring + (pos & (size - 1) & ~(uint64_t)7);
    uint8_t copy[SWITCHES_HEADER];
    memcpy(copy, h, sizeof(copy)); /* the kernel may be writing: read once */
    *type = load_le32(copy);
    *misc = load_le16(copy + 4);
    *len = load_le16(copy + 6);
}

enum switches_state switches_parse_state(const uint8_t *ring, uint64_t size, uint64_t head)
{
    if (head == 0)
        return SWITCHES_NONE; /* a backward ring starts at 0 and goes down */
    if (size < SWITCHES_HEADER || (size & (size - 1)) || head % 8)
        return SWITCHES_UNKNOWN;
    uint32_t type;
    uint16_t misc, len;
    switches_header(ring, size, head, &type, &misc, &len);
    if (len < SWITCHES_HEADER || len % 8 || len > size)
        return SWITCHES_UNKNOWN;
    switch (type) {
    case PERF_RECORD_SWITCH:
        if (!(misc & PERF_RECORD_MISC_SWITCH_OUT))
            return SWITCHES_RUNNING;
        return (misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) ? SWITCHES_PREEMPTED : SWITCHES_ASLEEP;
    case PERF_RECORD_FORK:
        return SWITCHES_RUNNING;
    case PERF_RECORD_EXIT:
        return SWITCHES_EXITED;
    default:
        return SWITCHES_UNKNOWN;
    }
}

struct switches_since switches_parse_since(const uint8_t *ring, uint64_t size, uint64_t before,
                                           uint64_t now)
{
    struct switches_since r = {0};
    /* written backward: now <= before, and before - now bytes were written */
    uint64_t written = before - now;
    if (written == 0)
        return r;
    if (size < SWITCHES_HEADER || (size & (size - 1)) || written > size || now % 8 || before % 8) {
        r.overrun = true;
        return r;
    }
    uint64_t pos = now;
    while (pos != before) {
        uint32_t type;
        uint16_t misc, len;
        switches_header(ring, size, pos, &type, &misc, &len);
        if (len < SWITCHES_HEADER || len % 8 || len > before - pos) {
            r.bad = true;
            return r;
        }
        if (type == PERF_RECORD_FORK)
            r.forked = true;
        pos += len;
    }
    return r;
}

enum switches_state switches_state(const struct switches *w, uint64_t head)
{
    return switches_parse_state(w->ev.data, w->ev.data_size, head);
}

struct switches_since switches_since(const struct switches *w, uint64_t before, uint64_t now)
{
    return switches_parse_since(w->ev.data, w->ev.data_size, before, now);
}

int switches_probe(char *why, size_t whylen)
{
    struct perf_event_attr a;
    switches_attr(&a);
    return perfevent_probe(&a, why, whylen);
}

bool switches_parse_first_time(const uint8_t *ring, uint64_t size, uint64_t before, uint64_t now,
                               uint64_t *t)
{
    uint64_t written = before - now;
    if (written == 0 || size < 16 || (size & (size - 1)) || written > size || now % 8 || before % 8)
        return false;
    uint64_t pos = now, last = UINT64_MAX;
    while (pos != before) {
        uint32_t type;
        uint16_t misc, len;
        switches_header(ring, size, pos, &type, &misc, &len);
        if (len < 16 || len % 8 || len > before - pos)
            return false;
        last = pos + len - 8; /* the record's last word: its time */
        pos += len;
    }
    uint8_t word[8];
    memcpy(word, ring + (last & (size - 1)), sizeof(word)); /* 8-aligned: never wraps */
    *t = load_le64(word);
    return true;
}

bool switches_first_time(const struct switches *w, uint64_t before, uint64_t now, uint64_t *t)
{
    return switches_parse_first_time(w->ev.data, w->ev.data_size, before, now, t);
}
