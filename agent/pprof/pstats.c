/* SPDX-License-Identifier: MIT */
/*
 * pstats.c: the window as a marshalled pstats dictionary (pstats.h). Two
 * passes over the samples: per function and per (callee, caller) pair, with
 * a stamp per entry so that a sample counts once however often a recursive
 * stack holds the function or the pair.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/hash.h"
#include "base/utf8.h"
#include "pprof/pstats.h"

/* marshal's type codes (Python/marshal.c), format version 4 */
#define M_DICT        '{'
#define M_NULL        '0'
#define M_SMALL_TUPLE ')'
#define M_UNICODE     'u'
#define M_INT         'i'
#define M_LONG        'l'
#define M_FLOAT       'g'

struct pstats_fn {
    int64_t nc, cc; /* frames, samples */
    int64_t tt, ct; /* nanoseconds */
    uint32_t stamp;
};

struct pstats_edge {
    uint32_t callee, caller; /* function indices; callee UINT32_MAX: free slot */
    uint32_t stamp;
    int64_t nc, cc, tt, ct;
};

struct pstats {
    const struct agg *a;
    FILE *out;
    struct pstats_fn *fn;
    uint32_t *stack; /* the sample being counted: function indices, leaf first */
    struct pstats_edge *edge;
    size_t edge_mask;
    bool io_error;
};

static void m_byte(struct pstats *p, int c)
{
    if (putc(c, p->out) == EOF)
        p->io_error = true;
}

static void m_u32(struct pstats *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        m_byte(p, (int)((v >> (8 * i)) & 0xff));
}

/* An int: 'i' when it fits 32 bits, else 'l' (digits of 15 bits, least first). */
static void m_int(struct pstats *p, int64_t v)
{
    if (v >= INT32_MIN && v <= INT32_MAX) {
        m_byte(p, M_INT);
        m_u32(p, (uint32_t)(int32_t)v);
        return;
    }
    uint64_t mag = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    uint16_t digits[5];
    int n = 0;
    while (mag) {
        digits[n++] = (uint16_t)(mag & 0x7fff);
        mag >>= 15;
    }
    m_byte(p, M_LONG);
    m_u32(p, (uint32_t)(int32_t)(v < 0 ? -n : n));
    for (int i = 0; i < n; i++) {
        m_byte(p, digits[i] & 0xff);
        m_byte(p, digits[i] >> 8);
    }
}

static void m_float(struct pstats *p, double d)
{
    uint64_t bits;
    memcpy(&bits, &d, sizeof(bits));
    m_byte(p, M_FLOAT);
    for (int i = 0; i < 8; i++)
        m_byte(p, (int)((bits >> (8 * i)) & 0xff));
}

/* A str: valid UTF-8 (marshal refuses anything else), an invalid sequence as U+FFFD. */
static void m_str(struct pstats *p, const char *s)
{
    size_t n = strlen(s), replaced = 0;
    size_t len = utf8_sanitized_len(s, n, &replaced);
    m_byte(p, M_UNICODE);
    m_u32(p, (uint32_t)len);
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        bool valid;
        size_t k = utf8_next(u + i, n - i, &valid);
        if (valid) {
            if (fwrite(u + i, 1, k, p->out) != k)
                p->io_error = true;
        } else if (fwrite(UTF8_REPLACEMENT_STR, 1, UTF8_REPLACEMENT_LEN, p->out) !=
                   UTF8_REPLACEMENT_LEN) {
            p->io_error = true;
        }
        i += k;
    }
    utf8_count_replaced(replaced);
}

static double pstats_secs(int64_t ns)
{
    return (double)ns / 1e9;
}

/* The key of function @f: (file, first line, name). */
static void m_key(struct pstats *p, uint32_t f)
{
    const struct agg_function *fn = agg_function(p->a, f);
    m_byte(p, M_SMALL_TUPLE);
    m_byte(p, 3);
    m_str(p, agg_string(p->a, fn->filename));
    m_int(p, fn->start_line);
    m_str(p, agg_string(p->a, fn->name));
}

static struct pstats_edge *pstats_edge_slot(struct pstats *p, uint32_t callee, uint32_t caller)
{
    uint64_t h = ((uint64_t)callee << 32 | caller) * HASH_GOLDEN;
    for (size_t i = (size_t)(h >> 20) & p->edge_mask;; i = (i + 1) & p->edge_mask) {
        struct pstats_edge *e = &p->edge[i];
        if (e->callee == UINT32_MAX || (e->callee == callee && e->caller == caller))
            return e;
    }
}

/* Counts a sample (its functions in p->stack[0..n), stamped @stamp) once per function and pair. */
static void pstats_count(struct pstats *p, uint32_t stamp, size_t n, int64_t count, int64_t nanos)
{
    p->fn[p->stack[0]].tt += nanos;
    for (size_t i = 0; i < n; i++) {
        struct pstats_fn *f = &p->fn[p->stack[i]];
        f->nc += count;
        if (f->stamp != stamp) {
            f->stamp = stamp;
            f->cc += count;
            f->ct += nanos;
        }
        if (i + 1 == n)
            continue;
        struct pstats_edge *e = pstats_edge_slot(p, p->stack[i], p->stack[i + 1]);
        if (e->callee == UINT32_MAX)
            *e = (struct pstats_edge){.callee = p->stack[i], .caller = p->stack[i + 1]};
        e->nc += count;
        if (i == 0)
            e->tt += nanos;
        if (e->stamp != stamp) {
            e->stamp = stamp;
            e->cc += count;
            e->ct += nanos;
        }
    }
}

static int pstats_edge_cmp(const void *x, const void *y)
{
    const struct pstats_edge *a = x, *b = y;
    if (a->callee != b->callee)
        return a->callee < b->callee ? -1 : 1;
    return a->caller < b->caller ? -1 : a->caller > b->caller;
}

int pstats_write(const struct agg *a, FILE *out)
{
    struct pstats p = {.a = a, .out = out};
    size_t nfn = agg_function_count(a), slots = 0;
    for (size_t i = 0; i < agg_sample_count(a); i++)
        slots += agg_sample(a, i)->nlocations;
    size_t cap = 64;
    while (cap < 2 * slots + 2)
        cap *= 2;
    p.fn = alloc_calloc(nfn ? nfn : 1, sizeof(*p.fn));
    p.stack = alloc_calloc(AGG_MAX_LOCATIONS, sizeof(*p.stack));
    p.edge = alloc_calloc(cap, sizeof(*p.edge));
    int err = 0;
    if (!p.fn || !p.stack || !p.edge) {
        err = -ENOMEM;
        goto out;
    }
    p.edge_mask = cap - 1;
    for (size_t i = 0; i < cap; i++)
        p.edge[i].callee = UINT32_MAX;

    for (size_t si = 0; si < agg_sample_count(a); si++) {
        const struct agg_sample *s = agg_sample(a, si);
        size_t n = 0;
        for (uint32_t k = 0; k < s->nlocations; k++) {
            uint32_t f = agg_location(a, s->locations[k])->function;
            if (!agg_function_is_opcode(a, f))
                p.stack[n++] = f;
        }
        if (n)
            pstats_count(&p, (uint32_t)si + 1, n, s->count, s->nanos);
    }

    /* the pairs in callee order, to write each function's callers in one walk */
    size_t nedges = 0;
    for (size_t i = 0; i < cap; i++)
        if (p.edge[i].callee != UINT32_MAX)
            p.edge[nedges++] = p.edge[i];
    qsort(p.edge, nedges, sizeof(*p.edge), pstats_edge_cmp);

    size_t next = 0;
    m_byte(&p, M_DICT);
    for (uint32_t f = 0; f < nfn; f++) {
        const struct pstats_fn *fn = &p.fn[f];
        if (!fn->nc)
            continue;
        m_key(&p, f);
        m_byte(&p, M_SMALL_TUPLE);
        m_byte(&p, 5);
        m_int(&p, fn->cc);
        m_int(&p, fn->nc);
        m_float(&p, pstats_secs(fn->tt));
        m_float(&p, pstats_secs(fn->ct));
        m_byte(&p, M_DICT);
        for (; next < nedges && p.edge[next].callee == f; next++) {
            const struct pstats_edge *e = &p.edge[next];
            m_key(&p, e->caller);
            m_byte(&p, M_SMALL_TUPLE);
            m_byte(&p, 4);
            m_int(&p, e->nc);
            m_int(&p, e->cc);
            m_float(&p, pstats_secs(e->tt));
            m_float(&p, pstats_secs(e->ct));
        }
        m_byte(&p, M_NULL);
    }
    m_byte(&p, M_NULL);
    if (p.io_error || ferror(out))
        err = -EIO;
out:
    alloc_free(p.fn);
    alloc_free(p.stack);
    alloc_free(p.edge);
    return err;
}
