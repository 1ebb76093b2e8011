/* SPDX-License-Identifier: MIT */
/*
 * Tests for agent/discovery/proc_scan.c: the pure parsers, then whole scans
 * over a fake /proc tree built in a temporary directory by each test, and
 * one scan of the real /proc.
 */
#include "base/compat.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmocka_wrap.h"

#include "base/alloc.h"
#include "base/labels.h"
#include "base/utf8.h"
#include "discovery/proc_scan.h"

#define ID_A "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define ID_B "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"

/* 2024-01-01T00:00:00Z, the fake boot time. */
#define BTIME INT64_C(1704067200)
#define NS    INT64_C(1000000000)

/* ---- fake /proc ---- */

struct fake {
    char root[256];
};

static void fake_path(const struct fake *f, char *buf, size_t len, const char *rel)
{
    int n = snprintf(buf, len, "%s/%s", f->root, rel);
    assert_true(n > 0 && (size_t)n < len);
}

static void fake_write(const struct fake *f, const char *rel, const char *data, size_t len)
{
    char path[512];
    fake_path(f, path, sizeof(path), rel);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    assert_true(fd >= 0);
    assert_true(write(fd, data, len) == (ssize_t)len);
    close(fd);
}

static void fake_mkdir(const struct fake *f, const char *rel)
{
    char path[512];
    fake_path(f, path, sizeof(path), rel);
    assert_int_equal(mkdir(path, 0755), 0);
}

static void fake_symlink(const struct fake *f, const char *rel, const char *target)
{
    char path[512];
    fake_path(f, path, sizeof(path), rel);
    assert_int_equal(symlink(target, path), 0);
}

/* A process; NULL fields are not created. @cmdline has @cmd_len bytes (NULs inside). */
struct fake_proc {
    int pid;
    const char *stat;
    const char *status;
    const char *cmdline;
    size_t cmd_len;
    const char *cgroup;
    const char *exe;
    const char *cwd;
};

static void fake_proc(const struct fake *f, const struct fake_proc *p)
{
    char rel[128];
    snprintf(rel, sizeof(rel), "%d", p->pid);
    fake_mkdir(f, rel);
    const struct {
        const char *name;
        const char *data;
        size_t len;
    } files[] = {
        {"stat", p->stat, p->stat ? strlen(p->stat) : 0},
        {"status", p->status, p->status ? strlen(p->status) : 0},
        {"cmdline", p->cmdline, p->cmd_len},
        {"comm", "python3\n", 8},
        {"cgroup", p->cgroup, p->cgroup ? strlen(p->cgroup) : 0},
    };
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(files); i++) {
        if (!files[i].data)
            continue;
        snprintf(rel, sizeof(rel), "%d/%s", p->pid, files[i].name);
        fake_write(f, rel, files[i].data, files[i].len);
    }
    if (p->exe) {
        snprintf(rel, sizeof(rel), "%d/exe", p->pid);
        fake_symlink(f, rel, p->exe);
    }
    if (p->cwd) {
        snprintf(rel, sizeof(rel), "%d/cwd", p->pid);
        fake_symlink(f, rel, p->cwd);
    }
}

/* A stat line with the given comm, state, ppid, flags and start time. */
static void make_stat(char *buf, size_t len, int pid, const char *comm, char state, int ppid,
                      unsigned flags, uint64_t start)
{
    snprintf(buf, len,
             "%d (%s) %c %d %d %d 0 -1 %u 1000 0 0 0 12 3 0 0 20 0 1 0 %" PRIu64
             " 25000000 2000 18446744073709551615 1 1 0 0 0 0 0 16781312 2 0 0 0 0 0 0 0 0 0 0 "
             "0 0 0\n",
             pid, comm, state, ppid, pid, pid, flags, start);
}

static void make_status(char *buf, size_t len, const char *name, int ppid, unsigned uid,
                        const char *nspid)
{
    snprintf(buf, len,
             "Name:\t%s\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t1\nNgid:\t0\nPid:\t1\n"
             "PPid:\t%d\nTracerPid:\t0\nUid:\t%u\t%u\t%u\t%u\nGid:\t100\t100\t100\t100\n"
             "FDSize:\t64\nGroups:\t100 \n%s%s%sVmPeak:\t   10000 kB\nThreads:\t1\n",
             name, ppid, uid, uid + 1, uid + 2, uid + 3, nspid ? "NSpid:\t" : "",
             nspid ? nspid : "", nspid ? "\n" : "");
}

/* A typical process: pid, comm, start ticks, uid and cgroup. */
static void fake_simple(const struct fake *f, int pid, const char *comm, uint64_t start,
                        unsigned uid, const char *cgroup)
{
    char stat[512], status[1024];
    make_stat(stat, sizeof(stat), pid, comm, 'S', 1, 0x400000, start);
    make_status(status, sizeof(status), comm, 1, uid, NULL);
    static const char cmd[] = "/usr/bin/python3\0-m\0app\0";
    struct fake_proc p = {
        .pid = pid,
        .stat = stat,
        .status = status,
        .cmdline = cmd,
        .cmd_len = sizeof(cmd) - 1,
        .cgroup = cgroup ? cgroup : "0::/user.slice/user-1000.slice/session-2.scope\n",
        .exe = "/usr/bin/python3.13",
        .cwd = "/srv/app",
    };
    fake_proc(f, &p);
}

static int rm_tree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return 0;
    if (S_ISDIR(st.st_mode)) {
        chmod(path, 0755);
        DIR *d = opendir(path);
        if (d) {
            struct dirent *de;
            while ((de = readdir(d))) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                    continue;
                char sub[1024];
                snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
                rm_tree(sub);
            }
            closedir(d);
        }
        return rmdir(path);
    }
    return unlink(path);
}

static int proc_scan_setup(void **state)
{
    struct fake *f = alloc_calloc(1, sizeof(*f));
    if (!f)
        return -1;
    const char *tmp = getenv("TMPDIR");
    snprintf(f->root, sizeof(f->root), "%s/test_proc_scan.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(f->root))
        return -1;
    char btime[256];
    snprintf(btime, sizeof(btime),
             "cpu  1 2 3 4 5 6 7 0 0 0\nintr 1 2 3\nctxt 42\nbtime %" PRId64
             "\nprocesses 7\nprocs_running 1\n",
             BTIME);
    fake_write(f, "stat", btime, strlen(btime));
    *state = f;
    return 0;
}

static int proc_scan_teardown(void **state)
{
    struct fake *f = *state;
    rm_tree(f->root);
    alloc_free(f);
    return 0;
}

static struct proc_scan *fake_scan(const struct fake *f, struct proc_scan_opts *o)
{
    struct proc_scan_opts d = {0};
    if (!o)
        o = &d;
    o->proc_root = f->root;
    if (!o->self_pid)
        o->self_pid = 999999;
    if (!o->clk_tck)
        o->clk_tck = 100;
    struct proc_scan *s = proc_scan_new(o);
    assert_non_null(s);
    return s;
}

static const struct proc_info *find_pid(const struct proc_scan *s, pid_t pid)
{
    for (size_t i = 0; i < proc_scan_count(s); i++) {
        if (proc_scan_get(s, i)->key.pid == pid)
            return proc_scan_get(s, i);
    }
    return NULL;
}

static int fake_user(uint32_t uid, char *buf, size_t len, void *arg)
{
    int *calls = arg;
    if (calls)
        (*calls)++;
    if (uid >= 60000)
        return -ENOENT;
    snprintf(buf, len, "user%u", (unsigned)uid);
    return 0;
}

/* ---- parsers ---- */

static void test_proc_scan__parses_stat(void **state)
{
    (void)state;
    char line[512];
    struct proc_stat st;
    make_stat(line, sizeof(line), 4242, "python3", 'R', 17, 0x400040, 123456789);
    assert_int_equal(proc_scan_parse_stat(line, strlen(line), &st), 0);
    assert_int_equal(st.pid, 4242);
    assert_int_equal(st.comm_len, 7);
    assert_memory_equal(st.comm, "python3", 7);
    assert_int_equal(st.state, 'R');
    assert_int_equal(st.ppid, 17);
    assert_int_equal(st.flags, 0x400040);
    assert_int_equal(st.start_ticks, 123456789);

    /* a real line from a 6.x kernel, without its newline */
    static const char real[] =
        "1 (systemd) S 0 1 1 0 -1 4194560 119807 9164538 107 3217 447 524 56622 23508 20 0 1 0 "
        "10 22446080 3190 18446744073709551615 1 1 0 0 0 0 671173123 4096 1260 0 0 0 17 1 0 0 "
        "0 0 0 0 0 0 0 0 0";
    assert_int_equal(proc_scan_parse_stat(real, sizeof(real) - 1, &st), 0);
    assert_int_equal(st.pid, 1);
    assert_int_equal(st.ppid, 0);
    assert_int_equal(st.start_ticks, 10);
    assert_int_equal(st.flags, 4194560);
    assert_int_equal(st.start_stack, 0); /* hidden: read without ptrace access */

    /* one read with ptrace access: the stack's start (field 28), new at each exec */
    static const char seen[] =
        "7 (python3) S 1 7 7 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 10 22446080 3190 "
        "18446744073709551615 94000000000000 94000000004096 140723456789008 0 0 0 0 4096 1260 "
        "0 0 0 17 1 0 0";
    assert_int_equal(proc_scan_parse_stat(seen, sizeof(seen) - 1, &st), 0);
    assert_int_equal(st.start_stack, 140723456789008ull);
    /* a line that ends after the start time still parses, with no stack start */
    static const char shorter[] = "7 (python3) S 1 7 7 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 10";
    assert_int_equal(proc_scan_parse_stat(shorter, sizeof(shorter) - 1, &st), 0);
    assert_int_equal(st.start_ticks, 10);
    assert_int_equal(st.start_stack, 0);
}

static void test_proc_scan__stat_comm_with_parens_and_spaces(void **state)
{
    (void)state;
    char line[512];
    struct proc_stat st;
    make_stat(line, sizeof(line), 7, "a) (b ) S 1 ", 'S', 3, 0, 555);
    assert_int_equal(proc_scan_parse_stat(line, strlen(line), &st), 0);
    assert_int_equal(st.comm_len, strlen("a) (b ) S 1 "));
    assert_memory_equal(st.comm, "a) (b ) S 1 ", st.comm_len);
    assert_int_equal(st.state, 'S');
    assert_int_equal(st.ppid, 3);
    assert_int_equal(st.start_ticks, 555);

    make_stat(line, sizeof(line), 8, "", 'S', 3, 0, 1);
    assert_int_equal(proc_scan_parse_stat(line, strlen(line), &st), 0);
    assert_int_equal(st.comm_len, 0);
}

static void test_proc_scan__rejects_garbage_stat(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "\n",
        "garbage",
        "12 python S 1",
        "(python) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5",
        "x12 (python) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5",
        "12 (python) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0",             /* no field 22 */
        "12 (python) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5x",          /* bad start */
        "12 (python) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 -5",          /* negative start */
        "12 (python) S -1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5",          /* negative ppid */
        "12 (python) S 1  1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5",          /* double space */
        "12 (python) SS 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5",          /* state */
        "12 (python) S 1 1 1 0 -1 99999999999 0 0 0 0 0 0 0 0 20 0 1 0 5", /* flags */
        "99999999999 (python) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5",
        "12 (python) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99999999999999999999",
        "12 (python",
        "12 python) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5",
    };
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(bad); i++) {
        struct proc_stat st;
        if (proc_scan_parse_stat(bad[i], strlen(bad[i]), &st) != -EINVAL)
            fail_msg("accepted: '%s'", bad[i]);
    }
}

static void test_proc_scan__parses_status(void **state)
{
    (void)state;
    char buf[1024];
    struct proc_status st;
    make_status(buf, sizeof(buf), "python3", 77, 1000, "4242\t17\t1");
    assert_int_equal(proc_scan_parse_status(buf, strlen(buf), &st), 0);
    assert_int_equal(st.uid, 1000);
    assert_int_equal(st.ppid, 77);
    assert_true(st.has_ppid);
    assert_int_equal(st.nspid, 1);

    make_status(buf, sizeof(buf), "python3", 77, 0, NULL);
    assert_int_equal(proc_scan_parse_status(buf, strlen(buf), &st), 0);
    assert_int_equal(st.uid, 0);
    assert_int_equal(st.nspid, 0);

    static const char *const bad[] = {
        "",
        "Name:\tx\nPPid:\t1\n",             /* no Uid */
        "Uid:\n",                           /* no value */
        "Uid:\tabc\t1\t1\t1\n",             /* not a number */
        "Uid:\t99999999999\t1\t1\t1\n",     /* out of range */
        "Uid:\t1\t1\t1\t1\nNSpid:\t1\tx\n", /* bad NSpid */
        "Uid:\t1\t1\t1\t1\nPPid:\t-1\n",
    };
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(bad); i++) {
        if (proc_scan_parse_status(bad[i], strlen(bad[i]), &st) != -EINVAL)
            fail_msg("accepted: '%s'", bad[i]);
    }
    /* the last line may lack its newline; other lines are ignored */
    static const char ok[] = "Foo:\tbar baz\nUid:\t5\t6\t7\t8";
    assert_int_equal(proc_scan_parse_status(ok, sizeof(ok) - 1, &st), 0);
    assert_int_equal(st.uid, 5);
}

static void check_cgroup(const char *text, const char *path, const char *id, const char *runtime)
{
    struct proc_cgroup cg;
    assert_int_equal(proc_scan_parse_cgroup(text, strlen(text), &cg), 0);
    if (path) {
        assert_non_null(cg.path);
        if (cg.path_len != strlen(path) || memcmp(cg.path, path, cg.path_len) != 0)
            fail_msg("path '%.*s', expected '%s'", (int)cg.path_len, cg.path, path);
    } else {
        assert_null(cg.path);
    }
    assert_string_equal(cg.container_id, id);
    assert_string_equal(cg.runtime, runtime);
}

static void test_proc_scan__cgroup_container_ids(void **state)
{
    (void)state;
    /* cgroup v2, systemd driver */
    check_cgroup(
        "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1a2b_3c4d.slice/"
        "cri-containerd-" ID_A ".scope\n",
        "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1a2b_3c4d.slice/"
        "cri-containerd-" ID_A ".scope",
        ID_A, "containerd");
    check_cgroup("0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod9_9.slice/"
                 "crio-" ID_B ".scope\n",
                 "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod9_9.slice/"
                 "crio-" ID_B ".scope",
                 ID_B, "cri-o");
    check_cgroup("0::/system.slice/docker-" ID_A ".scope\n", "/system.slice/docker-" ID_A ".scope",
                 ID_A, "docker");
    /* without .scope */
    check_cgroup("0::/kubepods/crio-" ID_A "\n", "/kubepods/crio-" ID_A, ID_A, "cri-o");
    check_cgroup("0::/x/cri-containerd-" ID_B "\n", "/x/cri-containerd-" ID_B, ID_B, "containerd");
    check_cgroup("0::/machine.slice/libpod-" ID_A ".scope/container\n",
                 "/machine.slice/libpod-" ID_A ".scope/container", ID_A, "podman");
    /* private cgroup namespace: relative to the reader's root */
    check_cgroup("0::/../../kubepods-besteffort-pod1_2.slice/docker-" ID_B ".scope\n",
                 "/../../kubepods-besteffort-pod1_2.slice/docker-" ID_B ".scope", ID_B, "docker");
    /* plain docker, buildkit, a child cgroup below the container's */
    check_cgroup("0::/docker/" ID_A "\n", "/docker/" ID_A, ID_A, "docker");
    check_cgroup("0::/docker/buildkit/" ID_A "\n", "/docker/buildkit/" ID_A, ID_A, "docker");
    check_cgroup("0::/docker/" ID_A "/init\n", "/docker/" ID_A "/init", ID_A, "docker");
    check_cgroup("0::/system.slice/docker-" ID_B ".scope/init\n",
                 "/system.slice/docker-" ID_B ".scope/init", ID_B, "docker");
    /* cgroupfs driver: id without prefix, runtime unknown */
    check_cgroup("0::/kubepods/besteffort/pod1a2b-3c4d/" ID_B "\n",
                 "/kubepods/besteffort/pod1a2b-3c4d/" ID_B, ID_B, "");
    /* nested: the innermost (right-most) id wins */
    check_cgroup("0::/docker/" ID_A "/docker/" ID_B "\n", "/docker/" ID_A "/docker/" ID_B, ID_B,
                 "docker");
    /* no container */
    check_cgroup("0::/user.slice/user-1000.slice/session-3.scope\n",
                 "/user.slice/user-1000.slice/session-3.scope", "", "");
    check_cgroup("0::/\n", "/", "", "");
    check_cgroup("0::/system.slice/dockerd.service\n", "/system.slice/dockerd.service", "", "");
    /* nerdctl on the systemd driver */
    check_cgroup("0::/system.slice/nerdctl-" ID_A ".scope\n",
                 "/system.slice/nerdctl-" ID_A ".scope", ID_A, "containerd");
    /* a systemd-driver cgroupsPath ("slice:prefix:name") taken literally by the cgroupfs driver */
    check_cgroup("0::/kubepods-besteffort-pod1_2.slice:cri-containerd:" ID_B "\n",
                 "/kubepods-besteffort-pod1_2.slice:cri-containerd:" ID_B, ID_B, "containerd");
    check_cgroup("0::/s.slice:crio:" ID_A "\n", "/s.slice:crio:" ID_A, ID_A, "cri-o");
    check_cgroup("0:::docker:" ID_A "\n", ":docker:" ID_A, ID_A, "docker");
    /* near misses */
    check_cgroup("0::/crio-conmon-" ID_A ".scope\n", "/crio-conmon-" ID_A ".scope", "", "");
    check_cgroup("0::/machine.slice/libpod-conmon-" ID_A ".scope\n",
                 "/machine.slice/libpod-conmon-" ID_A ".scope", "", "");
    check_cgroup("0::/s.slice:containerd:" ID_A "\n", "/s.slice:containerd:" ID_A, "", "");
    check_cgroup("0::/s.slice::" ID_A "\n", "/s.slice::" ID_A, "", "");
    check_cgroup("0::/crio:" ID_A "\n", "/crio:" ID_A, "", "");
    check_cgroup("0::/docker/" ID_A "0\n", "/docker/" ID_A "0", "", "");
    check_cgroup("0::/docker/0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef\n",
                 "/docker/0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef", "",
                 "");
    check_cgroup("0::/docker/0123456789abcdef\n", "/docker/0123456789abcdef", "", "");
    check_cgroup("", NULL, "", "");
}

static void test_proc_scan__cgroup_v1(void **state)
{
    (void)state;
    /* v1 with systemd driver: the name=systemd line is the path */
    check_cgroup("12:pids:/kubepods.slice/kubepods-pod1.slice/docker-" ID_A ".scope\n"
                 "11:cpu,cpuacct:/kubepods.slice/kubepods-pod1.slice/docker-" ID_A ".scope\n"
                 "1:name=systemd:/kubepods.slice/kubepods-pod1.slice/docker-" ID_A ".scope\n"
                 "0::/\n",
                 "/kubepods.slice/kubepods-pod1.slice/docker-" ID_A ".scope", ID_A, "docker");
    /* no name=systemd: the cpu controller's line */
    check_cgroup("5:memory:/other\n4:cpuacct,cpu:/kubepods/burstable/pod1/" ID_B "\n3:cpuset:/\n",
                 "/kubepods/burstable/pod1/" ID_B, ID_B, "");
    /* neither: the first line, and the id from any line */
    check_cgroup("5:memory:/a\n4:blkio:/docker/" ID_A "\n", "/a", ID_A, "docker");
    /* "cpuset" is not "cpu" */
    check_cgroup("5:cpuset:/a\n4:blkio:/b\n", "/a", "", "");
    /* hybrid: a real v2 path wins over v1 lines */
    check_cgroup("1:name=systemd:/user.slice\n0::/system.slice/docker-" ID_B ".scope\n",
                 "/system.slice/docker-" ID_B ".scope", ID_B, "docker");
    /* hybrid: a v2 path without an id defers to v1 (cgroupfs driver, 0:: left at the shim's) */
    check_cgroup("2:cpu,cpuacct:/docker/" ID_A "\n1:name=systemd:/docker/" ID_A
                 "\n0::/system.slice/containerd.service\n",
                 "/docker/" ID_A, ID_A, "docker");
    check_cgroup("2:cpu:/\n1:name=systemd:/init.scope\n0::/init.scope\n", "/init.scope", "", "");
    /* malformed lines are skipped; a path may contain ':'; no final newline */
    check_cgroup("junk\nx:cpu:/nope\n3:cpu:/a:b", "/a:b", "", "");
    struct proc_cgroup cg;
    assert_int_equal(proc_scan_parse_cgroup("0::/\0x", 6, &cg), -EINVAL);
}

static void test_proc_scan__parses_btime(void **state)
{
    (void)state;
    int64_t bt = 0;
    static const char text[] = "cpu 1 2\nintr 5\nbtime 1700000000\nprocesses 3\n";
    assert_int_equal(proc_scan_parse_btime(text, sizeof(text) - 1, &bt), 0);
    assert_int_equal(bt, 1700000000);
    assert_int_equal(proc_scan_parse_btime("cpu 1\n", 6, &bt), -ENOENT);
    assert_int_equal(proc_scan_parse_btime("btime x\n", 8, &bt), -EINVAL);
    assert_int_equal(proc_scan_parse_btime("btime 99999999999\n", 18, &bt), -EINVAL);
}

static void test_proc_scan__key_equality(void **state)
{
    (void)state;
    struct proc_key a = {.pid = 10, .start_ticks = 500};
    struct proc_key b = {.pid = 10, .start_ticks = 500};
    struct proc_key reused = {.pid = 10, .start_ticks = 900};
    struct proc_key other = {.pid = 11, .start_ticks = 500};
    assert_true(proc_key_equal(&a, &b));
    assert_false(proc_key_equal(&a, &reused));
    assert_false(proc_key_equal(&a, &other));
}

/* ---- scans over a fake tree ---- */

static void test_proc_scan__reads_a_normal_process(void **state)
{
    struct fake *f = *state;
    char stat[512], status[1024];
    make_stat(stat, sizeof(stat), 4242, "python3", 'S', 17, 0x400000, 360000);
    make_status(status, sizeof(status), "python3", 17, 1000, "4242\t7");
    static const char cmd[] = "/usr/bin/python3\0-m\0http.server\0\0008000\0";
    struct fake_proc p = {
        .pid = 4242,
        .stat = stat,
        .status = status,
        .cmdline = cmd,
        .cmd_len = sizeof(cmd) - 1,
        .cgroup = "0::/system.slice/docker-" ID_A ".scope\n",
        .exe = "/usr/local/bin/python3.14",
        .cwd = "/home/me/app dir",
    };
    fake_proc(f, &p);
    fake_mkdir(f, "sys");
    fake_mkdir(f, "self");
    fake_write(f, "uptime", "1.0 2.0\n", 8);

    int calls = 0;
    struct proc_scan_opts o = {.user_lookup = fake_user, .user_lookup_arg = &calls};
    struct proc_scan *s = fake_scan(f, &o);
    /* now = boot + 3600 s (start) + 10.5 s */
    int64_t now = (BTIME + 3610) * NS + NS / 2;
    assert_int_equal(proc_scan_run(s, now), 0);
    const struct proc_scan_stats *st = proc_scan_stats(s);
    assert_int_equal(st->seen, 1);
    assert_int_equal(st->reported, 1);
    assert_true(st->btime_known);
    assert_int_equal(proc_scan_count(s), 1);

    const struct proc_info *pi = proc_scan_get(s, 0);
    assert_int_equal(pi->key.pid, 4242);
    assert_int_equal(pi->key.start_ticks, 360000);
    assert_int_equal(pi->ppid, 17);
    assert_int_equal(pi->nspid, 7);
    assert_int_equal(pi->uid, 1000);
    assert_int_equal(pi->state, 'S');
    assert_string_equal(pi->comm, "python3");
    assert_string_equal(pi->cmdline, "/usr/bin/python3 -m http.server  8000");
    assert_string_equal(pi->exe, "/usr/local/bin/python3.14");
    assert_false(pi->exe_deleted);
    assert_string_equal(pi->cwd, "/home/me/app dir");
    assert_string_equal(pi->username, "user1000");
    assert_string_equal(pi->cgroup_path, "/system.slice/docker-" ID_A ".scope");
    assert_string_equal(pi->container_id, ID_A);
    assert_string_equal(pi->container_runtime, "docker");
    assert_int_equal(pi->start_time_ns, (BTIME + 3600) * NS);
    assert_int_equal(pi->age_ns, 10 * NS + NS / 2);
    assert_int_equal(calls, 1);

    struct labels ls;
    labels_init(&ls);
    assert_int_equal(proc_scan_meta_labels(pi, &ls), 0);
    assert_string_equal(labels_get(&ls, "__meta_process_pid"), "4242");
    assert_string_equal(labels_get(&ls, "__process_pid__"), "4242");
    assert_string_equal(labels_get(&ls, "__meta_process_nspid"), "7");
    assert_string_equal(labels_get(&ls, "__meta_process_ppid"), "17");
    assert_string_equal(labels_get(&ls, "__meta_process_exe"), "/usr/local/bin/python3.14");
    assert_string_equal(labels_get(&ls, "__meta_process_executable_name"), "python3.14");
    assert_string_equal(labels_get(&ls, "__meta_process_comm"), "python3");
    assert_string_equal(labels_get(&ls, "__meta_process_commandline"),
                        "/usr/bin/python3 -m http.server  8000");
    assert_string_equal(labels_get(&ls, "__meta_process_cwd"), "/home/me/app dir");
    assert_string_equal(labels_get(&ls, "__meta_process_uid"), "1000");
    assert_string_equal(labels_get(&ls, "__meta_process_username"), "user1000");
    assert_string_equal(labels_get(&ls, "__meta_process_cgroup_path"),
                        "/system.slice/docker-" ID_A ".scope");
    assert_string_equal(labels_get(&ls, "__container_id__"), ID_A);
    assert_string_equal(labels_get(&ls, "__meta_container_runtime"), "docker");
    assert_int_equal(ls.n, 14);
    labels_release(&ls);

    /* a copy outlives the next run */
    struct proc_info copy;
    assert_int_equal(proc_info_copy(&copy, pi), 0);
    assert_int_equal(proc_scan_run(s, now), 0);
    assert_string_equal(copy.cmdline, "/usr/bin/python3 -m http.server  8000");
    assert_string_equal(copy.container_runtime, "docker");
    assert_true(proc_key_equal(&copy.key, &proc_scan_get(s, 0)->key));
    proc_info_release(&copy);
    proc_info_release(&copy); /* zeroed: no-op */
    proc_scan_free(s);
}

static void test_proc_scan__labels_without_container(void **state)
{
    struct fake *f = *state;
    fake_simple(f, 300, "python3", 100, 61000, NULL);
    struct proc_scan_opts o = {.user_lookup = fake_user};
    struct proc_scan *s = fake_scan(f, &o);
    assert_int_equal(proc_scan_run(s, BTIME * NS), 0);
    const struct proc_info *pi = find_pid(s, 300);
    assert_non_null(pi);
    assert_string_equal(pi->username, ""); /* lookup failed */
    assert_int_equal(pi->nspid, 300);      /* no NSpid line */
    assert_int_equal(pi->age_ns, 0);       /* "now" before the start: clamped */
    struct labels ls;
    labels_init(&ls);
    assert_int_equal(proc_scan_meta_labels(pi, &ls), 0);
    assert_null(labels_get(&ls, "__container_id__"));
    assert_null(labels_get(&ls, "__meta_container_runtime"));
    assert_string_equal(labels_get(&ls, "__meta_process_username"), "");
    assert_string_equal(labels_get(&ls, "__meta_process_nspid"), "300");
    assert_int_equal(ls.n, 12);
    labels_release(&ls);
    proc_scan_free(s);
}

static void test_proc_scan__comm_with_parens(void **state)
{
    struct fake *f = *state;
    fake_simple(f, 12, "evil) (x) R 1 2", 100, 0, NULL);
    struct proc_scan *s = fake_scan(f, NULL);
    assert_int_equal(proc_scan_run(s, BTIME * NS), 0);
    const struct proc_info *pi = find_pid(s, 12);
    assert_non_null(pi);
    assert_string_equal(pi->comm, "evil) (x) R 1 2");
    assert_int_equal(pi->state, 'S');
    assert_int_equal(pi->ppid, 1);
    assert_int_equal(pi->key.start_ticks, 100);
    proc_scan_free(s);
}

static void test_proc_scan__skips_zombies_kthreads_and_self(void **state)
{
    struct fake *f = *state;
    char stat[512];
    fake_simple(f, 10, "python3", 100, 0, NULL);
    fake_simple(f, 11, "me", 100, 0, NULL); /* the agent */
    make_stat(stat, sizeof(stat), 20, "defunct", 'Z', 10, 0x400004, 200);
    fake_mkdir(f, "20");
    fake_write(f, "20/stat", stat, strlen(stat));
    make_stat(stat, sizeof(stat), 21, "dead", 'X', 10, 0, 200);
    fake_mkdir(f, "21");
    fake_write(f, "21/stat", stat, strlen(stat));
    /* kthreadd and a worker: PF_KTHREAD, no cmdline, no exe */
    make_stat(stat, sizeof(stat), 2, "kthreadd", 'S', 0, 0x208040, 0);
    fake_mkdir(f, "2");
    fake_write(f, "2/stat", stat, strlen(stat));
    make_stat(stat, sizeof(stat), 30, "kworker/0:1-events", 'I', 2, 0x4208060, 5);
    fake_mkdir(f, "30");
    fake_write(f, "30/stat", stat, strlen(stat));
    /* in a container's PID namespace, pid 2 and its children are ordinary */
    fake_simple(f, 31, "child-of-2", 100, 0, NULL);

    struct proc_scan_opts o = {.self_pid = 11};
    struct proc_scan *s = fake_scan(f, &o);
    assert_int_equal(proc_scan_run(s, BTIME * NS), 0);
    const struct proc_scan_stats *st = proc_scan_stats(s);
    assert_int_equal(st->seen, 7);
    assert_int_equal(st->reported, 2);
    assert_int_equal(st->skipped_self, 1);
    assert_int_equal(st->skipped_zombie, 2);
    assert_int_equal(st->skipped_kthread, 2);
    assert_non_null(find_pid(s, 10));
    assert_non_null(find_pid(s, 31));
    assert_null(find_pid(s, 11));
    proc_scan_free(s);
}

static void test_proc_scan__default_self_is_proc_self(void **state)
{
    struct fake *f = *state;
    fake_simple(f, 10, "python3", 100, 0, NULL);
    fake_simple(f, 11, "pyprofd", 100, 0, NULL);
    fake_symlink(f, "self", "11");
    struct proc_scan_opts o = {.proc_root = f->root, .clk_tck = 100};
    struct proc_scan *s = proc_scan_new(&o);
    assert_non_null(s);
    assert_int_equal(proc_scan_run(s, BTIME * NS), 0);
    assert_int_equal(proc_scan_stats(s)->skipped_self, 1);
    assert_int_equal(proc_scan_count(s), 1);
    assert_non_null(find_pid(s, 10));
    proc_scan_free(s);
}

static void test_proc_scan__counts_vanished_and_unreadable(void **state)
{
    struct fake *f = *state;
    fake_simple(f, 10, "python3", 100, 0, NULL);
    /* exited between readdir and open: an empty directory */
    fake_mkdir(f, "40");
    /* exited after stat was read: no status */
    char stat[512];
    make_stat(stat, sizeof(stat), 41, "python3", 'S', 1, 0, 100);
    fake_mkdir(f, "41");
    fake_write(f, "41/stat", stat, strlen(stat));
    /* unreadable whatever our uid: a directory where stat should be */
    fake_mkdir(f, "50");
    fake_mkdir(f, "50/stat");
    /* a symlink where status should be (O_NOFOLLOW) */
    fake_simple(f, 51, "python3", 100, 0, NULL);
    char path[512];
    fake_path(f, path, sizeof(path), "51/status");
    assert_int_equal(unlink(path), 0);
    fake_symlink(f, "51/status", "/nonexistent");
    /* a dangling symlink in the place of the whole process directory */
    fake_symlink(f, "52", "/nonexistent");
    /* exe that is not a symlink, cwd missing entirely */
    fake_simple(f, 60, "python3", 100, 0, NULL);
    fake_path(f, path, sizeof(path), "60/exe");
    assert_int_equal(unlink(path), 0);
    fake_write(f, "60/exe", "x", 1);

    struct proc_scan *s = fake_scan(f, NULL);
    assert_int_equal(proc_scan_run(s, BTIME * NS), 0);
    const struct proc_scan_stats *st = proc_scan_stats(s);
    assert_int_equal(st->seen, 7);
    assert_int_equal(st->reported, 2);
    assert_int_equal(st->vanished, 2);
    assert_int_equal(st->unreadable, 3);
    assert_int_equal(st->fields_denied, 1);
    const struct proc_info *pi = find_pid(s, 60);
    assert_non_null(pi);
    assert_string_equal(pi->exe, "");
    assert_string_equal(pi->cwd, "/srv/app");

    /* a file we may not read, where permissions apply (not as root) */
    if (geteuid() != 0) {
        fake_path(f, path, sizeof(path), "10/cgroup");
        assert_int_equal(chmod(path, 0), 0);
        assert_int_equal(proc_scan_run(s, BTIME * NS), 0);
        assert_int_equal(proc_scan_stats(s)->unreadable, 4);
        assert_null(find_pid(s, 10));
    }
    proc_scan_free(s);
}

static void test_proc_scan__counts_malformed(void **state)
{
    struct fake *f = *state;
    fake_simple(f, 10, "python3", 100, 0, NULL);
    static const char *const stats[] = {
        "garbage\n",
        "",
        "71 (x) S 1 2\n",
        /* pid inside differs from the directory name */
        "999 (python3) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5\n",
        /* start time centuries after boot */
        "74 (x) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99999999999999999\n",
    };
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(stats); i++) {
        char rel[64];
        snprintf(rel, sizeof(rel), "%zu", 70 + i);
        fake_mkdir(f, rel);
        snprintf(rel, sizeof(rel), "%zu/stat", 70 + i);
        fake_write(f, rel, stats[i], strlen(stats[i]));
    }
    /* a stat longer than the read buffer */
    static char big[PROC_SCAN_READ_MAX + 100];
    memset(big, 'a', sizeof(big));
    memcpy(big, "80 (", 4);
    fake_mkdir(f, "80");
    fake_write(f, "80/stat", big, sizeof(big));
    /* good stat, status without Uid */
    fake_simple(f, 81, "python3", 100, 0, NULL);
    fake_write(f, "81/status", "Name:\tx\n", 8);
    /* a cgroup file with NUL bytes */
    fake_simple(f, 82, "python3", 100, 0, NULL);
    fake_write(f, "82/cgroup", "0::/\0\0\xff\n:::\n", 10);

    struct proc_scan *s = fake_scan(f, NULL);
    assert_int_equal(proc_scan_run(s, BTIME * NS), 0);
    const struct proc_scan_stats *st = proc_scan_stats(s);
    assert_int_equal(st->seen, 9);
    assert_int_equal(st->malformed, 8);
    assert_int_equal(st->reported, 1);
    assert_non_null(find_pid(s, 10));
    proc_scan_free(s);
}

static void test_proc_scan__cmdline_cap_and_deleted_exe(void **state)
{
    struct fake *f = *state;
    char stat[512], status[1024];
    make_stat(stat, sizeof(stat), 90, "python3", 'R', 1, 0, 100);
    make_status(status, sizeof(status), "python3", 1, 0, "90");
    static char cmd[PROC_SCAN_CMDLINE_MAX * 2];
    for (size_t i = 0; i < sizeof(cmd); i++)
        cmd[i] = (i % 10 == 9) ? '\0' : 'x';
    struct fake_proc p = {
        .pid = 90,
        .stat = stat,
        .status = status,
        .cmdline = cmd,
        .cmd_len = sizeof(cmd),
        .cgroup = "0::/\n",
        .exe = "/opt/py/bin/python3.15 (deleted)",
        .cwd = "/",
    };
    fake_proc(f, &p);
    /* a process that cleared its cmdline */
    fake_simple(f, 91, "python3", 100, 0, NULL);
    fake_write(f, "91/cmdline", "", 0);

    struct proc_scan *s = fake_scan(f, NULL);
    assert_int_equal(proc_scan_run(s, BTIME * NS), 0);
    const struct proc_info *pi = find_pid(s, 90);
    assert_non_null(pi);
    assert_int_equal(strlen(pi->cmdline), PROC_SCAN_CMDLINE_MAX); /* cut at the cap */
    assert_memory_equal(pi->cmdline, "xxxxxxxxx xxxxxxxxx ", 20);
    assert_string_equal(pi->exe, "/opt/py/bin/python3.15");
    assert_true(pi->exe_deleted);
    assert_string_equal(pi->cgroup_path, "/");
    assert_string_equal(pi->container_id, "");
    struct labels ls;
    labels_init(&ls);
    assert_int_equal(proc_scan_meta_labels(pi, &ls), 0);
    assert_string_equal(labels_get(&ls, "__meta_process_executable_name"), "python3.15");
    labels_release(&ls);
    pi = find_pid(s, 91);
    assert_non_null(pi);
    assert_string_equal(pi->cmdline, "");
    proc_scan_free(s);
}

/* A user database whose names are not UTF-8. */
static int fake_bad_user(uint32_t uid, char *buf, size_t len, void *arg)
{
    (void)arg;
    snprintf(buf, len,
             "\xff"
             "user%u",
             (unsigned)uid);
    return 0;
}

#define FFFD UTF8_REPLACEMENT_STR

/*
 * Every string a process can put in front of pyprofd comes out valid UTF-8,
 * invalid sequences replaced by U+FFFD as Python's decoder does, control
 * characters left as they are (valid UTF-8; showing them is the terminal's
 * side), each replacement counted; meta labels and copies carry the same.
 */
static void test_proc_scan__text_becomes_valid_utf8(void **state)
{
    struct fake *f = *state;
    char stat[512], status[1024];
    make_stat(stat, sizeof(stat), 77, "py\xffthon", 'S', 1, 0x400000, 100);
    make_status(status, sizeof(status), "python", 1, 1000, NULL);
    static const char cmd[] = "/usr/bin/python3\0/srv/\xff\xfe\x1b[31mevil.py\0--name=\xe2\x82\0";
    struct fake_proc p = {
        .pid = 77,
        .stat = stat,
        .status = status,
        .cmdline = cmd,
        .cmd_len = sizeof(cmd) - 1,
        .cgroup = "0::/user.slice/app-\xc0\xaf.scope\n",
        .exe = "/opt/\xff/python3.13",
        .cwd = "/srv/\xed\xa0\x80",
    };
    fake_proc(f, &p);
    /* a 15-byte comm the kernel cut inside a character: the character goes */
    make_stat(stat, sizeof(stat), 78, "worker-\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa", 'S', 1, 0x400000,
              100);
    make_status(status, sizeof(status), "worker", 1, 1000, NULL);
    p = (struct fake_proc){.pid = 78,
                           .stat = stat,
                           .status = status,
                           .cmdline = "x",
                           .cmd_len = 1,
                           .cgroup = "0::/\n",
                           .exe = "/x",
                           .cwd = "/"};
    fake_proc(f, &p);

    struct proc_scan_opts o = {.user_lookup = fake_bad_user};
    struct proc_scan *s = fake_scan(f, &o);
    uint64_t before = utf8_replaced_total();
    assert_int_equal(proc_scan_run(s, BTIME * NS), 0);
    const struct proc_info *pi = find_pid(s, 77);
    assert_non_null(pi);
    assert_string_equal(pi->comm, "py" FFFD "thon");
    assert_string_equal(pi->cmdline,
                        "/usr/bin/python3 /srv/" FFFD FFFD "\x1b[31mevil.py --name=" FFFD);
    assert_string_equal(pi->exe, "/opt/" FFFD "/python3.13");
    assert_string_equal(pi->cwd, "/srv/" FFFD FFFD FFFD);
    assert_string_equal(pi->cgroup_path, "/user.slice/app-" FFFD FFFD ".scope");
    assert_string_equal(pi->username, FFFD "user1000");
    /* comm 1, cmdline 3, exe 1, cwd 3, cgroup 2, user name 1 (looked up once for both) */
    assert_int_equal(utf8_replaced_total() - before, 11);
    const struct proc_info *cut = find_pid(s, 78);
    assert_non_null(cut);
    assert_string_equal(cut->comm, "worker-\xe6\x97\xa5\xe6\x9c\xac");

    struct labels ls;
    labels_init(&ls);
    assert_int_equal(proc_scan_meta_labels(pi, &ls), 0);
    for (size_t i = 0; i < ls.n; i++)
        assert_true(utf8_valid(ls.v[i].value, strlen(ls.v[i].value)));
    assert_string_equal(labels_get(&ls, "__meta_process_commandline"), pi->cmdline);
    assert_string_equal(labels_get(&ls, "__meta_process_executable_name"), "python3.13");
    labels_release(&ls);
    struct proc_info copy;
    before = utf8_replaced_total();
    assert_int_equal(proc_info_copy(&copy, pi), 0);
    assert_string_equal(copy.cmdline, pi->cmdline);
    assert_int_equal(utf8_replaced_total(), before); /* nothing left to replace */
    proc_info_release(&copy);
    proc_scan_free(s);
}

/* The command line's cap cuts on a character boundary, also after replacement. */
static void test_proc_scan__cmdline_cap_keeps_utf8_whole(void **state)
{
    struct fake *f = *state;
    static char two[PROC_SCAN_CMDLINE_MAX + 64], bad[PROC_SCAN_CMDLINE_MAX + 64];
    two[0] = 'x';
    for (size_t i = 1; i + 1 < sizeof(two); i += 2)
        memcpy(two + i, "\xc3\xa9", 2); /* x then e-acute, e-acute, ...: the cap splits one */
    memset(bad, 0xff, sizeof(bad));
    const char *cmds[] = {two, bad};
    for (int k = 0; k < 2; k++) {
        char stat[512], status[1024];
        make_stat(stat, sizeof(stat), 60 + k, "python3", 'S', 1, 0, 100);
        make_status(status, sizeof(status), "python3", 1, 0, NULL);
        struct fake_proc p = {.pid = 60 + k,
                              .stat = stat,
                              .status = status,
                              .cmdline = cmds[k],
                              .cmd_len = PROC_SCAN_CMDLINE_MAX + 64,
                              .cgroup = "0::/\n",
                              .exe = "/x",
                              .cwd = "/"};
        fake_proc(f, &p);
    }
    struct proc_scan *s = fake_scan(f, NULL);
    assert_int_equal(proc_scan_run(s, BTIME * NS), 0);
    const struct proc_info *pi = find_pid(s, 60);
    assert_non_null(pi);
    assert_int_equal(strlen(pi->cmdline), PROC_SCAN_CMDLINE_MAX - 1);
    assert_true(utf8_valid(pi->cmdline, strlen(pi->cmdline)));
    assert_null(strstr(pi->cmdline, FFFD)); /* the split character went, not replaced */
    pi = find_pid(s, 61);
    assert_non_null(pi);
    /* 4096 bytes of 0xff are 4096 U+FFFD: as many as fit in the cap */
    assert_int_equal(strlen(pi->cmdline), PROC_SCAN_CMDLINE_MAX / 3 * 3);
    assert_true(utf8_valid(pi->cmdline, strlen(pi->cmdline)));
    proc_scan_free(s);
}

static void test_proc_scan__pid_reuse_changes_key(void **state)
{
    struct fake *f = *state;
    fake_simple(f, 100, "python3", 5000, 0, NULL);
    struct proc_scan *s = fake_scan(f, NULL);
    assert_int_equal(proc_scan_run(s, (BTIME + 100) * NS), 0);
    struct proc_key first = proc_scan_get(s, 0)->key;

    /* the process exits; a new one gets the same pid later */
    char stat[512];
    make_stat(stat, sizeof(stat), 100, "python3", 'S', 1, 0, 7000);
    fake_write(f, "100/stat", stat, strlen(stat));
    assert_int_equal(proc_scan_run(s, (BTIME + 100) * NS), 0);
    struct proc_key second = proc_scan_get(s, 0)->key;
    assert_int_equal(first.pid, second.pid);
    assert_false(proc_key_equal(&first, &second));
    assert_int_equal(proc_scan_get(s, 0)->age_ns, 30 * NS);

    /* same process on the next scan: same key */
    assert_int_equal(proc_scan_run(s, (BTIME + 200) * NS), 0);
    assert_true(proc_key_equal(&second, &proc_scan_get(s, 0)->key));
    assert_int_equal(proc_scan_get(s, 0)->age_ns, 130 * NS);
    proc_scan_free(s);
}

static void test_proc_scan__age_uses_btime_and_clock_ticks(void **state)
{
    struct fake *f = *state;
    fake_simple(f, 5, "python3", 1234567, 0, NULL); /* 1234.567 s at 1000 Hz */
    struct proc_scan_opts o = {.clk_tck = 1000};
    struct proc_scan *s = fake_scan(f, &o);
    assert_int_equal(proc_scan_run(s, (BTIME + 2000) * NS), 0);
    const struct proc_info *pi = proc_scan_get(s, 0);
    assert_int_equal(pi->start_time_ns, (BTIME + 1234) * NS + 567 * INT64_C(1000000));
    assert_int_equal(pi->age_ns, 765 * NS + 433 * INT64_C(1000000));
    proc_scan_free(s);

    /* no btime: ages unknown, processes still reported */
    char path[512];
    fake_path(f, path, sizeof(path), "stat");
    assert_int_equal(unlink(path), 0);
    fake_write(f, "stat", "cpu 1 2 3\nbtime\n", 16);
    s = fake_scan(f, NULL);
    assert_int_equal(proc_scan_run(s, (BTIME + 2000) * NS), 0);
    assert_false(proc_scan_stats(s)->btime_known);
    assert_int_equal(proc_scan_get(s, 0)->age_ns, -1);
    assert_int_equal(proc_scan_get(s, 0)->start_time_ns, -1);
    proc_scan_free(s);
}

static void test_proc_scan__btime_after_a_huge_intr_line(void **state)
{
    struct fake *f = *state;
    size_t n = 3 * PROC_SCAN_READ_MAX + 7;
    char *text = alloc_malloc(n + 64);
    assert_non_null(text);
    memcpy(text, "intr ", 5);
    for (size_t i = 5; i < n; i++)
        text[i] = (i % 2) ? '0' : ' ';
    /* a decoy that is not at a line start, then the real line without '\n' */
    int tail = snprintf(text + n, 64, " btime 5\nbtime 1600000000");
    fake_write(f, "stat", text, n + (size_t)tail);
    alloc_free(text);
    fake_simple(f, 5, "python3", 100, 0, NULL);
    struct proc_scan *s = fake_scan(f, NULL);
    assert_int_equal(proc_scan_run(s, 1600000100 * NS), 0);
    assert_true(proc_scan_stats(s)->btime_known);
    assert_int_equal(proc_scan_get(s, 0)->age_ns, 99 * NS);
    proc_scan_free(s);
}

static void test_proc_scan__user_lookup_is_cached_and_capped(void **state)
{
    struct fake *f = *state;
    fake_simple(f, 10, "a", 100, 1000, NULL);
    fake_simple(f, 11, "b", 100, 1000, NULL);
    fake_simple(f, 12, "c", 100, 1001, NULL);
    fake_simple(f, 13, "d", 100, 1002, NULL);
    fake_simple(f, 14, "e", 100, 1000, NULL);
    int calls = 0;
    struct proc_scan_opts o = {.user_lookup = fake_user, .user_lookup_arg = &calls};
    struct proc_scan *s = fake_scan(f, &o);
    assert_int_equal(proc_scan_run(s, BTIME * NS), 0);
    assert_int_equal(calls, 3);
    assert_int_equal(proc_scan_stats(s)->user_lookups, 3);
    for (size_t i = 0; i < proc_scan_count(s); i++) {
        const struct proc_info *pi = proc_scan_get(s, i);
        char want[32];
        snprintf(want, sizeof(want), "user%u", (unsigned)pi->uid);
        assert_string_equal(pi->username, want);
    }
    proc_scan_free(s);

    /* a cache of 2 entries is cleared when full: still correct */
    calls = 0;
    o.user_cache_max = 2;
    s = fake_scan(f, &o);
    assert_int_equal(proc_scan_run(s, BTIME * NS), 0);
    assert_true(calls >= 3 && calls <= 5);
    for (size_t i = 0; i < proc_scan_count(s); i++) {
        const struct proc_info *pi = proc_scan_get(s, i);
        char want[32];
        snprintf(want, sizeof(want), "user%u", (unsigned)pi->uid);
        assert_string_equal(pi->username, want);
    }
    proc_scan_free(s);
}

static void test_proc_scan__caps_processes_and_bytes(void **state)
{
    struct fake *f = *state;
    for (int pid = 10; pid < 15; pid++)
        fake_simple(f, pid, "python3", 100, 0, NULL);
    fake_mkdir(f, "not-a-pid");
    fake_write(f, "0123", "", 0);
    struct proc_scan_opts o = {.max_procs = 3};
    struct proc_scan *s = fake_scan(f, &o);
    assert_int_equal(proc_scan_run(s, BTIME * NS), 0);
    assert_int_equal(proc_scan_stats(s)->seen, 5);
    assert_int_equal(proc_scan_count(s), 3);
    assert_int_equal(proc_scan_stats(s)->over_cap, 2);
    proc_scan_free(s);

    /* each process holds ~100 bytes of strings */
    struct proc_scan_opts b = {.max_bytes = 250, .user_lookup = fake_user};
    s = fake_scan(f, &b);
    assert_int_equal(proc_scan_run(s, BTIME * NS), 0);
    assert_int_equal(proc_scan_count(s), 2);
    assert_int_equal(proc_scan_stats(s)->over_cap, 3);
    proc_scan_free(s);
}

static bool only_even(const struct proc_key *key, const char *comm, uint64_t start_stack, void *arg)
{
    assert_string_equal(comm, "python3");
    assert_int_equal(start_stack, 0); /* make_stat()'s field 28 */
    int *calls = arg;
    (*calls)++;
    return key->pid % 2 == 0;
}

/* proc_scan_pids(): only the PIDs asked; a thread's TID and a gone PID count as vanished */
/* A process, or the thread @pid of process @tgid, with a status that says which. */
static void fake_task(const struct fake *f, int pid, int tgid)
{
    char stat[512], status[256];
    make_stat(stat, sizeof(stat), pid, "python3", 'S', 1, 0x400040, 100);
    snprintf(status, sizeof(status),
             "Name:\tpython3\nTgid:\t%d\nPid:\t%d\nPPid:\t1\n"
             "Uid:\t0\t0\t0\t0\n",
             tgid, pid);
    static const char cmd[] = "python3\0";
    struct fake_proc t = {.pid = pid,
                          .stat = stat,
                          .status = status,
                          .cmdline = cmd,
                          .cmd_len = sizeof(cmd) - 1,
                          .cgroup = "0::/\n",
                          .exe = "/usr/bin/python3",
                          .cwd = "/"};
    fake_proc(f, &t);
}

static void test_proc_scan__pids(void **state)
{
    struct fake *f = *state;
    for (int pid = 20; pid < 24; pid++)
        fake_task(f, pid, pid);
    fake_task(f, 24, 23); /* a thread of 23 */
    struct proc_scan *s = fake_scan(f, NULL);
    const pid_t pids[] = {21, 23, 24, 77, -1};
    assert_int_equal(proc_scan_pids(s, pids, PYPROFD_ARRAY_SIZE(pids), BTIME * NS), 0);
    assert_int_equal(proc_scan_count(s), 2);
    assert_non_null(find_pid(s, 21));
    assert_non_null(find_pid(s, 23));
    assert_null(find_pid(s, 20));
    const struct proc_scan_stats *st = proc_scan_stats(s);
    assert_int_equal(st->seen, 5);
    assert_int_equal(st->vanished, 2); /* the thread and the missing PID */
    assert_int_equal(st->malformed, 1);
    assert_true(st->btime_known);
    /* the full run after it still reads every process, the thread's TID not listed */
    assert_int_equal(proc_scan_run(s, BTIME * NS), 0);
    assert_int_equal(proc_scan_count(s), 5); /* 20..24: the fake lists 24 as a directory */
    proc_scan_free(s);
}

static void test_proc_scan__filter_skips_known_processes(void **state)
{
    struct fake *f = *state;
    for (int pid = 10; pid < 14; pid++)
        fake_simple(f, pid, "python3", 100, 0, NULL);
    int calls = 0;
    struct proc_scan_opts o = {.filter = only_even, .filter_arg = &calls};
    struct proc_scan *s = fake_scan(f, &o);
    assert_int_equal(proc_scan_run(s, BTIME * NS), 0);
    assert_int_equal(calls, 4);
    assert_int_equal(proc_scan_count(s), 2);
    assert_int_equal(proc_scan_stats(s)->filtered, 2);
    assert_non_null(find_pid(s, 12));
    assert_null(find_pid(s, 13));
    proc_scan_free(s);
}

static void test_proc_scan__missing_root_is_an_error(void **state)
{
    struct fake *f = *state;
    struct proc_scan_opts o = {.proc_root = "/nonexistent/proc", .self_pid = 1};
    struct proc_scan *s = proc_scan_new(&o);
    assert_non_null(s);
    assert_int_equal(proc_scan_run(s, 0), -ENOENT);
    assert_int_equal(proc_scan_count(s), 0);
    proc_scan_free(s);
    proc_scan_free(NULL);
    (void)f;
}

static void test_proc_scan__survives_allocation_failures(void **state)
{
    struct fake *f = *state;
    for (int pid = 10; pid < 13; pid++)
        fake_simple(f, pid, "python3", 100, 0, NULL);
    alloc_fail_nth(0);
    struct proc_scan *s = fake_scan(f, NULL);
    assert_int_equal(proc_scan_run(s, BTIME * NS), 0);
    uint64_t allocs = alloc_fail_nth(0);
    assert_true(allocs > 0);
    for (uint64_t i = 1; i <= allocs; i++) {
        alloc_fail_nth(i);
        int err = proc_scan_run(s, BTIME * NS);
        alloc_fail_nth(0);
        assert_true(err == 0 || err == -ENOMEM);
        if (err == -ENOMEM)
            assert_true(proc_scan_count(s) < 3);
    }
    assert_int_equal(proc_scan_run(s, BTIME * NS), 0);
    assert_int_equal(proc_scan_count(s), 3);
    proc_scan_free(s);

    size_t before = alloc_in_use();
    for (uint64_t i = 1; i <= 3; i++) {
        alloc_fail_nth(i);
        struct proc_scan *t = proc_scan_new(NULL);
        alloc_fail_nth(0);
        proc_scan_free(t);
    }
    assert_int_equal(alloc_in_use(), before);
}

/* ---- the real /proc ---- */

static void test_proc_scan__reads_real_proc(void **state)
{
    (void)state;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t now = (int64_t)ts.tv_sec * NS + ts.tv_nsec;

    /* default options: ourselves skipped */
    struct proc_scan *s = proc_scan_new(NULL);
    assert_non_null(s);
    assert_int_equal(proc_scan_run(s, now), 0);
    assert_int_equal(proc_scan_stats(s)->skipped_self, 1);
    assert_true(proc_scan_stats(s)->btime_known);
    assert_null(find_pid(s, getpid()));
    proc_scan_free(s);

    /* pretend to be pid 1 (never skipped as self below) to see our own entry */
    struct proc_scan_opts o = {.self_pid = 1};
    s = proc_scan_new(&o);
    assert_non_null(s);
    assert_int_equal(proc_scan_run(s, now), 0);
    const struct proc_info *me = find_pid(s, getpid());
    assert_non_null(me);
    assert_int_equal(me->uid, getuid());
    assert_int_equal(me->ppid, getppid());
    assert_int_equal(me->state, 'R');
    assert_non_null(strstr(me->exe, "test_proc_scan"));
    assert_non_null(strstr(me->cmdline, "test_proc_scan"));
    assert_string_equal(me->comm, "test_proc_scan");
    assert_true(me->age_ns >= 0 && me->age_ns < 600 * NS);
    char cwd[PATH_MAX];
    assert_non_null(getcwd(cwd, sizeof(cwd)));
    assert_string_equal(me->cwd, cwd);
    const struct proc_scan_stats *st = proc_scan_stats(s);
    assert_int_equal(st->seen, st->reported + st->skipped_self + st->skipped_zombie +
                                   st->skipped_kthread + st->filtered + st->vanished +
                                   st->unreadable + st->malformed + st->over_cap);
    assert_int_equal(st->malformed, 0);
    proc_scan_free(s);
}

#define FAKE_TEST(fn) cmocka_unit_test_setup_teardown(fn, proc_scan_setup, proc_scan_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_proc_scan__parses_stat),
        cmocka_unit_test(test_proc_scan__stat_comm_with_parens_and_spaces),
        cmocka_unit_test(test_proc_scan__rejects_garbage_stat),
        cmocka_unit_test(test_proc_scan__parses_status),
        cmocka_unit_test(test_proc_scan__cgroup_container_ids),
        cmocka_unit_test(test_proc_scan__cgroup_v1),
        cmocka_unit_test(test_proc_scan__parses_btime),
        cmocka_unit_test(test_proc_scan__key_equality),
        FAKE_TEST(test_proc_scan__pids),
        FAKE_TEST(test_proc_scan__reads_a_normal_process),
        FAKE_TEST(test_proc_scan__labels_without_container),
        FAKE_TEST(test_proc_scan__comm_with_parens),
        FAKE_TEST(test_proc_scan__skips_zombies_kthreads_and_self),
        FAKE_TEST(test_proc_scan__default_self_is_proc_self),
        FAKE_TEST(test_proc_scan__counts_vanished_and_unreadable),
        FAKE_TEST(test_proc_scan__counts_malformed),
        FAKE_TEST(test_proc_scan__cmdline_cap_and_deleted_exe),
        FAKE_TEST(test_proc_scan__text_becomes_valid_utf8),
        FAKE_TEST(test_proc_scan__cmdline_cap_keeps_utf8_whole),
        FAKE_TEST(test_proc_scan__pid_reuse_changes_key),
        FAKE_TEST(test_proc_scan__age_uses_btime_and_clock_ticks),
        FAKE_TEST(test_proc_scan__btime_after_a_huge_intr_line),
        FAKE_TEST(test_proc_scan__user_lookup_is_cached_and_capped),
        FAKE_TEST(test_proc_scan__caps_processes_and_bytes),
        FAKE_TEST(test_proc_scan__filter_skips_known_processes),
        FAKE_TEST(test_proc_scan__missing_root_is_an_error),
        FAKE_TEST(test_proc_scan__survives_allocation_failures),
        cmocka_unit_test(test_proc_scan__reads_real_proc),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
