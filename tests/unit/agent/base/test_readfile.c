/* SPDX-License-Identifier: MIT */
/*
 * Tests for agent/base/readfile.c: files pyprofd is pointed at are opened
 * without blocking and refused unless regular (a FIFO, a device, a socket, a
 * directory), and read whole up to a cap; small files, the kernel's among
 * them, into the caller's buffer. Each test runs under alarm(): a
 * FIFO that blocks the open kills the test instead of hanging it.
 */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/readfile.h"

struct tmpdir {
    char dir[64];
    char path[128];
};

static void tmpdir_make(struct tmpdir *t)
{
    snprintf(t->dir, sizeof(t->dir), "/tmp/pyprofd-test-readfile.XXXXXX");
    assert_non_null(mkdtemp(t->dir));
}

static const char *tmpdir_path(struct tmpdir *t, const char *name)
{
    snprintf(t->path, sizeof(t->path), "%s/%s", t->dir, name);
    return t->path;
}

static void write_file(const char *path, const char *body, size_t len)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fwrite(body, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

static void test_readfile__opens_regular_files(void **state)
{
    (void)state;
    struct tmpdir t;
    char why[128] = "";
    int fd = -1;
    tmpdir_make(&t);
    write_file(tmpdir_path(&t, "f"), "abc", 3);
    assert_int_equal(readfile_open(t.path, &fd, why, sizeof(why)), 0);
    assert_true(fd >= 0);
    close(fd);
    unlink(t.path);
    assert_int_equal(readfile_open(t.path, &fd, why, sizeof(why)), -ENOENT);
    assert_int_equal(fd, -1);
    assert_string_equal(why, "No such file or directory");
    rmdir(t.dir);
}

static void test_readfile__refuses_fifo_without_blocking(void **state)
{
    (void)state;
    struct tmpdir t;
    char why[128] = "";
    char *buf = NULL;
    size_t len = 0;
    int fd = -1;
    tmpdir_make(&t);
    assert_int_equal(mkfifo(tmpdir_path(&t, "fifo"), 0600), 0);
    alarm(10); /* a blocking open would never return: no writer comes */
    assert_int_equal(readfile_open(t.path, &fd, why, sizeof(why)), -EINVAL);
    assert_string_equal(why, "not a regular file (a FIFO)");
    assert_int_equal(fd, -1);
    assert_int_equal(readfile_all(t.path, 100, &buf, &len, why, sizeof(why)), -EINVAL);
    assert_null(buf);
    alarm(0);
    unlink(t.path);
    rmdir(t.dir);
}

static void test_readfile__refuses_devices_sockets_and_directories(void **state)
{
    (void)state;
    struct tmpdir t;
    char why[128] = "";
    int fd = -1;
    alarm(10);
    assert_int_equal(readfile_open("/dev/zero", &fd, why, sizeof(why)), -EINVAL);
    assert_string_equal(why, "not a regular file (a character device)");
    assert_int_equal(readfile_open("/tmp", &fd, why, sizeof(why)), -EISDIR);
    assert_string_equal(why, "Is a directory");

    tmpdir_make(&t);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof(a.sun_path), "%s", tmpdir_path(&t, "sock"));
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(s >= 0);
    assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
    /* open(2) of a socket fails by itself (ENXIO): refused either way */
    assert_true(readfile_open(t.path, &fd, why, sizeof(why)) < 0);
    assert_int_equal(fd, -1);
    close(s);
    unlink(t.path);
    rmdir(t.dir);
    alarm(0);
}

static void test_readfile__reads_up_to_the_cap(void **state)
{
    (void)state;
    struct tmpdir t;
    char why[128] = "";
    char *buf = NULL;
    size_t len = 0;
    tmpdir_make(&t);
    write_file(tmpdir_path(&t, "f"), "0123456789", 10);
    assert_int_equal(readfile_all(t.path, 10, &buf, &len, why, sizeof(why)), 0);
    assert_int_equal(len, 10);
    assert_string_equal(buf, "0123456789");
    alloc_free(buf);
    assert_int_equal(readfile_all(t.path, 9, &buf, &len, why, sizeof(why)), -EFBIG);
    assert_null(buf);
    assert_string_equal(why, "larger than 9 bytes");
    write_file(t.path, "", 0);
    assert_int_equal(readfile_all(t.path, 9, &buf, &len, why, sizeof(why)), 0);
    assert_int_equal(len, 0);
    assert_string_equal(buf, "");
    alloc_free(buf);
    unlink(t.path);
    rmdir(t.dir);
}

static void test_readfile__secrets_are_trimmed_and_checked(void **state)
{
    (void)state;
    struct tmpdir t;
    char err[256] = "", want[256];
    char *sec = NULL;
    tmpdir_make(&t);
    tmpdir_path(&t, "secret");
    write_file(t.path, "tok\n", 4); /* the newline an editor or echo adds */
    assert_int_equal(readfile_secret(t.path, &sec, err, sizeof(err)), 0);
    assert_string_equal(sec, "tok");
    alloc_free(sec);
    write_file(t.path, " \t a b \r\n\n", 10);
    assert_int_equal(readfile_secret(t.path, &sec, err, sizeof(err)), 0);
    assert_string_equal(sec, "a b");
    alloc_free(sec);
    write_file(t.path, "a\r\nX-Injected: 1\n", 17);
    assert_int_equal(readfile_secret(t.path, &sec, err, sizeof(err)), -EINVAL);
    assert_null(sec);
    snprintf(want, sizeof(want), "cannot use '%s': control character in the secret", t.path);
    assert_string_equal(err, want);
    unlink(t.path);
    assert_int_equal(readfile_secret(t.path, &sec, err, sizeof(err)), -ENOENT);
    snprintf(want, sizeof(want), "cannot read '%s': No such file or directory", t.path);
    assert_string_equal(err, want);
    rmdir(t.dir);
}

/* readfile_into(): the caller's buffer, NUL-terminated, cut at cap - 1, nothing allocated */
static void test_readfile__into_a_buffer(void **state)
{
    (void)state;
    struct tmpdir t;
    char buf[8];
    size_t len = 99;
    tmpdir_make(&t);
    write_file(tmpdir_path(&t, "f"), "0123456789", 10);
    (void)alloc_fail_nth(0);
    assert_int_equal(readfile_into(t.path, buf, sizeof(buf), &len, 0), 0);
    assert_int_equal(len, 7); /* cut: cap - 1, so the caller can tell */
    assert_string_equal(buf, "0123456");
    write_file(t.path, "abc", 3);
    assert_int_equal(readfile_into(t.path, buf, sizeof(buf), &len, READFILE_INTO_KERNEL), 0);
    assert_int_equal(len, 3);
    assert_string_equal(buf, "abc");
    write_file(t.path, "", 0);
    assert_int_equal(readfile_into(t.path, buf, sizeof(buf), &len, 0), 0);
    assert_int_equal(len, 0);
    assert_string_equal(buf, "");
    assert_int_equal(alloc_fail_nth(0), 0); /* no allocation */
    assert_int_equal(readfile_into(t.path, buf, 0, &len, 0), -EINVAL);
    unlink(t.path);
    assert_int_equal(readfile_into(t.path, buf, sizeof(buf), &len, 0), -ENOENT);
    assert_int_equal(len, 0);
    assert_string_equal(buf, "");

    /* relative to a directory descriptor */
    write_file(tmpdir_path(&t, "g"), "xyz\n", 4);
    int dfd = open(t.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(dfd >= 0);
    assert_int_equal(readfile_into_at(dfd, "g", buf, sizeof(buf), &len, READFILE_INTO_KERNEL), 0);
    assert_string_equal(buf, "xyz\n");
    assert_int_equal(readfile_into_at(dfd, "h", buf, sizeof(buf), &len, 0), -ENOENT);
    close(dfd);
    unlink(t.path);
    rmdir(t.dir);
}

/*
 * The kernel's files are regular and read as size 0 (fstat cannot size
 * them): they are read whole either way; one read of a one-record file gets
 * all of it; a /proc/PID that is gone reads as -ESRCH when asked.
 */
static void test_readfile__into_proc_files(void **state)
{
    (void)state;
    char a[4096], b[4096], path[64];
    size_t alen = 0, blen = 0;
    struct stat st;
    assert_int_equal(stat("/proc/self/status", &st), 0);
    assert_true(S_ISREG(st.st_mode) && st.st_size == 0);
    assert_int_equal(readfile_into("/proc/self/status", a, sizeof(a), &alen, 0), 0);
    assert_true(alen > 0 && alen < sizeof(a) - 1 && strlen(a) == alen);
    assert_non_null(strstr(a, "\nPid:"));
    assert_int_equal(readfile_into("/proc/self/status", b, sizeof(b), &blen,
                                   READFILE_INTO_KERNEL | READFILE_INTO_ONCE),
                     0);
    assert_non_null(strstr(b, "\nPid:"));
    assert_int_equal(blen, strlen(b));
    /* whole, to the end (its last line); not byte-equal: memory and switch counts move */
    assert_non_null(strstr(a, "\nnonvoluntary_ctxt_switches:"));
    assert_non_null(strstr(b, "\nnonvoluntary_ctxt_switches:"));
    assert_int_equal(strncmp(strstr(a, "\nPid:"), strstr(b, "\nPid:"), 16), 0);
    assert_int_equal(readfile_into("/proc/sys/kernel/pid_max", a, sizeof(a), &alen,
                                   READFILE_INTO_KERNEL | READFILE_INTO_ONCE),
                     0);
    assert_true(alen > 1 && a[alen - 1] == '\n');

    /* a pid that does not exist: its directory is gone */
    snprintf(path, sizeof(path), "/proc/%d/stat", INT32_MAX);
    assert_int_equal(readfile_into(path, a, sizeof(a), &alen, READFILE_INTO_KERNEL), -ENOENT);
    assert_int_equal(
        readfile_into(path, a, sizeof(a), &alen, READFILE_INTO_KERNEL | READFILE_INTO_GONE),
        -ESRCH);
}

/*
 * Without the type check, a FIFO still does not block (O_NONBLOCK: no writer
 * reads as the end), and a link is not followed; with it, both are refused
 * as readfile_open() refuses them.
 */
static void test_readfile__into_never_blocks(void **state)
{
    (void)state;
    struct tmpdir t;
    char buf[16], link[128];
    size_t len = 99;
    tmpdir_make(&t);
    assert_int_equal(mkfifo(tmpdir_path(&t, "fifo"), 0600), 0);
    alarm(10);
    assert_int_equal(readfile_into(t.path, buf, sizeof(buf), &len, 0), -EINVAL);
    assert_int_equal(readfile_into(t.path, buf, sizeof(buf), &len, READFILE_INTO_KERNEL), 0);
    assert_int_equal(len, 0);
    alarm(0);
    snprintf(link, sizeof(link), "%s", tmpdir_path(&t, "link"));
    write_file(tmpdir_path(&t, "f"), "abc", 3);
    assert_int_equal(symlink(t.path, link), 0);
    assert_int_equal(readfile_into(link, buf, sizeof(buf), &len, 0), 0);
    assert_string_equal(buf, "abc");
    assert_int_equal(readfile_into(link, buf, sizeof(buf), &len, READFILE_INTO_KERNEL), -ELOOP);
    assert_int_equal(readfile_into(t.dir, buf, sizeof(buf), &len, 0), -EISDIR);
    unlink(link);
    unlink(t.path);
    unlink(tmpdir_path(&t, "fifo"));
    rmdir(t.dir);
}

/* readfile_fill(): a descriptor read into a buffer until it is full or the file ends */
static void test_readfile__fill(void **state)
{
    (void)state;
    struct tmpdir t;
    char buf[16];
    size_t len = 0;
    tmpdir_make(&t);
    write_file(tmpdir_path(&t, "f"), "0123456789", 10);
    int fd = open(t.path, O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(readfile_fill(fd, buf, 4, &len), 0);
    assert_int_equal(len, 4); /* full: maybe more */
    assert_memory_equal(buf, "0123", 4);
    assert_int_equal(readfile_fill(fd, buf, sizeof(buf), &len), 0);
    assert_int_equal(len, 6); /* less than asked: the end */
    assert_memory_equal(buf, "456789", 6);
    assert_int_equal(readfile_fill(fd, buf, sizeof(buf), &len), 0);
    assert_int_equal(len, 0);
    close(fd);
    assert_int_equal(readfile_fill(fd, buf, sizeof(buf), &len), -EBADF);
    assert_int_equal(len, 0);
    unlink(t.path);
    rmdir(t.dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_readfile__opens_regular_files),
        cmocka_unit_test(test_readfile__refuses_fifo_without_blocking),
        cmocka_unit_test(test_readfile__refuses_devices_sockets_and_directories),
        cmocka_unit_test(test_readfile__reads_up_to_the_cap),
        cmocka_unit_test(test_readfile__secrets_are_trimmed_and_checked),
        cmocka_unit_test(test_readfile__into_a_buffer),
        cmocka_unit_test(test_readfile__into_proc_files),
        cmocka_unit_test(test_readfile__into_never_blocks),
        cmocka_unit_test(test_readfile__fill),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
