/* SPDX-License-Identifier: MIT */
/*
 * loop.c: the agent's sampling thread: the lock, the thread and the order of
 * its work (see loop.h). The process table is targets.c's, a target's
 * objects target.c's, the schedule and budget fleet.c's, requests taps.c's.
 *
 * Locking: l->mu guards everything another thread may look at or hand over
 * (the process table, the targets' labels, states and count snapshots, the
 * pending config, the request list, the flags). The sampling thread holds it
 * for housekeeping and while it sleeps, never while it samples: sampler
 * counts are copied into snapshots under the lock, so other threads never
 * read a sampler.
 */
#include "base/compat.h"

#include <pthread.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/log.h"
#include "sampler/loop_internal.h"

static void loop_clocks(struct loop *l, uint64_t mono)
{
    l->hk_mono = mono;
    l->hk_real = clock_real(l->opts.clock);
}

static size_t loop_max_targets(const struct pyprofd_config *cfg)
{
    uint64_t m = cfg->global.limits.max_targets;
    return m > LOOP_TARGETS_CAP ? LOOP_TARGETS_CAP : m ? (size_t)m : 1;
}

/* ---- targets --------------------------------------------------------------- */

/* Ends target @t: taps off, partial window flushed, totals kept, freed. */
static void loop_end_target(struct loop *l, struct target *t, uint64_t now)
{
    taps_detach_target(l->requests, t);
    (void)target_cut(t, l->opts.queue, now, loop_real_at(l, now), true);
    t->snap = sampler_counts_final(t->s);
    struct loop_job_view *j = loop_job(l->jobs, &l->njobs, t->job_name);
    if (j)
        loop_job_add(j, t);
    fleet_remove(l->fleet, &t->slot);
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
    target_free(t, l->opts.queue);
}

static void loop_sweep_gone(struct proc_entry *p, void *arg)
{
    struct loop *l = arg;
    struct target *t = p->target;
    t->gone = true;
    loop_end_target(l, t, l->hk_mono);
    p->target = NULL;
}

/* Starts the target a verdict asked for; on failure the process is "failed". */
static void loop_start_target(struct loop *l, struct proc_entry *p, struct verdict *v, uint64_t now)
{
    struct target_env env = {
        .cfg = l->cfg, .queue = l->opts.queue, .phase_seq = l->phase_seq++, .scratch = l->scratch};
    struct target *t = NULL;
    int err = target_start(&env, p, v, now, loop_real_at(l, now), &t);
    if (!err && fleet_add(l->fleet, &t->slot, sampler_due(t->s))) {
        target_free(t, l->opts.queue); /* cannot happen: sized for max_targets */
        err = -ENOSPC;
    }
    if (err) {
        p->state = PROC_FAILED;
        if (!p->reason[0])
            snprintf(p->reason, sizeof(p->reason), "%s", strerror(-err));
        p->recheck_ns = now + TARGETS_RECHECK_RARE * l->cfg->discovery.refresh_interval_ns;
        log_warn("cannot sample process %d (%s): %s", (int)p->key.pid, p->comm, p->reason);
        return;
    }
    l->targets[l->ntargets++] = t;
    p->target = t;
    for (struct tap_request *r = l->requests; r; r = r->next) {
        if (taps_wants(r, t))
            taps_attach(r, t);
    }
    log_info("sampling process %d (%s, Python %s) as job '%s' at %g Hz, %s mode", (int)p->key.pid,
             p->comm, p->version, t->job_name, t->rate, profile_mode_name(t->mode));
}

/* Ends @t and has its process looked at again as if new: counted, shown, logged. */
static void loop_reattach(struct loop *l, struct target *t, uint64_t now, enum target_reattach why)
{
    char what[160];
    if (why == TARGET_EXEC) {
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
    struct loop_job_view *j = loop_job(l->jobs, &l->njobs, t->job_name);
    if (j)
        j->reattached[why]++;
    struct proc_entry *p = proc_table_find(l->procs, &t->key);
    if (p) {
        p->target = NULL;
        p->state = PROC_NEW;
        p->seen = true;
        p->recheck_ns = 0;
        p->reattaches++;
        snprintf(p->reattach_why, sizeof(p->reattach_why), "%s", what);
        p->stuck_ns =
            why == TARGET_FAILING
                ? (t->stuck_ns >= TARGET_STUCK_MAX_NS / 2 ? TARGET_STUCK_MAX_NS : 2 * t->stuck_ns)
                : 0;
    }
    log_info("process %d (%s): %s: attaching to it again", (int)t->key.pid,
             p ? p->comm : t->job_name, what);
    t->removed_why = "attaching to it again";
    loop_end_target(l, t, now);
    l->next_scan = now; /* looked at by the next housekeeping */
}

/* ---- discovery -------------------------------------------------------------- */

/* The scan's filter: known processes are marked alive and not re-read unless due. */
static bool loop_scan_filter(const struct proc_key *key, void *arg)
{
    struct loop *l = arg;
    struct proc_entry *p = proc_table_find(l->procs, key);
    if (!p)
        return true;
    p->seen = true;
    return p->state != PROC_ACTIVE && p->recheck_ns <= l->hk_mono;
}

static struct proc_scan *loop_scanner(struct loop *l, const char *proc_root)
{
    struct proc_scan_opts so = {
        .proc_root = proc_root,
        .self_pid = l->opts.self_pid,
        .filter = loop_scan_filter,
        .filter_arg = l,
    };
    return proc_scan_new(&so);
}

#define LOOP_RESCAN_MIN_NS                                                                         \
    1000000000ull /* a scan sooner for a pod change: this long after the last */

/* Where pod metadata comes from: the test's source, or discovery.kubernetes. */
static const struct pod_source *loop_pod_source(const struct loop *l)
{
    return l->opts.pods ? l->opts.pods : podmeta_source(l->pods);
}

/* Has the process of @p judged again at the next scan; @why: its target's end. */
static void loop_requeue(struct loop *l, struct proc_entry *p, const char *why, uint64_t now)
{
    struct target *t = p->target;
    if (t) {
        t->removed_why = why;
        p->target = NULL;
        loop_end_target(l, t, now);
    }
    p->state = PROC_NEW;
    p->recheck_ns = 0;
    /* judged at a scan within a second, not a refresh interval later (but
     * not a scan at every housekeeping of a busy cluster either) */
    uint64_t refresh = l->cfg->discovery.refresh_interval_ns;
    uint64_t soon = l->next_scan >= refresh ? l->next_scan - refresh + LOOP_RESCAN_MIN_NS : now;
    soon = soon < now ? now : soon;
    if (soon < l->next_scan)
        l->next_scan = soon;
}

/*
 * The pod of an active target changed (@rev, its labels in @meta: the
 * target's discovered labels with the pod's new ones). Its job's labels are
 * worked out again: the same, it carries on untouched (a readiness flip, an
 * annotation no rule reads); different, its window is cut and it carries on
 * with the new ones. Only when no longer its job's (an earlier job keeps it
 * now, or none does, or it is over the label limit) is it judged again.
 * Takes @meta.
 */
static void loop_relabel(struct loop *l, struct proc_entry *p, struct labels *meta, uint64_t rev,
                         uint64_t now)
{
    struct target *t = p->target;
    struct labels labels;
    labels_init(&labels);
    bool keep = false;
    size_t j = 0;
    int err = 0;
    for (; j <= t->job && j < l->cfg->njobs && !keep && !err; j++) {
        labels_release(&labels);
        err = targets_job_labels(l->cfg, &l->cfg->jobs[j], meta, &labels, &keep);
    }
    char msg[160];
    if (!err && (!keep || j - 1 != t->job ||
                 relabel_check_limit(&labels, l->cfg->global.limits.max_labels_per_profile, msg,
                                     sizeof(msg)))) {
        labels_release(&labels);
        labels_release(meta);
        loop_requeue(l, p, "its pod changed and its job no longer keeps it: judging it again", now);
        return;
    }
    if (err) { /* out of memory: as before the change, and looked at again next time */
        labels_release(&labels);
        labels_release(meta);
        return;
    }
    p->pod_rev = rev;
    if (target_relabel(t, l->opts.queue, meta, &labels, now, loop_real_at(l, now)))
        log_info("process %d (%s): its pod's labels changed: profiles carry the new ones from now",
                 (int)p->key.pid, t->job_name);
    labels_release(&labels);
    labels_release(meta);
}

/*
 * When the pod metadata changed since the last look (every housekeeping:
 * the generation is one call): each process with a container id whose pod
 * revision moved. An active target is relabelled in place (loop_relabel());
 * a dropped or over-limit process is judged again at this housekeeping's
 * scan (its pod may be kept now). A process seen before its pod is judged
 * when its pod appears the same way.
 */
static void loop_pods_changed(struct loop *l, uint64_t now)
{
    const struct pod_source *pods = loop_pod_source(l);
    if (!pods)
        return;
    uint64_t gen = pods->generation(pods->arg);
    if (gen == l->pods_gen)
        return;
    l->pods_gen = gen;
    for (size_t i = 0; i < proc_table_count(l->procs); i++) {
        struct proc_entry *p = proc_table_at(l->procs, i);
        if (!p->container_id[0] ||
            (p->state != PROC_ACTIVE && p->state != PROC_DROPPED && p->state != PROC_OVER_LIMIT))
            continue;
        struct target *t = p->target;
        /* the discovered labels without the pod's, then the pod's as they are now */
        struct labels meta;
        labels_init(&meta);
        int rc = 0;
        for (size_t k = 0; t && k < t->meta.n && rc == 0; k++) {
            const struct label *m = &t->meta.v[k];
            if (strncmp(m->name, POD_SOURCE_PREFIX, strlen(POD_SOURCE_PREFIX)) != 0)
                rc = labels_set(&meta, m->name, m->value);
        }
        uint64_t rev = 0;
        if (rc == 0)
            rc = pods->lookup(pods->arg, p->container_id, &meta, &rev);
        if (rc < 0 || rev == p->pod_rev) {
            labels_release(&meta);
            continue;
        }
        if (t) {
            loop_relabel(l, p, &meta, rev, now);
        } else {
            labels_release(&meta);
            loop_requeue(l, p, NULL, now);
        }
    }
}

static void loop_discover(struct loop *l, uint64_t now)
{
    proc_table_mark(l->procs, false);
    int err = proc_scan_run(l->scan, loop_real_at(l, now));
    l->scans++;
    if (err) {
        /* an incomplete scan proves nothing about the processes it did not report */
        l->scan_errors++;
        proc_table_mark(l->procs, true);
        if (err != -ENOMEM) {
            log_error("cannot scan '%s': %s", l->cfg->discovery.proc_root, strerror(-err));
            return;
        }
    }
    size_t n = proc_scan_count(l->scan);
    for (size_t i = 0; i < n; i++) {
        const struct proc_info *info = proc_scan_get(l->scan, i);
        struct proc_entry *p = proc_table_find(l->procs, &info->key);
        if (!p && !(p = proc_table_add(l->procs, &info->key)))
            continue; /* every entry is Python: looked at once there is room */
        p->seen = true;
        struct verdict v;
        proc_judge(l->cfg, l->opts.probe, loop_pod_source(l), p, info, now, l->ntargets,
                   l->max_targets, &v);
        if (v.gone)
            p->seen = false;
        else if (v.state == PROC_ACTIVE)
            loop_start_target(l, p, &v, loop_now(l));
        else if (v.log)
            log_info("process %d (%s) is not sampled: %s", (int)p->key.pid, p->comm, p->reason);
        verdict_release(&v);
    }
    /* the rest: gone (their targets flush their last window), or dead targets */
    for (size_t i = 0; i < proc_table_count(l->procs); i++) {
        struct proc_entry *p = proc_table_at(l->procs, i);
        if (p->target && ((struct target *)p->target)->gone)
            p->seen = false;
    }
    proc_table_sweep(l->procs, loop_sweep_gone, l);
    l->ready = true;
}

/* Forgets every target (windows flushed) and every verdict that depends on the config. */
static void loop_apply_config(struct loop *l, struct pyprofd_config *cfg, uint64_t now)
{
    while (l->ntargets) {
        struct target *t = l->targets[0];
        struct proc_entry *p = proc_table_find(l->procs, &t->key);
        if (p)
            p->target = NULL;
        loop_end_target(l, t, now);
    }
    proc_table_forget_verdicts(l->procs);
    size_t want = loop_max_targets(cfg);
    if (want > l->cap_targets) {
        /* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers */
        struct target **v = alloc_realloc(l->targets, want * sizeof(*v));
        if (v)
            l->targets = v;
        if (v && fleet_grow(l->fleet, want) == 0)
            l->cap_targets = want;
        else
            log_error("out of memory for %zu targets; keeping room for %zu", want, l->cap_targets);
    }
    if (strcmp(cfg->discovery.proc_root, l->cfg->discovery.proc_root) != 0) {
        struct proc_scan *scan = loop_scanner(l, cfg->discovery.proc_root);
        if (scan) {
            proc_scan_free(l->scan);
            l->scan = scan;
        } else {
            log_error("cannot scan '%s': out of memory; still scanning '%s'",
                      cfg->discovery.proc_root, l->cfg->discovery.proc_root);
        }
    }
    if (podmeta_configure(&l->pods, cfg))
        log_error("discovery.kubernetes: out of memory; pod metadata as before");
    l->pods_gen = 0;
    config_free(l->cfg);
    l->cfg = cfg;
    l->max_targets = want < l->cap_targets ? want : l->cap_targets;
    l->next_scan = now;
}

/* ---- the thread ---------------------------------------------------------------- */

/*
 * The sampling tick: global.sampling_tick, or half the shortest interval of
 * a target if that is shorter, so that no two attempts of one target fall in
 * one tick. An attempt is made at a random point of its interval and up to a
 * tick late, so it may be made in the next attempt's interval; that one's
 * point is then drawn from what is left of its interval (schedule_jitter()),
 * so a target still comes at most once in a pass unless it is a whole
 * interval behind, and no attempt counts as late before its whole interval
 * has gone by.
 */
static uint64_t loop_tick(const struct loop *l)
{
    uint64_t tick = l->cfg->global.sampling_tick_ns;
    for (size_t i = 0; i < l->ntargets; i++) {
        uint64_t half = l->targets[i]->interval_ns / 2;
        if (half < tick)
            tick = half;
    }
    return tick ? tick : 1;
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
    loop_pods_changed(l, now); /* before the scan: a process it requeues is judged in it */
    if (now >= l->next_scan) {
        loop_discover(l, now);
        l->next_scan = now + l->cfg->discovery.refresh_interval_ns;
    }
    for (size_t i = 0; i < l->ntargets; i++) {
        struct target *t = l->targets[i];
        t->snap = sampler_counts(t->s);
        enum target_reattach why;
        if (!t->gone && target_stale(t, l->cfg->discovery.proc_root, now, &why)) {
            loop_reattach(l, t, now, why);
            i--;
            continue;
        }
        if (t->gone) {
            /* removed through its process entry so the table forgets it too */
            struct proc_entry *p = proc_table_find(l->procs, &t->key);
            if (p) {
                p->target = NULL;
                p->state = PROC_NEW;
                p->seen = true;
                p->recheck_ns = 0; /* gone: the next scan drops it; if not, looks again */
            }
            loop_end_target(l, t, now);
            i--;
            continue;
        }
        target_async_search(t, l->cfg->discovery.proc_root, now);
        if (now - t->win_start >= t->window_ns)
            (void)target_cut(t, l->opts.queue, now, loop_real_at(l, now), false);
        if (t->aio || t->async_note[0]) {
            char abuf[320];
            snprintf(t->async_snap, sizeof(t->async_snap), "%s",
                     target_async_words(t, abuf, sizeof(abuf)));
        }
    }
    loop_requests_tick(l, now);
    (void)fleet_budget(l->fleet, now, clock_thread_cpu(l->opts.clock),
                       l->cfg->global.limits.cpu_budget);
    fleet_set_tick(l->fleet, loop_tick(l));
    l->next_tick = now + LOOP_TICK_NS;
}

/*
 * One pass: every attempt due by now (the fleet's boundary at or before now).
 * A target whose next attempt is already due again (it is late) comes again
 * in the same pass, after every target due now has had its turn: it catches
 * up back to back, as its schedule asks, without holding up the others.
 */
static void loop_sample_due(struct loop *l)
{
    uint64_t now = loop_now(l);
    if (!fleet_collect(l->fleet, now))
        return;
    struct fleet_slot *s;
    while ((s = fleet_pop(l->fleet))) {
        struct target *t = target_of_slot(s);
        if (t->gone) {
            sampler_idle(t->s, now); /* removed at the next housekeeping */
        } else {
            uint64_t skip = fleet_take(l->fleet, s);
            if (skip == 0 && sampler_attempt(t->s, now) == -ESRCH)
                t->gone = true;
            else if (skip)
                sampler_skip(t->s, now, skip);
        }
        fleet_update(l->fleet, s, sampler_due(t->s));
        now = loop_now(l);
    }
}

void loop_step(struct loop *l, bool force)
{
    pthread_mutex_lock(&l->mu);
    uint64_t now = loop_now(l);
    if (force || now >= l->next_tick || l->kick) {
        l->kick = false;
        loop_housekeeping(l, now);
    }
    pthread_mutex_unlock(&l->mu);
    loop_sample_due(l);
}

/* The next boundary with an attempt due, or housekeeping (under the lock). */
static uint64_t loop_wake_at(const struct loop *l)
{
    uint64_t wake = fleet_next_wake(l->fleet);
    return wake < l->next_tick ? wake : l->next_tick;
}

uint64_t loop_next_wake(struct loop *l)
{
    pthread_mutex_lock(&l->mu);
    uint64_t wake = l->kick ? loop_now(l) : loop_wake_at(l);
    pthread_mutex_unlock(&l->mu);
    return wake;
}

/* The timer slack for the fleet's tick: one tick, not under the kernel's default. */
static uint64_t loop_slack(const struct loop *l)
{
    uint64_t tick = fleet_tick(l->fleet);
    return tick < CLOCK_DEFAULT_SLACK_NS ? CLOCK_DEFAULT_SLACK_NS : tick;
}

/*
 * The thread's own scheduling: a timer slack of one tick, so that the kernel
 * may fold its sleeps into other wake-ups. Not needed for correct samples: a
 * failure is said once, at debug level. The policy stays SCHED_OTHER: under
 * SCHED_BATCH a wake-up on busy CPUs waits for the scheduler tick, and the
 * samples alias with the targets' own periods (docs/agent.md).
 */
static uint64_t loop_thread_setup(const struct loop *l)
{
    uint64_t slack = loop_slack(l);
    int err = clock_set_slack(slack);
    if (err)
        log_debug("sampling thread: cannot set the timer slack: %s", strerror(-err));
    return slack;
}

static void *loop_main(void *arg)
{
    struct loop *l = arg;
    uint64_t slack = loop_thread_setup(l);
    fleet_budget_start(l->fleet, loop_now(l), clock_thread_cpu(l->opts.clock));
    pthread_mutex_lock(&l->mu);
    while (!l->stop) {
        pthread_mutex_unlock(&l->mu);
        loop_step(l, false);
        if (loop_slack(l) != slack) {
            slack = loop_slack(l); /* a faster target shortened the tick */
            (void)clock_set_slack(slack);
        }
        pthread_mutex_lock(&l->mu);
        uint64_t until = loop_wake_at(l);
        if (!l->stop && !l->kick && until > loop_now(l)) {
            struct timespec ts = clock_timespec(until);
            (void)pthread_cond_timedwait(&l->wake, &l->mu, &ts);
        }
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

/* Ends every target (windows flushed as final) and every request. */
static void loop_wind_down(struct loop *l)
{
    pthread_mutex_lock(&l->mu);
    l->stop = true;
    uint64_t now = loop_now(l);
    loop_clocks(l, now);
    /* requests end with what they have; those not started yet, with nothing */
    for (struct tap_request *r = l->requests; r; r = r->next) {
        if (r->done)
            continue;
        if (r->started) {
            taps_finish(r);
        } else {
            r->err = -ECANCELED;
            snprintf(r->errmsg, sizeof(r->errmsg), "the agent is stopping");
        }
        loop_request_done(r);
    }
    while (l->ntargets) {
        struct target *t = l->targets[0];
        struct proc_entry *p = proc_table_find(l->procs, &t->key);
        if (p)
            p->target = NULL;
        loop_end_target(l, t, now);
    }
    l->stopped = true;
    pthread_mutex_unlock(&l->mu);
}

/* ---- public ------------------------------------------------------------------- */

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
    l->opts = *opts;
    if (!l->opts.self_pid)
        l->opts.self_pid = getpid();
    if (!l->opts.clock)
        l->opts.clock = &clock_system;
    if (!l->opts.probe)
        l->opts.probe = &probe_system;
    l->cap_targets = l->max_targets = loop_max_targets(cfg);
    /* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers */
    l->targets = alloc_calloc(l->cap_targets, sizeof(*l->targets));
    l->jobs = alloc_calloc(LOOP_MAX_JOBS_STATS, sizeof(*l->jobs));
    l->cfg = cfg; /* for loop_scanner's proc root */
    l->scan = loop_scanner(l, cfg->discovery.proc_root);
    int err = proc_table_new(0, &l->procs);
    if (!err)
        err = unwind_scratch_new(&l->scratch);
    if (!err)
        err = fleet_new(l->cap_targets, &l->fleet);
    if (!err)
        err = podmeta_configure(&l->pods, cfg);
    if (err || !l->targets || !l->jobs || !l->scan) {
        l->cfg = NULL; /* stays the caller's on failure */
        loop_free(l);
        return -ENOMEM;
    }
    fleet_budget_start(l->fleet, loop_now(l), clock_thread_cpu(l->opts.clock));
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
    bool running = l->running, stopped = l->stopped;
    l->stop = true;
    pthread_cond_signal(&l->wake);
    pthread_mutex_unlock(&l->mu);
    if (running)
        pthread_join(l->thread, NULL);
    if (!stopped)
        loop_wind_down(l);
    pthread_mutex_lock(&l->mu);
    l->running = false;
    pthread_mutex_unlock(&l->mu);
}

void loop_free(struct loop *l)
{
    if (!l)
        return;
    if (l->cfg)
        loop_stop(l);
    for (size_t i = 0; l->targets && i < l->ntargets; i++)
        target_free(l->targets[i], l->opts.queue);
    proc_scan_free(l->scan);
    proc_table_free(l->procs);
    podmeta_free(l->pods);
    fleet_free(l->fleet);
    config_free(l->cfg);
    config_free(l->pending_cfg);
    alloc_free(l->targets);
    alloc_free(l->jobs);
    unwind_scratch_free(l->scratch); /* after every target's unwinder */
    pthread_mutex_destroy(&l->mu);
    pthread_cond_destroy(&l->wake);
    alloc_free(l);
}

void loop_set_config(struct loop *l, struct pyprofd_config *cfg)
{
    pthread_mutex_lock(&l->mu);
    config_free(l->pending_cfg);
    l->pending_cfg = cfg;
    l->kick = true;
    pthread_cond_signal(&l->wake);
    pthread_mutex_unlock(&l->mu);
}

bool loop_ready(struct loop *l)
{
    pthread_mutex_lock(&l->mu);
    bool r = l->ready;
    pthread_mutex_unlock(&l->mu);
    return r;
}
