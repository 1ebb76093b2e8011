/* SPDX-License-Identifier: MIT */
/*
 * config_remote.c: remote_write. The keys are walked from the schema
 * (config_walk.h); here is what only this section has: the list, the checks
 * across keys of an endpoint, unique names and the default name.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "config/config_walk.h"

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
