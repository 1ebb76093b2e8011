/* SPDX-License-Identifier: MIT */
/*
 * asyncio.c: async-aware stacks (see asyncio.h and docs/async.md).
 *
 * One call runs in phases, each reading what it needs in as few system calls
 * as it can: collect tasks (the running task of each thread, from the words
 * the unwinder read with the thread state; in ALL mode each thread's task
 * list), read task objects and follow their awaited-by links level by level
 * (one batched read per level), read all names in one batched read, then the
 * suspended coroutine chains level by level, read every link of those chains
 * again to verify them, resolve code objects through the unwinder's cache and
 * reader (unwinder_resolve_code()), and finally assemble the samples. Remote
 * memory is untrusted: every pointer read is checked before use and every
 * loop is capped; what does not add up makes the thread's sample
 * SAMPLE_ASYNC_TORN.
 */
#include "base/compat.h"

#include <stdatomic.h>

#include "base/alloc.h"
#include "base/bytes.h"
#include "base/hash.h"
#include "base/utf8.h"
#include "discovery/pyruntime.h"
#include "unwind/asyncio.h"
#include "unwind/pystr.h"

#define AIO_SLOTS        4096u /* task index, > ASYNCIO_MAX_TASKS, power of two */
#define AIO_RAW_MAX      (ASYNCIO_MAX_TASKS * 4u) /* suspended coroutine frames per sample */
#define AIO_GEN_WINDOW   512u  /* bytes of a coroutine read at once (frame + value stack) */
#define AIO_NAME_WINDOW  128u  /* bytes of a task name object read at once */
#define AIO_SET_MAX_MASK 1023u /* awaited-by sets larger than 1024 slots are refused */
#define AIO_TYPES        16u   /* type flags remembered (power of two) */
#define AIO_PAGE         4096u
#define AIO_OB_REFCNT    0u /* an object's reference count, 32 bits: negative when immortal */
#define AIO_AWAIT_WORDS  2u /* words from the awaited object up to the stack pointer, at most */
#define AIO_VERIFY_RAW   (MEMREAD_MAX_IOV / 2u) /* coroutines per verification read */

static const char aio_marker_file[] = "~";

/*
 * A coroutine frame found suspended, before its code object is looked up;
 * with what its chain link was read from, for the verification read.
 */
struct aio_raw {
    uint64_t code, ip, frame;
    uint64_t sp;      /* its stack pointer */
    uint64_t awaited; /* the object it awaits (untagged), 0: not awaiting */
    uint32_t next;    /* the next (inner) coroutine of the same task, UINT32_MAX: none */
    uint32_t entry;   /* the task it belongs to */
    int8_t state;     /* its gi_frame_state */
    uint32_t tlbc;    /* its bytecode copy (free-threaded 3.14+), 0: the code's own */
};

/* A task (or a plain future standing between tasks) seen by this sample. */
struct aio_entry {
    uint64_t raddr;
    uint64_t name_raddr, awaited_by, coro, next_node;
    size_t thread; /* SIZE_MAX: reached as a waiter only */
    bool listed;   /* a running task, or in a sampled thread's task list */
    bool in_list;  /* met walking a task list (a second time: the list loops) */
    bool running;
    bool read; /* its object was read (ok says whether it made sense) */
    bool ok;
    bool is_task, is_set;
    bool is_waiter; /* some entry lists it as a waiter */
    bool waiters_done;
    uint32_t wfirst, nw;          /* waiters, in aio->waiters */
    uint32_t rfirst, rlast, nraw; /* suspended coroutine frames, a list from the outermost */
    uint32_t ffirst, nf;          /* the same resolved, leaf first, in aio->task_frames */
    uint32_t run_first, run_n;    /* a running task: its frames, copied from its thread's */
    uint64_t cur;                 /* chain walk: the coroutine to read next (0: done) */
    uint64_t cur_type;            /* ... and the type it must have */
    bool chain_torn;              /* a coroutine of it runs or ended: it is not waiting */
    uint32_t visit;               /* chain-walk stamp */
    const char *name;             /* in the sample's name arena (or a constant) */
    const char *marker;           /* "<task NAME>", the same */
};

struct asyncio {
    struct unwinder *u;
    struct memread *mr;
    struct py_version version; /* the runtime's */
    uint64_t runtime_raddr;    /* ... and where its main table is */
    enum asyncio_mode mode;
    _Atomic int state; /* enum asyncio_state */
    char why[256];
    struct pyasync_layout l;
    const struct py_layout *base;
    struct asyncio_counts counts;

    /* per sample */
    struct aio_entry *entries;
    size_t nentries;
    uint32_t *slot_idx; /* entries index + 1 by address */
    uint32_t *slot_stamp;
    uint32_t stamp;
    uint32_t visit;
    uint64_t *waiters;
    size_t nwaiters;
    struct aio_raw *raw;
    size_t nraw;
    struct unwind_frame *task_frames;
    size_t ntask_frames;
    struct unwind_frame *frames; /* output stacks */
    size_t nframes;
    struct asyncio_sample *samples;
    size_t nsamples;
    struct asyncio_task *tasks;
    struct asyncio_result result;

    /* scratch for batched reads */
    struct memread_iov *iov;
    uint32_t *iov_entry;
    uint8_t *buf;       /* ASYNCIO_MAX_TASKS windows of AIO_GEN_WINDOW bytes */
    uint64_t *slot_val; /* AIO_AWAIT_WORDS per task */
    char *names;        /* this sample's task names and markers, ASYNCIO_NAME_ARENA bytes */
    size_t names_used;

    /* type flags by type address, direct-mapped */
    uint64_t type_raddr[AIO_TYPES], type_flags[AIO_TYPES];
};

static const char *const aio_modes[] = {"running", "all"};

const char *asyncio_mode_name(enum asyncio_mode m)
{
    return (unsigned)m < PYPROFD_ARRAY_SIZE(aio_modes) ? aio_modes[m] : "?";
}

int asyncio_mode_parse(const char *name, enum asyncio_mode *out)
{
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(aio_modes); i++) {
        if (strcmp(name, aio_modes[i]) == 0) {
            *out = (enum asyncio_mode)i;
            return 0;
        }
    }
    return -EINVAL;
}

/* Bytes from @raddr that may be read without leaving the pages that hold
 * the first @known bytes (which are mapped: they are the object), at most @want. */
/* A suspended frame's bytecode copy (free-threaded 3.14+), as the unwinder's own. */
static uint32_t aio_frame_tlbc(const struct pyasync_layout *l, const uint8_t *fr)
{
    if (!l->has_tlbc)
        return 0;
    int32_t i = (int32_t)load_le32(fr + l->fr_tlbc_index);
    return i > 0 && i < PYABI_MAX_TLBC ? (uint32_t)i : 0;
}

static size_t aio_window(uint64_t raddr, size_t known, size_t want)
{
    uint64_t end = ((raddr + known - 1) | (AIO_PAGE - 1)) + 1;
    uint64_t have = end - raddr;
    return have < want ? (size_t)have : want;
}

/* --- the table ------------------------------------------------------------ */

void asyncio_search(struct asyncio *a, const char *proc_root, pid_t pid, const struct pyruntime *rt,
                    struct pyruntime_asyncio_memo *memo)
{
    if (!a || asyncio_state(a) != ASYNCIO_SEARCHING)
        return;
    struct pyruntime_section sec;
    char why[PATH_MAX + 128];
    int err = pyruntime_find_asyncio(proc_root, pid, rt, memo, &sec, why, sizeof(why));
    if (err == 0)
        err = asyncio_attach_table(a, sec.raddr, sec.size);
    else if (err == -EPROTO)
        asyncio_refuse_table(a, why);
    (void)err; /* asyncio_state() says what became of the table; not there: next time */
}

int asyncio_attach_table(struct asyncio *a, uint64_t raddr, uint64_t size)
{
    if (atomic_load(&a->state) != ASYNCIO_SEARCHING)
        return -EALREADY;
    const struct pyabi_schema *ds = pyabi_schema_for(a->version.minor);
    uint8_t debug[PYABI_MAX_TABLE], aio[PYASYNC_TABLE_SIZE];
    if (size < sizeof(aio)) {
        snprintf(a->why, sizeof(a->why),
                 "asyncio offsets: .AsyncioDebug (%" PRIu64 " bytes) is smaller than the table "
                 "(%u bytes)",
                 size, PYASYNC_TABLE_SIZE);
        goto invalid;
    }
    struct memread_iov iov[2] = {{a->runtime_raddr, debug, ds ? ds->table_size : 0},
                                 {raddr, aio, sizeof(aio)}};
    int err = ds ? memread_readv(a->mr, iov, 2) : -ENOTSUP;
    if (err == -ESRCH)
        return err; /* gone: the sampler sees it too */
    if (err) {
        snprintf(a->why, sizeof(a->why), "cannot read the asyncio debug table: %s",
                 memread_strerror(err));
        goto invalid;
    }
    if (pyasync_layout_load(&a->version, a->base, debug, ds->table_size, aio, sizeof(aio), &a->l,
                            a->why, sizeof(a->why)))
        goto invalid;
    uint32_t words[3] = {a->l.ts_running_loop, a->l.ts_running_task,
                         a->l.ts_tasks_head + a->l.llist_next};
    if (unwinder_set_thread_words(a->u, words, 3) == 0) {
        atomic_store(&a->state, ASYNCIO_ACTIVE);
        return 0;
    }
    snprintf(a->why, sizeof(a->why), "asyncio offsets: thread-state fields beyond %u bytes",
             PYABI_MAX_TSTATE);
invalid:
    atomic_store(&a->state, ASYNCIO_INVALID);
    return -EPROTO;
}

void asyncio_refuse_table(struct asyncio *a, const char *why)
{
    if (atomic_load(&a->state) != ASYNCIO_SEARCHING)
        return;
    /* discovery's words quote a file the process maps: valid UTF-8, cut on a boundary */
    (void)utf8_sanitize(a->why, sizeof(a->why), why, strlen(why));
    atomic_store(&a->state, ASYNCIO_INVALID);
}

/* --- lifecycle --------------------------------------------------------- */

int asyncio_new(struct unwinder *u, struct memread *mr, const struct pyruntime *rt,
                enum asyncio_mode mode, struct asyncio **out, char *why, size_t why_len)
{
    char ver[32];
    if (!pyasync_schema_for(rt->version.major == 3 ? rt->version.minor : 0)) {
        snprintf(why, why_len, "CPython %s has no asyncio debug table",
                 pyversion_format(&rt->version, ver, sizeof(ver)));
        return -ENOTSUP;
    }
    struct asyncio *a = alloc_calloc(1, sizeof(*a));
    if (!a)
        return -ENOMEM;
    a->u = u;
    a->mr = mr;
    a->version = rt->version;
    a->runtime_raddr = rt->raddr;
    a->mode = mode;
    a->base = unwinder_layout(u);
    atomic_init(&a->state, ASYNCIO_SEARCHING);
    a->entries = alloc_calloc(ASYNCIO_MAX_TASKS, sizeof(*a->entries));
    a->slot_idx = alloc_calloc(AIO_SLOTS, sizeof(*a->slot_idx));
    a->slot_stamp = alloc_calloc(AIO_SLOTS, sizeof(*a->slot_stamp));
    a->waiters = alloc_calloc(ASYNCIO_MAX_WAITERS, sizeof(*a->waiters));
    a->raw = alloc_calloc(AIO_RAW_MAX, sizeof(*a->raw));
    a->task_frames = alloc_calloc(AIO_RAW_MAX, sizeof(*a->task_frames));
    a->frames = alloc_calloc(ASYNCIO_MAX_FRAMES, sizeof(*a->frames));
    a->samples = alloc_calloc(UNWIND_MAX_THREADS + ASYNCIO_MAX_TASKS, sizeof(*a->samples));
    a->tasks = alloc_calloc(ASYNCIO_MAX_TASKS, sizeof(*a->tasks));
    a->iov = alloc_calloc(ASYNCIO_MAX_TASKS, sizeof(*a->iov));
    a->iov_entry = alloc_calloc(ASYNCIO_MAX_TASKS, sizeof(*a->iov_entry));
    a->buf = alloc_malloc((size_t)ASYNCIO_MAX_TASKS * AIO_GEN_WINDOW);
    a->slot_val = alloc_calloc(ASYNCIO_MAX_TASKS * AIO_AWAIT_WORDS, sizeof(*a->slot_val));
    a->names = alloc_malloc(ASYNCIO_NAME_ARENA);
    if (!a->entries || !a->slot_idx || !a->slot_stamp || !a->waiters || !a->raw ||
        !a->task_frames || !a->frames || !a->samples || !a->tasks || !a->iov || !a->iov_entry ||
        !a->buf || !a->slot_val || !a->names)
        goto fail;
    a->result.samples = a->samples;
    a->result.tasks = a->tasks;
    *out = a;
    return 0;
fail:
    snprintf(why, why_len, "out of memory for async-aware stacks");
    asyncio_free(a);
    return -ENOMEM;
}

void asyncio_free(struct asyncio *a)
{
    if (!a)
        return;
    if (atomic_load(&a->state) == ASYNCIO_ACTIVE) {
        int err = unwinder_set_thread_words(a->u, NULL, 0); /* cannot fail for none */
        (void)err;
    }
    alloc_free(a->entries);
    alloc_free(a->names);
    alloc_free(a->slot_idx);
    alloc_free(a->slot_stamp);
    alloc_free(a->waiters);
    alloc_free(a->raw);
    alloc_free(a->task_frames);
    alloc_free(a->frames);
    alloc_free(a->samples);
    alloc_free(a->tasks);
    alloc_free(a->iov);
    alloc_free(a->iov_entry);
    alloc_free(a->buf);
    alloc_free(a->slot_val);
    alloc_free(a);
}

enum asyncio_state asyncio_state(const struct asyncio *a)
{
    return (enum asyncio_state)atomic_load((_Atomic int *)&a->state);
}

const char *asyncio_why(const struct asyncio *a)
{
    return asyncio_state(a) == ASYNCIO_INVALID ? a->why : "";
}

struct asyncio_counts asyncio_counts(const struct asyncio *a)
{
    return a->counts;
}

enum asyncio_mode asyncio_get_mode(const struct asyncio *a)
{
    return a->mode;
}

const struct pyasync_layout *asyncio_layout(const struct asyncio *a)
{
    return asyncio_state(a) == ASYNCIO_ACTIVE ? &a->l : NULL;
}

/* --- the task table ---------------------------------------------------- */

static struct aio_entry *aio_find(struct asyncio *a, uint64_t raddr)
{
    size_t i = (size_t)((raddr >> 4) * HASH_GOLDEN >> 40) & (AIO_SLOTS - 1);
    for (;; i = (i + 1) & (AIO_SLOTS - 1)) {
        if (a->slot_stamp[i] != a->stamp)
            return NULL;
        if (a->entries[a->slot_idx[i] - 1].raddr == raddr)
            return &a->entries[a->slot_idx[i] - 1];
    }
}

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

/* --- code objects ------------------------------------------------------ */

/*
 * Resolves every chain into task_frames, leaf first, through the unwinder's
 * code cache. False when that filled the cache, which clears it: names
 * resolved before are gone, the thread stacks' of this sample too.
 */
static bool aio_resolve(struct asyncio *a)
{
    uint64_t epoch = unwinder_code_epoch(a->u);
    a->ntask_frames = 0;
    for (size_t i = 0; i < a->nentries; i++) {
        struct aio_entry *e = &a->entries[i];
        e->ffirst = (uint32_t)a->ntask_frames;
        e->nf = e->nraw;
        /* the list runs outermost first; frames are stored leaf first */
        uint32_t r = e->rfirst;
        for (uint32_t k = 0; k < e->nraw && r != UINT32_MAX; k++, r = a->raw[r].next) {
            struct unwind_frame *f = &a->task_frames[e->ffirst + e->nraw - 1 - k];
            (void)unwinder_resolve_code(a->u, a->raw[r].code, a->raw[r].ip, a->raw[r].tlbc,
                                        f); /* or unreadable */
            f->frame_raddr = a->raw[r].frame;
        }
        a->ntask_frames += e->nraw;
    }
    return unwinder_code_epoch(a->u) == epoch;
}

/* --- assembling samples ------------------------------------------------ */

static bool aio_push(struct asyncio *a, const struct unwind_frame *f, size_t first)
{
    if (a->nframes == ASYNCIO_MAX_FRAMES || a->nframes - first >= UNWIND_MAX_DEPTH)
        return false;
    a->frames[a->nframes++] = *f;
    return true;
}

static bool aio_push_marker(struct asyncio *a, const struct aio_entry *e, size_t first)
{
    struct unwind_frame m = {
        .kind = UNWIND_FRAME_TASK,
        .function = e->marker,
        .file = aio_marker_file,
        .pos = {LINETABLE_UNKNOWN, LINETABLE_UNKNOWN, LINETABLE_UNKNOWN, LINETABLE_UNKNOWN}};
    return aio_push(a, &m, first);
}

/* The waiter of @e that chains are followed through (the smallest address). */
static struct aio_entry *aio_next_waiter(struct asyncio *a, const struct aio_entry *e)
{
    struct aio_entry *best = NULL;
    for (uint32_t k = 0; k < e->nw; k++) {
        struct aio_entry *w = aio_find(a, a->waiters[e->wfirst + k]);
        if (w && (!best || w->raddr < best->raddr))
            best = w;
    }
    return best;
}

/*
 * Appends the await chain above @e (already pushed): each awaiting task's
 * suspended frames and marker, up to a task nobody awaits. Plain futures
 * in between (no coroutine) are passed through. Returns the status.
 */
static enum sample_status aio_push_awaiters(struct asyncio *a, const struct aio_entry *e,
                                            size_t first)
{
    a->visit++;
    for (unsigned depth = 0; e->nw > 0; depth++) {
        struct aio_entry *w = aio_next_waiter(a, e);
        if (!w)
            return SAMPLE_OK; /* not followed (a cap): the chain ends here */
        if (depth == ASYNCIO_MAX_DEPTH || w->visit == a->visit || !w->read || !w->ok)
            return SAMPLE_ASYNC_TORN;
        w->visit = a->visit;
        if (w->is_task && !w->running && w->chain_torn)
            return SAMPLE_ASYNC_TORN; /* it runs or ended: not the task awaiting this one now */
        if (w->is_task) {
            /* a running waiter (a TaskGroup's parent still in its body):
             * where it runs now, as far as its thread's stack was copied */
            const struct unwind_frame *f =
                w->running ? &a->frames[w->run_first] : &a->task_frames[w->ffirst];
            uint32_t nf = w->running ? w->run_n : w->nf;
            for (uint32_t k = 0; k < nf; k++) {
                if (!aio_push(a, &f[k], first))
                    return SAMPLE_TOO_DEEP;
            }
            if (!aio_push_marker(a, w, first))
                return SAMPLE_TOO_DEEP;
        }
        e = w;
    }
    return SAMPLE_OK;
}

static struct asyncio_sample *aio_sample_slot(struct asyncio *a, size_t thread)
{
    struct asyncio_sample *s = &a->samples[a->nsamples++];
    *s = (struct asyncio_sample){.thread = thread};
    return s;
}

/* The logical stack of thread @i (status OK) of @r into a sample. */
static void aio_thread_sample(struct asyncio *a, const struct unwind_result *r, size_t i)
{
    const struct unwind_thread *t = &r->threads[i];
    struct asyncio_sample *s = aio_sample_slot(a, i);
    s->frames = t->frames;
    s->nframes = t->nframes;
    s->status = t->status;
    uint64_t loop = t->words[0], task = t->words[1];
    if (t->status != SAMPLE_OK || !loop || !task)
        return;
    struct aio_entry *e = aio_find(a, task);
    if (!e || !e->read || !e->ok || !e->is_task) {
        s->status = SAMPLE_ASYNC_TORN;
        a->counts.torn++;
        return;
    }
    uint64_t coro_frame = e->coro + a->l.gen_iframe;
    size_t k = 0;
    while (k < t->nframes && t->frames[k].frame_raddr != coro_frame)
        k++;
    if (k == t->nframes) {
        a->counts.outside_task++; /* between two steps of the task: the loop's own stack */
        return;
    }
    if (e->chain_torn) { /* its coroutine was on the stack, but the task moved on */
        s->status = SAMPLE_ASYNC_TORN;
        a->counts.torn++;
        return;
    }
    size_t first = a->nframes;
    enum sample_status st = SAMPLE_OK;
    for (size_t f = 0; f <= k && st == SAMPLE_OK; f++)
        st = aio_push(a, &t->frames[f], first) ? SAMPLE_OK : SAMPLE_TOO_DEEP;
    if (st == SAMPLE_OK)
        st = aio_push_marker(a, e, first) ? SAMPLE_OK : SAMPLE_TOO_DEEP;
    if (st == SAMPLE_OK)
        st = aio_push_awaiters(a, e, first);
    e->run_first = (uint32_t)first; /* for the task list and waiters: its own frames */
    e->run_n = (uint32_t)(k + 1);
    if (st != SAMPLE_OK) {
        e->run_n = 0;
        a->nframes = first;
        s->status = st;
        s->nframes = 0;
        if (st == SAMPLE_ASYNC_TORN)
            a->counts.torn++;
        return;
    }
    s->task_name = e->name;
    s->frames = &a->frames[first];
    s->nframes = a->nframes - first;
    a->counts.logical++;
}

/* ALL mode: a sample per suspended leaf task of a sampled thread. */
static void aio_suspended_samples(struct asyncio *a)
{
    for (size_t i = 0; i < a->nentries; i++) {
        struct aio_entry *e = &a->entries[i];
        if (!e->listed || e->running || !e->read || !e->ok || !e->is_task || e->is_waiter ||
            (e->nraw == 0 && !e->chain_torn))
            continue;
        size_t first = a->nframes;
        enum sample_status st = e->chain_torn ? SAMPLE_ASYNC_TORN : SAMPLE_OK;
        for (uint32_t k = 0; k < e->nf && st == SAMPLE_OK; k++)
            st = aio_push(a, &a->task_frames[e->ffirst + k], first) ? SAMPLE_OK : SAMPLE_TOO_DEEP;
        if (st == SAMPLE_OK)
            st = aio_push_marker(a, e, first) ? SAMPLE_OK : SAMPLE_TOO_DEEP;
        if (st == SAMPLE_OK)
            st = aio_push_awaiters(a, e, first);
        struct asyncio_sample *s = aio_sample_slot(a, e->thread);
        s->suspended = true;
        s->status = st;
        if (st != SAMPLE_OK) {
            a->nframes = first;
            if (st == SAMPLE_ASYNC_TORN)
                a->counts.torn++;
            continue;
        }
        s->task_name = e->name;
        s->frames = &a->frames[first];
        s->nframes = a->nframes - first;
        a->counts.suspended++;
    }
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

/* The task table of this sample, for callers that show it (pyprofd dump);
 * without frames when their names are gone (!@resolved). */
static void aio_export_tasks(struct asyncio *a, bool resolved)
{
    size_t n = 0;
    for (size_t i = 0; i < a->nentries; i++) {
        const struct aio_entry *e = &a->entries[i];
        if (!e->read || !e->ok || !e->is_task)
            continue;
        struct asyncio_task *t = &a->tasks[n++];
        *t = (struct asyncio_task){.raddr = e->raddr,
                                   .name = e->name,
                                   .thread = e->thread,
                                   .running = e->running,
                                   .nwaiters = e->nw,
                                   .waiters = e->nw ? &a->waiters[e->wfirst] : NULL,
                                   .nframes = !resolved    ? 0
                                              : e->running ? e->run_n
                                                           : e->nf};
        if (!t->nframes)
            t->frames = NULL;
        else if (e->running)
            t->frames = &a->frames[e->run_first];
        else
            t->frames = &a->task_frames[e->ffirst];
    }
    a->result.ntasks = n;
}

int asyncio_sample(struct asyncio *a, const struct unwind_result *r,
                   const struct asyncio_result **out)
{
    a->nsamples = 0;
    a->nframes = 0;
    a->result.ntasks = 0;
    *out = &a->result;
    int err = 0;
    if (atomic_load(&a->state) != ASYNCIO_ACTIVE)
        goto plain;

    a->stamp++;
    a->nentries = 0;
    a->names_used = 0;
    a->nwaiters = 0;
    a->nraw = 0;
    a->ntask_frames = 0;
    bool any = false;
    for (size_t i = 0; i < r->nthreads; i++) {
        const struct unwind_thread *t = &r->threads[i];
        if (t->status != SAMPLE_OK || !t->words[0] || !t->words[1])
            continue;
        struct aio_entry *e = aio_get(a, t->words[1]);
        if (!e)
            break;
        e->listed = e->running = true;
        e->thread = i;
        any = true;
    }
    if (a->mode == ASYNCIO_ALL) {
        err = aio_list_tasks(a, r);
        any = any || a->nentries > 0;
    }
    if (!any)
        goto plain;
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
    if (err)
        goto plain;
    /* Code objects are read into the unwinder's cache. Filling it clears it,
     * and the names of this sample's thread stacks go with it: those are
     * resolved again, then the chains, once. */
    bool resolved = aio_resolve(a);
    if (!resolved)
        resolved = unwinder_resolve_again(a->u) && aio_resolve(a);
    for (size_t i = 0; i < r->nthreads; i++)
        aio_thread_sample(a, r, i);
    if (a->mode == ASYNCIO_ALL)
        aio_suspended_samples(a);
    if (!resolved) {
        /* this sample's code objects do not fit the cache together: names
         * of some frames are gone, counted and not reported */
        for (size_t i = 0; i < a->nsamples; i++) {
            if (a->samples[i].status == SAMPLE_OK) {
                a->samples[i].status = SAMPLE_NO_MEMORY;
                a->samples[i].nframes = 0;
            }
        }
    }
    aio_export_tasks(a, resolved);
    a->result.nsamples = a->nsamples;
    return 0;
plain:
    a->nsamples = 0;
    a->nframes = 0;
    for (size_t i = 0; i < r->nthreads; i++) {
        struct asyncio_sample *s = aio_sample_slot(a, i);
        s->frames = r->threads[i].frames;
        s->nframes = r->threads[i].nframes;
        s->status = r->threads[i].status;
    }
    a->result.nsamples = a->nsamples;
    return err == -ESRCH ? -ESRCH : 0;
}
