/* SPDX-License-Identifier: MIT */
/*
 * podmeta.c: discovery.kubernetes for the sampling loop (see podmeta.h).
 */
#include "base/compat.h"

#include <stdlib.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/url.h"
#include "daemon/podmeta.h"
#include "daemon/targets.h"

/* What the client was started with, resolved: a change restarts it. */
struct podmeta_key {
    bool enabled;
    enum config_kube_source source;
    char url[480];
    char node[256];
    char token_file[512];
    char ca_file[512];
    bool insecure;
    uint64_t watch_timeout_ns, poll_interval_ns, request_timeout_ns;
};

struct podmeta {
    struct podmeta_key key;
    struct kube *client; /* NULL: off, or could not start (problem says why) */
    struct pod_source source;
    char problem[256];
};

static int podmeta_lookup(void *arg, const char *container_id, struct labels *meta, uint64_t *rev)
{
    struct podmeta *pm = arg;
    *rev = 0;
    int rc = kube_lookup(pm->client, container_id, meta, rev);
    if (rc == 1 && *rev == 0)
        *rev = 1; /* 0 means "no pod" to the loop */
    return rc;
}

static uint64_t podmeta_generation(void *arg)
{
    struct podmeta *pm = arg;
    return kube_generation(pm->client);
}

/* getenv(), or NULL when unset or empty. */
static const char *podmeta_env(const char *name)
{
    const char *v = getenv(name); /* NOLINT(concurrency-mt-unsafe): read-only use */
    return v && *v ? v : NULL;
}

/* "https://HOST:PORT" with an IPv6 HOST in brackets. */
static void podmeta_https(char *out, size_t size, const char *host, const char *port)
{
    bool v6 = strchr(host, ':') && host[0] != '[';
    snprintf(out, size, "https://%s%s%s:%s", v6 ? "[" : "", host, v6 ? "]" : "", port);
}

/* The config's keys with the environment's defaults; false: @why says what is missing. */
static bool podmeta_resolve(const struct pyprofd_config *cfg, struct podmeta_key *k, char *why,
                            size_t why_len)
{
    const struct config_kubernetes *c = &cfg->discovery.kubernetes;
    memset(k, 0, sizeof(*k));
    k->enabled = c->enabled;
    if (!k->enabled)
        return true;
    k->source = c->source;
    k->insecure = c->insecure_skip_verify;
    k->watch_timeout_ns = c->watch_timeout_ns;
    k->poll_interval_ns = c->poll_interval_ns;
    k->request_timeout_ns = c->request_timeout_ns;
    snprintf(k->token_file, sizeof(k->token_file), "%s",
             c->bearer_token_file ? c->bearer_token_file : "");
    snprintf(k->ca_file, sizeof(k->ca_file), "%s", c->ca_file ? c->ca_file : "");

    const char *node = c->node_name && *c->node_name ? c->node_name : podmeta_env("NODE_NAME");
    if (node) {
        snprintf(k->node, sizeof(k->node), "%s", node);
    } else if (gethostname(k->node, sizeof(k->node) - 1) != 0) {
        k->node[0] = '\0';
    }
    k->node[sizeof(k->node) - 1] = '\0';

    if (k->source == CONFIG_KUBE_API_SERVER) {
        if (c->api_server && *c->api_server) {
            snprintf(k->url, sizeof(k->url), "%s", c->api_server);
        } else {
            const char *host = podmeta_env("KUBERNETES_SERVICE_HOST");
            const char *port = podmeta_env("KUBERNETES_SERVICE_PORT");
            if (!host) {
                snprintf(why, why_len,
                         "no discovery.kubernetes.api_server and not in a cluster "
                         "(KUBERNETES_SERVICE_HOST is not set)");
                return false;
            }
            podmeta_https(k->url, sizeof(k->url), host, port ? port : "443");
        }
        if (!k->node[0]) {
            snprintf(why, why_len, "no node name: set NODE_NAME or discovery.kubernetes.node_name");
            return false;
        }
    } else {
        if (c->kubelet_url && *c->kubelet_url) {
            snprintf(k->url, sizeof(k->url), "%s", c->kubelet_url);
        } else {
            const char *ip = podmeta_env("NODE_IP");
            if (!ip && !k->node[0]) {
                snprintf(why, why_len,
                         "no discovery.kubernetes.kubelet_url, NODE_IP or node name to reach "
                         "the kubelet at");
                return false;
            }
            podmeta_https(k->url, sizeof(k->url), ip ? ip : k->node, "10250");
        }
    }
    return true;
}

static void podmeta_stop(struct podmeta *pm)
{
    kube_stop(pm->client);
    pm->client = NULL;
}

int podmeta_configure(struct podmeta **pmp, const struct pyprofd_config *cfg)
{
    struct podmeta *pm = *pmp;
    if (!pm && !cfg->discovery.kubernetes.enabled)
        return 0; /* never on: nothing to keep */
    if (!pm) {
        pm = alloc_calloc(1, sizeof(*pm));
        if (!pm)
            return -ENOMEM;
        pm->source = (struct pod_source){
            .lookup = podmeta_lookup, .generation = podmeta_generation, .arg = pm};
        *pmp = pm;
    }
    struct podmeta_key k;
    char why[256] = "";
    bool ok = podmeta_resolve(cfg, &k, why, sizeof(why));
    if (ok && memcmp(&k, &pm->key, sizeof(k)) == 0 && (pm->client || !k.enabled))
        return 0; /* as running */
    podmeta_stop(pm);
    pm->key = k;
    pm->problem[0] = '\0';
    if (!k.enabled)
        return 0;
    if (!ok) {
        snprintf(pm->problem, sizeof(pm->problem), "%s", why);
        log_error("discovery.kubernetes: %s; sampling goes on without pod labels", why);
        return 0;
    }
    struct kube_opts o = {
        .source = k.source == CONFIG_KUBE_KUBELET ? KUBE_SOURCE_KUBELET : KUBE_SOURCE_API_SERVER,
        .url = k.url,
        .node_name = k.node,
        .token_file = k.token_file[0] ? k.token_file : NULL,
        .ca_file = k.ca_file[0] ? k.ca_file : NULL,
        .insecure_skip_verify = k.insecure,
        .watch_timeout_ns = k.watch_timeout_ns,
        .poll_interval_ns = k.poll_interval_ns,
        .request_timeout_ns = k.request_timeout_ns,
    };
    int err = kube_start(&o, &pm->client);
    if (err == -ENOMEM)
        return err;
    if (err) {
        pm->client = NULL;
        snprintf(pm->problem, sizeof(pm->problem), "cannot start the client: %s", strerror(-err));
        log_error("discovery.kubernetes: %s; sampling goes on without pod labels", pm->problem);
        return 0;
    }
    log_info("discovery.kubernetes: watching the pods of node '%s' through %s %s", k.node,
             k.source == CONFIG_KUBE_KUBELET ? "the kubelet at" : "the API server at", k.url);
    return 0;
}

void podmeta_free(struct podmeta *pm)
{
    if (!pm)
        return;
    podmeta_stop(pm);
    alloc_free(pm);
}

const struct pod_source *podmeta_source(struct podmeta *pm)
{
    return pm && pm->client ? &pm->source : NULL;
}

void podmeta_view(struct podmeta *pm, struct podmeta_view *out)
{
    memset(out, 0, sizeof(*out));
    if (!pm || !pm->key.enabled)
        return;
    out->enabled = true;
    out->running = pm->client != NULL;
    snprintf(out->source, sizeof(out->source), "%s",
             pm->key.source == CONFIG_KUBE_KUBELET ? "kubelet" : "api_server");
    /* a password in the URL (https://user:pass@host) is not shown */
    url_redact(pm->key.url, out->url, sizeof(out->url));
    snprintf(out->node, sizeof(out->node), "%s", pm->key.node);
    snprintf(out->problem, sizeof(out->problem), "%s", pm->problem);
    if (pm->client)
        kube_stats(pm->client, &out->stats);
}
