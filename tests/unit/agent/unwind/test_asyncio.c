/* SPDX-License-Identifier: MIT */
/*
 * Tests for agent/unwind/asyncio*.c: the task-graph walk over synthetic memory
 * images (tests/support/pyimage.h) built with the real 3.14 and 3.15 tables:
 * the running task's logical stack (its frames from the thread's stack, then
 * the suspended coroutines of the tasks awaiting it, with markers), suspended
 * leaf tasks in ALL mode, awaited-by sets, int task names, a running task
 * between two steps, and garbage: loops, impossible flags, names that are
 * not names; all bounded, counted, never reported as a chain. Torn chains:
 * a coroutine copied while it moved (a reader that changes the image
 * between two reads of one sample), a coroutine caught being resumed. The
 * table's states: searching (plain stacks), attached, too small, unreadable,
 * refused by discovery. A sample allocates nothing. With
 * PYPROFD_WRITE_ASYNC_SEEDS=DIR set, the images are written there as seeds
 * for tests/fuzz/fuzz_asyncio.c.
 */
#include "base/compat.h"

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmocka_wrap.h"

#include "base/alloc.h"
#include "fixture.h"
#include "pyimage.h"
#include "unwind/asyncio.h"

/* An image with asyncio objects: types, names, tasks, coroutines. */
struct aimg {
    unsigned minor;
    struct pyimage *img;
    const struct py_layout *l;
    const struct pyasync_schema *s;
    struct pyasync_layout al;
    uint64_t table, str_type, int_type, coro_type, future_type, odd_type;
    unsigned t; /* the thread */
    struct memread_fake *fake;
    struct memread *mr;
    struct memread *amr; /* the walker's reader, when not mr (set before aimg_start) */
    struct pyruntime rt;
    struct unwinder *u;
    struct asyncio *a;
};

static void put64(uint8_t *p, uint64_t v)
{
    memcpy(p, &v, 8);
}

static uint64_t aimg_type(struct aimg *m, uint64_t flags)
{
    uint8_t *p;
    uint64_t raddr = pyimage_object(m->img, m->al.tp_size, &p);
    put64(p + m->al.tp_flags, flags);
    return raddr;
}

static void aimg_new(struct aimg *m, unsigned minor)
{
    memset(m, 0, sizeof(*m));
    m->minor = minor;
    m->img = pyimage_new(minor);
    m->l = pyimage_layout(m->img);
    m->s = pyasync_schema_for(minor);
    char rel[64], why[256];
    size_t dlen, alen;
    snprintf(rel, sizeof(rel), "debug_offsets/3.%u.bin", minor);
    uint8_t *debug = fixture_load(rel, &dlen);
    snprintf(rel, sizeof(rel), "debug_offsets/asyncio-3.%u.bin", minor);
    uint8_t *aio = fixture_load(rel, &alen);
    assert_non_null(debug);
    assert_non_null(aio);
    assert_int_equal(
        pyasync_layout_load(&m->l->version, m->l, debug, dlen, aio, alen, &m->al, why, sizeof(why)),
        0);
    uint8_t *p;
    m->table = pyimage_object(m->img, alen, &p);
    memcpy(p, aio, alen);
    alloc_free(debug);
    alloc_free(aio);
    m->str_type = aimg_type(m, PYASYNC_TPFLAGS_UNICODE_SUBCLASS);
    m->int_type = aimg_type(m, PYASYNC_TPFLAGS_LONG_SUBCLASS);
    m->coro_type = aimg_type(m, 0);
    m->future_type = aimg_type(m, 0);
    m->odd_type = aimg_type(m, 0);
    m->t = pyimage_thread(m->img, 4242);
    (void)pyimage_push(m->img, m->t, PYABI_OWNER_INTERPRETER, 0, 0);
}

/* A str object (compact ASCII) of type @type. */
static uint64_t aimg_name(struct aimg *m, const char *s, uint64_t type)
{
    size_t n = strlen(s);
    uint8_t *p;
    uint64_t raddr = pyimage_object(m->img, m->l->str_ascii_data + n + 1, &p);
    put64(p + m->al.ob_type, type);
    put64(p + m->l->str_length, n);
    uint32_t state = (1u << 2) | (1u << 5) | (1u << 6);
    memcpy(p + m->l->str_state, &state, 4);
    memcpy(p + m->l->str_ascii_data, s, n + 1);
    return raddr;
}

/* A compact Latin-1 str of @n times the character @c (0x80-0xff). */
static uint64_t aimg_latin1_name(struct aimg *m, uint8_t c, size_t n)
{
    uint8_t *p;
    uint64_t raddr = pyimage_object(m->img, m->l->str_compact_data + n + 1, &p);
    put64(p + m->al.ob_type, m->str_type);
    put64(p + m->l->str_length, n);
    uint32_t state = (1u << 2) | (1u << 5); /* kind 1, compact, not ascii */
    memcpy(p + m->l->str_state, &state, 4);
    memset(p + m->l->str_compact_data, c, n);
    return raddr;
}

/* An int object holding @v (< 2^30). */
static uint64_t aimg_int(struct aimg *m, uint32_t v)
{
    uint8_t *p;
    uint64_t raddr = pyimage_object(m->img, m->al.long_size, &p);
    put64(p + m->al.ob_type, m->int_type);
    put64(p + m->al.long_lv_tag, v ? (1u << 3) : 1u);
    memcpy(p + m->al.long_ob_digit, &v, 4);
    return raddr;
}

/*
 * A coroutine running @code at code unit @unit, in frame state @state,
 * awaiting @awaited (0: nothing on its value stack).
 */
static uint64_t aimg_coro(struct aimg *m, uint64_t code, unsigned unit, int8_t state,
                          uint64_t awaited)
{
    uint8_t *p;
    size_t len = m->al.gen_iframe + m->l->fr_size + 64;
    uint64_t raddr = pyimage_object(m->img, len, &p);
    put64(p + m->al.ob_type, m->coro_type);
    p[m->al.gen_frame_state] = (uint8_t)state;
    uint8_t *fr = p + m->al.gen_iframe;
    uint64_t frame = raddr + m->al.gen_iframe;
    fr[m->l->fr_owner] = PYABI_OWNER_GENERATOR;
    put64(fr + m->l->fr_executable, code | (m->l->tag_mask & 1));
    put64(fr + m->l->fr_instr_ptr, code + m->l->co_adaptive + 2u * unit);
    /* the value stack right after the frame: [awaited, (3.15) a null ref] */
    uint64_t stack = frame + m->l->fr_size;
    put64(p + m->al.gen_iframe + m->l->fr_size, awaited);
    put64(p + m->al.gen_iframe + m->l->fr_size + 8, 1);
    put64(fr + m->al.fr_stackpointer, stack + m->al.await_below_sp);
    return raddr;
}

/* The frame inside coroutine @coro. */
static uint64_t aimg_coro_frame(const struct aimg *m, uint64_t coro)
{
    return coro + m->al.gen_iframe;
}

/* A task named @name (a str object, or any object) running @coro. */
static uint64_t aimg_task(struct aimg *m, uint64_t name, uint64_t coro, uint64_t awaited_by,
                          bool is_set)
{
    uint8_t *p;
    uint64_t raddr = pyimage_object(m->img, m->al.task_size, &p);
    put64(p + m->al.ob_type, m->future_type);
    put64(p + m->al.task_name, name);
    put64(p + m->al.task_coro, coro);
    put64(p + m->al.task_awaited_by, awaited_by);
    p[m->al.task_is_task] = 1;
    p[m->al.task_awaited_by_is_set] = is_set;
    return raddr;
}

static uint8_t *aimg_local(struct aimg *m, uint64_t raddr, size_t len)
{
    /* objects are contiguous from the first one: find it by allocating nothing */
    uint8_t *p;
    uint64_t end = pyimage_object(m->img, 0, &p);
    assert_true(raddr + len <= end);
    return p - (end - raddr);
}

/* Sets a task field after the fact. */
static void aimg_task_set(struct aimg *m, uint64_t task, uint32_t off, uint64_t v, unsigned width)
{
    uint8_t *p = aimg_local(m, task, m->al.task_size);
    if (width == 1)
        p[off] = (uint8_t)v;
    else
        put64(p + off, v);
}

/* Sets the value stack of coroutine @coro to @words (at most 8), its stack pointer above them. */
static void aimg_coro_stack(struct aimg *m, uint64_t coro, const uint64_t *words, size_t n)
{
    uint8_t *p = aimg_local(m, coro, m->al.gen_iframe + m->l->fr_size + 64);
    uint64_t stack = coro + m->al.gen_iframe + m->l->fr_size;
    for (size_t i = 0; i < n; i++)
        put64(p + m->al.gen_iframe + m->l->fr_size + 8 * i, words[i]);
    put64(p + m->al.gen_iframe + m->al.fr_stackpointer, stack + 8 * n);
}

/* The coroutine of @task. */
static uint64_t aimg_task_coro(struct aimg *m, uint64_t task)
{
    uint64_t coro;
    memcpy(&coro, aimg_local(m, task, m->al.task_size) + m->al.task_coro, 8);
    return coro;
}

/* Links @tasks into the thread's task list, in order. */
static void aimg_list(struct aimg *m, const uint64_t *tasks, size_t n)
{
    uint64_t head = pyimage_tstate_raddr(m->img, m->t) + m->al.ts_tasks_head;
    uint8_t *ts = pyimage_tstate(m->img, m->t);
    uint64_t prev_node = head;
    for (size_t i = 0; i <= n; i++) {
        uint64_t node = i < n ? tasks[i] + m->al.task_node : head;
        if (prev_node == head)
            put64(ts + m->al.ts_tasks_head + m->al.llist_next, node);
        else
            aimg_task_set(m, prev_node - m->al.task_node, m->al.task_node + m->al.llist_next, node,
                          8);
        prev_node = node;
    }
}

/* The thread runs @task (0: none) in a running loop. */
static void aimg_running(struct aimg *m, uint64_t task)
{
    uint8_t *ts = pyimage_tstate(m->img, m->t);
    put64(ts + m->al.ts_running_loop, 0x7e571000ull);
    put64(ts + m->al.ts_running_task, task);
}

/* A set object holding @keys (mask 7). */
static uint64_t aimg_set(struct aimg *m, const uint64_t *keys, size_t n)
{
    uint8_t *tp, *sp;
    uint64_t table = pyimage_object(m->img, 8 * PYASYNC_SET_ENTRY, &tp);
    for (size_t i = 0; i < n; i++)
        put64(tp + (2 * i + 1) * PYASYNC_SET_ENTRY, keys[i]); /* slots 1, 3, ... */
    uint64_t set = pyimage_object(m->img, m->al.set_size, &sp);
    put64(sp + m->al.set_used, n);
    put64(sp + m->al.set_mask, 7);
    put64(sp + m->al.set_table, table);
    return set;
}

/* The unwinder and the walker, which has no table yet. */
static void aimg_open(struct aimg *m, enum asyncio_mode mode)
{
    char why[256];
    if (!m->mr) /* else opened by the test, to wrap it */
        assert_int_equal(memread_fake_open(&m->fake, &m->mr), 0);
    pyimage_install(m->img, m->fake, &m->rt);
    assert_int_equal(unwinder_new(m->mr, &m->rt, &m->u, why, sizeof(why)), 0);
    int err = asyncio_new(m->u, m->amr ? m->amr : m->mr, &m->rt, mode, &m->a, why, sizeof(why));
    if (err)
        fail_msg("asyncio_new: %s", why);
    assert_int_equal(asyncio_state(m->a), ASYNCIO_SEARCHING);
}

static void aimg_start(struct aimg *m, enum asyncio_mode mode)
{
    aimg_open(m, mode);
    assert_int_equal(asyncio_attach_table(m->a, m->table, PYASYNC_TABLE_SIZE), 0);
    assert_int_equal(asyncio_state(m->a), ASYNCIO_ACTIVE);
    const char *dir = getenv("PYPROFD_WRITE_ASYNC_SEEDS");
    if (dir) {
        static unsigned seq;
        char path[512];
        snprintf(path, sizeof(path), "%s/synthetic-3.%u-%u", dir, m->minor, seq++);
        FILE *f = fopen(path, "wb");
        assert_non_null(f);
        uint8_t hdr[2] = {(uint8_t)(m->minor - 14), (uint8_t)mode};
        uint64_t words[3] = {m->rt.raddr, m->rt.section_size, m->table};
        assert_int_equal(fwrite(hdr, 1, 2, f), 2);
        assert_int_equal(fwrite(words, 8, 3, f), 3);
        assert_int_equal(pyimage_write_records(m->img, f), 0);
        assert_int_equal(fclose(f), 0);
    }
}

static void aimg_free(struct aimg *m)
{
    asyncio_free(m->a);
    unwinder_free(m->u);
    memread_free(m->amr);
    memread_free(m->mr);
    pyimage_free(m->img);
}

/* One sample of the unwinder and the walker. */
static const struct asyncio_result *aimg_sample(struct aimg *m)
{
    const struct unwind_result *r;
    enum sample_status st;
    assert_int_equal(unwinder_sample(m->u, 0, &r, &st), 0);
    assert_int_equal(r->nthreads, 1);
    const struct asyncio_result *ar;
    assert_int_equal(asyncio_sample(m->a, r, &ar), 0);
    return ar;
}

static void expect_stack(const struct asyncio_sample *s, const char *const *names, size_t n)
{
    char got[2048] = "";
    size_t at = 0;
    for (size_t k = 0; k < s->nframes && at < sizeof(got); k++)
        at += (size_t)snprintf(got + at, sizeof(got) - at, "%s;", s->frames[k].function);
    if (s->nframes != n)
        fail_msg("expected %zu frames, got %zu: %s", n, s->nframes, got);
    for (size_t k = 0; k < n; k++) {
        if (strcmp(s->frames[k].function, names[k]) != 0)
            fail_msg("frame %zu: expected %s: %s", k, names[k], got);
    }
}

/*
 * The server of tests/targets/async_server.py in miniature: main awaits
 * (through scenario) worker-1, which awaits cruncher-1, which runs on the
 * thread: spin <- crunch <- cruncher. Returns the tasks: main, worker,
 * cruncher. The thread runs the @nbelow code objects @below (outermost
 * first) between the event loop's frame, at *@loop_frame, and the cruncher.
 */
static void aimg_server_below(struct aimg *m, uint64_t tasks[3], uint64_t *cruncher_coro,
                              const uint64_t *below, size_t nbelow, uint64_t *loop_frame)
{
    struct pyimage *img = m->img;
    uint64_t c_loop = pyimage_code(img, "run_forever", "base_events.py", 600);
    uint64_t c_main = pyimage_code(img, "main", "app.py", 100);
    uint64_t c_scen = pyimage_code(img, "scenario", "app.py", 90);
    uint64_t c_worker = pyimage_code(img, "worker", "app.py", 50);
    uint64_t c_cruncher = pyimage_code(img, "cruncher", "app.py", 40);
    uint64_t c_crunch = pyimage_code(img, "crunch", "app.py", 30);
    uint64_t c_spin = pyimage_code(img, "spin", "app.py", 20);
    int8_t awaiting = m->s->fs_yield_from, running = m->s->fs_executing;

    uint64_t fut =
        aimg_task(m, 0, 0, 0, false); /* a plain future: awaited object of another type */
    aimg_task_set(m, fut, m->al.task_is_task, 0, 1);
    uint64_t cr = aimg_coro(m, c_cruncher, 3, running, 0);
    uint64_t cruncher = aimg_task(m, aimg_name(m, "cruncher-1", m->str_type), cr, 0, false);
    uint64_t wk = aimg_coro(m, c_worker, 5, awaiting, fut);
    uint64_t worker = aimg_task(m, aimg_name(m, "worker-1", m->str_type), wk, 0, false);
    uint64_t sc = aimg_coro(m, c_scen, 7, awaiting, fut);
    uint64_t mn = aimg_coro(m, c_main, 2, awaiting, sc);
    uint64_t main_task = aimg_task(m, aimg_name(m, "main", m->str_type), mn, 0, false);
    aimg_task_set(m, cruncher, m->al.task_awaited_by, worker, 8);
    aimg_task_set(m, worker, m->al.task_awaited_by, main_task, 8);

    uint64_t lf = pyimage_push(img, m->t, PYABI_OWNER_THREAD, c_loop, 1);
    for (size_t i = 0; i < nbelow; i++)
        (void)pyimage_push(img, m->t, PYABI_OWNER_THREAD, below[i], 1);
    pyimage_link_frame(img, m->t, aimg_coro_frame(m, cr));
    (void)pyimage_push(img, m->t, PYABI_OWNER_THREAD, c_crunch, 4);
    (void)pyimage_push(img, m->t, PYABI_OWNER_THREAD, c_spin, 6);
    aimg_running(m, cruncher);
    tasks[0] = main_task;
    tasks[1] = worker;
    tasks[2] = cruncher;
    if (cruncher_coro)
        *cruncher_coro = cr;
    if (loop_frame)
        *loop_frame = lf;
}

static void aimg_server(struct aimg *m, uint64_t tasks[3], uint64_t *cruncher_coro)
{
    aimg_server_below(m, tasks, cruncher_coro, NULL, 0, NULL);
}

static const char *const server_chain[] = {
    "spin",     "crunch", "cruncher",   "<task cruncher-1>", "worker", "<task worker-1>",
    "scenario", "main",   "<task main>"};

static void test_asyncio__running_task_chain(void **state)
{
    (void)state;
    for (unsigned minor = 14; minor <= 15; minor++) {
        struct aimg m;
        aimg_new(&m, minor);
        uint64_t tasks[3];
        aimg_server(&m, tasks, NULL);
        aimg_list(&m, tasks, 3);
        aimg_start(&m, ASYNCIO_RUNNING);
        const struct asyncio_result *ar = aimg_sample(&m);
        assert_int_equal(ar->nsamples, 1);
        const struct asyncio_sample *s = &ar->samples[0];
        assert_int_equal(s->status, SAMPLE_OK);
        assert_string_equal(s->task_name, "cruncher-1");
        assert_false(s->suspended);
        expect_stack(s, server_chain, PYPROFD_ARRAY_SIZE(server_chain));
        /* suspended frames: the line of the instruction they wait at */
        assert_int_equal(s->frames[4].pos.line, 50 + 1 + 5);
        assert_string_equal(s->frames[4].file, "app.py");
        assert_int_equal(s->frames[7].pos.line, 100 + 1 + 2);
        assert_int_equal(s->frames[3].kind, UNWIND_FRAME_TASK);
        assert_true(s->frames[3].code_id == 0);
        assert_string_equal(s->frames[3].file, "~");
        /* the same again: nothing allocated, same stack */
        size_t in_use = alloc_in_use();
        ar = aimg_sample(&m);
        assert_int_equal(alloc_in_use(), in_use);
        expect_stack(&ar->samples[0], server_chain, PYPROFD_ARRAY_SIZE(server_chain));
        struct asyncio_counts c = asyncio_counts(m.a);
        assert_true(c.logical == 2 && c.torn == 0 && c.outside_task == 0);
        aimg_free(&m);
    }
}

/* Task names are kept to 255 characters (as CPython's tools show them), cut
 * between characters, in the sample's task name and in the <task> marker. */
static void test_asyncio__long_names_keep_255_characters(void **state)
{
    (void)state;
    for (unsigned minor = 14; minor <= 15; minor++) {
        struct aimg m;
        aimg_new(&m, minor);
        uint64_t tasks[3];
        aimg_server(&m, tasks, NULL);
        char ascii[301];
        memset(ascii, 'x', 300);
        ascii[300] = '\0';
        aimg_task_set(&m, tasks[2], m.al.task_name, aimg_name(&m, ascii, m.str_type), 8);
        aimg_task_set(&m, tasks[1], m.al.task_name, aimg_latin1_name(&m, 0xe9, 300), 8);
        aimg_list(&m, tasks, 3);
        aimg_start(&m, ASYNCIO_RUNNING);
        const struct asyncio_result *ar = aimg_sample(&m);
        assert_int_equal(ar->nsamples, 1);
        const struct asyncio_sample *s = &ar->samples[0];
        assert_int_equal(s->status, SAMPLE_OK);
        assert_int_equal(strlen(s->task_name), 255);
        assert_true(strspn(s->task_name, "x") == 255);
        char want[300];
        snprintf(want, sizeof(want), "<task %s>", s->task_name);
        assert_string_equal(s->frames[3].function, want);
        /* 255 times U+00E9, two bytes each: 510 bytes, no half character */
        const char *w = s->frames[5].function;
        assert_int_equal(strlen(w), 6 + 510 + 1);
        assert_true(strncmp(w, "<task \xc3\xa9", 8) == 0);
        assert_string_equal(w + 6 + 508, "\xc3\xa9>");
        aimg_free(&m);
    }
}

static void test_asyncio__all_mode_suspended_leaves(void **state)
{
    (void)state;
    for (unsigned minor = 14; minor <= 15; minor++) {
        struct aimg m;
        aimg_new(&m, minor);
        uint64_t tasks[4];
        aimg_server(&m, tasks, NULL);
        uint64_t c_wait = pyimage_code(m.img, "wait_forever", "app.py", 60);
        uint64_t fut = aimg_task(&m, 0, 0, 0, false);
        aimg_task_set(&m, fut, m.al.task_is_task, 0, 1);
        uint64_t wc = aimg_coro(&m, c_wait, 1, m.s->fs_yield_from, fut);
        tasks[3] = aimg_task(&m, aimg_int(&m, 7), wc, 0, false); /* unnamed: Task-7 */
        aimg_list(&m, tasks, 4);
        aimg_start(&m, ASYNCIO_ALL);
        const struct asyncio_result *ar = aimg_sample(&m);
        assert_int_equal(ar->nsamples, 2);
        expect_stack(&ar->samples[0], server_chain, PYPROFD_ARRAY_SIZE(server_chain));
        const struct asyncio_sample *s = &ar->samples[1];
        assert_true(s->suspended);
        assert_int_equal(s->thread, 0);
        assert_string_equal(s->task_name, "Task-7");
        static const char *const stuck[] = {"wait_forever", "<task Task-7>"};
        expect_stack(s, stuck, 2);
        /* the task table: four tasks, one running, who awaits whom */
        assert_int_equal(ar->ntasks, 4);
        size_t running = 0;
        for (size_t i = 0; i < ar->ntasks; i++) {
            const struct asyncio_task *t = &ar->tasks[i];
            running += t->running;
            if (strcmp(t->name, "cruncher-1") == 0) {
                assert_int_equal(t->nwaiters, 1);
                assert_true(t->waiters[0] == tasks[1]);
                assert_int_equal(t->nframes, 3); /* spin, crunch, cruncher */
            }
            if (strcmp(t->name, "main") == 0)
                assert_int_equal(t->nframes, 2); /* scenario, main */
        }
        assert_int_equal(running, 1);
        aimg_free(&m);
    }
}

static void test_asyncio__awaited_by_set(void **state)
{
    (void)state;
    struct aimg m;
    aimg_new(&m, 15);
    uint64_t tasks[3];
    aimg_server(&m, tasks, NULL);
    /* a second worker awaits cruncher-1 too; the chain goes through the lower address */
    uint64_t c_other = pyimage_code(m.img, "other", "app.py", 70);
    uint64_t fut = aimg_task(&m, 0, 0, 0, false);
    aimg_task_set(&m, fut, m.al.task_is_task, 0, 1);
    uint64_t oc = aimg_coro(&m, c_other, 1, m.s->fs_yield_from, fut);
    uint64_t other = aimg_task(&m, aimg_name(&m, "other", m.str_type), oc, 0, false);
    PYPROFD_ASSERT(other > tasks[1]);
    uint64_t keys[2] = {other, tasks[1]};
    aimg_task_set(&m, tasks[2], m.al.task_awaited_by, aimg_set(&m, keys, 2), 8);
    aimg_task_set(&m, tasks[2], m.al.task_awaited_by_is_set, 1, 1);
    uint64_t all[4] = {tasks[0], tasks[1], tasks[2], other};
    aimg_list(&m, all, 4);
    aimg_start(&m, ASYNCIO_ALL);
    const struct asyncio_result *ar = aimg_sample(&m);
    expect_stack(&ar->samples[0], server_chain, PYPROFD_ARRAY_SIZE(server_chain));
    assert_int_equal(ar->nsamples, 1); /* "other" awaits cruncher-1: not a leaf */
    for (size_t i = 0; i < ar->ntasks; i++) {
        if (strcmp(ar->tasks[i].name, "cruncher-1") == 0)
            assert_int_equal(ar->tasks[i].nwaiters, 2);
    }
    aimg_free(&m);
}

static void test_asyncio__between_steps_keeps_thread_stack(void **state)
{
    (void)state;
    struct aimg m;
    aimg_new(&m, 14);
    uint64_t tasks[3];
    aimg_server(&m, tasks, NULL);
    /* the running task is worker-1, whose coroutine is not on the stack */
    aimg_running(&m, tasks[1]);
    aimg_start(&m, ASYNCIO_RUNNING);
    const struct asyncio_result *ar = aimg_sample(&m);
    assert_int_equal(ar->nsamples, 1);
    assert_null(ar->samples[0].task_name);
    assert_int_equal(ar->samples[0].status, SAMPLE_OK);
    static const char *const own[] = {"spin", "crunch", "cruncher", "run_forever"};
    expect_stack(&ar->samples[0], own, 4);
    assert_int_equal(asyncio_counts(m.a).outside_task, 1);
    aimg_free(&m);
}

static void test_asyncio__garbage_is_torn_and_bounded(void **state)
{
    (void)state;
    for (int kind = 0; kind < 5; kind++) {
        struct aimg m;
        aimg_new(&m, 15);
        uint64_t tasks[3];
        aimg_server(&m, tasks, NULL);
        switch (kind) {
        case 0: /* main awaited by worker: a loop */
            aimg_task_set(&m, tasks[0], m.al.task_awaited_by, tasks[1], 8);
            break;
        case 1: /* impossible flag */
            aimg_task_set(&m, tasks[1], m.al.task_is_task, 7, 1);
            break;
        case 2: /* a name that is no name */
            aimg_task_set(&m, tasks[1], m.al.task_name, aimg_name(&m, "x", m.odd_type), 8);
            break;
        case 3: /* a waiter pointer into nowhere */
            aimg_task_set(&m, tasks[1], m.al.task_awaited_by, 0x7770000000ull, 8);
            break;
        case 4: { /* the awaiting task runs by now: read at two moments */
            uint64_t coro;
            memcpy(&coro, aimg_local(&m, tasks[1], m.al.task_size) + m.al.task_coro, 8);
            aimg_local(&m, coro, m.al.gen_size)[m.al.gen_frame_state] = (uint8_t)m.s->fs_executing;
            break;
        }
        default:
            break;
        }
        aimg_start(&m, ASYNCIO_ALL);
        const struct asyncio_result *ar = aimg_sample(&m);
        assert_true(ar->nsamples >= 1);
        if (ar->samples[0].status != SAMPLE_ASYNC_TORN)
            fail_msg("garbage %d: status %s, %zu frames", kind, status_name(ar->samples[0].status),
                     ar->samples[0].nframes);
        assert_int_equal(ar->samples[0].nframes, 0);
        assert_true(asyncio_counts(m.a).torn >= 1);
        aimg_free(&m);
    }
}

/*
 * A reader that changes the image once, right after the first read that
 * covers address @watch: the target moving on between two reads of one
 * sample.
 */
struct mover {
    struct memread *inner;
    struct memread_fake *fake;
    uint64_t watch, at;
    uint8_t bytes[8];
    bool fired;
};

static int mover_readv(void *priv, const struct memread_iov *iov, size_t n)
{
    struct mover *mv = priv;
    int err = memread_readv(mv->inner, iov, n);
    for (size_t i = 0; i < n && !mv->fired; i++) {
        if (iov[i].raddr <= mv->watch && mv->watch - iov[i].raddr < iov[i].len) {
            mv->fired = true;
            assert_int_equal(memread_fake_poke(mv->fake, mv->at, mv->bytes, sizeof(mv->bytes)), 0);
        }
    }
    return err;
}

static const struct memread_ops mover_ops = {.name = "mover", .readv = mover_readv};

/* An object of a type no chain follows; immortal (like None) or not. */
static uint64_t aimg_other(struct aimg *m, bool immortal)
{
    uint8_t *p;
    uint64_t raddr = pyimage_object(m->img, 64, &p);
    uint32_t refcnt = immortal ? 0xc0000000u : 3u;
    memcpy(p, &refcnt, 4);
    put64(p + m->al.ob_type, m->odd_type);
    return raddr;
}

/*
 * The wrong stack test_async_live caught (tasks churning): main's coroutine
 * copied in the middle of a move, its state saying "awaiting" and its stack
 * pointer a moment later, above an object that is no coroutine. The chain
 * then ended at main, without scenario, and nothing said it was torn. The
 * verification read sees the stack pointer move: torn; the next sample, the
 * image unchanged, has the whole chain.
 */
static void test_asyncio__chain_read_at_two_moments_is_torn(void **state)
{
    (void)state;
    for (unsigned minor = 14; minor <= 15; minor++) {
        struct aimg m;
        aimg_new(&m, minor);
        uint64_t tasks[3];
        aimg_server(&m, tasks, NULL);
        uint64_t mn = aimg_task_coro(&m, tasks[0]);
        uint64_t sc;
        memcpy(&sc, aimg_local(&m, mn, m.al.gen_size) + m.al.gen_iframe + m.l->fr_size, 8);
        uint64_t stack = mn + m.al.gen_iframe + m.l->fr_size;
        /* the torn copy: [scenario, null, other, (3.15) null], the slot below
         * the stack pointer holding the other object */
        uint64_t words[4] = {sc, 1, aimg_other(&m, false), 1};
        aimg_coro_stack(&m, mn, words, 2 + m.al.await_below_sp / 8);
        /* the stack pointer as it is once the copy is over */
        struct mover mv = {.watch = mn, .at = mn + m.al.gen_iframe + m.al.fr_stackpointer};
        put64(mv.bytes, stack + m.al.await_below_sp);
        assert_int_equal(memread_fake_open(&m.fake, &m.mr), 0);
        mv.inner = m.mr;
        mv.fake = m.fake;
        assert_int_equal(memread_new_custom(&mover_ops, &mv, &m.amr), 0);
        aimg_start(&m, ASYNCIO_RUNNING);

        const struct asyncio_result *ar = aimg_sample(&m);
        assert_true(mv.fired);
        assert_int_equal(ar->nsamples, 1);
        /* before the fix: OK, 8 frames, ...;worker;<task worker-1>;main;<task main> */
        if (ar->samples[0].status != SAMPLE_ASYNC_TORN)
            fail_msg("3.%u: a chain read at two moments: status %s, %zu frames", minor,
                     status_name(ar->samples[0].status), ar->samples[0].nframes);
        assert_int_equal(ar->samples[0].nframes, 0);
        assert_int_equal(asyncio_counts(m.a).torn, 1);
        ar = aimg_sample(&m);
        assert_int_equal(ar->samples[0].status, SAMPLE_OK);
        expect_stack(&ar->samples[0], server_chain, PYPROFD_ARRAY_SIZE(server_chain));
        aimg_free(&m);
    }
}

/*
 * A coroutine being resumed: 3.14 pushes the value sent to it (None, from a
 * task's step) before its state says that it runs, so for a moment it looks
 * suspended in await with None as the awaited object; 3.15 keeps a null
 * reference above the awaited object, and one that is not null is a stack
 * caught moving. Both are torn, even when the copy is consistent.
 */
static void test_asyncio__resumed_coroutine_is_torn(void **state)
{
    (void)state;
    for (int kind = 0; kind < 3; kind++) {
        struct aimg m;
        aimg_new(&m, kind == 0 ? 14 : 15);
        uint64_t tasks[3];
        aimg_server(&m, tasks, NULL);
        uint64_t mn = aimg_task_coro(&m, tasks[0]);
        uint64_t sc;
        memcpy(&sc, aimg_local(&m, mn, m.al.gen_size) + m.al.gen_iframe + m.l->fr_size, 8);
        uint64_t none = aimg_other(&m, true);
        if (kind == 0) { /* 3.14: [scenario, None] */
            uint64_t words[2] = {sc, none};
            aimg_coro_stack(&m, mn, words, 2);
        } else if (kind == 1) { /* 3.15: [scenario, null, None] */
            uint64_t words[3] = {sc, 1, none};
            aimg_coro_stack(&m, mn, words, 3);
        } else { /* 3.15: [scenario, not null] */
            uint64_t words[2] = {sc, aimg_other(&m, false)};
            aimg_coro_stack(&m, mn, words, 2);
        }
        aimg_start(&m, ASYNCIO_RUNNING);
        const struct asyncio_result *ar = aimg_sample(&m);
        assert_int_equal(ar->nsamples, 1);
        if (ar->samples[0].status != SAMPLE_ASYNC_TORN)
            fail_msg("kind %d: status %s, %zu frames", kind, status_name(ar->samples[0].status),
                     ar->samples[0].nframes);
        assert_int_equal(asyncio_counts(m.a).torn, 1);
        aimg_free(&m);
    }
}

/* The thread's own stack, as a walker without a usable table gives it. */
static void expect_plain(struct aimg *m)
{
    const struct asyncio_result *ar = aimg_sample(m);
    assert_int_equal(ar->nsamples, 1);
    assert_null(ar->samples[0].task_name);
    assert_int_equal(ar->samples[0].status, SAMPLE_OK);
    assert_string_equal(ar->samples[0].frames[0].function, "spin");
    assert_int_equal(ar->ntasks, 0);
}

static void test_asyncio__table_states(void **state)
{
    (void)state;
    uint64_t tasks[3];
    struct aimg m;
    /* searching: plain stacks until the table is attached, logical ones after */
    aimg_new(&m, 14);
    aimg_server(&m, tasks, NULL);
    aimg_open(&m, ASYNCIO_RUNNING);
    expect_plain(&m);
    assert_null(asyncio_layout(m.a));
    assert_string_equal(asyncio_why(m.a), "");
    assert_int_equal(asyncio_attach_table(m.a, m.table, PYASYNC_TABLE_SIZE), 0);
    assert_non_null(asyncio_layout(m.a));
    assert_string_equal(aimg_sample(&m)->samples[0].task_name, "cruncher-1");
    /* attached once: a second table, or a late refusal, changes nothing */
    assert_int_equal(asyncio_attach_table(m.a, m.table, PYASYNC_TABLE_SIZE), -EALREADY);
    asyncio_refuse_table(m.a, "too late");
    assert_int_equal(asyncio_state(m.a), ASYNCIO_ACTIVE);
    aimg_free(&m);

    /* a section smaller than the table */
    aimg_new(&m, 15);
    aimg_server(&m, tasks, NULL);
    aimg_open(&m, ASYNCIO_RUNNING);
    assert_int_equal(asyncio_attach_table(m.a, m.table, PYASYNC_TABLE_SIZE - 8), -EPROTO);
    assert_int_equal(asyncio_state(m.a), ASYNCIO_INVALID);
    assert_string_equal(asyncio_why(m.a), "asyncio offsets: .AsyncioDebug (96 bytes) is smaller "
                                          "than the table (104 bytes)");
    expect_plain(&m);
    assert_int_equal(asyncio_attach_table(m.a, m.table, PYASYNC_TABLE_SIZE), -EALREADY);
    aimg_free(&m);

    /* a table that cannot be read */
    aimg_new(&m, 15);
    aimg_server(&m, tasks, NULL);
    aimg_open(&m, ASYNCIO_RUNNING);
    assert_int_equal(asyncio_attach_table(m.a, 0x10, PYASYNC_TABLE_SIZE), -EPROTO);
    assert_non_null(strstr(asyncio_why(m.a), "cannot read the asyncio debug table: "));
    aimg_free(&m);

    /* discovery found it malformed */
    aimg_new(&m, 14);
    aimg_server(&m, tasks, NULL);
    aimg_open(&m, ASYNCIO_ALL);
    /* its words quote a path the process maps: any bytes, kept as valid UTF-8 */
    asyncio_refuse_table(m.a, "cannot place .AsyncioDebug of '/x\xff/_asyncio.so' in memory");
    assert_int_equal(asyncio_state(m.a), ASYNCIO_INVALID);
    assert_string_equal(asyncio_why(m.a),
                        "cannot place .AsyncioDebug of '/x\xef\xbf\xbd/_asyncio.so' in memory");
    expect_plain(&m);
    assert_int_equal(asyncio_attach_table(m.a, m.table, PYASYNC_TABLE_SIZE), -EALREADY);
    aimg_free(&m);
}

/* --- the unwinder's code cache, shared ---------------------------------- */

#define BIG_LINETABLE 250000u       /* bytes: 16 of them fill the 4 MiB code arena */
#define BIG_BYTES     0x70000000ull /* where the bytes object holding it is */
#define BIG_BELOW     15u           /* code objects on the thread's stack in sample 1 */

/* Makes the code object at @code use the big line table. */
static void big_linetable(struct aimg *m, uint64_t code)
{
    assert_int_equal(
        memread_fake_poke(m->fake, code + m->l->co_linetable, &(uint64_t){BIG_BYTES}, 8), 0);
}

/* Makes the coroutine @coro run @code (at code unit 2). */
static void coro_runs(struct aimg *m, uint64_t coro, uint64_t code)
{
    uint64_t frame = aimg_coro_frame(m, coro);
    uint64_t exe = code | (m->l->tag_mask & 1), ip = code + m->l->co_adaptive + 4;
    assert_int_equal(memread_fake_poke(m->fake, frame + m->l->fr_executable, &exe, 8), 0);
    assert_int_equal(memread_fake_poke(m->fake, frame + m->l->fr_instr_ptr, &ip, 8), 0);
}

/*
 * The walker reads code objects into the unwinder's cache. When one of its
 * reads fills the cache, the cache is cleared, and with it the names of the
 * thread's stack the unwinder had just resolved: they must be resolved again
 * (or the sample dropped), never reported from the reused memory.
 */
static void test_asyncio__shared_code_cache_filled_by_the_walker(void **state)
{
    (void)state;
    struct aimg m;
    uint64_t tasks[3], cr, loop_frame, below[BIG_BELOW];
    aimg_new(&m, 14);
    for (size_t i = 0; i < BIG_BELOW; i++) {
        char name[32];
        snprintf(name, sizeof(name), "below_%zu", i);
        below[i] = pyimage_code(m.img, name, "big.py", 1000);
    }
    uint64_t c_worker2 = pyimage_code(m.img, "worker_v2", "app.py", 50);
    uint64_t c_main2 = pyimage_code(m.img, "main_v2", "app.py", 100);
    aimg_server_below(&m, tasks, &cr, below, BIG_BELOW, &loop_frame);
    aimg_start(&m, ASYNCIO_RUNNING);
    /* a valid line table of BIG_LINETABLE bytes (unit i: line first + 1 + i) */
    size_t len = m.l->bytes_ob_sval + BIG_LINETABLE + 1;
    uint8_t *bytes = alloc_calloc(1, len);
    assert_non_null(bytes);
    put64(bytes + m.l->bytes_ob_size, BIG_LINETABLE);
    for (size_t i = 0; i + 3 <= BIG_LINETABLE; i += 3) {
        bytes[m.l->bytes_ob_sval + i] = (uint8_t)(0x80 | (11 << 3));
        bytes[m.l->bytes_ob_sval + i + 2] = 4;
    }
    assert_int_equal(memread_fake_add(m.fake, BIG_BYTES, bytes, len), 0);
    alloc_free(bytes);
    for (size_t i = 0; i < BIG_BELOW; i++)
        big_linetable(&m, below[i]);
    big_linetable(&m, c_worker2);
    big_linetable(&m, c_main2);

    /* sample 1 fills 15 / 16 of the arena with the frames below the cruncher */
    const struct asyncio_result *ar = aimg_sample(&m);
    assert_int_equal(ar->samples[0].status, SAMPLE_OK);
    assert_int_equal(ar->samples[0].nframes, PYPROFD_ARRAY_SIZE(server_chain));

    /* sample 2: they are gone from the stack, and the suspended worker and
     * main run new code objects, whose reads clear the cache */
    uint64_t link = aimg_coro_frame(&m, cr) + m.l->fr_previous, below_top;
    assert_int_equal(memread_read(m.mr, link, &below_top, 8), 0);
    assert_int_equal(memread_fake_poke(m.fake, link, &loop_frame, 8), 0);
    coro_runs(&m, aimg_task_coro(&m, tasks[1]), c_worker2);
    coro_runs(&m, aimg_task_coro(&m, tasks[0]), c_main2);
    const struct unwind_result *r;
    enum sample_status st;
    assert_int_equal(unwinder_sample(m.u, 0, &r, &st), 0);
    uint64_t key = r->threads[0].stack_key, epoch = unwinder_code_epoch(m.u);
    assert_int_equal(asyncio_sample(m.a, r, &ar), 0);
    assert_true(unwinder_code_epoch(m.u) != epoch); /* the walker did fill it */
    assert_true(r->threads[0].stack_key != key);    /* and the thread's stack was resolved again */
    static const char *const chain2[] = {
        "spin",     "crunch",  "cruncher",   "<task cruncher-1>", "worker_v2", "<task worker-1>",
        "scenario", "main_v2", "<task main>"};
    expect_stack(&ar->samples[0], chain2, PYPROFD_ARRAY_SIZE(chain2));
    assert_string_equal(ar->samples[0].frames[0].file, "app.py");
    assert_int_equal(ar->samples[0].frames[4].pos.line, 50 + 1 + 2);
    assert_string_equal(r->threads[0].frames[3].function, "run_forever");

    /* sample 3: the frames below are back: with the new chain, this
     * sample's code objects do not fit the cache together. No names from
     * reused memory: the sample is dropped, and counted */
    assert_int_equal(memread_fake_poke(m.fake, link, &below_top, 8), 0);
    ar = aimg_sample(&m);
    assert_int_equal(ar->nsamples, 1);
    assert_int_equal(ar->samples[0].status, SAMPLE_NO_MEMORY);
    assert_int_equal(ar->samples[0].nframes, 0);
    aimg_free(&m);
}

/* --- a sample reads the target's memory, nothing else ------------------- */

#if defined(__x86_64__)
#define NOIO_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NOIO_ARCH AUDIT_ARCH_AARCH64
#endif

static volatile sig_atomic_t noio_trapped = -1; /* the first system call refused */

static void noio_on_sigsys(int sig, siginfo_t *si, void *ctx)
{
    (void)sig;
    (void)ctx;
    if (noio_trapped < 0)
        noio_trapped = si->si_syscall;
}

/*
 * Refuses (SIGSYS, caught: noio_trapped) every system call that opens, reads
 * or looks up a file. Returns 0, or -1 when seccomp is not available.
 */
static int noio_install(void)
{
#ifdef NOIO_ARCH
    static const int banned[] = {
#ifdef __NR_open
        __NR_open,
#endif
#ifdef __NR_stat
        __NR_stat,       __NR_lstat,
#endif
#ifdef __NR_readlink
        __NR_readlink,
#endif
        __NR_openat,     __NR_read,       __NR_pread64,    __NR_readv, __NR_preadv, __NR_preadv2,
        __NR_getdents64, __NR_readlinkat, __NR_newfstatat, __NR_statx, __NR_fstat,
    };
    struct sock_filter prog[8 + 2 * PYPROFD_ARRAY_SIZE(banned)];
    size_t n = 0;
    prog[n++] =
        (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
    prog[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NOIO_ARCH, 1, 0);
    prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP);
    prog[n++] =
        (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(banned); i++) {
        prog[n++] =
            (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)banned[i], 0, 1);
        prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP);
    }
    prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    struct sock_fprog fprog = {.len = (unsigned short)n, .filter = prog};
    struct sigaction sa = {.sa_sigaction = noio_on_sigsys, .sa_flags = SA_SIGINFO};
    if (sigaction(SIGSYS, &sa, NULL) || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog, 0, 0))
        return -1;
    return 0;
#else
    return -1;
#endif
}

/* In the child: the walker's life from SEARCHING to ACTIVE, sampled under
 * the filter with every allocation failing. Returns an exit status. */
static int noio_child(struct aimg *m)
{
    const struct unwind_result *r;
    const struct asyncio_result *ar;
    enum sample_status st;
    if (noio_install())
        return 77;
    (void)alloc_fail_nth(1); /* the next allocation fails, and they are counted */
    if (unwinder_sample(m->u, 0, &r, &st) || asyncio_sample(m->a, r, &ar) ||
        ar->samples[0].task_name)
        return 1;
    if (asyncio_attach_table(m->a, m->table, PYASYNC_TABLE_SIZE))
        return 2;
    for (int i = 0; i < 2; i++) { /* cold, then warm code cache */
        if (unwinder_sample(m->u, 0, &r, &st) || asyncio_sample(m->a, r, &ar) ||
            ar->nsamples != 2 || ar->samples[0].nframes != PYPROFD_ARRAY_SIZE(server_chain) ||
            strcmp(ar->samples[0].frames[4].function, "worker") != 0 ||
            strcmp(ar->samples[1].task_name, "Task-7") != 0)
            return 3;
    }
    uint64_t allocations = alloc_fail_nth(0);
    if (noio_trapped >= 0) {
        fprintf(stderr, "system call %d refused\n", (int)noio_trapped);
        return 4;
    }
    if (allocations) {
        fprintf(stderr, "%" PRIu64 " allocations\n", allocations);
        return 5;
    }
    return 0;
}

/*
 * asyncio_sample() (and attaching the table) reads the target's memory and
 * nothing else: no file is opened or read, nothing is allocated. Checked in a
 * child under a seccomp filter that traps every file system call, with the
 * allocator counting (and failing) allocations.
 */
static void test_asyncio__sample_does_no_io_and_no_allocation(void **state)
{
    (void)state;
    struct aimg m;
    uint64_t tasks[4];
    aimg_new(&m, 14);
    aimg_server(&m, tasks, NULL);
    uint64_t c_wait = pyimage_code(m.img, "wait_forever", "app.py", 60);
    uint64_t fut = aimg_task(&m, 0, 0, 0, false);
    aimg_task_set(&m, fut, m.al.task_is_task, 0, 1);
    uint64_t wc = aimg_coro(&m, c_wait, 1, m.s->fs_yield_from, fut);
    tasks[3] = aimg_task(&m, aimg_int(&m, 7), wc, 0, false);
    aimg_list(&m, tasks, 4);
    aimg_open(&m, ASYNCIO_ALL);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(noio_child(&m));
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    aimg_free(&m);
    assert_true(WIFEXITED(status));
    if (WEXITSTATUS(status) == 77)
        skip(); /* no seccomp here */
    assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_asyncio__unavailable_on_3_13(void **state)
{
    (void)state;
    struct pyimage *img = pyimage_new(13);
    (void)pyimage_thread(img, 1);
    struct memread_fake *fake;
    struct memread *mr;
    struct pyruntime rt;
    struct unwinder *u;
    struct asyncio *a = NULL;
    char why[256];
    assert_int_equal(memread_fake_open(&fake, &mr), 0);
    pyimage_install(img, fake, &rt);
    assert_int_equal(unwinder_new(mr, &rt, &u, why, sizeof(why)), 0);
    assert_int_equal(asyncio_new(u, mr, &rt, ASYNCIO_RUNNING, &a, why, sizeof(why)), -ENOTSUP);
    assert_null(a);
    assert_non_null(strstr(why, "has no asyncio debug table"));
    unwinder_free(u);
    memread_free(mr);
    pyimage_free(img);
}

static void test_asyncio__mode_names(void **state)
{
    (void)state;
    enum asyncio_mode m;
    assert_int_equal(asyncio_mode_parse("all", &m), 0);
    assert_int_equal(m, ASYNCIO_ALL);
    assert_int_equal(asyncio_mode_parse("running", &m), 0);
    assert_int_equal(m, ASYNCIO_RUNNING);
    assert_int_equal(asyncio_mode_parse("some", &m), -EINVAL);
    assert_string_equal(asyncio_mode_name(ASYNCIO_ALL), "all");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_asyncio__running_task_chain),
        cmocka_unit_test(test_asyncio__long_names_keep_255_characters),
        cmocka_unit_test(test_asyncio__all_mode_suspended_leaves),
        cmocka_unit_test(test_asyncio__awaited_by_set),
        cmocka_unit_test(test_asyncio__between_steps_keeps_thread_stack),
        cmocka_unit_test(test_asyncio__garbage_is_torn_and_bounded),
        cmocka_unit_test(test_asyncio__chain_read_at_two_moments_is_torn),
        cmocka_unit_test(test_asyncio__resumed_coroutine_is_torn),
        cmocka_unit_test(test_asyncio__table_states),
        cmocka_unit_test(test_asyncio__shared_code_cache_filled_by_the_walker),
        cmocka_unit_test(test_asyncio__sample_does_no_io_and_no_allocation),
        cmocka_unit_test(test_asyncio__unavailable_on_3_13),
        cmocka_unit_test(test_asyncio__mode_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
