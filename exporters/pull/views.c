/* SPDX-License-Identifier: MIT */
/*
 * views.c: /targets and the loop's /metrics families from a snapshot (see
 * views.h).
 */
#include "base/compat.h"

#include <stddef.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/jsonw.h"
#include "base/utf8.h"
#include "discovery/otel_process.h"
#include "exporters/pull/views.h"
#include "pprof/flamegraph.h"
#include "pprof/pprof_build.h"

/* ---- /debug/pprof/profile --------------------------------------------------------- */

int views_profile_pprof(const struct loop_capture *c, int mode, uint8_t **out, size_t *out_len,
                        char *err, size_t errlen)
{
    struct pprof_part *parts = alloc_calloc(c->nparts ? c->nparts : 1, sizeof(*parts));
    if (!parts) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    bool same = true;
    size_t n = 0;
    const struct tap_part *first = NULL;
    for (size_t i = 0; i < c->nparts; i++) {
        if (mode >= 0 && (int)c->parts[i].mode != mode)
            continue;
        first = first ? first : &c->parts[i];
        parts[n].agg = c->parts[i].agg;
        parts[n++].labels = &c->parts[i].labels;
        same = same && c->parts[i].mode == first->mode;
    }
    struct pprof_meta m = {
        /* targets of different modes: their time is still time, of mixed kinds */
        .value_type = first && same ? profile_mode_name(first->mode) : "time",
        .value_unit = "nanoseconds",
        .period_ns = first ? first->period_ns : 0,
        .time_nanos = c->start_real,
        .duration_nanos = (int64_t)c->duration_ns,
        .comment = "pyprofd /debug/pprof/profile",
        .max_bytes = (size_t)c->max_bytes,
    };
    int e = pprof_build_multi(parts, n, &m, out, out_len);
    if (e == -E2BIG)
        snprintf(err, errlen, "the profile is larger than the size cap");
    else if (e)
        snprintf(err, errlen, "cannot encode the profile: %s", strerror(-e));
    alloc_free(parts);
    return e;
}

int views_profile_flame(const struct loop_capture *c, int mode, bool one_pid, uint8_t **out,
                        size_t *out_len, char *err, size_t errlen)
{
    struct flame_part *parts = alloc_calloc(c->nparts ? c->nparts : 1, sizeof(*parts));
    char(*names)[160] = alloc_calloc(c->nparts ? c->nparts : 1, sizeof(*names));
    size_t n = 0;
    struct buf b;
    struct buf_stream bs = {.b = &b};
    buf_init(&b, c->max_bytes ? (size_t)c->max_bytes : SIZE_MAX / 2);
    FILE *f = NULL;
    int e = parts && names ? 0 : -ENOMEM;
    for (size_t i = 0; i < c->nparts && !e; i++) {
        const struct tap_part *p = &c->parts[i];
        if (mode >= 0 && (int)p->mode != mode)
            continue;
        const char *svc = labels_get(&p->labels, "service_name");
        if (!svc || !*svc)
            svc = labels_get(&p->labels, "job");
        svc = svc && *svc ? svc : "?";
        /* cut on a character boundary, room left for " (pid N)" */
        int keep = (int)utf8_cut(svc, strlen(svc), sizeof(names[n]) - 24);
        snprintf(names[n], sizeof(names[n]), "%.*s (pid %d)", keep, svc, (int)p->pid);
        parts[n].agg = p->agg;
        parts[n].name = one_pid && c->nparts == 1 ? NULL : names[n];
        n++;
    }
    if (!e && !(f = buf_fopen(&bs)))
        e = -ENOMEM;
    if (!e)
        e = flame_json_write(parts, n, "all", f);
    if (f && fclose(f) && !e)
        e = -EIO;
    if (bs.err)
        e = bs.err; /* what the stream could not write */
    if (!e && !(*out = (uint8_t *)buf_take(&b, out_len)))
        e = -ENOMEM;
    if (e == -E2BIG)
        snprintf(err, errlen, "the flame graph is larger than the size cap");
    else if (e)
        snprintf(err, errlen, "cannot build the flame graph: %s", strerror(-e));
    buf_release(&b);
    alloc_free(names);
    alloc_free(parts);
    return e;
}

/* ---- /targets ---------------------------------------------------------------- */

/*
 * Discovered labels whose values can hold secrets: a command line's
 * arguments (--password=...), a working directory's name, and pod
 * annotations (kubectl's last-applied-configuration carries whole
 * manifests). /targets reads "<hidden>" for them unless
 * server.show_sensitive_labels: in a cluster the server listens beyond
 * loopback so that probes and scrapes reach it.
 */
static bool views_label_sensitive(const char *name)
{
    static const char annotation[] = "__meta_kubernetes_pod_annotation_";
    return strcmp(name, "__meta_process_commandline") == 0 ||
           strcmp(name, "__meta_process_cwd") == 0 ||
           strncmp(name, annotation, sizeof(annotation) - 1) == 0;
}

static void views_labels(struct jsonw *w, const char *key, const struct labels *ls, bool hide)
{
    jsonw_object(w, key);
    for (size_t i = 0; i < ls->n; i++) {
        const char *value = ls->v[i].value;
        if (hide && *value && views_label_sensitive(ls->v[i].name))
            value = "<hidden>";
        jsonw_string(w, ls->v[i].name, value);
    }
    jsonw_end(w);
}

static void views_counts(struct jsonw *w, const struct loop_proc_view *t)
{
    jsonw_object(w, "counts");
    jsonw_uint(w, "samples", t->counts.taken);
    jsonw_uint(w, "thread_samples", t->counts.thread_samples);
    jsonw_uint(w, "failed", t->counts.failed);
    jsonw_uint(w, "missed", t->counts.missed);
    jsonw_uint(w, "skipped", t->counts.skipped);
    jsonw_uint(w, "retried", t->counts.retried);
    jsonw_uint(w, "reads_saved", t->counts.saved);
    jsonw_uint(w, "thread_samples_reused", t->counts.reused);
    jsonw_uint(w, "thread_stacks_dropped", t->stacks_dropped);
    jsonw_object(w, "stale_thread_ids");
    jsonw_uint(w, "pthread", t->counts.tid_pthread);
    jsonw_uint(w, "only_thread", t->counts.tid_only_thread);
    jsonw_uint(w, "gone", t->counts.tid_gone);
    jsonw_uint(w, "unresolved", t->counts.tid_unresolved);
    jsonw_end(w);
    jsonw_object(w, "failed_by_reason");
    for (size_t k = 0; k < SAMPLE_STATUS_COUNT; k++) {
        if (t->counts.failed_by[k])
            jsonw_uint(w, status_name((enum sample_status)k), t->counts.failed_by[k]);
    }
    jsonw_end(w);
    jsonw_uint(w, "profiles", t->windows);
    jsonw_uint(w, "profiles_dropped", t->windows_dropped);
    jsonw_end(w);
}

/* A double as json-c wrote it: 17 significant digits, 100.0 for a whole number. */
#define VIEWS_DIGITS 17

static void views_proc(struct jsonw *w, const struct loop_proc_view *t, bool hide)
{
    jsonw_object(w, NULL);
    jsonw_int(w, "pid", t->pid);
    jsonw_string(w, "comm", t->comm);
    if (t->nspid) /* the PID inside its own PID namespace (= pid without one) */
        jsonw_int(w, "nspid", t->nspid);
    if (t->container_id[0])
        jsonw_string(w, "container_id", t->container_id);
    jsonw_string(w, "state", proc_state_name(t->state));
    if (t->version[0]) {
        jsonw_string(w, "python_version", t->version);
        jsonw_string(w, "build", t->free_threaded ? "free-threaded" : "gil");
    }
    if (t->reason[0])
        jsonw_string(w, "reason", t->reason);
    if (t->reattaches) {
        jsonw_uint(w, "reattaches", t->reattaches);
        jsonw_string(w, "last_reattach", t->reattach_why);
    }
    if (!t->target) {
        jsonw_end(w);
        return;
    }
    jsonw_string(w, "job", t->job);
    views_labels(w, "labels", &t->labels, false);
    views_labels(w, "discovered_labels", &t->meta, hide);
    jsonw_string(w, "mode", profile_mode_name(t->mode));
    if (t->async[0])
        jsonw_string(w, "async", t->async);
    if (t->native[0]) {
        jsonw_string(w, "native", t->native);
        jsonw_object(w, "native_samples");
        jsonw_uint(w, "joined", t->native_counts.joined);
        jsonw_uint(w, "cut", t->native_counts.cut);
        jsonw_uint(w, "python_only", t->native_counts.python_only);
        jsonw_uint(w, "c_only", t->native_counts.c_only);
        jsonw_end(w);
    }
    if (t->idle_check[0]) {
        jsonw_string(w, "idle_check", t->idle_check);
        jsonw_bool(w, "parked", t->parked);
    }
    if (t->trace[0]) {
        jsonw_string(w, "trace_context", t->trace);
        jsonw_object(w, "trace_context_reads");
        jsonw_uint(w, "threads", t->trace_threads);
        jsonw_uint(w, "in_span", t->trace_spans);
        jsonw_uint(w, "torn", t->trace_torn);
        jsonw_uint(w, "unreadable", t->trace_faults);
        jsonw_end(w);
    }
    jsonw_double(w, "sample_rate_hz", t->rate, VIEWS_DIGITS);
    jsonw_double(w, "effective_rate_hz", t->effective_rate, VIEWS_DIGITS);
    jsonw_double(w, "profile_interval_seconds", t->interval_s, VIEWS_DIGITS);
    views_counts(w, t);
    jsonw_end(w);
}

/* /targets' "kubernetes" object: where pod metadata comes from, and how it goes. */
static void views_pods(struct jsonw *w, const struct podmeta_view *p)
{
    jsonw_object(w, "kubernetes");
    jsonw_string(w, "source", p->source);
    jsonw_string(w, "url", p->url);
    jsonw_string(w, "node", p->node);
    jsonw_bool(w, "running", p->running);
    if (p->problem[0])
        jsonw_string(w, "problem", p->problem);
    jsonw_bool(w, "synced", p->stats.synced);
    jsonw_uint(w, "pods", p->stats.index.pods);
    jsonw_uint(w, "containers", p->stats.index.containers);
    if (p->stats.last_error[0])
        jsonw_string(w, "last_error", p->stats.last_error);
    jsonw_end(w);
}

int views_targets_json(const struct loop_view *v, char **out, size_t *out_len)
{
    struct buf b;
    struct jsonw w;
    buf_init(&b, SIZE_MAX / 2); /* bounded by the snapshot: its processes and their labels */
    /* json-c's layout, which /targets always had; no page embeds it: '<' as it is */
    jsonw_init_buf(&w, &b, JSONW_PRETTY | JSONW_NOT_HTML);
    jsonw_object(&w, NULL);
    jsonw_array(&w, "targets");
    for (size_t i = 0; i < v->nprocs; i++)
        views_proc(&w, &v->procs[i], !v->show_sensitive_labels);
    jsonw_end(&w);
    jsonw_double(&w, "budget_factor", v->factor, VIEWS_DIGITS);
    if (v->pods.enabled)
        views_pods(&w, &v->pods);
    jsonw_end(&w);
    int err = jsonw_finish(&w);
    if (!err && !(*out = buf_take(&b, out_len)))
        err = -ENOMEM;
    buf_release(&b);
    return err;
}

/* ---- /metrics ------------------------------------------------------------------ */

/* The loop's counters per job: each a uint64_t of struct loop_job_view. */
static const struct {
    const char *name, *help;
    size_t off;
} views_counters[] = {
    {"pyprofd_samples_total", "Sampling attempts that produced a sample, by job.",
     offsetof(struct loop_job_view, counts.taken)},
    {"pyprofd_thread_samples_total",
     "Thread stacks added to profiles (one attempt samples every kept thread).",
     offsetof(struct loop_job_view, counts.thread_samples)},
    {"pyprofd_samples_failed_total",
     "Sampling attempts that failed (torn stack, read error, ...), by job.",
     offsetof(struct loop_job_view, counts.failed)},
    {"pyprofd_samples_missed_total",
     "Attempts due by the schedule that never ran because the sampler fell behind.",
     offsetof(struct loop_job_view, counts.missed)},
    {"pyprofd_samples_retried_total",
     "Attempts read a second time at once because the first read was torn.",
     offsetof(struct loop_job_view, counts.retried)},
    {"pyprofd_reads_saved_total",
     "Attempts made without reading the target: none of its threads had run since the last "
     "read (or, in cpu mode, none was on a CPU); counted as samples too.",
     offsetof(struct loop_job_view, counts.saved)},
    {"pyprofd_thread_samples_reused_total",
     "Thread stacks counted again from the last read because the thread had not run since "
     "(part of pyprofd_thread_samples_total).",
     offsetof(struct loop_job_view, counts.reused)},
    {"pyprofd_samples_skipped_total",
     "Attempts let pass on purpose to stay within limits.cpu_budget.",
     offsetof(struct loop_job_view, counts.skipped)},
    {"pyprofd_thread_stacks_dropped_total",
     "Thread stacks sampled but not kept: their window was full "
     "(limits.target_memory_bytes), counted when the window is cut.",
     offsetof(struct loop_job_view, stacks_dropped)},
    {"pyprofd_trace_context_spans_total",
     "Thread samples labelled with the OpenTelemetry trace and span their thread published.",
     offsetof(struct loop_job_view, trace_spans)},
    {"pyprofd_trace_context_torn_total",
     "Thread context records that changed while read: the sample is kept without a span.",
     offsetof(struct loop_job_view, trace_torn)},
    {"pyprofd_trace_context_unreadable_total",
     "Thread context pointers or records that could not be read (counted, not labelled).",
     offsetof(struct loop_job_view, trace_faults)},
    {"pyprofd_trace_context_spans_over_total",
     "Samples counted without their span because their window already held the most distinct "
     "span ids it keeps (1000).",
     offsetof(struct loop_job_view, spans_over)},
    {"pyprofd_native_fallbacks_total",
     "Targets of native: full jobs sampled with <native> markers instead, because perf events "
     "were refused (/targets says why).",
     offsetof(struct loop_job_view, native.fallbacks)},
    {"pyprofd_profiles_total", "Profile windows handed to the outputs, by job.",
     offsetof(struct loop_job_view, windows)},
    {"pyprofd_profiles_dropped_total",
     "Profile windows lost because the export queue or the window pool was full.",
     offsetof(struct loop_job_view, windows_dropped)},
};

static double views_field(const struct loop_job_view *j, size_t off)
{
    uint64_t v;
    memcpy(&v, (const char *)j + off, sizeof(v));
    return (double)v;
}

static int views_scalar(struct promtext *w, const char *name, enum promtext_type type,
                        const char *help, double value)
{
    int err = promtext_family(w, name, type, help);
    return err ? err : promtext_sample(w, NULL, NULL, 0, value);
}

/* New processes between full scans (discovery/proc_watch.h, daemon/loop_watch.c). */
static int views_watch_metrics(const struct loop_view *v, struct promtext *w)
{
    const struct proc_watch_stats *st = &v->watch_stats;
    int err = promtext_family(w, "pyprofd_discovery_watch_info", PROMTEXT_GAUGE,
                              "How new processes are found between full scans (discovery.watch): "
                              "netlink (the kernel's process events), poll (loadavg's last PID) "
                              "or off.");
    if (!err)
        err = promtext_sample(w, NULL,
                              PROMTEXT_LABELS({"source", proc_watch_source_name(st->source)}), 1);
    if (!err)
        err = promtext_family(w, "pyprofd_discovery_watch_events_total", PROMTEXT_COUNTER,
                              "New processes the watch was told of: exec and fork (netlink), "
                              "new_pid (poll).");
    static const char *const ev[] = {"exec", "fork", "new_pid"};
    const uint64_t n[] = {st->exec, st->fork, st->new_pid};
    for (size_t i = 0; !err && i < PYPROFD_ARRAY_SIZE(ev); i++)
        err = promtext_sample(w, NULL, PROMTEXT_LABELS({"event", ev[i]}), (double)n[i]);
    if (!err)
        err = views_scalar(w, "pyprofd_discovery_watch_threads_skipped_total", PROMTEXT_COUNTER,
                           "New threads the watch saw and skipped.", (double)st->threads);
    if (!err)
        err = views_scalar(w, "pyprofd_discovery_watch_wakeups_total", PROMTEXT_COUNTER,
                           "Wake-ups of the watch's thread.", (double)st->wakeups);
    if (!err)
        err = views_scalar(w, "pyprofd_discovery_watch_missed_total", PROMTEXT_COUNTER,
                           "Times new processes were lost (queue full, socket overrun): a full "
                           "scan followed.",
                           (double)st->missed);
    if (!err)
        err = views_scalar(w, "pyprofd_discovery_watch_malformed_total", PROMTEXT_COUNTER,
                           "Process event datagrams that did not parse.", (double)st->malformed);
    if (!err)
        err = views_scalar(w, "pyprofd_discovery_watch_looks_total", PROMTEXT_COUNTER,
                           "Processes read and judged between full scans.", (double)v->watch.looks);
    if (!err)
        err = views_scalar(w, "pyprofd_discovery_watch_again_total", PROMTEXT_COUNTER,
                           "Processes looked at again between scans (not Python yet while young, "
                           "or younger than min_process_age).",
                           (double)v->watch.again);
    if (!err)
        err = views_scalar(w, "pyprofd_discovery_exited_before_look_total", PROMTEXT_COUNTER,
                           "New processes that exited before their look.",
                           (double)v->watch.exited_before_look);
    if (!err)
        err = promtext_family(w, "pyprofd_target_start_delay_seconds", PROMTEXT_HISTOGRAM,
                              "From a process's start (the kernel's, to 10 ms) to its first "
                              "sample attempt, per target started.");
    if (!err && v->start_delay)
        err = promtext_histogram(w, NULL, 0, v->start_delay);
    return err;
}

/* discovery.kubernetes' families: only when it is enabled. */
static int views_pods_metrics(const struct podmeta_view *p, struct promtext *w)
{
    const struct kube_stats *s = &p->stats;
    int err = views_scalar(w, "pyprofd_kubernetes_up", PROMTEXT_GAUGE,
                           "1 when the pod metadata client runs and has listed the pods once.",
                           p->running && s->synced ? 1 : 0);
    if (!err)
        err = views_scalar(w, "pyprofd_kubernetes_pods", PROMTEXT_GAUGE,
                           "Pods of this node the agent knows.", (double)s->index.pods);
    if (!err)
        err = views_scalar(w, "pyprofd_kubernetes_containers", PROMTEXT_GAUGE,
                           "Container ids whose pod labels the agent knows.",
                           (double)s->index.containers);
    if (!err)
        err = promtext_family(w, "pyprofd_kubernetes_requests_total", PROMTEXT_COUNTER,
                              "Requests to the API server or kubelet, by outcome.");
    for (size_t o = 0; !err && o < KUBE_OUTCOME_COUNT; o++)
        err = promtext_sample(w, NULL,
                              PROMTEXT_LABELS({"outcome", kube_outcome_name((enum kube_outcome)o)}),
                              (double)s->requests[o]);
    if (!err)
        err = promtext_family(w, "pyprofd_kubernetes_watch_events_total", PROMTEXT_COUNTER,
                              "Pod watch events, by type.");
    for (size_t t = 0; !err && t <= KUBE_EVENT_UNKNOWN; t++)
        err = promtext_sample(
            w, NULL, PROMTEXT_LABELS({"type", kube_event_type_name((enum kube_event_type)t)}),
            (double)s->events[t]);
    if (!err)
        err = views_scalar(w, "pyprofd_kubernetes_relists_total", PROMTEXT_COUNTER,
                           "Pod lists after the first (a 410 Gone, an undecodable stream, a "
                           "full index).",
                           (double)s->relists);
    if (!err)
        err = views_scalar(w, "pyprofd_kubernetes_saturated_relists_total", PROMTEXT_COUNTER,
                           "Pod lists made because the index was full and a pod was refused "
                           "(at most one per 2 minutes).",
                           (double)s->saturated_relists);
    if (!err)
        err = views_scalar(w, "pyprofd_kubernetes_decode_errors_total", PROMTEXT_COUNTER,
                           "Responses or events that could not be decoded.",
                           (double)s->decode_errors);
    if (!err)
        err = promtext_family(w, "pyprofd_kubernetes_refused_total", PROMTEXT_COUNTER,
                              "What the server sent that the agent refused to keep, by reason.");
    for (size_t r = 0; !err && r < KUBE_REFUSED_COUNT; r++)
        err = promtext_sample(w, NULL,
                              PROMTEXT_LABELS({"reason", kube_refusal_name((enum kube_refusal)r)}),
                              (double)s->refused[r]);
    if (!err)
        err = views_scalar(w, "pyprofd_kubernetes_pods_invalid_total", PROMTEXT_COUNTER,
                           "Pod objects without a usable metadata.uid, ignored.",
                           (double)s->pods_invalid);
    if (!err)
        err = views_scalar(w, "pyprofd_kubernetes_retry_after_total", PROMTEXT_COUNTER,
                           "Waits that a server's Retry-After made longer than the backoff.",
                           (double)s->retry_after);
    if (!err)
        err = views_scalar(w, "pyprofd_kubernetes_error_bodies_cut_total", PROMTEXT_COUNTER,
                           "Error responses whose body was cut at 4 KiB and the connection closed.",
                           (double)s->error_bodies_cut);
    if (!err)
        err = views_scalar(w, "pyprofd_kubernetes_memory_bytes", PROMTEXT_GAUGE,
                           "Bytes the pod metadata client holds: its index and its decoders.",
                           (double)s->memory_bytes);
    return err;
}

int views_agent_metrics(const struct loop_view *v, struct promtext *w)
{
    int err = promtext_family(w, "pyprofd_discovered_processes", PROMTEXT_GAUGE,
                              "Processes the agent remembers, by state (active = sampled).");
    for (size_t s = 0; !err && s < PROC_STATES; s++) {
        if (s == PROC_NEW)
            continue;
        err = promtext_sample(w, NULL,
                              PROMTEXT_LABELS({"state", proc_state_name((enum proc_state)s)}),
                              (double)v->by_state[s]);
    }
    if (!err)
        err =
            promtext_family(w, "pyprofd_targets", PROMTEXT_GAUGE, "Targets being sampled, by job.");
    for (size_t k = 0; !err && k < v->njobs; k++)
        err = promtext_sample(w, NULL, PROMTEXT_LABELS({"job", v->jobs[k].name}),
                              (double)v->jobs[k].targets);
    for (size_t c = 0; !err && c < PYPROFD_ARRAY_SIZE(views_counters); c++) {
        err = promtext_family(w, views_counters[c].name, PROMTEXT_COUNTER, views_counters[c].help);
        for (size_t k = 0; !err && k < v->njobs; k++)
            err = promtext_sample(w, NULL, PROMTEXT_LABELS({"job", v->jobs[k].name}),
                                  views_field(&v->jobs[k], views_counters[c].off));
    }
    if (!err)
        err = promtext_family(w, "pyprofd_sample_errors_total", PROMTEXT_COUNTER,
                              "Failed sampling attempts by job and reason.");
    for (size_t k = 0; !err && k < v->njobs; k++) {
        for (size_t s = 1; !err && s < SAMPLE_STATUS_COUNT; s++)
            err = promtext_sample(w, NULL,
                                  PROMTEXT_LABELS({"job", v->jobs[k].name},
                                                  {"reason", status_name((enum sample_status)s)}),
                                  (double)v->jobs[k].counts.failed_by[s]);
    }
    if (!err)
        err = promtext_family(w, "pyprofd_native_samples_total", PROMTEXT_COUNTER,
                              "native: full: kernel samples kept, by job and how C and Python "
                              "frames came together (joined, cut at the stack copy, python_only, "
                              "c_only).");
    for (size_t k = 0; !err && k < v->njobs; k++) {
        const struct native_counts *n = &v->jobs[k].native;
        const struct {
            const char *name;
            uint64_t v;
        } out[] = {{"joined", n->joined},
                   {"cut", n->cut},
                   {"python_only", n->python_only},
                   {"c_only", n->c_only}};
        for (size_t o = 0; !err && o < PYPROFD_ARRAY_SIZE(out); o++)
            err = promtext_sample(
                w, NULL, PROMTEXT_LABELS({"job", v->jobs[k].name}, {"outcome", out[o].name}),
                (double)out[o].v);
    }
    if (!err)
        err = promtext_family(w, "pyprofd_native_library_files_total", PROMTEXT_COUNTER,
                              "native: full: the libraries' separate debug files (debug_used; "
                              "debug_refused: not a regular file the process could read, or of "
                              "another build; debug_stalled: a lookup given up on a filesystem "
                              "that did not answer) and libraries whose symbol tables were too "
                              "large to search (symbols_too_large), by job.");
    for (size_t k = 0; !err && k < v->njobs; k++) {
        const struct native_counts *n = &v->jobs[k].native;
        const struct {
            const char *name;
            uint64_t v;
        } out[] = {{"debug_used", n->debug_used},
                   {"debug_refused", n->debug_refused},
                   {"debug_stalled", n->debug_stalled},
                   {"symbols_too_large", n->huge_symtabs}};
        for (size_t o = 0; !err && o < PYPROFD_ARRAY_SIZE(out); o++)
            err = promtext_sample(
                w, NULL, PROMTEXT_LABELS({"job", v->jobs[k].name}, {"outcome", out[o].name}),
                (double)out[o].v);
    }
    if (!err)
        err = promtext_family(w, "pyprofd_stale_thread_ids_total", PROMTEXT_COUNTER,
                              "Thread samples whose thread state named a thread id that is none "
                              "of the target's threads (a fork without CPython's after-fork "
                              "hook), by job and how it was resolved (pthread: the TID in its "
                              "struct pthread; only_thread: the process's only thread; gone: a "
                              "thread that does not run in the process; unresolved: kept in cpu "
                              "mode without the per-thread CPU check).");
    for (size_t k = 0; !err && k < v->njobs; k++) {
        const struct sampler_counts *c = &v->jobs[k].counts;
        const struct {
            const char *name;
            uint64_t v;
        } out[] = {{"pthread", c->tid_pthread},
                   {"only_thread", c->tid_only_thread},
                   {"gone", c->tid_gone},
                   {"unresolved", c->tid_unresolved}};
        for (size_t o = 0; !err && o < PYPROFD_ARRAY_SIZE(out); o++)
            err = promtext_sample(
                w, NULL, PROMTEXT_LABELS({"job", v->jobs[k].name}, {"resolution", out[o].name}),
                (double)out[o].v);
    }
    if (!err)
        err = promtext_family(w, "pyprofd_idle_check_targets", PROMTEXT_GAUGE,
                              "Targets being sampled, by job and how an attempt finds that no "
                              "thread ran since the last read (perf, schedstat, off).");
    for (size_t k = 0; !err && k < v->njobs; k++) {
        for (int h = 0; !err && h < IDLE_CHECK_HOWS; h++)
            err = promtext_sample(w, NULL,
                                  PROMTEXT_LABELS({"job", v->jobs[k].name},
                                                  {"method", idle_check_name((enum idle_check)h)}),
                                  (double)v->jobs[k].idle_check[h]);
    }
    if (!err)
        err = promtext_family(w, "pyprofd_target_reattaches_total", PROMTEXT_COUNTER,
                              "Targets attached again from scratch, by job and reason (failing: "
                              "every attempt failed for a while; exec: another program).");
    for (size_t k = 0; !err && k < v->njobs; k++) {
        for (size_t r = 0; !err && r < TARGET_REATTACH_REASONS; r++)
            err = promtext_sample(
                w, NULL,
                PROMTEXT_LABELS({"job", v->jobs[k].name},
                                {"reason", target_reattach_name((enum target_reattach)r)}),
                (double)v->jobs[k].reattached[r]);
    }
    if (!err)
        err = views_scalar(w, "pyprofd_sampling_rate_factor", PROMTEXT_GAUGE,
                           "Share of each target's configured rate the CPU budget allows (1 = "
                           "all).",
                           v->factor);
    if (!err)
        err = views_scalar(w, "pyprofd_discovery_scans_total", PROMTEXT_COUNTER,
                           "Scans of the proc root.", (double)v->scans);
    if (!err)
        err = views_scalar(w, "pyprofd_discovery_scan_errors_total", PROMTEXT_COUNTER,
                           "Scans of the proc root that failed.", (double)v->scan_errors);
    if (!err)
        err = views_watch_metrics(v, w);
    if (!err)
        err = promtext_family(w, "pyprofd_otel_process_context_reads_total", PROMTEXT_COUNTER,
                              "Reads of processes' OpenTelemetry process context (OTEP 4719), "
                              "by outcome (absent: the process publishes none).");
    for (int f = OTEL_PROCESS_OK; !err && f < OTEL_PROCESS_FAILS; f++)
        err = promtext_sample(
            w, NULL, PROMTEXT_LABELS({"result", otel_process_fail_name((enum otel_process_fail)f)}),
            (double)v->context_reads[f]);
    if (!err)
        err = views_scalar(w, "pyprofd_utf8_replaced_total", PROMTEXT_COUNTER,
                           "Invalid UTF-8 sequences in text from outside (command lines, names, "
                           "paths) replaced by U+FFFD.",
                           (double)utf8_replaced_total());
    if (!err && v->pods.enabled)
        err = views_pods_metrics(&v->pods, w);
    return err;
}
