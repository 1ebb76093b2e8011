/* SPDX-License-Identifier: MIT */
/*
 * codecache.c: open-addressing table over a bump arena (see codecache.h).
 * Linear probing; no deletion other than a full clear, which keeps the probe
 * sequences valid without tombstones.
 */
#include "base/compat.h"

#include <stdatomic.h>

#include "base/alloc.h"
#include "python/pyabi.h"
#include "unwind/codecache.h"

/* Ids are process-wide so that frames of different targets (and caches) can
 * share one consumer-side memo keyed by id. */
static _Atomic uint64_t codecache_next_id = CODECACHE_FIRST_ID;

#define CODECACHE_BLOCK_FIRST 4096u /* the arena's first block; each next one doubles */
#define CODECACHE_MAX_BLOCKS  24u

struct codecache {
    struct code_info *slots; /* raddr 0 = empty */
    size_t mask;
    size_t count;
    size_t max_count; /* at most 3/4 full */
    size_t max_slots; /* the table doubles up to this many slots */
    /* the arena: blocks allocated as needed (never moved, so strings stay
     * put), at most arena_len bytes in all; a clear keeps them for reuse */
    uint8_t *block[CODECACHE_MAX_BLOCKS];
    size_t block_len[CODECACHE_MAX_BLOCKS];
    size_t nblocks;
    size_t cur;      /* block being filled */
    size_t cur_used; /* bytes used in it */
    size_t arena_len;
    size_t arena_alloc; /* bytes of all blocks */
    uint64_t overflows;
};

static size_t codecache_hash(uint64_t raddr, size_t mask)
{
    raddr ^= raddr >> 33;
    raddr *= 0xff51afd7ed558ccdull;
    raddr ^= raddr >> 29;
    return (size_t)raddr & mask;
}

static uint8_t *codecache_room(struct codecache *c, size_t need);

static size_t codecache_pow2(size_t n)
{
    size_t p = 16;
    while (p < n)
        p <<= 1;
    return p;
}

int codecache_new(size_t start, size_t entries, size_t arena_bytes, struct codecache **out)
{
    size_t max = codecache_pow2(entries);
    size_t n = codecache_pow2(start < entries ? start : entries);
    struct codecache *c = alloc_calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->slots = alloc_calloc(n, sizeof(*c->slots));
    c->mask = n - 1;
    c->max_count = n / 4 * 3;
    c->max_slots = max;
    c->arena_len = arena_bytes;
    /* the first block now: a small target's samples never allocate */
    if (!c->slots || (arena_bytes && !codecache_room(c, 1))) {
        codecache_free(c);
        return -ENOMEM;
    }
    *out = c;
    return 0;
}

void codecache_free(struct codecache *c)
{
    if (!c)
        return;
    alloc_free(c->slots);
    for (size_t i = 0; i < c->nblocks; i++)
        alloc_free(c->block[i]);
    alloc_free(c);
}

size_t codecache_memory(const struct codecache *c)
{
    return sizeof(*c) + (c->mask + 1) * sizeof(*c->slots) + c->arena_alloc;
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
    c->cur = 0;
    c->cur_used = 0;
}

/* Room for @need bytes in one block: the current one, a later one kept from
 * before a clear, or a new one (double the last, at least @need) while the
 * arena stays within arena_len. NULL: the arena is full. */
static uint8_t *codecache_room(struct codecache *c, size_t need)
{
    for (;;) {
        if (c->cur < c->nblocks && c->block_len[c->cur] - c->cur_used >= need)
            return c->block[c->cur] + c->cur_used;
        if (c->cur + 1 < c->nblocks) {
            c->cur++;
            c->cur_used = 0;
            continue;
        }
        if (c->nblocks == CODECACHE_MAX_BLOCKS)
            return NULL;
        size_t len = c->nblocks ? c->block_len[c->nblocks - 1] * 2 : CODECACHE_BLOCK_FIRST;
        if (len < need)
            len = need;
        if (len > c->arena_len - c->arena_alloc)
            len = c->arena_len - c->arena_alloc;
        if (len < need)
            return NULL;
        uint8_t *b = alloc_malloc(len);
        if (!b)
            return NULL;
        c->block[c->nblocks] = b;
        c->block_len[c->nblocks] = len;
        c->arena_alloc += len;
        if (c->nblocks)
            c->cur = c->nblocks;
        c->nblocks++;
        c->cur_used = 0;
    }
}

/* Doubles the table (entries move: rehashed). False when out of memory. */
static bool codecache_grow(struct codecache *c)
{
    size_t n = (c->mask + 1) * 2;
    struct code_info *slots = alloc_calloc(n, sizeof(*slots));
    if (!slots)
        return false;
    for (size_t j = 0; j <= c->mask; j++) {
        if (!c->slots[j].raddr)
            continue;
        size_t i = codecache_hash(c->slots[j].raddr, n - 1);
        while (slots[i].raddr != 0)
            i = (i + 1) & (n - 1);
        slots[i] = c->slots[j];
    }
    alloc_free(c->slots);
    c->slots = slots;
    c->mask = n - 1;
    c->max_count = n / 4 * 3;
    return true;
}

struct code_info *codecache_insert(struct codecache *c, const struct code_info *info)
{
    size_t qlen = strlen(info->qualname) + 1, flen = strlen(info->filename) + 1;
    size_t need = qlen + flen + info->linetable_len;
    if (need > c->arena_len || info->raddr == 0)
        return NULL;
    if (c->count >= c->max_count && ((c->mask + 1) >= c->max_slots || !codecache_grow(c))) {
        codecache_clear(c);
        c->overflows++;
    }
    uint8_t *dst = codecache_room(c, need);
    if (!dst) {
        codecache_clear(c);
        c->overflows++;
        dst = codecache_room(c, need);
        if (!dst)
            return NULL;
    }
    size_t i = codecache_hash(info->raddr, c->mask);
    while (c->slots[i].raddr != 0 && c->slots[i].raddr != info->raddr)
        i = (i + 1) & c->mask;
    struct code_info *e = &c->slots[i];
    if (e->raddr == 0)
        c->count++;
    *e = *info;
    memcpy(dst, info->qualname, qlen);
    memcpy(dst + qlen, info->filename, flen);
    if (info->linetable_len)
        memcpy(dst + qlen + flen, info->linetable, info->linetable_len);
    c->cur_used += need;
    e->qualname = (const char *)dst;
    e->filename = (const char *)dst + qlen;
    e->linetable = info->linetable ? dst + qlen + flen : NULL; /* (read empty: not NULL) */
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
    int err = -ENOENT;
    if (ci->linetable) {
        switch (ci->lines) {
        case PYABI_LINES_LNOTAB:
            err = linetable_lookup_lnotab(ci->linetable, ci->linetable_len, ci->firstlineno, addrq,
                                          out);
            break;
        case PYABI_LINES_3_10:
            err = linetable_lookup_3_10(ci->linetable, ci->linetable_len, ci->firstlineno, addrq,
                                        out);
            break;
        default:
            err = linetable_lookup(ci->linetable, ci->linetable_len, ci->firstlineno, addrq, out);
            break;
        }
    }
    if (err)
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
