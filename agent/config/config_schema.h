/* SPDX-License-Identifier: MIT */
/*
 * config_schema.h: the configuration schema as data: the table of
 * config.def and the loops over it (defaults, inheritance, release). The
 * walker that loads a YAML tree through it is config_walk.h, which uses
 * this header and not the other way round. Internal to agent/config/ (and
 * its unit tests).
 *
 * config.def has one row per key: where it is, its YAML name, its type,
 * the field of struct pyprofd_config (or config_job, config_remote_write)
 * it is stored in, its bounds and default, who reads it and a doc line.
 * config_walk.h walks any mapping of the schema into its struct; defaults
 * and inheritance (config_schema.c) and config_print() (config_print.c) are
 * loops over the same rows.
 *
 * Thread safety: the table is constant.
 */
#ifndef PYPROFD_CONFIG_CONFIG_SCHEMA_H
#define PYPROFD_CONFIG_CONFIG_SCHEMA_H

#include "base/compat.h"

#include "config/config.h"
#include "config/config_yaml.h"

/* Units of the table's bounds and defaults. */
#define CONFIG_MS   1000000ull
#define CONFIG_SEC  1000000000ull
#define CONFIG_MIN  (60 * CONFIG_SEC)
#define CONFIG_HOUR (60 * CONFIG_MIN)
#define CONFIG_DAY  (24 * CONFIG_HOUR)
#define CONFIG_KIB  1024ull
#define CONFIG_MIB  (1024 * CONFIG_KIB)
#define CONFIG_GIB  (1024 * CONFIG_MIB)

#define CONFIG_STR_(x) #x
#define CONFIG_STR(x)  CONFIG_STR_(x)

/** A mapping of the schema: CONFIG_S_ROOT and one per CONFIG_SUB row. */
enum config_section {
    CONFIG_S_ROOT,
#define CONFIG_SUB(id, parent, name, flags, doc) CONFIG_S_##id,
#define CONFIG_KEY(...)
#include "config/config.def"
#undef CONFIG_SUB
#undef CONFIG_KEY
    CONFIG_S_COUNT
};

/** Every row of config.def, CONFIG_SUB rows included. */
enum config_key_id {
#define CONFIG_SUB(id, ...) CONFIG_K_##id,
#define CONFIG_KEY(id, ...) CONFIG_K_##id,
#include "config/config.def"
#undef CONFIG_SUB
#undef CONFIG_KEY
    CONFIG_NKEYS
};

/** How a value is written, stored (in the row's field) and printed. */
enum config_type {
    CONFIG_T_SECTION,     /* a CONFIG_SUB row: a mapping (or a list of them) */
    CONFIG_T_NUMBER,      /* double, a plain decimal in (lo, hi]; arg: unit */
    CONFIG_T_CPUS,        /* double, a number or "NN%" of one CPU, in (lo, hi] */
    CONFIG_T_UINT,        /* uint64_t, a plain whole number in [lo, hi] */
    CONFIG_T_DURATION,    /* uint64_t ns, a Prometheus duration in [lo, hi] */
    CONFIG_T_SIZE,        /* uint64_t bytes, a size with a unit in [lo, hi] */
    CONFIG_T_BOOL,        /* bool */
    CONFIG_T_ENUM,        /* an enum (int-sized), one of arg's "a|b|c" */
    CONFIG_T_STRING,      /* char *; "" means unset; at most hi bytes if hi */
    CONFIG_T_SENT,        /* char *, sent in every request: no control characters */
    CONFIG_T_SECRET,      /* a SENT value printed as "<secret>" */
    CONFIG_T_FILE,        /* char *, a file opened at load (skip_file_checks: not) */
    CONFIG_T_SECRET_FILE, /* char *, a secret file read at load */
    CONFIG_T_ABSPATH,     /* char *, an absolute path */
    CONFIG_T_LISTEN,      /* char *, host:port or "" (server.listen_address) */
    CONFIG_T_URL,         /* char *, an http(s) URL libcurl accepts; its password is secret */
    CONFIG_T_LABELS,      /* struct labels, label name -> value; at most hi */
    CONFIG_T_HEADERS,     /* struct labels, HTTP header -> secret value; at most hi */
    CONFIG_T_RELABEL,     /* struct relabel_rules *, never NULL once loaded; at most hi rules */
};

enum config_key_flags {
    CONFIG_LIST = 1 << 0,      /* section: a list of mappings */
    CONFIG_OPTIONAL = 1 << 1,  /* section: defaulted, and printed, only when present */
    CONFIG_INHERIT = 1 << 2,   /* job key: defaults to the global key of the same name */
    CONFIG_PYROSCOPE = 1 << 3, /* remote_write key: only for type pyroscope */
};

/** One row of config.def. */
struct config_key {
    enum config_section section; /* where the key is */
    enum config_type type;
    enum config_section sub; /* CONFIG_T_SECTION: the section it opens */
    unsigned flags;          /* enum config_key_flags */
    const char *name;        /* its YAML name */
    size_t offset;           /* of its field in the section's struct */
    double lo_d, hi_d;       /* NUMBER, CPUS */
    uint64_t lo, hi;         /* the other types */
    double def_d;            /* NUMBER, CPUS */
    uint64_t def_u;          /* UINT, DURATION, SIZE, BOOL, ENUM */
    const char *def_s;       /* string types; NULL: none */
    const char *arg;         /* NUMBER: unit; ENUM: "a|b|c" */
    const char *doc;
};

extern const struct config_key config_keys[CONFIG_NKEYS];

/** The row named @a name in section @a s, or NULL. */
const struct config_key *config_schema_find(enum config_section s, const char *name);
/** The YAML name of section @a s ("limits"), or "" for the top level. */
const char *config_schema_section_name(enum config_section s);
/** Name @a i (0-based) of an ENUM row into @a buf; false past the last. */
bool config_schema_enum_name(const struct config_key *k, int i, char *buf, size_t len);

/** What one walk of a section (and of its subsections) saw, by row. */
struct config_seen {
    const struct config_node *key[CONFIG_NKEYS]; /* the key node */
    const struct config_node *val[CONFIG_NKEYS]; /* its value node */
    bool refused[CONFIG_NKEYS];                  /* a SENT value refused for a control character */
};

/** Whether the walk saw row @a id with a value (neither absent nor null). */
bool config_seen_set(const struct config_seen *s, enum config_key_id id);

/**
 * Sets the defaults of section @a s (and of its subsections that are not
 * CONFIG_OPTIONAL) in @a base, the section's struct; strings are left alone
 * (config_schema_finish() fills them). Never fails.
 */
void config_schema_defaults(enum config_section s, void *base);
/**
 * After a walk of @a s: every string field still NULL gets its default
 * (also in CONFIG_OPTIONAL subsections the walk saw as mappings; NULL @a
 * seen: none), and a RELABEL field still NULL an empty rule list. Returns 0
 * or -ENOMEM.
 */
PYPROFD_WARN_UNUSED int config_schema_finish(enum config_section s, void *base,
                                             const struct config_seen *seen);
/** Frees what the fields of section @a s (and its subsections, not lists) in @a base own. */
void config_schema_release(enum config_section s, void *base);
/** Copies into job @a j every CONFIG_INHERIT key not in @a set from @a c's global. */
void config_schema_inherit(struct config_job *j, const struct pyprofd_config *c, const bool *set);

#endif /* PYPROFD_CONFIG_CONFIG_SCHEMA_H */
