/* SPDX-License-Identifier: MIT */
/*
 * asyncio.c: async-aware stacks (see asyncio.h and docs/async.md): the
 * table's attach, the walker's life, and a sample's order of work.
 *
 * A sample reads the task graph (asyncio_graph.c: tasks, awaited-by links,
 * names, suspended coroutine chains, each in as few system calls as it can,
 * and the chains verified by a second read), resolves the chains' code
 * objects through the unwinder's cache and reader
 * (unwinder_resolve_code()), and finally assembles the samples: each
 * thread's running task's frames, its marker, and the suspended frames and
 * marker of each task awaiting it up to the root. What does not add up
 * makes the thread's sample SAMPLE_ASYNC_TORN.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/utf8.h"
#include "discovery/pyruntime.h"
#include "unwind/asyncio_internal.h"

static const char aio_marker_file[] = "~";

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
    if (unwinder_set_thread_words(a->u, UNWIND_WORDS_ASYNCIO, words, 3) == 0) {
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
        int err = unwinder_set_thread_words(a->u, UNWIND_WORDS_ASYNCIO, NULL, 3); /* cannot fail */
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

    a->ntask_frames = 0;
    bool any;
    err = asyncio_graph_read(a, r, &any);
    if (err || !any)
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
