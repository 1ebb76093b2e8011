/* SPDX-License-Identifier: MIT */
/*
 * endpoint.h: what every push transport needs to talk to its server with
 * libcurl, taken from one remote_write entry (config/config.h): the URL, TLS
 * (ca_file, cert_file, key_file, server_name, insecure_skip_verify), auth
 * (basic auth, an Authorization header, X-Scope-OrgID from tenant_id) and
 * custom headers; and the HTTP outcome classification the transports share.
 *
 * Secrets given as files (password_file, credentials_file) are re-read on
 * every request, so rotated secrets are picked up; a file that cannot be read
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
 * Classifies an HTTP exchange: @a rc the curl result, @a status the HTTP
 * status (0 if none), @a body the response body (may be NULL; used as the
 * message, cut to fit), @a retry_after the Retry-After header value (may be
 * NULL; seconds or an HTTP-date). Connection errors, timeouts, 408, 429, 5xx
 * are PUSH_RETRY; 2xx PUSH_OK; everything else PUSH_DROP.
 */
void push_classify_http(CURLcode rc, long status, const char *body, const char *retry_after,
                        int64_t now_real_ns, struct push_result *res);

#endif /* PYPROFD_EXPORTERS_PUSH_ENDPOINT_H */
