/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the request-head scanner (http_head_scan() in
 * exporters/pull/http_gate.c), which sees every byte a client sends before a
 * request reaches libmicrohttpd. The first input byte picks where to split
 * the rest: the scanner is incremental, so scanning in two pieces must give
 * the verdict (and head length) of scanning in one; a complete head ends
 * inside the input, and a malformed one says why.
 */
#include "base/compat.h"

#include "exporters/pull/http_gate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    size_t split = data[0] % size;
    const char *s = (const char *)data + 1;
    size--;
    if (split > size)
        split = size;

    struct http_head_scan whole = {0};
    size_t end_whole = 0;
    enum http_head_result r_whole = http_head_scan(&whole, s, size, &end_whole);

    struct http_head_scan parts = {0};
    size_t end_parts = 0;
    enum http_head_result r_parts = http_head_scan(&parts, s, split, &end_parts);
    if (r_parts == HTTP_HEAD_MORE)
        r_parts = http_head_scan(&parts, s + split, size - split, &end_parts);

    PYPROFD_ASSERT(r_whole == r_parts);
    PYPROFD_ASSERT((r_whole == HTTP_HEAD_BAD) == (whole.why != NULL));
    PYPROFD_ASSERT(whole.why == parts.why);
    if (r_whole == HTTP_HEAD_DONE) {
        PYPROFD_ASSERT(end_whole == end_parts);
        PYPROFD_ASSERT(end_whole >= 4 && end_whole <= size);
        PYPROFD_ASSERT(s[end_whole - 1] == '\n');
    }
    return 0;
}
