/* SPDX-License-Identifier: MIT */
/*
 * config.c: the strict walk from the YAML tree (config_yaml.h) to struct
 * pyprofd_config, plus defaults, printing and freeing (see config.h).
 *
 * The walk never stops at the first problem: each key is checked on its own
 * and every error is recorded with the position of the node it is about
 * (the key for unknown or duplicate keys, the value for bad values, the
 * enclosing mapping for missing keys). Cross-field checks run once a mapping
 * has been walked; inheritance from `global` runs at the end, because
 * `global` may come after `profile_configs` in the file. The config is only
 * handed out when no error was found.
 */
#include "base/compat.h"

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <unistd.h>

#include <curl/curl.h>

#include "base/alloc.h"
#include "base/strnum.h"
#include "config/config.h"
#include "config/config_yaml.h"

#define NS_PER_MS  1000000ull
#define NS_PER_SEC 1000000000ull

/* The walk's state: where errors go, and the sticky -ENOMEM. */
struct cfg {
    struct config_errors *errs;
    int rc;           /* -ENOMEM once allocation failed */
    bool bad;         /* some error was reported */
    bool check_files; /* open the files the config names (not skip_file_checks) */
};

static void cfg_err(struct cfg *x, const struct config_node *n, const char *fmt, ...)
    PYPROFD_PRINTF(3, 4);

static void cfg_err(struct cfg *x, const struct config_node *n, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    x->bad = true;
    if (config_yaml_error(x->errs, n ? n->line : 0, n ? n->col : 0, "%s", msg))
        x->rc = -ENOMEM;
}

static void cfg_nomem(struct cfg *x)
{
    x->rc = -ENOMEM;
    x->bad = true;
}

/* ---- scalar helpers ---- */

static const char *cfg_kind(const struct config_node *n)
{
    switch (n->kind) {
    case CONFIG_NODE_MAP:
        return "a mapping";
    case CONFIG_NODE_SEQ:
        return "a list";
    default:
        return "a scalar";
    }
}

/* Whether @n is a mapping to walk; null means "unset" (false, no error). */
static bool cfg_is_map(struct cfg *x, const char *path, const struct config_node *n)
{
    if (n->kind == CONFIG_NODE_SCALAR && n->null)
        return false;
    if (n->kind != CONFIG_NODE_MAP) {
        cfg_err(x, n, "%s: expected a mapping, got %s", path, cfg_kind(n));
        return false;
    }
    return true;
}

static bool cfg_is_seq(struct cfg *x, const char *path, const struct config_node *n)
{
    if (n->kind == CONFIG_NODE_SCALAR && n->null)
        return false;
    if (n->kind != CONFIG_NODE_SEQ) {
        cfg_err(x, n, "%s: expected a list, got %s", path, cfg_kind(n));
        return false;
    }
    return true;
}

/* Whether @v is a scalar with a value (null: unset, no error). */
static bool cfg_is_scalar(struct cfg *x, const char *path, const struct config_node *v)
{
    if (v->kind != CONFIG_NODE_SCALAR) {
        cfg_err(x, v, "%s: expected a single value, got %s", path, cfg_kind(v));
        return false;
    }
    return !v->null;
}

/* The key at @i of mapping @m, or NULL (reported) when unusable. */
static const char *cfg_key(struct cfg *x, const char *path, const struct config_node *m, size_t i)
{
    const struct config_node *k = m->kids[i];
    if (k->kind != CONFIG_NODE_SCALAR) {
        cfg_err(x, k, "%s: mapping keys must be plain names, got %s", path, cfg_kind(k));
        return NULL;
    }
    for (size_t j = 0; j < i; j += 2) {
        const struct config_node *o = m->kids[j];
        if (o->kind == CONFIG_NODE_SCALAR && o->value && k->value &&
            strcmp(o->value, k->value) == 0) {
            cfg_err(x, k, "%s: duplicate key '%s' (first at line %" PRIu32 ")", path, k->value,
                    o->line);
            return NULL;
        }
    }
    return k->value;
}

static void cfg_unknown(struct cfg *x, const char *path, const struct config_node *k)
{
    cfg_err(x, k, "%s: unknown key '%s'", path, k->value);
}

/* Replaces *@dst with a copy of @v's value ("" leaves it NULL when @empty_unset). */
static void cfg_str(struct cfg *x, const char *path, const struct config_node *v, char **dst,
                    bool empty_unset)
{
    if (!cfg_is_scalar(x, path, v))
        return;
    char *s = NULL;
    if (!(empty_unset && v->len == 0)) {
        s = alloc_strdup(v->value);
        if (!s) {
            cfg_nomem(x);
            return;
        }
    }
    alloc_free(*dst);
    *dst = s;
}

static void cfg_bool(struct cfg *x, const char *path, const struct config_node *v, bool *dst)
{
    static const char *const yes[] = {"true", "True", "TRUE"};
    static const char *const no[] = {"false", "False", "FALSE"};
    if (!cfg_is_scalar(x, path, v))
        return;
    for (size_t i = 0; v->plain && i < PYPROFD_ARRAY_SIZE(yes); i++) {
        if (strcmp(v->value, yes[i]) == 0) {
            *dst = true;
            return;
        }
        if (strcmp(v->value, no[i]) == 0) {
            *dst = false;
            return;
        }
    }
    cfg_err(x, v, "%s: expected true or false, got '%s'", path, v->value);
}

/* A plain decimal number (no hex, inf or nan). */
static bool cfg_parse_number(const char *s, double *out)
{
    char *end;
    if (!*s || strpbrk(s, "xXnN") || !strchr("0123456789+-.", *s))
        return false;
    errno = 0;
    double d = strtod(s, &end);
    if (*end || errno || !isfinite(d))
        return false;
    *out = d;
    return true;
}

/* A number in (@lo, @hi] (@lo_open) or [@lo, @hi]. */
static bool cfg_number(struct cfg *x, const char *path, const struct config_node *v, double lo,
                       bool lo_open, double hi, const char *unit, double *dst)
{
    double d;
    if (!cfg_is_scalar(x, path, v))
        return false;
    if (!v->plain || !cfg_parse_number(v->value, &d)) {
        cfg_err(x, v, "%s: expected a number, got '%s'", path, v->value);
        return false;
    }
    if ((lo_open ? d <= lo : d < lo) || d > hi) {
        cfg_err(x, v, "%s: must be in %c%.15g, %.15g]%s%s, got %s", path, lo_open ? '(' : '[', lo,
                hi, *unit ? " " : "", unit, v->value);
        return false;
    }
    *dst = d;
    return true;
}

static bool cfg_uint(struct cfg *x, const char *path, const struct config_node *v, int64_t lo,
                     int64_t hi, uint64_t *dst)
{
    int64_t n;
    if (!cfg_is_scalar(x, path, v))
        return false;
    if (!v->plain) {
        cfg_err(x, v, "%s: expected a whole number, got '%s'", path, v->value);
        return false;
    }
    int rc = strnum_parse_i64(v->value, lo, hi, &n);
    if (rc == -ERANGE) {
        cfg_err(x, v, "%s: must be between %" PRId64 " and %" PRId64 ", got %s", path, lo, hi,
                v->value);
        return false;
    }
    if (rc) {
        cfg_err(x, v, "%s: expected a whole number, got '%s'", path, v->value);
        return false;
    }
    *dst = (uint64_t)n;
    return true;
}

static bool cfg_duration(struct cfg *x, const char *path, const struct config_node *v,
                         uint64_t lo_ns, uint64_t hi_ns, uint64_t *dst)
{
    uint64_t ns;
    char a[64], b[64];
    if (!cfg_is_scalar(x, path, v))
        return false;
    if (config_parse_duration(v->value, &ns)) {
        cfg_err(x, v, "%s: invalid duration '%s' (write e.g. 15s, 1m30s, 500ms)", path, v->value);
        return false;
    }
    if (ns < lo_ns || ns > hi_ns) {
        config_format_duration(lo_ns, a, sizeof(a));
        config_format_duration(hi_ns, b, sizeof(b));
        cfg_err(x, v, "%s: must be between %s and %s, got %s", path, a, b, v->value);
        return false;
    }
    *dst = ns;
    return true;
}

static bool cfg_size(struct cfg *x, const char *path, const struct config_node *v, uint64_t lo,
                     uint64_t hi, uint64_t *dst)
{
    uint64_t n;
    char a[64], b[64];
    if (!cfg_is_scalar(x, path, v))
        return false;
    if (config_parse_size(v->value, &n)) {
        cfg_err(x, v, "%s: invalid size '%s' (write e.g. 512KiB, 4MB, 1GB)", path, v->value);
        return false;
    }
    if (n < lo || n > hi) {
        config_format_size(lo, a, sizeof(a));
        config_format_size(hi, b, sizeof(b));
        cfg_err(x, v, "%s: must be between %s and %s, got %s", path, a, b, v->value);
        return false;
    }
    *dst = n;
    return true;
}

static bool cfg_mode(struct cfg *x, const char *path, const struct config_node *v,
                     enum profile_mode *dst)
{
    if (!cfg_is_scalar(x, path, v))
        return false;
    if (profile_mode_parse(v->value, dst) == 0)
        return true;
    cfg_err(x, v, "%s: unknown mode '%s' (one of wall, cpu, gil, exception)", path, v->value);
    return false;
}

static bool cfg_path_join(char *buf, size_t len, const char *path, const char *key)
{
    int n = snprintf(buf, len, "%s%s%s", path, *path ? "." : "", key);
    return n >= 0 && (size_t)n < len;
}

/* ---- defaults ---- */

static void cfg_set_defaults(struct pyprofd_config *c)
{
    c->global.sample_rate = 100;
    c->global.mode = PROFILE_CPU;
    c->global.profile_interval_ns = 15 * NS_PER_SEC;
    c->global.limits.max_targets = 1000;
    c->global.limits.max_labels_per_profile = 25;
    c->global.limits.max_profile_bytes = 4u << 20;
    c->global.limits.target_memory_bytes = 16u << 20;
    c->global.limits.cpu_budget = 0.5;
    c->discovery.refresh_interval_ns = 10 * NS_PER_SEC;
    c->discovery.min_process_age_ns = NS_PER_SEC;
    c->storage.retention_ns = 3600 * NS_PER_SEC;
    c->storage.max_bytes = 1ull << 30;
}

static int cfg_alloc_defaults(struct pyprofd_config **out, const char *source)
{
    char addr[64];
    struct pyprofd_config *c = alloc_calloc(1, sizeof(*c));
    *out = NULL;
    if (!c)
        return -ENOMEM;
    cfg_set_defaults(c);
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", PYPROFD_DEFAULT_PORT);
    c->source = alloc_strdup(source);
    c->discovery.proc_root = alloc_strdup("/proc");
    c->server.listen_address = alloc_strdup(addr);
    if (!c->source || !c->discovery.proc_root || !c->server.listen_address) {
        config_free(c);
        return -ENOMEM;
    }
    *out = c;
    return 0;
}

static void cfg_job_defaults(struct config_job *j)
{
    j->all_threads = true;
    j->native = false;
    j->gc = true;
    j->async_aware = false;
    j->async_mode = CONFIG_ASYNC_RUNNING;
}

static void cfg_rw_defaults(struct config_remote_write *rw)
{
    rw->type = CONFIG_PUSH_PYROSCOPE;
    rw->api = CONFIG_PYROSCOPE_API_PUSH;
    rw->remote_timeout_ns = 10 * NS_PER_SEC;
    rw->queue_max_profiles = 100;
    rw->queue_max_bytes = 64u << 20;
    rw->min_backoff_ns = 500 * NS_PER_MS;
    rw->max_backoff_ns = 300 * NS_PER_SEC;
    rw->max_retries = 10;
}

int config_default(struct pyprofd_config **out)
{
    struct pyprofd_config *c = NULL;
    char err[64];
    int rc = cfg_alloc_defaults(&c, "<default>");
    if (rc)
        return rc;
    c->jobs = alloc_calloc(1, sizeof(c->jobs[0]));
    if (!c->jobs) {
        rc = -ENOMEM;
        goto out;
    }
    c->njobs = 1;
    struct config_job *j = &c->jobs[0];
    cfg_job_defaults(j);
    j->sample_rate = c->global.sample_rate;
    j->mode = c->global.mode;
    j->profile_interval_ns = c->global.profile_interval_ns;
    j->job_name = alloc_strdup("python");
    if (!j->job_name) {
        rc = -ENOMEM;
        goto out;
    }
    rc = relabel_compile(NULL, 0, &j->relabel, err, sizeof(err));
out:
    if (rc) {
        config_free(c);
        c = NULL;
    }
    *out = c;
    return rc;
}

/* ---- free ---- */

static void cfg_rw_release(struct config_remote_write *rw)
{
    char **strs[] = {
        &rw->name,
        &rw->url,
        &rw->tenant_id,
        &rw->basic_auth_username,
        &rw->basic_auth_password,
        &rw->basic_auth_password_file,
        &rw->authorization_type,
        &rw->authorization_credentials,
        &rw->authorization_credentials_file,
        &rw->tls_ca_file,
        &rw->tls_cert_file,
        &rw->tls_key_file,
        &rw->tls_server_name,
    };
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(strs); i++)
        alloc_free(*strs[i]);
    labels_release(&rw->headers);
    relabel_free(rw->write_relabel);
}

void config_free(struct pyprofd_config *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->njobs; i++) {
        alloc_free(c->jobs[i].job_name);
        relabel_free(c->jobs[i].relabel);
    }
    alloc_free(c->jobs);
    for (size_t i = 0; i < c->nremote_write; i++)
        cfg_rw_release(&c->remote_write[i]);
    alloc_free(c->remote_write);
    labels_release(&c->global.external_labels);
    alloc_free(c->source);
    alloc_free(c->discovery.proc_root);
    alloc_free(c->storage.directory);
    alloc_free(c->server.listen_address);
    alloc_free(c);
}

/* ---- relabel_configs ---- */

/* The YAML nodes of one rule's fields, to point errors at. */
struct cfg_rule_nodes {
    const struct config_node *field[RELABEL_FIELD_MODULUS + 1];
};

static int cfg_rule(struct cfg *x, const char *path, const struct config_node *m,
                    struct relabel_rule_spec *spec, const char ***srcs, struct cfg_rule_nodes *fn)
{
    char kp[256];
    bool ok = true;
    spec->action = RELABEL_REPLACE;
    fn->field[RELABEL_FIELD_NONE] = m;
    for (size_t i = 0; i + 1 < m->n; i += 2) {
        const char *k = cfg_key(x, path, m, i);
        const struct config_node *v = m->kids[i + 1];
        if (!k) {
            ok = false;
            continue;
        }
        cfg_path_join(kp, sizeof(kp), path, k);
        if (strcmp(k, "source_labels") == 0) {
            fn->field[RELABEL_FIELD_SOURCE_LABELS] = v;
            if (!cfg_is_seq(x, kp, v)) {
                ok = ok && v->kind == CONFIG_NODE_SCALAR;
                continue;
            }
            *srcs = alloc_calloc(v->n ? v->n : 1, sizeof(char *));
            if (!*srcs) {
                cfg_nomem(x);
                return -ENOMEM;
            }
            for (size_t j = 0; j < v->n; j++) {
                const struct config_node *it = v->kids[j];
                char ip[300];
                snprintf(ip, sizeof(ip), "%s[%zu]", kp, j);
                if (!cfg_is_scalar(x, ip, it)) {
                    if (it->kind == CONFIG_NODE_SCALAR)
                        cfg_err(x, it, "%s: must not be empty", ip);
                    ok = false;
                } else if (!labels_valid_name(it->value)) {
                    cfg_err(x, it, "%s: '%s' is not a valid label name", ip, it->value);
                    ok = false;
                }
                (*srcs)[j] = it->value;
            }
            spec->source_labels = *srcs;
            spec->nsource_labels = v->n;
        } else if (strcmp(k, "separator") == 0) {
            fn->field[RELABEL_FIELD_SEPARATOR] = v;
            if (cfg_is_scalar(x, kp, v))
                spec->separator = v->value;
            else
                ok = ok && v->kind == CONFIG_NODE_SCALAR;
        } else if (strcmp(k, "regex") == 0) {
            fn->field[RELABEL_FIELD_REGEX] = v;
            if (cfg_is_scalar(x, kp, v))
                spec->regex = v->value;
            else
                ok = ok && v->kind == CONFIG_NODE_SCALAR;
        } else if (strcmp(k, "target_label") == 0) {
            fn->field[RELABEL_FIELD_TARGET_LABEL] = v;
            if (cfg_is_scalar(x, kp, v))
                spec->target_label = v->len ? v->value : NULL;
            else
                ok = ok && v->kind == CONFIG_NODE_SCALAR;
        } else if (strcmp(k, "replacement") == 0) {
            fn->field[RELABEL_FIELD_REPLACEMENT] = v;
            if (cfg_is_scalar(x, kp, v))
                spec->replacement = v->value;
            else
                ok = ok && v->kind == CONFIG_NODE_SCALAR;
        } else if (strcmp(k, "modulus") == 0) {
            fn->field[RELABEL_FIELD_MODULUS] = v;
            if (v->kind == CONFIG_NODE_SCALAR && v->null)
                continue;
            ok = cfg_uint(x, kp, v, 1, INT64_MAX, &spec->modulus) && ok;
        } else if (strcmp(k, "action") == 0) {
            fn->field[RELABEL_FIELD_ACTION] = v;
            if (!cfg_is_scalar(x, kp, v)) {
                ok = ok && v->kind == CONFIG_NODE_SCALAR;
            } else if (relabel_action_parse(v->value, &spec->action)) {
                cfg_err(x, v,
                        "%s: unknown action '%s' (one of replace, keep, drop, keepequal, "
                        "dropequal, hashmod, labelmap, labeldrop, labelkeep, lowercase, "
                        "uppercase)",
                        kp, v->value);
                ok = false;
            }
        } else {
            cfg_unknown(x, path, m->kids[i]);
            ok = false;
        }
    }
    return ok ? 0 : -EINVAL;
}

/* Walks a relabel_configs list into *@out (NULL after errors). */
static void cfg_relabel(struct cfg *x, const char *path, const struct config_node *seq,
                        struct relabel_rules **out)
{
    struct relabel_rule_spec *specs = NULL;
    const char ***srcs = NULL;
    size_t n = 0;
    bool ok = true;
    char err[1024];
    if (seq && cfg_is_seq(x, path, seq))
        n = seq->n;
    else if (seq && !(seq->kind == CONFIG_NODE_SCALAR && seq->null))
        return; /* wrong type, reported */
    if (n > CONFIG_MAX_RELABEL_RULES) {
        cfg_err(x, seq, "%s: more than %d rules", path, CONFIG_MAX_RELABEL_RULES);
        return;
    }
    if (n) {
        specs = alloc_calloc(n, sizeof(*specs));
        srcs = alloc_calloc(n, sizeof(*srcs));
        if (!specs || !srcs) {
            cfg_nomem(x);
            goto out;
        }
    }
    for (size_t i = 0; i < n; i++) {
        char rp[300];
        struct cfg_rule_nodes fn = {0};
        enum relabel_field field;
        const struct config_node *m = seq->kids[i];
        snprintf(rp, sizeof(rp), "%s[%zu]", path, i);
        if (!cfg_is_map(x, rp, m)) {
            if (m->kind == CONFIG_NODE_SCALAR && m->null)
                cfg_err(x, m, "%s: empty rule", rp);
            ok = false;
            continue;
        }
        int rc = cfg_rule(x, rp, m, &specs[i], &srcs[i], &fn);
        if (rc == -ENOMEM)
            goto out;
        if (rc) {
            ok = false;
            continue;
        }
        rc = relabel_validate(&specs[i], &field, err, sizeof(err));
        if (rc == -ENOMEM) {
            cfg_nomem(x);
            goto out;
        }
        if (rc) {
            const struct config_node *at = fn.field[field] ? fn.field[field] : m;
            cfg_err(x, at, "%s: %s", rp, err);
            ok = false;
        }
    }
    if (ok) {
        int rc = relabel_compile(specs, n, out, err, sizeof(err));
        if (rc == -ENOMEM)
            cfg_nomem(x);
        else if (rc)
            cfg_err(x, seq, "%s: %s", path, err);
    }
out:
    for (size_t i = 0; srcs && i < n; i++)
        alloc_free(srcs[i]);
    alloc_free(srcs);
    alloc_free(specs);
}

/* ---- global ---- */

static void cfg_external_labels(struct cfg *x, const char *path, const struct config_node *m,
                                struct labels *ls)
{
    if (!cfg_is_map(x, path, m))
        return;
    for (size_t i = 0; i + 1 < m->n; i += 2) {
        const char *k = cfg_key(x, path, m, i);
        const struct config_node *v = m->kids[i + 1];
        char kp[300];
        if (!k)
            continue;
        snprintf(kp, sizeof(kp), "%s.%s", path, k);
        if (!labels_valid_name(k)) {
            cfg_err(x, m->kids[i], "%s: '%s' is not a valid label name", path, k);
            continue;
        }
        if (k[0] == '_' && k[1] == '_') {
            cfg_err(x, m->kids[i], "%s: label names starting with '__' are reserved", path);
            continue;
        }
        if (!cfg_is_scalar(x, kp, v) || v->len == 0)
            continue; /* an empty value is no label, as in Prometheus */
        if (ls->n >= 64) {
            cfg_err(x, m->kids[i], "%s: more than 64 external labels", path);
            return;
        }
        if (labels_set(ls, k, v->value))
            cfg_nomem(x);
    }
}

static void cfg_limits(struct cfg *x, const struct config_node *m, struct config_limits *l)
{
    const char *path = "global.limits";
    char kp[128];
    if (!cfg_is_map(x, path, m))
        return;
    for (size_t i = 0; i + 1 < m->n; i += 2) {
        const char *k = cfg_key(x, path, m, i);
        const struct config_node *v = m->kids[i + 1];
        if (!k)
            continue;
        cfg_path_join(kp, sizeof(kp), path, k);
        if (strcmp(k, "max_targets") == 0) {
            cfg_uint(x, kp, v, 1, 100000, &l->max_targets);
        } else if (strcmp(k, "max_labels_per_profile") == 0) {
            cfg_uint(x, kp, v, 1, 1000, &l->max_labels_per_profile);
        } else if (strcmp(k, "max_profile_bytes") == 0) {
            cfg_size(x, kp, v, 1024, 1ull << 30, &l->max_profile_bytes);
        } else if (strcmp(k, "target_memory_bytes") == 0) {
            cfg_size(x, kp, v, 64u << 10, 64ull << 30, &l->target_memory_bytes);
        } else if (strcmp(k, "cpu_budget") == 0) {
            if (!cfg_is_scalar(x, kp, v))
                continue;
            double d;
            bool pct = v->len > 1 && v->value[v->len - 1] == '%';
            char num[64];
            if (pct && v->len < sizeof(num)) {
                memcpy(num, v->value, v->len - 1);
                num[v->len - 1] = '\0';
            }
            if (pct ? (v->len >= sizeof(num) || !cfg_parse_number(num, &d))
                    : (!v->plain || !cfg_parse_number(v->value, &d))) {
                cfg_err(x, v,
                        "%s: expected a fraction of one CPU (0.5) or a percentage (50%%), "
                        "got '%s'",
                        kp, v->value);
                continue;
            }
            if (pct)
                d /= 100;
            if (d <= 0 || d > 64) {
                cfg_err(x, v, "%s: must be in (0, 64] CPUs (or (0%%, 6400%%]), got %s", kp,
                        v->value);
                continue;
            }
            l->cpu_budget = d;
        } else {
            cfg_unknown(x, path, m->kids[i]);
        }
    }
}

static void cfg_global(struct cfg *x, const struct config_node *m, struct pyprofd_config *c)
{
    const char *path = "global";
    char kp[128];
    if (!cfg_is_map(x, path, m))
        return;
    for (size_t i = 0; i + 1 < m->n; i += 2) {
        const char *k = cfg_key(x, path, m, i);
        const struct config_node *v = m->kids[i + 1];
        if (!k)
            continue;
        cfg_path_join(kp, sizeof(kp), path, k);
        if (strcmp(k, "sample_rate") == 0)
            cfg_number(x, kp, v, 0, true, 1e6, "Hz", &c->global.sample_rate);
        else if (strcmp(k, "mode") == 0)
            cfg_mode(x, kp, v, &c->global.mode);
        else if (strcmp(k, "profile_interval") == 0)
            cfg_duration(x, kp, v, NS_PER_SEC, 24 * 3600 * NS_PER_SEC,
                         &c->global.profile_interval_ns);
        else if (strcmp(k, "external_labels") == 0)
            cfg_external_labels(x, kp, v, &c->global.external_labels);
        else if (strcmp(k, "limits") == 0)
            cfg_limits(x, v, &c->global.limits);
        else
            cfg_unknown(x, path, m->kids[i]);
    }
}

static void cfg_discovery(struct cfg *x, const struct config_node *m, struct pyprofd_config *c)
{
    const char *path = "discovery";
    char kp[128];
    if (!cfg_is_map(x, path, m))
        return;
    for (size_t i = 0; i + 1 < m->n; i += 2) {
        const char *k = cfg_key(x, path, m, i);
        const struct config_node *v = m->kids[i + 1];
        if (!k)
            continue;
        cfg_path_join(kp, sizeof(kp), path, k);
        if (strcmp(k, "refresh_interval") == 0) {
            cfg_duration(x, kp, v, NS_PER_SEC, 3600 * NS_PER_SEC,
                         &c->discovery.refresh_interval_ns);
        } else if (strcmp(k, "min_process_age") == 0) {
            cfg_duration(x, kp, v, 0, 3600 * NS_PER_SEC, &c->discovery.min_process_age_ns);
        } else if (strcmp(k, "proc_root") == 0) {
            if (cfg_is_scalar(x, kp, v) && v->value[0] != '/')
                cfg_err(x, v, "%s: must be an absolute path, got '%s'", kp, v->value);
            else
                cfg_str(x, kp, v, &c->discovery.proc_root, false);
        } else {
            cfg_unknown(x, path, m->kids[i]);
        }
    }
}

/* ---- profile_configs ---- */

/* What a job set itself, for inheritance and duplicate checks. */
struct cfg_job_seen {
    const struct config_node *name_node;
    const struct config_node *async_all; /* "async_mode: all", for the mode check */
    bool rate, mode, interval;
};

static void cfg_job(struct cfg *x, const char *path, const struct config_node *m,
                    struct config_job *j, struct cfg_job_seen *seen)
{
    char kp[300];
    const struct config_node *relabel = NULL;
    cfg_job_defaults(j);
    if (!cfg_is_map(x, path, m)) {
        if (m->kind == CONFIG_NODE_SCALAR && m->null)
            cfg_err(x, m, "%s: empty job (job_name is required)", path);
        return;
    }
    for (size_t i = 0; i + 1 < m->n; i += 2) {
        const char *k = cfg_key(x, path, m, i);
        const struct config_node *v = m->kids[i + 1];
        if (!k)
            continue;
        cfg_path_join(kp, sizeof(kp), path, k);
        if (strcmp(k, "job_name") == 0) {
            seen->name_node = v;
            if (v->kind == CONFIG_NODE_SCALAR && v->len > 256)
                cfg_err(x, v, "%s: longer than 256 bytes", kp);
            else
                cfg_str(x, kp, v, &j->job_name, true);
        } else if (strcmp(k, "sample_rate") == 0) {
            seen->rate = cfg_number(x, kp, v, 0, true, 1e6, "Hz", &j->sample_rate);
        } else if (strcmp(k, "mode") == 0) {
            seen->mode = cfg_mode(x, kp, v, &j->mode);
        } else if (strcmp(k, "profile_interval") == 0) {
            seen->interval =
                cfg_duration(x, kp, v, NS_PER_SEC, 24 * 3600 * NS_PER_SEC, &j->profile_interval_ns);
        } else if (strcmp(k, "all_threads") == 0) {
            cfg_bool(x, kp, v, &j->all_threads);
        } else if (strcmp(k, "native") == 0) {
            cfg_bool(x, kp, v, &j->native);
        } else if (strcmp(k, "gc") == 0) {
            cfg_bool(x, kp, v, &j->gc);
        } else if (strcmp(k, "async_aware") == 0) {
            cfg_bool(x, kp, v, &j->async_aware);
        } else if (strcmp(k, "async_mode") == 0) {
            if (!cfg_is_scalar(x, kp, v))
                continue;
            if (strcmp(v->value, "running") == 0)
                j->async_mode = CONFIG_ASYNC_RUNNING;
            else if (strcmp(v->value, "all") == 0) {
                j->async_mode = CONFIG_ASYNC_ALL;
                seen->async_all = v;
            } else
                cfg_err(x, v, "%s: unknown async_mode '%s' (one of running, all)", kp, v->value);
        } else if (strcmp(k, "relabel_configs") == 0) {
            relabel = v;
        } else {
            cfg_unknown(x, path, m->kids[i]);
        }
    }
    const struct config_node *nn = seen->name_node;
    if (!j->job_name && !(nn && (nn->kind != CONFIG_NODE_SCALAR || nn->len > 256)))
        cfg_err(x, seen->name_node ? seen->name_node : m, "%s: job_name is required", path);
    cfg_path_join(kp, sizeof(kp), path, "relabel_configs");
    cfg_relabel(x, kp, relabel, &j->relabel);
}

static void cfg_jobs(struct cfg *x, const struct config_node *seq, struct pyprofd_config *c,
                     struct cfg_job_seen **seen_out)
{
    const char *path = "profile_configs";
    if (!cfg_is_seq(x, path, seq) || seq->n == 0)
        return;
    if (seq->n > CONFIG_MAX_JOBS) {
        cfg_err(x, seq, "%s: more than %d jobs", path, CONFIG_MAX_JOBS);
        return;
    }
    c->jobs = alloc_calloc(seq->n, sizeof(c->jobs[0]));
    struct cfg_job_seen *seen = alloc_calloc(seq->n, sizeof(*seen));
    *seen_out = seen;
    if (!c->jobs || !seen) {
        cfg_nomem(x);
        return;
    }
    c->njobs = seq->n;
    for (size_t i = 0; i < seq->n && x->rc == 0; i++) {
        char jp[64];
        snprintf(jp, sizeof(jp), "%s[%zu]", path, i);
        cfg_job(x, jp, seq->kids[i], &c->jobs[i], &seen[i]);
        for (size_t k = 0; k < i && c->jobs[i].job_name; k++) {
            if (c->jobs[k].job_name && strcmp(c->jobs[k].job_name, c->jobs[i].job_name) == 0) {
                cfg_err(x, seen[i].name_node,
                        "%s.job_name: duplicate job_name '%s' (first at line %" PRIu32 ")", jp,
                        c->jobs[i].job_name, seen[k].name_node->line);
                break;
            }
        }
    }
}

/* ---- remote_write ---- */

/*
 * @u for a message: the password of its userinfo (from the first ':' to the
 * last '@' before the path) as "<secret>", in @buf. The URL may be one that
 * libcurl cannot parse, so this is a plain scan that rather hides too much.
 */
static const char *cfg_url_redact(const char *u, char *buf, size_t len)
{
    const char *auth = strstr(u, "://");
    if (!auth)
        return u;
    auth += 3;
    const char *end = auth + strcspn(auth, "/?#"), *at = NULL;
    for (const char *p = auth; p < end; p++)
        if (*p == '@')
            at = p;
    const char *colon = at ? memchr(auth, ':', (size_t)(at - auth)) : NULL;
    if (!colon)
        return u;
    snprintf(buf, len, "%.*s<secret>%s", (int)(colon + 1 - u), u, at);
    return buf;
}

/*
 * Checks a remote_write url and returns NULL when it is fine, or what is
 * wrong with it (in @buf; reported by the caller). The scheme and the bytes
 * are checked here; the rest is left to libcurl's URL parser, the one that
 * will use the URL, so that what it refuses is refused at load and never
 * tried and retried at every push: a bad port, and above all a missing host
 * ("http://:4040", which "http://${UNSET}:4040" expands to).
 */
static const char *cfg_url_problem(struct cfg *x, const char *u, char *buf, size_t len)
{
    const char *problem = NULL;
    char *host = NULL;
    size_t skip;
    if (strncasecmp(u, "http://", 7) == 0)
        skip = 7;
    else if (strncasecmp(u, "https://", 8) == 0)
        skip = 8;
    else
        return "is not an http:// or https:// URL";
    if (!u[skip] || u[skip] == '/' || u[skip] == '?' || u[skip] == '#')
        return "has no host";
    for (const unsigned char *p = (const unsigned char *)u; *p; p++)
        if (*p <= ' ' || *p == 0x7f)
            return "is not an http:// or https:// URL (spaces and control characters are not "
                   "allowed)";
    CURLU *cu = curl_url();
    if (!cu) {
        cfg_nomem(x);
        return NULL;
    }
    CURLUcode rc = curl_url_set(cu, CURLUPART_URL, u, 0);
    if (rc == CURLUE_OK)
        rc = curl_url_get(cu, CURLUPART_HOST, &host, 0);
    if (rc == CURLUE_OK && !host[0])
        rc = CURLUE_NO_HOST;
    if (rc == CURLUE_OUT_OF_MEMORY) {
        cfg_nomem(x);
    } else if (rc == CURLUE_NO_HOST) {
        problem = "has no host";
    } else if (rc != CURLUE_OK) {
        /* libcurl's message, in the house style: lower case, no full stop */
        snprintf(buf, len, "is not a valid URL: %s", curl_url_strerror(rc));
        size_t n = strlen(buf);
        const size_t at = strlen("is not a valid URL: ");
        if (n > at)
            buf[at] = (char)tolower((unsigned char)buf[at]);
        if (n > 0 && buf[n - 1] == '.')
            buf[n - 1] = '\0';
        problem = buf;
    }
    curl_free(host);
    curl_url_cleanup(cu);
    return problem;
}

static bool cfg_valid_header_name(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (!(c > ' ' && c < 0x7f && !strchr("\"(),/:;<=>?@[\\]{}", c)))
            return false;
    }
    return true;
}

/* Whether @s holds a control character (C0 or DEL); a tab only counts unless @tab_ok. */
static bool cfg_has_ctl(const char *s, bool tab_ok)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if ((*p < ' ' && !(tab_ok && *p == '\t')) || *p == 0x7f)
            return true;
    }
    return false;
}

/*
 * cfg_str() for a value that goes into every request (tenant_id, the
 * basic_auth user and password, the authorization scheme and credentials,
 * the TLS server name): a CR or LF would end the header line it is in and
 * start another one of the config's choosing, so no control character is
 * accepted. Returns false when @v was refused.
 */
static bool cfg_request_str(struct cfg *x, const char *path, const struct config_node *v,
                            char **dst)
{
    if (v->kind == CONFIG_NODE_SCALAR && !v->null && cfg_has_ctl(v->value, false)) {
        cfg_err(x, v, "%s: must not contain control characters (it is sent in HTTP requests)",
                path);
        return false;
    }
    cfg_str(x, path, v, dst, true);
    return true;
}

static void cfg_headers(struct cfg *x, const char *path, const struct config_node *m,
                        struct labels *hs)
{
    if (!cfg_is_map(x, path, m))
        return;
    for (size_t i = 0; i + 1 < m->n; i += 2) {
        const char *k = cfg_key(x, path, m, i);
        const struct config_node *v = m->kids[i + 1];
        char kp[300];
        if (!k)
            continue;
        int kn = snprintf(kp, sizeof(kp), "%s.%s", path, k);
        if (kn < 0 || (size_t)kn >= sizeof(kp) || !cfg_valid_header_name(k)) {
            cfg_err(x, m->kids[i], "%s: '%s' is not a valid HTTP header name", path, k);
            continue;
        }
        if (!cfg_is_scalar(x, kp, v))
            continue;
        if (cfg_has_ctl(v->value, true)) {
            cfg_err(x, v, "%s: header values must not contain control characters", kp);
            continue;
        }
        if (hs->n >= 64) {
            cfg_err(x, m->kids[i], "%s: more than 64 headers", path);
            return;
        }
        if (labels_set(hs, k, v->value))
            cfg_nomem(x);
    }
}

/*
 * The files a remote_write entry names are checked at load, as they will be
 * used, so that a missing or unreadable one is an error in the file rather
 * than a failure at the first push: a tls_config file must open as a
 * regular file (its content is libcurl's to judge), a secret file must read
 * as a secret (config_read_secret(): no control character once the
 * surrounding whitespace is gone). The value node @v was just stored.
 */
static void cfg_check_file(struct cfg *x, const char *path, const struct config_node *v,
                           bool secret)
{
    char err[600];
    int fd = -1, rc;
    if (!x->check_files || v->kind != CONFIG_NODE_SCALAR || v->null || v->len == 0)
        return;
    if (secret) {
        char *s = NULL;
        rc = config_read_secret(v->value, &s, err, sizeof(err));
        if (s) {
            explicit_bzero(s, strlen(s));
            alloc_free(s);
        }
    } else {
        char why[128];
        rc = config_file_open(v->value, &fd, why, sizeof(why));
        if (fd >= 0)
            close(fd);
        snprintf(err, sizeof(err), "cannot read '%s': %s", v->value, why);
    }
    if (rc == -ENOMEM)
        cfg_nomem(x);
    else if (rc)
        cfg_err(x, v, "%s: %s", path, err);
}

/* Nodes of a remote_write entry that cross-field checks point at. */
struct cfg_rw_seen {
    const struct config_node *m, *name, *type, *api, *url, *basic_auth, *password_file,
        *authorization, *authorization_key, *auth_type, *credentials_file, *tls, *max_backoff;
};

static void cfg_basic_auth(struct cfg *x, const char *path, const struct config_node *m,
                           struct config_remote_write *rw, struct cfg_rw_seen *s)
{
    char kp[300];
    const struct config_node *password = NULL;
    bool user_refused = false;
    if (!cfg_is_map(x, path, m))
        return;
    s->basic_auth = m;
    for (size_t i = 0; i + 1 < m->n; i += 2) {
        const char *k = cfg_key(x, path, m, i);
        const struct config_node *v = m->kids[i + 1];
        if (!k)
            continue;
        cfg_path_join(kp, sizeof(kp), path, k);
        if (strcmp(k, "username") == 0) {
            user_refused = !cfg_request_str(x, kp, v, &rw->basic_auth_username);
        } else if (strcmp(k, "password") == 0) {
            password = v;
            cfg_request_str(x, kp, v, &rw->basic_auth_password);
        } else if (strcmp(k, "password_file") == 0) {
            s->password_file = v;
            cfg_str(x, kp, v, &rw->basic_auth_password_file, true);
            cfg_check_file(x, kp, v, true);
        } else {
            cfg_unknown(x, path, m->kids[i]);
        }
    }
    if (!rw->basic_auth_username && !user_refused)
        cfg_err(x, m, "%s: username is required", path);
    if (password && rw->basic_auth_password && rw->basic_auth_password_file)
        cfg_err(x, s->password_file, "%s: set only one of password and password_file", path);
}

static void cfg_authorization(struct cfg *x, const char *path, const struct config_node *m,
                              struct config_remote_write *rw, struct cfg_rw_seen *s)
{
    char kp[300];
    bool cred_refused = false;
    if (!cfg_is_map(x, path, m))
        return;
    s->authorization = m;
    for (size_t i = 0; i + 1 < m->n; i += 2) {
        const char *k = cfg_key(x, path, m, i);
        const struct config_node *v = m->kids[i + 1];
        if (!k)
            continue;
        cfg_path_join(kp, sizeof(kp), path, k);
        if (strcmp(k, "type") == 0) {
            s->auth_type = v;
            cfg_request_str(x, kp, v, &rw->authorization_type);
        } else if (strcmp(k, "credentials") == 0) {
            cred_refused = !cfg_request_str(x, kp, v, &rw->authorization_credentials);
        } else if (strcmp(k, "credentials_file") == 0) {
            s->credentials_file = v;
            cfg_str(x, kp, v, &rw->authorization_credentials_file, true);
            cfg_check_file(x, kp, v, true);
        } else {
            cfg_unknown(x, path, m->kids[i]);
        }
    }
    if (rw->authorization_credentials && rw->authorization_credentials_file)
        cfg_err(x, s->credentials_file, "%s: set only one of credentials and credentials_file",
                path);
    else if (!rw->authorization_credentials && !rw->authorization_credentials_file && !cred_refused)
        cfg_err(x, m, "%s: credentials or credentials_file is required", path);
    if (rw->authorization_type && strcasecmp(rw->authorization_type, "Basic") == 0)
        cfg_err(x, s->auth_type, "%s.type: use basic_auth for Basic authorization", path);
    if (!rw->authorization_type) {
        rw->authorization_type = alloc_strdup("Bearer");
        if (!rw->authorization_type)
            cfg_nomem(x);
    }
}

static void cfg_tls(struct cfg *x, const char *path, const struct config_node *m,
                    struct config_remote_write *rw, struct cfg_rw_seen *s)
{
    char kp[300];
    if (!cfg_is_map(x, path, m))
        return;
    s->tls = m;
    for (size_t i = 0; i + 1 < m->n; i += 2) {
        const char *k = cfg_key(x, path, m, i);
        const struct config_node *v = m->kids[i + 1];
        if (!k)
            continue;
        cfg_path_join(kp, sizeof(kp), path, k);
        if (strcmp(k, "ca_file") == 0) {
            cfg_str(x, kp, v, &rw->tls_ca_file, true);
            cfg_check_file(x, kp, v, false);
        } else if (strcmp(k, "cert_file") == 0) {
            cfg_str(x, kp, v, &rw->tls_cert_file, true);
            cfg_check_file(x, kp, v, false);
        } else if (strcmp(k, "key_file") == 0) {
            cfg_str(x, kp, v, &rw->tls_key_file, true);
            cfg_check_file(x, kp, v, false);
        } else if (strcmp(k, "server_name") == 0) {
            cfg_request_str(x, kp, v, &rw->tls_server_name);
        } else if (strcmp(k, "insecure_skip_verify") == 0) {
            cfg_bool(x, kp, v, &rw->tls_insecure_skip_verify);
        } else {
            cfg_unknown(x, path, m->kids[i]);
        }
    }
    if (!rw->tls_cert_file != !rw->tls_key_file)
        cfg_err(x, m, "%s: cert_file and key_file must be set together", path);
}

static void cfg_queue(struct cfg *x, const char *path, const struct config_node *m,
                      struct config_remote_write *rw, struct cfg_rw_seen *s)
{
    char kp[300];
    if (!cfg_is_map(x, path, m))
        return;
    for (size_t i = 0; i + 1 < m->n; i += 2) {
        const char *k = cfg_key(x, path, m, i);
        const struct config_node *v = m->kids[i + 1];
        if (!k)
            continue;
        cfg_path_join(kp, sizeof(kp), path, k);
        if (strcmp(k, "max_profiles") == 0) {
            cfg_uint(x, kp, v, 1, 1000000, &rw->queue_max_profiles);
        } else if (strcmp(k, "max_bytes") == 0) {
            cfg_size(x, kp, v, 1024, 64ull << 30, &rw->queue_max_bytes);
        } else if (strcmp(k, "min_backoff") == 0) {
            cfg_duration(x, kp, v, NS_PER_MS, 3600 * NS_PER_SEC, &rw->min_backoff_ns);
        } else if (strcmp(k, "max_backoff") == 0) {
            s->max_backoff = v;
            cfg_duration(x, kp, v, NS_PER_MS, 24 * 3600 * NS_PER_SEC, &rw->max_backoff_ns);
        } else if (strcmp(k, "max_retries") == 0) {
            cfg_uint(x, kp, v, 0, 1000000, &rw->max_retries);
        } else {
            cfg_unknown(x, path, m->kids[i]);
        }
    }
    if (rw->min_backoff_ns > rw->max_backoff_ns)
        cfg_err(x, s->max_backoff ? s->max_backoff : m,
                "%s: max_backoff must not be less than min_backoff", path);
}

static void cfg_remote_write(struct cfg *x, const char *path, const struct config_node *m,
                             struct config_remote_write *rw, size_t index)
{
    char kp[300];
    struct cfg_rw_seen s = {.m = m};
    const struct config_node *relabel = NULL;
    bool have_type = false;
    cfg_rw_defaults(rw);
    if (!cfg_is_map(x, path, m)) {
        if (m->kind == CONFIG_NODE_SCALAR && m->null)
            cfg_err(x, m, "%s: empty endpoint (type and url are required)", path);
        return;
    }
    for (size_t i = 0; i + 1 < m->n; i += 2) {
        const char *k = cfg_key(x, path, m, i);
        const struct config_node *v = m->kids[i + 1];
        if (!k)
            continue;
        cfg_path_join(kp, sizeof(kp), path, k);
        if (strcmp(k, "name") == 0) {
            s.name = v;
            cfg_str(x, kp, v, &rw->name, true);
        } else if (strcmp(k, "type") == 0) {
            s.type = v;
            if (!cfg_is_scalar(x, kp, v))
                continue;
            if (strcmp(v->value, "pyroscope") == 0)
                rw->type = CONFIG_PUSH_PYROSCOPE;
            else if (strcmp(v->value, "parca") == 0)
                rw->type = CONFIG_PUSH_PARCA;
            else
                cfg_err(x, v, "%s: unknown type '%s' (one of pyroscope, parca)", kp, v->value);
            have_type = true;
        } else if (strcmp(k, "api") == 0) {
            s.api = v;
            if (!cfg_is_scalar(x, kp, v))
                continue;
            if (strcmp(v->value, "push") == 0)
                rw->api = CONFIG_PYROSCOPE_API_PUSH;
            else if (strcmp(v->value, "ingest") == 0)
                rw->api = CONFIG_PYROSCOPE_API_INGEST;
            else
                cfg_err(x, v, "%s: unknown api '%s' (one of push, ingest)", kp, v->value);
        } else if (strcmp(k, "url") == 0) {
            char why[160];
            const char *problem = NULL;
            s.url = v;
            if (cfg_is_scalar(x, kp, v))
                problem = cfg_url_problem(x, v->value, why, sizeof(why));
            if (problem) {
                char shown[1024];
                cfg_err(x, v, "%s: '%s' %s", kp, cfg_url_redact(v->value, shown, sizeof(shown)),
                        problem);
            } else
                cfg_str(x, kp, v, &rw->url, true);
        } else if (strcmp(k, "remote_timeout") == 0) {
            cfg_duration(x, kp, v, 100 * NS_PER_MS, 600 * NS_PER_SEC, &rw->remote_timeout_ns);
        } else if (strcmp(k, "tenant_id") == 0) {
            cfg_request_str(x, kp, v, &rw->tenant_id);
        } else if (strcmp(k, "headers") == 0) {
            cfg_headers(x, kp, v, &rw->headers);
        } else if (strcmp(k, "basic_auth") == 0) {
            cfg_basic_auth(x, kp, v, rw, &s);
        } else if (strcmp(k, "authorization") == 0) {
            s.authorization_key = m->kids[i];
            cfg_authorization(x, kp, v, rw, &s);
        } else if (strcmp(k, "tls_config") == 0) {
            cfg_tls(x, kp, v, rw, &s);
        } else if (strcmp(k, "queue") == 0) {
            cfg_queue(x, kp, v, rw, &s);
        } else if (strcmp(k, "write_relabel_configs") == 0) {
            relabel = v;
        } else {
            cfg_unknown(x, path, m->kids[i]);
        }
    }
    if (!have_type)
        cfg_err(x, m, "%s: type is required (pyroscope or parca)", path);
    if (!s.url || (s.url->kind == CONFIG_NODE_SCALAR && s.url->null))
        cfg_err(x, s.url ? s.url : m, "%s: url is required", path);
    if (s.api && rw->type == CONFIG_PUSH_PARCA)
        cfg_err(x, s.api, "%s.api: only for type pyroscope", path);
    if (s.basic_auth && s.authorization)
        cfg_err(x, s.authorization_key, "%s: set only one of basic_auth and authorization", path);
    if (!rw->name) {
        char nm[64];
        snprintf(nm, sizeof(nm), "%s-%zu", rw->type == CONFIG_PUSH_PARCA ? "parca" : "pyroscope",
                 index);
        rw->name = alloc_strdup(nm);
        if (!rw->name)
            cfg_nomem(x);
    }
    cfg_path_join(kp, sizeof(kp), path, "write_relabel_configs");
    cfg_relabel(x, kp, relabel, &rw->write_relabel);
}

static void cfg_remote_writes(struct cfg *x, const struct config_node *seq,
                              struct pyprofd_config *c)
{
    const char *path = "remote_write";
    const struct config_node **names;
    if (!cfg_is_seq(x, path, seq) || seq->n == 0)
        return;
    if (seq->n > CONFIG_MAX_REMOTE_WRITE) {
        cfg_err(x, seq, "%s: more than %d endpoints", path, CONFIG_MAX_REMOTE_WRITE);
        return;
    }
    c->remote_write = alloc_calloc(seq->n, sizeof(c->remote_write[0]));
    /* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers */
    names = alloc_calloc(seq->n, sizeof(*names));
    if (!c->remote_write || !names) {
        alloc_free(names);
        cfg_nomem(x);
        return;
    }
    c->nremote_write = seq->n;
    for (size_t i = 0; i < seq->n && x->rc == 0; i++) {
        char rp[64];
        const struct config_node *m = seq->kids[i];
        snprintf(rp, sizeof(rp), "%s[%zu]", path, i);
        cfg_remote_write(x, rp, m, &c->remote_write[i], i);
        names[i] = m;
        if (m->kind == CONFIG_NODE_MAP) {
            for (size_t k = 0; k + 1 < m->n; k += 2)
                if (m->kids[k]->kind == CONFIG_NODE_SCALAR &&
                    strcmp(m->kids[k]->value, "name") == 0)
                    names[i] = m->kids[k + 1];
        }
        for (size_t k = 0; k < i && c->remote_write[i].name; k++) {
            if (c->remote_write[k].name &&
                strcmp(c->remote_write[k].name, c->remote_write[i].name) == 0) {
                cfg_err(x, names[i], "%s: duplicate name '%s' (first at line %" PRIu32 ")", rp,
                        c->remote_write[i].name, names[k]->line);
                break;
            }
        }
    }
    alloc_free(names);
}

/* ---- storage, server ---- */

static void cfg_storage(struct cfg *x, const struct config_node *m, struct pyprofd_config *c)
{
    const char *path = "storage";
    char kp[128];
    if (!cfg_is_map(x, path, m))
        return;
    for (size_t i = 0; i + 1 < m->n; i += 2) {
        const char *k = cfg_key(x, path, m, i);
        const struct config_node *v = m->kids[i + 1];
        if (!k)
            continue;
        cfg_path_join(kp, sizeof(kp), path, k);
        if (strcmp(k, "directory") == 0)
            cfg_str(x, kp, v, &c->storage.directory, true);
        else if (strcmp(k, "retention") == 0)
            cfg_duration(x, kp, v, NS_PER_SEC, 10ull * 365 * 24 * 3600 * NS_PER_SEC,
                         &c->storage.retention_ns);
        else if (strcmp(k, "max_bytes") == 0)
            cfg_size(x, kp, v, 1u << 20, 1ull << 50, &c->storage.max_bytes);
        else
            cfg_unknown(x, path, m->kids[i]);
    }
}

/* "host:port", "[v6]:port" or ":port"; the port is 0..65535. */
static bool cfg_valid_listen(const char *s)
{
    const char *colon = strrchr(s, ':');
    int64_t port;
    if (!colon || strnum_parse_i64(colon + 1, 0, 65535, &port) || colon[1] == '+' ||
        colon[1] == '-')
        return false;
    if (s[0] == '[')
        return colon > s + 1 && colon[-1] == ']' &&
               memchr(s + 1, ']', (size_t)(colon - s - 1)) == colon - 1;
    for (const char *p = s; p < colon; p++)
        if (*p == ':' || *p == '[' || *p == ']' || *p == '/' || (unsigned char)*p <= ' ')
            return false;
    return true;
}

static void cfg_server(struct cfg *x, const struct config_node *m, struct pyprofd_config *c)
{
    const char *path = "server";
    char kp[128];
    if (!cfg_is_map(x, path, m))
        return;
    for (size_t i = 0; i + 1 < m->n; i += 2) {
        const char *k = cfg_key(x, path, m, i);
        const struct config_node *v = m->kids[i + 1];
        if (!k)
            continue;
        cfg_path_join(kp, sizeof(kp), path, k);
        if (strcmp(k, "listen_address") == 0) {
            if (cfg_is_scalar(x, kp, v) && v->len && !cfg_valid_listen(v->value)) {
                cfg_err(x, v, "%s: expected host:port, [ipv6]:port or :port, got '%s'", kp,
                        v->value);
            } else {
                cfg_str(x, kp, v, &c->server.listen_address, false);
                c->server.listen_address_expanded = v->kind == CONFIG_NODE_SCALAR && v->expanded;
            }
        } else if (strcmp(k, "enable_lifecycle") == 0) {
            cfg_bool(x, kp, v, &c->server.enable_lifecycle);
        } else {
            cfg_unknown(x, path, m->kids[i]);
        }
    }
}

/* ---- load ---- */

static void cfg_inherit(struct pyprofd_config *c, const struct cfg_job_seen *seen)
{
    for (size_t i = 0; i < c->njobs; i++) {
        struct config_job *j = &c->jobs[i];
        if (!seen || !seen[i].rate)
            j->sample_rate = c->global.sample_rate;
        if (!seen || !seen[i].mode)
            j->mode = c->global.mode;
        if (!seen || !seen[i].interval)
            j->profile_interval_ns = c->global.profile_interval_ns;
    }
}

static void cfg_walk(struct cfg *x, const struct config_node *root, struct pyprofd_config *c,
                     struct cfg_job_seen **seen)
{
    if (!root || (root->kind == CONFIG_NODE_SCALAR && root->null))
        return;
    if (root->kind != CONFIG_NODE_MAP) {
        cfg_err(x, root, "the top level must be a mapping (global:, profile_configs:, ...), got %s",
                cfg_kind(root));
        return;
    }
    for (size_t i = 0; i + 1 < root->n && x->rc == 0; i += 2) {
        const char *k = cfg_key(x, "top level", root, i);
        const struct config_node *v = root->kids[i + 1];
        if (!k)
            continue;
        if (strcmp(k, "global") == 0)
            cfg_global(x, v, c);
        else if (strcmp(k, "discovery") == 0)
            cfg_discovery(x, v, c);
        else if (strcmp(k, "profile_configs") == 0)
            cfg_jobs(x, v, c, seen);
        else if (strcmp(k, "remote_write") == 0)
            cfg_remote_writes(x, v, c);
        else if (strcmp(k, "storage") == 0)
            cfg_storage(x, v, c);
        else if (strcmp(k, "server") == 0)
            cfg_server(x, v, c);
        else
            cfg_err(x, root->kids[i], "unknown top-level key '%s'", k);
    }
}

int config_load_buffer(const char *buf, size_t len, const char *name,
                       const struct config_load_opts *opts, struct pyprofd_config **out,
                       struct config_errors *errs)
{
    struct config_node *root = NULL;
    struct pyprofd_config *c = NULL;
    struct cfg_job_seen *seen = NULL;
    struct cfg x = {.errs = errs, .check_files = !(opts && opts->skip_file_checks)};
    size_t first_err = errs->n;
    int rc = config_yaml_errors_source(errs, name);
    *out = NULL;
    if (rc)
        return rc;
    if (len > CONFIG_MAX_FILE_BYTES) {
        rc = config_yaml_error(errs, 0, 0, "larger than %u bytes", CONFIG_MAX_FILE_BYTES);
        return rc ? rc : -EFBIG;
    }
    rc = config_yaml_parse(buf, len, opts, &root, errs);
    if (rc)
        goto out;
    rc = cfg_alloc_defaults(&c, name);
    if (rc)
        goto out;
    cfg_walk(&x, root, c, &seen);
    if (!x.rc && !x.bad) {
        cfg_inherit(c, seen);
        /* needs the inherited mode: checked after inheritance */
        for (size_t i = 0; seen && i < c->njobs; i++) {
            if (seen[i].async_all && c->jobs[i].mode != PROFILE_WALL)
                cfg_err(&x, seen[i].async_all,
                        "profile_configs[%zu].async_mode: 'all' needs mode wall, not %s (waiting "
                        "tasks use no CPU, hold no GIL and handle no exception)",
                        i, profile_mode_name(c->jobs[i].mode));
        }
    }
    if (x.rc) {
        rc = x.rc;
        goto out;
    }
    if (x.bad) {
        rc = -EINVAL;
        goto out;
    }
    for (size_t i = 0; i < c->njobs; i++) {
        if (!c->jobs[i].relabel) { /* no relabel_configs key at all */
            char err[64];
            rc = relabel_compile(NULL, 0, &c->jobs[i].relabel, err, sizeof(err));
            if (rc)
                goto out;
        }
    }
    *out = c;
    c = NULL;
out:
    if (rc == -EINVAL)
        config_yaml_errors_sort(errs, first_err);
    alloc_free(seen);
    config_free(c);
    config_yaml_free(root);
    return rc;
}

int config_load_file(const char *path, const struct config_load_opts *opts,
                     struct pyprofd_config **out, struct config_errors *errs)
{
    char *buf = NULL;
    size_t len = 0;
    char why[256];
    int rc = config_file_read(path, CONFIG_MAX_FILE_BYTES, &buf, &len, why, sizeof(why));
    *out = NULL;
    if (rc == -ENOMEM)
        return rc;
    if (rc) {
        int e = config_yaml_errors_source(errs, path);
        if (!e)
            e = rc == -EFBIG ? config_yaml_error(errs, 0, 0, "%s", why)
                             : config_yaml_error(errs, 0, 0, "cannot read: %s", why);
        return e ? e : rc;
    }
    rc = config_load_buffer(buf, len, path, opts, out, errs);
    alloc_free(buf);
    return rc;
}

/* ---- printing ---- */

/*
 * Writes @s as a double-quoted YAML scalar. Besides quotes, backslashes and
 * control characters, the Unicode line breaks NEL, LS and PS are escaped: a
 * YAML reader folds them like newlines when they appear raw.
 */
static void cfg_q(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (p[0] == 0xc2 && p[1] == 0x85) {
            fputs("\\N", out);
            p++;
        } else if (p[0] == 0xe2 && p[1] == 0x80 && (p[2] == 0xa8 || p[2] == 0xa9)) {
            fputs(p[2] == 0xa8 ? "\\L" : "\\P", out);
            p += 2;
        } else if (*p == '"' || *p == '\\') {
            fprintf(out, "\\%c", *p);
        } else if (*p == '\n') {
            fputs("\\n", out);
        } else if (*p == '\t') {
            fputs("\\t", out);
        } else if (*p < ' ' || *p == 0x7f) {
            fprintf(out, "\\x%02x", *p);
        } else {
            fputc(*p, out);
        }
    }
    fputc('"', out);
}

/* The shortest of %.15g..%.17g that reads back exactly. */
static void cfg_num(FILE *out, double d)
{
    char b[64];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(b, sizeof(b), "%.*g", prec, d);
        if (strtod(b, NULL) == d)
            break;
    }
    fputs(b, out);
}

static void cfg_print_dur(FILE *out, const char *indent, const char *key, uint64_t ns)
{
    char b[64];
    config_format_duration(ns, b, sizeof(b));
    fprintf(out, "%s%s: %s\n", indent, key, b);
}

static void cfg_print_size(FILE *out, const char *indent, const char *key, uint64_t n)
{
    char b[64];
    config_format_size(n, b, sizeof(b));
    fprintf(out, "%s%s: %s\n", indent, key, b);
}

static void cfg_print_str(FILE *out, const char *indent, const char *key, const char *v,
                          bool secret)
{
    if (!v)
        return;
    fprintf(out, "%s%s: ", indent, key);
    cfg_q(out, secret ? "<secret>" : v);
    fputc('\n', out);
}

/*
 * Writes a URL with the password of its userinfo, if it has one, shown as
 * "<secret>" (as Prometheus prints http://bob:<secret>@host/). libcurl's URL
 * API splits and rebuilds it, so what is hidden is what libcurl would send as
 * the password. Should that fail (out of memory), the userinfo is hidden by
 * cfg_url_redact() instead; the password is never printed.
 */
static void cfg_print_url(FILE *out, const char *indent, const char *key, const char *url)
{
    char *pw = NULL, *full = NULL;
    char buf[1024];
    const char *shown = url;
    CURLU *u = NULL;
    if (!url)
        return;
    if (strchr(url, '@')) {
        u = curl_url();
        CURLUcode rc = u ? curl_url_set(u, CURLUPART_URL, url, 0) : CURLUE_OUT_OF_MEMORY;
        if (rc == CURLUE_OK)
            rc = curl_url_get(u, CURLUPART_PASSWORD, &pw, 0);
        if (rc == CURLUE_OK)
            rc = curl_url_set(u, CURLUPART_PASSWORD, "<secret>", 0);
        if (rc == CURLUE_OK)
            rc = curl_url_get(u, CURLUPART_URL, &full, 0);
        if (rc == CURLUE_OK)
            shown = full;
        else if (rc != CURLUE_NO_PASSWORD)
            shown = cfg_url_redact(url, buf, sizeof(buf));
    }
    cfg_print_str(out, indent, key, shown, false);
    curl_free(full);
    if (pw)
        explicit_bzero(pw, strlen(pw));
    curl_free(pw);
    curl_url_cleanup(u);
}

static void cfg_print_map(FILE *out, const char *indent, const char *key, const struct labels *ls,
                          bool secret)
{
    if (ls->n == 0) {
        fprintf(out, "%s%s: {}\n", indent, key);
        return;
    }
    fprintf(out, "%s%s:\n", indent, key);
    for (size_t i = 0; i < ls->n; i++) {
        fprintf(out, "%s  ", indent);
        cfg_q(out, ls->v[i].name);
        fputs(": ", out);
        cfg_q(out, secret ? "<secret>" : ls->v[i].value);
        fputc('\n', out);
    }
}

static void cfg_print_relabel(FILE *out, const char *indent, const char *key,
                              const struct relabel_rules *r)
{
    size_t n = relabel_count(r);
    if (n == 0) {
        fprintf(out, "%s%s: []\n", indent, key);
        return;
    }
    fprintf(out, "%s%s:\n", indent, key);
    for (size_t i = 0; i < n; i++) {
        const struct relabel_rule_spec *s = relabel_spec(r, i);
        fprintf(out, "%s  - action: %s\n", indent, relabel_action_name(s->action));
        if (s->nsource_labels) {
            fprintf(out, "%s    source_labels: [", indent);
            for (size_t j = 0; j < s->nsource_labels; j++) {
                fputs(j ? ", " : "", out);
                cfg_q(out, s->source_labels[j]);
            }
            fputs("]\n", out);
        }
        fprintf(out, "%s    separator: ", indent);
        cfg_q(out, s->separator);
        fprintf(out, "\n%s    regex: ", indent);
        cfg_q(out, s->regex);
        fputc('\n', out);
        if (s->target_label) {
            fprintf(out, "%s    target_label: ", indent);
            cfg_q(out, s->target_label);
            fputc('\n', out);
        }
        fprintf(out, "%s    replacement: ", indent);
        cfg_q(out, s->replacement);
        fputc('\n', out);
        if (s->modulus)
            fprintf(out, "%s    modulus: %" PRIu64 "\n", indent, s->modulus);
    }
}

static void cfg_print_rw(FILE *out, const struct config_remote_write *rw)
{
    const char *in = "    ";
    fputs("  - name: ", out);
    cfg_q(out, rw->name);
    fprintf(out, "\n    type: %s\n", rw->type == CONFIG_PUSH_PARCA ? "parca" : "pyroscope");
    if (rw->type == CONFIG_PUSH_PYROSCOPE)
        fprintf(out, "    api: %s\n", rw->api == CONFIG_PYROSCOPE_API_INGEST ? "ingest" : "push");
    cfg_print_url(out, in, "url", rw->url);
    cfg_print_dur(out, in, "remote_timeout", rw->remote_timeout_ns);
    cfg_print_str(out, in, "tenant_id", rw->tenant_id, false);
    cfg_print_map(out, in, "headers", &rw->headers, true);
    if (rw->basic_auth_username) {
        fputs("    basic_auth:\n", out);
        cfg_print_str(out, "      ", "username", rw->basic_auth_username, false);
        cfg_print_str(out, "      ", "password", rw->basic_auth_password, true);
        cfg_print_str(out, "      ", "password_file", rw->basic_auth_password_file, false);
    }
    if (rw->authorization_credentials || rw->authorization_credentials_file) {
        fputs("    authorization:\n", out);
        cfg_print_str(out, "      ", "type", rw->authorization_type, false);
        cfg_print_str(out, "      ", "credentials", rw->authorization_credentials, true);
        cfg_print_str(out, "      ", "credentials_file", rw->authorization_credentials_file, false);
    }
    fputs("    tls_config:\n", out);
    cfg_print_str(out, "      ", "ca_file", rw->tls_ca_file, false);
    cfg_print_str(out, "      ", "cert_file", rw->tls_cert_file, false);
    cfg_print_str(out, "      ", "key_file", rw->tls_key_file, false);
    cfg_print_str(out, "      ", "server_name", rw->tls_server_name, false);
    fprintf(out, "      insecure_skip_verify: %s\n",
            rw->tls_insecure_skip_verify ? "true" : "false");
    fprintf(out, "    queue:\n      max_profiles: %" PRIu64 "\n", rw->queue_max_profiles);
    cfg_print_size(out, "      ", "max_bytes", rw->queue_max_bytes);
    cfg_print_dur(out, "      ", "min_backoff", rw->min_backoff_ns);
    cfg_print_dur(out, "      ", "max_backoff", rw->max_backoff_ns);
    fprintf(out, "      max_retries: %" PRIu64 "\n", rw->max_retries);
    cfg_print_relabel(out, in, "write_relabel_configs", rw->write_relabel);
}

int config_print(const struct pyprofd_config *c, FILE *out)
{
    const struct config_limits *l = &c->global.limits;
    fputs("global:\n  sample_rate: ", out);
    cfg_num(out, c->global.sample_rate);
    fprintf(out, "\n  mode: %s\n", profile_mode_name(c->global.mode));
    cfg_print_dur(out, "  ", "profile_interval", c->global.profile_interval_ns);
    cfg_print_map(out, "  ", "external_labels", &c->global.external_labels, false);
    fprintf(out,
            "  limits:\n    max_targets: %" PRIu64 "\n    max_labels_per_profile: %" PRIu64 "\n",
            l->max_targets, l->max_labels_per_profile);
    cfg_print_size(out, "    ", "max_profile_bytes", l->max_profile_bytes);
    cfg_print_size(out, "    ", "target_memory_bytes", l->target_memory_bytes);
    fputs("    cpu_budget: ", out);
    cfg_num(out, l->cpu_budget);
    fputs("\ndiscovery:\n", out);
    cfg_print_dur(out, "  ", "refresh_interval", c->discovery.refresh_interval_ns);
    cfg_print_str(out, "  ", "proc_root", c->discovery.proc_root, false);
    cfg_print_dur(out, "  ", "min_process_age", c->discovery.min_process_age_ns);
    fputs(c->njobs ? "profile_configs:\n" : "profile_configs: []\n", out);
    for (size_t i = 0; i < c->njobs; i++) {
        const struct config_job *j = &c->jobs[i];
        fputs("  - job_name: ", out);
        cfg_q(out, j->job_name);
        fputs("\n    sample_rate: ", out);
        cfg_num(out, j->sample_rate);
        fprintf(out, "\n    mode: %s\n", profile_mode_name(j->mode));
        cfg_print_dur(out, "    ", "profile_interval", j->profile_interval_ns);
        fprintf(out,
                "    all_threads: %s\n    native: %s\n    gc: %s\n    async_aware: %s\n"
                "    async_mode: %s\n",
                j->all_threads ? "true" : "false", j->native ? "true" : "false",
                j->gc ? "true" : "false", j->async_aware ? "true" : "false",
                j->async_mode == CONFIG_ASYNC_ALL ? "all" : "running");
        cfg_print_relabel(out, "    ", "relabel_configs", j->relabel);
    }
    fputs(c->nremote_write ? "remote_write:\n" : "remote_write: []\n", out);
    for (size_t i = 0; i < c->nremote_write; i++)
        cfg_print_rw(out, &c->remote_write[i]);
    fputs("storage:\n", out);
    cfg_print_str(out, "  ", "directory", c->storage.directory, false);
    cfg_print_dur(out, "  ", "retention", c->storage.retention_ns);
    cfg_print_size(out, "  ", "max_bytes", c->storage.max_bytes);
    fputs("server:\n", out);
    cfg_print_str(out, "  ", "listen_address", c->server.listen_address, false);
    fprintf(out, "  enable_lifecycle: %s\n", c->server.enable_lifecycle ? "true" : "false");
    return ferror(out) ? -EIO : 0;
}
