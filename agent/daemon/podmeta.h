/* SPDX-License-Identifier: MIT */
/*
 * podmeta.h: the sampling loop's pod metadata (discovery.kubernetes): the
 * Kubernetes client of discovery/kube_client.h, started, restarted and
 * stopped as the config asks, with the config's unset keys resolved from the
 * environment a pod gives:
 *
 *   api_server   https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT
 *                (an IPv6 host in brackets; port 443 when unset)
 *   node_name    $NODE_NAME, else the host name (the DaemonSet sets NODE_NAME
 *                from spec.nodeName: a node's host name need not be its name)
 *   kubelet_url  https://$NODE_IP:10250, else https://<node_name>:10250
 *
 * The loop asks it, through the struct pod_source of daemon/targets.h, for
 * the __meta_kubernetes_* labels of a process's container id, and watches
 * its generation to judge again the processes whose pod changed (a process
 * seen before its pod is relabeled when the pod arrives).
 *
 * A client that cannot start (discovery.kubernetes.enabled outside a
 * cluster with no api_server, say) is not an error of the config: the agent
 * runs on without pod labels, and the problem is logged once and shown in
 * /targets and /metrics.
 *
 * Thread safety: podmeta_configure() and podmeta_free() by the loop's
 * thread (or with its lock held); the lookups and podmeta_view() from any
 * thread (the client's index has its own lock).
 */
#ifndef PYPROFD_DAEMON_PODMETA_H
#define PYPROFD_DAEMON_PODMETA_H

#include "base/compat.h"

#include "config/config.h"
#include "discovery/kube_client.h"

struct podmeta;
struct pod_source; /* daemon/targets.h */

/** What /targets and /metrics show of the pod metadata. */
struct podmeta_view {
    bool enabled;            /* discovery.kubernetes.enabled */
    bool running;            /* the client runs (else problem says why) */
    char source[16];         /* "api_server" or "kubelet" */
    char url[512];           /* the server asked (its password hidden) */
    char node[256];          /* the node whose pods */
    char problem[256];       /* why it does not run; "" */
    struct kube_stats stats; /* all zero unless running */
};

/**
 * Brings *@a pm in line with @a cfg: created on first use, the client
 * (re)started when its keys changed, stopped when disabled; @a cfg is only
 * read during the call. Returns 0 or -ENOMEM (*@a pm unchanged). A client
 * that cannot start is not an error (see the top of this file).
 */
PYPROFD_WARN_UNUSED int podmeta_configure(struct podmeta **pm, const struct pyprofd_config *cfg);

/** Stops the client and frees; NULL is a no-op. */
void podmeta_free(struct podmeta *pm);

/**
 * The pod source proc_judge() asks (daemon/targets.h), or NULL when pod
 * metadata is off or @a pm is NULL. Valid until the next podmeta_configure().
 */
const struct pod_source *podmeta_source(struct podmeta *pm);

/** A copy of what /targets and /metrics show; all zero for NULL. */
void podmeta_view(struct podmeta *pm, struct podmeta_view *out);

#endif /* PYPROFD_DAEMON_PODMETA_H */
