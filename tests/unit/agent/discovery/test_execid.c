/* SPDX-License-Identifier: MIT */
/*
 * Tests for agent/discovery/execid.c: the auxiliary-vector parser, and a
 * real child process that execs another program (it keeps its PID and start
 * time; its image identity must change).
 */
#include "base/compat.h"

#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cmocka_wrap.h"

#include "discovery/execid.h"
#include "memread/memread.h"
#include "memread_fake.h"

static size_t put_pair(uint8_t *buf, size_t off, uint64_t type, uint64_t value)
{
    memcpy(buf + off, &type, 8);
    memcpy(buf + off + 8, &value, 8);
    return off + 16;
}

static void test_execid__parses_auxv(void **state)
{
    (void)state;
    uint8_t buf[128];
    uint64_t raddr = 0;
    size_t n = put_pair(buf, 0, 6, 4096);     /* AT_PAGESZ */
    n = put_pair(buf, n, 25, 0x7ffd12345678); /* AT_RANDOM */
    n = put_pair(buf, n, 0, 0);
    assert_int_equal(execid_parse_auxv(buf, n, &raddr), 0);
    assert_true(raddr == 0x7ffd12345678ull);
    /* no AT_RANDOM before AT_NULL, even if one follows */
    n = put_pair(buf, 0, 6, 4096);
    n = put_pair(buf, n, 0, 0);
    n = put_pair(buf, n, 25, 0x1000);
    assert_int_equal(execid_parse_auxv(buf, n, &raddr), -ENOENT);
    /* a zero AT_RANDOM is no identity */
    n = put_pair(buf, 0, 25, 0);
    n = put_pair(buf, n, 0, 0);
    assert_int_equal(execid_parse_auxv(buf, n, &raddr), -ENOENT);
    /* cut short: no AT_NULL, or half a pair */
    n = put_pair(buf, 0, 6, 4096);
    assert_int_equal(execid_parse_auxv(buf, n, &raddr), -EINVAL);
    assert_int_equal(execid_parse_auxv(buf, n + 8, &raddr), -EINVAL);
    assert_int_equal(execid_parse_auxv(buf, 0, &raddr), -EINVAL);
}

static void test_execid__check_compares_the_bytes(void **state)
{
    (void)state;
    struct memread_fake *fake = NULL;
    struct memread *mr = NULL;
    assert_int_equal(memread_fake_open(&fake, &mr), 0);
    uint8_t bytes[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    assert_int_equal(memread_fake_add(fake, 0x5000, bytes, sizeof(bytes)), 0);
    struct exec_id id = {.random_raddr = 0x5000};
    memcpy(id.random, bytes, sizeof(bytes));
    bool same = false;
    assert_int_equal(execid_check(mr, &id, &same), 0);
    assert_true(same);
    bytes[7] ^= 0x40;
    assert_int_equal(memread_fake_poke(fake, 0x5000, bytes, sizeof(bytes)), 0);
    assert_int_equal(execid_check(mr, &id, &same), 0);
    assert_false(same);
    /* unmapped now: another image */
    id.random_raddr = 0x9000;
    assert_int_equal(execid_check(mr, &id, &same), 0);
    assert_false(same);
    /* gone: said so */
    id.random_raddr = 0x5000;
    memread_fake_fail_next(fake, -ESRCH);
    assert_int_equal(execid_check(mr, &id, &same), -ESRCH);
    /* nothing known: nothing to compare */
    struct exec_id none = {0};
    assert_int_equal(execid_check(mr, &none, &same), 0);
    assert_true(same);
    memread_free(mr);
}

/* Whether /proc/@pid/exe now names @suffix, waiting up to 5 s. */
static bool wait_exe(pid_t pid, const char *suffix)
{
    char path[64], target[4096];
    snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
    for (int i = 0; i < 500; i++) {
        ssize_t n = readlink(path, target, sizeof(target) - 1);
        if (n > 0) {
            target[n] = '\0';
            size_t a = (size_t)n, b = strlen(suffix);
            if (a >= b && strcmp(target + a - b, suffix) == 0)
                return true;
        }
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    return false;
}

static void test_execid__exec_changes_the_identity(void **state)
{
    (void)state;
    int go[2];
    assert_int_equal(pipe(go), 0);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        char c;
        close(go[1]);
        if (read(go[0], &c, 1) == 1)
            execl("/bin/sleep", "sleep", "30", (char *)NULL);
        _exit(127);
    }
    close(go[0]);
    struct memread *mr = NULL;
    assert_int_equal(memread_open(child, MEMREAD_AUTO, &mr), 0);
    struct exec_id before, again;
    assert_int_equal(execid_read("/proc", child, mr, &before), 0);
    assert_true(before.random_raddr != 0);
    assert_int_equal(execid_read("/proc", child, mr, &again), 0);
    assert_memory_equal(&before, &again, sizeof(before));
    bool same = false;
    assert_int_equal(execid_check(mr, &before, &same), 0);
    assert_true(same);

    assert_int_equal(write(go[1], "x", 1), 1);
    close(go[1]);
    assert_true(wait_exe(child, "/sleep"));
    /* /proc/PID/exe changes before the kernel has written the new auxiliary
     * vector: until then it reads as empty (-ENOENT), on a loaded machine for
     * a while */
    struct exec_id after;
    int err = -ENOENT;
    for (int i = 0; i < 500 && err == -ENOENT; i++) {
        err = execid_read("/proc", child, mr, &after);
        if (err == -ENOENT) {
            struct timespec ts = {0, 10000000};
            nanosleep(&ts, NULL);
        }
    }
    assert_int_equal(err, 0);
    assert_int_equal(execid_check(mr, &before, &same), 0);
    assert_false(same);
    assert_true(memcmp(&after, &before, sizeof(after)) != 0);

    kill(child, SIGKILL);
    (void)waitpid(child, NULL, 0);
    /* reaped: gone */
    assert_int_equal(execid_read("/proc", child, mr, &after), -ESRCH);
    memread_free(mr);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_execid__parses_auxv),
        cmocka_unit_test(test_execid__check_compares_the_bytes),
        cmocka_unit_test(test_execid__exec_changes_the_identity),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
