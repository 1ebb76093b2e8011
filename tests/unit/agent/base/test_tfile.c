/* SPDX-License-Identifier: MIT */
/*
 * Tests for agent/base/tfile.c: names a target gives are resolved below its
 * root, as its credentials allow, never opening a FIFO or a device and never
 * leaving the root, and a lookup that stalls is given up in bounded time.
 * The "target" is this process (its root and working directory) or a
 * directory made to stand for a root; credentials are set by hand. Every
 * test runs under alarm(): an open that blocks kills the test.
 */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/tfile.h"

struct tree {
    char dir[64]; /* the directory standing for a target's root: dir/root */
    char path[256];
};

static const char *tree_path(struct tree *t, const char *name)
{
    snprintf(t->path, sizeof(t->path), "%s/%s", t->dir, name);
    return t->path;
}

static void write_file(const char *path, const char *body, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, body, strlen(body)), (ssize_t)strlen(body));
    close(fd);
    assert_int_equal(chmod(path, mode), 0);
}

/*
 * dir/root/app/main.py       "print(1)\n"  0644
 * dir/root/app/secret.py     0600 owned by us
 * dir/root/closed/x.py       0644 in a 0700 directory
 * dir/root/app/fifo          a FIFO
 * dir/root/app/up            -> ../../outside.py (climbs: stays in root)
 * dir/root/app/abs           -> /app/main.py     (absolute: the root's)
 * dir/root/app/loop1 <-> loop2
 * dir/outside.py             outside the root
 */
static void tree_make(struct tree *t)
{
    snprintf(t->dir, sizeof(t->dir), "/tmp/pyprofd-test-tfile.XXXXXX");
    assert_non_null(mkdtemp(t->dir));
    assert_int_equal(mkdir(tree_path(t, "root"), 0755), 0);
    assert_int_equal(mkdir(tree_path(t, "root/app"), 0755), 0);
    assert_int_equal(mkdir(tree_path(t, "root/closed"), 0700), 0);
    write_file(tree_path(t, "root/app/main.py"), "print(1)\n", 0644);
    write_file(tree_path(t, "root/app/secret.py"), "x = 'secret'\n", 0600);
    write_file(tree_path(t, "root/closed/x.py"), "hidden\n", 0644);
    write_file(tree_path(t, "outside.py"), "outside\n", 0644);
    assert_int_equal(mkfifo(tree_path(t, "root/app/fifo"), 0666), 0);
    assert_int_equal(symlink("../../outside.py", tree_path(t, "root/app/up")), 0);
    assert_int_equal(symlink("/app/main.py", tree_path(t, "root/app/abs")), 0);
    assert_int_equal(symlink("loop2", tree_path(t, "root/app/loop1")), 0);
    assert_int_equal(symlink("loop1", tree_path(t, "root/app/loop2")), 0);
}

static void tree_remove(struct tree *t)
{
    static const char *const names[] = {
        "root/app/main.py", "root/app/secret.py", "root/closed/x.py", "outside.py",
        "root/app/fifo",    "root/app/up",        "root/app/abs",     "root/app/loop1",
        "root/app/loop2",   "root/app/big.py"};
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(names); i++)
        (void)unlink(tree_path(t, names[i]));
    (void)rmdir(tree_path(t, "root/closed"));
    (void)rmdir(tree_path(t, "root/app"));
    (void)rmdir(tree_path(t, "root"));
    (void)rmdir(t->dir);
}

/* A who for this process whose root is @t's dir/root, with credentials @uid/@gid. */
static void who_in_tree(struct tree *t, struct tfile_who *w, uint32_t uid, uint32_t gid)
{
    assert_int_equal(tfile_who_open(NULL, getpid(), w), 0);
    close(w->root_fd);
    w->root_fd = open(tree_path(t, "root"), O_PATH | O_DIRECTORY | O_CLOEXEC);
    assert_true(w->root_fd >= 0);
    w->cwd_name[0] = '\0';
    w->creds = (struct tfile_creds){.fsuid = uid, .fsgid = gid};
}

static int read_name(const struct tfile_who *w, const char *name, char *text, size_t size,
                     char *why, size_t whylen)
{
    struct buf b;
    buf_init(&b, 1u << 20);
    int err = tfile_read(w, name, 1u << 20, &b, NULL, why, whylen);
    snprintf(text, size, "%s", err ? "" : buf_str(&b));
    buf_release(&b);
    return err;
}

static int setup(void **state)
{
    (void)state;
    alarm(20);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    alarm(0);
    return 0;
}

static void test_tfile__parses_status(void **state)
{
    (void)state;
    static const char text[] = "Name:\tpython3\nUid:\t1000\t1001\t1002\t1003\n"
                               "Gid:\t100\t101\t102\t103\nGroups:\t4 24 27 \n"
                               "CapEff:\t0000000000000006\n";
    struct tfile_creds c;
    assert_int_equal(tfile_parse_status(text, sizeof(text) - 1, &c), 0);
    assert_int_equal(c.fsuid, 1003); /* the filesystem ids: the fourth field */
    assert_int_equal(c.fsgid, 103);
    assert_int_equal(c.ngroups, 3);
    assert_int_equal(c.groups[2], 27);
    assert_true(c.dac_override && c.dac_read_search);
    /* no Groups line, no capabilities */
    static const char plain[] = "Uid:\t5\t5\t5\t5\nGid:\t6\t6\t6\t6\nCapEff:\t0\n";
    assert_int_equal(tfile_parse_status(plain, sizeof(plain) - 1, &c), 0);
    assert_int_equal(c.ngroups, 0);
    assert_false(c.dac_override || c.dac_read_search);
    /* malformed: each refused */
    static const char *const bad[] = {
        "Gid:\t6\t6\t6\t6\nCapEff:\t0\n",                             /* no Uid */
        "Uid:\t5\t5\t5\nGid:\t6\t6\t6\t6\nCapEff:\t0\n",              /* three ids */
        "Uid:\t5\t5\t5\t99999999999\nGid:\t6\t6\t6\t6\nCapEff:\t0\n", /* over 2^32 */
        "Uid:\t5\t5\t5\t5x\nGid:\t6\t6\t6\t6\nCapEff:\t0\n",
        "Uid:\t5\t5\t5\t5\nGid:\t6\t6\t6\t6\n",                             /* no CapEff */
        "Uid:\t5\t5\t5\t5\nGid:\t6\t6\t6\t6\nCapEff:\t00000000000000000\n", /* 17 digits */
        "Uid:\t5\t5\t5\t5\nGid:\t6\t6\t6\t6\nCapEff:\tzz\n",
    };
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(bad); i++)
        assert_int_equal(tfile_parse_status(bad[i], strlen(bad[i]), &c), -EINVAL);
    /* our own status parses, with our filesystem uid */
    struct tfile_who w = TFILE_WHO_INIT;
    assert_int_equal(tfile_who_open(NULL, getpid(), &w), 0);
    assert_int_equal(w.creds.fsuid, (uint32_t)geteuid());
    tfile_who_close(&w);
    tfile_who_close(&w); /* twice: a no-op */
}

static void test_tfile__judges_mode_bits(void **state)
{
    (void)state;
    struct tfile_creds c = {.fsuid = 1000, .fsgid = 100, .groups = {50}, .ngroups = 1};
    struct stat st = {.st_uid = 1000, .st_gid = 7, .st_mode = S_IFREG | 0400};
    assert_true(tfile_may(&c, &st, 4));
    st.st_mode = S_IFREG | 0044; /* the owner class decides, even when others may */
    assert_false(tfile_may(&c, &st, 4));
    st.st_uid = 0;
    st.st_gid = 50; /* a supplementary group */
    st.st_mode = S_IFREG | 0040;
    assert_true(tfile_may(&c, &st, 4));
    st.st_gid = 51;
    assert_false(tfile_may(&c, &st, 4));
    st.st_mode = S_IFDIR | 0701;
    assert_true(tfile_may(&c, &st, 1));
    assert_false(tfile_may(&c, &st, 4));
    c.dac_read_search = true; /* reads anything, searches any directory */
    st.st_mode = S_IFDIR | 0700;
    assert_true(tfile_may(&c, &st, 1));
    assert_false(tfile_may(&c, &st, 2));
    c.dac_override = true;
    assert_true(tfile_may(&c, &st, 2));
}

static void test_tfile__reads_below_the_root(void **state)
{
    (void)state;
    struct tree t;
    struct tfile_who w;
    char text[256], why[256];
    tree_make(&t);
    who_in_tree(&t, &w, (uint32_t)geteuid(), (uint32_t)getegid());
    assert_int_equal(read_name(&w, "/app/main.py", text, sizeof(text), why, sizeof(why)), 0);
    assert_string_equal(text, "print(1)\n");
    /* ".." and "." and doubled slashes stay below the root */
    assert_int_equal(
        read_name(&w, "/../../app/./..//app/main.py", text, sizeof(text), why, sizeof(why)), 0);
    assert_string_equal(text, "print(1)\n");
    /* an absolute link is the root's */
    assert_int_equal(read_name(&w, "/app/abs", text, sizeof(text), why, sizeof(why)), 0);
    assert_string_equal(text, "print(1)\n");
    /* a link climbing out lands in the root, where there is no such file */
    assert_int_equal(read_name(&w, "/app/up", text, sizeof(text), why, sizeof(why)), -ENOENT);
    /* nor does a name outside the root reach it */
    char outside[256];
    snprintf(outside, sizeof(outside), "%s/outside.py", t.dir);
    assert_int_equal(read_name(&w, outside, text, sizeof(text), why, sizeof(why)), -ENOENT);
    assert_int_equal(read_name(&w, "/app/loop1", text, sizeof(text), why, sizeof(why)), -ELOOP);
    assert_int_equal(read_name(&w, "/app/main.py/x", text, sizeof(text), why, sizeof(why)),
                     -ENOTDIR);
    assert_int_equal(read_name(&w, "/app", text, sizeof(text), why, sizeof(why)), -EISDIR);
    tfile_who_close(&w);
    tree_remove(&t);
}

static void test_tfile__refuses_what_is_not_a_file(void **state)
{
    (void)state;
    struct tree t;
    struct tfile_who w;
    char text[256], why[256];
    tree_make(&t);
    who_in_tree(&t, &w, (uint32_t)geteuid(), (uint32_t)getegid());
    /* a FIFO is refused by its type, without an open that would wait */
    assert_int_equal(read_name(&w, "/app/fifo", text, sizeof(text), why, sizeof(why)), -EINVAL);
    assert_string_equal(why, "not a regular file: a FIFO");
    tfile_who_close(&w);
    /* the real root: a device, procfs (whose "self" would be us) */
    assert_int_equal(tfile_who_open(NULL, getpid(), &w), 0);
    assert_int_equal(read_name(&w, "/dev/null", text, sizeof(text), why, sizeof(why)), -EINVAL);
    assert_string_equal(why, "not a regular file: a character device");
    assert_int_equal(read_name(&w, "/proc/self/environ", text, sizeof(text), why, sizeof(why)),
                     -EINVAL);
    assert_string_equal(why, "on procfs or sysfs, not a file of the program's");
    assert_int_equal(read_name(&w, "/sys/kernel/mm/transparent_hugepage/enabled", text,
                               sizeof(text), why, sizeof(why)),
                     -EINVAL);
    /* the size cap */
    int fd = -1;
    assert_int_equal(
        tfile_open(&w, tree_path(&t, "root/app/main.py"), 4, &fd, NULL, why, sizeof(why)), -EFBIG);
    assert_int_equal(fd, -1);
    assert_int_equal(
        tfile_open(&w, tree_path(&t, "root/app/main.py"), 9, &fd, NULL, why, sizeof(why)), 0);
    assert_true(fd >= 0);
    close(fd);
    tfile_who_close(&w);
    tree_remove(&t);
}

static void test_tfile__as_the_target_could(void **state)
{
    (void)state;
    struct tree t;
    struct tfile_who w;
    char text[256], why[256];
    tree_make(&t);
    /* another user: the 0600 file and the file in a 0700 directory are
     * closed to it (whatever pyprofd itself may do) */
    who_in_tree(&t, &w, 54321, 54321);
    assert_int_equal(read_name(&w, "/app/main.py", text, sizeof(text), why, sizeof(why)), 0);
    assert_int_equal(read_name(&w, "/app/secret.py", text, sizeof(text), why, sizeof(why)),
                     -EACCES);
    assert_string_equal(why, "the program itself may not read it");
    assert_int_equal(read_name(&w, "/closed/x.py", text, sizeof(text), why, sizeof(why)), -EACCES);
    assert_string_equal(why, "the program may not search a directory on the way to it");
    /* and through a link to it too */
    assert_int_equal(symlink("/closed/x.py", tree_path(&t, "root/app/big.py")), 0);
    assert_int_equal(read_name(&w, "/app/big.py", text, sizeof(text), why, sizeof(why)), -EACCES);
    /* its CAP_DAC_READ_SEARCH opens both */
    w.creds.dac_read_search = true;
    assert_int_equal(read_name(&w, "/closed/x.py", text, sizeof(text), why, sizeof(why)), 0);
    assert_string_equal(text, "hidden\n");
    assert_int_equal(read_name(&w, "/app/secret.py", text, sizeof(text), why, sizeof(why)), 0);
    tfile_who_close(&w);
    tree_remove(&t);
}

static void test_tfile__relative_names(void **state)
{
    (void)state;
    struct tree t;
    struct tfile_who w;
    char text[256], why[256], here[PATH_MAX];
    tree_make(&t);
    assert_non_null(getcwd(here, sizeof(here)));
    assert_int_equal(chdir(tree_path(&t, "root/app")), 0);
    assert_int_equal(tfile_who_open(NULL, getpid(), &w), 0);
    assert_int_equal(chdir(here), 0);
    assert_string_equal(w.cwd_name, tree_path(&t, "root/app"));
    assert_int_equal(read_name(&w, "main.py", text, sizeof(text), why, sizeof(why)), 0);
    assert_string_equal(text, "print(1)\n");
    assert_int_equal(read_name(&w, "../app/main.py", text, sizeof(text), why, sizeof(why)), 0);
    /* the working directory's place unknown: it may not climb above it */
    w.cwd_name[0] = '\0';
    assert_int_equal(read_name(&w, "./main.py", text, sizeof(text), why, sizeof(why)), 0);
    assert_int_equal(read_name(&w, "../app/main.py", text, sizeof(text), why, sizeof(why)),
                     -EACCES);
    tfile_who_close(&w);
    /* no root: every name refused with the reason */
    struct tfile_who none = TFILE_WHO_INIT;
    assert_int_equal(tfile_who_open("/nonexistent-proc", getpid(), &none), -ENOENT);
    assert_int_equal(read_name(&none, "/app/main.py", text, sizeof(text), why, sizeof(why)),
                     -ENOENT);
    assert_non_null(strstr(why, "cannot open '/nonexistent-proc/"));
    tfile_who_close(&none);
    tree_remove(&t);
}

static void test_tfile__opens_a_mapped_name_only_when_regular(void **state)
{
    (void)state;
    struct tree t;
    struct stat st;
    tree_make(&t);
    assert_int_equal(stat(tree_path(&t, "root/app/main.py"), &st), 0);
    int fd = tfile_open_regular(t.path, (uint64_t)st.st_ino, &st.st_dev);
    assert_true(fd >= 0);
    close(fd);
    /* another inode, another device: refused */
    assert_int_equal(tfile_open_regular(t.path, (uint64_t)st.st_ino + 1, NULL), -1);
    dev_t other = st.st_dev + 1;
    assert_int_equal(tfile_open_regular(t.path, 0, &other), -1);
    /* a FIFO with no writer and a device: refused without being opened */
    assert_int_equal(tfile_open_regular(tree_path(&t, "root/app/fifo"), 0, NULL), -1);
    assert_int_equal(tfile_open_regular("/dev/null", 0, NULL), -1);
    tree_remove(&t);
}

#ifdef PYPROFD_UNITTEST
static void stall_1_5s(void)
{
    usleep(1500000); /* longer than TFILE_TIMEOUT_MS */
}
#endif

static void test_tfile__a_stalled_lookup_is_given_up(void **state)
{
    (void)state;
#ifdef PYPROFD_UNITTEST
    struct tfile_who w;
    char text[256], why[256];
    assert_int_equal(tfile_who_open(NULL, getpid(), &w), 0);
    atomic_store(&tfile_test_stall, stall_1_5s);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    assert_int_equal(read_name(&w, "/etc/hostname", text, sizeof(text), why, sizeof(why)),
                     -ETIMEDOUT);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double took = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
    assert_true(took >= TFILE_TIMEOUT_MS / 1000.0 - 0.05 && took < 1.45);
    assert_int_equal(tfile_stalled(), 1);
    atomic_store(&tfile_test_stall, NULL);
    /* it ends on its own and is no longer counted */
    for (int i = 0; i < 300 && tfile_stalled(); i++)
        usleep(10000);
    assert_int_equal(tfile_stalled(), 0);
    tfile_who_close(&w);
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_tfile__parses_status, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tfile__judges_mode_bits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tfile__reads_below_the_root, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tfile__refuses_what_is_not_a_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tfile__as_the_target_could, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tfile__relative_names, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tfile__opens_a_mapped_name_only_when_regular, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_tfile__a_stalled_lookup_is_given_up, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
