/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: everything the push exporters parse from a server's reply.
 * The first byte picks the parser, the rest is the reply text:
 *   0  Parca: grpc-status, grpc-message and Retry-After values (the first
 *      three lines), the rest as the body, then the classification of the
 *      whole reply;
 *   1  Pyroscope: a Connect error body (JSON);
 *   2  Retry-After values (seconds or an HTTP-date) and push_classify_http;
 *   3  grpc-message percent-decoding into a small buffer.
 * Each must accept any bytes without reading or writing out of bounds.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "exporters/parca/parca.h"
#include "exporters/push/endpoint.h"
#include "exporters/pyroscope/pyroscope.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_parca(char *text, size_t len)
{
    /* the first three lines are grpc-status, grpc-message and Retry-After as
     * libcurl's header API gives them (a missing line is an absent header);
     * the rest is the body */
    const char *values[3] = {NULL, NULL, NULL};
    size_t i = 0;
    for (int k = 0; k < 3 && i < len; k++) {
        char *nl = memchr(text + i, '\n', len - i);
        size_t end = nl ? (size_t)(nl - text) : len;
        text[end] = '\0';
        values[k] = text + i;
        i = end < len ? end + 1 : len;
    }
    struct parca_reply rep;
    parca_reply_init(&rep);
    parca_reply_values(&rep, values[0], values[1], values[2]);
    if (i < len)
        parca_reply_body(&rep, text + i, len - i);
    PYPROFD_ASSERT(strlen(rep.grpc_message) < sizeof(rep.grpc_message));
    struct push_result res;
    memset(&res, 0, sizeof(res));
    parca_classify(CURLE_OK, "", CURL_HTTP_VERSION_2_0, &rep, 1700000000000000000ll, &res);
    PYPROFD_ASSERT(res.outcome == PUSH_OK || res.outcome == PUSH_RETRY || res.outcome == PUSH_DROP);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    unsigned which = data[0] % 4;
    char *text = alloc_strndup((const char *)data + 1, size - 1);
    if (!text)
        return 0;
    size_t len = size - 1;
    struct push_result res;
    memset(&res, 0, sizeof(res));
    switch (which) {
    case 0:
        fuzz_parca(text, len);
        break;
    case 1:
        pyroscope_connect_error(text, &res);
        break;
    case 2:
        (void)push_parse_retry_after(text, 1700000000000000000ll);
        push_classify_http(CURLE_OK, 503, text, text, 1700000000000000000ll, &res);
        break;
    default: {
        char out[16];
        size_t n = parca_percent_decode(text, len, out, sizeof(out));
        PYPROFD_ASSERT(n < sizeof(out));
        break;
    }
    }
    alloc_free(text);
    return 0;
}
