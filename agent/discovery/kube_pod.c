/* SPDX-License-Identifier: MIT */
/*
 * kube_pod.c: a pod object -> struct kube_pod -> Prometheus pod-role meta
 * labels (see kube_pod.h).
 */
#include "base/compat.h"

#include <json-c/json_object_iterator.h>

#include "base/alloc.h"
#include "base/utf8.h"
#include "discovery/kube_pod.h"

#define KUBE_META     "__meta_kubernetes_"
#define KUBE_POD      KUBE_META "pod_"
#define KUBE_NAME_MAX (sizeof(KUBE_POD "annotationpresent_") + KUBE_MAX_KEY_BYTES + 1)
/* spec entries looked at to find one container's image */
#define KUBE_SPEC_SCAN (4 * KUBE_POD_MAX_CONTAINERS)

static struct json_object *pod_member(struct json_object *o, const char *key, enum json_type t)
{
    struct json_object *v = NULL;
    if (!o || !json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, key, &v))
        return NULL;
    return v && json_object_is_type(v, t) ? v : NULL;
}

/* Whether @a o has member @a key at all (any type, null included). */
static bool pod_has(struct json_object *o, const char *key)
{
    return o && json_object_is_type(o, json_type_object) && json_object_object_get_ex(o, key, NULL);
}

/* A usable string value: valid UTF-8, no NUL, at most @a max bytes; else NULL. */
static const char *pod_strval(struct json_object *v, size_t max, struct kube_pod *p)
{
    if (!v || !json_object_is_type(v, json_type_string)) {
        p->invalid++;
        return NULL;
    }
    const char *s = json_object_get_string(v);
    int len = json_object_get_string_len(v);
    if (!s || len < 0 || !utf8_valid(s, (size_t)len)) {
        p->invalid++;
        return NULL;
    }
    if ((size_t)len > max) {
        p->over_limit++;
        return NULL;
    }
    return s;
}

/* Member @a key of @a o as a usable string; absent is NULL and not counted. */
static const char *pod_str(struct json_object *o, const char *key, struct kube_pod *p)
{
    if (!pod_has(o, key))
        return NULL;
    struct json_object *v = NULL;
    json_object_object_get_ex(o, key, &v);
    if (!v)
        return NULL; /* null is absent */
    return pod_strval(v, KUBE_MAX_VALUE_BYTES, p);
}

/* *@a dst = copy of @a s, or of "" when NULL. Returns 0 or -ENOMEM. */
static int pod_dup(char **dst, const char *s)
{
    *dst = alloc_strdup(s ? s : "");
    return *dst ? 0 : -ENOMEM;
}

bool kube_container_id_parse(const char *s, char id[KUBE_CONTAINER_ID_LEN + 1])
{
    id[0] = '\0';
    if (!s)
        return false;
    const char *sep = strstr(s, "://");
    const char *hex = sep ? sep + 3 : s;
    if (strlen(hex) != KUBE_CONTAINER_ID_LEN)
        return false;
    for (size_t i = 0; i < KUBE_CONTAINER_ID_LEN; i++) {
        char c = hex[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return false;
    }
    memcpy(id, hex, KUBE_CONTAINER_ID_LEN + 1);
    return true;
}

int kube_label_name(const char *prefix, const char *key, char *out, size_t outlen)
{
    size_t pl = strlen(prefix), kl = strlen(key);
    if (pl + kl + 1 > outlen)
        return -ENAMETOOLONG;
    memcpy(out, prefix, pl);
    for (size_t i = 0; i < kl; i++) {
        char c = key[i];
        bool ok =
            (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
        out[pl + i] = ok ? c : '_';
    }
    out[pl + kl] = '\0';
    return 0;
}

void kube_pod_release(struct kube_pod *p)
{
    if (!p)
        return;
    alloc_free(p->namespace_name);
    alloc_free(p->name);
    alloc_free(p->uid);
    alloc_free(p->node_name);
    alloc_free(p->pod_ip);
    alloc_free(p->host_ip);
    alloc_free(p->phase);
    alloc_free(p->controller_kind);
    alloc_free(p->controller_name);
    labels_release(&p->labels);
    labels_release(&p->annotations);
    labels_release(&p->annotations_cut);
    for (size_t i = 0; i < p->n_containers; i++) {
        alloc_free(p->containers[i].name);
        alloc_free(p->containers[i].id_full);
        alloc_free(p->containers[i].image);
    }
    alloc_free(p->containers);
    memset(p, 0, sizeof(*p));
}

/* Budget shared by labels and annotations. */
struct pod_meta_budget {
    size_t entries;
    size_t bytes;
};

/*
 * Copies the string members of object @a src (metadata.labels or
 * .annotations) into @a dst within @a b; a value over the limit goes to @a cut
 * (keys only) when @a cut is not NULL, else it is dropped.
 */
static int pod_meta(struct json_object *src, struct labels *dst, struct labels *cut,
                    struct pod_meta_budget *b, struct kube_pod *p)
{
    if (!src)
        return 0;
    if (!json_object_is_type(src, json_type_object)) {
        p->invalid++;
        return 0;
    }
    struct json_object_iterator it = json_object_iter_begin(src);
    struct json_object_iterator end = json_object_iter_end(src);
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
        const char *key = json_object_iter_peek_name(&it);
        struct json_object *val = json_object_iter_peek_value(&it);
        size_t kl = strlen(key);
        if (kl == 0 || !utf8_valid(key, kl)) {
            p->invalid++;
            continue;
        }
        if (kl > KUBE_MAX_KEY_BYTES || b->entries >= KUBE_POD_MAX_META) {
            p->over_limit++;
            continue;
        }
        if (!val || !json_object_is_type(val, json_type_string)) {
            p->invalid++;
            continue;
        }
        const char *v = json_object_get_string(val);
        int vl = json_object_get_string_len(val);
        if (!v || vl < 0 || !utf8_valid(v, (size_t)vl)) {
            p->invalid++;
            continue;
        }
        struct labels *into = dst;
        if ((size_t)vl > KUBE_MAX_VALUE_BYTES) {
            p->over_limit++;
            if (!cut)
                continue;
            into = cut;
            v = "";
            vl = 0;
        }
        if (b->bytes + kl + (size_t)vl > KUBE_POD_MAX_META_BYTES) {
            p->over_limit++;
            continue;
        }
        if (labels_get(dst, key) || labels_get(cut ? cut : dst, key))
            continue; /* a duplicate key: the first one stands */
        if (labels_setn(into, key, v, (size_t)vl) != 0)
            return -ENOMEM;
        b->entries++;
        b->bytes += kl + (size_t)vl;
    }
    return 0;
}

static enum kube_ready pod_ready(struct json_object *status, struct kube_pod *p)
{
    struct json_object *conds = pod_member(status, "conditions", json_type_array);
    if (!conds) {
        if (pod_has(status, "conditions"))
            p->invalid++;
        return KUBE_READY_UNKNOWN;
    }
    size_t n = json_object_array_length(conds);
    for (size_t i = 0; i < n; i++) {
        struct json_object *c = json_object_array_get_idx(conds, i);
        struct json_object *type = pod_member(c, "type", json_type_string);
        if (!type || strcmp(json_object_get_string(type), "Ready") != 0)
            continue;
        struct json_object *st = pod_member(c, "status", json_type_string);
        const char *s = st ? json_object_get_string(st) : "";
        if (strcmp(s, "True") == 0)
            return KUBE_READY_TRUE;
        if (strcmp(s, "False") == 0)
            return KUBE_READY_FALSE;
        return KUBE_READY_UNKNOWN;
    }
    return KUBE_READY_UNKNOWN;
}

static int pod_controller(struct json_object *meta, struct kube_pod *p)
{
    struct json_object *refs = pod_member(meta, "ownerReferences", json_type_array);
    if (!refs) {
        if (pod_has(meta, "ownerReferences"))
            p->invalid++;
        return 0;
    }
    size_t n = json_object_array_length(refs);
    for (size_t i = 0; i < n; i++) {
        struct json_object *r = json_object_array_get_idx(refs, i);
        struct json_object *ctl = pod_member(r, "controller", json_type_boolean);
        if (!ctl || !json_object_get_boolean(ctl))
            continue;
        const char *kind = pod_str(r, "kind", p);
        const char *name = pod_str(r, "name", p);
        if (pod_dup(&p->controller_kind, kind) != 0 || pod_dup(&p->controller_name, name) != 0)
            return -ENOMEM;
        return 0;
    }
    return 0;
}

/* The image spec gives container @a name in @a spec_list, or NULL. */
static const char *pod_spec_image(struct json_object *spec_list, const char *name,
                                  struct kube_pod *p)
{
    if (!spec_list || !name || !*name)
        return NULL;
    size_t n = json_object_array_length(spec_list);
    if (n > KUBE_SPEC_SCAN)
        n = KUBE_SPEC_SCAN;
    for (size_t i = 0; i < n; i++) {
        struct json_object *c = json_object_array_get_idx(spec_list, i);
        struct json_object *nm = pod_member(c, "name", json_type_string);
        if (!nm || strcmp(json_object_get_string(nm), name) != 0)
            continue;
        return pod_str(c, "image", p);
    }
    return NULL;
}

static int pod_containers(struct json_object *spec, struct json_object *status, struct kube_pod *p)
{
    static const struct {
        const char *status_key, *spec_key;
        enum kube_container_kind kind;
    } lists[] = {
        {"containerStatuses", "containers", KUBE_CONTAINER_REGULAR},
        {"initContainerStatuses", "initContainers", KUBE_CONTAINER_INIT},
        {"ephemeralContainerStatuses", "ephemeralContainers", KUBE_CONTAINER_EPHEMERAL},
    };
    for (size_t l = 0; l < PYPROFD_ARRAY_SIZE(lists); l++) {
        struct json_object *sts = pod_member(status, lists[l].status_key, json_type_array);
        if (!sts) {
            if (pod_has(status, lists[l].status_key))
                p->invalid++;
            continue;
        }
        struct json_object *spec_list = pod_member(spec, lists[l].spec_key, json_type_array);
        size_t n = json_object_array_length(sts);
        for (size_t i = 0; i < n; i++) {
            struct json_object *cs = json_object_array_get_idx(sts, i);
            if (!cs || !json_object_is_type(cs, json_type_object)) {
                p->invalid++;
                continue;
            }
            if (p->n_containers >= KUBE_POD_MAX_CONTAINERS) {
                p->over_limit++;
                continue;
            }
            if (!p->containers) {
                p->containers = alloc_calloc(KUBE_POD_MAX_CONTAINERS, sizeof(*p->containers));
                if (!p->containers)
                    return -ENOMEM;
            }
            struct kube_container *c = &p->containers[p->n_containers];
            const char *name = pod_str(cs, "name", p);
            const char *id = pod_str(cs, "containerID", p);
            const char *image = pod_spec_image(spec_list, name, p);
            if (!image)
                image = pod_str(cs, "image", p);
            c->kind = lists[l].kind;
            p->n_containers++; /* counted first, so release frees a half-made entry */
            if (pod_dup(&c->name, name) != 0 || pod_dup(&c->id_full, id) != 0 ||
                pod_dup(&c->image, image) != 0)
                return -ENOMEM;
            kube_container_id_parse(c->id_full, c->id);
        }
    }
    return 0;
}

int kube_pod_from_json(struct json_object *pod, struct kube_pod *out)
{
    memset(out, 0, sizeof(*out));
    if (!pod || !json_object_is_type(pod, json_type_object))
        return -EINVAL;
    struct json_object *meta = pod_member(pod, "metadata", json_type_object);
    struct json_object *spec = pod_member(pod, "spec", json_type_object);
    struct json_object *status = pod_member(pod, "status", json_type_object);
    const char *uid = pod_str(meta, "uid", out);
    if (!uid || !*uid) {
        kube_pod_release(out);
        return -EINVAL;
    }
    int rc = -ENOMEM;
    if (pod_dup(&out->uid, uid) != 0 ||
        pod_dup(&out->namespace_name, pod_str(meta, "namespace", out)) != 0 ||
        pod_dup(&out->name, pod_str(meta, "name", out)) != 0 ||
        pod_dup(&out->node_name, pod_str(spec, "nodeName", out)) != 0 ||
        pod_dup(&out->pod_ip, pod_str(status, "podIP", out)) != 0 ||
        pod_dup(&out->host_ip, pod_str(status, "hostIP", out)) != 0 ||
        pod_dup(&out->phase, pod_str(status, "phase", out)) != 0)
        goto fail;
    out->ready = pod_ready(status, out);
    if (pod_controller(meta, out) != 0)
        goto fail;
    struct pod_meta_budget b = {0, 0};
    struct json_object *lbl = NULL, *ann = NULL;
    if (meta) {
        json_object_object_get_ex(meta, "labels", &lbl);
        json_object_object_get_ex(meta, "annotations", &ann);
    }
    if (pod_meta(lbl, &out->labels, NULL, &b, out) != 0 ||
        pod_meta(ann, &out->annotations, &out->annotations_cut, &b, out) != 0)
        goto fail;
    if (pod_containers(spec, status, out) != 0)
        goto fail;
    return 0;
fail:
    kube_pod_release(out);
    return rc;
}

static int pod_set(struct labels *out, const char *name, const char *value)
{
    return labels_set(out, name, value ? value : "") != 0 ? -ENOMEM : 0;
}

/* Adds prefix+sanitised(key) = value for every entry of @a src. */
static int pod_set_all(struct labels *out, const struct labels *src, const char *value_prefix,
                       const char *present_prefix)
{
    char name[KUBE_NAME_MAX];
    for (size_t i = 0; i < src->n; i++) {
        const struct label *l = &src->v[i];
        if (value_prefix) {
            if (kube_label_name(value_prefix, l->name, name, sizeof(name)) != 0)
                continue; /* cannot happen: keys are bounded */
            if (pod_set(out, name, l->value) != 0)
                return -ENOMEM;
        }
        if (kube_label_name(present_prefix, l->name, name, sizeof(name)) != 0)
            continue;
        if (pod_set(out, name, "true") != 0)
            return -ENOMEM;
    }
    return 0;
}

int kube_pod_meta_labels(const struct kube_pod *p, struct labels *out)
{
    static const char *const ready[] = {
        [KUBE_READY_UNKNOWN] = "unknown",
        [KUBE_READY_TRUE] = "true",
        [KUBE_READY_FALSE] = "false",
    };
    if (pod_set(out, KUBE_META "namespace", p->namespace_name) != 0 ||
        pod_set(out, KUBE_POD "name", p->name) != 0 || pod_set(out, KUBE_POD "uid", p->uid) != 0 ||
        pod_set(out, KUBE_POD "ip", p->pod_ip) != 0 ||
        pod_set(out, KUBE_POD "node_name", p->node_name) != 0 ||
        pod_set(out, KUBE_POD "host_ip", p->host_ip) != 0 ||
        pod_set(out, KUBE_POD "phase", p->phase) != 0 ||
        pod_set(out, KUBE_POD "ready", ready[p->ready]) != 0)
        return -ENOMEM;
    if (p->controller_kind && (pod_set(out, KUBE_POD "controller_kind", p->controller_kind) != 0 ||
                               pod_set(out, KUBE_POD "controller_name", p->controller_name) != 0))
        return -ENOMEM;
    /* the sets are sorted by original key, so a sanitised clash resolves the same way always */
    if (pod_set_all(out, &p->labels, KUBE_POD "label_", KUBE_POD "labelpresent_") != 0 ||
        pod_set_all(out, &p->annotations, KUBE_POD "annotation_", KUBE_POD "annotationpresent_") !=
            0 ||
        pod_set_all(out, &p->annotations_cut, NULL, KUBE_POD "annotationpresent_") != 0)
        return -ENOMEM;
    return 0;
}

int kube_pod_container_meta_labels(const struct kube_pod *p, size_t i, struct labels *out)
{
    if (i >= p->n_containers)
        return 0;
    const struct kube_container *c = &p->containers[i];
    if (pod_set(out, KUBE_POD "container_name", c->name) != 0 ||
        pod_set(out, KUBE_POD "container_id", c->id_full) != 0 ||
        pod_set(out, KUBE_POD "container_image", c->image) != 0 ||
        pod_set(out, KUBE_POD "container_init",
                c->kind == KUBE_CONTAINER_INIT ? "true" : "false") != 0)
        return -ENOMEM;
    return 0;
}

int kube_pod_container_labels(const struct kube_pod *p, size_t i, struct labels *out)
{
    int rc = kube_pod_meta_labels(p, out);
    return rc != 0 ? rc : kube_pod_container_meta_labels(p, i, out);
}
