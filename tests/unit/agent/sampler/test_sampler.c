/* SPDX-License-Identifier: MIT */
/* Tests for agent/sampler/sampler.c: when attempts are made (the jitter over
 * the fixed schedule); the sinks and their coalescing contract, and the torn
 * retry, over a synthetic process image (tests/support/pyimage.c). The stack
 * walk itself is covered by the unwinder's and the live tests. */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include "aggregate/agg.h"
#include "config/config_schema.h"
#include "memread_fake.h"
#include "procfs_fake.h"
#include "pyimage.h"
#include "sampler/nsampler.h"
#include "sampler/sampler.h"
#include "sampler/threadstat.h"
#include "unwind/otel_thread.h"

#define INTERVAL 10000000ull /* 100 Hz */
#define START    1000000000ull

static void test_sampler__first_attempt_is_due_at_once(void **state)
{
    (void)state;
    struct agg *a;
    struct sampler *s;
    assert_int_equal(agg_new(NULL, &a), 0);
    struct sampler_opts o = {.mode = PROFILE_WALL, .interval_ns = INTERVAL};
    /* wall mode without blocking never touches the unwinder before an attempt */
    struct sample_sink w = agg_sink(a);
    assert_int_equal(sampler_new(1, NULL, &w, &o, START, &s), 0);
    assert_int_equal(sampler_due(s), START);
    sampler_free(s);
    agg_free(a);
}

static void test_sampler__attempts_are_spread_over_each_whole_interval(void **state)
{
    (void)state;
    struct agg *a;
    struct sampler *s;
    assert_int_equal(agg_new(NULL, &a), 0);
    struct sampler_opts o = {.mode = PROFILE_WALL, .interval_ns = INTERVAL};
    struct sample_sink w = agg_sink(a);
    assert_int_equal(sampler_new(1, NULL, &w, &o, START, &s), 0);
    uint64_t buckets[10] = {0};
    uint64_t now = START;
    for (uint64_t k = 1; k <= 10000; k++) {
        sampler_idle(s, now); /* the attempt due now passes; the next is k intervals in */
        uint64_t due = sampler_due(s);
        uint64_t grid = START + k * INTERVAL;
        assert_true(due >= grid);
        assert_true(due < grid + INTERVAL); /* in its own interval */
        buckets[(due - grid) * 10 / INTERVAL]++;
        now = due;
    }
    /* roughly uniform: every tenth of the interval gets 1000 +- 20%, the last
     * ones too (a target whose period is the interval is seen all over it) */
    for (size_t i = 0; i < 10; i++)
        assert_true(buckets[i] > 800 && buckets[i] < 1200);
    /* the schedule itself did not move: nothing was missed */
    assert_int_equal(sampler_counts(s).missed, 0);
    assert_int_equal(sampler_counts_final(s).missed, 0);
    assert_int_equal(sampler_counts(s).skipped, 0);
    sampler_free(s);
    agg_free(a);
}

/*
 * An attempt made late, already in the next interval (its point was at the
 * end of its own, and the tick or the timer slack added some): the next one
 * is drawn from what is left of its interval, so it is not made at once (the
 * same moment sampled twice), and nothing counts as missed. One that is a
 * whole interval behind is due at once (catching up).
 */
static void test_sampler__a_late_attempt_leaves_the_next_its_own_moment(void **state)
{
    (void)state;
    struct agg *a;
    struct sampler *s;
    assert_int_equal(agg_new(NULL, &a), 0);
    struct sampler_opts o = {.mode = PROFILE_WALL, .interval_ns = INTERVAL};
    struct sample_sink w = agg_sink(a);
    assert_int_equal(sampler_new(1, NULL, &w, &o, START, &s), 0);
    sampler_idle(s, START);
    uint64_t lo = UINT64_MAX;
    for (uint64_t k = 1; k <= 1000; k++) {
        /* attempt k (due at grid) made 30% into interval k + 1 */
        uint64_t grid = START + k * INTERVAL;
        uint64_t now = grid + INTERVAL + 3 * INTERVAL / 10;
        sampler_idle(s, now);
        uint64_t due = sampler_due(s);
        assert_true(due > now);
        assert_true(due < grid + 2 * INTERVAL);
        lo = due - now < lo ? due - now : lo;
    }
    assert_true(lo < INTERVAL / 20); /* drawn from all that is left */
    assert_int_equal(sampler_counts_final(s).missed, 0);
    /* a whole interval and more behind: due at once */
    uint64_t now = START + 1003 * INTERVAL;
    sampler_idle(s, now);
    assert_true(sampler_due(s) <= now);
    sampler_free(s);
    agg_free(a);
}

static void test_sampler__skipped_runs_keep_the_grid(void **state)
{
    (void)state;
    struct agg *a;
    struct sampler *s;
    assert_int_equal(agg_new(NULL, &a), 0);
    struct sampler_opts o = {.mode = PROFILE_WALL, .interval_ns = INTERVAL};
    struct sample_sink w = agg_sink(a);
    assert_int_equal(sampler_new(1, NULL, &w, &o, START, &s), 0);
    sampler_skip(s, START, 5);
    uint64_t due = sampler_due(s);
    assert_true(due >= START + 5 * INTERVAL && due < START + 6 * INTERVAL);
    assert_int_equal(sampler_counts(s).skipped, 5);
    sampler_free(s);
    agg_free(a);
}

/*
 * missed while sampling goes on only grows (a counter in /metrics): a sampler
 * that falls 5 intervals behind and catches up shows no missed attempts, one
 * that stalls past the schedule's lag limit shows what it gave up, and the
 * final counts add what was still owed when sampling ended.
 */
static void test_sampler__missed_is_a_counter_while_sampling(void **state)
{
    (void)state;
    struct agg *a;
    struct sampler *s;
    assert_int_equal(agg_new(NULL, &a), 0);
    struct sampler_opts o = {.mode = PROFILE_WALL, .interval_ns = INTERVAL};
    struct sample_sink w = agg_sink(a);
    assert_int_equal(sampler_new(1, NULL, &w, &o, START, &s), 0);
    sampler_idle(s, START);
    /* 5 intervals late: late, not missed, and made up back to back */
    uint64_t now = START + 6 * INTERVAL;
    sampler_idle(s, now);
    assert_int_equal(sampler_counts(s).missed, 0);
    while (sampler_due(s) <= now)
        sampler_idle(s, now);
    assert_int_equal(sampler_counts(s).missed, 0);
    /* ending now would owe at most the attempt whose interval starts now (its
     * jittered time is still to come) */
    assert_true(sampler_counts_final(s).missed <= 1);
    /* stalled for 2 s (200 intervals, over the limit of 100): given up */
    now += 200 * INTERVAL;
    sampler_idle(s, now);
    uint64_t lost = sampler_counts(s).missed;
    assert_true(lost >= 195 && lost <= 200);
    for (int i = 0; i < 50; i++) {
        now = sampler_due(s) > now ? sampler_due(s) : now;
        sampler_idle(s, now);
        assert_int_equal(sampler_counts(s).missed, lost); /* never down */
    }
    /* ended 4 intervals late: those whose whole interval has gone by (2 at
     * least) are owed for good now */
    now += 4 * INTERVAL + INTERVAL / 2;
    sampler_idle(s, now);
    assert_int_equal(sampler_counts(s).missed, lost);
    assert_true(sampler_counts_final(s).missed >= lost + 2);
    sampler_free(s);
    agg_free(a);
}

/* ---- sinks, over a synthetic process ------------------------------------------ */

struct proc {
    struct pyimage *img;
    struct memread_fake *fake;
    struct memread *mr;
    struct unwinder *u;
    struct pyruntime rt;
    uint64_t entry; /* the interpreter's entry frame, below frames[0] */
    uint64_t frames[3];
};

enum proc_kind { PROC_WELL, PROC_CYCLE, PROC_UNINITIALIZED };

/* One thread (TID 7) in <module> -> main -> work; its chain may loop, or the
 * runtime may not be initialised yet. */
static void proc_open(struct proc *p, enum proc_kind kind)
{
    memset(p, 0, sizeof(*p));
    p->img = pyimage_new(13);
    assert_int_equal(memread_fake_open(&p->fake, &p->mr), 0);
    unsigned t = pyimage_thread(p->img, 7);
    p->entry = pyimage_push(p->img, t, PYABI_OWNER_INTERPRETER, 0, 0);
    p->frames[0] = pyimage_push(p->img, t, PYABI_OWNER_THREAD,
                                pyimage_code(p->img, "<module>", "/app/m.py", 0), 1);
    p->frames[1] = pyimage_push(p->img, t, PYABI_OWNER_THREAD,
                                pyimage_code(p->img, "main", "/app/m.py", 10), 2);
    p->frames[2] = pyimage_push(p->img, t, PYABI_OWNER_THREAD,
                                pyimage_code(p->img, "work", "/app/m.py", 20), 3);
    if (kind == PROC_CYCLE)
        pyimage_set_previous(p->img, p->frames[0], p->frames[2]);
    if (kind == PROC_UNINITIALIZED)
        pyimage_runtime_state(p->img, false, false);
    pyimage_install(p->img, p->fake, &p->rt);
    char why[256];
    if (unwinder_new(p->mr, &p->rt, &p->u, why, sizeof(why)))
        fail_msg("unwinder_new: %s", why);
}

static void proc_close(struct proc *p)
{
    unwinder_free(p->u);
    memread_free(p->mr);
    pyimage_free(p->img);
}

/* A sink that records what it was given. */
struct rec {
    unsigned adds, repeats;
    size_t nframes;
    char leaf[32];
    uint64_t tid;
    int64_t nanos;
    bool refuse;   /* add returns -ENOSPC (a full window) */
    bool span;     /* the last add carried a span ... */
    uint8_t span0; /* ... whose span id starts with this byte */
};

static int rec_add(void *arg, const struct sink_sample *x)
{
    struct rec *r = arg;
    r->adds++;
    r->nframes = x->nframes;
    snprintf(r->leaf, sizeof(r->leaf), "%s", x->frames[0].function);
    r->tid = x->thread_id;
    r->nanos = x->nanos;
    r->span = x->span != NULL;
    r->span0 = x->span ? x->span->span_id[0] : 0;
    return r->refuse ? -ENOSPC : 0;
}

static int rec_repeat(void *arg, const struct sink_sample *x)
{
    struct rec *r = arg;
    assert_null(x->frames); /* a repeat is not looked at */
    r->repeats++;
    return 0;
}

/*
 * The coalescing contract (sampler.h): an unchanged stack a sink took is
 * repeated, not added; a new tap starts with an add; a sink without repeat
 * always gets the stack; a sink that refused the last add gets an add; only
 * the window's takes count as thread samples; a removed tap gets nothing.
 */
static void test_sampler__sinks_get_every_stack_under_the_coalescing_contract(void **state)
{
    (void)state;
    struct proc p;
    proc_open(&p, PROC_WELL);
    struct rec win = {0}, tap = {0}, plain = {0};
    struct sample_sink w = {rec_add, rec_repeat, &win};
    struct sampler_opts o = {.mode = PROFILE_WALL, .interval_ns = INTERVAL};
    struct sampler *s;
    assert_int_equal(sampler_new(1, p.u, &w, &o, START, &s), 0);
    uint64_t now = START;
    assert_int_equal(sampler_attempt(s, now), 0);
    assert_int_equal(win.adds, 1);
    assert_int_equal(win.repeats, 0);
    assert_int_equal(win.nframes, 3);
    assert_string_equal(win.leaf, "work");
    assert_int_equal(win.tid, 7);
    assert_int_equal(win.nanos, (int64_t)INTERVAL);
    now = sampler_due(s);
    assert_int_equal(sampler_attempt(s, now), 0);
    assert_int_equal(win.adds, 1); /* the same stack: repeated */
    assert_int_equal(win.repeats, 1);
    /* a tap, and a sink without repeat */
    struct sample_sink t1 = {rec_add, rec_repeat, &tap}, t2 = {rec_add, NULL, &plain};
    assert_int_equal(sampler_add_tap(s, &t1), 0);
    assert_int_equal(sampler_add_tap(s, &t2), 0);
    for (int i = 0; i < 3; i++) {
        now = sampler_due(s);
        assert_int_equal(sampler_attempt(s, now), 0);
    }
    assert_int_equal(win.repeats, 4);
    assert_int_equal(tap.adds, 1); /* new: an add first, then repeats */
    assert_int_equal(tap.repeats, 2);
    assert_int_equal(plain.adds, 3);
    /* the window refuses (full): it is given the stack in full each time */
    win.refuse = true;
    struct sample_sink w2 = {rec_add, rec_repeat, &win};
    sampler_set_window(s, &w2);
    for (int i = 0; i < 2; i++) {
        now = sampler_due(s);
        assert_int_equal(sampler_attempt(s, now), 0);
    }
    assert_int_equal(win.adds, 3);
    assert_int_equal(win.repeats, 4);
    struct sampler_counts c = sampler_counts(s);
    assert_int_equal(c.taken, 7);
    assert_int_equal(c.thread_samples, 5); /* the window's takes only */
    /* taken off: gets nothing more */
    sampler_remove_tap(s, &tap);
    now = sampler_due(s);
    assert_int_equal(sampler_attempt(s, now), 0);
    assert_int_equal(tap.adds + tap.repeats, 5);
    assert_int_equal(plain.adds, 6);
    sampler_free(s);
    proc_close(&p);
}

/*
 * The trace context (unwind/otel_thread.h): a thread whose stack did not
 * change but whose span did is given in full (an add), with its new span, not
 * counted as a repeat of the stack it had in the old span; while the span
 * holds, the stack is repeated as before.
 */
static void test_sampler__a_new_span_is_no_repeat(void **state)
{
    (void)state;
    struct proc p;
    proc_open(&p, PROC_WELL);
    /* the thread's pointer (pyimage's thread pointer for TID 7, less 0x100)
     * and its record */
    uint64_t tp = 0x7f0000000000ull + 7, slot = tp - 0x100, rec_at = 0x900000, none = 0;
    uint8_t rec[28] = {0};
    rec[0] = 0x11;  /* trace id */
    rec[16] = 0xaa; /* span id */
    rec[24] = 1;    /* valid */
    assert_int_equal(memread_fake_add(p.fake, slot, &rec_at, sizeof(rec_at)), 0);
    assert_int_equal(memread_fake_add(p.fake, rec_at, rec, sizeof(rec)), 0);
    struct otel_thread_locator loc = {.model = OTEL_TLS_DESC_STATIC, .tp_offset = -0x100};
    struct otel_thread *ot;
    assert_int_equal(otel_thread_new(p.mr, &loc, &ot), 0);
    struct rec win = {0};
    struct sample_sink w = {rec_add, rec_repeat, &win};
    struct sampler_opts o = {.mode = PROFILE_WALL, .interval_ns = INTERVAL};
    struct sampler *s;
    assert_int_equal(sampler_new(1, p.u, &w, &o, START, &s), 0);
    assert_int_equal(sampler_set_trace_context(s, ot), 0);
    uint64_t now = START;
    assert_int_equal(sampler_attempt(s, now), 0);
    assert_int_equal(win.adds, 1);
    assert_true(win.span);
    assert_int_equal(win.span0, 0xaa);
    assert_int_equal(sampler_attempt(s, now = sampler_due(s)), 0);
    assert_int_equal(win.adds, 1); /* the same stack in the same span: repeated */
    assert_int_equal(win.repeats, 1);
    rec[16] = 0xbb; /* another span, the same stack */
    assert_int_equal(memread_fake_poke(p.fake, rec_at, rec, sizeof(rec)), 0);
    assert_int_equal(sampler_attempt(s, now = sampler_due(s)), 0);
    assert_int_equal(win.adds, 2);
    assert_int_equal(win.repeats, 1);
    assert_int_equal(win.span0, 0xbb);
    assert_int_equal(sampler_attempt(s, now = sampler_due(s)), 0);
    assert_int_equal(win.repeats, 2);
    /* out of any span: an add without one */
    assert_int_equal(memread_fake_poke(p.fake, slot, &none, sizeof(none)), 0);
    assert_int_equal(sampler_attempt(s, now = sampler_due(s)), 0);
    assert_int_equal(win.adds, 3);
    assert_false(win.span);
    assert_int_equal(otel_thread_stats(ot).spans, 4);
    sampler_free(s);
    otel_thread_free(ot);
    proc_close(&p);
}

/*
 * The tap limit: a sampler feeds as many taps as the HTTP server may admit
 * profile requests (server.max_concurrent_profiles' upper bound, 64), each
 * under the coalescing contract; one more is refused with -EBUSY (the
 * request would go without that target); a tap taken off frees its slot.
 */
static void test_sampler__feeds_as_many_taps_as_the_server_admits(void **state)
{
    (void)state;
    const struct config_key *k = config_schema_find(CONFIG_S_SERVER, "max_concurrent_profiles");
    assert_non_null(k);
    assert_int_equal(k->hi, CONFIG_MAX_CONCURRENT_PROFILES);
    assert_true(SAMPLER_MAX_TAPS >= k->hi);
    struct proc p;
    proc_open(&p, PROC_WELL);
    struct rec win = {0}, taps[SAMPLER_MAX_TAPS + 1];
    memset(taps, 0, sizeof(taps));
    struct sample_sink w = {rec_add, rec_repeat, &win};
    struct sampler_opts o = {.mode = PROFILE_WALL, .interval_ns = INTERVAL};
    struct sampler *s;
    assert_int_equal(sampler_new(1, p.u, &w, &o, START, &s), 0);
    for (size_t i = 0; i < SAMPLER_MAX_TAPS; i++) {
        struct sample_sink t = {rec_add, rec_repeat, &taps[i]};
        assert_int_equal(sampler_add_tap(s, &t), 0);
    }
    struct sample_sink extra = {rec_add, rec_repeat, &taps[SAMPLER_MAX_TAPS]};
    assert_int_equal(sampler_add_tap(s, &extra), -EBUSY);
    uint64_t now = START;
    for (int i = 0; i < 3; i++) {
        assert_int_equal(sampler_attempt(s, now), 0);
        now = sampler_due(s);
    }
    for (size_t i = 0; i < SAMPLER_MAX_TAPS; i++) {
        assert_int_equal(taps[i].adds, 1); /* each its own add first, then repeats */
        assert_int_equal(taps[i].repeats, 2);
    }
    assert_int_equal(taps[SAMPLER_MAX_TAPS].adds + taps[SAMPLER_MAX_TAPS].repeats, 0);
    assert_int_equal(sampler_counts(s).thread_samples, 3); /* the window's alone */
    /* one taken off in the middle: its slot takes the one refused before */
    sampler_remove_tap(s, &taps[SAMPLER_MAX_TAPS / 2]);
    assert_int_equal(sampler_add_tap(s, &extra), 0);
    assert_int_equal(sampler_attempt(s, now), 0);
    assert_int_equal(taps[SAMPLER_MAX_TAPS / 2].adds + taps[SAMPLER_MAX_TAPS / 2].repeats, 3);
    assert_int_equal(taps[SAMPLER_MAX_TAPS].adds, 1);
    assert_int_equal(taps[SAMPLER_MAX_TAPS - 1].repeats, 3);
    sampler_free(s);
    proc_close(&p);
}

/*
 * A torn read (status_torn()) is read again at once, one time, and counted
 * as retried; an outcome that is not torn is not read again.
 */
static void test_sampler__a_torn_read_is_read_again_once(void **state)
{
    (void)state;
    assert_true(status_torn(SAMPLE_CYCLE));
    assert_true(status_torn(SAMPLE_INCOMPLETE));
    assert_true(status_torn(SAMPLE_BAD_FRAME));
    assert_true(status_torn(SAMPLE_READ_FAULT));
    assert_true(status_torn(SAMPLE_ASYNC_TORN));
    assert_false(status_torn(SAMPLE_OK));
    assert_false(status_torn(SAMPLE_PROCESS_GONE));
    assert_false(status_torn(SAMPLE_TOO_DEEP));
    assert_false(status_torn(SAMPLE_NOT_INITIALIZED));
    assert_false(status_torn((enum sample_status)SAMPLE_STATUS_COUNT));
    struct proc p;
    proc_open(&p, PROC_CYCLE); /* a chain that loops, every time */
    struct rec win = {0};
    struct sample_sink w = {rec_add, rec_repeat, &win};
    struct sampler_opts o = {.mode = PROFILE_WALL, .interval_ns = INTERVAL};
    struct sampler *s;
    assert_int_equal(sampler_new(1, p.u, &w, &o, START, &s), 0);
    assert_int_equal(sampler_attempt(s, START), 0);
    struct sampler_counts c = sampler_counts(s);
    assert_int_equal(c.attempts, 1);
    assert_int_equal(c.failed, 1);
    assert_int_equal(c.failed_by[SAMPLE_CYCLE], 1);
    assert_int_equal(c.retried, 1);
    assert_int_equal(win.adds, 0);
    sampler_free(s);
    proc_close(&p);
    /* not initialised: no second read */
    proc_open(&p, PROC_UNINITIALIZED);
    assert_int_equal(sampler_new(1, p.u, &w, &o, START, &s), 0);
    assert_int_equal(sampler_attempt(s, START), 0);
    c = sampler_counts(s);
    assert_int_equal(c.failed_by[SAMPLE_NOT_INITIALIZED], 1);
    assert_int_equal(c.retried, 0);
    sampler_free(s);
    proc_close(&p);
}

/*
 * native_full: without blocking only in cpu mode, never with async; where the
 * kernel's samples cannot be had (here: no such process under the proc
 * root) the sampler falls back to the schedule with markers and says why.
 */
static void test_sampler__native_full_falls_back_saying_why(void **state)
{
    (void)state;
    struct proc p;
    proc_open(&p, PROC_WELL);
    struct rec win = {0};
    struct sample_sink w = {rec_add, rec_repeat, &win};
    struct sampler *s = NULL;
    struct sampler_opts o = {.mode = PROFILE_WALL,
                             .interval_ns = INTERVAL,
                             .native_full = true,
                             .proc_root = "/nonexistent-proc"};
    assert_int_equal(sampler_new(1, p.u, &w, &o, START, &s), -EINVAL);
    o.mode = PROFILE_CPU;
    /* (refused before the walker is looked at) */
    o.async = (struct asyncio *)(uintptr_t)1;
    assert_int_equal(sampler_new(1, p.u, &w, &o, START, &s), -EINVAL);
    o.async = NULL;
    assert_int_equal(sampler_new(1, p.u, &w, &o, START, &s), 0);
    const char *why = sampler_native(s);
    assert_non_null(why);
    assert_true(strncmp(why, "markers: ", 9) == 0);
    assert_true(strlen(why) > 9);
    assert_int_equal(sampler_native_fd(s), -1);
    assert_int_equal(sampler_native_drain(s, START), 0);
    struct nsampler_counts nc;
    assert_false(sampler_native_counts(s, &nc));
    /* on the schedule as usual: due at once, an attempt counted */
    assert_int_equal(sampler_due(s), START);
    assert_int_equal(sampler_attempt(s, START), 0);
    assert_int_equal(sampler_counts(s).attempts, 1);
    sampler_free(s);
    /* not asked: nothing to say */
    o.native_full = false;
    assert_int_equal(sampler_new(1, p.u, &w, &o, START, &s), 0);
    assert_null(sampler_native(s));
    sampler_free(s);
    proc_close(&p);
}

/*
 * cpu mode (issue 38; idle_check off here, so no watch says anything): the
 * thread's schedstat gives its CPU time and its stat file its state, and
 * its credit (sampler/cpucredit.h) pays 'R' attempts what it earned, so the
 * samples add up to its CPU time, never to its time waiting for a CPU; an
 * attempt that finds it asleep pays nothing, the next 'R' one what is owed,
 * one stack for several intervals.
 */
static void test_sampler__cpu_mode_counts_cpu_time_not_waiting(void **state)
{
    (void)state;
    struct proc p;
    proc_open(&p, PROC_WELL);
    struct procfs_fake *f = procfs_fake_new(1700000000);
    procfs_fake_add(f, 1, "python", 0);
    procfs_fake_thread(f, 1, 7, "worker", 'R');
    const uint64_t tick = INTERVAL;
    struct rec win = {0};
    struct sample_sink w = {rec_add, rec_repeat, &win};
    struct sampler_opts o = {.mode = PROFILE_CPU,
                             .interval_ns = tick,
                             .proc_root = procfs_fake_root(f),
                             .idle_check = IDLE_CHECK_OFF};
    struct sampler *s;
    assert_int_equal(sampler_new(1, p.u, &w, &o, START, &s), 0);
    /* (state, CPU time in intervals) at each attempt, and the thread samples counted so far */
    static const struct {
        char state;
        uint64_t ticks;
        uint64_t samples;
    } steps[] = {
        {'R', 100, 0},                /* the first look only starts */
        {'R', 101, 1},                /* ran an interval */
        {'R', 101, 1},                /* waited for a CPU all along: 'R', not counted */
        {'R', 102, 2}, {'S', 105, 2}, /* ran three intervals, asleep now: owed */
        {'R', 105, 5},                /* paid at once, on this stack */
        {'D', 105, 5},
    };
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(steps); i++) {
        procfs_fake_thread_cpu(f, 1, 7, "worker", steps[i].state, steps[i].ticks * tick, true);
        uint64_t now = i == 0 ? START : sampler_due(s);
        assert_int_equal(sampler_attempt(s, now), 0);
        if (sampler_counts(s).thread_samples != steps[i].samples)
            fail_msg("attempt %zu: %" PRIu64 " thread samples, not %" PRIu64, i,
                     sampler_counts(s).thread_samples, steps[i].samples);
    }
    assert_int_equal(win.nanos, (int64_t)tick); /* each sample one interval */
    assert_int_equal(win.adds + win.repeats, 5);
    /* 'R' all along, running one interval in three (two others take turns) */
    uint64_t before = sampler_counts(s).thread_samples;
    for (uint64_t k = 1; k <= 300; k++) {
        procfs_fake_thread_cpu(f, 1, 7, "worker", 'R', (105 + k / 3) * tick, true);
        assert_int_equal(sampler_attempt(s, sampler_due(s)), 0);
    }
    assert_int_equal(sampler_counts(s).thread_samples - before, 100);
    assert_int_equal(sampler_counts(s).taken, PYPROFD_ARRAY_SIZE(steps) + 300);
    sampler_free(s);
    /* a kernel without schedstat: the CPU time from the stat file, in clock ticks */
    procfs_fake_unlink(f, "1/schedstat");
    procfs_fake_unlink(f, "1/task/7/schedstat");
    o.interval_ns = threadstat_tick_ns();
    assert_int_equal(sampler_new(1, p.u, &w, &o, START, &s), 0);
    for (uint64_t k = 0; k <= 30; k++) {
        uint64_t cpu = (1000 + 2 * (k / 3)) * o.interval_ns; /* 2 ticks every 3 attempts */
        procfs_fake_thread_cpu(f, 1, 7, "worker", 'R', cpu, false);
        assert_int_equal(sampler_attempt(s, k == 0 ? START : sampler_due(s)), 0);
    }
    assert_int_equal(sampler_counts(s).thread_samples, 20);
    sampler_free(s);
    procfs_fake_free(f);
    proc_close(&p);
}

/*
 * cpu mode: a stack the credit paid for but that could not be read (torn:
 * its chain loops, every read) is owed again, so the samples still add up
 * to the CPU time once the stack reads well (issue 38).
 */
static void test_sampler__cpu_mode_owes_a_torn_read_again(void **state)
{
    (void)state;
    struct proc p;
    proc_open(&p, PROC_CYCLE);
    struct procfs_fake *f = procfs_fake_new(1700000000);
    procfs_fake_add(f, 1, "python", 0);
    procfs_fake_thread(f, 1, 7, "worker", 'R');
    struct rec win = {0};
    struct sample_sink w = {rec_add, rec_repeat, &win};
    struct sampler_opts o = {.mode = PROFILE_CPU,
                             .interval_ns = INTERVAL,
                             .proc_root = procfs_fake_root(f),
                             .idle_check = IDLE_CHECK_OFF};
    struct sampler *s;
    assert_int_equal(sampler_new(1, p.u, &w, &o, START, &s), 0);
    for (uint64_t k = 0; k <= 3; k++) { /* running all along; each read torn */
        procfs_fake_thread_cpu(f, 1, 7, "worker", 'R', (100 + k) * INTERVAL, true);
        assert_int_equal(sampler_attempt(s, k == 0 ? START : sampler_due(s)), 0);
    }
    assert_int_equal(sampler_counts(s).failed, 3);
    assert_int_equal(sampler_counts(s).thread_samples, 0);
    /* the chain mended: the next reads pay what the torn ones could not */
    pyimage_set_previous(p.img, p.frames[0], p.entry);
    pyimage_install(p.img, p.fake, &p.rt);
    for (uint64_t k = 4; k <= 5; k++) {
        procfs_fake_thread_cpu(f, 1, 7, "worker", 'R', (100 + k) * INTERVAL, true);
        assert_int_equal(sampler_attempt(s, sampler_due(s)), 0);
    }
    assert_int_equal(sampler_counts(s).thread_samples, 5); /* 5 intervals of CPU time */
    assert_string_equal(win.leaf, "work");
    sampler_free(s);
    procfs_fake_free(f);
    proc_close(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sampler__missed_is_a_counter_while_sampling),
        cmocka_unit_test(test_sampler__first_attempt_is_due_at_once),
        cmocka_unit_test(test_sampler__attempts_are_spread_over_each_whole_interval),
        cmocka_unit_test(test_sampler__a_late_attempt_leaves_the_next_its_own_moment),
        cmocka_unit_test(test_sampler__skipped_runs_keep_the_grid),
        cmocka_unit_test(test_sampler__sinks_get_every_stack_under_the_coalescing_contract),
        cmocka_unit_test(test_sampler__a_new_span_is_no_repeat),
        cmocka_unit_test(test_sampler__feeds_as_many_taps_as_the_server_admits),
        cmocka_unit_test(test_sampler__a_torn_read_is_read_again_once),
        cmocka_unit_test(test_sampler__native_full_falls_back_saying_why),
        cmocka_unit_test(test_sampler__cpu_mode_counts_cpu_time_not_waiting),
        cmocka_unit_test(test_sampler__cpu_mode_owes_a_torn_read_again),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
