/* SPDX-License-Identifier: MIT */
/*
 * config.c: loading (config.h): YAML tree (config_yaml.h) to struct
 * pyprofd_config through the schema (config_walk.h), then what the schema
 * cannot say: the top level, the job list with its checks, inheritance from
 * `global`, the built-in default and freeing.
 *
 * Cross-key checks run once a mapping has been walked; inheritance from
 * `global` runs at the end, because `global` may come after
 * `profile_configs` in the file. The config is only handed out when no
 * error was found.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "config/config.h"
#include "config/config_walk.h"
#include "config/config_yaml.h"

/* What a job set itself, for inheritance and the checks after it. */
struct config_job_seen {
    const struct config_node *name_node;
    const struct config_node *async_all;   /* "async_mode: all", for the mode check */
    const struct config_node *native_full; /* "native: full", for the mode check */
    bool set[CONFIG_NKEYS];                /* keys given a value */
};

/* A config with every default, named @source (the jobs and endpoints: none). */
static int config_alloc_defaults(struct pyprofd_config **out, const char *source)
{
    struct pyprofd_config *c = alloc_calloc(1, sizeof(*c));
    *out = NULL;
    if (!c)
        return -ENOMEM;
    config_schema_defaults(CONFIG_S_ROOT, c);
    c->source = alloc_strdup(source);
    if (!c->source) {
        config_free(c);
        return -ENOMEM;
    }
    *out = c;
    return 0;
}

int config_default(struct pyprofd_config **out)
{
    struct pyprofd_config *c = NULL;
    const bool set[CONFIG_NKEYS] = {0};
    int rc = config_alloc_defaults(&c, "<default>");
    if (rc)
        return rc;
    rc = config_schema_finish(CONFIG_S_ROOT, c, NULL);
    if (rc)
        goto out;
    c->jobs = alloc_calloc(1, sizeof(c->jobs[0]));
    if (!c->jobs) {
        rc = -ENOMEM;
        goto out;
    }
    c->njobs = 1;
    struct config_job *j = &c->jobs[0];
    config_schema_defaults(CONFIG_S_JOB, j);
    config_schema_inherit(j, c, set);
    j->job_name = alloc_strdup("python");
    rc = j->job_name ? config_schema_finish(CONFIG_S_JOB, j, NULL) : -ENOMEM;
out:
    if (rc) {
        config_free(c);
        c = NULL;
    }
    *out = c;
    return rc;
}

void config_free(struct pyprofd_config *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->njobs; i++)
        config_schema_release(CONFIG_S_JOB, &c->jobs[i]);
    alloc_free(c->jobs);
    for (size_t i = 0; i < c->nremote_write; i++)
        config_schema_release(CONFIG_S_REMOTE, &c->remote_write[i]);
    alloc_free(c->remote_write);
    config_schema_release(CONFIG_S_ROOT, c);
    alloc_free(c->source);
    alloc_free(c);
}

/* ---- profile_configs ---- */

static void config_job(struct config_walk *w, const char *path, const struct config_node *m,
                       struct config_job *j, struct config_job_seen *js)
{
    struct config_seen s;
    memset(&s, 0, sizeof(s));
    config_schema_defaults(CONFIG_S_JOB, j);
    if (!config_walk_is_map(w, path, m)) {
        if (m->kind == CONFIG_NODE_SCALAR && m->null)
            config_walk_error(w, m, "%s: empty job (job_name is required)", path);
        return;
    }
    config_walk_section(w, path, m, CONFIG_S_JOB, j, &s);
    /* job_name: an error was reported already when it was refused */
    const struct config_node *nn = s.val[CONFIG_K_JOB_NAME];
    if (!j->job_name &&
        !(nn && (nn->kind != CONFIG_NODE_SCALAR || nn->len > config_keys[CONFIG_K_JOB_NAME].hi)))
        config_walk_error(w, nn ? nn : m, "%s: job_name is required", path);
    js->name_node = nn;
    if (s.val[CONFIG_K_ASYNC_MODE] && j->async_mode == CONFIG_ASYNC_ALL)
        js->async_all = s.val[CONFIG_K_ASYNC_MODE];
    if (s.val[CONFIG_K_NATIVE] && j->native == CONFIG_NATIVE_FULL)
        js->native_full = s.val[CONFIG_K_NATIVE];
    for (size_t i = 0; i < CONFIG_NKEYS; i++)
        js->set[i] = config_seen_set(&s, (enum config_key_id)i);
    if (config_schema_finish(CONFIG_S_JOB, j, &s))
        config_walk_nomem(w);
}

static void config_jobs(struct config_walk *w, const struct config_node *seq,
                        struct pyprofd_config *c, struct config_job_seen **seen_out)
{
    const char *path = "profile_configs";
    if (!config_walk_is_seq(w, path, seq) || seq->n == 0)
        return;
    if (seq->n > CONFIG_MAX_JOBS) {
        config_walk_error(w, seq, "%s: more than %d jobs", path, CONFIG_MAX_JOBS);
        return;
    }
    c->jobs = alloc_calloc(seq->n, sizeof(c->jobs[0]));
    struct config_job_seen *seen = alloc_calloc(seq->n, sizeof(*seen));
    *seen_out = seen;
    if (!c->jobs || !seen) {
        config_walk_nomem(w);
        return;
    }
    c->njobs = seq->n;
    for (size_t i = 0; i < seq->n && w->rc == 0; i++) {
        char jp[64];
        snprintf(jp, sizeof(jp), "%s[%zu]", path, i);
        config_job(w, jp, seq->kids[i], &c->jobs[i], &seen[i]);
        for (size_t k = 0; k < i && c->jobs[i].job_name; k++) {
            if (c->jobs[k].job_name && strcmp(c->jobs[k].job_name, c->jobs[i].job_name) == 0) {
                config_walk_error(w, seen[i].name_node,
                                  "%s.job_name: duplicate job_name '%s' (first at line %" PRIu32
                                  ")",
                                  jp, c->jobs[i].job_name, seen[k].name_node->line);
                break;
            }
        }
    }
}

/* ---- load ---- */

static void config_walk_root(struct config_walk *w, const struct config_node *root,
                             struct pyprofd_config *c, struct config_job_seen **seen)
{
    struct config_seen s;
    if (!root || (root->kind == CONFIG_NODE_SCALAR && root->null))
        return;
    if (root->kind != CONFIG_NODE_MAP) {
        config_walk_error(
            w, root, "the top level must be a mapping (global:, profile_configs:, ...), got %s",
            config_walk_kind(root));
        return;
    }
    memset(&s, 0, sizeof(s));
    for (size_t i = 0; i + 1 < root->n && w->rc == 0; i += 2) {
        const char *name = config_walk_key(w, "top level", root, i);
        const struct config_node *v = root->kids[i + 1];
        const struct config_key *k = name ? config_schema_find(CONFIG_S_ROOT, name) : NULL;
        if (!name)
            continue;
        if (!k)
            config_walk_error(w, root->kids[i], "unknown top-level key '%s'", name);
        else if (k->sub == CONFIG_S_JOB)
            config_jobs(w, v, c, seen);
        else if (k->sub == CONFIG_S_REMOTE)
            config_remote_writes(w, v, c);
        else
            config_walk_section(w, name, v, k->sub, c, &s);
    }
}

int config_load_buffer(const char *buf, size_t len, const char *name,
                       const struct config_load_opts *opts, struct pyprofd_config **out,
                       struct config_errors *errs)
{
    struct config_node *root = NULL;
    struct pyprofd_config *c = NULL;
    struct config_job_seen *seen = NULL;
    struct config_walk w = {.errs = errs, .check_files = !(opts && opts->skip_file_checks)};
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
    rc = config_alloc_defaults(&c, name);
    if (rc)
        goto out;
    config_walk_root(&w, root, c, &seen);
    if (!w.rc && !w.bad && config_schema_finish(CONFIG_S_ROOT, c, NULL))
        config_walk_nomem(&w);
    if (!w.rc && !w.bad) {
        for (size_t i = 0; seen && i < c->njobs; i++)
            config_schema_inherit(&c->jobs[i], c, seen[i].set);
        /* needs the inherited mode: checked after inheritance */
        for (size_t i = 0; seen && i < c->njobs; i++) {
            if (seen[i].async_all && c->jobs[i].mode != PROFILE_WALL)
                config_walk_error(&w, seen[i].async_all,
                                  "profile_configs[%zu].async_mode: 'all' needs mode wall, not %s "
                                  "(waiting tasks use no CPU, hold no GIL and handle no "
                                  "exception)",
                                  i, profile_mode_name(c->jobs[i].mode));
            if (seen[i].native_full && c->jobs[i].mode != PROFILE_CPU)
                config_walk_error(&w, seen[i].native_full,
                                  "profile_configs[%zu].native: 'full' needs mode cpu, not %s "
                                  "(the kernel samples each thread every period of its CPU "
                                  "time)",
                                  i, profile_mode_name(c->jobs[i].mode));
            if (seen[i].native_full && c->jobs[i].async_aware)
                config_walk_error(&w, seen[i].native_full,
                                  "profile_configs[%zu].native: 'full' does not combine with "
                                  "async_aware yet",
                                  i);
        }
    }
    rc = w.rc ? w.rc : w.bad ? -EINVAL : 0;
    if (rc)
        goto out;
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
    int rc = readfile_all(path, CONFIG_MAX_FILE_BYTES, &buf, &len, why, sizeof(why));
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
