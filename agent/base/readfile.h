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
