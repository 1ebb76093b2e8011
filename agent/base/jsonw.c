/* SPDX-License-Identifier: MIT */
/*
 * jsonw.c: the streaming JSON writer (see jsonw.h). Strings are copied in
 * runs: a run of bytes that need no escape goes out in one write.
 */
#include "base/compat.h"

#include <math.h>

#include "base/jsonw.h"
#include "base/utf8.h"

#define JSONW_MAGIC 0x6a736e77u /* "jsnw" */

static void jsonw_init(struct jsonw *w, enum jsonw_sink sink, FILE *f, struct buf *b,
                       unsigned flags)
{
    w->sink = sink;
    w->file = f;
    w->buf = b;
    w->flags = flags;
    w->err = 0;
    w->depth = 0;
    w->done = false;
    w->bytes = 0;
    w->staged = 0;
    w->magic = JSONW_MAGIC;
    /* the level bits are written as levels open: no need to clear 2 KiB */
}

void jsonw_init_file(struct jsonw *w, FILE *f, unsigned flags)
{
    jsonw_init(w, JSONW_SINK_FILE, f, NULL, flags);
}

void jsonw_init_buf(struct jsonw *w, struct buf *b, unsigned flags)
{
    jsonw_init(w, JSONW_SINK_BUF, NULL, b, flags);
}

void jsonw_init_count(struct jsonw *w, unsigned flags)
{
    jsonw_init(w, JSONW_SINK_NONE, NULL, NULL, flags);
}

static void jsonw_fail(struct jsonw *w, int err)
{
    if (!w->err)
        w->err = err;
}

/* Hands @n bytes at @p to the sink (a counting writer drops them). */
static void jsonw_sink(struct jsonw *w, const char *p, size_t n)
{
    int err = 0;
    if (w->err || n == 0)
        return;
    if (w->sink == JSONW_SINK_FILE && fwrite(p, 1, n, w->file) != n)
        err = -EIO;
    else if (w->sink == JSONW_SINK_BUF)
        err = buf_add(w->buf, p, n);
    jsonw_fail(w, err);
}

static void jsonw_flush(struct jsonw *w)
{
    jsonw_sink(w, w->stage, w->staged);
    w->staged = 0;
}

/* Writes @n bytes at @p: gathered in the stage, which goes to the sink when full. */
static void jsonw_put(struct jsonw *w, const char *p, size_t n)
{
    if (w->err)
        return;
    w->bytes += n;
    if (n > sizeof(w->stage) - w->staged) {
        jsonw_flush(w);
        if (n >= sizeof(w->stage)) {
            jsonw_sink(w, p, n);
            return;
        }
    }
    memcpy(w->stage + w->staged, p, n);
    w->staged += n;
}

/* One byte: most pieces of the syntax. */
static void jsonw_putc(struct jsonw *w, char c)
{
    if (w->err)
        return;
    if (w->staged == sizeof(w->stage))
        jsonw_flush(w);
    w->stage[w->staged++] = c;
    w->bytes++;
}

static void jsonw_puts(struct jsonw *w, const char *s)
{
    jsonw_put(w, s, strlen(s));
}

static bool jsonw_bit(const uint8_t *bits, unsigned level)
{
    return bits[level / 8] & (1u << (level % 8));
}

static void jsonw_set_bit(uint8_t *bits, unsigned level, bool on)
{
    if (on)
        bits[level / 8] = (uint8_t)(bits[level / 8] | (1u << (level % 8)));
    else
        bits[level / 8] = (uint8_t)(bits[level / 8] & ~(1u << (level % 8)));
}

/* json-c's indent: two spaces per level. */
static void jsonw_indent(struct jsonw *w, unsigned level)
{
    static const char spaces[] = "                                ";
    size_t n = 2 * (size_t)level;
    while (n > 0 && !w->err) {
        size_t k = n < sizeof(spaces) - 1 ? n : sizeof(spaces) - 1;
        jsonw_put(w, spaces, k);
        n -= k;
    }
}

/* \u00xx for the character @c below U+0100, into @out (6 bytes). */
static void jsonw_u00(char *out, unsigned char c)
{
    static const char hex[] = "0123456789abcdef";
    out[0] = '\\';
    out[1] = 'u';
    out[2] = '0';
    out[3] = '0';
    out[4] = hex[c >> 4];
    out[5] = hex[c & 0xf];
}

/*
 * The string @s, @n bytes, quoted and escaped (jsonw.h). Returns the
 * replacements it made; the caller counts them.
 */
static uint64_t jsonw_escape(struct jsonw *w, const char *s, size_t n, unsigned flags)
{
    const unsigned char *p = (const unsigned char *)s;
    const bool pictures = flags & JSONW_STRING_PICTURES;
    const bool terminal = w->flags & JSONW_TERMINAL;
    const bool lt = !(w->flags & JSONW_NOT_HTML);
    uint64_t replaced = 0;
    size_t run = 0; /* start of the bytes not written yet */
    jsonw_putc(w, '"');
    for (size_t i = 0; i < n && !w->err;) {
        /* the bytes written as they are (most of them): one scan */
        while (i < n && p[i] >= 0x20 && p[i] < 0x7f && p[i] != '"' && p[i] != '\\' &&
               (p[i] != '<' || !lt))
            i++;
        if (i == n)
            break;
        unsigned char c = p[i];
        char tmp[6];
        const char *esc = tmp;
        size_t elen, adv = 1;
        if (c >= 0x80) {
            bool valid;
            size_t len = utf8_next(p + i, n - i, &valid);
            if (valid && !(terminal && c == 0xc2 && p[i + 1] <= 0x9f)) {
                i += len;
                continue;
            }
            if (valid) { /* a C1 control: 0xc2 0x80-0x9f */
                jsonw_u00(tmp, p[i + 1]);
                elen = 6;
            } else {
                esc = UTF8_REPLACEMENT_STR;
                elen = UTF8_REPLACEMENT_LEN;
                replaced++;
            }
            adv = len;
        } else if (c == '"' || c == '\\') {
            esc = c == '"' ? "\\\"" : "\\\\";
            elen = 2;
        } else if (c == '<') {
            esc = "\\u003c";
            elen = 6;
        } else if (pictures && c == '\t') {
            esc = "\\t";
            elen = 2;
        } else if (pictures && (c < 0x20 || c == 0x7f)) { /* U+2400 + c; U+2421 for DEL */
            tmp[0] = '\xe2';
            tmp[1] = '\x90';
            tmp[2] = (char)(c == 0x7f ? 0xa1 : 0x80 + c);
            elen = 3;
        } else {
            jsonw_u00(tmp, c); /* a C0 control or DEL */
            elen = 6;
        }
        jsonw_put(w, s + run, i - run);
        jsonw_put(w, esc, elen);
        i += adv;
        run = i;
    }
    if (n > run) /* (an empty string may be NULL) */
        jsonw_put(w, s + run, n - run);
    jsonw_putc(w, '"');
    return replaced;
}

/*
 * What comes before a value: the comma, the layout, the key. False when
 * nothing may be written (an error now or before).
 */
static bool jsonw_begin(struct jsonw *w, const char *key)
{
    PYPROFD_ASSERT(w->magic == JSONW_MAGIC);
    if (w->err)
        return false;
    if (w->depth == 0) {
        if (w->done || key)
            jsonw_fail(w, -EINVAL);
        return !w->err;
    }
    unsigned level = w->depth - 1;
    if (jsonw_bit(w->is_array, level) != !key) {
        jsonw_fail(w, -EINVAL);
        return false;
    }
    if (jsonw_bit(w->has_items, level)) {
        jsonw_putc(w, ',');
        if (w->flags & JSONW_PRETTY)
            jsonw_putc(w, '\n'); /* (the first member's newline came with its '{' or '[') */
    }
    jsonw_set_bit(w->has_items, level, true);
    if (w->flags & JSONW_PRETTY)
        jsonw_indent(w, w->depth);
    if (key) {
        uint64_t replaced = jsonw_escape(w, key, strlen(key), 0);
        jsonw_putc(w, ':');
        if (replaced && w->sink != JSONW_SINK_NONE)
            utf8_count_replaced(replaced);
    }
    return !w->err;
}

/* After a value: at the top level, the document is complete. */
static void jsonw_after(struct jsonw *w)
{
    if (w->depth == 0)
        w->done = true;
}

static void jsonw_open(struct jsonw *w, const char *key, bool array)
{
    if (!jsonw_begin(w, key))
        return;
    if (w->depth == JSONW_MAX_DEPTH) {
        jsonw_fail(w, -ELOOP);
        return;
    }
    jsonw_set_bit(w->is_array, w->depth, array);
    jsonw_set_bit(w->has_items, w->depth, false);
    w->depth++;
    jsonw_putc(w, array ? '[' : '{');
    if (w->flags & JSONW_PRETTY)
        jsonw_putc(w, '\n');
}

void jsonw_object(struct jsonw *w, const char *key)
{
    jsonw_open(w, key, false);
}

void jsonw_array(struct jsonw *w, const char *key)
{
    jsonw_open(w, key, true);
}

void jsonw_end(struct jsonw *w)
{
    PYPROFD_ASSERT(w->magic == JSONW_MAGIC);
    if (w->err)
        return;
    if (w->depth == 0) {
        jsonw_fail(w, -EINVAL);
        return;
    }
    unsigned level = --w->depth;
    if (w->flags & JSONW_PRETTY) {
        if (jsonw_bit(w->has_items, level))
            jsonw_putc(w, '\n');
        jsonw_indent(w, level);
    }
    jsonw_putc(w, jsonw_bit(w->is_array, level) ? ']' : '}');
    jsonw_after(w);
}

void jsonw_string(struct jsonw *w, const char *key, const char *s)
{
    jsonw_stringn(w, key, s, strlen(s), 0);
}

void jsonw_stringn(struct jsonw *w, const char *key, const char *s, size_t n, unsigned flags)
{
    if (!jsonw_begin(w, key))
        return;
    uint64_t replaced = jsonw_escape(w, s, n, flags);
    if (replaced && w->sink != JSONW_SINK_NONE)
        utf8_count_replaced(replaced);
    jsonw_after(w);
}

/* A scalar's text. */
static void jsonw_scalar(struct jsonw *w, const char *key, const char *text)
{
    if (!jsonw_begin(w, key))
        return;
    jsonw_puts(w, text);
    jsonw_after(w);
}

/* The decimal digits of @v, written backwards from @end: their start. */
static char *jsonw_digits(char *end, uint64_t v)
{
    do {
        *--end = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return end;
}

void jsonw_int(struct jsonw *w, const char *key, int64_t v)
{
    char text[24];
    char *p = jsonw_digits(text + sizeof(text), v < 0 ? 0 - (uint64_t)v : (uint64_t)v);
    if (v < 0)
        *--p = '-';
    if (jsonw_begin(w, key)) {
        jsonw_put(w, p, (size_t)(text + sizeof(text) - p));
        jsonw_after(w);
    }
}

void jsonw_uint(struct jsonw *w, const char *key, uint64_t v)
{
    char text[24];
    char *p = jsonw_digits(text + sizeof(text), v);
    if (jsonw_begin(w, key)) {
        jsonw_put(w, p, (size_t)(text + sizeof(text) - p));
        jsonw_after(w);
    }
}

void jsonw_double(struct jsonw *w, const char *key, double v, int digits)
{
    char text[40];
    if (!isfinite(v)) {
        jsonw_scalar(w, key, "null");
        return;
    }
    digits = digits < 1 ? 1 : digits > 17 ? 17 : digits;
    int n = snprintf(text, sizeof(text) - 2, "%.*g", digits, v);
    /* a whole number reads as one: 100 -> 100.0 (json-c's form) */
    if (n > 0 && (size_t)n < sizeof(text) - 2 && !strpbrk(text, ".e"))
        memcpy(text + n, ".0", 3);
    jsonw_scalar(w, key, text);
}

void jsonw_fixed(struct jsonw *w, const char *key, double v, int decimals)
{
    char text[352]; /* DBL_MAX has 309 digits before the point */
    if (!isfinite(v)) {
        jsonw_scalar(w, key, "null");
        return;
    }
    decimals = decimals < 0 ? 0 : decimals > 17 ? 17 : decimals;
    snprintf(text, sizeof(text), "%.*f", decimals, v);
    jsonw_scalar(w, key, text);
}

void jsonw_bool(struct jsonw *w, const char *key, bool v)
{
    jsonw_scalar(w, key, v ? "true" : "false");
}

void jsonw_null(struct jsonw *w, const char *key)
{
    jsonw_scalar(w, key, "null");
}

int jsonw_error(const struct jsonw *w)
{
    return w->err;
}

uint64_t jsonw_bytes(const struct jsonw *w)
{
    return w->bytes;
}

int jsonw_finish(struct jsonw *w)
{
    PYPROFD_ASSERT(w->magic == JSONW_MAGIC);
    jsonw_flush(w);
    if (!w->err && (w->depth || !w->done))
        jsonw_fail(w, -EINVAL);
    if (!w->err && w->sink == JSONW_SINK_FILE && ferror(w->file))
        jsonw_fail(w, -EIO);
    return w->err;
}
