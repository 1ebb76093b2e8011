/* SPDX-License-Identifier: MIT */
/*
 * config_yaml.c: libyaml events to a bounded node tree (see config_yaml.h).
 * The event parser is used rather than libyaml's document loader because the
 * loader has no caps and resolves aliases into shared nodes, which a walker
 * would visit again and again (the "billion laughs" shape); building the tree
 * ourselves lets every cap apply as the input is read.
 */
#include "base/compat.h"

#include <stdarg.h>

#include <yaml.h>

#include "base/alloc.h"
#include "base/utf8.h"
#include "config/config_yaml.h"

#define CONFIG_YAML_STR_(x) #x
#define CONFIG_YAML_STR(x)  CONFIG_YAML_STR_(x)

void config_errors_release(struct config_errors *e)
{
    if (!e)
        return;
    for (size_t i = 0; i < e->n; i++)
        alloc_free(e->v[i].msg);
    alloc_free(e->v);
    alloc_free(e->source);
    memset(e, 0, sizeof(*e));
}

int config_yaml_errors_source(struct config_errors *e, const char *name)
{
    char *s = alloc_strdup(name);
    if (!s)
        return -ENOMEM;
    alloc_free(e->source);
    e->source = s;
    return 0;
}

int config_yaml_error(struct config_errors *e, uint32_t line, uint32_t col, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    if (e->n > CONFIG_MAX_ERRORS)
        return 0;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (e->n == CONFIG_MAX_ERRORS) {
        snprintf(msg, sizeof(msg), "too many errors, stopping here");
        line = col = 0;
    }
    if (e->n == e->cap) {
        size_t ncap = e->cap ? e->cap * 2 : 8;
        struct config_error *nv = alloc_realloc(e->v, ncap * sizeof(*nv));
        if (!nv)
            return -ENOMEM;
        e->v = nv;
        e->cap = ncap;
    }
    struct config_error *err = &e->v[e->n];
    err->line = line;
    err->col = col;
    err->msg = alloc_strdup(msg);
    if (!err->msg)
        return -ENOMEM;
    e->n++;
    return 0;
}

/* Whether @a goes after @b: by line, then column; no position (line 0) last. */
static bool config_yaml_error_after(const struct config_error *a, const struct config_error *b)
{
    uint32_t la = a->line ? a->line : UINT32_MAX, lb = b->line ? b->line : UINT32_MAX;
    return la > lb || (la == lb && a->col > b->col);
}

void config_yaml_errors_sort(struct config_errors *e, size_t from)
{
    for (size_t i = from + 1; i < e->n; i++) {
        struct config_error cur = e->v[i];
        size_t j = i;
        while (j > from && config_yaml_error_after(&e->v[j - 1], &cur)) {
            e->v[j] = e->v[j - 1];
            j--;
        }
        e->v[j] = cur;
    }
}

const char *config_error_format(const struct config_errors *e, size_t i, char *buf, size_t len)
{
    const struct config_error *err = &e->v[i];
    const char *name = e->source ? e->source : "config";
    if (err->line)
        snprintf(buf, len, "%s:%" PRIu32 ":%" PRIu32 ": %s", name, err->line, err->col, err->msg);
    else
        snprintf(buf, len, "%s: %s", name, err->msg);
    return buf;
}

void config_yaml_free(struct config_node *n)
{
    if (!n)
        return;
    for (size_t i = 0; i < n->n; i++)
        config_yaml_free(n->kids[i]);
    alloc_free(n->kids);
    alloc_free(n->value);
    alloc_free(n);
}

struct config_yaml_parse {
    const struct config_load_opts *opts;
    struct config_errors *errs;
    struct config_node *root;
    struct config_node *stack[CONFIG_MAX_DEPTH];
    size_t depth;
    size_t nodes;
    int rc; /* first fatal status */
};

/* Records the error @msg at @m and stops the parse. */
static int config_yaml_fail(struct config_yaml_parse *p, const yaml_mark_t *m, const char *msg)
{
    int rc = config_yaml_error(p->errs, (uint32_t)m->line + 1, (uint32_t)m->column + 1, "%s", msg);
    p->rc = rc ? rc : -EINVAL;
    return p->rc;
}

static bool config_yaml_is_null(const char *v, size_t len, bool plain)
{
    if (!plain)
        return false;
    return len == 0 || strcmp(v, "~") == 0 || strcmp(v, "null") == 0 || strcmp(v, "Null") == 0 ||
           strcmp(v, "NULL") == 0;
}

/* Adds @n under the innermost open collection, or as the root. */
static int config_yaml_attach(struct config_yaml_parse *p, struct config_node *n,
                              const yaml_mark_t *m)
{
    if (p->depth == 0) {
        p->root = n;
        return 0;
    }
    struct config_node *parent = p->stack[p->depth - 1];
    size_t limit = parent->kind == CONFIG_NODE_MAP ? 2 * CONFIG_MAX_ITEMS : CONFIG_MAX_ITEMS;
    if (parent->n >= limit) {
        config_yaml_free(n);
        return config_yaml_fail(
            p, m, "more than " CONFIG_YAML_STR(CONFIG_MAX_ITEMS) " items in one list or mapping");
    }
    if (parent->n == parent->cap) {
        size_t ncap = parent->cap ? parent->cap * 2 : 8;
        /* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers */
        struct config_node **nk = alloc_realloc(parent->kids, ncap * sizeof(*nk));
        if (!nk) {
            config_yaml_free(n);
            p->rc = -ENOMEM;
            return p->rc;
        }
        parent->kids = nk;
        parent->cap = ncap;
    }
    parent->kids[parent->n++] = n;
    return 0;
}

static struct config_node *config_yaml_node(struct config_yaml_parse *p, enum config_node_kind k,
                                            const yaml_mark_t *m)
{
    struct config_node *n;
    if (++p->nodes > CONFIG_MAX_NODES) {
        config_yaml_fail(p, m, "more than " CONFIG_YAML_STR(CONFIG_MAX_NODES) " YAML nodes");
        return NULL;
    }
    n = alloc_calloc(1, sizeof(*n));
    if (!n) {
        p->rc = -ENOMEM;
        return NULL;
    }
    n->kind = k;
    n->line = (uint32_t)m->line + 1;
    n->col = (uint32_t)m->column + 1;
    return n;
}

/* Whether the next node attached is a mapping key (never expanded). */
static bool config_yaml_next_is_key(const struct config_yaml_parse *p)
{
    if (p->depth == 0)
        return false;
    const struct config_node *parent = p->stack[p->depth - 1];
    return parent->kind == CONFIG_NODE_MAP && parent->n % 2 == 0;
}

static int config_yaml_scalar(struct config_yaml_parse *p, const yaml_event_t *ev)
{
    const yaml_mark_t *m = &ev->start_mark;
    const char *raw = (const char *)ev->data.scalar.value;
    size_t len = ev->data.scalar.length;
    bool plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
    struct config_node *n;
    if (len > CONFIG_MAX_SCALAR)
        return config_yaml_fail(p, m,
                                "value longer than " CONFIG_YAML_STR(CONFIG_MAX_SCALAR) " bytes");
    if (memchr(raw, '\0', len))
        return config_yaml_fail(p, m, "value contains a NUL character");
    n = config_yaml_node(p, CONFIG_NODE_SCALAR, m);
    if (!n)
        return p->rc;
    n->plain = plain;
    n->null = config_yaml_is_null(raw, len, plain);
    if (p->opts && p->opts->expand_env && !config_yaml_next_is_key(p) && memchr(raw, '$', len)) {
        int rc = config_expand_env(raw, p->opts, &n->value, NULL);
        n->expanded = true;
        if (rc == -EINVAL || rc == -E2BIG) {
            config_yaml_free(n);
            /* Not fatal: report and keep walking the rest of the file. */
            rc = config_yaml_error(p->errs, (uint32_t)m->line + 1, (uint32_t)m->column + 1, "%s",
                                   rc == -EINVAL ? "unterminated '${' in value"
                                                 : "value too long after ${VAR} expansion");
            if (rc) {
                p->rc = rc;
                return rc;
            }
            if (p->rc == 0)
                p->rc = -EINVAL;
            n = config_yaml_node(p, CONFIG_NODE_SCALAR, m);
            if (!n)
                return p->rc;
            n->value = alloc_strdup("");
        } else if (rc) {
            config_yaml_free(n);
            p->rc = rc;
            return rc;
        }
        if (n->value && !utf8_valid(n->value, strlen(n->value))) {
            config_yaml_free(n);
            return config_yaml_fail(p, m, "value is not valid UTF-8 after ${VAR} expansion");
        }
    } else {
        n->value = alloc_strndup(raw, len);
    }
    if (!n->value) {
        config_yaml_free(n);
        p->rc = -ENOMEM;
        return p->rc;
    }
    n->len = strlen(n->value);
    return config_yaml_attach(p, n, m);
}

static int config_yaml_open(struct config_yaml_parse *p, const yaml_event_t *ev,
                            enum config_node_kind k)
{
    const yaml_mark_t *m = &ev->start_mark;
    struct config_node *n;
    int rc;
    if (p->depth >= CONFIG_MAX_DEPTH)
        return config_yaml_fail(p, m,
                                "nesting deeper than " CONFIG_YAML_STR(CONFIG_MAX_DEPTH) " levels");
    n = config_yaml_node(p, k, m);
    if (!n)
        return p->rc;
    rc = config_yaml_attach(p, n, m);
    if (rc)
        return rc;
    p->stack[p->depth++] = n;
    return 0;
}

/* Handles one event; nonzero stops the parse (p->rc tells how). */
static int config_yaml_event(struct config_yaml_parse *p, const yaml_event_t *ev, int *docs)
{
    switch (ev->type) {
    case YAML_DOCUMENT_START_EVENT:
        if (++*docs > 1)
            return config_yaml_fail(p, &ev->start_mark, "only one YAML document is allowed");
        return 0;
    case YAML_SCALAR_EVENT:
        return config_yaml_scalar(p, ev);
    case YAML_SEQUENCE_START_EVENT:
        return config_yaml_open(p, ev, CONFIG_NODE_SEQ);
    case YAML_MAPPING_START_EVENT:
        return config_yaml_open(p, ev, CONFIG_NODE_MAP);
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
        if (p->depth)
            p->depth--;
        return 0;
    case YAML_ALIAS_EVENT: {
        char msg[300];
        snprintf(msg, sizeof(msg), "YAML aliases ('*%.200s') are not supported",
                 (const char *)ev->data.alias.anchor);
        return config_yaml_fail(p, &ev->start_mark, msg);
    }
    default:
        return 0;
    }
}

int config_yaml_parse(const char *buf, size_t len, const struct config_load_opts *opts,
                      struct config_node **root, struct config_errors *errs)
{
    yaml_parser_t parser;
    struct config_yaml_parse p = {.opts = opts, .errs = errs};
    int docs = 0;
    bool done = false;
    *root = NULL;
    if (!yaml_parser_initialize(&parser))
        return -ENOMEM;
    yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
    while (!done) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev)) {
            if (parser.error == YAML_MEMORY_ERROR) {
                p.rc = -ENOMEM;
                break;
            }
            char what[512];
            snprintf(what, sizeof(what), "invalid YAML: %s%s%s",
                     parser.problem ? parser.problem : "error", parser.context ? " " : "",
                     parser.context ? parser.context : "");
            config_yaml_fail(&p, &parser.problem_mark, what);
            break;
        }
        done = ev.type == YAML_STREAM_END_EVENT;
        int rc = config_yaml_event(&p, &ev, &docs);
        yaml_event_delete(&ev);
        /* An expansion error (p.rc set, rc 0) lets the parse go on. */
        if (rc)
            break;
    }
    yaml_parser_delete(&parser);
    if (p.rc) {
        config_yaml_free(p.root);
        return p.rc;
    }
    *root = p.root;
    return 0;
}
