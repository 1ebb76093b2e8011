/* SPDX-License-Identifier: MIT */
/*
 * Tests for agent/daemon/fleet.c: slots taken at the first tick boundary at
 * or after their due time and never early, one pass per boundary with late
 * slots again in it after the others (rounds), the wheel
 * under every change; the fixed schedules of many targets under it (every
 * attempt made, none missed at light load, missed when starved, the random
 * phase kept); the budget factor falling and recovering, the share of
 * attempts the credit lets through. Pure arithmetic: times and CPU readings
 * are made up.
 */
#include "base/compat.h"

#include <math.h>

#include "cmocka_wrap.h"

#include "base/hash.h"

#include "daemon/fleet.h"
#include "sampler/schedule.h"

#define SEC 1000000000ull

#define MS 1000000ull
#define US 1000ull

static uint64_t xorshift(uint64_t *x)
{
    *x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
    return *x;
}

/* Collects at @now and pops everything: how many came out, and checks each was due. */
static size_t pass(struct fleet *f, uint64_t now, struct fleet_slot **out, size_t max)
{
    size_t n = 0;
    fleet_collect(f, now);
    struct fleet_slot *s;
    while ((s = fleet_pop(f))) {
        assert_true(s->due <= now); /* never early */
        assert_true(n < max);
        out[n++] = s;
    }
    return n;
}

static void test_fleet__taken_at_the_first_boundary_at_or_after_due(void **state)
{
    (void)state;
    struct fleet *f;
    assert_int_equal(fleet_new(64, &f), 0);
    assert_true(fleet_tick(f) == MS);
    struct fleet_slot s[64], extra;
    uint64_t x = 88172645463325252ull, t0 = 5000 * SEC;
    for (size_t i = 0; i < 64; i++)
        assert_int_equal(fleet_add(f, &s[i], t0 + xorshift(&x) % (50 * MS)), 0);
    assert_int_equal(fleet_add(f, &extra, t0), -ENOSPC);
    assert_int_equal(fleet_count(f), 64);
    /* wake where the fleet says, as the thread does; each slot comes out at
     * the boundary that is the first at or after its due time, once */
    size_t seen = 0, wakes = 0;
    for (uint64_t now = fleet_next_wake(f); now != UINT64_MAX; now = fleet_next_wake(f)) {
        struct fleet_slot *out[64];
        size_t n = pass(f, now, out, 64);
        assert_true(n > 0); /* no wake-up for nothing */
        for (size_t i = 0; i < n; i++) {
            assert_true(now % MS == 0);
            assert_true(out[i]->due > now - MS); /* not a tick late */
            fleet_remove(f, out[i]);
        }
        seen += n;
        wakes++;
    }
    assert_int_equal(seen, 64);
    assert_true(wakes <= 50); /* 64 due times over 50 ticks: coalesced */
    assert_int_equal(fleet_count(f), 0);
    fleet_free(f);
}

static void test_fleet__put_back_late_comes_again_after_the_others(void **state)
{
    (void)state;
    struct fleet *f;
    assert_int_equal(fleet_new(4, &f), 0);
    struct fleet_slot a, b, c;
    uint64_t now = 1000 * MS;
    assert_int_equal(fleet_add(f, &a, now - 20 * MS), 0); /* 20 ms late */
    assert_int_equal(fleet_add(f, &b, now - 1 * MS), 0);
    assert_int_equal(fleet_add(f, &c, now + 3 * MS + 1), 0);
    assert_int_equal(fleet_next_wake(f), 980 * MS);
    assert_int_equal(fleet_collect(f, now), 2);
    struct fleet_slot *first = fleet_pop(f), *other = first == &a ? &b : &a;
    assert_true(first == &a || first == &b);
    /* still due after its attempt: ready again, but only after the other */
    fleet_update(f, first, now - 10 * MS);
    assert_int_equal(fleet_next_wake(f), 0);
    assert_ptr_equal(fleet_pop(f), other);
    fleet_update(f, other, now + 10 * MS);
    assert_ptr_equal(fleet_pop(f), first);
    /* due exactly at the collect's time: still this pass */
    fleet_update(f, first, now);
    assert_ptr_equal(fleet_pop(f), first);
    /* due after it: the wheel, not this pass */
    fleet_update(f, first, now + 1);
    assert_null(fleet_pop(f));
    assert_int_equal(fleet_next_wake(f), now + MS);
    assert_int_equal(pass(f, now + MS, (struct fleet_slot *[4]){0}, 4), 1);
    fleet_update(f, first, now + 100 * MS);
    /* c: due 1 ns after a boundary, taken at the next one */
    assert_int_equal(fleet_next_wake(f), now + 4 * MS);
    assert_int_equal(pass(f, now + 4 * MS - 1, (struct fleet_slot *[4]){0}, 4), 0);
    struct fleet_slot *out[4];
    assert_int_equal(pass(f, now + 4 * MS, out, 4), 1);
    assert_ptr_equal(out[0], &c);
    /* removed while waiting for its next round: gone from it */
    assert_int_equal(fleet_collect(f, now + 10 * MS), 1);
    assert_ptr_equal(fleet_pop(f), other);
    fleet_update(f, other, now);
    fleet_remove(f, other);
    assert_null(fleet_pop(f));
    assert_int_equal(fleet_next_wake(f), now + 100 * MS);
    fleet_free(f);
}

/*
 * Issue 37: a slot put back with its attempts already due (a parked target
 * whose thread woke) is taken in the pass at hand; added the plain way it
 * waits for the first boundary not collected yet (a tick and the timer
 * slack away: after a 2 ms run of the thread that woke, at 1 kHz).
 */
static void test_fleet__added_ready_is_taken_at_once(void **state)
{
    (void)state;
    struct fleet *f;
    assert_int_equal(fleet_new(3, &f), 0);
    struct fleet_slot a, b, c;
    uint64_t now = 1000 * MS + 300 * US;
    assert_int_equal(fleet_add(f, &a, now - 500 * US), 0); /* boundary 1000 ms */
    assert_int_equal(fleet_collect(f, now), 1);            /* this boundary's pass */
    assert_ptr_equal(fleet_pop(f), &a);
    fleet_update(f, &a, now + 50 * MS);
    /* in the same tick, later: due before now, but this boundary is collected */
    now += 100 * US;
    assert_int_equal(fleet_add(f, &b, now - 2 * MS), 0);
    assert_int_equal(fleet_collect(f, now), 0);
    assert_int_equal(fleet_next_wake(f), 1001 * MS);
    assert_int_equal(fleet_add_ready(f, &c, now - 2 * MS), 0);
    assert_int_equal(fleet_next_wake(f), 0);
    assert_int_equal(fleet_collect(f, now), 1);
    assert_ptr_equal(fleet_pop(f), &c);
    assert_null(fleet_pop(f));
    /* its next attempt still due: again in this pass; then the wheel as any */
    fleet_update(f, &c, now - 1 * MS);
    assert_ptr_equal(fleet_pop(f), &c);
    fleet_update(f, &c, now + 2 * MS);
    assert_null(fleet_pop(f));
    assert_int_equal(fleet_count(f), 3);
    assert_int_equal(fleet_add_ready(f, &c, now), -ENOSPC);
    /* removed while ready */
    fleet_remove(f, &b);
    assert_int_equal(fleet_add_ready(f, &b, now), 0);
    fleet_remove(f, &b);
    assert_int_equal(fleet_collect(f, now), 0);
    assert_int_equal(fleet_count(f), 2);
    fleet_free(f);
}

static void test_fleet__remove_from_anywhere_and_grow(void **state)
{
    (void)state;
    struct fleet *f;
    assert_int_equal(fleet_new(2, &f), 0);
    struct fleet_slot a, b, c;
    assert_int_equal(fleet_add(f, &a, 30 * MS), 0);
    assert_int_equal(fleet_add(f, &b, 10 * MS), 0);
    assert_int_equal(fleet_add(f, &c, 20 * MS), -ENOSPC);
    assert_int_equal(fleet_grow(f, 8), 0);
    assert_int_equal(fleet_add(f, &c, 10 * MS), 0);
    /* b and c ready; remove one from the ready list, one waiting */
    assert_int_equal(fleet_collect(f, 10 * MS), 2);
    fleet_remove(f, &c);
    fleet_remove(f, &a);
    assert_ptr_equal(fleet_pop(f), &b);
    assert_null(fleet_pop(f));
    fleet_remove(f, &b); /* popped */
    assert_int_equal(fleet_count(f), 0);
    assert_true(fleet_next_wake(f) == UINT64_MAX);
    fleet_free(f);
}

static void test_fleet__far_ahead_waits_for_its_turn(void **state)
{
    (void)state;
    struct fleet *f;
    assert_int_equal(fleet_new(2, &f), 0);
    struct fleet_slot a;
    uint64_t far = (3 * FLEET_WHEEL + 7) * MS; /* three turns of the wheel on */
    assert_int_equal(fleet_add(f, &a, far), 0);
    uint64_t now = 0, wakes = 0;
    struct fleet_slot *out[2];
    for (;;) {
        now = fleet_next_wake(f);
        wakes++;
        if (pass(f, now, out, 2))
            break;
    }
    assert_true(now == far);
    assert_true(wakes == 1); /* no early look per turn of the wheel */
    fleet_free(f);
}

static void test_fleet__set_tick_refiles(void **state)
{
    (void)state;
    struct fleet *f;
    assert_int_equal(fleet_new(4, &f), 0);
    struct fleet_slot a, b;
    assert_int_equal(fleet_add(f, &a, 10 * MS + 100 * US), 0);
    assert_int_equal(fleet_add(f, &b, 10 * MS + 700 * US), 0);
    struct fleet_slot *out[4];
    assert_int_equal(pass(f, 10 * MS, out, 4), 0);
    assert_int_equal(fleet_next_wake(f), 11 * MS);
    fleet_set_tick(f, 250 * US);
    assert_true(fleet_tick(f) == 250 * US);
    assert_int_equal(fleet_next_wake(f), 10 * MS + 250 * US);
    assert_int_equal(pass(f, 10 * MS + 250 * US, out, 4), 1);
    assert_ptr_equal(out[0], &a);
    assert_int_equal(fleet_next_wake(f), 10 * MS + 750 * US);
    fleet_free(f);
}

/*
 * The sampling thread over the fleet, with each target's fixed schedule and
 * a random phase in each interval (schedule_jitter(), as sampler_due() has):
 * wakes where the fleet says, or at @starve_at sleeps @starve_ns once (the
 * thread cannot run), and makes every attempt collected.
 */
struct sim_target {
    struct fleet_slot slot;
    struct schedule sched;
    uint64_t jitter;
    struct rand_state rng;
    uint64_t phase_hist[10]; /* attempts by tenth of the interval after the grid */
    uint64_t last;           /* the last attempt's time */
    uint64_t repeats;        /* attempts made in a pass that had already taken it */
};

static uint64_t sim_due(const struct sim_target *t)
{
    return schedule_due(&t->sched) + t->jitter;
}

static uint64_t sim_run(struct fleet *f, uint64_t from, uint64_t until, uint64_t starve_at,
                        uint64_t starve_ns)
{
    uint64_t wakes = 0, now = from;
    for (;;) {
        uint64_t wake = fleet_next_wake(f);
        if (wake > now)
            now = wake;
        if (starve_ns && now >= starve_at) {
            now += starve_ns;
            starve_ns = 0;
        }
        if (now >= until)
            break;
        wakes++;
        fleet_collect(f, now);
        struct fleet_slot *s;
        bool repeating = false; /* a target came a second time in this pass */
        while ((s = fleet_pop(f))) {
            struct sim_target *st = (struct sim_target *)(void *)s;
            assert_true(now >= sim_due(st));
            bool again = st->last == now && st->sched.attempts > 0;
            /* rounds: once a late target comes again, every target due at
             * this boundary has had its first turn */
            assert_true(again || !repeating);
            repeating |= again;
            st->repeats += again;
            st->last = now;
            uint64_t i = st->sched.interval_ns;
            uint64_t grid = schedule_due(&st->sched);
            st->phase_hist[((now - grid) % i) * 10 / i]++;
            schedule_attempted(&st->sched, now);
            st->jitter = schedule_jitter(schedule_due(&st->sched), i, now, &st->rng);
            fleet_update(f, s, sim_due(st));
        }
    }
    return wakes;
}

static void sim_init(struct fleet *f, struct sim_target *t, size_t n, uint64_t now,
                     uint64_t interval)
{
    for (size_t i = 0; i < n; i++) {
        t[i] = (struct sim_target){0};
        rand_init(&t[i].rng, HASH_GOLDEN * (i + 1));
        schedule_init(&t[i].sched, now + i * 37 * US, interval);
        assert_int_equal(fleet_add(f, &t[i].slot, sim_due(&t[i])), 0);
    }
}

static void test_fleet__every_target_gets_its_attempts_coalesced(void **state)
{
    (void)state;
    enum { N = 200 };
    static struct sim_target t[N];
    struct fleet *f;
    assert_int_equal(fleet_new(N, &f), 0);
    uint64_t t0 = 5000 * SEC, interval = 10 * MS; /* 100 Hz */
    sim_init(f, t, N, t0, interval);
    uint64_t end = t0 + 10 * SEC;
    uint64_t wakes = sim_run(f, t0, end, 0, 0);
    print_message("200 targets x 100 Hz for 10 s: %" PRIu64 " wake-ups\n", wakes);
    /* one per tick at most, against one per attempt (200,000) with a heap */
    assert_true(wakes <= 10 * 1000 + 1);
    bool spread = true;
    for (size_t i = 0; i < N; i++) {
        /* every attempt the elapsed time calls for, less the one just due
         * (and one whose random point was at the very end) */
        uint64_t expected = (end - 1 - t[i].sched.start_ns) / interval + 1;
        uint64_t made = schedule_attempts(&t[i].sched);
        assert_true(made + 2 >= expected && made <= expected);
        assert_int_equal(schedule_given_up(&t[i].sched), 0);
        /* none later than the end of its own interval (a tick into the next
         * one at most) */
        assert_true(schedule_missed(&t[i].sched, t[i].last - interval) == 0);
        assert_int_equal(t[i].repeats, 0); /* none twice in a pass */
        /* the phase is spread over the whole interval: every tenth of it
         * sees a tenth of the attempts, +- 50% */
        for (size_t k = 0; k < 10; k++)
            spread &= t[i].phase_hist[k] * 20 > made && t[i].phase_hist[k] * 20 < made * 3;
    }
    assert_true(spread);
    fleet_free(f);
}

static void test_fleet__a_starved_thread_still_misses(void **state)
{
    (void)state;
    enum { N = 20 };
    static struct sim_target t[N];
    struct fleet *f;
    assert_int_equal(fleet_new(N, &f), 0);
    uint64_t t0 = 5000 * SEC, interval = 10 * MS;
    sim_init(f, t, N, t0, interval);
    /* 3 s without running after 1 s: 300 intervals behind, beyond catching up */
    uint64_t end = t0 + 5 * SEC;
    (void)sim_run(f, t0, end, t0 + SEC, 3 * SEC);
    for (size_t i = 0; i < N; i++) {
        uint64_t given_up = schedule_given_up(&t[i].sched);
        assert_true(given_up >= 295 && given_up <= 300);
        assert_true(schedule_missed(&t[i].sched, end) >= given_up);
    }
    fleet_free(f);
}

/*
 * A short starvation (under SCHEDULE_MAX_LAG_INTERVALS): every late attempt is
 * made in the first pass after it, back to back, taking turns with the other
 * late target; nothing is given up and, after it, nothing is late.
 */
static void test_fleet__a_late_target_catches_up_back_to_back(void **state)
{
    (void)state;
    struct sim_target t[2];
    struct fleet *f;
    assert_int_equal(fleet_new(2, &f), 0);
    uint64_t t0 = 5000 * SEC, interval = 10 * MS;
    sim_init(f, t, 2, t0, interval);
    uint64_t end = t0 + 2 * SEC;
    (void)sim_run(f, t0, end, t0 + SEC / 2, 200 * MS); /* 20 intervals */
    for (size_t i = 0; i < 2; i++) {
        assert_int_equal(schedule_given_up(&t[i].sched), 0);
        assert_true(t[i].repeats >= 19 && t[i].repeats <= 20);
        uint64_t expected = (end - 1 - t[i].sched.start_ns) / interval + 1;
        assert_true(schedule_attempts(&t[i].sched) + 1 >= expected);
        assert_true(schedule_missed(&t[i].sched, t[i].last) == 0);
    }
    fleet_free(f);
}

/* A 20 kHz target with a 25 us tick whose wake-ups come every 80 us: full rate. */
static void test_fleet__a_fast_target_keeps_its_rate_with_slow_wakeups(void **state)
{
    (void)state;
    struct sim_target t[1];
    struct fleet *f;
    assert_int_equal(fleet_new(1, &f), 0);
    fleet_set_tick(f, 25 * US);
    uint64_t t0 = 5000 * SEC, interval = 50 * US;
    sim_init(f, t, 1, t0, interval);
    uint64_t now = t0, end = t0 + SEC;
    while (now < end) {
        uint64_t wake = fleet_next_wake(f);
        now = wake > now + 80 * US ? wake : now + 80 * US; /* a slow wake-up */
        fleet_collect(f, now);
        struct fleet_slot *s;
        while ((s = fleet_pop(f))) {
            schedule_attempted(&t[0].sched, now);
            t[0].last = now;
            fleet_update(f, s, schedule_due(&t[0].sched));
        }
    }
    assert_int_equal(schedule_given_up(&t[0].sched), 0);
    assert_true(schedule_missed(&t[0].sched, t[0].last) <= 1);
    assert_true(schedule_attempts(&t[0].sched) >= 19990);
    fleet_free(f);
}

static void test_fleet__budget_falls_and_recovers(void **state)
{
    (void)state;
    struct fleet *f;
    assert_int_equal(fleet_new(1, &f), 0);
    uint64_t now = 1000 * SEC, cpu = 0;
    fleet_budget_start(f, now, cpu);
    assert_true(fleet_factor(f) == 1.0);
    /* not a period yet: nothing changes */
    assert_false(fleet_budget(f, now + SEC / 2, cpu + SEC / 2, 0.1));
    /* 40% of a CPU against a 10% budget: a quarter of the rates */
    now += SEC, cpu += 4 * SEC / 10;
    assert_true(fleet_budget(f, now, cpu, 0.1));
    assert_true(fabs(fleet_factor(f) - 0.25) < 1e-9);
    /* at the budget: unchanged */
    now += SEC, cpu += SEC / 10;
    assert_true(fleet_budget(f, now, cpu, 0.1));
    assert_true(fabs(fleet_factor(f) - 0.25) < 1e-9);
    /* well under it: +25% per period, up to 1 */
    double want = 0.25;
    for (int i = 0; i < 10; i++) {
        now += SEC, cpu += SEC / 100;
        assert_true(fleet_budget(f, now, cpu, 0.1));
        want = want * 1.25 > 1.0 ? 1.0 : want * 1.25;
        assert_true(fabs(fleet_factor(f) - want) < 1e-9);
    }
    assert_true(fleet_factor(f) == 1.0);
    /* a hopeless budget still leaves a floor */
    for (int i = 0; i < 10; i++) {
        now += SEC, cpu += SEC;
        (void)fleet_budget(f, now, cpu, 0.0001);
    }
    assert_true(fleet_factor(f) >= FLEET_MIN_FACTOR);
    fleet_free(f);
}

/* Share of due attempts taken at a given factor, over many attempts. */
static double taken_share(struct fleet *f, uint64_t attempts)
{
    struct fleet_slot s;
    assert_int_equal(fleet_add(f, &s, 0), 0);
    uint64_t done = 0, taken = 0;
    while (done < attempts) {
        uint64_t skip = fleet_take(f, &s);
        if (skip == 0) {
            taken++;
            done++;
        } else {
            done += skip;
        }
    }
    fleet_remove(f, &s);
    return (double)taken / (double)done;
}

static void test_fleet__credit_takes_the_factors_share(void **state)
{
    (void)state;
    struct fleet *f;
    assert_int_equal(fleet_new(4, &f), 0);
    assert_true(taken_share(f, 1000) == 1.0);
    fleet_budget_start(f, 0, 0);
    assert_true(fleet_budget(f, SEC, 4 * SEC / 10, 0.1)); /* factor 0.25 */
    double share = taken_share(f, 100000);
    print_message("factor 0.25: %.4f of the attempts taken\n", share);
    assert_true(fabs(share - 0.25) < 0.001);
    fleet_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fleet__taken_at_the_first_boundary_at_or_after_due),
        cmocka_unit_test(test_fleet__put_back_late_comes_again_after_the_others),
        cmocka_unit_test(test_fleet__added_ready_is_taken_at_once),
        cmocka_unit_test(test_fleet__remove_from_anywhere_and_grow),
        cmocka_unit_test(test_fleet__far_ahead_waits_for_its_turn),
        cmocka_unit_test(test_fleet__set_tick_refiles),
        cmocka_unit_test(test_fleet__every_target_gets_its_attempts_coalesced),
        cmocka_unit_test(test_fleet__a_starved_thread_still_misses),
        cmocka_unit_test(test_fleet__a_late_target_catches_up_back_to_back),
        cmocka_unit_test(test_fleet__a_fast_target_keeps_its_rate_with_slow_wakeups),
        cmocka_unit_test(test_fleet__budget_falls_and_recovers),
        cmocka_unit_test(test_fleet__credit_takes_the_factors_share),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
