/* SPDX-License-Identifier: MIT */
/*
 * codecache.c: open-addressing table over a bump arena (see codecache.h).
 * Linear probing; no deletion other than a full clear, which keeps the probe
 * sequences valid without tombstones.
 */
#include "base/compat.h"

#include <stdatomic.h>

#include "base/alloc.h"
#include "unwind/codecache.h"

/* Ids are process-wide so that frames of different targets (and caches) can
 * share one consumer-side memo keyed by id. */
static _Atomic uint64_t codecache_next_id = CODECACHE_FIRST_ID;

struct codecache {
    struct code_info *slots; /* raddr 0 = empty */
    size_t mask;
    size_t count;
    size_t max_count; /* at most 3/4 full */
    uint8_t *arena;
    size_t arena_len;
    size_t arena_used;
    uint64_t overflows;
};

static size_t codecache_hash(uint64_t raddr, size_t mask)
{
    raddr ^= raddr >> 33;
    raddr *= 0xff51afd7ed558ccdull;
    raddr ^= raddr >> 29;
    return (size_t)raddr & mask;
}

int codecache_new(size_t entries, size_t arena_bytes, struct codecache **out)
{
    size_t n = 16;
    while (n < entries)
        n <<= 1;
    struct codecache *c = alloc_calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->slots = alloc_calloc(n, sizeof(*c->slots));
    c->arena = alloc_malloc(arena_bytes ? arena_bytes : 1);
    if (!c->slots || !c->arena) {
        codecache_free(c);
        return -ENOMEM;
    }
    c->mask = n - 1;
    c->max_count = n / 4 * 3;
    c->arena_len = arena_bytes;
    *out = c;
    return 0;
}

void codecache_free(struct codecache *c)
{
    if (!c)
        return;
    alloc_free(c->slots);
    alloc_free(c->arena);
    alloc_free(c);
}

struct code_info *codecache_find(struct codecache *c, uint64_t raddr)
{
    for (size_t i = codecache_hash(raddr, c->mask);; i = (i + 1) & c->mask) {
        if (c->slots[i].raddr == raddr)
            return &c->slots[i];
        if (c->slots[i].raddr == 0)
            return NULL;
    }
}

void codecache_clear(struct codecache *c)
{
    memset(c->slots, 0, (c->mask + 1) * sizeof(*c->slots));
    c->count = 0;
    c->arena_used = 0;
}

static void *codecache_copy(struct codecache *c, const void *src, size_t len)
{
    uint8_t *dst = c->arena + c->arena_used;
    memcpy(dst, src, len);
    c->arena_used += len;
    return dst;
}

struct code_info *codecache_insert(struct codecache *c, const struct code_info *info)
{
    size_t qlen = strlen(info->qualname) + 1, flen = strlen(info->filename) + 1;
    size_t need = qlen + flen + info->linetable_len;
    if (need > c->arena_len || info->raddr == 0)
        return NULL;
    if (c->count >= c->max_count || c->arena_len - c->arena_used < need) {
        codecache_clear(c);
        c->overflows++;
    }
    size_t i = codecache_hash(info->raddr, c->mask);
    while (c->slots[i].raddr != 0 && c->slots[i].raddr != info->raddr)
        i = (i + 1) & c->mask;
    struct code_info *e = &c->slots[i];
    if (e->raddr == 0)
        c->count++;
    *e = *info;
    e->qualname = codecache_copy(c, info->qualname, qlen);
    e->filename = codecache_copy(c, info->filename, flen);
    e->linetable =
        info->linetable_len ? codecache_copy(c, info->linetable, info->linetable_len) : NULL;
    e->nlast = 0;
    e->id = atomic_fetch_add_explicit(&codecache_next_id, 1, memory_order_relaxed);
    return e;
}

int codecache_position(struct code_info *ci, uint32_t addrq, struct linetable_pos *out)
{
    for (size_t i = 0; i < ci->nlast; i++) {
        if (ci->last_addrq[i] == addrq) {
            *out = ci->last_pos[i];
            return 0;
        }
    }
    if (!ci->linetable ||
        linetable_lookup(ci->linetable, ci->linetable_len, ci->firstlineno, addrq, out))
        return -ENOENT;
    /* most recent first; the oldest falls off */
    size_t n = ci->nlast < CODECACHE_POSITIONS ? ci->nlast + 1u : CODECACHE_POSITIONS;
    memmove(&ci->last_addrq[1], &ci->last_addrq[0], (n - 1) * sizeof(ci->last_addrq[0]));
    memmove(&ci->last_pos[1], &ci->last_pos[0], (n - 1) * sizeof(ci->last_pos[0]));
    ci->last_addrq[0] = addrq;
    ci->last_pos[0] = *out;
    ci->nlast = (uint8_t)n;
    return 0;
}

size_t codecache_count(const struct codecache *c)
{
    return c->count;
}

uint64_t codecache_overflows(const struct codecache *c)
{
    return c->overflows;
}
