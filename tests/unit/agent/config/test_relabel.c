/* SPDX-License-Identifier: MIT */
/* Tests for agent/config/relabel.c: Prometheus relabeling semantics. */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include "base/alloc.h"
#include "base/utf8.h"
#include "config/relabel.h"

static struct relabel_rules *compile1(const struct relabel_rule_spec *s)
{
    struct relabel_rules *r = NULL;
    char err[256];
    int rc = relabel_compile(s, 1, &r, err, sizeof(err));
    if (rc)
        fail_msg("compile failed: %d %s", rc, err);
    return r;
}

/* A typical target's labels. */
static void meta(struct labels *ls)
{
    labels_init(ls);
    assert_int_equal(labels_set(ls, "__meta_process_pid", "4242"), 0);
    assert_int_equal(labels_set(ls, "__meta_process_exe", "/usr/bin/python3.13"), 0);
    assert_int_equal(labels_set(ls, "__meta_process_commandline",
                                "/usr/bin/python3.13 -u /srv/app/manage.py runserver"),
                     0);
    assert_int_equal(labels_set(ls, "__meta_kubernetes_namespace", "shop"), 0);
    assert_int_equal(labels_set(ls, "__meta_kubernetes_pod_label_app", "cart"), 0);
    assert_int_equal(labels_set(ls, "__meta_kubernetes_pod_label_tier", "web"), 0);
    assert_int_equal(labels_set(ls, "job", "python"), 0);
}

/* Applies @s to a fresh meta() set; returns keep. */
static bool run1(const struct relabel_rule_spec *s, struct labels *ls)
{
    struct relabel_rules *r = compile1(s);
    bool keep = false;
    meta(ls);
    assert_int_equal(relabel_apply(r, ls, &keep), 0);
    relabel_free(r);
    return keep;
}

static const char *const src_exe[] = {"__meta_process_exe"};

static void test_relabel__replace_with_captures(void **state)
{
    (void)state;
    struct labels ls;
    struct relabel_rule_spec s = {.source_labels = src_exe,
                                  .nsource_labels = 1,
                                  .regex = ".*/(python)3\\.(\\d+)",
                                  .target_label = "interp",
                                  .replacement = "$1-${2}"};
    assert_true(run1(&s, &ls));
    assert_string_equal(labels_get(&ls, "interp"), "python-13");
    labels_release(&ls);

    /* target label from a capture; default replacement $1 */
    static const char *const src2[] = {"__meta_kubernetes_namespace", "job"};
    struct relabel_rule_spec t = {.source_labels = src2,
                                  .nsource_labels = 2,
                                  .separator = "/",
                                  .regex = "(.+)/(.+)",
                                  .target_label = "ns_${1}",
                                  .replacement = "$2"};
    assert_true(run1(&t, &ls));
    assert_string_equal(labels_get(&ls, "ns_shop"), "python");
    labels_release(&ls);

    /* the whole match with the default regex and replacement */
    struct relabel_rule_spec u = {
        .source_labels = src2, .nsource_labels = 2, .target_label = "joined"};
    assert_true(run1(&u, &ls));
    assert_string_equal(labels_get(&ls, "joined"), "shop;python");
    labels_release(&ls);

    /* named groups */
    struct relabel_rule_spec v = {.source_labels = src_exe,
                                  .nsource_labels = 1,
                                  .regex = ".*/(?P<base>[^/]+)",
                                  .target_label = "exe",
                                  .replacement = "${base}"};
    assert_true(run1(&v, &ls));
    assert_string_equal(labels_get(&ls, "exe"), "python3.13");
    labels_release(&ls);
}

static void test_relabel__regex_is_fully_anchored(void **state)
{
    (void)state;
    struct labels ls;
    /* "python" alone does not match "/usr/bin/python3.13": no partial matches */
    struct relabel_rule_spec s = {
        .source_labels = src_exe, .nsource_labels = 1, .regex = "python", .action = RELABEL_KEEP};
    assert_false(run1(&s, &ls));
    labels_release(&ls);
    s.regex = ".*python3\\.13";
    assert_true(run1(&s, &ls));
    labels_release(&ls);
    /* alternation stays inside the anchors: ^(?s:a|b)$ */
    s.regex = "/usr|python";
    assert_false(run1(&s, &ls));
    labels_release(&ls);
    /* (?s): "." matches a newline; "$" does not match before a final newline */
    struct labels nl;
    labels_init(&nl);
    assert_int_equal(labels_set(&nl, "v", "a\nb"), 0);
    assert_int_equal(labels_set(&nl, "w", "ab\n"), 0);
    static const char *const v[] = {"v"}, *const w[] = {"w"};
    struct relabel_rule_spec dot = {
        .source_labels = v, .nsource_labels = 1, .regex = "a.b", .action = RELABEL_KEEP};
    struct relabel_rules *r = compile1(&dot);
    bool keep;
    assert_int_equal(relabel_apply(r, &nl, &keep), 0);
    assert_true(keep);
    relabel_free(r);
    struct relabel_rule_spec end = {
        .source_labels = w, .nsource_labels = 1, .regex = "ab", .action = RELABEL_KEEP};
    r = compile1(&end);
    assert_int_equal(relabel_apply(r, &nl, &keep), 0);
    assert_false(keep);
    relabel_free(r);
    labels_release(&nl);
}

static void test_relabel__empty_result_deletes_target(void **state)
{
    (void)state;
    struct labels ls;
    /* the source is missing, reads as "", (.*) matches, $1 is "": job deleted */
    static const char *const missing[] = {"__meta_nope"};
    struct relabel_rule_spec s = {
        .source_labels = missing, .nsource_labels = 1, .target_label = "job", .regex = "(.*)x?"};
    assert_true(run1(&s, &ls));
    assert_null(labels_get(&ls, "job"));
    labels_release(&ls);
    /* an empty replacement deletes too (fast path) */
    struct relabel_rule_spec t = {.target_label = "job", .replacement = ""};
    assert_true(run1(&t, &ls));
    assert_null(labels_get(&ls, "job"));
    labels_release(&ls);
    /* the fast path: a static label from target_label + replacement */
    struct relabel_rule_spec u = {.target_label = "team", .replacement = "payments"};
    assert_true(run1(&u, &ls));
    assert_string_equal(labels_get(&ls, "team"), "payments");
    labels_release(&ls);
    /* no match: nothing changes */
    struct relabel_rule_spec w = {.source_labels = src_exe,
                                  .nsource_labels = 1,
                                  .regex = "ruby",
                                  .target_label = "job",
                                  .replacement = "x"};
    assert_true(run1(&w, &ls));
    assert_string_equal(labels_get(&ls, "job"), "python");
    labels_release(&ls);
    /* an expanded target that is not a label name: nothing changes */
    struct relabel_rule_spec bad = {.source_labels = src_exe,
                                    .nsource_labels = 1,
                                    .regex = "/(usr).*",
                                    .target_label = "${1}-x",
                                    .replacement = "v"};
    struct relabel_rules *r = NULL;
    char err[256];
    assert_int_equal(relabel_compile(&bad, 1, &r, err, sizeof(err)), -EINVAL);
    bad.target_label = "$1";
    bad.regex = "/(u)sr.*|(.*)";
    bad.replacement = "v";
    bad.regex = "(/usr).*";
    assert_true(run1(&bad, &ls)); /* "/usr" is not a valid name */
    assert_null(labels_get(&ls, "/usr"));
    labels_release(&ls);
}

static void test_relabel__dollar_1x_is_a_group_name(void **state)
{
    (void)state;
    struct labels ls;
    /* Go's Expand: "$1x" is the group named "1x" (absent): empty, label deleted */
    struct relabel_rule_spec s = {.source_labels = src_exe,
                                  .nsource_labels = 1,
                                  .regex = ".*/(python).*",
                                  .target_label = "a",
                                  .replacement = "$1x"};
    assert_true(run1(&s, &ls));
    assert_null(labels_get(&ls, "a"));
    labels_release(&ls);
    s.replacement = "${1}x";
    assert_true(run1(&s, &ls));
    assert_string_equal(labels_get(&ls, "a"), "pythonx");
    labels_release(&ls);
    s.replacement = "$1_$1"; /* "$1_" is a name too */
    assert_true(run1(&s, &ls));
    assert_string_equal(labels_get(&ls, "a"), "python");
    labels_release(&ls);
    s.replacement = "$$1-$1-$-${}-${1"; /* $$, lone $, malformed braces */
    assert_true(run1(&s, &ls));
    assert_string_equal(labels_get(&ls, "a"), "$1-python-$-${}-${1");
    labels_release(&ls);
    s.replacement = "$01|$0|$9"; /* leading zero: a name; $0 the match; $9 unset */
    assert_true(run1(&s, &ls));
    assert_string_equal(labels_get(&ls, "a"), "|/usr/bin/python3.13|");
    labels_release(&ls);
}

static void test_relabel__keep_drop(void **state)
{
    (void)state;
    struct labels ls;
    struct relabel_rule_spec keep = {.source_labels = src_exe,
                                     .nsource_labels = 1,
                                     .regex = ".*/python3(\\.\\d+)?",
                                     .action = RELABEL_KEEP};
    assert_true(run1(&keep, &ls));
    labels_release(&ls);
    keep.regex = ".*/ruby";
    assert_false(run1(&keep, &ls));
    labels_release(&ls);
    struct relabel_rule_spec drop = {.source_labels = src_exe,
                                     .nsource_labels = 1,
                                     .regex = ".*/python3\\.13",
                                     .action = RELABEL_DROP};
    assert_false(run1(&drop, &ls));
    labels_release(&ls);
    drop.regex = "nomatch";
    assert_true(run1(&drop, &ls));
    labels_release(&ls);

    /* the first rule that drops stops processing */
    struct relabel_rule_spec two[2] = {
        {.source_labels = src_exe, .nsource_labels = 1, .regex = ".*", .action = RELABEL_DROP},
        {.target_label = "after", .replacement = "yes"},
    };
    struct relabel_rules *r = NULL;
    char err[64];
    bool k = true;
    assert_int_equal(relabel_compile(two, 2, &r, err, sizeof(err)), 0);
    assert_int_equal(relabel_count(r), 2);
    meta(&ls);
    assert_int_equal(relabel_apply(r, &ls, &k), 0);
    assert_false(k);
    assert_null(labels_get(&ls, "after"));
    labels_release(&ls);
    relabel_free(r);
}

#define FFFD UTF8_REPLACEMENT_STR

static const char *const src_cmd[] = {"__meta_process_commandline"};

/* Applies @s to a set holding only command line @cmd; returns keep. */
static bool run_cmd(const struct relabel_rule_spec *s, const char *cmd, struct labels *ls)
{
    struct relabel_rules *r = compile1(s);
    bool keep = false;
    labels_init(ls);
    assert_int_equal(labels_set(ls, "__meta_process_commandline", cmd), 0);
    assert_int_equal(relabel_apply(r, ls, &keep), 0);
    relabel_free(r);
    return keep;
}

/*
 * A command line with bytes that are not UTF-8 is matched through the text
 * the labels carry, U+FFFD in their place: "keep" keeps it (a regex in UTF
 * mode cannot match "." across an invalid byte, so it used to drop it), and
 * captures copy the U+FFFD form.
 */
static void test_relabel__keep_matches_invalid_utf8_as_fffd(void **state)
{
    (void)state;
    static const char cmd[] = "/usr/bin/python3 /srv/\xff\xfe\x1b[31mapp.py --token=\xe2\x82";
    struct labels ls;
    struct relabel_rule_spec keep = {.source_labels = src_cmd,
                                     .nsource_labels = 1,
                                     .regex = ".*/srv/.*app\\.py.*",
                                     .action = RELABEL_KEEP};
    assert_true(run_cmd(&keep, cmd, &ls));
    labels_release(&ls);
    /* the U+FFFD written in a regex matches where the bytes were */
    keep.regex = ".*/srv/" FFFD FFFD "\x1b\\[31mapp\\.py --token=" FFFD;
    assert_true(run_cmd(&keep, cmd, &ls));
    labels_release(&ls);
    keep.regex = ".*/srv/\\x{fffd}{2}.*";
    assert_true(run_cmd(&keep, cmd, &ls));
    labels_release(&ls);
    struct relabel_rule_spec script = {.source_labels = src_cmd,
                                       .nsource_labels = 1,
                                       .regex = "\\S+ (\\S+) .*",
                                       .target_label = "script"};
    assert_true(run_cmd(&script, cmd, &ls));
    assert_string_equal(labels_get(&ls, "script"), "/srv/" FFFD FFFD "\x1b[31mapp.py");
    labels_release(&ls);
}

/* Inserting invalid bytes into a command line does not get it past a "drop". */
static void test_relabel__drop_cannot_be_dodged_with_invalid_bytes(void **state)
{
    (void)state;
    struct labels ls;
    struct relabel_rule_spec drop = {.source_labels = src_cmd,
                                     .nsource_labels = 1,
                                     .regex = ".*secret.*",
                                     .action = RELABEL_DROP};
    static const char *const dodges[] = {
        "python3 /srv/secret.py",
        "python3 /srv/\xffsecret.py",
        "python3 /srv/secret\xc0\xaf.py",
        "python3 \xed\xa0\x80/srv/secret.py \xf0\x9f\x98",
    };
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(dodges); i++) {
        if (run_cmd(&drop, dodges[i], &ls))
            fail_msg("dodge %zu was kept", i);
        labels_release(&ls);
    }
    assert_true(run_cmd(&drop, "python3 /srv/\xffpublic.py", &ls));
    labels_release(&ls);
}

/*
 * A set built by hand, around labels_set(), holding bytes that are not
 * UTF-8: the rule still sees (and counts) the U+FFFD form.
 */
static void test_relabel__sees_valid_utf8_in_a_set_built_by_hand(void **state)
{
    (void)state;
    char name[] = "__meta_process_commandline", value[] = "python3 /srv/\xffsecret.py";
    struct label one = {.name = name, .value = value};
    struct labels ls = {.v = &one, .n = 1, .cap = 1};
    struct relabel_rule_spec drop = {.source_labels = src_cmd,
                                     .nsource_labels = 1,
                                     .regex = "python3 /srv/" FFFD "secret\\.py",
                                     .action = RELABEL_DROP};
    struct relabel_rules *r = compile1(&drop);
    bool keep = true;
    uint64_t before = utf8_replaced_total();
    assert_int_equal(relabel_apply(r, &ls, &keep), 0);
    assert_false(keep);
    assert_int_equal(utf8_replaced_total() - before, 1);
    relabel_free(r);
}

static void test_relabel__keepequal_dropequal(void **state)
{
    (void)state;
    struct labels ls;
    static const char *const src[] = {"job"};
    struct relabel_rule_spec s = {.source_labels = src,
                                  .nsource_labels = 1,
                                  .target_label = "expected_job",
                                  .action = RELABEL_KEEPEQUAL};
    assert_false(run1(&s, &ls)); /* expected_job absent: "" != "python" */
    labels_release(&ls);
    struct relabel_rules *r = compile1(&s);
    bool keep;
    meta(&ls);
    assert_int_equal(labels_set(&ls, "expected_job", "python"), 0);
    assert_int_equal(relabel_apply(r, &ls, &keep), 0);
    assert_true(keep);
    relabel_free(r);
    s.action = RELABEL_DROPEQUAL;
    r = compile1(&s);
    assert_int_equal(relabel_apply(r, &ls, &keep), 0);
    assert_false(keep);
    relabel_free(r);
    labels_release(&ls);
}

static void test_relabel__hashmod_matches_prometheus(void **state)
{
    (void)state;
    struct labels ls;
    static const char *const src[] = {"__meta_kubernetes_namespace", "job"};
    /*
     * Expected values computed independently with Debian's /usr/bin/python3:
     *   d = hashlib.md5(value.encode()).digest()
     *   struct.unpack('>Q', d[8:])[0] % modulus
     * 'a;b' -> 2420134994223480074, % 1000 = 74; 'foo' -> 17145033699835028696,
     * % 1000 = 696; '' -> 16825458760271544958, % 7 = 1;
     * 'shop;python' % 1 = 0 (any value).
     */
    static const struct {
        const char *value;
        uint64_t mod;
        const char *want;
    } v[] = {
        {"a;b", 1000, "74"},
        {"foo", 1000, "696"},
        {"", 7, "1"},
        {"foo", 18446744073709551615ull, "17145033699835028696"},
    };
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(v); i++) {
        static const char *const one[] = {"x"};
        struct relabel_rule_spec s = {.source_labels = one,
                                      .nsource_labels = 1,
                                      .target_label = "shard",
                                      .modulus = v[i].mod,
                                      .action = RELABEL_HASHMOD};
        struct relabel_rules *r = compile1(&s);
        bool keep;
        labels_init(&ls);
        if (*v[i].value)
            assert_int_equal(labels_set(&ls, "x", v[i].value), 0);
        assert_int_equal(relabel_apply(r, &ls, &keep), 0);
        assert_true(keep);
        assert_string_equal(labels_get(&ls, "shard"), v[i].want);
        labels_release(&ls);
        relabel_free(r);
    }
    /* "a" and "b" joined with the separator: same as the value "a;b" */
    static const char *const ab[] = {"a", "b"};
    struct relabel_rule_spec s = {.source_labels = ab,
                                  .nsource_labels = 2,
                                  .target_label = "shard",
                                  .modulus = 1000,
                                  .action = RELABEL_HASHMOD};
    struct relabel_rules *r = compile1(&s);
    bool keep;
    labels_init(&ls);
    assert_int_equal(labels_set(&ls, "a", "a"), 0);
    assert_int_equal(labels_set(&ls, "b", "b"), 0);
    assert_int_equal(relabel_apply(r, &ls, &keep), 0);
    assert_string_equal(labels_get(&ls, "shard"), "74");
    labels_release(&ls);
    relabel_free(r);
    (void)src;
}

/*
 * hashmod's MD5 (libmd) on the test suite of RFC 1321, appendix A.5: with
 * modulus 2^64-1 the label is the digest's last 8 bytes, big-endian, taken
 * modulo 2^64-1, which the expected digests give independently.
 */
static void test_relabel__hashmod_md5_rfc1321_vectors(void **state)
{
    (void)state;
    static const struct {
        const char *in, *hex;
    } v[] = {
        {"", "d41d8cd98f00b204e9800998ecf8427e"},
        {"a", "0cc175b9c0f1b6a831c399e269772661"},
        {"abc", "900150983cd24fb0d6963f7d28e17f72"},
        {"message digest", "f96b697d7cb7938d525a2f31aaf161d0"},
        {"abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"},
        {"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
         "d174ab98d277d9f5a5611c2c9f419d9f"},
        {"1234567890123456789012345678901234567890123456789012345678901234567890123456789"
         "0",
         "57edf4a22be3c955ac49da2e2107b67a"},
    };
    static const char *const one[] = {"x"};
    struct relabel_rule_spec s = {.source_labels = one,
                                  .nsource_labels = 1,
                                  .target_label = "shard",
                                  .modulus = UINT64_MAX,
                                  .action = RELABEL_HASHMOD};
    struct relabel_rules *r = compile1(&s);
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(v); i++) {
        struct labels ls;
        bool keep = false;
        char want[24];
        snprintf(want, sizeof(want), "%" PRIu64,
                 (uint64_t)strtoull(v[i].hex + 16, NULL, 16) % UINT64_MAX);
        labels_init(&ls);
        if (*v[i].in)
            assert_int_equal(labels_set(&ls, "x", v[i].in), 0);
        assert_int_equal(relabel_apply(r, &ls, &keep), 0);
        assert_true(keep);
        assert_string_equal(labels_get(&ls, "shard"), want);
        labels_release(&ls);
    }
    relabel_free(r);
}

static void test_relabel__labelmap(void **state)
{
    (void)state;
    struct labels ls;
    struct relabel_rule_spec s = {.regex = "__meta_kubernetes_pod_label_(.+)",
                                  .action = RELABEL_LABELMAP};
    assert_true(run1(&s, &ls));
    assert_string_equal(labels_get(&ls, "app"), "cart");
    assert_string_equal(labels_get(&ls, "tier"), "web");
    /* the sources stay */
    assert_string_equal(labels_get(&ls, "__meta_kubernetes_pod_label_app"), "cart");
    labels_release(&ls);
    s.replacement = "k8s_${1}";
    assert_true(run1(&s, &ls));
    assert_string_equal(labels_get(&ls, "k8s_app"), "cart");
    assert_null(labels_get(&ls, "app"));
    labels_release(&ls);
}

static void test_relabel__labeldrop_labelkeep(void **state)
{
    (void)state;
    struct labels ls;
    struct relabel_rule_spec s = {.regex = "__meta_kubernetes_.*", .action = RELABEL_LABELDROP};
    assert_true(run1(&s, &ls));
    assert_null(labels_get(&ls, "__meta_kubernetes_namespace"));
    assert_null(labels_get(&ls, "__meta_kubernetes_pod_label_app"));
    assert_string_equal(labels_get(&ls, "job"), "python");
    assert_int_equal(ls.n, 4);
    labels_release(&ls);
    s.action = RELABEL_LABELKEEP;
    s.regex = "job|__meta_process_.*";
    assert_true(run1(&s, &ls));
    assert_int_equal(ls.n, 4);
    assert_null(labels_get(&ls, "__meta_kubernetes_namespace"));
    assert_string_equal(labels_get(&ls, "job"), "python");
    labels_release(&ls);
}

static void test_relabel__lowercase_uppercase(void **state)
{
    (void)state;
    struct labels ls;
    static const char *const src[] = {"__meta_kubernetes_namespace", "job"};
    struct relabel_rule_spec s = {.source_labels = src,
                                  .nsource_labels = 2,
                                  .target_label = "up",
                                  .action = RELABEL_UPPERCASE};
    assert_true(run1(&s, &ls));
    assert_string_equal(labels_get(&ls, "up"), "SHOP;PYTHON");
    labels_release(&ls);
    static const char *const exe[] = {"__meta_process_exe"};
    struct relabel_rule_spec t = {.source_labels = exe,
                                  .nsource_labels = 1,
                                  .target_label = "job",
                                  .action = RELABEL_LOWERCASE};
    struct relabel_rules *r = compile1(&t);
    bool keep;
    meta(&ls);
    assert_int_equal(labels_set(&ls, "__meta_process_exe", "/Opt/Py-ÄB"), 0);
    assert_int_equal(relabel_apply(r, &ls, &keep), 0);
    assert_string_equal(labels_get(&ls, "job"), "/opt/py-Äb"); /* ASCII only */
    /* an empty value deletes the target */
    labels_del(&ls, "__meta_process_exe");
    assert_int_equal(relabel_apply(r, &ls, &keep), 0);
    assert_null(labels_get(&ls, "job"));
    labels_release(&ls);
    relabel_free(r);
}

static void expect_invalid(const struct relabel_rule_spec *s, enum relabel_field want_field,
                           const char *want_msg)
{
    enum relabel_field f;
    char err[256];
    struct relabel_rules *r = NULL;
    assert_int_equal(relabel_validate(s, &f, err, sizeof(err)), -EINVAL);
    assert_int_equal(f, want_field);
    if (!strstr(err, want_msg))
        fail_msg("'%s' does not contain '%s'", err, want_msg);
    assert_int_equal(relabel_compile(s, 1, &r, err, sizeof(err)), -EINVAL);
    assert_null(r);
    assert_true(strncmp(err, "rule 1: ", 8) == 0);
}

static void test_relabel__validation_errors(void **state)
{
    (void)state;
    static const char *const src[] = {"a"}, *const badsrc[] = {"a-b"};
    struct relabel_rule_spec s = {.regex = "(unclosed", .target_label = "x"};
    expect_invalid(&s, RELABEL_FIELD_REGEX, "missing closing parenthesis at offset 9");
    struct relabel_rule_spec h = {.action = RELABEL_HASHMOD, .target_label = "x"};
    expect_invalid(&h, RELABEL_FIELD_NONE, "non-zero 'modulus'");
    struct relabel_rule_spec rep = {.action = RELABEL_REPLACE};
    expect_invalid(&rep, RELABEL_FIELD_NONE, "replace requires 'target_label'");
    struct relabel_rule_spec lc = {
        .action = RELABEL_LOWERCASE, .target_label = "x", .replacement = "y"};
    expect_invalid(&lc, RELABEL_FIELD_REPLACEMENT, "'replacement' cannot be set");
    struct relabel_rule_spec ke = {.action = RELABEL_KEEPEQUAL, .target_label = "x", .regex = "a"};
    expect_invalid(&ke, RELABEL_FIELD_REGEX, "only 'source_labels' and 'target_label'");
    struct relabel_rule_spec ld = {
        .action = RELABEL_LABELDROP, .source_labels = src, .nsource_labels = 1};
    expect_invalid(&ld, RELABEL_FIELD_SOURCE_LABELS, "only 'regex'");
    struct relabel_rule_spec lk = {.action = RELABEL_LABELKEEP, .target_label = "t"};
    expect_invalid(&lk, RELABEL_FIELD_TARGET_LABEL, "only 'regex'");
    struct relabel_rule_spec tl = {.target_label = "1abc"};
    expect_invalid(&tl, RELABEL_FIELD_TARGET_LABEL, "not a valid target_label");
    struct relabel_rule_spec hm = {.action = RELABEL_HASHMOD, .target_label = "${1}", .modulus = 3};
    expect_invalid(&hm, RELABEL_FIELD_TARGET_LABEL, "not a valid target_label");
    struct relabel_rule_spec lm = {.action = RELABEL_LABELMAP, .replacement = "a-b"};
    expect_invalid(&lm, RELABEL_FIELD_REPLACEMENT, "not a valid replacement");
    struct relabel_rule_spec bs = {
        .source_labels = badsrc, .nsource_labels = 1, .target_label = "x"};
    expect_invalid(&bs, RELABEL_FIELD_SOURCE_LABELS, "'a-b' is not a valid label name");

    /* explicitly written defaults are allowed where other fields are not */
    struct relabel_rule_spec ok = {
        .action = RELABEL_LABELDROP, .separator = ";", .replacement = "$1", .regex = "tmp_.*"};
    enum relabel_field f;
    char err[128];
    assert_int_equal(relabel_validate(&ok, &f, err, sizeof(err)), 0);
    struct relabel_rule_spec tmpl = {.target_label = "${1}_x$2y", .regex = "(a)(b)"};
    assert_int_equal(relabel_validate(&tmpl, &f, err, sizeof(err)), 0);

    /* the error names the failing rule of a list */
    struct relabel_rule_spec list[2] = {{.target_label = "x"}, {.regex = "[", .target_label = "y"}};
    struct relabel_rules *r = NULL;
    char msg[256];
    assert_int_equal(relabel_compile(list, 2, &r, msg, sizeof(msg)), -EINVAL);
    assert_true(strncmp(msg, "rule 2: invalid regex '[': ", 27) == 0);

    /* too long a regex */
    char *big = alloc_malloc(RELABEL_MAX_REGEX + 2);
    assert_non_null(big);
    memset(big, 'a', RELABEL_MAX_REGEX + 1);
    big[RELABEL_MAX_REGEX + 1] = '\0';
    struct relabel_rule_spec lr = {.regex = big, .target_label = "x"};
    expect_invalid(&lr, RELABEL_FIELD_REGEX, "longer than");
    alloc_free(big);
}

static void test_relabel__actions_parse_case_insensitively(void **state)
{
    (void)state;
    enum relabel_action a;
    assert_int_equal(relabel_action_parse("HashMod", &a), 0);
    assert_int_equal(a, RELABEL_HASHMOD);
    assert_int_equal(relabel_action_parse("labelkeep", &a), 0);
    assert_int_equal(a, RELABEL_LABELKEEP);
    assert_int_equal(relabel_action_parse("", &a), -EINVAL);
    assert_int_equal(relabel_action_parse("replace_all", &a), -EINVAL);
    for (int i = RELABEL_REPLACE; i <= RELABEL_UPPERCASE; i++) {
        assert_int_equal(relabel_action_parse(relabel_action_name((enum relabel_action)i), &a), 0);
        assert_int_equal(a, i);
    }
}

static void test_relabel__spec_keeps_defaults(void **state)
{
    (void)state;
    struct relabel_rule_spec s = {.target_label = "x"};
    struct relabel_rules *r = compile1(&s);
    const struct relabel_rule_spec *c = relabel_spec(r, 0);
    assert_string_equal(c->separator, ";");
    assert_string_equal(c->regex, "(.*)");
    assert_string_equal(c->replacement, "$1");
    assert_string_equal(c->target_label, "x");
    assert_null(relabel_spec(r, 1));
    relabel_free(r);
    /* no rules: everything kept */
    struct labels ls;
    bool keep = false;
    meta(&ls);
    assert_int_equal(relabel_apply(NULL, &ls, &keep), 0);
    assert_true(keep);
    assert_int_equal(relabel_compile(NULL, 0, &r, NULL, 0), 0);
    assert_int_equal(relabel_count(r), 0);
    assert_int_equal(relabel_apply(r, &ls, &keep), 0);
    assert_true(keep);
    relabel_free(r);
    relabel_free(NULL);
    labels_release(&ls);
}

static void test_relabel__catastrophic_regex_is_bounded(void **state)
{
    (void)state;
    struct labels ls;
    char val[64];
    memset(val, 'a', sizeof(val) - 2);
    val[sizeof(val) - 2] = 'b';
    val[sizeof(val) - 1] = '\0';
    static const char *const v[] = {"v"};
    struct relabel_rule_spec s = {
        .source_labels = v, .nsource_labels = 1, .regex = "(a+)+c", .action = RELABEL_KEEP};
    struct relabel_rules *r = compile1(&s);
    bool keep = true;
    labels_init(&ls);
    assert_int_equal(labels_set(&ls, "v", val), 0);
    assert_int_equal(relabel_apply(r, &ls, &keep), 0);
    assert_false(keep); /* the match limit counts as no match */
    labels_release(&ls);
    relabel_free(r);
}

static void test_relabel__default_service_name(void **state)
{
    (void)state;
    static const struct {
        const char *exe, *cmd, *want;
    } v[] = {
        {"/usr/bin/python3.13", "/usr/bin/python3.13 -u /srv/app/manage.py runserver", "manage"},
        {"/usr/bin/python3.14", "python3 -m gunicorn app:app", "gunicorn"},
        {"/usr/bin/python3.14", "python3 -OO -mhttp.server 8000", "http.server"},
        {"/usr/bin/python3.15", "python3 -X importtime -W error worker.py", "worker"},
        {"/usr/bin/python3.13", "/usr/bin/python3 /usr/local/bin/celery -A proj worker", "celery"},
        {"/usr/bin/python3.13", "python3 -c import time; time.sleep(9)", "python3.13"},
        {"/usr/bin/python3.13", "python3", "python3.13"},
        {"/usr/bin/python3.13", "python3 -- script.py", "script"},
        {"/usr/bin/python3.13", "python3 - < x", "python3.13"},
        {"/opt/uwsgi/bin/uwsgi", "uwsgi --ini app.ini", "uwsgi"},
        {NULL, "/usr/local/bin/python3.13 /app/main.py", "main"},
        {NULL, "myservice --port 1", "myservice"},
        {"/usr/bin/python3", "python3 .py", ".py"},
    };
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(v); i++) {
        struct labels ls;
        labels_init(&ls);
        if (v[i].exe)
            assert_int_equal(labels_set(&ls, "__meta_process_exe", v[i].exe), 0);
        assert_int_equal(labels_set(&ls, "__meta_process_commandline", v[i].cmd), 0);
        assert_int_equal(relabel_default_service_name(&ls), 0);
        const char *got = labels_get(&ls, "service_name");
        if (!got || strcmp(got, v[i].want) != 0)
            fail_msg("case %zu: got '%s', want '%s'", i, got ? got : "(none)", v[i].want);
        labels_release(&ls);
    }
    /* an existing service_name wins; an empty one does not */
    struct labels ls;
    labels_init(&ls);
    assert_int_equal(labels_set(&ls, "__meta_process_exe", "/usr/bin/python3"), 0);
    assert_int_equal(labels_set(&ls, "service_name", "checkout"), 0);
    assert_int_equal(relabel_default_service_name(&ls), 0);
    assert_string_equal(labels_get(&ls, "service_name"), "checkout");
    assert_int_equal(labels_set(&ls, "service_name", ""), 0);
    assert_int_equal(relabel_default_service_name(&ls), 0);
    assert_string_equal(labels_get(&ls, "service_name"), "python3");
    labels_release(&ls);
    /* in a pod: the annotation, else <namespace>/<container>, before the process */
    labels_init(&ls);
    assert_int_equal(labels_set(&ls, "__meta_process_exe", "/usr/bin/python3"), 0);
    assert_int_equal(labels_set(&ls, "__meta_process_commandline", "python3 app.py"), 0);
    assert_int_equal(labels_set(&ls, "__meta_kubernetes_namespace", "shop"), 0);
    assert_int_equal(labels_set(&ls, "__meta_kubernetes_pod_container_name", "cart"), 0);
    assert_int_equal(relabel_default_service_name(&ls), 0);
    assert_string_equal(labels_get(&ls, "service_name"), "shop/cart");
    assert_int_equal(labels_set(&ls, "service_name", ""), 0);
    assert_int_equal(
        labels_set(&ls, "__meta_kubernetes_pod_annotation_profiles_grafana_com_service_name",
                   "grafana-name"),
        0);
    assert_int_equal(relabel_default_service_name(&ls), 0);
    assert_string_equal(labels_get(&ls, "service_name"), "grafana-name");
    assert_int_equal(labels_set(&ls, "service_name", ""), 0);
    assert_int_equal(
        labels_set(&ls, "__meta_kubernetes_pod_annotation_pyroscope_io_service_name", "checkout"),
        0);
    assert_int_equal(relabel_default_service_name(&ls), 0);
    assert_string_equal(labels_get(&ls, "service_name"), "checkout");
    labels_release(&ls);
    /* a namespace without a container (a host process has neither): the process */
    labels_init(&ls);
    assert_int_equal(labels_set(&ls, "__meta_process_exe", "/usr/bin/python3"), 0);
    assert_int_equal(labels_set(&ls, "__meta_process_commandline", "python3 app.py"), 0);
    assert_int_equal(labels_set(&ls, "__meta_kubernetes_namespace", "shop"), 0);
    assert_int_equal(relabel_default_service_name(&ls), 0);
    assert_string_equal(labels_get(&ls, "service_name"), "app");
    labels_release(&ls);
    /* nothing to go on: nothing set */
    labels_init(&ls);
    assert_int_equal(relabel_default_service_name(&ls), 0);
    assert_null(labels_get(&ls, "service_name"));
    labels_release(&ls);
}

static void test_relabel__finish_drops_double_underscore(void **state)
{
    (void)state;
    struct labels ls;
    meta(&ls);
    assert_int_equal(labels_set(&ls, "__tmp_x", "1"), 0);
    assert_int_equal(labels_set(&ls, "_single", "kept"), 0);
    assert_int_equal(labels_set(&ls, "__container_id__", "abc"), 0);
    relabel_finish(&ls);
    assert_int_equal(ls.n, 2);
    assert_string_equal(labels_get(&ls, "job"), "python");
    assert_string_equal(labels_get(&ls, "_single"), "kept");
    labels_release(&ls);
}

/*
 * limits.max_labels_per_profile on a finished label set: a pod whose labels
 * a labelmap rule copies can carry more labels than a backend takes
 * (Pyroscope refuses a series with more than 30); such a target is refused
 * with the reason, one at the limit is fine.
 */
static void test_relabel__check_limit(void **state)
{
    (void)state;
    struct relabel_rule_spec map = {.regex = "__meta_kubernetes_pod_label_(.+)",
                                    .action = RELABEL_LABELMAP};
    struct relabel_rule_spec drop = {.regex = "l[12][0-9]", .action = RELABEL_LABELDROP};
    struct relabel_rules *r = compile1(&map), *d = compile1(&drop);
    struct labels ls = {0};
    char name[64], why[256] = "";
    bool keep = false;
    assert_int_equal(labels_set(&ls, "job", "python"), 0);
    for (int i = 0; i < 30; i++) {
        snprintf(name, sizeof(name), "__meta_kubernetes_pod_label_l%02d", i);
        assert_int_equal(labels_set(&ls, name, "v"), 0);
    }
    assert_int_equal(relabel_apply(r, &ls, &keep), 0);
    assert_true(keep);
    relabel_finish(&ls);
    assert_int_equal(labels_set(&ls, "cluster", "eu"), 0); /* an external label */
    assert_int_equal(ls.n, 32);                            /* job, cluster, l00..l29 */
    assert_int_equal(relabel_check_limit(&ls, 25, why, sizeof(why)), -E2BIG);
    assert_string_equal(why, "limits.max_labels_per_profile (25) exceeded: 32 labels after "
                             "relabeling and external_labels (drop some with a labeldrop rule)");
    assert_int_equal(relabel_check_limit(&ls, 32, why, sizeof(why)), 0);
    /* the fix the message suggests: 20 labels fewer */
    assert_int_equal(relabel_apply(d, &ls, &keep), 0);
    assert_int_equal(ls.n, 12);
    assert_int_equal(relabel_check_limit(&ls, 25, why, sizeof(why)), 0);
    assert_int_equal(relabel_check_limit(&ls, 12, why, sizeof(why)), 0);
    assert_int_equal(relabel_check_limit(&ls, 11, why, sizeof(why)), -E2BIG);
    labels_release(&ls);
    relabel_free(r);
    relabel_free(d);
}

static void test_relabel__apply_survives_allocation_failures(void **state)
{
    (void)state;
    struct relabel_rule_spec rules[3] = {
        {.regex = "__meta_kubernetes_pod_label_(.+)", .action = RELABEL_LABELMAP},
        {.source_labels = src_exe, .nsource_labels = 1, .regex = ".*/(.*)", .target_label = "exe"},
        {.regex = "__meta_.*", .action = RELABEL_LABELDROP},
    };
    struct relabel_rules *r = NULL;
    char err[64];
    assert_int_equal(relabel_compile(rules, 3, &r, err, sizeof(err)), 0);
    for (uint64_t n = 1; n < 40; n++) {
        struct labels ls;
        bool keep = true;
        meta(&ls);
        alloc_fail_nth(n);
        int rc = relabel_apply(r, &ls, &keep);
        alloc_fail_nth(0);
        if (rc) {
            assert_int_equal(rc, -ENOMEM);
            assert_false(keep);
        } else {
            assert_true(keep);
            assert_string_equal(labels_get(&ls, "exe"), "python3.13");
        }
        labels_release(&ls);
    }
    relabel_free(r);
    for (uint64_t n = 1; n < 60; n++) {
        struct relabel_rules *q = NULL;
        alloc_fail_nth(n);
        int rc = relabel_compile(rules, 3, &q, err, sizeof(err));
        alloc_fail_nth(0);
        assert_true(rc == 0 || rc == -ENOMEM);
        assert_true((rc == 0) == (q != NULL));
        relabel_free(q);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_relabel__replace_with_captures),
        cmocka_unit_test(test_relabel__regex_is_fully_anchored),
        cmocka_unit_test(test_relabel__empty_result_deletes_target),
        cmocka_unit_test(test_relabel__dollar_1x_is_a_group_name),
        cmocka_unit_test(test_relabel__keep_drop),
        cmocka_unit_test(test_relabel__keep_matches_invalid_utf8_as_fffd),
        cmocka_unit_test(test_relabel__drop_cannot_be_dodged_with_invalid_bytes),
        cmocka_unit_test(test_relabel__sees_valid_utf8_in_a_set_built_by_hand),
        cmocka_unit_test(test_relabel__keepequal_dropequal),
        cmocka_unit_test(test_relabel__hashmod_matches_prometheus),
        cmocka_unit_test(test_relabel__hashmod_md5_rfc1321_vectors),
        cmocka_unit_test(test_relabel__labelmap),
        cmocka_unit_test(test_relabel__labeldrop_labelkeep),
        cmocka_unit_test(test_relabel__lowercase_uppercase),
        cmocka_unit_test(test_relabel__validation_errors),
        cmocka_unit_test(test_relabel__actions_parse_case_insensitively),
        cmocka_unit_test(test_relabel__spec_keeps_defaults),
        cmocka_unit_test(test_relabel__catastrophic_regex_is_bounded),
        cmocka_unit_test(test_relabel__default_service_name),
        cmocka_unit_test(test_relabel__finish_drops_double_underscore),
        cmocka_unit_test(test_relabel__check_limit),
        cmocka_unit_test(test_relabel__apply_survives_allocation_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
