/* SPDX-License-Identifier: MIT */
/*
 * config_print.c: config_print(), the effective config as YAML that loads
 * back into the same config, secrets hidden.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "config/config_schema.h"

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

/* A URL with the password of its userinfo, if it has one, as "<secret>". */
static void cfg_print_url(FILE *out, const char *indent, const char *key, const char *url, int *rc)
{
    char *shown = NULL;
    if (!url)
        return;
    *rc = config_remote_url_shown(url, &shown);
    if (!*rc)
        cfg_print_str(out, indent, key, shown, false);
    alloc_free(shown);
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

static void cfg_print_rw(FILE *out, const struct config_remote_write *rw, int *rc)
{
    const char *in = "    ";
    fputs("  - name: ", out);
    cfg_q(out, rw->name);
    fprintf(out, "\n    type: %s\n", rw->type == CONFIG_PUSH_PARCA ? "parca" : "pyroscope");
    if (rw->type == CONFIG_PUSH_PYROSCOPE)
        fprintf(out, "    api: %s\n", rw->api == CONFIG_PYROSCOPE_API_INGEST ? "ingest" : "push");
    cfg_print_url(out, in, "url", rw->url, rc);
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
    int rc = 0;
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
        cfg_print_rw(out, &c->remote_write[i], &rc);
    fputs("storage:\n", out);
    cfg_print_str(out, "  ", "directory", c->storage.directory, false);
    cfg_print_dur(out, "  ", "retention", c->storage.retention_ns);
    cfg_print_size(out, "  ", "max_bytes", c->storage.max_bytes);
    fputs("server:\n", out);
    cfg_print_str(out, "  ", "listen_address", c->server.listen_address, false);
    fprintf(out, "  enable_lifecycle: %s\n", c->server.enable_lifecycle ? "true" : "false");
    return rc ? rc : ferror(out) ? -EIO : 0;
}
