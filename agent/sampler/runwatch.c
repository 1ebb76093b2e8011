/* SPDX-License-Identifier: MIT */
/*
 * runwatch.c: whether a target's threads ran since its last read (see
 * runwatch.h).
 */
#include "base/compat.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/fdcap.h"
#include "perf/switches.h"
#include "sampler/runwatch.h"
#include "sampler/tasks.h"
#include "sampler/threadstat.h"

#define RUNWATCH_RESCAN_NS  100000000ull /* rescans of the threads, at most this often */
#define RUNWATCH_BUSY_SKIPS 7u           /* schedstat: looks skipped after a busy one, at most */
#define RUNWATCH_RETRY      1 /* runwatch_add(): perf refused, start over with schedstat */

/* Where a watched thread is, as far as the watch knows. */
enum runwatch_state {
    RW_UNKNOWN,  /* may be running */
    RW_RUNNING,  /* running (perf: its newest record is a switch in) */
    RW_RUNNABLE, /* off a CPU, waiting for one ('R' in /proc; perf: preempted) */
    RW_ASLEEP,   /* off a CPU, waiting for something else (schedstat: or for a CPU) */
    RW_GONE,     /* exited */
};

struct runwatch_thread {
    /* a look at an idle thread touches this first line only */
    struct switches sw; /* perf */
    uint64_t mark;      /* perf: the ring's head; schedstat: CPU time */
    uint64_t off_ns;
    bool seen;     /* mark holds a look */
    bool off;      /* provably off CPU from off_ns until the last look */
    bool listed;   /* in the rescan in progress */
    uint8_t state; /* enum runwatch_state */
    pid_t tid;
    uint64_t mark2;   /* schedstat: times switched in */
    uint64_t mark_ns; /* when the look first saw mark */
    uint64_t opened_ns;
    int fd;                /* schedstat: the file, kept open; -1 */
    struct switches waker; /* parking: opened at the first park, enabled while parked */
    uint64_t waker_head;   /* its head when it was last enabled */
};

struct runwatch {
    /* what every check touches, first */
    enum idle_check how;
    bool complete; /* every thread that must be watched is */
    bool rescan;   /* the threads changed: list them again */
    bool all;
    bool read_ok;
    bool parked;          /* the wakers are on (runwatch_park()) */
    bool moved;           /* the last check saw a thread switched since the one before */
    bool looked;          /* the last check looked at every thread (runwatch_on_cpu()) */
    size_t nparked;       /* threads whose waker is on */
    unsigned busy, skips; /* schedstat: busy looks in a row; looks still to skip */
    size_t n, cap;
    struct runwatch_thread *t; /* one[] until a second thread is watched */
    uint64_t read_ns;          /* the last read whose result may be counted again began here */
    uint64_t rescan_at;
    struct runwatch_thread one[1];
    pid_t pid;
    char *proc_root;
    int taskfd;     /* all threads, schedstat: /proc/PID/task, whose link count says how many */
    bool nohz_full; /* some CPU runs without the tick: no schedstat proof */
    char why[160];  /* why not perf (or not at all) */
    char incomplete[96]; /* why the threads are not all covered, or "" */
    char describe[288];
};

/* ---- one thread --------------------------------------------------------- */

static void runwatch_close_thread(struct runwatch_thread *t)
{
    if (t->waker.ev.fd >= 0) {
        switches_close(&t->waker);
        fdcap_give();
    }
    if (t->sw.ev.fd >= 0) {
        switches_close(&t->sw);
        fdcap_give();
    }
    if (t->fd >= 0) {
        close(t->fd);
        t->fd = -1;
        fdcap_give();
    }
}

/*
 * Opens the watch of thread @tid in slot @t. Returns 0; -EAGAIN when the
 * descriptor budget is used up; a perf refusal (the caller falls back, with
 * words in w->why); -ESRCH when the thread is gone.
 */
static int runwatch_open_thread(struct runwatch *w, struct runwatch_thread *t, pid_t tid,
                                uint64_t now_ns)
{
    *t = (struct runwatch_thread){.tid = tid, .fd = -1, .opened_ns = now_ns};
    t->sw.ev = PERFEVENT_CLOSED;
    t->waker.ev = PERFEVENT_CLOSED;
    if (!fdcap_take())
        return -EAGAIN;
    if (w->how == IDLE_CHECK_PERF) {
        char why[sizeof(w->why)];
        int err = switches_open(tid, &t->sw, why, sizeof(why));
        if (err) {
            fdcap_give();
            if (err != -ESRCH && err != -ENOENT)
                snprintf(w->why, sizeof(w->why), "%s", why);
            return err == -ENOENT ? -ESRCH : err;
        }
        return 0;
    }
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%d/task/%d/schedstat", w->proc_root, (int)w->pid, (int)tid);
    t->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (t->fd < 0) {
        int err = errno == ENOENT ? -ESRCH : -errno;
        fdcap_give();
        return err;
    }
    return 0;
}

/* /proc/PID/task/TID/stat's letter: 'R' for running or runnable; 0 unknown. */
static char runwatch_stat(const struct runwatch *w, const struct runwatch_thread *t)
{
    char state;
    return threadstat_state(w->proc_root, w->pid, t->tid, &state) == 0 ? state : 0;
}

/* perf: a look at thread @t's ring. Sets *rescan when the threads changed. */
static void runwatch_look_perf(struct runwatch *w, struct runwatch_thread *t, uint64_t now_ns,
                               bool *rescan)
{
    uint64_t head = switches_head(&t->sw);
    if (t->seen && head == t->mark)
        return; /* nothing happened: what was known still holds */
    if (t->seen && w->all) {
        struct switches_since since = switches_since(&t->sw, t->mark, head);
        if (since.forked || since.overrun || since.bad)
            *rescan = true;
    }
    t->seen = true;
    t->mark = head;
    t->mark_ns = now_ns;
    t->off = false;
    switch (switches_state(&t->sw, head)) {
    case SWITCHES_NONE: {
        /* not switched since the watch opened: /proc says whether it ran;
         * 'R' is running or waiting since then, which no record tells */
        char c = runwatch_stat(w, t);
        if (c && c != 'R') {
            t->state = RW_ASLEEP;
            t->off = true;
            t->off_ns = t->opened_ns;
        } else {
            t->state = RW_UNKNOWN;
        }
        break;
    }
    case SWITCHES_RUNNING:
        t->state = RW_RUNNING;
        break;
    case SWITCHES_PREEMPTED:
        t->state = RW_RUNNABLE;
        t->off = true;
        t->off_ns = now_ns;
        break;
    case SWITCHES_ASLEEP:
        t->state = RW_ASLEEP;
        t->off = true;
        t->off_ns = now_ns;
        break;
    case SWITCHES_EXITED:
        t->state = RW_GONE;
        *rescan = w->all;
        break;
    case SWITCHES_UNKNOWN:
    default:
        t->state = RW_UNKNOWN;
        break;
    }
}

/* schedstat: a look at thread @t's file. */
static void runwatch_look_schedstat(struct runwatch *w, struct runwatch_thread *t, uint64_t now_ns,
                                    bool *rescan)
{
    char buf[96];
    uint64_t v[3];
    ssize_t n = pread(t->fd, buf, sizeof(buf) - 1, 0);
    if (n <= 0 || threadstat_parse_schedstat(buf, (size_t)n, v)) {
        t->state = n <= 0 ? RW_GONE : RW_UNKNOWN;
        t->off = false;
        t->seen = false;
        *rescan = w->all && n <= 0;
        return;
    }
    if (!t->seen || v[0] != t->mark || v[2] != t->mark2) {
        t->seen = true;
        t->mark = v[0];
        t->mark2 = v[2];
        t->mark_ns = now_ns;
        t->off = false;
        t->state = RW_UNKNOWN;
        return;
    }
    /* the same CPU time and switches over more than a tick: off CPU (waiting
     * for one or not: cpu mode's credit earned nothing meanwhile, so there
     * is nothing new to pay) */
    t->off = now_ns - t->mark_ns >= RUNWATCH_TICK_NS;
    t->state = t->off ? RW_ASLEEP : RW_UNKNOWN;
    if (t->off)
        t->off_ns = t->mark_ns;
}

/* ---- the set of threads ----------------------------------------------- */

static struct runwatch_thread *runwatch_find(const struct runwatch *w, pid_t tid)
{
    for (size_t i = 0; i < w->n; i++) {
        if (w->t[i].tid == tid)
            return &w->t[i];
    }
    return NULL;
}

static void runwatch_drop_all(struct runwatch *w)
{
    for (size_t i = 0; i < w->n; i++)
        runwatch_close_thread(&w->t[i]);
    w->n = 0;
}

/* Whether a CPU runs without the scheduler tick (nohz_full): the schedstat proof fails there. */
static bool runwatch_nohz_full(void)
{
    char buf[256];
    int fd = open("/sys/devices/system/cpu/nohz_full", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    return strncmp(buf, "(null)", 6) != 0 && buf[0] != '\n';
}

/* The schedstat watch of every thread also keeps /proc/PID/task open (its link count). */
static void runwatch_schedstat_setup(struct runwatch *w)
{
    if (w->nohz_full) {
        char perf[sizeof(w->why)];
        memcpy(perf, w->why, sizeof(perf));
        w->how = IDLE_CHECK_OFF;
        snprintf(w->why, sizeof(w->why),
                 "nohz_full CPUs run threads without the tick schedstat's proof needs, and "
                 "perf events are not used (%.40s)",
                 perf);
        return;
    }
    if (!w->all || w->taskfd >= 0)
        return;
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%d/task", w->proc_root, (int)w->pid);
    if (fdcap_take()) {
        w->taskfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (w->taskfd < 0)
            fdcap_give();
    }
}

/* Falls back from perf to schedstat (why is in w->why) and starts over. */
static void runwatch_fall_back(struct runwatch *w)
{
    runwatch_drop_all(w);
    w->how = IDLE_CHECK_SCHEDSTAT;
    runwatch_schedstat_setup(w);
}

/* Adds thread @tid (not watched yet). Returns 0 or why it could not be. */
static int runwatch_add(struct runwatch *w, pid_t tid, uint64_t now_ns)
{
    if (w->n == TASKS_MAX) {
        snprintf(w->incomplete, sizeof(w->incomplete), "more than %u threads", (unsigned)TASKS_MAX);
        return -E2BIG;
    }
    if (w->n == w->cap) {
        size_t cap = w->cap * 2;
        struct runwatch_thread *t = alloc_malloc(cap * sizeof(*t));
        if (!t) {
            snprintf(w->incomplete, sizeof(w->incomplete), "out of memory");
            return -ENOMEM;
        }
        memcpy(t, w->t, w->n * sizeof(*t));
        if (w->t != w->one)
            alloc_free(w->t);
        w->t = t;
        w->cap = cap;
    }
    int err = runwatch_open_thread(w, &w->t[w->n], tid, now_ns);
    if (err == 0) {
        w->t[w->n].listed = true;
        w->n++;
    } else if (err == -EAGAIN) {
        snprintf(w->incomplete, sizeof(w->incomplete), "no file descriptors left in the budget");
    } else if (err != -ESRCH && w->how == IDLE_CHECK_PERF) {
        runwatch_fall_back(w);
        return RUNWATCH_RETRY;
    } else if (err != -ESRCH) {
        snprintf(w->incomplete, sizeof(w->incomplete), "cannot open schedstat: %s", strerror(-err));
    }
    return err == -ESRCH ? 0 : err;
}

/*
 * Lists the threads (all: /proc/PID/task, again while new ones show up;
 * else the main thread), opening the new and closing the gone. Sets
 * w->complete.
 */
static void runwatch_rescan(struct runwatch *w, uint64_t now_ns)
{
    w->rescan = false;
    w->rescan_at = now_ns + RUNWATCH_RESCAN_NS;
    w->complete = false;
    w->incomplete[0] = '\0';
    if (w->how == IDLE_CHECK_OFF)
        return;
    if (!w->all) {
        if (w->n == 0) {
            int err = runwatch_add(w, w->pid, now_ns);
            if (err == RUNWATCH_RETRY && w->how != IDLE_CHECK_OFF)
                err = runwatch_add(w, w->pid, now_ns);
            if (err)
                return;
        }
        w->complete = w->n == 1;
        return;
    }
    if (w->how == IDLE_CHECK_SCHEDSTAT && w->taskfd < 0) {
        snprintf(w->incomplete, sizeof(w->incomplete), "cannot keep /proc/%d/task open",
                 (int)w->pid);
        return;
    }
    for (int round = 0; round < 4; round++) {
        pid_t tids[TASKS_MAX];
        size_t ntids;
        bool more;
        int lerr = tasks_list(w->proc_root, w->pid, tids, TASKS_MAX, &ntids, &more);
        if (lerr) {
            snprintf(w->incomplete, sizeof(w->incomplete), "cannot list the threads: %s",
                     strerror(-lerr));
            return;
        }
        if (more) {
            snprintf(w->incomplete, sizeof(w->incomplete), "more than %u threads",
                     (unsigned)TASKS_MAX);
            return;
        }
        for (size_t i = 0; i < w->n; i++)
            w->t[i].listed = false;
        bool added = false;
        int err = 0;
        for (size_t k = 0; !err && k < ntids; k++) {
            struct runwatch_thread *t = runwatch_find(w, tids[k]);
            if (t) {
                t->listed = true;
                continue;
            }
            size_t before = w->n;
            err = runwatch_add(w, tids[k], now_ns);
            added |= w->n > before;
        }
        if (err == RUNWATCH_RETRY) {
            if (w->how == IDLE_CHECK_OFF || (w->how == IDLE_CHECK_SCHEDSTAT && w->taskfd < 0)) {
                snprintf(w->incomplete, sizeof(w->incomplete), "no schedstat watch either");
                return;
            }
            round = -1; /* perf was refused: start over with schedstat */
            continue;
        }
        if (err)
            return;
        /* the gone: the last slot takes each one's place */
        for (size_t i = 0; i < w->n;) {
            if (w->t[i].listed) {
                i++;
                continue;
            }
            runwatch_close_thread(&w->t[i]);
            w->t[i] = w->t[--w->n];
        }
        if (!added) {
            w->complete = w->n > 0;
            return;
        }
        /* a thread may have been created while the list was read: again */
    }
    snprintf(w->incomplete, sizeof(w->incomplete), "threads keep being created");
}

/* ---- public ------------------------------------------------------------ */

int runwatch_new(pid_t pid, const struct runwatch_opts *o, uint64_t now_ns, struct runwatch **out)
{
    struct runwatch *w = alloc_calloc(1, sizeof(*w));
    const char *root = o->proc_root ? o->proc_root : "/proc";
    size_t rlen = strlen(root) + 1;
    char *copy = w ? alloc_malloc(rlen) : NULL;
    if (!copy) {
        alloc_free(w);
        return -ENOMEM;
    }
    memcpy(copy, root, rlen);
    w->proc_root = copy;
    w->pid = pid;
    w->all = o->all_threads;
    w->how = o->how;
    w->taskfd = -1;
    w->t = w->one;
    w->cap = PYPROFD_ARRAY_SIZE(w->one);
    w->nohz_full = runwatch_nohz_full();
    if (w->how == IDLE_CHECK_OFF)
        snprintf(w->why, sizeof(w->why), "turned off (idle_check: off)");
    else if (w->how == IDLE_CHECK_SCHEDSTAT)
        snprintf(w->why, sizeof(w->why), "as configured (idle_check: schedstat)");
    if (w->how == IDLE_CHECK_SCHEDSTAT)
        runwatch_schedstat_setup(w);
    runwatch_rescan(w, now_ns);
    *out = w;
    return 0;
}

void runwatch_free(struct runwatch *w)
{
    if (!w)
        return;
    runwatch_drop_all(w);
    if (w->taskfd >= 0) {
        close(w->taskfd);
        fdcap_give();
    }
    if (w->t != w->one)
        alloc_free(w->t);
    alloc_free(w->proc_root);
    alloc_free(w);
}

enum idle_check runwatch_how(const struct runwatch *w)
{
    return w->how;
}

const char *runwatch_describe(const struct runwatch *w)
{
    struct runwatch *m = (struct runwatch *)w; /* the text is a cache */
    const char *how = w->how == IDLE_CHECK_PERF        ? "perf"
                      : w->how == IDLE_CHECK_SCHEDSTAT ? "schedstat"
                                                       : "off";
    int len = w->how == IDLE_CHECK_PERF ? snprintf(m->describe, sizeof(m->describe), "%s", how)
                                        : snprintf(m->describe, sizeof(m->describe), "%s: %s", how,
                                                   w->why[0] ? w->why : "perf events refused");
    if (!w->complete && w->how != IDLE_CHECK_OFF && len > 0 && (size_t)len < sizeof(m->describe))
        snprintf(m->describe + len, sizeof(m->describe) - (size_t)len, " (incomplete: %s)",
                 w->incomplete[0] ? w->incomplete : "no thread watched");
    return m->describe;
}

enum runwatch_verdict runwatch_check(struct runwatch *w, uint64_t now_ns, bool cpu)
{
    w->looked = false;
    if (w->how == IDLE_CHECK_OFF)
        return RUNWATCH_READ;
    if ((w->rescan || !w->complete) && now_ns >= w->rescan_at)
        runwatch_rescan(w, now_ns);
    w->moved = true; /* (until a check looks) */
    if (!w->complete)
        return RUNWATCH_READ;
    if (w->skips) { /* schedstat, a target that keeps running: look less often */
        w->skips--;
        for (size_t i = 0; i < w->n; i++)
            w->t[i].off = false; /* nothing is known of this moment */
        return RUNWATCH_READ;
    }
    bool same = w->read_ok, asleep = true, rescan = false;
    w->moved = false;
    for (size_t i = 0; i < w->n; i++) {
        struct runwatch_thread *t = &w->t[i];
        uint64_t mark = t->mark;
        bool seen = t->seen;
        if (w->how == IDLE_CHECK_PERF)
            runwatch_look_perf(w, t, now_ns, &rescan);
        else
            runwatch_look_schedstat(w, t, now_ns, &rescan);
        w->moved |= !seen || t->mark != mark;
        if (!t->off) {
            same = asleep = false;
            continue;
        }
        if (t->off_ns > w->read_ns)
            same = false;
        if (t->state != RW_ASLEEP)
            asleep = false;
    }
    w->looked = true;
    if (w->how == IDLE_CHECK_SCHEDSTAT && w->all && !(cpu && asleep) && !same && w->taskfd >= 0) {
        /* a thread ran: did it create one? (the link count is 2 + threads) */
        struct stat st;
        if (fstat(w->taskfd, &st) || st.st_nlink != (nlink_t)w->n + 2)
            rescan = true;
    }
    if (rescan) {
        w->rescan = true;
        return RUNWATCH_READ;
    }
    if (!w->moved)
        w->busy = 0;
    /* cpu mode: what a thread ran since the last read is its credit's to pay
     * at an attempt that finds it running or waiting, not the last stacks' */
    if (cpu ? asleep : same)
        return cpu ? RUNWATCH_ASLEEP : RUNWATCH_SAME;
    if (w->how == IDLE_CHECK_SCHEDSTAT && w->moved) { /* a thread keeps running */
        w->busy++;
        w->skips = w->busy < 2                         ? 0
                   : w->busy - 1 < RUNWATCH_BUSY_SKIPS ? w->busy - 1
                                                       : RUNWATCH_BUSY_SKIPS;
    }
    return RUNWATCH_READ;
}

void runwatch_read(struct runwatch *w, uint64_t start_ns, bool ok)
{
    w->read_ns = start_ns;
    w->read_ok = ok;
}

int runwatch_park(struct runwatch *w, int epfd, uint64_t token)
{
    if (w->how != IDLE_CHECK_PERF || !w->complete || w->rescan || w->parked)
        return -ENOTSUP;
    size_t on = 0;
    int err = 0;
    for (size_t i = 0; i < w->n; i++) {
        struct runwatch_thread *t = &w->t[i];
        if (t->waker.ev.fd < 0) {
            char why[160];
            if (!fdcap_take()) {
                err = -EMFILE;
                break;
            }
            err = switches_open_waker(t->tid, &t->waker, why, sizeof(why));
            if (err) {
                fdcap_give();
                break;
            }
        }
        struct epoll_event ev = {.events = EPOLLIN, .data.u64 = token};
        t->waker_head = switches_head(&t->waker);
        err = switches_enable(&t->waker, true);
        if (!err && epoll_ctl(epfd, EPOLL_CTL_ADD, t->waker.ev.fd, &ev)) {
            err = -errno;
            (void)switches_enable(&t->waker, false);
        }
        if (err)
            break;
        on++;
    }
    w->parked = true;
    w->nparked = on;
    if (!err) {
        /* a switch before the wakers were on woke nobody: look again */
        for (size_t k = 0; k < w->n && !err; k++) {
            if (switches_head(&w->t[k].sw) != w->t[k].mark)
                err = -EAGAIN;
        }
    }
    if (err)
        runwatch_unpark(w, epfd);
    return err;
}

void runwatch_unpark(struct runwatch *w, int epfd)
{
    if (!w->parked)
        return;
    for (size_t i = 0; i < w->nparked && i < w->n; i++) {
        struct runwatch_thread *t = &w->t[i];
        (void)switches_enable(&t->waker, false);
        (void)epoll_ctl(epfd, EPOLL_CTL_DEL, t->waker.ev.fd, NULL);
    }
    w->parked = false;
    w->nparked = 0;
}

bool runwatch_moved(const struct runwatch *w)
{
    return w->moved;
}

bool runwatch_woke_at(const struct runwatch *w, uint64_t *at)
{
    bool any = false;
    for (size_t i = 0; i < w->nparked && i < w->n; i++) {
        const struct runwatch_thread *t = &w->t[i];
        uint64_t head = switches_head(&t->waker), when;
        if (head == t->waker_head)
            continue;
        if (!switches_first_time(&t->waker, t->waker_head, head, &when))
            return false;
        if (!any || when < *at)
            *at = when;
        any = true;
    }
    return any;
}

bool runwatch_still(const struct runwatch *w)
{
    for (size_t i = 0; i < w->n; i++) {
        if (switches_head(&w->t[i].sw) != w->t[i].mark)
            return false;
    }
    return w->complete;
}

int runwatch_on_cpu(const struct runwatch *w, pid_t host_tid, uint64_t *cpu_ns)
{
    if (!w->looked)
        return CPUCREDIT_ASK; /* this check did not look (off, incomplete, a skip) */
    const struct runwatch_thread *t = runwatch_find(w, host_tid);
    if (!t)
        return CPUCREDIT_ASK;
    if (w->how == IDLE_CHECK_SCHEDSTAT && t->seen)
        *cpu_ns = t->mark; /* read by this check's look */
    switch (t->state) {
    case RW_ASLEEP:
        return CPUCREDIT_OFF;
    case RW_RUNNING:
    case RW_RUNNABLE:
        return CPUCREDIT_RUNNABLE; /* perf: the records do not tell what it ran */
    default:
        return CPUCREDIT_ASK;
    }
}
