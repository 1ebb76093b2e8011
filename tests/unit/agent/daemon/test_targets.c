/* SPDX-License-Identifier: MIT */
/*
 * Tests for agent/daemon/targets.c: the verdict proc_judge() gives one
 * process, with a stub probe (struct probe_ops) standing for the memory
 * reader and the runtime lookup: young processes wait; the recheck time of
 * each verdict (not Python: TARGETS_RECHECK_OFTEN refreshes, or every scan
 * while young; unsupported and unreadable: TARGETS_RECHECK_RARE); dropped
 * and over the label limit until the config changes; limits.max_targets;
 * what an active verdict hands over. Whether a due recheck really happens is
 * the loop's (test_loop.c).
 */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include "base/alloc.h"
#include "memread_fake.h"
#include "python/pyversion.h"
#include "daemon/targets.h"

#define S   1000000000ull
#define NOW (1000 * S)

/* ---- a stub probe ---------------------------------------------------------- */

struct stub {
    int open_err;   /* open() returns it; 0: a reader */
    int locate_err; /* locate() returns it after filling in rt */
    struct pyruntime rt;
    const char *why;
    unsigned opens, locates;
    struct memread *opened; /* the last reader handed out */
};

static int stub_open(void *arg, pid_t pid, struct memread **out)
{
    struct stub *st = arg;
    (void)pid;
    st->opens++;
    if (st->open_err)
        return st->open_err;
    struct memread_fake *fake;
    int err = memread_fake_open(&fake, out);
    if (!err)
        st->opened = *out;
    return err;
}

static int stub_locate(void *arg, const char *proc_root, pid_t pid, struct memread *mr,
                       struct pyruntime *out, char *why, size_t why_len)
{
    struct stub *st = arg;
    (void)proc_root;
    (void)pid;
    assert_ptr_equal(mr, st->opened); /* the reader open() gave */
    st->locates++;
    *out = st->rt;
    snprintf(why, why_len, "%s", st->why ? st->why : "");
    return st->locate_err;
}

static struct probe_ops stub_ops(struct stub *st)
{
    return (struct probe_ops){.open = stub_open, .locate = stub_locate, .arg = st};
}

/* A stub for a CPython 3.@minor.@micro final release at 0x7f0000001000. */
static struct stub stub_python(unsigned minor, unsigned micro)
{
    struct stub st = {0};
    st.rt.raddr = 0x7f0000001000ull;
    st.rt.initialized = true;
    st.rt.version = (struct py_version){
        .hex = (3ull << 24) | ((uint64_t)minor << 16) | ((uint64_t)micro << 8) | 0xf0,
        .major = 3,
        .minor = minor,
        .micro = micro,
        .level = PY_RELEASE_FINAL,
    };
    snprintf(st.rt.path, sizeof(st.rt.path), "/usr/bin/python3.%u", minor);
    return st;
}

/* ---- config, processes ----------------------------------------------------- */

static struct pyprofd_config *load(const char *yaml)
{
    struct config_load_opts o = {.skip_file_checks = true};
    struct pyprofd_config *c = NULL;
    struct config_errors e = {0};
    int err = config_load_buffer(yaml, strlen(yaml), "t.yml", &o, &c, &e);
    if (err) {
        char buf[CONFIG_ERROR_MAX];
        fail_msg("%s", e.n ? config_error_format(&e, 0, buf, sizeof(buf)) : "load failed");
    }
    config_errors_release(&e);
    return c;
}

#define YAML_BASE                                                                                  \
    "discovery:\n"                                                                                 \
    "  refresh_interval: 10s\n"                                                                    \
    "  min_process_age: 5s\n"

static const char yaml_one_job[] = YAML_BASE "profile_configs:\n"
                                             "  - job_name: app\n";

/* A process @age_ns old (-1: unknown) as a scan reports it. */
static struct proc_info info_of(pid_t pid, int64_t age_ns)
{
    return (struct proc_info){
        .key = {.pid = pid, .start_ticks = 1234},
        .ppid = 1,
        .nspid = pid,
        .state = 'S',
        .start_time_ns = age_ns < 0 ? -1 : (int64_t)NOW - age_ns,
        .age_ns = age_ns,
        .comm = "python3",
        .cmdline = "/usr/bin/python3 -m app",
        .exe = "/usr/bin/python3.14",
        .cwd = "/srv/app",
        .username = "root",
        .cgroup_path = "/system.slice/app.service",
        .container_id = "",
        .container_runtime = "",
    };
}

struct fx {
    struct proc_table *t;
    struct proc_entry *p;
    struct proc_info info;
    size_t mem_before;
    const struct pod_source *pods; /* NULL: no pod metadata */
};

static void fx_open(struct fx *fx, pid_t pid, int64_t age_ns)
{
    fx->mem_before = alloc_in_use();
    assert_int_equal(proc_table_new(16, &fx->t), 0);
    fx->info = info_of(pid, age_ns);
    fx->p = proc_table_add(fx->t, &fx->info.key);
    assert_non_null(fx->p);
}

static void fx_close(struct fx *fx)
{
    proc_table_free(fx->t);
    assert_int_equal(alloc_in_use(), fx->mem_before); /* the verdict kept nothing */
}

/* Judges fx's process under @cfg with @st at @now; the verdict is released unless @keep. */
static struct verdict judge(struct fx *fx, const struct pyprofd_config *cfg, struct stub *st,
                            uint64_t now, size_t ntargets, size_t max_targets)
{
    struct probe_ops ops = stub_ops(st);
    struct verdict v;
    proc_judge(cfg, &ops, fx->pods, fx->p, &fx->info, now, ntargets, max_targets, &v);
    assert_int_equal(v.state, fx->p->state);
    if (v.state != PROC_ACTIVE) {
        /* only an active verdict hands anything over */
        assert_null(v.mr);
        assert_null(v.rt);
        assert_int_equal(v.labels.n, 0);
        assert_int_equal(v.meta.n, 0);
    }
    return v;
}

/* ---- tests ----------------------------------------------------------------- */

static void test_targets__young_process_waits(void **state)
{
    (void)state;
    struct pyprofd_config *cfg = load(yaml_one_job);
    struct fx fx;
    fx_open(&fx, 100, (int64_t)(2 * S)); /* min_process_age is 5s */
    struct stub st = stub_python(14, 8);
    struct verdict v = judge(&fx, cfg, &st, NOW, 0, 10);
    assert_int_equal(v.state, PROC_YOUNG);
    assert_int_equal(fx.p->recheck_ns, NOW); /* looked at again at the next scan */
    assert_false(v.log);
    assert_false(v.gone);
    assert_int_equal(st.opens, 0); /* its memory is not touched yet */
    assert_string_equal(fx.p->comm, "python3");
    /* old enough at the next scan: judged */
    fx.info.age_ns = (int64_t)(12 * S);
    v = judge(&fx, cfg, &st, NOW + 10 * S, 0, 10);
    assert_int_equal(v.state, PROC_ACTIVE);
    assert_int_equal(st.opens, 1);
    verdict_release(&v);
    fx_close(&fx);
    config_free(cfg);
}

static void test_targets__unknown_age_is_not_young(void **state)
{
    (void)state;
    struct pyprofd_config *cfg = load(yaml_one_job);
    struct fx fx;
    fx_open(&fx, 100, -1); /* no btime: the age is unknown */
    struct stub st = stub_python(14, 8);
    struct verdict v = judge(&fx, cfg, &st, NOW, 0, 10);
    assert_int_equal(v.state, PROC_ACTIVE);
    verdict_release(&v);
    fx_close(&fx);
    config_free(cfg);
}

static void test_targets__not_python_is_rechecked_after_some_refreshes(void **state)
{
    (void)state;
    struct pyprofd_config *cfg = load(yaml_one_job);
    struct fx fx;
    fx_open(&fx, 100, (int64_t)(120 * S));
    struct stub st = {.locate_err = -ENOENT, .why = "no python library or executable is mapped"};
    st.rt.miss = PYRUNTIME_MISS_NO_CANDIDATE;
    struct verdict v = judge(&fx, cfg, &st, NOW, 0, 10);
    assert_int_equal(v.state, PROC_NOT_PYTHON);
    assert_int_equal(TARGETS_RECHECK_OFTEN, 6); /* as targets.h and docs say */
    assert_int_equal(fx.p->recheck_ns, NOW + TARGETS_RECHECK_OFTEN * 10 * S);
    assert_string_equal(fx.p->reason, "no python library or executable is mapped");
    assert_false(v.log); /* most processes are not Python: quiet */
    assert_int_equal(st.locates, 1);
    fx_close(&fx);
    config_free(cfg);
}

static void test_targets__young_not_python_is_rechecked_every_scan(void **state)
{
    (void)state;
    struct pyprofd_config *cfg = load(yaml_one_job);
    struct fx fx;
    /* past min_process_age, younger than TARGETS_YOUNG_NS: its runtime may
     * not be set up yet */
    fx_open(&fx, 100, (int64_t)(10 * S));
    struct stub st = {.locate_err = -ENOENT, .why = "no runtime yet"};
    st.rt.miss = PYRUNTIME_MISS_NO_COOKIE;
    struct verdict v = judge(&fx, cfg, &st, NOW, 0, 10);
    assert_int_equal(v.state, PROC_NOT_PYTHON);
    assert_int_equal(fx.p->recheck_ns, NOW);
    /* once TARGETS_YOUNG_NS old: the long wait */
    fx.info.age_ns = TARGETS_YOUNG_NS;
    v = judge(&fx, cfg, &st, NOW + 20 * S, 0, 10);
    assert_int_equal(v.state, PROC_NOT_PYTHON);
    assert_int_equal(fx.p->recheck_ns, NOW + 20 * S + TARGETS_RECHECK_OFTEN * 10 * S);
    fx_close(&fx);
    config_free(cfg);
}

static void test_targets__unsupported_and_unreadable_are_rechecked_rarely(void **state)
{
    (void)state;
    struct pyprofd_config *cfg = load(yaml_one_job);
    const uint64_t rare = NOW + TARGETS_RECHECK_RARE * 10 * S;
    assert_int_equal(TARGETS_RECHECK_RARE, 30);
    struct {
        struct stub st;
        enum proc_state want;
        const char *reason; /* a part of it */
        const char *version;
    } cases[] = {
        /* its memory may not be read */
        {.st = {.open_err = -EPERM}, .want = PROC_UNREADABLE, .reason = "cannot read its memory"},
        /* Python 3.12: no debug offsets table */
        {.st = {.locate_err = -ENOENT, .rt = {.name_minor = 12, .miss = PYRUNTIME_MISS_NO_COOKIE}},
         .want = PROC_UNSUPPORTED,
         .reason = "Python 3.12 has no debug offsets table",
         .version = "3.12"},
        /* python files it maps that may not be opened */
        {.st = {.locate_err = -ENOENT,
                .rt = {.miss = PYRUNTIME_MISS_UNREADABLE},
                .why = "cannot open '/usr/lib/libpython3.14.so'"},
         .want = PROC_UNREADABLE,
         .reason = "cannot open '/usr/lib/libpython3.14.so'"},
        /* its maps may not be read */
        {.st = {.locate_err = -EPERM, .why = "permission denied"},
         .want = PROC_UNREADABLE,
         .reason = "cannot find its runtime: permission denied"},
        /* a runtime pyprofd cannot read yet */
        {.st = stub_python(16, 0),
         .want = PROC_UNSUPPORTED,
         .reason = "not supported",
         .version = "3.16.0"},
    };
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(cases); i++) {
        struct fx fx;
        fx_open(&fx, 100, (int64_t)(120 * S));
        struct verdict v = judge(&fx, cfg, &cases[i].st, NOW, 0, 10);
        assert_int_equal(v.state, cases[i].want);
        assert_int_equal(fx.p->recheck_ns, rare);
        if (!strstr(fx.p->reason, cases[i].reason))
            fail_msg("case %zu: reason '%s' lacks '%s'", i, fx.p->reason, cases[i].reason);
        if (cases[i].version)
            assert_string_equal(fx.p->version, cases[i].version);
        assert_true(v.log); /* said once, when it comes to be in the state */
        /* the recheck finds the same: not said again */
        v = judge(&fx, cfg, &cases[i].st, rare, 0, 10);
        assert_int_equal(v.state, cases[i].want);
        assert_false(v.log);
        assert_int_equal(fx.p->recheck_ns, rare + TARGETS_RECHECK_RARE * 10 * S);
        fx_close(&fx);
    }
    config_free(cfg);
}

static void test_targets__gone_meanwhile(void **state)
{
    (void)state;
    struct pyprofd_config *cfg = load(yaml_one_job);
    struct stub gone_at_open = {.open_err = -ESRCH};
    struct stub gone_at_locate = {.locate_err = -ESRCH};
    struct stub *stubs[] = {&gone_at_open, &gone_at_locate};
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(stubs); i++) {
        struct fx fx;
        fx_open(&fx, 100, (int64_t)(120 * S));
        struct verdict v = judge(&fx, cfg, stubs[i], NOW, 0, 10);
        assert_true(v.gone);
        assert_false(v.log);
        fx_close(&fx);
    }
    config_free(cfg);
}

static void test_targets__dropped_by_relabeling_until_the_config_changes(void **state)
{
    (void)state;
    struct pyprofd_config *cfg = load(YAML_BASE "profile_configs:\n"
                                                "  - job_name: workers\n"
                                                "    relabel_configs:\n"
                                                "      - source_labels: [__meta_process_comm]\n"
                                                "        regex: celery\n"
                                                "        action: keep\n");
    struct fx fx;
    fx_open(&fx, 100, (int64_t)(120 * S));
    struct stub st = stub_python(14, 8);
    struct verdict v = judge(&fx, cfg, &st, NOW, 0, 10);
    assert_int_equal(v.state, PROC_DROPPED);
    assert_int_equal(fx.p->recheck_ns, UINT64_MAX); /* never, under this config */
    assert_string_equal(fx.p->reason, "no job's relabel_configs kept it");
    assert_false(v.log);
    assert_string_equal(fx.p->version, "3.14.8");
    /* a reload: judged again at the next scan */
    proc_table_forget_verdicts(fx.t);
    assert_int_equal(fx.p->state, PROC_NEW);
    assert_int_equal(fx.p->recheck_ns, 0);
    fx_close(&fx);
    config_free(cfg);
}

static void test_targets__reload_keeps_verdicts_that_do_not_depend_on_the_config(void **state)
{
    (void)state;
    struct pyprofd_config *cfg = load(yaml_one_job);
    struct fx fx;
    fx_open(&fx, 100, (int64_t)(120 * S));
    struct stub st = {.locate_err = -ENOENT, .why = "no python"};
    (void)judge(&fx, cfg, &st, NOW, 0, 10);
    assert_int_equal(fx.p->state, PROC_NOT_PYTHON);
    proc_table_forget_verdicts(fx.t);
    assert_int_equal(fx.p->state, PROC_NOT_PYTHON);
    assert_int_equal(fx.p->recheck_ns, NOW + TARGETS_RECHECK_OFTEN * 10 * S);
    fx_close(&fx);
    config_free(cfg);
}

static void test_targets__too_many_labels_is_over_limit_with_the_reason(void **state)
{
    (void)state;
    /* job, service_name and two external labels: 4 */
    struct pyprofd_config *cfg =
        load("global:\n"
             "  external_labels:\n"
             "    cluster: c1\n"
             "    region: r1\n"
             "  limits:\n"
             "    max_labels_per_profile: 3\n" YAML_BASE "profile_configs:\n"
             "  - job_name: app\n");
    struct fx fx;
    fx_open(&fx, 100, (int64_t)(120 * S));
    struct stub st = stub_python(14, 8);
    struct verdict v = judge(&fx, cfg, &st, NOW, 0, 10);
    assert_int_equal(v.state, PROC_OVER_LIMIT);
    assert_non_null(strstr(fx.p->reason, "limits.max_labels_per_profile (3) exceeded: 4 labels"));
    assert_int_equal(fx.p->recheck_ns, UINT64_MAX); /* until the config changes */
    assert_true(v.log);                             /* said, though over_limit usually is not */
    /* judged again after a reload */
    proc_table_forget_verdicts(fx.t);
    assert_int_equal(fx.p->state, PROC_NEW);
    assert_int_equal(fx.p->recheck_ns, 0);
    fx_close(&fx);
    config_free(cfg);
    /* 4 allowed: sampled */
    cfg = load("global:\n"
               "  external_labels:\n"
               "    cluster: c1\n"
               "    region: r1\n"
               "  limits:\n"
               "    max_labels_per_profile: 4\n" YAML_BASE "profile_configs:\n"
               "  - job_name: app\n");
    fx_open(&fx, 100, (int64_t)(120 * S));
    v = judge(&fx, cfg, &st, NOW, 0, 10);
    assert_int_equal(v.state, PROC_ACTIVE);
    assert_int_equal(v.labels.n, 4);
    verdict_release(&v);
    fx_close(&fx);
    config_free(cfg);
}

static void test_targets__max_targets_reached_is_over_limit_until_the_next_scan(void **state)
{
    (void)state;
    struct pyprofd_config *cfg = load(yaml_one_job);
    struct fx fx;
    fx_open(&fx, 100, (int64_t)(120 * S));
    struct stub st = stub_python(14, 8);
    struct verdict v = judge(&fx, cfg, &st, NOW, 2, 2);
    assert_int_equal(v.state, PROC_OVER_LIMIT);
    assert_string_equal(fx.p->reason, "limits.max_targets (2) reached");
    assert_int_equal(fx.p->recheck_ns, NOW); /* room may be made by then */
    assert_false(v.log);
    /* a target ended meanwhile */
    v = judge(&fx, cfg, &st, NOW + 10 * S, 1, 2);
    assert_int_equal(v.state, PROC_ACTIVE);
    assert_string_equal(fx.p->reason, "");
    verdict_release(&v);
    fx_close(&fx);
    config_free(cfg);
}

static void test_targets__active_hands_over_job_labels_reader_and_runtime(void **state)
{
    (void)state;
    /* the first job keeps only celery; the second everything */
    struct pyprofd_config *cfg = load("global:\n"
                                      "  external_labels:\n"
                                      "    cluster: c1\n" YAML_BASE "profile_configs:\n"
                                      "  - job_name: workers\n"
                                      "    relabel_configs:\n"
                                      "      - source_labels: [__meta_process_comm]\n"
                                      "        regex: celery\n"
                                      "        action: keep\n"
                                      "  - job_name: rest\n"
                                      "    relabel_configs:\n"
                                      "      - source_labels: [__meta_process_pid]\n"
                                      "        target_label: pid\n");
    struct fx fx;
    fx_open(&fx, 4321, (int64_t)(120 * S));
    struct stub st = stub_python(14, 8);
    struct verdict v = judge(&fx, cfg, &st, NOW, 0, 10);
    assert_int_equal(v.state, PROC_ACTIVE);
    assert_false(v.gone);
    assert_int_equal(v.job, 1);
    assert_string_equal(cfg->jobs[v.job].job_name, "rest");
    /* the reader opened and the runtime found are the caller's now */
    assert_non_null(v.mr);
    assert_ptr_equal(v.mr, st.opened);
    assert_non_null(v.rt);
    assert_int_equal(v.rt->raddr, 0x7f0000001000ull);
    assert_string_equal(v.rt->path, "/usr/bin/python3.14");
    assert_string_equal(fx.p->version, "3.14.8");
    /* meta labels as discovered, with the version */
    assert_string_equal(labels_get(&v.meta, "__meta_python_version"), "3.14.8");
    assert_string_equal(labels_get(&v.meta, "__meta_process_pid"), "4321");
    /* labels: the job's relabeling, the default service name, external labels; no meta */
    assert_string_equal(labels_get(&v.labels, "job"), "rest");
    assert_string_equal(labels_get(&v.labels, "pid"), "4321");
    assert_string_equal(labels_get(&v.labels, "service_name"), "app");
    assert_string_equal(labels_get(&v.labels, "cluster"), "c1");
    assert_null(labels_get(&v.labels, "__meta_process_pid"));
    assert_int_equal(v.labels.n, 4);
    assert_int_equal(fx.p->state, PROC_ACTIVE);
    assert_string_equal(fx.p->reason, "");
    verdict_release(&v);
    assert_null(v.mr);
    assert_null(v.rt);
    fx_close(&fx);
    config_free(cfg);
}

/*
 * The transitions the loop asks for (targets.h): an active process whose
 * target ended is judged again at the next scan; one attached again is
 * counted, with why and its next failing spell; a failed start keeps the
 * reason it was given first; a process found gone is not seen, and the
 * sweep forgets it.
 */
static void test_targets__entry_transitions(void **state)
{
    (void)state;
    struct proc_table *t;
    assert_int_equal(proc_table_new(4, &t), 0);
    struct proc_key k1 = {.pid = 10, .start_ticks = 1}, k2 = {.pid = 11, .start_ticks = 1};
    struct proc_entry *p = proc_table_add(t, &k1);
    int target;
    proc_entry_activate(p, &target);
    assert_int_equal(p->state, PROC_ACTIVE);
    assert_ptr_equal(p->target, &target);
    p->recheck_ns = NOW;
    p->seen = false;
    proc_entry_requeue(p);
    assert_int_equal(p->state, PROC_NEW);
    assert_null(p->target);
    assert_true(p->seen);
    assert_int_equal(p->recheck_ns, 0);
    assert_int_equal(p->reattaches, 0);
    proc_entry_activate(p, &target);
    proc_entry_reattach(p, "it runs another program (exec)", 20 * S);
    proc_entry_reattach(p, "every attempt for 10 s failed", 0);
    assert_int_equal(p->state, PROC_NEW);
    assert_null(p->target);
    assert_int_equal(p->reattaches, 2);
    assert_string_equal(p->reattach_why, "every attempt for 10 s failed");
    assert_int_equal(p->stuck_ns, 0);
    proc_entry_activate(p, &target);
    snprintf(p->reason, sizeof(p->reason), "cannot read the runtime: bad table");
    proc_entry_fail(p, "Invalid argument", NOW + S);
    assert_int_equal(p->state, PROC_FAILED);
    assert_null(p->target);
    assert_int_equal(p->recheck_ns, NOW + S);
    assert_string_equal(p->reason, "cannot read the runtime: bad table");
    p->reason[0] = '\0';
    proc_entry_fail(p, "Invalid argument", NOW + S);
    assert_string_equal(p->reason, "Invalid argument");
    proc_entry_relabelled(p, 7);
    assert_int_equal(p->pod_rev, 7);
    struct proc_entry *q = proc_table_add(t, &k2);
    proc_entry_lost(q);
    proc_table_sweep(t, NULL, NULL);
    assert_int_equal(proc_table_count(t), 1);
    assert_non_null(proc_table_find(t, &k1));
    assert_null(proc_table_find(t, &k2));
    proc_table_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_targets__young_process_waits),
        cmocka_unit_test(test_targets__unknown_age_is_not_young),
        cmocka_unit_test(test_targets__not_python_is_rechecked_after_some_refreshes),
        cmocka_unit_test(test_targets__young_not_python_is_rechecked_every_scan),
        cmocka_unit_test(test_targets__unsupported_and_unreadable_are_rechecked_rarely),
        cmocka_unit_test(test_targets__gone_meanwhile),
        cmocka_unit_test(test_targets__dropped_by_relabeling_until_the_config_changes),
        cmocka_unit_test(test_targets__reload_keeps_verdicts_that_do_not_depend_on_the_config),
        cmocka_unit_test(test_targets__too_many_labels_is_over_limit_with_the_reason),
        cmocka_unit_test(test_targets__max_targets_reached_is_over_limit_until_the_next_scan),
        cmocka_unit_test(test_targets__active_hands_over_job_labels_reader_and_runtime),
        cmocka_unit_test(test_targets__entry_transitions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
