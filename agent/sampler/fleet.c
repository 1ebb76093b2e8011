/* SPDX-License-Identifier: MIT */
/*
 * fleet.c: due times in a binary heap, the CPU budget and each target's
 * credit (see fleet.h).
 */
#include "base/compat.h"

#include <math.h>

#include "base/alloc.h"
#include "sampler/fleet.h"

struct fleet {
    struct fleet_slot **heap;
    size_t n, cap;
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
    /* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers */
    f->heap = alloc_calloc(cap, sizeof(*f->heap));
    if (!f->heap) {
        alloc_free(f);
        return -ENOMEM;
    }
    f->cap = cap;
    f->factor = 1.0;
    *out = f;
    return 0;
}

void fleet_free(struct fleet *f)
{
    if (!f)
        return;
    alloc_free(f->heap);
    alloc_free(f);
}

int fleet_grow(struct fleet *f, size_t cap)
{
    if (cap <= f->cap)
        return 0;
    /* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers */
    struct fleet_slot **h = alloc_realloc(f->heap, cap * sizeof(*h));
    if (!h)
        return -ENOMEM;
    f->heap = h;
    f->cap = cap;
    return 0;
}

static void fleet_swap(struct fleet *f, size_t i, size_t j)
{
    struct fleet_slot *t = f->heap[i];
    f->heap[i] = f->heap[j];
    f->heap[j] = t;
    f->heap[i]->heap = i;
    f->heap[j]->heap = j;
}

static void fleet_up(struct fleet *f, size_t i)
{
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (f->heap[i]->due >= f->heap[p]->due)
            break;
        fleet_swap(f, i, p);
        i = p;
    }
}

static void fleet_down(struct fleet *f, size_t i)
{
    for (;;) {
        size_t c = 2 * i + 1, m = i;
        if (c < f->n && f->heap[c]->due < f->heap[m]->due)
            m = c;
        if (c + 1 < f->n && f->heap[c + 1]->due < f->heap[m]->due)
            m = c + 1;
        if (m == i)
            return;
        fleet_swap(f, i, m);
        i = m;
    }
}

int fleet_add(struct fleet *f, struct fleet_slot *s, uint64_t due)
{
    if (f->n == f->cap)
        return -ENOSPC;
    s->due = due;
    s->credit = 1.0;
    s->heap = f->n;
    f->heap[f->n++] = s;
    fleet_up(f, s->heap);
    return 0;
}

void fleet_remove(struct fleet *f, struct fleet_slot *s)
{
    size_t i = s->heap;
    PYPROFD_ASSERT(i < f->n && f->heap[i] == s);
    f->n--;
    if (i != f->n) {
        f->heap[i] = f->heap[f->n];
        f->heap[i]->heap = i;
        fleet_down(f, i);
        fleet_up(f, i);
    }
}

void fleet_update(struct fleet *f, struct fleet_slot *s, uint64_t due)
{
    PYPROFD_ASSERT(s->heap < f->n && f->heap[s->heap] == s);
    uint64_t was = s->due;
    s->due = due;
    if (due > was)
        fleet_down(f, s->heap);
    else
        fleet_up(f, s->heap);
}

struct fleet_slot *fleet_first(const struct fleet *f)
{
    return f->n ? f->heap[0] : NULL;
}

size_t fleet_count(const struct fleet *f)
{
    return f->n;
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
