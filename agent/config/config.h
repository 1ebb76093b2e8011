/* SPDX-License-Identifier: MIT */
/*
 * config.h: the agent's configuration, loaded from Prometheus-style YAML
 * (libyaml) into struct pyprofd_config, the only thing `pyprofd agent`
 * passes down. Loading is pure (no side effects besides reading the file, the
 * files it names unless skip_file_checks, and, with expand_env, the
 * environment), strict (unknown keys, wrong types and bad values are errors;
 * so are a URL libcurl cannot use, control characters in what is sent with
 * every request, and a named file that cannot be read) and complete: every
 * error found is reported with its line and column (struct config_error,
 * formatted as "FILE:LINE:COLUMN: message" by config_error_format()), not
 * just the first. No file is ever waited on (readfile_open()). Every key, its
 * default and unit are documented in docs/configuration.md.
 *
 * Shape (see config/pyprofd.example.yml):
 *   global:           sample_rate, mode, profile_interval, external_labels, limits
 *   discovery:        refresh_interval, proc_root, min_process_age, watch, kubernetes
 *   profile_configs:  list of jobs: job_name, per-job overrides of sample_rate,
 *                     mode, profile_interval; all_threads, native, gc,
 *                     async_aware, async_mode, trace_context, relabel_configs
 *   remote_write:     push endpoints (pyroscope | parca), see exporters/
 *   storage:          directory, retention, max_bytes
 *   server:           listen_address, enable_lifecycle, show_sensitive_labels
 *
 * Values in the loaded config are final: per-job fields already carry the
 * global defaults where the job did not override them; durations are
 * nanoseconds; secrets given as *_file are kept as paths (read at load to
 * check them, then again on every use).
 *
 * Ownership: the loader returns a heap object the caller owns (config_free).
 * A loaded config is immutable and may be read from any thread.
 */
#ifndef PYPROFD_CONFIG_CONFIG_H
#define PYPROFD_CONFIG_CONFIG_H

#include "base/compat.h"

#include "base/labels.h"
#include "base/readfile.h"
#include "config/relabel.h"
#include "pipeline.h"

/**
 * What a job shows of C code: nothing (false), a <native> marker where C
 * code sits between Python frames (true, markers), or the C frames
 * themselves, from the kernel's samples (full: mode cpu only; falls back to
 * markers where perf events are refused).
 */
enum config_native {
    CONFIG_NATIVE_OFF,
    CONFIG_NATIVE_TRUE,
    CONFIG_NATIVE_MARKERS,
    CONFIG_NATIVE_FULL
};

/**
 * How a job's attempts find threads that did not run since the last read
 * (sampler/runwatch.h): their context switches (perf; schedstat where perf
 * events are refused), /proc's schedstat only, or not at all (off).
 */

/** asyncio stacks: "running" (only the running task) or "all" (also suspended tasks). */
enum config_async_mode { CONFIG_ASYNC_RUNNING, CONFIG_ASYNC_ALL };

struct config_limits {
    uint64_t max_targets;            /* targets sampled at once; default 1000 */
    uint64_t max_labels_per_profile; /* default 25 */
    uint64_t max_profile_bytes;      /* one pprof, gzipped; <size>; default 4MB */
    uint64_t target_memory_bytes;    /* aggregation memory per target; default 16MB */
    double cpu_budget; /* fraction of one CPU the sampler may use, (0, 64]; default 0.5
                          (written as 0.5 or "50%") */
};

struct config_job {
    char *job_name;     /* unique, non-empty */
    double sample_rate; /* Hz, (0, 1e6] */
    enum profile_mode mode;
    uint64_t profile_interval_ns; /* >= 1s */
    bool all_threads;             /* default true */
    enum config_native native;    /* default off */
    enum idle_check idle_check;   /* default perf (pipeline.h: one enum end to end) */
    bool gc;                      /* default true */
    bool opcodes;                 /* default false */
    bool async_aware;             /* default false */
    enum config_async_mode async_mode;
    bool trace_context;            /* default true: when the target publishes one */
    struct relabel_rules *relabel; /* never NULL (maybe empty) */
};

enum config_push_type { CONFIG_PUSH_PYROSCOPE, CONFIG_PUSH_PARCA };
/** discovery.watch: new processes between scans (discovery/proc_watch.h, same order). */
enum config_watch { CONFIG_WATCH_AUTO, CONFIG_WATCH_NETLINK, CONFIG_WATCH_POLL, CONFIG_WATCH_OFF };

/** discovery.kubernetes.source. */
enum config_kube_source { CONFIG_KUBE_API_SERVER, CONFIG_KUBE_KUBELET };
enum config_pyroscope_api { CONFIG_PYROSCOPE_API_PUSH, CONFIG_PYROSCOPE_API_INGEST };

/** discovery.kubernetes (daemon/podmeta.h resolves what is unset). */
struct config_kubernetes {
    bool enabled;                   /* default false */
    enum config_kube_source source; /* default api_server */
    char *api_server;               /* NULL: in-cluster, from KUBERNETES_SERVICE_HOST/_PORT */
    char *kubelet_url;              /* NULL: https://$NODE_IP:10250 or https://<node>:10250 */
    char *node_name;                /* NULL: $NODE_NAME, else the host name */
    char *bearer_token_file;        /* default: the service account's token */
    uint64_t watch_timeout_ns;      /* default 5m */
    uint64_t poll_interval_ns;      /* default 15s (source kubelet) */
    uint64_t request_timeout_ns;    /* default 1m: one list page or kubelet poll */
    char *ca_file;                  /* default: the service account's ca.crt */
    bool insecure_skip_verify;      /* default false */
};

struct config_remote_write {
    char *name; /* unique; default "<type>-<index>" */
    enum config_push_type type;
    enum config_pyroscope_api api; /* pyroscope only: "push" (default) or "ingest" */
    char *url;                     /* http:// or https:// */
    uint64_t remote_timeout_ns;    /* default 10s */
    char *tenant_id;               /* NULL: none (X-Scope-OrgID) */
    struct labels headers;         /* extra HTTP headers, name -> value */
    char *basic_auth_username;     /* NULL: no basic auth */
    char *basic_auth_password;     /* inline secret, or NULL */
    char *basic_auth_password_file;
    char *authorization_type; /* default "Bearer" when credentials are set */
    char *authorization_credentials;
    char *authorization_credentials_file;
    char *tls_ca_file, *tls_cert_file, *tls_key_file, *tls_server_name;
    bool tls_insecure_skip_verify;
    uint64_t queue_max_profiles;         /* default 100 */
    uint64_t queue_max_bytes;            /* default 64MB */
    uint64_t min_backoff_ns;             /* default 500ms */
    uint64_t max_backoff_ns;             /* default 5m */
    uint64_t max_retries;                /* 0: until too old to send; default 10 */
    struct relabel_rules *write_relabel; /* never NULL */
};

struct pyprofd_config {
    char *source; /* file name it was loaded from, or the buffer's name */
    struct {
        double sample_rate;           /* Hz; default 100 */
        enum profile_mode mode;       /* default cpu */
        uint64_t profile_interval_ns; /* default 15s */
        uint64_t sampling_tick_ns;    /* the sampling thread's tick; default 1ms */
        struct labels external_labels;
        struct config_limits limits;
    } global;
    struct {
        uint64_t refresh_interval_ns; /* default 10s */
        char *proc_root;              /* default "/proc" */
        uint64_t min_process_age_ns;  /* default 0 */
        enum config_watch watch;      /* default auto */
        struct config_kubernetes kubernetes;
    } discovery;
    struct config_job *jobs; /* may be 0 jobs: nothing is sampled */
    size_t njobs;
    struct config_remote_write *remote_write;
    size_t nremote_write;
    struct {
        char *directory;       /* NULL: storage off (the default) */
        uint64_t retention_ns; /* default 1h; files older are deleted */
        uint64_t max_bytes;    /* default 1GB; oldest deleted first when over */
    } storage;
    struct {
        char *listen_address; /* default "127.0.0.1:PYPROFD_DEFAULT_PORT"; "" disables the server */
        /* listen_address came out of ${VAR} expansion: "" then most likely
         * means an unset variable, not "no server" (the agent warns) */
        bool listen_address_expanded;
        bool enable_lifecycle;            /* POST /-/reload; default false */
        bool show_sensitive_labels;       /* /targets: command lines etc.; default false */
        uint64_t max_concurrent_profiles; /* profile requests served at once; default 4 */
    } server;
};

/**
 * The default HTTP port (documented in docs/configuration.md). Prometheus'
 * "Default port allocations" registry has no free port left in its exporter
 * range 9100-9999, so pyprofd uses one outside it and outside Linux's
 * ephemeral range, clear of Pyroscope (4040) and Parca (7070, 7071).
 */
#define PYPROFD_DEFAULT_PORT 7979

/*
 * Caps of the loader: the file size, the YAML nesting depth, the number of
 * items in any one sequence or mapping, the length of any scalar (also after
 * ${VAR} expansion), the number of nodes in a file and of errors reported.
 */
#define CONFIG_MAX_FILE_BYTES (4u << 20)
#define CONFIG_MAX_DEPTH      32
#define CONFIG_MAX_ITEMS      10000
#define CONFIG_MAX_SCALAR     65536
#define CONFIG_MAX_NODES      200000
#define CONFIG_MAX_ERRORS     200
/* The most jobs, remote_write endpoints and relabel rules per list. */
#define CONFIG_MAX_JOBS          1000
#define CONFIG_MAX_REMOTE_WRITE  64
#define CONFIG_MAX_RELABEL_RULES 1000
/* The most profile requests server.max_concurrent_profiles may admit at once:
 * each running one hangs a tap on every target it covers, and a sampler
 * holds at most SAMPLER_MAX_TAPS (sampler.h), which loop_requests.c checks
 * is at least this. */
#define CONFIG_MAX_CONCURRENT_PROFILES 64

/** One problem found by a load: where it is, and what it is. */
struct config_error {
    uint32_t line, col; /* 1-based; line 0: about no one place (the file cannot be
                           read, is too large; too many errors) */
    char *msg;          /* "global.mode: unknown mode 'turbo' (...)": no file name,
                           no position */
};

/**
 * All errors of one load, sorted by position (errors without one last),
 * stable. Use one list per load: @a source names the file of the last load.
 * A zeroed struct is an empty list.
 */
struct config_errors {
    char *source; /* the file (or buffer) name the errors are about */
    struct config_error *v;
    size_t n;
    size_t cap;
};
/** Frees the list and zeroes it; NULL and a zeroed list are no-ops. */
void config_errors_release(struct config_errors *e);
/**
 * Formats error @a i of @a e (i < e->n) as "FILE:LINE:COLUMN: message", or
 * "FILE: message" when it has no position, into @a buf (NUL-terminated,
 * truncated to @a len bytes). Returns @a buf. Thread-safe.
 */
const char *config_error_format(const struct config_errors *e, size_t i, char *buf, size_t len);
/** Room config_error_format() needs for any message and a name of up to PATH_MAX. */
#define CONFIG_ERROR_MAX 6144

struct config_load_opts {
    bool expand_env; /* ${VAR}, ${VAR:-default} in scalar values (--config.expand-env) */
    /* Lookup used for expansion; NULL means getenv. Tests inject their own. */
    const char *(*getenv_fn)(const char *name, void *ctx);
    void *getenv_ctx;
    /*
     * Do not open the files the config names. By default each is checked at
     * load, as it would be used: the *_file secrets are read
     * (readfile_secret()), the tls_config files opened (readfile_open()).
     * For tests of the YAML alone.
     */
    bool skip_file_checks;
};

/**
 * Loads and validates @a path. Returns 0 with *@a out (caller owns;
 * config_free), or -EINVAL with every problem in @a errs (caller releases), or
 * -ENOENT/-EACCES/... when the file cannot be read (also described in @a errs),
 * or -ENOMEM. The file is opened with readfile_open(): a FIFO, socket,
 * device or directory is refused at once (-EINVAL, -EISDIR), never waited on.
 * An empty file gives the defaults with no jobs.
 */
PYPROFD_WARN_UNUSED int config_load_file(const char *path, const struct config_load_opts *opts,
                                         struct pyprofd_config **out, struct config_errors *errs);
/** Same from memory; @a name is used in messages. */
PYPROFD_WARN_UNUSED int config_load_buffer(const char *buf, size_t len, const char *name,
                                           const struct config_load_opts *opts,
                                           struct pyprofd_config **out, struct config_errors *errs);
/** The built-in default config: one job "python" sampling every Python process. */
PYPROFD_WARN_UNUSED int config_default(struct pyprofd_config **out);
void config_free(struct pyprofd_config *c);

/**
 * Parses a Prometheus duration ("15s", "1m30s", "500ms", "0"; units y w d h m s
 * ms, largest first, each once, integers only). Returns 0 or -EINVAL / -ERANGE.
 */
PYPROFD_WARN_UNUSED int config_parse_duration(const char *s, uint64_t *out_ns);
/** Writes @a ns in the canonical form ("1m30s", "0s") into @a buf. */
void config_format_duration(uint64_t ns, char *buf, size_t len);
/**
 * Parses a size ("4MB", "512KiB", "1GB", "100B"; unit required; integers only;
 * KB and KiB both mean 1024, as Prometheus' <size>). Returns 0 or -EINVAL/-ERANGE.
 */
PYPROFD_WARN_UNUSED int config_parse_size(const char *s, uint64_t *out_bytes);
/** Writes @a bytes with the largest exact binary unit ("4MiB", "1000B") into @a buf. */
void config_format_size(uint64_t bytes, char *buf, size_t len);

/**
 * Writes @a c to @a out as YAML that loads back into the same config (the
 * effective values, defaults and inherited values included), through
 * libyaml's emitter; secrets (inline passwords and credentials, header
 * values, the password in a URL) are written as "<secret>". Returns 0,
 * -EIO when writing failed or -ENOMEM.
 */
PYPROFD_WARN_UNUSED int config_print(const struct pyprofd_config *c, FILE *out);

/**
 * Expands ${VAR} and ${VAR:-default} in @a in ($$ is a literal $). Returns 0
 * with *@a out (caller owns), -EINVAL for an unterminated ${, -E2BIG when the
 * result would exceed CONFIG_MAX_SCALAR bytes, or -ENOMEM. An unset VAR
 * without default expands to "" and is reported through @a missing (the first
 * such name, caller-owned, may be NULL). The default is used when VAR is unset
 * or empty. Only a valid name ([A-Za-z_][A-Za-z0-9_]*) inside the braces
 * expands: "${1}", "$1" and a lone "$" are kept as written, so relabeling
 * templates survive; "$${name}" gives a literal "${name}".
 */
PYPROFD_WARN_UNUSED int config_expand_env(const char *in, const struct config_load_opts *opts,
                                          char **out, char **missing);

#endif /* PYPROFD_CONFIG_CONFIG_H */
