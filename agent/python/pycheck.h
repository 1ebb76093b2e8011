/* SPDX-License-Identifier: MIT */
/*
 * pycheck.h: the checks an offsets table from a target gets before pyprofd
 * uses it, written once for both tables (pyabi.c: _Py_DebugOffsets and the
 * generated layouts; pyasync.c: the asyncio table and the debug entries
 * async walking uses). Each check takes an entry's raw value and names the
 * entry: the first failure is kept as one line, "debug offsets:
 * 'thread_state.current_frame' = 4000 + field width is outside its section
 * of size 888", and later checks add nothing, so a caller runs them all and
 * looks at `failed` once.
 *
 * Internal to agent/python/.
 *
 * Thread safety: a struct pycheck belongs to one validation.
 */
#ifndef PYPROFD_PYTHON_PYCHECK_H
#define PYPROFD_PYTHON_PYCHECK_H

#include "base/compat.h"

/** One validation: where its message goes, and whether a check failed. */
struct pycheck {
    char *why; /* the first failure's text (borrowed; NUL-terminated when why_len > 0) */
    size_t why_len;
    bool failed;
};

/**
 * Records a failure, unless one is recorded already: "@a table: '@a entry' =
 * @a value @a what @a bound" (@a table: "debug offsets", "generated layout",
 * "asyncio offsets").
 */
void pycheck_fail(struct pycheck *c, const char *table, const char *entry, uint64_t value,
                  const char *what, uint64_t bound);

/**
 * A section size @a v: non-zero and at most @a cap bytes. Returns it, or 0
 * once any check has failed.
 */
uint32_t pycheck_size(struct pycheck *c, const char *table, const char *entry, uint64_t v,
                      uint64_t cap);

/**
 * A field at @a base + @a v, @a width bytes wide and aligned to min(@a width,
 * 8) (a two-pointer field is pointer-aligned), inside a section of @a size
 * bytes (@a base: where a nested section starts in its outer one). Returns
 * @a base + @a v, or 0 once any check has failed.
 */
uint32_t pycheck_field(struct pycheck *c, const char *table, const char *entry, uint64_t v,
                       uint64_t base, uint64_t size, unsigned width);

#endif /* PYPROFD_PYTHON_PYCHECK_H */
