/* SPDX-License-Identifier: MIT */
/*
 * gzip.c: whole-buffer gzip through zlib (see gzip.h). zlib is given the
 * project allocator, so its state counts against the budget like the rest.
 */
#include "base/compat.h"

#include <limits.h>

#define ZLIB_CONST
#include <zlib.h>

#include "base/alloc.h"
#include "pprof/gzip.h"

/* windowBits 15 (32 KiB window) plus 16 selects the gzip wrapper. */
#define GZIP_WINDOW_BITS (15 + 16)
#define GZIP_MEM_LEVEL   8
/* First output buffer of a decompression, before it doubles towards the cap. */
#define GZIP_INITIAL_OUT 4096u

static voidpf gzip_zalloc(voidpf opaque, uInt items, uInt size)
{
    (void)opaque;
    return alloc_calloc(items, size);
}

static void gzip_zfree(voidpf opaque, voidpf p)
{
    (void)opaque;
    alloc_free(p);
}

/* Gives back the unused tail of a buffer; keeps the old one if that fails. */
static uint8_t *gzip_shrink(uint8_t *buf, size_t len)
{
    uint8_t *nb = alloc_realloc(buf, len ? len : 1);
    return nb ? nb : buf;
}

int gzip_compress(const void *in, size_t in_len, size_t max_out, uint8_t **out, size_t *out_len)
{
    if (in_len > UINT_MAX)
        return -E2BIG;

    z_stream zs;
    memset(&zs, 0, sizeof(zs));
    zs.zalloc = gzip_zalloc;
    zs.zfree = gzip_zfree;
    int zerr = deflateInit2(&zs, GZIP_LEVEL, Z_DEFLATED, GZIP_WINDOW_BITS, GZIP_MEM_LEVEL,
                            Z_DEFAULT_STRATEGY);
    if (zerr != Z_OK)
        return zerr == Z_MEM_ERROR ? -ENOMEM : -EINVAL;

    int err = 0;
    uint8_t *buf = NULL;
    /* deflateBound() covers the gzip header and trailer too: one call finishes. */
    size_t cap = deflateBound(&zs, (uLong)in_len);
    if (cap > max_out)
        cap = max_out;
    if (cap > UINT_MAX)
        cap = UINT_MAX;
    buf = alloc_malloc(cap ? cap : 1);
    if (!buf) {
        err = -ENOMEM;
        goto out;
    }
    zs.next_in = in;
    zs.avail_in = (uInt)in_len;
    zs.next_out = buf;
    zs.avail_out = (uInt)cap;
    zerr = deflate(&zs, Z_FINISH);
    if (zerr == Z_OK || zerr == Z_BUF_ERROR) {
        err = -E2BIG; /* the output did not fit in the cap */
        goto out;
    }
    if (zerr != Z_STREAM_END) {
        err = zerr == Z_MEM_ERROR ? -ENOMEM : -EINVAL;
        goto out;
    }
    size_t len = cap - zs.avail_out;
    *out = gzip_shrink(buf, len);
    *out_len = len;
    buf = NULL;
out:
    alloc_free(buf);
    deflateEnd(&zs);
    return err;
}

int gzip_decompress(const void *in, size_t in_len, size_t max_out, uint8_t **out, size_t *out_len)
{
    if (in_len > UINT_MAX)
        return -EINVAL; /* not something this module produced */

    z_stream zs;
    memset(&zs, 0, sizeof(zs));
    zs.zalloc = gzip_zalloc;
    zs.zfree = gzip_zfree;
    /* gzip only: no automatic zlib-header detection (that would be +32) */
    int zerr = inflateInit2(&zs, GZIP_WINDOW_BITS);
    if (zerr != Z_OK)
        return zerr == Z_MEM_ERROR ? -ENOMEM : -EINVAL;

    /*
     * The buffer may grow to one byte past the cap: producing that byte is how
     * a stream longer than the cap is told apart from one that fills it exactly.
     */
    size_t limit = max_out < SIZE_MAX ? max_out + 1 : SIZE_MAX;
    size_t cap =
        in_len <= (SIZE_MAX - GZIP_INITIAL_OUT) / 4 ? in_len * 4 + GZIP_INITIAL_OUT : limit;
    if (cap > limit)
        cap = limit;
    size_t len = 0;
    int err = 0;
    uint8_t *buf = alloc_malloc(cap);
    if (!buf) {
        err = -ENOMEM;
        goto out;
    }
    zs.next_in = in;
    zs.avail_in = (uInt)in_len;
    for (;;) {
        if (len == cap) {
            if (cap == limit) {
                err = -E2BIG;
                goto out;
            }
            size_t ncap = cap <= limit / 2 ? cap * 2 : limit;
            uint8_t *nb = alloc_realloc(buf, ncap);
            if (!nb) {
                err = -ENOMEM;
                goto out;
            }
            buf = nb;
            cap = ncap;
        }
        size_t room = cap - len;
        if (room > UINT_MAX)
            room = UINT_MAX;
        zs.next_out = buf + len;
        zs.avail_out = (uInt)room;
        zerr = inflate(&zs, Z_NO_FLUSH);
        len += room - zs.avail_out;
        if (zerr == Z_STREAM_END)
            break;
        if (zerr == Z_MEM_ERROR) {
            err = -ENOMEM;
            goto out;
        }
        if (zerr != Z_OK && zerr != Z_BUF_ERROR) {
            err = -EINVAL; /* Z_DATA_ERROR, Z_NEED_DICT, Z_STREAM_ERROR */
            goto out;
        }
        if (zs.avail_out != 0) {
            /* room left but no end: the input ran out (truncated) */
            err = -EINVAL;
            goto out;
        }
    }
    if (len > max_out) {
        err = -E2BIG;
        goto out;
    }
    if (zs.avail_in != 0) {
        err = -EINVAL; /* bytes after the member */
        goto out;
    }
    *out = gzip_shrink(buf, len);
    *out_len = len;
    buf = NULL;
out:
    alloc_free(buf);
    inflateEnd(&zs);
    return err;
}
