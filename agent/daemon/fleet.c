/* SPDX-License-Identifier: MIT */
/*
 * fleet.c: due times in a timing wheel, the CPU budget and each target's
 * credit (see fleet.h).
 *
 * The wheel has one bucket per tick; a slot waits in the bucket of the
 * boundary it is taken at (slot->when, in ticks, modulo the wheel). A slot put
 * back while still due goes to a second ready list, `again`, which becomes
 * the ready list when that runs dry: rounds, so that a late target catching
 * up takes turns with the others. Buckets and the ready lists are intrusive
 * lists linked through the slots, so adding,
 * moving and removing a slot touch only it and its neighbours; a bitmap of
 * the buckets that hold something lets fleet_next_wake() skip empty ones a
 * word at a time. Why not the binary heap this replaced: with a pass per
 * boundary the order inside a tick does not matter, and the heap's sift on
 * every attempt (log n swaps, each a cache miss on another target) was 9% of
 * the agent's time at 200 targets.
 */
#include "base/compat.h"

#include <math.h>

#include "base/alloc.h"
#include "daemon/fleet.h"

#define FLEET_MASK  (FLEET_WHEEL - 1u)
#define FLEET_WORDS (FLEET_WHEEL / 64u)
#define FLEET_READY UINT64_MAX /* slot->when of a slot in the ready list */

struct fleet {
    struct fleet_slot *bucket[FLEET_WHEEL];
    uint64_t busy[FLEET_WORDS]; /* bit b: bucket b is not empty */
    struct fleet_slot *ready;
    struct fleet_slot *again; /* put back still due: ready after the ready list */
    size_t n, cap, nready;    /* nready: in ready and again */
    uint64_t tick;
    uint64_t cur;      /* the first boundary (in ticks) not collected yet */
    uint64_t last_now; /* the last fleet_collect()'s now */
    bool collected;    /* fleet_collect() has run */
    double factor;
    uint64_t budget_wall, budget_cpu; /* the last period's start */
};

int fleet_new(size_t cap, struct fleet **out)
{
    if (cap == 0)
        return -EINVAL;
    struct fleet *f = alloc_calloc(1, sizeof(*f));
    if (!f)
        return -ENOMEM;
    f->cap = cap;
    f->tick = FLEET_TICK_NS;
    f->factor = 1.0;
    *out = f;
    return 0;
}

void fleet_free(struct fleet *f)
{
    alloc_free(f);
}

int fleet_grow(struct fleet *f, size_t cap)
{
    if (cap > f->cap)
        f->cap = cap;
    return 0;
}

static void fleet_link(struct fleet_slot **head, struct fleet_slot *s)
{
    s->next = *head;
    if (s->next)
        s->next->pprev = &s->next;
    *head = s;
    s->pprev = head;
}

static void fleet_unlink(struct fleet_slot *s)
{
    *s->pprev = s->next;
    if (s->next)
        s->next->pprev = s->pprev;
    s->next = NULL;
    s->pprev = NULL;
}

/* Out of whatever list @s is in; the count of slots does not change. */
static void fleet_detach(struct fleet *f, struct fleet_slot *s)
{
    if (!s->pprev)
        return; /* popped */
    if (s->when == FLEET_READY) {
        fleet_unlink(s);
        f->nready--;
        return;
    }
    size_t b = (size_t)(s->when & FLEET_MASK);
    fleet_unlink(s);
    if (!f->bucket[b])
        f->busy[b / 64] &= ~(1ull << (b % 64));
}

/* Into the bucket of the first boundary >= @due not collected yet. */
static void fleet_file(struct fleet *f, struct fleet_slot *s, uint64_t due)
{
    s->due = due;
    uint64_t k = due / f->tick + (due % f->tick != 0);
    s->when = k < f->cur ? f->cur : k;
    size_t b = (size_t)(s->when & FLEET_MASK);
    fleet_link(&f->bucket[b], s);
    f->busy[b / 64] |= 1ull << (b % 64);
}

int fleet_add(struct fleet *f, struct fleet_slot *s, uint64_t due)
{
    if (f->n == f->cap)
        return -ENOSPC;
    s->credit = 1.0;
    s->pprev = NULL;
    fleet_file(f, s, due);
    f->n++;
    return 0;
}

int fleet_add_ready(struct fleet *f, struct fleet_slot *s, uint64_t due)
{
    if (f->n == f->cap)
        return -ENOSPC;
    s->credit = 1.0;
    s->pprev = NULL;
    s->due = due;
    s->when = FLEET_READY;
    fleet_link(&f->ready, s);
    f->nready++;
    f->n++;
    return 0;
}

void fleet_remove(struct fleet *f, struct fleet_slot *s)
{
    PYPROFD_ASSERT(f->n > 0);
    fleet_detach(f, s);
    f->n--;
}

void fleet_update(struct fleet *f, struct fleet_slot *s, uint64_t due)
{
    fleet_detach(f, s);
    if (f->collected && due <= f->last_now) {
        /* late: again in this pass, once every slot ready now has had its turn */
        s->due = due;
        s->when = FLEET_READY;
        fleet_link(&f->again, s);
        f->nready++;
        return;
    }
    fleet_file(f, s, due);
}

size_t fleet_count(const struct fleet *f)
{
    return f->n;
}

uint64_t fleet_tick(const struct fleet *f)
{
    return f->tick;
}

void fleet_set_tick(struct fleet *f, uint64_t tick_ns)
{
    PYPROFD_ASSERT(tick_ns > 0);
    if (tick_ns == f->tick)
        return;
    struct fleet_slot *all = NULL;
    for (size_t b = 0; b < FLEET_WHEEL; b++) {
        while (f->bucket[b]) {
            struct fleet_slot *s = f->bucket[b];
            fleet_unlink(s);
            fleet_link(&all, s);
        }
    }
    memset(f->busy, 0, sizeof(f->busy));
    f->tick = tick_ns;
    f->cur = f->collected ? f->last_now / tick_ns + 1 : 0;
    while (all) {
        struct fleet_slot *s = all;
        fleet_unlink(s);
        fleet_file(f, s, s->due);
    }
}

/* Moves the slots of bucket @b whose boundary is <= @upto to the ready list. */
static void fleet_collect_bucket(struct fleet *f, size_t b, uint64_t upto)
{
    struct fleet_slot *s = f->bucket[b];
    while (s) {
        struct fleet_slot *next = s->next;
        if (s->when <= upto) {
            fleet_unlink(s);
            s->when = FLEET_READY;
            fleet_link(&f->ready, s);
            f->nready++;
        }
        s = next;
    }
    if (!f->bucket[b])
        f->busy[b / 64] &= ~(1ull << (b % 64));
}

size_t fleet_collect(struct fleet *f, uint64_t now_ns)
{
    uint64_t upto = now_ns / f->tick;
    f->last_now = now_ns;
    f->collected = true;
    if (upto < f->cur)
        return f->nready;
    uint64_t span = upto - f->cur + 1;
    if (span > FLEET_WHEEL)
        span = FLEET_WHEEL; /* a whole turn: every bucket once */
    for (uint64_t i = 0; i < span; i++) {
        size_t b = (size_t)((f->cur + i) & FLEET_MASK);
        if (f->busy[b / 64] & (1ull << (b % 64)))
            fleet_collect_bucket(f, b, upto);
    }
    f->cur = upto + 1;
    return f->nready;
}

struct fleet_slot *fleet_pop(struct fleet *f)
{
    if (!f->ready && f->again) { /* the next round of the late ones */
        f->ready = f->again;
        f->ready->pprev = &f->ready;
        f->again = NULL;
    }
    struct fleet_slot *s = f->ready;
    if (!s)
        return NULL;
    fleet_unlink(s);
    f->nready--;
    return s;
}

uint64_t fleet_next_wake(const struct fleet *f)
{
    if (f->nready)
        return 0;
    bool any = false;
    for (size_t w = 0; w < FLEET_WORDS; w++)
        any |= f->busy[w] != 0;
    if (!any)
        return UINT64_MAX;
    uint64_t off = 0;
    while (off < FLEET_WHEEL) {
        uint64_t k = f->cur + off;
        size_t b = (size_t)(k & FLEET_MASK);
        uint64_t word = f->busy[b / 64] >> (b % 64);
        if (!word) {
            off += 64 - b % 64; /* the rest of this word is empty */
            continue;
        }
        unsigned skip = (unsigned)__builtin_ctzll(word);
        off += skip;
        if (off >= FLEET_WHEEL)
            break;
        k = f->cur + off;
        for (const struct fleet_slot *s = f->bucket[k & FLEET_MASK]; s; s = s->next) {
            if (s->when == k)
                return k * f->tick;
        }
        off++; /* only slots of later turns */
    }
    /* nothing this turn (slow targets, or a fleet whose clock is far from
     * its last collect): the earliest of all, rare enough to walk them */
    uint64_t first = UINT64_MAX;
    for (size_t b = 0; b < FLEET_WHEEL; b++) {
        for (const struct fleet_slot *s = f->bucket[b]; s; s = s->next)
            first = s->when < first ? s->when : first;
    }
    return first * f->tick;
}

uint64_t fleet_take(const struct fleet *f, struct fleet_slot *s)
{
    /* each due attempt earns the factor; a whole credit is spent on a sample */
    s->credit += f->factor;
    if (s->credit >= 1.0) {
        s->credit -= 1.0;
        return 0;
    }
    /* skip straight to the attempt that will have earned one */
    double k = ceil((1.0 - s->credit) / f->factor);
    uint64_t n = k < 1.0 ? 1 : k > (double)FLEET_MAX_SKIP ? FLEET_MAX_SKIP : (uint64_t)k;
    s->credit += (double)(n - 1) * f->factor;
    return n;
}

void fleet_budget_start(struct fleet *f, uint64_t now_ns, uint64_t cpu_ns)
{
    f->budget_wall = now_ns;
    f->budget_cpu = cpu_ns;
}

bool fleet_budget(struct fleet *f, uint64_t now_ns, uint64_t cpu_ns, double budget)
{
    if (now_ns - f->budget_wall < FLEET_BUDGET_NS)
        return false;
    double used = (double)(cpu_ns - f->budget_cpu) / (double)(now_ns - f->budget_wall);
    if (budget > 0 && used > budget)
        f->factor *= budget / used;
    else if (budget > 0 && used < 0.8 * budget)
        f->factor *= 1.25;
    else if (budget <= 0)
        f->factor = 1.0;
    if (f->factor > 1.0)
        f->factor = 1.0;
    if (f->factor < FLEET_MIN_FACTOR)
        f->factor = FLEET_MIN_FACTOR;
    fleet_budget_start(f, now_ns, cpu_ns);
    return true;
}

double fleet_factor(const struct fleet *f)
{
    return f->factor;
}
