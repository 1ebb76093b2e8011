/* SPDX-License-Identifier: MIT */
/*
 * config_schema.c: config.def expanded into the table of config_schema.h,
 * and the loops over it that set defaults and inherited values.
 */
#include "base/compat.h"

#include <stddef.h>

#include "base/alloc.h"
#include "config/config_schema.h"

/* The struct each section's fields are in. */
#define CONFIG_STRUCT_ROOT          struct pyprofd_config
#define CONFIG_STRUCT_GLOBAL        struct pyprofd_config
#define CONFIG_STRUCT_LIMITS        struct pyprofd_config
#define CONFIG_STRUCT_DISCOVERY     struct pyprofd_config
#define CONFIG_STRUCT_KUBERNETES    struct pyprofd_config
#define CONFIG_STRUCT_KUBE_TLS      struct pyprofd_config
#define CONFIG_STRUCT_STORAGE       struct pyprofd_config
#define CONFIG_STRUCT_SERVER        struct pyprofd_config
#define CONFIG_STRUCT_JOB           struct config_job
#define CONFIG_STRUCT_REMOTE        struct config_remote_write
#define CONFIG_STRUCT_BASIC_AUTH    struct config_remote_write
#define CONFIG_STRUCT_AUTHORIZATION struct config_remote_write
#define CONFIG_STRUCT_TLS           struct config_remote_write
#define CONFIG_STRUCT_QUEUE         struct config_remote_write

/* Where each type keeps its bounds and default. */
#define CONFIG_NUM_(lo_, hi_, def)     .lo_d = (lo_), .hi_d = (hi_), .def_d = (def)
#define CONFIG_UINT_(lo_, hi_, def)    .lo = (lo_), .hi = (hi_), .def_u = (def)
#define CONFIG_STR_DEF_(lo_, hi_, def) .lo = (lo_), .hi = (hi_), .def_s = (def)
#define CONFIG_NODEF_(lo_, hi_, def)   .lo = (lo_), .hi = (hi_)
#define CONFIG_VALUE_NUMBER            CONFIG_NUM_
#define CONFIG_VALUE_CPUS              CONFIG_NUM_
#define CONFIG_VALUE_UINT              CONFIG_UINT_
#define CONFIG_VALUE_DURATION          CONFIG_UINT_
#define CONFIG_VALUE_SIZE              CONFIG_UINT_
#define CONFIG_VALUE_BOOL              CONFIG_UINT_
#define CONFIG_VALUE_ENUM              CONFIG_UINT_
#define CONFIG_VALUE_STRING            CONFIG_STR_DEF_
#define CONFIG_VALUE_SENT              CONFIG_STR_DEF_
#define CONFIG_VALUE_SECRET            CONFIG_STR_DEF_
#define CONFIG_VALUE_FILE              CONFIG_STR_DEF_
#define CONFIG_VALUE_SECRET_FILE       CONFIG_STR_DEF_
#define CONFIG_VALUE_ABSPATH           CONFIG_STR_DEF_
#define CONFIG_VALUE_LISTEN            CONFIG_STR_DEF_
#define CONFIG_VALUE_URL               CONFIG_STR_DEF_
#define CONFIG_VALUE_LABELS            CONFIG_NODEF_
#define CONFIG_VALUE_HEADERS           CONFIG_NODEF_
#define CONFIG_VALUE_RELABEL           CONFIG_NODEF_

const struct config_key config_keys[CONFIG_NKEYS] = {
#define CONFIG_SUB(id, parent, name_, flags_, doc_)                                                \
    [CONFIG_K_##id] = {.section = CONFIG_S_##parent,                                               \
                       .name = (name_),                                                            \
                       .type = CONFIG_T_SECTION,                                                   \
                       .sub = CONFIG_S_##id,                                                       \
                       .flags = (flags_),                                                          \
                       .doc = (doc_)},
#define CONFIG_KEY(id, sec, name_, type_, field, lo_, hi_, def, arg_, flags_, reader_, doc_)       \
    [CONFIG_K_##id] = {.section = CONFIG_S_##sec,                                                  \
                       .name = (name_),                                                            \
                       .type = CONFIG_T_##type_,                                                   \
                       .offset = offsetof(CONFIG_STRUCT_##sec, field),                             \
                       CONFIG_VALUE_##type_(lo_, hi_, def),                                        \
                       .arg = (arg_),                                                              \
                       .flags = (flags_),                                                          \
                       .doc = (doc_)},
#include "config/config.def"
#undef CONFIG_SUB
#undef CONFIG_KEY
};

/* ENUM fields are written as int (config_walk.c) */
_Static_assert(sizeof(enum profile_mode) == sizeof(int), "enum size");
_Static_assert(sizeof(enum config_async_mode) == sizeof(int), "enum size");
_Static_assert(sizeof(enum config_native) == sizeof(int), "enum size");
_Static_assert(sizeof(enum idle_check) == sizeof(int), "enum size");
_Static_assert(sizeof(enum config_push_type) == sizeof(int), "enum size");
_Static_assert(sizeof(enum config_pyroscope_api) == sizeof(int), "enum size");

const struct config_key *config_schema_find(enum config_section s, const char *name)
{
    for (size_t i = 0; i < CONFIG_NKEYS; i++) {
        if (config_keys[i].section == s && strcmp(config_keys[i].name, name) == 0)
            return &config_keys[i];
    }
    return NULL;
}

const char *config_schema_section_name(enum config_section s)
{
    for (size_t i = 0; i < CONFIG_NKEYS; i++) {
        if (config_keys[i].type == CONFIG_T_SECTION && config_keys[i].sub == s)
            return config_keys[i].name;
    }
    return "";
}

bool config_schema_enum_name(const struct config_key *k, int i, char *buf, size_t len)
{
    const char *p = k->arg;
    for (; i > 0 && p; i--) {
        p = strchr(p, '|');
        if (p)
            p++;
    }
    if (!p)
        return false;
    size_t n = strcspn(p, "|");
    snprintf(buf, len, "%.*s", (int)n, p);
    return true;
}

bool config_seen_set(const struct config_seen *s, enum config_key_id id)
{
    const struct config_node *v = s->val[id];
    return v && !(v->kind == CONFIG_NODE_SCALAR && v->null);
}

void config_schema_defaults(enum config_section s, void *base)
{
    char *b = base;
    for (size_t i = 0; i < CONFIG_NKEYS; i++) {
        const struct config_key *k = &config_keys[i];
        if (k->section != s)
            continue;
        switch (k->type) {
        case CONFIG_T_SECTION:
            if (!(k->flags & (CONFIG_LIST | CONFIG_OPTIONAL)))
                config_schema_defaults(k->sub, base);
            break;
        case CONFIG_T_NUMBER:
        case CONFIG_T_CPUS:
            *(double *)(void *)(b + k->offset) = k->def_d;
            break;
        case CONFIG_T_UINT:
        case CONFIG_T_DURATION:
        case CONFIG_T_SIZE:
            *(uint64_t *)(void *)(b + k->offset) = k->def_u;
            break;
        case CONFIG_T_BOOL:
            *(bool *)(b + k->offset) = k->def_u != 0;
            break;
        case CONFIG_T_ENUM:
            *(int *)(void *)(b + k->offset) = (int)k->def_u;
            break;
        default: /* strings, maps and rules: config_schema_finish() */
            break;
        }
    }
}

int config_schema_finish(enum config_section s, void *base, const struct config_seen *seen)
{
    char *b = base;
    char err[64];
    for (size_t i = 0; i < CONFIG_NKEYS; i++) {
        const struct config_key *k = &config_keys[i];
        int rc = 0;
        if (k->section != s)
            continue;
        if (k->type == CONFIG_T_SECTION) {
            const struct config_node *m = seen ? seen->val[i] : NULL;
            if (k->flags & CONFIG_LIST)
                continue;
            if (!(k->flags & CONFIG_OPTIONAL) || (m && m->kind == CONFIG_NODE_MAP))
                rc = config_schema_finish(k->sub, base, seen);
        } else if (k->type == CONFIG_T_RELABEL) {
            struct relabel_rules **r = (void *)(b + k->offset);
            if (!*r)
                rc = relabel_compile(NULL, 0, r, err, sizeof(err));
        } else if (k->def_s) {
            char **str = (void *)(b + k->offset);
            if (!*str) {
                *str = alloc_strdup(k->def_s);
                rc = *str ? 0 : -ENOMEM;
            }
        }
        if (rc)
            return rc;
    }
    return 0;
}

void config_schema_inherit(struct config_job *j, const struct pyprofd_config *c, const bool *set)
{
    for (size_t i = 0; i < CONFIG_NKEYS; i++) {
        const struct config_key *k = &config_keys[i], *g;
        if (k->section != CONFIG_S_JOB || !(k->flags & CONFIG_INHERIT) || set[i])
            continue;
        g = config_schema_find(CONFIG_S_GLOBAL, k->name);
        PYPROFD_ASSERT(g && g->type == k->type);
        size_t size = k->type == CONFIG_T_ENUM                                 ? sizeof(int)
                      : k->type == CONFIG_T_NUMBER || k->type == CONFIG_T_CPUS ? sizeof(double)
                                                                               : sizeof(uint64_t);
        memcpy((char *)j + k->offset, (const char *)c + g->offset, size);
    }
}

void config_schema_release(enum config_section s, void *base)
{
    char *b = base;
    for (size_t i = 0; i < CONFIG_NKEYS; i++) {
        const struct config_key *k = &config_keys[i];
        void *field = b + k->offset;
        if (k->section != s)
            continue;
        switch (k->type) {
        case CONFIG_T_SECTION:
            if (!(k->flags & CONFIG_LIST))
                config_schema_release(k->sub, base);
            break;
        case CONFIG_T_STRING:
        case CONFIG_T_SENT:
        case CONFIG_T_SECRET:
        case CONFIG_T_FILE:
        case CONFIG_T_SECRET_FILE:
        case CONFIG_T_ABSPATH:
        case CONFIG_T_LISTEN:
        case CONFIG_T_URL:
            alloc_free(*(char **)field);
            *(char **)field = NULL;
            break;
        case CONFIG_T_LABELS:
        case CONFIG_T_HEADERS:
            labels_release(field);
            break;
        case CONFIG_T_RELABEL:
            relabel_free(*(struct relabel_rules **)field);
            *(struct relabel_rules **)field = NULL;
            break;
        default:
            break;
        }
    }
}
