/* SPDX-License-Identifier: MIT */
/*
 * tfile.h: opening a file that a profiled process names (a source file in
 * its co_filename, a separate debug file its library points to), as that
 * process could open it, and never in a way that can wait, have a side
 * effect or leave its filesystem. Every such open in pyprofd goes through
 * here.
 *
 * The rules, in the order they apply:
 *   - the name is resolved below the target's own root (/proc/PID/root, held
 *     open), a relative one from its working directory; symbolic links are
 *     followed one component at a time and never leave that root ("/" and
 *     ".." stop at it), at most TFILE_MAX_LINKS of them;
 *   - at every directory, the target's credentials must have search
 *     permission, and at the end read permission: its filesystem uid, gid
 *     and groups against the owner, group and mode bits, with its
 *     CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH when it holds them in our
 *     user namespace (POSIX ACLs are not read: a file that an ACL alone
 *     opens to the target is refused, and one that an ACL alone closes to
 *     it is not noticed);
 *   - every step is an O_PATH open, which never opens the file itself: a
 *     FIFO, socket or device is refused by its type before anything opens
 *     it, as is anything on procfs or sysfs (their "self" is pyprofd, and
 *     nothing there is a source or a debug file), and a file over the
 *     caller's size cap;
 *   - only then is the file opened for reading, by its O_PATH descriptor
 *     (the same inode, whatever was renamed meanwhile);
 *   - all of this happens on a short-lived thread of its own, which the
 *     caller waits for at most TFILE_TIMEOUT_MS: a stalled filesystem (a
 *     network or FUSE mount that stops answering) costs the caller that
 *     long once, and the stalled thread is left to finish on its own. While
 *     TFILE_MAX_STALLED of them are pending, opens fail at once.
 *
 * Errors: negative errno with a reason in the caller's buffer: -ENOENT and
 * the other errors of a lookup, -EACCES (the target may not reach or read
 * it), -EINVAL (not a regular file, or on procfs/sysfs; the reason says
 * which), -EFBIG (over the size cap), -ELOOP, -ENAMETOOLONG, -ETIMEDOUT
 * (the lookup stalled), -EAGAIN (too many stalled lookups pending), -ENOMEM.
 *
 * Thread safety: a struct tfile_who is read-only once opened and may be
 * used by several threads at once; tfile_who_open()/tfile_who_close() are
 * its owner's.
 */
#ifndef PYPROFD_BASE_TFILE_H
#define PYPROFD_BASE_TFILE_H

#include "base/compat.h"

#include <limits.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "base/buf.h"

#define TFILE_GROUPS      64u   /* supplementary groups of the target looked at */
#define TFILE_MAX_LINKS   40u   /* symbolic links followed in one name (as the kernel) */
#define TFILE_TIMEOUT_MS  1000u /* how long one open may take before it is given up */
#define TFILE_MAX_STALLED 4u    /* given-up opens still pending before opens fail at once */

/** A process's file-access credentials, as /proc/PID/status gives them. */
struct tfile_creds {
    uint32_t fsuid, fsgid;
    uint32_t groups[TFILE_GROUPS];
    size_t ngroups;
    bool dac_override, dac_read_search; /* in its effective capabilities */
};

/**
 * Parses the text of a /proc/PID/status file (@a len bytes, not necessarily
 * NUL-terminated) into @a out: the Uid and Gid lines' fourth field (the
 * filesystem ids), Groups (the first TFILE_GROUPS) and CapEff. Returns 0,
 * or -EINVAL when a Uid, Gid or CapEff line is missing or malformed. Pure.
 */
PYPROFD_WARN_UNUSED int tfile_parse_status(const char *text, size_t len, struct tfile_creds *out);

/**
 * Whether @a c may open a file with @a st: @a want is 4 (read), 1 (search
 * a directory) or 2 (write), as access(2)'s R_OK, X_OK, W_OK. Pure.
 */
bool tfile_may(const struct tfile_creds *c, const struct stat *st, int want);

/**
 * Whom a name is resolved for: a target's root and working directory, held
 * open, and its credentials. An embeddable value; its fields are private.
 */
struct tfile_who {
    int root_fd, cwd_fd; /* O_PATH descriptors; -1 when not open */
    bool have_creds;
    struct tfile_creds creds;
    char cwd_name[PATH_MAX]; /* the working directory's name below the root, or "" */
    char why[256];           /* why root_fd or the credentials are missing */
};

/**
 * Opens the root and working directory of process @a pid (its /proc files
 * under @a proc_root, NULL: "/proc") and reads its credentials now: names are
 * resolved as this process saw them at this moment, even after it exits.
 * Credentials from another user namespace are kept without their
 * capabilities. Returns 0, or a negative errno with @a w's reason set
 * (tfile_open() then refuses every name with that reason); either way @a w
 * must be closed with tfile_who_close().
 */
int tfile_who_open(const char *proc_root, pid_t pid, struct tfile_who *w);

/** A struct tfile_who that holds nothing: closing it is a no-op. */
#define TFILE_WHO_INIT                                                                             \
    {                                                                                              \
        .root_fd = -1, .cwd_fd = -1                                                                \
    }

/** Closes what tfile_who_open() opened; a closed or TFILE_WHO_INIT @a w is a no-op. */
void tfile_who_close(struct tfile_who *w);

/**
 * Opens @a path (absolute: below the target's root; relative: from its
 * working directory) for reading as the rules above say, when it is a
 * regular file of at most @a max bytes. Returns 0 with *@a fd_out (O_RDONLY,
 * O_CLOEXEC; the caller closes it) and its *@a st (may be NULL), or a
 * negative errno with the reason in @a why (see the top of this file).
 * Creates and joins a thread: not for a per-sample path.
 */
PYPROFD_WARN_UNUSED int tfile_open(const struct tfile_who *w, const char *path, uint64_t max,
                                   int *fd_out, struct stat *st, char *why, size_t whylen);

/**
 * As tfile_open(), and reads the whole file into @a text (appended; its cap
 * applies too), on the same thread and within the same time bound: a file
 * whose reads stall is given up as its open would be. *@a st (may be NULL)
 * identifies the file read (st_dev, st_ino). Returns 0 or a negative errno
 * with the reason in @a why: tfile_open()'s, read()'s, -EFBIG, -ENOMEM.
 */
PYPROFD_WARN_UNUSED int tfile_read(const struct tfile_who *w, const char *path, uint64_t max,
                                   struct buf *text, struct stat *st, char *why, size_t whylen);

/**
 * Opens @a path, a name pyprofd built to reach a file the target maps (under
 * /proc/PID/map_files or /proc/PID/root), for reading only when it is a
 * regular file, and, when @a want_ino is not 0, that inode; when @a want_dev
 * is not NULL, on that device. The name is looked at through an O_PATH
 * descriptor first, so a FIFO or a device under it is never opened, then the
 * file is opened by that descriptor (the same inode). Returns a descriptor
 * (O_RDONLY | O_NONBLOCK | O_CLOEXEC; the caller closes it) or -1. No thread,
 * no time bound: for names whose every step the kernel resolves in /proc.
 */
int tfile_open_regular(const char *path, uint64_t want_ino, const dev_t *want_dev);

/** How many given-up opens are still pending (stalled), for a self-metric. */
unsigned tfile_stalled(void);

#ifdef PYPROFD_UNITTEST
#include <stdatomic.h>
/** Tests only: called on the lookup's thread before it starts (a stalled filesystem). */
extern _Atomic(void (*)(void)) tfile_test_stall;
#endif

#endif /* PYPROFD_BASE_TFILE_H */
