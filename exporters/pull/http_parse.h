/* SPDX-License-Identifier: MIT */
/*
 * http_parse.h: the pull server's parsers (exporters/pull/http_server.c uses
 * them): decimal integers, the query arguments of /debug/pprof/profile and
 * the "host:port" listen address. Pure functions of their arguments, no
 * state: thread-safe.
 */
#ifndef PYPROFD_EXPORTERS_PULL_HTTP_PARSE_H
#define PYPROFD_EXPORTERS_PULL_HTTP_PARSE_H

#include "base/compat.h"

/**
 * A decimal integer of 1..@a maxdigits (<= 19) digits without sign or
 * spaces, @a s (NULL: false), into @a out. Returns whether it is one.
 */
bool http_parse_uint(const char *s, size_t maxdigits, uint64_t *out);

/**
 * Parses the query arguments of a profile request, a pure function (fuzzed
 * by tests/fuzz/fuzz_http_query.c). @a keys / @a values are the @a n decoded
 * pairs in request order; a value may be NULL (a key without '='). Unknown
 * keys are ignored. seconds must be a decimal integer in 1..@a max_seconds
 * (default HTTP_SERVER_DEFAULT_SECONDS, capped at @a max_seconds), pid a
 * decimal integer in 1..INT32_MAX, mode a profile mode's name (wall, cpu,
 * gil, exception); no sign, no spaces, each key at most once. Returns 0 and
 * fills @a seconds, @a pid (0 when absent) and @a mode (an enum
 * profile_mode, -1 when absent), or -EINVAL with a one-line message (no
 * newline) in @a err.
 */
PYPROFD_WARN_UNUSED int http_parse_profile_query(const char *const *keys, const char *const *values,
                                                 size_t n, uint32_t max_seconds, uint32_t *seconds,
                                                 int32_t *pid, int32_t *mode, char *err,
                                                 size_t err_size);

/**
 * Splits the listen address @a addr, "host:port" or "[IPv6]:port", into
 * @a host (of @a host_size; "" for all interfaces) and @a port (of
 * @a port_size; the decimal port, 0..65535). Returns 0, or -EINVAL with a
 * one-line message in @a err (of @a err_size).
 */
PYPROFD_WARN_UNUSED int http_parse_address(const char *addr, char *host, size_t host_size,
                                           char *port, size_t port_size, char *err,
                                           size_t err_size);

#endif /* PYPROFD_EXPORTERS_PULL_HTTP_PARSE_H */
