/* SPDX-License-Identifier: MIT */
/*
 * Integration test of discovery against live CPython 3.13, 3.14 and 3.15
 * targets from the test rootfs, each started two ways: in a plain chroot
 * (host PID namespace) and container-like (own PID and mount namespace, as in
 * a Kubernetes pod). For each: find .PyRuntime, read the cookie and version
 * word with both memory backends, check the CLI's `probe` output, and check
 * that a target that exits turns into -ESRCH.
 */
#include "base/compat.h"

#include <signal.h>
#include <unistd.h>

#include "cmocka_wrap.h"

#include "discovery/pyruntime.h"
#include "memread/memread.h"
#include "python/pyversion.h"
#include "test_util.h"

struct live_case {
    const char *python; /* "3.13" */
    unsigned minor;
    const char *mode; /* "chroot" or "container" */
};

static pid_t start_target(const struct live_case *c, const char *target)
{
    char cmd[1024], out[4096];
    snprintf(cmd, sizeof(cmd), "%s/scripts/run-target.sh start --python %s --mode %s %s 2>&1",
             PYPROFD_SOURCE_DIR, c->python, c->mode, target);
    int status = test_run(cmd, out, sizeof(out));
    if (status != 0)
        fail_msg("cannot start target (%s):\n%s", cmd, out);
    int64_t pid = 0;
    if (sscanf(out, "%" SCNd64, &pid) != 1 || pid <= 0)
        fail_msg("run-target.sh printed no pid: '%s'", out);
    test_track_target((pid_t)pid);
    return (pid_t)pid;
}

static void stop_target(pid_t pid)
{
    char cmd[1024], out[1024];
    snprintf(cmd, sizeof(cmd), "%s/scripts/run-target.sh stop %d 2>&1", PYPROFD_SOURCE_DIR,
             (int)pid);
    assert_int_equal(test_run(cmd, out, sizeof(out)), 0);
    test_untrack_target(pid);
}

/* The second NSpid entry is the pid inside the target's own namespace. */
static int namespace_pid(pid_t pid)
{
    char cmd[128], out[128];
    snprintf(cmd, sizeof(cmd), "awk '/^NSpid:/ {print $NF, NF}' /proc/%d/status", (int)pid);
    if (test_run(cmd, out, sizeof(out)) != 0)
        return -1;
    int inner = -1, fields = 0;
    if (sscanf(out, "%d %d", &inner, &fields) != 2)
        return -1;
    return fields == 3 ? inner : -1; /* "NSpid: host inner" */
}

static void check_locate(pid_t pid, enum memread_backend backend, const struct live_case *c)
{
    struct memread *mr = NULL;
    assert_int_equal(memread_open(pid, backend, &mr), 0);
    struct pyruntime rt;
    char why[512];
    int err = pyruntime_locate("/proc", pid, mr, &rt, why, sizeof(why));
    if (err)
        fail_msg("python %s (%s): %s", c->python, c->mode, why);
    /* Debian's interpreters link libpython statically: the executable holds it */
    char exe[16];
    snprintf(exe, sizeof(exe), "/python%s", c->python);
    assert_non_null(strstr(rt.path, exe));
    assert_string_equal(rt.opened_via, "map_files");
    assert_int_equal(rt.version.major, 3);
    assert_int_equal(rt.version.minor, c->minor);
    assert_true((rt.version.hex >> 16) == (0x0300u | c->minor));
    assert_int_equal(rt.version.level, PY_RELEASE_FINAL);
    assert_false(rt.version.free_threaded);
    assert_int_equal(pyversion_check_supported(&rt.version, why, sizeof(why)), 0);

    /* the table's cookie, read again directly at the address found */
    char cookie[8];
    assert_int_equal(memread_read(mr, rt.raddr, cookie, sizeof(cookie)), 0);
    assert_memory_equal(cookie, "xdebugpy", 8);
    memread_free(mr);
}

static void check_cli(pid_t pid, const struct live_case *c)
{
    char cmd[512], out[4096], want[64];
    snprintf(cmd, sizeof(cmd), "%s probe %d 2>&1", PYPROFD_BINARY, (int)pid);
    assert_int_equal(test_run(cmd, out, sizeof(out)), 0);
    snprintf(want, sizeof(want), "pid %d: CPython %s.", (int)pid, c->python);
    if (!strstr(out, want) || !strstr(out, "supported yes"))
        fail_msg("unexpected probe output:\n%s", out);
}

static void run_case(const struct live_case *c)
{
    pid_t pid = start_target(c, "sleepy");
    if (strcmp(c->mode, "container") == 0)
        assert_int_equal(namespace_pid(pid), 1);
    else
        assert_int_equal(namespace_pid(pid), -1);

    check_locate(pid, MEMREAD_VM, c);
    check_locate(pid, MEMREAD_PROCMEM, c);
    check_cli(pid, c);

    /* A target that exits: an open reader and a new lookup both say ESRCH. */
    struct memread *mr = NULL;
    assert_int_equal(memread_open(pid, MEMREAD_AUTO, &mr), 0);
    stop_target(pid);
    for (int i = 0; i < 100 && kill(pid, 0) == 0; i++)
        usleep(20 * 1000);
    char buf[8];
    assert_int_equal(memread_read(mr, 0x400000, buf, sizeof(buf)), -ESRCH);
    struct pyruntime rt;
    char why[256];
    assert_int_equal(pyruntime_locate("/proc", pid, mr, &rt, why, sizeof(why)), -ESRCH);
    memread_free(mr);
}

#define LIVE_TEST(fn, py, minor, mode)                                                             \
    static void fn(void **state)                                                                   \
    {                                                                                              \
        (void)state;                                                                               \
        static const struct live_case c = {py, minor, mode};                                       \
        run_case(&c);                                                                              \
    }

LIVE_TEST(test_live_runtime__python313_chroot, "3.13", 13, "chroot")
LIVE_TEST(test_live_runtime__python314_chroot, "3.14", 14, "chroot")
LIVE_TEST(test_live_runtime__python315_chroot, "3.15", 15, "chroot")
LIVE_TEST(test_live_runtime__python313_container, "3.13", 13, "container")
LIVE_TEST(test_live_runtime__python314_container, "3.14", 14, "container")
LIVE_TEST(test_live_runtime__python315_container, "3.15", 15, "container")

static int live_setup(void **state)
{
    (void)state;
    if (geteuid() != 0) {
        fprintf(stderr, "test_live_runtime: needs root (chroot, unshare, map_files)\n");
        return -1;
    }
    char cmd[512], out[4096];
    snprintf(cmd, sizeof(cmd), "%s/scripts/python-rootfs.sh 2>&1", PYPROFD_SOURCE_DIR);
    if (test_run(cmd, out, sizeof(out)) != 0) {
        fprintf(stderr, "test_live_runtime: no test rootfs:\n%s\n", out);
        return -1;
    }
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_live_runtime__python313_chroot, test_kill_targets),
        cmocka_unit_test_teardown(test_live_runtime__python314_chroot, test_kill_targets),
        cmocka_unit_test_teardown(test_live_runtime__python315_chroot, test_kill_targets),
        cmocka_unit_test_teardown(test_live_runtime__python313_container, test_kill_targets),
        cmocka_unit_test_teardown(test_live_runtime__python314_container, test_kill_targets),
        cmocka_unit_test_teardown(test_live_runtime__python315_container, test_kill_targets),
    };
    return cmocka_run_group_tests(tests, live_setup, NULL);
}
