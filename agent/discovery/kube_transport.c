/* SPDX-License-Identifier: MIT */
/*
 * kube_transport.c: libcurl for the Kubernetes client (see
 * kube_transport.h): the easy handle's options, the body and header
 * callbacks, and the multi loop that watches the deadline, the progress and
 * the stop flag.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/clock.h"
#include "base/curlopt.h"
#include "base/httpdate.h"
#include "discovery/kube_transport.h"

#define KUBE_POLL_MS        250 /* the longest a transfer waits before looking around */
#define KUBE_CONNECT_MS     10000L
#define KUBE_LIST_SILENCE_S 30L
#define KUBE_AUTH_MAX       (64u << 10) /* the Authorization header; a token is at most 64 KiB */

struct kube_transport {
    CURLM *multi;
    CURL *easy;
    char *ca_file;
    bool insecure;
};

/* One request's state, seen by libcurl's callbacks. */
struct kube_xfer {
    struct kube_transport *t;
    struct kube_request *r;
    long status;          /* 0 until the first body byte */
    struct buf errbody;   /* a non-200 body, cut */
    bool body_cut;        /* it was longer than KUBE_ERRBODY_MAX */
    char retry_after[64]; /* the Retry-After header, "" when none */
};

int kube_transport_new(const struct kube_transport_opts *o, struct kube_transport **out)
{
    struct kube_transport *t = alloc_calloc(1, sizeof(*t));
    *out = NULL;
    if (!t)
        return -ENOMEM;
    t->insecure = o->insecure_skip_verify;
    if (o->ca_file && *o->ca_file) {
        t->ca_file = alloc_strdup(o->ca_file);
        if (!t->ca_file)
            goto fail;
    }
    t->multi = curl_multi_init();
    t->easy = curl_easy_init();
    if (!t->multi || !t->easy)
        goto fail;
    *out = t;
    return 0;
fail:
    kube_transport_free(t);
    return -ENOMEM;
}

void kube_transport_free(struct kube_transport *t)
{
    if (!t)
        return;
    if (t->easy)
        curl_easy_cleanup(t->easy);
    if (t->multi)
        curl_multi_cleanup(t->multi);
    alloc_free(t->ca_file);
    alloc_free(t);
}

void kube_transport_wakeup(struct kube_transport *t)
{
    curl_multi_wakeup(t->multi);
}

int kube_transport_add_param(struct kube_transport *t, struct buf *u, const char *name,
                             const char *value)
{
    char *esc = curl_easy_escape(t->easy, value, 0);
    if (!esc)
        return -ENOMEM;
    int rc = buf_addf(u, "%s%s=%s", strchr(buf_str(u), '?') ? "&" : "?", name, esc);
    curl_free(esc);
    return rc;
}

int kube_transport_url(struct kube_transport *t, struct buf *u, const char *base, const char *path,
                       const char *node_name)
{
    buf_reset(u);
    size_t n = strlen(base);
    while (n > 0 && base[n - 1] == '/')
        n--;
    if (buf_add(u, base, n) != 0 || buf_adds(u, path) != 0)
        return -ENOMEM;
    if (!node_name)
        return 0;
    char sel[512];
    int len = snprintf(sel, sizeof(sel), "spec.nodeName=%s", node_name);
    if (len < 0 || (size_t)len >= sizeof(sel))
        return -ENAMETOOLONG;
    return kube_transport_add_param(t, u, "fieldSelector", sel);
}

static size_t kube_transport_write(char *data, size_t size, size_t nmemb, void *arg)
{
    struct kube_xfer *x = arg;
    size_t len = size * nmemb;
    if (atomic_load(x->r->stopping))
        return 0;
    if (x->status == 0) {
        long st = 0;
        curl_easy_getinfo(x->t->easy, CURLINFO_RESPONSE_CODE, &st);
        x->status = st ? st : -1;
    }
    if (x->status != 200) {
        /* kept for the message up to a small cap; past it the connection
         * is closed (an endless error body costs nothing) */
        size_t room = KUBE_ERRBODY_MAX - buf_len(&x->errbody);
        size_t n = len < room ? len : room;
        if (n > 0 && buf_add(&x->errbody, data, n) != 0)
            return 0;
        if (n < len || buf_len(&x->errbody) >= KUBE_ERRBODY_MAX) {
            x->body_cut = true;
            return 0;
        }
        return len;
    }
    return x->r->body(x->r->arg, data, len) == 0 ? len : 0;
}

/* CURLOPT_HEADERFUNCTION: keeps Retry-After (RFC 9110 10.2.3) of the final response. */
static size_t kube_transport_header(char *data, size_t size, size_t nmemb, void *arg)
{
    struct kube_xfer *x = arg;
    size_t len = size * nmemb;
    static const char name[] = "retry-after:";
    if (len >= 5 && memcmp(data, "HTTP/", 5) == 0) {
        x->retry_after[0] = '\0'; /* a new response (after a 1xx) */
    } else if (len > sizeof(name) - 1 && strncasecmp(data, name, sizeof(name) - 1) == 0) {
        size_t i = sizeof(name) - 1;
        while (i < len && (data[i] == ' ' || data[i] == '\t'))
            i++;
        size_t n = 0;
        while (i + n < len && data[i + n] != '\r' && data[i + n] != '\n')
            n++;
        if (n < sizeof(x->retry_after)) {
            memcpy(x->retry_after, data + i, n);
            x->retry_after[n] = '\0';
        } else {
            x->retry_after[0] = '\0'; /* no Retry-After is that long */
        }
    }
    return len;
}

static void kube_transport_setup(struct kube_transport *t, struct curl_slist *hdrs,
                                 struct kube_xfer *x)
{
    CURL *h = t->easy;
    curl_easy_reset(h);
    curl_easy_setopt(h, CURLOPT_URL, x->r->url);
    curlopt_http_only(h);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, KUBE_CONNECT_MS);
    if (!x->r->watch) {
        /* a list must keep moving; kube_transport_perform() holds it to its deadline */
        curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, KUBE_LIST_SILENCE_S);
    }
    curl_easy_setopt(h, CURLOPT_USERAGENT, "pyprofd/" PYPROFD_VERSION);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    if (t->ca_file)
        curl_easy_setopt(h, CURLOPT_CAINFO, t->ca_file);
    if (t->insecure) {
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, kube_transport_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, (void *)x);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, kube_transport_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, (void *)x);
}

/*
 * Runs the transfer set up on t->easy; returns its result
 * (CURLE_ABORTED_BY_CALLBACK on stop, CURLE_OPERATION_TIMEDOUT when the
 * deadline passed or the watch stalled: @a out->timed_out says which).
 */
static CURLcode kube_transport_perform(struct kube_transport *t, struct kube_request *r,
                                       struct kube_response *out)
{
    if (curl_multi_add_handle(t->multi, t->easy) != CURLM_OK)
        return CURLE_FAILED_INIT;
    CURLcode rc = CURLE_OK;
    bool done = false;
    while (!done) {
        if (atomic_load(r->stopping)) {
            rc = CURLE_ABORTED_BY_CALLBACK;
            break;
        }
        int running = 0;
        if (curl_multi_perform(t->multi, &running) != CURLM_OK) {
            rc = CURLE_OUT_OF_MEMORY;
            break;
        }
        int left = 0;
        for (CURLMsg *m; (m = curl_multi_info_read(t->multi, &left)) != NULL;) {
            if (m->msg == CURLMSG_DONE && m->easy_handle == t->easy) {
                rc = m->data.result;
                done = true;
            }
        }
        if (done)
            break;
        uint64_t now = clock_mono_now();
        if (r->deadline_ns && now >= r->deadline_ns) {
            out->timed_out = KUBE_TIMEOUT_DEADLINE;
            rc = CURLE_OPERATION_TIMEDOUT;
            break;
        }
        if (r->progress_ns && now - r->progress_at >= r->progress_ns) {
            out->timed_out = KUBE_TIMEOUT_STALLED;
            rc = CURLE_OPERATION_TIMEDOUT;
            break;
        }
        if (r->idle)
            r->idle(r->arg);
        if (curl_multi_poll(t->multi, NULL, 0, KUBE_POLL_MS, NULL) != CURLM_OK) {
            rc = CURLE_OUT_OF_MEMORY;
            break;
        }
    }
    curl_multi_remove_handle(t->multi, t->easy);
    return rc;
}

/* The request's headers: Accept, and Authorization with a token. NULL: out of memory. */
static struct curl_slist *kube_transport_headers(const char *token)
{
    struct curl_slist *hdrs = curl_slist_append(NULL, "Accept: application/json");
    if (hdrs && token) {
        struct buf auth;
        buf_init(&auth, KUBE_AUTH_MAX + 64);
        if (buf_addf(&auth, "Authorization: Bearer %s", token) == 0) {
            struct curl_slist *l = curl_slist_append(hdrs, buf_str(&auth));
            if (l)
                hdrs = l;
        }
        explicit_bzero((char *)buf_str(&auth), buf_len(&auth));
        buf_release(&auth);
    }
    return hdrs;
}

void kube_transport_get(struct kube_transport *t, struct kube_request *r, struct kube_response *out)
{
    struct kube_xfer x = {.t = t, .r = r};
    memset(out, 0, sizeof(*out));
    buf_init(&x.errbody, KUBE_ERRBODY_MAX + 1);
    struct curl_slist *hdrs = kube_transport_headers(r->token);
    kube_transport_setup(t, hdrs, &x);
    r->progress_at = clock_mono_now();
    out->rc = hdrs ? kube_transport_perform(t, r, out) : CURLE_OUT_OF_MEMORY;
    curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &out->status);
    out->body_cut = x.body_cut;
    if (out->status != 0 && out->status != 200) {
        /* the Status body's text, printable bytes only */
        size_t n = 0;
        const char *b = buf_str(&x.errbody);
        for (size_t i = 0; b[i] && n + 1 < sizeof(out->message); i++)
            out->message[n++] = (b[i] >= 0x20 && b[i] < 0x7f) ? b[i] : ' ';
        out->message[n] = '\0';
        if (out->status == 429 || out->status == 503) {
            uint64_t ra = http_retry_after_ns(x.retry_after, clock_real_now());
            out->retry_after_ns = ra > KUBE_RETRY_AFTER_MAX_NS ? KUBE_RETRY_AFTER_MAX_NS : ra;
        }
    }
    curl_slist_free_all(hdrs);
    buf_release(&x.errbody);
}
