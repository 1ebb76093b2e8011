/* SPDX-License-Identifier: MIT */
/*
 * pycheck.c: the checks of an offsets table's entries, shared by the debug
 * and asyncio tables (see pycheck.h).
 */
#include "base/compat.h"

#include "python/pycheck.h"

void pycheck_fail(struct pycheck *c, const char *table, const char *entry, uint64_t value,
                  const char *what, uint64_t bound)
{
    if (c->failed)
        return;
    c->failed = true;
    snprintf(c->why, c->why_len, "%s: '%s' = %" PRIu64 " %s %" PRIu64, table, entry, value, what,
             bound);
}

uint32_t pycheck_size(struct pycheck *c, const char *table, const char *entry, uint64_t v,
                      uint64_t cap)
{
    if (v == 0)
        pycheck_fail(c, table, entry, v, "is not a size larger than", 0);
    else if (v > cap)
        pycheck_fail(c, table, entry, v, "exceeds pyprofd's limit of", cap);
    return c->failed ? 0 : (uint32_t)v;
}

uint32_t pycheck_field(struct pycheck *c, const char *table, const char *entry, uint64_t v,
                       uint64_t base, uint64_t size, unsigned width)
{
    unsigned align = width > 8 ? 8 : width;
    if (v > UINT32_MAX || base + v + width > size)
        pycheck_fail(c, table, entry, v, "+ field width is outside its section of size",
                     size - base);
    else if ((base + v) % align != 0)
        pycheck_fail(c, table, entry, v, "is not aligned to", align);
    return c->failed ? 0 : (uint32_t)(base + v);
}
