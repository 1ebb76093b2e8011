/* SPDX-License-Identifier: MIT */
/*
 * compat.h: the first include of every pyprofd source file.
 *
 * It pulls in the standard headers nearly every file needs, the attribute
 * macros (the only way pyprofd code spells a GCC/Clang attribute), the test
 * hooks (PYPROFD_STATIC) and the assertion macro, and finally banned.h, which
 * turns calls of unsafe libc functions into compile errors. CMake defines
 * _GNU_SOURCE for every target; it is repeated here so the header also works
 * when compiled on its own by a tool.
 */
#ifndef PYPROFD_BASE_COMPAT_H
#define PYPROFD_BASE_COMPAT_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/** Callers must look at the result (fallible functions). */
#define PYPROFD_WARN_UNUSED __attribute__((warn_unused_result))
/** printf-style checking of argument @a fmt against the arguments from @a first. */
#define PYPROFD_PRINTF(fmt, first) __attribute__((format(printf, fmt, first)))
#define PYPROFD_NORETURN           __attribute__((noreturn))
#define PYPROFD_UNUSED             __attribute__((unused))

/*
 * File-local functions that unit tests need to reach are PYPROFD_STATIC: plain
 * static in the product, external in the pyprofd_ut library (-DPYPROFD_UNITTEST).
 */
#ifdef PYPROFD_UNITTEST
#define PYPROFD_STATIC
#else
#define PYPROFD_STATIC static
#endif

/** Number of elements of a true array (not a pointer). */
#define PYPROFD_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/*
 * PYPROFD_ASSERT guards pyprofd's own invariants. It is on in debug, sanitizer
 * and CI builds (NDEBUG unset) and compiled out in release builds. Never use it
 * on anything that came from outside: remote memory, /proc, files, the network.
 */
#ifdef NDEBUG
#define PYPROFD_ASSERT(cond) ((void)0)
#else
PYPROFD_NORETURN void compat_assert_fail(const char *cond, const char *file, int line);
#define PYPROFD_ASSERT(cond) ((cond) ? (void)0 : compat_assert_fail(#cond, __FILE__, __LINE__))
#endif

#include "base/banned.h"

#endif /* PYPROFD_BASE_COMPAT_H */
