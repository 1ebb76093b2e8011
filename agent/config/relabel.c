/* SPDX-License-Identifier: MIT */
/*
 * relabel.c: Prometheus relabeling (see relabel.h) with PCRE2. Each rule keeps
 * an owned copy of its spec with the defaults filled in (for printing and for
 * the "only these fields" checks, which compare values as Prometheus does) and
 * its regex compiled as ^(?s:REGEX)$. PCRE2 allocates through base/alloc.h, so
 * its memory counts against the daemon's budget.
 */
#include "base/compat.h"

#include <md5.h> /* libmd */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/utf8.h"
#include "config/relabel.h"

#define RELABEL_DEFAULT_SEPARATOR   ";"
#define RELABEL_DEFAULT_REGEX       "(.*)"
#define RELABEL_DEFAULT_REPLACEMENT "$1"

#define RELABEL_PCRE2_OPTIONS                                                                      \
    (PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | PCRE2_DOLLAR_ENDONLY | PCRE2_NEVER_BACKSLASH_C)

struct relabel_rule {
    struct relabel_rule_spec spec; /* strings owned, defaults filled in */
    char **source_labels;          /* owned; spec.source_labels points here */
    pcre2_code *re;
    bool default_regex;
};

struct relabel_rules {
    struct relabel_rule *v;
    size_t n;
    uint32_t max_pairs; /* ovector pairs a match of any rule needs */
    pcre2_general_context *gctx;
    pcre2_match_context *mctx;
};

static const char *const relabel_action_names[] = {
    [RELABEL_REPLACE] = "replace",     [RELABEL_KEEP] = "keep",
    [RELABEL_DROP] = "drop",           [RELABEL_KEEPEQUAL] = "keepequal",
    [RELABEL_DROPEQUAL] = "dropequal", [RELABEL_HASHMOD] = "hashmod",
    [RELABEL_LABELMAP] = "labelmap",   [RELABEL_LABELDROP] = "labeldrop",
    [RELABEL_LABELKEEP] = "labelkeep", [RELABEL_LOWERCASE] = "lowercase",
    [RELABEL_UPPERCASE] = "uppercase",
};

int relabel_action_parse(const char *name, enum relabel_action *out)
{
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(relabel_action_names); i++) {
        if (strcasecmp(name, relabel_action_names[i]) == 0) {
            *out = (enum relabel_action)i;
            return 0;
        }
    }
    return -EINVAL;
}

const char *relabel_action_name(enum relabel_action a)
{
    if ((size_t)a < PYPROFD_ARRAY_SIZE(relabel_action_names))
        return relabel_action_names[a];
    return "unknown";
}

/* ---- PCRE2 glue ---- */

static void *relabel_pcre_malloc(PCRE2_SIZE size, void *data)
{
    (void)data;
    return alloc_malloc(size);
}

static void relabel_pcre_free(void *ptr, void *data)
{
    (void)data;
    alloc_free(ptr);
}

/*
 * Compiles @regex anchored. The user's pattern is first compiled on its own so
 * that an error offset points into what the user wrote. Returns 0, -EINVAL
 * (message in @err) or -ENOMEM.
 */
static int relabel_compile_regex(const char *regex, pcre2_general_context *gctx, pcre2_code **out,
                                 char *err, size_t errlen)
{
    int rc = 0, ecode = 0;
    PCRE2_SIZE eoff = 0;
    pcre2_code *alone = NULL;
    char *wrapped = NULL;
    size_t len = strlen(regex);
    pcre2_compile_context *cctx = pcre2_compile_context_create(gctx);
    *out = NULL;
    if (!cctx) {
        rc = -ENOMEM;
        goto out;
    }
    if (len > RELABEL_MAX_REGEX) {
        snprintf(err, errlen, "regex is longer than %d bytes", RELABEL_MAX_REGEX);
        rc = -EINVAL;
        goto out;
    }
    pcre2_set_max_pattern_length(cctx, RELABEL_MAX_REGEX + 16);
    pcre2_set_parens_nest_limit(cctx, 64);
    alone = pcre2_compile((PCRE2_SPTR)regex, len, RELABEL_PCRE2_OPTIONS, &ecode, &eoff, cctx);
    if (alone) {
        wrapped = alloc_malloc(len + 16);
        if (!wrapped) {
            rc = -ENOMEM;
            goto out;
        }
        snprintf(wrapped, len + 16, "^(?s:%s)$", regex);
        *out = pcre2_compile((PCRE2_SPTR)wrapped, PCRE2_ZERO_TERMINATED, RELABEL_PCRE2_OPTIONS,
                             &ecode, &eoff, cctx);
        eoff = eoff > 5 ? eoff - 5 : 0;
    }
    if (!*out) {
        PCRE2_UCHAR msg[256];
        if (ecode == PCRE2_ERROR_HEAP_FAILED || ecode == PCRE2_ERROR_NOMEMORY) {
            rc = -ENOMEM;
            goto out;
        }
        if (pcre2_get_error_message(ecode, msg, sizeof(msg)) < 0)
            snprintf((char *)msg, sizeof(msg), "error %d", ecode);
        snprintf(err, errlen, "invalid regex '%s': %s at offset %zu", regex, (const char *)msg,
                 (size_t)(eoff > len ? len : eoff));
        rc = -EINVAL;
    }
out:
    pcre2_code_free(alone);
    alloc_free(wrapped);
    pcre2_compile_context_free(cctx);
    return rc;
}

/* ---- validation ---- */

static bool relabel_word_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/*
 * Prometheus' check for target_label (replace) and replacement (labelmap): a
 * label name in which "$name" / "${name}" references may stand for parts, i.e.
 * ^(?:(?:[a-zA-Z_]|\$(?:\{\w+\}|\w+))+\w*)+$.
 */
static bool relabel_valid_name_template(const char *s)
{
    const char *p = s;
    if (!*p)
        return false;
    while (*p) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_') {
            p++;
        } else if (*p == '$' && p[1] == '{') {
            const char *q = p + 2;
            while (relabel_word_char(*q))
                q++;
            if (q == p + 2 || *q != '}')
                return false;
            p = q + 1;
        } else if (*p == '$' && relabel_word_char(p[1])) {
            p++;
        } else {
            return false;
        }
        while (relabel_word_char(*p))
            p++;
    }
    return true;
}

static bool relabel_is(const char *v, const char *dflt)
{
    return !v || strcmp(v, dflt) == 0;
}

/* The checks of Prometheus' relabel.Config.Validate, field by field. */
static int relabel_check_fields(const struct relabel_rule_spec *s, enum relabel_field *field,
                                char *err, size_t errlen)
{
    enum relabel_action a = s->action;
    const char *an = relabel_action_name(a);
    bool needs_target = a == RELABEL_REPLACE || a == RELABEL_HASHMOD || a == RELABEL_LOWERCASE ||
                        a == RELABEL_UPPERCASE || a == RELABEL_KEEPEQUAL || a == RELABEL_DROPEQUAL;
    bool value_only = a == RELABEL_LOWERCASE || a == RELABEL_UPPERCASE || a == RELABEL_KEEPEQUAL ||
                      a == RELABEL_DROPEQUAL;
    *field = RELABEL_FIELD_NONE;
    if ((size_t)a >= PYPROFD_ARRAY_SIZE(relabel_action_names)) {
        *field = RELABEL_FIELD_ACTION;
        snprintf(err, errlen, "unknown relabel action %d", (int)a);
        return -EINVAL;
    }
    for (size_t i = 0; i < s->nsource_labels; i++) {
        if (!labels_valid_name(s->source_labels[i])) {
            *field = RELABEL_FIELD_SOURCE_LABELS;
            snprintf(err, errlen, "'%s' is not a valid label name", s->source_labels[i]);
            return -EINVAL;
        }
    }
    if (a == RELABEL_HASHMOD && s->modulus == 0) {
        *field = RELABEL_FIELD_NONE;
        snprintf(err, errlen, "hashmod requires a non-zero 'modulus'");
        return -EINVAL;
    }
    if (needs_target && (!s->target_label || !*s->target_label)) {
        *field = RELABEL_FIELD_NONE;
        snprintf(err, errlen, "%s requires 'target_label'", an);
        return -EINVAL;
    }
    if (needs_target) {
        bool ok = a == RELABEL_REPLACE ? relabel_valid_name_template(s->target_label)
                                       : labels_valid_name(s->target_label);
        if (!ok) {
            *field = RELABEL_FIELD_TARGET_LABEL;
            snprintf(err, errlen, "'%s' is not a valid target_label for %s", s->target_label, an);
            return -EINVAL;
        }
    }
    if (value_only && !relabel_is(s->replacement, RELABEL_DEFAULT_REPLACEMENT)) {
        *field = RELABEL_FIELD_REPLACEMENT;
        snprintf(err, errlen, "'replacement' cannot be set for %s", an);
        return -EINVAL;
    }
    if (a == RELABEL_LABELMAP &&
        !relabel_valid_name_template(s->replacement ? s->replacement
                                                    : RELABEL_DEFAULT_REPLACEMENT)) {
        *field = RELABEL_FIELD_REPLACEMENT;
        snprintf(err, errlen, "'%s' is not a valid replacement for labelmap", s->replacement);
        return -EINVAL;
    }
    if (a == RELABEL_KEEPEQUAL || a == RELABEL_DROPEQUAL) {
        if (!relabel_is(s->regex, RELABEL_DEFAULT_REGEX))
            *field = RELABEL_FIELD_REGEX;
        else if (!relabel_is(s->separator, RELABEL_DEFAULT_SEPARATOR))
            *field = RELABEL_FIELD_SEPARATOR;
        else if (s->modulus)
            *field = RELABEL_FIELD_MODULUS;
        if (*field != RELABEL_FIELD_NONE) {
            snprintf(err, errlen, "%s allows only 'source_labels' and 'target_label'", an);
            return -EINVAL;
        }
    }
    if (a == RELABEL_LABELDROP || a == RELABEL_LABELKEEP) {
        if (s->nsource_labels)
            *field = RELABEL_FIELD_SOURCE_LABELS;
        else if (s->target_label)
            *field = RELABEL_FIELD_TARGET_LABEL;
        else if (!relabel_is(s->separator, RELABEL_DEFAULT_SEPARATOR))
            *field = RELABEL_FIELD_SEPARATOR;
        else if (!relabel_is(s->replacement, RELABEL_DEFAULT_REPLACEMENT))
            *field = RELABEL_FIELD_REPLACEMENT;
        else if (s->modulus)
            *field = RELABEL_FIELD_MODULUS;
        if (*field != RELABEL_FIELD_NONE) {
            snprintf(err, errlen, "%s allows only 'regex'", an);
            return -EINVAL;
        }
    }
    return 0;
}

static pcre2_general_context *relabel_gctx_new(void)
{
    return pcre2_general_context_create(relabel_pcre_malloc, relabel_pcre_free, NULL);
}

int relabel_validate(const struct relabel_rule_spec *spec, enum relabel_field *field, char *err,
                     size_t errlen)
{
    int rc;
    pcre2_code *re = NULL;
    pcre2_general_context *gctx = relabel_gctx_new();
    *field = RELABEL_FIELD_NONE;
    if (errlen)
        err[0] = '\0';
    if (!gctx)
        return -ENOMEM;
    rc = relabel_check_fields(spec, field, err, errlen);
    if (rc == 0) {
        rc = relabel_compile_regex(spec->regex ? spec->regex : RELABEL_DEFAULT_REGEX, gctx, &re,
                                   err, errlen);
        if (rc == -EINVAL)
            *field = RELABEL_FIELD_REGEX;
    }
    pcre2_code_free(re);
    pcre2_general_context_free(gctx);
    return rc;
}

/* ---- compile ---- */

static void relabel_rule_release(struct relabel_rule *r)
{
    for (size_t i = 0; r->source_labels && i < r->spec.nsource_labels; i++)
        alloc_free(r->source_labels[i]);
    alloc_free(r->source_labels);
    alloc_free((char *)r->spec.separator);
    alloc_free((char *)r->spec.regex);
    alloc_free((char *)r->spec.target_label);
    alloc_free((char *)r->spec.replacement);
    pcre2_code_free(r->re);
    memset(r, 0, sizeof(*r));
}

static int relabel_rule_copy(struct relabel_rule *r, const struct relabel_rule_spec *s)
{
    r->spec.action = s->action;
    r->spec.modulus = s->modulus;
    if (s->nsource_labels) {
        r->source_labels = alloc_calloc(s->nsource_labels, sizeof(char *));
        if (!r->source_labels)
            return -ENOMEM;
        r->spec.nsource_labels = s->nsource_labels;
        for (size_t i = 0; i < s->nsource_labels; i++) {
            r->source_labels[i] = alloc_strdup(s->source_labels[i]);
            if (!r->source_labels[i])
                return -ENOMEM;
        }
        r->spec.source_labels = (const char *const *)r->source_labels;
    }
    r->default_regex = relabel_is(s->regex, RELABEL_DEFAULT_REGEX);
    r->spec.separator = alloc_strdup(s->separator ? s->separator : RELABEL_DEFAULT_SEPARATOR);
    r->spec.regex = alloc_strdup(s->regex ? s->regex : RELABEL_DEFAULT_REGEX);
    r->spec.replacement =
        alloc_strdup(s->replacement ? s->replacement : RELABEL_DEFAULT_REPLACEMENT);
    if (s->target_label)
        r->spec.target_label = alloc_strdup(s->target_label);
    if (!r->spec.separator || !r->spec.regex || !r->spec.replacement ||
        (s->target_label && !r->spec.target_label))
        return -ENOMEM;
    return 0;
}

int relabel_compile(const struct relabel_rule_spec *specs, size_t n, struct relabel_rules **out,
                    char *err, size_t errlen)
{
    int rc = 0;
    struct relabel_rules *r = alloc_calloc(1, sizeof(*r));
    *out = NULL;
    if (errlen)
        err[0] = '\0';
    if (!r)
        return -ENOMEM;
    r->max_pairs = 1;
    r->gctx = relabel_gctx_new();
    r->mctx = r->gctx ? pcre2_match_context_create(r->gctx) : NULL;
    if (!r->mctx) {
        rc = -ENOMEM;
        goto out;
    }
    pcre2_set_match_limit(r->mctx, RELABEL_MATCH_LIMIT);
    pcre2_set_depth_limit(r->mctx, RELABEL_DEPTH_LIMIT);
    pcre2_set_heap_limit(r->mctx, RELABEL_HEAP_LIMIT_KIB);
    if (n) {
        r->v = alloc_calloc(n, sizeof(r->v[0]));
        if (!r->v) {
            rc = -ENOMEM;
            goto out;
        }
    }
    for (size_t i = 0; i < n; i++) {
        char msg[512];
        enum relabel_field field = RELABEL_FIELD_NONE;
        struct relabel_rule *rule = &r->v[i];
        r->n = i + 1;
        rc = relabel_check_fields(&specs[i], &field, msg, sizeof(msg));
        if (rc == 0)
            rc = relabel_rule_copy(rule, &specs[i]);
        if (rc == 0)
            rc = relabel_compile_regex(rule->spec.regex, r->gctx, &rule->re, msg, sizeof(msg));
        if (rc == -EINVAL)
            snprintf(err, errlen, "rule %zu: %s", i + 1, msg);
        if (rc)
            goto out;
        uint32_t groups = 0;
        if (pcre2_pattern_info(rule->re, PCRE2_INFO_CAPTURECOUNT, &groups) == 0 &&
            groups + 1 > r->max_pairs)
            r->max_pairs = groups + 1;
    }
    *out = r;
    r = NULL;
out:
    relabel_free(r);
    return rc;
}

void relabel_free(struct relabel_rules *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++)
        relabel_rule_release(&r->v[i]);
    alloc_free(r->v);
    pcre2_match_context_free(r->mctx);
    pcre2_general_context_free(r->gctx);
    alloc_free(r);
}

size_t relabel_count(const struct relabel_rules *r)
{
    return r ? r->n : 0;
}

const struct relabel_rule_spec *relabel_spec(const struct relabel_rules *r, size_t i)
{
    return r && i < r->n ? &r->v[i].spec : NULL;
}

/* ---- apply ---- */

/*
 * A value being built, bounded by RELABEL_MAX_VALUE: past the bound it is
 * marked too long (sticky) instead of failing, and the rule skips it.
 */
struct relabel_buf {
    struct buf b;
    bool too_long;
};

static void relabel_buf_init(struct relabel_buf *v)
{
    buf_init(&v->b, RELABEL_MAX_VALUE);
    v->too_long = false;
}

static int relabel_put(struct relabel_buf *v, const char *s, size_t n)
{
    if (v->too_long)
        return 0;
    int rc = buf_add(&v->b, s, n);
    if (rc == -E2BIG) {
        v->too_long = true;
        rc = 0;
    }
    return rc;
}

static void relabel_reset(struct relabel_buf *v)
{
    buf_reset(&v->b);
    v->too_long = false;
}

/* The value, NUL-terminated ("" when empty). */
static const char *relabel_str(const struct relabel_buf *v)
{
    return buf_str(&v->b);
}

static size_t relabel_len(const struct relabel_buf *v)
{
    return buf_len(&v->b);
}

/* The joined values of the rule's source labels (missing ones read as ""). */
static int relabel_join(const struct relabel_rule *rule, const struct labels *ls,
                        struct relabel_buf *b)
{
    int rc = 0;
    size_t seplen = strlen(rule->spec.separator);
    for (size_t i = 0; rc == 0 && i < rule->spec.nsource_labels; i++) {
        const char *v = labels_get(ls, rule->spec.source_labels[i]);
        if (i)
            rc = relabel_put(b, rule->spec.separator, seplen);
        if (rc == 0 && v)
            rc = relabel_put(b, v, strlen(v));
    }
    return rc;
}

/*
 * 1 when @subject matches (captures left in @md, *@npairs set), 0 when not,
 * -ENOMEM. Hitting a limit, or any other matching error, counts as no match
 * (relabel.h).
 */
static int relabel_match(const struct relabel_rules *r, const struct relabel_rule *rule,
                         const char *subject, size_t len, pcre2_match_data *md, int *npairs)
{
    int rc = pcre2_match(rule->re, (PCRE2_SPTR)subject, len, 0, 0, md, r->mctx);
    *npairs = rc;
    if (rc == PCRE2_ERROR_NOMEMORY)
        return -ENOMEM;
    return rc > 0;
}

/*
 * Go's regexp.Expand: "$$" is "$"; "$name" takes the longest run of
 * [A-Za-z0-9_]; "${name}" needs the closing brace; a name of digits without a
 * leading zero (below 1e8) is a group number, anything else a group name;
 * an unknown or unset group expands to ""; a "$" not starting a valid
 * reference is kept literally.
 */
static int relabel_expand(const struct relabel_rule *rule, const char *tmpl, const char *subject,
                          pcre2_match_data *md, int npairs, struct relabel_buf *out)
{
    const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
    const char *p = tmpl;
    int rc = relabel_put(out, "", 0);
    while (rc == 0 && *p) {
        const char *dollar = strchr(p, '$');
        if (!dollar)
            return relabel_put(out, p, strlen(p));
        rc = relabel_put(out, p, (size_t)(dollar - p));
        p = dollar + 1;
        if (rc)
            break;
        if (*p == '$') {
            rc = relabel_put(out, "$", 1);
            p++;
            continue;
        }
        bool brace = *p == '{';
        const char *name = brace ? p + 1 : p, *end = name;
        while (relabel_word_char(*end))
            end++;
        if (end == name || (brace && *end != '}')) {
            rc = relabel_put(out, "$", 1);
            continue;
        }
        size_t nlen = (size_t)(end - name);
        p = brace ? end + 1 : end;
        long num = 0;
        for (size_t i = 0; i < nlen; i++) {
            if (name[i] < '0' || name[i] > '9' || num >= 100000000L) {
                num = -1;
                break;
            }
            num = num * 10 + (name[i] - '0');
        }
        if (name[0] == '0' && nlen > 1)
            num = -1;
        if (num < 0) {
            char nm[128];
            if (nlen >= sizeof(nm))
                continue;
            memcpy(nm, name, nlen);
            nm[nlen] = '\0';
            int g = pcre2_substring_number_from_name(rule->re, (PCRE2_SPTR)nm);
            num = g > 0 ? g : -1;
        }
        if (num < 0 || num >= npairs || ov[2 * num] == PCRE2_UNSET)
            continue;
        rc = relabel_put(out, subject + ov[2 * num], ov[2 * num + 1] - ov[2 * num]);
    }
    return rc;
}

static int relabel_set_or_del(struct labels *ls, const char *name, const struct relabel_buf *v)
{
    if (relabel_len(v) == 0) {
        labels_del(ls, name);
        return 0;
    }
    return labels_setn(ls, name, relabel_str(v), relabel_len(v));
}

static bool relabel_has_dollar(const char *s)
{
    return s && strchr(s, '$') != NULL;
}

/* Scratch buffers of one relabel_apply() call. */
struct relabel_scratch {
    struct relabel_buf val, target, res;
    pcre2_match_data *md;
};

static int relabel_replace(const struct relabel_rules *r, const struct relabel_rule *rule,
                           struct labels *ls, struct relabel_scratch *s)
{
    int npairs;
    const struct relabel_rule_spec *sp = &rule->spec;
    /* Prometheus' fast path: a static label from target_label + replacement. */
    if (relabel_len(&s->val) == 0 && rule->default_regex && !relabel_has_dollar(sp->target_label) &&
        !relabel_has_dollar(sp->replacement)) {
        if (!*sp->replacement) {
            labels_del(ls, sp->target_label);
            return 0;
        }
        return labels_set(ls, sp->target_label, sp->replacement);
    }
    int rc = relabel_match(r, rule, relabel_str(&s->val), relabel_len(&s->val), s->md, &npairs);
    if (rc <= 0)
        return rc;
    relabel_reset(&s->target);
    relabel_reset(&s->res);
    rc = relabel_expand(rule, sp->target_label, relabel_str(&s->val), s->md, npairs, &s->target);
    if (rc == 0)
        rc = relabel_expand(rule, sp->replacement, relabel_str(&s->val), s->md, npairs, &s->res);
    if (rc || s->target.too_long || s->res.too_long || !labels_valid_name(relabel_str(&s->target)))
        return rc;
    return relabel_set_or_del(ls, relabel_str(&s->target), &s->res);
}

static int relabel_labelmap(const struct relabel_rules *r, const struct relabel_rule *rule,
                            struct labels *ls, struct relabel_scratch *s)
{
    struct labels snap;
    int rc = 0;
    labels_init(&snap);
    rc = labels_copy(&snap, ls); /* the rule reads the labels as they were */
    for (size_t i = 0; rc == 0 && i < snap.n; i++) {
        const char *name = snap.v[i].name;
        int npairs;
        rc = relabel_match(r, rule, name, strlen(name), s->md, &npairs);
        if (rc <= 0)
            continue;
        relabel_reset(&s->res);
        rc = relabel_expand(rule, rule->spec.replacement, name, s->md, npairs, &s->res);
        if (rc == 0 && !s->res.too_long && labels_valid_name(relabel_str(&s->res)))
            rc = labels_set(ls, relabel_str(&s->res), snap.v[i].value);
    }
    labels_release(&snap);
    return rc;
}

static int relabel_labeldrop(const struct relabel_rules *r, const struct relabel_rule *rule,
                             struct labels *ls, struct relabel_scratch *s, bool keep)
{
    for (size_t i = ls->n; i-- > 0;) {
        const char *name = ls->v[i].name;
        int npairs;
        int m = relabel_match(r, rule, name, strlen(name), s->md, &npairs);
        if (m < 0)
            return m;
        if ((m > 0) != keep)
            labels_del(ls, name);
    }
    return 0;
}

static int relabel_case(const struct relabel_rule *rule, struct labels *ls,
                        struct relabel_scratch *s, bool upper)
{
    /* into res: the same length as val, so within the bound */
    const char *v = relabel_str(&s->val);
    int rc = 0;
    relabel_reset(&s->res);
    for (size_t i = 0; rc == 0 && i < relabel_len(&s->val); i++) {
        char c = v[i];
        if (upper && c >= 'a' && c <= 'z')
            c = (char)(c - 'a' + 'A');
        else if (!upper && c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        rc = relabel_put(&s->res, &c, 1);
    }
    return rc ? rc : relabel_set_or_del(ls, rule->spec.target_label, &s->res);
}

/*
 * As Prometheus: the MD5 of the joined value, its last 8 bytes read as a
 * big-endian uint64, modulo the modulus (MD5 from libmd).
 */
static int relabel_hashmod(const struct relabel_rule *rule, struct labels *ls,
                           const struct relabel_buf *val)
{
    uint8_t d[MD5_DIGEST_LENGTH];
    uint64_t h = 0;
    char num[24];
    MD5_CTX ctx;
    MD5Init(&ctx);
    MD5Update(&ctx, (const uint8_t *)relabel_str(val), relabel_len(val));
    MD5Final(d, &ctx);
    for (size_t i = 8; i < MD5_DIGEST_LENGTH; i++)
        h = h << 8 | d[i];
    snprintf(num, sizeof(num), "%" PRIu64, h % rule->spec.modulus);
    return labels_set(ls, rule->spec.target_label, num);
}

/*
 * The joined value as valid UTF-8. It is already, through labels.h (values
 * are made valid when set) and the config (separators are valid): this is
 * for a set built by hand, so that a rule still sees, and a regex in UTF
 * mode still matches, the text the labels will carry (U+FFFD where bytes
 * were invalid) rather than failing on the bytes (relabel.h).
 */
static int relabel_valid_utf8(struct relabel_buf *val)
{
    if (utf8_valid(relabel_str(val), relabel_len(val)))
        return 0;
    size_t need = utf8_sanitized_len(relabel_str(val), relabel_len(val), NULL);
    char *p = alloc_malloc(need + 1);
    if (!p)
        return -ENOMEM;
    (void)utf8_sanitize(p, need + 1, relabel_str(val), relabel_len(val));
    relabel_reset(val);
    int rc = relabel_put(val, p, need); /* over the bound: too long */
    alloc_free(p);
    return rc;
}

/* Applies one rule; *keep false when it drops the target. */
static int relabel_one(const struct relabel_rules *r, const struct relabel_rule *rule,
                       struct labels *ls, struct relabel_scratch *s, bool *keep)
{
    int npairs;
    int rc;
    relabel_reset(&s->val);
    rc = relabel_join(rule, ls, &s->val);
    if (rc == 0 && !s->val.too_long)
        rc = relabel_valid_utf8(&s->val);
    if (rc)
        return rc;
    if (s->val.too_long) {
        /* Source values beyond RELABEL_MAX_VALUE: the rule cannot see them. */
        return 0;
    }
    switch (rule->spec.action) {
    case RELABEL_REPLACE:
        return relabel_replace(r, rule, ls, s);
    case RELABEL_KEEP:
    case RELABEL_DROP:
        rc = relabel_match(r, rule, relabel_str(&s->val), relabel_len(&s->val), s->md, &npairs);
        if (rc < 0)
            return rc;
        *keep = (rc > 0) == (rule->spec.action == RELABEL_KEEP);
        return 0;
    case RELABEL_KEEPEQUAL:
    case RELABEL_DROPEQUAL: {
        const char *cur = labels_get(ls, rule->spec.target_label);
        bool eq = strcmp(cur ? cur : "", relabel_str(&s->val)) == 0;
        *keep = rule->spec.action == RELABEL_KEEPEQUAL ? eq : !eq;
        return 0;
    }
    case RELABEL_HASHMOD:
        return relabel_hashmod(rule, ls, &s->val);
    case RELABEL_LABELMAP:
        return relabel_labelmap(r, rule, ls, s);
    case RELABEL_LABELDROP:
        return relabel_labeldrop(r, rule, ls, s, false);
    case RELABEL_LABELKEEP:
        return relabel_labeldrop(r, rule, ls, s, true);
    case RELABEL_LOWERCASE:
        return relabel_case(rule, ls, s, false);
    case RELABEL_UPPERCASE:
        return relabel_case(rule, ls, s, true);
    }
    return 0;
}

int relabel_apply(const struct relabel_rules *r, struct labels *ls, bool *keep)
{
    struct relabel_scratch s = {0};
    int rc = 0;
    *keep = true;
    if (!r || r->n == 0)
        return 0;
    relabel_buf_init(&s.val);
    relabel_buf_init(&s.target);
    relabel_buf_init(&s.res);
    s.md = pcre2_match_data_create(r->max_pairs, r->gctx);
    if (!s.md) {
        rc = -ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < r->n && *keep; i++) {
        rc = relabel_one(r, &r->v[i], ls, &s, keep);
        if (rc)
            goto out;
    }
out:
    if (rc)
        *keep = false;
    pcre2_match_data_free(s.md);
    buf_release(&s.val.b);
    buf_release(&s.target.b);
    buf_release(&s.res.b);
    return rc;
}

/* ---- after relabeling ---- */

static const char *relabel_basename(const char *path, size_t len, size_t *blen)
{
    const char *b = path;
    for (size_t i = 0; i < len; i++)
        if (path[i] == '/')
            b = path + i + 1;
    *blen = len - (size_t)(b - path);
    return b;
}

/* The next space-separated word of the command line at *@p (advanced). */
static bool relabel_next_word(const char **p, const char **w, size_t *wlen)
{
    const char *s = *p;
    while (*s == ' ')
        s++;
    if (!*s)
        return false;
    const char *e = s;
    while (*e && *e != ' ')
        e++;
    *w = s;
    *wlen = (size_t)(e - s);
    *p = e;
    return true;
}

static bool relabel_word_is(const char *w, size_t len, const char *s)
{
    return strlen(s) == len && memcmp(w, s, len) == 0;
}

/* The service name from a Python command line, or false. */
static bool relabel_python_target(const char *cmd, const char **name, size_t *nlen)
{
    const char *p = cmd, *w;
    size_t wl;
    if (!relabel_next_word(&p, &w, &wl)) /* the interpreter */
        return false;
    while (relabel_next_word(&p, &w, &wl)) {
        if (relabel_word_is(w, wl, "-c") || relabel_word_is(w, wl, "-"))
            return false;
        if (relabel_word_is(w, wl, "-m"))
            return relabel_next_word(&p, name, nlen);
        if (wl > 2 && w[0] == '-' && w[1] == 'm') {
            *name = w + 2;
            *nlen = wl - 2;
            return true;
        }
        if (relabel_word_is(w, wl, "-W") || relabel_word_is(w, wl, "-X") ||
            relabel_word_is(w, wl, "--check-hash-based-pycs")) {
            if (!relabel_next_word(&p, &w, &wl))
                return false;
            continue;
        }
        if (relabel_word_is(w, wl, "--")) {
            if (!relabel_next_word(&p, &w, &wl))
                return false;
        } else if (w[0] == '-') {
            continue; /* a flag: -u, -O, -B, -I, -uB, --version, ... */
        }
        *name = relabel_basename(w, wl, nlen);
        if (*nlen > 3 && memcmp(*name + *nlen - 3, ".py", 3) == 0)
            *nlen -= 3;
        return *nlen > 0;
    }
    return false;
}

int relabel_default_service_name(struct labels *ls)
{
    const char *cur = labels_get(ls, "service_name");
    const char *exe = labels_get(ls, "__meta_process_exe");
    const char *cmd = labels_get(ls, "__meta_process_commandline");
    const char *ename = NULL, *name = NULL;
    size_t elen = 0, nlen = 0;
    if (cur && *cur)
        return 0;
    static const char *const annotations[] = {
        "__meta_kubernetes_pod_annotation_pyroscope_io_service_name",
        "__meta_kubernetes_pod_annotation_profiles_grafana_com_service_name",
    };
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(annotations); i++) {
        const char *a = labels_get(ls, annotations[i]);
        if (a && *a)
            return labels_set(ls, "service_name", a);
    }
    /* the OpenTelemetry SDK's own, as the process publishes it (OTEP 4719) */
    const char *otel = labels_get(ls, "__meta_otel_resource_service_name");
    if (otel && *otel)
        return labels_set(ls, "service_name", otel);
    const char *ns = labels_get(ls, "__meta_kubernetes_namespace");
    const char *ctr = labels_get(ls, "__meta_kubernetes_pod_container_name");
    if (ns && *ns && ctr && *ctr) {
        char both[2 * 256 + 2];
        int n = snprintf(both, sizeof(both), "%s/%s", ns, ctr);
        if (n > 0 && (size_t)n < sizeof(both))
            return labels_set(ls, "service_name", both);
    }
    if (exe && *exe) {
        ename = relabel_basename(exe, strlen(exe), &elen);
    } else if (cmd) {
        const char *p = cmd, *w;
        size_t wl;
        if (relabel_next_word(&p, &w, &wl))
            ename = relabel_basename(w, wl, &elen);
    }
    if (ename && elen >= 6 && memcmp(ename, "python", 6) == 0 && cmd &&
        relabel_python_target(cmd, &name, &nlen))
        return labels_setn(ls, "service_name", name, nlen);
    if (ename && elen)
        return labels_setn(ls, "service_name", ename, elen);
    return 0;
}

void relabel_finish(struct labels *ls)
{
    for (size_t i = ls->n; i-- > 0;) {
        if (ls->v[i].name[0] == '_' && ls->v[i].name[1] == '_')
            labels_del(ls, ls->v[i].name);
    }
}

int relabel_check_limit(const struct labels *ls, uint64_t max, char *why, size_t len)
{
    if (ls->n <= max)
        return 0;
    snprintf(why, len,
             "limits.max_labels_per_profile (%" PRIu64 ") exceeded: %zu labels after relabeling "
             "and external_labels (drop some with a labeldrop rule)",
             max, ls->n);
    return -E2BIG;
}
