/* SPDX-License-Identifier: MIT */
/*
 * otel_sdk.c: the OpenTelemetry Python SDK's current span of sampled threads,
 * read through their context variables (see otel_sdk.h): the search for the
 * SDK's variable, each thread's walk, the reads batched across threads, the
 * contexts' second look, the reader's life. The objects walked are
 * otel_sdk_objects.c's.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/bytes.h"
#include "unwind/otel_sdk_internal.h"

/* ---- the search ---------------------------------------------------------------------- */

static bool sdk_is_var(struct otel_sdk *s, uint64_t key, uint64_t value)
{
    const struct pyctx_layout *l = s->l;
    uint8_t v[128], h[32];
    if (l->var_size > sizeof(v) || sdk_read(s, key, v, l->var_size, l->var_size) < 0 ||
        sdk_kind_of(s, v) != SDK_K_CONTEXTVAR)
        return false;
    char name[32];
    if (sdk_ascii(s, load_le64(v + l->var_name), name, sizeof(name)) != 0 ||
        strcmp(name, SDK_VAR_NAME) != 0)
        return false;
    if (sdk_read(s, value, h, 16, 16) < 0 || sdk_kind_of(s, h) != SDK_K_OTEL_CONTEXT)
        return false;
    s->var = key;
    s->var_hash = sdk_fold(load_le64(v + l->var_hash));
    return true;
}

/* Looks for the SDK's variable in the context at @ctx. Returns true when found
 * and checked. */
static bool sdk_search(struct otel_sdk *s, uint64_t ctx)
{
    const struct pyctx_layout *l = s->l;
    uint8_t c[64], h[64];
    if (sdk_read(s, ctx, c, l->ctx_size, l->ctx_size) < 0 || sdk_kind_of(s, c) != SDK_K_CONTEXT)
        return false;
    uint64_t hamt = load_le64(c + l->ctx_vars);
    if (sdk_read(s, hamt, h, l->hamt_size, l->hamt_size) < 0 || sdk_kind_of(s, h) != SDK_K_HAMT)
        return false;
    uint64_t root = load_le64(h + l->hamt_root);
    if (!sdk_hamt_each(s, root, sdk_is_var))
        return false;
    /* the stored hash finds what the walk found */
    uint64_t value;
    if (sdk_hamt_find(s, root, s->var, s->var_hash, &value) != 0 || value == 0) {
        s->var = 0;
        sdk_invalid(s, "layout check: the stored hash of ContextVar \"%s\" does not find it",
                    SDK_VAR_NAME);
        return false;
    }
    return true;
}

/* ---- per sample ------------------------------------------------------------------- */

static struct sdk_memo *sdk_memo_slot(struct otel_sdk *s, uint64_t tstate)
{
    return &s->memo[(tstate >> 4) % SDK_MEMO_SLOTS];
}

/* A span read whose context has had its second look (pd->again). */
static void sdk_settle(struct otel_sdk *s, const struct sdk_pending *pd)
{
    if (pd->again != pd->hamt) {
        s->stats.torn++; /* the thread set a variable meanwhile */
        return;
    }
    if (pd->version)
        *sdk_memo_slot(s, pd->tstate) = (struct sdk_memo){
            .tstate = pd->tstate, .dict = pd->dict, .version = pd->version, .span = pd->got};
    *pd->out = pd->got;
    if (pd->got.set)
        s->stats.spans++;
    else
        s->stats.none++;
}

/* The second look at the contexts of the spans read this sample, in one call
 * (one by one if it fails). */
static void sdk_recheck(struct otel_sdk *s)
{
    struct memread_iov iov[SDK_BATCH];
    for (size_t j = 0; j < s->npend; j++)
        iov[j] = (struct memread_iov){s->pend[j].ctx + s->l->ctx_vars, &s->pend[j].again, 8};
    bool batch = s->npend > 0 && memread_readv(s->mr, iov, s->npend) == 0;
    for (size_t j = 0; j < s->npend; j++) {
        struct sdk_pending *pd = &s->pend[j];
        if (!batch && memread_read(s->mr, iov[j].raddr, &pd->again, 8) != 0) {
            s->stats.faults++;
            continue;
        }
        pd->again = load_le64(&pd->again);
        sdk_settle(s, pd);
    }
    s->npend = 0;
}

/* Whether the thread at @tstate is still in the Context @dict (its header
 * @d) it was in last: the same address and version tag (<= 3.13). */
static bool sdk_memo_hit(struct otel_sdk *s, uint64_t tstate, uint64_t dict, const uint8_t *d)
{
    const struct sdk_memo *mm = sdk_memo_slot(s, tstate);
    uint64_t version = s->l->dict_version ? load_le64(d + s->l->dict_version) : 0;
    return version && mm->tstate == tstate && mm->dict == dict && mm->version == version;
}

/* The span of the thread whose state is at @tstate, its context at @ctx; a
 * span read waits in s->pend for sdk_recheck(). */
static void sdk_thread(struct otel_sdk *s, uint64_t tstate, uint64_t ctx, struct sample_span *out)
{
    const struct pyctx_layout *l = s->l;
    uint8_t c[64], h[64], d[64];
    out->set = false;
    s->stats.threads++;
    if (!ctx) {
        s->stats.none++;
        return;
    }
    int err;
    uint64_t hamt, root, dict, span, sc;
    if (sdk_read(s, ctx, c, l->ctx_size, l->ctx_size) < 0)
        goto fault;
    if (sdk_kind_of(s, c) != SDK_K_CONTEXT)
        goto torn;
    hamt = load_le64(c + l->ctx_vars);
    if (sdk_read(s, hamt, h, l->hamt_size, l->hamt_size) < 0)
        goto fault;
    if (sdk_kind_of(s, h) != SDK_K_HAMT)
        goto torn;
    root = load_le64(h + l->hamt_root);
    if ((err = sdk_hamt_find(s, root, s->var, s->var_hash, &dict)) != 0)
        goto fail;
    if (!dict) {
        s->stats.none++;
        return;
    }
    /* the Context: one whose (address, version) was seen holds what it held */
    struct sdk_memo *mm = sdk_memo_slot(s, tstate);
    if (sdk_read(s, dict, d, l->dict_size, l->dict_size) < 0)
        goto fault;
    if (sdk_kind_of(s, d) != SDK_K_OTEL_CONTEXT)
        goto torn;
    uint64_t version = l->dict_version ? load_le64(d + l->dict_version) : 0;
    if (sdk_memo_hit(s, tstate, dict, d)) {
        *out = mm->span;
        s->stats.cached++;
        if (out->set)
            s->stats.spans++;
        else
            s->stats.none++;
        return;
    }
    if (!s->span_key) {
        /* the key is made when the SDK is imported; a Context without it has no span */
        if ((err = sdk_dict_find(s, dict, 0, SDK_SPAN_PREFIX, true, &s->span_key, &span)) != 0)
            goto fail;
    } else {
        uint64_t k;
        if ((err = sdk_dict_find(s, dict, s->span_key, NULL, false, &k, &span)) != 0)
            goto fail;
    }
    struct sample_span got = {.set = false};
    if (span) {
        if ((err = sdk_span_context(s, span, &sc)) != 0)
            goto fail;
        if (sc) {
            /* the SpanContext's first two items, then both ints (an int at
             * the end of its mapping: what it holds) */
            uint8_t tu[64], ti[64], si[64];
            size_t tlen = l->tuple_item + 16, ilen = SDK_INT_READ(l);
            if (sdk_read(s, sc, tu, tlen, tlen) < 0)
                goto fault;
            if (sdk_kind_of(s, tu) != SDK_K_SPANCONTEXT || load_le64(tu + l->ob_size) < 2)
                goto torn;
            uint64_t tid = load_le64(tu + l->tuple_item), sid = load_le64(tu + l->tuple_item + 8);
            ssize_t nt = sdk_read(s, tid, ti, l->long_digits, ilen);
            ssize_t ns = nt < 0 ? nt : sdk_read(s, sid, si, l->long_digits, ilen);
            if (ns < 0)
                goto fault;
            if (sdk_kind_of(s, ti) != SDK_K_INT || sdk_kind_of(s, si) != SDK_K_INT ||
                !sdk_int(s, ti, (size_t)nt, 5, got.trace_id, 16) ||
                !sdk_int(s, si, (size_t)ns, 3, got.span_id, 8))
                goto torn;
            static const uint8_t zero[16];
            got.set = memcmp(got.span_id, zero, 8) != 0; /* 0: INVALID_SPAN */
        }
    }
    /* the context's HAMT once more, after everything: if it moved, the thread
     * set a variable meanwhile (sdk_recheck(), for all threads in one call) */
    struct sdk_pending pd = {.out = out,
                             .got = got,
                             .tstate = tstate,
                             .ctx = ctx,
                             .hamt = hamt,
                             .dict = dict,
                             .version = version};
    if (s->npend < SDK_BATCH) {
        s->pend[s->npend++] = pd;
        return;
    }
    if (sdk_word(s, ctx + l->ctx_vars, &pd.again) != 0)
        goto fault;
    sdk_settle(s, &pd);
    return;
fail:
    if (err != -EAGAIN)
        goto fault;
torn:
    s->stats.torn++;
    return;
fault:
    s->stats.faults++;
}

/*
 * Reads @len bytes at each of the @n addresses a->next[] (0: none) in one
 * call, for sdk_read() to find during this sample. A call that fails (one
 * range unmapped) leaves them to be read one by one.
 */
static void sdk_prefetch(struct otel_sdk *s, size_t n, size_t len)
{
    struct sdk_ahead *a = s->ahead;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t at = a->next[i];
        size_t want = len ? len : a->len[i];
        if (!at || at % 8 || want == 0 || a->used + want > SDK_PF_BYTES)
            continue;
        struct sdk_pf *p = sdk_pf_find(s, at);
        if (!p || p->gen == s->pf_gen)
            continue; /* no room, or already read */
        /* claimed now (len 0: not usable until the call succeeds), so that a
         * second thread with the same address does not read it twice */
        *p = (struct sdk_pf){.addr = at, .gen = s->pf_gen, .off = (uint32_t)a->used};
        a->iov[k] = (struct memread_iov){at, a->bytes + a->used, want};
        a->slot[k] = (uint32_t)(p - a->pf);
        a->used += want;
        k++;
    }
    if (k == 0 || memread_readv(s->mr, a->iov, k) != 0)
        return;
    for (size_t j = 0; j < k; j++)
        a->pf[a->slot[j]].len = (uint32_t)a->iov[j].len;
}

/*
 * Where the _context of span a->dict[@i] is, for a class already known, as
 * sdk_span_context() will read it (3.11+: a values slot, or 3.13+'s inline
 * values): into a->next[@i] and a->len[@i]; 0 when it is elsewhere.
 */
static void sdk_attr_ahead(struct otel_sdk *s, size_t i, size_t before)
{
    const struct pyctx_layout *l = s->l;
    struct sdk_ahead *a = s->ahead;
    uint64_t span = a->dict[i];
    uint8_t pre[48];
    a->next[i] = 0;
    a->len[i] = 0;
    if (!span || before != 32 || sdk_read(s, span - 32, pre, 48, 48) < 0)
        return;
    uint64_t taddr = load_le64(pre + 32 + l->ob_type);
    const struct sdk_type *t = NULL;
    for (size_t j = 0; j < s->ntypes && !t; j++)
        t = s->types[j].addr == taddr ? &s->types[j] : NULL;
    if (!t || t->kind != SDK_K_OTHER || t->attr_ix < 0)
        return;
    uint64_t at;
    size_t len;
    if (sdk_attr_place(s, t, (uint32_t)t->attr_ix, span, pre, &at, &len)) {
        a->next[i] = at;
        a->len[i] = (uint32_t)len;
    }
}

/*
 * The links of every thread's chain read level by level, each level for all
 * threads in one call (context, HAMT, root node, the SDK's Context, its keys,
 * the span, the SpanContext, the two ints): a sample costs about nine calls
 * for its threads, not nine per thread. Nothing is judged here: the
 * per-thread walk (sdk_thread()) reads the same addresses, finds them read,
 * and checks and counts as it would without. Deeper HAMT levels, values
 * arrays and long keys tables are read there, one by one.
 */
static void sdk_batch(struct otel_sdk *s, const struct unwind_result *r, size_t n, size_t word)
{
    const struct pyctx_layout *l = s->l;
    struct sdk_ahead *a = s->ahead;
    s->pf_gen++;
    a->used = 0;
    n = n < SDK_BATCH ? n : SDK_BATCH;
    for (size_t i = 0; i < n; i++) {
        const struct unwind_thread *t = &r->threads[i];
        a->next[i] = t->status == SAMPLE_OK && !s->spans[i].set ? t->words[word] : 0;
        a->len[i] = 0;
    }
    uint8_t b[64];
    sdk_prefetch(s, n, l->ctx_size);
    for (size_t i = 0; i < n; i++) { /* contexts -> their HAMTs */
        uint64_t at = a->next[i];
        a->next[i] = at && sdk_read(s, at, b, l->ctx_size, l->ctx_size) > 0 &&
                             sdk_kind_of(s, b) == SDK_K_CONTEXT
                         ? load_le64(b + l->ctx_vars)
                         : 0;
    }
    sdk_prefetch(s, n, l->hamt_size);
    for (size_t i = 0; i < n; i++) { /* HAMTs -> their root nodes */
        uint64_t at = a->next[i];
        a->next[i] = at && sdk_read(s, at, b, l->hamt_size, l->hamt_size) > 0 &&
                             sdk_kind_of(s, b) == SDK_K_HAMT
                         ? load_le64(b + l->hamt_root)
                         : 0;
    }
    sdk_prefetch(s, n, SDK_NODE_READ(l));
    for (size_t i = 0; i < n; i++) { /* root nodes -> the SDK's Context dicts */
        uint64_t at = a->next[i], dict = 0;
        a->next[i] = a->dict[i] =
            at && sdk_hamt_find(s, at, s->var, s->var_hash, &dict) == 0 ? dict : 0;
    }
    sdk_prefetch(s, n, l->dict_size);
    if (!s->span_key)
        return;                      /* found by its text, on the per-thread walk */
    for (size_t i = 0; i < n; i++) { /* Contexts -> their keys tables */
        uint64_t at = a->next[i];
        a->next[i] = at && sdk_read(s, at, b, l->dict_size, l->dict_size) > 0 &&
                             sdk_kind_of(s, b) == SDK_K_OTEL_CONTEXT &&
                             !sdk_memo_hit(s, r->threads[i].tstate_raddr, at, b)
                         ? load_le64(b + l->dict_keys)
                         : 0;
    }
    sdk_prefetch(s, n, SDK_KEYS_READ(l));
    size_t before = s->m.attrs == PYCTX_ATTRS_DICTOFFSET ? 0 : 32;
    for (size_t i = 0; i < n; i++) { /* keys -> the spans (and the words before them) */
        uint64_t span = 0, k;
        if (a->next[i] && sdk_dict_find(s, a->dict[i], s->span_key, NULL, false, &k, &span) == 0 &&
            span)
            a->next[i] = span - before;
        else
            a->next[i] = 0;
        a->dict[i] = a->next[i] ? span : 0; /* (from here on: the span) */
    }
    sdk_prefetch(s, n, before + 16);
    for (size_t i = 0; i < n; i++) /* spans -> where their _context is */
        sdk_attr_ahead(s, i, before);
    sdk_prefetch(s, n, 0);
    for (size_t i = 0; i < n; i++) { /* spans -> their SpanContexts */
        uint64_t sc = 0;
        a->next[i] = a->dict[i] && sdk_span_context(s, a->dict[i], &sc) == 0 ? sc : 0;
    }
    sdk_prefetch(s, n, l->tuple_item + 16);
    size_t m = 0;
    memcpy(a->dict, a->next, n * sizeof(a->next[0])); /* (from here on: the SpanContext) */
    for (size_t i = 0; i < n; i++) {                  /* SpanContexts -> the two ints */
        uint64_t at = a->dict[i];
        if (at && sdk_read(s, at, b, l->tuple_item + 16, l->tuple_item + 16) > 0 &&
            sdk_kind_of(s, b) == SDK_K_SPANCONTEXT) {
            a->next[m++] = load_le64(b + l->tuple_item);
            a->next[m++] = load_le64(b + l->tuple_item + 8);
        }
    }
    sdk_prefetch(s, m, SDK_INT_READ(l));
}

const struct sample_span *otel_sdk_sample(struct otel_sdk *s, const struct unwind_result *r,
                                          size_t word, const struct sample_span *published)
{
    size_t n = r->nthreads < UNWIND_MAX_THREADS ? r->nthreads : UNWIND_MAX_THREADS;
    for (size_t i = 0; i < n; i++)
        s->spans[i] = published ? published[i] : (struct sample_span){.set = false};
    if (s->state == OTEL_SDK_INVALID || word >= UNWIND_THREAD_WORDS)
        return s->spans;
    if (s->state == OTEL_SDK_SEARCHING) {
        uint64_t now = clock_mono(s->clock);
        if (now < s->next_search_ns)
            return s->spans;
        s->next_search_ns = now + SDK_SEARCH_NS;
        s->stats.searches++;
        unsigned looked = 0;
        for (size_t i = 0; i < n && looked < SDK_SEARCH_CONTEXTS; i++) {
            uint64_t ctx = r->threads[i].words[word];
            if (r->threads[i].status != SAMPLE_OK || !ctx)
                continue;
            looked++;
            if (sdk_search(s, ctx)) {
                s->state = OTEL_SDK_ACTIVE;
                /* the one allocation a sample makes, once per process; without
                 * it each thread's chain is read on its own */
                s->ahead = alloc_calloc(1, sizeof(*s->ahead));
                s->why[0] = '\0';
                break;
            }
            if (s->state == OTEL_SDK_INVALID)
                break;
        }
        if (s->state == OTEL_SDK_SEARCHING)
            snprintf(s->why, sizeof(s->why),
                     "no thread's context holds the SDK's \"%s\" variable (yet)", SDK_VAR_NAME);
        if (s->state != OTEL_SDK_ACTIVE)
            return s->spans;
    }
    if (s->ahead)
        sdk_batch(s, r, n, word);
    for (size_t i = 0; i < n; i++) {
        const struct unwind_thread *t = &r->threads[i];
        if (t->status != SAMPLE_OK || s->spans[i].set)
            continue;
        sdk_thread(s, t->tstate_raddr, t->words[word], &s->spans[i]);
        if (s->state == OTEL_SDK_INVALID)
            break;
    }
    sdk_recheck(s);
    s->pf_gen++; /* what was read ahead is this sample's only */
    return s->spans;
}

/* ---- lifecycle ---------------------------------------------------------------------- */

int otel_sdk_new(struct memread *mr, unsigned minor, bool free_threaded, const struct clock *clock,
                 struct otel_sdk **out, char *why, size_t why_len)
{
    const struct pyctx_layout *l = pyctx_layout_for(minor);
    if (!l || free_threaded) {
        snprintf(why, why_len,
                 "the SDK's context is read on CPython 3.9-3.15 default builds, not %s3.%u",
                 free_threaded ? "free-threaded " : "", minor);
        return -ENOTSUP;
    }
    struct otel_sdk *s = alloc_calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->mr = mr;
    s->clock = clock ? clock : &clock_system;
    s->l = l;
    (void)pyctx_model_for(minor, &s->m);
    s->state = OTEL_SDK_SEARCHING;
    s->pf_gen = 1; /* the zeroed slots are free */
    *out = s;
    return 0;
}

uint32_t otel_sdk_context_offset(const struct otel_sdk *s)
{
    return s->l->ts_context;
}

enum otel_sdk_state otel_sdk_state(const struct otel_sdk *s)
{
    return s->state;
}

const char *otel_sdk_why(const struct otel_sdk *s)
{
    return s->why;
}

struct otel_sdk_stats otel_sdk_stats(const struct otel_sdk *s)
{
    return s->stats;
}

void otel_sdk_free(struct otel_sdk *s)
{
    if (!s)
        return;
    alloc_free(s->ahead);
    alloc_free(s);
}
