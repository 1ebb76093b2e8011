/* SPDX-License-Identifier: MIT */
/*
 * kube_pod.c: the tokens of a pod object -> struct kube_pod -> Prometheus
 * pod-role meta labels (see kube_pod.h).
 *
 * The builder walks the object with a small stack of the positions it knows
 * (metadata, its labels, spec's container lists, status's conditions, ...);
 * a key it does not know has its value passed over whole, so nothing of a
 * large spec, managedFields or an unknown extension is ever kept. Fields of
 * one array element (an ownerReference, a condition, a container) arrive in
 * any order and are kept in fixed scratch buffers until the element ends.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/utf8.h"
#include "discovery/kube_pod.h"

#define KUBE_META     "__meta_kubernetes_"
#define KUBE_POD      KUBE_META "pod_"
#define KUBE_NAME_MAX (sizeof(KUBE_POD "annotationpresent_") + KUBE_MAX_KEY_BYTES + 1)
/* spec entries (per list) looked at to find one container's image */
#define KUBE_SPEC_SCAN (4 * KUBE_POD_MAX_CONTAINERS)
/* positions deep enough for every kept field: root, status, a list, an element */
#define PB_FRAMES 6

/* where in the object the builder is */
enum pb_node {
    PB_NONE,        /* a key the builder does not know: its value is passed over */
    PB_ROOT,        /* the object */
    PB_META,        /* .metadata */
    PB_LABELS,      /* .metadata.labels */
    PB_ANNOTATIONS, /* .metadata.annotations */
    PB_OWNERS,      /* .metadata.ownerReferences */
    PB_OWNER,       /* one ownerReference */
    PB_SPEC,        /* .spec */
    PB_SPEC_LIST,   /* .spec.containers, .initContainers, .ephemeralContainers */
    PB_SPEC_CTR,    /* one of their entries */
    PB_STATUS,      /* .status */
    PB_CONDS,       /* .status.conditions */
    PB_COND,        /* one condition */
    PB_STATUS_LIST, /* .status.containerStatuses, ... */
    PB_STATUS_CTR,  /* one container status */
};

/* the scalar fields kept */
enum pb_field {
    PF_NONE,
    PF_UID,
    PF_NAME,
    PF_NAMESPACE,
    PF_RV,
    PF_NODE_NAME,
    PF_PHASE,
    PF_POD_IP,
    PF_HOST_IP,
    PF_CODE,
    PF_REASON,
    PF_MESSAGE,
    PF_CONTROLLER, /* an ownerReference's controller flag */
    PF_ELEM0,      /* an element's first text (owner kind, spec or status name, condition type) */
    PF_ELEM1,      /* its second (owner name, image, containerID, condition status) */
    PF_ELEM2,      /* its third (a container status's image) */
};

struct pb_member {
    enum pb_node parent;
    const char *key;
    enum pb_node child;  /* PB_NONE: a scalar field */
    enum pb_field field; /* PF_NONE: a container */
    bool array;          /* the child is an array (else an object) */
    bool count_wrong;    /* a value of another type counts as invalid */
    enum kube_container_kind kind;
};

static const struct pb_member pb_members[] = {
    {PB_ROOT, "metadata", PB_META, PF_NONE, false, false, 0},
    {PB_ROOT, "spec", PB_SPEC, PF_NONE, false, false, 0},
    {PB_ROOT, "status", PB_STATUS, PF_NONE, false, false, 0},
    {PB_ROOT, "code", PB_NONE, PF_CODE, false, false, 0},
    {PB_ROOT, "reason", PB_NONE, PF_REASON, false, false, 0},
    {PB_ROOT, "message", PB_NONE, PF_MESSAGE, false, false, 0},
    {PB_META, "uid", PB_NONE, PF_UID, false, true, 0},
    {PB_META, "name", PB_NONE, PF_NAME, false, true, 0},
    {PB_META, "namespace", PB_NONE, PF_NAMESPACE, false, true, 0},
    {PB_META, "resourceVersion", PB_NONE, PF_RV, false, false, 0},
    {PB_META, "labels", PB_LABELS, PF_NONE, false, true, 0},
    {PB_META, "annotations", PB_ANNOTATIONS, PF_NONE, false, true, 0},
    {PB_META, "ownerReferences", PB_OWNERS, PF_NONE, true, true, 0},
    {PB_OWNER, "controller", PB_NONE, PF_CONTROLLER, false, false, 0},
    {PB_OWNER, "kind", PB_NONE, PF_ELEM0, false, true, 0},
    {PB_OWNER, "name", PB_NONE, PF_ELEM1, false, true, 0},
    {PB_SPEC, "nodeName", PB_NONE, PF_NODE_NAME, false, true, 0},
    {PB_SPEC, "containers", PB_SPEC_LIST, PF_NONE, true, false, KUBE_CONTAINER_REGULAR},
    {PB_SPEC, "initContainers", PB_SPEC_LIST, PF_NONE, true, false, KUBE_CONTAINER_INIT},
    {PB_SPEC, "ephemeralContainers", PB_SPEC_LIST, PF_NONE, true, false, KUBE_CONTAINER_EPHEMERAL},
    {PB_SPEC_CTR, "name", PB_NONE, PF_ELEM0, false, false, 0},
    {PB_SPEC_CTR, "image", PB_NONE, PF_ELEM1, false, true, 0},
    {PB_STATUS, "phase", PB_NONE, PF_PHASE, false, true, 0},
    {PB_STATUS, "podIP", PB_NONE, PF_POD_IP, false, true, 0},
    {PB_STATUS, "hostIP", PB_NONE, PF_HOST_IP, false, true, 0},
    {PB_STATUS, "conditions", PB_CONDS, PF_NONE, true, true, 0},
    {PB_STATUS, "containerStatuses", PB_STATUS_LIST, PF_NONE, true, true, KUBE_CONTAINER_REGULAR},
    {PB_STATUS, "initContainerStatuses", PB_STATUS_LIST, PF_NONE, true, true, KUBE_CONTAINER_INIT},
    {PB_STATUS, "ephemeralContainerStatuses", PB_STATUS_LIST, PF_NONE, true, true,
     KUBE_CONTAINER_EPHEMERAL},
    {PB_COND, "type", PB_NONE, PF_ELEM0, false, false, 0},
    {PB_COND, "status", PB_NONE, PF_ELEM1, false, false, 0},
    {PB_STATUS_CTR, "name", PB_NONE, PF_ELEM0, false, true, 0},
    {PB_STATUS_CTR, "containerID", PB_NONE, PF_ELEM1, false, true, 0},
    {PB_STATUS_CTR, "image", PB_NONE, PF_ELEM2, false, true, 0},
};

/* what a text value turned out to be (pod_str()'s cases) */
enum pb_have {
    PH_ABSENT,  /* not given, or null */
    PH_OK,      /* a usable string */
    PH_INVALID, /* another type, a NUL, a lone surrogate */
    PH_OVER,    /* longer than the bound */
};

struct pb_text {
    enum pb_have have;
    size_t len;
    char s[KUBE_MAX_VALUE_BYTES + 1];
};

struct pb_frame {
    enum pb_node node;
    enum kube_container_kind kind;
};

/* one entry of a spec container list: where the image comes from */
struct pb_spec {
    enum kube_container_kind kind;
    char *name;
    char *image; /* NULL unless usable */
    enum pb_have image_have;
};

struct kube_pod_builder {
    struct kube_pod pod;
    size_t bytes; /* held by pod and spec, roughly */
    unsigned base;
    struct pb_frame frames[PB_FRAMES];
    unsigned n_frames;
    unsigned skip; /* containers being passed over */
    /* what the last key of the innermost object names */
    const struct pb_member *pend;
    enum pb_have key_have; /* a label or annotation key */
    size_t key_len;
    char key[KUBE_MAX_KEY_BYTES + 1];
    /* the element being read */
    struct pb_text elem[3];
    bool controller;
    /* the record so far */
    bool ready_known, controller_found;
    size_t meta_entries, meta_bytes;
    enum pb_have image_have[KUBE_POD_MAX_CONTAINERS]; /* status's image, per container */
    struct pb_spec *spec;                             /* at most 3 * KUBE_SPEC_SCAN */
    size_t n_spec, cap_spec;
    size_t spec_seen[3]; /* entries per spec list kind */
    /* what a pods-API object may carry instead */
    bool rv_ok;
    char rv[KUBE_RV_BYTES + 1];
    int code;
    bool have_reason, have_message;
    char reason[KUBE_STATUS_MSG_BYTES + 1];
    char message[KUBE_STATUS_MSG_BYTES + 1];
    bool nomem;
};

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

/* ---- the builder ---- */

int kube_pod_builder_new(struct kube_pod_builder **out)
{
    *out = alloc_calloc(1, sizeof(**out));
    return *out ? 0 : -ENOMEM;
}

static void pb_spec_clear(struct kube_pod_builder *b)
{
    for (size_t i = 0; i < b->n_spec; i++) {
        alloc_free(b->spec[i].name);
        alloc_free(b->spec[i].image);
    }
    alloc_free(b->spec);
    b->spec = NULL;
    b->n_spec = b->cap_spec = 0;
    memset(b->spec_seen, 0, sizeof(b->spec_seen));
}

static void pb_clear(struct kube_pod_builder *b)
{
    kube_pod_release(&b->pod);
    pb_spec_clear(b);
    b->bytes = 0;
    b->n_frames = 0;
    b->skip = 0;
    b->pend = NULL;
    b->ready_known = b->controller_found = false;
    b->meta_entries = b->meta_bytes = 0;
    b->rv_ok = false;
    b->rv[0] = '\0';
    b->code = 0;
    b->have_reason = b->have_message = false;
    b->nomem = false;
}

void kube_pod_builder_free(struct kube_pod_builder *b)
{
    if (!b)
        return;
    pb_clear(b);
    alloc_free(b);
}

void kube_pod_builder_begin(struct kube_pod_builder *b, const struct jsonscan_token *begin)
{
    pb_clear(b);
    b->base = begin->depth;
    b->frames[0] = (struct pb_frame){PB_ROOT, KUBE_CONTAINER_REGULAR};
    b->n_frames = 1;
}

size_t kube_pod_builder_memory(const struct kube_pod_builder *b)
{
    return sizeof(*b) + b->bytes;
}

const char *kube_pod_builder_resource_version(const struct kube_pod_builder *b)
{
    return b->rv_ok ? b->rv : NULL;
}

int kube_pod_builder_status_code(const struct kube_pod_builder *b)
{
    return b->code;
}

const char *kube_pod_builder_status_reason(const struct kube_pod_builder *b)
{
    return b->have_reason ? b->reason : NULL;
}

const char *kube_pod_builder_status_message(const struct kube_pod_builder *b)
{
    return b->have_message ? b->message : NULL;
}

/* What a string token is worth as a value of at most @a max bytes. */
static enum pb_have pb_classify(const struct jsonscan_token *t, size_t max)
{
    if (t->flags & (JSONSCAN_HAS_NUL | JSONSCAN_REPLACED))
        return PH_INVALID;
    return t->full_len > max ? PH_OVER : PH_OK;
}

/* pod_str()'s accounting: an unusable value is counted, absent is not. */
static void pb_count(struct kube_pod_builder *b, enum pb_have h)
{
    if (h == PH_INVALID)
        b->pod.invalid++;
    else if (h == PH_OVER)
        b->pod.over_limit++;
}

/* Sets a record string (the later value wins); unusable values count and leave it "". */
static int pb_set_str(struct kube_pod_builder *b, char **dst, const struct jsonscan_token *t)
{
    enum pb_have h = t->type == JSONSCAN_STRING ? pb_classify(t, KUBE_MAX_VALUE_BYTES)
                     : t->type == JSONSCAN_NULL ? PH_ABSENT
                                                : PH_INVALID;
    pb_count(b, h);
    if (*dst) {
        b->bytes -= strlen(*dst) + 1;
        alloc_free(*dst);
        *dst = NULL;
    }
    if (h != PH_OK)
        return 0;
    if (pod_dup(dst, t->text) != 0)
        return -ENOMEM;
    b->bytes += t->len + 1;
    return 0;
}

static void pb_text_set(struct pb_text *x, const struct jsonscan_token *t, bool count_wrong)
{
    if (t->type == JSONSCAN_NULL) {
        x->have = PH_ABSENT;
        return;
    }
    if (t->type != JSONSCAN_STRING) {
        x->have = count_wrong ? PH_INVALID : PH_ABSENT;
        return;
    }
    x->have = pb_classify(t, KUBE_MAX_VALUE_BYTES);
    x->len = x->have == PH_OK ? t->len : 0;
    memcpy(x->s, t->text, x->len);
    x->s[x->len] = '\0';
}

/* An element's text as pod_str() would give it: counted, NULL unless usable. */
static const char *pb_text_get(struct kube_pod_builder *b, const struct pb_text *x)
{
    pb_count(b, x->have);
    return x->have == PH_OK ? x->s : NULL;
}

static void pb_copy_cut(char *dst, size_t cap, const struct jsonscan_token *t)
{
    size_t n = utf8_cut(t->text, t->len, cap);
    for (size_t i = 0; i < n; i++)
        dst[i] = (unsigned char)t->text[i] < 0x20 || t->text[i] == 0x7f ? ' ' : t->text[i];
    dst[n] = '\0';
}

static int pb_scalar(struct kube_pod_builder *b, const struct pb_member *m,
                     const struct jsonscan_token *t)
{
    struct kube_pod *p = &b->pod;
    switch (m->field) {
    case PF_UID:
        return pb_set_str(b, &p->uid, t);
    case PF_NAME:
        return pb_set_str(b, &p->name, t);
    case PF_NAMESPACE:
        return pb_set_str(b, &p->namespace_name, t);
    case PF_NODE_NAME:
        return pb_set_str(b, &p->node_name, t);
    case PF_PHASE:
        return pb_set_str(b, &p->phase, t);
    case PF_POD_IP:
        return pb_set_str(b, &p->pod_ip, t);
    case PF_HOST_IP:
        return pb_set_str(b, &p->host_ip, t);
    case PF_RV:
        b->rv_ok = t->type == JSONSCAN_STRING && pb_classify(t, KUBE_RV_BYTES) == PH_OK;
        if (b->rv_ok)
            memcpy(b->rv, t->text, t->len + 1);
        return 0;
    case PF_CODE: {
        /* an integer as JSON writes one: digits only */
        int code = 0;
        bool ok = t->type == JSONSCAN_NUMBER && t->len > 0 && t->len <= 3;
        for (size_t i = 0; ok && i < t->len; i++) {
            ok = t->text[i] >= '0' && t->text[i] <= '9';
            code = code * 10 + (t->text[i] - '0');
        }
        b->code = ok && code > 0 ? code : 0;
        return 0;
    }
    case PF_REASON:
        b->have_reason = t->type == JSONSCAN_STRING;
        if (b->have_reason)
            pb_copy_cut(b->reason, KUBE_STATUS_MSG_BYTES, t);
        return 0;
    case PF_MESSAGE:
        b->have_message = t->type == JSONSCAN_STRING;
        if (b->have_message)
            pb_copy_cut(b->message, KUBE_STATUS_MSG_BYTES, t);
        return 0;
    case PF_CONTROLLER:
        b->controller = t->type == JSONSCAN_TRUE;
        return 0;
    case PF_ELEM0:
    case PF_ELEM1:
    case PF_ELEM2:
        pb_text_set(&b->elem[m->field - PF_ELEM0], t, m->count_wrong);
        return 0;
    case PF_NONE:
        break;
    }
    return 0;
}

/* A label or annotation entry (pod_meta()'s rules); the key came before. */
static int pb_meta_entry(struct kube_pod_builder *b, bool annotation,
                         const struct jsonscan_token *t)
{
    struct kube_pod *p = &b->pod;
    if (b->key_have == PH_INVALID) {
        p->invalid++;
        return 0;
    }
    if (b->key_have == PH_OVER || b->meta_entries >= KUBE_POD_MAX_META) {
        p->over_limit++;
        return 0;
    }
    if (t->type != JSONSCAN_STRING || pb_classify(t, SIZE_MAX) != PH_OK) {
        p->invalid++;
        return 0;
    }
    struct labels *into = annotation ? &p->annotations : &p->labels;
    const char *v = t->text;
    size_t vl = t->len;
    if (t->full_len > KUBE_MAX_VALUE_BYTES) {
        p->over_limit++;
        if (!annotation)
            return 0;
        into = &p->annotations_cut;
        v = "";
        vl = 0;
    }
    if (b->meta_bytes + b->key_len + vl > KUBE_POD_MAX_META_BYTES) {
        p->over_limit++;
        return 0;
    }
    const char *key = b->key;
    bool twice = annotation
                     ? labels_get(&p->annotations, key) || labels_get(&p->annotations_cut, key)
                     : labels_get(&p->labels, key) != NULL;
    if (twice)
        return 0; /* a key given twice: the first one stands */
    if (labels_setn(into, key, v, vl) != 0)
        return -ENOMEM;
    b->meta_entries++;
    b->meta_bytes += b->key_len + vl;
    b->bytes += b->key_len + vl + 2 + sizeof(struct label);
    return 0;
}

static void pb_elem_reset(struct kube_pod_builder *b)
{
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(b->elem); i++)
        b->elem[i].have = PH_ABSENT;
    b->controller = false;
}

/* An array element ended: keep what it gave. */
static int pb_elem_end(struct kube_pod_builder *b, const struct pb_frame *f)
{
    struct kube_pod *p = &b->pod;
    switch (f->node) {
    case PB_OWNER:
        if (!b->controller || b->controller_found)
            return 0;
        b->controller_found = true;
        if (pod_dup(&p->controller_kind, pb_text_get(b, &b->elem[0])) != 0 ||
            pod_dup(&p->controller_name, pb_text_get(b, &b->elem[1])) != 0)
            return -ENOMEM;
        b->bytes += strlen(p->controller_kind) + strlen(p->controller_name) + 2;
        return 0;
    case PB_COND: {
        if (b->ready_known || b->elem[0].have != PH_OK || strcmp(b->elem[0].s, "Ready") != 0)
            return 0;
        b->ready_known = true;
        const char *s = b->elem[1].have == PH_OK ? b->elem[1].s : "";
        p->ready = strcmp(s, "True") == 0    ? KUBE_READY_TRUE
                   : strcmp(s, "False") == 0 ? KUBE_READY_FALSE
                                             : KUBE_READY_UNKNOWN;
        return 0;
    }
    case PB_SPEC_CTR: {
        size_t k = (size_t)f->kind;
        if (b->spec_seen[k] >= KUBE_SPEC_SCAN)
            return 0;
        b->spec_seen[k]++;
        if (b->elem[0].have != PH_OK || b->elem[0].len == 0)
            return 0; /* no name: no container of status can match it */
        if (b->n_spec == b->cap_spec) {
            size_t cap = b->cap_spec ? 2 * b->cap_spec : 8;
            struct pb_spec *v = alloc_realloc(b->spec, cap * sizeof(*v));
            if (!v)
                return -ENOMEM;
            b->bytes += (cap - b->cap_spec) * sizeof(*v);
            b->spec = v;
            b->cap_spec = cap;
        }
        struct pb_spec *e = &b->spec[b->n_spec++];
        memset(e, 0, sizeof(*e));
        e->kind = f->kind;
        e->image_have = b->elem[1].have;
        if (pod_dup(&e->name, b->elem[0].s) != 0)
            return -ENOMEM;
        if (e->image_have == PH_OK && pod_dup(&e->image, b->elem[1].s) != 0)
            return -ENOMEM;
        b->bytes += b->elem[0].len + b->elem[1].len + 2;
        return 0;
    }
    case PB_STATUS_CTR: {
        if (p->n_containers >= KUBE_POD_MAX_CONTAINERS) {
            p->over_limit++;
            return 0;
        }
        if (!p->containers) {
            p->containers = alloc_calloc(KUBE_POD_MAX_CONTAINERS, sizeof(*p->containers));
            if (!p->containers)
                return -ENOMEM;
            b->bytes += KUBE_POD_MAX_CONTAINERS * sizeof(*p->containers);
        }
        size_t i = p->n_containers++; /* counted first, so release frees a half-made entry */
        struct kube_container *c = &p->containers[i];
        c->kind = f->kind;
        b->image_have[i] = b->elem[2].have;
        if (pod_dup(&c->name, pb_text_get(b, &b->elem[0])) != 0 ||
            pod_dup(&c->id_full, pb_text_get(b, &b->elem[1])) != 0 ||
            pod_dup(&c->image, b->elem[2].have == PH_OK ? b->elem[2].s : NULL) != 0)
            return -ENOMEM;
        kube_container_id_parse(c->id_full, c->id);
        b->bytes += strlen(c->name) + strlen(c->id_full) + strlen(c->image) + 3;
        return 0;
    }
    default:
        return 0;
    }
}

static const struct pb_member *pb_lookup(enum pb_node parent, const char *key)
{
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(pb_members); i++)
        if (pb_members[i].parent == parent && strcmp(pb_members[i].key, key) == 0)
            return &pb_members[i];
    return NULL;
}

static bool pb_is_map(enum pb_node n)
{
    return n == PB_LABELS || n == PB_ANNOTATIONS;
}

/* The element node of array node @a n, or PB_NONE. */
static enum pb_node pb_element(enum pb_node n)
{
    switch (n) {
    case PB_OWNERS:
        return PB_OWNER;
    case PB_SPEC_LIST:
        return PB_SPEC_CTR;
    case PB_CONDS:
        return PB_COND;
    case PB_STATUS_LIST:
        return PB_STATUS_CTR;
    default:
        return PB_NONE;
    }
}

static void pb_push(struct kube_pod_builder *b, enum pb_node node, enum kube_container_kind kind)
{
    if (b->n_frames >= PB_FRAMES) {
        b->skip = 1; /* cannot happen with the table above */
        return;
    }
    b->frames[b->n_frames++] = (struct pb_frame){node, kind};
    if (pb_element(b->frames[b->n_frames - 2].node) == node)
        pb_elem_reset(b);
}

/* A value (scalar or container start) at the innermost position. */
static int pb_value(struct kube_pod_builder *b, const struct jsonscan_token *t)
{
    const struct pb_frame *top = &b->frames[b->n_frames - 1];
    bool begin = t->type == JSONSCAN_OBJECT_BEGIN || t->type == JSONSCAN_ARRAY_BEGIN;
    if (pb_is_map(top->node)) {
        int rc = pb_meta_entry(b, top->node == PB_ANNOTATIONS, t);
        if (begin)
            b->skip = 1;
        return rc;
    }
    enum pb_node elem = pb_element(top->node);
    if (elem != PB_NONE) {
        /* an array element */
        if (t->type == JSONSCAN_OBJECT_BEGIN) {
            pb_push(b, elem, top->kind);
            return 0;
        }
        if (top->node == PB_STATUS_LIST)
            b->pod.invalid++;
        if (begin)
            b->skip = 1;
        return 0;
    }
    const struct pb_member *m = b->pend;
    b->pend = NULL;
    if (!m) {
        if (begin)
            b->skip = 1;
        return 0;
    }
    if (m->field != PF_NONE) {
        if (begin) {
            if (m->count_wrong)
                b->pod.invalid++;
            b->skip = 1;
            return 0;
        }
        return pb_scalar(b, m, t);
    }
    /* a container node */
    bool fits = m->array ? t->type == JSONSCAN_ARRAY_BEGIN : t->type == JSONSCAN_OBJECT_BEGIN;
    if (fits) {
        pb_push(b, m->child, m->kind);
        return 0;
    }
    /* a map that is null is absent; a list present with any other type,
     * null included, counts as invalid (as pods were counted before the
     * streaming decoder, and still are) */
    if (m->count_wrong && (m->array || t->type != JSONSCAN_NULL))
        b->pod.invalid++;
    if (begin)
        b->skip = 1;
    return 0;
}

int kube_pod_builder_token(struct kube_pod_builder *b, const struct jsonscan_token *t)
{
    if (b->nomem)
        return -ENOMEM;
    if (b->n_frames == 0)
        return 1; /* not begun, or already ended */
    bool begin = t->type == JSONSCAN_OBJECT_BEGIN || t->type == JSONSCAN_ARRAY_BEGIN;
    bool end = t->type == JSONSCAN_OBJECT_END || t->type == JSONSCAN_ARRAY_END;
    if (b->skip > 0) {
        if (begin)
            b->skip++;
        else if (end)
            b->skip--;
        return 0;
    }
    int rc = 0;
    if (end) {
        struct pb_frame f = b->frames[--b->n_frames];
        if (b->n_frames == 0)
            return 1; /* the object's own end */
        if (pb_element(b->frames[b->n_frames - 1].node) == f.node)
            rc = pb_elem_end(b, &f);
        b->pend = NULL;
    } else if (t->type == JSONSCAN_KEY) {
        enum pb_node n = b->frames[b->n_frames - 1].node;
        if (pb_is_map(n)) {
            b->key_have = t->full_len == 0 ? PH_INVALID : pb_classify(t, KUBE_MAX_KEY_BYTES);
            b->key_len = b->key_have == PH_OK ? t->len : 0;
            memcpy(b->key, t->text, b->key_len);
            b->key[b->key_len] = '\0';
        } else {
            b->pend = pb_lookup(n, t->text);
        }
    } else {
        rc = pb_value(b, t);
        if (rc == 0 && begin && b->skip > 0)
            return 2; /* nothing inside is wanted: the scanner may pass it over */
    }
    if (rc != 0)
        b->nomem = true;
    return rc;
}

int kube_pod_builder_take(struct kube_pod_builder *b, struct kube_pod *out)
{
    memset(out, 0, sizeof(*out));
    struct kube_pod *p = &b->pod;
    int rc = -EINVAL;
    if (b->nomem) {
        rc = -ENOMEM;
        goto fail;
    }
    if (!p->uid || !*p->uid)
        goto fail;
    /* regular containers first, then init, then ephemeral, each in document
     * order (the lists may come in any order): a stable insertion sort */
    for (size_t i = 1; i < p->n_containers; i++) {
        struct kube_container c = p->containers[i];
        enum pb_have h = b->image_have[i];
        size_t j = i;
        for (; j > 0 && p->containers[j - 1].kind > c.kind; j--) {
            p->containers[j] = p->containers[j - 1];
            b->image_have[j] = b->image_have[j - 1];
        }
        p->containers[j] = c;
        b->image_have[j] = h;
    }
    /* spec's image for each container, else status's (pod_spec_image()) */
    for (size_t i = 0; i < p->n_containers; i++) {
        struct kube_container *c = &p->containers[i];
        const struct pb_spec *e = NULL;
        for (size_t j = 0; *c->name && j < b->n_spec && !e; j++)
            if (b->spec[j].kind == c->kind && strcmp(b->spec[j].name, c->name) == 0)
                e = &b->spec[j];
        pb_count(b, e ? e->image_have : PH_ABSENT);
        if (e && e->image) {
            char *img = alloc_strdup(e->image);
            if (!img) {
                rc = -ENOMEM;
                goto fail;
            }
            alloc_free(c->image);
            c->image = img;
        } else {
            pb_count(b, b->image_have[i]);
        }
    }
    char **fields[] = {&p->namespace_name, &p->name,    &p->node_name,
                       &p->pod_ip,         &p->host_ip, &p->phase};
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(fields); i++)
        if (!*fields[i] && pod_dup(fields[i], NULL) != 0) {
            rc = -ENOMEM;
            goto fail;
        }
    *out = *p;
    memset(p, 0, sizeof(*p));
    pb_spec_clear(b);
    b->bytes = 0;
    return 0;
fail:
    kube_pod_release(p);
    pb_spec_clear(b);
    b->bytes = 0;
    return rc;
}

struct pb_text_ctx {
    struct kube_pod_builder *b;
    struct jsonscan *s;
    bool begun;
    int rc;
};

static int pb_text_token(void *arg, const struct jsonscan_token *t)
{
    struct pb_text_ctx *c = arg;
    if (t->type == JSONSCAN_END)
        return 0;
    if (!c->begun) {
        if (t->type != JSONSCAN_OBJECT_BEGIN)
            return c->rc = -EINVAL;
        kube_pod_builder_begin(c->b, t);
        c->begun = true;
        return 0;
    }
    int rc = kube_pod_builder_token(c->b, t);
    if (rc == 2)
        jsonscan_skip(c->s);
    return rc < 0 ? (c->rc = rc) : 0;
}

int kube_pod_from_text(const void *text, size_t len, struct kube_pod *out)
{
    memset(out, 0, sizeof(*out));
    struct kube_pod_builder *b = NULL;
    struct jsonscan *s = NULL;
    int rc = kube_pod_builder_new(&b);
    if (rc == 0)
        rc = jsonscan_new(JSONSCAN_MAX_DEPTH, 4096, 0, &s);
    if (rc != 0)
        goto out;
    struct pb_text_ctx c = {b, s, false, 0};
    rc = jsonscan_feed(s, text, len, pb_text_token, &c);
    if (rc == 0)
        rc = jsonscan_finish(s, pb_text_token, &c);
    if (rc == -ELOOP)
        rc = -EBADMSG;
    if (rc == 0)
        rc = kube_pod_builder_take(b, out);
out:
    jsonscan_free(s);
    kube_pod_builder_free(b);
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
