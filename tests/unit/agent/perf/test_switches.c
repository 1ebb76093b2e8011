/* SPDX-License-Identifier: MIT */
/*
 * Tests for agent/perf/switches.c and agent/sampler/runwatch.c: the ring
 * parsers over images built here as the kernel writes them (backward: the
 * head goes down from 0, the newest record starts at the head), and the
 * watch of a real child process that blocks on a pipe: asleep, the same
 * since a read, woken, parked and woken again, and the schedstat fallback
 * (threadstat_parse_schedstat() itself: tests/unit/agent/sampler/).
 * The live parts are skipped, saying why, where perf_event_open is refused.
 */
#include "base/compat.h"

#include <linux/perf_event.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cmocka_wrap.h"

#include "base/bytes.h"
#include "perf/switches.h"
#include "sampler/runwatch.h"

/* A ring image and where its head is. */
struct ring {
    uint8_t b[4096]; /* the production ring is one page */
    uint64_t size;
    uint64_t head;
};

/* Writes a record of @len bytes (header @type/@misc, then @words) as the kernel would, backward. */
static void put(struct ring *r, uint32_t type, uint16_t misc, uint16_t len, const uint64_t *words)
{
    r->head -= len;
    uint8_t rec[64] = {0};
    memcpy(rec, &type, 4);
    memcpy(rec + 4, &misc, 2);
    memcpy(rec + 6, &len, 2);
    for (size_t i = 0; words && i < (size_t)(len - 8) / 8; i++)
        memcpy(rec + 8 + 8 * i, &words[i], 8);
    for (size_t i = 0; i < len; i++)
        r->b[(r->head + i) & (r->size - 1)] = rec[i];
}

static struct ring ring_of(uint64_t size)
{
    struct ring r;
    memset(&r, 0, sizeof(r));
    r.size = size;
    return r;
}

static void test_switches__newest_record_says_where_the_thread_is(void **state)
{
    (void)state;
    struct ring r = ring_of(256);
    assert_int_equal(switches_parse_state(r.b, r.size, 0), SWITCHES_NONE);
    put(&r, PERF_RECORD_SWITCH, 0, 8, NULL);
    assert_int_equal(switches_parse_state(r.b, r.size, r.head), SWITCHES_RUNNING);
    put(&r, PERF_RECORD_SWITCH, PERF_RECORD_MISC_SWITCH_OUT, 8, NULL);
    assert_int_equal(switches_parse_state(r.b, r.size, r.head), SWITCHES_ASLEEP);
    put(&r, PERF_RECORD_SWITCH, PERF_RECORD_MISC_SWITCH_OUT | PERF_RECORD_MISC_SWITCH_OUT_PREEMPT,
        8, NULL);
    assert_int_equal(switches_parse_state(r.b, r.size, r.head), SWITCHES_PREEMPTED);
    uint64_t ids[3] = {7, 7, 0};
    put(&r, PERF_RECORD_FORK, 0, 32, ids);
    assert_int_equal(switches_parse_state(r.b, r.size, r.head), SWITCHES_RUNNING);
    put(&r, PERF_RECORD_EXIT, 0, 32, ids);
    assert_int_equal(switches_parse_state(r.b, r.size, r.head), SWITCHES_EXITED);
    put(&r, PERF_RECORD_MMAP, 0, 8, NULL);
    assert_int_equal(switches_parse_state(r.b, r.size, r.head), SWITCHES_UNKNOWN);
    /* malformed: sizes 0, not a multiple of 8, larger than the ring; a head off 8 */
    for (uint16_t bad = 0; bad < 3; bad++) {
        struct ring m = ring_of(64);
        put(&m, PERF_RECORD_SWITCH, 0, 8, NULL);
        uint16_t len = bad == 0 ? 0 : bad == 1 ? 12 : 72;
        memcpy(m.b + (m.head & 63) + 6, &len, 2);
        assert_int_equal(switches_parse_state(m.b, m.size, m.head), SWITCHES_UNKNOWN);
    }
    assert_int_equal(switches_parse_state(r.b, r.size, r.head + 4), SWITCHES_UNKNOWN);
    assert_int_equal(switches_parse_state(r.b, 24, r.head), SWITCHES_UNKNOWN); /* not 2^n */
}

static void test_switches__records_between_two_looks(void **state)
{
    (void)state;
    struct ring r = ring_of(64);
    uint64_t before = r.head;
    struct switches_since s = switches_parse_since(r.b, r.size, before, r.head);
    assert_false(s.forked || s.overrun || s.bad);
    /* records that wrap round the end of a small ring, a fork among them */
    put(&r, PERF_RECORD_SWITCH, 0, 8, NULL);
    put(&r, PERF_RECORD_SWITCH, PERF_RECORD_MISC_SWITCH_OUT, 8, NULL);
    s = switches_parse_since(r.b, r.size, before, r.head);
    assert_false(s.forked || s.overrun || s.bad);
    uint64_t ids[3] = {1, 1, 2};
    put(&r, PERF_RECORD_FORK, 0, 32, ids);
    s = switches_parse_since(r.b, r.size, before, r.head);
    assert_true(s.forked);
    assert_false(s.overrun || s.bad);
    /* more than the ring holds since the last look */
    uint64_t mid = r.head;
    put(&r, PERF_RECORD_SWITCH, 0, 8, NULL);
    put(&r, PERF_RECORD_SWITCH, 0, 8, NULL);
    put(&r, PERF_RECORD_SWITCH, 0, 8, NULL);
    s = switches_parse_since(r.b, r.size, before, r.head);
    assert_true(s.overrun);
    s = switches_parse_since(r.b, r.size, mid, r.head);
    assert_false(s.forked || s.overrun || s.bad);
    /* a record that runs past the last look's head */
    struct ring m = ring_of(64);
    uint64_t b2 = m.head;
    put(&m, PERF_RECORD_SWITCH, 0, 8, NULL);
    uint16_t len = 16;
    memcpy(m.b + (m.head & 63) + 6, &len, 2);
    assert_true(switches_parse_since(m.b, m.size, b2, m.head).bad);
}

/* A header at ring offset @off, placed by hand (not through put()). */
static void place(uint8_t *ring, size_t off, uint32_t type, uint16_t misc, uint16_t len)
{
    memcpy(ring + off, &type, 4);
    memcpy(ring + off + 4, &misc, 2);
    memcpy(ring + off + 6, &len, 2);
}

static void test_switches__a_page_as_the_kernel_leaves_it(void **state)
{
    (void)state;
    /* the first record ends at the end of the page, the next one just before it */
    static uint8_t page[4096];
    memset(page, 0xa5, sizeof(page)); /* garbage where nothing was written */
    place(page, 4088, PERF_RECORD_SWITCH, PERF_RECORD_MISC_SWITCH_OUT, 8);
    assert_int_equal(switches_parse_state(page, 4096, (uint64_t)-8), SWITCHES_ASLEEP);
    place(page, 4080, PERF_RECORD_SWITCH, 0, 8);
    assert_int_equal(switches_parse_state(page, 4096, (uint64_t)-16), SWITCHES_RUNNING);
    place(page, 4048, PERF_RECORD_FORK, 0, 32);
    assert_int_equal(switches_parse_state(page, 4096, (uint64_t)-48), SWITCHES_RUNNING);
    place(page, 4040, PERF_RECORD_SWITCH,
          PERF_RECORD_MISC_SWITCH_OUT | PERF_RECORD_MISC_SWITCH_OUT_PREEMPT, 8);
    assert_int_equal(switches_parse_state(page, 4096, (uint64_t)-56), SWITCHES_PREEMPTED);
    place(page, 4008, PERF_RECORD_EXIT, 0, 32);
    assert_int_equal(switches_parse_state(page, 4096, (uint64_t)-88), SWITCHES_EXITED);
    /* the older heads still name their own records */
    assert_int_equal(switches_parse_state(page, 4096, (uint64_t)-8), SWITCHES_ASLEEP);
    assert_int_equal(switches_parse_state(page, 4096, (uint64_t)-56), SWITCHES_PREEMPTED);
    /* a head between records lands on garbage */
    assert_int_equal(switches_parse_state(page, 4096, (uint64_t)-24), SWITCHES_UNKNOWN);
    assert_int_equal(switches_parse_state(page, 4096, (uint64_t)-84), SWITCHES_UNKNOWN);

    struct switches_since s = switches_parse_since(page, 4096, 0, (uint64_t)-16);
    assert_false(s.forked || s.overrun || s.bad);
    s = switches_parse_since(page, 4096, 0, (uint64_t)-48);
    assert_true(s.forked);
    assert_false(s.overrun || s.bad);
    s = switches_parse_since(page, 4096, (uint64_t)-48, (uint64_t)-88); /* after the fork */
    assert_false(s.forked || s.overrun || s.bad);
    s = switches_parse_since(page, 4096, (uint64_t)-16, (uint64_t)-56); /* the fork alone */
    assert_true(s.forked);
    assert_false(s.overrun || s.bad);
    /* a look that was not at a record's start: the fork runs past it */
    s = switches_parse_since(page, 4096, (uint64_t)-24, (uint64_t)-88);
    assert_true(s.bad);
    assert_false(s.overrun);
    assert_false(s.forked); /* a record past the look is not the thread's since then */
    /* more than the page since the look */
    s = switches_parse_since(page, 4096, 4096 - 88 + 8, (uint64_t)-88);
    assert_true(s.overrun);
    assert_false(s.forked || s.bad);

    /* the same through put() over many laps of the page */
    struct ring r = ring_of(4096);
    for (int i = 0; i < 3000; i++) { /* 3000 * 16 bytes: the page over eleven times */
        put(&r, PERF_RECORD_SWITCH, 0, 8, NULL);
        put(&r, PERF_RECORD_SWITCH, PERF_RECORD_MISC_SWITCH_OUT, 8, NULL);
    }
    assert_int_equal(switches_parse_state(r.b, r.size, r.head), SWITCHES_ASLEEP);
    assert_int_equal(switches_parse_state(r.b, r.size, r.head + 8), SWITCHES_RUNNING);
    uint64_t look = r.head;
    s = switches_parse_since(r.b, r.size, look, r.head);
    assert_false(s.forked || s.overrun || s.bad);
    uint64_t ids[3] = {9, 9, 0};
    put(&r, PERF_RECORD_SWITCH, 0, 8, NULL);
    put(&r, PERF_RECORD_FORK, 0, 32, ids);
    put(&r, PERF_RECORD_SWITCH, PERF_RECORD_MISC_SWITCH_OUT_PREEMPT | PERF_RECORD_MISC_SWITCH_OUT,
        8, NULL);
    assert_int_equal(switches_parse_state(r.b, r.size, r.head), SWITCHES_PREEMPTED);
    s = switches_parse_since(r.b, r.size, look, r.head);
    assert_true(s.forked);
    assert_false(s.overrun || s.bad);
    /* the whole page since: the fork is still in it */
    s = switches_parse_since(r.b, r.size, r.head + 4096, r.head);
    assert_true(s.forked);
    assert_false(s.overrun || s.bad);
}

static void test_switches__records_across_the_end_of_a_small_ring(void **state)
{
    (void)state;
    /* before = 0, now = -40: the heads wrap below zero, the records fill 24..64 */
    struct ring r = ring_of(64);
    uint64_t ids[3] = {3, 3, 4};
    put(&r, PERF_RECORD_SWITCH, 0, 8, NULL);
    put(&r, PERF_RECORD_FORK, 0, 32, ids);
    assert_true(r.head == (uint64_t)-40);
    assert_int_equal(load_le32(r.b + 24), PERF_RECORD_FORK);
    assert_int_equal(switches_parse_state(r.b, r.size, r.head), SWITCHES_RUNNING);
    struct switches_since s = switches_parse_since(r.b, r.size, 0, (uint64_t)-40);
    assert_true(s.forked);
    assert_false(s.overrun || s.bad);
    s = switches_parse_since(r.b, r.size, 0, (uint64_t)-8);
    assert_false(s.forked || s.overrun || s.bad);

    /* a 32-byte record cut in two by the end of the ring: 40..63 and 0..7 */
    r = ring_of(64);
    for (int i = 0; i < 7; i++)
        put(&r, PERF_RECORD_SWITCH, PERF_RECORD_MISC_SWITCH_OUT, 8, NULL);
    uint64_t before = r.head; /* -56: offset 8 */
    put(&r, PERF_RECORD_EXIT, 0, 32, ids);
    assert_int_equal(r.head & 63, 40);
    assert_int_equal(load_le32(r.b + 40), PERF_RECORD_EXIT);
    assert_int_equal(load_le16(r.b + 46), 32);
    assert_int_equal(switches_parse_state(r.b, r.size, r.head), SWITCHES_EXITED);
    s = switches_parse_since(r.b, r.size, before, r.head);
    assert_false(s.forked || s.overrun || s.bad);
    put(&r, PERF_RECORD_FORK, 0, 32, ids); /* 8..39: the ring's whole 64 bytes since before */
    assert_int_equal(switches_parse_state(r.b, r.size, r.head), SWITCHES_RUNNING);
    s = switches_parse_since(r.b, r.size, before, r.head);
    assert_true(s.forked);
    assert_false(s.overrun || s.bad);

    /* exactly the ring since a look is walked; a record more is an overrun */
    r = ring_of(64);
    for (int i = 0; i < 8; i++)
        put(&r, PERF_RECORD_SWITCH, 0, 8, NULL);
    s = switches_parse_since(r.b, r.size, 0, r.head);
    assert_false(s.forked || s.overrun || s.bad);
    put(&r, PERF_RECORD_SWITCH, 0, 8, NULL);
    s = switches_parse_since(r.b, r.size, 0, r.head);
    assert_true(s.overrun);
    assert_false(s.forked || s.bad);
}

static void test_switches__heads_that_cannot_be_walked(void **state)
{
    (void)state;
    struct ring r = ring_of(64);
    uint64_t ids[3] = {1, 1, 1};
    put(&r, PERF_RECORD_SWITCH, 0, 8, NULL);
    put(&r, PERF_RECORD_FORK, 0, 32, ids);
    put(&r, PERF_RECORD_SWITCH, 0, 8, NULL);
    struct switches_since s;
    /* heads off 8: not to be trusted (neither "nothing" nor a walk off the records) */
    s = switches_parse_since(r.b, r.size, 4, r.head);
    assert_true(s.overrun || s.bad);
    s = switches_parse_since(r.b, r.size, 0, r.head + 4);
    assert_true(s.overrun || s.bad);
    /* even where the aligned-down header would make a clean walk (the switch at -8) */
    s = switches_parse_since(r.b, r.size, 4, (uint64_t)-4);
    assert_true(s.overrun || s.bad);
    /* a head above the last look's: a backward ring never goes up */
    s = switches_parse_since(r.b, r.size, r.head, 0);
    assert_true(s.overrun);
    /* a ring size that is not a power of two, or smaller than a header: refused even
     * over bytes that are switch records wherever a header is read */
    uint8_t valid[32];
    for (size_t off = 0; off < sizeof(valid); off += 8)
        place(valid, off, PERF_RECORD_SWITCH, 0, 8);
    assert_int_equal(switches_parse_state(valid, 32, (uint64_t)-8), SWITCHES_RUNNING);
    s = switches_parse_since(valid, 32, 0, (uint64_t)-16);
    assert_false(s.forked || s.overrun || s.bad);
    assert_int_equal(switches_parse_state(valid, 24, (uint64_t)-8), SWITCHES_UNKNOWN);
    s = switches_parse_since(valid, 24, 0, (uint64_t)-16);
    assert_true(s.overrun || s.bad);
    assert_int_equal(switches_parse_state(valid, 4, (uint64_t)-8), SWITCHES_UNKNOWN);
    assert_int_equal(switches_parse_state(valid, 0, (uint64_t)-8), SWITCHES_UNKNOWN);
    s = switches_parse_since(valid, 4, 0, (uint64_t)-8);
    assert_true(s.overrun || s.bad);
    s = switches_parse_since(valid, 0, 0, (uint64_t)-8);
    assert_true(s.overrun || s.bad);
    /* nothing written: nothing to say, whatever the ring */
    s = switches_parse_since(r.b, 48, 8, 8);
    assert_false(s.forked || s.overrun || s.bad);
    /* a record whose size is not a multiple of 8 inside the walk */
    uint16_t odd = 12;
    memcpy(r.b + ((r.head + 8) & 63) + 6, &odd, 2); /* the fork's size */
    s = switches_parse_since(r.b, r.size, 0, r.head);
    assert_true(s.bad);
    assert_false(s.forked); /* the walk stops before it counts it */
}

static void test_switches__oldest_record_time(void **state)
{
    (void)state;
    struct ring r = ring_of(128);
    uint64_t before = r.head, t;
    assert_false(switches_parse_first_time(r.b, r.size, before, r.head, &t));
    uint64_t w = 1111;
    put(&r, PERF_RECORD_SWITCH, 0, 16, &w);
    w = 2222;
    put(&r, PERF_RECORD_SWITCH, PERF_RECORD_MISC_SWITCH_OUT, 16, &w);
    uint64_t exit_rec[4] = {5, 5, 6, 3333}; /* pid, ppid / tid, ptid / time / sample time */
    put(&r, PERF_RECORD_EXIT, 0, 40, (uint64_t[]){exit_rec[0], exit_rec[1], 77, 3333});
    assert_true(switches_parse_first_time(r.b, r.size, before, r.head, &t));
    assert_int_equal(t, 1111);
    /* only the newest two since a later look */
    assert_true(switches_parse_first_time(r.b, r.size, before - 16, r.head, &t));
    assert_int_equal(t, 2222);
    /* more than the ring since the look: unknown */
    assert_false(switches_parse_first_time(r.b, 64, before, r.head, &t));
}

/* ---- live: a child that blocks on a pipe ------------------------------------ */

struct child {
    pid_t pid;
    int wake; /* write a byte: it reads it, loops 2 ms, blocks again */
};

static struct child child_start(void)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(p[1]);
        char c;
        while (read(p[0], &c, 1) == 1) {
            struct timespec t0, t;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            do
                clock_gettime(CLOCK_MONOTONIC, &t);
            while ((t.tv_sec - t0.tv_sec) * 1000000000 + t.tv_nsec - t0.tv_nsec < 2000000);
        }
        _exit(0);
    }
    close(p[0]);
    return (struct child){.pid = pid, .wake = p[1]};
}

static void child_stop(struct child *c)
{
    close(c->wake);
    int st;
    waitpid(c->pid, &st, 0);
}

static uint64_t mono(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void settle(void)
{
    usleep(30000); /* the child blocks again, and a schedstat span passes */
}

static void test_runwatch__a_blocked_child_is_not_read_again(void **state)
{
    (void)state;
    char why[256];
    if (switches_probe(why, sizeof(why)))
        skip();
    struct child c = child_start();
    settle();
    struct runwatch *w = NULL;
    /* the main thread: a sanitizer may give the forked child a thread of its own */
    struct runwatch_opts o = {.all_threads = false, .how = IDLE_CHECK_PERF};
    assert_int_equal(runwatch_new(c.pid, &o, mono(), &w), 0);
    assert_int_equal(runwatch_how(w), IDLE_CHECK_PERF);
    assert_string_equal(runwatch_describe(w), "perf");
    /* asleep since the watch opened: cpu mode needs no read; no read yet to count again */
    assert_int_equal(runwatch_check(w, mono(), true), RUNWATCH_ASLEEP);
    assert_int_equal(runwatch_check(w, mono(), false), RUNWATCH_READ);
    uint64_t cpu_ns = CPUCREDIT_NO_TIME;
    assert_int_equal(runwatch_on_cpu(w, c.pid, &cpu_ns), CPUCREDIT_OFF);
    assert_true(cpu_ns == CPUCREDIT_NO_TIME); /* perf reads no CPU time */
    uint64_t t = mono();
    runwatch_read(w, t, true);
    assert_int_equal(runwatch_check(w, mono(), false), RUNWATCH_SAME);
    /* woken: it ran since the read */
    assert_int_equal(write(c.wake, "x", 1), 1);
    settle();
    assert_int_equal(runwatch_check(w, mono(), false), RUNWATCH_READ);
    assert_true(runwatch_moved(w));
    runwatch_read(w, mono(), true);
    assert_int_equal(runwatch_check(w, mono(), false), RUNWATCH_SAME);
    assert_false(runwatch_moved(w));
    /* a failed read is not counted again */
    runwatch_read(w, mono(), false);
    assert_int_equal(runwatch_check(w, mono(), false), RUNWATCH_READ);

    /* parked: the waker's record wakes the epoll set, with its time */
    int ep = epoll_create1(EPOLL_CLOEXEC);
    assert_true(ep >= 0);
    assert_int_equal(runwatch_check(w, mono(), true), RUNWATCH_ASLEEP);
    uint64_t parked_at = mono();
    assert_int_equal(runwatch_park(w, ep, 77), 0);
    struct epoll_event ev;
    assert_int_equal(epoll_wait(ep, &ev, 1, 50), 0); /* nothing runs: nothing wakes */
    assert_true(runwatch_still(w));
    uint64_t woke_before = mono();
    assert_int_equal(write(c.wake, "x", 1), 1);
    assert_int_equal(epoll_wait(ep, &ev, 1, 2000), 1);
    assert_int_equal(ev.data.u64, 77);
    assert_false(runwatch_still(w));
    uint64_t at = 0;
    assert_true(runwatch_woke_at(w, &at));
    assert_true(at >= parked_at && at >= woke_before && at <= mono());
    runwatch_unpark(w, ep);
    settle();
    assert_int_equal(runwatch_check(w, mono(), false), RUNWATCH_READ);
    close(ep);
    child_stop(&c);
    /* exited: the watch says read (and the read finds the process gone) */
    assert_int_equal(runwatch_check(w, mono(), true), RUNWATCH_READ);
    runwatch_free(w);
}

/* A child that spins on CPU @cpu until it is killed. */
static pid_t spinner(int cpu)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET((size_t)cpu, &set);
        if (sched_setaffinity(0, sizeof(set), &set))
            _exit(1);
        for (volatile unsigned long i = 0;; i++)
            ;
    }
    return pid;
}

static void spinner_stop(pid_t pid)
{
    int st;
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
}

/*
 * Issue 38: two spinners on one CPU, each 'R' all the time and running
 * about half of it. The records tell the two apart (switched in, preempted),
 * but cpu mode does not count a thread by them (the sampler's own wake-up
 * would preempt it when the two share a CPU: sampler/cpucredit.h): a
 * preempted thread is never taken for asleep, and the watch leaves it to
 * its credit. (Measured here: running at 170-196 of 400 looks 1 ms apart.)
 */
static void test_runwatch__a_preempted_thread_is_left_to_its_credit(void **state)
{
    (void)state;
    char why[256];
    cpu_set_t mine;
    if (switches_probe(why, sizeof(why)) || sched_getaffinity(0, sizeof(mine), &mine))
        skip();
    /* the spinners on our last CPU, we on the others: a looker on their CPU
     * would preempt the one it looks at, every time (sampler/cpucredit.h) */
    int cpu = CPU_SETSIZE - 1;
    while (cpu > 0 && !CPU_ISSET((size_t)cpu, &mine))
        cpu--;
    cpu_set_t others = mine;
    CPU_CLR((size_t)cpu, &others);
    bool apart = CPU_COUNT(&others) > 0 && sched_setaffinity(0, sizeof(others), &others) == 0;
    pid_t a = spinner(cpu), b = spinner(cpu);
    usleep(20000);
    struct switches sw;
    assert_int_equal(switches_open(a, &sw, why, sizeof(why)), 0);
    struct runwatch *w = NULL;
    struct runwatch_opts o = {.all_threads = false, .how = IDLE_CHECK_PERF};
    assert_int_equal(runwatch_new(a, &o, mono(), &w), 0);
    unsigned on = 0, off = 0, looks = 0, credit = 0;
    /* (on a loaded CPU a spinner may get little of it: look until both were seen) */
    for (uint64_t end = mono() + 3000000000ull; (on < 10 || off < 10) && mono() < end;) {
        if (!apart && off >= 10)
            break; /* one CPU: we preempt what we look at */
        enum switches_state st = switches_state(&sw, switches_head(&sw));
        enum runwatch_verdict v = runwatch_check(w, mono(), true);
        uint64_t cpu_ns = CPUCREDIT_NO_TIME;
        int k = runwatch_on_cpu(w, a, &cpu_ns);
        on += st == SWITCHES_RUNNING;
        off += st == SWITCHES_PREEMPTED;
        assert_int_not_equal(st, SWITCHES_ASLEEP);
        assert_int_equal(v, RUNWATCH_READ); /* never asleep */
        assert_int_not_equal(k, CPUCREDIT_OFF);
        credit += k == CPUCREDIT_RUNNABLE;
        looks++;
        usleep(1000);
    }
    runwatch_free(w);
    switches_close(&sw);
    spinner_stop(a);
    spinner_stop(b);
    (void)sched_setaffinity(0, sizeof(mine), &mine);
    if ((apart && on < 10) || off < 10)
        fail_msg("running at %u looks, preempted at %u, of %u", on, off, looks);
    /* (unknown only until its first switch since the watch opened) */
    assert_true(credit >= looks / 2);
}

static void test_runwatch__schedstat_needs_a_tick_of_quiet(void **state)
{
    (void)state;
    struct child c = child_start();
    settle();
    struct runwatch *w = NULL;
    struct runwatch_opts o = {.all_threads = false, .how = IDLE_CHECK_SCHEDSTAT};
    assert_int_equal(runwatch_new(c.pid, &o, mono(), &w), 0);
    if (runwatch_how(w) == IDLE_CHECK_OFF) { /* nohz_full CPUs */
        runwatch_free(w);
        child_stop(&c);
        skip();
    }
    assert_string_equal(runwatch_describe(w), "schedstat: as configured (idle_check: schedstat)");
    uint64_t t0 = mono();
    assert_int_equal(runwatch_check(w, t0, false), RUNWATCH_READ); /* the first look */
    runwatch_read(w, t0, true);
    /* within a tick nothing is proven: cpu mode asks the thread's credit */
    assert_int_equal(runwatch_check(w, t0 + 1000000, false), RUNWATCH_READ);
    uint64_t cpu_ns = CPUCREDIT_NO_TIME;
    assert_int_equal(runwatch_on_cpu(w, c.pid, &cpu_ns), CPUCREDIT_ASK);
    assert_true(cpu_ns != CPUCREDIT_NO_TIME); /* as the look read it: the credit reads nothing */
    assert_int_equal(runwatch_check(w, t0 + RUNWATCH_TICK_NS + 1, false), RUNWATCH_SAME);
    assert_int_equal(runwatch_check(w, t0 + RUNWATCH_TICK_NS + 2, true), RUNWATCH_ASLEEP);
    assert_int_equal(runwatch_on_cpu(w, c.pid, &cpu_ns), CPUCREDIT_OFF);
    assert_int_equal(write(c.wake, "x", 1), 1);
    settle();
    uint64_t t1 = mono() + RUNWATCH_TICK_NS * 2;
    assert_int_equal(runwatch_check(w, t1, false), RUNWATCH_READ);
    runwatch_free(w);
    child_stop(&c);
}

static void test_runwatch__off_always_reads(void **state)
{
    (void)state;
    struct runwatch *w = NULL;
    struct runwatch_opts o = {.how = IDLE_CHECK_OFF};
    assert_int_equal(runwatch_new(getpid(), &o, mono(), &w), 0);
    assert_int_equal(runwatch_how(w), IDLE_CHECK_OFF);
    assert_string_equal(runwatch_describe(w), "off: turned off (idle_check: off)");
    runwatch_read(w, mono(), true);
    assert_int_equal(runwatch_check(w, mono(), true), RUNWATCH_READ);
    uint64_t cpu_ns = CPUCREDIT_NO_TIME;
    assert_int_equal(runwatch_on_cpu(w, getpid(), &cpu_ns), CPUCREDIT_ASK);
    runwatch_free(w);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_switches__newest_record_says_where_the_thread_is),
        cmocka_unit_test(test_switches__records_between_two_looks),
        cmocka_unit_test(test_switches__a_page_as_the_kernel_leaves_it),
        cmocka_unit_test(test_switches__records_across_the_end_of_a_small_ring),
        cmocka_unit_test(test_switches__heads_that_cannot_be_walked),
        cmocka_unit_test(test_switches__oldest_record_time),
        cmocka_unit_test(test_runwatch__a_blocked_child_is_not_read_again),
        cmocka_unit_test(test_runwatch__a_preempted_thread_is_left_to_its_credit),
        cmocka_unit_test(test_runwatch__schedstat_needs_a_tick_of_quiet),
        cmocka_unit_test(test_runwatch__off_always_reads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
