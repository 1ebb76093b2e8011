/* SPDX-License-Identifier: MIT */
/*
 * kube_index.c: pods by uid, container ids by id, grace, mark and sweep (see
 * kube_index.h). Two small open-addressing tables (linear probing, deletion
 * by backward shift, at most half full) with string keys the table owns.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/hash.h"
#include "discovery/kube_index.h"

#define KUBE_POD_MAX_IDS (2 * KUBE_POD_MAX_CONTAINERS)
/* per heap block: a header and the rounding (see index_labels_bytes()) */
#define KUBE_INDEX_ALLOC_OVERHEAD 16

struct kmap_slot {
    char *key; /* NULL: empty */
    uint64_t hash;
    void *val;
};

struct kmap {
    struct kmap_slot *v;
    size_t cap; /* a power of two, or 0 */
    size_t n;
};

static uint64_t kmap_hash(const char *s)
{
    return hash_fmix64(hash_str(s));
}

static struct kmap_slot *kmap_find(const struct kmap *m, const char *key, uint64_t h)
{
    if (m->cap == 0)
        return NULL;
    for (size_t i = h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        struct kmap_slot *s = &m->v[i];
        if (!s->key)
            return NULL;
        if (s->hash == h && strcmp(s->key, key) == 0)
            return s;
    }
}

static void *kmap_get(const struct kmap *m, const char *key)
{
    struct kmap_slot *s = kmap_find(m, key, kmap_hash(key));
    return s ? s->val : NULL;
}

static void kmap_place(struct kmap_slot *v, size_t cap, struct kmap_slot s)
{
    size_t i = s.hash & (cap - 1);
    while (v[i].key)
        i = (i + 1) & (cap - 1);
    v[i] = s;
}

/* Sets @a key (copied) to @a val. Returns 0 or -ENOMEM (unchanged). */
static int kmap_put(struct kmap *m, const char *key, void *val)
{
    uint64_t h = kmap_hash(key);
    struct kmap_slot *s = kmap_find(m, key, h);
    if (s) {
        s->val = val;
        return 0;
    }
    if ((m->n + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 16;
        struct kmap_slot *v = alloc_calloc(cap, sizeof(*v));
        if (!v)
            return -ENOMEM;
        for (size_t i = 0; i < m->cap; i++)
            if (m->v[i].key)
                kmap_place(v, cap, m->v[i]);
        alloc_free(m->v);
        m->v = v;
        m->cap = cap;
    }
    char *k = alloc_strdup(key);
    if (!k)
        return -ENOMEM;
    kmap_place(m->v, m->cap, (struct kmap_slot){k, h, val});
    m->n++;
    return 0;
}

static void kmap_del(struct kmap *m, const char *key)
{
    struct kmap_slot *s = kmap_find(m, key, kmap_hash(key));
    if (!s)
        return;
    alloc_free(s->key);
    size_t mask = m->cap - 1, i = (size_t)(s - m->v);
    m->v[i] = (struct kmap_slot){0};
    m->n--;
    /* backward shift: move later entries of the run up if their home allows */
    for (size_t j = (i + 1) & mask; m->v[j].key; j = (j + 1) & mask) {
        size_t home = m->v[j].hash & mask;
        bool movable = (i <= j) ? (home <= i || home > j) : (home <= i && home > j);
        if (movable) {
            m->v[i] = m->v[j];
            m->v[j] = (struct kmap_slot){0};
            i = j;
        }
    }
}

static void kmap_release(struct kmap *m)
{
    for (size_t i = 0; i < m->cap; i++)
        alloc_free(m->v[i].key);
    alloc_free(m->v);
    memset(m, 0, sizeof(*m));
}

struct kube_index_ctr {
    char id[KUBE_CONTAINER_ID_LEN + 1];
    struct labels labels; /* the container's own labels (kube_pod_container_meta_labels) */
    uint64_t rev;
    uint64_t gone_at; /* when it left the pod */
    bool gone;        /* in grace */
    bool seen;        /* named by the record being applied */
};

struct kube_index_pod {
    char *uid;
    struct labels labels; /* pod-level labels (kube_pod_meta_labels) */
    uint64_t labels_hash;
    struct kube_index_ctr *ctrs; /* at most KUBE_POD_MAX_IDS */
    size_t n_ctrs, cap_ctrs;
    size_t at; /* position in kube_index.pods */
    size_t bytes;
    uint64_t deleted_at;
    bool deleted;
    bool marked;
};

struct kube_index {
    struct kmap by_uid; /* uid -> struct kube_index_pod */
    struct kmap by_id;  /* container id -> struct kube_index_pod */
    struct kube_index_pod **pods;
    size_t n_pods, cap_pods;
    size_t max_pods;
    uint64_t grace_ns;
    size_t bytes;
    uint64_t generation;
    uint64_t over_cap, evicted, duplicate_ids;
    bool relisting;    /* between relist_begin and relist_end */
    size_t evict_from; /* pods before it are marked, or deleted: see index_evict_unlisted() */
};

/*
 * What a label set costs on the heap, near enough: its strings, its array
 * entry, and the allocator's own overhead per string (glibc: 8 bytes of
 * header, sizes rounded up to 16), so that KUBE_INDEX_MAX_BYTES bounds the
 * resident size and not just the text.
 */
static size_t index_labels_bytes(const struct labels *ls)
{
    size_t n = 0;
    for (size_t i = 0; i < ls->n; i++)
        n += strlen(ls->v[i].name) + strlen(ls->v[i].value) + 2 + sizeof(struct label) +
             2 * KUBE_INDEX_ALLOC_OVERHEAD;
    return n;
}

int kube_index_new(size_t max_pods, uint64_t grace_ns, struct kube_index **out)
{
    *out = NULL;
    struct kube_index *ix = alloc_calloc(1, sizeof(*ix));
    if (!ix)
        return -ENOMEM;
    ix->max_pods = max_pods ? max_pods : KUBE_INDEX_MAX_PODS_DEFAULT;
    ix->grace_ns = grace_ns;
    *out = ix;
    return 0;
}

static void index_ctr_release(struct kube_index_ctr *c)
{
    labels_release(&c->labels);
}

/* Removes container @a i of @a p from the pod and the id table. */
static void index_ctr_remove(struct kube_index *ix, struct kube_index_pod *p, size_t i)
{
    struct kube_index_ctr *c = &p->ctrs[i];
    if (kmap_get(&ix->by_id, c->id) == p)
        kmap_del(&ix->by_id, c->id);
    size_t b = index_labels_bytes(&c->labels);
    p->bytes -= b;
    ix->bytes -= b;
    index_ctr_release(c);
    p->ctrs[i] = p->ctrs[p->n_ctrs - 1];
    memset(&p->ctrs[p->n_ctrs - 1], 0, sizeof(p->ctrs[0]));
    p->n_ctrs--;
}

static void index_pod_remove(struct kube_index *ix, struct kube_index_pod *p)
{
    if (p->n_ctrs > 0)
        ix->generation++;
    while (p->n_ctrs > 0)
        index_ctr_remove(ix, p, p->n_ctrs - 1);
    ix->bytes -= p->bytes;
    kmap_del(&ix->by_uid, p->uid);
    size_t at = p->at;
    ix->pods[at] = ix->pods[ix->n_pods - 1];
    ix->pods[at]->at = at;
    ix->n_pods--;
    labels_release(&p->labels);
    alloc_free(p->ctrs);
    alloc_free(p->uid);
    alloc_free(p);
}

void kube_index_free(struct kube_index *ix)
{
    if (!ix)
        return;
    while (ix->n_pods > 0)
        index_pod_remove(ix, ix->pods[ix->n_pods - 1]);
    alloc_free(ix->pods);
    kmap_release(&ix->by_uid);
    kmap_release(&ix->by_id);
    alloc_free(ix);
}

/* Evicts the pod deleted longest ago; false when no pod is in grace. */
static bool index_evict_deleted(struct kube_index *ix)
{
    struct kube_index_pod *victim = NULL;
    for (size_t i = 0; i < ix->n_pods; i++) {
        struct kube_index_pod *p = ix->pods[i];
        if (p->deleted && (!victim || p->deleted_at < victim->deleted_at))
            victim = p;
    }
    if (!victim)
        return false;
    index_pod_remove(ix, victim);
    ix->evicted++;
    return true;
}

/*
 * During a relist, evicts a live pod the list has not named (yet): the
 * relist replaces the whole set, so a pod the server lists now takes the
 * place of one it may no longer have (one that comes later in the list is
 * added back then). False when every pod was named. The scan resumes where
 * it stopped: a pod before evict_from is marked or deleted, and stays so
 * until the relist ends (a removal moves the last pod into the hole, which
 * is looked at next).
 */
static bool index_evict_unlisted(struct kube_index *ix)
{
    for (; ix->evict_from < ix->n_pods; ix->evict_from++) {
        struct kube_index_pod *p = ix->pods[ix->evict_from];
        if (!p->marked && !p->deleted) {
            index_pod_remove(ix, p);
            ix->evicted++;
            return true;
        }
    }
    return false;
}

static int index_pod_new(struct kube_index *ix, const char *uid, struct kube_index_pod **out)
{
    *out = NULL;
    while (ix->n_pods >= ix->max_pods || ix->bytes >= KUBE_INDEX_MAX_BYTES) {
        if (index_evict_deleted(ix))
            continue;
        if (ix->relisting && index_evict_unlisted(ix))
            continue;
        ix->over_cap++;
        return -ENOSPC;
    }
    if (ix->n_pods == ix->cap_pods) {
        size_t cap = ix->cap_pods ? ix->cap_pods * 2 : 16;
        /* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers */
        struct kube_index_pod **v = alloc_realloc(ix->pods, cap * sizeof(*v));
        if (!v)
            return -ENOMEM;
        ix->pods = v;
        ix->cap_pods = cap;
    }
    struct kube_index_pod *p = alloc_calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    p->uid = alloc_strdup(uid);
    if (!p->uid || kmap_put(&ix->by_uid, uid, p) != 0) {
        alloc_free(p->uid);
        alloc_free(p);
        return -ENOMEM;
    }
    p->at = ix->n_pods;
    ix->pods[ix->n_pods++] = p;
    *out = p;
    return 0;
}

static struct kube_index_ctr *index_pod_ctr(struct kube_index_pod *p, const char *id)
{
    for (size_t i = 0; i < p->n_ctrs; i++)
        if (strcmp(p->ctrs[i].id, id) == 0)
            return &p->ctrs[i];
    return NULL;
}

/* Makes room for one more id in @a p: drops the container in grace that went first. */
static void index_pod_room(struct kube_index *ix, struct kube_index_pod *p)
{
    if (p->n_ctrs < KUBE_POD_MAX_IDS)
        return;
    size_t victim = SIZE_MAX;
    for (size_t i = 0; i < p->n_ctrs; i++)
        if (p->ctrs[i].gone && (victim == SIZE_MAX || p->ctrs[i].gone_at < p->ctrs[victim].gone_at))
            victim = i;
    if (victim != SIZE_MAX) {
        index_ctr_remove(ix, p, victim);
        ix->evicted++;
        ix->generation++;
    }
}

static uint64_t index_rev(uint64_t pod_hash, const struct labels *ctr)
{
    return hash_combine(pod_hash, labels_hash(ctr));
}

int kube_index_upsert(struct kube_index *ix, const struct kube_pod *pod, uint64_t now)
{
    if (!pod->uid || !*pod->uid)
        return -EINVAL;
    struct labels pl, cl;
    labels_init(&pl);
    labels_init(&cl);
    int rc = kube_pod_meta_labels(pod, &pl);
    if (rc != 0)
        goto out;
    struct kube_index_pod *p = kmap_get(&ix->by_uid, pod->uid);
    if (!p) {
        rc = index_pod_new(ix, pod->uid, &p);
        if (rc != 0)
            goto out;
    }
    bool visible = false;
    p->deleted = false;
    p->marked = true;
    if (!labels_equal(&p->labels, &pl)) {
        size_t b = index_labels_bytes(&pl), old = index_labels_bytes(&p->labels);
        labels_release(&p->labels);
        p->labels = pl;
        labels_init(&pl);
        p->labels_hash = labels_hash(&p->labels);
        p->bytes = p->bytes - old + b;
        ix->bytes = ix->bytes - old + b;
        for (size_t i = 0; i < p->n_ctrs; i++)
            p->ctrs[i].rev = index_rev(p->labels_hash, &p->ctrs[i].labels);
        visible = p->n_ctrs > 0;
    }
    /* containers of the record: new, changed or back */
    for (size_t i = 0; i < p->n_ctrs; i++)
        p->ctrs[i].seen = false;
    for (size_t i = 0; i < pod->n_containers; i++) {
        const struct kube_container *c = &pod->containers[i];
        if (!c->id[0])
            continue;
        struct kube_index_pod *owner = kmap_get(&ix->by_id, c->id);
        if (owner && owner != p) {
            ix->duplicate_ids++;
            continue;
        }
        labels_release(&cl);
        rc = kube_pod_container_meta_labels(pod, i, &cl);
        if (rc != 0)
            goto out;
        struct kube_index_ctr *e = index_pod_ctr(p, c->id);
        if (!e) {
            index_pod_room(ix, p);
            if (p->n_ctrs >= KUBE_POD_MAX_IDS)
                continue; /* cannot happen: at most KUBE_POD_MAX_CONTAINERS are live */
            if (p->n_ctrs == p->cap_ctrs) {
                size_t cap = p->cap_ctrs ? p->cap_ctrs * 2 : 4;
                struct kube_index_ctr *v = alloc_realloc(p->ctrs, cap * sizeof(*v));
                if (!v) {
                    rc = -ENOMEM;
                    goto out;
                }
                p->ctrs = v;
                p->cap_ctrs = cap;
            }
            rc = kmap_put(&ix->by_id, c->id, p);
            if (rc != 0)
                goto out;
            e = &p->ctrs[p->n_ctrs++];
            memset(e, 0, sizeof(*e));
            memcpy(e->id, c->id, sizeof(e->id));
            visible = true;
        }
        e->seen = true;
        e->gone = false;
        e->gone_at = 0;
        if (!labels_equal(&e->labels, &cl)) {
            size_t b = index_labels_bytes(&cl), old = index_labels_bytes(&e->labels);
            labels_release(&e->labels);
            e->labels = cl;
            labels_init(&cl);
            p->bytes = p->bytes - old + b;
            ix->bytes = ix->bytes - old + b;
            uint64_t rev = index_rev(p->labels_hash, &e->labels);
            if (rev != e->rev)
                visible = true;
            e->rev = rev;
        }
    }
    /* live containers the record no longer has: into grace */
    for (size_t i = 0; i < p->n_ctrs; i++) {
        if (!p->ctrs[i].seen && !p->ctrs[i].gone) {
            p->ctrs[i].gone = true;
            p->ctrs[i].gone_at = now;
        }
    }
    if (visible)
        ix->generation++;
    rc = 0;
out:
    labels_release(&pl);
    labels_release(&cl);
    return rc;
}

void kube_index_delete(struct kube_index *ix, const char *uid, uint64_t now)
{
    struct kube_index_pod *p = uid ? kmap_get(&ix->by_uid, uid) : NULL;
    if (!p || p->deleted)
        return;
    p->deleted = true;
    p->deleted_at = now;
}

void kube_index_relist_begin(struct kube_index *ix)
{
    for (size_t i = 0; i < ix->n_pods; i++)
        ix->pods[i]->marked = false;
    ix->relisting = true;
    ix->evict_from = 0;
}

void kube_index_relist_end(struct kube_index *ix, uint64_t now)
{
    ix->relisting = false;
    for (size_t i = 0; i < ix->n_pods; i++) {
        struct kube_index_pod *p = ix->pods[i];
        if (!p->marked && !p->deleted) {
            p->deleted = true;
            p->deleted_at = now;
        }
    }
}

static bool index_expired(const struct kube_index *ix, uint64_t since, uint64_t now)
{
    return now >= since && now - since >= ix->grace_ns;
}

void kube_index_expire(struct kube_index *ix, uint64_t now)
{
    for (size_t i = ix->n_pods; i-- > 0;) {
        struct kube_index_pod *p = ix->pods[i];
        if (p->deleted && index_expired(ix, p->deleted_at, now)) {
            index_pod_remove(ix, p);
            continue;
        }
        for (size_t j = p->n_ctrs; j-- > 0;) {
            if (p->ctrs[j].gone && index_expired(ix, p->ctrs[j].gone_at, now)) {
                index_ctr_remove(ix, p, j);
                ix->generation++;
            }
        }
    }
}

int kube_index_lookup(const struct kube_index *ix, const char *id, struct labels *out,
                      uint64_t *rev)
{
    char key[KUBE_CONTAINER_ID_LEN + 1];
    if (!kube_container_id_parse(id, key))
        return 0;
    struct kube_index_pod *p = kmap_get(&ix->by_id, key);
    struct kube_index_ctr *c = p ? index_pod_ctr(p, key) : NULL;
    if (!c)
        return 0;
    if (rev)
        *rev = c->rev;
    if (!out)
        return 1;
    for (size_t i = 0; i < p->labels.n; i++)
        if (labels_set(out, p->labels.v[i].name, p->labels.v[i].value) != 0)
            return -ENOMEM;
    for (size_t i = 0; i < c->labels.n; i++)
        if (labels_set(out, c->labels.v[i].name, c->labels.v[i].value) != 0)
            return -ENOMEM;
    return 1;
}

uint64_t kube_index_generation(const struct kube_index *ix)
{
    return ix->generation;
}

void kube_index_stats(const struct kube_index *ix, struct kube_index_stats *out)
{
    memset(out, 0, sizeof(*out));
    out->generation = ix->generation;
    for (size_t i = 0; i < ix->n_pods; i++) {
        if (ix->pods[i]->deleted)
            out->pods_terminating++;
        else
            out->pods++;
    }
    out->containers = ix->by_id.n;
    out->bytes = ix->bytes;
    out->over_cap = ix->over_cap;
    out->evicted = ix->evicted;
    out->duplicate_ids = ix->duplicate_ids;
}

static int index_id_cmp(const void *a, const void *b)
{
    return strcmp(a, b);
}

int kube_index_ids(const struct kube_index *ix, char (**ids)[KUBE_CONTAINER_ID_LEN + 1], size_t *n)
{
    *ids = NULL;
    *n = 0;
    size_t cnt = ix->by_id.n;
    char(*v)[KUBE_CONTAINER_ID_LEN + 1] = alloc_calloc(cnt ? cnt : 1, sizeof(*v));
    if (!v)
        return -ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < ix->by_id.cap && k < cnt; i++)
        if (ix->by_id.v[i].key)
            memcpy(v[k++], ix->by_id.v[i].key, KUBE_CONTAINER_ID_LEN + 1);
    qsort(v, k, sizeof(*v), index_id_cmp);
    *ids = v;
    *n = k;
    return 0;
}
