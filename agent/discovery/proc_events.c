/* SPDX-License-Identifier: MIT */
/*
 * proc_events.c: the proc connector's datagrams, parsed (see proc_events.h).
 * The layouts are the kernel's uapi (<linux/netlink.h>, <linux/connector.h>,
 * <linux/cn_proc.h>); fields are copied out with memcpy, never read through a
 * cast of the buffer, so a datagram of any alignment is read the same way.
 */
#include "base/compat.h"

#include <errno.h>
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <string.h>

#include "discovery/proc_events.h"

/* The event's header before its union: what (4), cpu (4), timestamp_ns (8). */
#define EV_HEAD 16u
/* The kernel 6.6 subscription with an event filter (struct proc_input). */
struct events_input {
    uint32_t mcast_op;
    uint32_t event_type;
};

static uint32_t rd32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof(v));
    return v;
}

static uint64_t rd64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof(v));
    return v;
}

/* One proc_event of @len bytes. Returns 0 (delivered or skipped), -EINVAL, or fn's stop. */
static int events_one(const unsigned char *ev, size_t len, proc_events_fn fn, void *arg,
                      struct proc_events_counts *c, int *delivered)
{
    if (len < EV_HEAD)
        return -EINVAL;
    uint32_t what = rd32(ev);
    uint64_t when = rd64(ev + 8);
    const unsigned char *d = ev + EV_HEAD;
    size_t dlen = len - EV_HEAD;
    int rc = 0;
    switch (what) {
    case PROC_EVENT_NONE: /* an ack: event_data.ack.err */
        if (dlen < 4)
            return -EINVAL;
        uint32_t err = rd32(d);
        rc = fn(PROC_EVENTS_ACK, 0, 0, err < 4096 ? (int)err : EINVAL, 0, arg);
        break;
    case PROC_EVENT_EXEC: { /* process_pid, process_tgid */
        if (dlen < 8)
            return -EINVAL;
        pid_t tgid = (pid_t)rd32(d + 4);
        if (tgid <= 0)
            return -EINVAL;
        c->exec++;
        rc = fn(PROC_EVENTS_EXEC, tgid, 0, 0, when, arg);
        break;
    }
    case PROC_EVENT_FORK: { /* parent_pid, parent_tgid, child_pid, child_tgid */
        if (dlen < 16)
            return -EINVAL;
        pid_t ptgid = (pid_t)rd32(d + 4), cpid = (pid_t)rd32(d + 8), ctgid = (pid_t)rd32(d + 12);
        if (cpid <= 0 || ctgid <= 0)
            return -EINVAL;
        if (cpid != ctgid) {
            c->threads++;
            return 0;
        }
        c->fork++;
        rc = fn(PROC_EVENTS_FORK, ctgid, ptgid > 0 ? ptgid : 0, 0, when, arg);
        break;
    }
    default:
        c->other++;
        return 0;
    }
    if (rc)
        return rc > 0 ? -rc : rc;
    (*delivered)++;
    return 0;
}

int proc_events_parse(const void *buf, size_t len, proc_events_fn fn, void *arg,
                      struct proc_events_counts *counts)
{
    const unsigned char *p = buf;
    int delivered = 0;
    size_t off = 0;
    while (len - off >= NLMSG_HDRLEN) {
        struct nlmsghdr nh;
        memcpy(&nh, p + off, sizeof(nh));
        if (nh.nlmsg_len < NLMSG_HDRLEN || nh.nlmsg_len > len - off)
            goto bad;
        if (nh.nlmsg_type != NLMSG_DONE) /* the connector sends its messages as NLMSG_DONE */
            goto next;
        const unsigned char *m = p + off + NLMSG_HDRLEN;
        size_t mlen = nh.nlmsg_len - NLMSG_HDRLEN;
        struct cn_msg cn;
        if (mlen < sizeof(cn))
            goto bad;
        memcpy(&cn, m, sizeof(cn));
        if (cn.id.idx != CN_IDX_PROC || cn.id.val != CN_VAL_PROC || cn.len > mlen - sizeof(cn))
            goto bad;
        int rc = events_one(m + sizeof(cn), cn.len, fn, arg, counts, &delivered);
        if (rc == -EINVAL)
            goto bad;
        if (rc)
            return rc;
    next:;
        size_t step = NLMSG_ALIGN(nh.nlmsg_len);
        if (step > len - off)
            break;
        off += step;
    }
    return delivered;
bad:
    counts->malformed++;
    return -EINVAL;
}

size_t proc_events_subscribe_msg(void *buf, bool on, bool filtered, uint32_t seq, pid_t self)
{
    struct events_input in = {
        .mcast_op = on ? PROC_CN_MCAST_LISTEN : PROC_CN_MCAST_IGNORE,
        .event_type = PROC_EVENT_FORK | PROC_EVENT_EXEC,
    };
    size_t plen = filtered ? sizeof(in) : sizeof(in.mcast_op);
    struct cn_msg cn = {
        .id = {.idx = CN_IDX_PROC, .val = CN_VAL_PROC}, .seq = seq, .len = (uint16_t)plen};
    size_t total = NLMSG_LENGTH(sizeof(cn) + plen);
    struct nlmsghdr nh = {.nlmsg_len = (uint32_t)total,
                          .nlmsg_type = NLMSG_DONE,
                          .nlmsg_seq = seq,
                          .nlmsg_pid = (uint32_t)self};
    unsigned char *b = buf;
    memset(b, 0, PROC_EVENTS_SUBSCRIBE_MAX);
    memcpy(b, &nh, sizeof(nh));
    memcpy(b + NLMSG_HDRLEN, &cn, sizeof(cn));
    memcpy(b + NLMSG_HDRLEN + sizeof(cn), &in, plen);
    return total;
}
