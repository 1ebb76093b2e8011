/* SPDX-License-Identifier: MIT */
/*
 * config_print.c: config_print(), the effective config as YAML that loads
 * back into the same config. The keys, their order and how each value is
 * written come from the schema (config_schema.h); quoting and escaping are
 * libyaml's emitter's: strings are double-quoted scalars (control
 * characters, quotes, backslashes and the Unicode line breaks escaped), the
 * values that must be plain to load back (numbers, booleans, names,
 * durations, sizes) are plain.
 */
#include "base/compat.h"

#include <limits.h>

#include <yaml.h>

#include "base/alloc.h"
#include "config/config_schema.h"
#include "config/config_value.h"

struct config_print {
    yaml_emitter_t em;
    yaml_event_t ev;
    int rc; /* the first failure: -ENOMEM, -EIO */
};

/* Emits p->ev, just initialised (@ok: whether that worked). */
static void config_print_emit(struct config_print *p, int ok)
{
    if (!ok) {
        if (!p->rc)
            p->rc = -ENOMEM;
        return;
    }
    if (p->rc) {
        yaml_event_delete(&p->ev);
        return;
    }
    /* the emitter takes the event, also when it fails */
    if (!yaml_emitter_emit(&p->em, &p->ev))
        p->rc = p->em.error == YAML_MEMORY_ERROR ? -ENOMEM : -EIO;
}

static void config_print_scalar(struct config_print *p, const char *s, bool quoted)
{
    size_t len = strlen(s);
    yaml_scalar_style_t style = quoted ? YAML_DOUBLE_QUOTED_SCALAR_STYLE : YAML_PLAIN_SCALAR_STYLE;
    /* libyaml copies the value; its API is not const-correct */
    yaml_char_t *v = (yaml_char_t *)(uintptr_t)s;
    int ok = len <= INT_MAX;
    ok = ok && yaml_scalar_event_initialize(&p->ev, NULL, NULL, v, (int)len, 1, 1, style);
    config_print_emit(p, ok);
}

static void config_print_map(struct config_print *p, bool start)
{
    config_print_emit(p, start ? yaml_mapping_start_event_initialize(&p->ev, NULL, NULL, 1,
                                                                     YAML_BLOCK_MAPPING_STYLE)
                               : yaml_mapping_end_event_initialize(&p->ev));
}

static void config_print_seq(struct config_print *p, bool start, bool flow)
{
    config_print_emit(p, start ? yaml_sequence_start_event_initialize(
                                     &p->ev, NULL, NULL, 1,
                                     flow ? YAML_FLOW_SEQUENCE_STYLE : YAML_BLOCK_SEQUENCE_STYLE)
                               : yaml_sequence_end_event_initialize(&p->ev));
}

/* key: value, the value a plain scalar. */
static void config_print_plain(struct config_print *p, const char *key, const char *value)
{
    config_print_scalar(p, key, false);
    config_print_scalar(p, value, false);
}

/* key: "value" */
static void config_print_quoted(struct config_print *p, const char *key, const char *value)
{
    config_print_scalar(p, key, false);
    config_print_scalar(p, value, true);
}

/* The shortest of %.15g..%.17g that reads back exactly. */
static void config_print_number(double d, char *b, size_t len)
{
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(b, len, "%.*g", prec, d);
        if (strtod(b, NULL) == d)
            break;
    }
}

/* A label map; @secret: values shown as "<secret>". */
static void config_print_labels(struct config_print *p, const struct labels *ls, bool secret)
{
    config_print_map(p, true);
    for (size_t i = 0; i < ls->n; i++) {
        config_print_scalar(p, ls->v[i].name, true);
        config_print_scalar(p, secret ? "<secret>" : ls->v[i].value, true);
    }
    config_print_map(p, false);
}

static void config_print_relabel(struct config_print *p, const struct relabel_rules *r)
{
    char b[32];
    config_print_seq(p, true, false);
    for (size_t i = 0; i < relabel_count(r); i++) {
        const struct relabel_rule_spec *s = relabel_spec(r, i);
        config_print_map(p, true);
        config_print_plain(p, "action", relabel_action_name(s->action));
        if (s->nsource_labels) {
            config_print_scalar(p, "source_labels", false);
            config_print_seq(p, true, true);
            for (size_t j = 0; j < s->nsource_labels; j++)
                config_print_scalar(p, s->source_labels[j], true);
            config_print_seq(p, false, true);
        }
        config_print_quoted(p, "separator", s->separator);
        config_print_quoted(p, "regex", s->regex);
        if (s->target_label)
            config_print_quoted(p, "target_label", s->target_label);
        config_print_quoted(p, "replacement", s->replacement);
        if (s->modulus) {
            snprintf(b, sizeof(b), "%" PRIu64, s->modulus);
            config_print_plain(p, "modulus", b);
        }
        config_print_map(p, false);
    }
    config_print_seq(p, false, false);
}

static bool config_print_is_string(enum config_type t)
{
    return t >= CONFIG_T_STRING && t <= CONFIG_T_URL;
}

/*
 * Whether row @k of @base is left out: an unset string, an api of a Parca
 * endpoint, an optional section none of whose keys without a default is set.
 */
static bool config_print_skip(const struct config_key *k, const char *base)
{
    if (config_print_is_string(k->type))
        return !*(char *const *)(const void *)(base + k->offset);
    if (k->flags & CONFIG_PYROSCOPE)
        return ((const struct config_remote_write *)(const void *)base)->type !=
               CONFIG_PUSH_PYROSCOPE;
    if (k->type != CONFIG_T_SECTION || !(k->flags & CONFIG_OPTIONAL))
        return false;
    for (size_t i = 0; i < CONFIG_NKEYS; i++) {
        const struct config_key *o = &config_keys[i];
        if (o->section == k->sub && !o->def_s && !config_print_skip(o, base))
            return false;
    }
    return true;
}

static void config_print_value(struct config_print *p, const struct config_key *k, const char *base)
{
    const void *f = base + k->offset;
    char b[64] = "";
    char *url = NULL;
    switch (k->type) {
    case CONFIG_T_NUMBER:
    case CONFIG_T_CPUS:
        config_print_number(*(const double *)f, b, sizeof(b));
        break;
    case CONFIG_T_UINT:
        snprintf(b, sizeof(b), "%" PRIu64, *(const uint64_t *)f);
        break;
    case CONFIG_T_DURATION:
        config_format_duration(*(const uint64_t *)f, b, sizeof(b));
        break;
    case CONFIG_T_SIZE:
        config_format_size(*(const uint64_t *)f, b, sizeof(b));
        break;
    case CONFIG_T_BOOL:
        snprintf(b, sizeof(b), "%s", *(const bool *)f ? "true" : "false");
        break;
    case CONFIG_T_ENUM:
        if (!config_schema_enum_name(k, *(const int *)f, b, sizeof(b)))
            p->rc = p->rc ? p->rc : -EINVAL;
        break;
    case CONFIG_T_SECRET:
        config_print_scalar(p, "<secret>", true);
        return;
    case CONFIG_T_URL: {
        int rc = config_value_url_shown(*(char *const *)f, &url);
        if (rc)
            p->rc = p->rc ? p->rc : rc;
        else
            config_print_scalar(p, url, true);
        alloc_free(url);
        return;
    }
    case CONFIG_T_LABELS:
    case CONFIG_T_HEADERS:
        config_print_labels(p, f, k->type == CONFIG_T_HEADERS);
        return;
    case CONFIG_T_RELABEL:
        config_print_relabel(p, *(struct relabel_rules *const *)f);
        return;
    default: /* the other strings */
        config_print_scalar(p, *(char *const *)f, true);
        return;
    }
    config_print_scalar(p, b, false);
}

static void config_print_section(struct config_print *p, enum config_section s, const char *base);

/* A list section (profile_configs, remote_write) of @c. */
static void config_print_list(struct config_print *p, enum config_section s,
                              const struct pyprofd_config *c)
{
    size_t n = s == CONFIG_S_JOB ? c->njobs : c->nremote_write;
    config_print_seq(p, true, false);
    for (size_t i = 0; i < n; i++) {
        if (s == CONFIG_S_JOB)
            config_print_section(p, s, (const void *)&c->jobs[i]);
        else
            config_print_section(p, s, (const void *)&c->remote_write[i]);
    }
    config_print_seq(p, false, false);
}

static void config_print_section(struct config_print *p, enum config_section s, const char *base)
{
    config_print_map(p, true);
    for (size_t i = 0; i < CONFIG_NKEYS && !p->rc; i++) {
        const struct config_key *k = &config_keys[i];
        if (k->section != s || config_print_skip(k, base))
            continue;
        config_print_scalar(p, k->name, false);
        if (k->type != CONFIG_T_SECTION)
            config_print_value(p, k, base);
        else if (k->flags & CONFIG_LIST)
            config_print_list(p, k->sub, (const void *)base);
        else
            config_print_section(p, k->sub, base);
    }
    config_print_map(p, false);
}

int config_print(const struct pyprofd_config *c, FILE *out)
{
    struct config_print p = {.rc = 0};
    if (!yaml_emitter_initialize(&p.em))
        return -ENOMEM;
    yaml_emitter_set_output_file(&p.em, out);
    yaml_emitter_set_unicode(&p.em, 1);
    yaml_emitter_set_width(&p.em, -1); /* no folding of long values */
    config_print_emit(&p, yaml_stream_start_event_initialize(&p.ev, YAML_UTF8_ENCODING));
    config_print_emit(&p, yaml_document_start_event_initialize(&p.ev, NULL, NULL, NULL, 1));
    config_print_section(&p, CONFIG_S_ROOT, (const void *)c);
    config_print_emit(&p, yaml_document_end_event_initialize(&p.ev, 1));
    config_print_emit(&p, yaml_stream_end_event_initialize(&p.ev));
    yaml_emitter_delete(&p.em);
    if (!p.rc && ferror(out))
        p.rc = -EIO;
    return p.rc;
}
