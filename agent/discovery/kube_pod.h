/* SPDX-License-Identifier: MIT */
/*
 * kube_pod.h: one Kubernetes pod object, as the tokens of a streaming JSON
 * scanner (base/jsonscan.h) hand it over, turned into a bounded record — only
 * the fields below are kept, everything else (managedFields, the spec's env,
 * volumes, ...) is passed over as it streams past — and the record into the
 * meta labels Prometheus's kubernetes_sd "pod" role gives each container, so
 * relabeling rules written for Prometheus work unchanged:
 *
 *   __meta_kubernetes_namespace                  metadata.namespace
 *   __meta_kubernetes_pod_name                   metadata.name
 *   __meta_kubernetes_pod_uid                    metadata.uid
 *   __meta_kubernetes_pod_ip                     status.podIP
 *   __meta_kubernetes_pod_node_name              spec.nodeName
 *   __meta_kubernetes_pod_host_ip                status.hostIP
 *   __meta_kubernetes_pod_phase                  status.phase
 *   __meta_kubernetes_pod_ready                  "true"/"false"/"unknown" (condition Ready)
 *   __meta_kubernetes_pod_controller_kind/_name  the ownerReference with controller: true
 *                                                (both absent without one)
 *   __meta_kubernetes_pod_label_<name>           each label; <name> sanitised
 *   __meta_kubernetes_pod_labelpresent_<name>    "true"
 *   __meta_kubernetes_pod_annotation_<name>      each annotation
 *   __meta_kubernetes_pod_annotationpresent_<name> "true"
 *   __meta_kubernetes_pod_container_name         the container's name
 *   __meta_kubernetes_pod_container_id           containerID as given ("containerd://<hex>")
 *   __meta_kubernetes_pod_container_image        spec's image for that name, else status's
 *   __meta_kubernetes_pod_container_init         "true" for an init container, else "false"
 *
 * The fields that are always set are set to "" when the pod lacks them (as
 * Prometheus does). <name> is sanitised as Prometheus does: every byte
 * outside [a-zA-Z0-9_] becomes '_' ("app.kubernetes.io/name" ->
 * "app_kubernetes_io_name"); two keys that sanitise to the same name: the
 * one later in byte order of the original keys wins.
 *
 * Containers are the entries of status.containerStatuses,
 * status.initContainerStatuses and status.ephemeralContainerStatuses, in that
 * order whatever the document's (a pod with no status yet has none); the
 * bound below keeps the first ones in document order. containerID
 * "<scheme>://<64 hex>" (containerd://, cri-o://, docker://, any scheme)
 * gives the 64-hex id the cgroup path carries (discovery/proc_scan.h); any
 * other value leaves the id "" (such a container cannot be looked up).
 *
 * Bounds (every input is untrusted): a pod keeps at most KUBE_POD_MAX_META
 * labels and annotations together, of at most KUBE_POD_MAX_META_BYTES bytes
 * of keys and values, and at most KUBE_POD_MAX_CONTAINERS containers, in
 * document order; what does not fit is dropped and counted in over_limit (the
 * pod itself is kept: losing one annotation is better than losing the pod).
 * A key longer than KUBE_MAX_KEY_BYTES or a value longer than
 * KUBE_MAX_VALUE_BYTES (an annotation holding a whole manifest) is dropped
 * and counted the same way; for an annotation the ..._annotationpresent_
 * label stays. A field of the wrong JSON type, or a string that holds a NUL
 * or an escaped lone surrogate, counts as absent (counted in invalid); null
 * is absent. A key given twice in one object: the later value wins for a
 * single field; for label and annotation keys the first one stands. (The
 * scanner refuses invalid UTF-8 in the input outright.)
 *
 * The builder (struct kube_pod_builder) is fed the tokens of one object at a
 * time and holds one record; it also keeps what an object of the pods API
 * may carry instead of a pod: metadata.resourceVersion (a BOOKMARK's), and a
 * Status's code, reason and message (an ERROR event's). Its memory is its
 * fixed struct plus the record being built, whatever the object's size.
 *
 * Ownership: struct kube_pod owns its strings; filled by
 * kube_pod_builder_take() or kube_pod_from_text(), freed with
 * kube_pod_release(). Thread safety: none per record or builder; the
 * functions are reentrant.
 */
#ifndef PYPROFD_DISCOVERY_KUBE_POD_H
#define PYPROFD_DISCOVERY_KUBE_POD_H

#include "base/compat.h"

#include "base/jsonscan.h"
#include "base/labels.h"

#define KUBE_POD_MAX_META       256 /* labels + annotations kept per pod */
#define KUBE_POD_MAX_META_BYTES (32u << 10)
#define KUBE_POD_MAX_CONTAINERS 64   /* containers kept per pod (all three kinds) */
#define KUBE_MAX_KEY_BYTES      317  /* a label key: 253-byte prefix, '/', 63-byte name */
#define KUBE_MAX_VALUE_BYTES    1024 /* any kept string value */
#define KUBE_CONTAINER_ID_LEN   64
#define KUBE_STATUS_MSG_BYTES   255  /* a Status message or reason kept (cut on a character) */
#define KUBE_RV_BYTES           1024 /* the longest resourceVersion kept */

enum kube_ready {
    KUBE_READY_UNKNOWN,
    KUBE_READY_TRUE,
    KUBE_READY_FALSE,
};

enum kube_container_kind {
    KUBE_CONTAINER_REGULAR,
    KUBE_CONTAINER_INIT,
    KUBE_CONTAINER_EPHEMERAL,
};

struct kube_container {
    char *name;                         /* "" when absent */
    char *id_full;                      /* containerID as given, "" when absent */
    char id[KUBE_CONTAINER_ID_LEN + 1]; /* the 64 lowercase hex digits, or "" */
    char *image;                        /* "" when absent */
    enum kube_container_kind kind;
};

struct kube_pod {
    /* "" when absent */
    char *namespace_name, *name, *uid, *node_name, *pod_ip, *host_ip, *phase;
    enum kube_ready ready;
    char *controller_kind, *controller_name; /* NULL without a controller ownerReference */
    struct labels labels;                    /* metadata.labels, original keys */
    struct labels annotations;               /* metadata.annotations, original keys */
    struct labels annotations_cut;           /* annotations whose value was too long: keys
                                              * only (values ""), present but not shown */
    struct kube_container *containers;
    size_t n_containers;
    uint32_t over_limit; /* entries dropped by a bound */
    uint32_t invalid;    /* fields ignored: wrong JSON type, bad UTF-8, NUL */
};

struct kube_pod_builder;

/** A new builder. Returns 0 with *@a out (free with kube_pod_builder_free()) or -ENOMEM. */
PYPROFD_WARN_UNUSED int kube_pod_builder_new(struct kube_pod_builder **out);
/** Frees (the record it holds too); NULL is a no-op. */
void kube_pod_builder_free(struct kube_pod_builder *b);

/**
 * An object starts: @a begin is its JSONSCAN_OBJECT_BEGIN token. What the
 * builder held is released.
 */
void kube_pod_builder_begin(struct kube_pod_builder *b, const struct jsonscan_token *begin);

/**
 * One token inside the object, up to and including its JSONSCAN_OBJECT_END.
 * Returns 0 while the object goes on, 1 when @a t was its end, 2 when @a t
 * began a container nothing of which is kept (the caller may
 * jsonscan_skip() it: only its end needs to come), -ENOMEM (the record is
 * then unusable; begin again).
 */
PYPROFD_WARN_UNUSED int kube_pod_builder_token(struct kube_pod_builder *b,
                                               const struct jsonscan_token *t);

/**
 * The object ended: moves its record into @a out (overwritten) and leaves
 * the builder empty. Returns 0; -EINVAL when it had no usable metadata.uid
 * (not a pod, or a Status: @a out is then empty); -ENOMEM.
 */
PYPROFD_WARN_UNUSED int kube_pod_builder_take(struct kube_pod_builder *b, struct kube_pod *out);

/**
 * What the last object carried besides a pod: metadata.resourceVersion (NULL
 * when absent, not a string or longer than KUBE_RV_BYTES) and, for a Status,
 * its code (0 when absent or not an integer in 1..999), reason and message
 * (NULL when absent; printable, cut to KUBE_STATUS_MSG_BYTES). Borrowed,
 * valid until the next kube_pod_builder_begin().
 */
const char *kube_pod_builder_resource_version(const struct kube_pod_builder *b);
int kube_pod_builder_status_code(const struct kube_pod_builder *b);
const char *kube_pod_builder_status_reason(const struct kube_pod_builder *b);
const char *kube_pod_builder_status_message(const struct kube_pod_builder *b);

/** Bytes the builder holds now (its struct and the record being built). */
size_t kube_pod_builder_memory(const struct kube_pod_builder *b);

/**
 * Decodes the pod object in the @a len bytes at @a text (one JSON value, as
 * an API server sends a pod) into @a out. Returns 0; -EBADMSG (not JSON),
 * -EINVAL (not an object, or no usable metadata.uid), -ENOMEM (@a out empty
 * on any error).
 */
PYPROFD_WARN_UNUSED int kube_pod_from_text(const void *text, size_t len, struct kube_pod *out);

/** Frees; a zeroed record is a no-op. Leaves @a p zeroed. */
void kube_pod_release(struct kube_pod *p);

/**
 * Adds the pod-level labels (every name above but the _container_ ones) to
 * @a out. Returns 0 or -ENOMEM (@a out then holds a part).
 */
PYPROFD_WARN_UNUSED int kube_pod_meta_labels(const struct kube_pod *p, struct labels *out);

/** Adds the four _container_ labels of container @a i to @a out. Returns 0 or -ENOMEM. */
PYPROFD_WARN_UNUSED int kube_pod_container_meta_labels(const struct kube_pod *p, size_t i,
                                                       struct labels *out);

/**
 * The 64-hex container id in @a s: "<scheme>://<64 lowercase hex>" or the
 * bare 64 hex digits. Writes it (NUL-terminated) to @a id and returns true;
 * false (and @a id "") otherwise.
 */
bool kube_container_id_parse(const char *s, char id[KUBE_CONTAINER_ID_LEN + 1]);

/**
 * Writes @a prefix followed by @a key sanitised (bytes outside [a-zA-Z0-9_]
 * become '_') into @a out. Returns 0 or -ENAMETOOLONG (@a out too small).
 */
PYPROFD_WARN_UNUSED int kube_label_name(const char *prefix, const char *key, char *out,
                                        size_t outlen);

#endif /* PYPROFD_DISCOVERY_KUBE_POD_H */
