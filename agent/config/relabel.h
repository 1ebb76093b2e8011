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
 *
 * Text: rules see valid UTF-8 only, the text the labels will carry. Label
 * values are made valid where a process's text enters pyprofd and again when
 * set (labels.h: an invalid sequence becomes U+FFFD, as Python's decoder
 * does, and is counted); a joined source value that is not (a set built by
 * hand) is made valid the same way before the rule looks at it. So "keep"
 * matches a command line that held invalid bytes through its U+FFFD form,
 * and no invalid byte can make a "drop" regex miss.
 *
 * Departures from Prometheus, all at the edges: regexes are PCRE2 (a superset
 * of the RE2 syntax users write) in UTF mode; a match that hits the
 * match/depth/heap limits counts as no match; template names ($name) and
 * lowercase/uppercase are ASCII-only; a labelmap result that is not a valid
 * label name is skipped; a template expanding to more than RELABEL_MAX_VALUE
 * bytes leaves the rule without effect.
 *
 * After the rules, the agent calls relabel_default_service_name() and then
 * relabel_finish() (see docs/configuration.md, "After relabeling").
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
    const char *separator;    /* NULL: ";" */
    const char *regex;        /* NULL: "(.*)" */
    const char *target_label; /* NULL: none */
    const char *replacement;  /* NULL: "$1" */
    uint64_t modulus;         /* hashmod only; 0: unset */
    enum relabel_action action;
};

struct relabel_rules;

/** Longest regex accepted (bytes, before anchoring). */
#define RELABEL_MAX_REGEX 4096
/** Longest label value a template or case mapping may produce. */
#define RELABEL_MAX_VALUE 65536
/* PCRE2 limits per match: backtracking steps, nesting depth, heap (KiB). */
#define RELABEL_MATCH_LIMIT    1000000
#define RELABEL_DEPTH_LIMIT    10000
#define RELABEL_HEAP_LIMIT_KIB 16384

/** The field of a rule that a validation error is about. */
enum relabel_field {
    RELABEL_FIELD_NONE, /* the rule as a whole */
    RELABEL_FIELD_ACTION,
    RELABEL_FIELD_SOURCE_LABELS,
    RELABEL_FIELD_SEPARATOR,
    RELABEL_FIELD_REGEX,
    RELABEL_FIELD_TARGET_LABEL,
    RELABEL_FIELD_REPLACEMENT,
    RELABEL_FIELD_MODULUS,
};

/**
 * Checks one rule as relabel_compile() would (the regex is compiled and
 * freed). Returns 0, or -EINVAL with the message in @a err (no "rule N:"
 * prefix) and the offending field in *@a field, or -ENOMEM.
 */
PYPROFD_WARN_UNUSED int relabel_validate(const struct relabel_rule_spec *spec,
                                         enum relabel_field *field, char *err, size_t errlen);

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
 * Rule @a i as compiled, with every default filled in (separator ";", regex
 * "(.*)", replacement "$1"; target_label NULL when unset). Borrowed from @a r.
 */
const struct relabel_rule_spec *relabel_spec(const struct relabel_rules *r, size_t i);

/**
 * Applies the rules in order to @a ls (changed in place). *@a keep is false
 * when a rule dropped the target (processing stops there). Returns 0 or
 * -ENOMEM (then *@a keep is false and @a ls is in an unspecified but valid
 * state). NULL rules keep everything unchanged.
 */
PYPROFD_WARN_UNUSED int relabel_apply(const struct relabel_rules *r, struct labels *ls, bool *keep);

/**
 * Sets `service_name` when @a ls has none (or an empty one). For a process
 * in a Kubernetes pod (discovery.kubernetes), first from its pod:
 *  - the pod annotation pyroscope.io/service_name, else
 *    profiles.grafana.com/service_name (as Grafana Alloy reads them);
 *  - else the OpenTelemetry service.name the process publishes
 *    (__meta_otel_resource_service_name, discovery/otel_process.h), for any
 *    process, in a pod or not;
 *  - else "<namespace>/<container>" (__meta_kubernetes_namespace and
 *    __meta_kubernetes_pod_container_name), Alloy's default without its
 *    "ebpf/" prefix.
 * Otherwise from the meta labels the process scanner provides:
 *  - when the executable (__meta_process_exe, else the first word of
 *    __meta_process_commandline) is a Python interpreter (its base name starts
 *    with "python"): the first argument after the interpreter's own options in
 *    __meta_process_commandline (argv joined with single spaces): for
 *    "-m MODULE" the module name as written, for a script its base name
 *    without ".py"; options with a value (-W, -X, --check-hash-based-pycs)
 *    skip that value; "-c" and "-" (code from the command line or stdin) fall
 *    through to the next rule;
 *  - otherwise the executable's base name.
 * Nothing is set when neither label gives a name. Returns 0 or -ENOMEM.
 */
PYPROFD_WARN_UNUSED int relabel_default_service_name(struct labels *ls);
/** Drops every label whose name starts with "__" (meta and scratch labels). */
void relabel_finish(struct labels *ls);

/**
 * limits.max_labels_per_profile, checked on a target's finished label set
 * @a ls: after the job's rules, relabel_default_service_name(),
 * relabel_finish() and the external labels. These are the labels every
 * profile of the target carries when it leaves the agent: the series
 * labels of a push (besides __name__, before write_relabel_configs) and the
 * sample labels of /debug/pprof/profile. Returns 0 when @a ls has at most
 * @a max labels; otherwise -E2BIG, and the reason in @a why ("limits.
 * max_labels_per_profile (25) exceeded: 31 labels after relabeling and
 * external_labels (...)").
 *
 * The caller does not sample such a target (and says why): a backend
 * refuses the whole profile rather than some labels (Pyroscope rejects a
 * series with more than 30 label names, its default), and dropping labels
 * instead would silently merge the series of targets that differ only in
 * the dropped ones. Thread-safe.
 */
PYPROFD_WARN_UNUSED int relabel_check_limit(const struct labels *ls, uint64_t max, char *why,
                                            size_t len);

/** Parses an action name, case-insensitively. Returns 0 or -EINVAL. */
PYPROFD_WARN_UNUSED int relabel_action_parse(const char *name, enum relabel_action *out);
const char *relabel_action_name(enum relabel_action a);

#endif /* PYPROFD_CONFIG_RELABEL_H */
