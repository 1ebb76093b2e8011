/* SPDX-License-Identifier: MIT */
/*
 * endpoint.h: what every push transport needs to talk to its server with
 * libcurl, taken from one remote_write entry (config/config.h): the URL, TLS
 * (ca_file, cert_file, key_file, server_name, insecure_skip_verify), auth
 * (basic auth and Bearer tokens through libcurl's CURLOPT_USERNAME /
 * CURLOPT_PASSWORD / CURLOPT_XOAUTH2_BEARER, another authorization.type as
 * an "Authorization: <type> <credentials>" header), X-Scope-OrgID from
 * tenant_id, and custom headers (a custom Authorization header wins); a perform that ends a
 * transfer when the engine aborts it (stop() past its deadline); and the HTTP outcome
 * classification the transports share.
 *
 * Secrets given as files (password_file, credentials_file) are re-read on
 * every request (readfile_secret(), base/readfile.h: the reader the config
 * loader checked them with), so rotated secrets are picked up; a file that cannot be read
 * fails the request with PUSH_RETRY and a message naming the file.
 *
 * Thread safety: a struct push_endpoint is immutable after init and may be
 * used by one sender thread; the functions are reentrant.
 */
#ifndef PYPROFD_EXPORTERS_PUSH_ENDPOINT_H
#define PYPROFD_EXPORTERS_PUSH_ENDPOINT_H

#include "base/compat.h"

#include <curl/curl.h>

#include "base/labels.h"
#include "config/config.h"
#include "exporters/push/push.h"

/** A copy of one remote_write entry's connection settings. Strings owned, NULL when unset. */
struct push_endpoint {
    char *name;
    char *url; /* without a trailing '/' */
    char *tenant_id;
    struct labels headers;
    char *basic_user, *basic_password, *basic_password_file;
    char *auth_type, *auth_credentials, *auth_credentials_file;
    char *ca_file, *cert_file, *key_file, *server_name;
    bool insecure_skip_verify;
    /* private: with server_name, the CURLOPT_CONNECT_TO entry mapping
     * server_name:port to the URL's host:port (see push_endpoint_url()) */
    struct curl_slist *connect_to;
    char *host_header; /* private: "Host: <the URL's host[:port]>" with server_name */
};

/** Copies @a rw's settings into @a e. Returns 0 or -ENOMEM (@a e then released). */
PYPROFD_WARN_UNUSED int push_endpoint_init(struct push_endpoint *e,
                                           const struct config_remote_write *rw);
/** Frees; a zeroed struct is a no-op. */
void push_endpoint_release(struct push_endpoint *e);

/**
 * Applies TLS options, auth and custom headers to easy handle @a h, appending
 * headers to *@a hdrs (the caller frees the list with curl_slist_free_all and
 * sets CURLOPT_HTTPHEADER itself after adding its own). Returns 0, or a
 * negative errno with @a err set (a secret file unreadable: -errno of the read).
 */
PYPROFD_WARN_UNUSED int push_endpoint_apply(const struct push_endpoint *e, CURL *h,
                                            struct curl_slist **hdrs, char *err, size_t errlen);

/**
 * Writes the URL for @a path (starting with '/', may carry a query) on
 * endpoint @a e into @a buf: the configured URL plus @a path, except that
 * with tls_config.server_name the host is replaced by server_name, so that
 * libcurl sends it as SNI and checks the certificate against it, while
 * push_endpoint_apply()'s CURLOPT_CONNECT_TO entry still connects to the
 * configured host (and a Host header names the configured host). Transports
 * should build their URLs with this. Returns 0, -ENAMETOOLONG (@a buf too
 * small) or -EINVAL.
 */
PYPROFD_WARN_UNUSED int push_endpoint_url(const struct push_endpoint *e, const char *path,
                                          char *buf, size_t len);

/**
 * Parses a Retry-After value: delay seconds ("120") or an HTTP-date ("Wed,
 * 21 Oct 2015 07:28:00 GMT", also the RFC 850 and asctime forms). Returns the
 * delay in ns from @a now_real_ns (0 for a date in the past, a malformed or a
 * NULL value).
 */
uint64_t push_parse_retry_after(const char *value, int64_t now_real_ns);

/**
 * Runs the transfer set up on easy handle @a h, like curl_easy_perform(), but
 * through the transport's multi handle @a m (kept across calls, so its
 * connection cache lets the next request reuse the connection) and ending it
 * early when @a r's abort callback (push.h) says so: the callback is asked
 * between waits of at most PUSH_ABORT_POLL_MS, and from libcurl's progress
 * callback (CURLOPT_XFERINFOFUNCTION, installed here) while data flows.
 * The caller's CURLOPT_TIMEOUT_MS still applies. @a h must not be in a multi
 * handle; it is taken out again before return, and its transfer info
 * (CURLINFO_*, curl_easy_header()) stays readable. Returns the transfer's
 * result, CURLE_ABORTED_BY_CALLBACK when aborted, or CURLE_OUT_OF_MEMORY /
 * CURLE_FAILED_INIT when the multi handle fails.
 */
CURLcode push_endpoint_perform(CURLM *m, CURL *h, const struct push_request *r);

/**
 * Classifies an HTTP exchange: @a rc the curl result, @a status the HTTP
 * status (0 if none), @a body the response body (may be NULL; used as the
 * message, cut to fit), @a retry_after the Retry-After header value (may be
 * NULL; seconds or an HTTP-date). 2xx is PUSH_OK; 408, 429, 5xx and curl
 * errors are PUSH_RETRY, except the local, permanent curl errors (a URL or
 * protocol libcurl cannot use, a TLS file it cannot load, a feature it was
 * built without), which are PUSH_DROP like every other status.
 * res->code is the HTTP status ("503"), or for a curl error "timeout",
 * "connect" (connection refused, name not resolved), "tls" (handshake,
 * verification), "send", "recv", "aborted" (push_endpoint_perform() gave up
 * at the abort), "url" (CURLE_URL_MALFORMAT, CURLE_UNSUPPORTED_PROTOCOL),
 * "tls_config" (CURLE_SSL_CACERT_BADFILE, CURLE_SSL_CERTPROBLEM, ...) or
 * "curl_<n>"; res->message the body's printable text or curl's message.
 */
void push_classify_http(CURLcode rc, long status, const char *body, const char *retry_after,
                        int64_t now_real_ns, struct push_result *res);

#endif /* PYPROFD_EXPORTERS_PUSH_ENDPOINT_H */
