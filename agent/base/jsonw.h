/* SPDX-License-Identifier: MIT */
/*
 * jsonw.h: the one way pyprofd writes JSON: a streaming writer (no tree:
 * each piece goes out as it is given, gathered in a small stage), into a
 * stdio stream (the files of `record`, `dump`'s standard output), a bounded
 * buffer (the HTTP views), or nowhere but a byte count (what a piece would
 * cost, decided by the code that writes it). The writer places the commas
 * and checks the nesting; the caller says what comes next.
 *
 *   struct jsonw w;
 *   jsonw_init_file(&w, out, 0);
 *   jsonw_object(&w, NULL);          // top level: no key
 *   jsonw_string(&w, "name", s);     // in an object: every value has a key
 *   jsonw_array(&w, "lines");
 *   jsonw_int(&w, NULL, 3);          // in an array: none
 *   jsonw_end(&w);
 *   jsonw_end(&w);
 *   err = jsonw_finish(&w);
 *
 * Strings are written so that the document is valid UTF-8, can sit inside
 * an HTML <script> element, and holds no C0 control character nor DEL:
 *   - '"' and '\' as \" and \\;
 *   - the C0 controls and DEL as \u00xx (lowercase hex: "\u000a", not "\n");
 *   - '<' as \u003c, so "</script>" and "<!--" never appear;
 *   - valid UTF-8 as it is; each invalid sequence (maximal subpart, as
 *     base/utf8.h) as U+FFFD, counted with utf8_count_replaced() (not by a
 *     writer that only counts bytes).
 * JSONW_TERMINAL adds the C1 controls (U+0080-U+009F, valid JSON as they
 * are) as \u00xx, for output that may reach a terminal; JSONW_NOT_HTML
 * writes '<' as it is, for a document no page embeds, which people read.
 * JSONW_STRING_PICTURES writes a line of text as a page shows it (see its
 * comment). '>', '&', '/', U+2028 and U+2029 are written as they are (valid
 * in JSON, and in a script since ES2019).
 *
 * Numbers: integers exactly; doubles with the digits the caller asks for
 * (printf's %.*g or %.*f). JSON has no NaN or infinity: a non-finite double
 * is written as null.
 *
 * Layout: compact ("{\"a\":1,\"b\":[2,3]}"), or with JSONW_PRETTY the
 * layout json-c's JSON_C_TO_STRING_PRETTY gives (/targets kept it): a
 * newline after every '{', '[' and ',', two spaces per level before each
 * member and closing bracket, and no space after ':'.
 *
 * Errors: the calls return nothing; the first error is kept, every later
 * call does nothing, and jsonw_finish() returns it: -EIO (the stream's write
 * failed; stdio knows no errno: base/outfile.h's stream keeps the real one),
 * -E2BIG or -ENOMEM (the buffer's cap, or its growth), -ELOOP (nested deeper
 * than JSONW_MAX_DEPTH), -EINVAL (a caller's bug: a value with no key in an
 * object, a key in an array, jsonw_end() with nothing open, a second
 * top-level value).
 *
 * Ownership: the writer borrows the stream or buffer it writes to until it
 * is finished (the caller opens, closes and frees them); it allocates
 * nothing itself, so there is nothing to release. It gathers small pieces
 * (JSONW_STAGE bytes) before it hands them on: until jsonw_finish(), the
 * stream or buffer may not hold everything yet, and nothing else may be
 * written to it. Every string argument is borrowed for the call.
 *
 * Thread safety: none; one thread at a time per writer. The replacement
 * counter is base/utf8.h's (atomic).
 */
#ifndef PYPROFD_BASE_JSONW_H
#define PYPROFD_BASE_JSONW_H

#include "base/compat.h"

#include <stdio.h>

#include "base/buf.h"

/*
 * The deepest nesting a writer takes: the flame graph's tree nests two
 * levels per frame (a node's object and its "c" array), for stacks of up
 * to AGG_MAX_LOCATIONS (3072) frames. Two bits a level: 2 KiB per writer.
 */
#define JSONW_MAX_DEPTH 8192u

/* Bytes gathered before they go to the stream or buffer (one call per piece is slow). */
#define JSONW_STAGE 512u

enum jsonw_flags {
    /** json-c's pretty layout (see the top of this file). */
    JSONW_PRETTY = 1 << 0,
    /** The C1 controls (U+0080-U+009F) escaped too: output that may go to a terminal. */
    JSONW_TERMINAL = 1 << 1,
    /**
     * '<' as it is: a document that is never put inside an HTML page (`dump
     * --json`, /targets), where "<GC>" reads better than "\u003cGC>".
     */
    JSONW_NOT_HTML = 1 << 2,
};

enum jsonw_string_flags {
    /**
     * A line of text as a page shows it (the heatmap's source lines): every
     * control character but tab becomes its Unicode control picture, one
     * character of 3 bytes (U+2400 + c; U+2421 for DEL), and a tab is
     * written as \t.
     */
    JSONW_STRING_PICTURES = 1 << 0,
};

enum jsonw_sink { JSONW_SINK_NONE, JSONW_SINK_FILE, JSONW_SINK_BUF };

/** A writer: an embeddable value; its fields are private (use the functions). */
struct jsonw {
    /* private: */
    enum jsonw_sink sink;
    FILE *file;
    struct buf *buf;
    unsigned flags;
    int err;
    unsigned depth; /* containers open */
    bool done;      /* the top-level value is complete */
    uint64_t bytes; /* written (or counted) so far */
    size_t staged;  /* bytes in stage */
    uint32_t magic;
    char stage[JSONW_STAGE];
    uint8_t is_array[JSONW_MAX_DEPTH / 8];  /* per open level: an array, else an object */
    uint8_t has_items[JSONW_MAX_DEPTH / 8]; /* per open level: a value was written in it */
};

/** A writer to @a f (borrowed; not flushed nor closed by the writer), with @a flags. */
void jsonw_init_file(struct jsonw *w, FILE *f, unsigned flags);

/** A writer appending to @a b (borrowed; initialised by the caller, whose cap bounds it). */
void jsonw_init_buf(struct jsonw *w, struct buf *b, unsigned flags);

/** A writer that writes nothing and counts the bytes it would have (jsonw_bytes()). */
void jsonw_init_count(struct jsonw *w, unsigned flags);

/**
 * Opens an object (jsonw_object()) or an array (jsonw_array()) as the next
 * value: under @a key inside an object, with @a key NULL inside an array or
 * at the top level. jsonw_end() closes the innermost one.
 */
void jsonw_object(struct jsonw *w, const char *key);
void jsonw_array(struct jsonw *w, const char *key);
void jsonw_end(struct jsonw *w);

/** The C string @a s as a string value (see jsonw_object() for @a key). */
void jsonw_string(struct jsonw *w, const char *key, const char *s);

/**
 * The @a n bytes at @a s (which may hold NUL bytes: \u0000; NULL when @a n
 * is 0) as a string value, with @a flags (enum jsonw_string_flags).
 */
void jsonw_stringn(struct jsonw *w, const char *key, const char *s, size_t n, unsigned flags);

void jsonw_int(struct jsonw *w, const char *key, int64_t v);
void jsonw_uint(struct jsonw *w, const char *key, uint64_t v);

/**
 * @a v with @a digits significant digits (1-17; printf's "%.*g"), and ".0"
 * after a whole number, so that a reader that tells them apart (Python's
 * json) reads a float: 100.0, 0.5, 1e+20. Non-finite: null.
 */
void jsonw_double(struct jsonw *w, const char *key, double v, int digits);

/** @a v with @a decimals digits after the point (0-17; printf's "%.*f"). Non-finite: null. */
void jsonw_fixed(struct jsonw *w, const char *key, double v, int decimals);

void jsonw_bool(struct jsonw *w, const char *key, bool v);
void jsonw_null(struct jsonw *w, const char *key);

/** The first error so far (0: none; bytes still gathered may fail later); see the top. */
int jsonw_error(const struct jsonw *w);

/** Bytes written (or, for a counting writer, that would have been) so far. */
uint64_t jsonw_bytes(const struct jsonw *w);

/**
 * Ends the document: hands on what is gathered, and returns the first
 * error, else -EINVAL unless exactly one complete top-level value was
 * written, else (a stream) -EIO when the stream's error flag is set, else
 * 0. The stream is not flushed. The writer may be initialised again.
 */
PYPROFD_WARN_UNUSED int jsonw_finish(struct jsonw *w);

#endif /* PYPROFD_BASE_JSONW_H */
