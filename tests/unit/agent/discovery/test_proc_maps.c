/* SPDX-License-Identifier: MIT */
/* Tests for agent/discovery/proc_maps.c. */
#include "base/compat.h"

#include <unistd.h>

#include "cmocka_wrap.h"

#include "discovery/proc_maps.h"

/* Lines as Linux prints them, including the awkward ones. */
static const char sample_maps[] =
    "00400000-00401000 r--p 00000000 fe:01 1835234                            /usr/bin/python3.14\n"
    "00401000-0076e000 r-xp 00001000 fe:01 1835234                            /usr/bin/python3.14\n"
    "00b94000-00bd1000 rw-p 00794000 fe:01 1835234                            /usr/bin/python3.14\n"
    "01c3e000-01d11000 rw-p 00000000 00:00 0                                  [heap]\n"
    "7f0a1c000000-7f0a1c021000 rw-p 00000000 00:00 0 \n"
    "7f0a20e00000-7f0a21200000 r--s 00000000 00:17 42 /tmp/dir with spaces/lib python.so\n"
    "7f0a21200000-7f0a21400000 r-xp 00010000 103:02 99 /opt/app/libpython3.15.so.1.0 (deleted)\n"
    "7ffd5a3c0000-7ffd5a3e1000 rw-p 00000000 00:00 0                          [stack]\n"
    "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]\n";

static void test_proc_maps__parses_every_field(void **state)
{
    (void)state;
    struct proc_maps *m = NULL;
    assert_int_equal(proc_maps_parse(sample_maps, sizeof(sample_maps) - 1, 100, &m), 0);
    assert_int_equal(proc_maps_count(m), 9);

    const struct proc_map_entry *e = proc_maps_get(m, 2);
    assert_true(e->start == 0xb94000 && e->end == 0xbd1000 && e->offset == 0x794000);
    assert_int_equal(e->perms, PROC_MAP_READ | PROC_MAP_WRITE);
    assert_int_equal(e->dev_major, 0xfe);
    assert_int_equal(e->dev_minor, 1);
    assert_int_equal(e->inode, 1835234);
    assert_string_equal(e->path, "/usr/bin/python3.14");
    assert_false(e->deleted);
    assert_true(proc_map_is_file(e));

    e = proc_maps_get(m, 3);
    assert_string_equal(e->path, "[heap]");
    assert_false(proc_map_is_file(e));

    e = proc_maps_get(m, 4);
    assert_string_equal(e->path, "");
    assert_int_equal(e->inode, 0);
    assert_false(proc_map_is_file(e));

    e = proc_maps_get(m, 5);
    assert_string_equal(e->path, "/tmp/dir with spaces/lib python.so");
    assert_int_equal(e->perms, PROC_MAP_READ | PROC_MAP_SHARED);

    e = proc_maps_get(m, 6);
    assert_string_equal(e->path, "/opt/app/libpython3.15.so.1.0");
    assert_true(e->deleted);
    assert_int_equal(e->dev_major, 0x103);
    assert_int_equal(e->perms, PROC_MAP_READ | PROC_MAP_EXEC);

    e = proc_maps_get(m, 8);
    assert_true(e->start == 0xffffffffff600000ull);
    assert_int_equal(e->perms, PROC_MAP_EXEC);
    proc_maps_free(m);
}

static void test_proc_maps__accepts_missing_final_newline_and_empty(void **state)
{
    (void)state;
    static const char text[] = "1000-2000 r--p 00000000 00:00 0 /a";
    struct proc_maps *m = NULL;
    assert_int_equal(proc_maps_parse(text, sizeof(text) - 1, 10, &m), 0);
    assert_int_equal(proc_maps_count(m), 1);
    assert_string_equal(proc_maps_get(m, 0)->path, "/a");
    proc_maps_free(m);
    assert_int_equal(proc_maps_parse("", 0, 10, &m), 0);
    assert_int_equal(proc_maps_count(m), 0);
    proc_maps_free(m);
}

static void test_proc_maps__rejects_malformed_lines(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "2000-1000 r--p 00000000 00:00 0 /end-before-start",
        "1000-2000 r--q 00000000 00:00 0 /bad-perm",
        "1000-2000 r--p 00000000 00:00 x /bad-inode",
        "1000-2000 r--p 00000000 0000 0 /no-colon",
        "1000 r--p 00000000 00:00 0 /no-dash",
        "10000000000000000-10000000000000001 r--p 0 00:00 0 /too-wide",
        "1000-2000 r--p 00000000 00:00 99999999999999999999999 /inode-overflow",
        "1000-2000 r--p",
        "garbage",
    };
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(bad); i++) {
        struct proc_maps *m = NULL;
        assert_int_equal(proc_maps_parse(bad[i], strlen(bad[i]), 10, &m), -EINVAL);
        assert_null(m);
    }
    static const char with_nul[] = "1000-2000 r--p 00000000 00:00 0 /a\0b\n";
    struct proc_maps *m = NULL;
    assert_int_equal(proc_maps_parse(with_nul, sizeof(with_nul) - 1, 10, &m), -EINVAL);
}

static void test_proc_maps__caps_entries(void **state)
{
    (void)state;
    struct proc_maps *m = NULL;
    assert_int_equal(proc_maps_parse(sample_maps, sizeof(sample_maps) - 1, 8, &m), -E2BIG);
    assert_null(m);
}

static void test_proc_maps__reads_own_maps(void **state)
{
    (void)state;
    struct proc_maps *m = NULL;
    assert_int_equal(proc_maps_read("/proc", getpid(), &m), 0);
    assert_true(proc_maps_count(m) > 5);
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    assert_true(n > 0);
    exe[n] = '\0';
    bool found = false;
    uintptr_t here = (uintptr_t)&test_proc_maps__reads_own_maps;
    for (size_t i = 0; i < proc_maps_count(m); i++) {
        const struct proc_map_entry *e = proc_maps_get(m, i);
        if (here >= e->start && here < e->end) {
            assert_string_equal(e->path, exe);
            assert_true(e->perms & PROC_MAP_EXEC);
            found = true;
        }
    }
    assert_true(found);
    proc_maps_free(m);
}

static void test_proc_maps__missing_process_is_esrch(void **state)
{
    (void)state;
    struct proc_maps *m = NULL;
    /* pid_max is at most 2^22, so this pid cannot exist */
    assert_int_equal(proc_maps_read("/proc", 99999999, &m), -ESRCH);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_proc_maps__parses_every_field),
        cmocka_unit_test(test_proc_maps__accepts_missing_final_newline_and_empty),
        cmocka_unit_test(test_proc_maps__rejects_malformed_lines),
        cmocka_unit_test(test_proc_maps__caps_entries),
        cmocka_unit_test(test_proc_maps__reads_own_maps),
        cmocka_unit_test(test_proc_maps__missing_process_is_esrch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
