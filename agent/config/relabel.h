/* SPDX-License-Identifier: MIT */
/*
 * relabel.h: Prometheus relabeling over a label set, with Prometheus'
 * semantics (model/relabel/relabel.go): actions replace, keep, drop,
 * keepequal, dropequal, hashmod (md5, last 8 bytes big-endian), labelmap,
 * labeldrop, labelkeep, lowercase, uppercase; regexes fully anchored as
 * ^(?s:REGEX)$ and compiled with PCRE2 with match and depth limits;
 * replacement templates with Go's regexp.Expand rules ($1, ${1}, $name,
 * ${name}, $$; "$1x" names the group "1x").
 *
 * A rule list is compiled once from the config (config.h) and is immutable
 * afterwards: relabel_apply() may run on several threads at once over the
 * same rules (each call uses its own PCRE2 match data).
 *
 * Errors: compile-time problems are reported by the config loader with
 * file:line:column; relabel_apply() itself only fails for -ENOMEM.
 */
#ifndef PYPROFD_CONFIG_RELABEL_H
#define PYPROFD_CONFIG_RELABEL_H

#include "base/compat.h"

#include "base/labels.h"

enum relabel_action {
    RELABEL_REPLACE,
    RELABEL_KEEP,
    RELABEL_DROP,
    RELABEL_KEEPEQUAL,
    RELABEL_DROPEQUAL,
    RELABEL_HASHMOD,
    RELABEL_LABELMAP,
    RELABEL_LABELDROP,
    RELABEL_LABELKEEP,
    RELABEL_LOWERCASE,
    RELABEL_UPPERCASE,
};

/** One rule as written in the config, before compiling (all strings borrowed). */
struct relabel_rule_spec {
    const char *const *source_labels; /* may be NULL when nsource_labels is 0 */
    size_t nsource_labels;
    const char *separator;   /* NULL: ";" */
    const char *regex;       /* NULL: "(.*)" */
    const char *target_label; /* NULL: none */
    const char *replacement; /* NULL: "$1" */
    uint64_t modulus;        /* hashmod only; 0: unset */
    enum relabel_action action;
};

struct relabel_rules;

/**
 * Compiles @a n rules. Returns 0 with *@a out (caller owns; relabel_free()),
 * or -EINVAL with a message in @a err (size @a errlen; "rule N: ...") naming
 * the first invalid rule (bad regex with PCRE2's message and offset, missing
 * target_label, hashmod without modulus, fields the action does not allow),
 * or -ENOMEM. n == 0 gives an empty list that keeps everything.
 */
PYPROFD_WARN_UNUSED int relabel_compile(const struct relabel_rule_spec *specs, size_t n,
                                        struct relabel_rules **out, char *err, size_t errlen);
void relabel_free(struct relabel_rules *r);
size_t relabel_count(const struct relabel_rules *r);

/**
 * Applies the rules in order to @a ls (changed in place). *@a keep is false
 * when a rule dropped the target (processing stops there). Returns 0 or
 * -ENOMEM (then *@a keep is false and @a ls is in an unspecified but valid
 * state). NULL rules keep everything unchanged.
 */
PYPROFD_WARN_UNUSED int relabel_apply(const struct relabel_rules *r, struct labels *ls, bool *keep);

/** Parses an action name, case-insensitively. Returns 0 or -EINVAL. */
PYPROFD_WARN_UNUSED int relabel_action_parse(const char *name, enum relabel_action *out);
const char *relabel_action_name(enum relabel_action a);

#endif /* PYPROFD_CONFIG_RELABEL_H */
