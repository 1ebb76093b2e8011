/* SPDX-License-Identifier: MIT */
/*
 * memread_fake.h: a memread backend over an in-memory image, for unit tests
 * of everything that reads a target (discovery now, the unwinder later).
 * Segments are copied in; a read must fall entirely inside one segment, else
 * it fails with -EFAULT as an unmapped read would; where segments overlap the
 * first one added wins. memread_fake_fail_next()
 * injects an error into the next read (ESRCH for "the process exited").
 */
#ifndef PYPROFD_TESTS_MEMREAD_FAKE_H
#define PYPROFD_TESTS_MEMREAD_FAKE_H

#include "base/compat.h"

#include "memread/memread.h"

struct memread_fake;

/**
 * Creates an empty image and a reader over it. The reader owns the image:
 * memread_free(*mr) frees both. Returns 0 or -ENOMEM.
 */
int memread_fake_open(struct memread_fake **fake, struct memread **mr);
/** Maps a copy of @a len bytes of @a data at @a raddr, over what an earlier add mapped there (a
 * read is served by the newest segment that holds all of it). Returns 0, -ENOMEM or -E2BIG. */
int memread_fake_add(struct memread_fake *fake, uint64_t raddr, const void *data, size_t len);
/** The next read returns @a err (negative errno) instead of reading. */
void memread_fake_fail_next(struct memread_fake *fake, int err);
/** Number of readv calls made so far (a batched read counts once). */
unsigned memread_fake_calls(const struct memread_fake *fake);
/** Ranges and bytes asked for so far, over every range of every call. */
unsigned long memread_fake_ranges(const struct memread_fake *fake);
unsigned long memread_fake_bytes(const struct memread_fake *fake);
/**
 * From now on counts the ranges that overlap [@a raddr, @a raddr + @a len)
 * (one window at a time; the count starts at 0); memread_fake_watched()
 * returns the count.
 */
void memread_fake_watch(struct memread_fake *fake, uint64_t raddr, size_t len);
unsigned memread_fake_watched(const struct memread_fake *fake);
/** Overwrites @a len bytes at @a raddr inside an existing segment. Returns 0 or -EFAULT. */
int memread_fake_poke(struct memread_fake *fake, uint64_t raddr, const void *data, size_t len);

#endif
