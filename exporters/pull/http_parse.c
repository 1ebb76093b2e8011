/* SPDX-License-Identifier: MIT */
/*
 * http_parse.c: the HTTP server's parsers of what a client or the
 * configuration writes (see http_parse.h): decimal integers (Content-Length,
 * ports, query values), the profile request's query arguments and the listen
 * address. Pure functions, moved out of http_server.c; the query parser is
 * fuzzed by tests/fuzz/fuzz_http_query.c.
 */
#include "base/compat.h"

#include "exporters/pull/http_parse.h"
#include "exporters/pull/http_server.h"
#include "pipeline.h"

bool http_parse_uint(const char *s, size_t maxdigits, uint64_t *out)
{
    uint64_t v = 0;
    size_t i = 0;
    if (!s)
        return false;
    for (; s[i]; i++) {
        if (s[i] < '0' || s[i] > '9' || i >= maxdigits)
            return false;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    *out = v;
    return i > 0;
}

int http_parse_profile_query(const char *const *keys, const char *const *values, size_t n,
                             uint32_t max_seconds, uint32_t *seconds, int32_t *pid, int32_t *mode,
                             char *err, size_t err_size)
{
    int rc = 0;
    bool have_seconds = false;
    bool have_pid = false;
    bool have_mode = false;
    enum profile_mode m = PROFILE_WALL;
    uint32_t sec =
        HTTP_SERVER_DEFAULT_SECONDS < max_seconds ? HTTP_SERVER_DEFAULT_SECONDS : max_seconds;
    int32_t p = 0;
    if (err_size > 0)
        err[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        uint64_t v = 0;
        if (!keys[i])
            continue;
        if (strcmp(keys[i], "seconds") == 0) {
            if (have_seconds) {
                snprintf(err, err_size, "seconds given more than once");
                rc = -EINVAL;
                goto out;
            }
            have_seconds = true;
            if (!http_parse_uint(values[i], 10, &v) || v < 1 || v > max_seconds) {
                snprintf(err, err_size, "seconds must be an integer from 1 to %" PRIu32,
                         max_seconds);
                rc = -EINVAL;
                goto out;
            }
            sec = (uint32_t)v;
        } else if (strcmp(keys[i], "pid") == 0) {
            if (have_pid) {
                snprintf(err, err_size, "pid given more than once");
                rc = -EINVAL;
                goto out;
            }
            have_pid = true;
            if (!http_parse_uint(values[i], 10, &v) || v < 1 || v > INT32_MAX) {
                snprintf(err, err_size, "pid must be a positive integer");
                rc = -EINVAL;
                goto out;
            }
            p = (int32_t)v;
        } else if (strcmp(keys[i], "mode") == 0) {
            if (have_mode) {
                snprintf(err, err_size, "mode given more than once");
                rc = -EINVAL;
                goto out;
            }
            have_mode = true;
            if (!values[i] || profile_mode_parse(values[i], &m)) {
                snprintf(err, err_size, "mode must be wall, cpu, gil or exception");
                rc = -EINVAL;
                goto out;
            }
        }
    }
    if (sec < 1) {
        snprintf(err, err_size, "profiles are disabled (maximum 0 seconds)");
        rc = -EINVAL;
        goto out;
    }
    *seconds = sec;
    *pid = p;
    *mode = have_mode ? (int32_t)m : -1;
out:
    return rc;
}

int http_parse_address(const char *addr, char *host, size_t host_size, char *port, size_t port_size,
                       char *err, size_t err_size)
{
    int rc = -EINVAL;
    const char *hs = addr;
    const char *he;
    const char *ps;
    uint64_t v = 0;
    if (addr[0] == '[') {
        hs = addr + 1;
        he = strchr(hs, ']');
        if (!he || he[1] != ':') {
            snprintf(err, err_size, "listen address %s: expected [IPv6]:port", addr);
            goto out;
        }
        ps = he + 2;
    } else {
        he = strrchr(addr, ':');
        if (!he) {
            snprintf(err, err_size, "listen address %s: missing port (host:port)", addr);
            goto out;
        }
        if (memchr(addr, ':', (size_t)(he - addr))) {
            snprintf(err, err_size, "listen address %s: put IPv6 addresses in brackets", addr);
            goto out;
        }
        ps = he + 1;
    }
    if (!http_parse_uint(ps, 5, &v) || v > 65535) {
        snprintf(err, err_size, "listen address %s: port must be a number from 0 to 65535", addr);
        goto out;
    }
    if ((size_t)(he - hs) >= host_size) {
        snprintf(err, err_size, "listen address %s: host name too long", addr);
        goto out;
    }
    memcpy(host, hs, (size_t)(he - hs));
    host[he - hs] = '\0';
    snprintf(port, port_size, "%u", (unsigned)v);
    rc = 0;
out:
    return rc;
}
