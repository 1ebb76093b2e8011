/* SPDX-License-Identifier: MIT */
/*
 * labels.h: a label set, the (name, value) pairs that identify a target
 * (Prometheus' model). Used by discovery (meta labels), relabeling
 * (config/relabel.h), the daemon (target identity) and the exporters.
 *
 * Invariants:
 *  - names are unique within a set; labels_set() replaces an existing value;
 *  - the pairs are kept sorted by name (byte order), so two sets with the same
 *    pairs compare and hash equal, and output is deterministic;
 *  - the set owns copies of its strings (alloc_strdup); an empty value is a
 *    value like any other here (relabeling deletes labels set to "" itself);
 *  - every value is valid UTF-8: labels_set(), labels_setn() and
 *    labels_copy() copy it through utf8_sanitize() (base/utf8.h), which replaces an invalid
 *    sequence by U+FFFD and counts it. Text from outside is made valid where
 *    it enters pyprofd already; this keeps the promise for any other way a
 *    value is made (relabeling, a template, a join), so relabeling matches
 *    and every output writes the text the labels hold. Names are the
 *    caller's to check (labels_valid_name()).
 *
 * Ownership: struct labels is embeddable (init/release); zeroed is a valid
 * empty set. Thread safety: none; a set is used by one thread at a time.
 */
#ifndef PYPROFD_BASE_LABELS_H
#define PYPROFD_BASE_LABELS_H

#include "base/compat.h"

/** The most labels one set may hold; adding one more fails with -ENOMEM. */
#define LABELS_MAX 4096

struct label {
    char *name;
    char *value;
};

struct labels {
    struct label *v; /* sorted by name; private to labels.c apart from reading */
    size_t n;
    size_t cap;
};

/** Empties @a ls (zeroed). */
void labels_init(struct labels *ls);
/** Frees everything; a zeroed set is a no-op. Leaves @a ls empty and reusable. */
void labels_release(struct labels *ls);
/**
 * Sets @a name to @a value (both copied). Returns 0 or -ENOMEM (set unchanged),
 * also when a new name would take the set over LABELS_MAX labels.
 */
PYPROFD_WARN_UNUSED int labels_set(struct labels *ls, const char *name, const char *value);
/**
 * Sets @a name to the first @a len bytes of @a value (up to a NUL among them).
 * Returns 0 or -ENOMEM.
 */
PYPROFD_WARN_UNUSED int labels_setn(struct labels *ls, const char *name, const char *value,
                                    size_t len);
/** The value of @a name, or NULL when absent (borrowed; valid until the next change). */
const char *labels_get(const struct labels *ls, const char *name);
/** Removes @a name; absent is not an error. */
void labels_del(struct labels *ls, const char *name);
/** Makes @a dst a copy of @a src (dst's old content released). Returns 0 or -ENOMEM. */
PYPROFD_WARN_UNUSED int labels_copy(struct labels *dst, const struct labels *src);
/** Exact equality of the two sets. */
bool labels_equal(const struct labels *a, const struct labels *b);
/** A 64-bit hash of the set (stable within one build). */
uint64_t labels_hash(const struct labels *ls);
/** Whether @a name is a valid label name: [a-zA-Z_][a-zA-Z0-9_]*. */
bool labels_valid_name(const char *name);

#endif /* PYPROFD_BASE_LABELS_H */
