/* SPDX-License-Identifier: MIT */
/*
 * unwind.c: the remote stack walker (see unwind.h and docs/unwinder.md):
 * the unwinder's life and a sample's order of work. Its jobs are spread
 * over the unwind*.c files listed in unwind_internal.h.
 *
 * A sample runs in two phases per thread. The walk follows the frame chain
 * through local copies of the thread's data-stack chunks and records raw
 * frames (code object address, instruction pointer, marker kind). The resolve
 * phase then turns raw frames into names and positions through the code
 * cache, reading only code objects it has not seen. Keeping the phases apart
 * lets 3.13 re-check every cached code object of the sample in one batched
 * read before trusting the cache.
 *
 * Here: attach (the layout from unwind_attach.c, every buffer), the buffers'
 * growth when a sample needs more than any before, and unwinder_sample():
 * the runtime's fields, read in one call with the first interpreter and its
 * main thread where the last sample found them, then each interpreter and
 * the threads to sample in it (unwind_thread.c).
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/bytes.h"
#include "discovery/pyruntime.h"
#include "python/pyopcode.h"
#include "unwind/codecache.h"
#include "unwind/unwind_internal.h"

#define UNWIND_FRAMES_START  64u /* frame slots at first; doubled up to UNWIND_MAX_FRAMES */
#define UNWIND_THREADS_START 8u  /* thread slots at first; doubled up to UNWIND_MAX_THREADS */
#define UNWIND_CHAIN_START   16u /* chain links at first; doubled up to UNWIND_MAX_DEPTH */
#define UNWIND_CODE_START    64u /* code-cache entries at first (see codecache.h) */
#define UNWIND_CODE_ENTRIES  4096u
#define UNWIND_CODE_ARENA    (4u << 20)
#define UNWIND_INTERP_IOV    10u /* ranges of one interpreter read */

int unwind_scratch_new(struct unwind_scratch **out)
{
    struct unwind_scratch *s = alloc_calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->chunk_buf = alloc_malloc(UNWIND_CHUNK_BUF);
    s->verify_buf = alloc_malloc(UNWIND_CHUNK_BUF);
    s->visited = alloc_calloc(UNWIND_VISITED_SLOTS, sizeof(*s->visited));
    s->visited_stamp = alloc_calloc(UNWIND_VISITED_SLOTS, sizeof(*s->visited_stamp));
    s->linetable_buf = alloc_malloc(UNWIND_LINETABLE_MAX);
    if (!s->chunk_buf || !s->verify_buf || !s->visited || !s->visited_stamp || !s->linetable_buf) {
        unwind_scratch_free(s);
        return -ENOMEM;
    }
    *out = s;
    return 0;
}

void unwind_scratch_free(struct unwind_scratch *s)
{
    if (!s)
        return;
    alloc_free(s->chunk_buf);
    alloc_free(s->verify_buf);
    alloc_free(s->visited);
    alloc_free(s->visited_stamp);
    alloc_free(s->linetable_buf);
    alloc_free(s->check_addr);
    alloc_free(s->check_buf);
    alloc_free(s);
}

int unwinder_new(struct memread *mr, const struct pyruntime *rt, struct unwinder **out, char *why,
                 size_t why_len)
{
    return unwinder_new_shared(mr, rt, NULL, out, why, why_len);
}

int unwinder_new_shared(struct memread *mr, const struct pyruntime *rt,
                        struct unwind_scratch *scratch, struct unwinder **out, char *why,
                        size_t why_len)
{
    struct py_layout layout;
    int err = unwind_attach_layout(mr, rt, &layout, why, why_len);
    if (err)
        return err;
    struct unwinder *u = alloc_calloc(1, sizeof(*u));
    if (!u)
        return -ENOMEM;
    u->l = layout;
    err = -ENOMEM;
    u->optable = pyopcode_table(rt->version.minor);
    u->mr = mr;
    u->runtime_raddr = rt->raddr;
    u->none_object = rt->no_table ? rt->none_object : 0;
    u->ns_pid = rt->ns_pid;
    if (scratch) {
        u->sc = scratch;
    } else {
        err = unwind_scratch_new(&u->sc);
        if (err) {
            snprintf(why, why_len, "out of memory for the unwinder's scratch");
            goto fail;
        }
        u->own_sc = true;
        err = -ENOMEM;
    }
    u->guess_max = u->l.frame_objects ? UNWIND_GUESS_FRAMEOBJS : UNWIND_GUESS_FRAMES;
    u->extra = alloc_calloc(u->guess_max, u->l.fr_size);
    if (u->l.frame_objects)
        u->span_buf = alloc_malloc(UNWIND_SPAN_BUF);
    u->guess_frames = alloc_calloc((size_t)UNWIND_CHUNK_GUESSES * u->guess_max, sizeof(uint64_t));
    u->chain_cap = UNWIND_CHAIN_START;
    u->chain = alloc_calloc(u->chain_cap, sizeof(*u->chain));
    u->frames_cap = UNWIND_FRAMES_START;
    u->raw = alloc_calloc(u->frames_cap, sizeof(*u->raw));
    u->frames = alloc_calloc(u->frames_cap, sizeof(*u->frames));
    u->tags = alloc_calloc(u->frames_cap, sizeof(*u->tags));
    u->threads_cap = UNWIND_THREADS_START;
    u->threads = alloc_calloc(u->threads_cap, sizeof(*u->threads));
    if (!u->l.has_code_generation) { /* 3.13's re-check of cached code objects */
        if (u->sc->check_len < u->l.co_read_len) {
            uint8_t *b = alloc_malloc((size_t)MEMREAD_MAX_IOV * u->l.co_read_len);
            if (b) {
                alloc_free(u->sc->check_buf);
                u->sc->check_buf = b;
                u->sc->check_len = u->l.co_read_len;
            }
        }
        if (!u->sc->check_addr)
            u->sc->check_addr = alloc_calloc(MEMREAD_MAX_IOV, sizeof(*u->sc->check_addr));
        u->guess_codes = alloc_calloc((size_t)UNWIND_CHUNK_GUESSES * UNWIND_GUESS_CODES,
                                      sizeof(*u->guess_codes));
        u->pre_buf = alloc_malloc((size_t)UNWIND_GUESS_CODES * u->l.co_read_len);
    }
    if (!u->chain || !u->raw || !u->frames || !u->tags || !u->threads || !u->extra ||
        !u->guess_frames || (u->l.frame_objects && !u->span_buf) ||
        (!u->l.has_code_generation && (!u->guess_codes || !u->pre_buf || !u->sc->check_addr ||
                                       u->sc->check_len < u->l.co_read_len))) {
        snprintf(why, why_len, "out of memory for the unwinder's buffers");
        goto fail;
    }
    err = codecache_new(UNWIND_CODE_START, UNWIND_CODE_ENTRIES, UNWIND_CODE_ARENA, &u->codes);
    if (err) {
        snprintf(why, why_len, "out of memory for the code cache");
        goto fail;
    }
    u->result.threads = u->threads;
    u->resolve_epoch = 1; /* tags of epoch 0 are never reused */
    unwind_interp_span(u);
    *out = u;
    return 0;
fail:
    unwinder_free(u);
    return err;
}

void unwinder_free(struct unwinder *u)
{
    if (!u)
        return;
    codecache_free(u->codes);
    if (u->own_sc)
        unwind_scratch_free(u->sc);
    alloc_free(u->chain);
    alloc_free(u->raw);
    alloc_free(u->frames);
    alloc_free(u->tags);
    alloc_free(u->threads);
    alloc_free(u->guess_codes);
    alloc_free(u->pre_buf);
    alloc_free(u->extra);
    alloc_free(u->span_buf);
    alloc_free(u->guess_frames);
    alloc_free(u);
}

void unwinder_set_on_cpu(struct unwinder *u, bool (*on_cpu)(void *ctx, uint64_t native_tid),
                         void *ctx)
{
    u->on_cpu = on_cpu;
    u->on_cpu_ctx = ctx;
}

void unwinder_set_tasks(struct unwinder *u,
                        int (*list)(void *ctx, uint64_t *tids, size_t max, size_t *n), void *ctx)
{
    u->tasks_fn = list;
    u->tasks_ctx = ctx;
    /* a new lister lists anew, and what was judged by the old list is not kept */
    u->ntasks = 0;
    u->tasks_ok = false;
    u->tasks_serial = 0;
    u->tasks_gen++;
    memset(u->tid_memo, 0, sizeof(u->tid_memo));
}

int unwinder_set_thread_words(struct unwinder *u, size_t first, const uint32_t *offsets, size_t n)
{
    if (first > UNWIND_THREAD_WORDS || n > UNWIND_THREAD_WORDS - first)
        return -EINVAL;
    for (size_t i = 0; offsets && i < n; i++) {
        if (offsets[i] % 8 != 0 || (size_t)offsets[i] + 8 > PYABI_MAX_TSTATE)
            return -EINVAL;
    }
    for (size_t i = 0; i < n; i++) {
        u->word_off[first + i] = offsets ? offsets[i] : 0;
        u->word_set[first + i] = offsets != NULL;
    }
    size_t end = u->ts_base_len;
    u->nwords = 0;
    for (size_t i = 0; i < UNWIND_THREAD_WORDS; i++) {
        if (!u->word_set[i])
            continue;
        u->nwords = i + 1;
        end = u->word_off[i] + 8u > end ? u->word_off[i] + 8u : end;
    }
    u->ts_read_len = end;
    return 0;
}

const struct py_layout *unwinder_layout(const struct unwinder *u)
{
    return &u->l;
}

/* --- the buffers that grow ---------------------------------------------- */

/* A copy of @n elements of @size from @old in a new block of @cap elements,
 * the rest zeroed; NULL when out of memory (@old is kept). */
static void *unwind_regrow(const void *old, size_t n, size_t cap, size_t size)
{
    uint8_t *p = alloc_malloc(cap * size);
    if (!p)
        return NULL;
    memcpy(p, old, n * size);
    memset(p + n * size, 0, (cap - n) * size);
    return p;
}

/*
 * Doubles the frame slots (raw, frames, tags) up to UNWIND_MAX_FRAMES: the
 * one allocation a sample may make, only when a sample holds more frames
 * than any before (a few times in the unwinder's life). The threads of this
 * sample already walked are pointed at the new frames. Returns false (the
 * frame is left out, as at the cap) when out of memory.
 */
bool unwind_grow_frames(struct unwinder *u)
{
    if (u->frames_cap >= UNWIND_MAX_FRAMES)
        return false;
    size_t cap = u->frames_cap * 2 < UNWIND_MAX_FRAMES ? u->frames_cap * 2 : UNWIND_MAX_FRAMES;
    struct raw_frame *raw = unwind_regrow(u->raw, u->frames_cap, cap, sizeof(*raw));
    struct unwind_frame *frames = unwind_regrow(u->frames, u->frames_cap, cap, sizeof(*frames));
    struct resolved_tag *tags = unwind_regrow(u->tags, u->frames_cap, cap, sizeof(*tags));
    if (!raw || !frames || !tags) {
        alloc_free(raw);
        alloc_free(frames);
        alloc_free(tags);
        return false;
    }
    for (size_t i = 0; i < u->result.nthreads; i++) {
        struct unwind_thread *t = &u->threads[i];
        if (t->frames)
            t->frames = frames + (t->frames - u->frames);
    }
    alloc_free(u->raw);
    alloc_free(u->frames);
    alloc_free(u->tags);
    u->raw = raw;
    u->frames = frames;
    u->tags = tags;
    u->frames_cap = cap;
    return true;
}

/*
 * Doubles the thread slots up to UNWIND_MAX_THREADS, as unwind_grow_frames()
 * does the frames: only when a sample holds more threads than any before.
 * Returns false (the thread is left out, as at the cap) when out of memory.
 */
bool unwind_grow_threads(struct unwinder *u)
{
    if (u->threads_cap >= UNWIND_MAX_THREADS)
        return false;
    size_t cap = u->threads_cap * 2 < UNWIND_MAX_THREADS ? u->threads_cap * 2 : UNWIND_MAX_THREADS;
    struct unwind_thread *t = unwind_regrow(u->threads, u->threads_cap, cap, sizeof(*t));
    if (!t)
        return false;
    alloc_free(u->threads);
    u->threads = t;
    u->threads_cap = cap;
    u->result.threads = t;
    return true;
}

/* Doubles the walked chain's links up to UNWIND_MAX_DEPTH, as
 * unwind_grow_frames() does the frames: only when a thread's stack is deeper
 * than any before. Returns false (the walk stops: too deep) when out of memory. */
bool unwind_grow_chain(struct unwinder *u)
{
    size_t cap = u->chain_cap * 2 < UNWIND_MAX_DEPTH ? u->chain_cap * 2 : UNWIND_MAX_DEPTH;
    struct chain_link *c = unwind_regrow(u->chain, u->nchain, cap, sizeof(*c));
    if (!c)
        return false;
    alloc_free(u->chain);
    u->chain = c;
    u->chain_cap = cap;
    return true;
}

/* --- interpreters and the sample ----------------------------------------- */

/* The ranges that fill @in from the interpreter at @raddr; returns how many. */
static size_t unwind_interp_iov(struct unwinder *u, uint64_t raddr, struct interp_view *in,
                                struct memread_iov *iov)
{
    const struct py_layout *l = &u->l;
    *in = (struct interp_view){.raddr = raddr};
    if (u->in_span) {
        iov[0] = (struct memread_iov){raddr + u->in_lo, u->interp_buf, u->in_span};
        return 1;
    }
    size_t n = 0;
    iov[n++] = (struct memread_iov){raddr + l->in_id, &in->id, 8};
    iov[n++] = (struct memread_iov){raddr + l->in_next, &in->next, 8};
    iov[n++] = (struct memread_iov){raddr + l->in_threads_head, &in->threads_head, 8};
    iov[n++] = (struct memread_iov){raddr + l->in_threads_main, &in->threads_main, 8};
    iov[n++] = (struct memread_iov){raddr + l->in_gil_holder, &in->gil_holder, 8};
    iov[n++] = (struct memread_iov){raddr + l->in_gc_collecting, &in->gc_collecting, 4};
    iov[n++] = (struct memread_iov){raddr + l->in_gil_locked, &in->gil_locked, 4};
    if (l->has_gc_frame)
        iov[n++] = (struct memread_iov){raddr + l->in_gc_frame, &in->gc_frame, 8};
    if (l->has_code_generation)
        iov[n++] = (struct memread_iov){raddr + l->in_code_generation, &in->code_generation, 8};
    if (l->has_tlbc)
        iov[n++] = (struct memread_iov){raddr + l->in_tlbc_generation, &in->tlbc_generation, 4};
    return n;
}

/* After a read set up by unwind_interp_iov(): fills @in from the one range. */
static void unwind_interp_done(struct unwinder *u, struct interp_view *in)
{
    const struct py_layout *l = &u->l;
    if (!u->in_span) {
        if (!l->has_threads_main)
            in->threads_main = 0; /* what was read there is another field */
        return;
    }
#define UNWIND_IN_AT(off) (u->interp_buf + ((off)-u->in_lo))
    in->id = (int64_t)load_le64(UNWIND_IN_AT(l->in_id));
    in->next = load_le64(UNWIND_IN_AT(l->in_next));
    in->threads_head = load_le64(UNWIND_IN_AT(l->in_threads_head));
    in->threads_main = l->has_threads_main ? load_le64(UNWIND_IN_AT(l->in_threads_main)) : 0;
    in->gil_holder = load_le64(UNWIND_IN_AT(l->in_gil_holder));
    in->gc_collecting = (int32_t)load_le32(UNWIND_IN_AT(l->in_gc_collecting));
    in->gil_locked = (int32_t)load_le32(UNWIND_IN_AT(l->in_gil_locked));
    if (l->has_gc_frame)
        in->gc_frame = load_le64(UNWIND_IN_AT(l->in_gc_frame));
    if (l->has_code_generation)
        in->code_generation = load_le64(UNWIND_IN_AT(l->in_code_generation));
    if (l->has_tlbc)
        in->tlbc_generation = load_le32(UNWIND_IN_AT(l->in_tlbc_generation));
#undef UNWIND_IN_AT
}

static int unwind_read_interp(struct unwinder *u, uint64_t raddr, struct interp_view *in)
{
    struct memread_iov iov[UNWIND_INTERP_IOV];
    size_t n = unwind_interp_iov(u, raddr, in, iov);
    int err = memread_readv(u->mr, iov, n);
    if (!err)
        unwind_interp_done(u, in);
    return err;
}

/* Sets in->threads_main to the last thread of the interpreter's list. */
static int unwind_find_tail(struct unwinder *u, struct interp_view *in)
{
    uint64_t t = in->threads_head, next = 0;
    for (unsigned n = 0; t && n < UNWIND_MAX_THREADS; n++) {
        int err = memread_read(u->mr, t + u->l.ts_next, &next, sizeof(next));
        if (err)
            return err;
        if (next == 0) {
            in->threads_main = t;
            return 0;
        }
        t = next;
    }
    return 0; /* a list longer than the cap: no main thread */
}

/*
 * Clears the code cache when an interpreter's code_object_generation moved,
 * and forgets where bytecode copies are when its tlbc_generation moved (a
 * new epoch empties the TLBC slots and re-resolves every frame).
 */
static void unwind_check_generation(struct unwinder *u, const struct interp_view *in)
{
    for (size_t i = 0; i < u->ngen; i++) {
        if (u->gen_interp[i] == in->raddr) {
            if (u->gen_value[i] != in->code_generation) {
                codecache_clear(u->codes);
                u->resolve_epoch++;
                u->gen_value[i] = in->code_generation;
            }
            if (u->gen_tlbc[i] != in->tlbc_generation) {
                u->resolve_epoch++;
                u->gen_tlbc[i] = in->tlbc_generation;
            }
            return;
        }
    }
    if (u->ngen == UNWIND_MAX_GENERATIONS) {
        codecache_clear(u->codes); /* too many interpreters to track: be safe */
        u->resolve_epoch++;
        u->ngen = 0;
    }
    u->gen_interp[u->ngen] = in->raddr;
    u->gen_tlbc[u->ngen] = in->tlbc_generation;
    u->gen_value[u->ngen++] = in->code_generation;
}

/*
 * A sample's first read, in one system call: the runtime's interpreter list
 * head and finalizing flag, its GIL (<= 3.11), and the first interpreter and
 * its main thread where the last sample found them (they rarely change).
 */
struct sample_read {
    struct memread_iov iov[3 + UNWIND_INTERP_IOV + UNWIND_THREAD_IOV];
    size_t nrt; /* iov[0, nrt): the runtime's fields (and its GIL) */
    size_t n;   /* iov[nrt, n): the guesses */
    uint64_t head, finalizing;
    /* <= 3.11: the one GIL is the runtime's (locked and last_holder are
     * neighbours): read with the runtime's fields */
    uint8_t gil[24];
    struct memread_iov gil_iov; /* len 0: not read with them */
    uint32_t gil_lo;
    struct interp_view guessed;    /* the first interpreter, if guessed */
    struct thread_read fused_read; /* its main thread's, if fused */
    bool fused;                    /* the main thread is read in the same call */
    bool skip_runtime;             /* the runtime's fields are left out */
};

/* Sets up the first read of a sample with @flags. */
static void unwind_runtime_prepare(struct unwinder *u, unsigned flags, struct sample_read *sr)
{
    const struct py_layout *l = &u->l;
    struct memread_iov *rt = sr->iov;
    sr->head = 0;
    sr->finalizing = 0;
    sr->nrt = 0;
    if (u->rt_span) {
        rt[sr->nrt++] =
            (struct memread_iov){u->runtime_raddr + u->rt_lo, u->runtime_buf, u->rt_span};
    } else {
        rt[sr->nrt++] =
            (struct memread_iov){u->runtime_raddr + l->rt_interpreters_head, &sr->head, 8};
        rt[sr->nrt++] =
            (struct memread_iov){u->runtime_raddr + l->rt_finalizing, &sr->finalizing, 8};
    }
    sr->gil_iov = (struct memread_iov){0, sr->gil, 0};
    sr->gil_lo = 0;
    if (l->holds_gil_kind == PYABI_GIL_RUNTIME_HOLDER) {
        sr->gil_lo = l->rt_gil_locked < l->rt_gil_holder ? l->rt_gil_locked : l->rt_gil_holder;
        uint32_t hi = l->rt_gil_locked < l->rt_gil_holder ? l->rt_gil_holder : l->rt_gil_locked;
        if (hi - sr->gil_lo <= sizeof(sr->gil) - 8) {
            sr->gil_iov =
                (struct memread_iov){u->runtime_raddr + sr->gil_lo, sr->gil, hi - sr->gil_lo + 8};
            rt[sr->nrt++] = sr->gil_iov;
        }
    }
    /* the first interpreter rarely changes: read it in the same call */
    sr->n = sr->nrt;
    if (u->interp_guess)
        sr->n += unwind_interp_iov(u, u->interp_guess, &sr->guessed, rt + sr->n);
    /* ... and so does the main thread: when sampling only it, its state and
     * stack are read in the same call too (checked below, used if it held) */
    sr->fused = !(flags & UNWIND_ALL_THREADS) && sr->n > sr->nrt && u->main_guess;
    if (sr->fused)
        sr->n += unwind_thread_prepare(u, u->main_guess, rt + sr->n, &sr->fused_read);
    /*
     * Sampling only the main thread, the runtime's list head and finalizing
     * flag are left out while the main interpreter's threads.main, read in
     * this same call, is set: CPython's main() sets it once the runtime is
     * initialised and clears it when the main module is done, before
     * Py_FinalizeEx() sets the finalizing flag (docs/unwinder.md, "The
     * runtime's fields"). The main interpreter is static, so the list head
     * is not needed to find it; sub-interpreters are not sampled.
     */
    sr->skip_runtime = sr->fused && u->main_running;
}

/*
 * Makes the read set up by unwind_runtime_prepare(), again without the
 * guesses when one of them could not be read, with the runtime's fields
 * when they were left out but threads.main says they are needed, and field
 * by field when the bytes between the fields cannot be read. Returns 0 or a
 * read error.
 */
static int unwind_runtime_read(struct unwinder *u, struct sample_read *sr)
{
    const struct py_layout *l = &u->l;
    struct memread_iov *rt = sr->iov;
    int err = sr->skip_runtime ? memread_readv(u->mr, rt + sr->nrt, sr->n - sr->nrt)
                               : memread_readv(u->mr, rt, sr->n);
    if (unwind_guess_may_be_why(err) && sr->n > sr->nrt) {
        /* the interpreter or main thread went away, or a guess read with the
         * main thread can no longer be read: none of them is kept */
        if (sr->fused)
            unwind_forget_guesses(u, u->main_guess);
        u->interp_guess = 0;
        u->main_guess = 0;
        sr->fused = false;
        sr->skip_runtime = false;
        sr->n = sr->nrt;
        err = memread_readv(u->mr, rt, sr->n);
    }
    if (!err && sr->skip_runtime) {
        struct interp_view g = sr->guessed;
        unwind_interp_done(u, &g);
        if (g.id != 0 || g.threads_main == 0) {
            /* main() is done (or this is no longer the main interpreter):
             * the runtime's fields are read, now and from now on */
            sr->skip_runtime = false;
            err = memread_readv(u->mr, rt, sr->nrt);
        }
    }
    if (err == -EFAULT && u->rt_span) {
        /* the bytes between the two fields cannot be read (an image that
         * holds only what older versions read): field by field from now on */
        u->rt_span = 0;
        rt[0] = (struct memread_iov){u->runtime_raddr + l->rt_interpreters_head, &sr->head, 8};
        rt[1] = (struct memread_iov){u->runtime_raddr + l->rt_finalizing, &sr->finalizing, 8};
        sr->nrt = sr->n = 2;
        if (sr->gil_iov.len)
            rt[sr->n++] = sr->gil_iov, sr->nrt++;
        err = memread_readv(u->mr, rt, sr->n);
    }
    return err;
}

/*
 * The runtime of a sample with @flags: its first read (@sr), then whether it
 * is initialised and not finalizing, and (<= 3.11) who holds its GIL.
 * Returns 0, or a negative errno with *@status saying why.
 */
static int unwind_sample_runtime(struct unwinder *u, unsigned flags, struct sample_read *sr,
                                 enum sample_status *status)
{
    const struct py_layout *l = &u->l;
    unwind_runtime_prepare(u, flags, sr);
    int err = unwind_runtime_read(u, sr);
    if (err) {
        u->main_running = false;
        *status = status_from_errno(err);
        return err;
    }
    if (sr->skip_runtime) {
        sr->head = u->interp_guess; /* the main interpreter, as checked above */
    } else {
        u->main_running = false; /* until the main interpreter is looked at below */
        if (u->rt_span) {
            sr->head = load_le64(u->runtime_buf + (l->rt_interpreters_head - u->rt_lo));
            sr->finalizing = load_le64(u->runtime_buf + (l->rt_finalizing - u->rt_lo));
        }
    }
    if (sr->head == 0) {
        *status = SAMPLE_NOT_INITIALIZED;
        return -EAGAIN;
    }
    if (sr->finalizing != 0) {
        *status = SAMPLE_FINALIZING;
        return -EAGAIN;
    }

    u->rt_gil_locked = 0;
    u->rt_gil_holder = 0;
    /* (read above with the runtime's fields, unless those were left out) */
    if (sr->gil_iov.len && (!sr->skip_runtime || memread_read(u->mr, sr->gil_iov.raddr, sr->gil,
                                                              sr->gil_iov.len) == 0)) {
        u->rt_gil_locked = (int32_t)load_le32(sr->gil + (l->rt_gil_locked - sr->gil_lo));
        u->rt_gil_holder = load_le64(sr->gil + (l->rt_gil_holder - sr->gil_lo));
    }
    return 0;
}

/* Where the TID is in struct pthread: <= 3.10 before any thread is sampled,
 * later versions when a thread's own TID is not the target's (the main
 * interpreter is the last in the list from @head, its main thread the tail) */
void unwind_learn_tid(struct unwinder *u, uint64_t head)
{
    uint64_t at = head;
    for (unsigned i = 0; at && i < UNWIND_MAX_INTERPRETERS; i++) {
        struct interp_view in;
        if (unwind_read_interp(u, at, &in) != 0)
            break;
        if (in.id == 0) {
            if (unwind_find_tail(u, &in) == 0 && in.threads_main)
                unwind_learn_tid_off(u, in.threads_main);
            break;
        }
        at = in.next;
    }
}

/*
 * Samples the interpreters from @sr->head: every thread of each with
 * UNWIND_ALL_THREADS, else the main interpreter's main thread (*@saw_main:
 * it had one), read already with the runtime when the guess held. Returns
 * 0, or a read error with *@status saying why.
 */
static int unwind_sample_interpreters(struct unwinder *u, unsigned flags, struct sample_read *sr,
                                      bool *saw_main, enum sample_status *status)
{
    const struct py_layout *l = &u->l;
    uint64_t raddr = sr->head;
    for (unsigned ninterp = 0; raddr && ninterp < UNWIND_MAX_INTERPRETERS; ninterp++) {
        struct interp_view in;
        if (ninterp == 0 && sr->n > sr->nrt && sr->head == u->interp_guess) {
            in = sr->guessed;
            unwind_interp_done(u, &in);
        } else {
            int err = unwind_read_interp(u, raddr, &in);
            if (err) {
                *status = status_from_errno(err);
                return err;
            }
        }
        if (ninterp == 0)
            u->interp_guess = raddr;
        if (l->has_code_generation)
            unwind_check_generation(u, &in);
        bool main_set = in.threads_main != 0;
        if (!in.threads_main && in.id == 0) {
            /* Only python's own main() records the main thread; an embedding
             * program never does. Threads are pushed at the head of the list,
             * so the first thread, the one that set Python up, is the tail.
             * Sub-interpreters have no main thread unless they say so. */
            int err = unwind_find_tail(u, &in);
            if (err) {
                *status = status_from_errno(err);
                return err;
            }
        }
        if (flags & UNWIND_ALL_THREADS) {
            uint64_t t = in.threads_head;
            /* bounded by threads seen, not kept: a mode may keep none of a
             * (corrupted, circular) list */
            for (unsigned seen = 0;
                 t && seen < UNWIND_MAX_THREADS && u->result.nthreads < UNWIND_MAX_THREADS;
                 seen++) {
                if (!unwind_sample_thread(u, t, &in, flags, false))
                    break; /* without its thread state there is no next pointer */
                t = load_le64(u->tstate + l->ts_next);
            }
        } else if (in.id == 0 && in.threads_main) {
            *saw_main = true;
            /* read already, with the runtime, if the guess held */
            bool pre = sr->fused && ninterp == 0 && in.threads_main == u->main_guess &&
                       unwind_thread_finish(u, &sr->fused_read) == 0;
            /* the main interpreter first in the list, main() running (its
             * own threads.main, not the tail found above): from now on the
             * runtime's fields can be left out (see unwind_runtime_prepare()) */
            if (ninterp == 0 && !sr->skip_runtime && !(flags & UNWIND_ALL_THREADS))
                u->main_running = main_set;
            (void)unwind_sample_thread(u, in.threads_main, &in, flags, pre);
            u->main_guess = in.threads_main;
        }
        raddr = in.next;
    }
    return 0;
}

int unwinder_sample(struct unwinder *u, unsigned flags, const struct unwind_result **out,
                    enum sample_status *status)
{
    u->result.nthreads = 0;
    u->nframes = 0;
    u->sample_serial++;
    *out = &u->result;

    struct sample_read sr;
    int err = unwind_sample_runtime(u, flags, &sr, status);
    if (err)
        return err;
    u->sample_head = sr.head;
    if (!u->l.has_native_thread_id && !u->tid_tried)
        unwind_learn_tid(u, sr.head);

    uint64_t overflows = codecache_overflows(u->codes);
    bool saw_main = false; /* the main interpreter had a main thread */
    err = unwind_sample_interpreters(u, flags, &sr, &saw_main, status);
    if (err)
        return err;
    if (!(flags & UNWIND_ALL_THREADS) && !saw_main) {
        /*
         * No main thread to sample: the interpreter is starting, or shutting
         * down and has already deleted it. Not a sample: say which, from a
         * fresh read of the flag, and read the runtime again next time.
         */
        uint64_t fin = 0;
        u->main_running = false;
        bool gone = memread_read(u->mr, u->runtime_raddr + u->l.rt_finalizing, &fin, 8) == 0 && fin;
        *status = gone ? SAMPLE_FINALIZING : SAMPLE_NOT_INITIALIZED;
        return -EAGAIN;
    }
    /* The cache was cleared while this sample resolved frames: names
     * resolved before that point into the reused arena. Resolve all of them
     * again (the raw frames are still there), once. */
    if (codecache_overflows(u->codes) != overflows) {
        bool fits = unwinder_resolve_again(u);
        /* NEEDSWORK: when not, the sample's code objects do not fit the
         * cache together and names resolved before the second clear are
         * stale; unwind/asyncio.c drops such a sample (SAMPLE_NO_MEMORY) */
        (void)fits;
    }
    *status = SAMPLE_OK;
    return 0;
}
