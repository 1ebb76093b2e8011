/* SPDX-License-Identifier: MIT */
/*
 * file_store.c: profile files written through base/outfile.h, relative to
 * the storage directory held open, with retention (see file_store.h).
 */
#include "base/compat.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/outfile.h"
#include "exporters/file/file_store.h"

#define FILE_STORE_SWEEP_NS    10000000000ull /* retention is checked at most this often */
#define FILE_STORE_MAX_FILES   100000u        /* files looked at per sweep */
#define FILE_STORE_SUFFIX      ".pb.gz"
#define FILE_STORE_STALE_TMP_S 60 /* a temporary older than this was left by a crash */

struct file_store {
    char *dir;
    int dirfd; /* the directory, opened once (-1 until it could be) */
    uint64_t retention_ns;
    uint64_t max_bytes;
    uint64_t last_sweep;
    bool warned_write, warned_dir;
    _Atomic uint64_t written, write_errors, deleted, bytes_written;
};

struct file_entry {
    char name[256];
    int64_t mtime_ns;
    uint64_t size;
};

void file_store_name(const char *job, int pid, int64_t time_nanos, char *buf, size_t len)
{
    char safe[64];
    size_t n = 0;
    for (const char *c = job && job[0] ? job : "profile"; *c && n < sizeof(safe) - 1; c++) {
        bool ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                  (*c >= '0' && *c <= '9') || *c == '_' || *c == '.' || *c == '-';
        safe[n++] = ok ? *c : '_';
    }
    safe[n] = '\0';
    if (safe[0] == '.')
        safe[0] = '_'; /* never a hidden file */
    time_t secs = (time_t)(time_nanos / 1000000000ll);
    struct tm tm;
    gmtime_r(&secs, &tm);
    char stamp[32];
    strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%S", &tm);
    snprintf(buf, len, "%s-%d-%s.%03dZ%s", safe, pid, stamp, (int)((time_nanos / 1000000ll) % 1000),
             FILE_STORE_SUFFIX);
}

/* mkdir -p */
static int file_store_mkdirs(const char *path)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof(tmp), "%s", path) >= (int)sizeof(tmp))
        return -ENAMETOOLONG;
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(tmp, 0755) && errno != EEXIST)
            return -errno;
        *p = '/';
    }
    if (mkdir(tmp, 0755) && errno != EEXIST)
        return -errno;
    return 0;
}

/*
 * Opens the directory (made first, with its parents) for good. Its own name
 * must not be a symbolic link (-ELOOP): that is what someone who could write
 * its parent would plant; the parents are the configured path, resolved as
 * written.
 */
static int file_store_open_dir(struct file_store *fs)
{
    int err = file_store_mkdirs(fs->dir);
    if (err)
        return err;
    int fd = open(fs->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        struct stat st;
        err = -errno;
        return lstat(fs->dir, &st) == 0 && S_ISLNK(st.st_mode) ? -ELOOP : err;
    }
    fs->dirfd = fd;
    return 0;
}

/* The directory, opened again if it was removed (a held descriptor would write nowhere). */
static int file_store_dir(struct file_store *fs)
{
    struct stat st;
    if (fs->dirfd >= 0 && fstat(fs->dirfd, &st) == 0 && st.st_nlink > 0)
        return 0;
    if (fs->dirfd >= 0)
        close(fs->dirfd);
    fs->dirfd = -1;
    return file_store_open_dir(fs);
}

/* Whether @p..@p+n are all decimal digits. */
static bool file_store_digits(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return false;
    }
    return true;
}

/*
 * Whether @name is one of ours: JOB-PID-YYYYMMDDTHHMMSS.mmmZ.pb.gz with JOB as
 * file_store_name() writes it. Anything else in the directory is never
 * touched, even a *.pb.gz.
 */
static bool file_store_ours(const char *name)
{
    static const char tail[] = "-YYYYMMDDTHHMMSS.mmmZ" FILE_STORE_SUFFIX;
    size_t n = strlen(name), t = sizeof(tail) - 1;
    if (name[0] == '.' || n <= t + 2)
        return false;
    const char *s = name + n - t; /* "-20261129T175323.123Z.pb.gz" */
    if (s[0] != '-' || !file_store_digits(s + 1, 8) || s[9] != 'T' ||
        !file_store_digits(s + 10, 6) || s[16] != '.' || !file_store_digits(s + 17, 3) ||
        strcmp(s + 20, "Z" FILE_STORE_SUFFIX) != 0)
        return false;
    /* before it: JOB-PID */
    const char *p = s;
    size_t digits = 0;
    while (p > name && p[-1] >= '0' && p[-1] <= '9') {
        p--;
        digits++;
    }
    if (digits == 0 || p - name < 2 || p[-1] != '-')
        return false;
    for (const char *c = name; c < p - 1; c++) {
        bool ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                  (*c >= '0' && *c <= '9') || *c == '_' || *c == '.' || *c == '-';
        if (!ok)
            return false;
    }
    return true;
}

static int file_entry_cmp(const void *a, const void *b)
{
    const struct file_entry *x = a, *y = b;
    return (x->mtime_ns > y->mtime_ns) - (x->mtime_ns < y->mtime_ns);
}

/* Deletes what retention says must go: too old, then oldest first while over the size. */
static void file_store_sweep(struct file_store *fs)
{
    /* a descriptor of its own: readdir() moves its offset */
    int fd = openat(fs->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return;
    }
    struct file_entry *e = alloc_calloc(FILE_STORE_MAX_FILES, sizeof(*e));
    size_t n = 0;
    struct dirent *de;
    const int64_t now = clock_real_now();
    while (e && (de = readdir(d)) != NULL && n < FILE_STORE_MAX_FILES) {
        struct stat st;
        /* a temporary left by a crash (ours are renamed within a write); the
         * ".tmp-NAME" ones are from versions before base/outfile.h */
        bool temp = outfile_is_temp(de->d_name) ||
                    (strncmp(de->d_name, ".tmp-", 5) == 0 && file_store_ours(de->d_name + 5));
        if (temp && fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISREG(st.st_mode) &&
            now / 1000000000ll - st.st_mtim.tv_sec > FILE_STORE_STALE_TMP_S) {
            if (unlinkat(dirfd(d), de->d_name, 0) == 0)
                atomic_fetch_add(&fs->deleted, 1);
            continue;
        }
        if (!file_store_ours(de->d_name) || strlen(de->d_name) >= sizeof(e[n].name) ||
            fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
            continue;
        snprintf(e[n].name, sizeof(e[n].name), "%s", de->d_name);
        e[n].mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000ll + st.st_mtim.tv_nsec;
        e[n].size = (uint64_t)st.st_size;
        n++;
    }
    if (e) {
        qsort(e, n, sizeof(*e), file_entry_cmp);
        int64_t cutoff =
            now - (int64_t)(fs->retention_ns > INT64_MAX ? INT64_MAX : fs->retention_ns);
        uint64_t total = 0;
        for (size_t i = 0; i < n; i++)
            total += e[i].size;
        for (size_t i = 0; i < n; i++) {
            bool old = fs->retention_ns && e[i].mtime_ns < cutoff;
            bool over = fs->max_bytes && total > fs->max_bytes;
            if (!old && !over)
                break; /* sorted oldest first: the rest are newer and fit */
            if (unlinkat(dirfd(d), e[i].name, 0) == 0) {
                total -= e[i].size;
                atomic_fetch_add(&fs->deleted, 1);
            }
        }
    }
    alloc_free(e);
    closedir(d);
}

static int file_store_push(void *ctx, const struct export_profile *p)
{
    struct file_store *fs = ctx;
    char name[256], why[256];
    struct outfile *of = NULL;
    file_store_name(p->meta->job, p->meta->pid, p->meta->time_nanos, name, sizeof(name));
    int err = file_store_dir(fs);
    if (err) {
        if (!fs->warned_dir && err == -ELOOP)
            log_error("cannot use storage directory '%s': a symbolic link: refused (name the "
                      "directory it points to)",
                      fs->dir);
        else if (!fs->warned_dir)
            log_error("cannot create storage directory '%s': %s", fs->dir, strerror(-err));
        fs->warned_dir = true;
        atomic_fetch_add(&fs->write_errors, 1);
        return err;
    }
    fs->warned_dir = false;
    /* a temporary under a random name, fsync'ed, renamed over NAME; a NAME
     * that is not a regular file (a planted link) is refused */
    err = outfile_openat(fs->dirfd, name, 0644, OUTFILE_SYNC | OUTFILE_REGULAR_ONLY, &of, why,
                         sizeof(why));
    if (!err) {
        err = outfile_write(of, p->pprof, p->len);
        err = outfile_close(of, err, why, sizeof(why));
    }
    if (err)
        goto fail;
    atomic_fetch_add(&fs->written, 1);
    atomic_fetch_add(&fs->bytes_written, p->len);
    fs->warned_write = false;
    uint64_t now = clock_mono_now();
    if (now - fs->last_sweep >= FILE_STORE_SWEEP_NS || fs->last_sweep == 0) {
        fs->last_sweep = now;
        file_store_sweep(fs);
    }
    return 0;
fail:
    atomic_fetch_add(&fs->write_errors, 1);
    if (!fs->warned_write)
        log_error("cannot write profile '%s/%s': %s", fs->dir, name, why);
    fs->warned_write = true;
    /* a full disk is when retention matters most: apply it on failure too */
    uint64_t mono = clock_mono_now();
    if (mono - fs->last_sweep >= FILE_STORE_SWEEP_NS || fs->last_sweep == 0) {
        fs->last_sweep = mono;
        file_store_sweep(fs);
    }
    return err;
}

static int file_store_metrics(void *ctx, struct promtext *w)
{
    struct file_store *fs = ctx;
    int err = promtext_family(w, "pyprofd_storage_files_written_total", PROMTEXT_COUNTER,
                              "Profile files written to storage.directory.");
    if (!err)
        err = promtext_sample(w, NULL, NULL, 0, (double)atomic_load(&fs->written));
    if (!err)
        err = promtext_family(w, "pyprofd_storage_written_bytes_total", PROMTEXT_COUNTER,
                              "Bytes of profile files written to storage.directory.");
    if (!err)
        err = promtext_sample(w, NULL, NULL, 0, (double)atomic_load(&fs->bytes_written));
    if (!err)
        err = promtext_family(w, "pyprofd_storage_write_errors_total", PROMTEXT_COUNTER,
                              "Profiles that could not be written to storage.directory.");
    if (!err)
        err = promtext_sample(w, NULL, NULL, 0, (double)atomic_load(&fs->write_errors));
    if (!err)
        err = promtext_family(w, "pyprofd_storage_files_deleted_total", PROMTEXT_COUNTER,
                              "Profile files deleted by storage.retention and storage.max_bytes.");
    if (!err)
        err = promtext_sample(w, NULL, NULL, 0, (double)atomic_load(&fs->deleted));
    return err;
}

static void file_store_shutdown(void *ctx, uint64_t deadline_ns)
{
    (void)ctx; /* every push is synchronous: nothing is pending */
    (void)deadline_ns;
}

static void file_store_free(void *ctx)
{
    struct file_store *fs = ctx;
    if (!fs)
        return;
    if (fs->dirfd >= 0)
        close(fs->dirfd);
    alloc_free(fs->dir);
    alloc_free(fs);
}

static const struct exporter_ops file_store_ops = {
    .kind = "file",
    .push = file_store_push,
    .metrics = file_store_metrics,
    .shutdown = file_store_shutdown,
    .free = file_store_free,
};

int file_store_new(const char *directory, uint64_t retention_ns, uint64_t max_bytes,
                   struct exporter *out)
{
    if (!directory || !directory[0])
        return -EINVAL;
    struct file_store *fs = alloc_calloc(1, sizeof(*fs));
    if (!fs)
        return -ENOMEM;
    fs->dir = alloc_strdup(directory);
    if (!fs->dir) {
        alloc_free(fs);
        return -ENOMEM;
    }
    size_t n = strlen(fs->dir);
    while (n > 1 && fs->dir[n - 1] == '/')
        fs->dir[--n] = '\0';
    fs->retention_ns = retention_ns;
    fs->max_bytes = max_bytes;
    fs->dirfd = -1;
    /* held from the start; a symbolic link is refused now, other failures
     * (not there yet, read-only) are retried at every write */
    int err = file_store_open_dir(fs);
    if (err == -ELOOP) {
        file_store_free(fs);
        return err;
    }
    out->ops = &file_store_ops;
    out->ctx = fs;
    return 0;
}
