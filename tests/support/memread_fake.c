/* SPDX-License-Identifier: MIT */
/*
 * memread_fake.c: in-memory memread backend (see memread_fake.h).
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "memread_fake.h"

#define MEMREAD_FAKE_MAX_SEGMENTS 65536

struct memread_fake_segment {
    uint64_t raddr;
    size_t len;
    unsigned char *bytes;
};

struct memread_fake {
    struct memread_fake_segment *seg;
    size_t nseg, cap;
    int fail_next;
    unsigned calls;
    unsigned long ranges, bytes;
    uint64_t watch_lo, watch_len;
    unsigned watched;
};

static int memread_fake_readv(void *priv, const struct memread_iov *iov, size_t n)
{
    struct memread_fake *f = priv;
    f->calls++;
    if (f->fail_next) {
        int err = f->fail_next;
        f->fail_next = 0;
        return err;
    }
    for (size_t i = 0; i < n; i++) {
        f->ranges++;
        f->bytes += iov[i].len;
        if (f->watch_len && iov[i].raddr < f->watch_lo + f->watch_len &&
            iov[i].raddr + iov[i].len > f->watch_lo)
            f->watched++;
    }
    for (size_t i = 0; i < n; i++) {
        bool done = iov[i].len == 0;
        /* the newest segment first: a later add overlays what it covers */
        for (size_t s = f->nseg; s-- > 0 && !done;) {
            const struct memread_fake_segment *g = &f->seg[s];
            if (iov[i].raddr >= g->raddr && iov[i].raddr - g->raddr <= g->len &&
                iov[i].len <= g->len - (iov[i].raddr - g->raddr)) {
                memcpy(iov[i].local, g->bytes + (iov[i].raddr - g->raddr), iov[i].len);
                done = true;
            }
        }
        if (!done)
            return -EFAULT;
    }
    return 0;
}

static void memread_fake_close(void *priv)
{
    struct memread_fake *f = priv;
    if (!f)
        return;
    for (size_t s = 0; s < f->nseg; s++)
        alloc_free(f->seg[s].bytes);
    alloc_free(f->seg);
    alloc_free(f);
}

static const struct memread_ops memread_fake_ops = {
    .name = "fake",
    .readv = memread_fake_readv,
    .close = memread_fake_close,
};

int memread_fake_open(struct memread_fake **fake, struct memread **mr)
{
    struct memread_fake *f = alloc_calloc(1, sizeof(*f));
    if (!f)
        return -ENOMEM;
    int err = memread_new_custom(&memread_fake_ops, f, mr);
    if (err)
        return err; /* f was freed by memread_new_custom */
    *fake = f;
    return 0;
}

int memread_fake_add(struct memread_fake *fake, uint64_t raddr, const void *data, size_t len)
{
    if (fake->nseg == MEMREAD_FAKE_MAX_SEGMENTS)
        return -E2BIG;
    if (fake->nseg == fake->cap) {
        size_t cap = fake->cap ? fake->cap * 2 : 64;
        struct memread_fake_segment *seg = alloc_realloc(fake->seg, cap * sizeof(*seg));
        if (!seg)
            return -ENOMEM;
        fake->seg = seg;
        fake->cap = cap;
    }
    unsigned char *copy = alloc_malloc(len ? len : 1);
    if (!copy)
        return -ENOMEM;
    memcpy(copy, data, len);
    fake->seg[fake->nseg++] = (struct memread_fake_segment){raddr, len, copy};
    return 0;
}

void memread_fake_fail_next(struct memread_fake *fake, int err)
{
    fake->fail_next = err;
}

unsigned memread_fake_calls(const struct memread_fake *fake)
{
    return fake->calls;
}

unsigned long memread_fake_ranges(const struct memread_fake *fake)
{
    return fake->ranges;
}

unsigned long memread_fake_bytes(const struct memread_fake *fake)
{
    return fake->bytes;
}

void memread_fake_watch(struct memread_fake *fake, uint64_t raddr, size_t len)
{
    fake->watch_lo = raddr;
    fake->watch_len = len;
    fake->watched = 0;
}

unsigned memread_fake_watched(const struct memread_fake *fake)
{
    return fake->watched;
}

int memread_fake_poke(struct memread_fake *fake, uint64_t raddr, const void *data, size_t len)
{
    for (size_t s = 0; s < fake->nseg; s++) {
        struct memread_fake_segment *g = &fake->seg[s];
        if (raddr >= g->raddr && raddr - g->raddr <= g->len && len <= g->len - (raddr - g->raddr)) {
            memcpy(g->bytes + (raddr - g->raddr), data, len);
            return 0;
        }
    }
    return -EFAULT;
}
