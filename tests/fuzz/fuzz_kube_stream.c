/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the Kubernetes pod-metadata path of agent/discovery/: bytes ->
 * kube_stream (a watch stream, or a PodList) -> kube_pod records and their
 * labels -> kube_index. The first byte chooses the mode (bit 0: 0 watch, 1
 * list) and seeds how the rest is cut into chunks (as libcurl's write
 * callback would hand it over); the rest is the body. Every label name made
 * must be valid, every container id the index lists must be found again,
 * and the decoder's memory stays what it was whatever the body holds (it
 * keeps one record, of bounded size).
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "discovery/kube_index.h"
#include "discovery/kube_pod.h"
#include "discovery/kube_stream.h"

#define SEC 1000000000ull

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct fuzz_ctx {
    struct kube_index *ix;
    uint64_t now;
};

static void fuzz_check_labels(const struct kube_pod *p)
{
    for (size_t i = 0; i < p->n_containers; i++) {
        struct labels ls;
        labels_init(&ls);
        if (kube_pod_meta_labels(p, &ls) == 0 && kube_pod_container_meta_labels(p, i, &ls) == 0)
            for (size_t j = 0; j < ls.n; j++)
                PYPROFD_ASSERT(labels_valid_name(ls.v[j].name));
        labels_release(&ls);
    }
}

static int fuzz_pod(struct fuzz_ctx *c, const struct kube_pod *p, bool deleted)
{
    if (!p)
        return 0;
    PYPROFD_ASSERT(p->uid && *p->uid);
    PYPROFD_ASSERT(p->n_containers <= KUBE_POD_MAX_CONTAINERS);
    PYPROFD_ASSERT(p->labels.n + p->annotations.n + p->annotations_cut.n <= KUBE_POD_MAX_META);
    fuzz_check_labels(p);
    if (deleted) {
        kube_index_delete(c->ix, p->uid, c->now);
    } else {
        int rc = kube_index_upsert(c->ix, p, c->now);
        PYPROFD_ASSERT(rc == 0 || rc == -ENOSPC || rc == -ENOMEM);
    }
    return 0;
}

static int fuzz_event(void *arg, const struct kube_event *ev)
{
    struct fuzz_ctx *c = arg;
    c->now += 7 * SEC;
    switch (ev->type) {
    case KUBE_EVENT_ADDED:
    case KUBE_EVENT_MODIFIED:
        return fuzz_pod(c, ev->pod, false);
    case KUBE_EVENT_DELETED:
        return fuzz_pod(c, ev->pod, true);
    case KUBE_EVENT_GONE:
        /* a relist that finds nothing */
        kube_index_relist_begin(c->ix);
        kube_index_relist_end(c->ix, c->now);
        break;
    case KUBE_EVENT_BOOKMARK:
        PYPROFD_ASSERT(ev->resource_version);
        break;
    case KUBE_EVENT_ERROR:
    case KUBE_EVENT_UNKNOWN:
        break;
    }
    kube_index_expire(c->ix, c->now);
    return 0;
}

static int fuzz_list_pod(void *arg, const struct kube_pod *pod)
{
    return fuzz_pod(arg, pod, false);
}

static void fuzz_check_index(const struct kube_index *ix)
{
    char(*ids)[KUBE_CONTAINER_ID_LEN + 1] = NULL;
    size_t n = 0;
    if (kube_index_ids(ix, &ids, &n) != 0)
        return;
    for (size_t i = 0; i < n; i++) {
        struct labels ls;
        labels_init(&ls);
        uint64_t rev = 0;
        int rc = kube_index_lookup(ix, ids[i], &ls, &rev);
        PYPROFD_ASSERT(rc == 1 || rc == -ENOMEM);
        for (size_t j = 0; j < ls.n; j++)
            PYPROFD_ASSERT(labels_valid_name(ls.v[j].name));
        labels_release(&ls);
    }
    alloc_free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    uint8_t mode = data[0];
    data++;
    size--;
    struct fuzz_ctx c = {NULL, SEC};
    if (kube_index_new(64, 30 * SEC, &c.ix) != 0)
        return 0;
    struct kube_stream *s = NULL;
    bool list = mode & 1;
    if (kube_stream_new(list ? KUBE_STREAM_LIST : KUBE_STREAM_WATCH, &s) != 0) {
        kube_index_free(c.ix);
        return 0;
    }
    uint32_t rnd = 0x9E3779B9u ^ mode;
    size_t off = 0;
    int rc = 0;
    /* the fixed part: scanner and builder; a record held during a callback comes and goes */
    size_t mem = kube_stream_memory(s);
    if (list)
        kube_index_relist_begin(c.ix);
    while (off < size && rc == 0) {
        rnd = rnd * 1103515245u + 12345u;
        size_t n = 1 + (rnd >> 16) % ((mode & 2) ? 16 : 4096);
        if (n > size - off)
            n = size - off;
        rc = list ? kube_stream_list_feed(s, data + off, n, fuzz_list_pod, &c)
                  : kube_stream_feed(s, data + off, n, fuzz_event, &c);
        PYPROFD_ASSERT(kube_stream_memory(s) <= mem + (1u << 20));
        off += n;
    }
    if (list && rc == 0) {
        struct kube_list_meta meta;
        if (kube_stream_list_finish(s, &meta) == 0) {
            PYPROFD_ASSERT(strlen(meta.resource_version) <= KUBE_MAX_TOKEN_BYTES);
            PYPROFD_ASSERT(meta.skipped <= meta.items);
            kube_index_relist_end(c.ix, c.now);
        }
    }
    fuzz_check_index(c.ix);
    kube_index_expire(c.ix, c.now + 3600 * SEC);
    struct kube_index_stats st;
    kube_index_stats(c.ix, &st);
    PYPROFD_ASSERT(st.pods + st.pods_terminating <= 64);
    kube_stream_free(s);
    kube_index_free(c.ix);
    return 0;
}
