/* SPDX-License-Identifier: MIT */
/*
 * codecache.h: bounded cache of code-object metadata, keyed by the code
 * object's remote address: qualified name, file name, first line, line table
 * and where the bytecode starts, plus the last instruction looked up and its
 * position (a loop sampled twice costs no decoding).
 *
 * Memory grows with use up to caps set at creation: the table of entries
 * starts small and doubles (rehashing: entry pointers move) until it reaches
 * its cap; names and line tables go to an arena of blocks that are allocated
 * as needed (4 KiB, then each double the last; strings never move) up to the
 * arena cap. When the table at its cap or the arena is full, the whole cache
 * is cleared (and the clear is counted); the blocks are kept for reuse. So
 * insertion allocates only while a cache grows to its working size (a few
 * times in its life); steady-state sampling never allocates.
 *
 * Invalidation is the caller's: on CPython 3.14+ it clears the cache when an
 * interpreter's code_object_generation moves (a code object was freed, so an
 * address may be reused); on 3.13 it re-reads each cached code object once per
 * sample and compares the fields kept in the entry (codecache_matches).
 *
 * Thread safety: one thread at a time.
 */
#ifndef PYPROFD_UNWIND_CODECACHE_H
#define PYPROFD_UNWIND_CODECACHE_H

#include "base/compat.h"

#include "unwind/linetable.h"

#define CODECACHE_POSITIONS 4u  /* instruction positions remembered per code object */
#define CODECACHE_FIRST_ID  16u /* smaller ids are free for the caller's own use */

/** What the walker needs of one code object. Strings live in the cache arena. */
struct code_info {
    uint64_t raddr;
    /* set by codecache_insert(): unique in the process, never reused (see
     * unwind_frame.code_id); ids below CODECACHE_FIRST_ID are never given */
    uint64_t id;
    const char *qualname;
    const char *filename;
    /* the line table: linetable_len bytes; NULL when it could not be read.
     * A table read empty (len 0) is not NULL: it has a meaning (3.9: every
     * instruction on co_firstlineno) */
    const uint8_t *linetable;
    size_t linetable_len;
    int32_t firstlineno;
    uint64_t bytecode_raddr; /* start of co_code_adaptive */
    /* the line table's format (enum pyabi_lines): with a format other than
     * PYABI_LINES_LOCATIONS (3.9, 3.10), codecache_position() takes a byte
     * offset into co_code, not a code unit */
    unsigned lines;
    /* the code object's own fields, for the 3.13 re-check */
    uint64_t qualname_raddr, filename_raddr, linetable_raddr;
    /* the last lookups, most recent first: a loop moving between a few
     * instructions costs no decoding */
    uint32_t last_addrq[CODECACHE_POSITIONS];
    struct linetable_pos last_pos[CODECACHE_POSITIONS];
    uint8_t nlast; /* valid entries of last_addrq/last_pos */
};

struct codecache;

/**
 * Creates a cache with room for @a start entries at first, growing up to
 * @a entries (both rounded up to a power of two), and an arena of at most
 * @a arena_bytes (allocated as used). Returns 0 or -ENOMEM.
 */
PYPROFD_WARN_UNUSED int codecache_new(size_t start, size_t entries, size_t arena_bytes,
                                      struct codecache **out);

/** Bytes the cache holds now (its table and arena blocks). */
size_t codecache_memory(const struct codecache *c);
void codecache_free(struct codecache *c);

/** The entry for @a raddr, or NULL. */
struct code_info *codecache_find(struct codecache *c, uint64_t raddr);

/**
 * Adds an entry, copying the strings and line table into the arena (clearing
 * the whole cache first if it is full), with a new id and no remembered
 * positions. Returns the entry, or NULL if the item alone does not fit an
 * empty cache (or memory ran out). Pointers to entries returned before are
 * invalid after an insert (the table may have grown or been cleared). Thread safety: ids come from
 * one process-wide atomic counter, so caches used by different threads never hand out the same id.
 */
struct code_info *codecache_insert(struct codecache *c, const struct code_info *info);

/**
 * The source position of code unit @a addrq of @a ci, from its line table,
 * remembering the last CODECACHE_POSITIONS lookups. Returns 0, or -ENOENT
 * when the entry has no line table (one that could not be read) or the table
 * does not cover @a addrq. An empty table is decoded like any other: what
 * CPython's PyCode_Addr2Line() makes of it (3.9: co_firstlineno; 3.10+: none).
 */
PYPROFD_WARN_UNUSED int codecache_position(struct code_info *ci, uint32_t addrq,
                                           struct linetable_pos *out);

/** Drops every entry. */
void codecache_clear(struct codecache *c);

/** Entries, and how often the cache was cleared because it was full. */
size_t codecache_count(const struct codecache *c);
uint64_t codecache_overflows(const struct codecache *c);

#endif /* PYPROFD_UNWIND_CODECACHE_H */
