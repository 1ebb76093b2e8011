/* SPDX-License-Identifier: MIT */
/*
 * compat.c: out-of-line helpers behind compat.h (the assertion failure path).
 */
#include "base/compat.h"

#ifndef NDEBUG
void compat_assert_fail(const char *cond, const char *file, int line)
{
    fprintf(stderr, "pyprofd: BUG: assertion '%s' failed at %s:%d\n", cond, file, line);
    fflush(stderr);
    abort();
}
#endif
