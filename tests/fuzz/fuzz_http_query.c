/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the profile request's query arguments
 * (http_parse_profile_query() in exporters/pull/http_parse.c). The input is
 * split like a query string, on '&' into arguments and on the first '=' into
 * key and value (no '=': a NULL value, as libmicrohttpd reports it); no
 * percent-decoding, since the server hands the parser decoded strings and any
 * byte may appear in them. The first byte picks the maximum seconds.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "exporters/pull/http_parse.h"
#include "pipeline.h"

#define FUZZ_MAX_ARGS 16

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *keys[FUZZ_MAX_ARGS];
    const char *values[FUZZ_MAX_ARGS];
    size_t n = 0;
    uint32_t max_seconds = 3600;
    char *copy = NULL;
    if (size > 0) {
        max_seconds = data[0] < 128 ? 3600 : data[0];
        data++;
        size--;
    }
    copy = alloc_strndup((const char *)data, size);
    if (!copy)
        goto out;
    char *p = copy;
    while (n < FUZZ_MAX_ARGS) {
        char *amp = strchr(p, '&');
        if (amp)
            *amp = '\0';
        char *eq = strchr(p, '=');
        if (eq)
            *eq = '\0';
        keys[n] = p;
        values[n] = eq ? eq + 1 : NULL;
        n++;
        if (!amp)
            break;
        p = amp + 1;
    }
    uint32_t seconds = 0;
    int32_t pid = -1, mode = -2;
    char err[128];
    if (http_parse_profile_query(keys, values, n, max_seconds, &seconds, &pid, &mode, err,
                                 sizeof(err)) == 0) {
        PYPROFD_ASSERT(seconds >= 1 && seconds <= max_seconds);
        PYPROFD_ASSERT(pid >= 0);
        PYPROFD_ASSERT(mode >= -1 && mode < PROFILE_MODES);
    } else {
        PYPROFD_ASSERT(err[0] != '\0' && strlen(err) < sizeof(err));
        PYPROFD_ASSERT(strchr(err, '\n') == NULL);
    }
out:
    alloc_free(copy);
    return 0;
}
