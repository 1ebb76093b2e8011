/* SPDX-License-Identifier: MIT */
/*
 * Tests for agent/daemon/loop.c: the sampling loop's policy, driven with
 * loop_step() on a fake clock (clock_fake.h), over a fake proc root
 * (procfs_fake.h) whose processes a fake probe (probe_fake.h) backs with
 * synthetic CPython images (pyimage.h): targets really attach and sample
 * their threads and frames. No real time passes and no real process is read.
 *
 *   reload      every target's window is flushed (final, partial, nothing
 *               lost); processes are judged again under the new config;
 *   exit        a target whose process exits flushes its partial window at
 *               the next housekeeping;
 *   budget      the CPU budget factor falls while the sampler overspends and
 *               recovers once it stops;
 *   rechecks    a verdict is made again when its time comes, not before;
 *   pods        a pod change relabels its targets in place: a readiness flip
 *               leaves the target and its window whole, a label its job
 *               shows cuts exactly one window, a pod in its deletion grace
 *               keeps its labels, a job that no longer keeps it ends it.
 */
#include "base/compat.h"

#include <stdio.h>
#include <unistd.h>

#include "cmocka_wrap.h"

#include "aggregate/window.h"
#include "base/alloc.h"
#include "base/log.h"
#include "base/utf8.h"
#include "clock_fake.h"
#include "probe_fake.h"
#include "procfs_fake.h"
#include "pyimage.h"
#include "daemon/loop.h"

#define S     1000000000ull
#define MS    1000000ull
#define BTIME INT64_C(1704067200) /* the fake machine booted 2024-01-01 */
#define T0    (5000 * S)          /* the monotonic clock when a test starts */
/* ... and the wall clock: a day after boot */
#define T0_REAL ((BTIME + 86400) * INT64_C(1000000000))
#define STEP    MS /* the test moves time on by this much between loop_step()s */
#define CID     "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define SELF    1 /* the agent's own PID (not in the fake proc root) */

#define MAX_IMAGES 12

struct lfx {
    struct clock_fake cf;
    struct clock clock;
    struct procfs_fake *proc;
    struct probe_fake *probe;
    struct pyimage *img[MAX_IMAGES];
    size_t nimg;
    struct window_queue *q;
    struct loop *l;
    size_t mem_before;
    bool finished;         /* the test got to its end: nothing of its own is left */
    const char *discovery; /* more discovery: keys for lfx_config() (YAML, indented) */
};

/* ---- fixture ----------------------------------------------------------------- */

/* cmocka fixture: *state is a struct lfx; the teardown runs even when a test failed. */
static int loop_setup(void **state)
{
    size_t before = alloc_in_use();
    struct lfx *fx = alloc_calloc(1, sizeof(*fx));
    if (!fx)
        return -1;
    fx->mem_before = before;
    fx->cf = (struct clock_fake){.mono_ns = T0, .real_ns = T0_REAL, .cpu_ns = 0};
    fx->clock = clock_fake_clock(&fx->cf);
    fx->proc = procfs_fake_new(BTIME);
    fx->probe = probe_fake_new(&fx->cf);
    struct agg_limits lim = window_limits_for(1u << 20); /* small windows */
    if (window_queue_new(64, 64, &lim, &fx->q))
        return -1;
    *state = fx;
    return 0;
}

static int loop_teardown(void **state)
{
    struct lfx *fx = *state;
    loop_free(fx->l);
    window_queue_free(fx->q);
    probe_fake_free(fx->probe);
    for (size_t i = 0; i < fx->nimg; i++)
        pyimage_free(fx->img[i]);
    procfs_fake_free(fx->proc);
    size_t before = fx->mem_before;
    bool finished = fx->finished;
    alloc_free(fx);
    if (finished)                                 /* (a failed test leaves what it held) */
        assert_int_equal(alloc_in_use(), before); /* nothing leaked */
    return 0;
}

/* A config over the fake proc root: @global and @jobs are YAML fragments. */
static struct pyprofd_config *lfx_config(const struct lfx *fx, const char *global, const char *jobs)
{
    char yaml[4096];
    int n = snprintf(yaml, sizeof(yaml),
                     "global:\n"
                     "  mode: wall\n"
                     "  sample_rate: 100\n"
                     "  profile_interval: 10s\n"
                     "%s"
                     "discovery:\n"
                     "  refresh_interval: 1s\n"
                     "  min_process_age: 0s\n"
                     "  proc_root: %s\n"
                     "%s"
                     "profile_configs:\n"
                     "%s",
                     global ? global : "", procfs_fake_root(fx->proc),
                     fx->discovery ? fx->discovery : "", jobs ? jobs : "  - job_name: app\n");
    assert_true(n > 0 && (size_t)n < sizeof(yaml));
    struct config_load_opts o = {.skip_file_checks = true};
    struct pyprofd_config *c = NULL;
    struct config_errors e = {0};
    if (config_load_buffer(yaml, (size_t)n, "t.yml", &o, &c, &e)) {
        char buf[CONFIG_ERROR_MAX];
        fail_msg("%s", e.n ? config_error_format(&e, 0, buf, sizeof(buf)) : "load failed");
    }
    config_errors_release(&e);
    return c;
}

/*
 * A pod source the test changes: one container (CID) whose pod has an app
 * label, a readiness flag and a phase; every change is a new revision and
 * generation, as the Kubernetes index makes them.
 */
struct fake_pods {
    char app[32], ready[8], phase[16];
    bool present;
    uint64_t rev, gen, lookups;
    struct pod_source src;
};

static int fake_pods_lookup(void *arg, const char *container_id, struct labels *meta, uint64_t *rev)
{
    struct fake_pods *fp = arg;
    fp->lookups++;
    *rev = 0;
    if (!fp->present || strcmp(container_id, CID) != 0)
        return 0;
    if (labels_set(meta, "__meta_kubernetes_namespace", "shop") ||
        labels_set(meta, "__meta_kubernetes_pod_name", "cart-0") ||
        labels_set(meta, "__meta_kubernetes_pod_label_app", fp->app) ||
        labels_set(meta, "__meta_kubernetes_pod_ready", fp->ready) ||
        labels_set(meta, "__meta_kubernetes_pod_phase", fp->phase))
        return -ENOMEM;
    *rev = fp->rev;
    return 1;
}

static uint64_t fake_pods_generation(void *arg)
{
    return ((struct fake_pods *)arg)->gen;
}

static void fake_pods_init(struct fake_pods *fp)
{
    *fp = (struct fake_pods){.present = true, .rev = 1, .gen = 1};
    snprintf(fp->app, sizeof(fp->app), "cart");
    snprintf(fp->ready, sizeof(fp->ready), "true");
    snprintf(fp->phase, sizeof(fp->phase), "Running");
    fp->src = (struct pod_source){
        .lookup = fake_pods_lookup, .generation = fake_pods_generation, .arg = fp};
}

/* The pod changed: a new revision, a new generation. */
static void fake_pods_changed(struct fake_pods *fp)
{
    fp->rev++;
    fp->gen++;
}

static void lfx_start_pods(struct lfx *fx, struct pyprofd_config *cfg,
                           const struct pod_source *pods)
{
    struct loop_opts o = {.self_pid = SELF,
                          .queue = fx->q,
                          .clock = &fx->clock,
                          .probe = probe_fake_ops(fx->probe),
                          .pods = pods};
    assert_int_equal(loop_new(cfg, &o, &fx->l), 0);
}

static void lfx_start(struct lfx *fx, struct pyprofd_config *cfg)
{
    lfx_start_pods(fx, cfg, NULL);
}

/*
 * A CPython 3.14 image with two threads: MainThread (tid @pid + 1) in
 * <module> -> main -> work, and worker (tid @pid + 2) in
 * <module> -> serve -> wait. Returns it (the fixture frees it).
 */
static struct pyimage *lfx_image(struct lfx *fx, pid_t pid)
{
    assert_true(fx->nimg < MAX_IMAGES);
    struct pyimage *img = pyimage_new(14);
    fx->img[fx->nimg++] = img;
    uint64_t mod = pyimage_code(img, "<module>", "/srv/app/app.py", 0);
    uint64_t main_fn = pyimage_code(img, "main", "/srv/app/app.py", 10);
    uint64_t work = pyimage_code(img, "work", "/srv/app/work.py", 20);
    uint64_t serve = pyimage_code(img, "serve", "/srv/app/serve.py", 30);
    uint64_t wait = pyimage_code(img, "wait", "/srv/app/serve.py", 40);
    unsigned t = pyimage_thread(img, (uint64_t)pid + 1);
    pyimage_push(img, t, PYABI_OWNER_INTERPRETER, 0, 0);
    pyimage_push(img, t, PYABI_OWNER_THREAD, mod, 1);
    pyimage_push(img, t, PYABI_OWNER_THREAD, main_fn, 2);
    pyimage_push(img, t, PYABI_OWNER_THREAD, work, 3);
    pyimage_hold_gil(img, t);
    t = pyimage_thread(img, (uint64_t)pid + 2);
    pyimage_push(img, t, PYABI_OWNER_INTERPRETER, 0, 0);
    pyimage_push(img, t, PYABI_OWNER_THREAD, mod, 5);
    pyimage_push(img, t, PYABI_OWNER_THREAD, serve, 6);
    pyimage_push(img, t, PYABI_OWNER_THREAD, wait, 7);
    return img;
}

/* Process @pid, @age_ns old now, in the proc root with its two threads (@mainstate for
 * MainThread, 'S' for worker); Python (@python) or not as far as the probe knows. */
static void lfx_process(struct lfx *fx, pid_t pid, const char *comm, int64_t age_ns, bool python,
                        char mainstate)
{
    procfs_fake_add(fx->proc, pid, comm, procfs_fake_start_ticks(fx->proc, fx->cf.real_ns, age_ns));
    procfs_fake_thread(fx->proc, pid, pid + 1, "MainThread", mainstate);
    procfs_fake_thread(fx->proc, pid, pid + 2, "worker", 'S');
    probe_fake_set(fx->probe, pid, python ? lfx_image(fx, pid) : NULL);
}

/* Drives the loop for @ns of fake time: a step, then STEP on, and again. */
static void lfx_run(struct lfx *fx, uint64_t ns)
{
    for (uint64_t t = 0; t < ns; t += STEP) {
        loop_step(fx->l, false);
        clock_fake_advance(&fx->cf, STEP);
    }
}

static struct loop_view *lfx_view(struct lfx *fx)
{
    struct loop_view *v = NULL;
    assert_int_equal(loop_snapshot(fx->l, &v), 0);
    return v;
}

static const struct loop_proc_view *view_proc(const struct loop_view *v, pid_t pid)
{
    for (size_t i = 0; i < v->nprocs; i++) {
        if (v->procs[i].pid == pid)
            return &v->procs[i];
    }
    return NULL;
}

static const struct loop_job_view *view_job(const struct loop_view *v, const char *name)
{
    for (size_t i = 0; i < v->njobs; i++) {
        if (strcmp(v->jobs[i].name, name) == 0)
            return &v->jobs[i];
    }
    return NULL;
}

/* Thread stacks counted in @a, checking each is one of the image's two threads, named. */
static int64_t window_samples(const struct agg *a, pid_t pid)
{
    int64_t n = 0;
    for (size_t i = 0; i < agg_sample_count(a); i++) {
        const struct agg_sample *s = agg_sample(a, i);
        const char *name = agg_string(a, s->thread_name);
        if (s->thread_id == (uint64_t)pid + 1)
            assert_string_equal(name, "MainThread");
        else if (s->thread_id == (uint64_t)pid + 2)
            assert_string_equal(name, "worker");
        else
            fail_msg("a sample of thread %" PRIu64 " in the window of %d", s->thread_id, (int)pid);
        assert_int_equal(s->nlocations, 3);
        n += s->count;
    }
    return n;
}

/* The leaf function's name of the first sample of thread @tid in @a, or NULL. */
static const char *window_leaf(const struct agg *a, uint64_t tid)
{
    for (size_t i = 0; i < agg_sample_count(a); i++) {
        const struct agg_sample *s = agg_sample(a, i);
        if (s->thread_id == tid) {
            const struct agg_location *loc = agg_location(a, s->locations[0]);
            return agg_string(a, agg_function(a, loc->function)->name);
        }
    }
    return NULL;
}

/* Takes every queued window (at most @max) into @out. Returns how many. */
static size_t lfx_pop_all(struct lfx *fx, struct window_item *out, size_t max)
{
    size_t n = 0;
    while (window_pending(fx->q)) {
        assert_true(n < max);
        assert_int_equal(window_pop(fx->q, 0, &out[n]), 0);
        n++;
    }
    return n;
}

static void lfx_release_all(struct lfx *fx, struct window_item *items, size_t n)
{
    for (size_t i = 0; i < n; i++)
        window_item_release(fx->q, &items[i]);
}

/* ---- reload ------------------------------------------------------------------- */

static void test_loop__reload_flushes_every_window(void **state)
{
    struct lfx *fx = *state;
    lfx_process(fx, 1000, "python3", (int64_t)(60 * S), true, 'S');
    lfx_process(fx, 2000, "python3", (int64_t)(60 * S), true, 'S');
    lfx_process(fx, 3000, "bash", (int64_t)(60 * S), false, 'S');
    lfx_start(fx, lfx_config(fx, NULL, NULL));
    lfx_run(fx, 3050 * MS); /* well inside the first 10 s window */
    assert_int_equal(window_pending(fx->q), 0);
    struct loop_view *v = lfx_view(fx);
    assert_int_equal(v->by_state[PROC_ACTIVE], 2);
    assert_int_equal(v->by_state[PROC_NOT_PYTHON], 1);
    loop_view_free(v);

    /* a reload: applied at the next step, without waiting for a tick */
    uint64_t at = fx->cf.mono_ns;
    loop_set_config(fx->l, lfx_config(fx, "  external_labels:\n    env: test\n", NULL));
    loop_step(fx->l, false);
    struct window_item items[8];
    size_t n = lfx_pop_all(fx, items, 8);
    assert_int_equal(n, 2);
    int64_t total = 0;
    bool seen[2] = {false, false};
    for (size_t i = 0; i < n; i++) {
        const struct window_meta *m = &items[i].meta;
        assert_true(m->pid == 1000 || m->pid == 2000);
        seen[m->pid == 2000] = true;
        assert_true(m->final); /* the target ended with the old config */
        assert_string_equal(m->job, "app");
        assert_string_equal(labels_get(&m->labels, "job"), "app");
        assert_null(labels_get(&m->labels, "env")); /* made under the old config */
        /* partial: from the target's start to the reload, on both clocks */
        assert_int_equal(m->time_nanos, T0_REAL);
        assert_int_equal(m->duration_nanos, (int64_t)(at - T0));
        int64_t k = window_samples(items[i].agg, m->pid);
        assert_true(k >= 2 * 290); /* two threads, about 305 attempts */
        assert_string_equal(window_leaf(items[i].agg, (uint64_t)m->pid + 1), "work");
        assert_string_equal(window_leaf(items[i].agg, (uint64_t)m->pid + 2), "wait");
        total += k;
    }
    assert_true(seen[0] && seen[1]);
    /* nothing lost: every thread stack the samplers counted is in a window */
    v = lfx_view(fx);
    const struct loop_job_view *j = view_job(v, "app");
    assert_non_null(j);
    assert_int_equal(j->counts.thread_samples, (uint64_t)total);
    assert_int_equal(j->windows, 2);
    assert_int_equal(j->windows_dropped, 0);
    /* judged again under the new config at once: sampled again, new labels */
    assert_int_equal(v->by_state[PROC_ACTIVE], 2);
    const struct loop_proc_view *p = view_proc(v, 1000);
    assert_non_null(p);
    assert_true(p->target);
    assert_string_equal(labels_get(&p->labels, "env"), "test");
    loop_view_free(v);
    lfx_release_all(fx, items, n);

    /* the new targets' windows start at the reload and are cut as usual */
    lfx_run(fx, 10 * S + 100 * MS);
    n = lfx_pop_all(fx, items, 8);
    assert_int_equal(n, 2);
    for (size_t i = 0; i < n; i++) {
        assert_false(items[i].meta.final);
        assert_int_equal(items[i].meta.time_nanos, T0_REAL + (int64_t)(at - T0));
        assert_string_equal(labels_get(&items[i].meta.labels, "env"), "test");
    }
    lfx_release_all(fx, items, n);
    fx->finished = true;
}

static void test_loop__dropped_process_is_judged_again_after_a_reload(void **state)
{
    struct lfx *fx = *state;
    lfx_process(fx, 1000, "celery", (int64_t)(60 * S), true, 'S');
    static const char web_only[] = "  - job_name: web\n"
                                   "    relabel_configs:\n"
                                   "      - source_labels: [__meta_process_comm]\n"
                                   "        regex: gunicorn\n"
                                   "        action: keep\n";
    lfx_start(fx, lfx_config(fx, NULL, web_only));
    lfx_run(fx, 5 * S);
    struct loop_view *v = lfx_view(fx);
    assert_int_equal(v->by_state[PROC_DROPPED], 1);
    loop_view_free(v);
    assert_int_equal(probe_fake_locates(fx->probe, 1000), 1); /* not looked at again */
    loop_set_config(fx->l, lfx_config(fx, NULL, NULL));
    loop_step(fx->l, false);
    v = lfx_view(fx);
    assert_int_equal(v->by_state[PROC_ACTIVE], 1);
    loop_view_free(v);
    assert_int_equal(probe_fake_locates(fx->probe, 1000), 2);
    fx->finished = true;
}

/* ---- exit --------------------------------------------------------------------- */

static void test_loop__exited_process_flushes_its_partial_window(void **state)
{
    struct lfx *fx = *state;
    lfx_process(fx, 1000, "python3", (int64_t)(60 * S), true, 'S');
    lfx_start(fx, lfx_config(fx, NULL, NULL));
    lfx_run(fx, 2050 * MS);
    assert_int_equal(window_pending(fx->q), 0);

    /* it exits between two scans (the next is at T0 + 3 s) */
    probe_fake_exit(fx->probe, 1000);
    procfs_fake_remove(fx->proc, 1000);
    lfx_run(fx, 150 * MS); /* one housekeeping after the next attempt */
    struct window_item items[4];
    size_t n = lfx_pop_all(fx, items, 4);
    assert_int_equal(n, 1);
    const struct window_meta *m = &items[0].meta;
    assert_int_equal(m->pid, 1000);
    assert_true(m->final);
    assert_int_equal(m->time_nanos, T0_REAL);
    assert_true(m->duration_nanos > (int64_t)(2050 * MS) &&
                m->duration_nanos < (int64_t)(2200 * MS));
    int64_t k = window_samples(items[0].agg, 1000);
    /* nothing lost: what the sampler counted before the exit */
    struct loop_view *v = lfx_view(fx);
    const struct loop_job_view *j = view_job(v, "app");
    assert_non_null(j);
    assert_int_equal(j->targets, 0);
    assert_int_equal(j->windows, 1);
    assert_true(k >= 2 * 195);
    assert_int_equal(j->counts.thread_samples, (uint64_t)k);
    assert_true(j->counts.failed_by[SAMPLE_PROCESS_GONE] >= 1);
    assert_int_equal(v->by_state[PROC_ACTIVE], 0);
    loop_view_free(v);
    lfx_release_all(fx, items, n);

    /* the next scan forgets it */
    lfx_run(fx, 1 * S);
    v = lfx_view(fx);
    assert_int_equal(v->nprocs, 0);
    for (size_t s = 0; s < PROC_STATES; s++)
        assert_int_equal(v->by_state[s], 0);
    loop_view_free(v);
    assert_int_equal(window_pending(fx->q), 0);
    fx->finished = true;
}

/* ---- new processes between scans (loop_watch.c) -------------------------------- */

/* The fake proc root as the watch's poll source reads it: self, loadavg's last PID. */
static void lfx_watchable(struct lfx *fx, int last_pid)
{
    char path[600], text[64];
    snprintf(path, sizeof(path), "%s/self", procfs_fake_root(fx->proc));
    snprintf(text, sizeof(text), "%d", (int)getpid());
    (void)unlink(path);
    assert_int_equal(symlink(text, path), 0);
    snprintf(path, sizeof(path), "%s/loadavg", procfs_fake_root(fx->proc));
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "0.00 0.00 0.00 1/100 %d\n", last_pid);
    fclose(f);
}

/* Steps the loop (fake time) until @pid is in @state, letting real time pass for the
 * watch's thread; returns the real milliseconds it took, or -1 after 3 s. */
static int lfx_until(struct lfx *fx, pid_t pid, enum proc_state state)
{
    for (int ms = 0; ms < 3000; ms += 5) {
        lfx_run(fx, 5 * MS);
        struct loop_view *v = lfx_view(fx);
        const struct loop_proc_view *p = view_proc(v, pid);
        bool there = p && p->state == state;
        loop_view_free(v);
        if (there)
            return ms;
        usleep(5000);
    }
    return -1;
}

/*
 * A process that starts between two scans (refresh_interval 1h) is a target
 * at once: the poll source sees loadavg's last PID move, the loop reads that
 * PID alone 40 ms later; one that exits before its look is counted.
 */
static void test_loop__a_new_process_is_a_target_before_the_next_scan(void **state)
{
    struct lfx *fx = *state;
    lfx_watchable(fx, 1999);
    fx->discovery = "  watch: poll\n";
    struct pyprofd_config *cfg = lfx_config(fx, NULL, NULL);
    cfg->discovery.refresh_interval_ns = 3600 * S;
    lfx_start(fx, cfg);
    lfx_run(fx, 200 * MS); /* the first scan: nothing */
    usleep(50000);         /* the watch's first read of loadavg */

    lfx_process(fx, 2000, "python3", 0, true, 'S');
    lfx_watchable(fx, 2002); /* its two threads took PIDs too */
    int ms = lfx_until(fx, 2000, PROC_ACTIVE);
    assert_true(ms >= 0);
    struct loop_view *v = lfx_view(fx);
    assert_int_equal(v->scans, 1); /* no scan found it */
    assert_int_equal(v->watch_stats.source, PROC_WATCH_POLL);
    assert_int_equal(v->watch_stats.new_pid, 1);
    assert_int_equal(v->watch_stats.threads, 2);
    assert_int_equal(v->watch.looks, 1);
    assert_int_equal(v->watch.exited_before_look, 0);
    assert_non_null(v->start_delay);
    loop_view_free(v);

    /* one that is gone before its look: counted, never judged */
    lfx_process(fx, 2003, "python3", 0, true, 'S');
    lfx_watchable(fx, 2005);
    uint64_t seen = 0;
    for (int i = 0; i < 3000 && seen < 2; i++) { /* the watch has queued it */
        usleep(1000);
        v = lfx_view(fx);
        seen = v->watch_stats.new_pid;
        loop_view_free(v);
    }
    assert_int_equal(seen, 2);
    probe_fake_exit(fx->probe, 2003);
    procfs_fake_remove(fx->proc, 2003);
    uint64_t gone = 0;
    for (int i = 0; i < 600 && !gone; i++) {
        usleep(5000);
        lfx_run(fx, 5 * MS);
        v = lfx_view(fx);
        gone = v->watch.exited_before_look;
        loop_view_free(v);
    }
    assert_int_equal(gone, 1);
    v = lfx_view(fx);
    assert_int_equal(v->scans, 1);
    assert_int_equal(v->watch.looks, 1);
    assert_null(view_proc(v, 2003));
    loop_view_free(v);
    fx->finished = true;
}

/* ---- budget ------------------------------------------------------------------- */

static void test_loop__budget_factor_falls_when_overspending_and_recovers(void **state)
{
    struct lfx *fx = *state;
    lfx_process(fx, 1000, "python3", (int64_t)(60 * S), true, 'S');
    lfx_start(fx, lfx_config(fx, "  limits:\n    cpu_budget: 0.5\n", NULL));
    /* cheap reads: within budget, every attempt made */
    lfx_run(fx, 3 * S);
    struct loop_view *v = lfx_view(fx);
    assert_true(v->factor == 1.0);
    const struct loop_proc_view *p = view_proc(v, 1000);
    assert_non_null(p);
    assert_int_equal(p->counts.skipped, 0);
    uint64_t taken_before = p->counts.taken;
    loop_view_free(v);

    /* every read costs 20 ms of the sampling thread's CPU: several CPUs' worth */
    probe_fake_read_cost(fx->probe, 20 * MS);
    double prev = 1.0;
    for (int sec = 0; sec < 5; sec++) {
        lfx_run(fx, 1 * S);
        v = lfx_view(fx);
        assert_true(v->factor <= prev); /* never raised while over the budget */
        prev = v->factor;
        p = view_proc(v, 1000);
        assert_true(p->effective_rate == p->rate * v->factor);
        loop_view_free(v);
    }
    v = lfx_view(fx);
    assert_true(v->factor < 0.2);
    p = view_proc(v, 1000);
    assert_true(p->counts.skipped > 0); /* attempts let pass on purpose */
    assert_int_equal(p->counts.missed, 0);
    uint64_t taken_throttled = p->counts.taken;
    loop_view_free(v);
    /* with the factor low, far fewer attempts per second */
    lfx_run(fx, 1 * S);
    v = lfx_view(fx);
    p = view_proc(v, 1000);
    uint64_t per_second = p->counts.taken - taken_throttled;
    assert_true(per_second < 40);
    taken_throttled = p->counts.taken;
    loop_view_free(v);
    assert_true(taken_before >= 280); /* 100 Hz until then */

    /* it stops overspending: the factor recovers, period by period, up to 1 */
    probe_fake_read_cost(fx->probe, 0);
    prev = 0;
    int periods = 0;
    for (int sec = 0; sec < 30 && prev < 1.0; sec++) {
        lfx_run(fx, 1 * S);
        v = lfx_view(fx);
        if (sec > 0) /* the first period still saw some of the spending */
            assert_true(v->factor > prev || v->factor == 1.0);
        prev = v->factor;
        periods++;
        loop_view_free(v);
    }
    assert_true(prev == 1.0);
    assert_true(periods > 2); /* gradually, not at once */
    v = lfx_view(fx);
    p = view_proc(v, 1000);
    uint64_t taken_now = p->counts.taken;
    loop_view_free(v);
    lfx_run(fx, 1 * S);
    v = lfx_view(fx);
    p = view_proc(v, 1000);
    assert_true(p->counts.taken - taken_now >= 95); /* the full rate again */
    loop_view_free(v);
    fx->finished = true;
}

/* ---- wake-ups ------------------------------------------------------------------ */

/*
 * Drives the loop for @ns of fake time the way its thread does: a step, then
 * time jumps to loop_next_wake(). Returns the wake-ups.
 */
static uint64_t lfx_run_woken(struct lfx *fx, uint64_t ns)
{
    uint64_t until = fx->cf.mono_ns + ns, wakes = 0;
    for (;;) {
        loop_step(fx->l, false);
        wakes++;
        uint64_t wake = loop_next_wake(fx->l);
        assert_true(wake > fx->cf.mono_ns); /* nothing left due after a pass */
        if (wake >= until)
            break;
        clock_fake_advance(&fx->cf, wake - fx->cf.mono_ns);
    }
    clock_fake_advance(&fx->cf, until - fx->cf.mono_ns);
    return wakes;
}

/* Attempts of process @pid so far (taken + failed) and missed ones. */
static void lfx_attempts(struct lfx *fx, pid_t pid, uint64_t *attempts, uint64_t *missed)
{
    struct loop_view *v = lfx_view(fx);
    const struct loop_proc_view *p = view_proc(v, pid);
    assert_non_null(p);
    *attempts = p->counts.attempts;
    *missed = p->counts.missed;
    loop_view_free(v);
}

static void test_loop__attempts_coalesce_into_ticks(void **state)
{
    enum { N = 12 };
    struct lfx *fx = *state;
    for (pid_t i = 0; i < N; i++)
        lfx_process(fx, 1000 + 10 * i, "python3", (int64_t)(60 * S), true, 'S');
    lfx_start(fx, lfx_config(fx, NULL, NULL));
    (void)lfx_run_woken(fx, 2 * S); /* every target started */
    uint64_t a0[N], m;
    for (pid_t i = 0; i < N; i++)
        lfx_attempts(fx, 1000 + 10 * i, &a0[i], &m);
    uint64_t wakes = lfx_run_woken(fx, 10 * S);
    /* 12 targets x 100 Hz = 12,000 attempts in 10 s (as many wake-ups
     * without ticks), but at most one wake-up per 1 ms tick (and 100 for
     * housekeeping) */
    print_message("%d targets x 100 Hz for 10 s: %" PRIu64 " wake-ups\n", N, wakes);
    assert_true(wakes <= 10000 + 100 + 1);
    for (pid_t i = 0; i < N; i++) {
        uint64_t a, missed;
        lfx_attempts(fx, 1000 + 10 * i, &a, &missed);
        assert_true(a - a0[i] >= 999 && a - a0[i] <= 1001); /* 100 Hz */
        assert_int_equal(missed, 0);
    }
    fx->finished = true;
}

/* A target faster than the tick shortens it: all its attempts, none missed, none in a burst. */
static void test_loop__a_fast_target_shortens_the_tick(void **state)
{
    struct lfx *fx = *state;
    lfx_process(fx, 1000, "python3", (int64_t)(60 * S), true, 'S');
    lfx_start(
        fx, lfx_config(fx, "  sampling_tick: 5ms\n", "  - job_name: app\n    sample_rate: 4000\n"));
    (void)lfx_run_woken(fx, 2 * S);
    uint64_t a0, a, missed;
    lfx_attempts(fx, 1000, &a0, &missed);
    uint64_t wakes = lfx_run_woken(fx, 2 * S);
    lfx_attempts(fx, 1000, &a, &missed);
    /* 4 kHz: 8000 attempts in 2 s, one per wake-up (not several per 5 ms tick) */
    assert_true(a - a0 >= 7999 && a - a0 <= 8001);
    assert_int_equal(missed, 0);
    assert_true(wakes >= 7999);
    fx->finished = true;
}

/* ---- rechecks ------------------------------------------------------------------ */

static void test_loop__not_python_is_looked_at_again_when_its_recheck_is_due(void **state)
{
    struct lfx *fx = *state;
    /* old: next look in TARGETS_RECHECK_OFTEN refreshes (6 s) */
    lfx_process(fx, 1000, "python3", (int64_t)(60 * S), false, 'S');
    /* young: looked at every scan */
    lfx_process(fx, 2000, "python3", (int64_t)(5 * S), false, 'S');
    lfx_start(fx, lfx_config(fx, NULL, NULL));
    lfx_run(fx, 500 * MS); /* the first scan, at T0 */
    assert_int_equal(probe_fake_locates(fx->probe, 1000), 1);
    assert_int_equal(probe_fake_locates(fx->probe, 2000), 1);
    /* both set their runtime up now */
    probe_fake_set(fx->probe, 1000, lfx_image(fx, 1000));
    probe_fake_set(fx->probe, 2000, lfx_image(fx, 2000));

    /* the young one at the next scan (T0 + 1 s) */
    lfx_run(fx, 450 * MS);
    struct loop_view *v = lfx_view(fx);
    assert_int_equal(v->by_state[PROC_NOT_PYTHON], 2);
    loop_view_free(v);
    lfx_run(fx, 100 * MS);
    v = lfx_view(fx);
    assert_int_equal(v->by_state[PROC_NOT_PYTHON], 1);
    assert_int_equal(v->by_state[PROC_ACTIVE], 1);
    assert_true(view_proc(v, 2000) && view_proc(v, 2000)->target);
    loop_view_free(v);
    assert_int_equal(probe_fake_locates(fx->probe, 2000), 2);

    /* the old one: not at the scans of T0 + 1 s .. T0 + 5 s */
    lfx_run(fx, 4 * S); /* to T0 + 5.05 s */
    assert_int_equal(probe_fake_locates(fx->probe, 1000), 1);
    lfx_run(fx, 900 * MS); /* to T0 + 5.95 s */
    v = lfx_view(fx);
    assert_int_equal(v->by_state[PROC_NOT_PYTHON], 1);
    loop_view_free(v);
    assert_int_equal(probe_fake_locates(fx->probe, 1000), 1);
    /* at the scan of T0 + 6 s, TARGETS_RECHECK_OFTEN refreshes later */
    lfx_run(fx, 100 * MS);
    assert_int_equal(probe_fake_locates(fx->probe, 1000), 2);
    v = lfx_view(fx);
    assert_int_equal(v->by_state[PROC_NOT_PYTHON], 0);
    assert_int_equal(v->by_state[PROC_ACTIVE], 2);
    assert_true(view_proc(v, 1000) && view_proc(v, 1000)->target);
    loop_view_free(v);
    fx->finished = true;
}

/* ---- the proc root ------------------------------------------------------------- */

static void test_loop__cpu_mode_reads_thread_states_under_the_proc_root(void **state)
{
    struct lfx *fx = *state;
    /* MainThread runs ('R'), worker sleeps */
    lfx_process(fx, 1000, "python3", (int64_t)(60 * S), true, 'R');
    struct pyprofd_config *cfg = lfx_config(fx, NULL,
                                            "  - job_name: app\n"
                                            "    mode: cpu\n");
    lfx_start(fx, cfg);
    /* on a CPU all along: its CPU time (schedstat) moves with the clock, for
     * cpu mode counts CPU time, not 'R' alone (issue 38) */
    for (uint64_t t = 0; t < 1 * S; t += 10 * MS) {
        procfs_fake_thread_cpu(fx->proc, 1000, 1001, "MainThread", 'R', t, true);
        lfx_run(fx, 10 * MS);
    }
    loop_stop(fx->l); /* flushes the window */
    struct window_item items[4];
    size_t n = lfx_pop_all(fx, items, 4);
    assert_int_equal(n, 1);
    assert_int_equal(items[0].meta.mode, PROFILE_CPU);
    assert_true(window_samples(items[0].agg, 1000) >= 95);
    assert_non_null(window_leaf(items[0].agg, 1001));
    assert_null(window_leaf(items[0].agg, 1002)); /* never on a CPU */
    lfx_release_all(fx, items, n);
    fx->finished = true;
}

/* ---- text ----------------------------------------------------------------------- */

#define FFFD UTF8_REPLACEMENT_STR

/*
 * A process and threads named with bytes that are not UTF-8: the window's
 * thread names and the view's comm hold the U+FFFD form, a thread name the
 * kernel cut inside a character loses that character, and each bad name is
 * counted once, not at every re-read of the thread names (each second).
 */
static void test_loop__names_become_valid_utf8_counted_once(void **state)
{
    struct lfx *fx = *state;
    procfs_fake_add(fx->proc, 1000, "py\xff\x1b[31m",
                    procfs_fake_start_ticks(fx->proc, fx->cf.real_ns, (int64_t)(60 * S)));
    procfs_fake_thread(fx->proc, 1000, 1001, "Main\xffThread", 'S');
    procfs_fake_thread(fx->proc, 1000, 1002, "worker-\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa", 'S');
    probe_fake_set(fx->probe, 1000, lfx_image(fx, 1000));
    uint64_t before = utf8_replaced_total();
    lfx_start(fx, lfx_config(fx, NULL, NULL));
    lfx_run(fx, 3500 * MS);
    struct loop_view *v = lfx_view(fx);
    const struct loop_proc_view *pv = view_proc(v, 1000);
    assert_non_null(pv);
    assert_int_equal(pv->state, PROC_ACTIVE);
    assert_string_equal(pv->comm, "py" FFFD "\x1b[31m");
    loop_view_free(v);
    loop_stop(fx->l); /* flushes the window */
    struct window_item items[4];
    size_t n = lfx_pop_all(fx, items, 4);
    assert_int_equal(n, 1);
    const struct agg *a = items[0].agg;
    size_t seen_main = 0, seen_worker = 0;
    for (size_t i = 0; i < agg_sample_count(a); i++) {
        const struct agg_sample *smp = agg_sample(a, i);
        const char *name = agg_string(a, smp->thread_name);
        if (smp->thread_id == 1001) {
            assert_string_equal(name, "Main" FFFD "Thread");
            seen_main++;
        } else {
            assert_int_equal(smp->thread_id, 1002);
            assert_string_equal(name, "worker-\xe6\x97\xa5\xe6\x9c\xac");
            seen_worker++;
        }
    }
    assert_true(seen_main > 0 && seen_worker > 0);
    /* the comm once (scanned once), the main thread's name once (re-read 3 times) */
    assert_int_equal(utf8_replaced_total() - before, 2);
    lfx_release_all(fx, items, n);
    fx->finished = true;
}

/* ---- pods ---------------------------------------------------------------------- */

/* keeps the app's pods, and shows their app label */
static const char POD_JOBS[] = "  - job_name: app\n"
                               "    relabel_configs:\n"
                               "      - source_labels: [__meta_kubernetes_pod_label_app]\n"
                               "        regex: cart|basket\n"
                               "        action: keep\n"
                               "      - source_labels: [__meta_kubernetes_pod_label_app]\n"
                               "        target_label: app\n";

/* Process 4000 in the container of the fake pod; the loop started and the target active. */
static void lfx_pod_target(struct lfx *fx, struct fake_pods *fp)
{
    fake_pods_init(fp);
    lfx_process(fx, 4000, "python3", (int64_t)(60 * S), true, 'R');
    procfs_fake_cgroup(fx->proc, 4000,
                       "0::/kubepods.slice/kubepods-pod1234.slice/cri-containerd-" CID ".scope\n");
    lfx_start_pods(fx, lfx_config(fx, NULL, POD_JOBS), &fp->src);
    lfx_run(fx, 500 * MS);
    struct loop_view *v = lfx_view(fx);
    const struct loop_proc_view *pv = view_proc(v, 4000);
    assert_non_null(pv);
    assert_int_equal(pv->state, PROC_ACTIVE);
    assert_string_equal(pv->container_id, CID);
    assert_string_equal(labels_get(&pv->labels, "app"), "cart");
    loop_view_free(v);
}

/* Ready flips and the phase changes: no rule reads them. */
static void test_loop__pod_readiness_flip_leaves_the_target_whole(void **state)
{
    struct lfx *fx = *state;
    struct fake_pods fp;
    lfx_pod_target(fx, &fp);
    for (int i = 0; i < 6; i++) {
        snprintf(fp.ready, sizeof(fp.ready), "%s", i % 2 ? "true" : "false");
        fake_pods_changed(&fp);
        lfx_run(fx, 700 * MS);
    }
    struct loop_view *v = lfx_view(fx);
    const struct loop_proc_view *pv = view_proc(v, 4000);
    assert_int_equal(pv->state, PROC_ACTIVE);
    assert_int_equal(pv->reattaches, 0);
    assert_int_equal(pv->windows, 0); /* no window cut: 4.7 s of a 10 s interval */
    assert_string_equal(labels_get(&pv->meta, "__meta_kubernetes_pod_ready"), "true");
    assert_string_equal(labels_get(&pv->labels, "app"), "cart");
    loop_view_free(v);
    assert_false(window_pending(fx->q));
    /* the window runs to its end, whole: 10 s of samples, one window */
    lfx_run(fx, 5400 * MS);
    struct window_item items[4];
    size_t n = lfx_pop_all(fx, items, 4);
    assert_int_equal(n, 1);
    assert_int_equal(items[0].meta.duration_nanos, (int64_t)(10 * S));
    lfx_release_all(fx, items, n);
    fx->finished = true;
}

/* The app label (shown as `app`) changes: exactly one window is cut, with the old label. */
static void test_loop__pod_label_change_cuts_one_window(void **state)
{
    struct lfx *fx = *state;
    struct fake_pods fp;
    lfx_pod_target(fx, &fp);
    lfx_run(fx, 1500 * MS);
    snprintf(fp.app, sizeof(fp.app), "basket");
    fake_pods_changed(&fp);
    uint64_t changed_at = fx->cf.mono_ns;
    lfx_run(fx, 300 * MS); /* within one housekeeping or three */
    struct window_item items[4];
    size_t n = lfx_pop_all(fx, items, 4);
    assert_int_equal(n, 1);
    assert_string_equal(labels_get(&items[0].meta.labels, "app"), "cart");
    assert_false(items[0].meta.final);
    /* cut when the change was seen: at most a housekeeping period after it */
    uint64_t cut_at = T0 + (uint64_t)items[0].meta.duration_nanos;
    assert_true(cut_at >= changed_at && cut_at - changed_at <= LOOP_TICK_NS + STEP);
    lfx_release_all(fx, items, n);
    struct loop_view *v = lfx_view(fx);
    const struct loop_proc_view *pv = view_proc(v, 4000);
    assert_int_equal(pv->state, PROC_ACTIVE);
    assert_int_equal(pv->reattaches, 0);
    assert_string_equal(labels_get(&pv->labels, "app"), "basket");
    loop_view_free(v);
    /* the next window carries the new label */
    lfx_run(fx, 10 * S);
    n = lfx_pop_all(fx, items, 4);
    assert_int_equal(n, 1);
    assert_string_equal(labels_get(&items[0].meta.labels, "app"), "basket");
    lfx_release_all(fx, items, n);
    fx->finished = true;
}

/*
 * A pod being deleted: its phase and readiness change in its grace period,
 * its labels stay (the index keeps them until the pod is gone): the target
 * keeps its labels and window. Then its job no longer keeps it (its app
 * label becomes one the job drops): it is ended, its window flushed.
 */
static void test_loop__pod_in_grace_keeps_its_labels(void **state)
{
    struct lfx *fx = *state;
    struct fake_pods fp;
    lfx_pod_target(fx, &fp);
    snprintf(fp.ready, sizeof(fp.ready), "false");
    snprintf(fp.phase, sizeof(fp.phase), "Terminating");
    fake_pods_changed(&fp);
    lfx_run(fx, 2 * S);
    assert_false(window_pending(fx->q));
    struct loop_view *v = lfx_view(fx);
    const struct loop_proc_view *pv = view_proc(v, 4000);
    assert_int_equal(pv->state, PROC_ACTIVE);
    assert_string_equal(labels_get(&pv->labels, "app"), "cart");
    assert_string_equal(labels_get(&pv->meta, "__meta_kubernetes_pod_phase"), "Terminating");
    loop_view_free(v);

    snprintf(fp.app, sizeof(fp.app), "other");
    fake_pods_changed(&fp);
    lfx_run(fx, 2 * S);
    struct window_item items[4];
    size_t n = lfx_pop_all(fx, items, 4);
    assert_int_equal(n, 1);
    assert_true(items[0].meta.final);
    assert_string_equal(labels_get(&items[0].meta.labels, "app"), "cart");
    lfx_release_all(fx, items, n);
    v = lfx_view(fx);
    pv = view_proc(v, 4000);
    assert_int_equal(pv->state, PROC_DROPPED);
    loop_view_free(v);
    fx->finished = true;
}

int main(void)
{
    log_set_level(LOG_LEVEL_WARN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_loop__reload_flushes_every_window, loop_setup,
                                        loop_teardown),
        cmocka_unit_test_setup_teardown(test_loop__dropped_process_is_judged_again_after_a_reload,
                                        loop_setup, loop_teardown),
        cmocka_unit_test_setup_teardown(test_loop__a_new_process_is_a_target_before_the_next_scan,
                                        loop_setup, loop_teardown),
        cmocka_unit_test_setup_teardown(test_loop__exited_process_flushes_its_partial_window,
                                        loop_setup, loop_teardown),
        cmocka_unit_test_setup_teardown(
            test_loop__budget_factor_falls_when_overspending_and_recovers, loop_setup,
            loop_teardown),
        cmocka_unit_test_setup_teardown(
            test_loop__not_python_is_looked_at_again_when_its_recheck_is_due, loop_setup,
            loop_teardown),
        cmocka_unit_test_setup_teardown(test_loop__attempts_coalesce_into_ticks, loop_setup,
                                        loop_teardown),
        cmocka_unit_test_setup_teardown(test_loop__a_fast_target_shortens_the_tick, loop_setup,
                                        loop_teardown),
        cmocka_unit_test_setup_teardown(test_loop__names_become_valid_utf8_counted_once, loop_setup,
                                        loop_teardown),
        cmocka_unit_test_setup_teardown(test_loop__cpu_mode_reads_thread_states_under_the_proc_root,
                                        loop_setup, loop_teardown),
        cmocka_unit_test_setup_teardown(test_loop__pod_readiness_flip_leaves_the_target_whole,
                                        loop_setup, loop_teardown),
        cmocka_unit_test_setup_teardown(test_loop__pod_label_change_cuts_one_window, loop_setup,
                                        loop_teardown),
        cmocka_unit_test_setup_teardown(test_loop__pod_in_grace_keeps_its_labels, loop_setup,
                                        loop_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
