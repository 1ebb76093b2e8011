/* SPDX-License-Identifier: MIT */
/*
 * duration.c: Prometheus durations ("1h30m", "500ms", "0") and sizes ("4MB",
 * "512KiB") for the config loader (config.h). Durations follow the grammar of
 * Prometheus' model.ParseDuration: integers only, units y w d h m s ms from
 * largest to smallest, each at most once, a bare "0" without unit; the result
 * must fit a signed 64-bit count of nanoseconds, as in Prometheus. Sizes use
 * powers of 1024 whether written KB or KiB, as Prometheus' <size> does.
 */
#include "base/compat.h"

#include "config/config.h"

#define NS_PER_MS 1000000ull

struct duration_unit {
    const char *name;
    uint64_t ms;
};

/* Largest first: the order the grammar requires. */
static const struct duration_unit duration_units[] = {
    {"y", 365ull * 24 * 3600 * 1000},
    {"w", 7ull * 24 * 3600 * 1000},
    {"d", 24ull * 3600 * 1000},
    {"h", 3600ull * 1000},
    {"m", 60ull * 1000},
    {"s", 1000},
    {"ms", 1},
};

int config_parse_duration(const char *s, uint64_t *out_ns)
{
    uint64_t total_ms = 0;
    size_t next_unit = 0; /* units before this index were used or skipped */
    const char *p = s;
    int rc = 0;
    if (!s || !*s)
        return -EINVAL;
    if (strcmp(s, "0") == 0) {
        *out_ns = 0;
        return 0;
    }
    while (*p) {
        uint64_t n = 0;
        const char *digits = p;
        while (*p >= '0' && *p <= '9') {
            unsigned d = (unsigned)(*p - '0');
            if (n > (UINT64_MAX - d) / 10) {
                rc = -ERANGE;
                goto out;
            }
            n = n * 10 + d;
            p++;
        }
        if (p == digits) {
            rc = -EINVAL;
            goto out;
        }
        /* "ms" must be tried before "m". */
        size_t u, ulen = 0;
        for (u = next_unit; u < PYPROFD_ARRAY_SIZE(duration_units); u++) {
            ulen = strlen(duration_units[u].name);
            if (strncmp(p, duration_units[u].name, ulen) == 0 &&
                !(u == 4 && p[1] == 's')) /* "m" followed by "s" is "ms" */
                break;
        }
        if (u == PYPROFD_ARRAY_SIZE(duration_units)) {
            rc = -EINVAL; /* unknown unit, repeated unit or wrong order */
            goto out;
        }
        p += ulen;
        next_unit = u + 1;
        uint64_t ms = duration_units[u].ms;
        if (n > UINT64_MAX / ms || total_ms > UINT64_MAX - n * ms) {
            rc = -ERANGE;
            goto out;
        }
        total_ms += n * ms;
    }
    if (total_ms > (uint64_t)INT64_MAX / NS_PER_MS) {
        rc = -ERANGE;
        goto out;
    }
    *out_ns = total_ms * NS_PER_MS;
out:
    return rc;
}

void config_format_duration(uint64_t ns, char *buf, size_t len)
{
    uint64_t ms = ns / NS_PER_MS;
    size_t used = 0;
    if (!len)
        return;
    buf[0] = '\0';
    if (ms == 0) {
        snprintf(buf, len, "0s");
        return;
    }
    for (size_t u = 0; u < PYPROFD_ARRAY_SIZE(duration_units); u++) {
        uint64_t mult = duration_units[u].ms;
        /* Years and weeks only when exact: "90d" reads better than "12w6d". */
        if (u < 2 && ms % mult != 0)
            continue;
        uint64_t v = ms / mult;
        if (!v)
            continue;
        int n = snprintf(buf + used, len - used, "%" PRIu64 "%s", v, duration_units[u].name);
        if (n < 0 || (size_t)n >= len - used)
            return; /* truncated; buf stays NUL-terminated */
        used += (size_t)n;
        ms -= v * mult;
    }
}

struct size_unit {
    const char *name;
    unsigned shift;
};

static const struct size_unit size_units[] = {
    {"B", 0},   {"KB", 10},  {"KiB", 10}, {"MB", 20},  {"MiB", 20}, {"GB", 30},  {"GiB", 30},
    {"TB", 40}, {"TiB", 40}, {"PB", 50},  {"PiB", 50}, {"EB", 60},  {"EiB", 60},
};

int config_parse_size(const char *s, uint64_t *out_bytes)
{
    uint64_t n = 0;
    const char *p = s;
    if (!s)
        return -EINVAL;
    while (*p >= '0' && *p <= '9') {
        unsigned d = (unsigned)(*p - '0');
        if (n > (UINT64_MAX - d) / 10)
            return -ERANGE;
        n = n * 10 + d;
        p++;
    }
    if (p == s)
        return -EINVAL;
    for (size_t u = 0; u < PYPROFD_ARRAY_SIZE(size_units); u++) {
        if (strcmp(p, size_units[u].name) != 0)
            continue;
        unsigned shift = size_units[u].shift;
        if (shift && n > (UINT64_MAX >> shift))
            return -ERANGE;
        *out_bytes = n << shift;
        return 0;
    }
    return -EINVAL;
}

void config_format_size(uint64_t bytes, char *buf, size_t len)
{
    static const char *const names[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    size_t u = 0;
    while (u + 1 < PYPROFD_ARRAY_SIZE(names) && bytes && bytes % 1024 == 0) {
        bytes /= 1024;
        u++;
    }
    snprintf(buf, len, "%" PRIu64 "%s", bytes, names[u]);
}
