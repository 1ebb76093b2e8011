/* SPDX-License-Identifier: MIT */
/*
 * Tests for agent/discovery/pyruntime.c against live processes: the fake
 * python programs of tests/support are real ELF executables (and a shared
 * object) with a .PyRuntime section, and print the address where the runtime
 * should be found, so the address arithmetic is checked against the truth.
 * The asyncio debug table likewise: in the file holding the runtime, in an
 * _asyncio module loaded late (not there, then found), and not in the loaded
 * image (malformed, reported once).
 */
#include "base/compat.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmocka_wrap.h"

#include "discovery/pyruntime.h"
#include "fake_runtime.h"
#include "memread/memread.h"
#include "test_util.h"

struct located {
    int err;
    struct pyruntime rt;
    char why[512];
    uint64_t expected_raddr;
};

/* Starts fake program @name, locates its runtime, kills it. */
static void locate_fake(const char *name, struct located *out)
{
    char path[4096], line[128];
    char *argv[] = {(char *)test_fake_path(name, path, sizeof(path)), NULL};
    pid_t pid = test_spawn(argv, line, sizeof(line));
    assert_true(pid > 0);
    unsigned long addr = 0;
    assert_int_equal(sscanf(line, "ready 0x%lx", &addr), 1);
    out->expected_raddr = addr;

    struct memread *mr = NULL;
    assert_int_equal(memread_open(pid, MEMREAD_AUTO, &mr), 0);
    out->err = pyruntime_locate("/proc", pid, mr, &out->rt, out->why, sizeof(out->why));
    memread_free(mr);
    test_kill_child(pid);
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

static void test_pyruntime__finds_runtime_in_executable(void **state)
{
    (void)state;
    struct located l;
    locate_fake("fake-python3.14", &l);
    assert_int_equal(l.err, 0);
    assert_string_equal(l.why, "");
    assert_true(l.rt.raddr == l.expected_raddr);
    assert_true(ends_with(l.rt.path, "/fake-python3.14"));
    assert_int_equal(l.rt.version.minor, 14);
    assert_int_equal(l.rt.version.micro, 8);
    assert_true(l.rt.version.hex == 0x030e08f0);
    assert_true(l.rt.section_size >= PYVERSION_HEADER_SIZE);
    /* root opens the mapped file itself; others fall back to an inode-checked path */
    assert_string_equal(l.rt.opened_via, geteuid() == 0 ? "map_files" : "root");
}

static void test_pyruntime__finds_embedded_libpython(void **state)
{
    (void)state;
    struct located l;
    locate_fake("fake-embedder", &l);
    assert_int_equal(l.err, 0);
    assert_true(l.rt.raddr == l.expected_raddr);
    assert_true(ends_with(l.rt.path, "/libpython3.14-fake.so"));
}

static void test_pyruntime__skips_candidate_without_cookie(void **state)
{
    (void)state;
    struct located l;
    locate_fake("fake-python-stale", &l);
    assert_int_equal(l.err, 0);
    assert_true(l.rt.raddr == l.expected_raddr);
    assert_true(ends_with(l.rt.path, "/libpython3.14-fake.so"));
}

static void test_pyruntime__uninitialised_runtime_is_enoent(void **state)
{
    (void)state;
    struct located l;
    locate_fake("fake-python-nocookie", &l);
    assert_int_equal(l.err, -ENOENT);
    /* no cookie, no Py_Version symbol: not a runtime pyprofd can read */
    assert_non_null(strstr(l.why, "has no debug table, no Py_Version"));
}

static void test_pyruntime__no_section_is_enoent(void **state)
{
    (void)state;
    struct located l;
    locate_fake("fake-python-none", &l);
    assert_int_equal(l.err, -ENOENT);
    assert_non_null(strstr(l.why, "has no .PyRuntime section"));
}

/* Copies the file @from over @to in place (the same inode), mode 0755. */
static void copy_in_place(const char *from, const char *to)
{
    int in = open(from, O_RDONLY | O_CLOEXEC);
    int out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
    assert_true(in >= 0 && out >= 0);
    char buf[65536];
    ssize_t n;
    while ((n = read(in, buf, sizeof(buf))) > 0)
        assert_int_equal(write(out, buf, (size_t)n), n);
    close(in);
    assert_int_equal(fchmod(out, 0755), 0);
    close(out);
}

/* Locates the runtime of the program at @path (started, then killed). */
static void locate_at(const char *path, struct located *out)
{
    char line[128];
    char *argv[] = {(char *)path, NULL};
    pid_t pid = test_spawn(argv, line, sizeof(line));
    assert_true(pid > 0);
    unsigned long addr = 0;
    assert_int_equal(sscanf(line, "ready 0x%lx", &addr), 1);
    out->expected_raddr = addr;
    struct memread *mr = NULL;
    assert_int_equal(memread_open(pid, MEMREAD_AUTO, &mr), 0);
    out->err = pyruntime_locate("/proc", pid, mr, &out->rt, out->why, sizeof(out->why));
    memread_free(mr);
    test_kill_child(pid);
}

/*
 * What a file's headers say is kept by the file's identity (pyruntime.c's
 * memo): a second process of the same file is found the same way, placed
 * without its maps, and a file rewritten in place (same inode, another size
 * and time) is read again.
 */
static void test_pyruntime__file_memo_follows_the_file(void **state)
{
    (void)state;
    char good[4096], none[4096], copy[4096];
    test_fake_path("fake-python3.14", good, sizeof(good));
    test_fake_path("fake-python-none", none, sizeof(none));
    const char *tmp = getenv("TMPDIR");
    snprintf(copy, sizeof(copy), "%s/test_pyruntime_memo.%d", tmp && *tmp ? tmp : "/tmp",
             (int)getpid());
    copy_in_place(good, copy);
    struct located a, b, c;
    locate_at(copy, &a);
    locate_at(copy, &b); /* from the memo */
    assert_int_equal(a.err, 0);
    assert_int_equal(b.err, 0);
    assert_true(a.rt.raddr == a.expected_raddr);
    assert_true(b.rt.raddr == b.expected_raddr);
    assert_true(a.rt.version.hex == b.rt.version.hex);
    /* the second placed without the maps: AT_ENTRY less e_entry (pyruntime_exe_known()),
     * named as the file was opened when it was read */
    assert_false(a.rt.by_entry);
    assert_true(b.rt.by_entry);
    assert_string_equal(a.rt.opened_via, b.rt.opened_via);
    assert_true(a.rt.map_start != b.rt.map_start || a.rt.raddr == b.rt.raddr); /* ASLR or not */
    assert_string_equal(a.rt.path, b.rt.path);
    struct stat before, after;
    assert_int_equal(stat(copy, &before), 0);
    copy_in_place(none, copy);
    assert_int_equal(stat(copy, &after), 0);
    assert_true(before.st_ino == after.st_ino);
    locate_at(copy, &c);
    assert_int_equal(c.err, -ENOENT);
    assert_false(c.rt.by_entry);
    assert_non_null(strstr(c.why, "has no .PyRuntime section"));
    unlink(copy);
}

static void test_pyruntime__implausible_version_is_eproto(void **state)
{
    (void)state;
    struct located l;
    locate_fake("fake-python-garbage", &l);
    assert_int_equal(l.err, -EPROTO);
    assert_non_null(strstr(l.why, "implausible version word"));
}

static void test_pyruntime__unsupported_versions_are_found_then_refused(void **state)
{
    (void)state;
    static const struct {
        const char *name, *why;
    } cases[] = {
        {"fake-python3.16", "CPython 3.16.0 is not supported yet (supported: 3.9 to 3.15)"},
        {"fake-python3.15b1", "CPython 3.15.0b1 is a pre-release; only final releases are "
                              "supported (pre-release table layouts change)"},
    };
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(cases); i++) {
        struct located l;
        locate_fake(cases[i].name, &l);
        assert_int_equal(l.err, 0);
        char why[200];
        assert_int_equal(pyversion_check_supported(&l.rt.version, why, sizeof(why)), -ENOTSUP);
        assert_string_equal(why, cases[i].why);
    }
    /* a free-threaded build is found, flagged and supported */
    struct located ft;
    locate_fake("fake-python3.14t", &ft);
    assert_int_equal(ft.err, 0);
    assert_true(ft.rt.version.free_threaded);
    char why[200];
    assert_int_equal(pyversion_check_supported(&ft.rt.version, why, sizeof(why)), 0);
}

static void test_pyruntime__exited_process_is_esrch(void **state)
{
    (void)state;
    char path[4096], line[128];
    char *argv[] = {(char *)test_fake_path("fake-python3.14", path, sizeof(path)), NULL};
    pid_t pid = test_spawn(argv, line, sizeof(line));
    assert_true(pid > 0);
    struct memread *mr = NULL;
    assert_int_equal(memread_open(pid, MEMREAD_AUTO, &mr), 0);
    test_kill_child(pid);
    struct pyruntime rt;
    char why[256];
    assert_int_equal(pyruntime_locate("/proc", pid, mr, &rt, why, sizeof(why)), -ESRCH);
    assert_non_null(strstr(why, "cannot read '/proc/"));
    memread_free(mr);
}

static void test_pyruntime__deleted_executable_via_map_files(void **state)
{
    (void)state;
    if (geteuid() != 0)
        skip(); /* /proc/PID/map_files needs CAP_SYS_ADMIN */
    char src[4096], copy[] = "/tmp/pyprofd-test-python-XXXXXX";
    int fd = mkstemp(copy);
    assert_true(fd >= 0);
    char cmd[8300], out[64];
    snprintf(cmd, sizeof(cmd), "cp '%s' '%s' && chmod 755 '%s'",
             test_fake_path("fake-python3.14", src, sizeof(src)), copy, copy);
    close(fd);
    assert_int_equal(test_run(cmd, out, sizeof(out)), 0);
    char line[128];
    char *argv[] = {copy, NULL};
    pid_t pid = test_spawn(argv, line, sizeof(line));
    assert_true(pid > 0);
    unlink(copy);
    struct memread *mr = NULL;
    assert_int_equal(memread_open(pid, MEMREAD_AUTO, &mr), 0);
    struct pyruntime rt;
    char why[256];
    /* The name no longer contains a hint, but it is the main executable. */
    assert_int_equal(pyruntime_locate("/proc", pid, mr, &rt, why, sizeof(why)), 0);
    assert_true(rt.deleted);
    assert_string_equal(rt.opened_via, "map_files");
    assert_string_equal(rt.path, copy);
    memread_free(mr);
    test_kill_child(pid);
}

static void test_pyruntime__non_python_process_is_enoent(void **state)
{
    (void)state;
    char line[64];
    char sh[] = "/bin/sh", opt[] = "-c", script[] = "echo ready; exec sleep 30";
    char *argv[] = {sh, opt, script, NULL};
    pid_t pid = test_spawn(argv, line, sizeof(line));
    assert_true(pid > 0);
    usleep(100 * 1000); /* let the exec of sleep happen */
    struct memread *mr = NULL;
    assert_int_equal(memread_open(pid, MEMREAD_AUTO, &mr), 0);
    struct pyruntime rt;
    char why[256];
    assert_int_equal(pyruntime_locate("/proc", pid, mr, &rt, why, sizeof(why)), -ENOENT);
    assert_non_null(strstr(why, "has no .PyRuntime section"));
    memread_free(mr);
    test_kill_child(pid);
}

/* --- the asyncio debug table ------------------------------------------- */

/* A fake program started for the asyncio table tests, with its runtime. */
struct aio_proc {
    pid_t pid;
    uint64_t aio_addr; /* what it printed: its own table, 0 if none */
    struct memread *mr;
    struct pyruntime rt;
    struct pyruntime_asyncio_memo memo;
};

static void aio_start(struct aio_proc *p, const char *name, char *arg)
{
    char path[4096], line[128], why[512];
    char *argv[] = {(char *)test_fake_path(name, path, sizeof(path)), arg, NULL};
    memset(p, 0, sizeof(*p));
    p->pid = test_spawn(argv, line, sizeof(line));
    assert_true(p->pid > 0);
    test_track_target(p->pid);
    unsigned long rt_addr = 0, aio_addr = 0;
    assert_int_equal(sscanf(line, "ready 0x%lx 0x%lx", &rt_addr, &aio_addr), 2);
    p->aio_addr = aio_addr;
    assert_int_equal(memread_open(p->pid, MEMREAD_AUTO, &p->mr), 0);
    assert_int_equal(pyruntime_locate("/proc", p->pid, p->mr, &p->rt, why, sizeof(why)), 0);
    assert_true(p->rt.raddr == rt_addr);
}

static void aio_stop(struct aio_proc *p)
{
    memread_free(p->mr);
    test_untrack_target(p->pid);
    test_kill_child(p->pid);
}

/* The table at @sec must be the fake one: its first entry is the magic. */
static void expect_fake_table(struct aio_proc *p, const struct pyruntime_section *sec)
{
    uint64_t first = 0;
    assert_true(sec->size >= 13 * 8); /* more with sanitizers' redzones */
    assert_int_equal(memread_read(p->mr, sec->raddr, &first, sizeof(first)), 0);
    assert_true(first == FAKE_ASYNCIO_MAGIC);
}

static void test_pyruntime__finds_asyncio_table_in_runtime_file(void **state)
{
    (void)state;
    struct aio_proc p;
    aio_start(&p, "fake-python3.15-aio", NULL);
    struct pyruntime_section sec;
    char why[512];
    assert_int_equal(pyruntime_find_asyncio("/proc", p.pid, &p.rt, &p.memo, &sec, why, sizeof(why)),
                     0);
    assert_string_equal(why, "");
    assert_true(sec.raddr == p.aio_addr);
    expect_fake_table(&p, &sec);
    assert_int_equal(p.memo.searches, 1);
    aio_stop(&p);
}

static void test_pyruntime__finds_asyncio_table_once_imported(void **state)
{
    (void)state;
    char mod[4096];
    test_fake_path("_asyncio.cpython-314-fake.so", mod, sizeof(mod));
    struct aio_proc p;
    aio_start(&p, "fake-python3.14-lateaio", mod);
    assert_true(p.aio_addr == 0);
    struct pyruntime_section sec;
    char why[512];
    /* not imported yet: the runtime's file has no table, and is not opened again */
    for (int i = 0; i < 2; i++) {
        assert_int_equal(
            pyruntime_find_asyncio("/proc", p.pid, &p.rt, &p.memo, &sec, why, sizeof(why)),
            -ENOENT);
        assert_non_null(strstr(why, "asyncio not imported yet"));
        assert_int_equal(p.memo.nchecked, 1);
    }
    assert_int_equal(kill(p.pid, SIGUSR1), 0);
    int err = -ENOENT;
    for (int i = 0; i < 500 && err == -ENOENT; i++) {
        err = pyruntime_find_asyncio("/proc", p.pid, &p.rt, &p.memo, &sec, why, sizeof(why));
        if (err == -ENOENT)
            usleep(10 * 1000);
    }
    assert_int_equal(err, 0);
    expect_fake_table(&p, &sec);
    assert_true(p.memo.searches >= 3);
    aio_stop(&p);
}

static void test_pyruntime__unplaced_asyncio_table_is_eproto_once(void **state)
{
    (void)state;
    struct aio_proc p;
    aio_start(&p, "fake-python3.15-badaio", NULL);
    struct pyruntime_section sec;
    char why[512];
    assert_int_equal(pyruntime_find_asyncio("/proc", p.pid, &p.rt, &p.memo, &sec, why, sizeof(why)),
                     -EPROTO);
    assert_non_null(strstr(why, "cannot place .AsyncioDebug of '"));
    assert_non_null(strstr(why, "fake-python3.15-badaio' in memory"));
    assert_int_equal(pyruntime_find_asyncio("/proc", p.pid, &p.rt, &p.memo, &sec, why, sizeof(why)),
                     -ENOENT);
    aio_stop(&p);
}

static void test_pyruntime__asyncio_table_of_exited_process_is_esrch(void **state)
{
    (void)state;
    struct aio_proc p;
    aio_start(&p, "fake-python3.15-aio", NULL);
    aio_stop(&p);
    struct pyruntime_section sec;
    char why[512];
    assert_int_equal(pyruntime_find_asyncio("/proc", p.pid, &p.rt, &p.memo, &sec, why, sizeof(why)),
                     -ESRCH);
    assert_non_null(strstr(why, "cannot read '/proc/"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pyruntime__finds_runtime_in_executable),
        cmocka_unit_test(test_pyruntime__finds_embedded_libpython),
        cmocka_unit_test(test_pyruntime__skips_candidate_without_cookie),
        cmocka_unit_test(test_pyruntime__uninitialised_runtime_is_enoent),
        cmocka_unit_test(test_pyruntime__no_section_is_enoent),
        cmocka_unit_test(test_pyruntime__file_memo_follows_the_file),
        cmocka_unit_test(test_pyruntime__implausible_version_is_eproto),
        cmocka_unit_test(test_pyruntime__unsupported_versions_are_found_then_refused),
        cmocka_unit_test(test_pyruntime__exited_process_is_esrch),
        cmocka_unit_test(test_pyruntime__deleted_executable_via_map_files),
        cmocka_unit_test(test_pyruntime__non_python_process_is_enoent),
        cmocka_unit_test_teardown(test_pyruntime__finds_asyncio_table_in_runtime_file,
                                  test_kill_targets),
        cmocka_unit_test_teardown(test_pyruntime__finds_asyncio_table_once_imported,
                                  test_kill_targets),
        cmocka_unit_test_teardown(test_pyruntime__unplaced_asyncio_table_is_eproto_once,
                                  test_kill_targets),
        cmocka_unit_test(test_pyruntime__asyncio_table_of_exited_process_is_esrch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
