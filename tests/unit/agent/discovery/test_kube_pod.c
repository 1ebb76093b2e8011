/* SPDX-License-Identifier: MIT */
/*
 * Tests for agent/discovery/kube_pod.c: realistic pods (a Deployment pod on
 * containerd with an init container, a StatefulSet pod on CRI-O, a DaemonSet
 * pod on Docker with an ephemeral container, a pod without status yet, a pod
 * of wrong types) turned into records and Prometheus pod-role labels; the
 * bounds; label-name sanitising; allocation failures.
 */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include "base/alloc.h"
#include "base/buf.h"
#include "discovery/kube_pod.h"
#include "fixture.h"

struct pod_text {
    uint8_t *s;
    size_t len;
};

static struct pod_text load_pod(const char *rel)
{
    struct pod_text t = {NULL, 0};
    t.s = fixture_load(rel, &t.len);
    assert_non_null(t.s);
    return t;
}

static int from_text(const char *text, struct kube_pod *p)
{
    return kube_pod_from_text(text, strlen(text), p);
}

/* Container @a i's whole label set, as kube_index.c builds it: the pod's, then the container's. */
static int container_labels(const struct kube_pod *p, size_t i, struct labels *out)
{
    int rc = kube_pod_meta_labels(p, out);
    return rc != 0 ? rc : kube_pod_container_meta_labels(p, i, out);
}

static void expect_label(const struct labels *ls, const char *name, const char *value)
{
    const char *v = labels_get(ls, name);
    if (!v)
        fail_msg("label %s absent (wanted '%s')", name, value);
    if (strcmp(v, value) != 0)
        fail_msg("label %s is '%s', wanted '%s'", name, v, value);
}

static void test_kube_pod__deployment_on_containerd(void **state)
{
    (void)state;
    struct pod_text o = load_pod("kube/deployment_containerd.json");
    struct kube_pod p;
    assert_int_equal(kube_pod_from_text(o.s, o.len, &p), 0);
    assert_string_equal(p.namespace_name, "shop");
    assert_string_equal(p.name, "checkout-7d9f8b6c5d-x2kqp");
    assert_string_equal(p.uid, "3f1c2b8e-5a6d-4e7f-9a0b-1c2d3e4f5a6b");
    assert_string_equal(p.node_name, "node-a");
    assert_int_equal(p.ready, KUBE_READY_TRUE);
    assert_string_equal(p.controller_kind, "ReplicaSet");
    assert_string_equal(p.controller_name, "checkout-7d9f8b6c5d");
    assert_int_equal(p.n_containers, 3);
    assert_int_equal(p.over_limit, 0);
    assert_int_equal(p.invalid, 0);
    /* regular containers first, then the init container */
    assert_string_equal(p.containers[0].name, "app");
    assert_string_equal(p.containers[0].id,
                        "a3f5c8e1d2b4f6a8c0e2d4f6b8a0c2e4f6d8b0a2c4e6f8d0b2a4c6e8f0d2b4a6");
    assert_int_equal(p.containers[0].kind, KUBE_CONTAINER_REGULAR);
    assert_string_equal(p.containers[1].name, "istio-proxy");
    assert_string_equal(p.containers[2].name, "migrate");
    assert_int_equal(p.containers[2].kind, KUBE_CONTAINER_INIT);

    struct labels ls;
    labels_init(&ls);
    assert_int_equal(container_labels(&p, 0, &ls), 0);
    static const char *const want[][2] = {
        {"__meta_kubernetes_namespace", "shop"},
        {"__meta_kubernetes_pod_annotation_kubectl_kubernetes_io_restartedAt",
         "2026-11-30T09:12:40Z"},
        {"__meta_kubernetes_pod_annotation_profiles_grafana_com_service_name", "shop-checkout"},
        {"__meta_kubernetes_pod_annotationpresent_kubectl_kubernetes_io_restartedAt", "true"},
        {"__meta_kubernetes_pod_annotationpresent_profiles_grafana_com_service_name", "true"},
        {"__meta_kubernetes_pod_container_id",
         "containerd://a3f5c8e1d2b4f6a8c0e2d4f6b8a0c2e4f6d8b0a2c4e6f8d0b2a4c6e8f0d2b4a6"},
        {"__meta_kubernetes_pod_container_image", "registry.example.com/shop/checkout:2.4.1"},
        {"__meta_kubernetes_pod_container_init", "false"},
        {"__meta_kubernetes_pod_container_name", "app"},
        {"__meta_kubernetes_pod_controller_kind", "ReplicaSet"},
        {"__meta_kubernetes_pod_controller_name", "checkout-7d9f8b6c5d"},
        {"__meta_kubernetes_pod_host_ip", "10.0.3.17"},
        {"__meta_kubernetes_pod_ip", "10.244.2.31"},
        {"__meta_kubernetes_pod_label_app_kubernetes_io_name", "checkout"},
        {"__meta_kubernetes_pod_label_app_kubernetes_io_version", "2.4.1"},
        {"__meta_kubernetes_pod_label_pod_template_hash", "7d9f8b6c5d"},
        {"__meta_kubernetes_pod_labelpresent_app_kubernetes_io_name", "true"},
        {"__meta_kubernetes_pod_labelpresent_app_kubernetes_io_version", "true"},
        {"__meta_kubernetes_pod_labelpresent_pod_template_hash", "true"},
        {"__meta_kubernetes_pod_name", "checkout-7d9f8b6c5d-x2kqp"},
        {"__meta_kubernetes_pod_node_name", "node-a"},
        {"__meta_kubernetes_pod_phase", "Running"},
        {"__meta_kubernetes_pod_ready", "true"},
        {"__meta_kubernetes_pod_uid", "3f1c2b8e-5a6d-4e7f-9a0b-1c2d3e4f5a6b"},
    };
    assert_int_equal(ls.n, PYPROFD_ARRAY_SIZE(want));
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(want); i++) {
        assert_string_equal(ls.v[i].name, want[i][0]);
        assert_string_equal(ls.v[i].value, want[i][1]);
    }
    labels_release(&ls);
    /* the init container */
    assert_int_equal(container_labels(&p, 2, &ls), 0);
    expect_label(&ls, "__meta_kubernetes_pod_container_init", "true");
    expect_label(&ls, "__meta_kubernetes_pod_container_name", "migrate");
    labels_release(&ls);
    /* out of range: nothing added */
    assert_int_equal(kube_pod_container_meta_labels(&p, 3, &ls), 0);
    assert_int_equal(ls.n, 0);
    kube_pod_release(&p);
    alloc_free(o.s);
}

static void test_kube_pod__statefulset_on_crio(void **state)
{
    (void)state;
    struct pod_text o = load_pod("kube/statefulset_crio.json");
    struct kube_pod p;
    assert_int_equal(kube_pod_from_text(o.s, o.len, &p), 0);
    assert_int_equal(p.ready, KUBE_READY_FALSE);
    assert_int_equal(p.n_containers, 1);
    assert_string_equal(p.containers[0].id,
                        "4d3c2b1a0f9e8d7c6b5a49382716051a2b3c4d5e6f708192a3b4c5d6e7f80912");
    struct labels ls;
    labels_init(&ls);
    assert_int_equal(container_labels(&p, 0, &ls), 0);
    expect_label(&ls, "__meta_kubernetes_pod_ready", "false");
    expect_label(&ls, "__meta_kubernetes_pod_controller_kind", "StatefulSet");
    expect_label(&ls, "__meta_kubernetes_pod_container_id",
                 "cri-o://4d3c2b1a0f9e8d7c6b5a49382716051a2b3c4d5e6f708192a3b4c5d6e7f80912");
    /* spec's image (a digest) wins over the status's tag */
    expect_label(&ls, "__meta_kubernetes_pod_container_image",
                 "quay.io/example/ledger@sha256:"
                 "1111111111111111111111111111111111111111111111111111111111111111");
    expect_label(&ls, "__meta_kubernetes_pod_label_statefulset_kubernetes_io_pod_name", "ledger-0");
    assert_null(labels_get(&ls, "__meta_kubernetes_pod_annotationpresent_x"));
    labels_release(&ls);
    kube_pod_release(&p);
    alloc_free(o.s);
}

static void test_kube_pod__daemonset_on_docker(void **state)
{
    (void)state;
    struct pod_text o = load_pod("kube/daemonset_docker.json");
    struct kube_pod p;
    assert_int_equal(kube_pod_from_text(o.s, o.len, &p), 0);
    /* the Node owner is not the controller */
    assert_string_equal(p.controller_kind, "DaemonSet");
    assert_string_equal(p.controller_name, "log-agent");
    assert_int_equal(p.n_containers, 2);
    assert_int_equal(p.containers[1].kind, KUBE_CONTAINER_EPHEMERAL);
    assert_string_equal(p.containers[1].id,
                        "1234567890abcdef1234567890abcdef1234567890abcdef1234567890abcdef");
    struct labels ls;
    labels_init(&ls);
    assert_int_equal(container_labels(&p, 1, &ls), 0);
    expect_label(&ls, "__meta_kubernetes_pod_container_init", "false");
    expect_label(&ls, "__meta_kubernetes_pod_container_image", "busybox:1.36");
    expect_label(&ls, "__meta_kubernetes_pod_container_id",
                 "docker://1234567890abcdef1234567890abcdef1234567890abcdef1234567890abcdef");
    labels_release(&ls);
    kube_pod_release(&p);
    alloc_free(o.s);
}

static void test_kube_pod__pending_without_status(void **state)
{
    (void)state;
    struct pod_text o = load_pod("kube/pending_no_status.json");
    struct kube_pod p;
    assert_int_equal(kube_pod_from_text(o.s, o.len, &p), 0);
    assert_int_equal(p.n_containers, 0);
    assert_int_equal(p.ready, KUBE_READY_UNKNOWN);
    struct labels ls;
    labels_init(&ls);
    assert_int_equal(kube_pod_meta_labels(&p, &ls), 0);
    expect_label(&ls, "__meta_kubernetes_pod_phase", "Pending");
    expect_label(&ls, "__meta_kubernetes_pod_ready", "unknown");
    expect_label(&ls, "__meta_kubernetes_pod_ip", "");
    expect_label(&ls, "__meta_kubernetes_pod_node_name", "");
    expect_label(&ls, "__meta_kubernetes_pod_controller_kind", "Job");
    labels_release(&ls);
    kube_pod_release(&p);
    alloc_free(o.s);
}

static void test_kube_pod__wrong_types_are_absent(void **state)
{
    (void)state;
    struct pod_text o = load_pod("kube/wrong_types.json");
    struct kube_pod p;
    assert_int_equal(kube_pod_from_text(o.s, o.len, &p), 0);
    assert_string_equal(p.name, "");
    assert_string_equal(p.namespace_name, "");
    assert_string_equal(p.node_name, "");
    assert_string_equal(p.pod_ip, "");
    assert_string_equal(p.phase, "");
    assert_int_equal(p.ready, KUBE_READY_UNKNOWN);
    assert_null(p.controller_kind);
    assert_int_equal(p.labels.n, 1);
    assert_string_equal(labels_get(&p.labels, "ok"), "yes");
    assert_int_equal(p.annotations.n, 0);
    assert_true(p.invalid >= 10);
    assert_int_equal(p.n_containers, 2);
    assert_string_equal(p.containers[0].name, "app");
    assert_string_equal(p.containers[0].id, "");
    assert_string_equal(p.containers[0].image, "");
    assert_string_equal(p.containers[1].name, "");
    assert_string_equal(p.containers[1].image, "img:1");
    struct labels ls;
    labels_init(&ls);
    for (size_t i = 0; i < p.n_containers; i++) {
        assert_int_equal(container_labels(&p, i, &ls), 0);
        labels_release(&ls);
    }
    kube_pod_release(&p);
    alloc_free(o.s);

    /* no uid, an empty uid, a uid of the wrong type, not an object: refused */
    static const char *const bad[] = {
        "{\"metadata\":{\"name\":\"x\"}}",
        "{\"metadata\":{\"uid\":\"\"}}",
        "{\"metadata\":{\"uid\":5}}",
        "{\"metadata\":[]}",
        "[]",
        "\"pod\"",
    };
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(bad); i++) {
        assert_int_equal(from_text(bad[i], &p), -EINVAL);
        assert_null(p.uid);
    }
    /* not JSON at all */
    assert_int_equal(from_text("{\"metadata\":{\"uid\":\"u\"}", &p), -EBADMSG);
    assert_int_equal(from_text("", &p), -EBADMSG);
    assert_null(p.uid);
}

static void test_kube_pod__container_ids(void **state)
{
    (void)state;
    char id[KUBE_CONTAINER_ID_LEN + 1];
    const char *hex = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    char s[128];
    static const char *const schemes[] = {"containerd://", "cri-o://", "docker://", ""};
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(schemes); i++) {
        snprintf(s, sizeof(s), "%s%s", schemes[i], hex);
        assert_true(kube_container_id_parse(s, id));
        assert_string_equal(id, hex);
    }
    static const char *const bad[] = {
        "containerd://0123",
        "containerd://0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef",
        "containerd://0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0",
        "containerd://0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdeg",
        "",
        "://",
    };
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(bad); i++) {
        assert_false(kube_container_id_parse(bad[i], id));
        assert_string_equal(id, "");
    }
    assert_false(kube_container_id_parse(NULL, id));
}

static void test_kube_pod__sanitises_names(void **state)
{
    (void)state;
    char out[64];
    assert_int_equal(kube_label_name("p_", "app.kubernetes.io/name-x", out, sizeof(out)), 0);
    assert_string_equal(out, "p_app_kubernetes_io_name_x");
    assert_int_equal(kube_label_name("p_", "\xc3\xa9t\xc3\xa9", out, sizeof(out)), 0);
    assert_string_equal(out, "p___t__");
    assert_int_equal(kube_label_name("p_", "Az09_", out, sizeof(out)), 0);
    assert_string_equal(out, "p_Az09_");
    assert_int_equal(kube_label_name("p_",
                                     "0123456789012345678901234567890123456789012345678901234"
                                     "567890123456789",
                                     out, sizeof(out)),
                     -ENAMETOOLONG);
    /* two keys that sanitise alike: the later one in byte order wins, whatever the order */
    const char *a = "{\"metadata\":{\"uid\":\"u\",\"labels\":{\"a.b\":\"dot\",\"a_b\":\"under\"}}}";
    const char *b = "{\"metadata\":{\"uid\":\"u\",\"labels\":{\"a_b\":\"under\",\"a.b\":\"dot\"}}}";
    const char *texts[] = {a, b};
    for (size_t i = 0; i < 2; i++) {
        struct kube_pod p;
        assert_int_equal(from_text(texts[i], &p), 0);
        struct labels ls;
        labels_init(&ls);
        assert_int_equal(kube_pod_meta_labels(&p, &ls), 0);
        expect_label(&ls, "__meta_kubernetes_pod_label_a_b", "under");
        expect_label(&ls, "__meta_kubernetes_pod_labelpresent_a_b", "true");
        for (size_t j = 0; j < ls.n; j++)
            assert_true(labels_valid_name(ls.v[j].name));
        labels_release(&ls);
        kube_pod_release(&p);
    }
}

static void test_kube_pod__bounds(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 1 << 20);
    assert_int_equal(buf_adds(&b, "{\"metadata\":{\"uid\":\"u\",\"labels\":{"), 0);
    for (int i = 0; i < 300; i++)
        assert_int_equal(buf_addf(&b, "%s\"l%03d\":\"v\"", i ? "," : "", i), 0);
    assert_int_equal(buf_adds(&b, "},\"annotations\":{\"big\":\""), 0);
    for (int i = 0; i < KUBE_MAX_VALUE_BYTES + 1; i++)
        assert_int_equal(buf_addc(&b, 'x'), 0);
    assert_int_equal(buf_adds(&b, "\"}},\"status\":{\"containerStatuses\":["), 0);
    for (int i = 0; i < 70; i++)
        assert_int_equal(buf_addf(&b, "%s{\"name\":\"c%d\",\"containerID\":\"containerd://%064x\"}",
                                  i ? "," : "", i, i),
                         0);
    assert_int_equal(buf_adds(&b, "]}}"), 0);
    struct kube_pod p;
    assert_int_equal(kube_pod_from_text(buf_str(&b), buf_len(&b), &p), 0);
    assert_int_equal(p.labels.n, KUBE_POD_MAX_META);
    assert_int_equal(p.n_containers, KUBE_POD_MAX_CONTAINERS);
    /* 44 labels, the annotation (over the count too) and 6 containers */
    assert_int_equal(p.over_limit, 44 + 1 + 6);
    struct labels ls;
    labels_init(&ls);
    assert_int_equal(container_labels(&p, 63, &ls), 0);
    expect_label(&ls, "__meta_kubernetes_pod_container_name", "c63");
    assert_true(ls.n < LABELS_MAX);
    labels_release(&ls);
    kube_pod_release(&p);
    buf_release(&b);

    /* an annotation value over the limit keeps its ..._annotationpresent_ label */
    buf_init(&b, 1 << 20);
    assert_int_equal(buf_adds(&b, "{\"metadata\":{\"uid\":\"u\",\"annotations\":{\"a/b\":\"ok\","
                                  "\"kubectl.kubernetes.io/last-applied-configuration\":\""),
                     0);
    for (int i = 0; i < KUBE_MAX_VALUE_BYTES + 1; i++)
        assert_int_equal(buf_addc(&b, 'x'), 0);
    assert_int_equal(buf_adds(&b, "\",\""), 0);
    for (int i = 0; i < KUBE_MAX_KEY_BYTES + 1; i++)
        assert_int_equal(buf_addc(&b, 'k'), 0);
    assert_int_equal(buf_adds(&b, "\":\"long key\"}}}"), 0);
    assert_int_equal(kube_pod_from_text(buf_str(&b), buf_len(&b), &p), 0);
    assert_int_equal(p.over_limit, 2);
    assert_int_equal(kube_pod_meta_labels(&p, &ls), 0);
    expect_label(&ls, "__meta_kubernetes_pod_annotation_a_b", "ok");
    expect_label(&ls,
                 "__meta_kubernetes_pod_annotationpresent_kubectl_kubernetes_io_last_applied_"
                 "configuration",
                 "true");
    assert_null(labels_get(
        &ls, "__meta_kubernetes_pod_annotation_kubectl_kubernetes_io_last_applied_configuration"));
    labels_release(&ls);
    kube_pod_release(&p);
    buf_release(&b);
}

/* A pod's fields arrive in any order: status before spec, image before name. */
static void test_kube_pod__fields_in_any_order(void **state)
{
    (void)state;
    const char *text =
        "{\"status\":{\"containerStatuses\":[{\"image\":\"st:1\",\"containerID\":"
        "\"containerd://0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\","
        "\"name\":\"app\"}],\"conditions\":[{\"status\":\"True\",\"type\":\"Ready\"}],"
        "\"phase\":\"Running\"},"
        "\"spec\":{\"containers\":[{\"image\":\"other:2\",\"name\":\"other\"},"
        "{\"image\":\"spec:3\",\"name\":\"app\"}],\"nodeName\":\"n1\"},"
        "\"metadata\":{\"ownerReferences\":[{\"name\":\"rs\",\"kind\":\"ReplicaSet\","
        "\"controller\":true}],\"labels\":{\"k\":\"v\"},\"uid\":\"u\",\"name\":\"p\"}}";
    struct kube_pod p;
    assert_int_equal(from_text(text, &p), 0);
    assert_string_equal(p.uid, "u");
    assert_string_equal(p.node_name, "n1");
    assert_int_equal(p.ready, KUBE_READY_TRUE);
    assert_string_equal(p.controller_kind, "ReplicaSet");
    assert_int_equal(p.n_containers, 1);
    assert_string_equal(p.containers[0].image, "spec:3");
    assert_string_equal(p.containers[0].id,
                        "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
    assert_int_equal(p.invalid, 0);
    assert_int_equal(p.over_limit, 0);
    kube_pod_release(&p);
}

/* A single field given twice: the later wins; a label key given twice: the first stands. */
static void test_kube_pod__keys_given_twice(void **state)
{
    (void)state;
    const char *text = "{\"metadata\":{\"name\":\"first\",\"uid\":\"u\",\"name\":\"second\","
                       "\"labels\":{\"k\":\"one\",\"k\":\"two\"},\"labels\":{\"k\":\"three\","
                       "\"j\":\"four\"}},\"metadata\":{\"namespace\":\"ns\"}}";
    struct kube_pod p;
    assert_int_equal(from_text(text, &p), 0);
    assert_string_equal(p.name, "second");
    assert_string_equal(p.namespace_name, "ns");
    assert_string_equal(labels_get(&p.labels, "k"), "one");
    assert_string_equal(labels_get(&p.labels, "j"), "four");
    kube_pod_release(&p);
}

/* NUL, lone surrogates and wrong types are absent and counted; invalid UTF-8 is refused whole. */
static void test_kube_pod__unusable_strings(void **state)
{
    (void)state;
    const char *text = "{\"metadata\":{\"uid\":\"u\",\"name\":\"a\\u0000b\",\"namespace\":"
                       "\"\\ud800\",\"labels\":{\"ok\":\"\\u00e9\",\"nul\":\"x\\u0000\","
                       "\"\":\"empty key\",\"n\":5}},\"status\":{\"phase\":null,\"podIP\":[1]}}";
    struct kube_pod p;
    assert_int_equal(from_text(text, &p), 0);
    assert_string_equal(p.name, "");
    assert_string_equal(p.namespace_name, "");
    assert_string_equal(p.phase, "");
    assert_string_equal(p.pod_ip, "");
    assert_int_equal(p.labels.n, 1);
    assert_string_equal(labels_get(&p.labels, "ok"), "\xc3\xa9");
    /* name, namespace, nul, "", n, podIP */
    assert_int_equal(p.invalid, 6);
    kube_pod_release(&p);
    assert_int_equal(from_text("{\"metadata\":{\"uid\":\"u\",\"name\":\"\xff\"}}", &p), -EBADMSG);
}

struct build_ctx {
    struct kube_pod_builder *b;
    bool begun, ended;
    struct jsonscan *s; /* NULL: every token is handed over, skipped containers too */
};

static int build_token(void *arg, const struct jsonscan_token *t)
{
    struct build_ctx *c = arg;
    if (t->type == JSONSCAN_END)
        return 0;
    if (!c->begun) {
        assert_int_equal(t->type, JSONSCAN_OBJECT_BEGIN);
        kube_pod_builder_begin(c->b, t);
        c->begun = true;
        return 0;
    }
    int rc = kube_pod_builder_token(c->b, t);
    assert_true(rc == 0 || rc == 1 || rc == 2);
    if (rc == 2 && c->s)
        jsonscan_skip(c->s); /* only the container's end comes now */
    c->ended = rc == 1;
    return 0;
}

/* What an ERROR's Status or a BOOKMARK carries instead of a pod. */
static void test_kube_pod__status_and_bookmark_objects(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        const char *rv, *reason, *message;
        int code;
    } cases[] = {
        {"{\"kind\":\"Status\",\"code\":410,\"reason\":\"Expired\",\"message\":\"too\\nold\"}",
         NULL, "Expired", "too old", 410},
        {"{\"code\":410.0,\"reason\":5}", NULL, NULL, NULL, 0},
        {"{\"code\":4100,\"message\":\"\"}", NULL, NULL, "", 0},
        {"{\"kind\":\"Pod\",\"metadata\":{\"resourceVersion\":\"12345\"}}", "12345", NULL, NULL, 0},
        {"{\"metadata\":{\"resourceVersion\":12345}}", NULL, NULL, NULL, 0},
    };
    struct kube_pod_builder *b = NULL;
    struct jsonscan *s = NULL;
    assert_int_equal(kube_pod_builder_new(&b), 0);
    assert_int_equal(jsonscan_new(JSONSCAN_MAX_DEPTH, 4096, 0, &s), 0);
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(cases); i++) {
        jsonscan_reset(s);
        struct build_ctx c = {b, false, false, NULL};
        assert_int_equal(jsonscan_feed(s, cases[i].text, strlen(cases[i].text), build_token, &c),
                         0);
        assert_true(c.ended);
        const char *rv = kube_pod_builder_resource_version(b);
        const char *reason = kube_pod_builder_status_reason(b);
        const char *message = kube_pod_builder_status_message(b);
        assert_int_equal(kube_pod_builder_status_code(b), cases[i].code);
        if (cases[i].rv)
            assert_string_equal(rv, cases[i].rv);
        else
            assert_null(rv);
        if (cases[i].reason)
            assert_string_equal(reason, cases[i].reason);
        else
            assert_null(reason);
        if (cases[i].message)
            assert_string_equal(message, cases[i].message);
        else
            assert_null(message);
        struct kube_pod p;
        assert_int_equal(kube_pod_builder_take(b, &p), -EINVAL); /* none is a pod */
    }
    jsonscan_free(s);
    kube_pod_builder_free(b);
}

/*
 * Fields the labels do not use are passed over: a 10k-entry env, volumes,
 * managedFields and an unknown extension cost no memory.
 */
static void test_kube_pod__unknown_fields_cost_nothing(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 8 << 20);
    assert_int_equal(buf_adds(&b, "{\"metadata\":{\"uid\":\"u\",\"managedFields\":["), 0);
    for (int i = 0; i < 2000; i++)
        assert_int_equal(
            buf_addf(&b, "%s{\"manager\":\"m%d\",\"fieldsV1\":{\"f:spec\":{}}}", i ? "," : "", i),
            0);
    assert_int_equal(buf_adds(&b, "]},\"spec\":{\"containers\":[{\"name\":\"app\",\"env\":["), 0);
    for (int i = 0; i < 10000; i++)
        assert_int_equal(
            buf_addf(&b, "%s{\"name\":\"V%d\",\"value\":\"%0100d\"}", i ? "," : "", i, i), 0);
    assert_int_equal(buf_adds(&b, "],\"image\":\"img:1\"}]},\"x-ext\":{\"deep\":[[[[[1]]]]]},"
                                  "\"status\":{\"containerStatuses\":[{\"name\":\"app\"}]}}"),
                     0);
    struct kube_pod_builder *pb = NULL;
    struct jsonscan *s = NULL;
    assert_int_equal(kube_pod_builder_new(&pb), 0);
    assert_int_equal(jsonscan_new(JSONSCAN_MAX_DEPTH, 4096, 0, &s), 0);
    struct build_ctx c = {pb, false, false, s};
    size_t peak = 0;
    const char *text = buf_str(&b);
    for (size_t off = 0; off < buf_len(&b); off += 4096) {
        size_t n = buf_len(&b) - off < 4096 ? buf_len(&b) - off : 4096;
        assert_int_equal(jsonscan_feed(s, text + off, n, build_token, &c), 0);
        size_t m = kube_pod_builder_memory(pb);
        peak = m > peak ? m : peak;
    }
    assert_true(c.ended);
    assert_true(buf_len(&b) > (1u << 20));
    assert_true(peak < 64 * 1024);
    struct kube_pod p;
    assert_int_equal(kube_pod_builder_take(pb, &p), 0);
    assert_string_equal(p.containers[0].image, "img:1");
    kube_pod_release(&p);
    jsonscan_free(s);
    kube_pod_builder_free(pb);
    buf_release(&b);
}

static void test_kube_pod__allocation_failures(void **state)
{
    (void)state;
    struct pod_text o = load_pod("kube/deployment_containerd.json");
    for (uint64_t nth = 1;; nth++) {
        alloc_fail_nth(nth);
        struct kube_pod p;
        struct labels ls;
        labels_init(&ls);
        int rc = kube_pod_from_text(o.s, o.len, &p);
        if (rc == 0)
            rc = container_labels(&p, 0, &ls);
        uint64_t used = alloc_fail_nth(0);
        labels_release(&ls);
        kube_pod_release(&p);
        if (rc == 0 && used < nth)
            break; /* every allocation succeeded */
        assert_int_equal(rc, -ENOMEM);
        assert_true(nth < 10000);
    }
    alloc_free(o.s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kube_pod__deployment_on_containerd),
        cmocka_unit_test(test_kube_pod__statefulset_on_crio),
        cmocka_unit_test(test_kube_pod__daemonset_on_docker),
        cmocka_unit_test(test_kube_pod__pending_without_status),
        cmocka_unit_test(test_kube_pod__wrong_types_are_absent),
        cmocka_unit_test(test_kube_pod__container_ids),
        cmocka_unit_test(test_kube_pod__sanitises_names),
        cmocka_unit_test(test_kube_pod__bounds),
        cmocka_unit_test(test_kube_pod__fields_in_any_order),
        cmocka_unit_test(test_kube_pod__keys_given_twice),
        cmocka_unit_test(test_kube_pod__unusable_strings),
        cmocka_unit_test(test_kube_pod__status_and_bookmark_objects),
        cmocka_unit_test(test_kube_pod__unknown_fields_cost_nothing),
        cmocka_unit_test(test_kube_pod__allocation_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
