/* SPDX-License-Identifier: MIT */
/*
 * termtext.h: text from a profiled process made safe to show on a terminal.
 *
 * Function names, file names, task names and paths come from the target,
 * which chooses them: a name holding "\x1b]0;...\x07" retitles the user's
 * terminal window, "\x1b[31m" turns the rest of the screen red, and worse
 * sequences exist. Like `ps` and `ls -b`, pyprofd shows such bytes instead of
 * sending them, each as the four characters \xNN (lower-case hex):
 *   - C0 controls (0x00-0x1f, tab and newline included) and DEL (0x7f);
 *   - C1 controls U+0080-U+009F, which a terminal may act on like ESC
 *     sequences (U+009B is CSI): each byte of their UTF-8 form, \xc2\x9b;
 *   - every byte that does not start a valid UTF-8 sequence (utf8_seq_len():
 *     stray continuation bytes, overlong forms, surrogates, cut sequences),
 *     among them the raw 8-bit C1 bytes 0x80-0x9f.
 * Everything else, printable ASCII and valid UTF-8, is kept as it is. A
 * backslash is kept too: the escapes are there to protect the terminal, not
 * to make names reversible (a name that holds the text "\x1b" looks like one
 * that holds ESC; both are shown, neither acts).
 *
 * Widths are terminal columns of the escaped text: an escape is 4 columns,
 * an ASCII character 1, a code point of the East Asian wide and emoji
 * ranges 2, any other code point 1 (combining marks and zero-width
 * characters are counted as 1 too: a line is cut a little early, never too
 * late). Cutting never splits an escape or a UTF-8 sequence.
 *
 * Pure functions, no allocation, thread-safe (termtext_fputs() writes to the
 * stream it is given).
 */
#ifndef PYPROFD_BASE_TERMTEXT_H
#define PYPROFD_BASE_TERMTEXT_H

#include "base/compat.h"

#include <stdio.h>

/** Bytes of escaped text one input byte can become ("\xNN"). */
#define TERMTEXT_MAX_GROWTH 4u

/**
 * Escapes the @a n bytes at @a s into @a out (@a size bytes; NUL-terminated
 * whenever @a size > 0), stopping before the first character or escape that
 * would not fit in @a size - 1 bytes or would take the text past @a max_cols
 * columns (SIZE_MAX: no limit). NUL bytes in @a s are escaped like the other
 * controls. Stores the columns written in *@a cols when @a cols is not NULL.
 * Returns how many bytes of @a s were taken: @a n when all of it was.
 * @a out of TERMTEXT_MAX_GROWTH * @a n + 1 bytes always takes everything.
 */
size_t termtext_escape(const char *s, size_t n, char *out, size_t size, size_t max_cols,
                       size_t *cols);

/**
 * termtext_escape() of the NUL-terminated @a s into @a buf (@a size > 0
 * bytes), for use as a printf argument: returns @a buf. What does not fit is
 * left out (see termtext_escape()).
 */
const char *termtext_str(const char *s, char *buf, size_t size);

/** The columns the escaped form of the @a n bytes at @a s takes. */
size_t termtext_width(const char *s, size_t n);

/**
 * Writes the escaped form of the NUL-terminated @a s to @a f. Returns 0, or
 * EOF when a write failed (errno set by stdio), as fputs() does.
 */
int termtext_fputs(const char *s, FILE *f);

#endif /* PYPROFD_BASE_TERMTEXT_H */
