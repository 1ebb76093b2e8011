/* SPDX-License-Identifier: MIT */
/*
 * nsampler.c: mixed stacks driven by the kernel's samples (see nsampler.h).
 */
#include "base/compat.h"

#include <sys/epoll.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/utf8.h"
#include "sampler/nsampler.h"
#include "sampler/threadstat.h"
#include "unwind/mixed.h"
#include "unwind/native.h"
#include "perf/perfsample.h"

#define NSAMPLER_RESCAN_NS  1000000000ull
#define NSAMPLER_REFRESH_NS 1000000000ull
#define NSAMPLER_RING_LOG2  5u /* 32 pages: ~7 samples of 16 KiB of stack */

struct nthread {
    pid_t host_tid;  /* 0: a free slot */
    uint64_t ns_tid; /* as the target sees it: how the Python read names it */
    bool seen;       /* in the last rescan */
    struct perfsample *ps;
    char name[64]; /* valid UTF-8 */
};

struct nsampler {
    pid_t pid;
    char *proc_root;
    struct unwinder *u;
    struct sample_sink sink;
    struct nsampler_opts o;
    struct native *native;
    struct mixed *mixed;
    int ep;
    uint64_t rescan_at;
    uint64_t refreshed_at; /* the last time the mappings were read again */
    uint64_t sample_ns;    /* the kernel's time of the sample being handled */
    struct nthread threads[NSAMPLER_MAX_THREADS];
    size_t hi; /* threads[hi...] are free */
    struct native_frame frames[NATIVE_MAX_FRAMES];
    /* the Python read of this drain: valid while read_start is after the
     * samples it is used for */
    const struct unwind_result *read;
    enum sample_status read_status; /* why read is NULL */
    uint64_t read_start, read_end;
    bool read_done, gone;
    struct nsampler_counts c;
};

/* ---- threads ----------------------------------------------------------------- */

static void nsampler_name(struct nsampler *s, struct nthread *t)
{
    char comm[32];
    if (threadstat_comm(s->proc_root, s->pid, t->host_tid, comm, sizeof(comm)))
        comm[0] = '\0';
    size_t n = strlen(comm);
    if (n == 15)
        n = utf8_trim_cut(comm, n);
    (void)utf8_sanitize(t->name, sizeof(t->name), comm, n);
}

static void nsampler_close(struct nsampler *s, struct nthread *t)
{
    if (t->ps) {
        (void)epoll_ctl(s->ep, EPOLL_CTL_DEL, perfsample_fd(t->ps), NULL);
        s->c.lost += perfsample_lost(t->ps);
        perfsample_free(t->ps);
    }
    *t = (struct nthread){0};
}

/* Opens thread @tid in a free slot. Returns 0, or the refusal's -errno. */
static int nsampler_open(struct nsampler *s, pid_t tid, char *why, size_t whylen)
{
    struct nthread *t = NULL;
    for (size_t i = 0; i < NSAMPLER_MAX_THREADS && !t; i++) {
        if (!s->threads[i].host_tid)
            t = &s->threads[i];
    }
    if (!t)
        return -ENOSPC;
    uint64_t ns_tid;
    int err = threadstat_ns_tid(s->proc_root, s->pid, tid, &ns_tid);
    if (err)
        return err;
    struct perfsample *ps;
    err = perfsample_open(s->pid, tid, s->o.period_ns, s->o.stack_bytes, NSAMPLER_RING_LOG2, &ps,
                          why, whylen);
    if (err)
        return err;
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)(t - s->threads)};
    if (epoll_ctl(s->ep, EPOLL_CTL_ADD, perfsample_fd(ps), &ev)) {
        err = -errno;
        perfsample_free(ps);
        snprintf(why, whylen, "epoll: %s", strerror(-err));
        return err;
    }
    *t = (struct nthread){.host_tid = tid, .ns_tid = ns_tid, .seen = true, .ps = ps};
    nsampler_name(s, t);
    if ((size_t)(t - s->threads) >= s->hi)
        s->hi = (size_t)(t - s->threads) + 1;
    return 0;
}

/*
 * Opens the threads not open yet and closes those gone. Returns how many are
 * open; the first refusal's -errno and words in *@err and @why.
 */
static size_t nsampler_rescan(struct nsampler *s, int *err, char *why, size_t whylen)
{
    pid_t tids[TASKS_MAX];
    size_t n;
    int lerr = tasks_list(s->proc_root, s->pid, tids, TASKS_MAX, &n, NULL);
    if (lerr) {
        s->gone = lerr == -ESRCH;
        return 0;
    }
    for (size_t i = 0; i < NSAMPLER_MAX_THREADS; i++)
        s->threads[i].seen = false;
    for (size_t k = 0; k < n; k++) {
        pid_t tid = tids[k];
        if (s->o.main_only && tid != s->pid)
            continue;
        bool known = false;
        for (size_t i = 0; i < NSAMPLER_MAX_THREADS && !known; i++) {
            if (s->threads[i].host_tid == tid) {
                s->threads[i].seen = true;
                known = true;
            }
        }
        if (known)
            continue;
        char w[256];
        int e = nsampler_open(s, tid, w, sizeof(w));
        if (e && e != -ESRCH && e != -ENOENT) {
            s->c.refused++;
            if (err && !*err) {
                *err = e;
                snprintf(why, whylen, "%s", w);
            }
        }
    }
    size_t open = 0;
    for (size_t i = 0; i < NSAMPLER_MAX_THREADS; i++) {
        struct nthread *t = &s->threads[i];
        if (t->host_tid && !t->seen)
            nsampler_close(s, t); /* the thread exited */
        else if (t->host_tid)
            open++;
    }
    while (s->hi > 0 && !s->threads[s->hi - 1].host_tid)
        s->hi--;
    s->c.threads = open;
    return open;
}

/* ---- life ---------------------------------------------------------------------- */

int nsampler_new(pid_t pid, struct unwinder *u, const struct sample_sink *sink,
                 const struct nsampler_opts *o, struct nsampler **out, char *why, size_t whylen)
{
    if (!o->period_ns) {
        snprintf(why, whylen, "no sampling period");
        return -EINVAL;
    }
    struct nsampler *s = alloc_calloc(1, sizeof(*s));
    const char *root = o->proc_root ? o->proc_root : "/proc";
    if (!s || !(s->proc_root = alloc_strdup(root)) || mixed_new(&s->mixed)) {
        nsampler_free(s);
        snprintf(why, whylen, "out of memory");
        return -ENOMEM;
    }
    s->ep = -1;
    s->pid = pid;
    s->u = u;
    s->sink = *sink;
    s->o = *o;
    s->o.proc_root = NULL;
    if (!s->o.stack_bytes)
        s->o.stack_bytes = NSAMPLER_STACK_DEFAULT;
    if (!s->o.max_ran_ns)
        s->o.max_ran_ns = NSAMPLER_MAX_RAN_DEFAULT;
    s->ep = epoll_create1(EPOLL_CLOEXEC);
    if (s->ep < 0) {
        int err = -errno;
        snprintf(why, whylen, "epoll: %s", strerror(-err));
        nsampler_free(s);
        return err;
    }
    int err = native_new(s->proc_root, pid, &s->native, why, whylen);
    if (err) {
        nsampler_free(s);
        return err;
    }
    err = 0;
    if (nsampler_rescan(s, &err, why, whylen) == 0) {
        if (!err) {
            err = -ESRCH;
            snprintf(why, whylen, "the process has no thread left");
        }
        nsampler_free(s);
        return err;
    }
    s->rescan_at = clock_mono_now() + NSAMPLER_RESCAN_NS;
    *out = s;
    return 0;
}

void nsampler_free(struct nsampler *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < NSAMPLER_MAX_THREADS; i++)
        nsampler_close(s, &s->threads[i]);
    if (s->ep >= 0)
        close(s->ep);
    native_free(s->native);
    mixed_free(s->mixed);
    alloc_free(s->proc_root);
    alloc_free(s);
}

int nsampler_set_period(struct nsampler *s, uint64_t period_ns)
{
    if (!period_ns)
        return -EINVAL;
    int err = 0;
    s->o.period_ns = period_ns;
    for (size_t i = 0; i < s->hi; i++) {
        int e = s->threads[i].ps ? perfsample_set_period(s->threads[i].ps, period_ns) : 0;
        if (e && !err)
            err = e;
    }
    return err;
}

uint64_t nsampler_period(const struct nsampler *s)
{
    return s->o.period_ns;
}

int nsampler_fd(const struct nsampler *s)
{
    return s->ep;
}

struct nsampler_counts nsampler_counts(const struct nsampler *s)
{
    struct nsampler_counts c = s->c;
    if (s->native)
        c.files = native_files(s->native);
    for (size_t i = 0; i < NSAMPLER_MAX_THREADS; i++) {
        if (s->threads[i].ps)
            c.lost += perfsample_lost(s->threads[i].ps);
    }
    return c;
}

/* ---- one kernel sample ------------------------------------------------------- */

/* The Python stacks now: all threads, with their entry frames. */
static void nsampler_read(struct nsampler *s)
{
    unsigned flags = (s->o.unwind_flags & UNWIND_NO_GC) | UNWIND_ALL_THREADS | UNWIND_ENTRIES;
    enum sample_status st;
    s->read_start = clock_mono_now();
    if (unwinder_sample(s->u, flags, &s->read, &st)) {
        s->read = NULL;
        s->read_status = st;
        if (st == SAMPLE_PROCESS_GONE)
            s->gone = true;
    }
    s->read_end = clock_mono_now();
    s->read_done = true;
}

static const struct unwind_thread *nsampler_python_of(const struct nsampler *s, uint64_t ns_tid)
{
    for (size_t i = 0; s->read && i < s->read->nthreads; i++) {
        if (s->read->threads[i].native_thread_id == ns_tid)
            return &s->read->threads[i];
    }
    return NULL;
}

static void nsampler_emit(struct nsampler *s, const struct nthread *t,
                          const struct unwind_thread *py, const struct unwind_frame *f, size_t n)
{
    if (!n)
        return;
    struct sink_sample x = {.frames = f,
                            .nframes = n,
                            .thread_id = t->ns_tid,
                            .interp_id = py ? py->interp_id : 0,
                            .thread_name = t->name,
                            .nanos = (int64_t)s->o.period_ns,
                            .at_ns = s->sample_ns};
    (void)s->sink.add(s->sink.arg, &x);
}

static void nsampler_one(struct nsampler *s, struct nthread *t, const struct perfsample_record *r)
{
    s->c.samples++;
    s->sample_ns = r->time_ns;
    /* a Python read begun after the sample, and soon enough after it */
    if (!s->read_done || s->read_start < r->time_ns)
        nsampler_read(s);
    /* how long the thread ran between its sample and now (after the read):
     * the time its stack had to change in; on another CPU about the wall
     * time since the sample, on ours about none (we had its CPU) */
    uint64_t lag = s->read_end > r->time_ns ? s->read_end - r->time_ns : 0;
    uint64_t now_cpu = 0, ran = lag; /* a thread runs no longer than the time that passed */
    if (lag > s->o.max_ran_ns)       /* (the read interrupts the thread's CPU: only when needed) */
        ran = perfsample_cpu_ns(t->ps, &now_cpu) == 0 && now_cpu >= r->cpu_ns ? now_cpu - r->cpu_ns
                                                                              : UINT64_MAX;
    if (ran > s->o.max_ran_ns) {
        s->c.late++;
        s->c.failed_by[SAMPLE_NATIVE_LATE]++;
        return;
    }
    s->c.ran_sum_ns += ran;
    if (ran > s->c.ran_max_ns)
        s->c.ran_max_ns = ran;
    if (!s->read) {
        s->c.failed++;
        s->c.failed_by[s->read_status]++;
        return;
    }
    const struct unwind_thread *py = nsampler_python_of(s, t->ns_tid);
    if (py && py->status != SAMPLE_OK) {
        s->c.failed++;
        s->c.failed_by[py->status]++;
        return;
    }
    int nc = native_unwind(s->native, r, s->frames, NATIVE_MAX_FRAMES);
    if (nc == -ENOENT && r->time_ns >= s->refreshed_at + NSAMPLER_REFRESH_NS) {
        /* a library loaded since (at most once a second: an address in no
         * file, a JIT's, would have every sample read the mappings again) */
        s->refreshed_at = r->time_ns;
        s->c.refreshes++;
        if (native_refresh(s->native) == 0)
            nc = native_unwind(s->native, r, s->frames, NATIVE_MAX_FRAMES);
    }
    if (nc < 0)
        nc = 0;
    const struct unwind_frame *out;
    size_t n;
    if (!py || py->nframes == 0) {
        /* no Python on this thread: its C frames alone */
        if (mixed_merge(s->mixed, s->frames, (size_t)nc, false, NULL, 0, &out, &n) == MIXED_OK &&
            n) {
            s->c.native++;
            nsampler_emit(s, t, py, out, n);
        } else { /* the copied stack gave no frame */
            s->c.failed++;
            s->c.failed_by[SAMPLE_READ_FAULT]++;
        }
        return;
    }
    if (nc == 0) {
        s->c.python++;
        n = mixed_python_only(s->mixed, py->frames, py->nframes, &out);
        nsampler_emit(s, t, py, out, n);
        return;
    }
    switch (mixed_merge(s->mixed, s->frames, (size_t)nc, native_complete(s->native), py->frames,
                        py->nframes, &out, &n)) {
    case MIXED_OK:
        s->c.merged++;
        nsampler_emit(s, t, py, out, n);
        break;
    case MIXED_CUT:
        s->c.cut++;
        nsampler_emit(s, t, py, out, n);
        break;
    case MIXED_NO_ENTRY:
        s->c.python++;
        n = mixed_python_only(s->mixed, py->frames, py->nframes, &out);
        nsampler_emit(s, t, py, out, n);
        break;
    case MIXED_DISAGREE:
        s->c.disagree++;
        s->c.failed_by[SAMPLE_NATIVE_DISAGREE]++;
        break;
    }
}

int nsampler_drain(struct nsampler *s, uint64_t now_ns)
{
    if (now_ns >= s->rescan_at) {
        (void)nsampler_rescan(s, NULL, NULL, 0);
        s->rescan_at = now_ns + NSAMPLER_RESCAN_NS;
    }
    /* every ring, not only those epoll reports: the readiness of a perf
     * event is consumed by whichever poll asks first (the caller's) */
    s->read_done = false;
    for (size_t i = 0; i < s->hi; i++) {
        struct nthread *t = &s->threads[i];
        struct perfsample_record r;
        while (t->ps && perfsample_next(t->ps, &r) == 1)
            nsampler_one(s, t, &r);
    }
    /* A thread that exited leaves its event hung up, readable for good: its
     * ring is drained above, so it is closed now, not at the next rescan
     * (a level-triggered wait on it would wake the caller without end). */
    struct epoll_event ev[16];
    int n = epoll_wait(s->ep, ev, (int)PYPROFD_ARRAY_SIZE(ev), 0);
    for (int k = 0; k < n; k++) {
        uint32_t i = ev[k].data.u32;
        if ((ev[k].events & (EPOLLHUP | EPOLLERR)) && i < NSAMPLER_MAX_THREADS &&
            s->threads[i].ps) {
            nsampler_close(s, &s->threads[i]);
            s->c.threads--;
        }
    }
    return s->gone ? -ESRCH : 0;
}
