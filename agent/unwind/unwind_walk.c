/* SPDX-License-Identifier: MIT */
/*
 * unwind_walk.c: the frame walk (see unwind_internal.h, docs/unwinder.md).
 *
 * A thread state is read in one system call together with what its last
 * walk used: the newest part of its data-stack chunks, the frames it had to
 * read on their own, 3.11/3.12's cframe word, <= 3.10's TID word, 3.13's
 * code objects. The walk then follows the frame chain through those local
 * copies and records raw frames (code object address, instruction pointer,
 * marker kind); frames outside the copies are read one by one. The chain is
 * checked for tearing as it is walked and, unless it is the thread's last
 * verified one, read again afterwards (unwind_verify()).
 *
 * Everything here runs once per thread or once per frame of a sample: it
 * does not allocate (the chain grows through unwind.c) and does not log.
 */
#include "base/compat.h"

#include "base/bytes.h"
#include "base/hash.h"
#include "unwind/unwind_internal.h"

#define UNWIND_CHUNK_DEFAULT (16u * 1024u) /* CPython's _PY_DATA_STACK_CHUNK_SIZE */
#define UNWIND_CHUNK_MAX     (16u << 20)   /* larger "chunks" are garbage */
#define UNWIND_CHUNK_SLACK   2048u         /* copied beyond the last walk's deepest frame */

/* Remembers @addr for this walk; false if it was seen already (a loop). */
static bool unwind_visit(struct unwinder *u, uint64_t addr)
{
    size_t i = (size_t)((addr >> 3) * HASH_GOLDEN) & (UNWIND_VISITED_SLOTS - 1);
    for (;; i = (i + 1) & (UNWIND_VISITED_SLOTS - 1)) {
        if (u->sc->visited_stamp[i] != u->sc->stamp) {
            u->sc->visited_stamp[i] = u->sc->stamp;
            u->sc->visited[i] = addr;
            return true;
        }
        if (u->sc->visited[i] == addr)
            return false;
    }
}

/*
 * Registers the chunk whose first @copied bytes were copied to @dst: a
 * guess's partial copy (@guessed), or the first UNWIND_CHUNK_DEFAULT bytes.
 * Returns 0, 1 when it is not a chunk, or a read error.
 */
static int unwind_add_chunk(struct unwinder *u, uint64_t raddr, uint8_t *dst, size_t copied,
                            bool guessed)
{
    uint64_t size = load_le64(dst + 8);
    if (size <= PYABI_CHUNK_HEADER || size > UNWIND_CHUNK_MAX) {
        u->next_chunk = 0;
        return 1; /* not a chunk: stop copying, frames are read directly */
    }
    size_t have = copied;
    if (guessed) {
        have = (size_t)size < copied ? (size_t)size : copied; /* frames beyond: read directly */
    } else if (size > have) {
        /* a big chunk: copy what fits, read frames beyond it directly */
        have = (size_t)size <= UNWIND_CHUNK_BUF - u->chunk_used ? (size_t)size
                                                                : UNWIND_CHUNK_BUF - u->chunk_used;
        int err = memread_read(u->mr, raddr, dst, have);
        if (err)
            return err;
    } else {
        have = (size_t)size;
    }
    u->chunk_low[u->nchunks] = UINT64_MAX;
    u->chunks[u->nchunks++] = (struct chunk_copy){raddr, have, dst, size};
    u->chunk_used += have;
    u->next_chunk = load_le64(dst); /* previous (older) chunk */
    return 0;
}

/* Copies the next older data-stack chunk. Returns 0, 1 when there is none, or an error. */
static int unwind_load_chunk(struct unwinder *u)
{
    if (u->next_chunk == 0 || u->nchunks == UNWIND_MAX_CHUNKS ||
        UNWIND_CHUNK_BUF - u->chunk_used < UNWIND_CHUNK_DEFAULT)
        return 1;
    uint64_t raddr = u->next_chunk;
    uint8_t *dst = u->sc->chunk_buf + u->chunk_used;
    int err = memread_read(u->mr, raddr, dst, UNWIND_CHUNK_DEFAULT);
    return err ? err : unwind_add_chunk(u, raddr, dst, UNWIND_CHUNK_DEFAULT, false);
}

/* Sets up the ranges of a thread read into @iov (at most UNWIND_THREAD_IOV). */
size_t unwind_thread_prepare(struct unwinder *u, uint64_t tstate_raddr, struct memread_iov *iov,
                             struct thread_read *tr)
{
    const struct py_layout *l = &u->l;
    size_t slot = unwind_slot(tstate_raddr);
    bool known = u->guess_tstate[slot] == tstate_raddr;
    *tr = (struct thread_read){.slot = slot};
    u->nchunks = 0;
    u->chunk_used = 0;
    u->nextra = 0;
    u->nseen_extra = 0;
    u->tstate_raddr = tstate_raddr;
    u->tstate_len = u->ts_read_len;

    size_t n = 0;
    iov[n++] = (struct memread_iov){tstate_raddr, u->tstate, u->tstate_len};
    u->cframe_guessed = 0;
    u->pthread_guessed = 0;
    if (known && u->tid_off && u->guess_pthread[slot]) {
        u->pthread_guessed = u->guess_pthread[slot];
        iov[n++] = (struct memread_iov){u->pthread_guessed + u->tid_off, &u->tid_word, 4};
    }
    if (known && l->has_cframe && u->guess_cframe[slot]) {
        u->cframe_guessed = u->guess_cframe[slot];
        iov[n++] =
            (struct memread_iov){u->cframe_guessed + l->cf_current_frame, &u->cframe_word, 8};
    }
    /* Only the part of each chunk the last walk used is copied: most stacks
     * use a few KiB of the 16, copied to the end of a page, the newest with
     * slack for a deeper call; unless the thread's last two walks found the
     * same chain: a steady stack (a sleeping or waiting target) costs only
     * the bytes it uses. Frames beyond are read
     * directly, and the next sample copies more. */
    size_t off = 0;
    for (size_t i = 0; known && i < UNWIND_GUESS_CHUNKS; i++) {
        const struct chunk_guess *g = &u->guess_chunks[slot][i];
        if (!g->raddr)
            break;
        size_t len = UNWIND_CHUNK_DEFAULT;
        if (g->used) {
            len = g->steady ? g->used
                            : ((size_t)g->used + (i == 0 ? UNWIND_CHUNK_SLACK : 0) + 4095) &
                                  ~(size_t)4095;
            if (len > g->real_size)
                len = (size_t)g->real_size;
        }
        if (len > UNWIND_CHUNK_BUF - off)
            break;
        tr->guess[i] = g->raddr;
        tr->off[i] = off;
        tr->len[i] = len;
        tr->nguess++;
        iov[n++] = (struct memread_iov){g->raddr, u->sc->chunk_buf + off, len};
        off += len;
    }
    /* (ascending: frames that lie close together share a range) */
    const uint64_t *gf = UNWIND_GF(u, slot);
    size_t span_used = 0;
    for (size_t i = 0; known && i < u->guess_max && gf[i];) {
        size_t j = i + 1;
        uint64_t end = gf[i] + l->fr_size;
        while (u->span_buf && j < u->guess_max && gf[j] &&
               gf[j] + l->fr_size - gf[i] <= UNWIND_FRAMEOBJ_SPAN &&
               span_used + (gf[j] + l->fr_size - gf[i]) <= UNWIND_SPAN_BUF) {
            end = gf[j] + l->fr_size;
            j++;
        }
        uint8_t *dst;
        if (j - i > 1) {
            dst = u->span_buf + span_used;
            span_used += (size_t)(end - gf[i]);
        } else {
            dst = u->extra + u->nextra * l->fr_size;
        }
        iov[n++] = (struct memread_iov){gf[i], dst, (size_t)(end - gf[i])};
        for (; i < j; i++) {
            u->extra_raddr[u->nextra] = gf[i];
            u->extra_at[u->nextra++] = dst + (gf[i] - iov[n - 1].raddr);
        }
    }
    /* 3.13: the code objects of the last sample, for unwind_recheck_codes() */
    u->npre = 0;
    const uint64_t *codes = u->guess_codes ? u->guess_codes + slot * UNWIND_GUESS_CODES : NULL;
    for (size_t i = 0; known && codes && i < UNWIND_GUESS_CODES && codes[i]; i++) {
        u->pre_addr[u->npre] = codes[i];
        iov[n++] =
            (struct memread_iov){codes[i], u->pre_buf + u->npre * l->co_read_len, l->co_read_len};
        u->npre++;
    }
    return n;
}

/* Completes a thread read whose ranges were all read. Returns 0 or a read error. */
int unwind_thread_finish(struct unwinder *u, const struct thread_read *tr)
{
    const struct py_layout *l = &u->l;
    u->next_chunk = l->has_datastack ? load_le64(u->tstate + l->ts_datastack_chunk) : 0;
    if (u->guess_tstate[tr->slot] != u->tstate_raddr) {
        u->guess_tstate[tr->slot] = u->tstate_raddr;
        memset(u->guess_chunks[tr->slot], 0, sizeof(u->guess_chunks[tr->slot]));
        memset(UNWIND_GF(u, tr->slot), 0, u->guess_max * sizeof(uint64_t));
        u->guess_cframe[tr->slot] = 0;
        u->guess_pthread[tr->slot] = 0;
        if (u->guess_codes)
            u->guess_codes[tr->slot * UNWIND_GUESS_CODES] = 0;
    }
    memset(u->used_extent, 0, sizeof(u->used_extent));
    /* each guess holds while the chain of chunks is the same */
    for (size_t i = 0; i < tr->nguess && tr->guess[i] == u->next_chunk; i++) {
        int err =
            unwind_add_chunk(u, tr->guess[i], u->sc->chunk_buf + tr->off[i], tr->len[i], true);
        if (err < 0)
            return err;
        if (err > 0)
            break;
        u->chunk_used = tr->off[i] + tr->len[i];
    }
    return 0;
}

/*
 * Forgets what the last walk of the thread at @tstate_raddr taught: the
 * chunks and outside frames read with its state. A read that carried them
 * failed, and a guess that can never be read (a wild address from a torn
 * walk) must not fail every later sample of the thread.
 */
void unwind_forget_guesses(struct unwinder *u, uint64_t tstate_raddr)
{
    size_t slot = unwind_slot(tstate_raddr);
    if (u->guess_tstate[slot] != tstate_raddr)
        return;
    memset(u->guess_chunks[slot], 0, sizeof(u->guess_chunks[slot]));
    memset(UNWIND_GF(u, slot), 0, u->guess_max * sizeof(uint64_t));
    u->guess_cframe[slot] = 0;
    u->guess_pthread[slot] = 0;
    if (u->guess_codes)
        u->guess_codes[slot * UNWIND_GUESS_CODES] = 0;
}

int unwind_read_thread(struct unwinder *u, uint64_t tstate_raddr)
{
    struct memread_iov iov[UNWIND_THREAD_IOV];
    struct thread_read tr;
    size_t n = unwind_thread_prepare(u, tstate_raddr, iov, &tr);
    int err = memread_readv(u->mr, iov, n);
    if (unwind_guess_may_be_why(err)) {
        /* a guess went stale (a chunk freed, a wild frame address), or the
         * struct ends early: plainly, and learn the guesses again */
        unwind_forget_guesses(u, tstate_raddr);
        tr.nguess = 0;
        u->nextra = 0;
        u->npre = 0;
        u->cframe_guessed = 0;
        u->pthread_guessed = 0;
        err = memread_read(u->mr, tstate_raddr, u->tstate, u->tstate_len);
    }
    return err ? err : unwind_thread_finish(u, &tr);
}

/* Remembers the chunks this walk went through and the frames it had to read
 * on their own, for the next sample; @steady: the chain is the thread's
 * last verified one. */
void unwind_remember_extra(struct unwinder *u, bool steady)
{
    size_t slot = unwind_slot(u->tstate_raddr);
    size_t keep = 1; /* the newest chunk always (the stack may grow back into it) */
    for (size_t i = 1; i < u->nchunks && i < UNWIND_GUESS_CHUNKS; i++) {
        if (u->used_extent[i])
            keep = i + 1;
    }
    for (size_t i = 0; i < UNWIND_GUESS_CHUNKS; i++) {
        struct chunk_guess *g = &u->guess_chunks[slot][i];
        if (i < keep && i < u->nchunks)
            *g = (struct chunk_guess){u->chunks[i].raddr, u->chunks[i].real_size,
                                      (uint32_t)u->used_extent[i], steady};
        else
            *g = (struct chunk_guess){0}; /* (a walk that used no chunk: none) */
    }
    /* ascending, for the read that fetches them and the search that finds them */
    uint64_t *gf = UNWIND_GF(u, slot);
    for (size_t i = 0; i < u->guess_max; i++) {
        uint64_t a = i < u->nseen_extra ? u->seen_extra[i] : 0;
        size_t k = i;
        for (; a && k > 0 && gf[k - 1] > a; k--)
            gf[k] = gf[k - 1];
        gf[k] = a;
    }
}

/*
 * The frame at @addr: from a chunk copy (*@chunk = its index), else read
 * directly (*@chunk = -1). NULL + *err on failure.
 */
static const uint8_t *unwind_frame_at(struct unwinder *u, uint64_t addr, int32_t *chunk, int *err)
{
    size_t fr = u->l.fr_size;
    *chunk = -1;
    bool beyond = false; /* in a chunk, past the part copied: no other chunk holds it */
    while (!beyond) {
        for (size_t i = 0; i < u->nchunks; i++) {
            const struct chunk_copy *c = &u->chunks[i];
            if (addr >= c->raddr + PYABI_CHUNK_HEADER && addr - c->raddr <= c->size &&
                c->size - (addr - c->raddr) >= fr) {
                if (i < UNWIND_GUESS_CHUNKS && addr - c->raddr + fr > u->used_extent[i])
                    u->used_extent[i] = (size_t)(addr - c->raddr) + fr;
                *chunk = (int32_t)i;
                return c->data + (addr - c->raddr);
            }
            if (addr >= c->raddr + PYABI_CHUNK_HEADER && addr - c->raddr < c->real_size) {
                beyond = true;
                if (i < UNWIND_GUESS_CHUNKS && addr - c->raddr + fr > u->used_extent[i])
                    u->used_extent[i] = (size_t)(addr - c->raddr) + fr; /* copy more next time */
            }
        }
        if (beyond)
            break;
        /* inside what was read with the thread state? */
        if (addr >= u->tstate_raddr && addr - u->tstate_raddr <= u->tstate_len &&
            u->tstate_len - (addr - u->tstate_raddr) >= fr)
            return u->tstate + (addr - u->tstate_raddr);
        /* frames read with the thread state (ascending: a binary search) */
        size_t lo = 0, hi = u->nextra;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (u->extra_raddr[mid] < addr)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < u->nextra && u->extra_raddr[lo] == addr) {
            if (u->nseen_extra < u->guess_max)
                u->seen_extra[u->nseen_extra++] = addr;
            return u->extra_at[lo];
        }
        int rc = unwind_load_chunk(u);
        if (rc < 0) {
            *err = rc;
            return NULL;
        }
        if (rc > 0)
            break;
    }
    if (!beyond && u->nseen_extra < u->guess_max)
        u->seen_extra[u->nseen_extra++] = addr; /* (beyond: a larger copy next time) */
    *err = memread_read(u->mr, addr, u->frame_buf, fr);
    return *err ? NULL : u->frame_buf;
}

/* A frame's bytecode copy (free-threaded 3.14+); 0 is the code's own, and
 * so is anything out of range (the position is then looked up in vain). */
static uint32_t unwind_frame_tlbc(const struct py_layout *l, const uint8_t *fr)
{
    if (!l->has_tlbc)
        return 0;
    int32_t i = (int32_t)load_le32(fr + l->fr_tlbc_index);
    return i > 0 && i < PYABI_MAX_TLBC ? (uint32_t)i : 0;
}

/* A frame's instruction: instr_ptr, or (<= 3.10) f_lasti sign-extended. */
static uint64_t unwind_frame_ip(const struct py_layout *l, const uint8_t *fr)
{
    if (l->frame_objects)
        return (uint64_t)(int64_t)(int32_t)load_le32(fr + l->fr_instr_ptr);
    return load_le64(fr + l->fr_instr_ptr);
}

/*
 * The frame the thread runs (u->top_frame), from its thread state; on 3.11
 * and 3.12 through the _PyCFrame the state points at, whose word was read
 * with the state when the thread's last cframe was guessed right, else here.
 */
enum sample_status unwind_top_frame(struct unwinder *u)
{
    const struct py_layout *l = &u->l;
    if (!l->has_cframe) {
        u->top_frame = load_le64(u->tstate + l->ts_current_frame);
        return SAMPLE_OK;
    }
    uint64_t cf = load_le64(u->tstate + l->ts_cframe);
    u->cframe_raddr = cf;
    u->top_frame = 0;
    if (!cf)
        return SAMPLE_OK; /* (a thread state being set up) */
    size_t slot = unwind_slot(u->tstate_raddr);
    if (cf == u->cframe_guessed) {
        u->top_frame = load_le64((const uint8_t *)&u->cframe_word);
        return SAMPLE_OK;
    }
    uint64_t word = 0;
    int err = memread_read(u->mr, cf + l->cf_current_frame, &word, sizeof(word));
    if (err)
        return err == -ESRCH || err == -EPERM ? status_from_errno(err) : SAMPLE_INCOMPLETE;
    u->top_frame = load_le64((const uint8_t *)&word);
    if (u->guess_tstate[slot] == u->tstate_raddr)
        u->guess_cframe[slot] = cf;
    return SAMPLE_OK;
}

/* Walks one thread's chain into raw frames. Returns its status. */
enum sample_status unwind_walk(struct unwinder *u, const struct interp_view *in, unsigned flags,
                               size_t first)
{
    const struct py_layout *l = &u->l;
    u->sc->stamp++;
    u->nchain = 0;
    uint64_t addr = u->top_frame;
    uint64_t base = l->has_base_frame ? load_le64(u->tstate + l->ts_base_frame) : 0;
    uint64_t gc_frame = (flags & UNWIND_NO_GC) ? 0 : in->gc_frame;
    uint64_t last = 0;
    bool last_entry = true; /* the last frame walked starts a run of Python (an entry) */
    size_t emitted = 0;

    /* Loops: inside one data-stack chunk a caller always lies below its
     * callee (the stack grows up), so while every chunk's frames come in
     * falling addresses none can repeat, and only the frames outside chunks
     * need the visited set. The first frame that breaks the order puts every
     * frame into the set. */
    bool ordered = true;
    while (addr) {
        if (addr == base) {
            /* 3.15's base frame: the bottom of every complete chain, with no
             * previous frame and nothing to show (CPython sets it up so once
             * per thread). Not read. */
            last = addr;
            last_entry = true;
            break;
        }
        int err = 0;
        int32_t chunk;
        const uint8_t *fr = unwind_frame_at(u, addr, &chunk, &err);
        if (!fr)
            return err == -ESRCH || err == -EPERM ? status_from_errno(err) : SAMPLE_INCOMPLETE;
        if (ordered && chunk >= 0 && addr < u->chunk_low[chunk]) {
            u->chunk_low[chunk] = addr;
        } else {
            if (ordered && chunk >= 0) {
                ordered = false;
                for (size_t i = 0; i < u->nchain; i++) {
                    if (u->chain[i].chunk >= 0)
                        (void)unwind_visit(u, u->chain[i].raddr);
                }
            }
            if (!unwind_visit(u, addr))
                return SAMPLE_CYCLE;
        }
        /* <= 3.10: frame objects are all Python frames, with no owner; a
         * caller's frame (below the top) is running its loop, or the chain
         * was followed into a frame freed or reused meanwhile: torn (a NULL
         * f_back read there would otherwise end it early as if complete) */
        if (l->has_fr_state && u->nchain > 0 && (int8_t)fr[l->fr_state] != l->fr_state_live)
            return SAMPLE_INCOMPLETE;
        unsigned owner = l->frame_objects ? PYABI_OWNER_THREAD : fr[l->fr_owner];
        uint64_t exe = load_le64(fr + l->fr_executable) & ~l->tag_mask;
        uint64_t prev = load_le64(fr + l->fr_previous);
        if (u->nchain == UNWIND_MAX_DEPTH)
            return SAMPLE_TOO_DEEP;
        /* a deeper stack than any before: the chain doubles (rare) */
        if (u->nchain == u->chain_cap && !unwind_grow_chain(u))
            return SAMPLE_TOO_DEEP;
        /* field by field: a compound literal would clear the 512-byte
         * re-read buffer of every link on every sample */
        struct chain_link *link = &u->chain[u->nchain++];
        link->raddr = addr;
        link->previous = prev;
        link->executable = load_le64(fr + l->fr_executable);
        link->instr_ptr = unwind_frame_ip(l, fr);
        link->leaf = emitted == 0;
        link->chunk = chunk;
        link->buf_off = chunk >= 0 ? (size_t)(fr - u->sc->chunk_buf) : 0;
        if (owner == PYABI_OWNER_INTERPRETER) {
            /* C called back into Python here. Not at the root: on 3.15 the
             * outermost entry frame links to the base frame, on 3.13/3.14 to nothing. */
            if (flags & UNWIND_ENTRIES) {
                /* (3.15's base frame is the thread state's, not a loop's) */
                if (addr != base && !unwind_push(u, first, 0, 0, UNWIND_FRAME_NATIVE, addr))
                    return SAMPLE_TOO_DEEP;
            } else if ((flags & UNWIND_NATIVE) && prev && prev != base && emitted &&
                       prev != gc_frame) {
                if (!unwind_push(u, first, 0, 0, UNWIND_FRAME_NATIVE, 0))
                    return SAMPLE_TOO_DEEP;
            }
        } else if (owner == PYABI_OWNER_THREAD || owner == PYABI_OWNER_GENERATOR) {
            if (exe) { /* a null executable: the frame is being cleared */
                if (gc_frame && addr == gc_frame &&
                    !unwind_push(u, first, 0, 0, UNWIND_FRAME_GC, 0))
                    return SAMPLE_TOO_DEEP;
                if (!unwind_push(u, first, exe, unwind_frame_ip(l, fr), UNWIND_FRAME_PYTHON, addr))
                    return SAMPLE_TOO_DEEP;
                u->raw[u->nframes - 1].tlbc = unwind_frame_tlbc(l, fr);
                emitted++;
            }
            /* 3.11: no shim frames; the first frame an eval loop ran says
             * so, and C called it (below it, its caller's C code) */
            if (l->has_is_entry && fr[l->fr_is_entry] &&
                ((flags & UNWIND_ENTRIES) || ((flags & UNWIND_NATIVE) && prev && emitted)) &&
                !unwind_push(u, first, 0, 0, UNWIND_FRAME_NATIVE, 0))
                return SAMPLE_TOO_DEEP;
        } else {
            return SAMPLE_BAD_FRAME;
        }
        last = addr;
        /* (<= 3.10: a chain of frame objects ends where f_back is NULL) */
        last_entry = l->frame_objects  ? true
                     : l->has_is_entry ? owner != PYABI_OWNER_INTERPRETER && fr[l->fr_is_entry]
                                       : owner == PYABI_OWNER_INTERPRETER;
        addr = prev;
    }
    /* Torn-read detection: a complete chain ends at the base frame (3.15) or
     * at an entry frame (3.11 to 3.14). An empty chain (no Python running)
     * is fine. */
    if (last != 0 && (l->has_base_frame ? last != base : !last_entry))
        return SAMPLE_INCOMPLETE;
    return SAMPLE_OK;
}

/*
 * Whether the chain walked is still the thread's live stack, given its
 * current frame @top_now read after the chain was re-read: the same top, or
 * a deeper one in the same data-stack chunk (the thread has called further:
 * every frame below is live, the chain's among them). A shallower top means
 * the chain's upper frames were popped, and may be stale memory that reads
 * the same twice.
 */
static bool unwind_top_holds(const struct unwinder *u, uint64_t top_now)
{
    const struct chain_link *top = &u->chain[0];
    if (top_now == top->raddr)
        return true;
    if (top->chunk < 0 || top_now < top->raddr)
        return false;
    const struct chunk_copy *c = &u->chunks[top->chunk];
    return top_now < c->raddr + c->real_size;
}

/*
 * The copy of a running thread's stack is not atomic: frames may be popped
 * and reused while it is taken, and a chain can then mix two moments. So the
 * frames the walk went through are read again, in one batched read, and must
 * still link the same way and run the same code; a caller's instruction
 * pointer must not have moved (a caller waits on its call). Only the leaf's
 * instruction may change: it was running. (Checking only that the current
 * frame stayed put while the chunk was copied misses mixed chains on 3.13,
 * and drops more samples.)
 *
 * Frames that match are not enough on their own: a popped frame's memory
 * keeps its last contents, so a stack that shrank between the copy and this
 * read can leave a stale frame (an earlier call's leaf, say, in the middle
 * of the chain) that reads the same both times. So the thread's current
 * frame is read last, after the frames, and must show the chain still live
 * (unwind_top_holds()). A churning recursion on 3.13 showed such a chain,
 * a leaf function seven frames down, about once in 10^4 samples before this
 * check; with it, 0.3-0.4% more of an ordinary program's samples are
 * counted as torn (test_unwind_live).
 */
enum sample_status unwind_verify(struct unwinder *u)
{
    const struct py_layout *l = &u->l;
    size_t len = l->fr_instr_ptr + 8;
    if (l->fr_previous + 8 > len)
        len = l->fr_previous + 8;
    if (l->fr_executable + 8 > len)
        len = l->fr_executable + 8;
    if (u->nchain == 0)
        return SAMPLE_OK;

    /* One range per chunk, spanning the chain's frames in it (the kernel's
     * cost is per range), plus one per frame read on its own. */
    struct memread_iov iov[MEMREAD_MAX_IOV];
    size_t n = 0;
    size_t lo[UNWIND_MAX_CHUNKS], hi[UNWIND_MAX_CHUNKS];
    for (size_t c = 0; c < u->nchunks; c++) {
        lo[c] = SIZE_MAX;
        hi[c] = 0;
    }
    for (size_t i = 0; i < u->nchain; i++) {
        const struct chain_link *k = &u->chain[i];
        if (k->chunk >= 0) {
            size_t c = (size_t)k->chunk;
            lo[c] = k->buf_off < lo[c] ? k->buf_off : lo[c];
            hi[c] = k->buf_off + len > hi[c] ? k->buf_off + len : hi[c];
        }
    }
    for (size_t c = 0; c < u->nchunks; c++) {
        if (lo[c] == SIZE_MAX)
            continue;
        size_t data_off = (size_t)(u->chunks[c].data - u->sc->chunk_buf);
        iov[n++] = (struct memread_iov){u->chunks[c].raddr + (lo[c] - data_off),
                                        u->sc->verify_buf + lo[c], hi[c] - lo[c]};
    }
    for (size_t i = 0; i < u->nchain; i++) {
        struct chain_link *k = &u->chain[i];
        if (k->chunk >= 0)
            continue;
        if (n == MEMREAD_MAX_IOV) {
            int err = memread_readv(u->mr, iov, n);
            if (err)
                return err == -ESRCH || err == -EPERM ? status_from_errno(err) : SAMPLE_INCOMPLETE;
            n = 0;
        }
        iov[n++] = (struct memread_iov){k->raddr, k->now, len};
    }
    /* last, the thread's current frame: read after every frame above, it
     * must still be the chain's top */
    if (n == MEMREAD_MAX_IOV) {
        int err = memread_readv(u->mr, iov, n);
        if (err)
            return err == -ESRCH || err == -EPERM ? status_from_errno(err) : SAMPLE_INCOMPLETE;
        n = 0;
    }
    uint64_t top_now = 0, cframe_now = 0;
    if (l->has_cframe) { /* 3.11/3.12: the cframe, and its current frame, in that order */
        if (n + 2 > MEMREAD_MAX_IOV) {
            int err = memread_readv(u->mr, iov, n);
            if (err)
                return err == -ESRCH || err == -EPERM ? status_from_errno(err) : SAMPLE_INCOMPLETE;
            n = 0;
        }
        iov[n++] = (struct memread_iov){u->cframe_raddr + l->cf_current_frame, &top_now, 8};
        iov[n++] = (struct memread_iov){u->tstate_raddr + l->ts_cframe, &cframe_now, 8};
    } else {
        iov[n++] = (struct memread_iov){u->tstate_raddr + l->ts_current_frame, &top_now, 8};
    }
    int err = memread_readv(u->mr, iov, n);
    if (err)
        return err == -ESRCH || err == -EPERM ? status_from_errno(err) : SAMPLE_INCOMPLETE;
    if (!unwind_top_holds(u, load_le64((const uint8_t *)&top_now)) ||
        (l->has_cframe && load_le64((const uint8_t *)&cframe_now) != u->cframe_raddr))
        return SAMPLE_INCOMPLETE;

    for (size_t i = 0; i < u->nchain; i++) {
        const struct chain_link *k = &u->chain[i];
        const uint8_t *now = k->chunk >= 0 ? u->sc->verify_buf + k->buf_off : k->now;
        if (load_le64(now + l->fr_previous) != k->previous ||
            load_le64(now + l->fr_executable) != k->executable ||
            (!k->leaf && unwind_frame_ip(l, now) != k->instr_ptr))
            return SAMPLE_INCOMPLETE;
    }
    return SAMPLE_OK;
}

/*
 * Identity of the walked chain: what verification compares, leaf ip
 * excluded. A sum of independently mixed links, so the links' mixing
 * overlaps in the CPU instead of forming one long chain of multiplications;
 * each link's position is part of its term.
 */
uint64_t unwind_chain_hash(const struct unwinder *u)
{
    uint64_t h = HASH_GOLDEN * (u->nchain + 1);
    for (size_t i = 0; i < u->nchain; i++) {
        const struct chain_link *k = &u->chain[i];
        uint64_t a = hash_fmix64(k->raddr * HASH_GOLDEN + k->previous + i);
        uint64_t b = k->executable * 0xd6e8feb86659fd93ull ^ (k->leaf ? 0 : k->instr_ptr);
        h += hash_fmix64(a ^ b);
    }
    h = hash_fmix64(h);
    return h ? h : 1; /* 0 means "none verified" */
}
