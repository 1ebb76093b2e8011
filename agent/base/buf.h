/* SPDX-License-Identifier: MIT */
/*
 * buf.h: a bounded, growable byte buffer (curl's dynbuf, git's strbuf): the
 * one way pyprofd builds strings and byte arrays of unknown length. Every
 * buffer has a cap set when it is initialised; growing past it fails with
 * -E2BIG and leaves the buffer as it was, so a hostile input (a config
 * value, a reply, a remote string) costs at most the cap.
 *
 * Invariants: data is NUL-terminated whenever it is not NULL (so a text
 * buffer is a C string); len <= max; an empty buffer may hold no memory.
 * The struct is an embeddable value; its fields are private: use the
 * functions. buf_init() sets a magic value the others assert (a buffer used
 * without init is pyprofd's bug).
 *
 * Ownership: the buffer owns data until buf_take(); buf_release() frees.
 * Thread safety: none; one thread at a time per buffer.
 */
#ifndef PYPROFD_BASE_BUF_H
#define PYPROFD_BASE_BUF_H

#include "base/compat.h"

struct buf {
    /* private: */
    char *data;
    size_t len;
    size_t cap; /* bytes allocated (room for len + 1) */
    size_t max; /* the cap on len */
    uint32_t magic;
};

/** Makes @a b an empty buffer that will never hold more than @a max bytes. */
void buf_init(struct buf *b, size_t max);
/** Frees the memory; @a b may be initialised again. A zeroed struct is a no-op. */
void buf_release(struct buf *b);
/** Empties @a b, keeping its memory. */
void buf_reset(struct buf *b);

/** Appends @a n bytes. Returns 0, -E2BIG (over the cap) or -ENOMEM; on failure @a b is unchanged.
 */
PYPROFD_WARN_UNUSED int buf_add(struct buf *b, const void *p, size_t n);
/** Appends a C string. */
PYPROFD_WARN_UNUSED int buf_adds(struct buf *b, const char *s);
/** Appends one byte. */
PYPROFD_WARN_UNUSED int buf_addc(struct buf *b, char c);
/** Appends printf output. Returns 0, -E2BIG, -ENOMEM or -EINVAL (a bad format). */
PYPROFD_WARN_UNUSED int buf_addf(struct buf *b, const char *fmt, ...) PYPROFD_PRINTF(2, 3);

/** The bytes, NUL-terminated; "" for an empty buffer. Valid until the next change. */
const char *buf_str(const struct buf *b);
size_t buf_len(const struct buf *b);

/**
 * Hands the bytes over (NUL-terminated; the caller frees with alloc_free())
 * and leaves @a b empty (initialised, same cap). Returns NULL and sets
 * errno to ENOMEM when an empty buffer's "" cannot be allocated. *@a len
 * (may be NULL) gets the length.
 */
char *buf_take(struct buf *b, size_t *len);

/** A stream that appends to a buffer: see buf_fopen(). */
struct buf_stream {
    struct buf *b;
    int err; /* the first failed append's error (-E2BIG, -ENOMEM); 0 while none */
};

/**
 * A write-only stdio stream appending to @a s->b (fopencookie), for code
 * that writes to a FILE. A write that would pass the cap or cannot grow
 * fails: the stream's error flag is set and @a s->err says why. Close it
 * (fclose) before reading the buffer; @a s must outlive the stream.
 * Returns NULL when out of memory.
 */
FILE *buf_fopen(struct buf_stream *s);

#endif /* PYPROFD_BASE_BUF_H */
