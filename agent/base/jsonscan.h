/* SPDX-License-Identifier: MIT */
/*
 * jsonscan.h: a strict, incremental JSON scanner (RFC 8259) whose memory does
 * not depend on its input. It is fed bytes in whatever pieces they arrive and
 * calls back once per token (object and array begin/end, key, string, number,
 * true, false, null, and the end of each top-level value); it builds no tree.
 * A caller that keeps only some of a document's fields (the Kubernetes pod
 * decoder, discovery/kube_stream.h) walks the tokens and ignores the rest, so
 * a 100 MiB list costs the same memory as a 1 KiB one.
 *
 * Strictness: exactly RFC 8259 — no comments, no trailing commas, no NaN or
 * Infinity, no leading zeros, no single quotes, no control character inside a
 * string, whitespace only of the four kinds; every byte of a string is valid
 * UTF-8 (no overlong forms, no encoded surrogates, nothing beyond U+10FFFF).
 * Escapes are decoded: "\uD83D\uDE00" becomes U+1F600; a \u escape of a lone
 * surrogate becomes U+FFFD and marks the token JSONSCAN_REPLACED; "\u0000"
 * marks it JSONSCAN_HAS_NUL. The first violation ends the scan with an error
 * that every later feed returns again (sticky) until jsonscan_reset().
 *
 * Bounds: nesting at most the max_depth given at creation (at most
 * JSONSCAN_MAX_DEPTH), else -ELOOP. A key, string or number keeps at most
 * text_cap bytes of its decoded text, cut on a UTF-8 character boundary and
 * marked JSONSCAN_CUT; full_len still tells its whole length. The scanner does
 * not bound how long a document is: the caller does, with
 * jsonscan_value_bytes().
 *
 * Ownership: a token's text is the scanner's, valid during the callback only.
 * Errors: negative errno values (see each function). Thread safety: none; one
 * scanner is fed by one thread.
 */
#ifndef PYPROFD_BASE_JSONSCAN_H
#define PYPROFD_BASE_JSONSCAN_H

#include "base/compat.h"

/** The deepest nesting a scanner can be made for. */
#define JSONSCAN_MAX_DEPTH 64u

enum jsonscan_tok {
    JSONSCAN_OBJECT_BEGIN,
    JSONSCAN_OBJECT_END,
    JSONSCAN_ARRAY_BEGIN,
    JSONSCAN_ARRAY_END,
    JSONSCAN_KEY,
    JSONSCAN_STRING,
    JSONSCAN_NUMBER,
    JSONSCAN_TRUE,
    JSONSCAN_FALSE,
    JSONSCAN_NULL,
    JSONSCAN_END, /* a top-level value is complete */
};

enum jsonscan_token_flags {
    JSONSCAN_CUT = 1 << 0,      /* text holds only the first len of full_len bytes */
    JSONSCAN_HAS_NUL = 1 << 1,  /* the string holds U+0000 (text stops short there for C) */
    JSONSCAN_REPLACED = 1 << 2, /* a lone surrogate escape became U+FFFD */
};

/** One token (borrowed: valid during the callback only). */
struct jsonscan_token {
    enum jsonscan_tok type;
    /* containers open around the token: 0 for a top-level value (its BEGIN
     * and END too), 1 for the keys and values directly inside it, ... */
    unsigned depth;
    /* KEY and STRING: the decoded text; NUMBER: the literal as written; ""
     * otherwise. NUL-terminated; len bytes. */
    const char *text;
    size_t len;
    uint64_t full_len; /* KEY, STRING, NUMBER: the whole text's length (> len when cut) */
    unsigned flags;    /* enum jsonscan_token_flags */
};

/**
 * Called once per token. Return 0 to go on; a non-zero value stops the feed,
 * which returns it; the scanner must then be reset before it is fed again.
 */
typedef int (*jsonscan_fn)(void *arg, const struct jsonscan_token *tok);

enum jsonscan_new_flags {
    /* a sequence of top-level values separated by optional whitespace (a
     * watch stream), instead of exactly one */
    JSONSCAN_MULTI = 1 << 0,
};

struct jsonscan;

/**
 * A new scanner: nesting at most @a max_depth (1..JSONSCAN_MAX_DEPTH), texts
 * kept to @a text_cap bytes (at least 16). Returns 0 with *@a out (free with
 * jsonscan_free()), -EINVAL (a bound out of range) or -ENOMEM.
 */
PYPROFD_WARN_UNUSED int jsonscan_new(unsigned max_depth, size_t text_cap, unsigned flags,
                                     struct jsonscan **out);
/** Frees; NULL is a no-op. */
void jsonscan_free(struct jsonscan *s);
/** Forgets everything fed so far (a sticky error too): ready for a new input. */
void jsonscan_reset(struct jsonscan *s);

/**
 * Scans @a len bytes at @a data, calling @a cb (may be NULL) per token.
 * Returns 0, the callback's non-zero value, or the error that ended the
 * input: -EBADMSG (not JSON, invalid UTF-8 in a string; in single-value mode
 * anything but whitespace after the value), -ELOOP (nested too deep).
 * Errors are sticky.
 */
PYPROFD_WARN_UNUSED int jsonscan_feed(struct jsonscan *s, const void *data, size_t len,
                                      jsonscan_fn cb, void *arg);

/**
 * The input ended: a top-level number still open is complete now. Returns
 * 0 when the input ended between values (in single-value mode: after exactly
 * one), the callback's value, -EBADMSG (inside a value, or no value at all
 * in single-value mode) or a feed's sticky error.
 */
PYPROFD_WARN_UNUSED int jsonscan_finish(struct jsonscan *s, jsonscan_fn cb, void *arg);

/**
 * Called from the callback of a JSONSCAN_OBJECT_BEGIN or JSONSCAN_ARRAY_BEGIN
 * token: what the container holds is still checked but not handed over (no
 * token, no text kept) until its own END, which is. Cheaper than ignoring
 * the tokens. Has no effect from another token's callback.
 */
void jsonscan_skip(struct jsonscan *s);

/** Whether the scanner stands between top-level values with no error. */
bool jsonscan_idle(const struct jsonscan *s);

/**
 * Bytes of the current top-level value so far (0 between values); during the
 * JSONSCAN_END callback, the whole length of the value that ended.
 */
uint64_t jsonscan_value_bytes(const struct jsonscan *s);

/** Bytes fed since the last reset. */
uint64_t jsonscan_offset(const struct jsonscan *s);

/** Containers open now. */
unsigned jsonscan_depth(const struct jsonscan *s);

/** Bytes the scanner holds (its struct and text buffer). */
size_t jsonscan_memory(const struct jsonscan *s);

#endif /* PYPROFD_BASE_JSONSCAN_H */
