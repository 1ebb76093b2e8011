/* SPDX-License-Identifier: MIT */
/*
 * procfs_fake.c: a fake proc root in a temporary directory (see
 * procfs_fake.h).
 */
#include "base/compat.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmocka_wrap.h"

#include "base/alloc.h"
#include "procfs_fake.h"

struct procfs_fake {
    char root[256];
    int64_t btime_s;
    long clk_tck;
};

static void procfs_fake_path(const struct procfs_fake *f, char *buf, size_t len, const char *rel)
{
    int n = snprintf(buf, len, "%s/%s", f->root, rel);
    assert_true(n > 0 && (size_t)n < len);
}

static void procfs_fake_write(const struct procfs_fake *f, const char *rel, const char *data,
                              size_t len)
{
    char path[512];
    procfs_fake_path(f, path, sizeof(path), rel);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    assert_true(fd >= 0);
    assert_true(write(fd, data, len) == (ssize_t)len);
    close(fd);
}

static void procfs_fake_mkdir(const struct procfs_fake *f, const char *rel)
{
    char path[512];
    procfs_fake_path(f, path, sizeof(path), rel);
    assert_int_equal(mkdir(path, 0755), 0);
}

static void procfs_fake_symlink(const struct procfs_fake *f, const char *rel, const char *target)
{
    char path[512];
    procfs_fake_path(f, path, sizeof(path), rel);
    assert_int_equal(symlink(target, path), 0);
}

static void procfs_fake_rm_tree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return;
    if (!S_ISDIR(st.st_mode)) {
        (void)unlink(path);
        return;
    }
    DIR *d = opendir(path);
    if (d) {
        struct dirent *de;
        while ((de = readdir(d))) {
            if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                continue;
            char sub[1024];
            snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
            procfs_fake_rm_tree(sub);
        }
        closedir(d);
    }
    (void)rmdir(path);
}

struct procfs_fake *procfs_fake_new(int64_t btime_s)
{
    struct procfs_fake *f = alloc_calloc(1, sizeof(*f));
    assert_non_null(f);
    const char *tmp = getenv("TMPDIR");
    snprintf(f->root, sizeof(f->root), "%s/procfs_fake.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    assert_non_null(mkdtemp(f->root));
    f->btime_s = btime_s;
    f->clk_tck = sysconf(_SC_CLK_TCK);
    assert_true(f->clk_tck > 0);
    char stat[256];
    int n = snprintf(stat, sizeof(stat),
                     "cpu  1 2 3 4 5 6 7 0 0 0\nintr 1 2 3\nctxt 42\nbtime %" PRId64
                     "\nprocesses 7\nprocs_running 1\n",
                     btime_s);
    procfs_fake_write(f, "stat", stat, (size_t)n);
    return f;
}

void procfs_fake_free(struct procfs_fake *f)
{
    if (!f)
        return;
    procfs_fake_rm_tree(f->root);
    alloc_free(f);
}

const char *procfs_fake_root(const struct procfs_fake *f)
{
    return f->root;
}

uint64_t procfs_fake_start_ticks(const struct procfs_fake *f, int64_t now_real_ns, int64_t age_ns)
{
    int64_t since_boot = now_real_ns - age_ns - f->btime_s * INT64_C(1000000000);
    assert_true(since_boot >= 0);
    return (uint64_t)(since_boot / (INT64_C(1000000000) / f->clk_tck));
}

/* A stat line: comm, state, parent 1, flags of a user process, start time. */
static int procfs_fake_stat(char *buf, size_t len, int pid, const char *comm, char state,
                            uint64_t start_ticks)
{
    return snprintf(buf, len,
                    "%d (%s) %c 1 %d %d 0 -1 4194304 1000 0 0 0 12 3 0 0 20 0 1 0 %" PRIu64
                    " 25000000 2000 18446744073709551615 1 1 0 0 0 0 0 16781312 2 0 0 0 0 0 0 "
                    "0 0 0 0 0 0 0\n",
                    pid, comm, state, pid, pid, start_ticks);
}

/* A status file of uid 0 without an NSpid line (the agent's own PID namespace). */
static int procfs_fake_status(char *buf, size_t len, int pid, const char *name)
{
    return snprintf(buf, len,
                    "Name:\t%s\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t%d\nPid:\t%d\n"
                    "PPid:\t1\nTracerPid:\t0\nUid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nThreads:\t1\n",
                    name, pid, pid);
}

void procfs_fake_add(struct procfs_fake *f, pid_t pid, const char *comm, uint64_t start_ticks)
{
    char rel[128], text[1024];
    snprintf(rel, sizeof(rel), "%d", (int)pid);
    procfs_fake_mkdir(f, rel);
    snprintf(rel, sizeof(rel), "%d/task", (int)pid);
    procfs_fake_mkdir(f, rel);
    snprintf(rel, sizeof(rel), "%d/stat", (int)pid);
    int n = procfs_fake_stat(text, sizeof(text), (int)pid, comm, 'S', start_ticks);
    procfs_fake_write(f, rel, text, (size_t)n);
    snprintf(rel, sizeof(rel), "%d/status", (int)pid);
    n = procfs_fake_status(text, sizeof(text), (int)pid, comm);
    procfs_fake_write(f, rel, text, (size_t)n);
    static const char cmd[] = "/usr/bin/python3\0-m\0app\0";
    snprintf(rel, sizeof(rel), "%d/cmdline", (int)pid);
    procfs_fake_write(f, rel, cmd, sizeof(cmd) - 1);
    snprintf(rel, sizeof(rel), "%d/comm", (int)pid);
    n = snprintf(text, sizeof(text), "%s\n", comm);
    procfs_fake_write(f, rel, text, (size_t)n);
    static const char cgroup[] = "0::/system.slice/app.service\n";
    snprintf(rel, sizeof(rel), "%d/cgroup", (int)pid);
    procfs_fake_write(f, rel, cgroup, sizeof(cgroup) - 1);
    snprintf(rel, sizeof(rel), "%d/exe", (int)pid);
    procfs_fake_symlink(f, rel, "/usr/bin/python3.14");
    snprintf(rel, sizeof(rel), "%d/cwd", (int)pid);
    procfs_fake_symlink(f, rel, "/srv/app");
    snprintf(rel, sizeof(rel), "%d/schedstat", (int)pid);
    procfs_fake_write(f, rel, "0 0 0\n", 6);
}

void procfs_fake_cgroup(struct procfs_fake *f, pid_t pid, const char *text)
{
    char rel[128];
    snprintf(rel, sizeof(rel), "%d/cgroup", (int)pid);
    procfs_fake_write(f, rel, text, strlen(text));
}

void procfs_fake_thread(struct procfs_fake *f, pid_t pid, pid_t tid, const char *name, char state)
{
    char rel[128], text[1024];
    snprintf(rel, sizeof(rel), "%d/task/%d", (int)pid, (int)tid);
    procfs_fake_mkdir(f, rel);
    snprintf(rel, sizeof(rel), "%d/task/%d/stat", (int)pid, (int)tid);
    int n = procfs_fake_stat(text, sizeof(text), (int)tid, name, state, 0);
    procfs_fake_write(f, rel, text, (size_t)n);
    snprintf(rel, sizeof(rel), "%d/task/%d/status", (int)pid, (int)tid);
    n = procfs_fake_status(text, sizeof(text), (int)tid, name);
    procfs_fake_write(f, rel, text, (size_t)n);
    snprintf(rel, sizeof(rel), "%d/task/%d/comm", (int)pid, (int)tid);
    n = snprintf(text, sizeof(text), "%s\n", name);
    procfs_fake_write(f, rel, text, (size_t)n);
}

void procfs_fake_thread_cpu(struct procfs_fake *f, pid_t pid, pid_t tid, const char *name,
                            char state, uint64_t cpu_ns, bool schedstat)
{
    char rel[128], text[1024];
    long hz = sysconf(_SC_CLK_TCK);
    uint64_t ticks = cpu_ns / (1000000000ull / (uint64_t)(hz > 0 ? hz : 100));
    snprintf(rel, sizeof(rel), "%d/task/%d/stat", (int)pid, (int)tid);
    int n = snprintf(text, sizeof(text),
                     "%d (%s) %c 1 %d %d 0 -1 4194304 1000 0 0 0 %" PRIu64
                     " 0 0 0 20 0 1 0 0 25000000 2000 18446744073709551615 1 1 0 0 0 0 0 "
                     "16781312 2 0 0 0 0 0 0 0 0 0 0 0 0 0\n",
                     (int)tid, name, state, (int)pid, (int)pid, ticks);
    procfs_fake_write(f, rel, text, (size_t)n);
    if (!schedstat)
        return;
    snprintf(rel, sizeof(rel), "%d/task/%d/schedstat", (int)pid, (int)tid);
    n = snprintf(text, sizeof(text), "%" PRIu64 " 0 1\n", cpu_ns);
    procfs_fake_write(f, rel, text, (size_t)n);
}

void procfs_fake_unlink(struct procfs_fake *f, const char *rel)
{
    char path[512];
    procfs_fake_path(f, path, sizeof(path), rel);
    assert_int_equal(unlink(path), 0);
}

void procfs_fake_remove(struct procfs_fake *f, pid_t pid)
{
    char path[512], rel[32];
    snprintf(rel, sizeof(rel), "%d", (int)pid);
    procfs_fake_path(f, path, sizeof(path), rel);
    procfs_fake_rm_tree(path);
}
