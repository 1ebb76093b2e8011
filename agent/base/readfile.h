/* SPDX-License-Identifier: MIT */
/*
 * readfile.h: how pyprofd opens and reads a file someone else wrote and
 * named to it (the config file, a secret file, a TLS file, a service
 * account's token), written once. The open never blocks: open(2) of a FIFO
 * waits for a writer, and a daemon that does it with its signals blocked
 * (cli/agent.c takes them with sigwait) cannot even be stopped. So the file
 * is opened with O_NONBLOCK, looked at with fstat(), and anything but a
 * regular file is refused before a byte is read. Reads are bounded.
 *
 * Errors are a negative errno and a text in the caller's buffer, in the
 * house style ("cannot read '/p': No such file or directory").
 *
 * The small files pyprofd reads itself, mostly the kernel's (/proc/PID/stat,
 * status, auxv, a sysctl), go through readfile_into(): into the caller's
 * buffer, bounded, NUL-terminated, allocating nothing, with the same open
 * that never blocks; per process and per scan it can skip the fstat() (a
 * file the kernel serves is never a FIFO, and its size reads as 0: only
 * reading it says how long it is).
 *
 * Thread safety: every function is thread-safe (no state).
 */
#ifndef PYPROFD_BASE_READFILE_H
#define PYPROFD_BASE_READFILE_H

#include "base/compat.h"

#include <sys/types.h>

/**
 * Opens @a path for reading: O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC,
 * so that the open never blocks (a FIFO's waits for a writer), then
 * fstat(): anything but a regular file is refused before it is read.
 * O_NONBLOCK is left set (it changes nothing for a regular file).
 * Returns 0 with *@a fd_out (caller closes), or a negative errno with the reason
 * in @a why: open()'s error (strerror() text), -EISDIR for a directory, or
 * -EINVAL for a FIFO, socket or device ("not a regular file (a FIFO)").
 */
PYPROFD_WARN_UNUSED int readfile_open(const char *path, int *fd_out, char *why, size_t whylen);

/**
 * Reads all of @a path, opened with readfile_open(), when it holds at most
 * @a max bytes. Returns 0 with *@a out (NUL-terminated, *@a len bytes; caller
 * frees with alloc_free()), or a negative errno with the reason in @a why:
 * readfile_open()'s, read()'s, -EFBIG ("larger than MAX bytes") or -ENOMEM.
 * What was read before a failure is wiped (it may have been a secret).
 */
PYPROFD_WARN_UNUSED int readfile_all(const char *path, size_t max, char **out, size_t *len,
                                     char *why, size_t whylen);

/** readfile_into()'s flags. */
enum readfile_into_flags {
    /*
     * A file the kernel serves (under /proc or /sys) at a path pyprofd builds
     * itself: opened without readfile_open()'s fstat() and type check (one
     * system call fewer where /proc is read per process and scan), and with
     * O_NOFOLLOW (no such file is a link). O_NONBLOCK still keeps the open
     * and the reads from waiting.
     */
    READFILE_INTO_KERNEL = 1 << 0,
    /*
     * One read(2): a /proc file of one record (stat, status, a sysctl) comes
     * whole from one read that has room for it (the kernel writes such a file
     * at once), so a second read, which would only see its end, is saved.
     */
    READFILE_INTO_ONCE = 1 << 1,
    /* A file under /proc/PID: ENOENT at the open reads as -ESRCH (the process is gone). */
    READFILE_INTO_GONE = 1 << 2,
};

/**
 * Reads the small file @a path into the caller's @a buf of @a cap bytes (at
 * least 1; 0 is -EINVAL): at most @a cap - 1 bytes, then a NUL; *@a len is the number of
 * bytes read. Allocates nothing. The open never blocks (O_NONBLOCK, as
 * readfile_open(), whose type check refuses anything but a regular file
 * unless READFILE_INTO_KERNEL); the reads go on until the file ends or the
 * buffer is full (a longer file is cut: *@a len == @a cap - 1 says it may
 * have been), or stop after one with READFILE_INTO_ONCE. Returns 0, or a
 * negative errno: open()'s (-ENOENT as -ESRCH with READFILE_INTO_GONE),
 * -EISDIR or -EINVAL as readfile_open(), or read()'s (-ESRCH for a /proc/PID
 * file whose process exited meanwhile), with *@a len and @a buf holding what
 * was read before it. No text: every caller says what it was reading.
 *
 * Thread-safe; @a buf is the caller's.
 */
PYPROFD_WARN_UNUSED int readfile_into(const char *path, char *buf, size_t cap, size_t *len,
                                      unsigned flags);

/**
 * readfile_into() of @a path relative to the directory @a dirfd (openat(2)
 * rules; AT_FDCWD is readfile_into()): for a caller that holds /proc/PID
 * open and reads several files of it.
 */
PYPROFD_WARN_UNUSED int readfile_into_at(int dirfd, const char *path, char *buf, size_t cap,
                                         size_t *len, unsigned flags);

/**
 * The reads of readfile_into(), for a caller with its own descriptor and
 * buffer (one it grows): reads @a fd into @a buf until it holds @a cap bytes
 * or the file ends (a read of 0; EINTR is retried), adding no NUL. Returns 0
 * with *@a len (less than @a cap: the end was reached), or read()'s negative
 * errno with *@a len what was read before it.
 */
PYPROFD_WARN_UNUSED int readfile_fill(int fd, void *buf, size_t cap, size_t *len);

/** What a file of mode @a m is, in words for a refusal: "a FIFO", "a socket", ... */
const char *readfile_kind(mode_t m);

/** The longest secret file read (password_file, credentials_file, a bearer token). */
#define READFILE_SECRET_MAX 65536

/**
 * Reads the secret file @a path (a remote_write password_file or
 * credentials_file, at load and for every request; the Kubernetes bearer
 * token): opened with readfile_open(), at most READFILE_SECRET_MAX bytes,
 * surrounding whitespace (space, tab, CR, LF) removed (as Prometheus does:
 * the final newline of a file written by an editor or `echo` is not part of
 * the secret). A control character left inside is refused: it could end an
 * Authorization header line and start another. Returns 0 with a
 * NUL-terminated copy in *@a out (possibly ""; caller wipes, then frees with
 * alloc_free()), or a negative errno with the whole message in @a err
 * ("cannot read '/p': No such file or directory", "cannot use '/p': control
 * character in the secret"): readfile_open()'s or read()'s error, -EFBIG,
 * -EINVAL (also for a control character), -ENOMEM.
 */
PYPROFD_WARN_UNUSED int readfile_secret(const char *path, char **out, char *err, size_t errlen);

#endif /* PYPROFD_BASE_READFILE_H */
