/* SPDX-License-Identifier: MIT */
/*
 * utf8.h: the UTF-8 rules every module needs, written once: how long the
 * sequence at a position is (0 when it is not a valid one: a stray
 * continuation byte, an overlong form, a surrogate, beyond U+10FFFF, cut
 * short), whether a whole string is valid, encoding one code point, and
 * cutting a string to a byte budget without splitting a sequence.
 *
 * And the rule "valid UTF-8 out, always" (docs/agent.md, "Text is valid
 * UTF-8"): text that comes from outside pyprofd (a process's command line,
 * names and paths, a thread's name) goes through utf8_sanitize() where it
 * enters pyprofd's data, which replaces every invalid sequence by U+FFFD
 * exactly as CPython's bytes.decode("utf-8", "replace") does: one U+FFFD per
 * maximal subpart of an ill-formed sequence (Unicode ch. 3, "U+FFFD
 * Substitution of Maximal Subparts", the WHATWG Encoding Standard's decoder).
 * Writers that stream text (JSON, the Prometheus text format) walk it with
 * utf8_next() and do the same. Every U+FFFD written for invalid input is
 * counted in one process-wide counter, utf8_replaced_total(), exported as
 * pyprofd_utf8_replaced_total.
 *
 * Pure functions but for that counter (atomic, relaxed); no allocation;
 * thread-safe.
 */
#ifndef PYPROFD_BASE_UTF8_H
#define PYPROFD_BASE_UTF8_H

#include "base/compat.h"

#define UTF8_REPLACEMENT     0xFFFDu        /* U+FFFD, what an invalid sequence becomes */
#define UTF8_REPLACEMENT_STR "\xef\xbf\xbd" /* ... in UTF-8 */
#define UTF8_REPLACEMENT_LEN 3u
#define UTF8_MAX_SEQ         4u

/**
 * Length (1-4) of the valid UTF-8 sequence that starts @a s, looking at no
 * more than @a n bytes, or 0 when the bytes there are not one (or @a n is 0).
 * The code point is stored in *@a cp when @a cp is not NULL. NUL is a valid
 * one-byte sequence here; callers that refuse it check for it.
 */
size_t utf8_seq_len(const unsigned char *s, size_t n, uint32_t *cp);

/** Whether the @a n bytes at @a s are valid UTF-8 with no NUL byte. */
bool utf8_valid(const char *s, size_t n);

/**
 * Writes the UTF-8 form of @a cp into @a out (at least UTF8_MAX_SEQ bytes)
 * and returns its length; a surrogate or a value beyond U+10FFFF is written
 * as U+FFFD.
 */
size_t utf8_encode(uint32_t cp, unsigned char *out);

/**
 * The longest prefix of the @a n bytes at @a s that is at most @a max bytes
 * and does not end inside a multi-byte sequence: its length. (Whether the
 * bytes before the cut are valid is not checked; only a sequence the cut
 * would split is dropped whole.)
 */
size_t utf8_cut(const char *s, size_t n, size_t max);

/**
 * The next piece of the @a n (> 0) bytes at @a s: a valid sequence (*@a valid
 * true) or the maximal subpart of an ill-formed one (*@a valid false), which
 * is one U+FFFD in the output: a lead byte (C2-F4) with the continuation
 * bytes that could still have completed it (E0 takes A0-BF next, ED 80-9F,
 * F0 90-BF, F4 80-8F), or else one byte (80-C1, F5-FF, or a lead byte whose
 * next byte could not continue it). Returns its length, 1 to 4 (1 to 3 when
 * not valid). NUL is a valid one-byte piece.
 */
size_t utf8_next(const unsigned char *s, size_t n, bool *valid);

/**
 * THE boundary: copies the @a n bytes at @a in to @a out (@a cap bytes) with
 * every maximal invalid subsequence (utf8_next()) replaced by U+FFFD, exactly
 * as Python's bytes.decode("utf-8", "replace").encode("utf-8"). The output is
 * NUL-terminated when @a cap > 0 and, when the whole result does not fit in
 * @a cap - 1 bytes, cut on a character boundary (a U+FFFD is never split
 * either). NUL bytes in the input are copied (they are valid UTF-8); callers
 * that hold C strings read up to the first. @a in and @a out must not
 * overlap. Returns the length written, without the NUL (0 when @a cap is 0).
 *
 * Adds the number of U+FFFD written for invalid input to the process-wide
 * counter (utf8_replaced_total()).
 */
size_t utf8_sanitize(char *out, size_t cap, const char *in, size_t n);

/**
 * The length (without the NUL) utf8_sanitize() needs for all of the @a n
 * bytes at @a in, and in *@a replaced (may be NULL) how many U+FFFD it would
 * write. Counts nothing.
 */
size_t utf8_sanitized_len(const char *in, size_t n, size_t *replaced);

/**
 * The length of the @a n bytes at @a s without a multi-byte sequence cut
 * short at their end: a lead byte followed by fewer continuation bytes than
 * it announces, all of which could still continue it. For text that was cut
 * to a byte budget by the kernel (a 15-byte comm) or by pyprofd (a capped
 * command line): the character that did not fit is dropped rather than shown
 * as U+FFFD. Anything else at the end, invalid or not, is left for
 * utf8_sanitize().
 */
size_t utf8_trim_cut(const char *s, size_t n);

/** Adds @a n to the counter of U+FFFD written, for writers that replace while streaming. */
void utf8_count_replaced(uint64_t n);

/** U+FFFD written for invalid input since the process started (pyprofd_utf8_replaced_total). */
uint64_t utf8_replaced_total(void);

#endif /* PYPROFD_BASE_UTF8_H */
