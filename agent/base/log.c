/* SPDX-License-Identifier: MIT */
/*
 * log.c: formatting and output of the logger (see log.h).
 */
#include "base/compat.h"

#include <stdarg.h>
#include <time.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/termtext.h"
#include "base/utf8.h"

enum log_level log_threshold = LOG_LEVEL_INFO;
static enum log_format log_format_now = LOG_FORMAT_TEXT;
static FILE *log_sink;

static const char *const log_names[] = {"error", "warn", "info", "debug"};
static const char *const log_format_names[] = {"text", "logfmt", "json"};

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

void log_set_format(enum log_format format)
{
    log_format_now = format;
}

int log_format_parse(const char *name, enum log_format *out)
{
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(log_format_names); i++) {
        if (strcmp(name, log_format_names[i]) == 0) {
            *out = (enum log_format)i;
            return 0;
        }
    }
    return -EINVAL;
}

void log_set_sink(FILE *sink)
{
    log_sink = sink;
}

/*
 * A line under construction: a message is at most 1023 bytes, and each byte
 * quotes into at most 6 ("\u00XX"), so nothing is ever cut in logfmt or
 * JSON (which would break the quoting); the bound is only a backstop.
 */
struct log_line {
    char b[8192];
    size_t n;
};

static void log_put(struct log_line *l, const char *s, size_t n)
{
    size_t room = sizeof(l->b) - 2 - l->n; /* keep room for '\n' */
    if (n > room)
        n = room;
    memcpy(l->b + l->n, s, n);
    l->n += n;
}

static void log_puts(struct log_line *l, const char *s)
{
    log_put(l, s, strlen(s));
}

/*
 * @a msg quoted for logfmt or JSON (both take "\"", "\\", "\n" and "\t");
 * other control characters (C1 too: such logs are read on terminals, with
 * kubectl logs or journalctl) and bytes that are not UTF-8 become \u00XX
 * (JSON) or \xXX (logfmt, each byte of a C1 control), never a whole escape
 * cut in two.
 */
static void log_quoted(struct log_line *l, const char *msg, size_t len, bool json)
{
    log_put(l, "\"", 1);
    for (size_t i = 0; i < len;) {
        unsigned char c = (unsigned char)msg[i];
        char esc[16];
        size_t k = 1;
        uint32_t cp = 0;
        if (c == '"' || c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)c;
            log_put(l, esc, 2);
        } else if (c == '\n') {
            log_put(l, "\\n", 2);
        } else if (c == '\t') {
            log_put(l, "\\t", 2);
        } else if (c < 0x20 || c == 0x7f) {
            snprintf(esc, sizeof(esc), json ? "\\u%04x" : "\\x%02x", c);
            log_puts(l, esc);
        } else if (c < 0x80) {
            log_put(l, (const char *)&c, 1);
        } else if ((k = utf8_seq_len((const unsigned char *)msg + i, len - i, &cp)) > 0) {
            if (cp > 0x9f) {
                log_put(l, msg + i, k);
            } else { /* a C1 control, U+0080-U+009F: two bytes */
                if (json)
                    snprintf(esc, sizeof(esc), "\\u%04x", (unsigned)cp);
                else
                    snprintf(esc, sizeof(esc), "\\x%02x\\x%02x", c, (unsigned char)msg[i + 1]);
                log_puts(l, esc);
            }
        } else {
            k = 1;
            snprintf(esc, sizeof(esc), json ? "\\u%04x" : "\\x%02x", c);
            log_puts(l, esc);
        }
        i += k;
    }
    log_put(l, "\"", 1);
}

/* The wall clock as "2026-12-01T21:00:00.123Z". */
static void log_timestamp(char *out, size_t size)
{
    int64_t ns = clock_real_now();
    time_t s = (time_t)(ns / 1000000000);
    struct tm tm;
    gmtime_r(&s, &tm);
    snprintf(out, size, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ns / 1000000 % 1000));
}

void log_msg(enum log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char msg[1024];
    int m = vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    size_t mlen = m < 0 ? 0 : (size_t)m < sizeof(msg) ? (size_t)m : sizeof(msg) - 1;
    struct log_line l = {.n = 0};
    char ts[80]; /* the widest ints the format can print: no truncation warning */
    switch (log_format_now) {
    case LOG_FORMAT_TEXT:
        log_puts(&l, "pyprofd: ");
        log_puts(&l, log_names[level]);
        log_puts(&l, ": ");
        /* what a process named (its comm, paths, function names) may reach
         * the message: a terminal shows it, never obeys it (termtext.h); a
         * text line is at most 1 KiB, newline included */
        (void)termtext_escape(msg, mlen, l.b + l.n, 1023 - l.n, SIZE_MAX, NULL);
        l.n += strlen(l.b + l.n);
        break;
    case LOG_FORMAT_LOGFMT:
        log_timestamp(ts, sizeof(ts));
        log_puts(&l, "ts=");
        log_puts(&l, ts);
        log_puts(&l, " level=");
        log_puts(&l, log_names[level]);
        log_puts(&l, " msg=");
        log_quoted(&l, msg, mlen, false);
        break;
    case LOG_FORMAT_JSON:
        log_timestamp(ts, sizeof(ts));
        log_puts(&l, "{\"ts\":\"");
        log_puts(&l, ts);
        log_puts(&l, "\",\"level\":\"");
        log_puts(&l, log_names[level]);
        log_puts(&l, "\",\"msg\":");
        log_quoted(&l, msg, mlen, true);
        log_puts(&l, "}");
        break;
    }
    l.b[l.n++] = '\n';
    FILE *out = log_sink ? log_sink : stderr;
    fwrite(l.b, 1, l.n, out);
    fflush(out);
}
