/* SPDX-License-Identifier: MIT */
/*
 * proc_scan.c: the /proc scanner (see proc_scan.h). Each process is read
 * through a directory fd of <root>/PID so that all its files belong to the
 * same process even if the PID is reused mid-read. Files go through fixed
 * buffers inside the scanner; a reported process costs one allocation (the
 * block holding its strings) plus its slot in the result array.
 *
 * The strings are where a process's text enters pyprofd: each is copied into
 * that block through utf8_sanitize() (base/utf8.h), so everything made of
 * them later (meta labels, relabeling, /targets, profiles) is valid UTF-8.
 */
#include "base/compat.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/readfile.h"
#include "base/utf8.h"
#include "discovery/proc_scan.h"

/* Bytes of a comm kept (the kernel's limit is 16 for stat, 64 for kthreads). */
#define SCAN_COMM_MAX 64
/* A task's comm as the kernel cuts it (TASK_COMM_LEN - 1), maybe inside a character. */
#define SCAN_COMM_CUT 15
/* Cap on bytes read from <root>/stat while looking for btime. */
#define SCAN_BTIME_READ_MAX (4u << 20)

struct scan_user {
    uint32_t uid;
    char name[256]; /* "" when the lookup failed */
};

struct proc_scan {
    char *root;
    pid_t self;
    size_t max_procs;
    size_t max_bytes;
    long clk_tck;
    proc_scan_user_fn user_lookup;
    void *user_lookup_arg;
    proc_scan_filter_fn filter;
    void *filter_arg;

    struct scan_user *users; /* cache, cleared at each run and when full */
    size_t n_users, max_users;

    struct proc_info *infos; /* results of the last run */
    size_t count, cap;
    size_t bytes; /* string bytes held by infos */
    struct proc_scan_stats stats;
    int64_t btime; /* read once; -1 unknown */
    bool by_pid;   /* proc_scan_pids(): a PID may be a thread's TID */

    /* scratch for one process */
    char buf[PROC_SCAN_READ_MAX + 1]; /* stat, status (and readfile_into()'s NUL) */
    char cgroup[PROC_SCAN_READ_MAX + 1];
    char cmdline[PROC_SCAN_CMDLINE_MAX + 1];
    char exe[PATH_MAX];
    char cwd[PATH_MAX];
    char comm[SCAN_COMM_MAX + 1];
};

bool proc_key_equal(const struct proc_key *a, const struct proc_key *b)
{
    return a->pid == b->pid && a->start_ticks == b->start_ticks;
}

/* ---- proc_info ---- */

enum {
    SCAN_STR_COMM,
    SCAN_STR_CMDLINE,
    SCAN_STR_EXE,
    SCAN_STR_CWD,
    SCAN_STR_USER,
    SCAN_STR_CGROUP,
    SCAN_STR_ID,
    SCAN_STR_N
};

/*
 * The bytes each of @strs takes as valid UTF-8 (utf8_sanitized_len(); the
 * command line at most PROC_SCAN_CMDLINE_MAX) into @out, and the block they
 * all take, NULs included.
 */
static size_t scan_info_sizes(const char *const strs[SCAN_STR_N], const size_t lens[SCAN_STR_N],
                              size_t out[SCAN_STR_N])
{
    size_t total = 0;
    for (int i = 0; i < SCAN_STR_N; i++) {
        out[i] = utf8_sanitized_len(strs[i], lens[i], NULL);
        if (i == SCAN_STR_CMDLINE && out[i] > PROC_SCAN_CMDLINE_MAX)
            out[i] = PROC_SCAN_CMDLINE_MAX; /* cut on a character boundary below */
        total += out[i] + 1;
    }
    return total;
}

/*
 * Fills @info's string pointers from one new block holding copies of @strs
 * made valid UTF-8 (@sizes from scan_info_sizes()).
 */
static int scan_info_strings(struct proc_info *info, const char *const strs[SCAN_STR_N],
                             const size_t lens[SCAN_STR_N], const size_t sizes[SCAN_STR_N],
                             size_t *bytes)
{
    size_t total = 0;
    for (int i = 0; i < SCAN_STR_N; i++)
        total += sizes[i] + 1;
    char *block = alloc_malloc(total);
    if (!block)
        return -ENOMEM;
    const char *ptrs[SCAN_STR_N];
    char *p = block;
    for (int i = 0; i < SCAN_STR_N; i++) {
        (void)utf8_sanitize(p, sizes[i] + 1, strs[i], lens[i]);
        ptrs[i] = p;
        p += sizes[i] + 1;
    }
    info->strings_ = block;
    info->comm = ptrs[SCAN_STR_COMM];
    info->cmdline = ptrs[SCAN_STR_CMDLINE];
    info->exe = ptrs[SCAN_STR_EXE];
    info->cwd = ptrs[SCAN_STR_CWD];
    info->username = ptrs[SCAN_STR_USER];
    info->cgroup_path = ptrs[SCAN_STR_CGROUP];
    info->container_id = ptrs[SCAN_STR_ID];
    *bytes = total;
    return 0;
}

int proc_info_copy(struct proc_info *dst, const struct proc_info *src)
{
    const char *strs[SCAN_STR_N] = {src->comm,     src->cmdline,     src->exe,         src->cwd,
                                    src->username, src->cgroup_path, src->container_id};
    size_t lens[SCAN_STR_N], sizes[SCAN_STR_N];
    for (int i = 0; i < SCAN_STR_N; i++)
        lens[i] = strlen(strs[i]);
    size_t bytes;
    *dst = *src;
    (void)scan_info_sizes(strs, lens, sizes);
    int err = scan_info_strings(dst, strs, lens, sizes, &bytes);
    if (err)
        memset(dst, 0, sizeof(*dst));
    return err;
}

void proc_info_release(struct proc_info *info)
{
    alloc_free(info->strings_);
    memset(info, 0, sizeof(*info));
}

static int scan_set_num(struct labels *out, const char *name, int64_t v)
{
    char num[24];
    snprintf(num, sizeof(num), "%" PRId64, v);
    return labels_set(out, name, num);
}

int proc_scan_meta_labels(const struct proc_info *info, struct labels *out)
{
    int err = 0;
    const char *base = strrchr(info->exe, '/');
    base = base ? base + 1 : info->exe;
    const struct {
        const char *name;
        const char *value;
    } strs[] = {
        {"__meta_process_exe", info->exe},
        {"__meta_process_executable_name", base},
        {"__meta_process_comm", info->comm},
        {"__meta_process_commandline", info->cmdline},
        {"__meta_process_cwd", info->cwd},
        {"__meta_process_username", info->username},
        {"__meta_process_cgroup_path", info->cgroup_path},
    };
    if ((err = scan_set_num(out, "__meta_process_pid", info->key.pid)) ||
        (err = scan_set_num(out, "__process_pid__", info->key.pid)) ||
        (err = scan_set_num(out, "__meta_process_nspid", info->nspid)) ||
        (err = scan_set_num(out, "__meta_process_ppid", info->ppid)) ||
        (err = scan_set_num(out, "__meta_process_uid", info->uid)))
        goto out;
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(strs); i++) {
        err = labels_set(out, strs[i].name, strs[i].value);
        if (err)
            goto out;
    }
    if (info->container_id[0]) {
        err = labels_set(out, "__container_id__", info->container_id);
        if (!err && info->container_runtime[0])
            err = labels_set(out, "__meta_container_runtime", info->container_runtime);
    }
out:
    return err;
}

/* ---- reading ---- */

/* ENOENT and ESRCH: the process is gone. */
static bool scan_gone(int err)
{
    return err == -ENOENT || err == -ESRCH;
}

/*
 * Reads file @name under @dfd into @buf of @size bytes (at most @size - 1,
 * NUL-terminated; a kernel file, so no type check: readfile.h). *@full is
 * set when the buffer filled up (the file may be longer).
 */
static int scan_read_at(int dfd, const char *name, char *buf, size_t size, size_t *len, bool *full)
{
    int err = readfile_into_at(dfd, name, buf, size, len, READFILE_INTO_KERNEL);
    *full = !err && *len == size - 1;
    return err;
}

/* Length of the complete lines of a buffer that filled up. */
static size_t scan_whole_lines(const char *buf, size_t len, bool full)
{
    if (!full)
        return len;
    const char *nl = len ? memrchr(buf, '\n', len) : NULL;
    return nl ? (size_t)(nl - buf) + 1 : 0;
}

/* readlink into @buf (PATH_MAX); a result that fills it is cut by one byte. */
static int scan_readlink_at(int dfd, const char *name, char *buf, size_t *len)
{
    ssize_t n = readlinkat(dfd, name, buf, PATH_MAX - 1);
    if (n < 0)
        return -errno;
    buf[n] = '\0';
    *len = (size_t)n;
    return 0;
}

static int scan_default_user(uint32_t uid, char *buf, size_t len, void *arg)
{
    (void)arg;
    char scratch[8192];
    struct passwd pw, *res = NULL;
    int rc = getpwuid_r((uid_t)uid, &pw, scratch, sizeof(scratch), &res);
    if (rc != 0)
        return -rc;
    if (!res || !res->pw_name)
        return -ENOENT;
    if ((size_t)snprintf(buf, len, "%s", res->pw_name) >= len)
        return -ERANGE;
    return 0;
}

static const char *scan_username(struct proc_scan *s, uint32_t uid)
{
    for (size_t i = 0; i < s->n_users; i++) {
        if (s->users[i].uid == uid)
            return s->users[i].name;
    }
    if (s->n_users == s->max_users)
        s->n_users = 0;
    struct scan_user *u = &s->users[s->n_users++];
    u->uid = uid;
    s->stats.user_lookups++;
    char raw[sizeof(u->name)];
    if (s->user_lookup(uid, raw, sizeof(raw), s->user_lookup_arg) != 0)
        raw[0] = '\0';
    raw[sizeof(raw) - 1] = '\0';
    /* made valid here, once per lookup, not once per process */
    (void)utf8_sanitize(u->name, sizeof(u->name), raw, strlen(raw));
    return u->name;
}

/*
 * btime from <root>/stat. It follows the intr line, which can be longer than
 * any buffer, so the file is streamed: only a line that starts with "btime "
 * is collected (up to 40 bytes) and handed to proc_scan_parse_btime().
 */
static int scan_read_btime(struct proc_scan *s, int rootfd, int64_t *btime)
{
    static const char key[] = "btime ";
    char line[40];
    size_t line_len = 0, total = 0;
    bool candidate = true; /* the current line may still be the btime line */
    int err = -ENOENT;
    int fd = openat(rootfd, "stat", O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
    if (fd < 0)
        return -errno;
    while (total < SCAN_BTIME_READ_MAX && err == -ENOENT) {
        ssize_t n = read(fd, s->buf, PROC_SCAN_READ_MAX);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n < 0)
                err = -errno;
            else if (candidate && line_len > 0) /* last line without '\n' */
                err = proc_scan_parse_btime(line, line_len, btime);
            break;
        }
        total += (size_t)n;
        for (ssize_t i = 0; i < n && err == -ENOENT; i++) {
            char c = s->buf[i];
            if (c == '\n') {
                if (candidate && line_len > 0)
                    err = proc_scan_parse_btime(line, line_len, btime);
                candidate = true;
                line_len = 0;
            } else if (candidate) {
                if (line_len == sizeof(line) || (line_len < sizeof(key) - 1 && c != key[line_len]))
                    candidate = false;
                else
                    line[line_len++] = c;
            }
        }
    }
    close(fd);
    return err;
}

/*
 * Cmdline in s->cmdline: NULs become spaces, trailing NULs go; one cut at
 * the cap drops the character it split.
 */
static int scan_cmdline(struct proc_scan *s, int dfd, size_t *len)
{
    bool full = false;
    size_t n = 0;
    int err = scan_read_at(dfd, "cmdline", s->cmdline, sizeof(s->cmdline), &n, &full);
    if (err)
        return err;
    if (full)
        n = utf8_trim_cut(s->cmdline, n);
    while (n > 0 && s->cmdline[n - 1] == '\0')
        n--;
    for (size_t i = 0; i < n; i++) {
        if (s->cmdline[i] == '\0')
            s->cmdline[i] = ' ';
    }
    s->cmdline[n] = '\0';
    *len = n;
    return 0;
}

/* An optional symlink (exe, cwd): denied or odd leaves it empty. */
static int scan_link(struct proc_scan *s, int dfd, const char *name, char *buf, size_t *len)
{
    int err = scan_readlink_at(dfd, name, buf, len);
    if (err && !scan_gone(err)) {
        s->stats.fields_denied++;
        buf[0] = '\0';
        *len = 0;
        err = 0;
    }
    return err;
}

static int scan_grow(struct proc_scan *s)
{
    if (s->count < s->cap)
        return 0;
    size_t ncap = s->cap ? s->cap * 2 : 64;
    if (ncap > s->max_procs)
        ncap = s->max_procs;
    struct proc_info *n = alloc_realloc(s->infos, ncap * sizeof(*n));
    if (!n)
        return -ENOMEM;
    s->infos = n;
    s->cap = ncap;
    return 0;
}

/*
 * Reads one process. Returns 0 (the process was reported or counted in a
 * bucket) or -ENOMEM.
 */
static int scan_one(struct proc_scan *s, int rootfd, const char *name, pid_t pid, int64_t now_ns)
{
    struct proc_stat st;
    struct proc_status status;
    struct proc_cgroup cg = {.runtime = ""};
    struct proc_info info = {0};
    size_t len = 0, cmd_len = 0, exe_len = 0, cwd_len = 0;
    bool full = false;
    int err = 0;
    uint64_t *bucket = NULL;

    int dfd = openat(rootfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (dfd < 0) {
        err = -errno;
        goto classify;
    }
    err = scan_read_at(dfd, "stat", s->buf, sizeof(s->buf), &len, &full);
    if (err)
        goto classify;
    if (full || proc_scan_parse_stat(s->buf, len, &st) || st.pid != pid) {
        bucket = &s->stats.malformed;
        goto out;
    }
    if (st.state == 'Z' || st.state == 'X') {
        bucket = &s->stats.skipped_zombie;
        goto out;
    }
    if (st.flags & PROC_SCAN_PF_KTHREAD) {
        bucket = &s->stats.skipped_kthread;
        goto out;
    }
    info.key.pid = pid;
    info.key.start_ticks = st.start_ticks;
    info.ppid = st.ppid;
    info.state = st.state;
    info.flags = st.flags;
    info.start_stack = st.start_stack;
    size_t comm_len = st.comm_len < SCAN_COMM_MAX ? st.comm_len : SCAN_COMM_MAX;
    if (comm_len == SCAN_COMM_CUT || comm_len == SCAN_COMM_MAX)
        comm_len = utf8_trim_cut(st.comm, comm_len); /* the kernel's cut or ours */
    memcpy(s->comm, st.comm, comm_len);
    s->comm[comm_len] = '\0';
    if (s->filter && !s->filter(&info.key, s->comm, st.start_stack, s->filter_arg)) {
        bucket = &s->stats.filtered;
        goto out;
    }
    if (s->count >= s->max_procs) {
        bucket = &s->stats.over_cap;
        goto out;
    }

    /* wall-clock start and age */
    info.start_time_ns = -1;
    info.age_ns = -1;
    uint64_t secs = st.start_ticks / (uint64_t)s->clk_tck;
    uint64_t rem = st.start_ticks % (uint64_t)s->clk_tck;
    if (secs > (uint64_t)PROC_SCAN_SECONDS_MAX) {
        bucket = &s->stats.malformed;
        goto out;
    }
    if (s->btime >= 0) {
        info.start_time_ns = (s->btime + (int64_t)secs) * 1000000000 +
                             (int64_t)(rem * 1000000000u / (uint64_t)s->clk_tck);
        info.age_ns = now_ns > info.start_time_ns ? now_ns - info.start_time_ns : 0;
    }

    err = scan_read_at(dfd, "status", s->buf, sizeof(s->buf), &len, &full);
    if (err)
        goto classify;
    if (proc_scan_parse_status(s->buf, scan_whole_lines(s->buf, len, full), &status)) {
        bucket = &s->stats.malformed;
        goto out;
    }
    if (s->by_pid && status.tgid != pid) { /* a thread's TID (proc_scan_pids()) */
        bucket = &s->stats.vanished;
        goto out;
    }
    info.uid = status.uid;
    info.nspid = status.nspid ? status.nspid : pid;

    if ((err = scan_cmdline(s, dfd, &cmd_len)) ||
        (err = scan_link(s, dfd, "exe", s->exe, &exe_len)) ||
        (err = scan_link(s, dfd, "cwd", s->cwd, &cwd_len)))
        goto classify;
    static const char deleted[] = " (deleted)";
    if (exe_len > sizeof(deleted) - 1 &&
        memcmp(s->exe + exe_len - (sizeof(deleted) - 1), deleted, sizeof(deleted) - 1) == 0) {
        exe_len -= sizeof(deleted) - 1;
        s->exe[exe_len] = '\0';
        info.exe_deleted = true;
    }

    err = scan_read_at(dfd, "cgroup", s->cgroup, sizeof(s->cgroup), &len, &full);
    if (err)
        goto classify;
    if (proc_scan_parse_cgroup(s->cgroup, scan_whole_lines(s->cgroup, len, full), &cg)) {
        bucket = &s->stats.malformed;
        goto out;
    }
    info.container_runtime = cg.runtime;

    const char *user = scan_username(s, info.uid);
    const char *strs[SCAN_STR_N] = {
        s->comm, s->cmdline, s->exe, s->cwd, user, cg.path ? cg.path : "", cg.container_id};
    size_t lens[SCAN_STR_N] = {comm_len,
                               cmd_len,
                               exe_len,
                               cwd_len,
                               strlen(user),
                               cg.path ? cg.path_len : 0,
                               strlen(cg.container_id)};
    size_t sizes[SCAN_STR_N];
    size_t need = scan_info_sizes(strs, lens, sizes);
    if (need > s->max_bytes || s->bytes > s->max_bytes - need) {
        bucket = &s->stats.over_cap;
        goto out;
    }
    size_t bytes = 0;
    if ((err = scan_grow(s)) || (err = scan_info_strings(&info, strs, lens, sizes, &bytes)))
        goto out;
    s->infos[s->count++] = info;
    s->bytes += bytes;
    bucket = &s->stats.reported;
    goto out;

classify:
    if (scan_gone(err))
        bucket = &s->stats.vanished;
    else
        bucket = &s->stats.unreadable;
    err = 0;
out:
    if (bucket)
        (*bucket)++;
    if (dfd >= 0)
        close(dfd);
    return err;
}

/* "123" -> 123; anything else (".", "self", "sys", "0123"?) -> false. */
static bool scan_pid_name(const char *name, pid_t *pid)
{
    size_t n = strlen(name);
    return n > 0 && n <= 10 && name[0] != '0' && proc_scan_parse_pid(name, n, pid) == 0 && *pid > 0;
}

static void scan_clear(struct proc_scan *s)
{
    for (size_t i = 0; i < s->count; i++)
        alloc_free(s->infos[i].strings_);
    s->count = 0;
    s->bytes = 0;
}

/* Starts a run: results and counters cleared, btime read (once per scanner). */
static void scan_begin(struct proc_scan *s, int rootfd)
{
    scan_clear(s);
    memset(&s->stats, 0, sizeof(s->stats));
    s->n_users = 0;
    if (s->btime < 0 && scan_read_btime(s, rootfd, &s->btime) != 0)
        s->btime = -1;
    s->stats.btime_known = s->btime >= 0;
}

int proc_scan_run(struct proc_scan *s, int64_t now_ns)
{
    int err = 0;
    DIR *dir = opendir(s->root);
    if (!dir) {
        err = -errno;
        scan_clear(s);
        memset(&s->stats, 0, sizeof(s->stats));
        return err;
    }
    int rootfd = dirfd(dir);
    scan_begin(s, rootfd);

    for (;;) {
        errno = 0;
        struct dirent *de = readdir(dir);
        if (!de) {
            /* an error mid-listing ends the run with what was read */
            break;
        }
        pid_t pid;
        if (!scan_pid_name(de->d_name, &pid))
            continue;
        s->stats.seen++;
        if (pid == s->self) {
            s->stats.skipped_self++;
            continue;
        }
        err = scan_one(s, rootfd, de->d_name, pid, now_ns);
        if (err)
            break;
    }
    closedir(dir);
    return err;
}

int proc_scan_pids(struct proc_scan *s, const pid_t *pids, size_t n, int64_t now_ns)
{
    int rootfd = open(s->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (rootfd < 0) {
        int err = -errno;
        scan_clear(s);
        memset(&s->stats, 0, sizeof(s->stats));
        return err;
    }
    scan_begin(s, rootfd);
    int err = 0;
    s->by_pid = true;
    for (size_t i = 0; i < n && !err; i++) {
        char name[16];
        s->stats.seen++;
        if (pids[i] <= 0) {
            s->stats.malformed++;
            continue;
        }
        if (pids[i] == s->self) {
            s->stats.skipped_self++;
            continue;
        }
        snprintf(name, sizeof(name), "%d", (int)pids[i]);
        err = scan_one(s, rootfd, name, pids[i], now_ns);
    }
    s->by_pid = false;
    close(rootfd);
    return err;
}

size_t proc_scan_count(const struct proc_scan *s)
{
    return s->count;
}

const struct proc_info *proc_scan_get(const struct proc_scan *s, size_t i)
{
    PYPROFD_ASSERT(i < s->count);
    return &s->infos[i];
}

const struct proc_scan_stats *proc_scan_stats(const struct proc_scan *s)
{
    return &s->stats;
}

static pid_t scan_self_pid(const char *root)
{
    char path[PATH_MAX + 8], link[32];
    pid_t pid = 0;
    snprintf(path, sizeof(path), "%s/self", root);
    ssize_t n = readlink(path, link, sizeof(link) - 1);
    if (n <= 0 || proc_scan_parse_pid(link, (size_t)n, &pid) || pid <= 0)
        pid = getpid();
    return pid;
}

struct proc_scan *proc_scan_new(const struct proc_scan_opts *opts)
{
    struct proc_scan_opts o = {0};
    if (opts)
        o = *opts;
    const char *root = o.proc_root ? o.proc_root : "/proc";
    if (strlen(root) >= PATH_MAX) {
        errno = EINVAL;
        return NULL;
    }
    struct proc_scan *s = alloc_calloc(1, sizeof(*s));
    if (!s)
        goto fail;
    s->root = alloc_strdup(root);
    s->max_users = o.user_cache_max ? o.user_cache_max : PROC_SCAN_USER_CACHE_MAX;
    s->users = alloc_calloc(s->max_users, sizeof(*s->users));
    if (!s->root || !s->users)
        goto fail;
    s->self = o.self_pid > 0 ? o.self_pid : scan_self_pid(root);
    s->max_procs = o.max_procs ? o.max_procs : PROC_SCAN_MAX_PROCS;
    s->max_bytes = o.max_bytes ? o.max_bytes : PROC_SCAN_MAX_BYTES;
    s->clk_tck = o.clk_tck > 0 ? o.clk_tck : sysconf(_SC_CLK_TCK);
    if (s->clk_tck <= 0)
        s->clk_tck = 100;
    s->user_lookup = o.user_lookup ? o.user_lookup : scan_default_user;
    s->user_lookup_arg = o.user_lookup_arg;
    s->filter = o.filter;
    s->filter_arg = o.filter_arg;
    s->btime = -1;
    return s;
fail:
    proc_scan_free(s);
    errno = ENOMEM;
    return NULL;
}

void proc_scan_free(struct proc_scan *s)
{
    if (!s)
        return;
    scan_clear(s);
    alloc_free(s->infos);
    alloc_free(s->users);
    alloc_free(s->root);
    alloc_free(s);
}
