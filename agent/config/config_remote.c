/* SPDX-License-Identifier: MIT */
/*
 * config_remote.c: remote_write. The keys are walked from the schema
 * (config_schema.h); here are what only this section has: URLs checked by
 * libcurl's parser and shown without their password, the files an endpoint
 * names checked at load, the checks across keys, and the default name.
 */
#include "base/compat.h"

#include <ctype.h>
#include <unistd.h>

#include <curl/curl.h>

#include "base/alloc.h"
#include "base/url.h"
#include "config/config_schema.h"

/*
 * Checks a remote_write url and returns NULL when it is fine, or what is
 * wrong with it (in @buf; reported by the caller). The scheme and the bytes
 * are checked here; the rest is left to libcurl's URL parser, the one that
 * will use the URL, so that what it refuses is refused at load and never
 * tried and retried at every push: a bad port, and above all a missing host
 * ("http://:4040", which "http://${UNSET}:4040" expands to).
 */
static const char *config_remote_url_problem(struct config_walk *w, const char *u, char *buf,
                                             size_t len)
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
        config_walk_nomem(w);
        return NULL;
    }
    CURLUcode rc = curl_url_set(cu, CURLUPART_URL, u, 0);
    if (rc == CURLUE_OK)
        rc = curl_url_get(cu, CURLUPART_HOST, &host, 0);
    if (rc == CURLUE_OK && !host[0])
        rc = CURLUE_NO_HOST;
    if (rc == CURLUE_OUT_OF_MEMORY) {
        config_walk_nomem(w);
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

void config_remote_url(struct config_walk *w, const char *path, const struct config_node *v,
                       char **dst)
{
    char why[160];
    const char *problem = NULL;
    if (config_walk_is_scalar(w, path, v))
        problem = config_remote_url_problem(w, v->value, why, sizeof(why));
    if (problem) {
        char shown[1024];
        url_redact(v->value, shown, sizeof(shown));
        config_walk_error(w, v, "%s: '%s' %s", path, shown, problem);
    } else {
        config_walk_str(w, path, v, dst, true);
    }
}

/*
 * Shows a URL with the password of its userinfo, if it has one, as
 * "<secret>" (as Prometheus prints http://bob:<secret>@host/). libcurl's URL
 * API splits and rebuilds it, so what is hidden is what libcurl would send as
 * the password. Should that fail (out of memory), the password is hidden by
 * url_redact() instead; the password is never shown.
 */
int config_remote_url_shown(const char *url, char **shown)
{
    char *pw = NULL, *full = NULL;
    CURLU *u = NULL;
    CURLUcode rc = CURLUE_NO_PASSWORD;
    *shown = NULL;
    if (strchr(url, '@')) {
        u = curl_url();
        rc = u ? curl_url_set(u, CURLUPART_URL, url, 0) : CURLUE_OUT_OF_MEMORY;
        if (rc == CURLUE_OK)
            rc = curl_url_get(u, CURLUPART_PASSWORD, &pw, 0);
        if (rc == CURLUE_OK)
            rc = curl_url_set(u, CURLUPART_PASSWORD, "<secret>", 0);
        if (rc == CURLUE_OK)
            rc = curl_url_get(u, CURLUPART_URL, &full, 0);
    }
    if (rc == CURLUE_OK) {
        *shown = alloc_strdup(full);
    } else if (rc == CURLUE_NO_PASSWORD) {
        *shown = alloc_strdup(url);
    } else {
        size_t len = strlen(url) + sizeof("<secret>");
        *shown = alloc_malloc(len);
        if (*shown)
            url_redact(url, *shown, len);
    }
    curl_free(full);
    if (pw)
        explicit_bzero(pw, strlen(pw));
    curl_free(pw);
    curl_url_cleanup(u);
    return *shown ? 0 : -ENOMEM;
}

/*
 * The files a remote_write entry names are checked at load, as they will be
 * used, so that a missing or unreadable one is an error in the file rather
 * than a failure at the first push: a tls_config file must open as a
 * regular file (its content is libcurl's to judge), a secret file must read
 * as a secret (readfile_secret(): no control character once the
 * surrounding whitespace is gone). The value node @v was just stored.
 */
void config_remote_check_file(struct config_walk *w, const char *path, const struct config_node *v,
                              bool secret)
{
    char err[600];
    int fd = -1, rc;
    if (!w->check_files || v->kind != CONFIG_NODE_SCALAR || v->null || v->len == 0)
        return;
    if (secret) {
        char *s = NULL;
        rc = readfile_secret(v->value, &s, err, sizeof(err));
        if (s) {
            explicit_bzero(s, strlen(s));
            alloc_free(s);
        }
    } else {
        char why[128];
        rc = readfile_open(v->value, &fd, why, sizeof(why));
        if (fd >= 0)
            close(fd);
        snprintf(err, sizeof(err), "cannot read '%s': %s", v->value, why);
    }
    if (rc == -ENOMEM)
        config_walk_nomem(w);
    else if (rc)
        config_walk_error(w, v, "%s: %s", path, err);
}

/* Whether the walk saw row @id as a mapping (the subsection was walked). */
static const struct config_node *config_remote_map(const struct config_seen *s,
                                                   enum config_key_id id)
{
    const struct config_node *m = s->val[id];
    return m && m->kind == CONFIG_NODE_MAP ? m : NULL;
}

/* The checks across keys of one endpoint, after its walk. */
static void config_remote_check(struct config_walk *w, const char *path,
                                const struct config_node *m, struct config_remote_write *rw,
                                const struct config_seen *s)
{
    const struct config_node *basic = config_remote_map(s, CONFIG_K_BASIC_AUTH),
                             *auth = config_remote_map(s, CONFIG_K_AUTHORIZATION),
                             *tls = config_remote_map(s, CONFIG_K_TLS),
                             *queue = config_remote_map(s, CONFIG_K_QUEUE),
                             *type = s->val[CONFIG_K_RW_TYPE], *url = s->val[CONFIG_K_RW_URL];
    if (basic && !rw->basic_auth_username && !s->refused[CONFIG_K_BASIC_AUTH_USERNAME])
        config_walk_error(w, basic, "%s.basic_auth: username is required", path);
    if (basic && s->val[CONFIG_K_BASIC_AUTH_PASSWORD] && rw->basic_auth_password &&
        rw->basic_auth_password_file)
        config_walk_error(w, s->val[CONFIG_K_BASIC_AUTH_PASSWORD_FILE],
                          "%s.basic_auth: set only one of password and password_file", path);
    if (auth && rw->authorization_credentials && rw->authorization_credentials_file)
        config_walk_error(w, s->val[CONFIG_K_AUTHORIZATION_CREDENTIALS_FILE],
                          "%s.authorization: set only one of credentials and credentials_file",
                          path);
    else if (auth && !rw->authorization_credentials && !rw->authorization_credentials_file &&
             !s->refused[CONFIG_K_AUTHORIZATION_CREDENTIALS])
        config_walk_error(w, auth, "%s.authorization: credentials or credentials_file is required",
                          path);
    if (auth && rw->authorization_type && strcasecmp(rw->authorization_type, "Basic") == 0)
        config_walk_error(w, s->val[CONFIG_K_AUTHORIZATION_TYPE],
                          "%s.authorization.type: use basic_auth for Basic authorization", path);
    if (tls && !rw->tls_cert_file != !rw->tls_key_file)
        config_walk_error(w, tls, "%s.tls_config: cert_file and key_file must be set together",
                          path);
    const struct config_node *max_backoff = s->val[CONFIG_K_QUEUE_MAX_BACKOFF];
    if (queue && rw->min_backoff_ns > rw->max_backoff_ns)
        config_walk_error(w, max_backoff ? max_backoff : queue,
                          "%s.queue: max_backoff must not be less than min_backoff", path);
    if (!type || type->kind != CONFIG_NODE_SCALAR || type->null)
        config_walk_error(w, m, "%s: type is required (pyroscope or parca)", path);
    if (!config_seen_set(s, CONFIG_K_RW_URL))
        config_walk_error(w, url ? url : m, "%s: url is required", path);
    if (s->val[CONFIG_K_RW_API] && rw->type == CONFIG_PUSH_PARCA)
        config_walk_error(w, s->val[CONFIG_K_RW_API], "%s.api: only for type pyroscope", path);
    if (basic && auth)
        config_walk_error(w, s->key[CONFIG_K_AUTHORIZATION],
                          "%s: set only one of basic_auth and authorization", path);
}

static void config_remote_write(struct config_walk *w, const char *path,
                                const struct config_node *m, struct config_remote_write *rw,
                                size_t index, struct config_seen *s)
{
    config_schema_defaults(CONFIG_S_REMOTE, rw);
    if (!config_walk_is_map(w, path, m)) {
        if (m->kind == CONFIG_NODE_SCALAR && m->null)
            config_walk_error(w, m, "%s: empty endpoint (type and url are required)", path);
        return;
    }
    config_walk_section(w, path, m, CONFIG_S_REMOTE, rw, s);
    config_remote_check(w, path, m, rw, s);
    if (!rw->name) {
        char nm[64];
        snprintf(nm, sizeof(nm), "%s-%zu", rw->type == CONFIG_PUSH_PARCA ? "parca" : "pyroscope",
                 index);
        rw->name = alloc_strdup(nm);
        if (!rw->name)
            config_walk_nomem(w);
    }
    if (config_schema_finish(CONFIG_S_REMOTE, rw, s))
        config_walk_nomem(w);
}

void config_remote_writes(struct config_walk *w, const struct config_node *seq,
                          struct pyprofd_config *c)
{
    const char *path = "remote_write";
    struct config_seen seen;
    const struct config_node **names;
    if (!config_walk_is_seq(w, path, seq) || seq->n == 0)
        return;
    if (seq->n > CONFIG_MAX_REMOTE_WRITE) {
        config_walk_error(w, seq, "%s: more than %d endpoints", path, CONFIG_MAX_REMOTE_WRITE);
        return;
    }
    c->remote_write = alloc_calloc(seq->n, sizeof(c->remote_write[0]));
    /* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers */
    names = alloc_calloc(seq->n, sizeof(*names));
    if (!c->remote_write || !names) {
        alloc_free(names);
        config_walk_nomem(w);
        return;
    }
    c->nremote_write = seq->n;
    for (size_t i = 0; i < seq->n && w->rc == 0; i++) {
        char rp[64];
        const struct config_node *m = seq->kids[i];
        struct config_remote_write *rw = &c->remote_write[i];
        memset(&seen, 0, sizeof(seen));
        snprintf(rp, sizeof(rp), "%s[%zu]", path, i);
        config_remote_write(w, rp, m, rw, i, &seen);
        names[i] = seen.val[CONFIG_K_RW_NAME] ? seen.val[CONFIG_K_RW_NAME] : m;
        for (size_t k = 0; k < i && rw->name; k++) {
            if (c->remote_write[k].name && strcmp(c->remote_write[k].name, rw->name) == 0) {
                config_walk_error(w, names[i],
                                  "%s: duplicate name '%s' (first at line %" PRIu32 ")", rp,
                                  rw->name, names[k]->line);
                break;
            }
        }
    }
    alloc_free(names);
}
