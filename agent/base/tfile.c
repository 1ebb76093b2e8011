/* SPDX-License-Identifier: MIT */
/*
 * tfile.c: files a target names, resolved and opened as it could (see
 * tfile.h).
 *
 * Why a walk of our own and not openat2(RESOLVE_IN_ROOT) alone: the kernel
 * resolves with pyprofd's credentials (root, with CAP_DAC_OVERRIDE), so the
 * directories on the way would not be checked against the target's; and a
 * single open of the final name opens it, FIFO or device, before its type
 * can be looked at. Here every step is an O_PATH descriptor, fstat()ed and
 * judged before the next. ".." is never looked up: the walk keeps the
 * canonical name it has reached, and going up re-resolves that name's
 * parent from the root (openat2 with RESOLVE_IN_ROOT and no links at all,
 * since every link in it has been replaced already), so a directory moved
 * out from under the walk cannot carry it outside the root.
 */
#include "base/compat.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/readfile.h"
#include "base/tfile.h"

#define TFILE_CAP_DAC_OVERRIDE    1
#define TFILE_CAP_DAC_READ_SEARCH 2

/* ---- credentials ------------------------------------------------------------- */

/* The value of line @key ("Uid:") in @text, or NULL; *@end: the line's end. */
static const char *tfile_line(const char *text, size_t len, const char *key, const char **end)
{
    size_t klen = strlen(key);
    const char *p = text, *stop = text + len;
    while (p < stop) {
        const char *nl = memchr(p, '\n', (size_t)(stop - p));
        const char *e = nl ? nl : stop;
        if ((size_t)(e - p) >= klen && memcmp(p, key, klen) == 0) {
            *end = e;
            return p + klen;
        }
        p = e + 1;
    }
    return NULL;
}

/* Reads one unsigned decimal after blanks in [*p, end) into *@out (< 2^32). */
static bool tfile_u32(const char **p, const char *end, uint32_t *out)
{
    const char *s = *p;
    while (s < end && (*s == ' ' || *s == '\t'))
        s++;
    uint64_t v = 0;
    const char *digits = s;
    while (s < end && *s >= '0' && *s <= '9' && v <= UINT32_MAX)
        v = v * 10 + (uint64_t)(*s++ - '0');
    if (s == digits || v > UINT32_MAX || (s < end && *s != ' ' && *s != '\t'))
        return false;
    *out = (uint32_t)v;
    *p = s;
    return true;
}

/* The fourth id of a Uid:/Gid: line (real, effective, saved, filesystem). */
static bool tfile_fs_id(const char *text, size_t len, const char *key, uint32_t *out)
{
    const char *end, *p = tfile_line(text, len, key, &end);
    uint32_t id[4];
    for (size_t i = 0; p && i < 4; i++) {
        if (!tfile_u32(&p, end, &id[i]))
            return false;
    }
    if (!p)
        return false;
    *out = id[3];
    return true;
}

int tfile_parse_status(const char *text, size_t len, struct tfile_creds *out)
{
    struct tfile_creds c = {0};
    if (!tfile_fs_id(text, len, "Uid:", &c.fsuid) || !tfile_fs_id(text, len, "Gid:", &c.fsgid))
        return -EINVAL;
    const char *end, *p = tfile_line(text, len, "Groups:", &end);
    while (p && c.ngroups < TFILE_GROUPS) {
        const char *q = p;
        while (q < end && (*q == ' ' || *q == '\t'))
            q++;
        if (q == end || !tfile_u32(&q, end, &c.groups[c.ngroups]))
            break;
        c.ngroups++;
        p = q;
    }
    p = tfile_line(text, len, "CapEff:", &end);
    while (p && p < end && (*p == ' ' || *p == '\t'))
        p++;
    size_t hex = p ? (size_t)(end - p) : 0;
    uint64_t caps = 0;
    for (size_t i = 0; i < hex; i++) {
        char ch = p[i];
        unsigned d = ch >= '0' && ch <= '9'   ? (unsigned)(ch - '0')
                     : ch >= 'a' && ch <= 'f' ? (unsigned)(ch - 'a' + 10)
                     : ch >= 'A' && ch <= 'F' ? (unsigned)(ch - 'A' + 10)
                                              : 16u;
        if (d == 16 || i >= 16)
            return -EINVAL;
        caps = caps << 4 | d;
    }
    if (!hex)
        return -EINVAL;
    c.dac_override = caps & (1ull << TFILE_CAP_DAC_OVERRIDE);
    c.dac_read_search = caps & (1ull << TFILE_CAP_DAC_READ_SEARCH);
    *out = c;
    return 0;
}

bool tfile_may(const struct tfile_creds *c, const struct stat *st, int want)
{
    if (c->dac_override)
        return true; /* (execute of a plain file is not asked here) */
    if (c->dac_read_search && (want == 4 || (want == 1 && S_ISDIR(st->st_mode))))
        return true;
    mode_t bits;
    if (st->st_uid == c->fsuid) {
        bits = st->st_mode >> 6;
    } else {
        bool member = st->st_gid == c->fsgid;
        for (size_t i = 0; i < c->ngroups && !member; i++)
            member = st->st_gid == c->groups[i];
        bits = member ? st->st_mode >> 3 : st->st_mode;
    }
    return (bits & (mode_t)want) == (mode_t)want;
}

/* Whether @pid is in our user namespace (its capabilities then mean ours). */
static bool tfile_same_userns(const char *proc_root, pid_t pid)
{
    char path[PATH_MAX];
    struct stat a, b;
    snprintf(path, sizeof(path), "%s/%d/ns/user", proc_root, (int)pid);
    if (stat(path, &a) != 0 || stat("/proc/self/ns/user", &b) != 0)
        return false;
    return a.st_ino == b.st_ino && a.st_dev == b.st_dev;
}

/*
 * The target's working directory as a name below its root, when it can be
 * told: its cwd link's text less its root link's (both as we see them),
 * checked by resolving that name below the root to the same directory.
 * Unknown otherwise (a relative name then may not climb above it).
 */
static void tfile_cwd_canon(const char *root, pid_t pid, struct tfile_who *w)
{
    char path[PATH_MAX], rlink[PATH_MAX], clink[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%d/root", root, (int)pid);
    ssize_t rn = readlink(path, rlink, sizeof(rlink) - 1);
    snprintf(path, sizeof(path), "%s/%d/cwd", root, (int)pid);
    ssize_t cn = readlink(path, clink, sizeof(clink) - 1);
    if (rn <= 0 || cn <= 0 || w->cwd_fd < 0)
        return;
    rlink[rn] = clink[cn] = '\0';
    size_t skip = strcmp(rlink, "/") == 0 ? 0 : (size_t)rn;
    if (strncmp(clink, rlink, skip) != 0 || (clink[skip] != '/' && clink[skip] != '\0'))
        return;
    const char *inside = clink[skip] ? clink + skip : "/";
    struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
                           .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
    int fd = (int)syscall(SYS_openat2, w->root_fd, inside + 1, &how, sizeof(how));
    struct stat a, b;
    if (fd >= 0 && fstat(fd, &a) == 0 && fstat(w->cwd_fd, &b) == 0 && a.st_ino == b.st_ino &&
        a.st_dev == b.st_dev)
        snprintf(w->cwd_name, sizeof(w->cwd_name), "%s", inside);
    if (fd >= 0)
        close(fd);
}

int tfile_who_open(const char *proc_root, pid_t pid, struct tfile_who *w)
{
    char path[PATH_MAX], why[128];
    const char *root = proc_root ? proc_root : "/proc";
    *w = (struct tfile_who){.root_fd = -1, .cwd_fd = -1};
    snprintf(path, sizeof(path), "%s/%d/root", root, (int)pid);
    w->root_fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (w->root_fd < 0) {
        int err = -errno;
        snprintf(w->why, sizeof(w->why), "cannot open '%.64s': %s", path, strerror(-err));
        return err;
    }
    snprintf(path, sizeof(path), "%s/%d/cwd", root, (int)pid);
    w->cwd_fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    tfile_cwd_canon(root, pid, w);
    snprintf(path, sizeof(path), "%s/%d/status", root, (int)pid);
    char *text = NULL;
    size_t len = 0;
    int err = readfile_all(path, 65536, &text, &len, why, sizeof(why));
    if (!err)
        err = tfile_parse_status(text, len, &w->creds);
    alloc_free(text);
    if (err) {
        snprintf(w->why, sizeof(w->why), "cannot read the credentials in '%.64s': %.100s", path,
                 err == -EINVAL ? "not a status file" : why);
        return err;
    }
    if (!tfile_same_userns(root, pid))
        w->creds.dac_override = w->creds.dac_read_search = false;
    w->have_creds = true;
    return 0;
}

void tfile_who_close(struct tfile_who *w)
{
    if (w->root_fd >= 0)
        close(w->root_fd);
    if (w->cwd_fd >= 0)
        close(w->cwd_fd);
    w->root_fd = w->cwd_fd = -1;
    w->have_creds = false;
}

/* ---- the walk ------------------------------------------------------------------- */

/* One open, handed to its thread; freed by whichever of the two lets go last. */
struct tfile_job {
    atomic_int refs;
    pthread_mutex_t mu;
    pthread_cond_t done_cv;
    bool done, abandoned; /* abandoned: the caller gave up waiting */
    /* input: the thread's own copies */
    int root_fd, cwd_fd;
    struct tfile_creds creds;
    uint64_t max;
    bool read;
    char path[PATH_MAX];
    char cwd_name[PATH_MAX]; /* the working directory below the root, or "" */
    /* output */
    int rc, fd;
    struct stat st;
    struct buf text;
    char why[256];
};

static atomic_uint tfile_pending_stalled;

unsigned tfile_stalled(void)
{
    return atomic_load(&tfile_pending_stalled);
}

static void tfile_job_put(struct tfile_job *j)
{
    if (atomic_fetch_sub(&j->refs, 1) != 1)
        return;
    if (j->fd >= 0)
        close(j->fd);
    if (j->root_fd >= 0)
        close(j->root_fd);
    if (j->cwd_fd >= 0)
        close(j->cwd_fd);
    buf_release(&j->text);
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->done_cv);
    alloc_free(j);
}

/* The walk's state: where it is, the canonical name of that place below the root. */
struct tfile_walk {
    const struct tfile_job *j;
    int cur;              /* O_PATH descriptor of the directory reached */
    char canon[PATH_MAX]; /* its name below the root ("" for the root) */
    size_t canon_len;
    char rest[2 * PATH_MAX]; /* what is left of the name to resolve */
    unsigned links;
    bool below_start; /* canon is below the working directory, not the root */
};

/* Sets the job's reason: @msg, then ": @detail" when given. Returns @err. */
static int tfile_fail(struct tfile_job *j, int err, const char *msg, const char *detail)
{
    snprintf(j->why, sizeof(j->why), "%s%s%s", msg, detail ? ": " : "", detail ? detail : "");
    return err;
}

/* Refuses procfs and sysfs, where "self" is pyprofd and nothing is a file a program names. */
static int tfile_check_fs(struct tfile_job *j, int fd)
{
    struct statfs sf;
    if (fstatfs(fd, &sf) != 0)
        return tfile_fail(j, -errno, "cannot look at its filesystem", strerror(errno));
    if (sf.f_type == PROC_SUPER_MAGIC || sf.f_type == SYSFS_MAGIC)
        return tfile_fail(j, -EINVAL, "on procfs or sysfs, not a file of the program's", NULL);
    return 0;
}

/* Moves @wk to the directory its canonical name's parent names (a ".."). */
static int tfile_up(struct tfile_walk *wk)
{
    if (wk->canon_len == 0 && wk->below_start)
        return tfile_fail((struct tfile_job *)wk->j, -EACCES,
                          "a relative name that climbs above the working directory, whose "
                          "place is not known",
                          NULL);
    if (wk->canon_len == 0)
        return 0; /* ".." of the root is the root */
    char *slash = strrchr(wk->canon, '/');
    wk->canon_len = slash ? (size_t)(slash - wk->canon) : 0;
    wk->canon[wk->canon_len] = '\0';
    struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
                           .resolve =
                               RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
    int base = wk->below_start ? wk->j->cwd_fd : wk->j->root_fd;
    int fd =
        (int)syscall(SYS_openat2, base, wk->canon_len ? wk->canon + 1 : ".", &how, sizeof(how));
    if (fd < 0)
        return -errno;
    close(wk->cur);
    wk->cur = fd;
    return 0;
}

/* Replaces the component just met, a symbolic link (@fd), by its text. */
static int tfile_follow(struct tfile_walk *wk, int fd, const char *after)
{
    struct tfile_job *j = (struct tfile_job *)wk->j;
    char target[PATH_MAX];
    if (++wk->links > TFILE_MAX_LINKS)
        return tfile_fail(j, -ELOOP, "more than 40 symbolic links", NULL);
    ssize_t n = readlinkat(fd, "", target, sizeof(target));
    if (n < 0)
        return tfile_fail(j, -errno, "cannot read a symbolic link", strerror(errno));
    if ((size_t)n >= sizeof(target) || n == 0)
        return tfile_fail(j, -ENAMETOOLONG, "a symbolic link's text is too long or empty", NULL);
    target[n] = '\0';
    char joined[sizeof(wk->rest)];
    int len = snprintf(joined, sizeof(joined), "%s/%s", target, after);
    if (len < 0 || (size_t)len >= sizeof(joined))
        return tfile_fail(j, -ENAMETOOLONG, "the name is too long", NULL);
    memcpy(wk->rest, joined, (size_t)len + 1);
    if (target[0] == '/') { /* from the root again */
        int root = fcntl(j->root_fd, F_DUPFD_CLOEXEC, 0);
        if (root < 0)
            return -errno;
        close(wk->cur);
        wk->cur = root;
        wk->below_start = false;
        wk->canon_len = 0;
        wk->canon[0] = '\0';
    }
    return 0;
}

/*
 * Resolves the job's name to an O_PATH descriptor of a regular file the
 * target may read: *@fd_out and its *@st. Returns 0 or -errno (why set).
 */
static int tfile_resolve(struct tfile_job *j, int *fd_out, struct stat *st)
{
    struct tfile_walk wk = {.j = j, .cur = -1};
    int err = 0;
    const char *name = j->path;
    if (name[0] == '\0')
        return tfile_fail(j, -ENOENT, "an empty name", NULL);
    /* a relative name is resolved from the root through the working
     * directory's name when that is known; else from the directory itself,
     * and then it may not climb above it */
    bool from_root = name[0] == '/' || j->cwd_name[0];
    int start = from_root ? j->root_fd : j->cwd_fd;
    if (start < 0)
        return tfile_fail(j, -ENOENT, "a relative name, and its working directory is unknown",
                          NULL);
    int len = name[0] == '/' || !from_root
                  ? snprintf(wk.rest, sizeof(wk.rest), "%s", name)
                  : snprintf(wk.rest, sizeof(wk.rest), "%s/%s", j->cwd_name, name);
    if (len < 0 || (size_t)len >= PATH_MAX)
        return tfile_fail(j, -ENAMETOOLONG, "the name is too long", NULL);
    wk.below_start = !from_root;
    wk.cur = fcntl(start, F_DUPFD_CLOEXEC, 0);
    if (wk.cur < 0)
        return -errno;
    for (;;) {
        char *p = wk.rest;
        while (*p == '/')
            p++;
        if (*p == '\0')
            break; /* the name ended at a directory */
        char *slash = strchr(p, '/');
        size_t clen = slash ? (size_t)(slash - p) : strlen(p);
        char comp[NAME_MAX + 1];
        if (clen > NAME_MAX) {
            err = tfile_fail(j, -ENAMETOOLONG, "a component of the name is too long", NULL);
            goto out;
        }
        memcpy(comp, p, clen);
        comp[clen] = '\0';
        const char *after = slash ? slash + 1 : "";
        bool last = true;
        for (const char *a = after; *a; a++)
            last = last && *a == '/';
        memmove(wk.rest, after, strlen(after) + 1);
        if (strcmp(comp, ".") == 0)
            continue;
        struct stat dir;
        if (fstat(wk.cur, &dir) != 0) {
            err = -errno;
            goto out;
        }
        if (!tfile_may(&j->creds, &dir, 1)) {
            err = tfile_fail(j, -EACCES, "the program may not search a directory on the way to it",
                             NULL);
            goto out;
        }
        if (strcmp(comp, "..") == 0) {
            if ((err = tfile_up(&wk)))
                goto out;
            continue;
        }
        int fd = openat(wk.cur, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
            err = tfile_fail(j, -errno, strerror(errno), NULL);
            goto out;
        }
        if (fstat(fd, st) != 0 || (err = tfile_check_fs(j, fd))) {
            err = err ? err : -errno;
            close(fd);
            goto out;
        }
        if (S_ISLNK(st->st_mode)) {
            char after_copy[sizeof(wk.rest)];
            memcpy(after_copy, wk.rest, strlen(wk.rest) + 1);
            err = tfile_follow(&wk, fd, after_copy);
            close(fd);
            if (err)
                goto out;
            continue;
        }
        if (wk.canon_len + 1 + clen >= sizeof(wk.canon)) {
            close(fd);
            err = tfile_fail(j, -ENAMETOOLONG, "the name is too long", NULL);
            goto out;
        }
        wk.canon[wk.canon_len++] = '/';
        memcpy(wk.canon + wk.canon_len, comp, clen + 1);
        wk.canon_len += clen;
        close(wk.cur);
        wk.cur = fd;
        if (last)
            break;
        if (!S_ISDIR(st->st_mode)) {
            err = tfile_fail(j, -ENOTDIR, strerror(ENOTDIR), NULL);
            goto out;
        }
    }
    if (fstat(wk.cur, st) != 0) {
        err = -errno;
        goto out;
    }
    if (S_ISDIR(st->st_mode)) {
        err = tfile_fail(j, -EISDIR, strerror(EISDIR), NULL);
    } else if (!S_ISREG(st->st_mode)) {
        err = tfile_fail(j, -EINVAL, "not a regular file", readfile_kind(st->st_mode));
    } else if ((uint64_t)st->st_size > j->max) {
        snprintf(j->why, sizeof(j->why), "larger than %" PRIu64 " bytes", j->max);
        err = -EFBIG;
    } else if (!tfile_may(&j->creds, st, 4)) {
        err = tfile_fail(j, -EACCES, "the program itself may not read it", NULL);
    }
out:
    if (err) {
        if (!j->why[0])
            snprintf(j->why, sizeof(j->why), "%s", strerror(-err));
        close(wk.cur);
        return err;
    }
    *fd_out = wk.cur;
    return 0;
}

int tfile_open_regular(const char *path, uint64_t want_ino, const dev_t *want_dev)
{
    int opath = open(path, O_PATH | O_CLOEXEC);
    if (opath < 0)
        return -1;
    struct stat st;
    int fd = -1;
    if (fstat(opath, &st) == 0 && S_ISREG(st.st_mode) &&
        (!want_ino || (uint64_t)st.st_ino == want_ino) && (!want_dev || st.st_dev == *want_dev)) {
        char self[64];
        snprintf(self, sizeof(self), "/proc/self/fd/%d", opath);
        fd = open(self, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    }
    close(opath);
    return fd;
}

/* Opens O_PATH descriptor @opath for reading: the same inode, not a name. */
static int tfile_reopen(struct tfile_job *j, int opath)
{
    char self[64];
    snprintf(self, sizeof(self), "/proc/self/fd/%d", opath);
    int fd = open(self, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return tfile_fail(j, -errno, "cannot open it", strerror(errno));
    struct stat a, b;
    if (fstat(fd, &a) != 0 || fstat(opath, &b) != 0 || a.st_ino != b.st_ino ||
        a.st_dev != b.st_dev || !S_ISREG(a.st_mode)) {
        close(fd);
        return tfile_fail(j, -EINVAL, "it changed while it was opened", NULL);
    }
    return fd;
}

static int tfile_slurp(struct tfile_job *j)
{
    char chunk[65536];
    for (;;) {
        ssize_t n = read(j->fd, chunk, sizeof(chunk));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return tfile_fail(j, -errno, "cannot read it", strerror(errno));
        if (n == 0)
            return 0;
        if (buf_len(&j->text) + (size_t)n > j->max) {
            snprintf(j->why, sizeof(j->why), "larger than %" PRIu64 " bytes", j->max);
            return -EFBIG;
        }
        int err = buf_add(&j->text, chunk, (size_t)n);
        if (err)
            return tfile_fail(j, err, err == -ENOMEM ? "out of memory" : "too large", NULL);
    }
}

#ifdef PYPROFD_UNITTEST
_Atomic(void (*)(void)) tfile_test_stall;
#endif

static void *tfile_main(void *arg)
{
    struct tfile_job *j = arg;
    int opath = -1;
#ifdef PYPROFD_UNITTEST
    void (*stall)(void) = atomic_load(&tfile_test_stall);
    if (stall)
        stall();
#endif
    j->rc = tfile_resolve(j, &opath, &j->st);
    if (!j->rc) {
        int fd = tfile_reopen(j, opath);
        if (fd < 0)
            j->rc = fd;
        else
            j->fd = fd;
    }
    if (opath >= 0)
        close(opath);
    if (!j->rc && j->read)
        j->rc = tfile_slurp(j);
    pthread_mutex_lock(&j->mu);
    j->done = true;
    if (j->abandoned)
        atomic_fetch_sub(&tfile_pending_stalled, 1);
    pthread_cond_signal(&j->done_cv);
    pthread_mutex_unlock(&j->mu);
    tfile_job_put(j);
    return NULL;
}

static int tfile_run(const struct tfile_who *w, const char *path, uint64_t max, bool read,
                     struct tfile_job **out, char *why, size_t whylen)
{
    if (w->root_fd < 0 || !w->have_creds) {
        snprintf(why, whylen, "%s", w->why[0] ? w->why : "the program's root is not open");
        return -ENOENT;
    }
    if (atomic_load(&tfile_pending_stalled) >= TFILE_MAX_STALLED) {
        snprintf(why, whylen,
                 "earlier lookups of files are still stalled (a filesystem that "
                 "does not answer)");
        return -EAGAIN;
    }
    struct tfile_job *j = alloc_calloc(1, sizeof(*j));
    if (!j) {
        snprintf(why, whylen, "out of memory");
        return -ENOMEM;
    }
    atomic_init(&j->refs, 2);
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->done_cv, NULL);
    j->fd = -1;
    j->root_fd = fcntl(w->root_fd, F_DUPFD_CLOEXEC, 0);
    j->cwd_fd = w->cwd_fd >= 0 ? fcntl(w->cwd_fd, F_DUPFD_CLOEXEC, 0) : -1;
    j->creds = w->creds;
    memcpy(j->cwd_name, w->cwd_name, sizeof(j->cwd_name));
    j->max = max;
    j->read = read;
    buf_init(&j->text, max > SIZE_MAX - 1 ? SIZE_MAX - 1 : (size_t)max);
    snprintf(j->path, sizeof(j->path), "%s", path);
    if (strlen(path) >= sizeof(j->path)) {
        snprintf(why, whylen, "the name is too long");
        atomic_store(&j->refs, 1);
        tfile_job_put(j);
        return -ENAMETOOLONG;
    }
    pthread_attr_t attr;
    pthread_t t;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 512u << 10); /* the walk's buffers and a read's chunk */
    int err = j->root_fd < 0 ? (errno ? errno : EBADF) : pthread_create(&t, &attr, tfile_main, j);
    pthread_attr_destroy(&attr);
    if (err) {
        snprintf(why, whylen, "cannot start the lookup: %s", strerror(err));
        atomic_store(&j->refs, 1);
        tfile_job_put(j);
        return -err;
    }
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += TFILE_TIMEOUT_MS / 1000;
    deadline.tv_nsec += (long)(TFILE_TIMEOUT_MS % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&j->mu);
    while (!j->done) {
        if (pthread_cond_clockwait(&j->done_cv, &j->mu, CLOCK_MONOTONIC, &deadline) == ETIMEDOUT)
            break;
    }
    bool done = j->done;
    if (!done) { /* left to finish on its own; counted while it is pending */
        j->abandoned = true;
        atomic_fetch_add(&tfile_pending_stalled, 1);
    }
    pthread_mutex_unlock(&j->mu);
    if (!done) {
        snprintf(why, whylen,
                 "its lookup took longer than %u ms (a filesystem that does not "
                 "answer): given up",
                 TFILE_TIMEOUT_MS);
        tfile_job_put(j);
        return -ETIMEDOUT;
    }
    if (j->rc) {
        snprintf(why, whylen, "%s", j->why);
        int rc = j->rc;
        tfile_job_put(j);
        return rc;
    }
    *out = j;
    return 0;
}

int tfile_open(const struct tfile_who *w, const char *path, uint64_t max, int *fd_out,
               struct stat *st, char *why, size_t whylen)
{
    struct tfile_job *j = NULL;
    *fd_out = -1;
    int err = tfile_run(w, path, max, false, &j, why, whylen);
    if (err || !j)
        return err ? err : -EINVAL;
    *fd_out = j->fd;
    j->fd = -1;
    if (st)
        *st = j->st;
    tfile_job_put(j);
    return 0;
}

int tfile_read(const struct tfile_who *w, const char *path, uint64_t max, struct buf *text,
               struct stat *st, char *why, size_t whylen)
{
    struct tfile_job *j = NULL;
    int err = tfile_run(w, path, max, true, &j, why, whylen);
    if (err || !j)
        return err ? err : -EINVAL;
    if (st)
        *st = j->st;
    err = buf_add(text, buf_str(&j->text), buf_len(&j->text));
    if (err)
        snprintf(why, whylen, "%s", err == -ENOMEM ? "out of memory" : "too large");
    tfile_job_put(j);
    return err;
}
