/* SPDX-License-Identifier: MIT */
/*
 * Tests for exporters/pull/views.c's /targets document: a process's
 * container id and in-namespace PID, and the discovered labels that can hold
 * secrets, hidden unless server.show_sensitive_labels.
 */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include <json-c/json.h>

#include "base/alloc.h"
#include "exporters/pull/views.h"

#define CID "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

/* Renders a view of one active target (and one unreadable process). */
static json_object *render(bool show)
{
    struct loop_proc_view procs[2] = {0};
    struct loop_proc_view *t = &procs[0];
    t->pid = 4242;
    t->nspid = 7;
    snprintf(t->container_id, sizeof(t->container_id), "%s", CID);
    snprintf(t->comm, sizeof(t->comm), "python3");
    t->state = PROC_ACTIVE;
    t->target = true;
    snprintf(t->job, sizeof(t->job), "job");
    labels_init(&t->labels);
    labels_init(&t->meta);
    assert_int_equal(labels_set(&t->labels, "service_name", "shop/cart"), 0);
    assert_int_equal(
        labels_set(&t->meta, "__meta_process_commandline", "python3 app.py --password=hunter2"), 0);
    assert_int_equal(labels_set(&t->meta, "__meta_process_cwd", "/srv/secret-project"), 0);
    assert_int_equal(labels_set(&t->meta, "__meta_process_exe", "/usr/bin/python3.14"), 0);
    assert_int_equal(labels_set(&t->meta, "__meta_kubernetes_pod_annotation_token", "abc"), 0);
    assert_int_equal(labels_set(&t->meta, "__meta_kubernetes_pod_annotationpresent_token", "true"),
                     0);
    assert_int_equal(labels_set(&t->meta, "__meta_kubernetes_pod_annotation_empty", ""), 0);
    struct loop_proc_view *u = &procs[1];
    u->pid = 99;
    u->nspid = 99;
    u->state = PROC_UNREADABLE;
    snprintf(u->reason, sizeof(u->reason), "needs CAP_SYS_PTRACE");
    labels_init(&u->labels);
    labels_init(&u->meta);

    struct loop_view v = {.procs = procs, .nprocs = 2, .show_sensitive_labels = show};
    char *out = NULL;
    size_t len = 0;
    assert_int_equal(views_targets_json(&v, &out, &len), 0);
    json_object *doc = json_tokener_parse(out);
    assert_non_null(doc);
    alloc_free(out);
    labels_release(&t->labels);
    labels_release(&t->meta);
    return doc;
}

static const char *field(json_object *o, const char *path0, const char *path1)
{
    json_object *a = NULL, *b = NULL;
    if (!json_object_object_get_ex(o, path0, &a))
        return NULL;
    if (!path1)
        return json_object_get_string(a);
    if (!json_object_object_get_ex(a, path1, &b))
        return NULL;
    return json_object_get_string(b);
}

static json_object *target(json_object *doc, size_t i)
{
    json_object *arr = NULL;
    assert_true(json_object_object_get_ex(doc, "targets", &arr));
    return json_object_array_get_idx(arr, i);
}

static void test_identity_fields(void **state)
{
    (void)state;
    json_object *doc = render(false);
    json_object *t = target(doc, 0);
    assert_string_equal(field(t, "container_id", NULL), CID);
    assert_string_equal(field(t, "nspid", NULL), "7");
    assert_string_equal(field(t, "pid", NULL), "4242");
    json_object *u = target(doc, 1);
    assert_null(field(u, "container_id", NULL)); /* none: not shown */
    assert_string_equal(field(u, "nspid", NULL), "99");
    assert_string_equal(field(u, "reason", NULL), "needs CAP_SYS_PTRACE");
    json_object_put(doc);
}

static void test_sensitive_hidden_by_default(void **state)
{
    (void)state;
    json_object *doc = render(false);
    json_object *t = target(doc, 0);
    assert_string_equal(field(t, "discovered_labels", "__meta_process_commandline"), "<hidden>");
    assert_string_equal(field(t, "discovered_labels", "__meta_process_cwd"), "<hidden>");
    assert_string_equal(field(t, "discovered_labels", "__meta_kubernetes_pod_annotation_token"),
                        "<hidden>");
    /* what is not secret stays: presence, an empty value, the executable */
    assert_string_equal(
        field(t, "discovered_labels", "__meta_kubernetes_pod_annotationpresent_token"), "true");
    assert_string_equal(field(t, "discovered_labels", "__meta_kubernetes_pod_annotation_empty"),
                        "");
    assert_string_equal(field(t, "discovered_labels", "__meta_process_exe"), "/usr/bin/python3.14");
    /* the final labels are what leaves the agent anyway */
    assert_string_equal(field(t, "labels", "service_name"), "shop/cart");
    json_object_put(doc);
}

static void test_sensitive_shown_when_asked(void **state)
{
    (void)state;
    json_object *doc = render(true);
    json_object *t = target(doc, 0);
    assert_string_equal(field(t, "discovered_labels", "__meta_process_commandline"),
                        "python3 app.py --password=hunter2");
    assert_string_equal(field(t, "discovered_labels", "__meta_kubernetes_pod_annotation_token"),
                        "abc");
    json_object_put(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_identity_fields),
        cmocka_unit_test(test_sensitive_hidden_by_default),
        cmocka_unit_test(test_sensitive_shown_when_asked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
