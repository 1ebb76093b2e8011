/* SPDX-License-Identifier: MIT */
/*
 * Tests for agent/config/config.c and config_yaml.c: every error path with
 * its exact FILE:LINE:COLUMN, error collection, defaults, inheritance, ${VAR}
 * expansion, the shipped files and printing.
 */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "config/config.h"

#define NS_PER_SEC 1000000000ull

struct want {
    const char *pos;  /* "LINE:COL" */
    const char *text; /* a substring of the message */
};

static const char *fake_getenv(const char *name, void *ctx)
{
    (void)ctx;
    if (strcmp(name, "NODE_NAME") == 0)
        return "worker-7";
    if (strcmp(name, "RATE") == 0)
        return "250";
    if (strcmp(name, "MODE") == 0)
        return "wall";
    if (strcmp(name, "EVIL") == 0)
        return "t\r\nX-Injected: 1";
    return NULL;
}

/*
 * Loads @yaml as "t.yml". The files it names (/ca, /p, ...) are not opened:
 * these tests are about the YAML; test_config__checks_named_files is about
 * the files.
 */
static int load(const char *yaml, bool env, struct pyprofd_config **c, struct config_errors *e)
{
    struct config_load_opts o = {
        .expand_env = env, .getenv_fn = fake_getenv, .skip_file_checks = true};
    memset(e, 0, sizeof(*e));
    return config_load_buffer(yaml, strlen(yaml), "t.yml", &o, c, e);
}

/* Error @i of @e as "FILE:LINE:COLUMN: message" (valid until the fourth next call). */
static const char *msg(const struct config_errors *e, size_t i)
{
    static char bufs[4][CONFIG_ERROR_MAX];
    static size_t next;
    char *b = bufs[next++ % 4];
    return config_error_format(e, i, b, CONFIG_ERROR_MAX);
}

static void dump_errors(const struct config_errors *e)
{
    for (size_t i = 0; i < e->n; i++)
        print_message("  %s\n", msg(e, i));
}

/* Loading @yaml fails with exactly the errors @w, in this order. */
static void expect_errors_(const char *yaml, const struct want *w, size_t n, int line)
{
    struct pyprofd_config *c = NULL;
    struct config_errors e;
    int rc = load(yaml, false, &c, &e);
    assert_null(c);
    if (rc != -EINVAL || e.n != n) {
        dump_errors(&e);
        fail_msg("line %d: rc %d, %zu errors, want %zu", line, rc, e.n, n);
    }
    for (size_t i = 0; i < n; i++) {
        char prefix[64];
        snprintf(prefix, sizeof(prefix), "t.yml:%s: ", w[i].pos);
        if (strncmp(msg(&e, i), prefix, strlen(prefix)) != 0 || !strstr(msg(&e, i), w[i].text)) {
            dump_errors(&e);
            fail_msg("line %d: error %zu is '%s', want '%s...%s'", line, i, msg(&e, i), prefix,
                     w[i].text);
        }
    }
    config_errors_release(&e);
}

#define expect_errors(yaml, ...)                                                                   \
    do {                                                                                           \
        static const struct want w_[] = {__VA_ARGS__};                                             \
        expect_errors_((yaml), w_, PYPROFD_ARRAY_SIZE(w_), __LINE__);                              \
    } while (0)

static struct pyprofd_config *load_ok(const char *yaml, bool env)
{
    struct pyprofd_config *c = NULL;
    struct config_errors e;
    int rc = load(yaml, env, &c, &e);
    if (rc) {
        dump_errors(&e);
        fail_msg("load failed: %d", rc);
    }
    config_errors_release(&e);
    return c;
}

/* ---- defaults ---- */

static void test_config__empty_file_gives_defaults(void **state)
{
    (void)state;
    static const char *const empties[] = {"", "# only a comment\n", "---\n", "~\n", "\n\n"};
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(empties); i++) {
        struct pyprofd_config *c = load_ok(empties[i], false);
        assert_int_equal(c->njobs, 0);
        assert_int_equal(c->nremote_write, 0);
        assert_true(c->global.sample_rate == 100);
        assert_int_equal(c->global.mode, PROFILE_CPU);
        assert_true(c->global.profile_interval_ns == 15 * NS_PER_SEC);
        assert_int_equal(c->global.external_labels.n, 0);
        assert_true(c->global.limits.max_targets == 1000);
        assert_true(c->global.limits.max_labels_per_profile == 25);
        assert_true(c->global.limits.max_profile_bytes == 4u << 20);
        assert_true(c->global.limits.target_memory_bytes == 16u << 20);
        assert_true(c->global.limits.cpu_budget == 0.5);
        assert_true(c->discovery.refresh_interval_ns == 10 * NS_PER_SEC);
        assert_string_equal(c->discovery.proc_root, "/proc");
        assert_true(c->discovery.min_process_age_ns == 0);
        assert_int_equal(c->discovery.watch, CONFIG_WATCH_AUTO);
        assert_null(c->storage.directory);
        assert_true(c->storage.retention_ns == 3600 * NS_PER_SEC);
        assert_true(c->storage.max_bytes == 1ull << 30);
        assert_string_equal(c->server.listen_address, "127.0.0.1:7979");
        assert_false(c->server.enable_lifecycle);
        assert_true(c->server.max_concurrent_profiles == 4);
        assert_string_equal(c->source, "t.yml");
        config_free(c);
    }
}

static void test_config__default_config(void **state)
{
    (void)state;
    struct pyprofd_config *c = NULL;
    assert_int_equal(config_default(&c), 0);
    assert_int_equal(c->njobs, 1);
    assert_string_equal(c->jobs[0].job_name, "python");
    assert_true(c->jobs[0].sample_rate == 100);
    assert_int_equal(c->jobs[0].mode, PROFILE_CPU);
    assert_true(c->jobs[0].all_threads);
    assert_true(c->jobs[0].gc);
    assert_int_equal(c->jobs[0].native, CONFIG_NATIVE_OFF);
    assert_false(c->jobs[0].async_aware);
    assert_non_null(c->jobs[0].relabel);
    assert_int_equal(relabel_count(c->jobs[0].relabel), 0);
    assert_string_equal(c->server.listen_address, "127.0.0.1:7979");
    config_free(c);
    config_free(NULL);
}

/* ---- values ---- */

static void test_config__inheritance_and_overrides(void **state)
{
    (void)state;
    /* global after the jobs: inheritance does not depend on key order */
    struct pyprofd_config *c = load_ok("profile_configs:\n"
                                       "  - job_name: a\n"
                                       "  - job_name: b\n"
                                       "    sample_rate: 19.5\n"
                                       "    mode: wall\n"
                                       "    profile_interval: 1m\n"
                                       "    gc: false\n"
                                       "    native: true\n"
                                       "    async_aware: True\n"
                                       "    async_mode: all\n"
                                       "    all_threads: FALSE\n"
                                       "global:\n"
                                       "  sample_rate: 50\n"
                                       "  mode: gil\n"
                                       "  profile_interval: 10s\n",
                                       false);
    assert_int_equal(c->njobs, 2);
    assert_true(c->jobs[0].sample_rate == 50);
    assert_int_equal(c->jobs[0].mode, PROFILE_GIL);
    assert_true(c->jobs[0].profile_interval_ns == 10 * NS_PER_SEC);
    assert_true(c->jobs[0].gc);
    assert_true(c->jobs[1].sample_rate == 19.5);
    assert_int_equal(c->jobs[1].mode, PROFILE_WALL);
    assert_true(c->jobs[1].profile_interval_ns == 60 * NS_PER_SEC);
    assert_false(c->jobs[1].gc);
    assert_int_equal(c->jobs[1].native, CONFIG_NATIVE_TRUE);
    assert_true(c->jobs[1].async_aware);
    assert_false(c->jobs[1].all_threads);
    assert_int_equal(c->jobs[1].async_mode, CONFIG_ASYNC_ALL);
    config_free(c);
}

static void test_config__all_sections(void **state)
{
    (void)state;
    struct pyprofd_config *c =
        load_ok("global:\n"
                "  external_labels: {cluster: eu, empty: \"\"}\n"
                "  limits: {max_targets: 7, max_labels_per_profile: 9, max_profile_bytes: 1MB,\n"
                "           target_memory_bytes: 128KiB, cpu_budget: 150%}\n"
                "discovery: {refresh_interval: 2s, proc_root: /host/proc, min_process_age: 0}\n"
                "remote_write:\n"
                "  - type: pyroscope\n"
                "    api: ingest\n"
                "    url: https://p.example/\n"
                "    remote_timeout: 3s\n"
                "    tenant_id: t1\n"
                "    headers: {X-A: b}\n"
                "    basic_auth: {username: u, password: pw}\n"
                "    tls_config: {ca_file: /ca, cert_file: /c, key_file: /k, server_name: s,\n"
                "                 insecure_skip_verify: true}\n"
                "    queue: {max_profiles: 5, max_bytes: 2MB, min_backoff: 1s, max_backoff: 2s,\n"
                "            max_retries: 0}\n"
                "  - name: pc\n"
                "    type: parca\n"
                "    url: http://parca:7070\n"
                "    authorization: {credentials_file: /tok}\n"
                "storage: {directory: /var/lib/p, retention: 2h, max_bytes: 2GB}\n"
                "server: {listen_address: '[::1]:80', enable_lifecycle: true,\n"
                "         max_concurrent_profiles: 16}\n",
                false);
    assert_int_equal(c->global.external_labels.n, 1); /* the empty one is no label */
    assert_string_equal(labels_get(&c->global.external_labels, "cluster"), "eu");
    assert_true(c->global.limits.max_targets == 7);
    assert_true(c->global.limits.max_labels_per_profile == 9);
    assert_true(c->global.limits.max_profile_bytes == 1u << 20);
    assert_true(c->global.limits.target_memory_bytes == 128u << 10);
    assert_true(c->global.limits.cpu_budget == 1.5);
    assert_true(c->discovery.refresh_interval_ns == 2 * NS_PER_SEC);
    assert_string_equal(c->discovery.proc_root, "/host/proc");
    assert_true(c->discovery.min_process_age_ns == 0);
    assert_int_equal(c->nremote_write, 2);
    const struct config_remote_write *p = &c->remote_write[0], *q = &c->remote_write[1];
    assert_string_equal(p->name, "pyroscope-0");
    assert_int_equal(p->type, CONFIG_PUSH_PYROSCOPE);
    assert_int_equal(p->api, CONFIG_PYROSCOPE_API_INGEST);
    assert_string_equal(p->url, "https://p.example/");
    assert_true(p->remote_timeout_ns == 3 * NS_PER_SEC);
    assert_string_equal(p->tenant_id, "t1");
    assert_string_equal(labels_get(&p->headers, "X-A"), "b");
    assert_string_equal(p->basic_auth_username, "u");
    assert_string_equal(p->basic_auth_password, "pw");
    assert_null(p->basic_auth_password_file);
    assert_string_equal(p->tls_ca_file, "/ca");
    assert_string_equal(p->tls_server_name, "s");
    assert_true(p->tls_insecure_skip_verify);
    assert_true(p->queue_max_profiles == 5);
    assert_true(p->queue_max_bytes == 2u << 20);
    assert_true(p->min_backoff_ns == NS_PER_SEC);
    assert_true(p->max_backoff_ns == 2 * NS_PER_SEC);
    assert_true(p->max_retries == 0);
    assert_non_null(p->write_relabel);
    assert_string_equal(q->name, "pc");
    assert_int_equal(q->type, CONFIG_PUSH_PARCA);
    assert_string_equal(q->authorization_type, "Bearer");
    assert_string_equal(q->authorization_credentials_file, "/tok");
    assert_true(q->remote_timeout_ns == 10 * NS_PER_SEC);
    assert_true(q->queue_max_profiles == 100);
    assert_true(q->max_retries == 10);
    assert_string_equal(c->storage.directory, "/var/lib/p");
    assert_true(c->storage.retention_ns == 7200 * NS_PER_SEC);
    assert_string_equal(c->server.listen_address, "[::1]:80");
    assert_true(c->server.enable_lifecycle);
    assert_true(c->server.max_concurrent_profiles == 16);
    config_free(c);

    /* "" disables the server; cpu_budget as a fraction */
    c = load_ok("server: {listen_address: \"\"}\nglobal: {limits: {cpu_budget: 0.25}}\n", false);
    assert_string_equal(c->server.listen_address, "");
    assert_false(c->server.listen_address_expanded);
    assert_true(c->global.limits.cpu_budget == 0.25);
    config_free(c);
}

/*
 * A listen_address that ${VAR} expansion emptied (an unset variable) turns
 * the server off like "" does; the config says where it came from, so that
 * the agent can warn (agent.c) while an explicit "" stays quiet.
 */
static void test_config__listen_address_emptied_by_expansion(void **state)
{
    (void)state;
    struct pyprofd_config *c = load_ok("server: {listen_address: \"${UNSET}\"}\n", true);
    assert_string_equal(c->server.listen_address, "");
    assert_true(c->server.listen_address_expanded);
    config_free(c);
    c = load_ok("server: {listen_address: \"\"}\n", true);
    assert_string_equal(c->server.listen_address, "");
    assert_false(c->server.listen_address_expanded);
    config_free(c);
    c = load_ok("server: {listen_address: \"${NODE_NAME}:7979\"}\n", true);
    assert_string_equal(c->server.listen_address, "worker-7:7979");
    assert_true(c->server.listen_address_expanded);
    config_free(c);
    /* not expanded without --config.expand-env, and then not a host:port */
    expect_errors("server: {listen_address: \"${UNSET}\"}\n",
                  {"1:26", "server.listen_address: expected host:port"});
}

static void test_config__env_expansion(void **state)
{
    (void)state;
    static const char *const yaml = "global:\n"
                                    "  sample_rate: ${RATE}\n"
                                    "  mode: ${MODE:-cpu}\n"
                                    "  external_labels:\n"
                                    "    node: ${NODE_NAME}\n"
                                    "    zone: ${ZONE:-z1}\n"
                                    "    gone: ${UNSET}\n"
                                    "profile_configs:\n"
                                    "  - job_name: j\n"
                                    "    relabel_configs:\n"
                                    "      - source_labels: [__meta_process_exe]\n"
                                    "        regex: (.*)/(?P<b>[^/]+)$$\n"
                                    "        target_label: exe\n"
                                    "        replacement: ${1}-$${b}\n";
    struct pyprofd_config *c = load_ok(yaml, true);
    assert_true(c->global.sample_rate == 250);
    assert_int_equal(c->global.mode, PROFILE_WALL);
    assert_string_equal(labels_get(&c->global.external_labels, "node"), "worker-7");
    assert_string_equal(labels_get(&c->global.external_labels, "zone"), "z1");
    assert_null(labels_get(&c->global.external_labels, "gone"));
    const struct relabel_rule_spec *s = relabel_spec(c->jobs[0].relabel, 0);
    assert_string_equal(s->regex, "(.*)/(?P<b>[^/]+)$");
    assert_string_equal(s->replacement, "${1}-${b}");
    config_free(c);

    /* without the option nothing is expanded: a plain string is no number */
    expect_errors(yaml, {"2:16", "global.sample_rate: expected a number, got '${RATE}'"},
                  {"3:9", "unknown mode '${MODE:-cpu}'"});

    /* keys are never expanded; an unterminated ${ is an error at its value */
    struct pyprofd_config *d = NULL;
    struct config_errors e;
    assert_int_equal(load("global:\n  external_labels:\n    a: x${NODE_NAME\n"
                          "  mode: ${NOPE\n",
                          true, &d, &e),
                     -EINVAL);
    assert_null(d);
    assert_int_equal(e.n, 2);
    assert_string_equal(msg(&e, 0), "t.yml:3:8: unterminated '${' in value");
    assert_string_equal(msg(&e, 1), "t.yml:4:9: unterminated '${' in value");
    config_errors_release(&e);
}

/* ---- errors ---- */

static void test_config__yaml_syntax_errors(void **state)
{
    (void)state;
    expect_errors("global:\n  sample_rate: [1, 2\n",
                  {"3:1", "invalid YAML: did not find expected"});
    expect_errors("global:\n sample_rate: 1\n  mode: cpu\n",
                  {"3:7", "invalid YAML: mapping values are not allowed"});
    expect_errors("a: 'unterminated\n", {"2:1", "invalid YAML: found unexpected end of stream"});
    expect_errors("global: {}\n---\nserver: {}\n", {"2:1", "only one YAML document is allowed"});
    expect_errors("global: &g {mode: cpu}\nserver: *g\n",
                  {"2:9", "YAML aliases ('*g') are not supported"});
    expect_errors("\tglobal: {}\n", {"1:1", "invalid YAML: found character that cannot start"});
}

static void test_config__structure_errors(void **state)
{
    (void)state;
    expect_errors("- a\n- b\n", {"1:1", "the top level must be a mapping"});
    expect_errors("globl:\n  mode: cpu\n", {"1:1", "unknown top-level key 'globl'"});
    expect_errors("global:\n  mode: cpu\n  sampling_rate: 1\n",
                  {"3:3", "global: unknown key 'sampling_rate'"});
    expect_errors("global:\n  - mode: cpu\n", {"2:3", "global: expected a mapping, got a list"});
    expect_errors("global: 5\n", {"1:9", "global: expected a mapping, got a scalar"});
    expect_errors("profile_configs:\n  job_name: a\n",
                  {"2:3", "profile_configs: expected a list, got a mapping"});
    expect_errors("global:\n  sample_rate: {hz: 1}\n",
                  {"2:16", "global.sample_rate: expected a single value, got a mapping"});
    expect_errors("global:\n  mode: cpu\n  mode: wall\n",
                  {"3:3", "global: duplicate key 'mode' (first at line 2)"});
    expect_errors("global:\n  ? [a]\n  : 1\n", {"2:5", "mapping keys must be plain names"});
}

static void test_config__global_value_errors(void **state)
{
    (void)state;
    expect_errors("global:\n  sample_rate: -5\n",
                  {"2:16", "global.sample_rate: must be in (0, 1000000] Hz, got -5"});
    expect_errors("global:\n  sample_rate: 0\n", {"2:16", "must be in (0, 1000000] Hz"});
    expect_errors("global:\n  sample_rate: fast\n", {"2:16", "expected a number, got 'fast'"});
    expect_errors("global:\n  sample_rate: \"100\"\n", {"2:16", "expected a number"});
    expect_errors("global:\n  sample_rate: .inf\n", {"2:16", "expected a number"});
    expect_errors("global:\n  sample_rate: 0x10\n", {"2:16", "expected a number"});
    expect_errors("global:\n  mode: turbo\n",
                  {"2:9", "global.mode: unknown mode 'turbo' (one of wall, cpu, gil, exception)"});
    expect_errors("global:\n  profile_interval: 15\n",
                  {"2:21", "global.profile_interval: invalid duration '15'"});
    expect_errors("global:\n  profile_interval: 1.5m\n", {"2:21", "invalid duration '1.5m'"});
    expect_errors("global:\n  profile_interval: 500ms\n",
                  {"2:21", "global.profile_interval: must be between 1s and 1d, got 500ms"});
    expect_errors("global:\n  external_labels:\n    bad-name: x\n    __x: y\n    ok: [1]\n",
                  {"3:5", "global.external_labels: 'bad-name' is not a valid label name"},
                  {"4:5", "label names starting with '__' are reserved"},
                  {"5:9", "global.external_labels.ok: expected a single value, got a list"});
    expect_errors("global:\n  limits:\n    max_targets: 0\n    max_profile_bytes: 4\n"
                  "    target_memory_bytes: 1KB\n    cpu_budget: 0\n    huge: 1\n",
                  {"3:18", "global.limits.max_targets: must be between 1 and 100000, got 0"},
                  {"4:24", "global.limits.max_profile_bytes: invalid size '4'"},
                  {"5:26", "global.limits.target_memory_bytes: must be between 64KiB and 64GiB"},
                  {"6:17", "global.limits.cpu_budget: must be in (0, 64] CPUs"},
                  {"7:5", "global.limits: unknown key 'huge'"});
    expect_errors("global:\n  limits:\n    cpu_budget: lots\n    max_targets: 1.5\n",
                  {"3:17", "expected a fraction of one CPU (0.5) or a percentage (50%)"},
                  {"4:18", "global.limits.max_targets: expected a whole number, got '1.5'"});
    expect_errors("global:\n  limits:\n    cpu_budget: 7000%\n", {"3:17", "must be in (0, 64]"});
}

static void test_config__discovery_storage_server_errors(void **state)
{
    (void)state;
    expect_errors("discovery:\n  proc_root: proc\n  refresh_interval: 0s\n  k8s: {}\n",
                  {"2:14", "discovery.proc_root: must be an absolute path, got 'proc'"},
                  {"3:21", "discovery.refresh_interval: must be between 1s and 1h, got 0s"},
                  {"4:3", "discovery: unknown key 'k8s'"});
    expect_errors(
        "discovery:\n  kubernetes:\n    source: etcd\n    api_server: ftp://x\n"
        "    watch_timeout: 1s\n    tls_config: {ca_file: ca.crt}\n",
        {"3:13", "discovery.kubernetes.source: unknown source 'etcd' (one of "
                 "api_server, kubelet)"},
        {"4:17", "discovery.kubernetes.api_server: 'ftp://x' is not an http:// or "
                 "https:// URL"},
        {"5:20", "discovery.kubernetes.watch_timeout: must be between 10s and 1h, got 1s"},
        {"6:27", "discovery.kubernetes.tls_config.ca_file: must be an absolute path"});
    expect_errors("storage:\n  retention: forever\n  max_bytes: 10KB\n  dir: /x\n",
                  {"2:14", "storage.retention: invalid duration 'forever'"},
                  {"3:14", "storage.max_bytes: must be between 1MiB and 1PiB, got 10KB"},
                  {"4:3", "storage: unknown key 'dir'"});
    expect_errors("server:\n  listen_address: localhost\n  enable_lifecycle: yes\n",
                  {"2:19", "server.listen_address: expected host:port"},
                  {"3:21", "server.enable_lifecycle: expected true or false, got 'yes'"});
    expect_errors("server:\n  listen_address: ':99999'\n", {"2:19", "expected host:port"});
    expect_errors("server:\n  listen_address: 'a:b:1'\n", {"2:19", "expected host:port"});
    expect_errors("server:\n  enable_lifecycle: \"true\"\n", {"2:21", "expected true or false"});
    expect_errors("server:\n  max_concurrent_profiles: 0\n",
                  {"2:28", "server.max_concurrent_profiles: must be between 1 and 64, got 0"});
    expect_errors("server:\n  max_concurrent_profiles: 65\n",
                  {"2:28", "server.max_concurrent_profiles: must be between 1 and 64, got 65"});
}

static void test_config__job_errors(void **state)
{
    (void)state;
    expect_errors("profile_configs:\n  - sample_rate: 10\n",
                  {"2:5", "profile_configs[0]: job_name is required"});
    expect_errors("profile_configs:\n  - job_name:\n", {"2:14", "job_name is required"});
    expect_errors("profile_configs:\n  - job_name: \"\"\n", {"2:15", "job_name is required"});
    expect_errors("profile_configs:\n  -\n", {"2:4", "profile_configs[0]: empty job"});
    expect_errors(
        "profile_configs:\n  - job_name: a\n  - job_name: b\n  - job_name: a\n",
        {"4:15", "profile_configs[2].job_name: duplicate job_name 'a' (first at line 2)"});
    expect_errors("profile_configs:\n  - job_name: a\n    gc: 1\n    async_mode: some\n"
                  "    threads: all\n    sample_rate: 2000000\n",
                  {"3:9", "profile_configs[0].gc: expected true or false, got '1'"},
                  {"4:17", "unknown async_mode 'some' (one of running, all)"},
                  {"5:5", "profile_configs[0]: unknown key 'threads'"},
                  {"6:18", "profile_configs[0].sample_rate: must be in (0, 1000000] Hz"});
    expect_errors("profile_configs:\n  - job_name: [a]\n",
                  {"2:15", "profile_configs[0].job_name: expected a single value, got a list"});
    /* async_mode all needs wall mode, also when the mode is inherited */
    expect_errors("global: {mode: cpu}\nprofile_configs:\n  - job_name: a\n"
                  "    async_aware: true\n    async_mode: all\n",
                  {"5:17", "profile_configs[0].async_mode: 'all' needs mode wall, not cpu"});
    expect_errors("profile_configs:\n  - job_name: a\n    mode: gil\n    async_mode: all\n",
                  {"4:17", "'all' needs mode wall, not gil"});
    /* native: full needs cpu mode (inherited too), and no async_aware */
    expect_errors("global: {mode: wall}\nprofile_configs:\n  - job_name: a\n    native: full\n",
                  {"4:13", "profile_configs[0].native: 'full' needs mode cpu, not wall"});
    expect_errors("profile_configs:\n  - job_name: a\n    native: full\n    async_aware: true\n",
                  {"3:13", "'full' does not combine with async_aware yet"});
    expect_errors("profile_configs:\n  - job_name: a\n    native: some\n",
                  {"3:13", "unknown native 'some' (one of false, true, markers, full)"});
    struct pyprofd_config *c = load_ok("profile_configs:\n  - job_name: a\n    native: full\n"
                                       "  - job_name: b\n    native: markers\n",
                                       false);
    assert_int_equal(c->jobs[0].native, CONFIG_NATIVE_FULL);
    assert_int_equal(c->jobs[1].native, CONFIG_NATIVE_MARKERS);
    config_free(c);
}

static void test_config__relabel_errors(void **state)
{
    (void)state;
    expect_errors("profile_configs:\n"
                  "  - job_name: a\n"
                  "    relabel_configs:\n"
                  "      - source_labels: [__meta_process_exe]\n"
                  "        regex: (python\n"
                  "        action: keep\n",
                  {"5:16", "profile_configs[0].relabel_configs[0]: invalid regex '(python': "
                           "missing closing parenthesis at offset 7"});
    expect_errors("profile_configs:\n"
                  "  - job_name: a\n"
                  "    relabel_configs:\n"
                  "      - action: replace_all\n"
                  "      - source_labels: [bad-label, ok]\n"
                  "        target_label: x\n"
                  "      - source_labels: __meta_process_exe\n"
                  "        target_label: x\n"
                  "      - target: x\n"
                  "      - action: hashmod\n"
                  "        target_label: shard\n"
                  "      - source_labels: [a]\n"
                  "      - action: lowercase\n"
                  "        target_label: l\n"
                  "        replacement: y\n"
                  "      - just a string\n"
                  "      - action: labeldrop\n"
                  "        source_labels: [a]\n"
                  "      - action: hashmod\n"
                  "        target_label: s\n"
                  "        modulus: 0\n",
                  {"4:17", "relabel_configs[0].action: unknown action 'replace_all'"},
                  {"5:25", "relabel_configs[1].source_labels[0]: 'bad-label' is not a valid"},
                  {"7:24", "relabel_configs[2].source_labels: expected a list, got a scalar"},
                  {"9:9", "relabel_configs[3]: unknown key 'target'"},
                  {"10:9", "relabel_configs[4]: hashmod requires a non-zero 'modulus'"},
                  {"12:9", "relabel_configs[5]: replace requires 'target_label'"},
                  {"15:22", "relabel_configs[6]: 'replacement' cannot be set for lowercase"},
                  {"16:9", "relabel_configs[7]: expected a mapping, got a scalar"},
                  {"18:24", "relabel_configs[8]: labeldrop allows only 'regex'"},
                  {"21:18", "relabel_configs[9].modulus: must be between 1 and"});
    expect_errors("profile_configs:\n  - job_name: a\n    relabel_configs: {a: 1}\n",
                  {"3:22", "profile_configs[0].relabel_configs: expected a list, got a mapping"});
    expect_errors(
        "profile_configs:\n  - job_name: a\n    relabel_configs:\n      - target_label: 9x\n",
        {"4:23", "'9x' is not a valid target_label for replace"});
}

static void test_config__remote_write_errors(void **state)
{
    (void)state;
    expect_errors("remote_write:\n  - type: pyroscope\n",
                  {"2:5", "remote_write[0]: url is required"});
    expect_errors("remote_write:\n  - url: http://x\n",
                  {"2:5", "remote_write[0]: type is required (pyroscope or parca)"});
    expect_errors("remote_write:\n  - type: jaeger\n    url: ftp://x\n    api: grpc\n",
                  {"2:11", "remote_write[0].type: unknown type 'jaeger' (one of pyroscope, parca)"},
                  {"3:10", "remote_write[0].url: 'ftp://x' is not an http:// or https:// URL"},
                  {"4:10", "remote_write[0].api: unknown api 'grpc' (one of push, ingest)"});
    expect_errors("remote_write:\n  - type: parca\n    url: http://x\n    api: push\n",
                  {"4:10", "remote_write[0].api: only for type pyroscope"});
    expect_errors(
        "remote_write:\n"
        "  - type: pyroscope\n"
        "    url: http://x\n"
        "    basic_auth:\n"
        "      username: u\n"
        "      password: p\n"
        "      password_file: /p\n"
        "    authorization:\n"
        "      type: Basic\n"
        "      credentials: c\n"
        "      credentials_file: /c\n",
        {"7:22", "remote_write[0].basic_auth: set only one of password and password_file"},
        {"8:5", "remote_write[0]: set only one of basic_auth and authorization"},
        {"9:13", "remote_write[0].authorization.type: use basic_auth for Basic"},
        {"11:25", "set only one of credentials and credentials_file"});
    expect_errors(
        "remote_write:\n"
        "  - type: pyroscope\n"
        "    url: http://x\n"
        "    basic_auth: {password: p}\n"
        "    tls_config: {cert_file: /c}\n"
        "    queue: {min_backoff: 10s, max_backoff: 1s, max_retries: -1}\n"
        "    headers: {\"Bad Header\": x, Ok: \"a\\nb\"}\n"
        "    timeout: 1s\n",
        {"4:17", "remote_write[0].basic_auth: username is required"},
        {"5:17", "remote_write[0].tls_config: cert_file and key_file must be set together"},
        {"6:44", "remote_write[0].queue: max_backoff must not be less than min_backoff"},
        {"6:61", "remote_write[0].queue.max_retries: must be between 0 and 1000000"},
        {"7:15", "remote_write[0].headers: 'Bad Header' is not a valid HTTP header"},
        {"7:36", "remote_write[0].headers.Ok: header values must not contain control"},
        {"8:5", "remote_write[0]: unknown key 'timeout'"});
    expect_errors("remote_write:\n"
                  "  - {type: parca, url: 'http://a', authorization: {type: Bearer}}\n"
                  "  - {name: parca-0, type: parca, url: 'http://b'}\n"
                  "  - {type: parca, url: 'https://c',\n"
                  "     write_relabel_configs: [{action: drop, regex: '*'}]}\n",
                  {"2:51", "remote_write[0].authorization: credentials or credentials_file is "
                           "required"},
                  {"3:12", "remote_write[1]: duplicate name 'parca-0' (first at line 2)"},
                  {"5:52",
                   "remote_write[2].write_relabel_configs[0]: invalid regex '*': quantifier "
                   "does not follow a repeatable item at offset 0"});
    expect_errors("remote_write:\n  - type: parca\n    url:\n", {"3:9", "url is required"});
    expect_errors("remote_write:\n  -\n", {"2:4", "remote_write[0]: empty endpoint"});
}

/*
 * A URL libcurl cannot use is refused at load, not tried and retried at every
 * push: above all one without a host, which "http://${UNSET}:4040" expands to.
 */
static void test_config__refuses_urls_without_a_host(void **state)
{
    (void)state;
    expect_errors("remote_write:\n"
                  "  - {type: parca, url: 'http://:4040'}\n"
                  "  - {type: parca, url: 'https://bob@:443/x'}\n"
                  "  - {type: parca, url: 'http:///path'}\n"
                  "  - {type: parca, url: 'http://h:99999'}\n"
                  "  - {type: parca, url: 'http://a b/'}\n",
                  {"2:24", "remote_write[0].url: 'http://:4040' has no host"},
                  {"3:24", "remote_write[1].url: 'https://bob@:443/x' has no host"},
                  {"4:24", "remote_write[2].url: 'http:///path' has no host"},
                  /* libcurl's own message follows */
                  {"5:24", "remote_write[3].url: 'http://h:99999' is not a valid URL: "},
                  {"6:24", "remote_write[4].url: 'http://a b/' is not an http:// or https:// "
                           "URL (spaces and control characters are not allowed)"});
    struct pyprofd_config *c = NULL;
    struct config_errors e;
    assert_int_equal(
        load("remote_write:\n  - {type: parca, url: 'http://${UNSET}:4040'}\n", true, &c, &e),
        -EINVAL);
    assert_int_equal(e.n, 1);
    assert_string_equal(msg(&e, 0), "t.yml:2:24: remote_write[0].url: 'http://:4040' has no host");
    config_errors_release(&e);
    c = load_ok("remote_write:\n"
                "  - {type: parca, url: 'http://[::1]:7070'}\n"
                "  - {type: parca, url: 'HTTPS://Profiles.Example/base?x=1'}\n"
                "  - {type: parca, url: 'http://${NODE_NAME}:4040'}\n",
                true);
    assert_string_equal(c->remote_write[2].url, "http://worker-7:4040");
    config_free(c);
}

/*
 * Every value that goes into a request refuses control characters: a CR LF
 * in tenant_id would add a header of the config's choosing to every request.
 * Custom header values may hold a tab (RFC 9110 field values do).
 */
static void test_config__refuses_control_characters_in_request_values(void **state)
{
    (void)state;
    expect_errors("remote_write:\n"
                  "  - type: pyroscope\n"
                  "    url: http://x\n"
                  "    tenant_id: \"t\\r\\nX-Injected: 1\"\n"
                  "    basic_auth: {username: \"u\\n\", password: \"p\\x01\"}\n"
                  "  - type: parca\n"
                  "    url: http://y\n"
                  "    authorization: {type: \"Bearer\\t\", credentials: \"c\\r\"}\n"
                  "    tls_config: {server_name: \"s\\x7f\"}\n"
                  "    headers: {X-Ok: \"a\\tb\", X-Bad: \"a\\nb\"}\n",
                  {"4:16", "remote_write[0].tenant_id: must not contain control characters"},
                  {"5:28", "remote_write[0].basic_auth.username: must not contain control"},
                  {"5:45", "remote_write[0].basic_auth.password: must not contain control"},
                  {"8:27", "remote_write[1].authorization.type: must not contain control"},
                  {"8:52", "remote_write[1].authorization.credentials: must not contain"},
                  {"9:31", "remote_write[1].tls_config.server_name: must not contain"},
                  {"10:36", "remote_write[1].headers.X-Bad: header values must not contain"});
    /* the same after ${VAR} expansion */
    struct pyprofd_config *c = NULL;
    struct config_errors e;
    assert_int_equal(
        load("remote_write:\n  - {type: parca, url: http://y, tenant_id: \"${EVIL}\"}\n", true, &c,
             &e),
        -EINVAL);
    assert_int_equal(e.n, 1);
    assert_non_null(strstr(msg(&e, 0), "t.yml:2:45: remote_write[0].tenant_id: must not contain"));
    config_errors_release(&e);
    /* printable values, UTF-8 included, are fine */
    c = load_ok("remote_write:\n  - {type: parca, url: http://y, tenant_id: \"t\\u00e9 1\",\n"
                "     basic_auth: {username: \"u s\", password: \"p w\"},\n"
                "     tls_config: {server_name: s.example}}\n",
                false);
    assert_string_equal(c->remote_write[0].tenant_id, "t\xc3\xa9 1");
    config_free(c);
}

static void test_config__collects_every_error_in_file_order(void **state)
{
    (void)state;
    expect_errors("server:\n"
                  "  listen_address: nope\n"
                  "global:\n"
                  "  sample_rate: -1\n"
                  "  mode: fast\n"
                  "profile_configs:\n"
                  "  - job_name: a\n"
                  "    relabel_configs:\n"
                  "      - regex: '['\n"
                  "        target_label: x\n"
                  "  - job_name: a\n"
                  "storage: []\n"
                  "extra: 1\n",
                  {"2:19", "server.listen_address"}, {"4:16", "global.sample_rate"},
                  {"5:9", "global.mode"}, {"9:16", "invalid regex '['"},
                  {"11:15", "duplicate job_name 'a'"},
                  {"12:10", "storage: expected a mapping, got a list"},
                  {"13:1", "unknown top-level key 'extra'"});
}

/*
 * Errors are kept as line, column and message, sorted by position (not by
 * the order the walk found them), and formatted with the file name only on
 * output.
 */
static void test_config__errors_are_structured(void **state)
{
    (void)state;
    struct pyprofd_config *c = NULL;
    struct config_errors e;
    char buf[64];
    /* the queue's cross-check is found after max_retries, but sits before it */
    assert_int_equal(load("global: {mode: fast}\nremote_write:\n  - {type: parca, url: 'http://x', "
                          "queue: {max_backoff: 1s, min_backoff: 10s, max_retries: -1}}\n",
                          false, &c, &e),
                     -EINVAL);
    assert_null(c);
    assert_int_equal(e.n, 3);
    assert_string_equal(e.source, "t.yml");
    assert_int_equal(e.v[0].line, 1);
    assert_int_equal(e.v[0].col, 16);
    assert_string_equal(e.v[0].msg,
                        "global.mode: unknown mode 'fast' (one of wall, cpu, gil, exception)");
    assert_int_equal(e.v[1].line, 3);
    assert_int_equal(e.v[1].col, 57);
    assert_string_equal(e.v[1].msg,
                        "remote_write[0].queue: max_backoff must not be less than min_backoff");
    assert_int_equal(e.v[2].line, 3);
    assert_int_equal(e.v[2].col, 92);
    assert_string_equal(msg(&e, 2), "t.yml:3:92: remote_write[0].queue.max_retries: must be "
                                    "between 0 and 1000000, got -1");
    /* truncated, never overrun */
    assert_string_equal(config_error_format(&e, 0, buf, 12), "t.yml:1:16:");
    config_errors_release(&e);
    assert_null(e.v);
    assert_null(e.source);
    config_errors_release(&e);
    config_errors_release(NULL);
}

static void test_config__caps(void **state)
{
    (void)state;
    /* nesting */
    char deep[64] = "a: ";
    memset(deep + 3, '[', 40);
    expect_errors(deep, {"1:35", "nesting deeper than 32 levels"});
    /* one value */
    size_t big = CONFIG_MAX_SCALAR + 16;
    char *y = alloc_malloc(big + 32);
    assert_non_null(y);
    memcpy(y, "a: ", 3);
    memset(y + 3, 'x', big);
    y[3 + big] = '\0';
    expect_errors_(y, (const struct want[]){{"1:4", "value longer than 65536 bytes"}}, 1, __LINE__);
    alloc_free(y);
    /* items in one list */
    size_t n = CONFIG_MAX_ITEMS + 1;
    y = alloc_malloc(16 + 2 * n);
    assert_non_null(y);
    size_t len = 0;
    memcpy(y, "a: [", 4);
    len = 4;
    for (size_t i = 0; i < n; i++) {
        y[len++] = '1';
        y[len++] = i + 1 < n ? ',' : ']';
    }
    y[len] = '\0';
    expect_errors_(y, (const struct want[]){{"1:20005", "more than 10000 items"}}, 1, __LINE__);
    alloc_free(y);
    /* the file */
    struct pyprofd_config *c = NULL;
    struct config_errors e = {0};
    assert_int_equal(config_load_buffer("", CONFIG_MAX_FILE_BYTES + 1, "big.yml", NULL, &c, &e),
                     -EFBIG);
    assert_int_equal(e.n, 1);
    assert_string_equal(msg(&e, 0), "big.yml: larger than 4194304 bytes");
    config_errors_release(&e);
    /* NUL bytes */
    expect_errors_("a: \"x\\0y\"\n", (const struct want[]){{"1:4", "NUL character"}}, 1, __LINE__);
    /* the error list itself */
    char *many = alloc_malloc(CONFIG_MAX_ERRORS * 16 + 64);
    assert_non_null(many);
    len = 0;
    len += (size_t)snprintf(many, 16, "global:\n");
    for (int i = 0; i < CONFIG_MAX_ERRORS + 20; i++)
        len += (size_t)snprintf(many + len, 16, "  k%d: 1\n", i);
    assert_int_equal(load(many, false, &c, &e), -EINVAL);
    assert_int_equal(e.n, CONFIG_MAX_ERRORS + 1);
    assert_string_equal(msg(&e, CONFIG_MAX_ERRORS), "t.yml: too many errors, stopping here");
    config_errors_release(&e);
    alloc_free(many);
}

static void test_config__files(void **state)
{
    (void)state;
    char path[] = "/tmp/pyprofd-test-config-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    static const char body[] = "global:\n  mode: wall\n  bogus: 1\n";
    assert_int_equal(write(fd, body, sizeof(body) - 1), (ssize_t)(sizeof(body) - 1));
    close(fd);
    struct pyprofd_config *c = NULL;
    struct config_errors e = {0};
    char want[128];
    assert_int_equal(config_load_file(path, NULL, &c, &e), -EINVAL);
    assert_int_equal(e.n, 1);
    snprintf(want, sizeof(want), "%s:3:3: global: unknown key 'bogus'", path);
    assert_string_equal(msg(&e, 0), want);
    config_errors_release(&e);
    unlink(path);
    assert_int_equal(config_load_file(path, NULL, &c, &e), -ENOENT);
    snprintf(want, sizeof(want), "%s: cannot read: No such file or directory", path);
    assert_string_equal(msg(&e, 0), want);
    config_errors_release(&e);
    assert_int_equal(config_load_file("/tmp", NULL, &c, &e), -EISDIR);
    config_errors_release(&e);
    /* a FIFO is refused at once: opening it would wait for a writer forever */
    assert_int_equal(mkfifo(path, 0600), 0);
    alarm(10);
    assert_int_equal(config_load_file(path, NULL, &c, &e), -EINVAL);
    alarm(0);
    assert_null(c);
    snprintf(want, sizeof(want), "%s: cannot read: not a regular file (a FIFO)", path);
    assert_string_equal(msg(&e, 0), want);
    config_errors_release(&e);
    unlink(path);
    assert_int_equal(config_load_file("/dev/zero", NULL, &c, &e), -EINVAL);
    assert_string_equal(msg(&e, 0),
                        "/dev/zero: cannot read: not a regular file (a character device)");
    config_errors_release(&e);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
}

/*
 * The files a remote_write entry names are checked at load: a missing one,
 * a FIFO, a directory or a secret with a control character inside is an
 * error at the value, not a failure at the first push.
 */
static void test_config__checks_named_files(void **state)
{
    (void)state;
    char dir[] = "/tmp/pyprofd-test-config-files.XXXXXX", yaml[2048], want[600];
    char p_missing[96], p_fifo[96], p_key[96], p_bad[96], p_good[96];
    assert_non_null(mkdtemp(dir));
    snprintf(p_missing, sizeof(p_missing), "%s/missing", dir);
    snprintf(p_fifo, sizeof(p_fifo), "%s/fifo", dir);
    snprintf(p_key, sizeof(p_key), "%s/key.pem", dir);
    snprintf(p_bad, sizeof(p_bad), "%s/bad-secret", dir);
    snprintf(p_good, sizeof(p_good), "%s/good-secret", dir);
    assert_int_equal(mkfifo(p_fifo, 0600), 0);
    write_text(p_key, "-----BEGIN PRIVATE KEY-----\n");
    write_text(p_bad, "line1\nline2\n");
    write_text(p_good, "  s3cret \n"); /* surrounding whitespace is not part of it */
    snprintf(yaml, sizeof(yaml),
             "remote_write:\n"
             "  - type: pyroscope\n"
             "    url: https://p.example\n"
             "    basic_auth:\n"
             "      username: u\n"
             "      password_file: %s\n"
             "    tls_config:\n"
             "      ca_file: %s\n"
             "      cert_file: %s\n"
             "      key_file: %s\n"
             "  - type: parca\n"
             "    url: https://q.example\n"
             "    authorization:\n"
             "      credentials_file: %s\n",
             p_missing, p_fifo, dir, p_key, p_bad);
    struct pyprofd_config *c = NULL;
    struct config_errors e = {0};
    alarm(10); /* the FIFO must not be waited on */
    int rc = config_load_buffer(yaml, strlen(yaml), "t.yml", NULL, &c, &e);
    alarm(0);
    assert_int_equal(rc, -EINVAL);
    assert_null(c);
    if (e.n != 4) {
        dump_errors(&e);
        fail_msg("%zu errors, want 4", e.n);
    }
    snprintf(want, sizeof(want),
             "t.yml:6:22: remote_write[0].basic_auth.password_file: cannot read '%s': No such "
             "file or directory",
             p_missing);
    assert_string_equal(msg(&e, 0), want);
    snprintf(want, sizeof(want),
             "t.yml:8:16: remote_write[0].tls_config.ca_file: cannot read '%s': not a regular "
             "file (a FIFO)",
             p_fifo);
    assert_string_equal(msg(&e, 1), want);
    snprintf(want, sizeof(want),
             "t.yml:9:18: remote_write[0].tls_config.cert_file: cannot read '%s': Is a directory",
             dir);
    assert_string_equal(msg(&e, 2), want);
    snprintf(want, sizeof(want),
             "t.yml:14:25: remote_write[1].authorization.credentials_file: cannot use '%s': "
             "control character in the secret",
             p_bad);
    assert_string_equal(msg(&e, 3), want);
    config_errors_release(&e);

    /* the same file with readable files loads, and keeps the paths */
    snprintf(yaml, sizeof(yaml),
             "remote_write:\n"
             "  - type: pyroscope\n"
             "    url: https://p.example\n"
             "    basic_auth: {username: u, password_file: '%s'}\n"
             "    tls_config: {ca_file: '%s', cert_file: '%s', key_file: '%s'}\n"
             "  - {type: parca, url: 'https://q.example', authorization: {credentials_file: "
             "'%s'}}\n",
             p_good, p_key, p_key, p_key, p_good);
    assert_int_equal(config_load_buffer(yaml, strlen(yaml), "t.yml", NULL, &c, &e), 0);
    assert_string_equal(c->remote_write[0].basic_auth_password_file, p_good);
    assert_string_equal(c->remote_write[0].tls_ca_file, p_key);
    config_free(c);
    config_errors_release(&e);

    /* skip_file_checks: the YAML alone */
    snprintf(yaml, sizeof(yaml),
             "remote_write:\n  - {type: parca, url: 'https://q.example', tls_config: {ca_file: "
             "'%s'}}\n",
             p_missing);
    struct config_load_opts o = {.skip_file_checks = true};
    assert_int_equal(config_load_buffer(yaml, strlen(yaml), "t.yml", &o, &c, &e), 0);
    config_free(c);
    config_errors_release(&e);

    unlink(p_fifo);
    unlink(p_key);
    unlink(p_bad);
    unlink(p_good);
    rmdir(dir);
}

/* ---- the shipped files and printing ---- */

static char *print_to_string(const struct pyprofd_config *c)
{
    FILE *f = tmpfile();
    assert_non_null(f);
    assert_int_equal(config_print(c, f), 0);
    long len = ftell(f);
    assert_true(len > 0);
    char *buf = alloc_malloc((size_t)len + 1);
    assert_non_null(buf);
    rewind(f);
    assert_int_equal(fread(buf, 1, (size_t)len, f), (size_t)len);
    buf[len] = '\0';
    fclose(f);
    return buf;
}

static struct pyprofd_config *load_shipped(const char *name)
{
    const char *src = getenv("PYPROFD_SOURCE_DIR");
    char path[512];
    struct pyprofd_config *c = NULL;
    struct config_errors e = {0};
    assert_non_null(src);
    snprintf(path, sizeof(path), "%s/config/%s", src, name);
    /* the example names files in /etc/pyprofd that a test machine lacks */
    struct config_load_opts o = {.skip_file_checks = true};
    int rc = config_load_file(path, &o, &c, &e);
    if (rc) {
        dump_errors(&e);
        fail_msg("%s: %d", path, rc);
    }
    config_errors_release(&e);
    return c;
}

/* Printing then loading gives a config that prints the same. */
static void check_round_trip(const struct pyprofd_config *c)
{
    char *a = print_to_string(c);
    struct pyprofd_config *d = load_ok(a, false);
    char *b = print_to_string(d);
    assert_string_equal(a, b);
    alloc_free(a);
    alloc_free(b);
    config_free(d);
}

static void test_config__shipped_default_matches_config_default(void **state)
{
    (void)state;
    struct pyprofd_config *c = load_shipped("pyprofd.yml"), *d = NULL;
    assert_int_equal(config_default(&d), 0);
    char *a = print_to_string(c), *b = print_to_string(d);
    assert_string_equal(a, b);
    alloc_free(a);
    alloc_free(b);
    check_round_trip(c);
    config_free(c);
    config_free(d);
}

static void test_config__shipped_example_is_valid(void **state)
{
    (void)state;
    struct pyprofd_config *c = load_shipped("pyprofd.example.yml");
    assert_int_equal(c->njobs, 2);
    assert_int_equal(c->nremote_write, 2);
    assert_true(relabel_count(c->jobs[0].relabel) >= 10);
    assert_string_equal(c->remote_write[1].name, "parca-1");
    check_round_trip(c);
    /* secrets are not printed */
    struct pyprofd_config *s =
        load_ok("remote_write:\n  - {type: parca, url: 'http://x', authorization: "
                "{credentials: hunter2}, headers: {X-Key: hunter3}}\n",
                false);
    char *out = print_to_string(s);
    assert_null(strstr(out, "hunter"));
    assert_non_null(strstr(out, "credentials: \"<secret>\""));
    alloc_free(out);
    config_free(s);
    config_free(c);
}

/*
 * A password in a URL is a secret too: --print shows it as <secret>, as
 * Prometheus does, and so do errors about the URL.
 */
static void test_config__url_passwords_are_not_printed(void **state)
{
    (void)state;
    struct pyprofd_config *c =
        load_ok("remote_write:\n"
                "  - {type: parca, url: 'http://bob:hunter2@parca.example:7070/base?x=1'}\n"
                "  - {type: parca, url: 'https://:hunter2@p.example'}\n"
                "  - {type: parca, url: 'http://bob@p.example/'}\n"
                "  - {type: parca, url: 'http://p.example/a@b'}\n",
                false);
    assert_string_equal(c->remote_write[0].url, "http://bob:hunter2@parca.example:7070/base?x=1");
    char *out = print_to_string(c);
    assert_null(strstr(out, "hunter"));
    assert_non_null(strstr(out, "url: \"http://bob:<secret>@parca.example:7070/base?x=1\"\n"));
    assert_non_null(strstr(out, "url: \"https://:<secret>@p.example/\"\n"));
    assert_non_null(strstr(out, "url: \"http://bob@p.example/\"\n"));
    assert_non_null(strstr(out, "url: \"http://p.example/a@b\"\n"));
    alloc_free(out);
    check_round_trip(c);
    config_free(c);
    expect_errors("remote_write:\n"
                  "  - {type: parca, url: 'http://bob:hunter2@:4040'}\n"
                  "  - {type: parca, url: 'http://bob:hun@ter2@p.example/'}\n",
                  {"2:24", "remote_write[0].url: 'http://bob:<secret>@:4040' has no host"},
                  {"3:24", "remote_write[1].url: 'http://bob:<secret>@p.example/' is not a "});
}

static void test_config__print_escapes_round_trip(void **state)
{
    (void)state;
    /* quotes, backslashes, control characters and Unicode line breaks */
    struct pyprofd_config *c =
        load_ok("global:\n  external_labels:\n    a: \"q\\\"b\\\\s\\tt\\x01\\N\\L\\P\\u00e9\"\n"
                "profile_configs:\n  - job_name: \"j: #x\"\n    relabel_configs:\n"
                "      - {regex: \"a\\nb$\", target_label: \"${1}\", replacement: \"$$\"}\n",
                false);
    const char *v = labels_get(&c->global.external_labels, "a");
    assert_string_equal(v, "q\"b\\s\tt\x01\xc2\x85\xe2\x80\xa8\xe2\x80\xa9\xc3\xa9");
    check_round_trip(c);
    config_free(c);
}

/*
 * libyaml's emitter writes --print: a long value stays on one line (no
 * folding), a label name longer than a YAML simple key may be (128
 * characters) is written as an explicit "? key" and loads back.
 */
static void test_config__print_long_values_round_trip(void **state)
{
    (void)state;
    char name[201], value[401], yaml[800];
    memset(name, 'n', sizeof(name) - 1);
    name[sizeof(name) - 1] = '\0';
    for (size_t i = 0; i < sizeof(value) - 1; i++)
        value[i] = i % 9 == 8 ? ' ' : 'v';
    value[sizeof(value) - 1] = '\0';
    snprintf(yaml, sizeof(yaml), "global:\n  external_labels:\n    %s: '%s'\n", name, value);
    struct pyprofd_config *c = load_ok(yaml, false);
    assert_string_equal(labels_get(&c->global.external_labels, name), value);
    char *out = print_to_string(c);
    char want[500];
    snprintf(want, sizeof(want), ": \"%s\"\n", value);
    assert_non_null(strstr(out, want));
    assert_non_null(strstr(out, "? \"nnn"));
    alloc_free(out);
    check_round_trip(c);
    config_free(c);
}

static void test_config__survives_allocation_failures(void **state)
{
    (void)state;
    static const char yaml[] = "global: {external_labels: {a: b}, mode: wall}\n"
                               "profile_configs:\n"
                               "  - job_name: j\n"
                               "    relabel_configs: [{source_labels: [a], target_label: b}]\n"
                               "remote_write:\n"
                               "  - {type: parca, url: 'http://x', headers: {A: b},\n"
                               "     authorization: {credentials: c}}\n"
                               "  - {type: parca, url: 'http://x', mode: bad}\n";
    for (uint64_t n = 1; n < 400; n++) {
        struct pyprofd_config *c = NULL;
        struct config_errors e = {0};
        alloc_fail_nth(n);
        int rc = config_load_buffer(yaml, sizeof(yaml) - 1, "t.yml", NULL, &c, &e);
        alloc_fail_nth(0);
        assert_true(rc == -EINVAL || rc == -ENOMEM);
        assert_null(c);
        config_errors_release(&e);
    }
    for (uint64_t n = 1; n < 40; n++) {
        struct pyprofd_config *c = NULL;
        alloc_fail_nth(n);
        int rc = config_default(&c);
        alloc_fail_nth(0);
        assert_true(rc == 0 || rc == -ENOMEM);
        assert_true((rc == 0) == (c != NULL));
        config_free(c);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config__empty_file_gives_defaults),
        cmocka_unit_test(test_config__default_config),
        cmocka_unit_test(test_config__inheritance_and_overrides),
        cmocka_unit_test(test_config__all_sections),
        cmocka_unit_test(test_config__env_expansion),
        cmocka_unit_test(test_config__listen_address_emptied_by_expansion),
        cmocka_unit_test(test_config__yaml_syntax_errors),
        cmocka_unit_test(test_config__structure_errors),
        cmocka_unit_test(test_config__global_value_errors),
        cmocka_unit_test(test_config__discovery_storage_server_errors),
        cmocka_unit_test(test_config__job_errors),
        cmocka_unit_test(test_config__relabel_errors),
        cmocka_unit_test(test_config__remote_write_errors),
        cmocka_unit_test(test_config__refuses_urls_without_a_host),
        cmocka_unit_test(test_config__refuses_control_characters_in_request_values),
        cmocka_unit_test(test_config__collects_every_error_in_file_order),
        cmocka_unit_test(test_config__errors_are_structured),
        cmocka_unit_test(test_config__caps),
        cmocka_unit_test(test_config__files),
        cmocka_unit_test(test_config__checks_named_files),
        cmocka_unit_test(test_config__shipped_default_matches_config_default),
        cmocka_unit_test(test_config__shipped_example_is_valid),
        cmocka_unit_test(test_config__url_passwords_are_not_printed),
        cmocka_unit_test(test_config__print_escapes_round_trip),
        cmocka_unit_test(test_config__print_long_values_round_trip),
        cmocka_unit_test(test_config__survives_allocation_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
