/* SPDX-License-Identifier: MIT */
/*
 * Tests for agent/memread: both kernel backends against a real child process
 * (its memory diverges from ours after fork, so a read proves where it came
 * from), the distinct error outcomes, and the custom-ops path via the fake.
 */
#include "base/compat.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmocka_wrap.h"

#include "memread/memread.h"
#include "memread_fake.h"

static char child_data[3][64];
static char *two_pages; /* first page mapped, second unmapped */
static long page_size;

/* Forks a child that keeps the current contents of child_data, then waits. */
static pid_t start_child(void)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        (void)!write(fds[1], "r", 1);
        for (;;)
            pause();
    }
    close(fds[1]);
    char c;
    assert_int_equal(read(fds[0], &c, 1), 1);
    close(fds[0]);
    return pid;
}

static void stop_child(pid_t pid)
{
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

static int memread_setup(void **state)
{
    (void)state;
    page_size = sysconf(_SC_PAGESIZE);
    two_pages = mmap(NULL, (size_t)page_size * 2, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(two_pages != MAP_FAILED);
    assert_int_equal(munmap(two_pages + page_size, (size_t)page_size), 0);
    memset(two_pages, 'p', (size_t)page_size);
    return 0;
}

static int memread_teardown(void **state)
{
    (void)state;
    munmap(two_pages, (size_t)page_size);
    return 0;
}

static void check_backend_reads_child(enum memread_backend backend, const char *name)
{
    snprintf(child_data[0], sizeof(child_data[0]), "first range");
    snprintf(child_data[1], sizeof(child_data[1]), "second range");
    snprintf(child_data[2], sizeof(child_data[2]), "third range");
    pid_t pid = start_child();
    /* change our copy: the child still holds the old text */
    snprintf(child_data[0], sizeof(child_data[0]), "parent changed this");

    struct memread *mr = NULL;
    assert_int_equal(memread_open(pid, backend, &mr), 0);
    assert_string_equal(memread_backend_name(mr), name);
    assert_int_equal(memread_pid(mr), pid);

    char a[64], b[64], c[64];
    struct memread_iov iov[3] = {
        {(uint64_t)(uintptr_t)child_data[0], a, sizeof(a)},
        {(uint64_t)(uintptr_t)child_data[1], b, sizeof(b)},
        {(uint64_t)(uintptr_t)child_data[2], c, sizeof(c)},
    };
    assert_int_equal(memread_readv(mr, iov, 3), 0);
    assert_string_equal(a, "first range");
    assert_string_equal(b, "second range");
    assert_string_equal(c, "third range");

    /* an unmapped address, and a range running off the end of a mapping */
    assert_int_equal(memread_read(mr, 8, a, 8), -EFAULT);
    assert_int_equal(memread_read(mr, (uint64_t)(uintptr_t)(two_pages + page_size - 8), a, 16),
                     -EFAULT);
    assert_int_equal(memread_read(mr, (uint64_t)(uintptr_t)(two_pages + page_size - 8), a, 8), 0);
    assert_memory_equal(a, "pppppppp", 8);

    /* the process goes away under an open reader */
    stop_child(pid);
    assert_int_equal(memread_read(mr, (uint64_t)(uintptr_t)child_data[1], b, 8), -ESRCH);
    memread_free(mr);

    assert_int_equal(memread_open(pid, backend, &mr), -ESRCH);
}

static void test_memread__vm_reads_child_and_reports_errors(void **state)
{
    (void)state;
    check_backend_reads_child(MEMREAD_VM, "process_vm_readv");
}

static void test_memread__procmem_reads_child_and_reports_errors(void **state)
{
    (void)state;
    check_backend_reads_child(MEMREAD_PROCMEM, "/proc/pid/mem");
}

static void test_memread__auto_uses_process_vm_readv(void **state)
{
    (void)state;
    check_backend_reads_child(MEMREAD_AUTO, "process_vm_readv");
}

static void test_memread__permission_denied_is_eperm(void **state)
{
    (void)state;
    if (geteuid() != 0) {
        /* unprivileged: a process of another user (init) must be refused */
        struct memread *mr = NULL;
        if (memread_open(1, MEMREAD_VM, &mr) != 0)
            skip();
        char buf[8];
        int err = memread_read(mr, 0x400000, buf, sizeof(buf));
        memread_free(mr);
        assert_true(err == -EPERM || err == -ESRCH);
        return;
    }
    /* root: a child that drops to nobody may not read us */
    pid_t parent = getpid();
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (setgid(65534) || setuid(65534))
            _exit(10);
        struct memread *mr = NULL;
        if (memread_open(parent, MEMREAD_VM, &mr))
            _exit(11);
        char buf[8];
        int err = memread_read(mr, (uint64_t)(uintptr_t)child_data, buf, sizeof(buf));
        memread_free(mr);
        struct memread *pm = NULL;
        int perr = memread_open(parent, MEMREAD_PROCMEM, &pm);
        memread_free(pm);
        _exit(err == -EPERM && perr == -EPERM ? 0 : 12);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_memread__rejects_bad_requests(void **state)
{
    (void)state;
    struct memread_fake *fake = NULL;
    struct memread *mr = NULL;
    assert_int_equal(memread_fake_open(&fake, &mr), 0);
    static struct memread_iov many[MEMREAD_MAX_IOV + 1];
    assert_int_equal(memread_readv(mr, many, MEMREAD_MAX_IOV + 1), -EINVAL);
    char buf[16];
    assert_int_equal(memread_read(mr, UINT64_MAX - 4, buf, sizeof(buf)), -EFAULT);
    assert_int_equal(memread_fake_calls(fake), 0);
    memread_free(mr);
}

static void test_memread__fake_backend_behaves_like_a_process(void **state)
{
    (void)state;
    struct memread_fake *fake = NULL;
    struct memread *mr = NULL;
    assert_int_equal(memread_fake_open(&fake, &mr), 0);
    assert_string_equal(memread_backend_name(mr), "fake");
    assert_int_equal(memread_fake_add(fake, 0x1000, "0123456789", 10), 0);
    char buf[8] = "";
    assert_int_equal(memread_read(mr, 0x1002, buf, 4), 0);
    assert_memory_equal(buf, "2345", 4);
    assert_int_equal(memread_read(mr, 0x1008, buf, 4), -EFAULT); /* runs off the end */
    memread_fake_fail_next(fake, -ESRCH);
    assert_int_equal(memread_read(mr, 0x1000, buf, 4), -ESRCH);
    assert_int_equal(memread_read(mr, 0x1000, buf, 4), 0);
    assert_int_equal(memread_fake_calls(fake), 4);
    memread_free(mr);
    memread_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_memread__vm_reads_child_and_reports_errors),
        cmocka_unit_test(test_memread__procmem_reads_child_and_reports_errors),
        cmocka_unit_test(test_memread__auto_uses_process_vm_readv),
        cmocka_unit_test(test_memread__permission_denied_is_eperm),
        cmocka_unit_test(test_memread__rejects_bad_requests),
        cmocka_unit_test(test_memread__fake_backend_behaves_like_a_process),
    };
    return cmocka_run_group_tests(tests, memread_setup, memread_teardown);
}
