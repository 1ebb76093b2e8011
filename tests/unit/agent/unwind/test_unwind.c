/* SPDX-License-Identifier: MIT */
/*
 * Tests for agent/unwind/unwind*.c over synthetic memory images
 * (tests/support/pyimage.c) laid out with the real 3.13, 3.14 and 3.15 tables:
 * names, lines and order; markers; every torn-stack detector; degraded
 * frames; thread status; cache invalidation; the number of reads per sample.
 * Recorded images of real processes are replayed by test_unwind_replay.c.
 */
#include "base/compat.h"

#include <time.h>

#include "cmocka_wrap.h"

#include "base/alloc.h"
#include "memread_fake.h"
#include "pyimage.h"
#include "unwind/unwind.h"

struct fixture {
    struct pyimage *img;
    struct memread_fake *fake;
    struct memread *mr;
    struct unwinder *u;
    struct pyruntime rt;
};

/* the frame slots, chain and code cache start small and the per-sample
 * buffers are in a shared scratch: what is left is the unwinder itself
 * (94 KiB, its thread table) and on 3.13 its last code objects per thread
 * (45 KiB) - before: ~15 MB */
#define UNWIND_TEST_FRESH_MAX (192u << 10)

static void fx_open(struct fixture *fx, unsigned minor)
{
    memset(fx, 0, sizeof(*fx));
    fx->img = pyimage_new(minor);
    assert_int_equal(memread_fake_open(&fx->fake, &fx->mr), 0);
}

static void fx_attach(struct fixture *fx)
{
    pyimage_install(fx->img, fx->fake, &fx->rt);
    char why[256];
    int err = unwinder_new(fx->mr, &fx->rt, &fx->u, why, sizeof(why));
    if (err)
        fail_msg("unwinder_new: %s", why);
}

static void fx_close(struct fixture *fx)
{
    unwinder_free(fx->u);
    memread_free(fx->mr);
    pyimage_free(fx->img);
}

static const struct unwind_result *fx_sample(struct fixture *fx, unsigned flags)
{
    const struct unwind_result *r = NULL;
    enum sample_status st;
    int err = unwinder_sample(fx->u, flags, &r, &st);
    if (err)
        fail_msg("unwinder_sample: %d (%s)", err, status_name(st));
    return r;
}

/* A typical stack: entry frame, <module>, main, work (leaf). */
static uint64_t build_stack(struct fixture *fx, unsigned t, uint64_t frames[4])
{
    uint64_t mod = pyimage_code(fx->img, "<module>", "/app/main.py", 0);
    uint64_t main_fn = pyimage_code(fx->img, "main", "/app/main.py", 10);
    uint64_t work = pyimage_code(fx->img, "Worker.work", "/app/work.py", 20);
    frames[0] = pyimage_push(fx->img, t, PYABI_OWNER_INTERPRETER, 0, 0);
    frames[1] = pyimage_push(fx->img, t, PYABI_OWNER_THREAD, mod, 4);
    frames[2] = pyimage_push(fx->img, t, PYABI_OWNER_THREAD, main_fn, 2);
    frames[3] = pyimage_push(fx->img, t, PYABI_OWNER_THREAD, work, 7);
    return work;
}

/* The leaf frame pushed last by build_stack(), from the thread state. */
static uint64_t f_leaf(struct fixture *fx)
{
    uint64_t frame = 0;
    const struct py_layout *l = pyimage_layout(fx->img);
    assert_int_equal(memread_read(fx->mr, 0x30000000 + l->ts_current_frame, &frame, 8), 0);
    return frame;
}

static void expect_frame(const struct unwind_frame *f, const char *fn, const char *file,
                         int32_t line)
{
    assert_string_equal(f->function, fn);
    assert_string_equal(f->file, file);
    assert_int_equal(f->pos.line, line);
}

static void test_unwind__walks_main_thread_on_every_version(void **state)
{
    (void)state;
    for (unsigned minor = 13; minor <= 15; minor++) {
        struct fixture fx;
        fx_open(&fx, minor);
        unsigned t = pyimage_thread(fx.img, 4242);
        uint64_t frames[4];
        build_stack(&fx, t, frames);
        pyimage_hold_gil(fx.img, t);
        fx_attach(&fx);
        const struct unwind_result *r = fx_sample(&fx, 0);
        assert_int_equal(r->nthreads, 1);
        const struct unwind_thread *th = &r->threads[0];
        assert_int_equal(th->status, SAMPLE_OK);
        assert_int_equal(th->native_thread_id, 4242);
        assert_true(th->flags & UNWIND_THREAD_MAIN);
        assert_true(th->flags & UNWIND_THREAD_HOLDS_GIL);
        assert_false(th->flags & UNWIND_THREAD_HAS_EXCEPTION);
        assert_int_equal(th->nframes, 3);
        /* unit u of a code object starting at line L is on line L + 1 + u */
        expect_frame(&th->frames[0], "Worker.work", "/app/work.py", 28);
        expect_frame(&th->frames[1], "main", "/app/main.py", 13);
        expect_frame(&th->frames[2], "<module>", "/app/main.py", 5);
        assert_int_equal(th->frames[0].pos.col, 0);
        assert_int_equal(th->frames[0].pos.end_col, 4);
        assert_false(th->unchanged);
        /* each code object has its own id, kept while it is cached */
        uint64_t ids[3] = {th->frames[0].code_id, th->frames[1].code_id, th->frames[2].code_id};
        assert_true(ids[0] != 0 && ids[1] != 0 && ids[2] != 0);
        assert_true(ids[0] != ids[1] && ids[1] != ids[2] && ids[0] != ids[2]);
        /* the same stack again: flagged unchanged, frames still in place */
        th = &fx_sample(&fx, 0)->threads[0];
        assert_true(th->unchanged);
        assert_int_equal(th->nframes, 3);
        expect_frame(&th->frames[0], "Worker.work", "/app/work.py", 28);
        expect_frame(&th->frames[2], "<module>", "/app/main.py", 5);
        assert_int_equal(th->frames[0].code_id, ids[0]);
        assert_int_equal(th->frames[2].code_id, ids[2]);
        /* the leaf moves on: not unchanged, resolved again */
        const struct py_layout *l = pyimage_layout(fx.img);
        uint64_t ip = 0;
        assert_int_equal(memread_read(fx.mr, f_leaf(&fx) + l->fr_instr_ptr, &ip, 8), 0);
        ip += 2;
        assert_int_equal(memread_fake_poke(fx.fake, f_leaf(&fx) + l->fr_instr_ptr, &ip, 8), 0);
        th = &fx_sample(&fx, 0)->threads[0];
        assert_false(th->unchanged);
        expect_frame(&th->frames[0], "Worker.work", "/app/work.py", 29);
        assert_int_equal(th->frames[0].code_id, ids[0]);
        uint64_t key = th->stack_key;
        /* a caller moves (a new call at the same depth): that frame is
         * resolved again too */
        assert_int_equal(memread_read(fx.mr, frames[2] + l->fr_instr_ptr, &ip, 8), 0);
        ip += 2;
        assert_int_equal(memread_fake_poke(fx.fake, frames[2] + l->fr_instr_ptr, &ip, 8), 0);
        th = &fx_sample(&fx, 0)->threads[0];
        assert_false(th->unchanged);
        assert_int_not_equal(th->stack_key, key);
        expect_frame(&th->frames[0], "Worker.work", "/app/work.py", 29);
        expect_frame(&th->frames[1], "main", "/app/main.py", 14);
        expect_frame(&th->frames[2], "<module>", "/app/main.py", 5);
        key = th->stack_key;
        th = &fx_sample(&fx, 0)->threads[0];
        assert_true(th->unchanged);
        assert_int_equal(th->stack_key, key);
        fx_close(&fx);
    }
}

static void test_unwind__native_marker_between_python_frames(void **state)
{
    (void)state;
    for (unsigned minor = 13; minor <= 15; minor++) {
        struct fixture fx;
        fx_open(&fx, minor);
        unsigned t = pyimage_thread(fx.img, 1);
        uint64_t caller = pyimage_code(fx.img, "caller", "/a.py", 1);
        uint64_t key = pyimage_code(fx.img, "key", "/a.py", 30);
        pyimage_push(fx.img, t, PYABI_OWNER_INTERPRETER, 0, 0);
        pyimage_push(fx.img, t, PYABI_OWNER_THREAD, caller, 0);
        pyimage_push(fx.img, t, PYABI_OWNER_INTERPRETER, 0, 0); /* sorted() called back */
        pyimage_push(fx.img, t, PYABI_OWNER_THREAD, key, 1);
        fx_attach(&fx);
        const struct unwind_result *r = fx_sample(&fx, 0);
        assert_int_equal(r->threads[0].nframes, 2);
        r = fx_sample(&fx, UNWIND_NATIVE);
        const struct unwind_thread *th = &r->threads[0];
        assert_int_equal(th->nframes, 3); /* no marker at the root */
        assert_string_equal(th->frames[0].function, "key");
        assert_string_equal(th->frames[1].function, "<native>");
        assert_string_equal(th->frames[1].file, "~");
        assert_int_equal(th->frames[1].kind, UNWIND_FRAME_NATIVE);
        assert_int_not_equal(th->frames[1].code_id, 0);
        assert_int_not_equal(th->frames[1].code_id, th->frames[0].code_id);
        assert_int_not_equal(th->frames[1].code_id, th->frames[2].code_id);
        assert_string_equal(th->frames[2].function, "caller");
        fx_close(&fx);
    }
}

static void test_unwind__loop_is_a_cycle(void **state)
{
    (void)state;
    struct fixture fx;
    fx_open(&fx, 15);
    unsigned t = pyimage_thread(fx.img, 1);
    uint64_t f[4];
    build_stack(&fx, t, f);
    pyimage_set_previous(fx.img, f[1], f[3]);
    fx_attach(&fx);
    const struct unwind_result *r = fx_sample(&fx, 0);
    assert_int_equal(r->threads[0].status, SAMPLE_CYCLE);
    assert_int_equal(r->threads[0].nframes, 0);
    fx_close(&fx);
}

/* Frames outside the thread's chunks, at @base: frame i links to @prev[i]. */
static void add_loose_frames(struct fixture *fx, uint64_t base, const uint64_t *prev, size_t n,
                             uint64_t code)
{
    const struct py_layout *l = pyimage_layout(fx->img);
    static uint8_t frames[4 * 128];
    assert_true(n <= 4);
    memset(frames, 0, sizeof(frames));
    for (size_t i = 0; i < n; i++) {
        uint8_t *fr = frames + i * 128;
        uint64_t ip = code + l->co_adaptive;
        memcpy(fr + l->fr_previous, &prev[i], 8);
        memcpy(fr + l->fr_executable, &code, 8);
        memcpy(fr + l->fr_instr_ptr, &ip, 8);
    }
    assert_int_equal(memread_fake_add(fx->fake, base, frames, sizeof(frames)), 0);
}

static void test_unwind__loop_through_frames_outside_the_chunks(void **state)
{
    (void)state;
    for (int kind = 0; kind < 2; kind++) {
        struct fixture fx;
        fx_open(&fx, 15);
        unsigned t = pyimage_thread(fx.img, 1);
        uint64_t f[4];
        uint64_t code = build_stack(&fx, t, f);
        uint64_t base = 0x60000000;
        /* main -> a loose frame -> back up to the leaf (chunk order broken
         * only by the revisit), or -> a second loose frame -> the first */
        uint64_t prev[2] = {kind == 0 ? f[3] : base + 128, base};
        pyimage_set_previous(fx.img, f[2], base);
        fx_attach(&fx);
        add_loose_frames(&fx, base, prev, 2, code);
        const struct unwind_result *r = fx_sample(&fx, 0);
        assert_int_equal(r->threads[0].status, SAMPLE_CYCLE);
        assert_int_equal(r->threads[0].nframes, 0);
        fx_close(&fx);
    }
}

/*
 * An older data-stack chunk at @raddr (a copy in @buf, PYIMAGE-sized) holding
 * an entry frame linked to @below and then one frame of each of @codes;
 * returns the newest.
 */
static uint64_t add_older_chunk(struct fixture *fx, uint64_t raddr, uint8_t *buf, uint64_t below,
                                const uint64_t *codes, size_t n)
{
    const struct py_layout *l = pyimage_layout(fx->img);
    memset(buf, 0, 16384);
    uint64_t size = 16384;
    memcpy(buf + 8, &size, 8);
    size_t stride = l->fr_size + 16, at = PYABI_CHUNK_HEADER;
    uint64_t prev = below;
    for (size_t i = 0; i <= n; i++, at += stride) {
        uint8_t *fr = buf + at;
        memcpy(fr + l->fr_previous, &prev, 8);
        fr[l->fr_owner] = i == 0 ? PYABI_OWNER_INTERPRETER : PYABI_OWNER_THREAD;
        if (i > 0) {
            uint64_t ip = codes[i - 1] + l->co_adaptive;
            memcpy(fr + l->fr_executable, &codes[i - 1], 8);
            memcpy(fr + l->fr_instr_ptr, &ip, 8);
        }
        prev = raddr + at;
    }
    assert_int_equal(memread_fake_add(fx->fake, raddr, buf, 16384), 0);
    return prev;
}

static void test_unwind__older_chunks_are_read_with_the_thread(void **state)
{
    (void)state;
    struct fixture fx;
    fx_open(&fx, 15);
    unsigned t = pyimage_thread(fx.img, 1);
    uint64_t codes[4] = {
        pyimage_code(fx.img, "old_a", "/o.py", 1), pyimage_code(fx.img, "old_b", "/o.py", 10),
        pyimage_code(fx.img, "moved_a", "/m.py", 1), pyimage_code(fx.img, "moved_b", "/m.py", 10)};
    uint64_t newer = pyimage_code(fx.img, "newer", "/n.py", 1);
    uint64_t first = pyimage_push(fx.img, t, PYABI_OWNER_THREAD, newer, 0);
    pyimage_push(fx.img, t, PYABI_OWNER_THREAD, newer, 1);
    fx_attach(&fx);
    const struct py_layout *l = pyimage_layout(fx.img);
    uint64_t ts = 0x30000000, base = ts + l->ts_size, chunk = 0x40000000;
    /* the chunk's oldest frame continues in an older chunk */
    static uint8_t old1[16384], old2[16384];
    uint64_t older = 0x48000000;
    uint64_t top = add_older_chunk(&fx, older, old1, base, codes, 2);
    assert_int_equal(memread_fake_poke(fx.fake, chunk, &older, 8), 0);
    assert_int_equal(memread_fake_poke(fx.fake, first + l->fr_previous, &top, 8), 0);
    static const char *const want[] = {"newer", "newer", "old_b", "old_a"};
    const struct unwind_thread *th = &fx_sample(&fx, 0)->threads[0];
    assert_int_equal(th->status, SAMPLE_OK);
    assert_int_equal(th->nframes, 4);
    for (size_t i = 0; i < 4; i++)
        assert_string_equal(th->frames[i].function, want[i]);
    /* warm: both chunks come with the thread state, in one read */
    unsigned before = memread_fake_calls(fx.fake);
    th = &fx_sample(&fx, 0)->threads[0];
    assert_int_equal(memread_fake_calls(fx.fake) - before, 1);
    assert_int_equal(th->nframes, 4);
    assert_string_equal(th->frames[3].function, "old_a");

    /* the older chunk is freed and the stack below rebuilt in another one:
     * the copy made on the guess is not used */
    uint64_t other = 0x49000000;
    top = add_older_chunk(&fx, other, old2, base, codes + 2, 2);
    assert_int_equal(memread_fake_poke(fx.fake, chunk, &other, 8), 0);
    assert_int_equal(memread_fake_poke(fx.fake, first + l->fr_previous, &top, 8), 0);
    static const char *const moved[] = {"newer", "newer", "moved_b", "moved_a"};
    for (int round = 0; round < 2; round++) {
        before = memread_fake_calls(fx.fake);
        th = &fx_sample(&fx, 0)->threads[0];
        assert_int_equal(th->status, SAMPLE_OK);
        assert_int_equal(th->nframes, 4);
        for (size_t i = 0; i < 4; i++)
            assert_string_equal(th->frames[i].function, moved[i]);
        if (round == 1) /* guessed right again */
            assert_int_equal(memread_fake_calls(fx.fake) - before, 1);
    }
    fx_close(&fx);
}

static void test_unwind__steady_stack_copies_only_what_it_uses(void **state)
{
    (void)state;
    for (unsigned minor = 13; minor <= 15; minor++) {
        struct fixture fx;
        fx_open(&fx, minor);
        unsigned t = pyimage_thread(fx.img, 1);
        uint64_t f[4];
        uint64_t work = build_stack(&fx, t, f);
        fx_attach(&fx);
        const struct py_layout *l = pyimage_layout(fx.img);
        uint64_t end = f[3] + l->fr_size; /* the end of the leaf frame */
        assert_int_equal(fx_sample(&fx, 0)->threads[0].nframes, 3);
        assert_int_equal(fx_sample(&fx, 0)->threads[0].nframes, 3);
        /* the same chain twice: nothing past the leaf frame is copied */
        memread_fake_watch(fx.fake, end, 4096);
        unsigned long bytes = memread_fake_bytes(fx.fake);
        for (int i = 0; i < 3; i++)
            assert_int_equal(fx_sample(&fx, 0)->threads[0].nframes, 3);
        assert_int_equal(memread_fake_watched(fx.fake), 0);
        print_message("3.%u: a steady 3-frame sample reads %lu bytes\n", minor,
                      (memread_fake_bytes(fx.fake) - bytes) / 3);
        /* a deeper (recursive) call: read although beyond the copy, right
         * at once */
        uint64_t frame = end + 16, ip = work + l->co_adaptive + 2;
        uint64_t exe = work | (l->tag_mask & 1);
        uint8_t owner = PYABI_OWNER_THREAD;
        assert_int_equal(memread_fake_poke(fx.fake, frame + l->fr_owner, &owner, 1), 0);
        assert_int_equal(memread_fake_poke(fx.fake, frame + l->fr_previous, &f[3], 8), 0);
        assert_int_equal(memread_fake_poke(fx.fake, frame + l->fr_executable, &exe, 8), 0);
        assert_int_equal(memread_fake_poke(fx.fake, frame + l->fr_instr_ptr, &ip, 8), 0);
        assert_int_equal(memread_fake_poke(fx.fake, 0x30000000 + l->ts_current_frame, &frame, 8),
                         0);
        const struct unwind_thread *th = &fx_sample(&fx, 0)->threads[0];
        assert_int_equal(th->status, SAMPLE_OK);
        assert_int_equal(th->nframes, 4);
        expect_frame(&th->frames[0], "Worker.work", "/app/work.py", 22);
        expect_frame(&th->frames[1], "Worker.work", "/app/work.py", 28);
        /* a changed stack may be growing: the next read has slack again */
        memread_fake_watch(fx.fake, frame + l->fr_size, 1024);
        assert_int_equal(fx_sample(&fx, 0)->threads[0].nframes, 4);
        assert_int_equal(memread_fake_watched(fx.fake), 1);
        fx_close(&fx);
    }
}

static void test_unwind__chain_must_reach_the_base_frame(void **state)
{
    (void)state;
    for (unsigned minor = 13; minor <= 15; minor++) {
        struct fixture fx;
        fx_open(&fx, minor);
        unsigned t = pyimage_thread(fx.img, 1);
        uint64_t f[4];
        build_stack(&fx, t, f);
        /* cut the chain below main: it now ends at a Python frame */
        pyimage_set_previous(fx.img, f[2], 0);
        fx_attach(&fx);
        const struct unwind_result *r = fx_sample(&fx, 0);
        assert_int_equal(r->threads[0].status, SAMPLE_INCOMPLETE);
        assert_int_equal(r->threads[0].nframes, 0);
        fx_close(&fx);
    }
    /* 3.15: an entry frame that is not the base frame is not enough */
    struct fixture fx;
    fx_open(&fx, 15);
    unsigned t = pyimage_thread(fx.img, 1);
    uint64_t f[4];
    build_stack(&fx, t, f);
    pyimage_set_previous(fx.img, f[0], 0);
    fx_attach(&fx);
    assert_int_equal(fx_sample(&fx, 0)->threads[0].status, SAMPLE_INCOMPLETE);
    fx_close(&fx);
}

static void test_unwind__unmapped_frame_is_incomplete(void **state)
{
    (void)state;
    struct fixture fx;
    fx_open(&fx, 14);
    unsigned t = pyimage_thread(fx.img, 1);
    uint64_t f[4];
    build_stack(&fx, t, f);
    pyimage_set_previous(fx.img, f[2], 0x7777000);
    fx_attach(&fx);
    assert_int_equal(fx_sample(&fx, 0)->threads[0].status, SAMPLE_INCOMPLETE);
    fx_close(&fx);
}

static void test_unwind__impossible_owner_is_bad_frame(void **state)
{
    (void)state;
    struct fixture fx;
    fx_open(&fx, 13);
    unsigned t = pyimage_thread(fx.img, 1);
    uint64_t code = pyimage_code(fx.img, "f", "/f.py", 1);
    pyimage_push(fx.img, t, PYABI_OWNER_INTERPRETER, 0, 0);
    pyimage_push(fx.img, t, 7, code, 0);
    fx_attach(&fx);
    assert_int_equal(fx_sample(&fx, 0)->threads[0].status, SAMPLE_BAD_FRAME);
    fx_close(&fx);
}

static void test_unwind__depth_is_capped(void **state)
{
    (void)state;
    struct fixture fx;
    fx_open(&fx, 15);
    unsigned t = pyimage_thread(fx.img, 1);
    uint64_t code = pyimage_code(fx.img, "recurse", "/r.py", 1);
    uint64_t first = pyimage_push(fx.img, t, PYABI_OWNER_THREAD, code, 0);
    uint64_t second = pyimage_push(fx.img, t, PYABI_OWNER_THREAD, code, 0);
    (void)second;
    /* a two-frame loop would be a cycle; a long chain needs many frames: the
     * chunk holds ~150, so chain frames through all threads' chunks instead */
    pyimage_set_previous(fx.img, first, 0);
    fx_attach(&fx);
    /* replace the chain with a long synthetic one in a fake segment */
    enum { N = UNWIND_MAX_DEPTH + 10 };
    const struct py_layout *l = pyimage_layout(fx.img);
    static uint8_t frames[N * 128];
    memset(frames, 0, sizeof(frames));
    uint64_t base = 0x60000000;
    for (unsigned i = 0; i < N; i++) {
        uint8_t *fr = frames + (size_t)i * 128;
        uint64_t prev = i + 1 < N ? base + (uint64_t)(i + 1) * 128 : 0;
        uint64_t exe = code;
        uint64_t ip = code + l->co_adaptive;
        memcpy(fr + l->fr_previous, &prev, 8);
        memcpy(fr + l->fr_executable, &exe, 8);
        memcpy(fr + l->fr_instr_ptr, &ip, 8);
    }
    assert_int_equal(memread_fake_add(fx.fake, base, frames, sizeof(frames)), 0);
    uint64_t ts = 0x30000000;
    assert_int_equal(memread_fake_poke(fx.fake, ts + l->ts_current_frame, &base, 8), 0);
    assert_int_equal(fx_sample(&fx, 0)->threads[0].status, SAMPLE_TOO_DEEP);
    fx_close(&fx);
}

static void test_unwind__unreadable_parts_degrade(void **state)
{
    (void)state;
    struct fixture fx;
    fx_open(&fx, 15);
    unsigned t = pyimage_thread(fx.img, 1);
    uint64_t good = pyimage_code(fx.img, "good", "/g.py", 1);
    pyimage_push(fx.img, t, PYABI_OWNER_INTERPRETER, 0, 0);
    pyimage_push(fx.img, t, PYABI_OWNER_THREAD, good, 0);
    pyimage_push(fx.img, t, PYABI_OWNER_THREAD, 0x7abc000, 0); /* code object unmapped */
    fx_attach(&fx);
    /* the good code object's name points nowhere */
    const struct py_layout *l = pyimage_layout(fx.img);
    uint64_t nowhere = 0x7def000;
    assert_int_equal(memread_fake_poke(fx.fake, good + l->co_qualname, &nowhere, 8), 0);
    const struct unwind_thread *th = &fx_sample(&fx, 0)->threads[0];
    assert_int_equal(th->status, SAMPLE_OK);
    assert_int_equal(th->nframes, 2);
    assert_int_equal(th->frames[0].kind, UNWIND_FRAME_UNREADABLE);
    assert_string_equal(th->frames[0].function, "<unreadable frame>");
    assert_string_equal(th->frames[0].file, "<unknown file>");
    assert_string_equal(th->frames[1].function, "<unknown function>");
    assert_string_equal(th->frames[1].file, "/g.py");
    assert_int_equal(th->frames[1].pos.line, 2);
    fx_close(&fx);
}

static void test_unwind__gc_marker(void **state)
{
    (void)state;
    for (unsigned minor = 13; minor <= 15; minor++) {
        struct fixture fx;
        fx_open(&fx, minor);
        unsigned t = pyimage_thread(fx.img, 1);
        uint64_t f[4];
        build_stack(&fx, t, f);
        pyimage_hold_gil(fx.img, t);
        pyimage_gc(fx.img, f[2]); /* main() started the collection */
        fx_attach(&fx);
        const struct unwind_thread *th = &fx_sample(&fx, 0)->threads[0];
        assert_int_equal(th->nframes, 4);
        assert_true(th->flags & UNWIND_THREAD_IN_GC);
        /* 3.15 knows the frame; 3.13/3.14 put the marker on top */
        size_t at = minor == 15 ? 1 : 0;
        assert_string_equal(th->frames[at].function, "<GC>");
        assert_int_equal(th->frames[at].kind, UNWIND_FRAME_GC);
        assert_string_equal(th->frames[minor == 15 ? 2 : 1].function,
                            minor == 15 ? "main" : "Worker.work");
        assert_int_equal(fx_sample(&fx, UNWIND_NO_GC)->threads[0].nframes, 3);
        fx_close(&fx);
    }
}

static void test_unwind__all_threads_and_exception_status(void **state)
{
    (void)state;
    struct fixture fx;
    fx_open(&fx, 14);
    unsigned t0 = pyimage_thread(fx.img, 100);
    unsigned t1 = pyimage_thread(fx.img, 101);
    unsigned t2 = pyimage_thread(fx.img, 102);
    uint64_t f[4];
    build_stack(&fx, t0, f);
    build_stack(&fx, t1, f);
    (void)t2; /* a thread with no Python frames */
    fx_attach(&fx);
    const struct py_layout *l = pyimage_layout(fx.img);
    uint64_t exc = 0x50000008;
    assert_int_equal(memread_fake_poke(fx.fake, 0x30010000 + l->ts_exc_value, &exc, 8), 0);
    const struct unwind_result *r = fx_sample(&fx, UNWIND_ALL_THREADS);
    assert_int_equal(r->nthreads, 3);
    /* newest first; the main thread is the first one created */
    assert_int_equal(r->threads[0].native_thread_id, 102);
    assert_int_equal(r->threads[0].nframes, 0);
    assert_int_equal(r->threads[0].status, SAMPLE_OK);
    assert_int_equal(r->threads[1].native_thread_id, 101);
    assert_true(r->threads[1].flags & UNWIND_THREAD_HAS_EXCEPTION);
    assert_int_equal(r->threads[2].native_thread_id, 100);
    assert_true(r->threads[2].flags & UNWIND_THREAD_MAIN);
    assert_false(r->threads[1].flags & UNWIND_THREAD_MAIN);
    assert_int_equal(r->threads[2].nframes, 3);
    /* without -a only the main thread */
    r = fx_sample(&fx, 0);
    assert_int_equal(r->nthreads, 1);
    assert_int_equal(r->threads[0].native_thread_id, 100);
    fx_close(&fx);
}

/* ---- thread ids that are not the process's (a fork without the hook) ---- */

/* The target's threads as the unwinder's lister sees them, and how often it was asked. */
struct tasks_fake {
    uint64_t tids[8];
    size_t n;
    unsigned calls;
    uint64_t asked; /* the TID cpu mode's test was last asked about */
};

static int tasks_fake_list(void *ctx, uint64_t *tids, size_t max, size_t *n)
{
    struct tasks_fake *f = ctx;
    f->calls++;
    if (f->n > max || f->n > PYPROFD_ARRAY_SIZE(f->tids))
        return -E2BIG; /* (more threads than listed: the list is not used) */
    memcpy(tids, f->tids, f->n * sizeof(*tids));
    *n = f->n;
    return 0;
}

static bool tasks_fake_on_cpu(void *ctx, uint64_t tid)
{
    struct tasks_fake *f = ctx;
    f->asked = tid;
    return false; /* nothing runs: what is kept in cpu mode was not asked */
}

/*
 * Gives thread @t a struct pthread laid out as x86-64 glibc's (tcb and self
 * pointing at it) holding TID @tid, as its pthread_t; returns its address.
 */
static uint64_t give_pthread(struct fixture *fx, unsigned t, int32_t tid)
{
    uint8_t *b;
    uint64_t pthread = pyimage_object(fx->img, 2304, &b);
    memcpy(b, &pthread, 8);
    memcpy(b + 16, &pthread, 8);
    memcpy(b + 720, &tid, 4);
    memcpy(pyimage_tstate(fx->img, t) + pyimage_layout(fx->img)->ts_thread_id, &pthread, 8);
    return pthread;
}

/* Points thread @t's pthread_t at memory the image does not map (another C library's). */
static void no_pthread(struct fixture *fx, unsigned t)
{
    uint64_t nowhere = 0x7e0000000000ull;
    memcpy(pyimage_tstate(fx->img, t) + pyimage_layout(fx->img)->ts_thread_id, &nowhere, 8);
}

static const struct unwind_thread *fx_thread(struct fixture *fx, unsigned flags)
{
    const struct unwind_result *r = fx_sample(fx, flags);
    assert_int_equal(r->nthreads, 1);
    return &r->threads[0];
}

/*
 * A forked worker whose thread state still names its parent's main thread
 * (1200): resolved from the TID glibc updated in the forking thread's struct
 * pthread (1234), with one task and with several; cpu mode asks about 1234.
 */
static void test_unwind__stale_tid_resolved_from_the_pthread(void **state)
{
    (void)state;
    for (size_t ntasks = 1; ntasks <= 3; ntasks += 2) {
        struct fixture fx;
        struct tasks_fake tf = {.tids = {1234, 1240, 1241}, .n = ntasks};
        fx_open(&fx, 14);
        unsigned t = pyimage_thread(fx.img, 1200);
        uint64_t f[4];
        build_stack(&fx, t, f);
        give_pthread(&fx, t, 1234);
        fx_attach(&fx);
        /* without a lister, as before: the id the thread state names */
        const struct unwind_thread *th = fx_thread(&fx, 0);
        assert_int_equal(th->native_thread_id, 1200);
        assert_int_equal(th->tid_source, UNWIND_TID_OWN);
        unwinder_set_tasks(fx.u, tasks_fake_list, &tf);
        th = fx_thread(&fx, 0);
        assert_int_equal(th->native_thread_id, 1234);
        assert_int_equal(th->stated_thread_id, 1200);
        assert_int_equal(th->tid_source, UNWIND_TID_PTHREAD);
        assert_int_equal(th->nframes, 3);
        unwinder_set_on_cpu(fx.u, tasks_fake_on_cpu, &tf);
        th = &fx_sample(&fx, UNWIND_ONLY_ON_CPU)->threads[0];
        assert_int_equal(tf.asked, 1234);
        fx_close(&fx);
    }
}

/*
 * No pthread TID to be had (another C library): the main thread state, alone
 * in its interpreter, of a single-threaded process is that thread; with
 * several threads it stays unresolved, and cpu mode keeps it without asking.
 */
static void test_unwind__stale_tid_without_a_pthread(void **state)
{
    (void)state;
    struct fixture fx;
    struct tasks_fake tf = {.tids = {1234}, .n = 1};
    fx_open(&fx, 15);
    unsigned t = pyimage_thread(fx.img, 1200);
    uint64_t f[4];
    build_stack(&fx, t, f);
    no_pthread(&fx, t);
    fx_attach(&fx);
    unwinder_set_tasks(fx.u, tasks_fake_list, &tf);
    unwinder_set_on_cpu(fx.u, tasks_fake_on_cpu, &tf);
    const struct unwind_thread *th = fx_thread(&fx, 0);
    assert_int_equal(th->native_thread_id, 1234);
    assert_int_equal(th->tid_source, UNWIND_TID_ONLY_THREAD);
    /* a second thread starts: the list changes, the judgement is made again */
    tf.tids[1] = 1235;
    tf.n = 2;
    unwinder_set_tasks(fx.u, tasks_fake_list, &tf);
    th = fx_thread(&fx, 0);
    assert_int_equal(th->native_thread_id, 1200);
    assert_int_equal(th->stated_thread_id, 1200);
    assert_int_equal(th->tid_source, UNWIND_TID_UNRESOLVED);
    tf.asked = 0;
    th = fx_thread(&fx, UNWIND_ONLY_ON_CPU); /* kept, not asked */
    assert_int_equal(th->tid_source, UNWIND_TID_UNRESOLVED);
    assert_int_equal(th->nframes, 3);
    assert_int_equal(tf.asked, 0);
    fx_close(&fx);
}

/*
 * A single-threaded process whose main thread state is not alone in its
 * interpreter (two thread states, one task): which of them runs cannot be
 * told, so neither is given the task.
 */
static void test_unwind__only_thread_needs_a_lone_thread_state(void **state)
{
    (void)state;
    struct fixture fx;
    struct tasks_fake tf = {.tids = {1234}, .n = 1};
    fx_open(&fx, 13);
    unsigned t0 = pyimage_thread(fx.img, 1200);
    unsigned t1 = pyimage_thread(fx.img, 1201);
    uint64_t f[4];
    build_stack(&fx, t0, f);
    no_pthread(&fx, t0);
    no_pthread(&fx, t1);
    fx_attach(&fx);
    unwinder_set_tasks(fx.u, tasks_fake_list, &tf);
    const struct unwind_result *r = fx_sample(&fx, UNWIND_ALL_THREADS);
    assert_int_equal(r->nthreads, 2);
    for (size_t i = 0; i < 2; i++)
        assert_int_equal(r->threads[i].tid_source, UNWIND_TID_UNRESOLVED);
    assert_int_equal(r->threads[1].native_thread_id, 1200);
    fx_close(&fx);
}

/*
 * A thread state left from a thread the parent had at the fork: its pthread
 * (glibc's, so its TID is kept right for a live thread) names no thread of
 * the process either (glibc cleared it: 0): it does not run here, and cpu
 * mode leaves it out without asking.
 */
static void test_unwind__stale_tid_of_a_thread_gone(void **state)
{
    (void)state;
    struct fixture fx;
    struct tasks_fake tf = {.tids = {1234}, .n = 1};
    fx_open(&fx, 14);
    unsigned t0 = pyimage_thread(fx.img, 1234);
    unsigned t1 = pyimage_thread(fx.img, 1201);
    uint64_t f[4];
    build_stack(&fx, t0, f);
    build_stack(&fx, t1, f);
    give_pthread(&fx, t0, 1234);
    give_pthread(&fx, t1, 0);
    fx_attach(&fx);
    unwinder_set_tasks(fx.u, tasks_fake_list, &tf);
    unwinder_set_on_cpu(fx.u, tasks_fake_on_cpu, &tf);
    const struct unwind_result *r = fx_sample(&fx, UNWIND_ALL_THREADS);
    assert_int_equal(r->nthreads, 2);
    assert_int_equal(r->threads[0].native_thread_id, 1201);
    assert_int_equal(r->threads[0].tid_source, UNWIND_TID_GONE);
    assert_int_equal(r->threads[0].nframes, 3); /* wall mode shows it as it is */
    assert_int_equal(r->threads[1].tid_source, UNWIND_TID_OWN);
    tf.asked = 0;
    r = fx_sample(&fx, UNWIND_ALL_THREADS | UNWIND_ONLY_ON_CPU);
    assert_int_equal(r->nthreads, 0);
    assert_int_equal(tf.asked, 1234); /* only the live one was asked about */
    fx_close(&fx);
}

/*
 * What the check costs: the list is made once for TIDs it holds; a stale
 * TID is judged by a list made after the sample that first saw it (one
 * more listing), then kept; a thread that starts later is listed again once.
 */
static void test_unwind__thread_list_is_made_rarely(void **state)
{
    (void)state;
    struct fixture fx;
    struct tasks_fake tf = {.tids = {1234}, .n = 1};
    fx_open(&fx, 14);
    unsigned t = pyimage_thread(fx.img, 1234);
    uint64_t f[4];
    build_stack(&fx, t, f);
    give_pthread(&fx, t, 1234);
    fx_attach(&fx);
    unwinder_set_tasks(fx.u, tasks_fake_list, &tf);
    for (int i = 0; i < 10; i++)
        assert_int_equal(fx_thread(&fx, 0)->tid_source, UNWIND_TID_OWN);
    assert_int_equal(tf.calls, 1);
    /* the thread state now names another process's thread */
    const struct py_layout *l = pyimage_layout(fx.img);
    uint64_t stale = 1200;
    uint64_t ts = pyimage_tstate_raddr(fx.img, t);
    assert_int_equal(memread_fake_poke(fx.fake, ts + l->ts_native_thread_id, &stale, 8), 0);
    for (int i = 0; i < 10; i++)
        assert_int_equal(fx_thread(&fx, 0)->native_thread_id, 1234);
    assert_int_equal(tf.calls, 3);
    /* a thread state naming a thread that started after the last list */
    uint64_t fresh = 1250;
    tf.tids[1] = 1250;
    tf.n = 2;
    assert_int_equal(memread_fake_poke(fx.fake, ts + l->ts_native_thread_id, &fresh, 8), 0);
    for (int i = 0; i < 10; i++) {
        const struct unwind_thread *th = fx_thread(&fx, 0);
        assert_int_equal(th->native_thread_id, 1250);
        assert_int_equal(th->tid_source, UNWIND_TID_OWN);
    }
    assert_int_equal(tf.calls, 4);
    /* a list that cannot be had: ids as the thread states give them */
    tf.n = 9;
    unwinder_set_tasks(fx.u, tasks_fake_list, &tf);
    assert_int_equal(memread_fake_poke(fx.fake, ts + l->ts_native_thread_id, &stale, 8), 0);
    assert_int_equal(fx_thread(&fx, 0)->tid_source, UNWIND_TID_OWN);
    fx_close(&fx);
}

/*
 * Free-threaded builds: several threads attached at once (the `active` bit,
 * which gil mode samples), names with the build's str state bits, lines.
 */
static void test_unwind__free_threaded_threads_run_together(void **state)
{
    (void)state;
    for (unsigned minor = 13; minor <= 15; minor++) {
        struct fixture fx;
        memset(&fx, 0, sizeof(fx));
        fx.img = pyimage_new_ft(minor);
        assert_int_equal(memread_fake_open(&fx.fake, &fx.mr), 0);
        unsigned t0 = pyimage_thread(fx.img, 100);
        unsigned t1 = pyimage_thread(fx.img, 101);
        unsigned t2 = pyimage_thread(fx.img, 102);
        uint64_t f[4];
        build_stack(&fx, t0, f);
        build_stack(&fx, t1, f);
        build_stack(&fx, t2, f);
        pyimage_hold_gil(fx.img, t0);
        pyimage_hold_gil(fx.img, t1);
        fx_attach(&fx);
        const struct py_layout *l = pyimage_layout(fx.img);
        assert_true(l->free_threaded);
        assert_int_equal(l->has_tlbc, minor >= 14);
        const struct unwind_result *r = fx_sample(&fx, UNWIND_ALL_THREADS);
        assert_int_equal(r->nthreads, 3);
        assert_false(r->threads[0].flags & UNWIND_THREAD_HOLDS_GIL); /* 102: not attached */
        assert_true(r->threads[1].flags & UNWIND_THREAD_HOLDS_GIL);
        assert_true(r->threads[2].flags & UNWIND_THREAD_HOLDS_GIL);
        for (size_t i = 0; i < 3; i++) {
            assert_int_equal(r->threads[i].nframes, 3);
            expect_frame(&r->threads[i].frames[0], "Worker.work", "/app/work.py", 28);
            expect_frame(&r->threads[i].frames[2], "<module>", "/app/main.py", 5);
        }
        fx_close(&fx);
    }
}

/*
 * Free-threaded 3.14+: a frame running a thread's own copy of the bytecode
 * (tlbc_index > 0) is measured against that copy; when the interpreter's
 * tlbc_generation moves, copies are looked up again.
 */
static void test_unwind__free_threaded_bytecode_copies(void **state)
{
    (void)state;
    for (unsigned minor = 14; minor <= 15; minor++) {
        struct fixture fx;
        memset(&fx, 0, sizeof(fx));
        fx.img = pyimage_new_ft(minor);
        assert_int_equal(memread_fake_open(&fx.fake, &fx.mr), 0);
        unsigned t = pyimage_thread(fx.img, 100);
        uint64_t f[4];
        uint64_t work = build_stack(&fx, t, f);
        uint64_t copy = pyimage_tlbc(fx.img, work, 2);
        pyimage_frame_tlbc(fx.img, f[3], 2, copy, 9);
        fx_attach(&fx);
        const struct unwind_result *r = fx_sample(&fx, 0);
        assert_int_equal(r->threads[0].nframes, 3);
        expect_frame(&r->threads[0].frames[0], "Worker.work", "/app/work.py", 30);
        expect_frame(&r->threads[0].frames[1], "main", "/app/main.py", 13); /* copy 0 */

        /* the copies are reset: a new copy 2 elsewhere, a new generation */
        const struct py_layout *l = pyimage_layout(fx.img);
        uint64_t arr = 0, moved = copy + 0x1000, ip = moved + 2 * 5;
        assert_int_equal(memread_read(fx.mr, work + l->co_tlbc, &arr, 8), 0);
        assert_int_equal(memread_fake_poke(fx.fake, arr + 8 + 8 * 2, &moved, 8), 0);
        assert_int_equal(memread_fake_poke(fx.fake, f[3] + l->fr_instr_ptr, &ip, 8), 0);
        uint32_t gen = 1;
        assert_int_equal(memread_fake_poke(fx.fake, 0x20000000 + l->in_tlbc_generation, &gen, 4),
                         0);
        r = fx_sample(&fx, 0);
        expect_frame(&r->threads[0].frames[0], "Worker.work", "/app/work.py", 26);

        /* an index past the array's end: the function, with no line */
        int32_t far = 100;
        assert_int_equal(memread_fake_poke(fx.fake, f[3] + l->fr_tlbc_index, &far, 4), 0);
        r = fx_sample(&fx, 0);
        expect_frame(&r->threads[0].frames[0], "Worker.work", "/app/work.py", LINETABLE_UNKNOWN);
        fx_close(&fx);
    }
}

/*
 * UNWIND_OPCODES: each Python frame's instruction, named from the version's
 * table, specialized form and base; an instruction specialized in place
 * makes a kept stack not unchanged; without the flag, none.
 */
static void test_unwind__opcodes(void **state)
{
    (void)state;
    static const struct {
        unsigned minor;
        uint8_t instance_value, load_attr, nop;
    } v[] = {{13, 193, 82, 30}, {14, 180, 80, 27}, {15, 186, 79, 25}};
    for (size_t k = 0; k < PYPROFD_ARRAY_SIZE(v); k++) {
        struct fixture fx;
        fx_open(&fx, v[k].minor);
        unsigned t = pyimage_thread(fx.img, 100);
        uint64_t f[4];
        uint64_t work = build_stack(&fx, t, f);
        fx_attach(&fx);
        const struct py_layout *l = pyimage_layout(fx.img);
        uint64_t unit = work + l->co_adaptive + 2 * 7; /* the leaf's instruction */
        uint8_t code[2] = {v[k].instance_value, 1};
        assert_int_equal(memread_fake_poke(fx.fake, unit, code, 2), 0);

        const struct unwind_result *r = fx_sample(&fx, UNWIND_OPCODES);
        const struct unwind_frame *leaf = &r->threads[0].frames[0];
        assert_string_equal(leaf->opname, "LOAD_ATTR_INSTANCE_VALUE");
        assert_string_equal(leaf->opbase, "LOAD_ATTR");
        assert_string_equal(leaf->opmarker, "<op LOAD_ATTR_INSTANCE_VALUE (LOAD_ATTR)>");
        assert_int_equal(leaf->opcode, v[k].instance_value);
        /* the callers' units are 0 in the image: CACHE */
        assert_string_equal(r->threads[0].frames[1].opname, "CACHE");

        /* the same stack: unchanged; then the instruction goes back to its
         * base form in place (a deoptimisation): not unchanged any more */
        r = fx_sample(&fx, UNWIND_OPCODES);
        assert_true(r->threads[0].unchanged);
        code[0] = v[k].load_attr;
        assert_int_equal(memread_fake_poke(fx.fake, unit, code, 2), 0);
        r = fx_sample(&fx, UNWIND_OPCODES);
        assert_false(r->threads[0].unchanged);
        assert_string_equal(r->threads[0].frames[0].opname, "LOAD_ATTR");
        assert_string_equal(r->threads[0].frames[0].opbase, "LOAD_ATTR");
        assert_string_equal(r->threads[0].frames[0].opmarker, "<op LOAD_ATTR>");

        /* without the flag there are none */
        r = fx_sample(&fx, 0);
        assert_int_equal(r->threads[0].nframes, 3);
        for (size_t i = 0; i < r->threads[0].nframes; i++)
            assert_null(r->threads[0].frames[i].opname);
        fx_close(&fx);
    }
}

static void test_unwind__circular_thread_list_ends(void **state)
{
    (void)state;
    struct fixture fx;
    fx_open(&fx, 15);
    pyimage_thread(fx.img, 1);
    pyimage_thread(fx.img, 2);
    fx_attach(&fx);
    /* the oldest thread links back to the newest; nobody holds the GIL, so
     * gil mode keeps no thread: the walk must still end */
    const struct py_layout *l = pyimage_layout(fx.img);
    uint64_t newest = 0x30010000;
    assert_int_equal(memread_fake_poke(fx.fake, 0x30000000 + l->ts_next, &newest, 8), 0);
    const struct unwind_result *r = fx_sample(&fx, UNWIND_ALL_THREADS | UNWIND_ONLY_GIL);
    assert_int_equal(r->nthreads, 0);
    r = fx_sample(&fx, UNWIND_ALL_THREADS);
    assert_int_equal(r->nthreads, UNWIND_MAX_THREADS);
    fx_close(&fx);
}

/* More threads than the unwinder starts with room for: the table grows
 * mid-sample and every thread keeps its own frames, in this sample and the next. */
static void test_unwind__many_threads_grow_the_table(void **state)
{
    (void)state;
    enum { N = 20 };
    struct fixture fx;
    fx_open(&fx, 14);
    for (unsigned i = 0; i < N; i++) {
        uint64_t f[4];
        build_stack(&fx, pyimage_thread(fx.img, 100 + i), f);
    }
    fx_attach(&fx);
    for (int round = 0; round < 2; round++) {
        const struct unwind_result *r = fx_sample(&fx, UNWIND_ALL_THREADS);
        assert_int_equal(r->nthreads, N);
        for (unsigned i = 0; i < N; i++) {
            const struct unwind_thread *t = &r->threads[i];
            assert_int_equal(t->native_thread_id, 100 + N - 1 - i); /* newest first */
            assert_int_equal(t->status, SAMPLE_OK);
            assert_int_equal(t->nframes, 3);
            expect_frame(&t->frames[0], "Worker.work", "/app/work.py", 28);
            expect_frame(&t->frames[2], "<module>", "/app/main.py", 5);
        }
    }
    fx_close(&fx);
}

static void test_unwind__reused_frames_stay_the_threads_own(void **state)
{
    (void)state;
    struct fixture fx;
    fx_open(&fx, 15);
    unsigned tx = pyimage_thread(fx.img, 100);
    unsigned ty = pyimage_thread(fx.img, 101);
    uint64_t fx_code = pyimage_code(fx.img, "x_func", "/x.py", 1);
    uint64_t fy_code = pyimage_code(fx.img, "y_func", "/y.py", 1);
    pyimage_push(fx.img, tx, PYABI_OWNER_INTERPRETER, 0, 0);
    pyimage_push(fx.img, tx, PYABI_OWNER_THREAD, fx_code, 0);
    pyimage_push(fx.img, ty, PYABI_OWNER_INTERPRETER, 0, 0);
    pyimage_push(fx.img, ty, PYABI_OWNER_THREAD, fy_code, 0);
    fx_attach(&fx);
    const struct py_layout *l = pyimage_layout(fx.img);
    uint32_t one = 1, zero = 0;
    uint64_t x_ts = 0x30000000, y_ts = 0x30010000;
    unsigned flags = UNWIND_ALL_THREADS | UNWIND_ONLY_GIL;
    /* X holds the GIL, then Y (X is left out), then X again */
    assert_int_equal(memread_fake_poke(fx.fake, x_ts + l->ts_holds_gil, &one, 4), 0);
    assert_string_equal(fx_sample(&fx, flags)->threads[0].frames[0].function, "x_func");
    assert_int_equal(memread_fake_poke(fx.fake, x_ts + l->ts_holds_gil, &zero, 4), 0);
    assert_int_equal(memread_fake_poke(fx.fake, y_ts + l->ts_holds_gil, &one, 4), 0);
    assert_string_equal(fx_sample(&fx, flags)->threads[0].frames[0].function, "y_func");
    assert_int_equal(memread_fake_poke(fx.fake, y_ts + l->ts_holds_gil, &zero, 4), 0);
    assert_int_equal(memread_fake_poke(fx.fake, x_ts + l->ts_holds_gil, &one, 4), 0);
    const struct unwind_thread *th = &fx_sample(&fx, flags)->threads[0];
    assert_int_equal(th->native_thread_id, 100);
    assert_string_equal(th->frames[0].function, "x_func");
    assert_false(th->unchanged);
    /* Y again, then X now running what Y ran: the frame slots hold exactly
     * X's new frames (Y's), yet X's stack did change */
    assert_int_equal(memread_fake_poke(fx.fake, x_ts + l->ts_holds_gil, &zero, 4), 0);
    assert_int_equal(memread_fake_poke(fx.fake, y_ts + l->ts_holds_gil, &one, 4), 0);
    assert_string_equal(fx_sample(&fx, flags)->threads[0].frames[0].function, "y_func");
    assert_int_equal(memread_fake_poke(fx.fake, y_ts + l->ts_holds_gil, &zero, 4), 0);
    assert_int_equal(memread_fake_poke(fx.fake, x_ts + l->ts_holds_gil, &one, 4), 0);
    uint64_t x_leaf = 0, y_ip = fy_code + l->co_adaptive;
    assert_int_equal(memread_read(fx.mr, x_ts + l->ts_current_frame, &x_leaf, 8), 0);
    assert_int_equal(memread_fake_poke(fx.fake, x_leaf + l->fr_executable, &fy_code, 8), 0);
    assert_int_equal(memread_fake_poke(fx.fake, x_leaf + l->fr_instr_ptr, &y_ip, 8), 0);
    th = &fx_sample(&fx, flags)->threads[0];
    assert_int_equal(th->native_thread_id, 100);
    assert_string_equal(th->frames[0].function, "y_func");
    assert_false(th->unchanged);
    th = &fx_sample(&fx, flags)->threads[0];
    assert_true(th->unchanged);
    (void)tx;
    (void)ty;
    fx_close(&fx);
}

static void test_unwind__embedded_main_thread_is_the_oldest(void **state)
{
    (void)state;
    struct fixture fx;
    fx_open(&fx, 15);
    unsigned t0 = pyimage_thread(fx.img, 300);
    unsigned t1 = pyimage_thread(fx.img, 301);
    uint64_t f[4];
    build_stack(&fx, t0, f);
    build_stack(&fx, t1, f);
    fx_attach(&fx);
    const struct py_layout *l = pyimage_layout(fx.img);
    uint64_t zero = 0; /* an embedding program never sets threads.main */
    assert_int_equal(memread_fake_poke(fx.fake, 0x20000000 + l->in_threads_main, &zero, 8), 0);
    const struct unwind_result *r = fx_sample(&fx, 0);
    assert_int_equal(r->nthreads, 1);
    assert_int_equal(r->threads[0].native_thread_id, 300);
    assert_true(r->threads[0].flags & UNWIND_THREAD_MAIN);
    fx_close(&fx);
}

static void test_unwind__runtime_states(void **state)
{
    (void)state;
    struct fixture fx;
    fx_open(&fx, 15);
    pyimage_thread(fx.img, 1);
    pyimage_runtime_state(fx.img, false, false);
    fx_attach(&fx);
    const struct unwind_result *r;
    enum sample_status st;
    assert_int_equal(unwinder_sample(fx.u, 0, &r, &st), -EAGAIN);
    assert_int_equal(st, SAMPLE_NOT_INITIALIZED);
    uint64_t interp = 0x20000000, ts = 0x30000000;
    const struct py_layout *l = pyimage_layout(fx.img);
    assert_int_equal(
        memread_fake_poke(fx.fake, PYIMAGE_RUNTIME + l->rt_interpreters_head, &interp, 8), 0);
    assert_int_equal(memread_fake_poke(fx.fake, PYIMAGE_RUNTIME + l->rt_finalizing, &ts, 8), 0);
    assert_int_equal(unwinder_sample(fx.u, 0, &r, &st), -EAGAIN);
    assert_int_equal(st, SAMPLE_FINALIZING);
    memread_fake_fail_next(fx.fake, -ESRCH);
    assert_int_equal(unwinder_sample(fx.u, 0, &r, &st), -ESRCH);
    assert_int_equal(st, SAMPLE_PROCESS_GONE);
    fx_close(&fx);
}

/* The main interpreter's threads.main, as CPython's main() sets and clears it. */
static void set_threads_main(struct fixture *fx, uint64_t ts)
{
    const struct py_layout *l = pyimage_layout(fx->img);
    assert_int_equal(memread_fake_poke(fx->fake, 0x20000000 + l->in_threads_main, &ts, 8), 0);
}

static void pause_ms(long ms)
{
    struct timespec ts = {0, ms * 1000000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static void test_unwind__runtime_is_not_reread_while_main_runs(void **state)
{
    (void)state;
    for (unsigned minor = 13; minor <= 15; minor++) {
        struct fixture fx;
        fx_open(&fx, minor);
        unsigned t = pyimage_thread(fx.img, 1);
        uint64_t f[4];
        build_stack(&fx, t, f);
        fx_attach(&fx);
        const struct py_layout *l = pyimage_layout(fx.img);
        uint64_t lo =
            l->rt_interpreters_head < l->rt_finalizing ? l->rt_interpreters_head : l->rt_finalizing;
        uint64_t hi =
            l->rt_interpreters_head > l->rt_finalizing ? l->rt_interpreters_head : l->rt_finalizing;
        assert_int_equal(fx_sample(&fx, 0)->threads[0].nframes, 3);
        assert_int_equal(fx_sample(&fx, 0)->threads[0].nframes, 3);
        /* at 100 Hz or 100 kHz alike: spaced more than a millisecond apart,
         * no sample reads the runtime's fields */
        memread_fake_watch(fx.fake, PYIMAGE_RUNTIME + lo, hi + 8 - lo);
        for (int i = 0; i < 4; i++) {
            pause_ms(2);
            assert_int_equal(fx_sample(&fx, 0)->threads[0].nframes, 3);
        }
        assert_int_equal(memread_fake_watched(fx.fake), 0);
        /* all threads: the interpreter list matters, read every sample */
        assert_int_equal(fx_sample(&fx, UNWIND_ALL_THREADS)->threads[0].nframes, 3);
        assert_int_equal(memread_fake_watched(fx.fake), 1);
        /* an embedding program never sets threads.main: read every sample */
        set_threads_main(&fx, 0);
        memread_fake_watch(fx.fake, PYIMAGE_RUNTIME + lo, hi + 8 - lo);
        for (int i = 0; i < 3; i++)
            assert_int_equal(fx_sample(&fx, 0)->threads[0].nframes, 3);
        assert_int_equal(memread_fake_watched(fx.fake), 3);
        fx_close(&fx);
    }
}

static void test_unwind__runtime_state_changes_are_seen_at_once(void **state)
{
    (void)state;
    for (int all = 0; all < 2; all++) {
        struct fixture fx;
        fx_open(&fx, 15);
        unsigned t = pyimage_thread(fx.img, 1);
        uint64_t f[4];
        build_stack(&fx, t, f);
        fx_attach(&fx);
        unsigned flags = all ? UNWIND_ALL_THREADS : 0;
        assert_int_equal(fx_sample(&fx, flags)->threads[0].nframes, 3);
        assert_int_equal(fx_sample(&fx, flags)->threads[0].nframes, 3);
        /* main() returns, then Py_FinalizeEx() sets the flag: the very next
         * sample says so */
        const struct py_layout *l = pyimage_layout(fx.img);
        uint64_t ts = 0x30000000;
        set_threads_main(&fx, 0);
        assert_int_equal(memread_fake_poke(fx.fake, PYIMAGE_RUNTIME + l->rt_finalizing, &ts, 8), 0);
        const struct unwind_result *r;
        enum sample_status st;
        assert_int_equal(unwinder_sample(fx.u, flags, &r, &st), -EAGAIN);
        assert_int_equal(st, SAMPLE_FINALIZING);
        /* read every time while it fails */
        assert_int_equal(unwinder_sample(fx.u, flags, &r, &st), -EAGAIN);
        uint64_t zero = 0;
        assert_int_equal(memread_fake_poke(fx.fake, PYIMAGE_RUNTIME + l->rt_finalizing, &zero, 8),
                         0);
        set_threads_main(&fx, ts);
        assert_int_equal(fx_sample(&fx, flags)->threads[0].nframes, 3);
        assert_int_equal(fx_sample(&fx, flags)->threads[0].nframes, 3);

        /* a sub-interpreter appears at the head of the list: the main
         * thread is still sampled right, and the changed list is read as
         * soon as the main interpreter's state says to (and every sample
         * with all threads) */
        static uint8_t sub[16384];
        uint64_t sub_raddr = 0x21000000, one = 1, main_interp = 0x20000000;
        memset(sub, 0, sizeof(sub));
        memcpy(sub + l->in_id, &one, 8);
        memcpy(sub + l->in_next, &main_interp, 8);
        assert_int_equal(memread_fake_add(fx.fake, sub_raddr, sub, sizeof(sub)), 0);
        assert_int_equal(
            memread_fake_poke(fx.fake, PYIMAGE_RUNTIME + l->rt_interpreters_head, &sub_raddr, 8),
            0);
        memread_fake_watch(fx.fake, sub_raddr, sizeof(sub));
        r = fx_sample(&fx, flags);
        assert_int_equal(r->nthreads, 1);
        assert_int_equal(r->threads[0].nframes, 3);
        assert_int_equal(memread_fake_watched(fx.fake), all ? 1 : 0);
        set_threads_main(&fx, 0);
        assert_int_equal(memread_fake_poke(fx.fake, PYIMAGE_RUNTIME + l->rt_finalizing, &ts, 8), 0);
        assert_int_equal(unwinder_sample(fx.u, flags, &r, &st), -EAGAIN);
        assert_int_equal(st, SAMPLE_FINALIZING);
        assert_int_equal(memread_fake_poke(fx.fake, PYIMAGE_RUNTIME + l->rt_finalizing, &zero, 8),
                         0);
        set_threads_main(&fx, ts);
        assert_int_equal(fx_sample(&fx, flags)->threads[0].nframes, 3);
        assert_true(memread_fake_watched(fx.fake) >= (all ? 3u : 1u));
        fx_close(&fx);
    }
}

static void test_unwind__code_cache_invalidation(void **state)
{
    (void)state;
    for (unsigned minor = 13; minor <= 14; minor++) {
        struct fixture fx;
        fx_open(&fx, minor);
        unsigned t = pyimage_thread(fx.img, 1);
        uint64_t f[4];
        uint64_t work = build_stack(&fx, t, f);
        uint64_t renamed = pyimage_str(fx.img, "Worker.renamed");
        fx_attach(&fx);
        const struct py_layout *l = pyimage_layout(fx.img);
        assert_string_equal(fx_sample(&fx, 0)->threads[0].frames[0].function, "Worker.work");
        uint64_t old_id = fx_sample(&fx, 0)->threads[0].frames[0].code_id;
        /* the code object at that address now holds another name: a freed and
         * reused address. 3.14 learns it from the generation counter, 3.13
         * from re-reading the cached code objects. */
        assert_int_equal(memread_fake_poke(fx.fake, work + l->co_qualname, &renamed, 8), 0);
        uint64_t gen = 1;
        if (l->has_code_generation) {
            /* before the counter moves the stale name is still served */
            assert_string_equal(fx_sample(&fx, 0)->threads[0].frames[0].function, "Worker.work");
            assert_int_equal(
                memread_fake_poke(fx.fake, 0x20000000 + l->in_code_generation, &gen, 8), 0);
        }
        const struct unwind_thread *th = &fx_sample(&fx, 0)->threads[0];
        assert_string_equal(th->frames[0].function, "Worker.renamed");
        assert_false(th->unchanged);                         /* the cache changed: resolved again */
        assert_int_not_equal(th->frames[0].code_id, old_id); /* another code object */
        th = &fx_sample(&fx, 0)->threads[0];
        assert_true(th->unchanged); /* nothing moved since */
        assert_string_equal(th->frames[0].function, "Worker.renamed");
        fx_close(&fx);
    }
}

static void test_unwind__313_recheck_rides_with_the_thread_read(void **state)
{
    (void)state;
    struct fixture fx;
    fx_open(&fx, 13);
    unsigned t = pyimage_thread(fx.img, 1);
    uint64_t f[4];
    uint64_t work = build_stack(&fx, t, f);
    uint64_t other = pyimage_code(fx.img, "other", "/app/other.py", 50);
    uint64_t renamed = pyimage_str(fx.img, "Worker.renamed");
    fx_attach(&fx);
    const struct py_layout *l = pyimage_layout(fx.img);
    assert_string_equal(fx_sample(&fx, 0)->threads[0].frames[0].function, "Worker.work");
    assert_string_equal(fx_sample(&fx, 0)->threads[0].frames[0].function, "Worker.work");
    /* the leaf's code object is freed and its address reused: seen in the
     * one read of the warm sample */
    assert_int_equal(memread_fake_poke(fx.fake, work + l->co_qualname, &renamed, 8), 0);
    unsigned before = memread_fake_calls(fx.fake);
    const struct unwind_thread *th = &fx_sample(&fx, 0)->threads[0];
    assert_string_equal(th->frames[0].function, "Worker.renamed");
    assert_string_equal(th->frames[1].function, "main");
    /* one read, plus the refetch of the changed code object */
    assert_true(memread_fake_calls(fx.fake) - before >= 2);
    before = memread_fake_calls(fx.fake);
    assert_string_equal(fx_sample(&fx, 0)->threads[0].frames[0].function, "Worker.renamed");
    assert_int_equal(memread_fake_calls(fx.fake) - before, 1);

    /* a cached code object the last sample did not use is re-checked too */
    uint64_t exe = other | (l->tag_mask & 1);
    assert_int_equal(memread_fake_poke(fx.fake, f[3] + l->fr_executable, &exe, 8), 0);
    assert_string_equal(fx_sample(&fx, 0)->threads[0].frames[0].function, "other");
    assert_string_equal(fx_sample(&fx, 0)->threads[0].frames[0].function, "other");
    /* (work's code object now holds the name of other's) */
    exe = work | (l->tag_mask & 1);
    uint64_t qual = 0;
    assert_int_equal(memread_read(fx.mr, other + l->co_qualname, &qual, 8), 0);
    assert_int_equal(memread_fake_poke(fx.fake, work + l->co_qualname, &qual, 8), 0);
    assert_int_equal(memread_fake_poke(fx.fake, f[3] + l->fr_executable, &exe, 8), 0);
    th = &fx_sample(&fx, 0)->threads[0];
    assert_int_equal(th->status, SAMPLE_OK);
    assert_string_equal(th->frames[0].function, "other"); /* work's new name */
    assert_string_equal(th->frames[0].file, "/app/work.py");
    fx_close(&fx);
}

static void test_unwind__warm_sample_takes_a_handful_of_reads(void **state)
{
    (void)state;
    for (unsigned minor = 13; minor <= 15; minor++) {
        struct fixture fx;
        fx_open(&fx, minor);
        unsigned t = pyimage_thread(fx.img, 1);
        pyimage_push(fx.img, t, PYABI_OWNER_INTERPRETER, 0, 0);
        uint64_t codes[10];
        for (int i = 0; i < 10; i++) {
            char name[16];
            snprintf(name, sizeof(name), "f%d", i);
            codes[i] = pyimage_code(fx.img, name, "/deep.py", i * 10);
        }
        for (int i = 0; i < 50; i++)
            pyimage_push(fx.img, t, PYABI_OWNER_THREAD, codes[i % 10], (unsigned)i % 8);
        fx_attach(&fx);
        unsigned before = memread_fake_calls(fx.fake);
        assert_int_equal(fx_sample(&fx, 0)->threads[0].nframes, 50);
        unsigned cold = memread_fake_calls(fx.fake) - before;
        before = memread_fake_calls(fx.fake);
        assert_int_equal(fx_sample(&fx, 0)->threads[0].nframes, 50);
        unsigned warm = memread_fake_calls(fx.fake) - before;
        /* interpreter, thread state and chunk in one read (3.13: with its
         * cached code objects, to re-check them); the unchanged chain needs
         * no verification */
        print_message("3.%u: 50 frames: %u reads cold, %u warm\n", minor, cold, warm);
        assert_int_equal(warm, 1);
        assert_true(cold > warm);
        fx_close(&fx);
    }
}

/*
 * A frame pointer that is garbage at the very end of the address space (a
 * torn read of a young process: a stale word on its data stack) fails that
 * sample; the unwinder must not keep the address as a "frame to read with
 * the thread state" and fail every later sample (issue 11: a target stuck in
 * read_fault for good after an attach to a very young process).
 */
static void test_unwind__wild_frame_address_does_not_stick(void **state)
{
    (void)state;
    static const uint64_t wild[] = {0xfffffffffffffff8ull, 0xffffffffffffff00ull, 0x7777000ull};
    for (unsigned minor = 13; minor <= 15; minor++) {
        for (size_t w = 0; w < PYPROFD_ARRAY_SIZE(wild); w++) {
            struct fixture fx;
            fx_open(&fx, minor);
            unsigned t = pyimage_thread(fx.img, 1);
            uint64_t f[4];
            build_stack(&fx, t, f);
            fx_attach(&fx);
            const struct py_layout *l = pyimage_layout(fx.img);
            uint64_t good = f[1];
            assert_int_equal(fx_sample(&fx, 0)->threads[0].status, SAMPLE_OK);
            /* the chain is torn for a few samples ... */
            assert_int_equal(
                memread_fake_poke(fx.fake, f[2] + l->fr_previous, &wild[w], sizeof(wild[w])), 0);
            for (int i = 0; i < 3; i++) {
                const struct unwind_result *r = NULL;
                enum sample_status st = SAMPLE_OK;
                int err = unwinder_sample(fx.u, 0, &r, &st);
                assert_true(err != 0 || r->threads[0].status != SAMPLE_OK);
            }
            /* ... and whole again: the next sample must see it */
            assert_int_equal(memread_fake_poke(fx.fake, f[2] + l->fr_previous, &good, 8), 0);
            const struct unwind_result *r = NULL;
            enum sample_status st = SAMPLE_OK;
            int err = unwinder_sample(fx.u, 0, &r, &st);
            if (err)
                fail_msg("3.%u, previous 0x%llx: still failing: %s", minor,
                         (unsigned long long)wild[w], status_name(st));
            assert_int_equal(r->threads[0].status, SAMPLE_OK);
            assert_int_equal(r->threads[0].nframes, 3);
            fx_close(&fx);
        }
    }
}

/* A fresh unwinder holds little: its frame slots, chain and code cache grow
 * with what the target's stacks need, not to their caps. */
static void test_unwind__fresh_unwinder_is_small(void **state)
{
    (void)state;
    for (unsigned minor = 13; minor <= 15; minor++) {
        struct fixture fx;
        fx_open(&fx, minor);
        uint64_t f[4];
        build_stack(&fx, pyimage_thread(fx.img, 1), f);
        struct unwind_scratch *sc;
        assert_int_equal(unwind_scratch_new(&sc), 0);
        pyimage_install(fx.img, fx.fake, &fx.rt);
        char why[256];
        /* the scratch fits itself to the first unwinder (3.13's re-check
         * buffer): what one more target costs is the second one */
        assert_int_equal(unwinder_new_shared(fx.mr, &fx.rt, sc, &fx.u, why, sizeof(why)), 0);
        unwinder_free(fx.u);
        size_t before = alloc_in_use();
        assert_int_equal(unwinder_new_shared(fx.mr, &fx.rt, sc, &fx.u, why, sizeof(why)), 0);
        size_t fresh = alloc_in_use() - before;
        const struct unwind_result *r = fx_sample(&fx, 0);
        assert_int_equal(r->threads[0].nframes, 3);
        size_t used = alloc_in_use() - before;
        print_message("3.%u: fresh unwinder %zu bytes, after a sample %zu\n", minor, fresh, used);
        /* what is left: the per-sample scratch (chunk copies, line table) */
        assert_true(fresh < UNWIND_TEST_FRESH_MAX);
        assert_int_equal(used, fresh); /* a small stack: nothing grew */
        fx_close(&fx);
        unwind_scratch_free(sc);
    }
}

/* A deep stack in one thread after a short one in another: the frame slots
 * and the chain grow during the sample, the short stack's frames (already
 * handed out) move with them, and every sample is the same. */
static void test_unwind__deep_stack_grows_and_unwinds_the_same(void **state)
{
    (void)state;
    struct fixture fx;
    fx_open(&fx, 14);
    unsigned deep_t = pyimage_thread(fx.img, 100); /* main: sampled last */
    unsigned short_t = pyimage_thread(fx.img, 101);
    uint64_t code = pyimage_code(fx.img, "recurse", "/r.py", 1);
    uint64_t first = pyimage_push(fx.img, deep_t, PYABI_OWNER_THREAD, code, 0);
    pyimage_set_previous(fx.img, first, 0);
    uint64_t f[4];
    build_stack(&fx, short_t, f);
    fx_attach(&fx);
    enum { N = UNWIND_MAX_DEPTH - 16 };
    const struct py_layout *l = pyimage_layout(fx.img);
    static uint8_t frames[N * 128];
    memset(frames, 0, sizeof(frames));
    uint64_t base = 0x60000000;
    for (unsigned i = 0; i < N; i++) {
        uint8_t *fr = frames + (size_t)i * 128;
        uint64_t prev = i + 1 < N ? base + (uint64_t)(i + 1) * 128 : 0;
        uint64_t ip = code + l->co_adaptive + 2u * (i % 7);
        memcpy(fr + l->fr_previous, &prev, 8);
        memcpy(fr + l->fr_executable, &code, 8);
        memcpy(fr + l->fr_instr_ptr, &ip, 8);
        fr[l->fr_owner] = i + 1 < N ? PYABI_OWNER_THREAD : PYABI_OWNER_INTERPRETER;
    }
    assert_int_equal(memread_fake_add(fx.fake, base, frames, sizeof(frames)), 0);
    assert_int_equal(memread_fake_poke(fx.fake, 0x30000000 + l->ts_current_frame, &base, 8), 0);
    static struct unwind_frame want[N];
    size_t nwant = 0;
    size_t before = alloc_in_use();
    for (int round = 0; round < 3; round++) {
        const struct unwind_result *r = fx_sample(&fx, UNWIND_ALL_THREADS);
        assert_int_equal(r->nthreads, 2);
        const struct unwind_thread *s = &r->threads[0], *d = &r->threads[1];
        assert_int_equal(s->native_thread_id, 101);
        assert_int_equal(s->status, SAMPLE_OK);
        assert_int_equal(s->nframes, 3);
        expect_frame(&s->frames[0], "Worker.work", "/app/work.py", 28);
        expect_frame(&s->frames[2], "<module>", "/app/main.py", 5);
        assert_int_equal(d->native_thread_id, 100);
        assert_int_equal(d->status, SAMPLE_OK);
        assert_int_equal(d->nframes, N - 1); /* the entry frame is no frame */
        if (round == 0) {
            assert_true(alloc_in_use() > before); /* it grew */
            before = alloc_in_use();
            memcpy(want, d->frames, d->nframes * sizeof(*want));
            nwant = d->nframes;
        } else {
            assert_int_equal(alloc_in_use(), before); /* and no more */
        }
        for (size_t i = 0; i < nwant; i++) {
            assert_string_equal(d->frames[i].function, "recurse");
            assert_string_equal(d->frames[i].file, "/r.py");
            assert_int_equal(d->frames[i].pos.line, want[i].pos.line);
            assert_int_equal(d->frames[i].code_id, want[i].code_id);
        }
    }
    fx_close(&fx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unwind__walks_main_thread_on_every_version),
        cmocka_unit_test(test_unwind__native_marker_between_python_frames),
        cmocka_unit_test(test_unwind__loop_is_a_cycle),
        cmocka_unit_test(test_unwind__loop_through_frames_outside_the_chunks),
        cmocka_unit_test(test_unwind__older_chunks_are_read_with_the_thread),
        cmocka_unit_test(test_unwind__steady_stack_copies_only_what_it_uses),
        cmocka_unit_test(test_unwind__chain_must_reach_the_base_frame),
        cmocka_unit_test(test_unwind__unmapped_frame_is_incomplete),
        cmocka_unit_test(test_unwind__impossible_owner_is_bad_frame),
        cmocka_unit_test(test_unwind__depth_is_capped),
        cmocka_unit_test(test_unwind__unreadable_parts_degrade),
        cmocka_unit_test(test_unwind__gc_marker),
        cmocka_unit_test(test_unwind__all_threads_and_exception_status),
        cmocka_unit_test(test_unwind__circular_thread_list_ends),
        cmocka_unit_test(test_unwind__many_threads_grow_the_table),
        cmocka_unit_test(test_unwind__reused_frames_stay_the_threads_own),
        cmocka_unit_test(test_unwind__embedded_main_thread_is_the_oldest),
        cmocka_unit_test(test_unwind__runtime_states),
        cmocka_unit_test(test_unwind__runtime_is_not_reread_while_main_runs),
        cmocka_unit_test(test_unwind__runtime_state_changes_are_seen_at_once),
        cmocka_unit_test(test_unwind__code_cache_invalidation),
        cmocka_unit_test(test_unwind__313_recheck_rides_with_the_thread_read),
        cmocka_unit_test(test_unwind__warm_sample_takes_a_handful_of_reads),
        cmocka_unit_test(test_unwind__wild_frame_address_does_not_stick),
        cmocka_unit_test(test_unwind__stale_tid_resolved_from_the_pthread),
        cmocka_unit_test(test_unwind__stale_tid_without_a_pthread),
        cmocka_unit_test(test_unwind__only_thread_needs_a_lone_thread_state),
        cmocka_unit_test(test_unwind__stale_tid_of_a_thread_gone),
        cmocka_unit_test(test_unwind__thread_list_is_made_rarely),
        cmocka_unit_test(test_unwind__free_threaded_threads_run_together),
        cmocka_unit_test(test_unwind__free_threaded_bytecode_copies),
        cmocka_unit_test(test_unwind__opcodes),
        cmocka_unit_test(test_unwind__fresh_unwinder_is_small),
        cmocka_unit_test(test_unwind__deep_stack_grows_and_unwinds_the_same),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
