/* SPDX-License-Identifier: MIT */
/*
 * curlopt.h: the libcurl options every pyprofd client sets, written once
 * for the three of them (the Kubernetes client, discovery/kube_transport.c;
 * the Pyroscope and Parca exporters): only http and https are spoken, so a
 * URL from a config or a server can never make libcurl open a file://,
 * dict://, gopher:// ... transfer. Set after every curl_easy_reset().
 *
 * Header only: base/ links no libcurl. The functions are static inline, so
 * only a caller (which links libcurl) uses libcurl's symbols; the header
 * needs libcurl's headers (<curl/curl.h>, a system include) to compile.
 *
 * Thread safety: as libcurl's: one easy handle per thread at a time.
 */
#ifndef PYPROFD_BASE_CURLOPT_H
#define PYPROFD_BASE_CURLOPT_H

#include "base/compat.h"

#include <curl/curl.h>

/**
 * Restricts easy handle @a h to http and https (CURLOPT_PROTOCOLS_STR from
 * libcurl 7.85, CURLOPT_PROTOCOLS before it). Returns libcurl's result.
 */
static inline CURLcode curlopt_http_only(CURL *h)
{
#if LIBCURL_VERSION_NUM >= 0x075500
    return curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
#else
    return curl_easy_setopt(h, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
}

#endif /* PYPROFD_BASE_CURLOPT_H */
