/* SPDX-License-Identifier: MIT */
/*
 * Tests for agent/unwind/otel_thread.c: the OpenTelemetry thread context
 * (OTEP 4947). Records and attributes parsed from bytes written here; the
 * per-sample read over a fake image of threads (thread pointers, static TLS,
 * a dtv and its blocks for the dynamic models) and a hand-made unwind
 * result, with a reader that moves a thread's pointer between the two reads.
 */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include "memread_fake.h"
#include "unwind/otel_thread.h"

/* ---- records ------------------------------------------------------------------------ */

/* A record's fixed part: ids from @seed (trace id seed+0..15, span id seed+16..23, all 0 when
 * @seed is 0), and @valid, @attrs_size. */
static void record(uint8_t r[OTEL_THREAD_RECORD_SIZE], uint8_t seed, uint8_t valid,
                   uint16_t attrs_size)
{
    memset(r, 0, OTEL_THREAD_RECORD_SIZE);
    for (unsigned i = 0; i < 24 && seed; i++)
        r[i] = (uint8_t)(seed + i);
    r[24] = valid;
    r[25] = 1; /* trace flags: sampled */
    memcpy(r + 26, &attrs_size, 2);
}

static void expect_ids(const struct sample_span *s, uint8_t seed)
{
    assert_true(s->set);
    for (unsigned i = 0; i < 16; i++)
        assert_int_equal(s->trace_id[i], (uint8_t)(seed + i));
    for (unsigned i = 0; i < 8; i++)
        assert_int_equal(s->span_id[i], (uint8_t)(seed + 16 + i));
}

static void test_otel_thread__parse_record(void **state)
{
    (void)state;
    uint8_t buf[OTEL_THREAD_RECORD_SIZE + 1];
    uint8_t *r = buf + 1; /* any alignment */
    struct otel_thread_record rec;

    record(r, 0x40, 1, 0x0203);
    assert_int_equal(otel_thread_parse_record(r, OTEL_THREAD_RECORD_SIZE, &rec), 0);
    expect_ids(&rec.span, 0x40);
    assert_int_equal(rec.valid, 1);
    assert_int_equal(rec.attrs_size, 0x0203); /* host order */

    /* valid is 1 and nothing else */
    for (unsigned v = 0; v < 256; v++) {
        if (v == 1)
            continue;
        record(r, 0x40, (uint8_t)v, 0);
        assert_int_equal(otel_thread_parse_record(r, OTEL_THREAD_RECORD_SIZE, &rec), -EAGAIN);
        assert_false(rec.span.set);
    }
    /* valid, no ids: no span */
    record(r, 0, 1, 0);
    assert_int_equal(otel_thread_parse_record(r, OTEL_THREAD_RECORD_SIZE, &rec), 0);
    assert_false(rec.span.set);
    /* one id byte is enough to be in a span */
    r[23] = 0x01;
    assert_int_equal(otel_thread_parse_record(r, OTEL_THREAD_RECORD_SIZE, &rec), 0);
    assert_true(rec.span.set);
    assert_int_equal(rec.span.span_id[7], 0x01);
    /* short */
    record(r, 0x40, 1, 0);
    assert_int_equal(otel_thread_parse_record(r, OTEL_THREAD_RECORD_SIZE - 1, &rec), -EINVAL);
    assert_false(rec.span.set);
    assert_int_equal(otel_thread_parse_record(r, 0, &rec), -EINVAL);
}

struct seen {
    uint8_t key[8];
    char value[8][32];
    size_t n;
};

static void on_attr(void *arg, uint8_t key, const char *value, size_t vlen)
{
    struct seen *s = arg;
    assert_true(s->n < 8);
    assert_true(vlen < 32);
    s->key[s->n] = key;
    memcpy(s->value[s->n], value, vlen);
    s->value[s->n][vlen] = '\0';
    s->n++;
}

static void test_otel_thread__attrs(void **state)
{
    (void)state;
    /* route, method, an index past the map, route again, an empty value, then
     * an entry cut short */
    static const uint8_t a[] = {0,   4, '/', 'a', 'p', 'i', 1,   3,   'G', 'E', 'T', 9, 2,   'x',
                                'y', 0, 5,   '/', 'b', 'o', 'o', 't', 1,   0,   1,   9, 'z', 'z'};
    struct seen s = {.n = 0};
    assert_int_equal(otel_thread_attrs(a, sizeof(a), 2, on_attr, &s), 5);
    assert_int_equal(s.n, 4);
    assert_int_equal(s.key[0], 0);
    assert_string_equal(s.value[0], "/api");
    assert_int_equal(s.key[1], 1);
    assert_string_equal(s.value[1], "GET");
    assert_int_equal(s.key[2], 0); /* repeated: reported again, the caller keeps the last */
    assert_string_equal(s.value[2], "/boot");
    assert_int_equal(s.key[3], 1);
    assert_string_equal(s.value[3], "");

    /* every key beyond a map of one */
    s.n = 0;
    assert_int_equal(otel_thread_attrs(a, sizeof(a), 1, on_attr, &s), 5);
    assert_int_equal(s.n, 2);
    assert_string_equal(s.value[1], "/boot");
    /* no map: nothing reported, the entries still walked */
    s.n = 0;
    assert_int_equal(otel_thread_attrs(a, sizeof(a), 0, on_attr, &s), 5);
    assert_int_equal(s.n, 0);
    assert_int_equal(otel_thread_attrs(a, sizeof(a), 256, NULL, NULL), 5);

    /* whole entries only */
    s.n = 0;
    assert_int_equal(otel_thread_attrs(a, 5, 2, on_attr, &s), 0); /* 2 + 4 needed */
    assert_int_equal(otel_thread_attrs(a, 6, 2, on_attr, &s), 1);
    assert_int_equal(otel_thread_attrs(a, 1, 2, on_attr, &s), 0);
    assert_int_equal(otel_thread_attrs(a, 0, 2, on_attr, &s), 0);
    static const uint8_t empty_last[] = {1, 0};
    assert_int_equal(otel_thread_attrs(empty_last, 2, 2, NULL, NULL), 1);
}

/* ---- per sample, over a fake image ---------------------------------------------------- */

#define NTHREADS      8
#define TP(i)         (0x7f1000000000ull + (uint64_t)(i)*0x100000u)
#define REC(i)        (0x600000000000ull + (uint64_t)(i)*0x1000u)
#define DTV(i)        (0x610000000000ull + (uint64_t)(i)*0x1000u)
#define BLOCK(i)      (0x620000000000ull + (uint64_t)(i)*0x1000u)
#define STATIC_OFFSET (-0x80ll)
#define MODULE        3u
#define VAR_OFFSET    0x10u

struct timg {
    struct memread_fake *fake;
    struct memread *mr;
    struct otel_thread_locator loc;
    struct otel_thread *t;
    struct unwind_thread th[NTHREADS];
    struct unwind_result r;
};

static void timg_open(struct timg *m, enum otel_thread_model model)
{
    memset(m, 0, sizeof(*m));
    assert_int_equal(memread_fake_open(&m->fake, &m->mr), 0);
    m->loc.model = model;
    m->loc.tp_offset = STATIC_OFFSET;
    m->loc.module = MODULE;
    m->loc.offset = VAR_OFFSET;
    snprintf(m->loc.file, sizeof(m->loc.file), "/usr/lib/libotel-tracer.so");
    m->r.threads = m->th;
}

static void timg_close(struct timg *m)
{
    otel_thread_free(m->t);
    memread_free(m->mr);
}

static void put64(struct timg *m, uint64_t raddr, uint64_t v)
{
    assert_int_equal(memread_fake_poke(m->fake, raddr, &v, 8), 0);
}

/* Thread @i (TID 1000 + i): its TCB and the static TLS below it, zeroed. */
static void timg_thread(struct timg *m, size_t i)
{
    static const uint8_t zero[0x2000];
    assert_int_equal(memread_fake_add(m->fake, TP(i) - 0x1000, zero, sizeof(zero)), 0);
    m->th[i] = (struct unwind_thread){
        .status = SAMPLE_OK, .thread_id = TP(i), .native_thread_id = 1000 + i};
    if (m->r.nthreads <= i)
        m->r.nthreads = i + 1;
}

/* A record of @seed at REC(i). */
static void timg_record(struct timg *m, size_t i, uint8_t seed, uint8_t valid)
{
    uint8_t r[64] = {0};
    record(r, seed, valid, 0);
    assert_int_equal(memread_fake_add(m->fake, REC(i), r, sizeof(r)), 0);
}

/* Thread @i's variable, for the static models. */
static uint64_t static_var(size_t i)
{
    return TP(i) + (uint64_t)STATIC_OFFSET;
}

/* Thread @i's dtv (of @len entries) with dtv[MODULE] = @block; the block itself mapped when it
 * is BLOCK(i). Returns the variable's address, or 0. */
static uint64_t timg_dtv(struct timg *m, size_t i, uint64_t len, uint64_t block)
{
    static const uint8_t zero[0x200];
    assert_int_equal(memread_fake_add(m->fake, DTV(i) - 16, zero, sizeof(zero)), 0);
    put64(m, TP(i) + 8, DTV(i));
    put64(m, DTV(i) - 16, len);
    put64(m, DTV(i) + 16 * MODULE, block);
    if (block != BLOCK(i))
        return 0;
    assert_int_equal(memread_fake_add(m->fake, BLOCK(i), zero, sizeof(zero)), 0);
    return BLOCK(i) + VAR_OFFSET;
}

static const struct sample_span *timg_sample(struct timg *m)
{
    if (!m->t) {
        assert_int_equal(otel_thread_new(m->mr, &m->loc, &m->t), 0);
        assert_int_equal(otel_thread_locator_of(m->t)->model, m->loc.model);
        assert_string_equal(otel_thread_locator_of(m->t)->file, m->loc.file);
    }
    return otel_thread_sample(m->t, &m->r);
}

static void expect_stats(const struct timg *m, uint64_t threads, uint64_t spans, uint64_t none,
                         uint64_t torn, uint64_t unallocated, uint64_t faults)
{
    struct otel_thread_stats s = otel_thread_stats(m->t);
    if (s.threads != threads || s.spans != spans || s.none != none || s.torn != torn ||
        s.unallocated != unallocated || s.faults != faults)
        fail_msg("stats threads %" PRIu64 " spans %" PRIu64 " none %" PRIu64 " torn %" PRIu64
                 " unallocated %" PRIu64 " faults %" PRIu64 ", expected %" PRIu64 " %" PRIu64
                 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64,
                 s.threads, s.spans, s.none, s.torn, s.unallocated, s.faults, threads, spans, none,
                 torn, unallocated, faults);
}

/*
 * The static models (TLSDESC in static TLS, initial exec, local exec): the
 * variable at tp + offset. Threads in a span, with no record, with a record
 * being written, with a record without ids, and threads not looked at.
 */
static void test_otel_thread__static_models(void **state)
{
    (void)state;
    static const enum otel_thread_model models[] = {OTEL_TLS_DESC_STATIC, OTEL_TLS_IE, OTEL_TLS_LE};
    for (size_t k = 0; k < PYPROFD_ARRAY_SIZE(models); k++) {
        struct timg m;
        timg_open(&m, models[k]);
        for (size_t i = 0; i < 7; i++)
            timg_thread(&m, i);
        timg_record(&m, 0, 0x10, 1);
        put64(&m, static_var(0), REC(0));
        /* 1: NULL */
        timg_record(&m, 2, 0x30, 0); /* being written */
        put64(&m, static_var(2), REC(2));
        timg_record(&m, 3, 0, 1); /* no ids */
        put64(&m, static_var(3), REC(3));
        /* 4: not sampled (its frames failed), 5: no thread pointer */
        timg_record(&m, 4, 0x50, 1);
        put64(&m, static_var(4), REC(4));
        m.th[4].status = SAMPLE_INCOMPLETE;
        m.th[5].thread_id = 0;
        timg_record(&m, 6, 0x70, 1);
        put64(&m, static_var(6), REC(6));

        unsigned calls = memread_fake_calls(m.fake);
        const struct sample_span *s = timg_sample(&m);
        assert_int_equal(memread_fake_calls(m.fake) - calls, 2); /* pointers, then records */
        expect_ids(&s[0], 0x10);
        expect_ids(&s[6], 0x70);
        for (size_t i = 1; i < 6; i++)
            assert_false(s[i].set);
        expect_stats(&m, 5, 2, 2, 1, 0, 0);

        /* the next sample starts afresh: a thread that left its span has none */
        put64(&m, static_var(0), 0);
        s = timg_sample(&m);
        assert_false(s[0].set);
        expect_ids(&s[6], 0x70);
        expect_stats(&m, 10, 3, 5, 2, 0, 0);
        assert_string_equal(otel_thread_model_name(models[k]), k == 0   ? "tlsdesc-static"
                                                               : k == 1 ? "initial-exec"
                                                                        : "local-exec");
        timg_close(&m);
    }
    assert_string_equal(otel_thread_model_name(OTEL_TLS_NONE), "none");
    assert_string_equal(otel_thread_model_name(OTEL_TLS_DESC_DYNAMIC), "tlsdesc-dynamic");
    assert_string_equal(otel_thread_model_name(OTEL_TLS_GD), "general-dynamic");
    assert_string_equal(otel_thread_model_name((enum otel_thread_model)99), "?");
}

/*
 * The dynamic models (legacy general dynamic, TLSDESC in dynamic TLS): tp+8
 * is the dtv, dtv[-1] its length, dtv[module] the thread's block, the
 * variable at block + offset. A block the thread never allocated is no
 * record; the place, once found, is kept for the thread and not walked again.
 */
static void test_otel_thread__dynamic_models(void **state)
{
    (void)state;
    static const enum otel_thread_model models[] = {OTEL_TLS_GD, OTEL_TLS_DESC_DYNAMIC};
    for (size_t k = 0; k < PYPROFD_ARRAY_SIZE(models); k++) {
        struct timg m;
        timg_open(&m, models[k]);
        for (size_t i = 0; i < 6; i++)
            timg_thread(&m, i);
        uint64_t var0 = timg_dtv(&m, 0, 8, BLOCK(0));
        timg_record(&m, 0, 0x10, 1);
        put64(&m, var0, REC(0));
        (void)timg_dtv(&m, 1, 8, UINT64_MAX); /* TLS_DTV_UNALLOCATED */
        (void)timg_dtv(&m, 2, 8, 0);
        (void)timg_dtv(&m, 3, MODULE - 1, BLOCK(3));       /* a dtv too short for the module */
        uint64_t var4 = timg_dtv(&m, 4, MODULE, BLOCK(4)); /* the module is its last entry */
        timg_record(&m, 4, 0x40, 1);
        put64(&m, var4, REC(4));
        (void)timg_dtv(&m, 5, 8, BLOCK(5)); /* a block, NULL in it */

        const struct sample_span *s = timg_sample(&m);
        expect_ids(&s[0], 0x10);
        expect_ids(&s[4], 0x40);
        for (size_t i = 1; i < 4; i++)
            assert_false(s[i].set);
        assert_false(s[5].set);
        /* no block is no record: counted as unallocated, not among none */
        expect_stats(&m, 6, 2, 1, 0, 3, 0);

        /* the places found are kept: the dtv of thread 0 is not read again, and a
         * sample of kept places whose pointers held still since is one batched
         * read (pointer, record, pointer, record) */
        for (size_t i = 1; i < 4; i++)
            m.th[i].status = SAMPLE_READ_FAULT;
        memread_fake_watch(m.fake, DTV(0) - 16, 0x200);
        unsigned calls = memread_fake_calls(m.fake);
        s = timg_sample(&m);
        assert_int_equal(memread_fake_watched(m.fake), 0);
        assert_int_equal(memread_fake_calls(m.fake) - calls, 1);
        expect_ids(&s[0], 0x10);
        expect_ids(&s[4], 0x40);
        expect_stats(&m, 9, 4, 2, 0, 3, 0);

        /* a thread that allocates its block later is found then */
        for (size_t i = 1; i < 4; i++)
            m.th[i].status = SAMPLE_OK;
        put64(&m, DTV(1) + 16 * MODULE, BLOCK(1));
        uint8_t zero[0x20] = {0};
        assert_int_equal(memread_fake_add(m.fake, BLOCK(1), zero, sizeof(zero)), 0);
        timg_record(&m, 1, 0x11, 1);
        put64(&m, BLOCK(1) + VAR_OFFSET, REC(1));
        s = timg_sample(&m);
        expect_ids(&s[1], 0x11);
        expect_stats(&m, 15, 7, 3, 0, 5, 0);

        /* a new thread with the same thread pointer (another TID) is walked again */
        memread_fake_watch(m.fake, DTV(0) - 16, 0x200);
        m.th[0].native_thread_id = 2000;
        s = timg_sample(&m);
        assert_true(memread_fake_watched(m.fake) > 0);
        expect_ids(&s[0], 0x10);
        timg_close(&m);
    }
}

/* An unreadable dtv: a fault for that thread alone. */
static void test_otel_thread__dynamic_fault(void **state)
{
    (void)state;
    struct timg m;
    timg_open(&m, OTEL_TLS_GD);
    timg_thread(&m, 0);
    timg_thread(&m, 1);
    uint64_t var0 = timg_dtv(&m, 0, 8, BLOCK(0));
    timg_record(&m, 0, 0x10, 1);
    put64(&m, var0, REC(0));
    put64(&m, TP(1) + 8, 0xdead00000000ull); /* dtv unmapped */
    const struct sample_span *s = timg_sample(&m);
    expect_ids(&s[0], 0x10);
    assert_false(s[1].set);
    struct otel_thread_stats st = otel_thread_stats(m.t);
    assert_int_equal(st.threads, 2);
    assert_int_equal(st.spans, 1);
    assert_int_equal(st.faults, 1);
    assert_int_equal(st.torn, 0);
    assert_int_equal(st.unallocated, 0);
    timg_close(&m);
}

/*
 * A reader that moves thread 0's pointer to @to right after the first read
 * that covers it: the publisher switching records between the sample's two
 * reads.
 */
struct mover {
    struct memread *inner;
    struct memread_fake *fake;
    uint64_t watch, to;
    bool fired;
};

static int mover_readv(void *priv, const struct memread_iov *iov, size_t n)
{
    struct mover *mv = priv;
    int err = memread_readv(mv->inner, iov, n);
    for (size_t i = 0; i < n && !mv->fired; i++) {
        if (iov[i].raddr <= mv->watch && mv->watch - iov[i].raddr < iov[i].len) {
            mv->fired = true;
            assert_int_equal(memread_fake_poke(mv->fake, mv->watch, &mv->to, 8), 0);
        }
    }
    return err;
}

static const struct memread_ops mover_ops = {.name = "mover", .readv = mover_readv};

static void test_otel_thread__pointer_moved_is_torn(void **state)
{
    (void)state;
    struct timg m;
    timg_open(&m, OTEL_TLS_DESC_STATIC);
    timg_thread(&m, 0);
    timg_thread(&m, 1);
    timg_record(&m, 0, 0x10, 1);
    timg_record(&m, 2, 0x20, 1); /* the record thread 0 moves to */
    timg_record(&m, 1, 0x30, 1);
    put64(&m, static_var(0), REC(0));
    put64(&m, static_var(1), REC(1));
    struct mover mv = {.inner = m.mr, .fake = m.fake, .watch = static_var(0), .to = REC(2)};
    struct memread *inner = m.mr;
    assert_int_equal(memread_new_custom(&mover_ops, &mv, &m.mr), 0);

    const struct sample_span *s = timg_sample(&m);
    assert_true(mv.fired);
    assert_false(s[0].set); /* no label rather than a wrong one */
    expect_ids(&s[1], 0x30);
    expect_stats(&m, 2, 1, 0, 1, 0, 0);
    /* the next sample sees where it went */
    s = timg_sample(&m);
    expect_ids(&s[0], 0x20);
    expect_stats(&m, 4, 3, 0, 1, 0, 0);
    timg_close(&m);
    memread_free(inner);
}

/*
 * Reads that fault: thread 0's record is unmapped, thread 2's variable is;
 * each is a fault of its own thread, and the others still get their spans.
 */
static void test_otel_thread__faults_are_per_thread(void **state)
{
    (void)state;
    struct timg m;
    timg_open(&m, OTEL_TLS_DESC_STATIC);
    for (size_t i = 0; i < 4; i++)
        timg_thread(&m, i);
    put64(&m, static_var(0), 0x500000000000ull); /* nothing there */
    timg_record(&m, 1, 0x10, 1);
    put64(&m, static_var(1), REC(1));
    m.th[2].thread_id = 0x7e0000000000ull; /* a thread pointer with nothing mapped at it */
    timg_record(&m, 3, 0x30, 1);
    put64(&m, static_var(3), REC(3));
    const struct sample_span *s = timg_sample(&m);
    assert_false(s[0].set);
    expect_ids(&s[1], 0x10);
    assert_false(s[2].set);
    expect_ids(&s[3], 0x30);
    expect_stats(&m, 4, 2, 0, 0, 0, 2);

    /* a record that ends past its mapping is a fault too */
    uint8_t r[OTEL_THREAD_RECORD_SIZE];
    record(r, 0x77, 1, 0);
    assert_int_equal(memread_fake_add(m.fake, 0x5100000000ull, r, OTEL_THREAD_RECORD_SIZE - 1), 0);
    put64(&m, static_var(0), 0x5100000000ull);
    s = timg_sample(&m);
    assert_false(s[0].set);
    expect_ids(&s[1], 0x10);
    expect_stats(&m, 8, 4, 0, 0, 0, 4);

    /* the process gone: no spans, and no fault counted for it */
    memread_fake_fail_next(m.fake, -ESRCH);
    s = timg_sample(&m);
    for (size_t i = 0; i < 4; i++)
        assert_false(s[i].set);
    assert_int_equal(otel_thread_stats(m.t).faults, 4);
    assert_int_equal(otel_thread_stats(m.t).spans, 4);
    timg_close(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_otel_thread__parse_record),
        cmocka_unit_test(test_otel_thread__attrs),
        cmocka_unit_test(test_otel_thread__static_models),
        cmocka_unit_test(test_otel_thread__dynamic_models),
        cmocka_unit_test(test_otel_thread__dynamic_fault),
        cmocka_unit_test(test_otel_thread__pointer_moved_is_torn),
        cmocka_unit_test(test_otel_thread__faults_are_per_thread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
