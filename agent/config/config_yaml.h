/* SPDX-License-Identifier: MIT */
/*
 * config_yaml.h: the YAML layer of the config loader (config.c). Turns a
 * buffer into a small tree of mappings, sequences and scalars, each carrying
 * the 1-based line and column libyaml reported for its start, with every cap
 * of config.h enforced (depth, items per collection, scalar length, node
 * count) and ${VAR} expansion applied to scalar values (never to mapping
 * keys) when asked. YAML aliases and multi-document streams are rejected.
 *
 * It also owns the error list shared with config.c (struct config_errors:
 * appending, sorting by position, formatting on output).
 *
 * Ownership: the tree is owned by the caller (config_yaml_free). Thread
 * safety: none needed; everything is per call.
 */
#ifndef PYPROFD_CONFIG_CONFIG_YAML_H
#define PYPROFD_CONFIG_CONFIG_YAML_H

#include "base/compat.h"

#include "config/config.h"

enum config_node_kind { CONFIG_NODE_SCALAR, CONFIG_NODE_MAP, CONFIG_NODE_SEQ };

struct config_node {
    enum config_node_kind kind;
    uint32_t line, col; /* 1-based */
    /* scalars */
    char *value; /* NUL-terminated, after ${VAR} expansion */
    size_t len;
    bool plain;    /* written without quotes (numbers and booleans must be) */
    bool null;     /* a plain "", "~" or "null": the key is unset */
    bool expanded; /* the value came out of ${VAR} expansion */
    /* collections: a mapping holds key, value, key, value, ... */
    struct config_node **kids;
    size_t n;
    size_t cap;
};

/**
 * Parses @a len bytes of @a buf (borrowed). Returns 0 with *@a root (NULL for
 * an empty stream or document; caller owns), -EINVAL with the problems added
 * to @a errs, or -ENOMEM.
 */
PYPROFD_WARN_UNUSED int config_yaml_parse(const char *buf, size_t len,
                                          const struct config_load_opts *opts,
                                          struct config_node **root, struct config_errors *errs);
/** Frees a tree; NULL is a no-op. */
void config_yaml_free(struct config_node *n);

/**
 * Appends the error @a fmt at @a line, @a col (line 0: no position) to @a e.
 * Past CONFIG_MAX_ERRORS one last "too many errors" entry (without a
 * position) is added and the rest are dropped. Returns 0 or -ENOMEM.
 */
PYPROFD_WARN_UNUSED int config_yaml_error(struct config_errors *e, uint32_t line, uint32_t col,
                                          const char *fmt, ...) PYPROFD_PRINTF(4, 5);

/** Names the file @a e is about (a copy of @a name). Returns 0 or -ENOMEM. */
PYPROFD_WARN_UNUSED int config_yaml_errors_source(struct config_errors *e, const char *name);

/** Sorts the errors from index @a from on by position, stably; those without one go last. */
void config_yaml_errors_sort(struct config_errors *e, size_t from);

#endif /* PYPROFD_CONFIG_CONFIG_YAML_H */
