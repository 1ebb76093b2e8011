/* SPDX-License-Identifier: MIT */
/* Tests for exporters/file/file_store.c: names, atomic writes, retention by
 * age and by size, errors counted without stopping, no planted link followed
 * (a symbolic link as the directory, or at a name in it). */
#include "base/compat.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmocka_wrap.h"

#include "base/alloc.h"
#include "base/outfile.h"
#include "exporters/file/file_store.h"

static char dir[256];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/pyprofd-test-store.XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Files in @d: count, and whether any is a leftover temporary. */
static size_t count_files(const char *d, bool *tmp_left)
{
    DIR *dd = opendir(d);
    size_t n = 0;
    struct dirent *de;
    *tmp_left = false;
    while (dd && (de = readdir(dd)) != NULL) {
        if (de->d_name[0] == '.' && (de->d_name[1] == '\0' || strcmp(de->d_name, "..") == 0))
            continue;
        if (strncmp(de->d_name, ".tmp-", 5) == 0 || outfile_is_temp(de->d_name))
            *tmp_left = true;
        n++;
    }
    if (dd)
        closedir(dd);
    return n;
}

static int push(struct exporter *ex, const char *job, int pid, int64_t t, size_t len)
{
    static uint8_t bytes[4096];
    memset(bytes, 0x5a, sizeof(bytes));
    struct window_meta it = {.pid = pid, .time_nanos = t};
    snprintf(it.job, sizeof(it.job), "%s", job);
    struct export_profile p = {.meta = &it, .pprof = bytes, .len = len};
    return ex->ops->push(ex->ctx, &p);
}

static void test_file_store__name_is_sanitised_and_sortable(void **state)
{
    (void)state;
    char name[256];
    file_store_name("web/api v2", 42, 1795974803123456789ll, name, sizeof(name));
    assert_string_equal(name, "web_api_v2-42-20261129T175323.123Z.pb.gz");
    file_store_name(".hidden", 1, 0, name, sizeof(name));
    assert_string_equal(name, "_hidden-1-19700101T000000.000Z.pb.gz");
    file_store_name("", 1, 0, name, sizeof(name));
    assert_string_equal(name, "profile-1-19700101T000000.000Z.pb.gz");
}

static void test_file_store__writes_whole_files_in_new_directories(void **state)
{
    (void)state;
    char sub[320];
    snprintf(sub, sizeof(sub), "%s/a/b/", dir);
    struct exporter ex;
    assert_int_equal(file_store_new(sub, 0, 0, &ex), 0);
    assert_int_equal(push(&ex, "job", 7, 1000000000ll, 1234), 0);
    assert_int_equal(push(&ex, "job", 8, 1000000000ll, 10), 0);
    snprintf(sub, sizeof(sub), "%s/a/b", dir);
    bool tmp_left;
    assert_int_equal(count_files(sub, &tmp_left), 2);
    assert_false(tmp_left);
    char path[512];
    snprintf(path, sizeof(path), "%s/job-7-19700101T000001.000Z.pb.gz", sub);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_size, 1234);
    ex.ops->free(ex.ctx);
}

static void test_file_store__retention_by_size_deletes_oldest_only_ours(void **state)
{
    (void)state;
    char other[320];
    snprintf(other, sizeof(other), "%s/notes.txt", dir);
    FILE *f = fopen(other, "w");
    assert_non_null(f);
    fputs("not ours", f);
    fclose(f);
    struct exporter ex;
    /* room for two 1000-byte profiles */
    assert_int_equal(file_store_new(dir, 0, 2500, &ex), 0);
    assert_int_equal(push(&ex, "j", 1, 1000000000ll, 1000), 0); /* sweeps (first write) */
    ex.ops->free(ex.ctx);
    for (int i = 2; i <= 4; i++) {
        struct timespec ts = {.tv_nsec = 20000000}; /* distinct mtimes */
        nanosleep(&ts, NULL);
        assert_int_equal(file_store_new(dir, 0, 2500, &ex), 0); /* new store: sweeps at once */
        assert_int_equal(push(&ex, "j", i, (int64_t)i * 1000000000ll, 1000), 0);
        ex.ops->free(ex.ctx);
    }
    bool tmp_left;
    assert_int_equal(count_files(dir, &tmp_left), 3); /* two newest + notes.txt */
    /* other *.pb.gz files are the user's: never deleted, whatever their size */
    char users[2][320];
    snprintf(users[0], sizeof(users[0]), "%s/heap.pb.gz", dir);
    snprintf(users[1], sizeof(users[1]), "%s/j-5-2026.pb.gz", dir);
    for (int i = 0; i < 2; i++) {
        FILE *u = fopen(users[i], "w");
        assert_non_null(u);
        for (int k = 0; k < 5000; k++)
            fputc('x', u);
        fclose(u);
    }
    assert_int_equal(file_store_new(dir, 0, 2500, &ex), 0);
    assert_int_equal(push(&ex, "j", 6, 6 * 1000000000ll, 1000), 0);
    ex.ops->free(ex.ctx);
    assert_int_equal(access(users[0], F_OK), 0);
    assert_int_equal(access(users[1], F_OK), 0);
    char path[512];
    snprintf(path, sizeof(path), "%s/j-4-19700101T000004.000Z.pb.gz", dir);
    assert_int_equal(access(path, F_OK), 0);
    snprintf(path, sizeof(path), "%s/j-1-19700101T000001.000Z.pb.gz", dir);
    assert_int_not_equal(access(path, F_OK), 0);
    assert_int_equal(access(other, F_OK), 0);
}

static void test_file_store__retention_by_age(void **state)
{
    (void)state;
    struct exporter ex;
    assert_int_equal(file_store_new(dir, 0, 0, &ex), 0);
    assert_int_equal(push(&ex, "old", 1, 0, 10), 0);
    ex.ops->free(ex.ctx);
    char path[512];
    snprintf(path, sizeof(path), "%s/old-1-19700101T000000.000Z.pb.gz", dir);
    struct timespec times[2] = {{.tv_sec = 1000}, {.tv_sec = 1000}}; /* from 1970 */
    assert_int_equal(utimensat(AT_FDCWD, path, times, 0), 0);
    assert_int_equal(file_store_new(dir, 3600ull * 1000000000ull, 0, &ex), 0);
    assert_int_equal(push(&ex, "new", 2, 0, 10), 0);
    ex.ops->free(ex.ctx);
    assert_int_not_equal(access(path, F_OK), 0);
    bool tmp_left;
    assert_int_equal(count_files(dir, &tmp_left), 1);
}

static void test_file_store__stale_temporaries_are_removed(void **state)
{
    (void)state;
    /* outfile's names, and the .tmp-NAME of versions before it */
    static const char *const names[] = {
        ".tmp-j-1-19700101T000000.000Z.pb.gz",
        ".tmp-j-2-19700101T000000.000Z.pb.gz",
        ".pyprofd-tmp-0123456789abcdef",
        ".pyprofd-tmp-fedcba9876543210",
        ".pyprofd-tmp-notours",
    };
    static const bool old[] = {true, false, true, false, true};
    char path[5][400];
    for (int i = 0; i < 5; i++) {
        snprintf(path[i], sizeof(path[i]), "%s/%s", dir, names[i]);
        FILE *f = fopen(path[i], "w");
        assert_non_null(f);
        fclose(f);
        struct timespec t[2] = {{.tv_sec = 1000}, {.tv_sec = 1000}};
        if (old[i])
            assert_int_equal(utimensat(AT_FDCWD, path[i], t, 0), 0);
    }
    struct exporter ex;
    assert_int_equal(file_store_new(dir, 0, 0, &ex), 0);
    assert_int_equal(push(&ex, "j", 3, 0, 10), 0);
    ex.ops->free(ex.ctx);
    assert_int_not_equal(access(path[0], F_OK), 0); /* left by a crash long ago */
    assert_int_equal(access(path[1], F_OK), 0);     /* maybe being written right now */
    assert_int_not_equal(access(path[2], F_OK), 0);
    assert_int_equal(access(path[3], F_OK), 0);
    assert_int_equal(access(path[4], F_OK), 0); /* not a name we make */
}

/* A symbolic link as the directory itself is refused from the start. */
static void test_file_store__symlinked_directory_is_refused(void **state)
{
    (void)state;
    char real[320], link[320];
    snprintf(real, sizeof(real), "%s/real", dir);
    snprintf(link, sizeof(link), "%s/link", dir);
    assert_int_equal(mkdir(real, 0755), 0);
    assert_int_equal(symlink(real, link), 0);
    struct exporter ex;
    assert_int_equal(file_store_new(link, 0, 0, &ex), -ELOOP);
    char slash[330];
    snprintf(slash, sizeof(slash), "%s/", link); /* the trailing '/' is no way round it */
    assert_int_equal(file_store_new(slash, 0, 0, &ex), -ELOOP);
    char dangling[320];
    snprintf(dangling, sizeof(dangling), "%s/dangling", dir);
    assert_int_equal(symlink("/nonexistent-pyprofd-dir", dangling), 0);
    assert_int_equal(file_store_new(dangling, 0, 0, &ex), -ELOOP);
    assert_int_not_equal(access("/nonexistent-pyprofd-dir", F_OK), 0);
    /* a parent that is a link is the configured path: followed */
    char through[340];
    snprintf(through, sizeof(through), "%s/sub", link);
    assert_int_equal(file_store_new(through, 0, 0, &ex), 0);
    assert_int_equal(push(&ex, "j", 1, 0, 10), 0);
    ex.ops->free(ex.ctx);
    char path[400];
    snprintf(path, sizeof(path), "%s/sub/j-1-19700101T000000.000Z.pb.gz", real);
    assert_int_equal(access(path, F_OK), 0);
}

/* Links planted at the names a write uses never redirect it. */
static void test_file_store__planted_links_are_never_followed(void **state)
{
    (void)state;
    char victim[320], p[400];
    snprintf(victim, sizeof(victim), "%s/victim", dir);
    FILE *f = fopen(victim, "w");
    assert_non_null(f);
    fputs("precious", f);
    fclose(f);
    /* the old temporary name and the final name of the next window */
    snprintf(p, sizeof(p), "%s/.tmp-j-1-19700101T000000.000Z.pb.gz", dir);
    assert_int_equal(symlink(victim, p), 0);
    snprintf(p, sizeof(p), "%s/j-2-19700101T000000.000Z.pb.gz", dir);
    assert_int_equal(symlink(victim, p), 0);
    snprintf(p, sizeof(p), "%s/j-3-19700101T000000.000Z.pb.gz", dir);
    assert_int_equal(link(victim, p), 0);
    struct exporter ex;
    assert_int_equal(file_store_new(dir, 0, 0, &ex), 0);
    assert_int_equal(push(&ex, "j", 1, 0, 100), 0);
    assert_int_equal(push(&ex, "j", 2, 0, 100), -EEXIST); /* counted, not followed */
    assert_int_equal(push(&ex, "j", 3, 0, 100), 0);       /* the name replaced, not the file */
    ex.ops->free(ex.ctx);
    struct stat st;
    assert_int_equal(stat(victim, &st), 0);
    assert_int_equal(st.st_size, 8);
    assert_int_equal(st.st_nlink, 1);
    assert_int_equal(lstat(p, &st), 0);
    assert_int_equal(st.st_size, 100);
}

/* A directory removed under the agent is made again, not written into the void. */
static void test_file_store__removed_directory_is_made_again(void **state)
{
    (void)state;
    char sub[320], path[400];
    snprintf(sub, sizeof(sub), "%s/gone", dir);
    struct exporter ex;
    assert_int_equal(file_store_new(sub, 0, 0, &ex), 0);
    assert_int_equal(push(&ex, "j", 1, 0, 10), 0);
    snprintf(path, sizeof(path), "%s/j-1-19700101T000000.000Z.pb.gz", sub);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(rmdir(sub), 0);
    assert_int_equal(push(&ex, "j", 2, 0, 10), 0);
    ex.ops->free(ex.ctx);
    snprintf(path, sizeof(path), "%s/j-2-19700101T000000.000Z.pb.gz", sub);
    assert_int_equal(access(path, F_OK), 0);
}

static void test_file_store__unwritable_directory_is_an_error_not_a_crash(void **state)
{
    (void)state;
    char file[320], sub[400];
    snprintf(file, sizeof(file), "%s/plainfile", dir);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fclose(f);
    snprintf(sub, sizeof(sub), "%s/inside", file); /* a directory under a file */
    struct exporter ex;
    assert_int_equal(file_store_new(sub, 0, 0, &ex), 0);
    assert_int_equal(push(&ex, "j", 1, 0, 10), -ENOTDIR);
    assert_int_equal(push(&ex, "j", 1, 0, 10), -ENOTDIR); /* again: counted, logged once */
    ex.ops->free(ex.ctx);
    assert_int_equal(file_store_new("", 0, 0, &ex), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_file_store__name_is_sanitised_and_sortable),
        cmocka_unit_test_setup_teardown(test_file_store__writes_whole_files_in_new_directories,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_file_store__retention_by_size_deletes_oldest_only_ours,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_file_store__retention_by_age, setup, teardown),
        cmocka_unit_test_setup_teardown(test_file_store__stale_temporaries_are_removed, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_file_store__symlinked_directory_is_refused, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_file_store__planted_links_are_never_followed, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_file_store__removed_directory_is_made_again, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_file_store__unwritable_directory_is_an_error_not_a_crash, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
