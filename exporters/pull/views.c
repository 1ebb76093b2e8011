/* SPDX-License-Identifier: MIT */
/*
 * views.c: /targets and the loop's /metrics families from a snapshot (see
 * views.h).
 */
#include "base/compat.h"

#include <stddef.h>

#include <json-c/json.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/utf8.h"
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

static json_object *views_labels(const struct labels *ls, bool hide)
{
    json_object *o = json_object_new_object();
    for (size_t i = 0; o && i < ls->n; i++) {
        const char *value = ls->v[i].value;
        if (hide && *value && views_label_sensitive(ls->v[i].name))
            value = "<hidden>";
        json_object_object_add(o, ls->v[i].name, json_object_new_string(value));
    }
    return o;
}

static json_object *views_counts(const struct loop_proc_view *t)
{
    json_object *c = json_object_new_object();
    if (!c)
        return NULL;
    json_object_object_add(c, "samples", json_object_new_uint64(t->counts.taken));
    json_object_object_add(c, "thread_samples", json_object_new_uint64(t->counts.thread_samples));
    json_object_object_add(c, "failed", json_object_new_uint64(t->counts.failed));
    json_object_object_add(c, "missed", json_object_new_uint64(t->counts.missed));
    json_object_object_add(c, "skipped", json_object_new_uint64(t->counts.skipped));
    json_object_object_add(c, "retried", json_object_new_uint64(t->counts.retried));
    json_object_object_add(c, "reads_saved", json_object_new_uint64(t->counts.saved));
    json_object_object_add(c, "thread_samples_reused", json_object_new_uint64(t->counts.reused));
    json_object_object_add(c, "thread_stacks_dropped", json_object_new_uint64(t->stacks_dropped));
    json_object *by = json_object_new_object();
    for (size_t k = 0; by && k < SAMPLE_STATUS_COUNT; k++) {
        if (t->counts.failed_by[k])
            json_object_object_add(by, status_name((enum sample_status)k),
                                   json_object_new_uint64(t->counts.failed_by[k]));
    }
    json_object_object_add(c, "failed_by_reason", by);
    json_object_object_add(c, "profiles", json_object_new_uint64(t->windows));
    json_object_object_add(c, "profiles_dropped", json_object_new_uint64(t->windows_dropped));
    return c;
}

static json_object *views_proc(const struct loop_proc_view *t, bool hide)
{
    json_object *o = json_object_new_object();
    if (!o)
        return NULL;
    json_object_object_add(o, "pid", json_object_new_int(t->pid));
    json_object_object_add(o, "comm", json_object_new_string(t->comm));
    if (t->nspid) /* the PID inside its own PID namespace (= pid without one) */
        json_object_object_add(o, "nspid", json_object_new_int(t->nspid));
    if (t->container_id[0])
        json_object_object_add(o, "container_id", json_object_new_string(t->container_id));
    json_object_object_add(o, "state", json_object_new_string(proc_state_name(t->state)));
    if (t->version[0]) {
        json_object_object_add(o, "python_version", json_object_new_string(t->version));
        json_object_object_add(o, "build",
                               json_object_new_string(t->free_threaded ? "free-threaded" : "gil"));
    }
    if (t->reason[0])
        json_object_object_add(o, "reason", json_object_new_string(t->reason));
    if (t->reattaches) {
        json_object_object_add(o, "reattaches", json_object_new_int64(t->reattaches));
        json_object_object_add(o, "last_reattach", json_object_new_string(t->reattach_why));
    }
    if (!t->target)
        return o;
    json_object_object_add(o, "job", json_object_new_string(t->job));
    json_object_object_add(o, "labels", views_labels(&t->labels, false));
    json_object_object_add(o, "discovered_labels", views_labels(&t->meta, hide));
    json_object_object_add(o, "mode", json_object_new_string(profile_mode_name(t->mode)));
    if (t->async[0])
        json_object_object_add(o, "async", json_object_new_string(t->async));
    if (t->native[0]) {
        json_object_object_add(o, "native", json_object_new_string(t->native));
        json_object *nc = json_object_new_object();
        if (nc) {
            json_object_object_add(nc, "joined", json_object_new_uint64(t->native_counts.joined));
            json_object_object_add(nc, "cut", json_object_new_uint64(t->native_counts.cut));
            json_object_object_add(nc, "python_only",
                                   json_object_new_uint64(t->native_counts.python_only));
            json_object_object_add(nc, "c_only", json_object_new_uint64(t->native_counts.c_only));
        }
        json_object_object_add(o, "native_samples", nc);
    }
    if (t->idle_check[0]) {
        json_object_object_add(o, "idle_check", json_object_new_string(t->idle_check));
        json_object_object_add(o, "parked", json_object_new_boolean(t->parked));
    }
    json_object_object_add(o, "sample_rate_hz", json_object_new_double(t->rate));
    json_object_object_add(o, "effective_rate_hz", json_object_new_double(t->effective_rate));
    json_object_object_add(o, "profile_interval_seconds", json_object_new_double(t->interval_s));
    json_object_object_add(o, "counts", views_counts(t));
    return o;
}

/* /targets' "kubernetes" object: where pod metadata comes from, and how it goes. */
static json_object *views_pods(const struct podmeta_view *p)
{
    json_object *o = json_object_new_object();
    if (!o)
        return NULL;
    json_object_object_add(o, "source", json_object_new_string(p->source));
    json_object_object_add(o, "url", json_object_new_string(p->url));
    json_object_object_add(o, "node", json_object_new_string(p->node));
    json_object_object_add(o, "running", json_object_new_boolean(p->running));
    if (p->problem[0])
        json_object_object_add(o, "problem", json_object_new_string(p->problem));
    json_object_object_add(o, "synced", json_object_new_boolean(p->stats.synced));
    json_object_object_add(o, "pods", json_object_new_uint64(p->stats.index.pods));
    json_object_object_add(o, "containers", json_object_new_uint64(p->stats.index.containers));
    if (p->stats.last_error[0])
        json_object_object_add(o, "last_error", json_object_new_string(p->stats.last_error));
    return o;
}

int views_targets_json(const struct loop_view *v, char **out, size_t *out_len)
{
    int err = 0;
    json_object *root = json_object_new_object();
    json_object *arr = json_object_new_array();
    if (!root || !arr)
        err = -ENOMEM;
    for (size_t i = 0; !err && i < v->nprocs; i++) {
        json_object *o = views_proc(&v->procs[i], !v->show_sensitive_labels);
        if (!o || json_object_array_add(arr, o)) {
            json_object_put(o);
            err = -ENOMEM;
        }
    }
    if (!err) {
        json_object_object_add(root, "targets", arr);
        arr = NULL;
        json_object_object_add(root, "budget_factor", json_object_new_double(v->factor));
        if (v->pods.enabled)
            json_object_object_add(root, "kubernetes", views_pods(&v->pods));
        size_t len = 0;
        const char *str = json_object_to_json_string_length(root, JSON_C_TO_STRING_PRETTY, &len);
        /*
         * json-c copies bytes above 0x7f as they are: the document is valid
         * UTF-8 only if every string was. They are (text is made valid where
         * it enters pyprofd); anything missed is written as U+FFFD here,
         * counted. Bytes above 0x7f are never JSON syntax, so this keeps the
         * document well-formed.
         */
        size_t need = str ? utf8_sanitized_len(str, len, NULL) : 0;
        *out = str ? alloc_malloc(need + 1) : NULL;
        if (*out) {
            *out_len = utf8_sanitize(*out, need + 1, str, len);
        } else {
            err = -ENOMEM;
        }
    }
    json_object_put(arr);
    json_object_put(root);
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
        err = views_scalar(w, "pyprofd_utf8_replaced_total", PROMTEXT_COUNTER,
                           "Invalid UTF-8 sequences in text from outside (command lines, names, "
                           "paths) replaced by U+FFFD.",
                           (double)utf8_replaced_total());
    if (!err && v->pods.enabled)
        err = views_pods_metrics(&v->pods, w);
    return err;
}
