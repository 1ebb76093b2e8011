/* SPDX-License-Identifier: MIT */
/*
 * log.h: pyprofd's one logger.
 *
 * Messages follow git's grammar: lower case, no full stop, what failed first,
 * the subject quoted ("cannot read '/proc/12/maps': No such file or directory").
 * Library-like layers (discovery, memread, python, unwind, pprof) never log:
 * they return a status and their caller logs once. Loops log state transitions,
 * never every event. The level test happens in the macro, before any argument
 * is evaluated, so a disabled debug message costs one comparison.
 *
 * Formats (log_set_format(), `--log.format`):
 *   text    pyprofd: warn: cannot read '/proc/12/maps': ...        (the default)
 *   logfmt  ts=2026-12-01T21:00:00.123Z level=warn msg="cannot read ..."
 *   json    {"ts":"2026-12-01T21:00:00.123Z","level":"warn","msg":"cannot read ..."}
 * logfmt and json carry a UTC timestamp with milliseconds, for log
 * collectors (Kubernetes, systemd's journal adds its own to text). Control
 * characters and bytes that are not UTF-8 are escaped, so one message is
 * always one line: in text as \xNN, as termtext.h shows text from a target
 * on a terminal (C1 controls too), in logfmt as \xNN and in JSON as \u00NN.
 *
 * Thread safety: log_msg() may be called from any thread; each message is one
 * write to the sink. log_set_level()/log_set_format()/log_set_sink() are for
 * start-up and tests.
 */
#ifndef PYPROFD_BASE_LOG_H
#define PYPROFD_BASE_LOG_H

#include "base/compat.h"

enum log_level {
    LOG_LEVEL_ERROR = 0,
    LOG_LEVEL_WARN = 1,
    LOG_LEVEL_INFO = 2,
    LOG_LEVEL_DEBUG = 3,
};

enum log_format {
    LOG_FORMAT_TEXT = 0,
    LOG_FORMAT_LOGFMT = 1,
    LOG_FORMAT_JSON = 2,
};

/** Current threshold; messages above it are dropped. Read via the macros. */
extern enum log_level log_threshold;

/** Sets the threshold (default LOG_LEVEL_INFO). */
void log_set_level(enum log_level level);
/**
 * Parses "error", "warn", "info" or "debug" into @a out. Returns 0 or -EINVAL.
 */
PYPROFD_WARN_UNUSED int log_level_parse(const char *name, enum log_level *out);
/** Sets the format (default LOG_FORMAT_TEXT). */
void log_set_format(enum log_format format);
/** Parses "text", "logfmt" or "json" into @a out. Returns 0 or -EINVAL. */
PYPROFD_WARN_UNUSED int log_format_parse(const char *name, enum log_format *out);
/** Redirects messages to @a sink (borrowed; NULL restores stderr). */
void log_set_sink(FILE *sink);

/** Writes one line in the current format. Use the macros below. */
void log_msg(enum log_level level, const char *fmt, ...) PYPROFD_PRINTF(2, 3);

#define LOG_AT(level, ...)                                                                         \
    do {                                                                                           \
        if ((level) <= log_threshold)                                                              \
            log_msg((level), __VA_ARGS__);                                                         \
    } while (0)
#define log_error(...) LOG_AT(LOG_LEVEL_ERROR, __VA_ARGS__)
#define log_warn(...)  LOG_AT(LOG_LEVEL_WARN, __VA_ARGS__)
#define log_info(...)  LOG_AT(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_debug(...) LOG_AT(LOG_LEVEL_DEBUG, __VA_ARGS__)

#endif /* PYPROFD_BASE_LOG_H */
