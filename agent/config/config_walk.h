/* SPDX-License-Identifier: MIT */
/*
 * config_walk.h: the table-driven loader: one walker
 * (config_walk_section()) turns any mapping of the schema (config_schema.h)
 * into its struct: it reports unknown and duplicate keys, parses each value
 * by its type (config_walk.c; URLs and files through config_value.h) and
 * records the nodes it saw, so that the cross-key checks that remain
 * hand-written (config.c, config_remote.c) can point their errors at them.
 * Internal to agent/config/ (and its unit tests).
 *
 * The dependencies run one way: config.c walks the top level and the job
 * list, config_remote.c the remote_write list, both with config_walk.c,
 * which parses values with config_value.c and reads the table of
 * config_schema.c; none of these calls back up.
 *
 * The walk never stops at the first problem: each key is checked on its own
 * and every error is recorded at the node it is about (the key for unknown
 * or duplicate keys, the value for bad values, the enclosing mapping for
 * missing keys), in struct config_walk.
 *
 * Thread safety: a walk is per call.
 */
#ifndef PYPROFD_CONFIG_CONFIG_WALK_H
#define PYPROFD_CONFIG_CONFIG_WALK_H

#include "base/compat.h"

#include "config/config_schema.h"

/** The walk's state: where errors go, and the sticky -ENOMEM. */
struct config_walk {
    struct config_errors *errs;
    int rc;           /* -ENOMEM once allocation failed */
    bool bad;         /* some error was reported */
    bool check_files; /* open the files the config names (not skip_file_checks) */
};

/** Reports an error at node @a n (NULL: no position). */
void config_walk_error(struct config_walk *w, const struct config_node *n, const char *fmt, ...)
    PYPROFD_PRINTF(3, 4);
void config_walk_nomem(struct config_walk *w);
/** "a mapping", "a list" or "a scalar". */
const char *config_walk_kind(const struct config_node *n);
/** Whether @a n is a mapping to walk; null means unset (false, no error). */
bool config_walk_is_map(struct config_walk *w, const char *path, const struct config_node *n);
/** Whether @a n is a list to walk; null means unset (false, no error). */
bool config_walk_is_seq(struct config_walk *w, const char *path, const struct config_node *n);
/** Whether @a v is a scalar with a value; null means unset (false, no error). */
bool config_walk_is_scalar(struct config_walk *w, const char *path, const struct config_node *v);
/** The key at @a i of mapping @a m, or NULL (reported) when unusable or a duplicate. */
const char *config_walk_key(struct config_walk *w, const char *path, const struct config_node *m,
                            size_t i);
/** "PATH.KEY" into @a buf; false when it did not fit. */
bool config_walk_join(char *buf, size_t len, const char *path, const char *key);
/** Replaces *@a dst with a copy of @a v's value ("" gives NULL when @a empty_unset). */
void config_walk_str(struct config_walk *w, const char *path, const struct config_node *v,
                     char **dst, bool empty_unset);

/**
 * Walks mapping @a m (path @a path) as section @a s into @a base, the
 * section's struct, recursing into its subsections (not into lists: only
 * the top level has those, config.c walks them). Records what it saw in
 * @a seen (not cleared first).
 */
void config_walk_section(struct config_walk *w, const char *path, const struct config_node *m,
                         enum config_section s, void *base, struct config_seen *seen);

/* ---- remote_write (config_remote.c) ---- */

/** Walks the remote_write list @a seq into @a c. */
void config_remote_writes(struct config_walk *w, const struct config_node *seq,
                          struct pyprofd_config *c);

#endif /* PYPROFD_CONFIG_CONFIG_WALK_H */
