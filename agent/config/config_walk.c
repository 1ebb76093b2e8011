/* SPDX-License-Identifier: MIT */
/*
 * config_walk.c: the generic walk of a schema section (config_walk.h):
 * error reporting, node checks, one parser per value type (URLs and files
 * through config_value.h), and the structured values (label maps, HTTP
 * headers, relabel rules).
 */
#include "base/compat.h"

#include <math.h>
#include <stdarg.h>

#include "base/alloc.h"
#include "base/strnum.h"
#include "base/url.h"
#include "config/config_value.h"
#include "config/config_walk.h"

void config_walk_error(struct config_walk *w, const struct config_node *n, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    w->bad = true;
    if (config_yaml_error(w->errs, n ? n->line : 0, n ? n->col : 0, "%s", msg))
        w->rc = -ENOMEM;
}

void config_walk_nomem(struct config_walk *w)
{
    w->rc = -ENOMEM;
    w->bad = true;
}

const char *config_walk_kind(const struct config_node *n)
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

static bool config_walk_null(const struct config_node *n)
{
    return n->kind == CONFIG_NODE_SCALAR && n->null;
}

bool config_walk_is_map(struct config_walk *w, const char *path, const struct config_node *n)
{
    if (config_walk_null(n))
        return false;
    if (n->kind != CONFIG_NODE_MAP) {
        config_walk_error(w, n, "%s: expected a mapping, got %s", path, config_walk_kind(n));
        return false;
    }
    return true;
}

bool config_walk_is_seq(struct config_walk *w, const char *path, const struct config_node *n)
{
    if (config_walk_null(n))
        return false;
    if (n->kind != CONFIG_NODE_SEQ) {
        config_walk_error(w, n, "%s: expected a list, got %s", path, config_walk_kind(n));
        return false;
    }
    return true;
}

bool config_walk_is_scalar(struct config_walk *w, const char *path, const struct config_node *v)
{
    if (v->kind != CONFIG_NODE_SCALAR) {
        config_walk_error(w, v, "%s: expected a single value, got %s", path, config_walk_kind(v));
        return false;
    }
    return !v->null;
}

const char *config_walk_key(struct config_walk *w, const char *path, const struct config_node *m,
                            size_t i)
{
    const struct config_node *k = m->kids[i];
    if (k->kind != CONFIG_NODE_SCALAR) {
        config_walk_error(w, k, "%s: mapping keys must be plain names, got %s", path,
                          config_walk_kind(k));
        return NULL;
    }
    for (size_t j = 0; j < i; j += 2) {
        const struct config_node *o = m->kids[j];
        if (o->kind == CONFIG_NODE_SCALAR && o->value && k->value &&
            strcmp(o->value, k->value) == 0) {
            config_walk_error(w, k, "%s: duplicate key '%s' (first at line %" PRIu32 ")", path,
                              k->value, o->line);
            return NULL;
        }
    }
    return k->value;
}

bool config_walk_join(char *buf, size_t len, const char *path, const char *key)
{
    int n = snprintf(buf, len, "%s%s%s", path, *path ? "." : "", key);
    return n >= 0 && (size_t)n < len;
}

void config_walk_str(struct config_walk *w, const char *path, const struct config_node *v,
                     char **dst, bool empty_unset)
{
    if (!config_walk_is_scalar(w, path, v))
        return;
    char *s = NULL;
    if (!(empty_unset && v->len == 0)) {
        s = alloc_strdup(v->value);
        if (!s) {
            config_walk_nomem(w);
            return;
        }
    }
    alloc_free(*dst);
    *dst = s;
}

/* ---- scalars ---- */

static void config_walk_bool(struct config_walk *w, const char *path, const struct config_node *v,
                             bool *dst)
{
    static const char *const yes[] = {"true", "True", "TRUE"};
    static const char *const no[] = {"false", "False", "FALSE"};
    if (!config_walk_is_scalar(w, path, v))
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
    config_walk_error(w, v, "%s: expected true or false, got '%s'", path, v->value);
}

/* A plain decimal number (no hex, inf or nan). */
static bool config_walk_parse_number(const char *s, double *out)
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

/* A number in (lo, hi]. */
static void config_walk_number(struct config_walk *w, const char *path, const struct config_node *v,
                               const struct config_key *k, double *dst)
{
    double d;
    const char *unit = k->arg ? k->arg : "";
    if (!config_walk_is_scalar(w, path, v))
        return;
    if (!v->plain || !config_walk_parse_number(v->value, &d)) {
        config_walk_error(w, v, "%s: expected a number, got '%s'", path, v->value);
        return;
    }
    if (d <= k->lo_d || d > k->hi_d) {
        config_walk_error(w, v, "%s: must be in (%.15g, %.15g]%s%s, got %s", path, k->lo_d, k->hi_d,
                          *unit ? " " : "", unit, v->value);
        return;
    }
    *dst = d;
}

/* A fraction of one CPU ("0.5") or a percentage ("50%"), in (lo, hi] CPUs. */
static void config_walk_cpus(struct config_walk *w, const char *path, const struct config_node *v,
                             const struct config_key *k, double *dst)
{
    double d;
    char num[64];
    if (!config_walk_is_scalar(w, path, v))
        return;
    bool pct = v->len > 1 && v->value[v->len - 1] == '%';
    if (pct && v->len < sizeof(num)) {
        memcpy(num, v->value, v->len - 1);
        num[v->len - 1] = '\0';
    }
    if (pct ? (v->len >= sizeof(num) || !config_walk_parse_number(num, &d))
            : (!v->plain || !config_walk_parse_number(v->value, &d))) {
        config_walk_error(w, v,
                          "%s: expected a fraction of one CPU (0.5) or a percentage (50%%), "
                          "got '%s'",
                          path, v->value);
        return;
    }
    if (pct)
        d /= 100;
    if (d <= k->lo_d || d > k->hi_d) {
        config_walk_error(w, v,
                          "%s: must be in (%.15g, %.15g] CPUs (or (%.15g%%, %.15g%%]), got %s",
                          path, k->lo_d, k->hi_d, k->lo_d * 100, k->hi_d * 100, v->value);
        return;
    }
    *dst = d;
}

static bool config_walk_uint(struct config_walk *w, const char *path, const struct config_node *v,
                             uint64_t lo, uint64_t hi, uint64_t *dst)
{
    int64_t n;
    if (!config_walk_is_scalar(w, path, v))
        return false;
    if (!v->plain) {
        config_walk_error(w, v, "%s: expected a whole number, got '%s'", path, v->value);
        return false;
    }
    int rc = strnum_parse_i64(v->value, (int64_t)lo, (int64_t)hi, &n);
    if (rc == -ERANGE) {
        config_walk_error(w, v, "%s: must be between %" PRIu64 " and %" PRIu64 ", got %s", path, lo,
                          hi, v->value);
        return false;
    }
    if (rc) {
        config_walk_error(w, v, "%s: expected a whole number, got '%s'", path, v->value);
        return false;
    }
    *dst = (uint64_t)n;
    return true;
}

static void config_walk_duration(struct config_walk *w, const char *path,
                                 const struct config_node *v, const struct config_key *k,
                                 uint64_t *dst)
{
    uint64_t ns;
    char a[64], b[64];
    if (!config_walk_is_scalar(w, path, v))
        return;
    if (config_parse_duration(v->value, &ns)) {
        config_walk_error(w, v, "%s: invalid duration '%s' (write e.g. 15s, 1m30s, 500ms)", path,
                          v->value);
        return;
    }
    if (ns < k->lo || ns > k->hi) {
        config_format_duration(k->lo, a, sizeof(a));
        config_format_duration(k->hi, b, sizeof(b));
        config_walk_error(w, v, "%s: must be between %s and %s, got %s", path, a, b, v->value);
        return;
    }
    *dst = ns;
}

static void config_walk_size(struct config_walk *w, const char *path, const struct config_node *v,
                             const struct config_key *k, uint64_t *dst)
{
    uint64_t n;
    char a[64], b[64];
    if (!config_walk_is_scalar(w, path, v))
        return;
    if (config_parse_size(v->value, &n)) {
        config_walk_error(w, v, "%s: invalid size '%s' (write e.g. 512KiB, 4MB, 1GB)", path,
                          v->value);
        return;
    }
    if (n < k->lo || n > k->hi) {
        config_format_size(k->lo, a, sizeof(a));
        config_format_size(k->hi, b, sizeof(b));
        config_walk_error(w, v, "%s: must be between %s and %s, got %s", path, a, b, v->value);
        return;
    }
    *dst = n;
}

/* One of the row's names "a|b|c", stored as its index. */
static void config_walk_enum(struct config_walk *w, const char *path, const struct config_node *v,
                             const struct config_key *k, int *dst)
{
    char name[64], list[256] = "";
    size_t used = 0;
    if (!config_walk_is_scalar(w, path, v))
        return;
    for (int i = 0; config_schema_enum_name(k, i, name, sizeof(name)); i++) {
        if (strcmp(v->value, name) == 0) {
            *dst = i;
            return;
        }
        int n = snprintf(list + used, sizeof(list) - used, "%s%s", i ? ", " : "", name);
        if (n > 0 && (size_t)n < sizeof(list) - used)
            used += (size_t)n;
    }
    config_walk_error(w, v, "%s: unknown %s '%s' (one of %s)", path, k->name, v->value, list);
}

/* Whether @s holds a control character (C0 or DEL); a tab only counts unless @tab_ok. */
static bool config_walk_has_ctl(const char *s, bool tab_ok)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if ((*p < ' ' && !(tab_ok && *p == '\t')) || *p == 0x7f)
            return true;
    }
    return false;
}

/* "host:port", "[v6]:port" or ":port"; the port is 0..65535. */
static bool config_walk_valid_listen(const char *s)
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

/* A URL value (CONFIG_T_URL): checked (config_value_url_check()), stored in *@a dst. */
static void config_walk_url(struct config_walk *w, const char *path, const struct config_node *v,
                            char **dst)
{
    char why[160];
    const char *problem = NULL;
    if (config_walk_is_scalar(w, path, v) &&
        config_value_url_check(v->value, &problem, why, sizeof(why)) == -ENOMEM)
        config_walk_nomem(w);
    if (problem) {
        char shown[1024];
        url_redact(v->value, shown, sizeof(shown));
        config_walk_error(w, v, "%s: '%s' %s", path, shown, problem);
    } else {
        config_walk_str(w, path, v, dst, true);
    }
}

/*
 * The file a FILE (or, @a secret, SECRET_FILE) value names, checked at load
 * as it will be used (config_value_check_file()), so that a missing or
 * unreadable one is an error in the file rather than a failure at the
 * first push. The value node @a v was just stored.
 */
static void config_walk_check_file(struct config_walk *w, const char *path,
                                   const struct config_node *v, bool secret)
{
    char err[600];
    if (!w->check_files || v->kind != CONFIG_NODE_SCALAR || v->null || v->len == 0)
        return;
    int rc = config_value_check_file(v->value, secret, err, sizeof(err));
    if (rc == -ENOMEM)
        config_walk_nomem(w);
    else if (rc)
        config_walk_error(w, v, "%s: %s", path, err);
}

/* The string types: what each refuses before it is stored. */

static void config_walk_string(struct config_walk *w, const char *path, const struct config_node *v,
                               const struct config_key *k, char *base, struct config_seen *seen)
{
    char **dst = (void *)(base + k->offset);
    bool set = v->kind == CONFIG_NODE_SCALAR && !v->null;
    switch (k->type) {
    case CONFIG_T_STRING:
        if (set && k->hi && v->len > k->hi) {
            config_walk_error(w, v, "%s: longer than %" PRIu64 " bytes", path, k->hi);
            return;
        }
        break;
    case CONFIG_T_SENT:
    case CONFIG_T_SECRET:
        /* a CR or LF would end the header line it is in and start another
         * one of the config's choosing */
        if (set && config_walk_has_ctl(v->value, false)) {
            config_walk_error(
                w, v, "%s: must not contain control characters (it is sent in HTTP requests)",
                path);
            seen->refused[k - config_keys] = true;
            return;
        }
        break;
    case CONFIG_T_ABSPATH:
        if (set && v->value[0] != '/') {
            config_walk_error(w, v, "%s: must be an absolute path, got '%s'", path, v->value);
            return;
        }
        config_walk_str(w, path, v, dst, false);
        return;
    case CONFIG_T_LISTEN:
        if (set && v->len && !config_walk_valid_listen(v->value)) {
            config_walk_error(w, v, "%s: expected host:port, [ipv6]:port or :port, got '%s'", path,
                              v->value);
            return;
        }
        PYPROFD_ASSERT(k->section == CONFIG_S_SERVER);
        config_walk_str(w, path, v, dst, false);
        /* "" from ${VAR} is most likely an unset variable, not "no server" */
        ((struct pyprofd_config *)(void *)base)->server.listen_address_expanded =
            v->kind == CONFIG_NODE_SCALAR && v->expanded;
        return;
    case CONFIG_T_URL:
        config_walk_url(w, path, v, dst);
        return;
    default:
        break;
    }
    config_walk_str(w, path, v, dst, true);
    if (k->type == CONFIG_T_FILE || k->type == CONFIG_T_SECRET_FILE)
        config_walk_check_file(w, path, v, k->type == CONFIG_T_SECRET_FILE);
}

/* ---- maps: external_labels, headers ---- */

static bool config_walk_header_name(const char *s)
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

/* external_labels (LABELS) or headers (HEADERS): names checked, at most k->hi entries. */
static void config_walk_map(struct config_walk *w, const char *path, const struct config_node *m,
                            const struct config_key *k, struct labels *ls)
{
    bool headers = k->type == CONFIG_T_HEADERS;
    if (!config_walk_is_map(w, path, m))
        return;
    for (size_t i = 0; i + 1 < m->n; i += 2) {
        const char *name = config_walk_key(w, path, m, i);
        const struct config_node *v = m->kids[i + 1];
        char kp[300];
        if (!name)
            continue;
        bool fits = config_walk_join(kp, sizeof(kp), path, name);
        if (headers && (!fits || !config_walk_header_name(name))) {
            config_walk_error(w, m->kids[i], "%s: '%s' is not a valid HTTP header name", path,
                              name);
            continue;
        }
        if (!headers && !labels_valid_name(name)) {
            config_walk_error(w, m->kids[i], "%s: '%s' is not a valid label name", path, name);
            continue;
        }
        if (!headers && name[0] == '_' && name[1] == '_') {
            config_walk_error(w, m->kids[i], "%s: label names starting with '__' are reserved",
                              path);
            continue;
        }
        if (!config_walk_is_scalar(w, kp, v))
            continue;
        if (!headers && v->len == 0)
            continue; /* an empty value is no label, as in Prometheus */
        if (headers && config_walk_has_ctl(v->value, true)) {
            config_walk_error(w, v, "%s: header values must not contain control characters", kp);
            continue;
        }
        if (ls->n >= k->hi) {
            config_walk_error(w, m->kids[i], "%s: more than %" PRIu64 " %s", path, k->hi,
                              headers ? "headers" : "external labels");
            return;
        }
        if (labels_set(ls, name, v->value))
            config_walk_nomem(w);
    }
}

/* ---- relabel rules ---- */

/* The YAML nodes of one rule's fields, to point errors at. */
struct config_walk_rule_nodes {
    const struct config_node *field[RELABEL_FIELD_MODULUS + 1];
};

/* A scalar field of a rule into *@dst (borrowed from the tree). Returns false when refused. */
static bool config_walk_rule_str(struct config_walk *w, const char *path,
                                 const struct config_node *v, const char **dst, bool empty_unset)
{
    if (config_walk_is_scalar(w, path, v))
        *dst = empty_unset && !v->len ? NULL : v->value;
    return v->kind == CONFIG_NODE_SCALAR;
}

static int config_walk_rule(struct config_walk *w, const char *path, const struct config_node *m,
                            struct relabel_rule_spec *spec, const char ***srcs,
                            struct config_walk_rule_nodes *fn)
{
    char kp[256];
    bool ok = true;
    spec->action = RELABEL_REPLACE;
    fn->field[RELABEL_FIELD_NONE] = m;
    for (size_t i = 0; i + 1 < m->n; i += 2) {
        const char *k = config_walk_key(w, path, m, i);
        const struct config_node *v = m->kids[i + 1];
        if (!k) {
            ok = false;
            continue;
        }
        config_walk_join(kp, sizeof(kp), path, k);
        if (strcmp(k, "source_labels") == 0) {
            fn->field[RELABEL_FIELD_SOURCE_LABELS] = v;
            if (!config_walk_is_seq(w, kp, v)) {
                ok = ok && v->kind == CONFIG_NODE_SCALAR;
                continue;
            }
            *srcs = alloc_calloc(v->n ? v->n : 1, sizeof(char *));
            if (!*srcs) {
                config_walk_nomem(w);
                return -ENOMEM;
            }
            for (size_t j = 0; j < v->n; j++) {
                const struct config_node *it = v->kids[j];
                char ip[300];
                snprintf(ip, sizeof(ip), "%s[%zu]", kp, j);
                if (!config_walk_is_scalar(w, ip, it)) {
                    if (it->kind == CONFIG_NODE_SCALAR)
                        config_walk_error(w, it, "%s: must not be empty", ip);
                    ok = false;
                } else if (!labels_valid_name(it->value)) {
                    config_walk_error(w, it, "%s: '%s' is not a valid label name", ip, it->value);
                    ok = false;
                }
                (*srcs)[j] = it->value;
            }
            spec->source_labels = *srcs;
            spec->nsource_labels = v->n;
        } else if (strcmp(k, "separator") == 0) {
            fn->field[RELABEL_FIELD_SEPARATOR] = v;
            ok = config_walk_rule_str(w, kp, v, &spec->separator, false) && ok;
        } else if (strcmp(k, "regex") == 0) {
            fn->field[RELABEL_FIELD_REGEX] = v;
            ok = config_walk_rule_str(w, kp, v, &spec->regex, false) && ok;
        } else if (strcmp(k, "target_label") == 0) {
            fn->field[RELABEL_FIELD_TARGET_LABEL] = v;
            ok = config_walk_rule_str(w, kp, v, &spec->target_label, true) && ok;
        } else if (strcmp(k, "replacement") == 0) {
            fn->field[RELABEL_FIELD_REPLACEMENT] = v;
            ok = config_walk_rule_str(w, kp, v, &spec->replacement, false) && ok;
        } else if (strcmp(k, "modulus") == 0) {
            fn->field[RELABEL_FIELD_MODULUS] = v;
            if (config_walk_null(v))
                continue;
            ok = config_walk_uint(w, kp, v, 1, INT64_MAX, &spec->modulus) && ok;
        } else if (strcmp(k, "action") == 0) {
            fn->field[RELABEL_FIELD_ACTION] = v;
            if (!config_walk_is_scalar(w, kp, v)) {
                ok = ok && v->kind == CONFIG_NODE_SCALAR;
            } else if (relabel_action_parse(v->value, &spec->action)) {
                config_walk_error(w, v,
                                  "%s: unknown action '%s' (one of replace, keep, drop, "
                                  "keepequal, dropequal, hashmod, labelmap, labeldrop, "
                                  "labelkeep, lowercase, uppercase)",
                                  kp, v->value);
                ok = false;
            }
        } else {
            config_walk_error(w, m->kids[i], "%s: unknown key '%s'", path, k);
            ok = false;
        }
    }
    return ok ? 0 : -EINVAL;
}

/* A relabel_configs list into *@out (left NULL after errors). */
static void config_walk_relabel(struct config_walk *w, const char *path,
                                const struct config_node *seq, const struct config_key *k,
                                struct relabel_rules **out)
{
    struct relabel_rule_spec *specs = NULL;
    const char ***srcs = NULL;
    size_t n = 0;
    bool ok = true;
    char err[1024];
    if (config_walk_is_seq(w, path, seq))
        n = seq->n;
    else if (!config_walk_null(seq))
        return; /* wrong type, reported */
    if (n > k->hi) {
        config_walk_error(w, seq, "%s: more than %" PRIu64 " rules", path, k->hi);
        return;
    }
    if (n) {
        specs = alloc_calloc(n, sizeof(*specs));
        srcs = alloc_calloc(n, sizeof(*srcs));
        if (!specs || !srcs) {
            config_walk_nomem(w);
            goto out;
        }
    }
    for (size_t i = 0; i < n; i++) {
        char rp[352]; /* a path (up to 319 bytes) and "[N]" */
        struct config_walk_rule_nodes fn = {0};
        enum relabel_field field;
        const struct config_node *m = seq->kids[i];
        snprintf(rp, sizeof(rp), "%s[%zu]", path, i);
        if (!config_walk_is_map(w, rp, m)) {
            if (config_walk_null(m))
                config_walk_error(w, m, "%s: empty rule", rp);
            ok = false;
            continue;
        }
        int rc = config_walk_rule(w, rp, m, &specs[i], &srcs[i], &fn);
        if (rc == -ENOMEM)
            goto out;
        if (rc) {
            ok = false;
            continue;
        }
        rc = relabel_validate(&specs[i], &field, err, sizeof(err));
        if (rc == -ENOMEM) {
            config_walk_nomem(w);
            goto out;
        }
        if (rc) {
            const struct config_node *at = fn.field[field] ? fn.field[field] : m;
            config_walk_error(w, at, "%s: %s", rp, err);
            ok = false;
        }
    }
    if (ok) {
        relabel_free(*out);
        *out = NULL;
        int rc = relabel_compile(specs, n, out, err, sizeof(err));
        if (rc == -ENOMEM)
            config_walk_nomem(w);
        else if (rc)
            config_walk_error(w, seq, "%s: %s", path, err);
    }
out:
    for (size_t i = 0; srcs && i < n; i++)
        alloc_free(srcs[i]);
    alloc_free(srcs);
    alloc_free(specs);
}

/* ---- the generic walk ---- */

static void config_walk_value(struct config_walk *w, const char *path, const struct config_node *v,
                              const struct config_key *k, char *base, struct config_seen *seen)
{
    void *dst = base + k->offset;
    switch (k->type) {
    case CONFIG_T_NUMBER:
        config_walk_number(w, path, v, k, dst);
        break;
    case CONFIG_T_CPUS:
        config_walk_cpus(w, path, v, k, dst);
        break;
    case CONFIG_T_UINT:
        config_walk_uint(w, path, v, k->lo, k->hi, dst);
        break;
    case CONFIG_T_DURATION:
        config_walk_duration(w, path, v, k, dst);
        break;
    case CONFIG_T_SIZE:
        config_walk_size(w, path, v, k, dst);
        break;
    case CONFIG_T_BOOL:
        config_walk_bool(w, path, v, dst);
        break;
    case CONFIG_T_ENUM:
        config_walk_enum(w, path, v, k, dst);
        break;
    case CONFIG_T_LABELS:
    case CONFIG_T_HEADERS:
        config_walk_map(w, path, v, k, dst);
        break;
    case CONFIG_T_RELABEL:
        config_walk_relabel(w, path, v, k, dst);
        break;
    case CONFIG_T_SECTION:
        PYPROFD_ASSERT(0);
        break;
    default:
        config_walk_string(w, path, v, k, base, seen);
        break;
    }
}

void config_walk_section(struct config_walk *w, const char *path, const struct config_node *m,
                         enum config_section s, void *base, struct config_seen *seen)
{
    char kp[320];
    if (!config_walk_is_map(w, path, m))
        return;
    for (size_t i = 0; i + 1 < m->n; i += 2) {
        const char *name = config_walk_key(w, path, m, i);
        const struct config_node *v = m->kids[i + 1];
        const struct config_key *k;
        if (!name)
            continue;
        k = config_schema_find(s, name);
        if (!k || (k->flags & CONFIG_LIST)) {
            config_walk_error(w, m->kids[i], "%s: unknown key '%s'", path, name);
            continue;
        }
        seen->key[k - config_keys] = m->kids[i];
        seen->val[k - config_keys] = v;
        config_walk_join(kp, sizeof(kp), path, name);
        if (k->type == CONFIG_T_SECTION)
            config_walk_section(w, kp, v, k->sub, base, seen);
        else
            config_walk_value(w, kp, v, k, base, seen);
    }
}
