/* SPDX-License-Identifier: MIT */
/*
 * Tests for agent/base/outfile.c: an output is written to a fresh temporary
 * and renamed into place; nothing planted at a name it uses (a symbolic link,
 * a hard link, a FIFO) redirects the write; a device, FIFO or /dev/stdout at
 * the final name is written directly; a symbolic link someone else owns, or
 * one to a regular file, is refused; errors carry their errno's text
 * (ENOSPC from /dev/full); a non-blocking stdout is waited on, not failed;
 * a failure leaves no temporary and no descriptor.
 * Each test runs under alarm(): an open that blocks kills the test instead
 * of hanging it. The parts that need another user's files (lchown) run as
 * root only. As root the devices are nodes of the test's own (mknod), never
 * /dev's: an outfile that regressed would replace the machine's /dev/null.
 */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/outfile.h"

#define NOBODY 65534

static char dir[64];

static int outfile_setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/pyprofd-test-outfile.XXXXXX");
    alarm(20);
    return mkdtemp(dir) ? 0 : -1;
}

static int outfile_teardown(void **state)
{
    (void)state;
    char cmd[128];
    alarm(0);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static const char *at(const char *name)
{
    static char path[4][256];
    static int next;
    char *p = path[next++ % 4];
    snprintf(p, sizeof(path[0]), "%s/%s", dir, name);
    return p;
}

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
}

/*
 * A character device @real names (1, @minor): as root a node of our own in
 * the test directory (what a regression could replace); else @real itself,
 * which only root could replace. NULL when the test directory's file system
 * refuses devices (nodev).
 */
static const char *device(const char *real, unsigned minor)
{
    static char nodes[2][256];
    if (geteuid() != 0)
        return real;
    char *path = nodes[minor == 7];
    snprintf(path, sizeof(nodes[0]), "%s/%s", dir, real + 5); /* "/dev/null" -> DIR/null */
    if (mknod(path, S_IFCHR | 0666, makedev(1, minor)) != 0 && errno != EEXIST)
        return NULL;
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    close(fd);
    return path;
}

/* The content of @path ("" when it cannot be read). */
static const char *get(const char *path)
{
    static char buf[4096];
    buf[0] = '\0';
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return buf;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    buf[n > 0 ? n : 0] = '\0';
    close(fd);
    return buf;
}

/* How many of our temporaries the directory holds. */
static int temps(void)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *de;
    assert_non_null(d);
    while ((de = readdir(d)) != NULL)
        n += outfile_is_temp(de->d_name);
    closedir(d);
    return n;
}

static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    assert_non_null(d);
    while (readdir(d) != NULL)
        n++;
    closedir(d);
    return n;
}

/* Opens @path and writes @text through the stream; returns outfile_close()'s. */
static int write_text(const char *path, unsigned flags, const char *text, char *why, size_t len)
{
    struct outfile *o = NULL;
    int err = outfile_open(path, 0644, flags, &o, why, len);
    if (err)
        return err;
    FILE *f = outfile_stream(o);
    assert_non_null(f);
    assert_ptr_equal(outfile_stream(o), f);
    fputs(text, f);
    return outfile_close(o, ferror(f) ? -EIO : 0, why, len);
}

static void test_outfile__writes_a_temporary_then_renames_it(void **state)
{
    (void)state;
    char why[256] = "";
    struct outfile *o = NULL;
    int fds = open_fds();
    mode_t old = umask(027);
    assert_int_equal(outfile_open(at("out.txt"), 0666, 0, &o, why, sizeof(why)), 0);
    umask(old);
    assert_false(outfile_is_direct(o));
    assert_int_equal(temps(), 1); /* the final name appears only when complete */
    assert_int_not_equal(access(at("out.txt"), F_OK), 0);
    assert_int_equal(outfile_write(o, "hello ", 6), 0);
    assert_int_equal(outfile_write(o, "world", 5), 0);
    assert_int_equal(outfile_close(o, 0, why, sizeof(why)), 0);
    assert_string_equal(get(at("out.txt")), "hello world");
    struct stat st;
    assert_int_equal(lstat(at("out.txt"), &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0640);
    assert_int_equal(temps(), 0);
    /* again over it, and a name without a directory (the working directory) */
    assert_int_equal(write_text(at("out.txt"), 0, "second", why, sizeof(why)), 0);
    assert_string_equal(get(at("out.txt")), "second");
    char cwd[256];
    assert_non_null(getcwd(cwd, sizeof(cwd)));
    assert_int_equal(chdir(dir), 0);
    assert_int_equal(write_text("here.txt", 0, "here", why, sizeof(why)), 0);
    assert_int_equal(chdir(cwd), 0);
    assert_string_equal(get(at("here.txt")), "here");
    assert_int_equal(open_fds(), fds);
}

/*
 * The names earlier versions used (PATH.tmp, .tmp-NAME) and the final name
 * itself hold planted links to a victim: it stays as it was.
 */
static void test_outfile__planted_links_never_redirect_the_write(void **state)
{
    (void)state;
    char why[256] = "";
    put(at("victim"), "precious");
    assert_int_equal(chmod(at("victim"), 0600), 0);
    assert_int_equal(symlink(at("victim"), at("a.txt.tmp")), 0);
    assert_int_equal(symlink(at("victim"), at(".tmp-a.txt")), 0);
    assert_int_equal(link(at("victim"), at("b.txt.tmp")), 0);
    assert_int_equal(mkfifo(at("c.txt.tmp"), 0600), 0); /* blocked the old open */
    assert_int_equal(link(at("victim"), at("hard.txt")), 0);
    assert_int_equal(write_text(at("a.txt"), 0, "A", why, sizeof(why)), 0);
    assert_int_equal(write_text(at("b.txt"), 0, "B", why, sizeof(why)), 0);
    assert_int_equal(write_text(at("c.txt"), 0, "C", why, sizeof(why)), 0);
    /* a hard link at the final name: the name is replaced, not the inode written */
    assert_int_equal(write_text(at("hard.txt"), 0, "H", why, sizeof(why)), 0);
    assert_string_equal(get(at("hard.txt")), "H");
    assert_string_equal(get(at("victim")), "precious");
    struct stat st;
    assert_int_equal(stat(at("victim"), &st), 0);
    assert_int_equal(st.st_nlink, 2); /* itself and b.txt.tmp */
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_string_equal(get(at("a.txt")), "A");
    assert_int_equal(temps(), 0);
}

static void test_outfile__symbolic_links_at_the_final_name(void **state)
{
    (void)state;
    char why[256] = "";
    struct outfile *o = (struct outfile *)(uintptr_t)1; /* set to NULL on failure */
    int fds = open_fds();
    put(at("victim"), "precious");
    /* to a regular file: refused, even one's own */
    assert_int_equal(symlink(at("victim"), at("l.txt")), 0);
    assert_int_equal(outfile_open(at("l.txt"), 0644, 0, &o, why, sizeof(why)), -ELOOP);
    assert_null(o);
    assert_string_equal(why, "a symbolic link to a regular file: refused (name the file itself)");
    /* to nothing: refused, and nothing is created where it points */
    assert_int_equal(symlink(at("absent"), at("d.txt")), 0);
    assert_int_equal(outfile_open(at("d.txt"), 0644, 0, &o, why, sizeof(why)), -ELOOP);
    assert_string_equal(why, "a symbolic link to nothing: refused (name the file itself)");
    assert_int_not_equal(access(at("absent"), F_OK), 0);
    /* to a directory */
    assert_int_equal(symlink("/tmp", at("dir.txt")), 0);
    assert_int_equal(outfile_open(at("dir.txt"), 0644, 0, &o, why, sizeof(why)), -EISDIR);
    /* to a device: written directly, the device stays one */
    const char *null = device("/dev/null", 3);
    if (!null)
        skip();
    assert_int_equal(symlink(null, at("null.txt")), 0);
    assert_int_equal(write_text(at("null.txt"), 0, "x", why, sizeof(why)), 0);
    struct stat st;
    assert_int_equal(lstat(at("null.txt"), &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_int_equal(stat(null, &st), 0);
    assert_true(S_ISCHR(st.st_mode));
    /* the storage directory's rule: no link at all */
    assert_int_equal(outfile_open(at("null.txt"), 0644, OUTFILE_REGULAR_ONLY, &o, why, sizeof(why)),
                     -EEXIST);
    assert_string_equal(why, "a symbolic link, not a regular file: refused");
    if (geteuid() == 0) {
        /* someone else's link, also to a device: never followed */
        assert_int_equal(symlink(null, at("theirs.txt")), 0);
        assert_int_equal(lchown(at("theirs.txt"), NOBODY, NOBODY), 0);
        assert_int_equal(outfile_open(at("theirs.txt"), 0644, 0, &o, why, sizeof(why)), -EPERM);
        assert_string_equal(why,
                            "a symbolic link owned by uid 65534 (not yours or root's): refused");
    }
    assert_string_equal(get(at("victim")), "precious");
    assert_int_equal(temps(), 0);
    assert_int_equal(open_fds(), fds);
}

static void test_outfile__devices_are_written_directly(void **state)
{
    (void)state;
    char why[256] = "";
    struct outfile *o = NULL;
    struct stat st;
    const char *null = device("/dev/null", 3);
    if (!null)
        skip();
    assert_int_equal(outfile_open(null, 0644, 0, &o, why, sizeof(why)), 0);
    assert_true(outfile_is_direct(o));
    assert_int_equal(outfile_write(o, "x", 1), 0);
    assert_int_equal(outfile_close(o, 0, why, sizeof(why)), 0);
    assert_int_equal(stat(null, &st), 0);
    assert_true(S_ISCHR(st.st_mode));
    /* the storage directory's rule: regular files only */
    assert_int_equal(outfile_open(null, 0644, OUTFILE_REGULAR_ONLY, &o, why, sizeof(why)), -EEXIST);
    assert_string_equal(why, "a character device, not a regular file: refused");
    /* directories */
    assert_int_equal(outfile_open(dir, 0644, 0, &o, why, sizeof(why)), -EISDIR);
    assert_string_equal(why, "Is a directory");
    assert_int_equal(outfile_open(at(""), 0644, 0, &o, why, sizeof(why)), -EISDIR);
    assert_int_equal(outfile_open(at("no/such"), 0644, 0, &o, why, sizeof(why)), -ENOENT);
    assert_string_equal(why, "No such file or directory");
    assert_int_equal(outfile_open("", 0644, 0, &o, why, sizeof(why)), -ENOENT);
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(dfd >= 0);
    assert_int_equal(outfile_openat(dfd, "a/b", 0644, 0, &o, why, sizeof(why)), -EINVAL);
    assert_int_equal(outfile_openat(dfd, "..", 0644, 0, &o, why, sizeof(why)), -EINVAL);
    assert_int_equal(outfile_openat(dfd, "at.txt", 0644, OUTFILE_SYNC, &o, why, sizeof(why)), 0);
    close(dfd); /* the outfile holds its own */
    assert_int_equal(outfile_write(o, "at", 2), 0);
    assert_int_equal(outfile_close(o, 0, why, sizeof(why)), 0);
    assert_string_equal(get(at("at.txt")), "at");
}

static void test_outfile__fifo_with_and_without_a_reader(void **state)
{
    (void)state;
    char why[256] = "";
    struct outfile *o = NULL;
    assert_int_equal(mkfifo(at("fifo"), 0600), 0);
    /* nobody reads: fails at once (a blocking open would wait for ever) */
    assert_int_equal(outfile_open(at("fifo"), 0644, 0, &o, why, sizeof(why)), -ENXIO);
    assert_string_equal(why, "a FIFO that no process reads");
    /* a reader: written through, more than a pipe holds (the writes block, not fail) */
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        int fd = open(at("fifo"), O_RDONLY);
        char buf[4096];
        size_t total = 0;
        ssize_t n;
        while ((n = read(fd, buf, sizeof(buf))) > 0)
            total += (size_t)n;
        (void)!write(p[1], &total, sizeof(total));
        _exit(0);
    }
    close(p[1]);
    for (int i = 0; i < 500; i++) { /* until the reader has it open */
        if (outfile_open(at("fifo"), 0644, 0, &o, why, sizeof(why)) == 0)
            break;
        usleep(10000);
    }
    assert_non_null(o);
    assert_true(outfile_is_direct(o));
    static char big[256 * 1024];
    memset(big, 'f', sizeof(big));
    assert_int_equal(outfile_write(o, big, sizeof(big)), 0);
    assert_int_equal(outfile_close(o, 0, why, sizeof(why)), 0);
    size_t got = 0;
    assert_int_equal(read(p[0], &got, sizeof(got)), sizeof(got));
    assert_int_equal(got, sizeof(big));
    close(p[0]);
    int st;
    assert_int_equal(waitpid(child, &st, 0), child);
    struct stat sb;
    assert_int_equal(lstat(at("fifo"), &sb), 0);
    assert_true(S_ISFIFO(sb.st_mode));
}

/* /dev/stdout is pyprofd's own descriptor: its offset, its O_APPEND. */
static void test_outfile__dev_stdout_is_the_standard_output(void **state)
{
    (void)state;
    char why[256] = "";
    put(at("stdout.txt"), "before\n");
    fflush(stdout);
    int saved = dup(STDOUT_FILENO);
    int fd = open(at("stdout.txt"), O_WRONLY | O_APPEND | O_CLOEXEC);
    assert_true(saved >= 0 && fd >= 0);
    assert_int_equal(dup2(fd, STDOUT_FILENO), STDOUT_FILENO);
    close(fd);
    /* /dev/stdout's link, of our own: a regression could replace the machine's */
    assert_int_equal(symlink("/proc/self/fd/1", at("stdout")), 0);
    int a = write_text(at("stdout"), 0, "one\n", why, sizeof(why));
    int b = write_text("/proc/self/fd/1", 0, "two\n", why, sizeof(why));
    assert_int_equal(dup2(saved, STDOUT_FILENO), STDOUT_FILENO);
    close(saved);
    assert_int_equal(a, 0);
    assert_int_equal(b, 0);
    assert_string_equal(get(at("stdout.txt")), "before\none\ntwo\n");
    struct stat st;
    assert_int_equal(lstat(at("stdout.txt"), &st), 0);
    assert_true(S_ISREG(st.st_mode));
}

/* A stdout pipe someone made non-blocking, read slowly: every byte arrives. */
static void test_outfile__non_blocking_stdout_waits_for_its_reader(void **state)
{
    (void)state;
    char why[256] = "";
    int p[2], r[2];
    assert_int_equal(pipe(p), 0);
    assert_int_equal(pipe(r), 0);
    assert_int_equal(fcntl(p[1], F_SETFL, fcntl(p[1], F_GETFL) | O_NONBLOCK), 0);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        close(p[1]);
        usleep(200000); /* the writer finds the pipe full first */
        char buf[4096];
        size_t total = 0;
        ssize_t n;
        while ((n = read(p[0], buf, sizeof(buf))) > 0)
            total += (size_t)n;
        (void)!write(r[1], &total, sizeof(total));
        _exit(0);
    }
    close(p[0]);
    close(r[1]);
    fflush(stdout);
    int saved = dup(STDOUT_FILENO);
    assert_int_equal(dup2(p[1], STDOUT_FILENO), STDOUT_FILENO);
    close(p[1]);
    assert_int_equal(symlink("/proc/self/fd/1", at("stdout")), 0);
    struct outfile *o = NULL;
    static char big[512 * 1024];
    memset(big, 's', sizeof(big));
    int a = outfile_open(at("stdout"), 0644, 0, &o, why, sizeof(why));
    int b = a ? a : outfile_write(o, big, sizeof(big));
    int c = outfile_close(o, b, why, sizeof(why));
    assert_int_equal(dup2(saved, STDOUT_FILENO), STDOUT_FILENO); /* the reader sees EOF */
    close(saved);
    assert_int_equal(c, 0);
    size_t got = 0;
    assert_int_equal(read(r[0], &got, sizeof(got)), sizeof(got));
    assert_int_equal(got, sizeof(big));
    close(r[0]);
    int st;
    assert_int_equal(waitpid(child, &st, 0), child);
}

/* A full device: the write's own errno, through the stream and directly. */
static void test_outfile__no_space_reads_as_such(void **state)
{
    (void)state;
    char why[256] = "";
    struct outfile *o = NULL;
    static char big[64 * 1024];
    memset(big, 'z', sizeof(big));
    const char *full = device("/dev/full", 7);
    if (!full)
        skip();
    assert_int_equal(outfile_open(full, 0644, 0, &o, why, sizeof(why)), 0);
    FILE *f = outfile_stream(o);
    assert_non_null(f);
    (void)fwrite(big, 1, sizeof(big), f);
    assert_true(ferror(f));
    /* a writer checking ferror() says EIO; the outfile knows better */
    assert_int_equal(outfile_close(o, -EIO, why, sizeof(why)), -ENOSPC);
    assert_string_equal(why, "No space left on device");
    /* buffered and never flushed by the writer: the close's flush fails */
    assert_int_equal(write_text(full, 0, "small", why, sizeof(why)), -ENOSPC);
    assert_string_equal(why, "No space left on device");
    assert_int_equal(outfile_open(full, 0644, 0, &o, why, sizeof(why)), 0);
    assert_int_equal(outfile_write(o, "x", 1), -ENOSPC);
    assert_int_equal(outfile_write(o, "x", 1), -ENOSPC);
    assert_int_equal(outfile_close(o, 0, why, sizeof(why)), -ENOSPC);
    assert_string_equal(why, "No space left on device");
}

/* The caller's failure, or the final name turning into a directory: nothing replaced. */
static void test_outfile__failures_leave_the_old_file(void **state)
{
    (void)state;
    char why[256] = "";
    struct outfile *o = NULL;
    put(at("keep.txt"), "old");
    assert_int_equal(outfile_open(at("keep.txt"), 0644, 0, &o, why, sizeof(why)), 0);
    assert_int_equal(outfile_write(o, "new", 3), 0);
    assert_int_equal(outfile_close(o, -ENOMEM, why, sizeof(why)), -ENOMEM);
    assert_string_equal(why, "Cannot allocate memory");
    assert_string_equal(get(at("keep.txt")), "old");
    assert_int_equal(temps(), 0);
    assert_int_equal(outfile_open(at("late"), 0644, 0, &o, why, sizeof(why)), 0);
    assert_int_equal(mkdir(at("late"), 0755), 0);
    assert_int_equal(outfile_close(o, 0, why, sizeof(why)), -EISDIR);
    assert_string_equal(why, "became a directory while it was written: refused");
    assert_int_equal(temps(), 0);
    assert_int_equal(outfile_close(NULL, -EIO, why, sizeof(why)), -EIO);
}

static void test_outfile__temporary_names(void **state)
{
    (void)state;
    assert_true(outfile_is_temp(".pyprofd-tmp-0123456789abcdef"));
    assert_false(outfile_is_temp(".pyprofd-tmp-0123456789abcde"));
    assert_false(outfile_is_temp(".pyprofd-tmp-0123456789abcdef0"));
    assert_false(outfile_is_temp(".pyprofd-tmp-0123456789ABCDEF"));
    assert_false(outfile_is_temp(".pyprofd-tmp-0123456789abcdeg"));
    assert_false(outfile_is_temp("pyprofd-tmp-0123456789abcdef"));
    assert_false(outfile_is_temp("out.txt.tmp"));
    /* drawn afresh each time */
    char why[64];
    struct outfile *a = NULL, *b = NULL;
    assert_int_equal(outfile_open(at("x"), 0644, 0, &a, why, sizeof(why)), 0);
    assert_int_equal(outfile_open(at("x"), 0644, 0, &b, why, sizeof(why)), 0);
    assert_int_equal(temps(), 2);
    assert_int_equal(outfile_close(a, 0, why, sizeof(why)), 0);
    assert_int_equal(outfile_close(b, 0, why, sizeof(why)), 0);
    assert_int_equal(temps(), 0);
}

/* Every allocation failing in turn: -ENOMEM, nothing left behind. */
static void test_outfile__allocation_failures(void **state)
{
    (void)state;
    char why[64];
    struct outfile *o = NULL;
    int fds = open_fds();
    (void)alloc_fail_nth(0);
    assert_int_equal(outfile_open(at("f"), 0644, 0, &o, why, sizeof(why)), 0);
    uint64_t n = alloc_fail_nth(0);
    assert_int_equal(outfile_close(o, 0, why, sizeof(why)), 0);
    assert_true(n >= 1);
    for (uint64_t k = 1; k <= n; k++) {
        (void)alloc_fail_nth(k);
        assert_int_equal(outfile_open(at("f"), 0644, 0, &o, why, sizeof(why)), -ENOMEM);
        (void)alloc_fail_nth(0);
        assert_null(o);
        assert_string_equal(why, "out of memory");
        assert_int_equal(temps(), 0);
        assert_int_equal(open_fds(), fds);
    }
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_outfile__writes_a_temporary_then_renames_it,
                                        outfile_setup, outfile_teardown),
        cmocka_unit_test_setup_teardown(test_outfile__planted_links_never_redirect_the_write,
                                        outfile_setup, outfile_teardown),
        cmocka_unit_test_setup_teardown(test_outfile__symbolic_links_at_the_final_name,
                                        outfile_setup, outfile_teardown),
        cmocka_unit_test_setup_teardown(test_outfile__devices_are_written_directly, outfile_setup,
                                        outfile_teardown),
        cmocka_unit_test_setup_teardown(test_outfile__fifo_with_and_without_a_reader, outfile_setup,
                                        outfile_teardown),
        cmocka_unit_test_setup_teardown(test_outfile__dev_stdout_is_the_standard_output,
                                        outfile_setup, outfile_teardown),
        cmocka_unit_test_setup_teardown(test_outfile__non_blocking_stdout_waits_for_its_reader,
                                        outfile_setup, outfile_teardown),
        cmocka_unit_test_setup_teardown(test_outfile__no_space_reads_as_such, outfile_setup,
                                        outfile_teardown),
        cmocka_unit_test_setup_teardown(test_outfile__failures_leave_the_old_file, outfile_setup,
                                        outfile_teardown),
        cmocka_unit_test_setup_teardown(test_outfile__temporary_names, outfile_setup,
                                        outfile_teardown),
        cmocka_unit_test_setup_teardown(test_outfile__allocation_failures, outfile_setup,
                                        outfile_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
