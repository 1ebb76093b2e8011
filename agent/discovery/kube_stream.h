/* SPDX-License-Identifier: MIT */
/*
 * kube_stream.h: decoding what the Kubernetes API server and the kubelet
 * send about pods, as it streams in, with memory that does not depend on
 * what is sent:
 *
 *  - a watch stream: newline-delimited events
 *    {"type":"ADDED|MODIFIED|DELETED|BOOKMARK|ERROR","object":{...}}, fed in
 *    whatever pieces libcurl's write callback hands over; each complete event
 *    is passed to a callback;
 *  - a list body: a PodList ({"metadata":{"resourceVersion":..,"continue":..},
 *    "items":[pod...]}), from GET /api/v1/pods or the kubelet's /pods, fed
 *    the same way; each pod is passed on as soon as its object is complete.
 *
 * Bytes become tokens (base/jsonscan.h, strict RFC 8259, valid UTF-8) and
 * tokens become pod records (kube_pod.h, which keeps only what labels need);
 * no JSON tree is ever built. Memory: one scanner, one pod builder, one
 * record (kube_stream_memory()).
 *
 * Every byte is untrusted. Bounds, each with a defined outcome:
 *  - a watch event over KUBE_MAX_EVENT_BYTES is passed over (its tokens are
 *    scanned but not kept) and counted (refused_event); the stream goes on;
 *  - a pod in a list over KUBE_MAX_OBJECT_BYTES likewise (refused_object);
 *    the list goes on;
 *  - a list body over KUBE_MAX_LIST_BYTES ends the list: -E2BIG;
 *  - nesting over KUBE_MAX_DEPTH ends the stream or list: -ELOOP;
 *  - malformed JSON or UTF-8, or an event of the wrong shape: -EBADMSG.
 * Errors that end a stream are sticky: every later feed returns the same
 * error (the caller drops the connection and counts it).
 *
 * An ERROR event is classified: a Status with code 410 or reason "Expired" or
 * "Gone" is KUBE_EVENT_GONE (the resource version is too old: relist), any
 * other KUBE_EVENT_ERROR. An event whose "type" is none of the five is
 * KUBE_EVENT_UNKNOWN (passed on, to be counted and ignored). An event that
 * is not an object, has no string "type", or (for the pod events and
 * BOOKMARK) no "object" object, or a BOOKMARK without a resourceVersion, is
 * a decode error.
 *
 * Ownership: the decoder owns the records; the ones an event or a pod
 * callback sees are borrowed and valid only during the call.
 * Errors: negative errno values, see each function.
 * Thread safety: none; a decoder is fed by one thread.
 */
#ifndef PYPROFD_DISCOVERY_KUBE_STREAM_H
#define PYPROFD_DISCOVERY_KUBE_STREAM_H

#include "base/compat.h"

#include "discovery/kube_pod.h"

/** The longest watch event, in bytes (newlines between events do not count). */
#define KUBE_MAX_EVENT_BYTES (4u << 20)
/** The longest pod object in a list. */
#define KUBE_MAX_OBJECT_BYTES (4u << 20)
/** The longest list body, in bytes (one page of the API server, the kubelet's /pods). */
#define KUBE_MAX_LIST_BYTES (128u << 20)
/** The deepest nesting of arrays and objects accepted. */
#define KUBE_MAX_DEPTH 64
/** The longest resourceVersion or continue token kept; longer is a decode error. */
#define KUBE_MAX_TOKEN_BYTES 1024

enum kube_event_type {
    KUBE_EVENT_ADDED,
    KUBE_EVENT_MODIFIED,
    KUBE_EVENT_DELETED,
    KUBE_EVENT_BOOKMARK,
    KUBE_EVENT_ERROR, /* an ERROR event other than 410 */
    KUBE_EVENT_GONE,  /* an ERROR event with a 410 Status: relist */
    KUBE_EVENT_UNKNOWN,
};

/** The name of @a t ("added", "modified", ..., "gone", "unknown"), for stats and logs. */
const char *kube_event_type_name(enum kube_event_type t);

/** One decoded watch event (borrowed, valid during the callback only). */
struct kube_event {
    enum kube_event_type type;
    /* ADDED/MODIFIED/DELETED: the pod; NULL when the object was not a usable
     * pod (no metadata.uid): the caller counts it */
    const struct kube_pod *pod;
    /* object.metadata.resourceVersion when it is a string, else NULL
     * (for BOOKMARK the new resource version to resume from) */
    const char *resource_version;
    int code;            /* ERROR/GONE: the Status code, 0 if none */
    const char *message; /* ERROR/GONE: the Status message or reason, or NULL */
};

/**
 * Called once per complete event. Return 0 to go on; a non-zero value stops
 * the feed, which returns it (the rest of the chunk is dropped, so only do
 * this to end the stream).
 */
typedef int (*kube_event_fn)(void *arg, const struct kube_event *ev);

/**
 * Called once per object element of a list's "items", as soon as it is
 * complete: @a pod is the record (borrowed, valid during the call), or NULL
 * when the element was an object but not a usable pod (no metadata.uid).
 * Return 0 to go on, non-zero to stop the feed (which returns it).
 */
typedef int (*kube_pod_fn)(void *arg, const struct kube_pod *pod);

/** The list's metadata, filled by kube_stream_list_finish(). */
struct kube_list_meta {
    char resource_version[KUBE_MAX_TOKEN_BYTES + 1]; /* "" when absent */
    char cont[KUBE_MAX_TOKEN_BYTES + 1];             /* metadata.continue, "" when absent */
    size_t items;                                    /* elements of "items" */
    size_t skipped; /* elements that were not objects, not passed on */
    /* metadata.remainingItemCount (items after this page), when given */
    bool has_remaining;
    uint64_t remaining;
};

/** What a decoder passed over, since it was made (never reset). */
struct kube_stream_counts {
    uint64_t refused_event;  /* watch events over KUBE_MAX_EVENT_BYTES */
    uint64_t refused_object; /* list items over KUBE_MAX_OBJECT_BYTES */
};

struct kube_stream;

enum kube_stream_mode {
    KUBE_STREAM_WATCH, /* newline-delimited events */
    KUBE_STREAM_LIST,  /* one PodList */
};

/**
 * A new decoder in @a mode. Returns 0 with *@a out (free with
 * kube_stream_free()), or -ENOMEM.
 */
PYPROFD_WARN_UNUSED int kube_stream_new(enum kube_stream_mode mode, struct kube_stream **out);
/** Frees; NULL is a no-op. */
void kube_stream_free(struct kube_stream *s);
/** Forgets everything fed so far (also a sticky error): ready for a new stream. */
void kube_stream_reset(struct kube_stream *s);

/**
 * Feeds @a len bytes of a watch stream; @a cb (may be NULL) gets each event
 * completed by them. Returns 0, the callback's non-zero value, or the error
 * that ended the stream: -ELOOP (nesting over KUBE_MAX_DEPTH), -EBADMSG
 * (malformed JSON or UTF-8, an event of the wrong shape), -ENOMEM, -EINVAL (a
 * list decoder). After an error every feed returns it again until
 * kube_stream_reset().
 */
PYPROFD_WARN_UNUSED int kube_stream_feed(struct kube_stream *s, const void *data, size_t len,
                                         kube_event_fn cb, void *arg);

/** Whether the stream stands between events (no event cut in half), with no error. */
bool kube_stream_idle(const struct kube_stream *s);

/**
 * Feeds @a len bytes of a list body; @a cb (may be NULL) gets each pod
 * completed by them. Returns 0, the callback's non-zero value, or -E2BIG
 * (over KUBE_MAX_LIST_BYTES), -ELOOP, -EBADMSG (malformed, not a PodList's
 * shape, or anything after the list), -ENOMEM, -EINVAL (a watch decoder);
 * errors are sticky as above.
 */
PYPROFD_WARN_UNUSED int kube_stream_list_feed(struct kube_stream *s, const void *data, size_t len,
                                              kube_pod_fn cb, void *arg);

/**
 * Ends a list body: @a meta (may be NULL) gets the metadata. Returns 0,
 * -EBADMSG (incomplete, not an object, "items" not an array, a token too
 * long) or a feed's sticky error. The decoder must be reset before another
 * list.
 */
PYPROFD_WARN_UNUSED int kube_stream_list_finish(struct kube_stream *s, struct kube_list_meta *meta);

/**
 * Decodes the whole list body @a data in one go (a new decoder, feed,
 * finish, free). Same results as kube_stream_list_feed() and _finish().
 */
PYPROFD_WARN_UNUSED int kube_stream_decode_list(const void *data, size_t len, kube_pod_fn cb,
                                                void *arg, struct kube_list_meta *meta);

/** Bytes of the current (incomplete) event or list fed so far. */
uint64_t kube_stream_pending(const struct kube_stream *s);

/** What the decoder passed over (see struct kube_stream_counts). */
void kube_stream_counts(const struct kube_stream *s, struct kube_stream_counts *out);

/** Bytes the decoder holds (scanner, pod builder and the record in it). */
size_t kube_stream_memory(const struct kube_stream *s);

#endif /* PYPROFD_DISCOVERY_KUBE_STREAM_H */
