/* SPDX-License-Identifier: MIT */
/*
 * asyncio_graph.c: reading the task graph (see asyncio_internal.h,
 * docs/async.md).
 *
 * Phases, each reading what it needs in as few system calls as it can:
 * collect tasks (the running task of each thread, from the words the
 * unwinder read with the thread state; in ALL mode each thread's task list),
 * read task objects and follow their awaited-by links level by level (one
 * batched read per level), read all names in one batched read, then the
 * suspended coroutine chains level by level, and read every link of those
 * chains again to verify them. Remote memory is untrusted: every pointer
 * read is checked before use and every loop is capped; what does not add up
 * marks the task (not ok, or its chain torn), and asyncio.c makes the
 * thread's sample SAMPLE_ASYNC_TORN.
 */
#include "base/compat.h"

#include "base/bytes.h"
#include "base/utf8.h"
#include "unwind/asyncio_internal.h"
#include "unwind/pystr.h"

#define AIO_NAME_WINDOW  128u  /* bytes of a task name object read at once */
#define AIO_SET_MAX_MASK 1023u /* awaited-by sets larger than 1024 slots are refused */
#define AIO_PAGE         4096u
#define AIO_OB_REFCNT    0u /* an object's reference count, 32 bits: negative when immortal */
#define AIO_VERIFY_RAW   (MEMREAD_MAX_IOV / 2u) /* coroutines per verification read */

/* A suspended frame's bytecode copy (free-threaded 3.14+), as the unwinder's own. */
static uint32_t aio_frame_tlbc(const struct pyasync_layout *l, const uint8_t *fr)
{
    if (!l->has_tlbc)
        return 0;
    int32_t i = (int32_t)load_le32(fr + l->fr_tlbc_index);
    return i > 0 && i < PYABI_MAX_TLBC ? (uint32_t)i : 0;
}

/* Bytes from @raddr that may be read without leaving the pages that hold
 * the first @known bytes (which are mapped: they are the object), at most @want. */
static size_t aio_window(uint64_t raddr, size_t known, size_t want)
{
    uint64_t end = ((raddr + known - 1) | (AIO_PAGE - 1)) + 1;
    uint64_t have = end - raddr;
    return have < want ? (size_t)have : want;
}

/* --- the task table ---------------------------------------------------- */

/* The entry of @raddr, added unread if new; NULL when the table is full. */
static struct aio_entry *aio_get(struct asyncio *a, uint64_t raddr)
{
    size_t i = (size_t)((raddr >> 4) * HASH_GOLDEN >> 40) & (AIO_SLOTS - 1);
    for (;; i = (i + 1) & (AIO_SLOTS - 1)) {
        if (a->slot_stamp[i] != a->stamp)
            break;
        if (a->entries[a->slot_idx[i] - 1].raddr == raddr)
            return &a->entries[a->slot_idx[i] - 1];
    }
    if (a->nentries == ASYNCIO_MAX_TASKS)
        return NULL;
    struct aio_entry *e = &a->entries[a->nentries++];
    memset(e, 0, offsetof(struct aio_entry, name));
    e->name = e->marker = "";
    e->raddr = raddr;
    e->thread = SIZE_MAX;
    a->slot_stamp[i] = a->stamp;
    a->slot_idx[i] = (uint32_t)a->nentries;
    return e;
}

/* Takes the fields of a task (or future) object copied at @obj. */
static void aio_parse_task(struct asyncio *a, struct aio_entry *e, const uint8_t *obj)
{
    const struct pyasync_layout *l = &a->l;
    uint8_t is_task = obj[l->task_is_task], is_set = obj[l->task_awaited_by_is_set];
    e->read = true;
    e->name_raddr = load_le64(obj + l->task_name);
    e->awaited_by = load_le64(obj + l->task_awaited_by);
    e->coro = load_le64(obj + l->task_coro);
    e->next_node = load_le64(obj + l->task_node + l->llist_next);
    e->is_task = is_task == 1;
    e->is_set = is_set == 1;
    /* a task has a coroutine and a name; flags are bools */
    e->ok = is_task <= 1 && is_set <= 1 && (!e->is_task || (e->coro && e->name_raddr));
}

/*
 * Reads ranges, in one call when it works; when one range fails (an object
 * freed meanwhile), each on its own. @ok[i] says which were read. Returns 0
 * or -ESRCH / -EPERM.
 */
static int aio_readv(struct asyncio *a, size_t n, bool *ok)
{
    int err = n ? memread_readv(a->mr, a->iov, n) : 0;
    if (err == -ESRCH || err == -EPERM)
        return err;
    for (size_t i = 0; i < n; i++)
        ok[i] = err == 0;
    if (err == 0)
        return 0;
    for (size_t i = 0; i < n; i++) {
        err = memread_read(a->mr, a->iov[i].raddr, a->iov[i].local, a->iov[i].len);
        if (err == -ESRCH || err == -EPERM)
            return err;
        ok[i] = err == 0;
    }
    return 0;
}

/* Reads every entry not read yet, in one batched read. */
static int aio_read_entries(struct asyncio *a, size_t from)
{
    bool ok[ASYNCIO_MAX_TASKS];
    size_t n = 0;
    for (size_t i = from; i < a->nentries; i++) {
        if (a->entries[i].read)
            continue;
        a->iov[n] =
            (struct memread_iov){a->entries[i].raddr, a->buf + n * AIO_GEN_WINDOW, a->l.task_size};
        a->iov_entry[n++] = (uint32_t)i;
    }
    int err = aio_readv(a, n, ok);
    if (err)
        return err;
    for (size_t k = 0; k < n; k++) {
        struct aio_entry *e = &a->entries[a->iov_entry[k]];
        if (ok[k])
            aio_parse_task(a, e, a->buf + k * AIO_GEN_WINDOW);
        else
            e->read = true; /* and not ok */
    }
    return 0;
}

/* Adds waiter @w of @e (the pool is bounded; edges beyond are dropped). */
static void aio_add_waiter(struct asyncio *a, struct aio_entry *e, uint64_t w)
{
    if (a->nwaiters == ASYNCIO_MAX_WAITERS || e->nw == UINT32_MAX)
        return;
    if (e->nw == 0)
        e->wfirst = (uint32_t)a->nwaiters;
    a->waiters[a->nwaiters++] = w;
    e->nw++;
}

/*
 * Fills the waiters of every read entry that has none yet: a single waiter,
 * or the keys of a set (set headers, then tables, each in one batched read).
 * New waiters are added as unread entries; in RUNNING mode only the one
 * followed (the smallest address) is.
 */
static int aio_waiters(struct asyncio *a, size_t from)
{
    const struct pyasync_layout *l = &a->l;
    bool ok[ASYNCIO_MAX_TASKS];
    size_t end = a->nentries, n = 0;
    /* sets: headers first */
    for (size_t i = from; i < end; i++) {
        struct aio_entry *e = &a->entries[i];
        if (!e->ok || e->waiters_done || !e->awaited_by)
            continue;
        if (!e->is_set) {
            e->waiters_done = true;
            aio_add_waiter(a, e, e->awaited_by);
            continue;
        }
        a->iov[n] = (struct memread_iov){e->awaited_by, a->buf + n * AIO_GEN_WINDOW, l->set_size};
        a->iov_entry[n++] = (uint32_t)i;
    }
    int err = aio_readv(a, n, ok);
    if (err)
        return err;
    size_t m = 0;
    uint8_t *tables = a->buf + (size_t)n * AIO_GEN_WINDOW; /* after the headers */
    size_t room = (size_t)ASYNCIO_MAX_TASKS * AIO_GEN_WINDOW - (size_t)n * AIO_GEN_WINDOW;
    size_t used = 0;
    struct memread_iov *tiov = a->iov + n;
    uint32_t *tent = a->iov_entry + n;
    for (size_t k = 0; k < n; k++) {
        struct aio_entry *e = &a->entries[a->iov_entry[k]];
        e->waiters_done = true;
        const uint8_t *set = a->buf + k * AIO_GEN_WINDOW;
        uint64_t mask = load_le64(set + l->set_mask), table = load_le64(set + l->set_table);
        int64_t used_n = (int64_t)load_le64(set + l->set_used);
        size_t len = (size_t)(mask + 1) * PYASYNC_SET_ENTRY;
        if (!ok[k] || mask > AIO_SET_MAX_MASK || ((mask + 1) & mask) != 0 || used_n < 0 ||
            (uint64_t)used_n > mask + 1 || !table) {
            e->ok = false;
            continue;
        }
        if (len > room - used || n + m >= ASYNCIO_MAX_TASKS)
            continue; /* no room this sample: the task keeps no waiters */
        tiov[m] = (struct memread_iov){table, tables + used, len};
        tent[m++] = (uint32_t)(e - a->entries);
        used += len;
    }
    bool tok[ASYNCIO_MAX_TASKS];
    /* aio_readv works on a->iov from 0: shift the table reads there */
    memmove(a->iov, tiov, m * sizeof(*a->iov));
    memmove(a->iov_entry, tent, m * sizeof(*a->iov_entry));
    err = aio_readv(a, m, tok);
    if (err)
        return err;
    for (size_t k = 0; k < m; k++) {
        struct aio_entry *e = &a->entries[a->iov_entry[k]];
        const uint8_t *t = a->iov[k].local;
        if (!tok[k]) {
            e->ok = false;
            continue;
        }
        for (size_t s = 0; s < a->iov[k].len / PYASYNC_SET_ENTRY; s++) {
            uint64_t key = load_le64(t + s * PYASYNC_SET_ENTRY);
            /* empty slots are NULL; deleted ones hold a sentinel that is a
             * valid object (dummy): it is read like a task and found not to be one */
            if (key)
                aio_add_waiter(a, e, key);
        }
    }
    /* the waiters to look at next */
    for (size_t i = from; i < end; i++) {
        struct aio_entry *e = &a->entries[i];
        if (!e->ok || e->nw == 0)
            continue;
        uint64_t best = 0;
        for (uint32_t k = 0; k < e->nw; k++) {
            uint64_t w = a->waiters[e->wfirst + k];
            if (a->mode == ASYNCIO_ALL)
                (void)aio_get(a, w);
            else if (!best || w < best)
                best = w;
        }
        if (best)
            (void)aio_get(a, best);
    }
    return 0;
}

/* --- names ------------------------------------------------------------- */

/* tp_flags of the type at @type, through the cache; reads on a miss. */
static int aio_type_flags(struct asyncio *a, uint64_t type, uint64_t *flags)
{
    size_t i = (size_t)(type >> 4) & (AIO_TYPES - 1);
    if (a->type_raddr[i] == type && type) {
        *flags = a->type_flags[i];
        return 0;
    }
    int err = memread_read(a->mr, type + a->l.tp_flags, flags, sizeof(*flags));
    if (err == 0) {
        a->type_raddr[i] = type;
        a->type_flags[i] = *flags;
    }
    return err;
}

/* "Task-N" from the int object copied at @obj (@len bytes). */
static bool aio_int_name(const struct asyncio *a, const uint8_t *obj, size_t len, char *out,
                         size_t cap)
{
    const struct pyasync_layout *l = &a->l;
    uint64_t tag = load_le64(obj + l->long_lv_tag);
    uint64_t ndigits = tag >> 3, v = 0;
    if ((tag & 3) == 1) /* zero */
        ndigits = 0;
    if (ndigits > 2 || l->long_ob_digit + ndigits * 4 > len)
        return false;
    for (uint64_t d = ndigits; d-- > 0;)
        v = (v << 30) | (load_le32(obj + l->long_ob_digit + d * 4) & 0x3fffffffu);
    snprintf(out, cap, "Task-%s%" PRIu64, (tag & 3) == 2 ? "-" : "", v);
    return true;
}

/*
 * Keeps the @len bytes of @name (UTF-8) as @e's name, and "<task NAME>" as
 * its marker, in the sample's arena; a name that no longer fits is cut to
 * what does, on a character boundary.
 */
static void aio_keep_name(struct asyncio *a, struct aio_entry *e, const char *name, size_t len)
{
    static const char open[] = "<task ";
    const size_t extra = sizeof(open) - 1 + 3; /* the name's NUL, '>' and the marker's NUL */
    size_t room = ASYNCIO_NAME_ARENA - a->names_used;
    if (2 * len + extra > room)
        len = room > extra ? utf8_cut(name, len, (room - extra) / 2) : 0;
    if (2 * len + extra > room) {
        e->name = "";
        e->marker = "<task>";
        return;
    }
    char *p = a->names + a->names_used;
    memcpy(p, name, len);
    p[len] = '\0';
    char *m = p + len + 1;
    memcpy(m, open, sizeof(open) - 1);
    memcpy(m + sizeof(open) - 1, name, len);
    m[sizeof(open) - 1 + len] = '>';
    m[sizeof(open) + len] = '\0';
    e->name = p;
    e->marker = m;
    a->names_used += 2 * len + extra;
}

/* Reads the names of every task entry (one batched read), sets markers. */
static int aio_names(struct asyncio *a)
{
    char name[ASYNCIO_NAME_MAX + 1];
    bool ok[ASYNCIO_MAX_TASKS];
    size_t n = 0;
    for (size_t i = 0; i < a->nentries; i++) {
        struct aio_entry *e = &a->entries[i];
        if (!e->ok || !e->is_task)
            continue;
        a->iov[n] = (struct memread_iov){e->name_raddr, a->buf + n * AIO_GEN_WINDOW,
                                         aio_window(e->name_raddr, 40, AIO_NAME_WINDOW)};
        a->iov_entry[n++] = (uint32_t)i;
    }
    int err = aio_readv(a, n, ok);
    if (err)
        return err;
    for (size_t k = 0; k < n; k++) {
        struct aio_entry *e = &a->entries[a->iov_entry[k]];
        const uint8_t *obj = a->iov[k].local;
        size_t len = a->iov[k].len;
        uint64_t flags = 0;
        long r = -1;
        if (ok[k] && len >= a->l.ob_type + 8 &&
            aio_type_flags(a, load_le64(obj + a->l.ob_type), &flags) == 0) {
            if (flags & PYASYNC_TPFLAGS_UNICODE_SUBCLASS) {
                size_t need = 0;
                r = pystr_decode_n(a->base, obj, len, name, sizeof(name), ASYNCIO_NAME_CHARS,
                                   &need);
                if (r == -EAGAIN) /* longer than the window: read it whole */
                    r = pystr_read_n(a->mr, a->base, e->name_raddr, name, sizeof(name),
                                     ASYNCIO_NAME_CHARS);
            } else if ((flags & PYASYNC_TPFLAGS_LONG_SUBCLASS) &&
                       aio_int_name(a, obj, len, name, sizeof(name))) {
                r = (long)strlen(name);
            }
        }
        if (r < 0) {
            e->ok = false; /* not a task's name: not a task (freed, reused) */
            continue;
        }
        aio_keep_name(a, e, name, (size_t)r);
    }
    return 0;
}

/* --- coroutine chains -------------------------------------------------- */

/*
 * Takes the awaited object of @e's innermost suspended coroutine from the
 * @n words below its stack pointer (@w[0] the object, the others, if any,
 * null references: 3.15 keeps one above the awaited object). Anything else
 * is a stack caught while it changed: the chain is torn.
 */
static void aio_take_awaited(struct asyncio *a, struct aio_entry *e, const uint64_t *w, size_t n)
{
    uint64_t mask = ~a->l.tag_mask;
    e->cur = w[0] & mask;
    e->chain_torn |= e->cur == 0;
    for (size_t i = 1; i < n; i++)
        e->chain_torn |= (w[i] & mask) != 0;
    a->raw[e->rlast].awaited = e->cur;
}

/*
 * Walks the coroutine chains of the entries that need one (suspended tasks),
 * one level per round: one batched read of every chain's next coroutine
 * (the generator with its embedded frame and value stack), then one of the
 * awaited objects that fell outside those windows.
 */
static int aio_chains(struct asyncio *a)
{
    const struct pyasync_layout *l = &a->l;
    bool ok[ASYNCIO_MAX_TASKS];
    for (size_t i = 0; i < a->nentries; i++) {
        struct aio_entry *e = &a->entries[i];
        /* a running task's frames are on its thread's stack; its coroutine
         * is read only to check that it still runs (see below) */
        e->cur = e->ok && e->is_task ? e->coro : 0;
        e->cur_type = 0;
        e->nraw = 0;
        e->rfirst = e->rlast = UINT32_MAX;
        e->chain_torn = false;
    }
    size_t known = l->gen_iframe + l->fr_size;
    for (unsigned level = 0; level < ASYNCIO_MAX_CHAIN; level++) {
        size_t n = 0;
        for (size_t i = 0; i < a->nentries; i++) {
            struct aio_entry *e = &a->entries[i];
            if (!e->cur)
                continue;
            a->iov[n] = (struct memread_iov){e->cur, a->buf + n * AIO_GEN_WINDOW,
                                             aio_window(e->cur, known, AIO_GEN_WINDOW)};
            a->iov_entry[n++] = (uint32_t)i;
        }
        if (n == 0)
            break;
        int err = aio_readv(a, n, ok);
        if (err)
            return err;
        size_t nslot = 0;
        uint32_t slot_of[ASYNCIO_MAX_TASKS];
        for (size_t k = 0; k < n; k++) {
            struct aio_entry *e = &a->entries[a->iov_entry[k]];
            const uint8_t *g = a->iov[k].local;
            uint64_t cur = e->cur;
            e->cur = 0;
            slot_of[k] = UINT32_MAX;
            if (!ok[k]) {
                /* the task's own coroutine unreadable: not a task; an awaited
                 * one gone while awaited: the graph moved */
                e->ok = e->nraw > 0;
                e->chain_torn = e->nraw > 0;
                continue;
            }
            uint64_t type = load_le64(g + l->ob_type);
            if (e->cur_type && type != e->cur_type) {
                /* Awaiting something else than a coroutine: the chain ends.
                 * Not at an immortal object (None, small ints, ...): no
                 * awaitable's iterator is one, but the value sent into a
                 * coroutine being resumed is (3.14 pushes it before the
                 * coroutine's state says that it runs). */
                e->chain_torn |= (int32_t)load_le32(g + AIO_OB_REFCNT) < 0;
                continue;
            }
            const uint8_t *fr = g + l->gen_iframe;
            enum pyasync_frame_state st = pyasync_frame_state(l, (int8_t)g[l->gen_frame_state]);
            if (e->running) {
                /* The task the thread ran when its state was read. It may
                 * have yielded since (its awaiters hold), but a coroutine not
                 * started yet is another task at the same address, and one
                 * that ended with no awaiter left lost its chain. */
                e->chain_torn = st == PYASYNC_FS_CREATED || (st == PYASYNC_FS_GONE && e->nw == 0);
                continue;
            }
            /* A task that is not running waits: each of its coroutines is
             * suspended (or, the task's own, not started yet). One that runs
             * or has finished means the task moved on while it was read. */
            if (st == PYASYNC_FS_EXECUTING || (st == PYASYNC_FS_CREATED && e->nraw > 0) ||
                st == PYASYNC_FS_GONE)
                e->chain_torn = true;
            if (st == PYASYNC_FS_GONE)
                continue;
            uint64_t code = load_le64(fr + l->fr_executable) & ~l->tag_mask;
            if (fr[l->fr_owner] != PYABI_OWNER_GENERATOR || !code) {
                e->ok = e->nraw > 0;
                continue;
            }
            if (a->nraw == AIO_RAW_MAX || e->nraw == ASYNCIO_MAX_CHAIN)
                continue;
            uint32_t at = (uint32_t)a->nraw++;
            uint64_t sp = load_le64(fr + l->fr_stackpointer);
            a->raw[at] = (struct aio_raw){.code = code,
                                          .ip = load_le64(fr + l->fr_instr_ptr),
                                          .frame = cur + l->gen_iframe,
                                          .sp = sp,
                                          .next = UINT32_MAX,
                                          .entry = a->iov_entry[k],
                                          .state = (int8_t)g[l->gen_frame_state],
                                          .tlbc = aio_frame_tlbc(l, fr)};
            if (e->nraw == 0)
                e->rfirst = at;
            else
                a->raw[e->rlast].next = at;
            e->rlast = at;
            e->nraw++;
            if (st != PYASYNC_FS_AWAITING)
                continue;
            size_t nw = l->await_below_sp / 8;
            if (sp < cur + l->await_below_sp || nw == 0 || nw > AIO_AWAIT_WORDS) {
                e->chain_torn = true; /* awaiting, with nothing on its stack */
                continue;
            }
            uint64_t slot = sp - l->await_below_sp;
            e->cur_type = type;
            if (slot >= cur && slot + l->await_below_sp <= cur + a->iov[k].len) {
                uint64_t w[AIO_AWAIT_WORDS];
                memcpy(w, g + (slot - cur), l->await_below_sp);
                aio_take_awaited(a, e, w, nw);
            } else {
                slot_of[k] = (uint32_t)nslot;
                a->slot_val[AIO_AWAIT_WORDS * nslot++] = slot; /* read below */
            }
        }
        if (nslot) {
            size_t m = 0;
            for (size_t k = 0; k < n; k++) {
                if (slot_of[k] == UINT32_MAX)
                    continue;
                uint64_t *w = &a->slot_val[AIO_AWAIT_WORDS * slot_of[k]];
                a->iov[m] = (struct memread_iov){w[0], w, l->await_below_sp};
                a->iov_entry[m++] = a->iov_entry[k];
            }
            err = aio_readv(a, m, ok);
            if (err)
                return err;
            for (size_t k = 0; k < m; k++) {
                struct aio_entry *e = &a->entries[a->iov_entry[k]];
                if (ok[k]) {
                    aio_take_awaited(a, e, a->iov[k].local, l->await_below_sp / 8);
                } else {
                    e->cur = 0;
                    e->chain_torn = true;
                }
            }
        }
    }
    return 0;
}

/*
 * The verification read. Each coroutine of a chain was copied at its own
 * moment, and a copy can mix two: the state of a suspended coroutine with
 * the stack of the same coroutine running again, an awaited object taken
 * from below a stack pointer that had just moved. Every link is read again,
 * in one batched read per AIO_VERIFY_RAW coroutines, after the whole walk:
 * the state, the frame's code, instruction and stack pointers, and the
 * awaited object with the words above it must all be unchanged, otherwise
 * the task moved while it was read and its chain is torn.
 */
static int aio_verify(struct asyncio *a)
{
    const struct pyasync_layout *l = &a->l;
    bool ok[MEMREAD_MAX_IOV];
    /* the state byte and the embedded frame's header, in one range */
    size_t lo = l->gen_frame_state < l->gen_iframe ? l->gen_frame_state : l->gen_iframe;
    size_t hi = l->gen_iframe + l->fr_size > l->gen_frame_state + 1u ? l->gen_iframe + l->fr_size
                                                                     : l->gen_frame_state + 1u;
    size_t stride = hi - lo + AIO_AWAIT_WORDS * 8; /* <= PYASYNC_MAX_GEN + 16 */
    uint64_t mask = ~l->tag_mask;
    for (size_t from = 0; from < a->nraw;) {
        size_t n = 0, nr = 0;
        for (; from < a->nraw && nr < AIO_VERIFY_RAW; from++) {
            const struct aio_raw *r = &a->raw[from];
            const struct aio_entry *e = &a->entries[r->entry];
            if (e->chain_torn || !e->ok)
                continue;
            uint8_t *at = a->buf + nr++ * stride;
            uint64_t gen = r->frame - l->gen_iframe;
            a->iov[n] = (struct memread_iov){gen + lo, at, hi - lo};
            a->iov_entry[n++] = (uint32_t)from;
            if (r->awaited) {
                uint64_t slot = r->sp - l->await_below_sp;
                a->iov[n] = (struct memread_iov){slot, at + (hi - lo), l->await_below_sp};
                a->iov_entry[n++] = (uint32_t)from;
            }
        }
        int err = aio_readv(a, n, ok);
        if (err)
            return err;
        for (size_t k = 0; k < n; k++) {
            const struct aio_raw *r = &a->raw[a->iov_entry[k]];
            struct aio_entry *e = &a->entries[r->entry];
            const uint8_t *g = a->iov[k].local; /* the generator from offset lo */
            const uint8_t *fr = g + (l->gen_iframe - lo);
            bool same = ok[k] && (int8_t)g[l->gen_frame_state - lo] == r->state &&
                        (load_le64(fr + l->fr_executable) & mask) == r->code &&
                        load_le64(fr + l->fr_instr_ptr) == r->ip &&
                        load_le64(fr + l->fr_stackpointer) == r->sp;
            if (r->awaited) {
                const uint8_t *w = a->iov[++k].local;
                same = same && ok[k] && (load_le64(w) & mask) == r->awaited;
                for (size_t i = 1; i < l->await_below_sp / 8; i++)
                    same = same && (load_le64(w + 8 * i) & mask) == 0;
            }
            e->chain_torn |= !same;
        }
    }
    return 0;
}

/* ALL mode: every task in the lists of the sampled threads. */
static int aio_list_tasks(struct asyncio *a, const struct unwind_result *r)
{
    const struct pyasync_layout *l = &a->l;
    uint8_t obj[PYASYNC_MAX_TASK];
    for (size_t i = 0; i < r->nthreads; i++) {
        const struct unwind_thread *t = &r->threads[i];
        if (t->status != SAMPLE_OK)
            continue;
        uint64_t head = t->tstate_raddr + l->ts_tasks_head;
        uint64_t node = t->words[2];
        for (unsigned n = 0; node && node != head && n < ASYNCIO_MAX_TASKS; n++) {
            if (node < l->task_node)
                break;
            struct aio_entry *e = aio_get(a, node - l->task_node);
            if (!e || e->in_list)
                break; /* full, or a loop */
            e->in_list = e->listed = true;
            e->thread = i;
            if (!e->read) {
                int err = memread_read(a->mr, e->raddr, obj, l->task_size);
                if (err == -ESRCH || err == -EPERM)
                    return err;
                if (err) {
                    e->read = true;
                    break; /* without the object there is no next node */
                }
                aio_parse_task(a, e, obj);
            }
            node = e->next_node;
        }
    }
    return 0;
}

/* --- the graph of a sample ----------------------------------------------- */

int asyncio_graph_read(struct asyncio *a, const struct unwind_result *r, bool *any)
{
    a->stamp++;
    a->nentries = 0;
    a->names_used = 0;
    a->nwaiters = 0;
    a->nraw = 0;
    *any = false;
    for (size_t i = 0; i < r->nthreads; i++) {
        const struct unwind_thread *t = &r->threads[i];
        if (t->status != SAMPLE_OK || !t->words[0] || !t->words[1])
            continue;
        struct aio_entry *e = aio_get(a, t->words[1]);
        if (!e)
            break;
        e->listed = e->running = true;
        e->thread = i;
        *any = true;
    }
    int err = 0;
    if (a->mode == ASYNCIO_ALL) {
        err = aio_list_tasks(a, r);
        *any = *any || a->nentries > 0;
    }
    if (!*any)
        return err;
    /* task objects and the awaited-by graph, one level per round */
    size_t from = 0;
    for (unsigned round = 0; round <= ASYNCIO_MAX_DEPTH && !err && from < a->nentries; round++) {
        size_t end = a->nentries;
        err = aio_read_entries(a, from);
        if (!err)
            err = aio_waiters(a, from);
        from = end;
    }
    for (size_t i = 0; i < a->nentries; i++) {
        const struct aio_entry *e = &a->entries[i];
        for (uint32_t k = 0; e->ok && k < e->nw; k++) {
            struct aio_entry *w = aio_find(a, a->waiters[e->wfirst + k]);
            if (w)
                w->is_waiter = true;
        }
    }
    if (!err)
        err = aio_names(a);
    if (!err)
        err = aio_chains(a);
    if (!err)
        err = aio_verify(a);
    return err;
}
