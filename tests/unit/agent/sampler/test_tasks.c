/* SPDX-License-Identifier: MIT */
/*
 * Tests for agent/sampler/tasks.c: the one listing of a target's threads
 * (this process's own, with threads started for the test), its cap, and the
 * parser of the kernel's directory records over hand-made buffers.
 */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sampler/tasks.h"

/* Appends a getdents64 record named @name at @at of @buf; returns the new end. */
static size_t put_record(unsigned char *buf, size_t at, const char *name)
{
    size_t len = strlen(name) + 1, reclen = (19 + len + 7) & ~(size_t)7;
    memset(buf + at, 0, reclen);
    buf[at + 16] = (unsigned char)(reclen & 0xff);
    buf[at + 17] = (unsigned char)(reclen >> 8);
    memcpy(buf + at + 19, name, len);
    return at + reclen;
}

static void test_tasks__parses_records(void **state)
{
    (void)state;
    unsigned char buf[512];
    size_t end = 0;
    end = put_record(buf, end, ".");
    end = put_record(buf, end, "..");
    end = put_record(buf, end, "4242");
    end = put_record(buf, end, "0");           /* not a thread id */
    end = put_record(buf, end, "99999999999"); /* over INT32_MAX */
    end = put_record(buf, end, "12x");
    end = put_record(buf, end, "4243");
    pid_t tids[8];
    size_t n = 0;
    bool more = false;
    assert_true(tasks_parse(buf, end, tids, 8, &n, &more));
    assert_int_equal(n, 2);
    assert_int_equal(tids[0], 4242);
    assert_int_equal(tids[1], 4243);
    assert_false(more);
    /* the cap: the first one kept, the rest said */
    n = 0;
    assert_true(tasks_parse(buf, end, tids, 1, &n, &more));
    assert_int_equal(n, 1);
    assert_true(more);
    /* malformed: a length past the buffer, too short, a name without its NUL */
    unsigned char bad[64];
    size_t b = put_record(bad, 0, "77");
    bad[16] = 200;
    n = 0;
    assert_false(tasks_parse(bad, b, tids, 8, &n, NULL));
    bad[16] = 8;
    assert_false(tasks_parse(bad, b, tids, 8, &n, NULL));
    b = put_record(bad, 0, "77");
    memset(bad + 19, '7', b - 19);
    assert_false(tasks_parse(bad, b, tids, 8, &n, NULL));
    assert_false(tasks_parse(bad, 10, tids, 8, &n, NULL));
}

static void *park(void *arg)
{
    pthread_barrier_t *b = arg;
    pthread_barrier_wait(b); /* started */
    pthread_barrier_wait(b); /* listed */
    return NULL;
}

static void test_tasks__lists_own_threads(void **state)
{
    (void)state;
    enum { EXTRA = 3 };
    pthread_barrier_t b;
    pthread_t th[EXTRA];
    pthread_barrier_init(&b, NULL, EXTRA + 1);
    for (int i = 0; i < EXTRA; i++)
        assert_int_equal(pthread_create(&th[i], NULL, park, &b), 0);
    pthread_barrier_wait(&b);
    pid_t tids[TASKS_MAX];
    size_t n;
    bool more;
    assert_int_equal(tasks_list("/proc", getpid(), tids, TASKS_MAX, &n, &more), 0);
    assert_true(n >= EXTRA + 1);
    assert_false(more);
    bool self = false;
    for (size_t i = 0; i < n; i++)
        self |= tids[i] == (pid_t)syscall(SYS_gettid);
    assert_true(self);
    assert_int_equal(tasks_list("/proc", getpid(), tids, 1, &n, &more), 0);
    assert_int_equal(n, 1);
    assert_true(more);
    pthread_barrier_wait(&b);
    for (int i = 0; i < EXTRA; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&b);
    /* a process that does not exist */
    assert_int_equal(tasks_list("/proc", 0x7ffffff0, tids, TASKS_MAX, &n, NULL), -ESRCH);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tasks__parses_records),
        cmocka_unit_test(test_tasks__lists_own_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
