/* SPDX-License-Identifier: MIT */
/*
 * pyopcode.c: lookups in the generated opcode tables (opcodes.c).
 */
#include "base/compat.h"

#include "python/pyopcode.h"

const char *pyopcode_name(unsigned minor, unsigned op, const char **base)
{
    const char *const(*t)[3] = pyopcode_table(minor);
    if (!t || op > 255 || !t[op][PYOPCODE_NAME])
        return NULL;
    if (base)
        *base = t[op][PYOPCODE_BASE];
    return t[op][PYOPCODE_NAME];
}
