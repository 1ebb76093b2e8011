/* SPDX-License-Identifier: MIT */
/*
 * readfile.c: opening and reading the files pyprofd is pointed at (see
 * readfile.h), never waiting on one.
 */
#include "base/compat.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/readfile.h"

const char *readfile_kind(mode_t m)
{
    if (S_ISFIFO(m))
        return "a FIFO";
    if (S_ISSOCK(m))
        return "a socket";
    if (S_ISCHR(m))
        return "a character device";
    if (S_ISBLK(m))
        return "a block device";
    return "not a plain file";
}

/* readfile_open() of @path relative to @dirfd. */
static int readfile_open_at(int dirfd, const char *path, int *fd_out, char *why, size_t whylen)
{
    struct stat st;
    int rc;
    *fd_out = -1;
    /*
     * O_NONBLOCK stays set for the reads: it changes nothing for a regular
     * file on a disk, and makes the few regular files whose reads can wait
     * forever (/proc/kmsg) fail with EAGAIN instead.
     */
    int fd = openat(dirfd, path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) != 0) {
        rc = -errno;
        snprintf(why, whylen, "%s", strerror(-rc));
        goto fail;
    }
    if (S_ISDIR(st.st_mode)) {
        rc = -EISDIR;
        snprintf(why, whylen, "%s", strerror(EISDIR));
        goto fail;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = -EINVAL;
        snprintf(why, whylen, "not a regular file (%s)", readfile_kind(st.st_mode));
        goto fail;
    }
    *fd_out = fd;
    return 0;
fail:
    if (fd >= 0)
        close(fd);
    return rc;
}

int readfile_open(const char *path, int *fd_out, char *why, size_t whylen)
{
    return readfile_open_at(AT_FDCWD, path, fd_out, why, whylen);
}

int readfile_fill(int fd, void *buf, size_t cap, size_t *len)
{
    char *p = buf;
    size_t n = 0;
    int rc = 0;
    while (n < cap) {
        ssize_t r = read(fd, p + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rc = -errno;
            break;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    *len = n;
    return rc;
}

int readfile_into_at(int dirfd, const char *path, char *buf, size_t cap, size_t *len,
                     unsigned flags)
{
    int fd = -1, rc = 0;
    *len = 0;
    if (cap == 0)
        return -EINVAL;
    buf[0] = '\0';
    if (flags & READFILE_INTO_KERNEL) {
        fd = openat(dirfd, path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | O_NOFOLLOW);
        rc = fd < 0 ? -errno : 0;
    } else {
        rc = readfile_open_at(dirfd, path, &fd, NULL, 0);
    }
    if (rc)
        return rc == -ENOENT && (flags & READFILE_INTO_GONE) ? -ESRCH : rc;
    if (flags & READFILE_INTO_ONCE) {
        ssize_t r;
        do {
            r = read(fd, buf, cap - 1);
        } while (r < 0 && errno == EINTR);
        rc = r < 0 ? -errno : 0;
        *len = r > 0 ? (size_t)r : 0;
    } else {
        rc = readfile_fill(fd, buf, cap - 1, len);
    }
    buf[*len] = '\0';
    close(fd);
    return rc;
}

int readfile_into(const char *path, char *buf, size_t cap, size_t *len, unsigned flags)
{
    return readfile_into_at(AT_FDCWD, path, buf, cap, len, flags);
}

int readfile_all(const char *path, size_t max, char **out, size_t *len, char *why, size_t whylen)
{
    char *buf = NULL;
    size_t n = 0;
    int fd;
    *out = NULL;
    *len = 0;
    int rc = readfile_open(path, &fd, why, whylen);
    if (rc)
        return rc;
    /* one byte past the cap tells "too large" from "exactly max" */
    buf = alloc_malloc(max + 2);
    if (!buf) {
        rc = -ENOMEM;
        snprintf(why, whylen, "out of memory");
        goto out;
    }
    for (;;) {
        ssize_t r = read(fd, buf + n, max + 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rc = -errno;
            snprintf(why, whylen, "%s", strerror(errno));
            goto out;
        }
        if (r == 0)
            break;
        n += (size_t)r;
        if (n > max) {
            rc = -EFBIG;
            snprintf(why, whylen, "larger than %zu bytes", max);
            goto out;
        }
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    buf = NULL;
out:
    if (buf) {
        explicit_bzero(buf, max + 2); /* it may have been a secret */
        alloc_free(buf);
    }
    close(fd);
    return rc;
}

int readfile_secret(const char *path, char **out, char *err, size_t errlen)
{
    char why[128];
    char *buf = NULL;
    size_t n = 0;
    *out = NULL;
    int rc = readfile_all(path, READFILE_SECRET_MAX, &buf, &n, why, sizeof(why));
    if (!rc && !buf) { /* not on success; said for the analyzer */
        rc = -EIO;
        snprintf(why, sizeof(why), "%s", strerror(EIO));
    }
    if (rc) {
        snprintf(err, errlen, "cannot read '%s': %s", path, why);
        return rc;
    }
    size_t a = 0, len = n;
    while (a < len && (buf[a] == ' ' || buf[a] == '\t' || buf[a] == '\r' || buf[a] == '\n'))
        a++;
    while (len > a && (buf[len - 1] == ' ' || buf[len - 1] == '\t' || buf[len - 1] == '\r' ||
                       buf[len - 1] == '\n'))
        len--;
    for (size_t i = a; i < len; i++) {
        unsigned char c = (unsigned char)buf[i];
        if (c < 0x20 || c == 0x7f) {
            snprintf(err, errlen, "cannot use '%s': control character in the secret", path);
            explicit_bzero(buf, n);
            alloc_free(buf);
            return -EINVAL;
        }
    }
    memmove(buf, buf + a, len - a);
    explicit_bzero(buf + (len - a), n - (len - a)); /* the moved-from tail */
    buf[len - a] = '\0';
    *out = buf;
    return 0;
}
