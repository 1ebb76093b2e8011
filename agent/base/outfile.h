/* SPDX-License-Identifier: MIT */
/*
 * outfile.h: how pyprofd creates an output file (record's -o, the agent's
 * storage directory), written once, so that nothing another user planted
 * in the output's directory can redirect the write.
 *
 * The rule (docs/usage.md and docs/agent.md, "How outputs are written"):
 *  - The directory of the output is opened once, its path resolved as the
 *    user wrote it (symbolic links in it included: it is the user's path),
 *    and everything after happens relative to that descriptor.
 *  - The data goes to a new temporary file in that directory, named
 *    OUTFILE_TEMP_PREFIX plus 16 random hex digits, created with
 *    O_CREAT | O_EXCL | O_NOFOLLOW: a name that exists (a planted symbolic
 *    link, hard link, FIFO) is never opened, another name is drawn. Once
 *    written (and flushed, and with OUTFILE_SYNC fsync'ed), it is renamed
 *    over the final name, which is only done when that name is absent or a
 *    regular file: rename replaces a name, never writes through it, so a
 *    hard link there keeps its other names' content.
 *  - A final name that exists and is not a regular file is written directly,
 *    without a temporary (a device such as /dev/null stays one):
 *      - a FIFO, socket, character or block device is opened with O_NONBLOCK
 *        (a FIFO no process reads fails at once with ENXIO instead of
 *        waiting), then written blocking, as any program writes a pipe;
 *      - a symbolic link is followed only when it belongs to the user
 *        pyprofd runs as (its effective uid) or to root (/dev/stdout); a link
 *        owned by anyone else is refused (-EPERM). A followed link that leads
 *        to pyprofd's own standard output or error (/dev/stdout, /dev/fd/1,
 *        /proc/self/fd/1, also when that is a file or pipe) is written
 *        through that descriptor; one that leads to a device, FIFO or socket
 *        is written directly; one that leads to any other regular file, to
 *        nothing or to a directory is refused (-ELOOP, -EISDIR): name the
 *        file itself;
 *      - a directory is refused (-EISDIR).
 *    OUTFILE_REGULAR_ONLY (the storage directory) refuses all of these.
 *  - Errors are the real errno of the call that failed (ENOSPC reads "No
 *    space left on device"), also when the data went through a stdio stream
 *    (outfile_stream() keeps the first write error), with the result of
 *    every flush, fsync and close checked. A failed output leaves no
 *    temporary behind.
 *
 * Errors are a negative errno and a text in the caller's buffer, to follow
 * "cannot write 'PATH': " ("No space left on device", "a symbolic link
 * owned by uid 1000 (not yours or root's): refused").
 *
 * Thread safety: an outfile is one thread's at a time; different outfiles
 * may be used from different threads. outfile_is_temp() is thread-safe.
 */
#ifndef PYPROFD_BASE_OUTFILE_H
#define PYPROFD_BASE_OUTFILE_H

#include "base/compat.h"

#include <sys/types.h>

/** Every temporary's name starts so; 16 lowercase hex digits follow. */
#define OUTFILE_TEMP_PREFIX ".pyprofd-tmp-"
/** The length of a temporary's name (prefix and 16 digits). */
#define OUTFILE_TEMP_LEN (sizeof(OUTFILE_TEMP_PREFIX) - 1 + 16)

enum outfile_open_flags {
    /** fsync() the temporary before it is renamed into place. */
    OUTFILE_SYNC = 1 << 0,
    /** Refuse a final name that exists and is not a regular file (no direct writes). */
    OUTFILE_REGULAR_ONLY = 1 << 1,
};

/** An output being written (opaque). */
struct outfile;

/**
 * Starts writing @a path as the rule above says: opens its directory (the
 * part before the last '/', "." without one), looks at the final name and
 * creates the temporary or opens the final name directly. New files get
 * @a mode (less the umask). Returns 0 with *@a out (finish it with
 * outfile_close()), or a negative errno with the reason in @a why: the
 * error of open/openat/fstatat (strerror() text), -EISDIR (a directory, or
 * a path ending in '/'), -EPERM (a symbolic link someone else owns), -ELOOP
 * (a symbolic link to a regular file or to nothing), -ENXIO (a FIFO no
 * process reads), -EEXIST (not a regular file, with OUTFILE_REGULAR_ONLY),
 * -ENOMEM. Nothing is left behind on failure.
 */
PYPROFD_WARN_UNUSED int outfile_open(const char *path, mode_t mode, unsigned flags,
                                     struct outfile **out, char *why, size_t whylen);

/**
 * Like outfile_open() for the name @a name (no '/') in the directory @a dirfd
 * (borrowed: the outfile keeps its own duplicate, so @a dirfd may be closed
 * at once).
 */
PYPROFD_WARN_UNUSED int outfile_openat(int dirfd, const char *name, mode_t mode, unsigned flags,
                                       struct outfile **out, char *why, size_t whylen);

/**
 * A stdio stream writing @a o (made on the first call; the same one after):
 * the outfile owns it, outfile_close() closes it, never fclose() it. Its
 * write errors are kept (the first one), and outfile_close() reports that
 * errno rather than the EIO a writer checking ferror() can only say. NULL
 * with errno ENOMEM when the stream cannot be made.
 */
FILE *outfile_stream(struct outfile *o);

/**
 * Writes @a len bytes at @a p (all of them, across short writes, EINTR, and
 * EAGAIN: a descriptor someone else made non-blocking, such as a shared
 * stdout, is waited on with poll()).
 * Returns 0, or the negative errno of the write that failed (also kept for
 * outfile_close()). Do not mix with outfile_stream() output.
 */
PYPROFD_WARN_UNUSED int outfile_write(struct outfile *o, const void *p, size_t len);

/**
 * Finishes @a o and frees it (NULL: returns @a err). With @a err 0 (the
 * caller wrote everything): flushes the stream, fsyncs (OUTFILE_SYNC),
 * closes, checks the final name again and renames the temporary over it.
 * With @a err non-zero (the caller's writing failed) or on any failure here:
 * removes the temporary, so the final name keeps what it had. Returns 0 or
 * a negative errno with the reason in @a why: the first write error seen
 * (ENOSPC, EIO, EPIPE...) before @a err, then flush, fsync, close and
 * renameat errors, -EEXIST when the final name became something other than
 * a regular file meanwhile.
 */
int outfile_close(struct outfile *o, int err, char *why, size_t whylen);

/** Whether @a o writes the final name directly (a device, FIFO, stdout). */
bool outfile_is_direct(const struct outfile *o);

/**
 * Whether the directory entry @a name has the shape of one of
 * outfile's temporaries (OUTFILE_TEMP_PREFIX and 16 lowercase hex digits):
 * what a cleanup of leftovers (a crash between create and rename) may remove.
 */
bool outfile_is_temp(const char *name);

#endif /* PYPROFD_BASE_OUTFILE_H */
