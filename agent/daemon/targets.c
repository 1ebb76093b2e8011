/* SPDX-License-Identifier: MIT */
/*
 * targets.c: the process table and the verdict on each process (see
 * targets.h).
 */
#include "base/compat.h"

#include <stdatomic.h>

#include "base/alloc.h"
#include "base/hash.h"
#include "base/utf8.h"
#include "config/relabel.h"
#include "discovery/privileges.h"
#include "python/pyversion.h"
#include "daemon/targets.h"

struct proc_table {
    struct proc_entry *v;
    size_t n, cap;
    uint32_t *index; /* v index + 1 by key hash, open addressing; 0: empty */
    size_t mask;
};

static const char *const proc_state_names[PROC_STATES] = {
    [PROC_NEW] = "new",
    [PROC_YOUNG] = "young",
    [PROC_ACTIVE] = "active",
    [PROC_NOT_PYTHON] = "not_python",
    [PROC_UNSUPPORTED] = "unsupported",
    [PROC_UNREADABLE] = "unreadable",
    [PROC_DROPPED] = "dropped",
    [PROC_FAILED] = "failed",
    [PROC_OVER_LIMIT] = "over_limit",
};

const char *proc_state_name(enum proc_state s)
{
    return (unsigned)s < PROC_STATES ? proc_state_names[s] : "?";
}

bool proc_state_listed(enum proc_state s)
{
    return s != PROC_NOT_PYTHON && s != PROC_NEW;
}

/* ---- the table ---------------------------------------------------------- */

static uint64_t proc_table_hash(const struct proc_key *k)
{
    return hash_combine((uint64_t)(uint32_t)k->pid * HASH_GOLDEN, k->start_ticks);
}

static void proc_table_put(struct proc_table *t, size_t i)
{
    size_t s = (size_t)proc_table_hash(&t->v[i].key) & t->mask;
    while (t->index[s])
        s = (s + 1) & t->mask;
    t->index[s] = (uint32_t)(i + 1);
}

static void proc_table_reindex(struct proc_table *t)
{
    memset(t->index, 0, (t->mask + 1) * sizeof(*t->index));
    for (size_t i = 0; i < t->n; i++)
        proc_table_put(t, i);
}

int proc_table_new(size_t cap, struct proc_table **out)
{
    if (cap == 0)
        cap = TARGETS_MAX_PROCS;
    struct proc_table *t = alloc_calloc(1, sizeof(*t));
    if (!t)
        return -ENOMEM;
    size_t slots = 1;
    while (slots < 2 * cap)
        slots <<= 1; /* at most half full: short probes */
    t->cap = cap;
    t->mask = slots - 1;
    t->v = alloc_calloc(cap, sizeof(*t->v));
    t->index = alloc_calloc(slots, sizeof(*t->index));
    if (!t->v || !t->index) {
        proc_table_free(t);
        return -ENOMEM;
    }
    *out = t;
    return 0;
}

void proc_table_free(struct proc_table *t)
{
    if (!t)
        return;
    alloc_free(t->v);
    alloc_free(t->index);
    alloc_free(t);
}

struct proc_entry *proc_table_find(struct proc_table *t, const struct proc_key *key)
{
    size_t s = (size_t)proc_table_hash(key) & t->mask;
    while (t->index[s]) {
        struct proc_entry *p = &t->v[t->index[s] - 1];
        if (proc_key_equal(&p->key, key))
            return p;
        s = (s + 1) & t->mask;
    }
    return NULL;
}

/* Forgets the newest entry known not to be Python; false when there is none. */
static bool proc_table_evict(struct proc_table *t)
{
    for (size_t i = t->n; i-- > 0;) {
        if (t->v[i].state == PROC_NOT_PYTHON && !t->v[i].target) {
            t->v[i] = t->v[--t->n];
            proc_table_reindex(t);
            return true;
        }
    }
    return false;
}

struct proc_entry *proc_table_add(struct proc_table *t, const struct proc_key *key)
{
    if (t->n == t->cap && !proc_table_evict(t))
        return NULL;
    struct proc_entry *p = &t->v[t->n];
    *p = (struct proc_entry){.key = *key, .state = PROC_NEW, .seen = true};
    proc_table_put(t, t->n++);
    return p;
}

size_t proc_table_count(const struct proc_table *t)
{
    return t->n;
}

struct proc_entry *proc_table_at(struct proc_table *t, size_t i)
{
    PYPROFD_ASSERT(i < t->n);
    return &t->v[i];
}

void proc_table_mark(struct proc_table *t, bool seen)
{
    for (size_t i = 0; i < t->n; i++)
        t->v[i].seen = seen;
}

void proc_table_sweep(struct proc_table *t, void (*gone)(struct proc_entry *p, void *arg),
                      void *arg)
{
    size_t w = 0;
    for (size_t i = 0; i < t->n; i++) {
        struct proc_entry *p = &t->v[i];
        if (!p->seen) {
            if (p->target && gone)
                gone(p, arg);
            continue;
        }
        if (w != i)
            t->v[w] = *p;
        w++;
    }
    t->n = w;
    proc_table_reindex(t);
}

void proc_entry_activate(struct proc_entry *p, void *target)
{
    p->state = PROC_ACTIVE;
    p->target = target;
}

void proc_entry_fail(struct proc_entry *p, const char *reason, uint64_t recheck)
{
    p->target = NULL;
    p->state = PROC_FAILED;
    p->recheck_ns = recheck;
    if (!p->reason[0] && reason)
        (void)utf8_sanitize(p->reason, sizeof(p->reason), reason, strlen(reason));
}

void proc_entry_requeue(struct proc_entry *p)
{
    p->target = NULL;
    p->state = PROC_NEW;
    p->seen = true; /* gone meanwhile: the next scan drops it; if not, looks again */
    p->recheck_ns = 0;
}

void proc_entry_reattach(struct proc_entry *p, const char *why, uint64_t stuck_ns)
{
    proc_entry_requeue(p);
    p->reattaches++;
    snprintf(p->reattach_why, sizeof(p->reattach_why), "%s", why);
    p->stuck_ns = stuck_ns;
}

void proc_entry_relabelled(struct proc_entry *p, uint64_t pod_rev)
{
    p->pod_rev = pod_rev;
}

void proc_entry_lost(struct proc_entry *p)
{
    p->seen = false;
}

void proc_table_forget_verdicts(struct proc_table *t)
{
    for (size_t i = 0; i < t->n; i++) {
        struct proc_entry *p = &t->v[i];
        p->target = NULL;
        if (p->state == PROC_ACTIVE || p->state == PROC_DROPPED || p->state == PROC_OVER_LIMIT ||
            p->state == PROC_FAILED || p->state == PROC_YOUNG) {
            p->state = PROC_NEW;
            p->recheck_ns = 0;
        }
    }
}

/* ---- the verdict -------------------------------------------------------- */

static int probe_system_open(void *arg, pid_t pid, struct memread **out)
{
    (void)arg;
    return memread_open(pid, MEMREAD_AUTO, out);
}

static int probe_system_locate(void *arg, const char *proc_root, pid_t pid, struct memread *mr,
                               struct pyruntime *out, char *why, size_t why_len)
{
    (void)arg;
    return pyruntime_locate(proc_root, pid, mr, out, why, why_len);
}

static enum otel_process_fail probe_system_context(void *arg, const char *proc_root, pid_t pid,
                                                   struct memread *mr, struct otel_process *out,
                                                   bool *gone)
{
    (void)arg;
    return otel_process_locate(proc_root, pid, mr, out, gone);
}

const struct probe_ops probe_system = {
    .open = probe_system_open,
    .locate = probe_system_locate,
    .context = probe_system_context,
    .arg = NULL,
};

/* written by the loop's thread, read by /metrics' */
static _Atomic uint64_t targets_context_counts[OTEL_PROCESS_FAILS];

uint64_t targets_context_reads(enum otel_process_fail f)
{
    return (unsigned)f < OTEL_PROCESS_FAILS
               ? atomic_load_explicit(&targets_context_counts[f], memory_order_relaxed)
               : 0;
}

void targets_context_count(enum otel_process_fail f)
{
    if ((unsigned)f < OTEL_PROCESS_FAILS)
        atomic_fetch_add_explicit(&targets_context_counts[f], 1, memory_order_relaxed);
}

/*
 * The OpenTelemetry process context, where the process publishes one: its
 * resource's attributes as __meta_otel_resource_* labels (service.name among
 * them, which relabel_default_service_name() prefers to the command line),
 * and where the header is, which the target checks for changes. No context,
 * or one that cannot be read, is no reason not to sample: counted only.
 */
static int proc_judge_context(const struct probe_ops *probe, const char *proc_root, pid_t pid,
                              struct verdict *v)
{
    if (!probe->context)
        return 0;
    struct otel_process pc;
    bool gone = false;
    enum otel_process_fail f = probe->context(probe->arg, proc_root, pid, v->mr, &pc, &gone);
    targets_context_count(f);
    if (f != OTEL_PROCESS_OK)
        return 0;
    int err = otel_process_meta_labels(&pc, &v->meta);
    v->otel_header = pc.header_raddr;
    v->otel_published = pc.published_ns;
    v->otel_thread = pc.schema != NULL;
    otel_process_release(&pc);
    return err;
}

void verdict_release(struct verdict *v)
{
    labels_release(&v->meta);
    labels_release(&v->labels);
    memread_free(v->mr);
    alloc_free(v->rt);
    memset(v, 0, sizeof(*v));
}

int targets_job_labels(const struct pyprofd_config *cfg, const struct config_job *job,
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

static void proc_set(struct proc_entry *p, enum proc_state state, uint64_t recheck,
                     const char *reason)
{
    p->state = state;
    p->recheck_ns = recheck;
    /* a reason may quote what a process maps (a path): valid UTF-8, cut on a boundary */
    reason = reason ? reason : "";
    (void)utf8_sanitize(p->reason, sizeof(p->reason), reason, strlen(reason));
}

void proc_judge(const struct pyprofd_config *cfg, const struct probe_ops *probe,
                const struct pod_source *pods, struct proc_entry *p, const struct proc_info *info,
                uint64_t now, size_t ntargets, size_t max_targets, struct verdict *v)
{
    enum proc_state before = p->state;
    uint64_t rare = now + TARGETS_RECHECK_RARE * cfg->discovery.refresh_interval_ns;
    char why[256] = "", msg[320];
    bool say = false; /* log the reason even for a state that is usually quiet */
    *v = (struct verdict){0};
    const char *comm = info->comm ? info->comm : "";
    (void)utf8_sanitize(p->comm, sizeof(p->comm), comm, strlen(comm)); /* cut on a boundary */
    snprintf(p->container_id, sizeof(p->container_id), "%s",
             info->container_id ? info->container_id : "");
    p->nspid = info->nspid;
    p->image = info->start_stack;
    p->pod_rev = 0;
    proc_set(p, p->state, now, NULL); /* by default: look again at the next scan */
    if (info->age_ns >= 0 && (uint64_t)info->age_ns < cfg->discovery.min_process_age_ns) {
        p->state = PROC_YOUNG;
        v->state = PROC_YOUNG;
        return;
    }
    int err = probe->open(probe->arg, info->key.pid, &v->mr);
    if (err == -ESRCH) {
        v->gone = true;
        return;
    }
    if (err) {
        char text[256];
        if (err == -EPERM || err == -EACCES) {
            struct privileges_facts f; /* what refused it, as far as the agent can tell */
            privileges_facts_read("/proc", &f);
            privileges_refusal(&f, err, text, sizeof(text));
        } else {
            snprintf(text, sizeof(text), "%s", strerror(-err));
        }
        snprintf(msg, sizeof(msg), "cannot read its memory: %s", text);
        proc_set(p, PROC_UNREADABLE, rare, msg);
        goto out;
    }
    v->rt = alloc_calloc(1, sizeof(*v->rt));
    if (!v->rt) {
        proc_set(p, PROC_FAILED, now, "out of memory");
        goto out;
    }
    err = probe->locate(probe->arg, cfg->discovery.proc_root, info->key.pid, v->mr, v->rt, why,
                        sizeof(why));
    if (err == -ESRCH) {
        v->gone = true;
        goto out;
    }
    if (err == -ENOENT) {
        if (v->rt->name_minor && v->rt->name_minor < PYVERSION_MIN_MINOR) {
            snprintf(p->version, sizeof(p->version), "3.%u", v->rt->name_minor);
            snprintf(msg, sizeof(msg),
                     "Python 3.%u is not supported: pyprofd reads CPython " PYVERSION_SUPPORTED,
                     v->rt->name_minor);
            proc_set(p, PROC_UNSUPPORTED, rare, msg);
        } else if (v->rt->name_minor && v->rt->name_minor < PYVERSION_TABLE_MINOR) {
            /* those before the table are read by their symbols: this file has none */
            snprintf(p->version, sizeof(p->version), "3.%u", v->rt->name_minor);
            snprintf(msg, sizeof(msg),
                     "Python 3.%u has no debug offsets table, and its file no _PyRuntime "
                     "symbol (stripped?)",
                     v->rt->name_minor);
            proc_set(p, PROC_UNSUPPORTED, rare, msg);
        } else if (v->rt->miss == PYRUNTIME_MISS_UNREADABLE) {
            /* python files it maps that we may not open: listed, with why */
            proc_set(p, PROC_UNREADABLE, rare, why);
        } else {
            /* a young process may not have set its runtime up yet */
            bool young = info->age_ns >= 0 && info->age_ns < TARGETS_YOUNG_NS;
            proc_set(p, PROC_NOT_PYTHON,
                     young ? now : now + TARGETS_RECHECK_OFTEN * cfg->discovery.refresh_interval_ns,
                     why);
        }
        goto out;
    }
    if (err) {
        snprintf(msg, sizeof(msg), "cannot find its runtime: %s", why);
        proc_set(p, PROC_UNREADABLE, rare, msg);
        goto out;
    }
    pyversion_format(&v->rt->version, p->version, sizeof(p->version));
    p->free_threaded = v->rt->version.free_threaded;
    if (pyversion_check_supported(&v->rt->version, why, sizeof(why))) {
        proc_set(p, PROC_UNSUPPORTED, rare, why);
        goto out;
    }
    if (proc_scan_meta_labels(info, &v->meta) ||
        labels_set(&v->meta, "__meta_python_version", p->version) ||
        labels_set(&v->meta, "__meta_python_free_threaded", p->free_threaded ? "true" : "false") ||
        (pods && p->container_id[0] &&
         pods->lookup(pods->arg, p->container_id, &v->meta, &p->pod_rev) < 0) ||
        proc_judge_context(probe, cfg->discovery.proc_root, info->key.pid, v)) {
        proc_set(p, PROC_FAILED, now, "out of memory");
        goto out;
    }
    bool keep = false;
    size_t j = 0;
    for (; j < cfg->njobs && !keep; j++) {
        labels_release(&v->labels);
        if (targets_job_labels(cfg, &cfg->jobs[j], &v->meta, &v->labels, &keep)) {
            proc_set(p, PROC_FAILED, now, "out of memory");
            goto out;
        }
    }
    if (!keep) {
        proc_set(p, PROC_DROPPED, UINT64_MAX, "no job's relabel_configs kept it");
        goto out;
    }
    /* limits.max_labels_per_profile: see relabel_check_limit() (config/relabel.h) */
    if (relabel_check_limit(&v->labels, cfg->global.limits.max_labels_per_profile, msg,
                            sizeof(msg))) {
        proc_set(p, PROC_OVER_LIMIT, UINT64_MAX, msg); /* until the config changes */
        say = true;
        goto out;
    }
    if (ntargets >= max_targets) {
        snprintf(msg, sizeof(msg), "limits.max_targets (%zu) reached", max_targets);
        proc_set(p, PROC_OVER_LIMIT, now, msg);
        goto out;
    }
    p->state = PROC_ACTIVE;
    v->state = PROC_ACTIVE;
    v->job = j - 1;
    return; /* the caller owns meta, labels, mr and rt now */
out:
    /* said once, when a process comes to be in the state (rechecks are quiet) */
    v->log = (say || p->state == PROC_UNSUPPORTED || p->state == PROC_UNREADABLE) &&
             p->state != before && p->reason[0];
    v->state = p->state;
    bool log = v->log, gone = v->gone;
    verdict_release(v);
    v->state = p->state;
    v->log = log;
    v->gone = gone;
}
