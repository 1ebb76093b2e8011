/* SPDX-License-Identifier: MIT */
/*
 * golden.h: the text form of an unwinder result that recorded fixtures
 * compare against (tests/fixtures/unwind/<case>/expected.txt): one header
 * line per thread, then one line per frame, leaf first:
 *
 *   thread 4242 main holds_gil status=ok
 *     Worker.work /app/work.py 28 28 0 4
 *
 * (function, file, line, end line, column, end column; "-" for unknown).
 */
#ifndef PYPROFD_TESTS_GOLDEN_H
#define PYPROFD_TESTS_GOLDEN_H

#include "base/compat.h"

#include "unwind/unwind.h"

/** Writes @a r in the golden format to @a out. */
void golden_write(const struct unwind_result *r, FILE *out);

#endif
