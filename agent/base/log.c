/* SPDX-License-Identifier: MIT */
/*
 * log.c: formatting and output of the logger (see log.h).
 */
#include "base/compat.h"

#include <stdarg.h>

#include "base/log.h"

enum log_level log_threshold = LOG_LEVEL_INFO;
static FILE *log_sink;

static const char *const log_names[] = {"error", "warn", "info", "debug"};

void log_set_level(enum log_level level)
{
    log_threshold = level;
}

int log_level_parse(const char *name, enum log_level *out)
{
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(log_names); i++) {
        if (strcmp(name, log_names[i]) == 0) {
            *out = (enum log_level)i;
            return 0;
        }
    }
    return -EINVAL;
}

void log_set_sink(FILE *sink)
{
    log_sink = sink;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char line[1024];
    int n = snprintf(line, sizeof(line), "pyprofd: %s: ", log_names[level]);
    int m = vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
    va_end(ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof(line) - 2)
        len = sizeof(line) - 2; /* truncated: keep the newline */
    line[len++] = '\n';
    FILE *out = log_sink ? log_sink : stderr;
    fwrite(line, 1, len, out);
    fflush(out);
}
