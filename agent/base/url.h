/* SPDX-License-Identifier: MIT */
/*
 * url.h: URL text that may be shown. A URL's userinfo may carry a password
 * (https://user:pass@host/); every message, page and printout that quotes a
 * URL pyprofd was given (a remote_write url, the Kubernetes API server)
 * shows it through url_redact(), so the password is written as "<secret>"
 * the way Prometheus prints it, and the user name stays (it is not a
 * secret, and it tells which account is meant).
 *
 * Thread safety: pure functions.
 */
#ifndef PYPROFD_BASE_URL_H
#define PYPROFD_BASE_URL_H

#include "base/compat.h"

/**
 * Writes @a u to @a out (at most @a outlen bytes with the NUL, cut like
 * snprintf) with the password of its userinfo, from the first ':' to the
 * last '@' before the path ('/', '?', '#'), as "<secret>":
 * "http://bob:pw@h/x" gives "http://bob:<secret>@h/x". A URL without
 * "://", or without a ':' in its userinfo, is written as it is. A plain scan
 * that rather hides too much: the URL may be one no parser accepts.
 * Returns the length of the whole result (as snprintf: it was cut when
 * >= @a outlen); a buffer of strlen(@a u) + sizeof("<secret>") bytes
 * always suffices.
 */
size_t url_redact(const char *u, char *out, size_t outlen);

#endif /* PYPROFD_BASE_URL_H */
