/* SPDX-License-Identifier: MIT */
/*
 * agent.c: `pyprofd agent`, the long-running daemon. Wiring only: load the
 * config, build the pipeline (sampling loop -> window queue -> export thread
 * -> outputs, plus the HTTP server), then wait for signals: SIGHUP reloads,
 * SIGTERM/SIGINT stop with every partial window flushed. docs/agent.md
 * explains the threads and the data flow.
 */
#include "base/compat.h"

#include <curl/curl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "aggregate/window.h"
#include "base/alloc.h"
#include "base/hash.h"
#include "base/log.h"
#include "base/readfile.h"
#include "base/strnum.h"
#include "cli/cli.h"
#include "config/config.h"
#include "discovery/privileges.h"
#include "exporters/dispatch.h"
#include "exporters/exporters.h"
#include "exporters/pull/http_server.h"
#include "exporters/pull/views.h"
#include "daemon/loop.h"
#include "perf/perfsample.h"
#include "perf/switches.h"

#include "cli/version.h"

#define AGENT_DEFAULT_SHUTDOWN_S 10
/* seconds between looks at the config file for a change on disk */
#define AGENT_CONFIG_CHECK_S 5
#define AGENT_MAX_OUTPUTS    64u /* storage + remote_write endpoints */

/*
 * The config file's content as last loaded, to notice a change on disk: a
 * Kubernetes ConfigMap volume swaps its files by renaming a symlink, which
 * no signal announces. stat() (following links) is cheap; the content is
 * read and hashed only when the file's identity or time changed, so an
 * update of another key of the ConfigMap (a new directory, same content)
 * does not reload.
 */
struct agent_file_state {
    bool known;
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
    uint64_t hash; /* of the content; 0: unreadable */
};

static uint64_t agent_content_hash(const char *path)
{
    char *text = NULL, why[128];
    size_t len = 0;
    if (readfile_all(path, CONFIG_MAX_FILE_BYTES, &text, &len, why, sizeof(why)))
        return 0;
    uint64_t h = hash_fnv1a(HASH_FNV_BASIS, text, len);
    alloc_free(text);
    return h ? h : 1;
}

/* Whether @a path changed since @a st (updated); the first call records it. */
static bool agent_file_changed(const char *path, struct agent_file_state *st)
{
    struct stat sb;
    if (stat(path, &sb))
        return false; /* gone for now (mid-swap): look again later */
    if (st->known && sb.st_dev == st->dev && sb.st_ino == st->ino && sb.st_size == st->size &&
        sb.st_mtim.tv_sec == st->mtime.tv_sec && sb.st_mtim.tv_nsec == st->mtime.tv_nsec)
        return false;
    uint64_t h = agent_content_hash(path);
    bool changed = st->known && h != st->hash;
    *st = (struct agent_file_state){.known = true,
                                    .dev = sb.st_dev,
                                    .ino = sb.st_ino,
                                    .size = sb.st_size,
                                    .mtime = sb.st_mtim,
                                    .hash = h};
    return changed;
}

struct agent {
    const char *config_file;   /* NULL: the built-in default */
    const char *listen_option; /* --web.listen-address, or NULL */
    struct config_load_opts load_opts;
    struct loop *loop;
    struct window_queue *queue;
    struct dispatch *dispatch;
    struct http_server *http;
    char listen_addr[256];     /* the server's address, as started ("": off) */
    bool lifecycle;            /* POST /-/reload allowed, as started */
    uint64_t max_profiles;     /* server.max_concurrent_profiles, as started */
    bool lifecycle_option;     /* --web.enable-lifecycle */
    pthread_mutex_t reload_mu; /* one reload at a time; guards the fields below */
    bool last_reload_ok;
    int64_t last_reload_success_s;
    uint64_t reloads, reload_failures;
    struct agent_file_state file; /* the config file as last read by a load */
};

/* @a text in lines of at most @a width columns, each indented @a indent. */
static void agent_usage_wrap(FILE *out, const char *text, int indent, int width)
{
    const char *p = text;
    while (*p) {
        int room = width - indent, n = (int)strlen(p);
        if (n > room) {
            n = room;
            while (n > 0 && p[n] != ' ')
                n--;
            if (n == 0)
                n = room;
        }
        fprintf(out, "%*s%.*s\n", indent, "", n, p);
        p += n;
        while (*p == ' ')
            p++;
    }
}

static int agent_usage(FILE *out, int status)
{
    fputs("usage: pyprofd agent [--config.file FILE] [options]\n"
          "\n"
          "Find every CPython " PYVERSION_SUPPORTED " process on this machine (or in this\n"
          "pod), sample each as configured, and serve or store one pprof profile per\n"
          "target and interval. docs/agent.md and docs/configuration.md describe\n"
          "everything.\n"
          "\n"
          "  --config.file FILE        YAML configuration (default: the built-in default,\n"
          "                            which samples every Python process; see\n"
          "                            config/pyprofd.yml)\n"
          "  --config.expand-env       expand ${VAR} and ${VAR:-default} in the config\n"
          "  --web.listen-address ADDR override server.listen_address (\"\" disables HTTP)\n"
          "  --web.enable-lifecycle    allow POST /-/reload (server.enable_lifecycle)\n"
          "  --shutdown-timeout SECS   how long SIGTERM may take to flush (default 10)\n"
          "  --log.level LEVEL         error, warn, info (default) or debug\n"
          "  --log.format FORMAT       text (default), logfmt or json (both timestamped)\n"
          "  -h, --help                show this help\n"
          "\n"
          "Signals: SIGHUP reloads the configuration (an invalid one is refused and the\n"
          "old one keeps running); SIGTERM or SIGINT stop sampling, flush every partial\n"
          "profile to the outputs and exit. So does a change of the config file itself\n"
          "(checked every few seconds: a Kubernetes ConfigMap's symlink swap).\n"
          "\n"
          "Privileges: run as root (uid 0) with these capabilities; at start the agent\n"
          "logs each one it lacks and what that costs (docs/kubernetes.md):\n",
          out);
    for (size_t i = 0; i < privileges_count; i++) {
        const struct privilege *p = &privileges[i];
        fprintf(out, "  %-23s %s\n", p->name, privilege_need_name(p->need));
        agent_usage_wrap(out, p->enables, 28, 79);
    }
    return status;
}

static void agent_log_errors(const struct config_errors *errs)
{
    char line[CONFIG_ERROR_MAX];
    for (size_t i = 0; i < errs->n; i++)
        log_error("%s", config_error_format(errs, i, line, sizeof(line)));
}

/*
 * Says when the HTTP server is (or would be) off, and whether that looks
 * intended: an explicit "" (--web.listen-address="" or listen_address: "")
 * is logged as information; a listen_address that ${VAR} expansion emptied
 * (listen_address: ${LISTEN_ADDRESS} with the variable unset or empty) is a
 * warning, since /metrics, /debug/pprof and /-/reload silently go with it.
 * The address is read at start only: at a reload (@a reload) the warning
 * says so. @a listen_option: --web.listen-address or NULL. Returns whether
 * @a cfg turns the server off.
 */
PYPROFD_STATIC bool agent_log_listen(const struct pyprofd_config *cfg, const char *listen_option,
                                     const char *config_file, bool reload)
{
    const char *file = config_file ? config_file : "(built-in default)";
    if (listen_option) {
        if (!listen_option[0] && !reload)
            log_info("HTTP server off (--web.listen-address is \"\")");
        return !listen_option[0];
    }
    bool off = !cfg->server.listen_address || !cfg->server.listen_address[0];
    if (!off)
        return false;
    if (!cfg->server.listen_address_expanded) {
        if (!reload)
            log_info("HTTP server off (server.listen_address is \"\" in '%s')", file);
    } else if (reload) {
        log_warn("server.listen_address in '%s' is empty after ${VAR} expansion (an unset "
                 "variable?); not applied now (the address is read at start only), the next "
                 "start would turn the HTTP server off",
                 file);
    } else {
        log_warn("server.listen_address in '%s' is empty after ${VAR} expansion (an unset "
                 "variable?): HTTP server off, no /metrics, /debug/pprof or /-/reload; write "
                 "listen_address: \"\" to turn it off on purpose",
                 file);
    }
    return true;
}

/*
 * The settings read at start only whose value in @a cfg differs from the
 * running one (@a listen_addr, @a lifecycle, @a max_profiles: what the server
 * was started with; a command-line option overrides the file and so never
 * changes):
 * their names, comma-separated, in @a buf ("" when none). A reload applies
 * every other setting; these wait for a restart, and the reload says so.
 */
PYPROFD_STATIC void agent_restart_keys(const struct pyprofd_config *cfg, const char *listen_option,
                                       bool lifecycle_option, const char *listen_addr,
                                       bool lifecycle, uint64_t max_profiles, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    const char *addr = cfg->server.listen_address ? cfg->server.listen_address : "";
    if (!listen_option && strcmp(addr, listen_addr) != 0)
        n += (size_t)snprintf(buf + n, len - n, "%sserver.listen_address", n ? ", " : "");
    if (n < len && !lifecycle_option && cfg->server.enable_lifecycle != lifecycle)
        n += (size_t)snprintf(buf + n, len - n, "%sserver.enable_lifecycle", n ? ", " : "");
    if (n < len && cfg->server.max_concurrent_profiles != max_profiles)
        (void)snprintf(buf + n, len - n, "%sserver.max_concurrent_profiles", n ? ", " : "");
}

static int agent_load(struct agent *a, struct pyprofd_config **out, struct config_errors *errs)
{
    if (!a->config_file)
        return config_default(out);
    return config_load_file(a->config_file, &a->load_opts, out, errs);
}

/*
 * Loads the config file again and hands it to the pipeline; the old one stays
 * on error. On SIGHUP this runs on the signal thread, with SIGTERM blocked
 * until it returns: the loader never waits on a file (readfile_open()
 * refuses a FIFO or a device at once, without blocking), so a reload cannot
 * hold a SIGTERM back.
 */
static int agent_reload(struct agent *a, char *err, size_t errlen)
{
    pthread_mutex_lock(&a->reload_mu);
    struct pyprofd_config *cfg = NULL;
    struct config_errors errs = {0};
    struct exporter ex[AGENT_MAX_OUTPUTS];
    size_t nex = 0;
    a->reloads++;
    if (a->config_file)
        (void)agent_file_changed(a->config_file, &a->file); /* what this load reads */
    int e = agent_load(a, &cfg, &errs);
    if (e) {
        agent_log_errors(&errs);
        if (errs.n)
            config_error_format(&errs, 0, err, errlen);
        else
            snprintf(err, errlen, "%s", strerror(-e));
        goto fail;
    }
    e = window_grow_pool(a->queue, loop_window_slots(cfg));
    if (e) {
        snprintf(err, errlen, "out of memory for %zu targets' windows", loop_max_targets(cfg));
        goto fail;
    }
    e = exporters_new(cfg, ex, AGENT_MAX_OUTPUTS, &nex, err, errlen);
    if (e)
        goto fail;
    e = dispatch_set_exporters(a->dispatch, ex, nex, cfg->global.limits.max_profile_bytes);
    if (e) {
        exporters_free(ex, nex);
        snprintf(err, errlen, "cannot set up the outputs: %s", strerror(-e));
        goto fail;
    }
    (void)agent_log_listen(cfg, a->listen_option, a->config_file, true);
    char restart[128];
    agent_restart_keys(cfg, a->listen_option, a->lifecycle_option, a->listen_addr, a->lifecycle,
                       a->max_profiles, restart, sizeof(restart));
    /* new windows are sized for the new limits.target_memory_bytes */
    struct agg_limits lim = window_limits_for(cfg->global.limits.target_memory_bytes);
    window_queue_set_limits(a->queue, &lim);
    loop_set_config(a->loop, cfg); /* takes it */
    cfg = NULL;
    a->last_reload_ok = true;
    a->last_reload_success_s = (int64_t)time(NULL);
    log_info("configuration reloaded from '%s'", a->config_file ? a->config_file : "(default)");
    if (restart[0])
        log_warn("changed in '%s' but read at start only, applied at the next start: %s",
                 a->config_file ? a->config_file : "(default)", restart);
    config_errors_release(&errs);
    pthread_mutex_unlock(&a->reload_mu);
    return 0;
fail:
    log_error("reload failed, keeping the running configuration: %s", err);
    a->last_reload_ok = false;
    a->reload_failures++;
    config_free(cfg);
    config_errors_release(&errs);
    pthread_mutex_unlock(&a->reload_mu);
    return e ? e : -EINVAL;
}

static void agent_missing_privilege(const struct privilege *p, void *arg)
{
    (void)arg;
    if (p->need == PRIVILEGE_REQUIRED)
        log_warn("missing capability %s (%s): %s", p->name, p->enables, p->without);
    else if (p->need == PRIVILEGE_RECOMMENDED)
        log_info("missing capability %s (%s): %s", p->name, p->enables, p->without);
    else
        log_debug("missing capability %s (%s): %s", p->name, p->enables, p->without);
}

/*
 * Once, at start: which capabilities of the table (discovery/privileges.h)
 * this process lacks, and what each costs. Nothing is refused here: every
 * target is still tried and, when it cannot be read, listed with why.
 */
static void agent_check_privileges(void)
{
    uint64_t eff = 0;
    int e = privileges_effective("/proc", &eff);
    if (e) {
        log_warn("cannot read this process's capabilities from '/proc/self/status': %s",
                 strerror(-e));
        return;
    }
    if (!privileges_check(eff, agent_missing_privilege, NULL))
        log_debug("capabilities: every one pyprofd may use is effective");
}

/*
 * Once, after the config is loaded: when a job asks for native: full, whether
 * this process may open the perf events it needs, and so what such jobs will
 * do (each target falling back says why again in /targets).
 */
static void agent_check_native(const struct pyprofd_config *cfg)
{
    bool full = false;
    for (size_t i = 0; i < cfg->njobs; i++)
        full |= cfg->jobs[i].native == CONFIG_NATIVE_FULL;
    if (!full)
        return;
    char why[256];
    if (perfsample_probe(why, sizeof(why)) == 0)
        log_info("native: full: %s: C frames from the kernel's samples", why);
    else
        log_warn("native: full: %s; such jobs sample with <native> markers instead "
                 "(docs/kubernetes.md, \"Privileges\")",
                 why);
}

/*
 * How idle threads will be found (idle_check: perf, the default): said once
 * at start, so a refusal is not a silent cost; /targets says it per target.
 */
static void agent_check_idle(const struct pyprofd_config *cfg)
{
    bool perf = false;
    for (size_t i = 0; i < cfg->njobs; i++)
        perf |= cfg->jobs[i].idle_check == IDLE_CHECK_PERF;
    if (!perf)
        return;
    char why[256];
    if (switches_probe(why, sizeof(why)) == 0)
        log_info("idle threads: %s: found from their context switches, with no read", why);
    else
        log_warn("idle threads: %s; found through /proc/PID/task/TID/schedstat instead (one "
                 "read per thread and attempt; docs/agent.md, \"Idle threads cost no reads\")",
                 why);
}

/* ---- the HTTP server's callbacks ---------------------------------------- */

static bool agent_cancelled(const void *arg)
{
    return http_profile_cancelled(arg);
}

static int agent_http_profile(void *ctx, const struct http_profile_request *req, uint8_t **out,
                              size_t *out_len, char *err, size_t err_size)
{
    struct agent *a = ctx;
    struct loop_capture c;
    int e = loop_profile(a->loop, req->seconds, (pid_t)req->pid, agent_cancelled, req, &c, err,
                         err_size);
    if (e)
        return e;
    if (req->pid && req->mode >= 0 && c.nparts == 1 && (int)c.parts[0].mode != req->mode) {
        snprintf(err, err_size, "process %d is sampled in %s mode, not %s", (int)req->pid,
                 profile_mode_name(c.parts[0].mode),
                 profile_mode_name((enum profile_mode)req->mode));
        e = -ENOENT;
    } else if (req->format == HTTP_PROFILE_FLAME) {
        e = views_profile_flame(&c, req->mode, req->pid != 0, out, out_len, err, err_size);
    } else {
        e = views_profile_pprof(&c, req->mode, out, out_len, err, err_size);
    }
    loop_capture_release(&c);
    return e;
}

static int agent_http_targets(void *ctx, char **out, size_t *out_len)
{
    struct agent *a = ctx;
    struct loop_view *v = NULL;
    int err = loop_snapshot(a->loop, &v);
    if (!err)
        err = views_targets_json(v, out, out_len);
    loop_view_free(v);
    return err;
}

static int agent_http_metrics(void *ctx, struct promtext *w)
{
    struct agent *a = ctx;
    pthread_mutex_lock(&a->reload_mu);
    bool ok = a->last_reload_ok;
    int64_t when = a->last_reload_success_s;
    pthread_mutex_unlock(&a->reload_mu);
    int err = promtext_family(w, "pyprofd_build_info", PROMTEXT_GAUGE,
                              "Always 1; the labels say which pyprofd this is.");
    if (!err)
        err = promtext_sample(w, NULL,
                              PROMTEXT_LABELS({"version", pyprofd_build.version},
                                              {"revision", pyprofd_build.revision},
                                              {"compiler", pyprofd_build.compiler}),
                              1);
    if (!err)
        err = promtext_family(w, "pyprofd_config_last_reload_successful", PROMTEXT_GAUGE,
                              "Whether the last configuration load succeeded (1) or not (0).");
    if (!err)
        err = promtext_sample(w, NULL, NULL, 0, ok ? 1 : 0);
    if (!err)
        err =
            promtext_family(w, "pyprofd_config_last_reload_success_timestamp_seconds",
                            PROMTEXT_GAUGE, "When the configuration was last loaded successfully.");
    if (!err)
        err = promtext_sample(w, NULL, NULL, 0, (double)when);
    if (!err)
        err = promtext_family(w, "pyprofd_export_queue_length", PROMTEXT_GAUGE,
                              "Profile windows waiting for the export thread.");
    if (!err)
        err = promtext_sample(w, NULL, NULL, 0, (double)window_pending(a->queue));
    if (!err)
        err = promtext_family(w, "pyprofd_heap_inuse_bytes", PROMTEXT_GAUGE,
                              "Heap the agent has allocated and not freed (its own allocator: "
                              "windows, tables, buffers; not what libraries allocate).");
    if (!err)
        err = promtext_sample(w, NULL, NULL, 0, (double)alloc_in_use());
    struct loop_view *v = NULL;
    if (!err)
        err = loop_snapshot(a->loop, &v);
    if (!err)
        err = views_agent_metrics(v, w);
    loop_view_free(v);
    if (!err)
        err = dispatch_metrics(a->dispatch, w);
    return err;
}

static bool agent_http_ready(void *ctx)
{
    struct agent *a = ctx;
    return loop_ready(a->loop);
}

static int agent_http_reload(void *ctx, char *err, size_t err_size)
{
    return agent_reload(ctx, err, err_size);
}

/* ---- the command ---------------------------------------------------------- */

int cli_agent(int argc, char **argv)
{
    enum {
        OPT_CONFIG = 256,
        OPT_EXPAND,
        OPT_LISTEN,
        OPT_LIFECYCLE,
        OPT_SHUTDOWN,
        OPT_LOG,
        OPT_LOG_FORMAT
    };
    static const struct option longopts[] = {
        {"config.file", required_argument, NULL, OPT_CONFIG},
        {"config.expand-env", no_argument, NULL, OPT_EXPAND},
        {"web.listen-address", required_argument, NULL, OPT_LISTEN},
        {"web.enable-lifecycle", no_argument, NULL, OPT_LIFECYCLE},
        {"shutdown-timeout", required_argument, NULL, OPT_SHUTDOWN},
        {"log.level", required_argument, NULL, OPT_LOG},
        {"log.format", required_argument, NULL, OPT_LOG_FORMAT},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct agent a = {.last_reload_ok = true, .last_reload_success_s = (int64_t)time(NULL)};
    bool lifecycle = false;
    int64_t shutdown_s = AGENT_DEFAULT_SHUTDOWN_S;
    int opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
        switch (opt) {
        case OPT_CONFIG:
            a.config_file = optarg;
            break;
        case OPT_EXPAND:
            a.load_opts.expand_env = true;
            break;
        case OPT_LISTEN:
            a.listen_option = optarg;
            break;
        case OPT_LIFECYCLE:
            lifecycle = true;
            break;
        case OPT_SHUTDOWN:
            if (strnum_parse_i64(optarg, 1, 3600, &shutdown_s)) {
                log_error("--shutdown-timeout wants seconds from 1 to 3600, not '%s'", optarg);
                return CLI_EXIT_USAGE;
            }
            break;
        case OPT_LOG: {
            enum log_level lv;
            if (log_level_parse(optarg, &lv)) {
                log_error("unknown log level '%s' (use error, warn, info or debug)", optarg);
                return CLI_EXIT_USAGE;
            }
            log_set_level(lv);
            break;
        }
        case OPT_LOG_FORMAT: {
            enum log_format lf;
            if (log_format_parse(optarg, &lf)) {
                log_error("unknown log format '%s' (use text, logfmt or json)", optarg);
                return CLI_EXIT_USAGE;
            }
            log_set_format(lf);
            break;
        }
        case 'h':
            return agent_usage(stdout, CLI_EXIT_OK);
        default:
            return agent_usage(stderr, CLI_EXIT_USAGE);
        }
    }
    if (optind != argc) {
        log_error("unexpected argument '%s'", argv[optind]);
        return agent_usage(stderr, CLI_EXIT_USAGE);
    }

    int status = CLI_EXIT_FAIL;
    struct pyprofd_config *cfg = NULL;
    struct config_errors errs = {0};
    struct exporter ex[AGENT_MAX_OUTPUTS];
    size_t nex = 0;
    char err[512] = "";
    pthread_mutex_init(&a.reload_mu, NULL);

    /*
     * Signals are taken synchronously by this thread (sigwait below), and
     * every thread inherits the mask, so they are blocked before the first
     * thread starts. SIGTERM and SIGINT are blocked only after the first
     * load, though: until then nothing needs flushing, and their default
     * action (exit) must stay able to end a load that hangs. A SIGHUP that
     * comes early waits for the loop.
     */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    signal(SIGPIPE, SIG_IGN);

    /* once, before any thread exists: libcurl's global state (TLS, resolver) */
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        log_error("cannot initialise libcurl");
        return CLI_EXIT_FAIL;
    }
    agent_check_privileges();
    if (a.config_file) /* recorded before the load: a change meanwhile counts */
        (void)agent_file_changed(a.config_file, &a.file);
    int e = agent_load(&a, &cfg, &errs);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    if (e) {
        agent_log_errors(&errs);
        if (!errs.n)
            log_error("cannot load '%s': %s", a.config_file, strerror(-e));
        goto out;
    }
    agent_check_native(cfg);
    agent_check_idle(cfg);
    char listen_addr[256];
    snprintf(listen_addr, sizeof(listen_addr), "%s",
             a.listen_option              ? a.listen_option
             : cfg->server.listen_address ? cfg->server.listen_address
                                          : "");
    (void)agent_log_listen(cfg, a.listen_option, a.config_file, false);
    a.lifecycle_option = lifecycle;
    lifecycle = lifecycle || cfg->server.enable_lifecycle;
    snprintf(a.listen_addr, sizeof(a.listen_addr), "%s", listen_addr);
    a.lifecycle = lifecycle;
    a.max_profiles = cfg->server.max_concurrent_profiles;
    struct agg_limits lim = window_limits_for(cfg->global.limits.target_memory_bytes);
    /* as many queue slots as windows: a push never finds the queue full (each
     * queued item holds a window), only the pool can run out */
    e = window_queue_new(loop_window_slots(cfg), loop_window_slots(cfg), &lim, &a.queue);
    if (!e)
        e = dispatch_new(a.queue, cfg->global.limits.max_profile_bytes, &a.dispatch);
    if (e) {
        log_error("cannot set up the pipeline: %s", strerror(-e));
        goto out;
    }
    e = exporters_new(cfg, ex, AGENT_MAX_OUTPUTS, &nex, err, sizeof(err));
    if (e) {
        log_error("%s", err);
        goto out;
    }
    e = dispatch_set_exporters(a.dispatch, ex, nex, cfg->global.limits.max_profile_bytes);
    if (e) {
        exporters_free(ex, nex);
        log_error("cannot set up the outputs: %s", strerror(-e));
        goto out;
    }
    struct loop_opts lo = {.queue = a.queue};
    size_t njobs = cfg->njobs;
    e = loop_new(cfg, &lo, &a.loop);
    if (e) {
        log_error("cannot set up sampling: %s", strerror(-e));
        goto out;
    }
    cfg = NULL; /* the loop's now */
    e = dispatch_start(a.dispatch);
    if (!e)
        e = loop_start(a.loop);
    if (e) {
        log_error("cannot start threads: %s", strerror(-e));
        goto out;
    }
    if (listen_addr[0]) {
        struct http_server_config hc = {.listen_address = listen_addr,
                                        .enable_lifecycle = lifecycle,
                                        .max_concurrent_profiles = (uint32_t)a.max_profiles};
        struct http_server_ops ops = {
            .ctx = &a,
            .profile = agent_http_profile,
            .targets_json = agent_http_targets,
            .metrics = agent_http_metrics,
            .ready = agent_http_ready,
            .reload = agent_http_reload,
        };
        e = http_server_start(&hc, &ops, &a.http, err, sizeof(err));
        if (e) {
            log_error("cannot listen on '%s': %s", listen_addr, err[0] ? err : strerror(-e));
            goto out;
        }
        log_info("serving http://%s/ (profiles at /debug/pprof/profile, /targets, /metrics)",
                 listen_addr);
    }
    log_info("pyprofd %s (%s) agent started: %zu job(s), config %s", pyprofd_build.version,
             pyprofd_build.revision, njobs, a.config_file ? a.config_file : "(built-in default)");

    for (;;) {
        const struct timespec check = {.tv_sec = AGENT_CONFIG_CHECK_S};
        int sig = sigtimedwait(&sigs, NULL, &check);
        if (sig < 0) {
            if (errno == EAGAIN && a.config_file) {
                pthread_mutex_lock(&a.reload_mu);
                bool changed = agent_file_changed(a.config_file, &a.file);
                pthread_mutex_unlock(&a.reload_mu);
                char why[512];
                if (changed) {
                    log_info("'%s' changed on disk: reloading", a.config_file);
                    (void)agent_reload(&a, why, sizeof(why));
                }
            }
            continue;
        }
        if (sig == SIGHUP) {
            char why[512];
            (void)agent_reload(&a, why, sizeof(why));
            continue;
        }
        log_info("received %s: flushing profiles and stopping",
                 sig == SIGINT ? "SIGINT" : "SIGTERM");
        break;
    }
    status = CLI_EXIT_OK;
out:;
    uint64_t now = clock_mono_now(), deadline = now + (uint64_t)shutdown_s * 1000000000ull;
    /* the sampling thread gets half the time (it stops at once unless
     * something it waits on stalls), the exporters the rest */
    bool abandoned = a.loop && loop_stop_by(a.loop, now + (deadline - now) / 2) == -ETIMEDOUT;
    if (abandoned)
        log_error("the sampling thread did not stop within %" PRId64
                  " s: exiting without the windows it holds",
                  shutdown_s / 2);
    if (a.dispatch)
        dispatch_stop(a.dispatch, deadline);
    if (a.http)
        (void)http_server_stop(a.http, 2000);
    if (abandoned) /* what the sampling thread still uses is left to the exit */
        _exit(status);
    http_server_free(a.http);
    loop_free(a.loop);
    dispatch_free(a.dispatch);
    window_queue_free(a.queue);
    config_free(cfg);
    config_errors_release(&errs);
    pthread_mutex_destroy(&a.reload_mu);
    curl_global_cleanup();
    if (status == CLI_EXIT_OK)
        log_info("stopped");
    return status;
}
