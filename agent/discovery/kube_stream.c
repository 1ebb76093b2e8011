/* SPDX-License-Identifier: MIT */
/*
 * kube_stream.c: the watch-event and list decoders (see kube_stream.h for
 * the contract and the bounds). The scanner (base/jsonscan.h) hands over
 * tokens; this file knows the two envelopes — an event's "type" and
 * "object", a list's "metadata" and "items" — and passes each pod object's
 * tokens to the pod builder (kube_pod.h), which keeps only what labels use.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/jsonscan.h"
#include "discovery/kube_stream.h"

/* the longest text a token keeps: every bounded field fits whole */
#define KUBE_STREAM_TEXT_CAP 4096
#define KUBE_TYPE_MAX        15

enum ks_key {
    KS_KEY_OTHER,
    KS_KEY_TYPE,      /* an event's "type" */
    KS_KEY_OBJECT,    /* an event's "object" */
    KS_KEY_METADATA,  /* a list's "metadata" */
    KS_KEY_ITEMS,     /* a list's "items" */
    KS_KEY_RV,        /* a list's metadata.resourceVersion */
    KS_KEY_CONTINUE,  /* a list's metadata.continue */
    KS_KEY_REMAINING, /* a list's metadata.remainingItemCount */
};

struct kube_stream {
    enum kube_stream_mode mode;
    struct jsonscan *scan;
    struct kube_pod_builder *pb;
    struct kube_pod pod; /* the record a callback sees */
    int err;             /* sticky error, 0 while healthy */
    struct kube_stream_counts counts;
    /* the feed in progress */
    kube_event_fn ev_cb;
    kube_pod_fn pod_cb;
    void *arg;

    enum ks_key pend; /* what the last key at the envelope's level names */
    bool in_object;   /* an event's object, or a list's item, is being built */
    bool object_done; /* the event's "object" was an object, complete */
    /* watch: the event being read */
    bool oversize;
    bool type_ok;
    char type[KUBE_TYPE_MAX + 1];
    /* list */
    bool top_object;
    bool done;
    bool in_meta, in_items;
    bool item_oversize;
    uint64_t item_start;
    struct kube_list_meta meta;
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
    if (jsonscan_new(KUBE_MAX_DEPTH, KUBE_STREAM_TEXT_CAP,
                     mode == KUBE_STREAM_WATCH ? JSONSCAN_MULTI : 0, &s->scan) != 0 ||
        kube_pod_builder_new(&s->pb) != 0) {
        kube_stream_free(s);
        return -ENOMEM;
    }
    kube_stream_reset(s);
    *out = s;
    return 0;
}

static void ks_event_reset(struct kube_stream *s)
{
    s->pend = KS_KEY_OTHER;
    s->in_object = false;
    s->object_done = false;
    s->oversize = false;
    s->type_ok = false;
    s->type[0] = '\0';
}

void kube_stream_reset(struct kube_stream *s)
{
    jsonscan_reset(s->scan);
    kube_pod_release(&s->pod);
    s->err = 0;
    ks_event_reset(s);
    s->top_object = false;
    s->done = false;
    s->in_meta = s->in_items = false;
    s->item_oversize = false;
    memset(&s->meta, 0, sizeof(s->meta));
}

void kube_stream_free(struct kube_stream *s)
{
    if (!s)
        return;
    kube_pod_release(&s->pod);
    kube_pod_builder_free(s->pb);
    jsonscan_free(s->scan);
    alloc_free(s);
}

bool kube_stream_idle(const struct kube_stream *s)
{
    return s->err == 0 && jsonscan_idle(s->scan);
}

uint64_t kube_stream_pending(const struct kube_stream *s)
{
    return s->mode == KUBE_STREAM_WATCH ? jsonscan_value_bytes(s->scan) : jsonscan_offset(s->scan);
}

void kube_stream_counts(const struct kube_stream *s, struct kube_stream_counts *out)
{
    *out = s->counts;
}

size_t kube_stream_memory(const struct kube_stream *s)
{
    return sizeof(*s) + jsonscan_memory(s->scan) + kube_pod_builder_memory(s->pb);
}

/* ---- watch ---- */

/* A complete event: classify, check its shape, hand it over. */
static int ks_event_end(struct kube_stream *s)
{
    if (s->oversize) {
        s->counts.refused_event++;
        return 0;
    }
    if (!s->type_ok)
        return -EBADMSG;
    struct kube_event ev = {.type = KUBE_EVENT_UNKNOWN};
    if (strcmp(s->type, "ADDED") == 0)
        ev.type = KUBE_EVENT_ADDED;
    else if (strcmp(s->type, "MODIFIED") == 0)
        ev.type = KUBE_EVENT_MODIFIED;
    else if (strcmp(s->type, "DELETED") == 0)
        ev.type = KUBE_EVENT_DELETED;
    else if (strcmp(s->type, "BOOKMARK") == 0)
        ev.type = KUBE_EVENT_BOOKMARK;
    else if (strcmp(s->type, "ERROR") == 0)
        ev.type = KUBE_EVENT_ERROR;
    if (s->object_done)
        ev.resource_version = kube_pod_builder_resource_version(s->pb);
    switch (ev.type) {
    case KUBE_EVENT_ADDED:
    case KUBE_EVENT_MODIFIED:
    case KUBE_EVENT_DELETED: {
        if (!s->object_done)
            return -EBADMSG;
        int rc = kube_pod_builder_take(s->pb, &s->pod);
        if (rc == -ENOMEM)
            return rc;
        ev.pod = rc == 0 ? &s->pod : NULL;
        break;
    }
    case KUBE_EVENT_BOOKMARK:
        if (!s->object_done || !ev.resource_version)
            return -EBADMSG;
        break;
    case KUBE_EVENT_ERROR:
        if (s->object_done) {
            const char *reason = kube_pod_builder_status_reason(s->pb);
            ev.code = kube_pod_builder_status_code(s->pb);
            ev.message = kube_pod_builder_status_message(s->pb);
            if (!ev.message)
                ev.message = reason;
            if (ev.code == 410 ||
                (reason && (strcmp(reason, "Expired") == 0 || strcmp(reason, "Gone") == 0)))
                ev.type = KUBE_EVENT_GONE;
        }
        break;
    case KUBE_EVENT_GONE:
    case KUBE_EVENT_UNKNOWN:
        break;
    }
    int rc = s->ev_cb ? s->ev_cb(s->arg, &ev) : 0;
    kube_pod_release(&s->pod);
    return rc;
}

static int ks_watch_token(void *arg, const struct jsonscan_token *t)
{
    struct kube_stream *s = arg;
    if (t->type == JSONSCAN_END)
        return ks_event_end(s);
    if (!s->oversize && jsonscan_value_bytes(s->scan) > KUBE_MAX_EVENT_BYTES) {
        /* scanned on to its end, kept nowhere */
        s->oversize = true;
        s->in_object = false;
    }
    if (t->depth == 0) {
        if (t->type == JSONSCAN_OBJECT_BEGIN)
            ks_event_reset(s);
        else if (t->type != JSONSCAN_OBJECT_END)
            return -EBADMSG; /* an event is an object */
        return 0;
    }
    if (s->in_object) {
        int rc = kube_pod_builder_token(s->pb, t);
        if (rc < 0)
            return rc;
        if (rc == 2)
            jsonscan_skip(s->scan);
        if (rc == 1) {
            s->in_object = false;
            s->object_done = true;
        }
        return 0;
    }
    if (s->oversize || t->depth != 1)
        return 0;
    if (t->type == JSONSCAN_KEY) {
        s->pend = strcmp(t->text, "type") == 0     ? KS_KEY_TYPE
                  : strcmp(t->text, "object") == 0 ? KS_KEY_OBJECT
                                                   : KS_KEY_OTHER;
        return 0;
    }
    enum ks_key k = s->pend;
    s->pend = KS_KEY_OTHER;
    if (k == KS_KEY_TYPE) {
        s->type_ok = t->type == JSONSCAN_STRING && t->full_len <= KUBE_TYPE_MAX && t->flags == 0;
        if (s->type_ok)
            memcpy(s->type, t->text, t->len + 1);
    } else if (k == KS_KEY_OBJECT) {
        s->object_done = false;
        if (t->type == JSONSCAN_OBJECT_BEGIN) {
            kube_pod_builder_begin(s->pb, t);
            s->in_object = true;
            return 0;
        }
    }
    if (t->type == JSONSCAN_OBJECT_BEGIN || t->type == JSONSCAN_ARRAY_BEGIN)
        jsonscan_skip(s->scan); /* a member nothing is taken from */
    return 0;
}

/* A negative result ends the stream for good; a callback's positive one only this feed. */
static int ks_result(struct kube_stream *s, int rc)
{
    if (rc < 0)
        s->err = rc;
    return rc;
}

int kube_stream_feed(struct kube_stream *s, const void *data, size_t len, kube_event_fn cb,
                     void *arg)
{
    if (s->mode != KUBE_STREAM_WATCH)
        return -EINVAL;
    if (s->err)
        return s->err;
    s->ev_cb = cb;
    s->arg = arg;
    return ks_result(s, jsonscan_feed(s->scan, data, len, ks_watch_token, s));
}

/* ---- list ---- */

static int ks_item_end(struct kube_stream *s)
{
    s->in_object = false;
    if (s->item_oversize) {
        s->counts.refused_object++;
        return 0;
    }
    int rc = kube_pod_builder_take(s->pb, &s->pod);
    if (rc == -ENOMEM)
        return rc;
    rc = s->pod_cb ? s->pod_cb(s->arg, rc == 0 ? &s->pod : NULL) : 0;
    kube_pod_release(&s->pod);
    return rc;
}

/* A list's metadata.resourceVersion or .continue: a string no longer than a token. */
static int ks_list_token_text(char *dst, const struct jsonscan_token *t)
{
    if (t->type != JSONSCAN_STRING)
        return 0; /* another type: absent */
    if (t->full_len > KUBE_MAX_TOKEN_BYTES || (t->flags & JSONSCAN_HAS_NUL))
        return -EBADMSG;
    memcpy(dst, t->text, t->len + 1);
    return 0;
}

static int ks_list_token(void *arg, const struct jsonscan_token *t)
{
    struct kube_stream *s = arg;
    bool end = t->type == JSONSCAN_OBJECT_END || t->type == JSONSCAN_ARRAY_END;
    if (s->in_object) {
        /* inside an item: its own end is the only token at depth 2 */
        if (!s->item_oversize && jsonscan_offset(s->scan) - s->item_start > KUBE_MAX_OBJECT_BYTES)
            s->item_oversize = true;
        if (t->depth == 2) {
            if (!s->item_oversize && kube_pod_builder_token(s->pb, t) < 0)
                return -ENOMEM;
            return ks_item_end(s);
        }
        if (s->item_oversize) {
            if (t->type == JSONSCAN_OBJECT_BEGIN || t->type == JSONSCAN_ARRAY_BEGIN)
                jsonscan_skip(s->scan);
            return 0;
        }
        int rc = kube_pod_builder_token(s->pb, t);
        if (rc == 2)
            jsonscan_skip(s->scan);
        return rc < 0 ? rc : 0;
    }
    switch (t->depth) {
    case 0:
        if (t->type == JSONSCAN_END) {
            s->done = true;
        } else if (t->type == JSONSCAN_OBJECT_BEGIN) {
            s->top_object = true;
        } else if (t->type != JSONSCAN_OBJECT_END) {
            return -EBADMSG; /* a list is an object */
        }
        return 0;
    case 1:
        if (t->type == JSONSCAN_KEY) {
            s->pend = strcmp(t->text, "metadata") == 0 ? KS_KEY_METADATA
                      : strcmp(t->text, "items") == 0  ? KS_KEY_ITEMS
                                                       : KS_KEY_OTHER;
            return 0;
        }
        if (end) {
            s->in_meta = s->in_items = false;
            return 0;
        }
        if (s->pend == KS_KEY_METADATA && t->type == JSONSCAN_OBJECT_BEGIN) {
            s->in_meta = true;
        } else if (s->pend == KS_KEY_ITEMS) {
            if (t->type == JSONSCAN_ARRAY_BEGIN)
                s->in_items = true;
            else if (t->type != JSONSCAN_NULL)
                return -EBADMSG; /* "items" is an array (or null: no pods) */
        } else if (t->type == JSONSCAN_OBJECT_BEGIN || t->type == JSONSCAN_ARRAY_BEGIN) {
            jsonscan_skip(s->scan); /* a member nothing is taken from */
        }
        s->pend = KS_KEY_OTHER;
        return 0;
    case 2:
        if (s->in_meta) {
            if (t->type == JSONSCAN_KEY) {
                s->pend = strcmp(t->text, "resourceVersion") == 0      ? KS_KEY_RV
                          : strcmp(t->text, "continue") == 0           ? KS_KEY_CONTINUE
                          : strcmp(t->text, "remainingItemCount") == 0 ? KS_KEY_REMAINING
                                                                       : KS_KEY_OTHER;
                return 0;
            }
            enum ks_key k = s->pend;
            s->pend = KS_KEY_OTHER;
            if (k == KS_KEY_REMAINING) {
                /* a non-negative integer as JSON writes one; anything else: absent */
                uint64_t n = 0;
                bool ok = t->type == JSONSCAN_NUMBER && t->len > 0 && t->len <= 18;
                for (size_t i = 0; ok && i < t->len; i++) {
                    ok = t->text[i] >= '0' && t->text[i] <= '9';
                    n = n * 10 + (uint64_t)(t->text[i] - '0');
                }
                s->meta.has_remaining = ok;
                s->meta.remaining = ok ? n : 0;
                return 0;
            }
            if (k == KS_KEY_RV)
                return ks_list_token_text(s->meta.resource_version, t);
            if (k == KS_KEY_CONTINUE)
                return ks_list_token_text(s->meta.cont, t);
            return 0;
        }
        if (!s->in_items || end)
            return 0;
        s->meta.items++;
        if (t->type != JSONSCAN_OBJECT_BEGIN) {
            s->meta.skipped++;
            return 0;
        }
        s->in_object = true;
        s->item_oversize = false;
        s->item_start = jsonscan_offset(s->scan);
        kube_pod_builder_begin(s->pb, t);
        return 0;
    default:
        return 0;
    }
}

int kube_stream_list_feed(struct kube_stream *s, const void *data, size_t len, kube_pod_fn cb,
                          void *arg)
{
    if (s->mode != KUBE_STREAM_LIST)
        return -EINVAL;
    if (s->err)
        return s->err;
    s->pod_cb = cb;
    s->arg = arg;
    uint64_t at = jsonscan_offset(s->scan);
    size_t n = len;
    bool over = false;
    if (at + len > KUBE_MAX_LIST_BYTES) {
        n = at < KUBE_MAX_LIST_BYTES ? (size_t)(KUBE_MAX_LIST_BYTES - at) : 0;
        over = true;
    }
    int rc = jsonscan_feed(s->scan, data, n, ks_list_token, s);
    if (rc == 0 && over)
        rc = -E2BIG;
    return ks_result(s, rc);
}

int kube_stream_list_finish(struct kube_stream *s, struct kube_list_meta *meta)
{
    if (meta)
        memset(meta, 0, sizeof(*meta));
    if (s->mode != KUBE_STREAM_LIST)
        return -EINVAL;
    if (s->err)
        return s->err;
    int rc = jsonscan_finish(s->scan, ks_list_token, s);
    if (rc == 0 && (!s->done || !s->top_object))
        rc = -EBADMSG;
    if (rc != 0)
        return ks_result(s, rc == -ELOOP ? rc : -EBADMSG);
    if (meta)
        *meta = s->meta;
    return 0;
}

int kube_stream_decode_list(const void *data, size_t len, kube_pod_fn cb, void *arg,
                            struct kube_list_meta *meta)
{
    struct kube_stream *s = NULL;
    if (meta)
        memset(meta, 0, sizeof(*meta));
    int rc = kube_stream_new(KUBE_STREAM_LIST, &s);
    if (rc != 0)
        return rc;
    rc = kube_stream_list_feed(s, data, len, cb, arg);
    if (rc == 0)
        rc = kube_stream_list_finish(s, meta);
    kube_stream_free(s);
    return rc;
}
