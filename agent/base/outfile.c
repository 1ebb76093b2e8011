/* SPDX-License-Identifier: MIT */
/*
 * outfile.c: output files created so that no planted link redirects them
 * (see outfile.h for the rule).
 */
#include "base/compat.h"

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/outfile.h"
#include "base/rand.h"

/* Names drawn before giving up: each is 64 random bits, so only a directory
 * someone fills with our exact names as fast as we draw them gets here. */
#define OUTFILE_TEMP_TRIES 16

struct outfile {
    int dirfd;    /* owned: the output's directory */
    int fd;       /* owned: the temporary, or the final name when direct */
    FILE *stream; /* owned: outfile_stream()'s, or NULL */
    unsigned flags;
    bool direct;
    int werr;                       /* the first write error (negative errno), or 0 */
    char tmp[OUTFILE_TEMP_LEN + 1]; /* the temporary's name; "" when there is none */
    char name[];                    /* the final name, in dirfd */
};

static const char *outfile_kind(mode_t m)
{
    if (S_ISFIFO(m))
        return "a FIFO";
    if (S_ISSOCK(m))
        return "a socket";
    if (S_ISCHR(m))
        return "a character device";
    if (S_ISBLK(m))
        return "a block device";
    if (S_ISLNK(m))
        return "a symbolic link";
    if (S_ISDIR(m))
        return "a directory";
    return "not a regular file";
}

/*
 * Writes all of @p to @fd, across short writes, EINTR and EAGAIN; 0 or a
 * negative errno (a write that takes nothing is EIO).
 */
static int outfile_write_fd(int fd, const char *p, size_t len)
{
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            /* a descriptor shared with others that set O_NONBLOCK (a
             * non-blocking stdout): wait as a blocking write would */
            struct pollfd pfd = {.fd = fd, .events = POLLOUT};
            if (poll(&pfd, 1, -1) >= 0 || errno == EINTR)
                continue;
        }
        if (w <= 0)
            return w < 0 ? -errno : -EIO;
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

static const char outfile_hex[] = "0123456789abcdef";

/* Creates a temporary under a fresh random name: never opens what exists. */
static int outfile_create_temp(struct outfile *o, mode_t mode, char *why, size_t whylen)
{
    const size_t prefix = sizeof(OUTFILE_TEMP_PREFIX) - 1;
    for (int i = 0; i < OUTFILE_TEMP_TRIES; i++) {
        uint8_t r[8];
        rand_fill_os(r, sizeof(r));
        memcpy(o->tmp, OUTFILE_TEMP_PREFIX, prefix);
        for (size_t k = 0; k < sizeof(r); k++) {
            o->tmp[prefix + 2 * k] = outfile_hex[r[k] >> 4];
            o->tmp[prefix + 2 * k + 1] = outfile_hex[r[k] & 15];
        }
        o->tmp[OUTFILE_TEMP_LEN] = '\0';
        o->fd = openat(o->dirfd, o->tmp,
                       O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, mode);
        if (o->fd >= 0)
            return 0;
        if (errno != EEXIST) {
            int rc = -errno;
            o->tmp[0] = '\0';
            snprintf(why, whylen, "%s", strerror(-rc));
            return rc;
        }
    }
    o->tmp[0] = '\0';
    snprintf(why, whylen, "no free temporary name after %d tries", OUTFILE_TEMP_TRIES);
    return -EEXIST;
}

/* The descriptor of pyprofd's standard output or error when @st is that file, else -1. */
static int outfile_std_fd(const struct stat *st)
{
    for (int fd = STDOUT_FILENO; fd <= STDERR_FILENO; fd++) {
        struct stat s;
        if (fstat(fd, &s) == 0 && s.st_dev == st->st_dev && s.st_ino == st->st_ino)
            return fd;
    }
    return -1;
}

/*
 * Opens the final name itself: @lst (lstat of it) is a device, FIFO, socket
 * or a symbolic link. Never creates anything.
 */
static int outfile_open_direct(struct outfile *o, const struct stat *lst, char *why, size_t whylen)
{
    struct stat st = *lst;
    int oflags = O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
    int rc;
    if (S_ISLNK(lst->st_mode)) {
        if (lst->st_uid != geteuid() && lst->st_uid != 0) {
            snprintf(why, whylen, "a symbolic link owned by uid %u (not yours or root's): refused",
                     (unsigned)lst->st_uid);
            return -EPERM;
        }
        if (fstatat(o->dirfd, o->name, &st, 0) != 0) {
            rc = -errno;
            if (rc == -ENOENT) {
                snprintf(why, whylen, "a symbolic link to nothing: refused (name the file itself)");
                return -ELOOP;
            }
            snprintf(why, whylen, "%s", strerror(-rc));
            return rc;
        }
        int std = outfile_std_fd(&st);
        if (std >= 0) {
            /* /dev/stdout: pyprofd's own descriptor, with its offset and O_APPEND */
            o->fd = fcntl(std, F_DUPFD_CLOEXEC, 3);
            if (o->fd < 0) {
                rc = -errno;
                snprintf(why, whylen, "%s", strerror(-rc));
                return rc;
            }
            o->direct = true;
            return 0;
        }
        if (S_ISDIR(st.st_mode)) {
            snprintf(why, whylen, "%s", strerror(EISDIR));
            return -EISDIR;
        }
        if (S_ISREG(st.st_mode)) {
            snprintf(why, whylen,
                     "a symbolic link to a regular file: refused (name the file itself)");
            return -ELOOP;
        }
    } else {
        oflags |= O_NOFOLLOW; /* it was no link a moment ago: never follow one now */
    }
    /* O_NONBLOCK: a FIFO no process reads fails with ENXIO instead of waiting */
    o->fd = openat(o->dirfd, o->name, oflags);
    if (o->fd < 0) {
        rc = -errno;
        if (rc == -ENXIO && S_ISFIFO(st.st_mode))
            snprintf(why, whylen, "a FIFO that no process reads");
        else if (rc == -ENXIO && S_ISSOCK(st.st_mode))
            snprintf(why, whylen, "a socket: refused");
        else
            snprintf(why, whylen, "%s", strerror(-rc));
        return rc;
    }
    if (fstat(o->fd, &st) != 0) {
        rc = -errno;
        snprintf(why, whylen, "%s", strerror(-rc));
        return rc;
    }
    if (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) {
        snprintf(why, whylen, "changed while it was opened: refused");
        return -EEXIST;
    }
    /* written as any program writes a pipe: waiting for a slow reader */
    int fl = fcntl(o->fd, F_GETFL);
    if (fl < 0 || fcntl(o->fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
        rc = -errno;
        snprintf(why, whylen, "%s", strerror(-rc));
        return rc;
    }
    o->direct = true;
    return 0;
}

/* outfile_openat() with @dirfd taken (closed on failure). */
static int outfile_start(int dirfd, const char *name, mode_t mode, unsigned flags,
                         struct outfile **out, char *why, size_t whylen)
{
    struct stat lst;
    int rc;
    size_t n = strlen(name);
    struct outfile *o = alloc_calloc(1, sizeof(*o) + n + 1);
    if (!o) {
        close(dirfd);
        snprintf(why, whylen, "out of memory");
        return -ENOMEM;
    }
    o->dirfd = dirfd;
    o->fd = -1;
    o->flags = flags;
    memcpy(o->name, name, n + 1);
    if (fstatat(dirfd, name, &lst, AT_SYMLINK_NOFOLLOW) != 0) {
        rc = -errno;
        if (rc == -ENOENT)
            rc = outfile_create_temp(o, mode, why, whylen);
        else
            snprintf(why, whylen, "%s", strerror(-rc));
    } else if (S_ISREG(lst.st_mode)) {
        rc = outfile_create_temp(o, mode, why, whylen); /* renamed over it: never written through */
    } else if (S_ISDIR(lst.st_mode)) {
        rc = -EISDIR;
        snprintf(why, whylen, "%s", strerror(EISDIR));
    } else if (flags & OUTFILE_REGULAR_ONLY) {
        rc = -EEXIST;
        snprintf(why, whylen, "%s, not a regular file: refused", outfile_kind(lst.st_mode));
    } else {
        rc = outfile_open_direct(o, &lst, why, whylen);
    }
    if (rc) {
        (void)outfile_close(o, rc, NULL, 0);
        return rc;
    }
    *out = o;
    return 0;
}

int outfile_openat(int dirfd, const char *name, mode_t mode, unsigned flags, struct outfile **out,
                   char *why, size_t whylen)
{
    *out = NULL;
    if (!name[0] || strchr(name, '/') || strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
        snprintf(why, whylen, "not a file name");
        return -EINVAL;
    }
    int fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
    if (fd < 0) {
        int rc = -errno;
        snprintf(why, whylen, "%s", strerror(-rc));
        return rc;
    }
    return outfile_start(fd, name, mode, flags, out, why, whylen);
}

int outfile_open(const char *path, mode_t mode, unsigned flags, struct outfile **out, char *why,
                 size_t whylen)
{
    char dir[PATH_MAX];
    *out = NULL;
    const char *slash = strrchr(path, '/');
    const char *name = slash ? slash + 1 : path;
    size_t dlen = slash ? (slash == path ? 1 : (size_t)(slash - path)) : 0;
    if (!path[0]) {
        snprintf(why, whylen, "%s", strerror(ENOENT));
        return -ENOENT;
    }
    if (!name[0] || strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
        snprintf(why, whylen, "%s", strerror(EISDIR));
        return -EISDIR;
    }
    if (dlen >= sizeof(dir)) {
        snprintf(why, whylen, "%s", strerror(ENAMETOOLONG));
        return -ENAMETOOLONG;
    }
    if (dlen)
        memcpy(dir, path, dlen);
    else
        dir[dlen++] = '.';
    dir[dlen] = '\0';
    /* the user's own path: resolved as written, links included, once */
    int dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0) {
        int rc = -errno;
        snprintf(why, whylen, "%s", strerror(-rc));
        return rc;
    }
    return outfile_start(dirfd, name, mode, flags, out, why, whylen);
}

static ssize_t outfile_cookie_write(void *cookie, const char *buf, size_t size)
{
    struct outfile *o = cookie;
    if (o->werr)
        return 0;
    int rc = outfile_write_fd(o->fd, buf, size);
    if (rc) {
        o->werr = rc;
        errno = -rc;
        return 0; /* fopencookie(3): 0 is the error */
    }
    return (ssize_t)size;
}

FILE *outfile_stream(struct outfile *o)
{
    if (!o->stream) {
        cookie_io_functions_t io = {.write = outfile_cookie_write};
        o->stream = fopencookie(o, "w", io);
        if (!o->stream)
            errno = ENOMEM;
    }
    return o->stream;
}

int outfile_write(struct outfile *o, const void *p, size_t len)
{
    if (o->werr)
        return o->werr;
    int rc = outfile_write_fd(o->fd, p, len);
    if (rc)
        o->werr = rc;
    return rc;
}

/* Renames the temporary over the final name, if that is still absent or a regular file. */
static int outfile_replace(struct outfile *o, char *why, size_t whylen)
{
    struct stat st;
    if (fstatat(o->dirfd, o->name, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode)) {
        snprintf(why, whylen, "became %s while it was written: refused", outfile_kind(st.st_mode));
        return S_ISDIR(st.st_mode) ? -EISDIR : -EEXIST;
    }
    if (renameat(o->dirfd, o->tmp, o->dirfd, o->name) != 0) {
        int rc = -errno;
        snprintf(why, whylen, "%s", strerror(-rc));
        return rc;
    }
    o->tmp[0] = '\0'; /* it has the final name now */
    return 0;
}

int outfile_close(struct outfile *o, int err, char *why, size_t whylen)
{
    if (!o)
        return err;
    bool said = false;
    char scratch[8];
    if (!why) {
        why = scratch;
        whylen = sizeof(scratch);
    }
    if (o->stream) {
        /* flushes through outfile_cookie_write(), which keeps its error */
        if (fclose(o->stream) != 0 && !o->werr && !err)
            o->werr = -(errno ? errno : EIO);
        o->stream = NULL;
    }
    int rc = o->werr ? o->werr : err;
    if (!rc && !o->direct && (o->flags & OUTFILE_SYNC) && fsync(o->fd) != 0)
        rc = -errno; /* the data is on disk before the name is */
    if (o->fd >= 0 && close(o->fd) != 0 && !rc)
        rc = -errno;
    o->fd = -1;
    if (!rc && !o->direct) {
        rc = outfile_replace(o, why, whylen);
        said = rc != 0;
    }
    if (o->tmp[0])
        (void)unlinkat(o->dirfd, o->tmp, 0);
    if (rc && !said)
        snprintf(why, whylen, "%s", strerror(-rc));
    close(o->dirfd);
    alloc_free(o);
    return rc;
}

bool outfile_is_direct(const struct outfile *o)
{
    return o->direct;
}

bool outfile_is_temp(const char *name)
{
    const size_t prefix = sizeof(OUTFILE_TEMP_PREFIX) - 1;
    if (strncmp(name, OUTFILE_TEMP_PREFIX, prefix) != 0 || strlen(name) != OUTFILE_TEMP_LEN)
        return false;
    for (const char *c = name + prefix; *c; c++)
        if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f')))
            return false;
    return true;
}
