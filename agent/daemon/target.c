/* SPDX-License-Identifier: MIT */
/*
 * target.c: one sampled process: attach, window cuts, staleness (see
 * target.h).
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "sampler/nsampler.h"
#include "daemon/target_internal.h"
#include "unwind/asyncio.h"
#include "unwind/otel_thread.h"
#include "unwind/unwind.h"

static const char *const target_reattach_names[TARGET_REATTACH_REASONS] = {"failing", "exec"};

const char *target_reattach_name(enum target_reattach r)
{
    return (unsigned)r < TARGET_REATTACH_REASONS ? target_reattach_names[r] : "?";
}

static void target_async_search(struct target *t, const char *proc_root, uint64_t now);
static void target_trace_search(struct target *t, const char *proc_root, uint64_t now);

/* the OpenTelemetry contexts' looks (target_trace_search()) */
#define TARGET_OTEL_CHECK_NS       1000000000ull
#define TARGET_OTEL_MAX_BACKOFF_NS 60000000000ull

void target_free(struct target *t, struct window_queue *q)
{
    if (!t)
        return;
    sampler_free(t->s);
    otel_thread_free(t->tctx);
    otel_sdk_free(t->sdk);
    asyncio_free(t->aio); /* before its unwinder */
    unwinder_free(t->u);
    memread_free(t->mr);
    alloc_free(t->rt);
    window_recycle(q, t->win);
    labels_release(&t->info.meta);
    labels_release(&t->info.labels);
    alloc_free(t);
}

int target_start(const struct target_env *env, struct proc_entry *p, struct verdict *v,
                 uint64_t now, int64_t now_real, struct target **out)
{
    const struct config_job *job = &env->cfg->jobs[v->job];
    struct target *t = alloc_calloc(1, sizeof(*t));
    if (!t)
        return -ENOMEM;
    t->info.key = p->key;
    t->info.job = v->job;
    snprintf(t->info.job_name, sizeof(t->info.job_name), "%s", job->job_name);
    snprintf(t->version, sizeof(t->version), "%s", p->version);
    t->info.mode = job->mode;
    t->info.rate = job->sample_rate;
    t->info.interval_ns = (uint64_t)(1e9 / job->sample_rate);
    if (t->info.interval_ns == 0)
        t->info.interval_ns = 1;
    t->info.window_ns = job->profile_interval_ns;
    char why[256] = "";
    int err = unwinder_new_shared(v->mr, v->rt, env->scratch, &t->u, why, sizeof(why));
    if (err) {
        snprintf(p->reason, sizeof(p->reason), "cannot read the runtime: %s", why);
        goto fail;
    }
    if (job->async_aware) {
        /* suspended tasks use no CPU, hold no GIL, handle no exception:
         * "all" counts them only in wall mode (/targets says so otherwise) */
        t->async_all = job->async_mode == CONFIG_ASYNC_ALL;
        bool all = t->async_all && job->mode == PROFILE_WALL;
        err = asyncio_new(t->u, v->mr, v->rt, all ? ASYNCIO_ALL : ASYNCIO_RUNNING, &t->aio, why,
                          sizeof(why));
        if (err == -ENOTSUP) { /* 3.13: plain stacks, said in /targets */
            snprintf(t->async_note, sizeof(t->async_note), "unavailable: %s", why);
        } else if (err) {
            snprintf(p->reason, sizeof(p->reason), "cannot follow asyncio: %s", why);
            goto fail;
        }
    }
    err = window_get(env->queue, &t->win);
    if (err) {
        snprintf(p->reason, sizeof(p->reason), "no aggregation window left (memory cap)");
        goto fail;
    }
    /* phases spread by the golden ratio over one sampling interval */
    double frac = (double)(env->phase_seq % 1000) * 0.6180339887498949;
    frac -= (double)(uint64_t)frac;
    struct sampler_opts so = {
        .mode = job->mode,
        .interval_ns = t->info.interval_ns,
        .unwind_flags = (job->all_threads ? UNWIND_ALL_THREADS : 0u) |
                        (job->native == CONFIG_NATIVE_TRUE || job->native == CONFIG_NATIVE_MARKERS
                             ? UNWIND_NATIVE
                             : 0u) |
                        (job->gc ? 0u : UNWIND_NO_GC) | (job->opcodes ? UNWIND_OPCODES : 0u),
        .async = t->aio,
        .proc_root = env->cfg->discovery.proc_root,
        /* (the config refuses full with another mode or async_aware) */
        .native_full = job->native == CONFIG_NATIVE_FULL && job->mode == PROFILE_CPU && !t->aio,
        .idle_check = job->idle_check,
    };
    struct sample_sink window = agg_sink(t->win);
    err = sampler_new(p->key.pid, t->u, &window, &so,
                      now + (uint64_t)(frac * (double)t->info.interval_ns), &t->s);
    if (err) {
        snprintf(p->reason, sizeof(p->reason), "cannot sample: %s", strerror(-err));
        goto fail;
    }
    const char *native = sampler_native(t->s);
    if (native) {
        snprintf(t->stats.native, sizeof(t->stats.native), "%s", native);
        t->stats.native_counts.fallbacks = strcmp(native, "full") != 0;
    }
    t->win_start = now;
    t->win_start_real = now_real;
    /* without it (no usable auxiliary vector) an exec is noticed only once
     * every attempt fails */
    if (execid_read(env->cfg->discovery.proc_root, p->key.pid, v->mr, &t->exec))
        memset(&t->exec, 0, sizeof(t->exec));
    t->exec_checked = now;
    t->stuck_ns = p->stuck_ns ? p->stuck_ns : TARGET_STUCK_NS;
    /* everything the verdict held is the target's now */
    t->mr = v->mr;
    t->rt = v->rt;
    t->info.meta = v->meta;
    t->info.labels = v->labels;
    t->trace_on = job->trace_context;
    t->otel_header = v->otel_header;
    t->otel_published = v->otel_published;
    t->otel_thread = v->otel_thread;
    t->otel_at = now + TARGET_OTEL_CHECK_NS; /* the verdict has just looked */
    if (t->trace_on) {
        err = otel_sdk_new(t->mr, t->rt->version.minor, t->rt->version.free_threaded, NULL, &t->sdk,
                           t->sdk_note, sizeof(t->sdk_note));
        if (!err && (err = sampler_set_sdk_context(t->s, t->sdk)) != 0) {
            snprintf(t->sdk_note, sizeof(t->sdk_note), "cannot read it: %s", strerror(-err));
            otel_sdk_free(t->sdk);
            t->sdk = NULL;
        }
    }
    memset(v, 0, sizeof(*v));
    /* a table already mapped is found at attach */
    target_async_search(t, env->cfg->discovery.proc_root, now);
    target_trace_search(t, env->cfg->discovery.proc_root, now);
    *out = t;
    return 0;
fail:
    /* the verdict keeps its reader, runtime and labels */
    t->mr = NULL;
    t->rt = NULL;
    target_free(t, env->queue);
    return err ? err : -EINVAL;
}

int target_cut(struct target *t, struct window_queue *q, uint64_t now, int64_t now_real, bool final)
{
    if (t->s) /* a parked target's attempts belong to this window */
        sampler_catch_up(t->s, now);
    struct agg *fresh = NULL;
    t->stats.stacks_dropped += agg_stats(t->win).dropped;
    t->stats.spans_over += agg_stats(t->win).spans_over;
    if (!final && window_get(q, &fresh)) {
        /* no window to switch to: keep the one we have, losing its content */
        agg_reset(t->win);
        if (t->s) { /* the threads' last stacks are gone with it */
            struct sample_sink window = agg_sink(t->win);
            sampler_set_window(t->s, &window);
        }
        t->stats.windows_dropped++;
        t->win_start = now;
        t->win_start_real = now_real;
        return 1;
    }
    struct window_item item = {
        .agg = t->win,
        .meta =
            {
                .pid = t->info.key.pid,
                .mode = t->info.mode,
                .period_ns = (int64_t)t->info.interval_ns,
                .time_nanos = t->win_start_real,
                .duration_nanos = (int64_t)(now - t->win_start),
                .final = final,
            },
    };
    snprintf(item.meta.job, sizeof(item.meta.job), "%s", t->info.job_name);
    bool empty = agg_sample_count(t->win) == 0;
    int err = empty ? -ENODATA : labels_copy(&item.meta.labels, &t->info.labels);
    if (!err)
        err = window_push(q, &item);
    int dropped = 0;
    if (err) {
        if (err != -ENODATA) {
            t->stats.windows_dropped++;
            dropped = 1;
        }
        labels_release(&item.meta.labels);
        window_recycle(q, t->win);
    } else {
        t->stats.windows++;
    }
    t->win = fresh;
    if (t->s && fresh) {
        struct sample_sink window = agg_sink(fresh);
        sampler_set_window(t->s, &window);
    }
    t->win_start = now;
    t->win_start_real = now_real;
    return dropped;
}

bool target_relabel(struct target *t, struct window_queue *q, struct labels *meta,
                    struct labels *labels, uint64_t now, int64_t now_real)
{
    labels_release(&t->info.meta);
    t->info.meta = *meta;
    labels_init(meta);
    bool changed = !labels_equal(labels, &t->info.labels);
    if (changed) {
        (void)target_cut(t, q, now, now_real, false); /* with the labels it had */
        labels_release(&t->info.labels);
        t->info.labels = *labels;
        labels_init(labels);
    } else {
        labels_release(labels);
    }
    return changed;
}

/*
 * Whether @t must be attached again, and why (*@why); uses its counts
 * snapshot. Sets t->gone when the process is found gone.
 */
static bool target_stale(struct target *t, const char *proc_root, uint64_t now,
                         enum target_reattach *why)
{
    const struct sampler_counts *c = &t->stats.counts;
    if (c->taken != t->seen_taken) {
        t->seen_taken = c->taken;
        t->failing_attempts = c->attempts;
        t->failing_since = 0;
        t->stuck_ns = TARGET_STUCK_NS; /* it works again: a new spell starts over */
    } else if (c->attempts != t->failing_attempts && t->failing_since == 0) {
        t->failing_since = now;
    }
    if (now - t->exec_checked >= TARGET_EXEC_CHECK_NS) {
        t->exec_checked = now;
        if (t->exec.random_raddr == 0 && t->exec_retries < TARGET_EXEC_RETRIES) {
            /* not known at attach (caught in the middle of an exec?): again */
            t->exec_retries++;
            if (execid_read(proc_root, t->info.key.pid, t->mr, &t->exec))
                memset(&t->exec, 0, sizeof(t->exec));
        }
        bool same = true;
        int err = execid_check(t->mr, &t->exec, &same);
        if (err == -ESRCH) {
            t->gone = true;
            return false;
        }
        if (err || !same) {
            *why = TARGET_EXEC; /* (or it can no longer be read: a set-user-ID program) */
            return true;
        }
    }
    if (t->failing_since && now - t->failing_since >= t->stuck_ns &&
        c->attempts - t->failing_attempts >= TARGET_STUCK_MIN_ATTEMPTS) {
        *why = TARGET_FAILING;
        return true;
    }
    return false;
}

/*
 * An async-aware target whose asyncio table has not been found: looks for it
 * (discovery's work, done in housekeeping, never in a sampling attempt) at
 * most every ASYNCIO_RESCAN_NS, and hands it to the walker.
 */
static void target_async_search(struct target *t, const char *proc_root, uint64_t now)
{
    if (!t->aio || asyncio_state(t->aio) != ASYNCIO_SEARCHING || now < t->aio_search_at)
        return;
    t->aio_search_at = now + ASYNCIO_RESCAN_NS;
    asyncio_search(t->aio, proc_root, t->info.key.pid, t->rt, &t->aio_memo); /* /targets says */
}

/*
 * The OpenTelemetry contexts of a trace_context job's target, looked for
 * between samples (never in an attempt). The process context: a process that
 * had none when judged is looked at again (its maps) after 1 s, then at
 * doubling intervals up to TARGET_OTEL_MAX_BACKOFF_NS (an SDK publishes when
 * it starts, after the interpreter); one that had one is checked every
 * second by its header's timestamp alone (8 bytes), and a change makes the
 * loop relabel the target (target_context_meta()). The thread context, once
 * the process context announces it: its variable is looked for in the files
 * the process maps at the same backoff, and found, read with every sample.
 */

static uint64_t target_backoff(uint64_t *b)
{
    *b = *b ? (*b * 2 < TARGET_OTEL_MAX_BACKOFF_NS ? *b * 2 : TARGET_OTEL_MAX_BACKOFF_NS)
            : TARGET_OTEL_CHECK_NS;
    return *b;
}

static void target_trace_search(struct target *t, const char *proc_root, uint64_t now)
{
    if (!t->trace_on) {
        t->stats.trace[0] = '\0';
        return;
    }
    if (now >= t->otel_at) {
        if (t->otel_header) {
            t->otel_at = now + TARGET_OTEL_CHECK_NS;
            if (otel_process_changed(t->mr, t->otel_header, t->otel_published) != 0)
                t->otel_changed = true; /* changed, or unmapped: read again */
        } else {
            t->otel_at = now + target_backoff(&t->otel_backoff);
            struct otel_process pc;
            bool gone = false;
            enum otel_process_fail f =
                otel_process_locate(proc_root, t->info.key.pid, t->mr, &pc, &gone);
            if (f != OTEL_PROCESS_ABSENT)
                targets_context_count(f);
            if (f == OTEL_PROCESS_OK) {
                t->otel_changed = true; /* its labels, read again by target_context_meta() */
                t->otel_thread = pc.schema != NULL;
            }
            otel_process_release(&pc);
        }
    }
    if (!t->tctx && t->otel_thread && now >= t->tctx_at) {
        t->tctx_at = now + target_backoff(&t->tctx_backoff);
        struct otel_thread_locator loc;
        char why[300];
        int err = otel_thread_find(proc_root, t->info.key.pid, t->mr, &t->tctx_memo, &loc, why,
                                   sizeof(why));
        if (!err)
            err = otel_thread_new(t->mr, &loc, &t->tctx);
        if (!err && (err = sampler_set_trace_context(t->s, t->tctx)) != 0) {
            otel_thread_free(t->tctx);
            t->tctx = NULL;
        }
        if (err == -ENOMEM)
            snprintf(why, sizeof(why), "out of memory");
        if (err == -ENOENT)
            snprintf(t->stats.trace, sizeof(t->stats.trace),
                     "waiting: the process context announces a thread context, no library "
                     "defines " OTEL_THREAD_SYMBOL " yet");
        else if (err)
            snprintf(t->stats.trace, sizeof(t->stats.trace), "unavailable: %s", why);
    }
    struct otel_thread_stats c = {0};
    if (t->tctx) {
        const struct otel_thread_locator *l = otel_thread_locator_of(t->tctx);
        snprintf(t->stats.trace, sizeof(t->stats.trace), "%s in %s",
                 otel_thread_model_name(l->model), l->file);
        c = otel_thread_stats(t->tctx);
    } else if (!t->otel_thread) {
        snprintf(t->stats.trace, sizeof(t->stats.trace), "%s",
                 t->otel_header ? "none: the process context announces no thread context"
                                : "none: no process context published");
    }
    /* the SDK's context, where the published one is silent (the counts add
     * up: a thread the published context labels is not looked at again) */
    size_t n = strlen(t->stats.trace);
    char *at = t->stats.trace + n;
    size_t room = sizeof(t->stats.trace) - n;
    if (t->sdk) {
        struct otel_sdk_stats k = otel_sdk_stats(t->sdk);
        enum otel_sdk_state st = otel_sdk_state(t->sdk);
        snprintf(at, room, "; sdk: %s",
                 st == OTEL_SDK_ACTIVE      ? "the OpenTelemetry SDK's current span"
                 : st == OTEL_SDK_SEARCHING ? "searching (no thread has set the SDK's context yet)"
                                            : otel_sdk_why(t->sdk));
        c.spans += k.spans;
        c.torn += k.torn;
        c.faults += k.faults;
        c.threads = t->tctx ? c.threads : k.threads;
        c.none += k.none;
    } else {
        snprintf(at, room, "; sdk: unavailable: %s", t->sdk_note);
    }
    t->stats.trace_counts = c;
}

int target_context_meta(struct target *t, const char *proc_root, struct labels *meta)
{
    labels_init(meta);
    if (!t->otel_changed)
        return 0;
    t->otel_changed = false;
    struct otel_process pc;
    bool gone = false;
    enum otel_process_fail f =
        t->otel_header ? otel_process_read(t->mr, t->otel_header, &pc, &gone)
                       : otel_process_locate(proc_root, t->info.key.pid, t->mr, &pc, &gone);
    targets_context_count(f);
    if (f == OTEL_PROCESS_TORN || gone) {
        otel_process_release(&pc);
        t->otel_changed = !gone; /* being written: again at the next housekeeping */
        return 0;
    }
    if (f == OTEL_PROCESS_OK) {
        t->otel_header = pc.header_raddr;
        t->otel_published = pc.published_ns;
        t->otel_thread |= pc.schema != NULL;
    } else {
        t->otel_header = 0; /* gone or broken: its labels go, and it is looked for again */
        t->otel_backoff = 0;
    }
    int err = 0;
    size_t pre = strlen("__meta_otel_");
    for (size_t i = 0; !err && i < t->info.meta.n; i++) {
        const struct label *m = &t->info.meta.v[i];
        if (strncmp(m->name, "__meta_otel_", pre) != 0)
            err = labels_set(meta, m->name, m->value);
    }
    if (!err && f == OTEL_PROCESS_OK)
        err = otel_process_meta_labels(&pc, meta);
    otel_process_release(&pc);
    if (err) {
        labels_release(meta);
        return err;
    }
    if (labels_equal(meta, &t->info.meta)) {
        labels_release(meta);
        return 0;
    }
    return 1;
}

/* The /targets "async" words of @t, in @buf (or a static string). */
static const char *target_async_words(const struct target *t, char *buf, size_t len)
{
    if (!t->aio)
        return t->async_note;
    switch (asyncio_state(t->aio)) {
    case ASYNCIO_ACTIVE:
        if (asyncio_get_mode(t->aio) == ASYNCIO_RUNNING && t->info.mode != PROFILE_WALL &&
            t->async_all)
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

/* ---- what the loop sees and does ------------------------------------------ */

const struct target_info *target_info(const struct target *t)
{
    return &t->info;
}

const struct target_stats *target_stats(const struct target *t)
{
    return &t->stats;
}

bool target_gone(const struct target *t)
{
    return t->gone;
}

const char *target_native(const struct target *t)
{
    return sampler_native(t->s);
}

const char *target_native_refused(const struct target *t)
{
    return sampler_native_refused(t->s);
}

int target_native_fd(const struct target *t)
{
    return sampler_native_fd(t->s);
}

void target_native_factor(struct target *t, double factor)
{
    sampler_native_factor(t->s, factor);
}

int target_add_tap(struct target *t, const struct sample_sink *tap)
{
    return sampler_add_tap(t->s, tap);
}

void target_remove_tap(struct target *t, const void *arg)
{
    sampler_remove_tap(t->s, arg);
}

bool target_parkable(const struct target *t)
{
    return !t->gone && sampler_parkable(t->s);
}

int target_park(struct target *t, int epfd, uint64_t token)
{
    return sampler_park(t->s, epfd, token);
}

void target_unpark(struct target *t, uint64_t now, int epfd)
{
    sampler_unpark(t->s, now, epfd);
}

void target_catch_up(struct target *t, uint64_t now)
{
    sampler_catch_up(t->s, now);
}

struct fleet_slot *target_slot(struct target *t)
{
    return &t->slot;
}

struct target *target_of_slot(struct fleet_slot *s)
{
    return (struct target *)(void *)((char *)s - offsetof(struct target, slot));
}

uint64_t target_due(const struct target *t)
{
    return sampler_due(t->s);
}

uint64_t target_next_stuck_ns(const struct target *t, enum target_reattach why)
{
    if (why != TARGET_FAILING)
        return 0;
    return t->stuck_ns >= TARGET_STUCK_MAX_NS / 2 ? TARGET_STUCK_MAX_NS : 2 * t->stuck_ns;
}

void target_native_drain(struct target *t, uint64_t now)
{
    if (!t->gone && sampler_native_drain(t->s, now) == -ESRCH)
        t->gone = true;
}

/* native: full's outcome counts, as of now. */
/* What /targets says of the idle check: it may fall back or lose threads meanwhile. */
static void target_idle_check(struct target *t)
{
    const char *ic = sampler_idle_check(t->s);
    snprintf(t->stats.idle_check, sizeof(t->stats.idle_check), "%s", ic ? ic : "");
    t->stats.idle_how = sampler_idle_how(t->s);
    t->stats.parked = sampler_parked(t->s);
}

static void target_native_counts(struct target *t)
{
    struct nsampler_counts n;
    if (!sampler_native_counts(t->s, &n))
        return;
    t->stats.native_counts.joined = n.merged;
    t->stats.native_counts.cut = n.cut;
    t->stats.native_counts.python_only = n.python;
    t->stats.native_counts.c_only = n.native;
    t->stats.native_counts.debug_used = n.files.debug_found;
    t->stats.native_counts.debug_refused = n.files.debug_refused;
    t->stats.native_counts.debug_stalled = n.files.debug_stalled;
    t->stats.native_counts.huge_symtabs = n.files.huge_symtabs;
}

void target_sample(struct target *t, uint64_t now, uint64_t skip)
{
    if (t->gone)
        sampler_idle(t->s, now); /* removed at the next housekeeping */
    else if (skip)
        sampler_skip(t->s, now, skip);
    else if (sampler_attempt(t->s, now) == -ESRCH)
        t->gone = true;
}

/* What the log and /targets say of a stale target. */
static void target_stale_words(const struct target *t, enum target_reattach why, uint64_t now,
                               char *what, size_t len)
{
    if (why == TARGET_EXEC) {
        snprintf(what, len, "it runs another program (exec)");
        return;
    }
    const struct sampler_counts *c = &t->stats.counts;
    size_t worst = SAMPLE_OK;
    for (size_t k = 1; k < SAMPLE_STATUS_COUNT; k++) {
        if (c->failed_by[k] > c->failed_by[worst])
            worst = k;
    }
    snprintf(what, len, "every attempt for %.0f s failed (mostly %s)",
             (double)(now - t->failing_since) / 1e9, status_name((enum sample_status)worst));
}

enum target_check target_housekeep(struct target *t, struct window_queue *q, const char *proc_root,
                                   uint64_t now, int64_t now_real, enum target_reattach *why,
                                   char *what, size_t whatlen)
{
    sampler_catch_up(t->s, now); /* a parked target's attempts so far */
    t->stats.counts = sampler_counts(t->s);
    target_idle_check(t);
    target_native_counts(t);
    if (!t->gone && target_stale(t, proc_root, now, why)) {
        target_stale_words(t, *why, now, what, whatlen);
        return TARGET_STALE;
    }
    if (t->gone)
        return TARGET_GONE;
    target_async_search(t, proc_root, now);
    target_trace_search(t, proc_root, now);
    if (now - t->win_start >= t->info.window_ns)
        (void)target_cut(t, q, now, now_real, false);
    if (t->aio || t->async_note[0]) {
        char abuf[320];
        snprintf(t->stats.async, sizeof(t->stats.async), "%s",
                 target_async_words(t, abuf, sizeof(abuf)));
    }
    return TARGET_KEEP;
}

void target_finish(struct target *t, struct window_queue *q, uint64_t now, int64_t now_real)
{
    (void)target_cut(t, q, now, now_real, true);
    t->stats.counts = sampler_counts_final(t->s);
    target_idle_check(t);
    target_native_counts(t);
}
