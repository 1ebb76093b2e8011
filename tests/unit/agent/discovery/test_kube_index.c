/* SPDX-License-Identifier: MIT */
/*
 * Tests for agent/discovery/kube_index.c: add, modify (visible or not),
 * container restarts, delete with grace, relist (mark and sweep), revision
 * stability, the pod cap (and a relist of a full index), duplicate ids,
 * allocation failures.
 */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include "base/alloc.h"
#include "base/buf.h"
#include "discovery/kube_index.h"
#include "fixture.h"

#define SEC   1000000000ull
#define GRACE (60 * SEC)

/* A 64-hex id from a small number. */
static const char *cid(unsigned n, char buf[65])
{
    snprintf(buf, 65, "%064x", n);
    return buf;
}

/*
 * A pod @a uid named @a name with label app=@a app, an rv, and one container
 * per entry of @a ids (0 ends the list), "c<i>" with id cid(ids[i]).
 */
static void make_pod(struct kube_pod *p, const char *uid, const char *name, const char *app,
                     const char *rv, const unsigned *ids)
{
    struct buf b;
    buf_init(&b, 1 << 16);
    assert_int_equal(buf_addf(&b,
                              "{\"metadata\":{\"uid\":\"%s\",\"name\":\"%s\",\"namespace\":\"ns\","
                              "\"resourceVersion\":\"%s\",\"labels\":{\"app\":\"%s\"}},"
                              "\"spec\":{\"nodeName\":\"n1\"},\"status\":{\"phase\":\"Running\","
                              "\"startTime\":\"%s\",\"containerStatuses\":[",
                              uid, name, rv, app, rv),
                     0);
    char id[65];
    for (size_t i = 0; ids && ids[i]; i++)
        assert_int_equal(buf_addf(&b, "%s{\"name\":\"c%zu\",\"containerID\":\"containerd://%s\"}",
                                  i ? "," : "", i, cid(ids[i], id)),
                         0);
    assert_int_equal(buf_adds(&b, "]}}"), 0);
    assert_int_equal(kube_pod_from_text(buf_str(&b), buf_len(&b), p), 0);
    buf_release(&b);
}

static void upsert(struct kube_index *ix, const char *uid, const char *app, const char *rv,
                   const unsigned *ids, uint64_t now)
{
    struct kube_pod p;
    make_pod(&p, uid, uid, app, rv, ids);
    assert_int_equal(kube_index_upsert(ix, &p, now), 0);
    kube_pod_release(&p);
}

static bool has(const struct kube_index *ix, unsigned n, uint64_t *rev)
{
    char id[65];
    int rc = kube_index_lookup(ix, cid(n, id), NULL, rev);
    assert_true(rc == 0 || rc == 1);
    return rc == 1;
}

static void test_kube_index__add_and_lookup(void **state)
{
    (void)state;
    struct kube_index *ix = NULL;
    assert_int_equal(kube_index_new(0, GRACE, &ix), 0);
    assert_int_equal(kube_index_generation(ix), 0);
    size_t len;
    uint8_t *text = fixture_load("kube/deployment_containerd.json", &len);
    assert_non_null(text);
    struct kube_pod p;
    assert_int_equal(kube_pod_from_text(text, len, &p), 0);
    assert_int_equal(kube_index_upsert(ix, &p, 0), 0);
    assert_int_equal(kube_index_generation(ix), 1);
    for (size_t i = 0; i < p.n_containers; i++) {
        struct labels got, want;
        labels_init(&got);
        labels_init(&want);
        uint64_t rev = 0;
        assert_int_equal(kube_index_lookup(ix, p.containers[i].id, &got, &rev), 1);
        assert_int_equal(kube_pod_meta_labels(&p, &want), 0);
        assert_int_equal(kube_pod_container_meta_labels(&p, i, &want), 0);
        assert_true(labels_equal(&got, &want));
        assert_true(rev != 0);
        /* with the scheme too */
        uint64_t rev2 = 0;
        assert_int_equal(kube_index_lookup(ix, p.containers[i].id_full, NULL, &rev2), 1);
        assert_true(rev == rev2);
        labels_release(&got);
        labels_release(&want);
    }
    assert_int_equal(kube_index_lookup(ix, "nothex", NULL, NULL), 0);
    char id[65];
    assert_int_equal(kube_index_lookup(ix, cid(1, id), NULL, NULL), 0);
    struct kube_index_stats st;
    kube_index_stats(ix, &st);
    assert_int_equal(st.pods, 1);
    assert_int_equal(st.containers, 3);
    assert_true(st.bytes > 0);
    char(*ids)[KUBE_CONTAINER_ID_LEN + 1] = NULL;
    size_t n = 0;
    assert_int_equal(kube_index_ids(ix, &ids, &n), 0);
    assert_int_equal(n, 3);
    assert_true(strcmp(ids[0], ids[1]) < 0 && strcmp(ids[1], ids[2]) < 0);
    alloc_free(ids);
    kube_pod_release(&p);
    alloc_free(text);
    kube_index_free(ix);
}

static void test_kube_index__revision_is_stable(void **state)
{
    (void)state;
    struct kube_index *ix = NULL;
    assert_int_equal(kube_index_new(0, GRACE, &ix), 0);
    const unsigned ids[] = {1, 2, 0};
    upsert(ix, "u1", "web", "10", ids, 0);
    uint64_t g = kube_index_generation(ix), r1 = 0, r1b = 0, r2 = 0;
    assert_true(has(ix, 1, &r1));
    /* a new resourceVersion and startTime: nothing visible changed */
    upsert(ix, "u1", "web", "11", ids, SEC);
    assert_int_equal(kube_index_generation(ix), g);
    assert_true(has(ix, 1, &r1b));
    assert_true(r1 == r1b);
    /* a label changed: every container's revision changes, one generation step */
    upsert(ix, "u1", "api", "12", ids, 2 * SEC);
    assert_int_equal(kube_index_generation(ix), g + 1);
    assert_true(has(ix, 1, &r2));
    assert_true(r2 != r1);
    /* and back: the revision is the hash of the set, so the old value returns */
    upsert(ix, "u1", "web", "13", ids, 3 * SEC);
    assert_int_equal(kube_index_generation(ix), g + 2);
    assert_true(has(ix, 1, &r2));
    assert_true(r2 == r1);
    kube_index_free(ix);
}

static void test_kube_index__restart_keeps_the_old_id_for_the_grace(void **state)
{
    (void)state;
    struct kube_index *ix = NULL;
    assert_int_equal(kube_index_new(0, GRACE, &ix), 0);
    const unsigned before[] = {1, 2, 0}, after[] = {1, 3, 0};
    upsert(ix, "u1", "web", "1", before, 0);
    uint64_t g = kube_index_generation(ix);
    upsert(ix, "u1", "web", "2", after, 10 * SEC);
    assert_int_equal(kube_index_generation(ix), g + 1); /* 3 appeared */
    assert_true(has(ix, 2, NULL));
    assert_true(has(ix, 3, NULL));
    kube_index_expire(ix, 10 * SEC + GRACE - 1);
    assert_true(has(ix, 2, NULL));
    assert_int_equal(kube_index_generation(ix), g + 1);
    kube_index_expire(ix, 10 * SEC + GRACE);
    assert_false(has(ix, 2, NULL));
    assert_true(has(ix, 1, NULL));
    assert_true(has(ix, 3, NULL));
    assert_int_equal(kube_index_generation(ix), g + 2);
    /* an id that comes back within the grace is live again */
    upsert(ix, "u1", "web", "3", before, 100 * SEC);
    upsert(ix, "u1", "web", "4", after, 101 * SEC);
    upsert(ix, "u1", "web", "5", before, 102 * SEC);
    kube_index_expire(ix, 102 * SEC + GRACE);
    assert_true(has(ix, 2, NULL));
    assert_false(has(ix, 3, NULL));
    kube_index_free(ix);
}

static void test_kube_index__delete_has_a_grace(void **state)
{
    (void)state;
    struct kube_index *ix = NULL;
    assert_int_equal(kube_index_new(0, GRACE, &ix), 0);
    const unsigned ids[] = {7, 0};
    upsert(ix, "u1", "web", "1", ids, 0);
    uint64_t g = kube_index_generation(ix);
    kube_index_delete(ix, "u1", 5 * SEC);
    kube_index_delete(ix, "u1", 30 * SEC); /* a second DELETED does not restart the grace */
    kube_index_delete(ix, "nope", 5 * SEC);
    assert_int_equal(kube_index_generation(ix), g);
    struct kube_index_stats st;
    kube_index_stats(ix, &st);
    assert_int_equal(st.pods, 0);
    assert_int_equal(st.pods_terminating, 1);
    kube_index_expire(ix, 5 * SEC + GRACE - 1);
    assert_true(has(ix, 7, NULL));
    kube_index_expire(ix, 5 * SEC + GRACE);
    assert_false(has(ix, 7, NULL));
    assert_int_equal(kube_index_generation(ix), g + 1);
    kube_index_stats(ix, &st);
    assert_int_equal(st.pods_terminating, 0);
    assert_int_equal(st.containers, 0);
    assert_int_equal(st.bytes, 0);
    kube_index_free(ix);
}

static void test_kube_index__relist_sweeps(void **state)
{
    (void)state;
    struct kube_index *ix = NULL;
    assert_int_equal(kube_index_new(0, GRACE, &ix), 0);
    const unsigned a[] = {1, 0}, b[] = {2, 0}, c[] = {3, 0};
    upsert(ix, "a", "web", "1", a, 0);
    upsert(ix, "b", "web", "1", b, 0);
    uint64_t g = kube_index_generation(ix);
    kube_index_relist_begin(ix);
    upsert(ix, "a", "web", "9", a, 10 * SEC);
    upsert(ix, "c", "web", "9", c, 10 * SEC);
    kube_index_relist_end(ix, 10 * SEC);
    assert_int_equal(kube_index_generation(ix), g + 1); /* c */
    assert_true(has(ix, 2, NULL));                      /* b in grace */
    kube_index_expire(ix, 10 * SEC + GRACE);
    assert_false(has(ix, 2, NULL));
    assert_true(has(ix, 1, NULL));
    assert_true(has(ix, 3, NULL));
    /* a relist that names a pod in grace brings it back */
    kube_index_delete(ix, "a", 100 * SEC);
    kube_index_relist_begin(ix);
    upsert(ix, "a", "web", "10", a, 101 * SEC);
    kube_index_relist_end(ix, 101 * SEC);
    kube_index_expire(ix, 1000 * SEC);
    assert_true(has(ix, 1, NULL));
    assert_false(has(ix, 3, NULL));
    kube_index_free(ix);
}

static void test_kube_index__pod_cap(void **state)
{
    (void)state;
    struct kube_index *ix = NULL;
    assert_int_equal(kube_index_new(3, GRACE, &ix), 0);
    const unsigned ids[] = {0};
    upsert(ix, "p1", "x", "1", ids, 0);
    upsert(ix, "p2", "x", "1", ids, 0);
    upsert(ix, "p3", "x", "1", ids, 0);
    struct kube_pod p;
    make_pod(&p, "p4", "p4", "x", "1", ids);
    assert_int_equal(kube_index_upsert(ix, &p, 0), -ENOSPC);
    struct kube_index_stats st;
    kube_index_stats(ix, &st);
    assert_int_equal(st.over_cap, 1);
    assert_int_equal(st.pods, 3);
    /* an update of a pod it holds is fine */
    upsert(ix, "p3", "y", "2", ids, 0);
    /* a deleted pod in grace makes room */
    kube_index_delete(ix, "p2", SEC);
    assert_int_equal(kube_index_upsert(ix, &p, 2 * SEC), 0);
    kube_index_stats(ix, &st);
    assert_int_equal(st.evicted, 1);
    assert_int_equal(st.pods, 3);
    assert_int_equal(st.pods_terminating, 0);
    kube_pod_release(&p);
    kube_index_free(ix);
}

/*
 * A full index does not keep a relist from replacing its pods: a pod the
 * relist names takes the place of one it has not named (yet); one that is
 * named later comes back; outside a relist the cap holds.
 */
static void test_kube_index__full_index_relists(void **state)
{
    (void)state;
    struct kube_index *ix = NULL;
    assert_int_equal(kube_index_new(3, GRACE, &ix), 0);
    const unsigned a[] = {1, 0}, b[] = {2, 0}, c[] = {3, 0}, d[] = {4, 0}, e[] = {5, 0};
    upsert(ix, "a", "x", "1", a, 0);
    upsert(ix, "b", "x", "1", b, 0);
    upsert(ix, "c", "x", "1", c, 0);
    kube_index_relist_begin(ix);
    upsert(ix, "d", "x", "2", d, SEC); /* evicts a pod not named yet */
    upsert(ix, "b", "x", "2", b, SEC); /* named: kept, or back */
    upsert(ix, "e", "x", "2", e, SEC);
    kube_index_relist_end(ix, 2 * SEC);
    assert_true(has(ix, 2, NULL) && has(ix, 4, NULL) && has(ix, 5, NULL));
    assert_false(has(ix, 1, NULL) || has(ix, 3, NULL));
    struct kube_index_stats st;
    kube_index_stats(ix, &st);
    assert_int_equal(st.pods, 3);
    assert_int_equal(st.over_cap, 0);
    assert_true(st.evicted >= 2);
    /* a list of more pods than the cap: the last is refused, as outside a relist */
    kube_index_relist_begin(ix);
    upsert(ix, "a", "x", "3", a, 3 * SEC);
    upsert(ix, "c", "x", "3", c, 3 * SEC);
    upsert(ix, "d", "x", "3", d, 3 * SEC);
    struct kube_pod p;
    make_pod(&p, "e2", "e2", "x", "3", e);
    assert_int_equal(kube_index_upsert(ix, &p, 3 * SEC), -ENOSPC);
    kube_pod_release(&p);
    kube_index_relist_end(ix, 4 * SEC);
    assert_true(has(ix, 1, NULL) && has(ix, 3, NULL) && has(ix, 4, NULL));
    make_pod(&p, "f", "f", "x", "4", e);
    assert_int_equal(kube_index_upsert(ix, &p, 5 * SEC), -ENOSPC);
    kube_pod_release(&p);
    kube_index_free(ix);
}

static void test_kube_index__duplicate_ids(void **state)
{
    (void)state;
    struct kube_index *ix = NULL;
    assert_int_equal(kube_index_new(0, GRACE, &ix), 0);
    const unsigned a[] = {1, 0}, b[] = {1, 2, 0};
    upsert(ix, "a", "one", "1", a, 0);
    upsert(ix, "b", "two", "1", b, 0);
    struct kube_index_stats st;
    kube_index_stats(ix, &st);
    assert_int_equal(st.duplicate_ids, 1);
    char id[65];
    struct labels ls;
    labels_init(&ls);
    assert_int_equal(kube_index_lookup(ix, cid(1, id), &ls, NULL), 1);
    assert_string_equal(labels_get(&ls, "__meta_kubernetes_pod_label_app"), "one");
    labels_release(&ls);
    /* the first pod gone: its entry goes; b never held it */
    kube_index_delete(ix, "a", 0);
    kube_index_expire(ix, GRACE);
    assert_false(has(ix, 1, NULL));
    assert_true(has(ix, 2, NULL));
    kube_index_free(ix);
}

static void test_kube_index__many_pods_and_restarts(void **state)
{
    (void)state;
    struct kube_index *ix = NULL;
    assert_int_equal(kube_index_new(0, GRACE, &ix), 0);
    /* enough pods to grow the tables several times, each restarting often */
    for (unsigned round = 0; round < 4; round++) {
        for (unsigned i = 0; i < 200; i++) {
            char uid[16];
            snprintf(uid, sizeof(uid), "u%u", i);
            unsigned ids[] = {1 + i * 1000 + round, 0};
            upsert(ix, uid, "x", "1", ids, round * SEC);
        }
    }
    struct kube_index_stats st;
    kube_index_stats(ix, &st);
    assert_int_equal(st.pods, 200);
    assert_int_equal(st.containers, 800);
    for (unsigned i = 0; i < 200; i++)
        for (unsigned round = 0; round < 4; round++)
            assert_true(has(ix, 1 + i * 1000 + round, NULL));
    kube_index_expire(ix, 3 * SEC + GRACE);
    kube_index_stats(ix, &st);
    assert_int_equal(st.containers, 200);
    for (unsigned i = 0; i < 200; i++) {
        assert_true(has(ix, 1 + i * 1000 + 3, NULL));
        assert_false(has(ix, 1 + i * 1000, NULL));
    }
    /* one pod restarting more than the per-pod room holds: the oldest go first */
    for (unsigned r = 0; r < 3 * KUBE_POD_MAX_CONTAINERS; r++) {
        unsigned ids[] = {900000 + r, 0};
        upsert(ix, "u0", "x", "1", ids, 100 * SEC + r);
    }
    assert_true(has(ix, 900000 + 3 * KUBE_POD_MAX_CONTAINERS - 1, NULL));
    assert_false(has(ix, 900000, NULL));
    kube_index_stats(ix, &st);
    assert_true(st.evicted > 0);
    kube_index_free(ix);
}

static void test_kube_index__allocation_failures(void **state)
{
    (void)state;
    const unsigned ids[] = {1, 2, 3, 0};
    const unsigned ids2[] = {1, 4, 0};
    for (uint64_t nth = 1;; nth++) {
        struct kube_pod p1, p2;
        make_pod(&p1, "a", "a", "x", "1", ids);
        make_pod(&p2, "a", "a", "y", "2", ids2);
        struct kube_index *ix = NULL;
        alloc_fail_nth(nth);
        int rc = kube_index_new(0, GRACE, &ix);
        if (rc == 0)
            rc = kube_index_upsert(ix, &p1, 0);
        if (rc == 0)
            rc = kube_index_upsert(ix, &p2, 1);
        struct labels ls;
        labels_init(&ls);
        if (rc == 0) {
            char id[65];
            rc = kube_index_lookup(ix, cid(4, id), &ls, NULL);
            rc = rc == 1 ? 0 : rc;
        }
        char(*all)[KUBE_CONTAINER_ID_LEN + 1] = NULL;
        size_t n = 0;
        if (rc == 0)
            rc = kube_index_ids(ix, &all, &n);
        uint64_t used = alloc_fail_nth(0);
        alloc_free(all);
        labels_release(&ls);
        kube_index_free(ix);
        kube_pod_release(&p1);
        kube_pod_release(&p2);
        if (rc == 0 && used < nth)
            break;
        assert_int_equal(rc, -ENOMEM);
        assert_true(nth < 10000);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kube_index__add_and_lookup),
        cmocka_unit_test(test_kube_index__revision_is_stable),
        cmocka_unit_test(test_kube_index__restart_keeps_the_old_id_for_the_grace),
        cmocka_unit_test(test_kube_index__delete_has_a_grace),
        cmocka_unit_test(test_kube_index__relist_sweeps),
        cmocka_unit_test(test_kube_index__pod_cap),
        cmocka_unit_test(test_kube_index__full_index_relists),
        cmocka_unit_test(test_kube_index__duplicate_ids),
        cmocka_unit_test(test_kube_index__many_pods_and_restarts),
        cmocka_unit_test(test_kube_index__allocation_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
