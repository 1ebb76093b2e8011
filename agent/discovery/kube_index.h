/* SPDX-License-Identifier: MIT */
/*
 * kube_index.h: container id (64 hex) -> that container's Kubernetes meta
 * labels (kube_pod.h) and a revision, built from pod records.
 *
 * Pods are keyed by metadata.uid. kube_index_upsert() applies ADDED and
 * MODIFIED (and every pod of a list), kube_index_delete() DELETED; a relist
 * is kube_index_relist_begin(), an upsert per listed pod, then
 * kube_index_relist_end(), which treats every pod the list did not name as
 * deleted (mark and sweep), so a relist replaces the whole set.
 *
 * Grace: a deleted pod, and a container id that left its pod (a restarted
 * container gets a new id), stays visible for grace_ns after it went, so a
 * process that is still terminating keeps its labels; kube_index_expire()
 * drops what is older. Times come from the caller (its struct clock).
 *
 * Revision: a hash of the container's whole label set, so an update that
 * changes nothing visible (a new resourceVersion, a status field no label
 * shows) leaves it unchanged. The generation goes up by one on every visible
 * change: a container id appearing or disappearing, or a revision changing.
 *
 * Bounds: at most max_pods pods (live and in grace together) and
 * KUBE_INDEX_MAX_BYTES bytes of labels (their text, entries and the
 * allocator's overhead per string); a new pod over either is refused
 * (-ENOSPC, counted), after first evicting the longest-deleted pod in grace if
 * there is one, and during a relist a live pod the relist has not named yet
 * (it is being replaced; one named later comes back then) (both counted). Per pod at most 2 *
 * KUBE_POD_MAX_CONTAINERS container ids, live and in grace (the oldest in grace goes first). A
 * container id already held by another pod is ignored (counted).
 *
 * Ownership: the index copies what it keeps. Errors: negative errno values.
 * Thread safety: none; the caller serialises (kube_client.c holds a mutex).
 */
#ifndef PYPROFD_DISCOVERY_KUBE_INDEX_H
#define PYPROFD_DISCOVERY_KUBE_INDEX_H

#include "base/compat.h"

#include "base/labels.h"
#include "discovery/kube_pod.h"

#define KUBE_INDEX_MAX_PODS_DEFAULT 5000
#define KUBE_INDEX_GRACE_DEFAULT_NS (60ull * 1000000000ull)
#define KUBE_INDEX_MAX_BYTES        (48u << 20)

struct kube_index;

struct kube_index_stats {
    uint64_t generation;
    size_t pods;             /* live pods */
    size_t pods_terminating; /* deleted, in grace */
    size_t containers;       /* container ids that can be looked up (live and in grace) */
    size_t bytes;            /* labels held, as counted against KUBE_INDEX_MAX_BYTES */
    uint64_t over_cap;       /* pods refused: max_pods or KUBE_INDEX_MAX_BYTES */
    uint64_t evicted;        /* pods or container ids dropped early to make room (in grace, or
                              * not named by a relist in progress) */
    uint64_t duplicate_ids;  /* container ids already held by another pod, ignored */
};

/**
 * A new, empty index of at most @a max_pods pods (0: the default) keeping
 * deleted pods for @a grace_ns. Returns 0 with *@a out, or -ENOMEM.
 */
PYPROFD_WARN_UNUSED int kube_index_new(size_t max_pods, uint64_t grace_ns, struct kube_index **out);
/** Frees; NULL is a no-op. */
void kube_index_free(struct kube_index *ix);

/**
 * Adds or replaces pod @a pod (borrowed; keyed by its uid), at time @a now.
 * A pod in grace is alive again. Returns 0, -ENOSPC (refused: over a bound)
 * or -ENOMEM (the index is unchanged or holds the pod's previous state).
 */
PYPROFD_WARN_UNUSED int kube_index_upsert(struct kube_index *ix, const struct kube_pod *pod,
                                          uint64_t now);

/** Pod @a uid was deleted at @a now: it stays visible for the grace period. Unknown is a no-op. */
void kube_index_delete(struct kube_index *ix, const char *uid, uint64_t now);

/** A relist starts: every pod is unmarked. */
void kube_index_relist_begin(struct kube_index *ix);
/** The relist is complete: pods no upsert marked since the begin are deleted at @a now. */
void kube_index_relist_end(struct kube_index *ix, uint64_t now);

/** Drops deleted pods and departed container ids older than the grace period. */
void kube_index_expire(struct kube_index *ix, uint64_t now);

/**
 * Looks up container @a id (64 hex, or "<scheme>://<64 hex>"): adds its labels
 * to @a out (may be NULL) and stores its revision in *@a rev (may be NULL).
 * Returns 1 (found), 0 (not found) or -ENOMEM (@a out holds a part).
 */
PYPROFD_WARN_UNUSED int kube_index_lookup(const struct kube_index *ix, const char *id,
                                          struct labels *out, uint64_t *rev);

/** The generation: starts at 0, +1 on every visible change. */
uint64_t kube_index_generation(const struct kube_index *ix);

/** Counters and sizes. */
void kube_index_stats(const struct kube_index *ix, struct kube_index_stats *out);

/**
 * Every container id that can be looked up, sorted: *@a ids (free with
 * alloc_free()) holds *@a n of them. Returns 0 or -ENOMEM.
 */
PYPROFD_WARN_UNUSED int kube_index_ids(const struct kube_index *ix,
                                       char (**ids)[KUBE_CONTAINER_ID_LEN + 1], size_t *n);

#endif /* PYPROFD_DISCOVERY_KUBE_INDEX_H */
