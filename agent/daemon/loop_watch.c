/* SPDX-License-Identifier: MIT */
/*
 * loop_watch.c: the sampling loop's looks at new processes between full
 * scans (issue 38). discovery/proc_watch.h says which PIDs are new; a look
 * reads just those (proc_scan_pids()) PROC_WATCH_DELAY_NS after their exec
 * and judges them as a scan would (loop_consider()). What a look needs from
 * the loop's state is under its lock, as housekeeping: loop_step() calls
 * loop_watch_look() when the earliest look is due.
 *
 * Again: the poll source sees a PID when it is forked, not when it execs; a
 * process that is not a target at its look (not Python yet, or a copy of a
 * Python parent no job keeps) is looked at again (LOOP_WATCH_AGAIN_NS, then
 * twice as long each time, 1.55 s in all), and read past its stat (one read)
 * only when it exec'd since: another
 * stack start (stat's field 28, placed anew by each exec) or comm. Under
 * netlink its exec event queues it again by itself.
 * A process younger than min_process_age is looked at again when it is old
 * enough, not at the next scan.
 *
 * Clocks: the watch's thread stamps its entries on the system's monotonic
 * clock (never the loop's, which a test may drive by hand from its own
 * thread); l->watch_due is on that scale, the same as the loop's in the
 * agent. A loop on a fake clock looks when real time has come.
 */
#include "base/compat.h"

#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "daemon/loop_internal.h"

#define LOOP_WATCH_LOOKS_MAX 64u         /* processes read per look */
#define LOOP_WATCH_AGAIN_NS  50000000ull /* poll: a process not a target yet, again after */
#define LOOP_WATCH_TRIES     5u          /* ... doubling: 50 ms to 0.8 s, 1.55 s in all */

/* Start delays: from a process's start to its first attempt, seconds. */
static const double loop_watch_delay_bounds[] = {0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};

/* The watch's thread: an entry due at @due was queued. */
static void loop_watch_notify(void *arg, uint64_t due)
{
    struct loop *l = arg;
    pthread_mutex_lock(&l->mu);
    if (due < l->watch_due) {
        l->watch_due = due;
        pthread_cond_signal(&l->wake);
    }
    pthread_mutex_unlock(&l->mu);
}

void loop_watch_configure(struct loop *l, const struct pyprofd_config *cfg,
                          const struct pyprofd_config *old)
{
    if (!old) {
        int err = promtext_hist_init(&l->start_delay, loop_watch_delay_bounds,
                                     PYPROFD_ARRAY_SIZE(loop_watch_delay_bounds));
        PYPROFD_ASSERT(err == 0); /* the bounds are valid */
        (void)err;
    }
    if (old && old->discovery.watch == cfg->discovery.watch &&
        strcmp(old->discovery.proc_root, cfg->discovery.proc_root) == 0)
        return;
    struct proc_watch_opts o = {
        .proc_root = cfg->discovery.proc_root,
        .want = (enum proc_watch_source)cfg->discovery.watch,
        .notify = loop_watch_notify,
        .notify_arg = l,
    };
    struct proc_watch *w = NULL;
    char msg[512];
    /* before the new watch's thread starts (it reads it in loop_watch_notify(),
     * under the loop's lock, which the first configuration does not hold) */
    l->watch_due = UINT64_MAX;
    int err = proc_watch_new(&o, &w, msg, sizeof(msg));
    if (err == -ENOMEM) {
        log_error("discovery.watch: out of memory; new processes as before");
        return;
    }
    if (err) {
        log_warn("discovery.watch: %s: %s; new processes are found by the full scans alone",
                 proc_watch_source_name(o.want), msg);
        w = NULL;
    } else {
        enum proc_watch_source s = proc_watch_source(w);
        if (s == PROC_WATCH_OFF && o.want != PROC_WATCH_OFF)
            log_info("discovery.watch: %s", msg);
        else if (s != PROC_WATCH_OFF)
            log_info("new processes are looked at %llu ms after their %s (%s)%s%s",
                     (unsigned long long)(PROC_WATCH_DELAY_NS / 1000000ull),
                     s == PROC_WATCH_NETLINK ? "exec" : "first sight",
                     s == PROC_WATCH_NETLINK ? "the kernel's process events"
                                             : "the last PID in loadavg",
                     msg[0] ? ": " : "", msg);
    }
    l->watch_old = l->watch; /* its thread may be waiting for the lock we hold */
    l->watch = w;
}

void loop_watch_reap(struct loop *l)
{
    pthread_mutex_lock(&l->mu);
    struct proc_watch *old = l->watch_old;
    l->watch_old = NULL;
    pthread_mutex_unlock(&l->mu);
    proc_watch_free(old);
}

bool loop_watch_filter(struct loop *l, struct proc_entry *p, const char *comm, uint64_t start_stack)
{
    l->look_known = p->state;
    if (p->state == PROC_ACTIVE)
        return false; /* an exec of a target: its sampler sees it (target.c) */
    if (p->state == PROC_NEW || p->state == PROC_YOUNG || l->look_exec)
        return true;
    /* judged already: again only after an exec (its event, or, polled, a new
     * stack start or another comm), e.g. a copy of a Python parent, dropped,
     * that execs a script a job keeps */
    return (start_stack && start_stack != p->image) ||
           strncmp(p->comm, comm, sizeof(p->comm) - 1) != 0;
}

/*
 * Counts @info's start delay: from its start to its first attempt. On the
 * kernel's own scale: the start time in stat is clock ticks of
 * CLOCK_BOOTTIME, where btime (whole seconds) would add up to a second.
 */
void loop_watch_started(struct loop *l, struct target *t, const struct proc_info *info)
{
    static long tck;
    if (!tck)
        tck = sysconf(_SC_CLK_TCK) > 0 ? sysconf(_SC_CLK_TCK) : 100;
    struct timespec bt;
    if (clock_gettime(CLOCK_BOOTTIME, &bt) != 0)
        return;
    uint64_t boot_ns = (uint64_t)bt.tv_sec * 1000000000ull + (uint64_t)bt.tv_nsec;
    uint64_t start_ns = info->key.start_ticks / (uint64_t)tck * 1000000000ull +
                        info->key.start_ticks % (uint64_t)tck * 1000000000ull / (uint64_t)tck;
    uint64_t now = loop_now(l), due = target_due(t);
    uint64_t first = boot_ns + (due > now ? due - now : 0);
    if (first >= start_ns)
        promtext_hist_observe(&l->start_delay, (double)(first - start_ns) / 1e9);
}

/* One PID: read, judged, maybe queued again. */
static void loop_watch_one(struct loop *l, const struct proc_watch_item *it, uint64_t now,
                           uint64_t wnow)
{
    l->looking = true;
    l->look_exec = it->exec;
    l->look_known = PROC_NEW;
    int err = proc_scan_pids(l->scan, &it->pid, 1, loop_real_at(l, now));
    l->looking = false;
    if (err)
        return; /* the proc root or memory: the full scans say so */
    const struct proc_scan_stats *st = proc_scan_stats(l->scan);
    if (st->vanished) {
        if (!it->tries) /* a look again that finds it gone is no miss: it was looked at */
            l->watch_counts.exited_before_look++;
        return;
    }
    const struct proc_info *info = NULL;
    enum proc_state state = PROC_ACTIVE; /* a zombie, over a cap: not again */
    if (proc_scan_count(l->scan)) {
        l->watch_counts.looks++;
        info = proc_scan_get(l->scan, 0);
        state = loop_consider(l, info, now);
    } else if (st->filtered) {
        state = l->look_known; /* known, and no exec since its last look */
    }
    uint64_t again = 0;
    if (info && state == PROC_YOUNG && info->age_ns >= 0 &&
        it->tries < UINT8_MAX) /* min_process_age: when it is old enough */
        again = wnow + (l->cfg->discovery.min_process_age_ns - (uint64_t)info->age_ns);
    else if (state != PROC_ACTIVE && state != PROC_NEW &&
             proc_watch_source(l->watch) == PROC_WATCH_POLL && it->tries < LOOP_WATCH_TRIES)
        again = wnow + (LOOP_WATCH_AGAIN_NS << it->tries);
    if (again) {
        l->watch_counts.again++;
        proc_watch_again(l->watch, it->pid, again, (uint8_t)(it->tries + 1));
        if (again < l->watch_due)
            l->watch_due = again;
    }
}

void loop_watch_look(struct loop *l, uint64_t now)
{
    if (!l->watch || l->watch_due == UINT64_MAX)
        return;
    uint64_t wnow = clock_mono_now(); /* the watch's scale */
    if (wnow < l->watch_due)
        return;
    struct proc_watch_item items[LOOP_WATCH_LOOKS_MAX];
    uint64_t next = UINT64_MAX;
    size_t n = proc_watch_take(l->watch, wnow, items, LOOP_WATCH_LOOKS_MAX, &next);
    l->watch_due = next;
    if (proc_watch_missed(l->watch) && l->next_scan > now) {
        l->next_scan = now; /* events were lost: a full scan covers them */
        l->kick = true;
    }
    for (size_t i = 0; i < n; i++)
        loop_watch_one(l, &items[i], now, wnow);
    if (n == LOOP_WATCH_LOOKS_MAX) /* more are due: the next step takes them */
        l->watch_due = wnow;
}
