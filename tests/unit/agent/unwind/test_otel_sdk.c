/* SPDX-License-Identifier: MIT */
/*
 * Tests for agent/unwind/otel_sdk.c: the OpenTelemetry Python SDK's current
 * span read through a thread's context variables. Each version 3.9-3.15 gets
 * a synthetic image of the chain (tests/support/pyctx_image.h) and a
 * hand-made unwind result whose threads' words name their contexts; readers
 * that change the image between two reads make the torn cases.
 */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include "clock_fake.h"
#include "memread_fake.h"
#include "pyctx_image.h"
#include "unwind/otel_sdk.h"

#define WORD      2u /* the index of tstate->context in unwind_thread.words */
#define NTHREADS  5u
#define TSTATE(i) (0x5a0000000000ull + (uint64_t)(i)*0x1010u) /* one memo slot each */
#define SECOND    1000000000ull
#define UNMAPPED  0x7e0000000000ull

struct fix {
    struct pyctx_image *img;
    struct memread_fake *fake;
    struct memread *mr, *inner; /* inner: the fake's, when mr wraps it */
    struct clock_fake cf;
    struct clock clock;
    struct otel_sdk *s;
    struct unwind_thread th[NTHREADS];
    struct unwind_result r;
};

/* An image of 3.@minor built with @flags, installed; no threads yet. */
static void fix_open(struct fix *f, unsigned minor, unsigned flags)
{
    memset(f, 0, sizeof(*f));
    f->img = pyctx_image_new(minor, flags);
    assert_non_null(f->img);
    assert_int_equal(memread_fake_open(&f->fake, &f->mr), 0);
    assert_int_equal(pyctx_image_install(f->img, f->fake), 0);
    f->cf.mono_ns = 5 * SECOND;
    f->clock = clock_fake_clock(&f->cf);
    f->r.threads = f->th;
}

static void fix_close(struct fix *f)
{
    otel_sdk_free(f->s);
    memread_free(f->mr);
    memread_free(f->inner);
    pyctx_image_free(f->img);
}

/* Thread @i (tstate TSTATE(i)) sampled, its context @ctx (0: none). */
static void fix_thread(struct fix *f, size_t i, uint64_t ctx)
{
    f->th[i] = (struct unwind_thread){
        .tstate_raddr = TSTATE(i), .native_thread_id = 100 + i, .status = SAMPLE_OK};
    f->th[i].words[WORD] = ctx;
    if (f->r.nthreads <= i)
        f->r.nthreads = i + 1;
}

static uint64_t addr(const struct fix *f, enum pyctx_image_obj which)
{
    return pyctx_image_addr(f->img, which);
}

static const struct sample_span *fix_sample(struct fix *f, const struct sample_span *published)
{
    if (!f->s) {
        char why[128];
        unsigned minor = pyctx_image_layout(f->img)->minor;
        assert_int_equal(otel_sdk_new(f->mr, minor, false, &f->clock, &f->s, why, sizeof(why)), 0);
        assert_int_equal(otel_sdk_state(f->s), OTEL_SDK_SEARCHING);
        assert_int_equal(otel_sdk_context_offset(f->s), pyctx_image_layout(f->img)->ts_context);
    }
    return otel_sdk_sample(f->s, &f->r, WORD, published);
}

static void expect_span(const struct fix *f, const struct sample_span *got)
{
    struct sample_span want;
    pyctx_image_ids(f->img, &want);
    if (!got->set)
        fail_msg("3.%u: no span", pyctx_image_layout(f->img)->minor);
    assert_memory_equal(got->trace_id, want.trace_id, 16);
    assert_memory_equal(got->span_id, want.span_id, 8);
}

static void expect_stats(const struct fix *f, uint64_t threads, uint64_t spans, uint64_t none,
                         uint64_t torn, uint64_t faults)
{
    struct otel_sdk_stats s = otel_sdk_stats(f->s);
    if (s.threads != threads || s.spans != spans || s.none != none || s.torn != torn ||
        s.faults != faults)
        fail_msg("3.%u: stats threads %" PRIu64 " spans %" PRIu64 " none %" PRIu64 " torn %" PRIu64
                 " faults %" PRIu64 ", expected %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
                 " %" PRIu64,
                 pyctx_image_layout(f->img)->minor, s.threads, s.spans, s.none, s.torn, s.faults,
                 threads, spans, none, torn, faults);
}

/* ---- the chain, every version ------------------------------------------------------------ */

/*
 * Every version and every shape of HAMT and attribute storage: the thread in
 * a span gets its ids (big-endian), the threads whose context has the SDK's
 * Context without a span, has no SDK variable, or is NULL get none; new ids
 * (with the Context's version moved on) are read on the next sample.
 */
static void test_otel_sdk__versions(void **state)
{
    (void)state;
    static const unsigned shapes[] = {
        0,
        PYCTX_IMAGE_ARRAY_ROOT,
        PYCTX_IMAGE_COLLISION,
        PYCTX_IMAGE_ARRAY_ROOT | PYCTX_IMAGE_COLLISION,
        PYCTX_IMAGE_FOLD_HASH,
        PYCTX_IMAGE_ATTR_DICT,
        PYCTX_IMAGE_SPLIT_DICT,
        PYCTX_IMAGE_ATTR_DICT | PYCTX_IMAGE_SPLIT_DICT,
    };
    for (unsigned minor = 9; minor <= 15; minor++) {
        for (size_t k = 0; k < PYPROFD_ARRAY_SIZE(shapes); k++) {
            struct fix f;
            fix_open(&f, minor, shapes[k]);
            fix_thread(&f, 0, addr(&f, PYCTX_IMAGE_CONTEXT_NOSDK));
            fix_thread(&f, 1, addr(&f, PYCTX_IMAGE_CONTEXT));
            fix_thread(&f, 2, addr(&f, PYCTX_IMAGE_CONTEXT_NOSPAN));
            fix_thread(&f, 3, 0);
            const struct sample_span *s = fix_sample(&f, NULL);
            assert_int_equal(otel_sdk_state(f.s), OTEL_SDK_ACTIVE);
            assert_string_equal(otel_sdk_why(f.s), "");
            assert_false(s[0].set);
            expect_span(&f, &s[1]);
            assert_false(s[2].set);
            assert_false(s[3].set);
            expect_stats(&f, 4, 1, 3, 0, 0);
            assert_int_equal(otel_sdk_stats(f.s).searches, 1);

            static const uint8_t tid[16] = {0x80, 1, 2,  3,  4,  5,  6,  7,
                                            8,    9, 10, 11, 12, 13, 14, 15};
            static const uint8_t sid[8] = {0xff, 0xee, 0, 0, 0, 0, 0, 0x01};
            pyctx_image_set_ids(f.img, tid, sid);
            pyctx_image_bump_version(f.img);
            s = fix_sample(&f, NULL);
            expect_span(&f, &s[1]);
            assert_memory_equal(s[1].trace_id, tid, 16);
            assert_memory_equal(s[1].span_id, sid, 8);
            expect_stats(&f, 8, 2, 6, 0, 0);
            /* the thread whose Context did not change: from the memo (3.9-3.13) */
            assert_int_equal(otel_sdk_stats(f.s).cached, minor <= 13 ? 1 : 0);
            assert_int_equal(otel_sdk_stats(f.s).searches, 1);
            fix_close(&f);
        }
    }
}

/*
 * No span: the Context without the span key, a span whose _context is unset
 * (a NULL values slot or a deleted dict entry), a span id of 0
 * (INVALID_SPAN). Each is "none", never torn or a fault, and the span comes
 * back when it is set again.
 */
static void test_otel_sdk__no_span(void **state)
{
    (void)state;
    static const unsigned shapes[] = {0, PYCTX_IMAGE_ATTR_DICT, PYCTX_IMAGE_SPLIT_DICT,
                                      PYCTX_IMAGE_ATTR_DICT | PYCTX_IMAGE_SPLIT_DICT};
    for (unsigned minor = 9; minor <= 15; minor++) {
        for (size_t k = 0; k < PYPROFD_ARRAY_SIZE(shapes); k++) {
            struct fix f;
            fix_open(&f, minor, shapes[k]);
            fix_thread(&f, 0, addr(&f, PYCTX_IMAGE_CONTEXT));
            /* first seen without a span: the key is looked for by its text */
            pyctx_image_in_span(f.img, false);
            const struct sample_span *s = fix_sample(&f, NULL);
            assert_int_equal(otel_sdk_state(f.s), OTEL_SDK_ACTIVE);
            assert_false(s[0].set);
            expect_stats(&f, 1, 0, 1, 0, 0);
            pyctx_image_in_span(f.img, true);
            s = fix_sample(&f, NULL);
            expect_span(&f, &s[0]);

            pyctx_image_set_attr(f.img, 0);
            pyctx_image_bump_version(f.img);
            s = fix_sample(&f, NULL);
            assert_false(s[0].set);
            expect_stats(&f, 3, 1, 2, 0, 0);
            pyctx_image_set_attr(f.img, addr(&f, PYCTX_IMAGE_SPANCONTEXT));
            pyctx_image_bump_version(f.img);
            s = fix_sample(&f, NULL);
            expect_span(&f, &s[0]);

            /* INVALID_SPAN: a span id of 0, whatever the trace id */
            static const uint8_t tid[16] = {1};
            static const uint8_t zero[8] = {0};
            pyctx_image_set_ids(f.img, tid, zero);
            pyctx_image_bump_version(f.img);
            s = fix_sample(&f, NULL);
            assert_false(s[0].set);
            expect_stats(&f, 5, 2, 3, 0, 0);
            /* a trace id of 0 with a span id is still a span */
            static const uint8_t sid[8] = {0, 0, 0, 0, 0, 0, 0, 7};
            static const uint8_t tzero[16] = {0};
            pyctx_image_set_ids(f.img, tzero, sid);
            pyctx_image_bump_version(f.img);
            s = fix_sample(&f, NULL);
            expect_span(&f, &s[0]);
            fix_close(&f);
        }
    }
}

/* A span the target published itself wins and is not looked at; threads not sampled neither. */
static void test_otel_sdk__published_wins(void **state)
{
    (void)state;
    for (unsigned minor = 9; minor <= 15; minor++) {
        struct fix f;
        fix_open(&f, minor, 0);
        for (size_t i = 0; i < 4; i++)
            fix_thread(&f, i, addr(&f, PYCTX_IMAGE_CONTEXT));
        f.th[3].status = SAMPLE_READ_FAULT;
        struct sample_span pub[NTHREADS];
        memset(pub, 0, sizeof(pub));
        memset(pub[0].trace_id, 0x11, 16);
        memset(pub[0].span_id, 0x22, 8);
        pub[0].set = true;
        memset(pub[2].trace_id, 0x33, 16); /* not set: the SDK's is read */
        const struct sample_span *s = fix_sample(&f, pub);
        assert_true(s[0].set);
        assert_memory_equal(s[0].trace_id, pub[0].trace_id, 16);
        assert_memory_equal(s[0].span_id, pub[0].span_id, 8);
        expect_span(&f, &s[1]);
        expect_span(&f, &s[2]);
        assert_false(s[3].set);
        expect_stats(&f, 2, 2, 0, 0, 0);
        /* published ones are kept even for threads not sampled */
        pub[3] = pub[0];
        s = fix_sample(&f, pub);
        assert_true(s[3].set);
        assert_memory_equal(s[3].span_id, pub[0].span_id, 8);
        assert_int_equal(otel_sdk_stats(f.s).threads, 4);
        fix_close(&f);
    }
}

/* ---- torn and faulting chains --------------------------------------------------------------- */

/*
 * A reader that, right after the first read covering @watch, writes @value at
 * @at (through the image): the thread setting a variable (ctx_vars replaced)
 * while the chain is read.
 */
struct mover {
    struct memread *inner;
    struct pyctx_image *img;
    uint64_t watch, at, value;
    bool fired;
};

static int mover_readv(void *priv, const struct memread_iov *iov, size_t n)
{
    struct mover *mv = priv;
    int err = memread_readv(mv->inner, iov, n);
    for (size_t i = 0; i < n && !mv->fired; i++) {
        if (iov[i].raddr <= mv->watch && mv->watch - iov[i].raddr < iov[i].len) {
            mv->fired = true;
            pyctx_image_poke64(mv->img, mv->at, mv->value);
        }
    }
    return err;
}

static const struct memread_ops mover_ops = {.name = "mover", .readv = mover_readv};

/* ctx_vars changes between the first read of it and the check after the ints: torn, no span. */
static void test_otel_sdk__torn_when_context_moves(void **state)
{
    (void)state;
    for (unsigned minor = 9; minor <= 15; minor++) {
        struct fix f;
        fix_open(&f, minor, 0);
        const struct pyctx_layout *l = pyctx_image_layout(f.img);
        fix_thread(&f, 0, addr(&f, PYCTX_IMAGE_CONTEXT));
        fix_thread(&f, 1, addr(&f, PYCTX_IMAGE_CONTEXT_NOSPAN));
        /* found first, with the plain reader */
        const struct sample_span *s = fix_sample(&f, NULL);
        expect_span(&f, &s[0]);

        struct mover mv = {.inner = f.mr,
                           .img = f.img,
                           .watch = addr(&f, PYCTX_IMAGE_SPANCONTEXT),
                           .at = addr(&f, PYCTX_IMAGE_CONTEXT) + l->ctx_vars,
                           .value = addr(&f, PYCTX_IMAGE_HAMT_SPARE)};
        /* a new Context dict for the thread, so that 3.9-3.13 do not answer from the memo */
        pyctx_image_bump_version(f.img);
        otel_sdk_free(f.s);
        f.s = NULL;
        f.inner = f.mr;
        assert_int_equal(memread_new_custom(&mover_ops, &mv, &f.mr), 0);
        s = fix_sample(&f, NULL);
        assert_true(mv.fired);
        assert_false(s[0].set); /* no label rather than one of another context */
        assert_false(s[1].set);
        expect_stats(&f, 2, 0, 1, 1, 0);
        /* the next sample reads the new HAMT whole */
        s = fix_sample(&f, NULL);
        expect_span(&f, &s[0]);
        expect_stats(&f, 4, 1, 2, 1, 0);
        fix_close(&f);
    }
}

/* An object of the chain that is not of its place's type: torn (freed, reused). */
static void test_otel_sdk__torn_type_mismatch(void **state)
{
    (void)state;
    static const enum pyctx_image_obj objs[] = {
        PYCTX_IMAGE_CONTEXT,     PYCTX_IMAGE_HAMT,      PYCTX_IMAGE_OTEL_CONTEXT, PYCTX_IMAGE_SPAN,
        PYCTX_IMAGE_SPANCONTEXT, PYCTX_IMAGE_TRACE_INT, PYCTX_IMAGE_SPAN_INT};
    for (unsigned minor = 9; minor <= 15; minor++) {
        for (size_t k = 0; k < PYPROFD_ARRAY_SIZE(objs); k++) {
            struct fix f;
            fix_open(&f, minor, 0);
            const struct pyctx_layout *l = pyctx_image_layout(f.img);
            fix_thread(&f, 0, addr(&f, PYCTX_IMAGE_CONTEXT));
            const struct sample_span *s = fix_sample(&f, NULL);
            expect_span(&f, &s[0]);
            /* the object now looks like another kind the reader knows */
            uint64_t o = addr(&f, objs[k]) + l->ob_type;
            uint64_t was;
            assert_int_equal(memread_read(f.mr, o, &was, 8), 0);
            uint64_t other =
                addr(&f, objs[k] == PYCTX_IMAGE_TRACE_INT || objs[k] == PYCTX_IMAGE_SPAN_INT
                             ? PYCTX_IMAGE_TYPE_HAMT
                             : PYCTX_IMAGE_TYPE_INT);
            pyctx_image_poke64(f.img, o, other);
            pyctx_image_bump_version(f.img);
            s = fix_sample(&f, NULL);
            assert_false(s[0].set);
            expect_stats(&f, 2, 1, 0, 1, 0);
            pyctx_image_poke64(f.img, o, was);
            pyctx_image_bump_version(f.img);
            s = fix_sample(&f, NULL);
            expect_span(&f, &s[0]);
            assert_int_equal(otel_sdk_state(f.s), OTEL_SDK_ACTIVE);
            fix_close(&f);
        }
    }
}

/* An object that cannot be read is a fault of its thread alone. */
static void test_otel_sdk__faults(void **state)
{
    (void)state;
    for (unsigned minor = 9; minor <= 15; minor++) {
        struct fix f;
        fix_open(&f, minor, 0);
        const struct pyctx_layout *l = pyctx_image_layout(f.img);
        fix_thread(&f, 0, addr(&f, PYCTX_IMAGE_CONTEXT));
        fix_thread(&f, 1, UNMAPPED); /* a context pointer to nothing */
        const struct sample_span *s = fix_sample(&f, NULL);
        expect_span(&f, &s[0]);
        assert_false(s[1].set);
        expect_stats(&f, 2, 1, 0, 0, 1);
        /* the trace id's int unmapped */
        pyctx_image_poke64(f.img, addr(&f, PYCTX_IMAGE_SPANCONTEXT) + l->tuple_item, UNMAPPED);
        pyctx_image_bump_version(f.img);
        f.r.nthreads = 1;
        s = fix_sample(&f, NULL);
        assert_false(s[0].set);
        expect_stats(&f, 3, 1, 0, 0, 2);
        /* the process gone */
        memread_fake_fail_next(f.fake, -ESRCH);
        s = fix_sample(&f, NULL);
        assert_false(s[0].set);
        assert_int_equal(otel_sdk_state(f.s), OTEL_SDK_ACTIVE);
        fix_close(&f);
    }
}

/* ---- ints ------------------------------------------------------------------------------- */

/* Negative ints and ints longer than an id are refused (torn); the longest ids are read. */
static void test_otel_sdk__ints(void **state)
{
    (void)state;
    static const uint8_t ff16[16] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                     0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    for (unsigned minor = 9; minor <= 15; minor++) {
        struct fix f;
        fix_open(&f, minor, 0);
        fix_thread(&f, 0, addr(&f, PYCTX_IMAGE_CONTEXT));
        /* 2^128 - 1 and 2^64 - 1: 5 and 3 digits */
        pyctx_image_set_ids(f.img, ff16, ff16);
        const struct sample_span *s = fix_sample(&f, NULL);
        expect_span(&f, &s[0]);
        assert_memory_equal(s[0].trace_id, ff16, 16);
        assert_memory_equal(s[0].span_id, ff16, 8);

        struct {
            uint64_t digits;
            bool trace, negative;
        } bad[] = {{5, true, true},   {3, false, true},    {6, true, false},
                   {4, false, false}, {1000, true, false}, {UINT64_MAX >> 3, false, false}};
        uint64_t torn = 0;
        for (size_t k = 0; k < PYPROFD_ARRAY_SIZE(bad); k++) {
            pyctx_image_int_size(f.img, bad[k].trace, bad[k].digits, bad[k].negative);
            pyctx_image_bump_version(f.img);
            s = fix_sample(&f, NULL);
            if (s[0].set)
                fail_msg("3.%u: int %zu accepted", minor, k);
            assert_int_equal(otel_sdk_stats(f.s).torn, ++torn);
            pyctx_image_int_size(f.img, bad[k].trace, bad[k].trace ? 5 : 3, false);
            pyctx_image_bump_version(f.img);
            s = fix_sample(&f, NULL);
            expect_span(&f, &s[0]);
        }
        /* 5 digits of which the top one has bits past 128 */
        uint64_t top =
            addr(&f, PYCTX_IMAGE_TRACE_INT) + pyctx_image_layout(f.img)->long_digits + 16;
        uint32_t d = 0x3fffffffu;
        pyctx_image_poke(f.img, top, &d, 4);
        pyctx_image_bump_version(f.img);
        s = fix_sample(&f, NULL);
        assert_false(s[0].set);
        assert_int_equal(otel_sdk_stats(f.s).torn, ++torn);
        fix_close(&f);
    }
}

/*
 * An int at the end of its mapping (as a real one at the end of a page):
 * read as far as it goes. Digits it claims past the mapping are not made up
 * from whatever the reader's buffer held.
 */
static void test_otel_sdk__int_at_end_of_mapping(void **state)
{
    (void)state;
    for (unsigned minor = 9; minor <= 15; minor++) {
        struct fix f;
        fix_open(&f, minor, 0);
        const struct pyctx_layout *l = pyctx_image_layout(f.img);
        fix_thread(&f, 0, addr(&f, PYCTX_IMAGE_CONTEXT));
        const struct sample_span *s = fix_sample(&f, NULL);
        expect_span(&f, &s[0]);

        /* a span id int of 2 digits in the last 32 bytes of a page */
        const uint64_t page_end = 0x7f6600002000ull;
        uint8_t seg[64] = {0};
        uint8_t *o = seg + sizeof(seg) - 32;
        uint64_t t_int = addr(&f, PYCTX_IMAGE_TYPE_INT);
        memcpy(o + l->ob_type, &t_int, 8);
        uint64_t size = minor >= 12 ? 2u << 3 : 2u;
        memcpy(o + l->long_size, &size, 8);
        uint32_t d0 = 0x2aaaaaaau, d1 = 0x15u;
        memcpy(o + l->long_digits, &d0, 4);
        memcpy(o + l->long_digits + 4, &d1, 4);
        assert_int_equal(memread_fake_add(f.fake, page_end - sizeof(seg), seg, sizeof(seg)), 0);
        uint64_t at_int = page_end - 32;
        pyctx_image_poke64(f.img, addr(&f, PYCTX_IMAGE_SPANCONTEXT) + l->tuple_item + 8, at_int);
        pyctx_image_bump_version(f.img);
        s = fix_sample(&f, NULL);
        assert_true(s[0].set);
        /* 0x15 << 30 | 0x2aaaaaaa = 0x56aaaaaaa */
        static const uint8_t want[8] = {0, 0, 0, 0x05, 0x6a, 0xaa, 0xaa, 0xaa};
        assert_memory_equal(s[0].span_id, want, 8);

        /* the same int claiming a third digit, past the end of the mapping */
        size = minor >= 12 ? 3u << 3 : 3u;
        assert_int_equal(memread_fake_poke(f.fake, at_int + l->long_size, &size, 8), 0);
        pyctx_image_bump_version(f.img);
        uint64_t torn = otel_sdk_stats(f.s).torn, faults = otel_sdk_stats(f.s).faults;
        s = fix_sample(&f, NULL);
        assert_false(s[0].set);
        assert_int_equal(otel_sdk_stats(f.s).torn + otel_sdk_stats(f.s).faults, torn + faults + 1);
        fix_close(&f);
    }
}

/* ---- finding the variable, checking the layout ----------------------------------------------- */

/* A target without the SDK is looked at again only once a second has passed. */
static void test_otel_sdk__search_rate(void **state)
{
    (void)state;
    for (unsigned minor = 9; minor <= 15; minor++) {
        struct fix f;
        fix_open(&f, minor, 0);
        fix_thread(&f, 0, addr(&f, PYCTX_IMAGE_CONTEXT_NOSDK));
        fix_thread(&f, 1, 0);
        const struct sample_span *s = fix_sample(&f, NULL);
        assert_false(s[0].set);
        assert_int_equal(otel_sdk_state(f.s), OTEL_SDK_SEARCHING);
        assert_non_null(strstr(otel_sdk_why(f.s), "current_context"));
        assert_int_equal(otel_sdk_stats(f.s).searches, 1);
        assert_int_equal(otel_sdk_stats(f.s).threads, 0);

        /* the SDK imported meanwhile: not looked for before the second is over */
        f.th[1].words[WORD] = addr(&f, PYCTX_IMAGE_CONTEXT);
        unsigned calls = memread_fake_calls(f.fake);
        clock_fake_advance(&f.cf, SECOND - 1);
        s = fix_sample(&f, NULL);
        assert_false(s[1].set);
        assert_int_equal(memread_fake_calls(f.fake), calls); /* nothing read at all */
        assert_int_equal(otel_sdk_stats(f.s).searches, 1);
        assert_int_equal(otel_sdk_state(f.s), OTEL_SDK_SEARCHING);
        clock_fake_advance(&f.cf, 1);
        s = fix_sample(&f, NULL);
        assert_int_equal(otel_sdk_stats(f.s).searches, 2);
        assert_int_equal(otel_sdk_state(f.s), OTEL_SDK_ACTIVE);
        assert_string_equal(otel_sdk_why(f.s), "");
        assert_false(s[0].set);
        expect_span(&f, &s[1]);
        /* found: no more searches */
        clock_fake_advance(&f.cf, 10 * SECOND);
        s = fix_sample(&f, NULL);
        expect_span(&f, &s[1]);
        assert_int_equal(otel_sdk_stats(f.s).searches, 2);
        fix_close(&f);
    }
}

/*
 * A layout that disagrees with the process stops the reader for good, with
 * the reason: a type's size, ContextVar's member table, a stored hash that
 * does not find the variable.
 */
static void test_otel_sdk__layout_invalid(void **state)
{
    (void)state;
    for (unsigned minor = 9; minor <= 15; minor++) {
        for (unsigned k = 0; k < 5; k++) {
            struct fix f;
            fix_open(&f, minor, 0);
            const struct pyctx_layout *l = pyctx_image_layout(f.img);
            struct pyctx_model m;
            assert_true(pyctx_model_for(minor, &m));
            fix_thread(&f, 0, addr(&f, PYCTX_IMAGE_CONTEXT));
            const char *reason = NULL;
            switch (k) {
            case 0:
                pyctx_image_poke64(f.img, addr(&f, PYCTX_IMAGE_TYPE_CONTEXT) + l->tp_basicsize,
                                   l->ctx_size + 8);
                reason = m.context_type;
                break;
            case 1:
                pyctx_image_poke64(f.img, addr(&f, PYCTX_IMAGE_TYPE_HAMT) + l->tp_itemsize, 8);
                reason = "hamt";
                break;
            case 2: /* ContextVar's first member elsewhere */
                pyctx_image_poke64(f.img, addr(&f, PYCTX_IMAGE_MEMBERS) + 16, l->var_name + 8);
                reason = "first member";
                break;
            case 3:
                pyctx_image_poke64(f.img, addr(&f, PYCTX_IMAGE_TYPE_INT) + l->tp_basicsize,
                                   l->long_digits + 8);
                reason = "int";
                break;
            default: /* the hash the variable keeps is not the one it was placed by */
                pyctx_image_poke64(f.img, addr(&f, PYCTX_IMAGE_VAR) + l->var_hash, 0x77);
                reason = "stored hash";
                break;
            }
            const struct sample_span *s = fix_sample(&f, NULL);
            assert_false(s[0].set);
            assert_int_equal(otel_sdk_state(f.s), OTEL_SDK_INVALID);
            if (!strstr(otel_sdk_why(f.s), reason) || !strstr(otel_sdk_why(f.s), "layout check"))
                fail_msg("3.%u case %u: why \"%s\"", minor, k, otel_sdk_why(f.s));
            /* for good: neither searched nor read again */
            uint64_t searches = otel_sdk_stats(f.s).searches;
            unsigned calls = memread_fake_calls(f.fake);
            clock_fake_advance(&f.cf, 10 * SECOND);
            s = fix_sample(&f, NULL);
            assert_false(s[0].set);
            assert_int_equal(otel_sdk_stats(f.s).searches, searches);
            assert_int_equal(memread_fake_calls(f.fake), calls);
            assert_int_equal(otel_sdk_state(f.s), OTEL_SDK_INVALID);
            fix_close(&f);
        }
    }
}

/*
 * A HAMT whose nodes point back at themselves (memory reused under the
 * read): the search ends after a bounded number of reads.
 */
static void test_otel_sdk__cyclic_hamt(void **state)
{
    (void)state;
    for (unsigned minor = 9; minor <= 15; minor++) {
        for (unsigned array = 0; array < 2; array++) {
            struct fix f;
            fix_open(&f, minor, array ? PYCTX_IMAGE_ARRAY_ROOT : 0);
            const struct pyctx_layout *l = pyctx_image_layout(f.img);
            uint64_t root;
            assert_int_equal(
                memread_read(f.mr, addr(&f, PYCTX_IMAGE_HAMT) + l->hamt_root, &root, 8), 0);
            if (array) {
                for (unsigned i = 0; i < 32; i++)
                    pyctx_image_poke64(f.img, root + l->array_array + 8 * i, root);
            } else {
                /* every pair of the root a sub-tree: the root itself */
                uint64_t nwords;
                assert_int_equal(memread_read(f.mr, root + l->ob_size, &nwords, 8), 0);
                for (uint64_t i = 0; i + 1 < nwords; i += 2) {
                    pyctx_image_poke64(f.img, root + l->bitmap_array + 8 * i, 0);
                    pyctx_image_poke64(f.img, root + l->bitmap_array + 8 * i + 8, root);
                }
            }
            fix_thread(&f, 0, addr(&f, PYCTX_IMAGE_CONTEXT));
            unsigned calls = memread_fake_calls(f.fake);
            const struct sample_span *s = fix_sample(&f, NULL);
            assert_false(s[0].set);
            assert_int_equal(otel_sdk_state(f.s), OTEL_SDK_SEARCHING);
            if (memread_fake_calls(f.fake) - calls > 2000)
                fail_msg("3.%u: %u reads for one search", minor,
                         memread_fake_calls(f.fake) - calls);
            fix_close(&f);
        }
    }
}

/* ---- the memo (3.9-3.13) ------------------------------------------------------------------- */

/*
 * A thread whose Context dict is the one it had, with the same version tag,
 * is answered from the memo (3.9-3.13: dicts there carry a version no other
 * dict ever has); a new version, another dict or another thread reads again.
 * 3.14+ has no version tag and always reads.
 */
static void test_otel_sdk__memo(void **state)
{
    (void)state;
    for (unsigned minor = 9; minor <= 15; minor++) {
        bool memo = minor <= 13;
        struct fix f;
        fix_open(&f, minor, 0);
        fix_thread(&f, 0, addr(&f, PYCTX_IMAGE_CONTEXT));
        const struct sample_span *s = fix_sample(&f, NULL);
        expect_span(&f, &s[0]);
        struct sample_span old = s[0];
        assert_int_equal(otel_sdk_stats(f.s).cached, 0);
        s = fix_sample(&f, NULL);
        expect_span(&f, &s[0]);
        assert_int_equal(otel_sdk_stats(f.s).cached, memo ? 1 : 0);
        expect_stats(&f, 2, 2, 0, 0, 0);

        /* the ints changed behind the version's back: the memo does not see it */
        static const uint8_t tid[16] = {9, 9, 9};
        static const uint8_t sid[8] = {7, 7, 7};
        pyctx_image_set_ids(f.img, tid, sid);
        s = fix_sample(&f, NULL);
        assert_true(s[0].set);
        assert_memory_equal(s[0].span_id, memo ? old.span_id : sid, 8);
        assert_int_equal(otel_sdk_stats(f.s).cached, memo ? 2 : 0);
        /* a new version is read */
        pyctx_image_bump_version(f.img);
        s = fix_sample(&f, NULL);
        expect_span(&f, &s[0]);
        assert_int_equal(otel_sdk_stats(f.s).cached, memo ? 2 : 0);
        /* another thread (tstate) with the same context is not answered from thread 0's memo */
        f.th[0].tstate_raddr = TSTATE(3);
        s = fix_sample(&f, NULL);
        expect_span(&f, &s[0]);
        assert_int_equal(otel_sdk_stats(f.s).cached, memo ? 2 : 0);
        /* a "no span" answer is remembered too */
        pyctx_image_in_span(f.img, false);
        s = fix_sample(&f, NULL);
        assert_false(s[0].set);
        s = fix_sample(&f, NULL);
        assert_false(s[0].set);
        assert_int_equal(otel_sdk_stats(f.s).cached, memo ? 3 : 0);
        expect_stats(&f, 7, 5, 2, 0, 0);
        fix_close(&f);
    }
}

/* ---- lifecycle ------------------------------------------------------------------------------ */

static void test_otel_sdk__new_refuses(void **state)
{
    (void)state;
    struct memread_fake *fake;
    struct memread *mr;
    assert_int_equal(memread_fake_open(&fake, &mr), 0);
    struct otel_sdk *const untouched = (struct otel_sdk *)(uintptr_t)0x5d5d0;
    struct otel_sdk *s = untouched;
    char why[160];
    static const struct {
        unsigned minor;
        bool ft;
    } no[] = {{8, false}, {16, false}, {0, false}, {13, true}, {14, true}, {15, true}};
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(no); i++) {
        why[0] = '\0';
        assert_int_equal(otel_sdk_new(mr, no[i].minor, no[i].ft, NULL, &s, why, sizeof(why)),
                         -ENOTSUP);
        assert_true(s == untouched);
        assert_non_null(strstr(why, "3.9-3.15"));
        assert_true(!no[i].ft || strstr(why, "free-threaded"));
    }
    for (unsigned minor = 9; minor <= 15; minor++) {
        s = NULL;
        assert_int_equal(otel_sdk_new(mr, minor, false, NULL, &s, why, sizeof(why)), 0);
        assert_non_null(s);
        assert_int_equal(otel_sdk_state(s), OTEL_SDK_SEARCHING);
        assert_int_equal(otel_sdk_context_offset(s), pyctx_layout_for(minor)->ts_context);
        /* a word past the thread's words: nothing read */
        struct unwind_thread th = {.status = SAMPLE_OK};
        struct unwind_result r = {.nthreads = 1, .threads = &th};
        const struct sample_span *sp = otel_sdk_sample(s, &r, UNWIND_THREAD_WORDS, NULL);
        assert_false(sp[0].set);
        assert_int_equal(otel_sdk_stats(s).searches, 0);
        otel_sdk_free(s);
    }
    otel_sdk_free(NULL);
    memread_free(mr);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_otel_sdk__versions),
        cmocka_unit_test(test_otel_sdk__no_span),
        cmocka_unit_test(test_otel_sdk__published_wins),
        cmocka_unit_test(test_otel_sdk__torn_when_context_moves),
        cmocka_unit_test(test_otel_sdk__torn_type_mismatch),
        cmocka_unit_test(test_otel_sdk__faults),
        cmocka_unit_test(test_otel_sdk__ints),
        cmocka_unit_test(test_otel_sdk__int_at_end_of_mapping),
        cmocka_unit_test(test_otel_sdk__search_rate),
        cmocka_unit_test(test_otel_sdk__layout_invalid),
        cmocka_unit_test(test_otel_sdk__cyclic_hamt),
        cmocka_unit_test(test_otel_sdk__memo),
        cmocka_unit_test(test_otel_sdk__new_refuses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
