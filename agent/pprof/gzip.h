/* SPDX-License-Identifier: MIT */
/*
 * gzip.h: gzip (RFC 1952) compression of whole buffers, for profiles on the
 * wire and on disk (stage 6). pprof consumers recognise gzip by its magic
 * bytes; raw zlib or deflate streams are not accepted by them, so this module
 * speaks only the gzip wrapper (zlib windowBits 15 + 16).
 *
 * Both directions work on one buffer in memory and return a new buffer
 * allocated with alloc_* (base/alloc.h); the caller owns it and frees it with
 * alloc_free(). zlib's own working memory also comes from alloc_*, so it
 * counts against the memory budget and fault injection reaches it.
 *
 * Bounds: every call takes a cap on the size of its output. Decompression
 * treats its input as untrusted: a stream that would inflate beyond the cap
 * fails with -E2BIG without allocating more than the cap, and a damaged,
 * truncated or non-gzip stream fails with -EINVAL.
 *
 * Errors: 0, -EINVAL, -E2BIG, -ENOMEM. On failure *out is left untouched.
 *
 * Thread safety: no shared state; calls may run concurrently.
 */
#ifndef PYPROFD_PPROF_GZIP_H
#define PYPROFD_PPROF_GZIP_H

#include "base/compat.h"

/** Compression level used by gzip_compress(): zlib's default trade-off. */
#define GZIP_LEVEL 6

/**
 * Compresses the @a in_len bytes at @a in (borrowed) into a gzip stream of at
 * most @a max_out bytes. Returns 0 with the stream in *@a out (caller owns;
 * alloc_free()) and its length in *@a out_len; -E2BIG when the stream would
 * exceed @a max_out or @a in_len does not fit zlib's 32-bit counters; -ENOMEM.
 */
PYPROFD_WARN_UNUSED int gzip_compress(const void *in, size_t in_len, size_t max_out, uint8_t **out,
                                      size_t *out_len);

/**
 * Decompresses the single gzip member at @a in (@a in_len bytes, untrusted,
 * borrowed) into at most @a max_out bytes. Returns 0 with the data in *@a out
 * (caller owns; alloc_free(); never NULL, even for empty data) and its length
 * in *@a out_len; -EINVAL when the input is not exactly one complete, intact
 * gzip member (bad header, bad checksum, truncated, trailing bytes); -E2BIG
 * when the data is longer than @a max_out; -ENOMEM.
 */
PYPROFD_WARN_UNUSED int gzip_decompress(const void *in, size_t in_len, size_t max_out,
                                        uint8_t **out, size_t *out_len);

#endif /* PYPROFD_PPROF_GZIP_H */
