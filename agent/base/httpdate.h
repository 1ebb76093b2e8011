/* SPDX-License-Identifier: MIT */
/*
 * httpdate.h: HTTP's dates (RFC 9110 section 5.6.7) and the Retry-After
 * header (section 10.2.3), for every client of pyprofd that is told to wait:
 * the push exporters and the Kubernetes pod-metadata client.
 *
 * A recipient must accept the three forms of HTTP-date:
 *   IMF-fixdate  "Sun, 06 Nov 1994 08:49:37 GMT"
 *   RFC 850      "Sunday, 06-Nov-94 08:49:37 GMT" (a two-digit year is the
 *                one in this century, unless that is more than 50 years
 *                after now: then the one in the last)
 *   asctime      "Sun Nov  6 08:49:37 1994"
 * The weekday is read but not checked against the date (as most clients do).
 *
 * Pure functions on the text they are given (untrusted: any bytes, any
 * length); no allocation; thread-safe.
 */
#ifndef PYPROFD_BASE_HTTPDATE_H
#define PYPROFD_BASE_HTTPDATE_H

#include "base/compat.h"

/**
 * Parses the HTTP-date @a s (surrounding whitespace allowed) into seconds
 * since the epoch in *@a out; @a now_s (seconds since the epoch) places a
 * two-digit year. Returns 0, or -EINVAL (not one of the three forms, or a
 * field out of range).
 */
PYPROFD_WARN_UNUSED int http_date_parse(const char *s, int64_t now_s, int64_t *out);

/**
 * A Retry-After value: delay seconds ("120") or an HTTP-date. Returns the
 * delay in ns from @a now_real_ns (wall clock, ns since the epoch): 0 for a
 * date in the past, a malformed or a NULL value; UINT64_MAX for a delay too
 * long to represent.
 */
uint64_t http_retry_after_ns(const char *value, int64_t now_real_ns);

#endif /* PYPROFD_BASE_HTTPDATE_H */
