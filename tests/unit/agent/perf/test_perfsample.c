/* SPDX-License-Identifier: MIT */
/*
 * Tests for agent/perf/perfsample.c: the record parser over records built
 * here (each field's bounds, a 32-bit thread, a partial stack copy, other
 * record types), and the kernel's own samples of a thread of this process
 * that burns CPU: registers and a stack copy that starts at its stack
 * pointer. The live part is skipped, saying why, where perf_event_open is
 * refused (a seccomp filter, perf_event_paranoid).
 */
#include "base/compat.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cmocka_wrap.h"

#include "perf/perfsample.h"

struct rec {
    uint8_t b[4096];
    size_t n;
};

static void put64(struct rec *r, uint64_t v)
{
    memcpy(r->b + r->n, &v, 8);
    r->n += 8;
}

/* A sample record: @abi (2: 64-bit registers), @stack bytes of copy of which @dyn hold data. */
static void build(struct rec *r, uint64_t abi, size_t stack, uint64_t dyn)
{
    memset(r, 0, sizeof(*r));
    r->n = 8; /* header, filled in below */
    put64(r, (uint64_t)4243 << 32 | 4242);
    put64(r, 987654321);
    put64(r, 5550000); /* the task clock */
    put64(r, abi);
    for (size_t i = 0; abi && i < PERFSAMPLE_NREGS; i++)
        put64(r, 0x1000 + i);
    put64(r, stack);
    for (size_t i = 0; i < stack; i++)
        r->b[r->n++] = (uint8_t)i;
    if (stack)
        put64(r, dyn);
    uint32_t type = 9; /* PERF_RECORD_SAMPLE */
    uint16_t misc = 2, size = (uint16_t)r->n;
    memcpy(r->b, &type, 4);
    memcpy(r->b + 4, &misc, 2);
    memcpy(r->b + 6, &size, 2);
}

static void test_perfsample__parses_a_sample(void **state)
{
    (void)state;
    struct rec r;
    struct perfsample_record s;
    build(&r, 2, 256, 200);
    assert_int_equal(perfsample_parse(r.b, r.n, &s), 0);
    assert_int_equal(s.pid, 4242);
    assert_int_equal(s.tid, 4243);
    assert_int_equal(s.time_ns, 987654321);
    assert_int_equal(s.cpu_ns, 5550000);
    assert_true(s.regs_valid);
    assert_int_equal(s.regs[PERFSAMPLE_AX], 0x1000);
    assert_int_equal(s.regs[PERFSAMPLE_SP], 0x1000 + PERFSAMPLE_SP);
    assert_int_equal(s.regs[PERFSAMPLE_R15], 0x1000 + PERFSAMPLE_R15);
    assert_int_equal(s.stack_len, 200); /* the part the kernel filled */
    assert_int_equal(s.stack[199], 199);
    /* a longer buffer than the record: the record's own size counts */
    assert_int_equal(perfsample_parse(r.b, sizeof(r.b), &s), 0);
    /* no registers (the thread had no user state), no stack */
    build(&r, 0, 0, 0);
    assert_int_equal(perfsample_parse(r.b, r.n, &s), 0);
    assert_false(s.regs_valid);
    assert_null(s.stack);
    assert_int_equal(s.stack_len, 0);
    /* a stack copy with nothing in it */
    build(&r, 2, 64, 0);
    assert_int_equal(perfsample_parse(r.b, r.n, &s), 0);
    assert_null(s.stack);
}

static void test_perfsample__refuses_what_does_not_fit(void **state)
{
    (void)state;
    struct rec r;
    struct perfsample_record s;
    build(&r, 2, 256, 257); /* more data than copied */
    assert_int_equal(perfsample_parse(r.b, r.n, &s), -EINVAL);
    build(&r, 1, 64, 64); /* a 32-bit thread */
    assert_int_equal(perfsample_parse(r.b, r.n, &s), -EINVAL);
    build(&r, 2, 64, 64);
    assert_int_equal(perfsample_parse(r.b, r.n - 8, &s), -EINVAL); /* cut short */
    for (size_t cut = 0; cut < r.n; cut += 8) {
        /* a record claiming to be shorter than its fields */
        uint16_t size = (uint16_t)cut;
        memcpy(r.b + 6, &size, 2);
        assert_int_equal(perfsample_parse(r.b, r.n, &s), -EINVAL);
    }
    build(&r, 2, 64, 64);
    uint64_t huge = 1u << 20; /* a stack size larger than the record */
    memcpy(r.b + 8 + 8 + 8 + 8 + 8 + 8 * PERFSAMPLE_NREGS, &huge, 8);
    assert_int_equal(perfsample_parse(r.b, r.n, &s), -EINVAL);
    uint16_t odd = 13;
    build(&r, 2, 64, 64);
    memcpy(r.b + 6, &odd, 2);
    assert_int_equal(perfsample_parse(r.b, r.n, &s), -EINVAL);
    uint32_t lost = 2; /* PERF_RECORD_LOST: not a sample, not an error */
    build(&r, 2, 64, 64);
    memcpy(r.b, &lost, 4);
    assert_int_equal(perfsample_parse(r.b, r.n, &s), -ENOMSG);
    assert_int_equal(perfsample_parse(r.b, 4, &s), -EINVAL);
}

/* ---- live: a thread of this process -------------------------------------- */

static atomic_bool spin_stop;
static atomic_int spin_tid;

static void *spin(void *arg)
{
    (void)arg;
    atomic_store(&spin_tid, (int)syscall(SYS_gettid));
    volatile uint64_t x = 1;
    while (!atomic_load(&spin_stop))
        x = x * 6364136223846793005ull + 1;
    return NULL;
}

static void test_perfsample__samples_a_running_thread(void **state)
{
    (void)state;
    char why[256];
    if (perfsample_probe(why, sizeof(why))) {
        print_message("skipped: %s\n", why);
        skip();
    }
    atomic_store(&spin_stop, false);
    atomic_store(&spin_tid, 0);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, spin, NULL), 0);
    while (!atomic_load(&spin_tid))
        usleep(1000);
    pid_t tid = atomic_load(&spin_tid);
    struct perfsample *p;
    int err = perfsample_open(getpid(), tid, 1000000 /* 1 ms of its CPU */, 8192, 6, &p, why,
                              sizeof(why));
    if (err)
        fail_msg("perfsample_open: %s", why);
    struct perfsample_record s;
    unsigned n = 0, with_stack = 0;
    uint64_t cpu = 0;
    int rc = 0;
    /* 50 samples, or 5 s on a machine too busy to give the thread its CPU */
    for (int waited = 0; n < 50 && waited < 500 && rc == 0; waited++) {
        usleep(10000);
        while ((rc = perfsample_next(p, &s)) == 1) {
            n++;
            assert_int_equal(s.tid, tid);
            assert_int_equal(s.pid, getpid());
            /* the task clock at each sample: about one period further each time */
            assert_true(s.cpu_ns > cpu);
            cpu = s.cpu_ns;
            if (!s.regs_valid)
                continue;
            assert_true(s.regs[PERFSAMPLE_IP] != 0);
            /* the copy starts at the stack pointer and is within what was asked */
            assert_true(s.stack_len <= 8192);
            with_stack += s.stack_len > 0;
        }
    }
    assert_int_equal(rc, 0);
    /* and now: at least where the last sample was */
    uint64_t now = 0;
    assert_int_equal(perfsample_cpu_ns(p, &now), 0);
    assert_true(now >= cpu);
    atomic_store(&spin_stop, true);
    pthread_join(th, NULL);
    perfsample_free(p);
    print_message("%u samples, %u with a stack copy\n", n, with_stack);
    assert_true(n >= 20);
    assert_true(with_stack * 10 >= n * 9);
}

static void test_perfsample__a_gone_thread_is_said(void **state)
{
    (void)state;
    char why[256];
    if (perfsample_probe(why, sizeof(why)))
        skip();
    struct perfsample *p = NULL;
    int err = perfsample_open(1, 0x3fffffff, 1000000, 8192, 6, &p, why, sizeof(why));
    assert_int_equal(err, -ESRCH);
    assert_null(p);
    assert_string_equal(why, "the thread is gone");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_perfsample__parses_a_sample),
        cmocka_unit_test(test_perfsample__refuses_what_does_not_fit),
        cmocka_unit_test(test_perfsample__samples_a_running_thread),
        cmocka_unit_test(test_perfsample__a_gone_thread_is_said),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
