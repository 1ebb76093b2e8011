/* SPDX-License-Identifier: MIT */
/*
 * alloc.h: the only door to the heap. Every allocation pyprofd makes goes
 * through these wrappers (scripts/check-src.sh rejects raw malloc/free
 * elsewhere), so that the daemon can keep a memory budget and tests can inject
 * allocation failures.
 *
 * Invariants:
 *  - alloc_in_use() is the sum of the sizes of live blocks handed out here.
 *  - When a budget is set, an allocation that would take alloc_in_use() over it
 *    fails with NULL/ENOMEM: over budget is an ordinary error, never a crash.
 *  - alloc_free(NULL) is a no-op.
 *
 * Thread safety: all functions may be called from any thread; the counters are
 * atomic. alloc_set_budget() and alloc_fail_nth() are meant for start-up and
 * tests, not to be raced against allocations.
 */
#ifndef PYPROFD_BASE_ALLOC_H
#define PYPROFD_BASE_ALLOC_H

#include "base/compat.h"

/** Like malloc(); NULL with errno ENOMEM when out of memory or over budget. */
PYPROFD_WARN_UNUSED void *alloc_malloc(size_t size);
/** Like calloc(); checks n * size for overflow. */
PYPROFD_WARN_UNUSED void *alloc_calloc(size_t n, size_t size);
/**
 * Like realloc(). On failure returns NULL and leaves @a ptr untouched and owned
 * by the caller. alloc_realloc(NULL, n) is alloc_malloc(n).
 */
PYPROFD_WARN_UNUSED void *alloc_realloc(void *ptr, size_t size);
/** Copy of the NUL-terminated @a s; the caller owns the result. */
PYPROFD_WARN_UNUSED char *alloc_strdup(const char *s);
/** Copy of the first @a len bytes of @a s plus a NUL; the caller owns the result. */
PYPROFD_WARN_UNUSED char *alloc_strndup(const char *s, size_t len);
/** Frees a block from this allocator; NULL is a no-op. */
void alloc_free(void *ptr);
/**
 * Frees a block a library allocated with the C library's malloc() and left
 * to its caller to free (libdw's dwarf_cfi_addrframe()); NULL is a no-op.
 */
void alloc_free_foreign(void *ptr);

/** Bytes currently allocated through this module. */
size_t alloc_in_use(void);
/** Sets the budget in bytes; 0 means unlimited (the default). */
void alloc_set_budget(size_t bytes);
/** Number of allocations refused (over budget, injected or real ENOMEM). */
uint64_t alloc_failures(void);

/**
 * Test hook: make the @a n-th allocation from now fail (1 = the next one),
 * then succeed again. 0 disables injection. Returns the number of allocations
 * made since the previous call, which is how a fault sweep counts them.
 */
uint64_t alloc_fail_nth(uint64_t n);

#endif /* PYPROFD_BASE_ALLOC_H */
