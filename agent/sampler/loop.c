/* SPDX-License-Identifier: MIT */
/*
 * loop.c: the agent's sampling thread (see loop.h): discovery, the per-target
 * schedules in a heap, the CPU budget, window cuts and profile requests.
 *
 * Locking: l->mu guards everything another thread may look at or hand over
 * (the process table and the targets' labels, states and count snapshots, the
 * pending config, the request list, the flags). The sampling thread holds it
 * for housekeeping (every LOOP_TICK_NS) and while it sleeps, never while it
 * samples; sampler counts are copied into snapshots under the lock, so other
 * threads never read a sampler.
 */
#include "base/compat.h"

#include <math.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "base/alloc.h"
#include "base/log.h"
#include "discovery/execid.h"
#include "discovery/proc_scan.h"
#include "discovery/pyruntime.h"
#include "pprof/pprof_build.h"
#include "sampler/loop.h"
#include "sampler/sampler.h"

#define LOOP_TICK_NS        100000000ull  /* housekeeping period */
#define LOOP_BUDGET_NS      1000000000ull /* CPU budget measurement period */
#define LOOP_MAX_PROCS      16384u        /* processes remembered between scans */
#define LOOP_MAX_REQUESTS   SAMPLER_MAX_TAPS
#define LOOP_RECHECK_RARE   30u /* refresh intervals before an unsupported process is re-read */
#define LOOP_RECHECK_OFTEN  6u  /* ... a process that is not Python */
#define LOOP_MAX_JOBS_STATS 1024u
#define LOOP_QUEUE_WINDOWS  2u      /* windows per target in the pool (current + in flight) */
#define LOOP_TARGETS_CAP    100000u /* the most max_targets can mean */
/* A target none of whose attempts succeeded for this long (and at least
 * LOOP_STUCK_MIN_ATTEMPTS of them) is attached again from scratch; each
 * further time in a row waits twice as long, up to LOOP_STUCK_MAX_NS. */
#define LOOP_STUCK_NS           10000000000ull
#define LOOP_STUCK_MAX_NS       600000000000ull
#define LOOP_STUCK_MIN_ATTEMPTS 20u
#define LOOP_EXEC_CHECK_NS      1000000000ull /* how often a target's program image is checked */
#define LOOP_EXEC_RETRIES       10u           /* reads of an image identity not known at attach */

/* Why a target was attached again (pyprofd_target_reattaches_total{reason}). */
enum loop_reattach {
    LR_FAILING, /* every attempt failed for a while */
    LR_EXEC,    /* the process ran exec(): another program image */
    LR_COUNT,
};

static const char *const loop_reattach_names[LR_COUNT] = {"failing", "exec"};

enum loop_state {
    LS_NEW,         /* reported by the scan, not looked at yet */
    LS_YOUNG,       /* younger than min_process_age */
    LS_ACTIVE,      /* a target, sampled */
    LS_NOT_PYTHON,  /* no CPython 3.13+ runtime (rechecked rarely) */
    LS_UNSUPPORTED, /* a Python runtime pyprofd cannot read (reason) */
    LS_UNREADABLE,  /* permission denied or a read error (reason) */
    LS_DROPPED,     /* no job kept it */
    LS_FAILED,      /* attach failed (reason) */
    LS_OVER_LIMIT,  /* max_targets reached, or max_labels_per_profile exceeded */
};

static const char *const loop_state_names[] = {
    "new",        "young",   "active", "not_python", "unsupported",
    "unreadable", "dropped", "failed", "over_limit",
};

struct loop_job_stats {
    char name[64];
    uint64_t taken, failed, missed, skipped, thread_samples, windows, windows_dropped, retried;
    uint64_t failed_by[SAMPLE_STATUS_COUNT];
    uint64_t reattached[LR_COUNT];
    uint64_t stacks_dropped; /* thread stacks a full window could not take */
};

struct loop_request;

struct loop_target {
    struct proc_key key;
    size_t job; /* index into cfg->jobs */
    char job_name[64];
    char version[32];
    struct labels meta;   /* discovered labels, before relabeling */
    struct labels labels; /* after relabeling, external labels added */
    enum profile_mode mode;
    double rate;
    uint64_t interval_ns; /* sampling */
    uint64_t window_ns;   /* profile interval */
    struct memread *mr;
    struct pyruntime *rt;
    struct unwinder *u;
    struct asyncio *aio;  /* async_aware jobs on CPython 3.14+ */
    char async_note[300]; /* async_aware but unavailable: why (/targets) */
    char async_snap[320]; /* what /targets says about async, as of housekeeping (under mu) */
    bool async_all;       /* async_mode all was asked for */
    struct sampler *s;
    struct agg *win;
    uint64_t win_start;         /* CLOCK_MONOTONIC */
    int64_t win_start_real;     /* CLOCK_REALTIME */
    double credit;              /* budget: attempts earned */
    size_t heap;                /* index in the heap */
    bool gone;                  /* the sampler saw the process exit */
    struct sampler_counts snap; /* under l->mu */
    uint64_t windows, windows_dropped;
    uint64_t stacks_dropped; /* at a window's caps, in windows cut so far (agg_stats) */
    /* is it still the program it was? (the AT_RANDOM bytes of its image) */
    struct exec_id exec;
    uint64_t exec_checked;
    unsigned exec_retries; /* reads of an exec id not known at attach */
    /* attempts all failing since (0: the last one taken), the counts then */
    uint64_t failing_since, failing_attempts, seen_taken;
    uint64_t stuck_ns;       /* how long failing makes it stale (from its process entry) */
    const char *removed_why; /* set when removed on purpose: for the log line */
    struct loop_request *tap_req[SAMPLER_MAX_TAPS];
    struct agg *taps[SAMPLER_MAX_TAPS];
};

struct loop_proc {
    struct proc_key key;
    enum loop_state state;
    bool seen;
    uint64_t recheck_ns; /* re-read no earlier than this */
    char reason[320];
    char version[32];
    char comm[32];
    struct loop_target *t; /* LS_ACTIVE only */
    /* attached again from scratch (loop_reattach), and why the last time */
    uint32_t reattaches;
    char reattach_why[160];
    uint64_t stuck_ns; /* 0: LOOP_STUCK_NS; doubled by each reattach for failing in a row */
};

struct loop_part {
    struct agg *agg;
    struct labels labels;
    enum profile_mode mode;
    int64_t period_ns;
};

struct loop_request {
    pid_t pid;
    uint64_t max_bytes; /* limits.max_profile_bytes when it started */
    uint64_t seconds;
    uint64_t deadline; /* set when started */
    bool started, done, cancelled;
    int err;
    char errmsg[160];
    struct loop_part *parts;
    size_t nparts, cap;
    pthread_cond_t cond;
    struct loop_request *next;
};

struct loop {
    pthread_mutex_t mu;
    pthread_cond_t wake; /* the sampling thread sleeps on it */
    pthread_t thread;
    bool running, stop, ready, kick;
    struct pyprofd_config *cfg;
    struct pyprofd_config *pending_cfg;
    struct loop_opts opts;
    struct proc_scan *scan;

    struct loop_proc *procs;
    size_t nprocs;
    uint32_t *index; /* procs index + 1 by key hash; 0 empty */
    size_t index_mask;

    struct loop_target **heap;
    size_t nheap, ntargets, max_targets;
    struct loop_target **targets; /* all targets; heap holds the same pointers */

    struct loop_request *requests;
    size_t nrequests;

    struct loop_job_stats *jobs; /* totals of targets that are gone, by job name */
    size_t njobs;

    uint64_t next_scan, next_tick, scan_now;
    size_t cap_targets; /* room in heap/targets */
    uint64_t scans, scan_errors;
    uint64_t phase_seq;
    /* the two clocks read together at the start of housekeeping: a window's
     * wall-clock start is its monotonic start on this pair, so a window's
     * time and duration (monotonic) never overlap the next one's, however
     * long housekeeping takes before it gets to the cut */
    uint64_t hk_mono;
    int64_t hk_real;
    /* budget */
    double factor;
    uint64_t budget_wall, budget_cpu;
    uint64_t windows_dropped_total;
};

/* ---- small helpers ---------------------------------------------------- */

static uint64_t loop_thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int64_t loop_real_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/* The wall-clock time of monotonic time @mono (near the last housekeeping). */
static int64_t loop_real_at(const struct loop *l, uint64_t mono)
{
    return l->hk_real + ((int64_t)mono - (int64_t)l->hk_mono);
}

/* Reads both clocks; @mono is taken as the monotonic reading of the pair. */
static void loop_clocks(struct loop *l, uint64_t mono)
{
    l->hk_mono = mono;
    l->hk_real = loop_real_ns();
}

static void loop_copy_str(char *dst, size_t len, const char *src)
{
    snprintf(dst, len, "%s", src ? src : "");
}

/*
 * Window limits for one target's memory cap: the defaults scaled down so that
 * the windows a target can have at once (LOOP_QUEUE_WINDOWS) fit in it.
 * Every cap is kept at a sane minimum.
 */
struct agg_limits loop_window_limits(uint64_t target_bytes)
{
    struct agg_limits d = agg_limits_default();
    /* rough bytes of one default window, all tables full */
    double full = (double)d.string_bytes + (double)d.strings * 12.0 + (double)d.functions * 40.0 +
                  (double)d.locations * 40.0 + (double)d.samples * 64.0 +
                  (double)d.stack_slots * 4.0 + (double)d.threads * 64.0;
    double f = (double)target_bytes / LOOP_QUEUE_WINDOWS / full;
    if (f > 1.0)
        f = 1.0;
#define LOOP_SCALE(field, min)                                                                     \
    d.field = (size_t)((double)d.field * f) < (min) ? (min) : (size_t)((double)d.field * f)
    LOOP_SCALE(string_bytes, 65536u);
    LOOP_SCALE(strings, 1024u);
    LOOP_SCALE(functions, 1024u);
    LOOP_SCALE(locations, 4096u);
    LOOP_SCALE(samples, 4096u);
    LOOP_SCALE(stack_slots, 65536u);
    LOOP_SCALE(threads, 256u);
#undef LOOP_SCALE
    return d;
}

/* ---- the heap of targets by due time ------------------------------------ */

static bool loop_heap_less(struct loop_target *a, struct loop_target *b)
{
    return sampler_due(a->s) < sampler_due(b->s);
}

static void loop_heap_swap(struct loop *l, size_t i, size_t j)
{
    struct loop_target *t = l->heap[i];
    l->heap[i] = l->heap[j];
    l->heap[j] = t;
    l->heap[i]->heap = i;
    l->heap[j]->heap = j;
}

static void loop_heap_up(struct loop *l, size_t i)
{
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!loop_heap_less(l->heap[i], l->heap[p]))
            break;
        loop_heap_swap(l, i, p);
        i = p;
    }
}

static void loop_heap_down(struct loop *l, size_t i)
{
    for (;;) {
        size_t c = 2 * i + 1, m = i;
        if (c < l->nheap && loop_heap_less(l->heap[c], l->heap[m]))
            m = c;
        if (c + 1 < l->nheap && loop_heap_less(l->heap[c + 1], l->heap[m]))
            m = c + 1;
        if (m == i)
            return;
        loop_heap_swap(l, i, m);
        i = m;
    }
}

static void loop_heap_remove(struct loop *l, struct loop_target *t)
{
    size_t i = t->heap;
    PYPROFD_ASSERT(i < l->nheap && l->heap[i] == t);
    l->nheap--;
    if (i != l->nheap) {
        l->heap[i] = l->heap[l->nheap];
        l->heap[i]->heap = i;
        loop_heap_down(l, i);
        loop_heap_up(l, i);
    }
}

/* ---- job totals ---------------------------------------------------------- */

static struct loop_job_stats *loop_job_stats(struct loop *l, const char *name)
{
    for (size_t i = 0; i < l->njobs; i++) {
        if (strcmp(l->jobs[i].name, name) == 0)
            return &l->jobs[i];
    }
    if (l->njobs == LOOP_MAX_JOBS_STATS)
        return NULL;
    struct loop_job_stats *j = &l->jobs[l->njobs++];
    memset(j, 0, sizeof(*j));
    loop_copy_str(j->name, sizeof(j->name), name);
    return j;
}

static void loop_job_add(struct loop_job_stats *j, const struct sampler_counts *c)
{
    j->taken += c->taken;
    j->failed += c->failed;
    j->missed += c->missed;
    j->skipped += c->skipped;
    j->thread_samples += c->thread_samples;
    j->retried += c->retried;
    for (size_t i = 0; i < SAMPLE_STATUS_COUNT; i++)
        j->failed_by[i] += c->failed_by[i];
}

/* ---- windows -------------------------------------------------------------- */

/* Hands the target's window to the export thread and starts a new one. */
static void loop_cut(struct loop *l, struct loop_target *t, uint64_t now, bool final)
{
    struct agg *fresh = NULL;
    t->stacks_dropped += agg_stats(t->win).dropped;
    if (!final && window_get(l->opts.queue, &fresh)) {
        /* no window to switch to: keep the one we have, losing its content */
        agg_reset(t->win);
        sampler_set_window(t->s, t->win); /* the threads' last stacks are gone with it */
        t->windows_dropped++;
        l->windows_dropped_total++;
        t->win_start = now;
        t->win_start_real = loop_real_at(l, now);
        return;
    }
    struct window_item item = {
        .agg = t->win,
        .meta =
            {
                .pid = t->key.pid,
                .mode = t->mode,
                .period_ns = (int64_t)t->interval_ns,
                .time_nanos = t->win_start_real,
                .duration_nanos = (int64_t)(now - t->win_start),
                .final = final,
            },
    };
    loop_copy_str(item.meta.job, sizeof(item.meta.job), t->job_name);
    bool empty = agg_sample_count(t->win) == 0;
    int err = empty ? -ENODATA : labels_copy(&item.meta.labels, &t->labels);
    if (!err)
        err = window_push(l->opts.queue, &item);
    if (err) {
        if (err != -ENODATA) {
            t->windows_dropped++;
            l->windows_dropped_total++;
        }
        labels_release(&item.meta.labels);
        window_recycle(l->opts.queue, t->win);
    } else {
        t->windows++;
    }
    t->win = fresh;
    if (t->s && fresh)
        sampler_set_window(t->s, fresh);
    t->win_start = now;
    t->win_start_real = loop_real_at(l, now);
}

/* ---- requests ------------------------------------------------------------- */

static void loop_request_detach(struct loop *l, struct loop_target *t, size_t q)
{
    (void)l;
    sampler_remove_tap(t->s, t->taps[q]);
    t->taps[q] = NULL;
    t->tap_req[q] = NULL;
}

static bool loop_request_wants(const struct loop_request *r, const struct loop_target *t)
{
    return r->started && !r->done && (r->pid == 0 || r->pid == t->key.pid);
}

/* Hangs a tap of request @r on target @t. */
static void loop_request_attach(struct loop *l, struct loop_request *r, struct loop_target *t)
{
    size_t q = 0;
    while (q < SAMPLER_MAX_TAPS && t->taps[q])
        q++;
    if (q == SAMPLER_MAX_TAPS || r->nparts == r->cap)
        return;
    /* a tap is a target's third window: a quarter of its memory cap */
    struct agg_limits lim = loop_window_limits(l->cfg->global.limits.target_memory_bytes / 2);
    struct loop_part *p = &r->parts[r->nparts];
    memset(p, 0, sizeof(*p));
    if (agg_new(&lim, &p->agg))
        return;
    if (labels_copy(&p->labels, &t->labels) || sampler_add_tap(t->s, p->agg)) {
        labels_release(&p->labels);
        agg_free(p->agg);
        p->agg = NULL;
        return;
    }
    p->mode = t->mode;
    p->period_ns = (int64_t)t->interval_ns;
    r->nparts++;
    t->taps[q] = p->agg;
    t->tap_req[q] = r;
}

static void loop_request_finish(struct loop *l, struct loop_request *r)
{
    for (size_t i = 0; i < l->ntargets; i++) {
        struct loop_target *t = l->targets[i];
        for (size_t q = 0; q < SAMPLER_MAX_TAPS; q++) {
            if (t->tap_req[q] == r)
                loop_request_detach(l, t, q);
        }
    }
    r->done = true;
    pthread_cond_broadcast(&r->cond);
}

static void loop_requests_tick(struct loop *l, uint64_t now)
{
    for (struct loop_request *r = l->requests; r; r = r->next) {
        if (r->done)
            continue;
        if (!r->started && r->cancelled) {
            r->done = true;
            pthread_cond_broadcast(&r->cond);
            continue;
        }
        if (!r->started) {
            bool found = r->pid == 0;
            for (size_t i = 0; i < l->ntargets && !found; i++)
                found = l->targets[i]->key.pid == r->pid && !l->targets[i]->gone;
            if (!found) {
                r->err = -ENOENT;
                snprintf(r->errmsg, sizeof(r->errmsg), "process %d is not a current target",
                         (int)r->pid);
                r->done = true;
                pthread_cond_broadcast(&r->cond);
                continue;
            }
            r->cap = l->max_targets;
            r->parts = alloc_calloc(r->cap ? r->cap : 1, sizeof(*r->parts));
            if (!r->parts) {
                r->err = -ENOMEM;
                snprintf(r->errmsg, sizeof(r->errmsg), "out of memory");
                r->done = true;
                pthread_cond_broadcast(&r->cond);
                continue;
            }
            r->started = true;
            r->deadline = now + r->seconds * 1000000000ull;
            r->max_bytes = l->cfg->global.limits.max_profile_bytes;
            for (size_t i = 0; i < l->ntargets; i++) {
                if (!l->targets[i]->gone && loop_request_wants(r, l->targets[i]))
                    loop_request_attach(l, r, l->targets[i]);
            }
        } else if (now >= r->deadline || r->cancelled || l->stop) {
            loop_request_finish(l, r);
        }
    }
}

/* ---- targets ------------------------------------------------------------- */

static void loop_target_free(struct loop *l, struct loop_target *t)
{
    if (!t)
        return;
    sampler_free(t->s);
    asyncio_free(t->aio); /* before its unwinder */
    unwinder_free(t->u);
    memread_free(t->mr);
    alloc_free(t->rt);
    window_recycle(l->opts.queue, t->win);
    labels_release(&t->meta);
    labels_release(&t->labels);
    alloc_free(t);
}

/* Ends target @t: taps detached, partial window flushed, totals kept. */
static void loop_target_remove(struct loop *l, struct loop_target *t, uint64_t now)
{
    for (size_t q = 0; q < SAMPLER_MAX_TAPS; q++) {
        if (t->tap_req[q])
            loop_request_detach(l, t, q);
    }
    loop_cut(l, t, now, true);
    struct sampler_counts c = sampler_counts(t->s);
    struct loop_job_stats *j = loop_job_stats(l, t->job_name);
    if (j) {
        loop_job_add(j, &c);
        j->windows += t->windows;
        j->windows_dropped += t->windows_dropped;
        j->stacks_dropped += t->stacks_dropped;
    }
    loop_heap_remove(l, t);
    for (size_t i = 0; i < l->ntargets; i++) {
        if (l->targets[i] == t) {
            l->targets[i] = l->targets[--l->ntargets];
            break;
        }
    }
    log_info("stopped sampling process %d (%s): %s", (int)t->key.pid, t->job_name,
             t->gone          ? "it exited"
             : t->removed_why ? t->removed_why
                              : "no longer a target");
    loop_target_free(l, t);
}

/* The labels a job sees for a process: its meta labels plus version and job. */
static int loop_job_labels(const struct pyprofd_config *cfg, const struct config_job *job,
                           const struct labels *meta, struct labels *out, bool *keep)
{
    int err = labels_copy(out, meta);
    if (!err)
        err = labels_set(out, "job", job->job_name);
    if (!err)
        err = relabel_apply(job->relabel, out, keep);
    if (!err && *keep)
        err = relabel_default_service_name(out);
    if (!err && *keep) {
        relabel_finish(out);
        for (size_t i = 0; !err && i < cfg->global.external_labels.n; i++) {
            const struct label *e = &cfg->global.external_labels.v[i];
            if (!labels_get(out, e->name))
                err = labels_set(out, e->name, e->value);
        }
    }
    return err;
}

/* Starts sampling process @p as a target of job @j. Fills p->reason on failure. */
static int loop_target_start(struct loop *l, struct loop_proc *p, size_t j, struct labels *meta,
                             struct labels *labels, struct memread *mr, struct pyruntime *rt,
                             uint64_t now)
{
    const struct config_job *job = &l->cfg->jobs[j];
    struct loop_target *t = alloc_calloc(1, sizeof(*t));
    if (!t)
        return -ENOMEM;
    t->key = p->key;
    t->job = j;
    loop_copy_str(t->job_name, sizeof(t->job_name), job->job_name);
    loop_copy_str(t->version, sizeof(t->version), p->version);
    t->meta = *meta;
    memset(meta, 0, sizeof(*meta));
    t->labels = *labels;
    memset(labels, 0, sizeof(*labels));
    t->mr = mr;
    t->rt = rt;
    t->mode = job->mode;
    t->rate = job->sample_rate;
    t->interval_ns = (uint64_t)(1e9 / job->sample_rate);
    if (t->interval_ns == 0)
        t->interval_ns = 1;
    t->window_ns = job->profile_interval_ns;
    t->credit = 1.0;
    char why[256] = "";
    int err = unwinder_new(mr, rt, &t->u, why, sizeof(why));
    if (err) {
        snprintf(p->reason, sizeof(p->reason), "cannot read the runtime: %s", why);
        goto fail;
    }
    if (job->async_aware) {
        /* suspended tasks use no CPU, hold no GIL, handle no exception:
         * "all" counts them only in wall mode (/targets says so otherwise) */
        t->async_all = job->async_mode == CONFIG_ASYNC_ALL;
        bool all = t->async_all && job->mode == PROFILE_WALL;
        err = asyncio_new(t->u, mr, rt, p->key.pid, l->cfg->discovery.proc_root,
                          all ? ASYNCIO_ALL : ASYNCIO_RUNNING, &t->aio, why, sizeof(why));
        if (err == -ENOTSUP) /* 3.13: plain stacks, said in /targets */
            snprintf(t->async_note, sizeof(t->async_note), "unavailable: %s", why);
        else if (err)
            goto fail;
    }
    err = window_get(l->opts.queue, &t->win);
    if (err) {
        snprintf(p->reason, sizeof(p->reason), "no aggregation window left (memory cap)");
        goto fail;
    }
    /* Phases spread by the golden ratio over one sampling interval. */
    double frac = (double)(l->phase_seq++ % 1000) * 0.6180339887498949;
    frac -= (double)(uint64_t)frac;
    struct sampler_opts so = {
        .mode = job->mode,
        .interval_ns = t->interval_ns,
        .unwind_flags = (job->all_threads ? UNWIND_ALL_THREADS : 0u) |
                        (job->native ? UNWIND_NATIVE : 0u) | (job->gc ? 0u : UNWIND_NO_GC),
        .async = t->aio,
    };
    err = sampler_new(p->key.pid, t->u, t->win, &so,
                      now + (uint64_t)(frac * (double)t->interval_ns), &t->s);
    if (err) {
        snprintf(p->reason, sizeof(p->reason), "cannot sample: %s", strerror(-err));
        goto fail;
    }
    t->win_start = now;
    t->win_start_real = loop_real_at(l, now);
    /* without it (no usable auxiliary vector) an exec is noticed only once
     * every attempt fails (loop_stale) */
    if (execid_read(l->cfg->discovery.proc_root, p->key.pid, mr, &t->exec))
        memset(&t->exec, 0, sizeof(t->exec));
    t->exec_checked = now;
    t->stuck_ns = p->stuck_ns ? p->stuck_ns : LOOP_STUCK_NS;
    l->targets[l->ntargets++] = t;
    t->heap = l->nheap;
    l->heap[l->nheap++] = t;
    loop_heap_up(l, t->heap);
    p->t = t;
    for (struct loop_request *r = l->requests; r; r = r->next) {
        if (loop_request_wants(r, t))
            loop_request_attach(l, r, t);
    }
    log_info("sampling process %d (%s, Python %s) as job '%s' at %g Hz, %s mode", (int)p->key.pid,
             p->comm, p->version, t->job_name, t->rate, profile_mode_name(t->mode));
    return 0;
fail:
    /* the memory reader and runtime are freed by the caller on failure */
    t->mr = NULL;
    t->rt = NULL;
    loop_target_free(l, t);
    return err ? err : -EINVAL;
}

/* ---- discovery ------------------------------------------------------------ */

static uint64_t loop_key_hash(const struct proc_key *k)
{
    uint64_t h = (uint64_t)(uint32_t)k->pid * 0x9E3779B97F4A7C15ull;
    h ^= k->start_ticks + 0x632BE59BD9B4E019ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

static void loop_index_rebuild(struct loop *l)
{
    memset(l->index, 0, (l->index_mask + 1) * sizeof(*l->index));
    for (size_t i = 0; i < l->nprocs; i++) {
        size_t s = (size_t)loop_key_hash(&l->procs[i].key) & l->index_mask;
        while (l->index[s])
            s = (s + 1) & l->index_mask;
        l->index[s] = (uint32_t)(i + 1);
    }
}

static struct loop_proc *loop_proc_find(struct loop *l, const struct proc_key *k)
{
    size_t s = (size_t)loop_key_hash(k) & l->index_mask;
    while (l->index[s]) {
        struct loop_proc *p = &l->procs[l->index[s] - 1];
        if (proc_key_equal(&p->key, k))
            return p;
        s = (s + 1) & l->index_mask;
    }
    return NULL;
}

/* The scan's filter: known processes are marked alive and not re-read unless due. */
static bool loop_scan_filter(const struct proc_key *key, void *arg)
{
    struct loop *l = arg;
    struct loop_proc *p = loop_proc_find(l, key);
    if (!p)
        return true;
    p->seen = true;
    return p->state != LS_ACTIVE && p->recheck_ns <= l->scan_now;
}

static uint64_t loop_refresh(const struct loop *l)
{
    return l->cfg->discovery.refresh_interval_ns;
}

/* Looks at one process the scan reported: is it a target, and of which job? */
static void loop_consider(struct loop *l, struct loop_proc *p, const struct proc_info *info,
                          uint64_t now)
{
    enum loop_state before = p->state;
    loop_copy_str(p->comm, sizeof(p->comm), info->comm);
    p->reason[0] = '\0';
    p->recheck_ns = now; /* by default: look again at the next scan */
    if (info->age_ns >= 0 && (uint64_t)info->age_ns < l->cfg->discovery.min_process_age_ns) {
        p->state = LS_YOUNG;
        return;
    }
    struct memread *mr = NULL;
    struct pyruntime *rt = NULL;
    struct labels meta = {0}, labels = {0};
    char why[256] = "";
    int err = memread_open(info->key.pid, MEMREAD_AUTO, &mr);
    if (err == -ESRCH) {
        p->seen = false; /* gone already */
        goto out;
    }
    if (err) {
        p->state = LS_UNREADABLE;
        snprintf(p->reason, sizeof(p->reason), "cannot read its memory: %s", strerror(-err));
        p->recheck_ns = now + LOOP_RECHECK_RARE * loop_refresh(l);
        goto out;
    }
    rt = alloc_calloc(1, sizeof(*rt));
    if (!rt) {
        p->state = LS_FAILED;
        snprintf(p->reason, sizeof(p->reason), "out of memory");
        goto out;
    }
    err = pyruntime_locate(l->cfg->discovery.proc_root, info->key.pid, mr, rt, why, sizeof(why));
    if (err == -ENOENT) {
        if (rt->name_minor && rt->name_minor < 13) {
            p->state = LS_UNSUPPORTED;
            snprintf(p->version, sizeof(p->version), "3.%u", rt->name_minor);
            snprintf(p->reason, sizeof(p->reason),
                     "Python 3.%u has no debug offsets table: pyprofd needs CPython 3.13 or newer",
                     rt->name_minor);
            p->recheck_ns = now + LOOP_RECHECK_RARE * loop_refresh(l);
        } else if (rt->miss == PYRUNTIME_MISS_UNREADABLE) {
            /* python files it maps that we may not open: listed, with why */
            p->state = LS_UNREADABLE;
            snprintf(p->reason, sizeof(p->reason), "%s", why);
            p->recheck_ns = now + LOOP_RECHECK_RARE * loop_refresh(l);
        } else {
            p->state = LS_NOT_PYTHON;
            snprintf(p->reason, sizeof(p->reason), "%s", why);
            /* a young process may not have set its runtime up yet */
            bool young = info->age_ns >= 0 && info->age_ns < 30 * 1000000000ll;
            p->recheck_ns = young ? now : now + LOOP_RECHECK_OFTEN * loop_refresh(l);
        }
        goto out;
    }
    if (err == -ESRCH) {
        p->seen = false;
        goto out;
    }
    if (err) {
        p->state = LS_UNREADABLE;
        snprintf(p->reason, sizeof(p->reason), "cannot find its runtime: %s", why);
        p->recheck_ns = now + LOOP_RECHECK_RARE * loop_refresh(l);
        goto out;
    }
    pyversion_format(&rt->version, p->version, sizeof(p->version));
    if (pyversion_check_supported(&rt->version, why, sizeof(why))) {
        p->state = LS_UNSUPPORTED;
        snprintf(p->reason, sizeof(p->reason), "%s", why);
        p->recheck_ns = now + LOOP_RECHECK_RARE * loop_refresh(l);
        goto out;
    }
    if (proc_scan_meta_labels(info, &meta) ||
        labels_set(&meta, "__meta_python_version", p->version)) {
        p->state = LS_FAILED;
        snprintf(p->reason, sizeof(p->reason), "out of memory");
        goto out;
    }
    size_t j = 0;
    bool keep = false;
    for (; j < l->cfg->njobs && !keep; j++) {
        labels_release(&labels);
        if (loop_job_labels(l->cfg, &l->cfg->jobs[j], &meta, &labels, &keep)) {
            p->state = LS_FAILED;
            snprintf(p->reason, sizeof(p->reason), "out of memory");
            goto out;
        }
    }
    if (!keep) {
        p->state = LS_DROPPED;
        snprintf(p->reason, sizeof(p->reason), "no job's relabel_configs kept it");
        p->recheck_ns = UINT64_MAX; /* until the config changes */
        goto out;
    }
    /* limits.max_labels_per_profile: see relabel_check_limit() (config/relabel.h) */
    if (relabel_check_limit(&labels, l->cfg->global.limits.max_labels_per_profile, p->reason,
                            sizeof(p->reason))) {
        p->state = LS_OVER_LIMIT;
        p->recheck_ns = UINT64_MAX; /* until the config changes */
        log_warn("process %d (%s) is not sampled: %s", (int)info->key.pid, p->comm, p->reason);
        goto out;
    }
    if (l->ntargets >= l->max_targets) {
        p->state = LS_OVER_LIMIT;
        snprintf(p->reason, sizeof(p->reason), "limits.max_targets (%llu) reached",
                 (unsigned long long)l->max_targets);
        goto out;
    }
    err = loop_target_start(l, p, j - 1, &meta, &labels, mr, rt, window_now_ns());
    if (err) {
        p->state = LS_FAILED;
        if (!p->reason[0])
            snprintf(p->reason, sizeof(p->reason), "%s", strerror(-err));
        p->recheck_ns = now + LOOP_RECHECK_RARE * loop_refresh(l);
        log_warn("cannot sample process %d (%s): %s", (int)info->key.pid, p->comm, p->reason);
        goto out;
    }
    p->state = LS_ACTIVE;
    mr = NULL; /* the target owns them now */
    rt = NULL;
out:
    /* said once, when a process comes to be in the state (rechecks are quiet) */
    if ((p->state == LS_UNSUPPORTED || p->state == LS_UNREADABLE) && p->state != before &&
        p->reason[0])
        log_info("process %d (%s) is not sampled: %s", (int)info->key.pid, p->comm, p->reason);
    labels_release(&meta);
    labels_release(&labels);
    alloc_free(rt);
    memread_free(mr);
}

/*
 * Makes room in a full process table by forgetting one process known not to
 * be Python (it is looked at again like a new one if still there). Returns
 * false when every entry matters (all Python).
 */
static bool loop_evict(struct loop *l)
{
    for (size_t i = l->nprocs; i-- > 0;) {
        if (l->procs[i].state == LS_NOT_PYTHON && !l->procs[i].t) {
            l->procs[i] = l->procs[--l->nprocs];
            loop_index_rebuild(l);
            return true;
        }
    }
    return false;
}

static void loop_discover(struct loop *l, uint64_t now)
{
    for (size_t i = 0; i < l->nprocs; i++)
        l->procs[i].seen = false;
    l->scan_now = now;
    int err = proc_scan_run(l->scan, loop_real_ns());
    l->scans++;
    if (err) {
        /* an incomplete scan proves nothing about the processes it did not report */
        l->scan_errors++;
        for (size_t i = 0; i < l->nprocs; i++)
            l->procs[i].seen = true;
        if (err != -ENOMEM) {
            log_error("cannot scan '%s': %s", l->cfg->discovery.proc_root, strerror(-err));
            return;
        }
    }
    /* processes reported: new ones, or known ones due for another look */
    size_t n = proc_scan_count(l->scan);
    for (size_t i = 0; i < n; i++) {
        const struct proc_info *info = proc_scan_get(l->scan, i);
        struct loop_proc *p = loop_proc_find(l, &info->key);
        if (!p) {
            if (l->nprocs == LOOP_MAX_PROCS && !loop_evict(l))
                continue; /* looked at once there is room */
            p = &l->procs[l->nprocs++];
            memset(p, 0, sizeof(*p));
            p->key = info->key;
            p->state = LS_NEW;
            size_t s = (size_t)loop_key_hash(&p->key) & l->index_mask;
            while (l->index[s])
                s = (s + 1) & l->index_mask;
            l->index[s] = (uint32_t)(p - l->procs + 1);
        }
        p->seen = true;
        loop_consider(l, p, info, now);
    }
    /* the rest: gone (targets flush their last window), or dead targets */
    size_t w = 0;
    for (size_t i = 0; i < l->nprocs; i++) {
        struct loop_proc *p = &l->procs[i];
        if (p->t && p->t->gone)
            p->seen = false;
        if (!p->seen) {
            if (p->t) {
                p->t->gone = true;
                loop_target_remove(l, p->t, now);
                p->t = NULL;
            }
            continue;
        }
        l->procs[w++] = *p;
    }
    l->nprocs = w;
    loop_index_rebuild(l);
    l->ready = true;
}

/* Forgets every target (windows flushed) and every verdict that depends on the config. */
static void loop_apply_config(struct loop *l, struct pyprofd_config *cfg, uint64_t now)
{
    for (size_t i = 0; i < l->nprocs; i++) {
        struct loop_proc *p = &l->procs[i];
        if (p->t) {
            loop_target_remove(l, p->t, now);
            p->t = NULL;
        }
        if (p->state == LS_ACTIVE || p->state == LS_DROPPED || p->state == LS_OVER_LIMIT ||
            p->state == LS_FAILED || p->state == LS_YOUNG) {
            p->state = LS_NEW;
            p->recheck_ns = 0;
        }
    }
    /* room for a larger max_targets (no target exists right now) */
    size_t want = cfg->global.limits.max_targets > LOOP_TARGETS_CAP
                      ? LOOP_TARGETS_CAP
                      : (size_t)cfg->global.limits.max_targets;
    if (want > l->cap_targets) {
        /* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers */
        struct loop_target **heap = alloc_calloc(want, sizeof(*heap));
        /* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers */
        struct loop_target **targets = alloc_calloc(want, sizeof(*targets));
        if (heap && targets) {
            alloc_free(l->heap);
            alloc_free(l->targets);
            l->heap = heap;
            l->targets = targets;
            l->cap_targets = want;
        } else {
            alloc_free(heap);
            alloc_free(targets);
            log_error("out of memory for %zu targets; keeping room for %zu", want, l->cap_targets);
        }
    }
    /* a new proc root needs a new scanner */
    if (strcmp(cfg->discovery.proc_root, l->cfg->discovery.proc_root) != 0) {
        struct proc_scan_opts so = {
            .proc_root = cfg->discovery.proc_root,
            .self_pid = l->opts.self_pid,
            .filter = loop_scan_filter,
            .filter_arg = l,
        };
        struct proc_scan *scan = proc_scan_new(&so);
        if (scan) {
            proc_scan_free(l->scan);
            l->scan = scan;
        } else {
            log_error("cannot scan '%s': out of memory; still scanning '%s'",
                      cfg->discovery.proc_root, l->cfg->discovery.proc_root);
        }
    }
    config_free(l->cfg);
    l->cfg = cfg;
    l->max_targets = want < l->cap_targets ? want : l->cap_targets;
    l->next_scan = now;
}

/* ---- the budget ------------------------------------------------------------ */

static void loop_budget(struct loop *l, uint64_t now)
{
    if (now - l->budget_wall < LOOP_BUDGET_NS)
        return;
    uint64_t cpu = loop_thread_cpu_ns();
    double used = (double)(cpu - l->budget_cpu) / (double)(now - l->budget_wall);
    double budget = l->cfg->global.limits.cpu_budget;
    if (budget > 0 && used > budget)
        l->factor *= budget / used;
    else if (budget > 0 && used < 0.8 * budget)
        l->factor *= 1.25;
    if (l->factor > 1.0)
        l->factor = 1.0;
    if (l->factor < 0.001)
        l->factor = 0.001;
    l->budget_wall = now;
    l->budget_cpu = cpu;
}

/* ---- the thread ------------------------------------------------------------ */

static const char *loop_async_json(const struct loop_target *t, char *buf, size_t len)
{
    if (!t->aio)
        return t->async_note;
    switch (asyncio_state(t->aio)) {
    case ASYNCIO_ACTIVE:
        if (asyncio_get_mode(t->aio) == ASYNCIO_RUNNING && t->mode != PROFILE_WALL && t->async_all)
            return "running (async_mode all counts waiting tasks: only with mode wall)";
        return asyncio_mode_name(asyncio_get_mode(t->aio));
    case ASYNCIO_INVALID:
        snprintf(buf, len, "unavailable: %s", asyncio_why(t->aio));
        return buf;
    case ASYNCIO_SEARCHING:
    default:
        return "waiting: asyncio not imported yet";
    }
}

/* ---- stale targets ---------------------------------------------------------- */

/*
 * Whether target @t must be attached again from scratch, and why: its
 * process ran exec() (checked once a second, one 16-byte read), or none of
 * its attempts succeeded for t->stuck_ns (cached state that went bad, a
 * runtime that never finished starting, a program that is Python no more).
 * Sets t->gone when the check finds the process gone. Uses t->snap.
 */
static bool loop_stale(struct loop *l, struct loop_target *t, uint64_t now, enum loop_reattach *why)
{
    const struct sampler_counts *c = &t->snap;
    if (c->taken != t->seen_taken) {
        t->seen_taken = c->taken;
        t->failing_attempts = c->attempts;
        t->failing_since = 0;
        if (t->stuck_ns != LOOP_STUCK_NS) {
            /* it works again: the next failing spell starts from scratch */
            t->stuck_ns = LOOP_STUCK_NS;
            struct loop_proc *p = loop_proc_find(l, &t->key);
            if (p)
                p->stuck_ns = 0;
        }
    } else if (c->attempts != t->failing_attempts && t->failing_since == 0) {
        t->failing_since = now;
    }
    if (now - t->exec_checked >= LOOP_EXEC_CHECK_NS) {
        t->exec_checked = now;
        if (t->exec.random_raddr == 0 && t->exec_retries < LOOP_EXEC_RETRIES) {
            /* not known at attach (caught in the middle of an exec?): again */
            t->exec_retries++;
            if (execid_read(l->cfg->discovery.proc_root, t->key.pid, t->mr, &t->exec))
                memset(&t->exec, 0, sizeof(t->exec));
        }
        bool same = true;
        int err = execid_check(t->mr, &t->exec, &same);
        if (err == -ESRCH) {
            t->gone = true;
            return false;
        }
        if (err || !same) {
            *why = LR_EXEC; /* (or it can no longer be read: a set-user-ID program) */
            return true;
        }
    }
    if (t->failing_since && now - t->failing_since >= t->stuck_ns &&
        c->attempts - t->failing_attempts >= LOOP_STUCK_MIN_ATTEMPTS) {
        *why = LR_FAILING;
        return true;
    }
    return false;
}

/*
 * Ends target @t (its window flushed) and has its process looked at again
 * as if new at the next housekeeping: a new memory reader, runtime search,
 * version check, unwinder and relabeling. Counted per job and reason, shown
 * in /targets, logged.
 */
static void loop_reattach(struct loop *l, struct loop_target *t, uint64_t now,
                          enum loop_reattach why)
{
    char what[160];
    if (why == LR_EXEC) {
        snprintf(what, sizeof(what), "it runs another program (exec)");
    } else {
        size_t worst = SAMPLE_OK;
        for (size_t k = 1; k < SAMPLE_STATUS_COUNT; k++) {
            if (t->snap.failed_by[k] > t->snap.failed_by[worst])
                worst = k;
        }
        snprintf(what, sizeof(what), "every attempt for %.0f s failed (mostly %s)",
                 (double)(now - t->failing_since) / 1e9, status_name((enum sample_status)worst));
    }
    struct loop_job_stats *j = loop_job_stats(l, t->job_name);
    if (j)
        j->reattached[why]++;
    struct loop_proc *p = loop_proc_find(l, &t->key);
    if (p) {
        p->t = NULL;
        p->state = LS_NEW;
        p->seen = true;
        p->recheck_ns = 0;
        p->reattaches++;
        snprintf(p->reattach_why, sizeof(p->reattach_why), "%s", what);
        p->stuck_ns = why == LR_FAILING ? (t->stuck_ns >= LOOP_STUCK_MAX_NS / 2 ? LOOP_STUCK_MAX_NS
                                                                                : 2 * t->stuck_ns)
                                        : 0;
    }
    log_info("process %d (%s): %s: attaching to it again", (int)t->key.pid,
             p ? p->comm : t->job_name, what);
    t->removed_why = "attaching to it again";
    loop_target_remove(l, t, now);
    l->next_scan = now; /* looked at by the next housekeeping */
}

static void loop_housekeeping(struct loop *l, uint64_t now)
{
    loop_clocks(l, now);
    if (l->pending_cfg) {
        struct pyprofd_config *cfg = l->pending_cfg;
        l->pending_cfg = NULL;
        loop_apply_config(l, cfg, now);
        log_info("configuration applied: %zu job(s)", cfg->njobs);
    }
    if (now >= l->next_scan) {
        loop_discover(l, now);
        l->next_scan = now + loop_refresh(l);
    }
    for (size_t i = 0; i < l->ntargets; i++) {
        struct loop_target *t = l->targets[i];
        if (t->gone) {
            /* remove through its process entry so the table forgets it too */
            struct loop_proc *p = loop_proc_find(l, &t->key);
            if (p) {
                p->t = NULL;
                p->state = LS_NEW;
                p->seen = true;
                p->recheck_ns = 0; /* gone: the next scan drops it; if not, looks again */
            }
            loop_target_remove(l, t, now);
            i--;
            continue;
        }
        t->snap = sampler_counts(t->s);
        enum loop_reattach why;
        if (loop_stale(l, t, now, &why)) {
            loop_reattach(l, t, now, why);
            i--;
            continue;
        }
        if (now - t->win_start >= t->window_ns)
            loop_cut(l, t, now, false);
        if (t->aio || t->async_note[0]) {
            char abuf[320];
            snprintf(t->async_snap, sizeof(t->async_snap), "%s",
                     loop_async_json(t, abuf, sizeof(abuf)));
        }
    }
    loop_requests_tick(l, now);
    loop_budget(l, now);
    l->next_tick = now + LOOP_TICK_NS;
}

static void loop_sample_due(struct loop *l)
{
    uint64_t now = window_now_ns();
    while (l->nheap && now < l->next_tick) {
        struct loop_target *t = l->heap[0];
        uint64_t due = sampler_due(t->s);
        if (due > now)
            break;
        if (t->gone) {
            sampler_idle(t->s, now); /* removed at the next housekeeping */
        } else {
            /* Each due attempt earns the budget factor; a whole one is spent on a sample. */
            t->credit += l->factor;
            if (t->credit >= 1.0) {
                t->credit -= 1.0;
                if (sampler_attempt(t->s, now) == -ESRCH)
                    t->gone = true;
            } else {
                /* skip straight to the attempt that will have earned one */
                double k = ceil((1.0 - t->credit) / l->factor);
                uint64_t n = k < 1.0 ? 1 : k > 100000.0 ? 100000 : (uint64_t)k;
                t->credit += (double)(n - 1) * l->factor;
                sampler_skip(t->s, now, n);
            }
        }
        loop_heap_down(l, 0);
        now = window_now_ns();
    }
}

static void *loop_main(void *arg)
{
    struct loop *l = arg;
    l->budget_wall = window_now_ns();
    l->budget_cpu = loop_thread_cpu_ns();
    pthread_mutex_lock(&l->mu);
    for (;;) {
        uint64_t now = window_now_ns();
        if (l->stop)
            break;
        if (now >= l->next_tick || l->kick) {
            l->kick = false;
            loop_housekeeping(l, now);
        }
        pthread_mutex_unlock(&l->mu);
        loop_sample_due(l);
        pthread_mutex_lock(&l->mu);
        uint64_t until = l->next_tick;
        if (l->nheap && sampler_due(l->heap[0]->s) < until)
            until = sampler_due(l->heap[0]->s);
        if (!l->stop && !l->kick && until > window_now_ns()) {
            struct timespec ts = {.tv_sec = (time_t)(until / 1000000000ull),
                                  .tv_nsec = (long)(until % 1000000000ull)};
            (void)pthread_cond_timedwait(&l->wake, &l->mu, &ts);
        }
    }
    /* stopping: flush every window, end the requests with what they have */
    uint64_t now = window_now_ns();
    loop_clocks(l, now);
    while (l->ntargets) {
        struct loop_target *t = l->targets[0];
        struct loop_proc *p = loop_proc_find(l, &t->key);
        if (p)
            p->t = NULL;
        loop_target_remove(l, t, now);
    }
    for (struct loop_request *r = l->requests; r; r = r->next) {
        if (!r->done) {
            if (!r->started) {
                r->err = -ECANCELED;
                snprintf(r->errmsg, sizeof(r->errmsg), "the agent is stopping");
            }
            r->done = true;
            pthread_cond_broadcast(&r->cond);
        }
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

/* ---- public ---------------------------------------------------------------- */

int loop_new(struct pyprofd_config *cfg, const struct loop_opts *opts, struct loop **out)
{
    if (!cfg || !opts || !opts->queue)
        return -EINVAL;
    struct loop *l = alloc_calloc(1, sizeof(*l));
    if (!l)
        return -ENOMEM;
    pthread_mutex_init(&l->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&l->wake, &ca);
    pthread_condattr_destroy(&ca);
    l->cfg = cfg;
    l->opts = *opts;
    if (!l->opts.self_pid)
        l->opts.self_pid = getpid();
    l->max_targets = cfg->global.limits.max_targets;
    l->factor = 1.0;
    size_t slots = 1;
    while (slots < 2 * LOOP_MAX_PROCS)
        slots <<= 1;
    l->index_mask = slots - 1;
    l->procs = alloc_calloc(LOOP_MAX_PROCS, sizeof(*l->procs));
    l->index = alloc_calloc(slots, sizeof(*l->index));
    /* targets and heap are sized for the largest max_targets a config may set */
    size_t cap = l->max_targets > LOOP_TARGETS_CAP ? LOOP_TARGETS_CAP : (size_t)l->max_targets;
    /* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers */
    l->heap = alloc_calloc(cap ? cap : 1, sizeof(*l->heap));
    /* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers */
    l->targets = alloc_calloc(cap ? cap : 1, sizeof(*l->targets));
    l->jobs = alloc_calloc(LOOP_MAX_JOBS_STATS, sizeof(*l->jobs));
    l->max_targets = cap;
    l->cap_targets = cap;
    struct proc_scan_opts so = {
        .proc_root = cfg->discovery.proc_root,
        .self_pid = l->opts.self_pid,
        .filter = loop_scan_filter,
        .filter_arg = l,
    };
    l->scan = proc_scan_new(&so);
    if (!l->procs || !l->index || !l->heap || !l->targets || !l->jobs || !l->scan) {
        l->cfg = NULL; /* stays the caller's on failure */
        loop_free(l);
        return -ENOMEM;
    }
    *out = l;
    return 0;
}

int loop_start(struct loop *l)
{
    pthread_mutex_lock(&l->mu); /* running: read by loop_profile() under the lock */
    int err = pthread_create(&l->thread, NULL, loop_main, l);
    l->running = err == 0;
    pthread_mutex_unlock(&l->mu);
    return -err;
}

void loop_stop(struct loop *l)
{
    pthread_mutex_lock(&l->mu);
    bool running = l->running;
    l->stop = true;
    pthread_cond_signal(&l->wake);
    pthread_mutex_unlock(&l->mu);
    if (!running)
        return;
    pthread_join(l->thread, NULL);
    pthread_mutex_lock(&l->mu);
    l->running = false;
    pthread_mutex_unlock(&l->mu);
}

void loop_free(struct loop *l)
{
    if (!l)
        return;
    loop_stop(l);
    for (size_t i = 0; i < l->ntargets; i++)
        loop_target_free(l, l->targets[i]);
    proc_scan_free(l->scan);
    config_free(l->cfg);
    config_free(l->pending_cfg);
    alloc_free(l->procs);
    alloc_free(l->index);
    alloc_free(l->heap);
    alloc_free(l->targets);
    alloc_free(l->jobs);
    pthread_mutex_destroy(&l->mu);
    pthread_cond_destroy(&l->wake);
    alloc_free(l);
}

int loop_set_config(struct loop *l, struct pyprofd_config *cfg)
{
    pthread_mutex_lock(&l->mu);
    config_free(l->pending_cfg);
    l->pending_cfg = cfg;
    l->kick = true;
    pthread_cond_signal(&l->wake);
    pthread_mutex_unlock(&l->mu);
    return 0;
}

bool loop_ready(struct loop *l)
{
    pthread_mutex_lock(&l->mu);
    bool r = l->ready;
    pthread_mutex_unlock(&l->mu);
    return r;
}

static void loop_request_release(struct loop_request *r)
{
    for (size_t i = 0; i < r->nparts; i++) {
        agg_free(r->parts[i].agg);
        labels_release(&r->parts[i].labels);
    }
    alloc_free(r->parts);
    pthread_cond_destroy(&r->cond);
}

/* Encodes the parts of a finished request. */
static int loop_request_encode(struct loop *l, struct loop_request *r, uint64_t started_real,
                               uint64_t duration, uint8_t **out, size_t *out_len, char *err,
                               size_t errlen)
{
    struct pprof_part *parts = alloc_calloc(r->nparts ? r->nparts : 1, sizeof(*parts));
    if (!parts)
        return -ENOMEM;
    bool same = true;
    for (size_t i = 0; i < r->nparts; i++) {
        parts[i].agg = r->parts[i].agg;
        parts[i].labels = &r->parts[i].labels;
        same = same && r->parts[i].mode == r->parts[0].mode;
    }
    struct pprof_meta m = {
        /* targets of different modes: their time is still time, of mixed kinds */
        .value_type = r->nparts && same ? profile_mode_name(r->parts[0].mode) : "time",
        .value_unit = "nanoseconds",
        .period_ns = r->nparts ? r->parts[0].period_ns : 0,
        .time_nanos = (int64_t)started_real,
        .duration_nanos = (int64_t)duration,
        .comment = "pyprofd /debug/pprof/profile",
        .max_bytes = (size_t)r->max_bytes,
    };
    (void)l;
    int e = pprof_build_multi(parts, r->nparts, &m, out, out_len);
    if (e == -E2BIG)
        snprintf(err, errlen, "the profile is larger than the size cap");
    else if (e)
        snprintf(err, errlen, "cannot encode the profile: %s", strerror(-e));
    alloc_free(parts);
    return e;
}

int loop_profile(struct loop *l, uint32_t seconds, pid_t pid, bool (*cancelled)(const void *arg),
                 const void *cancel_arg, uint8_t **out, size_t *out_len, char *err, size_t errlen)
{
    if (seconds == 0 || pid < 0)
        return -EINVAL;
    struct loop_request r = {.pid = pid, .seconds = seconds};
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&r.cond, &ca);
    pthread_condattr_destroy(&ca);
    int64_t started_real = loop_real_ns();
    uint64_t started = window_now_ns();

    pthread_mutex_lock(&l->mu);
    bool stopping = l->stop || !l->running;
    if (l->nrequests >= LOOP_MAX_REQUESTS || stopping) {
        pthread_mutex_unlock(&l->mu);
        pthread_cond_destroy(&r.cond);
        snprintf(err, errlen, "%s",
                 stopping ? "the agent is stopping" : "too many profile requests at once");
        return stopping ? -ECANCELED : -EBUSY;
    }
    r.next = l->requests;
    /* unlinked again below, under the same lock, before r goes out of scope */
    /* cppcheck-suppress autoVariables */
    l->requests = &r;
    l->nrequests++;
    l->kick = true;
    pthread_cond_signal(&l->wake);
    bool was_cancelled = false;
    while (!r.done) {
        uint64_t until = window_now_ns() + 100000000ull;
        struct timespec ts = {.tv_sec = (time_t)(until / 1000000000ull),
                              .tv_nsec = (long)(until % 1000000000ull)};
        (void)pthread_cond_timedwait(&r.cond, &l->mu, &ts);
        /* the sampling thread ends the request (it owns the taps); ask it to */
        if (!r.done && !r.cancelled && cancelled && cancelled(cancel_arg)) {
            was_cancelled = r.cancelled = true;
            l->kick = true;
            pthread_cond_signal(&l->wake);
        }
    }
    for (struct loop_request **pp = &l->requests; *pp; pp = &(*pp)->next) {
        if (*pp == &r) {
            *pp = r.next;
            break;
        }
    }
    l->nrequests--;
    pthread_mutex_unlock(&l->mu);

    int e = r.err;
    if (!e && was_cancelled) {
        e = -ECANCELED;
        snprintf(err, errlen, "the request was cancelled");
    }
    if (e) {
        if (r.errmsg[0])
            snprintf(err, errlen, "%s", r.errmsg);
    } else {
        e = loop_request_encode(l, &r, (uint64_t)started_real, window_now_ns() - started, out,
                                out_len, err, errlen);
    }
    loop_request_release(&r);
    return e;
}

/* ---- /targets and /metrics ---------------------------------------------------- */

static json_object *loop_labels_json(const struct labels *ls)
{
    json_object *o = json_object_new_object();
    for (size_t i = 0; o && i < ls->n; i++)
        json_object_object_add(o, ls->v[i].name, json_object_new_string(ls->v[i].value));
    return o;
}

/* The "async" field of a target: its async-aware state in a few words. */
/* What /targets shows of one process, copied under the lock. */
struct loop_tsnap {
    int pid;
    enum loop_state state;
    char comm[32];
    char version[32];
    char reason[320];
    bool target;
    char job[64];
    enum profile_mode mode;
    double rate, effective_rate, interval_s;
    char async[320];
    struct sampler_counts counts;
    uint64_t windows, windows_dropped, stacks_dropped;
    struct labels labels, meta;
    uint32_t reattaches;
    char reattach_why[160];
};

static bool loop_listed(const struct loop_proc *p)
{
    return p->state != LS_NOT_PYTHON && p->state != LS_NEW;
}

static json_object *loop_tsnap_json(const struct loop_tsnap *t)
{
    json_object *o = json_object_new_object();
    if (!o)
        return NULL;
    json_object_object_add(o, "pid", json_object_new_int(t->pid));
    json_object_object_add(o, "comm", json_object_new_string(t->comm));
    json_object_object_add(o, "state", json_object_new_string(loop_state_names[t->state]));
    if (t->version[0])
        json_object_object_add(o, "python_version", json_object_new_string(t->version));
    if (t->reason[0])
        json_object_object_add(o, "reason", json_object_new_string(t->reason));
    if (t->reattaches) {
        json_object_object_add(o, "reattaches", json_object_new_int64(t->reattaches));
        json_object_object_add(o, "last_reattach", json_object_new_string(t->reattach_why));
    }
    if (!t->target)
        return o;
    json_object_object_add(o, "job", json_object_new_string(t->job));
    json_object_object_add(o, "labels", loop_labels_json(&t->labels));
    json_object_object_add(o, "discovered_labels", loop_labels_json(&t->meta));
    json_object_object_add(o, "mode", json_object_new_string(profile_mode_name(t->mode)));
    if (t->async[0])
        json_object_object_add(o, "async", json_object_new_string(t->async));
    json_object_object_add(o, "sample_rate_hz", json_object_new_double(t->rate));
    json_object_object_add(o, "effective_rate_hz", json_object_new_double(t->effective_rate));
    json_object_object_add(o, "profile_interval_seconds", json_object_new_double(t->interval_s));
    json_object *c = json_object_new_object();
    json_object_object_add(c, "samples", json_object_new_uint64(t->counts.taken));
    json_object_object_add(c, "thread_samples", json_object_new_uint64(t->counts.thread_samples));
    json_object_object_add(c, "failed", json_object_new_uint64(t->counts.failed));
    json_object_object_add(c, "missed", json_object_new_uint64(t->counts.missed));
    json_object_object_add(c, "skipped", json_object_new_uint64(t->counts.skipped));
    json_object_object_add(c, "retried", json_object_new_uint64(t->counts.retried));
    json_object_object_add(c, "thread_stacks_dropped", json_object_new_uint64(t->stacks_dropped));
    json_object *by = json_object_new_object();
    for (size_t k = 0; k < SAMPLE_STATUS_COUNT; k++) {
        if (t->counts.failed_by[k])
            json_object_object_add(by, status_name((enum sample_status)k),
                                   json_object_new_uint64(t->counts.failed_by[k]));
    }
    json_object_object_add(c, "failed_by_reason", by);
    json_object_object_add(c, "profiles", json_object_new_uint64(t->windows));
    json_object_object_add(c, "profiles_dropped", json_object_new_uint64(t->windows_dropped));
    json_object_object_add(o, "counts", c);
    return o;
}

/*
 * The document is built from a copy taken under the lock, so a scrape holds
 * up the sampling thread only for the copy, not for the JSON.
 */
int loop_targets_json(struct loop *l, char **out, size_t *out_len)
{
    int err = 0;
    struct loop_tsnap *snap = NULL;
    size_t n = 0;
    double factor;
    pthread_mutex_lock(&l->mu);
    for (size_t i = 0; i < l->nprocs; i++)
        n += loop_listed(&l->procs[i]);
    snap = alloc_calloc(n ? n : 1, sizeof(*snap));
    size_t k = 0;
    for (size_t i = 0; snap && i < l->nprocs; i++) {
        const struct loop_proc *p = &l->procs[i];
        if (!loop_listed(p))
            continue;
        struct loop_tsnap *t = &snap[k++];
        t->pid = p->key.pid;
        t->state = p->state;
        memcpy(t->comm, p->comm, sizeof(t->comm));
        memcpy(t->version, p->version, sizeof(t->version));
        memcpy(t->reason, p->reason, sizeof(t->reason));
        t->reattaches = p->reattaches;
        memcpy(t->reattach_why, p->reattach_why, sizeof(t->reattach_why));
        const struct loop_target *lt = p->t;
        if (!lt)
            continue;
        t->target = true;
        memcpy(t->job, lt->job_name, sizeof(t->job));
        t->mode = lt->mode;
        t->rate = lt->rate;
        t->effective_rate = lt->rate * l->factor;
        t->interval_s = (double)lt->window_ns / 1e9;
        memcpy(t->async, lt->async_snap, sizeof(t->async));
        t->counts = lt->snap;
        t->windows = lt->windows;
        t->windows_dropped = lt->windows_dropped;
        t->stacks_dropped = lt->stacks_dropped;
        if (labels_copy(&t->labels, &lt->labels) || labels_copy(&t->meta, &lt->meta))
            err = -ENOMEM;
    }
    factor = l->factor;
    pthread_mutex_unlock(&l->mu);
    if (!snap)
        return -ENOMEM;

    json_object *root = json_object_new_object();
    json_object *arr = json_object_new_array();
    if (!root || !arr)
        err = -ENOMEM;
    for (size_t i = 0; !err && i < k; i++) {
        json_object *o = loop_tsnap_json(&snap[i]);
        if (!o || json_object_array_add(arr, o)) {
            json_object_put(o);
            err = -ENOMEM;
        }
    }
    if (!err) {
        json_object_object_add(root, "targets", arr);
        arr = NULL;
        json_object_object_add(root, "budget_factor", json_object_new_double(factor));
        size_t len = 0;
        const char *str = json_object_to_json_string_length(root, JSON_C_TO_STRING_PRETTY, &len);
        *out = str ? alloc_strndup(str, len) : NULL;
        if (*out)
            *out_len = len;
        else
            err = -ENOMEM;
    }
    json_object_put(arr);
    json_object_put(root);
    for (size_t i = 0; i < k; i++) {
        labels_release(&snap[i].labels);
        labels_release(&snap[i].meta);
    }
    alloc_free(snap);
    return err;
}

int loop_metrics(struct loop *l, struct promtext *w)
{
    /* per job: the gone targets' totals plus the live targets' snapshots */
    struct loop_job_stats *tot = alloc_calloc(LOOP_MAX_JOBS_STATS, sizeof(*tot));
    size_t ntot = 0;
    if (!tot)
        return -ENOMEM;
    pthread_mutex_lock(&l->mu);
    memcpy(tot, l->jobs, l->njobs * sizeof(*tot));
    ntot = l->njobs;
    uint64_t by_state[PYPROFD_ARRAY_SIZE(loop_state_names)] = {0};
    for (size_t i = 0; i < l->nprocs; i++)
        by_state[l->procs[i].state]++;
    for (size_t i = 0; i < l->ntargets; i++) {
        const struct loop_target *t = l->targets[i];
        struct loop_job_stats *j = NULL;
        for (size_t k = 0; k < ntot && !j; k++) {
            if (strcmp(tot[k].name, t->job_name) == 0)
                j = &tot[k];
        }
        if (!j && ntot < LOOP_MAX_JOBS_STATS) {
            j = &tot[ntot++];
            loop_copy_str(j->name, sizeof(j->name), t->job_name);
        }
        if (j) {
            loop_job_add(j, &t->snap);
            j->windows += t->windows;
            j->windows_dropped += t->windows_dropped;
            j->stacks_dropped += t->stacks_dropped;
        }
    }
    /* targets per job */
    uint64_t *active = alloc_calloc(ntot ? ntot : 1, sizeof(*active));
    for (size_t i = 0; active && i < l->ntargets; i++) {
        for (size_t k = 0; k < ntot; k++) {
            if (strcmp(tot[k].name, l->targets[i]->job_name) == 0)
                active[k]++;
        }
    }
    double factor = l->factor;
    uint64_t scans = l->scans, scan_errors = l->scan_errors;
    pthread_mutex_unlock(&l->mu);

    int err = promtext_family(w, "pyprofd_discovered_processes", PROMTEXT_GAUGE,
                              "Processes the agent remembers, by state (active = sampled).");
    for (size_t s = 0; !err && s < PYPROFD_ARRAY_SIZE(loop_state_names); s++) {
        if (s == LS_NEW)
            continue;
        err = promtext_sample(w, NULL, PROMTEXT_LABELS({"state", loop_state_names[s]}),
                              (double)by_state[s]);
    }
    if (!err)
        err =
            promtext_family(w, "pyprofd_targets", PROMTEXT_GAUGE, "Targets being sampled, by job.");
    for (size_t k = 0; !err && active && k < ntot; k++)
        err = promtext_sample(w, NULL, PROMTEXT_LABELS({"job", tot[k].name}), (double)active[k]);
#define LOOP_COUNTER(metric, help, field)                                                          \
    if (!err)                                                                                      \
        err = promtext_family(w, metric, PROMTEXT_COUNTER, help);                                  \
    for (size_t k = 0; !err && k < ntot; k++)                                                      \
        err = promtext_sample(w, NULL, PROMTEXT_LABELS({"job", tot[k].name}), (double)tot[k].field);
    LOOP_COUNTER("pyprofd_samples_total", "Sampling attempts that produced a sample, by job.",
                 taken)
    LOOP_COUNTER("pyprofd_thread_samples_total",
                 "Thread stacks added to profiles (one attempt samples every kept thread).",
                 thread_samples)
    LOOP_COUNTER("pyprofd_samples_failed_total",
                 "Sampling attempts that failed (torn stack, read error, ...), by job.", failed)
    LOOP_COUNTER("pyprofd_samples_missed_total",
                 "Attempts due by the schedule that never ran because the sampler fell behind.",
                 missed)
    LOOP_COUNTER("pyprofd_samples_retried_total",
                 "Attempts read a second time at once because the first read was torn.", retried)
    LOOP_COUNTER("pyprofd_samples_skipped_total",
                 "Attempts let pass on purpose to stay within limits.cpu_budget.", skipped)
    LOOP_COUNTER("pyprofd_thread_stacks_dropped_total",
                 "Thread stacks sampled but not kept: their window was full "
                 "(limits.target_memory_bytes), counted when the window is cut.",
                 stacks_dropped)
    LOOP_COUNTER("pyprofd_profiles_total", "Profile windows handed to the outputs, by job.",
                 windows)
    LOOP_COUNTER("pyprofd_profiles_dropped_total",
                 "Profile windows lost because the export queue or the window pool was full.",
                 windows_dropped)
#undef LOOP_COUNTER
    if (!err)
        err = promtext_family(w, "pyprofd_sample_errors_total", PROMTEXT_COUNTER,
                              "Failed sampling attempts by job and reason.");
    for (size_t k = 0; !err && k < ntot; k++) {
        for (size_t s = 0; !err && s < SAMPLE_STATUS_COUNT; s++) {
            if (s == SAMPLE_OK)
                continue;
            err = promtext_sample(w, NULL,
                                  PROMTEXT_LABELS({"job", tot[k].name},
                                                  {"reason", status_name((enum sample_status)s)}),
                                  (double)tot[k].failed_by[s]);
        }
    }
    if (!err)
        err = promtext_family(w, "pyprofd_target_reattaches_total", PROMTEXT_COUNTER,
                              "Targets attached again from scratch, by job and reason (failing: "
                              "every attempt failed for a while; exec: another program).");
    for (size_t k = 0; !err && k < ntot; k++) {
        for (size_t r = 0; !err && r < LR_COUNT; r++)
            err = promtext_sample(
                w, NULL, PROMTEXT_LABELS({"job", tot[k].name}, {"reason", loop_reattach_names[r]}),
                (double)tot[k].reattached[r]);
    }
    if (!err)
        err = promtext_family(w, "pyprofd_sampling_rate_factor", PROMTEXT_GAUGE,
                              "Share of each target's configured rate the CPU budget allows (1 = "
                              "all).");
    if (!err)
        err = promtext_sample(w, NULL, NULL, 0, factor);
    if (!err)
        err = promtext_family(w, "pyprofd_discovery_scans_total", PROMTEXT_COUNTER,
                              "Scans of the proc root.");
    if (!err)
        err = promtext_sample(w, NULL, NULL, 0, (double)scans);
    if (!err)
        err = promtext_family(w, "pyprofd_discovery_scan_errors_total", PROMTEXT_COUNTER,
                              "Scans of the proc root that failed.");
    if (!err)
        err = promtext_sample(w, NULL, NULL, 0, (double)scan_errors);
    alloc_free(active);
    alloc_free(tot);
    return err;
}
