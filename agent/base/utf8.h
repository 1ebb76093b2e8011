/* SPDX-License-Identifier: MIT */
/*
 * utf8.h: the UTF-8 rules every module needs, written once: how long the
 * sequence at a position is (0 when it is not a valid one: a stray
 * continuation byte, an overlong form, a surrogate, beyond U+10FFFF, cut
 * short), whether a whole string is valid, encoding one code point, and
 * cutting a string to a byte budget without splitting a sequence.
 *
 * Pure functions; no allocation; thread-safe.
 */
#ifndef PYPROFD_BASE_UTF8_H
#define PYPROFD_BASE_UTF8_H

#include "base/compat.h"

#define UTF8_REPLACEMENT 0xFFFDu /* U+FFFD, what an invalid sequence becomes */
#define UTF8_MAX_SEQ     4u

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

#endif /* PYPROFD_BASE_UTF8_H */
