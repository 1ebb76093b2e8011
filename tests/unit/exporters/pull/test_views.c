/* SPDX-License-Identifier: MIT */
/*
 * Tests for exporters/pull/views.c's /targets document: a process's
 * container id and in-namespace PID, and the discovered labels that can hold
 * secrets, hidden unless server.show_sensitive_labels; that /targets and
 * /flamegraph are valid UTF-8 whatever reached them, and that /metrics
 * counts what was replaced.
 */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include <json-c/json.h>

#include "aggregate/agg.h"
#include "base/alloc.h"
#include "base/promtext.h"
#include "base/utf8.h"
#include "exporters/pull/views.h"
#include "unwind/unwind.h"

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

#define FFFD UTF8_REPLACEMENT_STR

/*
 * Text that is not valid UTF-8 in the view (it cannot get there through
 * discovery, which makes text valid where it enters; put there by hand) is
 * written as U+FFFD, counted, and the document still parses.
 */
static void test_views__targets_json_is_valid_utf8(void **state)
{
    (void)state;
    struct loop_proc_view p = {.pid = 12, .nspid = 12, .state = PROC_UNREADABLE};
    snprintf(p.comm, sizeof(p.comm), "py\xff\x1b[31m");
    snprintf(p.reason, sizeof(p.reason), "cannot open '/opt/\xe2\x82/lib.so'");
    char name[] = "__meta_process_commandline", value[] = "python3 \xed\xa0\x80.py";
    struct label one = {.name = name, .value = value};
    p.meta = (struct labels){.v = &one, .n = 1, .cap = 1};
    p.target = true;
    snprintf(p.job, sizeof(p.job), "job");
    struct loop_view v = {.procs = &p, .nprocs = 1, .show_sensitive_labels = true};
    char *out = NULL;
    size_t len = 0;
    uint64_t before = utf8_replaced_total();
    assert_int_equal(views_targets_json(&v, &out, &len), 0);
    assert_int_equal(utf8_replaced_total() - before, 5); /* comm 1, reason 1, label 3 */
    assert_int_equal(len, strlen(out));
    assert_true(utf8_valid(out, len));
    json_object *doc = json_tokener_parse(out);
    assert_non_null(doc);
    alloc_free(out);
    json_object *t = target(doc, 0);
    assert_string_equal(field(t, "comm", NULL), "py" FFFD "\x1b[31m");
    assert_string_equal(field(t, "reason", NULL), "cannot open '/opt/" FFFD "/lib.so'");
    assert_string_equal(field(t, "discovered_labels", "__meta_process_commandline"),
                        "python3 " FFFD FFFD FFFD ".py");
    json_object_put(doc);
}

/* /flamegraph: part names cut on a character boundary; every string valid UTF-8. */
static void test_views__flamegraph_is_valid_utf8(void **state)
{
    (void)state;
    struct tap_part parts[2] = {0};
    struct unwind_frame f = {.kind = UNWIND_FRAME_PYTHON,
                             .function = "run\xff",
                             .file = "/srv/app.py",
                             .first_line = 1,
                             .pos = {1, 1, 1, 2}};
    char svc[400] = "x"; /* then 3-byte characters, longer than a part's name */
    for (size_t i = 1; i + 3 < sizeof(svc); i += 3)
        memcpy(svc + i, "\xe6\x97\xa5", 3);
    for (size_t k = 0; k < 2; k++) {
        assert_int_equal(agg_new(NULL, &parts[k].agg), 0);
        assert_int_equal(agg_add_in(parts[k].agg, &f, 1, 7, 0, "MainThread", NULL, 1, 1), 0);
        labels_init(&parts[k].labels);
        assert_int_equal(labels_set(&parts[k].labels, "service_name", svc), 0);
        parts[k].pid = (pid_t)(100 + k);
    }
    struct loop_capture c = {.parts = parts, .nparts = 2};
    uint8_t *out = NULL;
    size_t len = 0;
    char err[128];
    uint64_t before = utf8_replaced_total();
    assert_int_equal(views_profile_flame(&c, -1, false, &out, &len, err, sizeof(err)), 0);
    assert_int_equal(utf8_replaced_total() - before, 2); /* "run\xff" in each part */
    assert_true(utf8_valid((const char *)out, len));
    json_object *doc = json_tokener_parse((const char *)out);
    assert_non_null(doc);
    alloc_free(out);
    json_object *kids = NULL, *first = NULL;
    assert_true(json_object_object_get_ex(doc, "c", &kids));
    first = json_object_array_get_idx(kids, 0);
    const char *n = field(first, "n", NULL);
    assert_non_null(n);
    assert_non_null(strstr(n, " (pid 100)")); /* the name was cut, the pid kept */
    assert_true(strlen(n) < 160);
    json_object_put(doc);
    for (size_t k = 0; k < 2; k++) {
        agg_free(parts[k].agg);
        labels_release(&parts[k].labels);
    }
}

/* /metrics has the replacement counter, with the process-wide value. */
static void test_views__metrics_count_utf8_replacements(void **state)
{
    (void)state;
    char buf[8];
    (void)utf8_sanitize(buf, sizeof(buf), "\xff", 1); /* at least one */
    struct loop_view v = {0};
    struct promtext *w = NULL;
    assert_int_equal(promtext_new(0, &w), 0);
    assert_int_equal(views_agent_metrics(&v, w), 0);
    size_t len = 0;
    const char *doc = promtext_data(w, &len);
    assert_non_null(doc);
    char want[128];
    snprintf(want, sizeof(want),
             "# TYPE pyprofd_utf8_replaced_total counter\n"
             "pyprofd_utf8_replaced_total %" PRIu64 "\n",
             utf8_replaced_total());
    assert_non_null(strstr(doc, want));
    assert_true(utf8_replaced_total() >= 1);
    promtext_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_identity_fields),
        cmocka_unit_test(test_sensitive_hidden_by_default),
        cmocka_unit_test(test_sensitive_shown_when_asked),
        cmocka_unit_test(test_views__targets_json_is_valid_utf8),
        cmocka_unit_test(test_views__flamegraph_is_valid_utf8),
        cmocka_unit_test(test_views__metrics_count_utf8_replacements),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
