/* SPDX-License-Identifier: MIT */
/*
 * loop_view.c: the sampling loop's state copied for /targets and /metrics, and
 * the per-job totals it keeps (see loop.h, loop_snapshot()).
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "daemon/loop_internal.h"

/* ---- job totals ------------------------------------------------------------ */

struct loop_job_view *loop_job(struct loop_job_view *v, size_t *n, const char *name)
{
    for (size_t i = 0; i < *n; i++) {
        if (strcmp(v[i].name, name) == 0)
            return &v[i];
    }
    if (*n == LOOP_MAX_JOBS_STATS)
        return NULL;
    struct loop_job_view *j = &v[(*n)++];
    memset(j, 0, sizeof(*j));
    snprintf(j->name, sizeof(j->name), "%s", name);
    return j;
}

void loop_job_add(struct loop_job_view *j, const struct target_stats *t)
{
    const struct sampler_counts *c = &t->counts;
    j->counts.attempts += c->attempts;
    j->counts.taken += c->taken;
    j->counts.failed += c->failed;
    j->counts.missed += c->missed;
    j->counts.skipped += c->skipped;
    j->counts.thread_samples += c->thread_samples;
    j->counts.retried += c->retried;
    j->counts.saved += c->saved;
    j->counts.reused += c->reused;
    j->counts.tid_pthread += c->tid_pthread;
    j->counts.tid_only_thread += c->tid_only_thread;
    j->counts.tid_gone += c->tid_gone;
    j->counts.tid_unresolved += c->tid_unresolved;
    for (size_t i = 0; i < SAMPLE_STATUS_COUNT; i++)
        j->counts.failed_by[i] += c->failed_by[i];
    j->native.joined += t->native_counts.joined;
    j->native.cut += t->native_counts.cut;
    j->native.python_only += t->native_counts.python_only;
    j->native.c_only += t->native_counts.c_only;
    j->native.fallbacks += t->native_counts.fallbacks;
    j->native.debug_used += t->native_counts.debug_used;
    j->native.debug_refused += t->native_counts.debug_refused;
    j->native.debug_stalled += t->native_counts.debug_stalled;
    j->native.huge_symtabs += t->native_counts.huge_symtabs;
    j->windows += t->windows;
    j->windows_dropped += t->windows_dropped;
    j->stacks_dropped += t->stacks_dropped;
    j->trace_spans += t->trace_counts.spans;
    j->trace_torn += t->trace_counts.torn;
    j->trace_faults += t->trace_counts.faults;
    j->spans_over += t->spans_over;
}

/* ---- the view ------------------------------------------------------------------- */

void loop_view_free(struct loop_view *v)
{
    if (!v)
        return;
    for (size_t i = 0; i < v->nprocs; i++) {
        labels_release(&v->procs[i].labels);
        labels_release(&v->procs[i].meta);
    }
    alloc_free(v->procs);
    alloc_free(v->jobs);
    alloc_free(v);
}

/* One listed process of the view, from its entry (and target, if any). */
static int loop_view_proc(const struct loop *l, const struct proc_entry *p,
                          struct loop_proc_view *o)
{
    o->pid = p->key.pid;
    o->state = p->state;
    memcpy(o->comm, p->comm, sizeof(o->comm));
    memcpy(o->container_id, p->container_id, sizeof(o->container_id));
    o->nspid = p->nspid;
    memcpy(o->version, p->version, sizeof(o->version));
    o->free_threaded = p->free_threaded;
    memcpy(o->reason, p->reason, sizeof(o->reason));
    o->reattaches = p->reattaches;
    memcpy(o->reattach_why, p->reattach_why, sizeof(o->reattach_why));
    if (!p->target)
        return 0;
    const struct target_info *ti = target_info(p->target);
    const struct target_stats *ts = target_stats(p->target);
    o->target = true;
    memcpy(o->job, ti->job_name, sizeof(o->job));
    o->mode = ti->mode;
    o->rate = ti->rate;
    o->effective_rate = ti->rate * fleet_factor(l->fleet);
    o->interval_s = (double)ti->window_ns / 1e9;
    memcpy(o->async, ts->async, sizeof(o->async));
    memcpy(o->native, ts->native, sizeof(o->native));
    memcpy(o->idle_check, ts->idle_check, sizeof(o->idle_check));
    o->parked = ts->parked;
    memcpy(o->trace, ts->trace, sizeof(o->trace));
    o->trace_threads = ts->trace_counts.threads;
    o->trace_spans = ts->trace_counts.spans;
    o->trace_torn = ts->trace_counts.torn;
    o->trace_faults = ts->trace_counts.faults;
    o->native_counts = ts->native_counts;
    o->counts = ts->counts;
    o->windows = ts->windows;
    o->windows_dropped = ts->windows_dropped;
    o->stacks_dropped = ts->stacks_dropped;
    if (labels_copy(&o->labels, &ti->labels) || labels_copy(&o->meta, &ti->meta))
        return -ENOMEM;
    return 0;
}

int loop_snapshot(struct loop *l, struct loop_view **out)
{
    struct loop_view *v = alloc_calloc(1, sizeof(*v));
    if (!v)
        return -ENOMEM;
    int err = 0;
    pthread_mutex_lock(&l->mu);
    size_t n = proc_table_count(l->procs), listed = 0;
    for (size_t i = 0; i < n; i++)
        listed += proc_state_listed(proc_table_at(l->procs, i)->state);
    v->procs = alloc_calloc(listed ? listed : 1, sizeof(*v->procs));
    v->jobs = alloc_calloc(LOOP_MAX_JOBS_STATS, sizeof(*v->jobs));
    if (!v->procs || !v->jobs) {
        err = -ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        const struct proc_entry *p = proc_table_at(l->procs, i);
        v->by_state[p->state]++;
        if (proc_state_listed(p->state) && !err)
            err = loop_view_proc(l, p, &v->procs[v->nprocs++]);
    }
    /* per job: the gone targets' totals plus the live targets' snapshots */
    memcpy(v->jobs, l->jobs, l->njobs * sizeof(*v->jobs));
    v->njobs = l->njobs;
    for (size_t i = 0; i < l->ntargets; i++) {
        struct loop_job_view *j =
            loop_job(v->jobs, &v->njobs, target_info(l->targets[i])->job_name);
        if (j) {
            const struct target_stats *ts = target_stats(l->targets[i]);
            loop_job_add(j, ts);
            j->targets++;
            j->idle_check[ts->idle_how < IDLE_CHECK_HOWS ? ts->idle_how : IDLE_CHECK_OFF]++;
        }
    }
    v->factor = fleet_factor(l->fleet);
    v->show_sensitive_labels = l->cfg->server.show_sensitive_labels;
    podmeta_view(l->pods, &v->pods);
    v->scans = l->scans;
    v->scan_errors = l->scan_errors;
    v->watch = l->watch_counts;
    v->watch_stats = (struct proc_watch_stats){.source = PROC_WATCH_OFF};
    if (l->watch)
        proc_watch_stats(l->watch, &v->watch_stats);
    v->start_delay = &l->start_delay;
    for (int f = 0; f < OTEL_PROCESS_FAILS; f++)
        v->context_reads[f] = targets_context_reads((enum otel_process_fail)f);
out:
    pthread_mutex_unlock(&l->mu);
    if (err) {
        loop_view_free(v);
        return err;
    }
    *out = v;
    return 0;
}
