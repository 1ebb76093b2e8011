/* SPDX-License-Identifier: MIT */
/*
 * kube_pod.h: one Kubernetes pod object (a json-c tree from kube_stream.h)
 * turned into a bounded record, and the record into the meta labels
 * Prometheus's kubernetes_sd "pod" role gives each container, so relabeling
 * rules written for Prometheus work unchanged:
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
 * order (a pod with no status yet has none). containerID
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
 * label stays. A field of the wrong JSON type, or a string that is not valid
 * UTF-8 or holds a NUL, counts as absent (counted in invalid).
 *
 * Ownership: struct kube_pod owns its strings; init by kube_pod_from_json(),
 * free with kube_pod_release(). Thread safety: none per record; the
 * functions are reentrant.
 */
#ifndef PYPROFD_DISCOVERY_KUBE_POD_H
#define PYPROFD_DISCOVERY_KUBE_POD_H

#include "base/compat.h"

#include <json-c/json_object.h>

#include "base/labels.h"

#define KUBE_POD_MAX_META       256 /* labels + annotations kept per pod */
#define KUBE_POD_MAX_META_BYTES (32u << 10)
#define KUBE_POD_MAX_CONTAINERS 64   /* containers kept per pod (all three kinds) */
#define KUBE_MAX_KEY_BYTES      317  /* a label key: 253-byte prefix, '/', 63-byte name */
#define KUBE_MAX_VALUE_BYTES    1024 /* any kept string value */
#define KUBE_CONTAINER_ID_LEN   64

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

/**
 * Fills @a out (overwritten; it need not be initialised) from the pod object
 * @a pod (borrowed). Returns 0; -EINVAL when @a pod is not an object or has no
 * usable metadata.uid (the record's key: @a out is then empty); -ENOMEM (@a
 * out empty).
 */
PYPROFD_WARN_UNUSED int kube_pod_from_json(struct json_object *pod, struct kube_pod *out);

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

/** Both of the above: container @a i's whole label set. Returns 0 or -ENOMEM. */
PYPROFD_WARN_UNUSED int kube_pod_container_labels(const struct kube_pod *p, size_t i,
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
