/* SPDX-License-Identifier: MIT */
/*
 * md5.h: MD5 (RFC 1321), written for relabeling's hashmod action, which must
 * agree bit for bit with Prometheus (md5 of the joined source values). Not for
 * anything security-related.
 *
 * struct md5 is an embeddable value type; its fields are private to md5.c.
 * Thread safety: a context is used by one thread at a time; md5_sum() is pure.
 */
#ifndef PYPROFD_CONFIG_MD5_H
#define PYPROFD_CONFIG_MD5_H

#include "base/compat.h"

#define MD5_DIGEST_LEN 16

struct md5 {
    uint32_t state[4];
    uint64_t nbytes;         /* total input length */
    unsigned char block[64]; /* pending partial block */
};

/** Starts a digest. */
void md5_init(struct md5 *m);
/** Adds @a len bytes of @a data (borrowed). */
void md5_update(struct md5 *m, const void *data, size_t len);
/** Finishes the digest into @a out; @a m must be re-initialised before reuse. */
void md5_final(struct md5 *m, unsigned char out[MD5_DIGEST_LEN]);
/** The digest of @a len bytes of @a data in one call. */
void md5_sum(const void *data, size_t len, unsigned char out[MD5_DIGEST_LEN]);

#endif /* PYPROFD_CONFIG_MD5_H */
