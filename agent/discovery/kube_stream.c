/* SPDX-License-Identifier: MIT */
/*
 * kube_stream.c: the watch-event and list decoders over json-c's incremental
 * tokener (see kube_stream.h for the contract and the bounds).
 */
#include "base/compat.h"

#include <json-c/json_tokener.h>

#include "base/alloc.h"
#include "discovery/kube_stream.h"

/* json_tokener_parse_ex() takes an int length: feed at most this at a time */
#define KUBE_STREAM_CHUNK (1u << 20)

struct kube_stream {
    enum kube_stream_mode mode;
    struct json_tokener *tok;
    size_t pending;           /* bytes of the current event or list so far */
    int err;                  /* sticky error, 0 while healthy */
    struct json_object *list; /* the completed list (list mode) */
};

const char *kube_event_type_name(enum kube_event_type t)
{
    switch (t) {
    case KUBE_EVENT_ADDED:
        return "added";
    case KUBE_EVENT_MODIFIED:
        return "modified";
    case KUBE_EVENT_DELETED:
        return "deleted";
    case KUBE_EVENT_BOOKMARK:
        return "bookmark";
    case KUBE_EVENT_ERROR:
        return "error";
    case KUBE_EVENT_GONE:
        return "gone";
    case KUBE_EVENT_UNKNOWN:
        break;
    }
    return "unknown";
}

int kube_stream_new(enum kube_stream_mode mode, struct kube_stream **out)
{
    *out = NULL;
    struct kube_stream *s = alloc_calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->mode = mode;
    s->tok = json_tokener_new_ex(KUBE_MAX_DEPTH);
    if (!s->tok) {
        alloc_free(s);
        return -ENOMEM;
    }
    json_tokener_set_flags(s->tok, JSON_TOKENER_STRICT | JSON_TOKENER_ALLOW_TRAILING_CHARS |
                                       JSON_TOKENER_VALIDATE_UTF8);
    *out = s;
    return 0;
}

void kube_stream_reset(struct kube_stream *s)
{
    json_tokener_reset(s->tok);
    s->pending = 0;
    s->err = 0;
    if (s->list)
        json_object_put(s->list);
    s->list = NULL;
}

void kube_stream_free(struct kube_stream *s)
{
    if (!s)
        return;
    kube_stream_reset(s);
    json_tokener_free(s->tok);
    alloc_free(s);
}

bool kube_stream_idle(const struct kube_stream *s)
{
    return s->pending == 0 && s->err == 0;
}

size_t kube_stream_pending(const struct kube_stream *s)
{
    return s->pending;
}

static bool stream_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* A member of object @a o of type @a t, or NULL (absent or another type). */
static struct json_object *stream_member(struct json_object *o, const char *key, enum json_type t)
{
    struct json_object *v = NULL;
    if (!o || !json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, key, &v))
        return NULL;
    return json_object_is_type(v, t) ? v : NULL;
}

/* A string member as a C string with no NUL inside, at most @a max bytes, or NULL. */
static const char *stream_string(struct json_object *o, const char *key, size_t max)
{
    struct json_object *v = stream_member(o, key, json_type_string);
    if (!v)
        return NULL;
    const char *str = json_object_get_string(v);
    int len = json_object_get_string_len(v);
    if (!str || len < 0 || (size_t)len > max || strlen(str) != (size_t)len)
        return NULL;
    return str;
}

static int stream_event(struct json_object *o, kube_event_fn cb, void *arg)
{
    if (!o || !json_object_is_type(o, json_type_object))
        return -EBADMSG;
    const char *type = stream_string(o, "type", 32);
    if (!type)
        return -EBADMSG;
    struct kube_event ev = {.type = KUBE_EVENT_UNKNOWN};
    ev.object = stream_member(o, "object", json_type_object);
    struct json_object *meta = stream_member(ev.object, "metadata", json_type_object);
    ev.resource_version = stream_string(meta, "resourceVersion", KUBE_MAX_TOKEN_BYTES);
    if (strcmp(type, "ADDED") == 0)
        ev.type = KUBE_EVENT_ADDED;
    else if (strcmp(type, "MODIFIED") == 0)
        ev.type = KUBE_EVENT_MODIFIED;
    else if (strcmp(type, "DELETED") == 0)
        ev.type = KUBE_EVENT_DELETED;
    else if (strcmp(type, "BOOKMARK") == 0)
        ev.type = KUBE_EVENT_BOOKMARK;
    else if (strcmp(type, "ERROR") == 0)
        ev.type = KUBE_EVENT_ERROR;
    switch (ev.type) {
    case KUBE_EVENT_ADDED:
    case KUBE_EVENT_MODIFIED:
    case KUBE_EVENT_DELETED:
        if (!ev.object)
            return -EBADMSG;
        break;
    case KUBE_EVENT_BOOKMARK:
        if (!ev.object || !ev.resource_version)
            return -EBADMSG;
        break;
    case KUBE_EVENT_ERROR: {
        struct json_object *code = stream_member(ev.object, "code", json_type_int);
        int64_t c = code ? json_object_get_int64(code) : 0;
        ev.code = c > 0 && c < 1000 ? (int)c : 0;
        const char *reason = stream_string(ev.object, "reason", 256);
        ev.message = stream_string(ev.object, "message", 4096);
        if (!ev.message)
            ev.message = reason;
        if (ev.code == 410 ||
            (reason && (strcmp(reason, "Expired") == 0 || strcmp(reason, "Gone") == 0)))
            ev.type = KUBE_EVENT_GONE;
        break;
    }
    case KUBE_EVENT_GONE:
    case KUBE_EVENT_UNKNOWN:
        break;
    }
    return cb ? cb(arg, &ev) : 0;
}

static int stream_tok_error(struct json_tokener *tok)
{
    enum json_tokener_error e = json_tokener_get_error(tok);
    return e == json_tokener_error_depth ? -ELOOP : -EBADMSG;
}

/*
 * Feeds bytes to the tokener, at most up to @a max bytes per value: @a done
 * gets each completed value (owned by the callee). Leading whitespace of a
 * value is not counted.
 */
static int stream_run(struct kube_stream *s, const char *p, size_t left, size_t max,
                      int (*done)(struct kube_stream *, struct json_object *, void *), void *arg)
{
    if (s->err)
        return s->err;
    while (left > 0) {
        if (s->pending == 0) {
            while (left > 0 && stream_ws(*p)) {
                p++;
                left--;
            }
            if (left == 0)
                break;
        }
        size_t room = max - s->pending + 1; /* one byte over the limit is enough to know */
        size_t n = left < room ? left : room;
        if (n > KUBE_STREAM_CHUNK)
            n = KUBE_STREAM_CHUNK;
        struct json_object *o = json_tokener_parse_ex(s->tok, p, (int)n);
        enum json_tokener_error e = json_tokener_get_error(s->tok);
        if (e == json_tokener_continue) {
            s->pending += n;
            if (s->pending > max)
                return s->err = -E2BIG;
            p += n;
            left -= n;
            continue;
        }
        if (e != json_tokener_success) {
            if (o)
                json_object_put(o);
            return s->err = stream_tok_error(s->tok);
        }
        size_t used = json_tokener_get_parse_end(s->tok);
        if (used > n)
            used = n;
        s->pending += used;
        json_tokener_reset(s->tok);
        if (s->pending > max) {
            json_object_put(o);
            return s->err = -E2BIG;
        }
        s->pending = 0;
        p += used;
        left -= used;
        int rc = done(s, o, arg);
        if (rc != 0)
            return rc;
    }
    return 0;
}

struct stream_watch_arg {
    kube_event_fn cb;
    void *arg;
};

static int stream_watch_done(struct kube_stream *s, struct json_object *o, void *arg)
{
    const struct stream_watch_arg *w = arg;
    int rc = stream_event(o, w->cb, w->arg);
    json_object_put(o);
    if (rc == -EBADMSG)
        s->err = rc;
    return rc;
}

int kube_stream_feed(struct kube_stream *s, const void *data, size_t len, kube_event_fn cb,
                     void *arg)
{
    if (s->mode != KUBE_STREAM_WATCH)
        return -EINVAL;
    struct stream_watch_arg w = {cb, arg};
    return stream_run(s, data, len, KUBE_MAX_EVENT_BYTES, stream_watch_done, &w);
}

static int stream_list_done(struct kube_stream *s, struct json_object *o, void *arg)
{
    (void)arg;
    if (s->list) {
        /* a second value after the list */
        json_object_put(o);
        return s->err = -EBADMSG;
    }
    s->list = o;
    return 0;
}

int kube_stream_list_feed(struct kube_stream *s, const void *data, size_t len)
{
    if (s->mode != KUBE_STREAM_LIST)
        return -EINVAL;
    if (s->list && !s->err) {
        /* only whitespace may follow the list */
        const char *p = data;
        for (size_t i = 0; i < len; i++)
            if (!stream_ws(p[i]))
                return s->err = -EBADMSG;
        return 0;
    }
    return stream_run(s, data, len, KUBE_MAX_LIST_BYTES, stream_list_done, NULL);
}

static int stream_copy_token(struct json_object *meta, const char *key, char *dst)
{
    dst[0] = '\0';
    struct json_object *v = NULL;
    if (!meta || !json_object_object_get_ex(meta, key, &v) || !v)
        return 0;
    const char *str = stream_string(meta, key, KUBE_MAX_TOKEN_BYTES);
    if (!str)
        return json_object_is_type(v, json_type_string) ? -EBADMSG : 0;
    memcpy(dst, str, strlen(str) + 1);
    return 0;
}

int kube_stream_list_finish(struct kube_stream *s, kube_pod_fn cb, void *arg,
                            struct kube_list_meta *meta, size_t *skipped)
{
    struct kube_list_meta scratch;
    if (!meta)
        meta = &scratch;
    memset(meta, 0, sizeof(*meta));
    if (skipped)
        *skipped = 0;
    if (s->mode != KUBE_STREAM_LIST)
        return -EINVAL;
    if (s->err)
        return s->err;
    if (!s->list || s->pending != 0 || !json_object_is_type(s->list, json_type_object))
        return -EBADMSG; /* incomplete, something after it, or not an object */
    struct json_object *md = stream_member(s->list, "metadata", json_type_object);
    if (stream_copy_token(md, "resourceVersion", meta->resource_version) != 0 ||
        stream_copy_token(md, "continue", meta->cont) != 0)
        return -EBADMSG;
    struct json_object *items = NULL;
    if (!json_object_object_get_ex(s->list, "items", &items) || !items)
        return 0; /* absent or null: no pods */
    if (!json_object_is_type(items, json_type_array))
        return -EBADMSG;
    size_t n = json_object_array_length(items);
    meta->items = n;
    for (size_t i = 0; i < n; i++) {
        struct json_object *pod = json_object_array_get_idx(items, i);
        if (!pod || !json_object_is_type(pod, json_type_object)) {
            if (skipped)
                (*skipped)++;
            continue;
        }
        int rc = cb ? cb(arg, pod) : 0;
        if (rc != 0)
            return rc;
    }
    return 0;
}

int kube_stream_decode_list(const void *data, size_t len, kube_pod_fn cb, void *arg,
                            struct kube_list_meta *meta, size_t *skipped)
{
    struct kube_stream *s = NULL;
    int rc = kube_stream_new(KUBE_STREAM_LIST, &s);
    if (rc != 0)
        return rc;
    rc = kube_stream_list_feed(s, data, len);
    if (rc == 0)
        rc = kube_stream_list_finish(s, cb, arg, meta, skipped);
    else if (meta)
        memset(meta, 0, sizeof(*meta));
    kube_stream_free(s);
    return rc;
}
