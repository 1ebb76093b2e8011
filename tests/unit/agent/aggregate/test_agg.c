/* SPDX-License-Identifier: MIT */
/* Tests for agent/aggregate/agg.c: interning, coalescing, caps, the
 * location memo (several processes, reused code addresses, new windows). */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include "aggregate/agg.h"
#include "base/alloc.h"
#include "memread_fake.h"
#include "pprof/collapsed.h"
#include "pyimage.h"
#include "unwind/unwind.h"

static struct unwind_frame frame(const char *fn, const char *file, int32_t first, int32_t line,
                                 uint64_t code)
{
    return (struct unwind_frame){.kind = UNWIND_FRAME_PYTHON,
                                 .function = fn,
                                 .file = file,
                                 .first_line = first,
                                 .code_raddr = code,
                                 .pos = {line, line, 4, 9}};
}

static void test_agg__interns_and_counts(void **state)
{
    (void)state;
    struct agg *a;
    assert_int_equal(agg_new(NULL, &a), 0);
    struct unwind_frame s1[] = {frame("Klass.leaf", "/a.py", 10, 12, 0x100),
                                frame("main", "/a.py", 1, 3, 0x200)};
    struct unwind_frame s2[] = {frame("other", "/b.py", 5, 6, 0x300),
                                frame("main", "/a.py", 1, 3, 0x200)};
    assert_int_equal(agg_add_in(a, s1, 2, 7, 0, "MainThread", NULL, 1, 1000), 0);
    assert_int_equal(agg_add_in(a, s1, 2, 7, 0, "MainThread", NULL, 1, 1000), 0); /* coalesced */
    assert_int_equal(agg_add_in(a, s2, 2, 7, 0, "MainThread", NULL, 1, 1000), 0);
    assert_int_equal(agg_add_in(a, s1, 2, 7, 0, "MainThread", NULL, 1, 1000), 0); /* found again */
    assert_int_equal(agg_add_in(a, s1, 2, 8, 0, "worker", "task-1", 1, 1000), 0);
    struct agg_stats st = agg_stats(a);
    assert_int_equal(st.added, 5);
    assert_int_equal(st.coalesced, 1);
    assert_int_equal(st.dropped, 0);
    assert_int_equal(agg_sample_count(a), 3);
    assert_int_equal(agg_function_count(a), 3);
    assert_int_equal(agg_location_count(a), 3);
    assert_string_equal(agg_string(a, 0), "");
    const struct agg_sample *first = agg_sample(a, 0);
    assert_int_equal(first->count, 3);
    assert_int_equal(first->nanos, 3000);
    assert_int_equal(first->nlocations, 2);
    const struct agg_location *leaf = agg_location(a, first->locations[0]);
    const struct agg_function *fn = agg_function(a, leaf->function);
    assert_string_equal(agg_string(a, fn->name), "Klass.leaf");
    assert_string_equal(agg_string(a, fn->system_name), "leaf");
    assert_string_equal(agg_string(a, fn->filename), "/a.py");
    assert_int_equal(fn->start_line, 10);
    assert_int_equal(leaf->line, 12);
    assert_int_equal(leaf->column, 5); /* 1-based */
    assert_string_equal(agg_string(a, first->thread_name), "MainThread");
    assert_int_equal(first->task_name, 0);
    const struct agg_sample *task = agg_sample(a, 2);
    assert_string_equal(agg_string(a, task->task_name), "task-1");
    assert_int_equal(task->thread_id, 8);
    /* the same stack of another thread shares locations */
    assert_int_equal(task->locations[0], first->locations[0]);

    /* folded output, root first; the same stack of two threads is one line */
    char buf[1024] = "";
    FILE *f = fmemopen(buf, sizeof(buf), "w");
    assert_int_equal(collapsed_write(a, f), 0);
    fclose(f);
    assert_string_equal(buf, "main (/a.py:3);Klass.leaf (/a.py:12) 4\n"
                             "main (/a.py:3);other (/b.py:6) 1\n");
    agg_reset(a);
    assert_int_equal(agg_sample_count(a), 0);
    assert_int_equal(agg_string_count(a), 1);
    agg_free(a);
}

/* --opcodes: a frame's instruction is a marker location just below it, at
 * its position; stacks that differ in an instruction only are two samples. */
static void test_agg__opcode_markers(void **state)
{
    (void)state;
    struct agg *a;
    assert_int_equal(agg_new(NULL, &a), 0);
    struct unwind_frame s[] = {frame("leaf", "/a.py", 10, 12, 0x100),
                               frame("main", "/a.py", 1, 3, 0x200)};
    s[0].opname = "LOAD_ATTR_INSTANCE_VALUE";
    s[0].opbase = "LOAD_ATTR";
    s[0].opmarker = "<op LOAD_ATTR_INSTANCE_VALUE (LOAD_ATTR)>";
    s[1].opname = s[1].opbase = "CALL";
    s[1].opmarker = "<op CALL>";
    assert_int_equal(agg_add_in(a, s, 2, 7, 0, "MainThread", NULL, 1, 10), 0);
    s[0].opmarker = "<op LOAD_ATTR>";
    assert_int_equal(agg_add_in(a, s, 2, 7, 0, "MainThread", NULL, 1, 10), 0);
    assert_int_equal(agg_sample_count(a), 2);
    const struct agg_sample *first = agg_sample(a, 0);
    assert_int_equal(first->nlocations, 4);
    static const char *const want[] = {"<op LOAD_ATTR_INSTANCE_VALUE (LOAD_ATTR)>", "leaf",
                                       "<op CALL>", "main"};
    static const int64_t lines[] = {12, 12, 3, 3};
    for (size_t i = 0; i < 4; i++) {
        const struct agg_location *l = agg_location(a, first->locations[i]);
        assert_string_equal(agg_string(a, agg_function(a, l->function)->name), want[i]);
        assert_int_equal(l->line, lines[i]);
    }
    const struct agg_sample *second = agg_sample(a, 1);
    assert_string_equal(
        agg_string(a, agg_function(a, agg_location(a, second->locations[0])->function)->name),
        "<op LOAD_ATTR>");
    assert_int_equal(second->locations[1], first->locations[1]); /* the frame itself is shared */
    agg_free(a);
}

static void test_agg__repeat_counts_the_last_stack(void **state)
{
    (void)state;
    struct agg *a;
    assert_int_equal(agg_new(NULL, &a), 0);
    struct unwind_frame f[] = {frame("leaf", "/a.py", 1, 2, 0x10),
                               frame("main", "/a.py", 9, 9, 0x20)};
    assert_int_equal(agg_repeat_in(a, 7, 0, "t", 1, 10), -ENOENT); /* nothing yet */
    assert_int_equal(agg_add_in(a, f, 2, 7, 0, "t", NULL, 1, 10), 0);
    assert_int_equal(agg_repeat_in(a, 7, 0, "t", 1, 10), 0);
    assert_int_equal(agg_repeat_in(a, 7, 0, "renamed", 1, 10), -ENOENT);
    assert_int_equal(agg_repeat_in(a, 8, 0, "t", 1, 10), -ENOENT);
    assert_int_equal(agg_sample_count(a), 1);
    assert_int_equal(agg_sample(a, 0)->count, 2);
    assert_int_equal(agg_sample(a, 0)->nanos, 20);
    agg_reset(a);
    assert_int_equal(agg_repeat_in(a, 7, 0, "t", 1, 10), -ENOENT); /* a new window */
    agg_free(a);
}

static void test_agg__caps_drop_and_count(void **state)
{
    (void)state;
    struct agg_limits lim = {.samples = 2, .locations = 3};
    struct agg *a;
    assert_int_equal(agg_new(&lim, &a), 0);
    char names[10][8];
    for (int i = 0; i < 10; i++) {
        snprintf(names[i], sizeof(names[i]), "f%d", i);
        struct unwind_frame f = frame(names[i], "/x.py", 1, 2, 0x1000u + (unsigned)i);
        int err = agg_add_in(a, &f, 1, 1, 0, "t", NULL, 1, 10);
        assert_int_equal(err, i < 2 ? 0 : -E2BIG);
    }
    struct agg_stats st = agg_stats(a);
    assert_int_equal(st.added, 2);
    assert_int_equal(st.dropped, 8);
    assert_int_equal(agg_sample_count(a), 2);
    assert_true(agg_location_count(a) <= 3);
    agg_free(a);
    agg_free(NULL);
}

static void test_agg__empty_names_are_replaced(void **state)
{
    (void)state;
    struct agg *a;
    assert_int_equal(agg_new(NULL, &a), 0);
    struct unwind_frame f = frame("f", "/x.py", 1, 2, 0x10);
    assert_int_equal(agg_add_in(a, &f, 1, 1, 0, "", "", 1, 10), 0);
    const struct agg_sample *s = agg_sample(a, 0);
    assert_string_equal(agg_string(a, s->thread_name), "unknown");
    assert_int_equal(s->task_name, 0);
    agg_free(a);
}

/* The function name of location @loc. */
static const char *loc_name(const struct agg *a, uint32_t loc)
{
    return agg_string(a, agg_function(a, agg_location(a, loc)->function)->name);
}

/* A fake CPython 3.15 process whose main thread runs <module> -> @leaf. */
struct proc {
    struct pyimage *img;
    struct memread_fake *fake;
    struct memread *mr;
    struct unwinder *u;
    uint64_t leaf_code;
    uint64_t spare_name; /* a string object holding @spare */
};

static void proc_open(struct proc *p, const char *leaf, const char *spare)
{
    p->img = pyimage_new(15);
    assert_int_equal(memread_fake_open(&p->fake, &p->mr), 0);
    unsigned t = pyimage_thread(p->img, 1);
    uint64_t mod = pyimage_code(p->img, "<module>", "/app/main.py", 1);
    p->leaf_code = pyimage_code(p->img, leaf, "/app/main.py", 10);
    p->spare_name = pyimage_str(p->img, spare);
    pyimage_push(p->img, t, PYABI_OWNER_INTERPRETER, 0, 0);
    pyimage_push(p->img, t, PYABI_OWNER_THREAD, mod, 2);
    pyimage_push(p->img, t, PYABI_OWNER_THREAD, p->leaf_code, 3);
    struct pyruntime rt;
    pyimage_install(p->img, p->fake, &rt);
    char why[256];
    if (unwinder_new(p->mr, &rt, &p->u, why, sizeof(why)))
        fail_msg("unwinder_new: %s", why);
}

static void proc_close(struct proc *p)
{
    unwinder_free(p->u);
    memread_free(p->mr);
    pyimage_free(p->img);
}

/* Samples @p and adds its main thread to @a, always as thread 1. */
static void proc_add(struct proc *p, struct agg *a)
{
    const struct unwind_result *r;
    enum sample_status st;
    assert_int_equal(unwinder_sample(p->u, 0, &r, &st), 0);
    assert_int_equal(r->nthreads, 1);
    const struct unwind_thread *t = &r->threads[0];
    assert_int_equal(t->nframes, 2);
    assert_int_not_equal(t->frames[0].code_id, 0);
    assert_int_equal(agg_add_in(a, t->frames, t->nframes, 1, 0, "main", NULL, 1, 10), 0);
}

static void test_agg__memo_keeps_processes_and_reused_code_apart(void **state)
{
    (void)state;
    /* two processes built alike: the same code address holds "alpha" in one
     * and "gamma" in the other */
    struct proc pa, pb;
    proc_open(&pa, "alpha", "omega");
    proc_open(&pb, "gamma", "sigma");
    assert_int_equal(pa.leaf_code, pb.leaf_code);
    struct agg *a;
    assert_int_equal(agg_new(NULL, &a), 0);
    for (int round = 0; round < 3; round++) {
        proc_add(&pa, a);
        proc_add(&pb, a);
    }
    /* one window, one thread id, two stacks: each named after its process */
    assert_int_equal(agg_sample_count(a), 2);
    assert_string_equal(loc_name(a, agg_sample(a, 0)->locations[0]), "alpha");
    assert_string_equal(loc_name(a, agg_sample(a, 1)->locations[0]), "gamma");
    assert_int_equal(agg_sample(a, 0)->count, 3);
    assert_int_equal(agg_sample(a, 1)->count, 3);

    /* A again, twice: its locations are remembered now */
    proc_add(&pa, a);
    proc_add(&pa, a);
    assert_int_equal(agg_sample(a, 0)->count, 5);
    /* process A frees the code object and a new one, "omega", takes its
     * address (3.15 counts it in code_object_generation); the unwinder's
     * cache starts afresh, so even the name's local copy may sit where
     * "alpha" was */
    const struct py_layout *l = pyimage_layout(pa.img);
    uint64_t gen = 1;
    assert_int_equal(memread_fake_poke(pa.fake, pa.leaf_code + l->co_qualname, &pa.spare_name, 8),
                     0);
    assert_int_equal(memread_fake_poke(pa.fake, 0x20000000 + l->in_code_generation, &gen, 8), 0);
    proc_add(&pa, a);
    proc_add(&pb, a);
    assert_int_equal(agg_sample_count(a), 3);
    assert_string_equal(loc_name(a, agg_sample(a, 2)->locations[0]), "omega");
    assert_int_equal(agg_sample(a, 0)->count, 5); /* alpha is gone */
    assert_int_equal(agg_sample(a, 1)->count, 4); /* gamma is still gamma */

    /* a new window: nothing of the old one's memo is used */
    agg_reset(a);
    proc_add(&pb, a);
    assert_int_equal(agg_sample_count(a), 1);
    assert_string_equal(loc_name(a, agg_sample(a, 0)->locations[0]), "gamma");
    assert_string_equal(loc_name(a, agg_sample(a, 0)->locations[1]), "<module>");
    agg_free(a);
    proc_close(&pa);
    proc_close(&pb);
}

static void test_agg__memo_checks_the_strings_of_made_up_frames(void **state)
{
    (void)state;
    struct agg *a;
    assert_int_equal(agg_new(NULL, &a), 0);
    /* frames built by hand that (wrongly) share a code_id */
    struct unwind_frame f1 = frame("one", "/a.py", 1, 2, 0x10);
    struct unwind_frame f2 = frame("two", "/a.py", 1, 2, 0x10);
    f1.code_id = f2.code_id = 99;
    assert_int_equal(agg_add_in(a, &f1, 1, 1, 0, "t", NULL, 1, 10), 0);
    assert_int_equal(agg_add_in(a, &f2, 1, 1, 0, "t", NULL, 1, 10), 0);
    assert_int_equal(agg_add_in(a, &f1, 1, 1, 0, "t", NULL, 1, 10), 0);
    assert_int_equal(agg_sample_count(a), 2);
    assert_string_equal(loc_name(a, agg_sample(a, 0)->locations[0]), "one");
    assert_string_equal(loc_name(a, agg_sample(a, 1)->locations[0]), "two");
    assert_int_equal(agg_sample(a, 0)->count, 2);
    /* the same code_id at another position is another location */
    struct unwind_frame f3 = f1;
    f3.pos.line = 5;
    assert_int_equal(agg_add_in(a, &f3, 1, 1, 0, "t", NULL, 1, 10), 0);
    assert_int_equal(agg_location(a, agg_sample(a, 2)->locations[0])->line, 5);
    assert_int_equal(agg_location_count(a), 3);
    agg_free(a);
}

/* ---- growth ------------------------------------------------------------- */

#define GROW_STACKS 2000
#define GROW_SHARED 300

/* Names whose addresses stay put (the memo compares them). */
static char grow_leaf[GROW_STACKS][16];
static char grow_fn[GROW_SHARED][16];
static char grow_file[GROW_SHARED / 10][16];

static size_t grow_depth(int k)
{
    return 1u + (size_t)(k % 7);
}

/* Stack @k of the growth tests: a leaf of its own, then shared functions;
 * every other stack's frames carry code ids (the memo path). */
static size_t grow_stack(int k, struct unwind_frame *out)
{
    size_t n = grow_depth(k);
    snprintf(grow_leaf[k], sizeof(grow_leaf[k]), "leaf%d", k);
    out[0] = frame(grow_leaf[k], "/leaf.py", 1, 2 + k % 5, 0);
    if (k % 2)
        out[0].code_id = 100000u + (uint64_t)k;
    for (size_t j = 1; j < n; j++) {
        int f = (k * 31 + (int)j * 17) % GROW_SHARED;
        snprintf(grow_fn[f], sizeof(grow_fn[f]), "fn%d", f);
        snprintf(grow_file[f / 10], sizeof(grow_file[f / 10]), "/m%d.py", f / 10);
        out[j] = frame(grow_fn[f], grow_file[f / 10], 10 * f, 10 * f + 1 + (int)j, 0);
        if (k % 2)
            out[j].code_id = 1u + (uint64_t)f;
    }
    return n;
}

/* Adds every stack k, (k % 3 + 1) times in three passes, as thread k % 5. */
static void grow_fill(struct agg *a)
{
    struct unwind_frame fr[8];
    for (int pass = 0; pass < 3; pass++) {
        for (int k = 0; k < GROW_STACKS; k++) {
            if (k % 3 < pass)
                continue;
            size_t n = grow_stack(k, fr);
            assert_int_equal(agg_add_in(a, fr, n, (uint64_t)(k % 5), 0, "t", NULL, 1, 10), 0);
        }
    }
}

/* Every stack is there once, with its count, its frames and their lines. */
static void grow_check(const struct agg *a)
{
    assert_int_equal(agg_stats(a).dropped, 0);
    assert_int_equal(agg_sample_count(a), GROW_STACKS);
    bool seen[GROW_STACKS] = {false};
    for (size_t i = 0; i < agg_sample_count(a); i++) {
        const struct agg_sample *s = agg_sample(a, i);
        int k = -1;
        assert_int_equal(sscanf(loc_name(a, s->locations[0]), "leaf%d", &k), 1);
        assert_true(k >= 0 && k < GROW_STACKS && !seen[k]);
        seen[k] = true;
        assert_int_equal(s->count, k % 3 + 1);
        assert_int_equal(s->nanos, 10 * (k % 3 + 1));
        assert_int_equal(s->thread_id, k % 5);
        struct unwind_frame fr[8];
        size_t n = grow_stack(k, fr);
        assert_int_equal(s->nlocations, n);
        for (size_t j = 0; j < n; j++) {
            const struct agg_location *l = agg_location(a, s->locations[j]);
            const struct agg_function *fn = agg_function(a, l->function);
            assert_string_equal(agg_string(a, fn->name), fr[j].function);
            assert_string_equal(agg_string(a, fn->filename), fr[j].file);
            assert_int_equal(fn->start_line, fr[j].first_line);
            assert_int_equal(l->line, fr[j].pos.line);
        }
    }
}

static void collapsed_of(const struct agg *a, char *buf, size_t len)
{
    FILE *f = fmemopen(buf, len, "w");
    assert_non_null(f);
    assert_int_equal(collapsed_write(a, f), 0);
    assert_int_equal(fclose(f), 0);
}

static void test_agg__growing_keeps_every_sample(void **state)
{
    (void)state;
    struct agg *a;
    assert_int_equal(agg_new(NULL, &a), 0);
    size_t small = agg_memory(a);
    grow_fill(a);
    assert_true(agg_grows(a) >= 10); /* every table doubled, some of them several times */
    assert_true(agg_memory(a) > 4 * small);
    grow_check(a);
    static char grown[1 << 20], again[1 << 20];
    collapsed_of(a, grown, sizeof(grown));

    /* reset keeps what was reached: the same samples again make the same
     * window, now without growing: what a window allocated in full from
     * the start would hold */
    size_t grows = agg_grows(a), mem = agg_memory(a);
    agg_reset(a);
    assert_int_equal(agg_sample_count(a), 0);
    assert_int_equal(agg_location_count(a), 0);
    assert_int_equal(agg_function_count(a), 0);
    assert_int_equal(agg_string_count(a), 1); /* "" */
    assert_int_equal(agg_stats(a).added, 0);
    assert_int_equal(agg_repeat_in(a, 1, 0, "t", 1, 10), -ENOENT);
    grow_fill(a);
    assert_int_equal(agg_grows(a), grows);
    assert_int_equal(agg_memory(a), mem);
    grow_check(a);
    collapsed_of(a, again, sizeof(again));
    assert_string_equal(grown, again);
    agg_free(a);
}

static void test_agg__fresh_window_is_small(void **state)
{
    (void)state;
    size_t before = alloc_in_use();
    struct agg *a;
    assert_int_equal(agg_new(NULL, &a), 0);
    size_t used = alloc_in_use() - before;
    /* the default caps are tens of megabytes; a fresh window takes ~40 KiB */
    assert_true(used < 64u << 10);
    assert_true(agg_memory(a) <= used);
    assert_int_equal(agg_grows(a), 0);
    struct unwind_frame f = frame("f", "/x.py", 1, 2, 0x10);
    assert_int_equal(agg_add_in(a, &f, 1, 1, 0, "t", NULL, 1, 10), 0);
    assert_int_equal(alloc_in_use() - before, used); /* a small sample takes no more */
    agg_free(a);
    assert_int_equal(alloc_in_use(), before);
}

static void test_agg__caps_hold_while_growing(void **state)
{
    (void)state;
    /* caps that are not powers of two, above the initial capacities */
    struct agg_limits lim = {.samples = 100, .stack_slots = 1500};
    struct agg *a;
    assert_int_equal(agg_new(&lim, &a), 0);
    struct unwind_frame f = frame("f", "/x.py", 1, 2, 0x10);
    for (uint64_t tid = 0; tid < 150; tid++) /* one stack, 150 threads: 150 samples */
        assert_int_equal(agg_add_in(a, &f, 1, tid, 0, "t", NULL, 1, 10), tid < 100 ? 0 : -E2BIG);
    assert_int_equal(agg_sample_count(a), 100);
    assert_int_equal(agg_stats(a).dropped, 50);
    agg_reset(a);
    /* stack slots: 1500 at most; 40 stacks of 40 frames need 1600 */
    struct unwind_frame deep[40];
    for (int j = 0; j < 40; j++)
        deep[j] = frame("f", "/x.py", 1, 2 + j, 0x10);
    for (uint64_t tid = 0; tid < 40; tid++)
        assert_int_equal(agg_add_in(a, deep, 40, tid, 0, "t", NULL, 1, 10), tid < 37 ? 0 : -E2BIG);
    assert_int_equal(agg_stats(a).dropped, 3);
    agg_free(a);
}

static void test_agg__failed_growth_drops_and_counts(void **state)
{
    (void)state;
    struct agg *a;
    assert_int_equal(agg_new(NULL, &a), 0);
    struct unwind_frame f = frame("f", "/x.py", 1, 2, 0x10);
    uint64_t tid = 0;
    /* fill the sample table to its first capacity (one stack, many threads) */
    while (agg_grows(a) == 0)
        assert_int_equal(agg_add_in(a, &f, 1, tid++, 0, "t", NULL, 1, 10), 0);
    size_t grown = agg_grows(a);
    size_t n = agg_sample_count(a);
    uint64_t dropped = 0;
    /* fill to the next doubling, failing each allocation of it once */
    for (uint64_t nth = 1;; nth++) {
        size_t have = agg_sample_count(a);
        while (agg_sample_count(a) < have + 1000 && agg_grows(a) == grown) {
            (void)alloc_fail_nth(nth);
            int err = agg_add_in(a, &f, 1, tid++, 0, "t", NULL, 1, 10);
            (void)alloc_fail_nth(0);
            if (err) {
                assert_int_equal(err, -E2BIG);
                dropped++;
                break;
            }
        }
        assert_int_equal(agg_stats(a).dropped, dropped);
        if (agg_grows(a) > grown)
            break;
    }
    assert_true(dropped >= 1);
    assert_int_equal(agg_sample_count(a) + dropped, tid);
    /* what was counted before the failures is intact */
    for (size_t i = 0; i < n; i++)
        assert_int_equal(agg_sample(a, i)->count, 1);
    assert_int_equal(agg_add_in(a, &f, 1, tid++, 0, "t", NULL, 1, 10), 0);
    agg_free(a);
}

/* A span whose ids are @seed, @seed + 1, ... (trace id first, then span id). */
static struct sample_span span_of(uint8_t seed)
{
    struct sample_span sp = {.set = true};
    for (unsigned i = 0; i < 16; i++)
        sp.trace_id[i] = (uint8_t)(seed + i);
    for (unsigned i = 0; i < 8; i++)
        sp.span_id[i] = (uint8_t)(seed + 16 + i);
    return sp;
}

/* The same stack of one thread in two spans and in none: three samples,
 * labelled with the ids in lowercase hex; an unset span is no span. */
static void test_agg__spans_kept_apart(void **state)
{
    (void)state;
    struct agg *a;
    assert_int_equal(agg_new(NULL, &a), 0);
    struct unwind_frame f[] = {frame("leaf", "/a.py", 1, 2, 0x10),
                               frame("main", "/a.py", 9, 9, 0x20)};
    struct sample_span sa = span_of(0x00), sb = span_of(0xa0), unset = span_of(0x50);
    unset.set = false;
    assert_int_equal(agg_add_span(a, f, 2, 7, 0, "t", NULL, &sa, 1, 10), 0);
    assert_int_equal(agg_add_span(a, f, 2, 7, 0, "t", NULL, &sa, 1, 10), 0); /* coalesced */
    assert_int_equal(agg_add_span(a, f, 2, 7, 0, "t", NULL, &sb, 1, 10), 0);
    assert_int_equal(agg_add_span(a, f, 2, 7, 0, "t", NULL, &sa, 1, 10), 0); /* found again */
    assert_int_equal(agg_add_span(a, f, 2, 7, 0, "t", NULL, NULL, 1, 10), 0);
    assert_int_equal(agg_add_span(a, f, 2, 7, 0, "t", NULL, &unset, 1, 10), 0); /* coalesced */
    assert_int_equal(agg_add_in(a, f, 2, 7, 0, "t", NULL, 1, 10), 0);           /* coalesced */
    struct agg_stats st = agg_stats(a);
    assert_int_equal(st.added, 7);
    assert_int_equal(st.coalesced, 3);
    assert_int_equal(st.dropped, 0);
    assert_int_equal(st.spans_over, 0);
    assert_int_equal(agg_sample_count(a), 3);

    const struct agg_sample *in_a = agg_sample(a, 0), *in_b = agg_sample(a, 1),
                            *none = agg_sample(a, 2);
    assert_int_equal(in_a->count, 3);
    assert_int_equal(in_a->nanos, 30);
    assert_string_equal(agg_string(a, in_a->trace_id), "000102030405060708090a0b0c0d0e0f");
    assert_string_equal(agg_string(a, in_a->span_id), "1011121314151617");
    assert_int_equal(in_b->count, 1);
    assert_string_equal(agg_string(a, in_b->trace_id), "a0a1a2a3a4a5a6a7a8a9aaabacadaeaf");
    assert_string_equal(agg_string(a, in_b->span_id), "b0b1b2b3b4b5b6b7");
    assert_int_equal(none->count, 3);
    assert_int_equal(none->trace_id, 0);
    assert_int_equal(none->span_id, 0);
    /* one stack: the samples share their locations */
    assert_int_equal(in_a->nlocations, 2);
    assert_memory_equal(in_a->locations, in_b->locations, 2 * sizeof(*in_a->locations));
    assert_memory_equal(in_a->locations, none->locations, 2 * sizeof(*in_a->locations));

    /* a repeat counts in the stack and span the thread was counted in last */
    assert_int_equal(agg_add_span(a, f, 2, 7, 0, "t", NULL, &sb, 1, 10), 0);
    assert_int_equal(agg_repeat_in(a, 7, 0, "t", 1, 10), 0);
    assert_int_equal(agg_sample_count(a), 3);
    assert_int_equal(agg_sample(a, 1)->count, 3);
    assert_int_equal(agg_sample(a, 0)->count, 3);
    assert_int_equal(agg_sample(a, 2)->count, 3);
    assert_int_equal(agg_add_span(a, f, 2, 7, 0, "t", NULL, NULL, 1, 10), 0);
    assert_int_equal(agg_repeat_in(a, 7, 0, "t", 1, 10), 0);
    assert_int_equal(agg_sample(a, 2)->count, 5);
    assert_int_equal(agg_sample(a, 1)->count, 3);
    agg_free(a);
}

/* At most lim.spans distinct span ids a window: a sample in a further span is
 * counted, without its span; spans the window has keep being labelled. */
static void test_agg__span_cap(void **state)
{
    (void)state;
    struct agg_limits lim = {.spans = 2};
    struct agg *a;
    assert_int_equal(agg_new(&lim, &a), 0);
    assert_int_equal(agg_limits_of(a).spans, 2);
    struct unwind_frame f = frame("work", "/w.py", 1, 2, 0x10);
    struct sample_span s1 = span_of(0x10), s2 = span_of(0x20), s3 = span_of(0x30);
    assert_int_equal(agg_add_span(a, &f, 1, 7, 0, "t", NULL, &s1, 1, 10), 0);
    assert_int_equal(agg_add_span(a, &f, 1, 7, 0, "t", NULL, &s2, 1, 10), 0);
    assert_int_equal(agg_add_span(a, &f, 1, 7, 0, "t", NULL, &s3, 1, 10), 0);
    struct agg_stats st = agg_stats(a);
    assert_int_equal(st.added, 3);
    assert_int_equal(st.dropped, 0);
    assert_int_equal(st.spans_over, 1);
    assert_int_equal(agg_sample_count(a), 3);
    const struct agg_sample *third = agg_sample(a, 2);
    assert_int_equal(third->count, 1);
    assert_int_equal(third->trace_id, 0);
    assert_int_equal(third->span_id, 0);
    /* the third span's hex was not kept either */
    for (size_t i = 0; i < agg_string_count(a); i++) {
        assert_true(strcmp(agg_string(a, (uint32_t)i), "4041424344454647") != 0);
        assert_true(strcmp(agg_string(a, (uint32_t)i), "303132333435363738393a3b3c3d3e3f") != 0);
    }
    assert_int_not_equal(agg_sample(a, 1)->span_id, 0); /* the second span is labelled */
    assert_string_equal(agg_string(a, agg_sample(a, 1)->span_id), "3031323334353637");
    /* a span the window has is still labelled; the third is counted as no span again */
    assert_int_equal(agg_add_span(a, &f, 1, 8, 0, "u", NULL, &s1, 1, 10), 0);
    assert_string_equal(agg_string(a, agg_sample(a, 3)->span_id), "2021222324252627");
    assert_int_equal(agg_add_span(a, &f, 1, 7, 0, "t", NULL, &s3, 1, 10), 0);
    assert_int_equal(agg_add_in(a, &f, 1, 7, 0, "t", NULL, 1, 10), 0);
    assert_int_equal(agg_sample_count(a), 4);
    assert_int_equal(agg_sample(a, 2)->count, 3);
    assert_int_equal(agg_stats(a).spans_over, 2);
    /* a new window has room again */
    agg_reset(a);
    assert_int_equal(agg_add_span(a, &f, 1, 7, 0, "t", NULL, &s3, 1, 10), 0);
    assert_string_equal(agg_string(a, agg_sample(a, 0)->span_id), "4041424344454647");
    assert_int_equal(agg_stats(a).spans_over, 0);
    agg_free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_agg__opcode_markers),
        cmocka_unit_test(test_agg__interns_and_counts),
        cmocka_unit_test(test_agg__growing_keeps_every_sample),
        cmocka_unit_test(test_agg__fresh_window_is_small),
        cmocka_unit_test(test_agg__caps_hold_while_growing),
        cmocka_unit_test(test_agg__failed_growth_drops_and_counts),
        cmocka_unit_test(test_agg__repeat_counts_the_last_stack),
        cmocka_unit_test(test_agg__caps_drop_and_count),
        cmocka_unit_test(test_agg__empty_names_are_replaced),
        cmocka_unit_test(test_agg__memo_keeps_processes_and_reused_code_apart),
        cmocka_unit_test(test_agg__memo_checks_the_strings_of_made_up_frames),
        cmocka_unit_test(test_agg__spans_kept_apart),
        cmocka_unit_test(test_agg__span_cap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
