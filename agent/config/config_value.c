/* SPDX-License-Identifier: MIT */
/*
 * config_value.c: the value types of the schema that need more than a
 * scan (see config_value.h): URLs (CONFIG_T_URL) checked by libcurl's
 * parser, the one that will use them, and shown without their password;
 * files (CONFIG_T_FILE, CONFIG_T_SECRET_FILE) opened or read as they will
 * be used.
 */
#include "base/compat.h"

#include <ctype.h>
#include <unistd.h>

#include <curl/curl.h>

#include "base/alloc.h"
#include "base/readfile.h"
#include "base/url.h"
#include "config/config_value.h"

/*
 * The scheme and the bytes
 * are checked here; the rest is left to libcurl's URL parser, the one that
 * will use the URL, so that what it refuses is refused at load and never
 * tried and retried at every push: a bad port, and above all a missing host
 * ("http://:4040", which "http://${UNSET}:4040" expands to).
 */
int config_value_url_check(const char *u, const char **problem_out, char *buf, size_t len)
{
    const char *problem = NULL;
    char *host = NULL;
    size_t skip;
    int rc_out = 0;
    *problem_out = NULL;
    if (strncasecmp(u, "http://", 7) == 0)
        skip = 7;
    else if (strncasecmp(u, "https://", 8) == 0)
        skip = 8;
    else
        skip = 0;
    if (!skip) {
        *problem_out = "is not an http:// or https:// URL";
        return 0;
    }
    if (!u[skip] || u[skip] == '/' || u[skip] == '?' || u[skip] == '#') {
        *problem_out = "has no host";
        return 0;
    }
    for (const unsigned char *p = (const unsigned char *)u; *p; p++) {
        if (*p <= ' ' || *p == 0x7f) {
            *problem_out = "is not an http:// or https:// URL (spaces and control characters "
                           "are not allowed)";
            return 0;
        }
    }
    CURLU *cu = curl_url();
    if (!cu)
        return -ENOMEM;
    CURLUcode rc = curl_url_set(cu, CURLUPART_URL, u, 0);
    if (rc == CURLUE_OK)
        rc = curl_url_get(cu, CURLUPART_HOST, &host, 0);
    if (rc == CURLUE_OK && !host[0])
        rc = CURLUE_NO_HOST;
    if (rc == CURLUE_OUT_OF_MEMORY) {
        rc_out = -ENOMEM;
    } else if (rc == CURLUE_NO_HOST) {
        problem = "has no host";
    } else if (rc != CURLUE_OK) {
        /* libcurl's message, in the house style: lower case, no full stop */
        snprintf(buf, len, "is not a valid URL: %s", curl_url_strerror(rc));
        size_t n = strlen(buf);
        const size_t at = strlen("is not a valid URL: ");
        if (n > at)
            buf[at] = (char)tolower((unsigned char)buf[at]);
        if (n > 0 && buf[n - 1] == '.')
            buf[n - 1] = '\0';
        problem = buf;
    }
    curl_free(host);
    curl_url_cleanup(cu);
    *problem_out = problem;
    return rc_out;
}

/*
 * libcurl's URL API splits and rebuilds the URL, so what is hidden is what
 * libcurl would send as the password. Should that fail (out of memory), the
 * password is hidden by url_redact() instead; it is never shown.
 */
int config_value_url_shown(const char *url, char **shown)
{
    char *pw = NULL, *full = NULL;
    CURLU *u = NULL;
    CURLUcode rc = CURLUE_NO_PASSWORD;
    *shown = NULL;
    if (strchr(url, '@')) {
        u = curl_url();
        rc = u ? curl_url_set(u, CURLUPART_URL, url, 0) : CURLUE_OUT_OF_MEMORY;
        if (rc == CURLUE_OK)
            rc = curl_url_get(u, CURLUPART_PASSWORD, &pw, 0);
        if (rc == CURLUE_OK)
            rc = curl_url_set(u, CURLUPART_PASSWORD, "<secret>", 0);
        if (rc == CURLUE_OK)
            rc = curl_url_get(u, CURLUPART_URL, &full, 0);
    }
    if (rc == CURLUE_OK) {
        *shown = alloc_strdup(full);
    } else if (rc == CURLUE_NO_PASSWORD) {
        *shown = alloc_strdup(url);
    } else {
        size_t len = strlen(url) + sizeof("<secret>");
        *shown = alloc_malloc(len);
        if (*shown)
            url_redact(url, *shown, len);
    }
    curl_free(full);
    if (pw)
        explicit_bzero(pw, strlen(pw));
    curl_free(pw);
    curl_url_cleanup(u);
    return *shown ? 0 : -ENOMEM;
}

int config_value_check_file(const char *path, bool secret, char *err, size_t errlen)
{
    int fd = -1, rc;
    if (secret) {
        char *s = NULL;
        rc = readfile_secret(path, &s, err, errlen);
        if (s) {
            explicit_bzero(s, strlen(s));
            alloc_free(s);
        }
    } else {
        char why[128];
        rc = readfile_open(path, &fd, why, sizeof(why));
        if (fd >= 0)
            close(fd);
        snprintf(err, errlen, "cannot read '%s': %s", path, why);
    }
    return rc;
}
