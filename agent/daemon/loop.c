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
#include "daemon/loop_internal.h"

static void loop_clocks(struct loop *l, uint64_t mono)
{
    l->hk_mono = mono;
    l->hk_real = clock_real(l->opts.clock);
}

size_t loop_max_targets(const struct pyprofd_config *cfg)
{
    uint64_t m = cfg->global.limits.max_targets;
    return m > LOOP_TARGETS_CAP ? LOOP_TARGETS_CAP : m ? (size_t)m : 1;
}

size_t loop_window_slots(const struct pyprofd_config *cfg)
{
    return 2 * loop_max_targets(cfg) + 16;
}

/* ---- targets --------------------------------------------------------------- */

/*
 * Ends target @t and has its process entry @p (NULL: not in the table) judged
 * again at the next scan: taps off, last window flushed, totals kept, freed.
 * @why: for the log line (NULL: it exited, or no longer a target). The one
 * way a target ends.
 */
static void loop_end_target(struct loop *l, struct target *t, struct proc_entry *p, const char *why,
                            uint64_t now)
{
    const struct target_info *ti = target_info(t);
    waiter_remove(l->waiter, t, now); /* unparked first: its attempts so far */
    taps_detach_target(l->requests, t);
    target_finish(t, l->opts.queue, now, loop_real_at(l, now));
    struct loop_job_view *j = loop_job(l->jobs, &l->njobs, ti->job_name);
    if (j)
        loop_job_add(j, target_stats(t));
    fleet_remove(l->fleet, target_slot(t));
    for (size_t i = 0; i < l->ntargets; i++) {
        if (l->targets[i] == t) {
            l->targets[i] = l->targets[--l->ntargets];
            break;
        }
    }
    if (p && p->target == t)
        proc_entry_requeue(p);
    log_info("stopped sampling process %d (%s): %s", (int)ti->key.pid, ti->job_name,
             target_gone(t) ? "it exited"
             : why          ? why
                            : "no longer a target");
    target_free(t, l->opts.queue);
}

/* loop_end_target() for a target found through its process entry, if any. */
static void loop_forget_target(struct loop *l, struct target *t, const char *why, uint64_t now)
{
    loop_end_target(l, t, proc_table_find(l->procs, &target_info(t)->key), why, now);
}

/* Every target ended, windows flushed as final (a reload, the end). */
static void loop_forget_all(struct loop *l, const char *why, uint64_t now)
{
    while (l->ntargets)
        loop_forget_target(l, l->targets[0], why, now);
}

static void loop_sweep_gone(struct proc_entry *p, void *arg)
{
    struct loop *l = arg;
    loop_end_target(l, p->target, p, NULL, l->hk_mono); /* the table is being swept */
}

/* Starts the target a verdict asked for; on failure the process is "failed". */
static void loop_start_target(struct loop *l, struct proc_entry *p, struct verdict *v, uint64_t now,
                              const struct proc_info *info)
{
    struct target_env env = {
        .cfg = l->cfg, .queue = l->opts.queue, .phase_seq = l->phase_seq++, .scratch = l->scratch};
    struct target *t = NULL;
    int err = target_start(&env, p, v, now, loop_real_at(l, now), &t);
    if (!err && fleet_add(l->fleet, target_slot(t), target_due(t))) {
        target_free(t, l->opts.queue); /* cannot happen: sized for max_targets */
        err = -ENOSPC;
    }
    if (err) {
        proc_entry_fail(p, strerror(-err),
                        now + TARGETS_RECHECK_RARE * l->cfg->discovery.refresh_interval_ns);
        log_warn("cannot sample process %d (%s): %s", (int)p->key.pid, p->comm, p->reason);
        return;
    }
    l->targets[l->ntargets++] = t;
    proc_entry_activate(p, t);
    loop_watch_started(l, t, info);
    waiter_add(l->waiter, t);
    for (struct tap_request *r = l->requests; r; r = r->next) {
        if (taps_wants(r, t))
            taps_attach(r, t);
    }
    const struct target_info *ti = target_info(t);
    const char *refused = target_native_refused(t);
    log_info("sampling process %d (%s, Python %s) as job '%s' at %g Hz, %s mode%s", (int)p->key.pid,
             p->comm, p->version, ti->job_name, ti->rate, profile_mode_name(ti->mode),
             target_native_fd(t) >= 0 ? ", C frames from the kernel's samples" : "");
    if (refused)
        log_warn("process %d (%s): native: full refused, <native> markers instead: %s",
                 (int)p->key.pid, p->comm, refused);
}

/* Ends @t and has its process looked at again as if new (@why, @what: why):
 * counted, shown, logged. */
static void loop_reattach(struct loop *l, struct target *t, uint64_t now, enum target_reattach why,
                          const char *what)
{
    const struct target_info *ti = target_info(t);
    struct loop_job_view *j = loop_job(l->jobs, &l->njobs, ti->job_name);
    if (j)
        j->reattached[why]++;
    struct proc_entry *p = proc_table_find(l->procs, &ti->key);
    log_info("process %d (%s): %s: attaching to it again", (int)ti->key.pid,
             p ? p->comm : ti->job_name, what);
    uint64_t stuck = target_next_stuck_ns(t, why);
    loop_forget_target(l, t, "attaching to it again", now);
    if (p)
        proc_entry_reattach(p, what, stuck);
    l->next_scan = now; /* looked at by the next housekeeping */
}

/* ---- discovery -------------------------------------------------------------- */

/* The scan's filter: known processes are marked alive and not re-read unless due. */
static bool loop_scan_filter(const struct proc_key *key, const char *comm, uint64_t start_stack,
                             void *arg)
{
    struct loop *l = arg;
    struct proc_entry *p = proc_table_find(l->procs, key);
    if (!p)
        return true;
    p->seen = true;
    if (l->looking) /* a look between scans (loop_watch.c) */
        return loop_watch_filter(l, p, comm, start_stack);
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
    if (p->target)
        loop_forget_target(l, p->target, why, now);
    proc_entry_requeue(p);
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
                         bool context, uint64_t now)
{
    struct target *t = p->target;
    size_t job = target_info(t)->job;
    struct labels labels;
    labels_init(&labels);
    bool keep = false;
    size_t j = 0;
    int err = 0;
    for (; j <= job && j < l->cfg->njobs && !keep && !err; j++) {
        labels_release(&labels);
        err = targets_job_labels(l->cfg, &l->cfg->jobs[j], meta, &labels, &keep);
    }
    char msg[160];
    if (!err && (!keep || j - 1 != job ||
                 relabel_check_limit(&labels, l->cfg->global.limits.max_labels_per_profile, msg,
                                     sizeof(msg)))) {
        labels_release(&labels);
        labels_release(meta);
        loop_requeue(l, p,
                     context ? "its OpenTelemetry process context changed and its job no longer "
                               "keeps it: judging it again"
                             : "its pod changed and its job no longer keeps it: judging it again",
                     now);
        return;
    }
    if (err) { /* out of memory: as before the change, and looked at again next time */
        labels_release(&labels);
        labels_release(meta);
        return;
    }
    proc_entry_relabelled(p, rev);
    if (target_relabel(t, l->opts.queue, meta, &labels, now, loop_real_at(l, now)))
        log_info("process %d (%s): %s changed: profiles carry the new ones from now",
                 (int)p->key.pid, target_info(t)->job_name,
                 context ? "its OpenTelemetry process context" : "its pod's labels");
    labels_release(&labels);
    labels_release(meta);
}

/* A target whose OpenTelemetry process context changed: relabelled in place. */
static void loop_context_changed(struct loop *l, struct target *t, uint64_t now)
{
    struct labels meta;
    if (target_context_meta(t, l->cfg->discovery.proc_root, &meta) <= 0)
        return;
    struct proc_entry *p = proc_table_find(l->procs, &target_info(t)->key);
    if (!p || p->target != t) {
        labels_release(&meta);
        return;
    }
    loop_relabel(l, p, &meta, p->pod_rev, true, now);
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
        const struct labels *had = t ? &target_info(t)->meta : NULL;
        /* the discovered labels without the pod's, then the pod's as they are now */
        struct labels meta;
        labels_init(&meta);
        int rc = 0;
        for (size_t k = 0; had && k < had->n && rc == 0; k++) {
            const struct label *m = &had->v[k];
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
            loop_relabel(l, p, &meta, rev, false, now);
        } else {
            labels_release(&meta);
            loop_requeue(l, p, NULL, now);
        }
    }
}

enum proc_state loop_consider(struct loop *l, const struct proc_info *info, uint64_t now)
{
    struct proc_entry *p = proc_table_find(l->procs, &info->key);
    if (!p && !(p = proc_table_add(l->procs, &info->key)))
        return PROC_NEW; /* every entry is Python: looked at once there is room */
    p->seen = true;
    struct verdict v;
    proc_judge(l->cfg, l->opts.probe, loop_pod_source(l), p, info, now, l->ntargets, l->max_targets,
               &v);
    if (v.gone)
        proc_entry_lost(p);
    else if (v.state == PROC_ACTIVE)
        loop_start_target(l, p, &v, loop_now(l), info);
    else if (v.log)
        log_info("process %d (%s) is not sampled: %s", (int)p->key.pid, p->comm, p->reason);
    enum proc_state state = v.gone ? PROC_NEW : p->state;
    verdict_release(&v);
    return state;
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
    for (size_t i = 0; i < n; i++)
        (void)loop_consider(l, proc_scan_get(l->scan, i), now);
    /* the rest: gone (their targets flush their last window), or dead targets */
    for (size_t i = 0; i < proc_table_count(l->procs); i++) {
        struct proc_entry *p = proc_table_at(l->procs, i);
        if (p->target && target_gone(p->target))
            proc_entry_lost(p);
    }
    proc_table_sweep(l->procs, loop_sweep_gone, l);
    l->ready = true;
}

/* Forgets every target (windows flushed) and every verdict that depends on the config. */
static void loop_apply_config(struct loop *l, struct pyprofd_config *cfg, uint64_t now)
{
    loop_forget_all(l, "the configuration changed", now);
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
    loop_watch_configure(l, cfg, l->cfg);
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
        if (target_native_fd(l->targets[i]) >= 0)
            continue; /* the kernel samples it: its schedule only drains */
        uint64_t half = target_info(l->targets[i])->interval_ns / 2;
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
        enum target_reattach why;
        char what[160];
        switch (target_housekeep(t, l->opts.queue, l->cfg->discovery.proc_root, now,
                                 loop_real_at(l, now), &why, what, sizeof(what))) {
        case TARGET_STALE:
            loop_reattach(l, t, now, why, what);
            i--;
            break;
        case TARGET_GONE:
            loop_forget_target(l, t, NULL, now); /* the next scan drops its entry */
            i--;
            break;
        case TARGET_KEEP:
        default:
            loop_context_changed(l, t, now);
            break;
        }
    }
    loop_requests_tick(l, now);
    (void)fleet_budget(l->fleet, now, clock_thread_cpu(l->opts.clock),
                       l->cfg->global.limits.cpu_budget);
    for (size_t i = 0; waiter_nnative(l->waiter) && i < l->ntargets;
         i++) /* the kernel's rate follows the budget */
        target_native_factor(l->targets[i], fleet_factor(l->fleet));
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
        target_sample(t, now, target_gone(t) ? 0 : fleet_take(l->fleet, s));
        fleet_update(l->fleet, s, target_due(t));
        waiter_consider(l->waiter, t);
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
    loop_watch_look(l, now); /* new processes whose look is due */
    bool reap = l->watch_old != NULL;
    pthread_mutex_unlock(&l->mu);
    if (reap)
        loop_watch_reap(l);
    /* kernel samples to drain, parked targets whose threads ran */
    waiter_step(l->waiter, l->targets, l->ntargets, l->opts.clock);
    loop_sample_due(l);
}

/* The next boundary with an attempt due, or housekeeping (under the lock). */
static uint64_t loop_wake_at(const struct loop *l)
{
    uint64_t wake = fleet_next_wake(l->fleet);
    wake = wake < l->watch_due ? wake : l->watch_due;
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
        if (!l->stop && !l->kick && !waiter_pending(l->waiter) && until > loop_now(l)) {
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
    loop_forget_all(l, "the agent is stopping", now);
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
        err = waiter_new(&l->mu, &l->wake, l->fleet, &l->waiter);
    if (!err)
        err = podmeta_configure(&l->pods, cfg);
    if (err || !l->targets || !l->jobs || !l->scan) {
        l->cfg = NULL; /* stays the caller's on failure */
        loop_free(l);
        return -ENOMEM;
    }
    l->watch_due = UINT64_MAX;
    loop_watch_configure(l, cfg, NULL);
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
    (void)loop_stop_by(l, UINT64_MAX);
}

int loop_stop_by(struct loop *l, uint64_t deadline_ns)
{
    if (l->abandoned)
        return -ETIMEDOUT;
    pthread_mutex_lock(&l->mu);
    bool running = l->running, stopped = l->stopped;
    l->stop = true;
    pthread_cond_signal(&l->wake);
    pthread_mutex_unlock(&l->mu);
    if (running && deadline_ns == UINT64_MAX) {
        pthread_join(l->thread, NULL);
    } else if (running) {
        /* pthread_timedjoin_np() counts in CLOCK_REALTIME: the time left, from now */
        uint64_t now = clock_mono_now(), left = deadline_ns > now ? deadline_ns - now : 0;
        struct timespec at;
        clock_gettime(CLOCK_REALTIME, &at);
        uint64_t ns = (uint64_t)at.tv_nsec + left % 1000000000ull;
        at.tv_sec += (time_t)(left / 1000000000ull + ns / 1000000000ull);
        at.tv_nsec = (long)(ns % 1000000000ull);
        if (pthread_timedjoin_np(l->thread, NULL, &at) == ETIMEDOUT) {
            /* still busy: nothing it owns may be touched now; loop_free()
             * leaves it all to the process's exit */
            l->abandoned = true;
            return -ETIMEDOUT;
        }
    }
    waiter_stop(l->waiter);
    if (!stopped)
        loop_wind_down(l);
    pthread_mutex_lock(&l->mu);
    l->running = false;
    pthread_mutex_unlock(&l->mu);
    return 0;
}

void loop_free(struct loop *l)
{
    if (!l || l->abandoned)
        return;
    if (l->cfg)
        loop_stop(l);
    for (size_t i = 0; l->targets && i < l->ntargets; i++)
        target_free(l->targets[i], l->opts.queue);
    proc_watch_free(l->watch); /* its thread stopped before anything it names */
    proc_watch_free(l->watch_old);
    proc_scan_free(l->scan);
    proc_table_free(l->procs);
    podmeta_free(l->pods);
    waiter_free(l->waiter); /* after the targets: none is parked any more */
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
