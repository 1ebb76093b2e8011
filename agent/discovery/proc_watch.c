/* SPDX-License-Identifier: MIT */
/*
 * proc_watch.c: new processes between full scans (see proc_watch.h). The
 * thread waits on its source and a stop pipe; the queue is a small array
 * under the watch's lock (it holds the few processes of the last tens of
 * milliseconds), searched linearly.
 */
#include "base/compat.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/readfile.h"
#include "discovery/proc_scan_parse.h"
#include "discovery/proc_events.h"
#include "discovery/proc_watch.h"

#define WATCH_ACK_WAIT_MS 200 /* a subscription's ack: longer means none comes */
#define WATCH_RCVBUF      (1 << 20)
#define WATCH_RECV_MAX    8192

static const char *const watch_names[PROC_WATCH_SOURCES] = {
    [PROC_WATCH_AUTO] = "auto",
    [PROC_WATCH_NETLINK] = "netlink",
    [PROC_WATCH_POLL] = "poll",
    [PROC_WATCH_OFF] = "off",
};

struct watch_entry {
    pid_t pid;
    bool exec;
    uint8_t tries;
    uint64_t due;
};

struct proc_watch {
    char *root;
    int rootfd; /* the proc root, for poll's reads */
    enum proc_watch_source source;
    const struct clock *clock;
    uint64_t delay_ns, poll_ns;
    void (*notify)(void *arg, uint64_t due);
    void *notify_arg;

    int nl;         /* netlink: the subscribed socket */
    int loadavg;    /* poll: <root>/loadavg */
    pid_t last_pid; /* poll: the last PID seen handed out (0: not yet) */
    int stop[2];    /* a byte written to stop[1] ends the thread */
    pthread_t thread;
    bool running;

    pthread_mutex_t mu; /* guards the queue, the flag and the counters */
    struct watch_entry *q;
    size_t nq;
    bool missed;
    struct proc_watch_stats st;
    uint64_t batch_due; /* the earliest due time queued in the current batch */
};

const char *proc_watch_source_name(enum proc_watch_source s)
{
    return (unsigned)s < PROC_WATCH_SOURCES ? watch_names[s] : "?";
}

int proc_watch_source_parse(const char *name, enum proc_watch_source *out)
{
    for (int i = 0; i < PROC_WATCH_SOURCES; i++) {
        if (strcmp(name, watch_names[i]) == 0) {
            *out = (enum proc_watch_source)i;
            return 0;
        }
    }
    return -EINVAL;
}

/* ---- the queue (under w->mu) ------------------------------------------------ */

/* Queues @pid due at @due; an entry already there takes the later due time.
 * @tell: the daemon is told at the end of the batch (the thread's own finds). */
static void watch_put(struct proc_watch *w, pid_t pid, bool exec, uint8_t tries, uint64_t due,
                      bool tell)
{
    for (size_t i = 0; i < w->nq; i++) {
        struct watch_entry *e = &w->q[i];
        if (e->pid == pid) {
            e->exec = e->exec || exec;
            e->tries = tries > e->tries ? tries : e->tries;
            if (due > e->due)
                e->due = due;
            return;
        }
    }
    if (w->nq >= PROC_WATCH_QUEUE_MAX) {
        w->missed = true;
        w->st.missed++;
        return;
    }
    w->q[w->nq++] = (struct watch_entry){.pid = pid, .exec = exec, .tries = tries, .due = due};
    if (tell && due < w->batch_due)
        w->batch_due = due;
}

/* Tells the daemon of what the batch queued (no lock held). */
static void watch_flush(struct proc_watch *w)
{
    pthread_mutex_lock(&w->mu);
    uint64_t due = w->batch_due;
    w->batch_due = UINT64_MAX;
    pthread_mutex_unlock(&w->mu);
    if (due != UINT64_MAX && w->notify)
        w->notify(w->notify_arg, due);
}

size_t proc_watch_take(struct proc_watch *w, uint64_t now, struct proc_watch_item *out, size_t cap,
                       uint64_t *next)
{
    size_t n = 0;
    uint64_t earliest = UINT64_MAX;
    pthread_mutex_lock(&w->mu);
    for (size_t i = 0; i < w->nq;) {
        struct watch_entry *e = &w->q[i];
        if (e->due <= now && n < cap) {
            out[n++] = (struct proc_watch_item){.pid = e->pid, .exec = e->exec, .tries = e->tries};
            w->q[i] = w->q[--w->nq];
            continue;
        }
        if (e->due < earliest)
            earliest = e->due;
        i++;
    }
    w->st.queued = w->nq;
    pthread_mutex_unlock(&w->mu);
    *next = earliest;
    return n;
}

void proc_watch_again(struct proc_watch *w, pid_t pid, uint64_t due, uint8_t tries)
{
    pthread_mutex_lock(&w->mu);
    watch_put(w, pid, false, tries, due, false); /* the caller knows */
    pthread_mutex_unlock(&w->mu);
}

bool proc_watch_missed(struct proc_watch *w)
{
    pthread_mutex_lock(&w->mu);
    bool m = w->missed;
    w->missed = false;
    pthread_mutex_unlock(&w->mu);
    return m;
}

void proc_watch_stats(struct proc_watch *w, struct proc_watch_stats *out)
{
    pthread_mutex_lock(&w->mu);
    *out = w->st;
    out->queued = w->nq;
    pthread_mutex_unlock(&w->mu);
}

enum proc_watch_source proc_watch_source(const struct proc_watch *w)
{
    return w->source;
}

/* ---- netlink ---------------------------------------------------------------- */

struct watch_ev {
    struct proc_watch *w;
    uint64_t now;
    int ack; /* 1: none yet; else the ack's errno */
};

static int watch_on_event(enum proc_events_kind kind, pid_t pid, pid_t ppid, int err,
                          uint64_t when_ns, void *arg)
{
    (void)ppid;
    (void)when_ns;
    struct watch_ev *ev = arg;
    if (kind == PROC_EVENTS_ACK) {
        ev->ack = err;
        return 0;
    }
    struct proc_watch *w = ev->w;
    pthread_mutex_lock(&w->mu);
    watch_put(w, pid, kind == PROC_EVENTS_EXEC, 0, ev->now + w->delay_ns, true);
    pthread_mutex_unlock(&w->mu);
    return 0;
}

/* Reads what the socket holds. Returns 0, or -errno of a socket that failed for good. */
static int watch_drain(struct proc_watch *w, struct watch_ev *ev)
{
    unsigned char buf[WATCH_RECV_MAX] __attribute__((aligned(8)));
    for (;;) {
        ssize_t n = recv(w->nl, buf, sizeof(buf), MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN)
                return 0;
            if (errno == ENOBUFS) { /* the kernel dropped events: a full scan covers them */
                pthread_mutex_lock(&w->mu);
                w->missed = true;
                w->st.missed++;
                pthread_mutex_unlock(&w->mu);
                continue;
            }
            return -errno;
        }
        struct proc_events_counts c = {0};
        ev->now = clock_mono(w->clock);
        (void)proc_events_parse(buf, (size_t)n, watch_on_event, ev, &c);
        pthread_mutex_lock(&w->mu);
        w->st.exec += c.exec;
        w->st.fork += c.fork;
        w->st.threads += c.threads;
        w->st.malformed += c.malformed;
        pthread_mutex_unlock(&w->mu);
    }
}

/* Sends a (un)subscription. */
static int watch_subscribe(int fd, bool on, bool filtered)
{
    unsigned char msg[PROC_EVENTS_SUBSCRIBE_MAX];
    size_t len = proc_events_subscribe_msg(msg, on, filtered, 1, 0);
    ssize_t n = send(fd, msg, len, 0);
    return n == (ssize_t)len ? 0 : -errno;
}

/* Waits up to WATCH_ACK_WAIT_MS for the ack: its errno, or 1 for none. */
static int watch_wait_ack(struct proc_watch *w)
{
    struct watch_ev ev = {.w = w, .ack = 1};
    uint64_t end = clock_mono_now() + WATCH_ACK_WAIT_MS * 1000000ull;
    for (;;) {
        uint64_t now = clock_mono_now();
        if (now >= end)
            return ev.ack;
        struct pollfd p = {.fd = w->nl, .events = POLLIN};
        int r = poll(&p, 1, (int)((end - now) / 1000000ull) + 1);
        if (r < 0 && errno != EINTR)
            return errno;
        if (r > 0 && watch_drain(w, &ev) < 0)
            return EIO;
        if (ev.ack != 1)
            return ev.ack;
    }
}

static int watch_netlink_open(struct proc_watch *w, char *msg, size_t msglen)
{
    int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_CONNECTOR);
    if (fd < 0) {
        snprintf(msg, msglen, "the proc connector: %s (another network namespace?)",
                 strerror(errno));
        return -EOPNOTSUPP;
    }
    struct sockaddr_nl sa = {.nl_family = AF_NETLINK, .nl_groups = 1u /* CN_IDX_PROC */};
    int sz = WATCH_RCVBUF;
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)) != 0)
        (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        snprintf(msg, msglen, "the proc connector: bind: %s (CAP_NET_ADMIN?)", strerror(errno));
        close(fd);
        return -EOPNOTSUPP;
    }
    w->nl = fd;
    /* the filtered form first (6.6+: fork and exec only); older kernels ignore it */
    int ack = 1;
    for (int filtered = 1; filtered >= 0 && ack == 1; filtered--) {
        if (watch_subscribe(fd, true, filtered != 0) != 0) {
            ack = errno ? errno : EIO;
            break;
        }
        ack = watch_wait_ack(w);
    }
    if (ack != 0) {
        if (ack == 1)
            snprintf(msg, msglen,
                     "the proc connector did not answer (the agent is not in the initial user "
                     "and PID namespaces)");
        else
            snprintf(msg, msglen, "the proc connector refused: %s%s", strerror(ack),
                     ack == EPERM ? " (CAP_NET_ADMIN)" : "");
        close(fd);
        w->nl = -1;
        return -EOPNOTSUPP;
    }
    /* what came with the ack is queued already; its notify comes with the first batch */
    return 0;
}

/* ---- poll ------------------------------------------------------------------- */

/* The last PID handed out, from loadavg's "1.00 0.50 0.25 2/345 6789". */
static int watch_last_pid(struct proc_watch *w, pid_t *out)
{
    char buf[128];
    ssize_t n = pread(w->loadavg, buf, sizeof(buf) - 1, 0);
    if (n <= 0)
        return -EIO;
    buf[n] = '\0';
    char *end = buf + n;
    while (end > buf && (end[-1] == '\n' || end[-1] == ' '))
        end--;
    char *sp = end;
    while (sp > buf && sp[-1] != ' ')
        sp--;
    pid_t pid = 0;
    if (sp == end || proc_scan_parse_pid(sp, (size_t)(end - sp), &pid) != 0 || pid < 0)
        return -EINVAL;
    *out = pid;
    return 0;
}

/* Whether @pid is a process (not a thread): its status's Tgid is itself. */
static bool watch_is_process(struct proc_watch *w, pid_t pid)
{
    char path[32], buf[512];
    size_t len = 0;
    snprintf(path, sizeof(path), "%d/status", (int)pid);
    if (readfile_into_at(w->rootfd, path, buf, sizeof(buf), &len,
                         READFILE_INTO_KERNEL | READFILE_INTO_ONCE) != 0)
        return false;
    const char *t = strstr(buf, "\nTgid:");
    if (!t)
        return false;
    t += 6;
    while (*t == '\t' || *t == ' ')
        t++;
    const char *e = t;
    while (*e >= '0' && *e <= '9')
        e++;
    pid_t tgid = 0;
    return proc_scan_parse_pid(t, (size_t)(e - t), &tgid) == 0 && tgid == pid;
}

static bool watch_in_range(pid_t pid, pid_t from, pid_t to)
{
    return from < to ? pid > from && pid <= to : pid > from || pid <= to; /* wrapped */
}

/* One look at loadavg: queues the processes born since the last. */
static void watch_poll_once(struct proc_watch *w)
{
    pid_t last;
    if (watch_last_pid(w, &last) != 0 || last == w->last_pid)
        return;
    pid_t from = w->last_pid;
    w->last_pid = last;
    if (from == 0)
        return; /* the first look: the full scan has the rest */
    uint64_t now = clock_mono(w->clock);
    uint64_t found = 0, threads = 0;
    pid_t pids[PROC_WATCH_RANGE_MAX];
    size_t np = 0;
    if (from < last && (uint64_t)(last - from) <= PROC_WATCH_RANGE_MAX) {
        for (pid_t p = from + 1; p <= last; p++) {
            if (watch_is_process(w, p))
                pids[np++] = p;
            else
                threads++;
        }
    }
    pthread_mutex_lock(&w->mu);
    for (size_t i = 0; i < np; i++)
        watch_put(w, pids[i], false, 0, now + w->delay_ns, true);
    pthread_mutex_unlock(&w->mu);
    found = np;
    if (!(from < last && (uint64_t)(last - from) <= PROC_WATCH_RANGE_MAX)) {
        /* many PIDs (threads, mostly): the listing names processes only */
        int fd = openat(w->rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
        if (!d && fd >= 0)
            close(fd);
        for (struct dirent *de; d && (de = readdir(d));) {
            pid_t p = 0;
            if (de->d_name[0] < '1' || de->d_name[0] > '9' ||
                proc_scan_parse_pid(de->d_name, strlen(de->d_name), &p) != 0 ||
                !watch_in_range(p, from, last))
                continue;
            pthread_mutex_lock(&w->mu);
            watch_put(w, p, false, 0, now + w->delay_ns, true);
            pthread_mutex_unlock(&w->mu);
            found++;
        }
        if (d)
            closedir(d);
    }
    pthread_mutex_lock(&w->mu);
    w->st.new_pid += found;
    w->st.threads += threads;
    pthread_mutex_unlock(&w->mu);
}

static int watch_poll_open(struct proc_watch *w, char *msg, size_t msglen)
{
    int fd = openat(w->rootfd, "loadavg", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        snprintf(msg, msglen, "%s/loadavg: %s", w->root, strerror(errno));
        return -EOPNOTSUPP;
    }
    w->loadavg = fd;
    if (watch_last_pid(w, &w->last_pid) != 0) {
        snprintf(msg, msglen, "%s/loadavg has no last PID", w->root);
        close(fd);
        w->loadavg = -1;
        return -EOPNOTSUPP;
    }
    return 0;
}

/* ---- the thread --------------------------------------------------------------- */

/* Sleeps until the stop pipe or @fd is readable, or @ms pass (-1: no limit). Returns false to stop.
 */
static bool watch_wait(struct proc_watch *w, int fd, int ms)
{
    struct pollfd p[2] = {{.fd = w->stop[0], .events = POLLIN}, {.fd = fd, .events = POLLIN}};
    int r = poll(p, fd >= 0 ? 2 : 1, ms);
    return !(r > 0 && (p[0].revents & (POLLIN | POLLHUP)));
}

static void watch_woke(struct proc_watch *w)
{
    pthread_mutex_lock(&w->mu);
    w->st.wakeups++;
    pthread_mutex_unlock(&w->mu);
}

static void *watch_main(void *arg)
{
    struct proc_watch *w = arg;
    struct watch_ev ev = {.w = w, .ack = 1};
    for (;;) {
        if (w->source == PROC_WATCH_NETLINK) {
            if (!watch_wait(w, w->nl, -1))
                break;
            watch_woke(w);
            if (watch_drain(w, &ev) < 0)
                break; /* the socket failed: the full scans go on */
            watch_flush(w);
            /* gather a few milliseconds of events per wake-up: a node that
             * starts threads all the time does not wake the agent each time */
            if (!watch_wait(w, -1, (int)(PROC_WATCH_BATCH_NS / 1000000ull)))
                break;
        } else {
            if (!watch_wait(w, -1, (int)(w->poll_ns / 1000000ull)))
                break;
            watch_woke(w);
            watch_poll_once(w);
            watch_flush(w);
        }
    }
    return NULL;
}

/* ---- life ----------------------------------------------------------------------- */

/* Whether <root>/self is this process: the root numbers PIDs as the agent's namespace. */
static bool watch_root_is_ours(const struct proc_watch *w)
{
    char link[32];
    ssize_t n = readlinkat(w->rootfd, "self", link, sizeof(link) - 1);
    pid_t pid = 0;
    return n > 0 && proc_scan_parse_pid(link, (size_t)n, &pid) == 0 && pid == getpid();
}

int proc_watch_new(const struct proc_watch_opts *opts, struct proc_watch **out, char *msg,
                   size_t msglen)
{
    msg[0] = '\0';
    struct proc_watch *w = alloc_calloc(1, sizeof(*w));
    if (!w)
        return -ENOMEM;
    w->rootfd = w->nl = w->loadavg = w->stop[0] = w->stop[1] = -1;
    w->source = PROC_WATCH_OFF;
    w->clock = opts->clock ? opts->clock : &clock_system;
    w->delay_ns = opts->delay_ns ? opts->delay_ns : PROC_WATCH_DELAY_NS;
    w->poll_ns = opts->poll_ns ? opts->poll_ns : PROC_WATCH_POLL_NS;
    if (w->poll_ns < 1000000ull)
        w->poll_ns = 1000000ull;
    w->notify = opts->notify;
    w->notify_arg = opts->notify_arg;
    w->batch_due = UINT64_MAX;
    w->root = alloc_strdup(opts->proc_root ? opts->proc_root : "/proc");
    w->q = alloc_calloc(PROC_WATCH_QUEUE_MAX, sizeof(*w->q));
    pthread_mutex_init(&w->mu, NULL);
    if (!w->root || !w->q) {
        proc_watch_free(w);
        return -ENOMEM;
    }
    int err = 0;
    enum proc_watch_source want = opts->want;
    if (want != PROC_WATCH_OFF) {
        w->rootfd = open(w->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (w->rootfd < 0 || !watch_root_is_ours(w)) {
            snprintf(msg, msglen,
                     "'%s' is not the proc of the agent's PID namespace: new processes are "
                     "found by the full scans alone",
                     w->root);
            err = want == PROC_WATCH_AUTO ? 0 : -EOPNOTSUPP;
            want = PROC_WATCH_OFF;
        }
    }
    if (want == PROC_WATCH_AUTO || want == PROC_WATCH_NETLINK) {
        err = watch_netlink_open(w, msg, msglen);
        if (!err)
            w->source = PROC_WATCH_NETLINK;
        else if (want == PROC_WATCH_AUTO)
            err = 0;
    }
    if (w->source == PROC_WATCH_OFF && !err &&
        (want == PROC_WATCH_AUTO || want == PROC_WATCH_POLL)) {
        size_t used = strlen(msg);
        char *m = msg + used;
        size_t left = msglen - used;
        if (used && left > 2) {
            snprintf(m, left, "; ");
            m += 2;
            left -= 2;
        }
        err = watch_poll_open(w, m, left);
        if (!err) {
            w->source = PROC_WATCH_POLL;
            if (want == PROC_WATCH_POLL)
                msg[0] = '\0';
        } else if (want == PROC_WATCH_AUTO) {
            err = 0;
        }
    }
    w->st.source = w->source;
    if (err) {
        proc_watch_free(w);
        return err;
    }
    if (w->source != PROC_WATCH_OFF) {
        if (pipe2(w->stop, O_CLOEXEC | O_NONBLOCK) != 0 ||
            pthread_create(&w->thread, NULL, watch_main, w) != 0) {
            snprintf(msg, msglen, "cannot start the watch's thread");
            proc_watch_free(w);
            return -ENOMEM;
        }
        w->running = true;
    }
    *out = w;
    return 0;
}

void proc_watch_free(struct proc_watch *w)
{
    if (!w)
        return;
    if (w->running) {
        char b = 1;
        (void)!write(w->stop[1], &b, 1);
        pthread_join(w->thread, NULL);
    }
    if (w->nl >= 0) {
        (void)watch_subscribe(w->nl, false, false); /* the kernel counts its listeners */
        close(w->nl);
    }
    for (int i = 0; i < 2; i++)
        if (w->stop[i] >= 0)
            close(w->stop[i]);
    if (w->loadavg >= 0)
        close(w->loadavg);
    if (w->rootfd >= 0)
        close(w->rootfd);
    pthread_mutex_destroy(&w->mu);
    alloc_free(w->q);
    alloc_free(w->root);
    alloc_free(w);
}
