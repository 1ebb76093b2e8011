/* SPDX-License-Identifier: MIT */
/* Tests for agent/sampler/threadstat.c. */
#include "base/compat.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cmocka_wrap.h"

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_threadstat__state_after_last_paren),
        cmocka_unit_test(test_threadstat__sees_running_thread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
