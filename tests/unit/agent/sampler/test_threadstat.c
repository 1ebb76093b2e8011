/* SPDX-License-Identifier: MIT */
/* Tests for agent/sampler/threadstat.c. */
#include "base/compat.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cmocka_wrap.h"

#include "base/alloc.h"
#include "procfs_fake.h"
#include "sampler/threadstat.h"

static void test_threadstat__state_after_last_paren(void **state)
{
    (void)state;
    char st = 0;
    static const char normal[] = "1234 (python3.14) R 1 1234 1234 0 -1";
    static const char tricky[] = "1234 (evil) S (x) R 1 1234";
    assert_int_equal(threadstat_parse_state(normal, sizeof(normal) - 1, &st), 0);
    assert_int_equal(st, 'R');
    assert_int_equal(threadstat_parse_state(tricky, sizeof(tricky) - 1, &st), 0);
    assert_int_equal(st, 'R');
    assert_int_equal(threadstat_parse_state("1234 (x)", 8, &st), -EINVAL);
    assert_int_equal(threadstat_parse_state("no paren", 8, &st), -EINVAL);
    assert_int_equal(threadstat_parse_state("1 (x)\n", 6, &st), -EINVAL);
}

/* utime and stime (fields 14 and 15) after the state, whatever the name holds */
static void test_threadstat__cpu_time_from_the_stat_line(void **state)
{
    (void)state;
    char st = 0;
    uint64_t ticks = 0;
    static const char line[] = "4242 (python3.14) R 1 4242 4242 0 -1 4194560 1057 0 0 0 "
                               "123 45 0 0 20 0 3 0 1234567 0 0\n";
    assert_int_equal(threadstat_parse_cputime(line, sizeof(line) - 1, &st, &ticks), 0);
    assert_int_equal(st, 'R');
    assert_int_equal(ticks, 168);
    static const char evil[] = "7 (a) R 1 2 3 4 5 6 7 8 9 10 11 12) S 1 1 1 0 -1 0 0 0 0 0 9 1\n";
    assert_int_equal(threadstat_parse_cputime(evil, sizeof(evil) - 1, &st, &ticks), 0);
    assert_int_equal(st, 'S');
    assert_int_equal(ticks, 10);
    static const char *bad[] = {
        "7 (a) R 1 1 1 0 -1 0 0 0 0 0 9",                         /* no stime */
        "7 (a) R 1 1 1 0 -1 0 0 0 0 0 -9 1",                      /* a negative CPU time */
        "7 (a) R 1 1 1 0 -1 0 0 0 0 0 9x 1",                      /* not a number */
        "7 (a) R 1 1 1 0 -1 0 0 0 0 0 9  1",                      /* two spaces */
        "7 (a) R 1 1 1 0 -1 0 0 0 0 0 99999999999999999999999 1", /* too long */
        "7 (a) R",
    };
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(bad); i++)
        assert_int_equal(threadstat_parse_cputime(bad[i], strlen(bad[i]), &st, &ticks), -EINVAL);
    assert_int_equal(threadstat_tick_ns(), 1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK));
    /* our own: the kernel's schedstat to a tick or two (utime and stime are cut apart) */
    char buf[1024];
    uint64_t v[3];
    snprintf(buf, sizeof(buf), "/proc/%d/task/%d/stat", (int)getpid(), (int)getpid());
    FILE *f = fopen(buf, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    assert_int_equal(threadstat_parse_cputime(buf, n, &st, &ticks), 0);
    snprintf(buf, sizeof(buf), "/proc/%d/task/%d/schedstat", (int)getpid(), (int)getpid());
    f = fopen(buf, "r");
    assert_non_null(f);
    n = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    assert_int_equal(threadstat_parse_schedstat(buf, n, v), 0);
    uint64_t cpu = ticks * threadstat_tick_ns();
    assert_true(cpu <= v[0] && v[0] - cpu <= 2 * threadstat_tick_ns() + 10000000ull);
}

static bool spinning = true; /* atomic accesses only */

static void *spin(void *arg)
{
    __atomic_store_n((pid_t *)arg, (pid_t)syscall(SYS_gettid), __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&spinning, __ATOMIC_RELAXED))
        ;
    return NULL;
}

static void test_threadstat__sees_running_thread(void **state)
{
    (void)state;
    pid_t tid = 0;
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, spin, &tid), 0);
    while (__atomic_load_n(&tid, __ATOMIC_SEQ_CST) == 0)
        usleep(1000);
    char st = 0;
    int running = 0;
    for (int i = 0; i < 50 && running == 0; i++) {
        assert_int_equal(threadstat_state("/proc", getpid(), tid, &st), 0);
        running = st == 'R';
        usleep(2000);
    }
    __atomic_store_n(&spinning, false, __ATOMIC_RELAXED);
    pthread_join(th, NULL);
    assert_true(running);
    /* our own threads share our namespace: the id maps to itself */
    pid_t host = 0;
    assert_int_equal(threadstat_host_tid("/proc", getpid(), (uint64_t)getpid(), &host), 0);
    assert_int_equal(host, getpid());
    assert_int_equal(threadstat_state("/proc", getpid(), 99999999, &st), -ESRCH);
}

/* Writes @text as @rel under the fake root @f (over what is there). */
static void put_file(const struct procfs_fake *f, const char *rel, const char *text)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", procfs_fake_root(f), rel);
    FILE *out = fopen(path, "w");
    assert_non_null(out);
    assert_int_equal(fputs(text, out) >= 0, 1);
    assert_int_equal(fclose(out), 0);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/*
 * The threads of a process by the ids it knows them by: its host TIDs in our
 * PID namespace, the innermost NSpid in one of its own; too many is -E2BIG,
 * a process gone -ESRCH.
 */
static void test_threadstat__lists_threads_as_the_target_numbers_them(void **state)
{
    (void)state;
    struct procfs_fake *f = procfs_fake_new(1700000000);
    procfs_fake_add(f, 4000, "python3", 100);
    procfs_fake_thread(f, 4000, 4000, "python3", 'S');
    procfs_fake_thread(f, 4000, 4007, "worker", 'R');
    uint64_t tids[8];
    size_t n = 0;
    assert_int_equal(threadstat_list_ns(procfs_fake_root(f), 4000, tids, 8, &n), 0);
    assert_int_equal(n, 2);
    qsort(tids, n, sizeof(*tids), cmp_u64);
    assert_int_equal(tids[0], 4000);
    assert_int_equal(tids[1], 4007);
    assert_int_equal(threadstat_list_ns(procfs_fake_root(f), 4000, tids, 1, &n), -E2BIG);
    /* in a PID namespace of its own: process 1 there, its threads 1 and 8 */
    put_file(f, "4000/status", "Name:\tpython3\nNSpid:\t4000\t1\n");
    put_file(f, "4000/task/4000/status", "Name:\tpython3\nNSpid:\t4000\t1\n");
    put_file(f, "4000/task/4007/status", "Name:\tworker\nNSpid:\t4007\t8\n");
    assert_int_equal(threadstat_list_ns(procfs_fake_root(f), 4000, tids, 8, &n), 0);
    assert_int_equal(n, 2);
    qsort(tids, n, sizeof(*tids), cmp_u64);
    assert_int_equal(tids[0], 1);
    assert_int_equal(tids[1], 8);
    assert_int_equal(threadstat_list_ns(procfs_fake_root(f), 4001, tids, 8, &n), -ESRCH);
    procfs_fake_free(f);
    /* and this process, which shares our namespace */
    assert_int_equal(threadstat_list_ns("/proc", getpid(), tids, 8, &n), 0);
    bool found = false;
    for (size_t i = 0; i < n; i++)
        found |= tids[i] == (uint64_t)getpid();
    assert_true(found);
}

static void test_threadstat__parses_a_schedstat_line(void **state)
{
    (void)state;
    uint64_t v[3];
    static const char ok[] = "123456789 42 7\n";
    assert_int_equal(threadstat_parse_schedstat(ok, sizeof(ok) - 1, v), 0);
    assert_int_equal(v[0], 123456789);
    assert_int_equal(v[1], 42);
    assert_int_equal(v[2], 7);
    static const char zeros[] = "0 0 0\n";
    assert_int_equal(threadstat_parse_schedstat(zeros, sizeof(zeros) - 1, v), 0);
    assert_int_equal(v[0] | v[1] | v[2], 0);
    static const char max[] = "18446744073709551615 18446744073709551614 1\n";
    assert_int_equal(threadstat_parse_schedstat(max, sizeof(max) - 1, v), 0);
    assert_true(v[0] == UINT64_MAX);
    assert_true(v[1] == UINT64_MAX - 1);
    assert_int_equal(v[2], 1);
    /* @len counts, not a NUL: the line cut before its newline is refused */
    assert_int_equal(threadstat_parse_schedstat(ok, sizeof(ok) - 2, v), -EINVAL);
    assert_int_equal(threadstat_parse_schedstat(ok, 0, v), -EINVAL);
}

static void test_threadstat__refuses_other_schedstat_text(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "\n",
        "1 2 3", /* no newline */
        "1 2\n", /* two fields */
        "1\n",
        "1 2 3 4\n", /* four */
        "1 2 3 \n",  /* a trailing space */
        "1 2 \n",    /* an empty field */
        "1  2\n",
        " 1 2\n",
        " 1 2 3\n", /* a leading space */
        "1  2 3\n", /* two spaces */
        "1\t2 3\n", /* a tab */
        "a 2 3\n",  /* not digits */
        "1 2x 3\n",
        "1 -2 3\n",
        "+1 2 3\n",
        "0x10 2 3\n",
        "1 2 3\r\n",
        "18446744073709551616 0 0\n",  /* UINT64_MAX + 1 */
        "99999999999999999999 0 0\n",  /* 20 digits, too large */
        "123456789012345678901 0 0\n", /* 21 digits */
        "000000000000000000001 0 0\n", /* 21 digits, though a small number */
        "1 2 184467440737095516150\n",
    };
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(bad); i++) {
        uint64_t v[3] = {11, 22, 33};
        int err = threadstat_parse_schedstat(bad[i], strlen(bad[i]), v);
        if (err != -EINVAL)
            fail_msg("accepted \"%s\" (%d)", bad[i], err);
    }
    /* every cut of a line, in a buffer of exactly its length: refused, and nothing past
     * @len is read (ASan builds see it) */
    static const char line[] = "12 34 56\n";
    for (size_t n = 1; n < sizeof(line) - 1; n++) {
        char *exact = alloc_malloc(n);
        assert_non_null(exact);
        memcpy(exact, line, n);
        uint64_t w[3];
        assert_int_equal(threadstat_parse_schedstat(exact, n, w), -EINVAL);
        alloc_free(exact);
    }
    /* only @len bytes are the line: what follows them is not looked at */
    uint64_t v[3];
    static const char longer[] = "1 2 3\n999";
    assert_int_equal(threadstat_parse_schedstat(longer, 6, v), 0);
    assert_int_equal(v[2], 3);
}

/* This thread's schedstat line: the third number counts its switches in. */
static bool own_schedstat(uint64_t v[3])
{
    char path[64], buf[128];
    snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", (int)syscall(SYS_gettid));
    FILE *f = fopen(path, "r");
    if (!f)
        return false; /* a kernel without CONFIG_SCHED_INFO */
    size_t n = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    assert_int_equal(threadstat_parse_schedstat(buf, n, v), 0);
    return true;
}

static void test_threadstat__reads_own_schedstat(void **state)
{
    (void)state;
    uint64_t a[3], b[3];
    if (!own_schedstat(a))
        skip();
    usleep(2000); /* switched out to sleep, and in again */
    assert_true(own_schedstat(b));
    assert_true(b[2] > a[2]);
    assert_true(b[0] >= a[0]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_threadstat__state_after_last_paren),
        cmocka_unit_test(test_threadstat__sees_running_thread),
        cmocka_unit_test(test_threadstat__lists_threads_as_the_target_numbers_them),
        cmocka_unit_test(test_threadstat__cpu_time_from_the_stat_line),
        cmocka_unit_test(test_threadstat__parses_a_schedstat_line),
        cmocka_unit_test(test_threadstat__refuses_other_schedstat_text),
        cmocka_unit_test(test_threadstat__reads_own_schedstat),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
