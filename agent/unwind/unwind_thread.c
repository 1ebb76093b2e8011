/* SPDX-License-Identifier: MIT */
/*
 * unwind_thread.c: one thread's sample (see unwind_internal.h,
 * docs/unwinder.md). From the thread state read (unwind_walk.c): its ids,
 * its flags (GIL, exception, GC) and the mode's test, before any frame is
 * read; then its walk, its verification unless the chain is the one it
 * verified last, and the resolve of its frames (unwind_code.c), kept as they
 * were when nothing moved.
 *
 * <= 3.10 threads have no native TID field: it is read from glibc's struct
 * pthread, at an offset learnt once from the main thread.
 *
 * A TID is then checked against the target's threads (unwinder_set_tasks()):
 * a process forked without CPython's after-fork hook keeps its parent's in
 * every thread state, and the one it names is resolved where that can be
 * done soundly (unwind_thread_tid(), docs/unwinder.md §6).
 */
#include "base/compat.h"

#include "base/bytes.h"
#include "unwind/unwind_internal.h"

#define UNWIND_PTHREAD_SCAN  2048u /* bytes of struct pthread searched for the TID */
#define UNWIND_GLIBC_TID_OFF 720u  /* struct pthread's tid in x86-64 glibc 2.26+ */
#define UNWIND_TID_SCAN_MIN  300   /* smallest PID searched for in struct pthread */
/* x86-64 glibc's struct pthread starts with its tcbhead_t, whose tcb (at 0)
 * and self (at 16) both point at the struct itself */
#define UNWIND_GLIBC_SELF 16u

/* Whether the struct pthread copy @buf (at least UNWIND_GLIBC_SELF + 8
 * bytes) read from @pthread is laid out as x86-64 glibc's. */
static bool unwind_glibc_pthread(const uint8_t *buf, uint64_t pthread)
{
    return load_le64(buf) == pthread && load_le64(buf + UNWIND_GLIBC_SELF) == pthread;
}

static void unwind_thread_flags(struct unwinder *u, struct unwind_thread *t,
                                const struct interp_view *in)
{
    const struct py_layout *l = &u->l;
    const uint8_t *ts = u->tstate;
    if (t->tstate_raddr == in->threads_main)
        t->flags |= UNWIND_THREAD_MAIN;
    bool holds;
    switch (l->holds_gil_kind) {
    case PYABI_GIL_INT:
        holds = load_le32(ts + l->ts_holds_gil) != 0;
        break;
    case PYABI_GIL_INTERP_HOLDER:
        holds = in->gil_locked && in->gil_holder == t->tstate_raddr;
        break;
    case PYABI_GIL_RUNTIME_HOLDER:
        holds = u->rt_gil_locked && u->rt_gil_holder == t->tstate_raddr;
        break;
    default:
        holds = (load_le32(ts + l->ts_status) & l->holds_gil_mask) != 0;
        break;
    }
    if (holds)
        t->flags |= UNWIND_THREAD_HOLDS_GIL;
    else if (l->has_gil_requested && load_le32(ts + l->ts_gil_requested) != 0)
        t->flags |= UNWIND_THREAD_GIL_REQUESTED;
    if (in->gc_collecting)
        t->flags |= UNWIND_THREAD_IN_GC;

    uint64_t handled = load_le64(ts + l->ts_exc_value);
    bool exc =
        load_le64(ts + l->ts_current_exception) != 0 || (handled != 0 && handled != u->none_object);
    uint64_t exc_info = load_le64(ts + l->ts_exc_info);
    if (!exc && exc_info && exc_info != t->tstate_raddr + l->ts_exc_state) {
        /* handling an exception inside a generator: its own stack item */
        uint64_t value = 0;
        if (memread_read(u->mr, exc_info + l->ei_exc_value, &value, sizeof(value)) == 0)
            exc = value != 0 && value != u->none_object;
    }
    if (exc)
        t->flags |= UNWIND_THREAD_HAS_EXCEPTION;
}

/*
 * <= 3.10: the TID of the thread whose pthread_t is @pthread (0 when not
 * known): read with the thread state when the slot's last sample saw the
 * same pthread_t, else here (a thread's first sample).
 */
static uint64_t unwind_pthread_tid(struct unwinder *u, uint64_t pthread)
{
    size_t slot = unwind_slot(u->tstate_raddr);
    if (!u->tid_off || !pthread)
        return 0;
    int32_t tid = 0;
    if (pthread == u->pthread_guessed) {
        tid = (int32_t)load_le32((const uint8_t *)&u->tid_word);
    } else if (memread_read(u->mr, pthread + u->tid_off, &tid, sizeof(tid)) != 0) {
        return 0;
    }
    if (u->guess_tstate[slot] == u->tstate_raddr)
        u->guess_pthread[slot] = pthread;
    return tid > 0 ? (uint64_t)tid : 0;
}

/*
 * Learns where glibc keeps the TID in its struct pthread (<= 3.10: every
 * thread's TID; later versions: for a thread whose own TID is not the
 * target's), from the main thread (state @main), whose TID is the process
 * ID (in the process's own PID namespace): glibc's own offset when it holds
 * it there or the struct is glibc's, else the first int in the struct's
 * first UNWIND_PTHREAD_SCAN bytes that holds the PID (another C library; not
 * for PIDs under UNWIND_TID_SCAN_MIN, which other fields may hold by
 * chance). Tried once; <= 3.10's threads then have no TID (0).
 */
void unwind_learn_tid_off(struct unwinder *u, uint64_t main)
{
    u->tid_tried = true;
    uint64_t pthread = 0;
    uint8_t buf[UNWIND_PTHREAD_SCAN];
    /* in a container the struct holds the TID in the process's own namespace */
    pid_t pid = u->ns_pid > 0 ? u->ns_pid : memread_pid(u->mr);
    if (memread_read(u->mr, main + u->l.ts_thread_id, &pthread, 8) != 0 || pthread == 0 ||
        memread_read(u->mr, pthread, buf, sizeof(buf)) != 0)
        return;
    /* glibc's offset when the main thread's struct holds the PID there, or
     * when the struct is glibc's (its tcb and self words point at it): the
     * main thread state's thread need not be the process's own, as in a
     * child forked by another of its parent's threads */
    if ((pid > 0 && (pid_t)load_le32(buf + UNWIND_GLIBC_TID_OFF) == pid) ||
        unwind_glibc_pthread(buf, pthread)) {
        u->tid_off = UNWIND_GLIBC_TID_OFF;
        return;
    }
    /* another C library: search, unless the PID is so small that another
     * field could hold it by chance */
    for (uint32_t off = 8; pid >= UNWIND_TID_SCAN_MIN && off + 4 <= sizeof(buf); off += 4) {
        if ((pid_t)load_le32(buf + off) == pid) {
            u->tid_off = off;
            return;
        }
    }
}

/* ---- thread ids that are not the target's ------------------------------- */

static int unwind_tid_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Whether @tid is one of the target's threads as last listed. */
static bool unwind_task_listed(const struct unwinder *u, uint64_t tid)
{
    return bsearch(&tid, u->tasks, u->ntasks, sizeof(*u->tasks), unwind_tid_cmp) != NULL;
}

/*
 * Lists the target's threads again, unless this sample did already (or the
 * last listing failed fewer than UNWIND_TASKS_RETRY samples ago): the
 * lister's call, into a copy on the stack (4 KiB), sorted; gen moves when the
 * list differs from the last.
 */
static void unwind_list_tasks(struct unwinder *u)
{
    if (u->tasks_serial == u->sample_serial ||
        (u->tasks_serial && !u->tasks_ok &&
         u->sample_serial - u->tasks_serial < UNWIND_TASKS_RETRY))
        return;
    u->tasks_serial = u->sample_serial;
    uint64_t fresh[UNWIND_MAX_THREADS];
    size_t n = 0;
    int err = u->tasks_fn(u->tasks_ctx, fresh, UNWIND_MAX_THREADS, &n);
    if (err || n > UNWIND_MAX_THREADS) {
        if (u->tasks_ok)
            u->tasks_gen++;
        u->tasks_ok = false;
        return;
    }
    qsort(fresh, n, sizeof(*fresh), unwind_tid_cmp);
    if (!u->tasks_ok || n != u->ntasks || memcmp(fresh, u->tasks, n * sizeof(*fresh)) != 0) {
        memcpy(u->tasks, fresh, n * sizeof(*fresh));
        u->ntasks = n;
        u->tasks_gen++;
    }
    u->tasks_ok = true;
}

/*
 * The TID in the struct pthread at @pthread (the thread state's pthread_t),
 * into *@tid: 0 when glibc cleared it (the thread exited, or a fork reclaimed
 * it). The offset is learnt from the main thread, or taken as glibc's when
 * this struct is laid out as glibc's. Returns false when it cannot be had
 * (no pthread_t, another C library, an unreadable struct).
 */
static bool unwind_read_pthread_tid(struct unwinder *u, uint64_t pthread, uint64_t *tid)
{
    if (!pthread)
        return false;
    if (!u->tid_off && !u->tid_tried && u->sample_head)
        unwind_learn_tid(u, u->sample_head);
    if (!u->tid_off) {
        uint8_t head[UNWIND_GLIBC_SELF + 8];
        if (memread_read(u->mr, pthread, head, sizeof(head)) != 0 ||
            !unwind_glibc_pthread(head, pthread))
            return false;
        u->tid_off = UNWIND_GLIBC_TID_OFF;
    }
    int32_t word = 0;
    if (memread_read(u->mr, pthread + u->tid_off, &word, sizeof(word)) != 0)
        return false;
    *tid = word > 0 ? (uint64_t)word : 0;
    return true;
}

/*
 * Judges the thread state @t (of interpreter @in, its flags set) whose TID
 * is none of the target's threads, into @m: its pthread's TID when that is
 * one of them; none of them, a thread that does not run here (gone); with no
 * pthread TID to be had, the only thread of a single-threaded process when
 * @t is its interpreter's main thread state and alone in its list (the
 * thread that runs it can only be that one); else unresolved.
 */
static void unwind_judge_tid(struct unwinder *u, const struct unwind_thread *t,
                             const struct interp_view *in, struct tid_memo *m)
{
    m->tid = t->stated_thread_id;
    m->source = UNWIND_TID_UNRESOLVED;
    uint64_t tid = 0;
    bool have = u->l.has_native_thread_id ? unwind_read_pthread_tid(u, t->thread_id, &tid)
                                          : u->tid_off != 0; /* (then it is the stated TID) */
    if (have && u->l.has_native_thread_id && tid && unwind_task_listed(u, tid)) {
        m->tid = tid;
        m->source = UNWIND_TID_PTHREAD;
    } else if (have) {
        m->source = UNWIND_TID_GONE;
    } else if (u->ntasks == 1 && (t->flags & UNWIND_THREAD_MAIN) &&
               in->threads_head == t->tstate_raddr && load_le64(u->tstate + u->l.ts_next) == 0) {
        m->tid = u->tasks[0];
        m->source = UNWIND_TID_ONLY_THREAD;
    }
    m->gen = u->tasks_gen;
}

/*
 * Sets @t's native_thread_id and tid_source from the TID its thread state
 * names (stated_thread_id): kept when it is one of the target's threads (a
 * binary search), else resolved by unwind_judge_tid() once per thread state
 * and task list. A TID the list does not hold may be a thread started since
 * it was made: the list is made again first (at most once per sample), and a
 * judgement made by a list no newer than the sample that first saw the
 * thread state is made again at the next sample, by a list made after it.
 */
static void unwind_thread_tid(struct unwinder *u, struct unwind_thread *t,
                              const struct interp_view *in)
{
    uint64_t stated = t->stated_thread_id;
    t->native_thread_id = stated;
    t->tid_source = UNWIND_TID_OWN;
    /* (3.11+: 0 is a thread state not bound to a thread yet) */
    if (!u->tasks_fn || (stated == 0 && u->l.has_native_thread_id))
        return;
    if (!u->tasks_serial)
        unwind_list_tasks(u);
    if (!u->tasks_ok || unwind_task_listed(u, stated))
        return;
    struct tid_memo *m = NULL;
    for (size_t i = 0; i < UNWIND_TID_MEMOS && !m; i++) {
        struct tid_memo *c = &u->tid_memo[i];
        if (c->gen && c->tstate == t->tstate_raddr && c->stated == stated &&
            c->pthread == t->thread_id)
            m = c;
    }
    if (!m) {
        m = &u->tid_memo[u->tid_memo_next++ % UNWIND_TID_MEMOS];
        *m = (struct tid_memo){.tstate = t->tstate_raddr,
                               .stated = stated,
                               .pthread = t->thread_id,
                               .first_seen = u->sample_serial};
    }
    bool settled = m->listed > m->first_seen;
    if (!settled) {
        /* a thread started since the list was made is not in it: only a
         * list made after the sample that first saw it decides */
        unwind_list_tasks(u);
        if (!u->tasks_ok || unwind_task_listed(u, stated)) {
            m->gen = 0; /* its own after all (or cannot tell): the slot is free */
            return;
        }
    }
    if (!settled || m->gen != u->tasks_gen) {
        unwind_judge_tid(u, t, in, m);
        m->listed = u->tasks_serial;
    }
    t->native_thread_id = m->tid;
    t->tid_source = m->source;
}

/* Samples one thread; false when its thread state could not be read. */
bool unwind_sample_thread(struct unwinder *u, uint64_t tstate_raddr, const struct interp_view *in,
                          unsigned flags, bool preread)
{
    const struct py_layout *l = &u->l;
    if (u->result.nthreads == u->threads_cap && !unwind_grow_threads(u))
        return false;
    struct unwind_thread *t = &u->threads[u->result.nthreads++];
    *t = (struct unwind_thread){.tstate_raddr = tstate_raddr, .interp_id = in->id};
    size_t first = u->nframes;
    int err = preread ? 0 : unwind_read_thread(u, tstate_raddr);
    if (err) {
        t->status = status_from_errno(err);
        return false;
    }
    t->thread_id = load_le64(u->tstate + l->ts_thread_id);
    t->stated_thread_id = l->has_native_thread_id ? load_le64(u->tstate + l->ts_native_thread_id)
                                                  : unwind_pthread_tid(u, t->thread_id);
    for (size_t i = 0; i < u->nwords; i++)
        t->words[i] = u->word_set[i] && u->word_off[i] + 8 <= u->tstate_len
                          ? load_le64(u->tstate + u->word_off[i])
                          : 0;
    unwind_thread_flags(u, t, in);
    unwind_thread_tid(u, t, in);
    /* the mode's test, before any frame is read: a thread that does not run
     * here is on no CPU; one whose TID is unresolved is kept without asking */
    bool ask_cpu = (flags & UNWIND_ONLY_ON_CPU) && u->on_cpu;
    if (((flags & UNWIND_ONLY_GIL) && !(t->flags & UNWIND_THREAD_HOLDS_GIL)) ||
        ((flags & UNWIND_ONLY_EXCEPTION) && !(t->flags & UNWIND_THREAD_HAS_EXCEPTION)) ||
        (ask_cpu && t->tid_source == UNWIND_TID_GONE) ||
        (ask_cpu && t->tid_source != UNWIND_TID_UNRESOLVED &&
         !u->on_cpu(u->on_cpu_ctx, t->native_thread_id))) {
        u->result.nthreads--;
        return true;
    }

    /* 3.13/3.14 have no GC frame: mark the collecting (GIL-holding) thread's top */
    if (!(flags & UNWIND_NO_GC) && !l->has_gc_frame && in->gc_collecting &&
        (t->flags & UNWIND_THREAD_HOLDS_GIL))
        (void)unwind_push(u, first, 0, 0, UNWIND_FRAME_GC, 0);

    t->status = unwind_top_frame(u);
    if (t->status == SAMPLE_OK)
        t->status = unwind_walk(u, in, flags, first);
    /* A chain identical to one verified before (same frames, links, code
     * and callers' instructions) is that real stack again: no re-read
     * needed. Anything else is verified. */
    size_t slot = unwind_slot(tstate_raddr);
    uint64_t h = t->status == SAMPLE_OK ? unwind_chain_hash(u) : 0;
    bool same = h != 0 && h == u->verified_hash[slot];
    unwind_remember_extra(u, same);
    if (t->status == SAMPLE_OK && !same) {
        t->status = unwind_verify(u);
        u->verified_hash[slot] = t->status == SAMPLE_OK ? h : 0;
    }
    if (t->status != SAMPLE_OK) {
        u->nframes = first; /* a torn stack is counted, not reported */
        return true;
    }
    if (!l->has_code_generation)
        unwind_recheck_codes(u, first);
    unwind_remember_codes(u, first);
    /* Unchanged: the same raw frames as this thread's last sample, at the
     * same place in the frame array, untouched since by any other thread,
     * with no code-cache change: the resolved frames from then are still
     * there and still right. A new stack gets a new key. */
    struct resolved_thread *rec = &u->resolved[unwind_slot(tstate_raddr)];
    size_t n = u->nframes - first;
    bool mine = rec->tstate_raddr == tstate_raddr && rec->first == first && rec->n == n;
    uint64_t serial;
    bool kept = unwind_resolve(u, first, mine ? rec->serial : 0, &serial);
    if ((flags & UNWIND_OPCODES) && !l->frame_objects) { /* (<= 3.10: no names) */
        u->opcodes_seen = true;
        if (unwind_read_opcodes(u, first))
            kept = false;
    } else if (u->opcodes_seen) {
        for (size_t i = first; i < u->nframes; i++) {
            struct unwind_frame *f = &u->frames[i];
            kept = kept && !f->opname;
            f->opname = f->opbase = f->opmarker = NULL;
        }
    }
    t->unchanged = mine && kept;
    *rec = (struct resolved_thread){.tstate_raddr = tstate_raddr,
                                    .serial = serial,
                                    .key = t->unchanged ? rec->key : ++u->last_key,
                                    .first = first,
                                    .n = n};
    t->stack_key = rec->key;
    t->frames = &u->frames[first];
    t->nframes = u->nframes - first;
    return true;
}
