/* SPDX-License-Identifier: MIT */
/*
 * endpoint.c: connection settings of one push endpoint applied to a libcurl
 * handle (TLS, auth through libcurl's own options, tenant, custom headers,
 * secrets re-read per request),
 * a transfer that ends early when the exporter stops (push_endpoint_perform),
 * and the shared classification of HTTP outcomes (see endpoint.h).
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/httpdate.h"
#include "base/readfile.h"
#include "exporters/push/endpoint.h"

static int endpoint_dup(char **dst, const char *src)
{
    *dst = NULL;
    if (!src)
        return 0;
    *dst = alloc_strdup(src);
    return *dst ? 0 : -ENOMEM;
}

static void endpoint_free_secret(char *s)
{
    if (s) {
        explicit_bzero(s, strlen(s));
        alloc_free(s);
    }
}

/* Builds the CONNECT_TO entry and Host header for tls_config.server_name. */
static int endpoint_server_name(struct push_endpoint *e)
{
    int err = -EINVAL;
    char *host = NULL, *port = NULL;
    char buf[1024];
    CURLU *u = curl_url();
    if (!u)
        return -ENOMEM;
    if (curl_url_set(u, CURLUPART_URL, e->url, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK)
        goto out;
    int n = snprintf(buf, sizeof(buf), "%s:%s:%s:%s", e->server_name, port, host, port);
    if (n < 0 || (size_t)n >= sizeof(buf))
        goto out;
    err = -ENOMEM;
    e->connect_to = curl_slist_append(NULL, buf);
    if (!e->connect_to)
        goto out;
    bool dflt = (strncmp(e->url, "https:", 6) == 0 && strcmp(port, "443") == 0) ||
                (strncmp(e->url, "http:", 5) == 0 && strcmp(port, "80") == 0);
    n = dflt ? snprintf(buf, sizeof(buf), "Host: %s", host)
             : snprintf(buf, sizeof(buf), "Host: %s:%s", host, port);
    err = -EINVAL;
    if (n < 0 || (size_t)n >= sizeof(buf))
        goto out;
    err = endpoint_dup(&e->host_header, buf);
out:
    curl_free(host);
    curl_free(port);
    curl_url_cleanup(u);
    return err;
}

int push_endpoint_init(struct push_endpoint *e, const struct config_remote_write *rw)
{
    memset(e, 0, sizeof(*e));
    int err = endpoint_dup(&e->name, rw->name);
    if (!err)
        err = endpoint_dup(&e->url, rw->url);
    if (!err)
        err = endpoint_dup(&e->tenant_id, rw->tenant_id);
    if (!err)
        err = labels_copy(&e->headers, &rw->headers);
    if (!err)
        err = endpoint_dup(&e->basic_user, rw->basic_auth_username);
    if (!err)
        err = endpoint_dup(&e->basic_password, rw->basic_auth_password);
    if (!err)
        err = endpoint_dup(&e->basic_password_file, rw->basic_auth_password_file);
    if (!err)
        err = endpoint_dup(&e->auth_type, rw->authorization_type);
    if (!err)
        err = endpoint_dup(&e->auth_credentials, rw->authorization_credentials);
    if (!err)
        err = endpoint_dup(&e->auth_credentials_file, rw->authorization_credentials_file);
    if (!err)
        err = endpoint_dup(&e->ca_file, rw->tls_ca_file);
    if (!err)
        err = endpoint_dup(&e->cert_file, rw->tls_cert_file);
    if (!err)
        err = endpoint_dup(&e->key_file, rw->tls_key_file);
    if (!err)
        err = endpoint_dup(&e->server_name, rw->tls_server_name);
    e->insecure_skip_verify = rw->tls_insecure_skip_verify;
    if (!err && !e->url)
        err = -EINVAL;
    if (!err) {
        size_t n = strlen(e->url);
        while (n > 0 && e->url[n - 1] == '/')
            e->url[--n] = '\0';
    }
    if (!err && e->server_name && e->server_name[0])
        err = endpoint_server_name(e);
    if (err)
        push_endpoint_release(e);
    return err;
}

void push_endpoint_release(struct push_endpoint *e)
{
    alloc_free(e->name);
    alloc_free(e->url);
    alloc_free(e->tenant_id);
    labels_release(&e->headers);
    alloc_free(e->basic_user);
    endpoint_free_secret(e->basic_password);
    alloc_free(e->basic_password_file);
    alloc_free(e->auth_type);
    endpoint_free_secret(e->auth_credentials);
    alloc_free(e->auth_credentials_file);
    alloc_free(e->ca_file);
    alloc_free(e->cert_file);
    alloc_free(e->key_file);
    alloc_free(e->server_name);
    curl_slist_free_all(e->connect_to);
    alloc_free(e->host_header);
    memset(e, 0, sizeof(*e));
}

int push_endpoint_url(const struct push_endpoint *e, const char *path, char *buf, size_t len)
{
    int err = 0;
    int n;
    if (!e->connect_to) {
        n = snprintf(buf, len, "%s%s", e->url, path);
        return n < 0 ? -EINVAL : (size_t)n >= len ? -ENAMETOOLONG : 0;
    }
    char *full = NULL;
    CURLU *u = curl_url();
    if (!u)
        return -ENOMEM;
    err = -EINVAL;
    if (curl_url_set(u, CURLUPART_URL, e->url, 0) != CURLUE_OK ||
        curl_url_set(u, CURLUPART_HOST, e->server_name, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_URL, &full, 0) != CURLUE_OK)
        goto out;
    size_t fl = strlen(full);
    while (fl > 0 && full[fl - 1] == '/')
        full[--fl] = '\0';
    n = snprintf(buf, len, "%s%s", full, path);
    err = n < 0 ? -EINVAL : (size_t)n >= len ? -ENAMETOOLONG : 0;
out:
    curl_free(full);
    curl_url_cleanup(u);
    return err;
}

/* Appends "Name: value" to *hdrs. */
static int endpoint_header(struct curl_slist **hdrs, const char *name, const char *value)
{
    size_t len = strlen(name) + strlen(value) + 3;
    char *h = alloc_malloc(len);
    if (!h)
        return -ENOMEM;
    snprintf(h, len, "%s: %s", name, value);
    struct curl_slist *l = curl_slist_append(*hdrs, h);
    explicit_bzero(h, len);
    alloc_free(h);
    if (!l)
        return -ENOMEM;
    *hdrs = l;
    return 0;
}

static bool endpoint_has_header(const struct push_endpoint *e, const char *name)
{
    for (size_t i = 0; i < e->headers.n; i++) {
        if (strcasecmp(e->headers.v[i].name, name) == 0)
            return true;
    }
    return false;
}

static bool endpoint_clean(const char *s)
{
    for (; *s; s++) {
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return false;
    }
    return true;
}

/*
 * Authorization, read for this request (secret files are re-read each time).
 * Basic auth and Bearer tokens are libcurl's own: CURLOPT_USERNAME and
 * CURLOPT_PASSWORD with CURLAUTH_BASIC, CURLOPT_XOAUTH2_BEARER with
 * CURLAUTH_BEARER; with one scheme allowed libcurl sends it with the first
 * request, as "Authorization: Basic <base64 of user:password>" and
 * "Authorization: Bearer <token>". Another authorization.type is no scheme
 * libcurl knows: "<type> <credentials>" is added to *@a hdrs as a header.
 */
static int endpoint_authorization(const struct push_endpoint *e, CURL *h, struct curl_slist **hdrs,
                                  char *err, size_t errlen)
{
    int rc = 0;
    char *secret = NULL, *v = NULL;
    if (e->basic_user) {
        if (e->basic_password_file)
            rc = readfile_secret(e->basic_password_file, &secret, err, errlen);
        if (rc)
            goto out;
        const char *pw = secret ? secret : e->basic_password ? e->basic_password : "";
        /* libcurl keeps its own copies of both strings */
        if (curl_easy_setopt(h, CURLOPT_USERNAME, e->basic_user) != CURLE_OK ||
            curl_easy_setopt(h, CURLOPT_PASSWORD, pw) != CURLE_OK ||
            curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC) != CURLE_OK) {
            rc = -ENOMEM;
            snprintf(err, errlen, "out of memory");
        }
    } else if (e->auth_credentials || e->auth_credentials_file) {
        if (e->auth_credentials_file)
            rc = readfile_secret(e->auth_credentials_file, &secret, err, errlen);
        if (rc)
            goto out;
        const char *cred = secret ? secret : e->auth_credentials;
        const char *type = e->auth_type && e->auth_type[0] ? e->auth_type : "Bearer";
        if (!cred) {
            rc = -EINVAL;
            snprintf(err, errlen, "authorization: no credentials");
        } else if (!endpoint_clean(cred) || !endpoint_clean(type)) {
            rc = -EINVAL;
            snprintf(err, errlen, "authorization credentials contain a control character");
        } else if (strcasecmp(type, "Bearer") == 0) {
            if (curl_easy_setopt(h, CURLOPT_XOAUTH2_BEARER, cred) != CURLE_OK ||
                curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BEARER) != CURLE_OK) {
                rc = -ENOMEM;
                snprintf(err, errlen, "out of memory");
            }
        } else {
            size_t n = strlen(type) + 1 + strlen(cred) + 1;
            v = alloc_malloc(n);
            if (!v) {
                rc = -ENOMEM;
                snprintf(err, errlen, "out of memory");
                goto out;
            }
            snprintf(v, n, "%s %s", type, cred);
            rc = endpoint_header(hdrs, "Authorization", v);
            if (rc)
                snprintf(err, errlen, "out of memory");
        }
    }
out:
    endpoint_free_secret(secret);
    endpoint_free_secret(v);
    return rc;
}

int push_endpoint_apply(const struct push_endpoint *e, CURL *h, struct curl_slist **hdrs, char *err,
                        size_t errlen)
{
    int rc = 0;
    if (e->ca_file)
        curl_easy_setopt(h, CURLOPT_CAINFO, e->ca_file);
    if (e->cert_file)
        curl_easy_setopt(h, CURLOPT_SSLCERT, e->cert_file);
    if (e->key_file)
        curl_easy_setopt(h, CURLOPT_SSLKEY, e->key_file);
    if (e->insecure_skip_verify) {
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    if (e->connect_to)
        curl_easy_setopt(h, CURLOPT_CONNECT_TO, e->connect_to);
    if (e->host_header && !endpoint_has_header(e, "Host")) {
        struct curl_slist *l = curl_slist_append(*hdrs, e->host_header);
        if (!l) {
            rc = -ENOMEM;
            goto nomem;
        }
        *hdrs = l;
    }
    /* a custom Authorization header wins over the configured auth */
    if (!endpoint_has_header(e, "Authorization")) {
        rc = endpoint_authorization(e, h, hdrs, err, errlen);
        if (rc)
            goto out;
    }
    if (e->tenant_id && e->tenant_id[0] && !endpoint_has_header(e, "X-Scope-OrgID")) {
        rc = endpoint_header(hdrs, "X-Scope-OrgID", e->tenant_id);
        if (rc)
            goto nomem;
    }
    for (size_t i = 0; i < e->headers.n; i++) {
        rc = endpoint_header(hdrs, e->headers.v[i].name, e->headers.v[i].value);
        if (rc)
            goto nomem;
    }
    goto out;
nomem:
    snprintf(err, errlen, "out of memory");
out:
    return rc;
}

uint64_t push_parse_retry_after(const char *value, int64_t now_real_ns)
{
    return http_retry_after_ns(value, now_real_ns);
}

/* CURLOPT_XFERINFOFUNCTION: non-zero ends the transfer */
static int endpoint_xferinfo(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                             curl_off_t ulnow)
{
    const struct push_request *r = arg;
    (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
    return r->abort && r->abort(r->abort_arg) ? 1 : 0;
}

static CURLcode endpoint_multi_error(CURLMcode mc)
{
    return mc == CURLM_OUT_OF_MEMORY ? CURLE_OUT_OF_MEMORY : CURLE_FAILED_INIT;
}

CURLcode push_endpoint_perform(CURLM *m, CURL *h, const struct push_request *r)
{
    CURLcode rc = CURLE_FAILED_INIT;
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, endpoint_xferinfo);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, (void *)r);
    CURLMcode mc = curl_multi_add_handle(m, h);
    if (mc != CURLM_OK)
        return endpoint_multi_error(mc);
    for (;;) {
        int running = 0, left = 0;
        bool done = false;
        mc = curl_multi_perform(m, &running);
        if (mc != CURLM_OK) {
            rc = endpoint_multi_error(mc);
            break;
        }
        for (CURLMsg *msg; (msg = curl_multi_info_read(m, &left)) != NULL;) {
            if (msg->msg == CURLMSG_DONE && msg->easy_handle == h) {
                rc = msg->data.result;
                done = true;
            }
        }
        if (done || running == 0) /* running == 0 without DONE: FAILED_INIT */
            break;
        if (r->abort && r->abort(r->abort_arg)) {
            rc = CURLE_ABORTED_BY_CALLBACK;
            break;
        }
        mc = curl_multi_poll(m, NULL, 0, PUSH_ABORT_POLL_MS, NULL);
        if (mc != CURLM_OK) {
            rc = endpoint_multi_error(mc);
            break;
        }
    }
    curl_multi_remove_handle(m, h);
    /* nothing may point at @a r once the caller's request is gone */
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, NULL);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 1L);
    return rc;
}

/*
 * libcurl errors made on this side, before anything reached the server: a
 * URL or protocol libcurl cannot use, a TLS file it cannot load, a feature
 * this libcurl lacks. The same request fails the same way every time, so
 * it is dropped and counted, never retried (a retry loop would hold the
 * queue until max_retries, or forever with max_retries 0).
 */
static bool endpoint_curl_permanent(CURLcode rc)
{
    switch (rc) {
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
    case CURLE_NOT_BUILT_IN:
    case CURLE_BAD_FUNCTION_ARGUMENT:
    case CURLE_UNKNOWN_OPTION:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
    case CURLE_SSL_ENGINE_INITFAILED:
        return true;
    default:
        return false;
    }
}

static const char *endpoint_curl_code(CURLcode rc)
{
    switch (rc) {
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
        return "url";
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
    case CURLE_SSL_ENGINE_INITFAILED:
        return "tls_config";
    case CURLE_ABORTED_BY_CALLBACK:
        return "aborted";
    case CURLE_OPERATION_TIMEDOUT:
        return "timeout";
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
        return "connect";
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_ISSUER_ERROR:
        return "tls";
    case CURLE_SEND_ERROR:
        return "send";
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
        return "recv";
    default:
        return NULL;
    }
}

/* Copies the printable text of @a body into @a out, whitespace runs folded. */
static void endpoint_message(const char *body, char *out, size_t len)
{
    size_t o = 0;
    bool space = false;
    for (const char *c = body; *c && o + 1 < len; c++) {
        unsigned char ch = (unsigned char)*c;
        if (ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n') {
            space = o > 0;
            continue;
        }
        if (space && o + 2 < len)
            out[o++] = ' ';
        space = false;
        out[o++] = (ch < 0x20 || ch == 0x7f) ? '?' : (char)ch;
    }
    out[o] = '\0';
}

void push_classify_http(CURLcode rc, long status, const char *body, const char *retry_after,
                        int64_t now_real_ns, struct push_result *res)
{
    res->retry_after_ns = 0;
    res->message[0] = '\0';
    if (rc != CURLE_OK) {
        const char *code = endpoint_curl_code(rc);
        res->outcome = endpoint_curl_permanent(rc) ? PUSH_DROP : PUSH_RETRY;
        if (code)
            snprintf(res->code, sizeof(res->code), "%s", code);
        else
            snprintf(res->code, sizeof(res->code), "curl_%d", (int)rc);
        snprintf(res->message, sizeof(res->message), "%s", curl_easy_strerror(rc));
        return;
    }
    if (status < 100) {
        res->outcome = PUSH_RETRY;
        snprintf(res->code, sizeof(res->code), "recv");
        snprintf(res->message, sizeof(res->message), "no HTTP status in the response");
        return;
    }
    snprintf(res->code, sizeof(res->code), "%ld", status);
    if (status >= 200 && status < 300) {
        res->outcome = PUSH_OK;
        return;
    }
    if (status == 408 || status == 429 || (status >= 500 && status < 600)) {
        res->outcome = PUSH_RETRY;
        res->retry_after_ns = push_parse_retry_after(retry_after, now_real_ns);
    } else {
        res->outcome = PUSH_DROP;
    }
    if (body && body[0])
        endpoint_message(body, res->message, sizeof(res->message));
    else
        snprintf(res->message, sizeof(res->message), "HTTP status %ld", status);
}
