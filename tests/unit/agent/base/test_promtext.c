/* SPDX-License-Identifier: MIT */
/*
 * Tests for agent/base/promtext.c: exact text for each kind of line,
 * escaping, value formatting, the checks, the cap, the histogram type, the
 * process_* metrics, families opened again coming out grouped, and Debian's
 * promtool as the real consumer.
 */
#include "base/compat.h"

#include <math.h>
#include <pthread.h>
#include <unistd.h>

#include "cmocka_wrap.h"
#include "test_util.h"

#include "base/alloc.h"
#include "base/promtext.h"
#include "base/utf8.h"

/* The document so far as a NUL-terminated string (static buffer). */
static const char *doc(struct promtext *w)
{
    static char buf[1 << 16];
    size_t len = 0;
    const char *d = promtext_data(w, &len);
    assert_non_null(d);
    assert_true(len < sizeof(buf));
    memcpy(buf, d, len);
    buf[len] = '\0';
    return buf;
}

static struct promtext *new_writer(size_t cap)
{
    struct promtext *w = NULL;
    assert_int_equal(promtext_new(cap, &w), 0);
    return w;
}

static void test_promtext__counter_and_gauge(void **state)
{
    (void)state;
    struct promtext *w = new_writer(0);
    assert_int_equal(
        promtext_family(w, "pyprofd_samples_total", PROMTEXT_COUNTER, "Samples taken, by job."), 0);
    assert_int_equal(promtext_sample(w, NULL, PROMTEXT_LABELS({"job", "web"}), 42), 0);
    assert_int_equal(
        promtext_sample(w, NULL, PROMTEXT_LABELS({"job", "batch"}, {"mode", "cpu"}), 7), 0);
    assert_int_equal(promtext_family(w, "pyprofd_queue_depth", PROMTEXT_GAUGE, NULL), 0);
    assert_int_equal(promtext_sample(w, "pyprofd_queue_depth", NULL, 0, 3), 0);
    assert_int_equal(promtext_family(w, "x:ratio", PROMTEXT_UNTYPED, ""), 0);
    assert_int_equal(promtext_sample(w, NULL, NULL, 0, 0.5), 0);
    assert_string_equal(doc(w), "# HELP pyprofd_samples_total Samples taken, by job.\n"
                                "# TYPE pyprofd_samples_total counter\n"
                                "pyprofd_samples_total{job=\"web\"} 42\n"
                                "pyprofd_samples_total{job=\"batch\",mode=\"cpu\"} 7\n"
                                "# TYPE pyprofd_queue_depth gauge\n"
                                "pyprofd_queue_depth 3\n"
                                "# HELP x:ratio \n"
                                "# TYPE x:ratio untyped\n"
                                "x:ratio 0.5\n");
    assert_int_equal(promtext_error(w), 0);
    promtext_free(w);
}

static void test_promtext__escapes_labels_and_help(void **state)
{
    (void)state;
    struct promtext *w = new_writer(0);
    assert_int_equal(promtext_family(w, "m", PROMTEXT_GAUGE, "a \"quoted\" back\\slash\nnext"), 0);
    assert_int_equal(promtext_sample(w, NULL, PROMTEXT_LABELS({"v", "a\\b\"c\nd"}), 1), 0);
    /* UTF-8 is kept; an invalid sequence becomes one U+FFFD as in Python (base/utf8.h), counted */
    uint64_t before = utf8_replaced_total();
    assert_int_equal(
        promtext_sample(w, NULL, PROMTEXT_LABELS({"v", "caf\xc3\xa9 \xff\xc0\xaf"}), 2), 0);
    assert_int_equal(promtext_sample(w, NULL, PROMTEXT_LABELS({"v", ""}), 3), 0);
    assert_int_equal(promtext_sample(w, NULL, PROMTEXT_LABELS({"v", "\xe2\x82|\xed\xa0\x80"}), 4),
                     0);
    assert_int_equal(utf8_replaced_total() - before, 7);
    assert_string_equal(doc(w), "# HELP m a \"quoted\" back\\\\slash\\nnext\n"
                                "# TYPE m gauge\n"
                                "m{v=\"a\\\\b\\\"c\\nd\"} 1\n"
                                "m{v=\"caf\xc3\xa9 \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"} 2\n"
                                "m{v=\"\"} 3\n"
                                "m{v=\"\xef\xbf\xbd|\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"} 4\n");
    promtext_free(w);
}

static void test_promtext__formats_values(void **state)
{
    (void)state;
    static const struct {
        double v;
        const char *text;
    } cases[] = {
        {0, "0"},
        {-0.0, "0"},
        {1, "1"},
        {-3, "-3"},
        {1e15, "1000000000000000"},
        {9007199254740992.0, "9007199254740992"},
        {1e20, "1e+20"},
        {0.1, "0.1"},
        {1.5, "1.5"},
        {0.001, "0.001"},
        {1e-9, "1e-09"},
        {1.0 / 3, "0.3333333333333333"},
        {123456.789, "123456.789"},
    };
    char buf[64];
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(cases); i++) {
        promtext_format_value(cases[i].v, buf, sizeof(buf));
        assert_string_equal(buf, cases[i].text);
    }
    promtext_format_value(NAN, buf, sizeof(buf));
    assert_string_equal(buf, "NaN");
    promtext_format_value(INFINITY, buf, sizeof(buf));
    assert_string_equal(buf, "+Inf");
    promtext_format_value(-INFINITY, buf, sizeof(buf));
    assert_string_equal(buf, "-Inf");
}

static void test_promtext__histogram(void **state)
{
    (void)state;
    static const double bounds[] = {0.5, 1, 10};
    struct promtext_hist h;
    assert_int_equal(promtext_hist_init(&h, bounds, 3), 0);
    promtext_hist_observe(&h, 0.25);
    promtext_hist_observe(&h, 0.5); /* le is inclusive */
    promtext_hist_observe(&h, 2);
    promtext_hist_observe(&h, 20);
    promtext_hist_observe(&h, NAN); /* ignored */
    struct promtext *w = new_writer(0);
    assert_int_equal(
        promtext_family(w, "pyprofd_encode_duration_seconds", PROMTEXT_HISTOGRAM, "Encode time."),
        0);
    assert_int_equal(promtext_histogram(w, PROMTEXT_LABELS({"job", "x"}), &h), 0);
    assert_int_equal(promtext_histogram(w, NULL, 0, &h), 0);
    assert_string_equal(doc(w), "# HELP pyprofd_encode_duration_seconds Encode time.\n"
                                "# TYPE pyprofd_encode_duration_seconds histogram\n"
                                "pyprofd_encode_duration_seconds_bucket{job=\"x\",le=\"0.5\"} 2\n"
                                "pyprofd_encode_duration_seconds_bucket{job=\"x\",le=\"1\"} 2\n"
                                "pyprofd_encode_duration_seconds_bucket{job=\"x\",le=\"10\"} 3\n"
                                "pyprofd_encode_duration_seconds_bucket{job=\"x\",le=\"+Inf\"} 4\n"
                                "pyprofd_encode_duration_seconds_sum{job=\"x\"} 22.75\n"
                                "pyprofd_encode_duration_seconds_count{job=\"x\"} 4\n"
                                "pyprofd_encode_duration_seconds_bucket{le=\"0.5\"} 2\n"
                                "pyprofd_encode_duration_seconds_bucket{le=\"1\"} 2\n"
                                "pyprofd_encode_duration_seconds_bucket{le=\"10\"} 3\n"
                                "pyprofd_encode_duration_seconds_bucket{le=\"+Inf\"} 4\n"
                                "pyprofd_encode_duration_seconds_sum 22.75\n"
                                "pyprofd_encode_duration_seconds_count 4\n");
    /* "le" belongs to the histogram; a histogram outside a histogram family is refused */
    assert_int_equal(promtext_histogram(w, PROMTEXT_LABELS({"le", "1"}), &h), -EINVAL);
    assert_int_equal(promtext_family(w, "g", PROMTEXT_GAUGE, NULL), 0);
    assert_int_equal(promtext_histogram(w, NULL, 0, &h), -EPROTO);
    promtext_free(w);
}

static void test_promtext__hist_init_checks_bounds(void **state)
{
    (void)state;
    struct promtext_hist h;
    static const double dup[] = {1, 1};
    static const double down[] = {2, 1};
    const double nan[] = {1, NAN};
    const double inf[] = {1, INFINITY};
    double many[PROMTEXT_HIST_MAX_BOUNDS + 1];
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(many); i++)
        many[i] = (double)i;
    assert_int_equal(promtext_hist_init(&h, dup, 2), -EINVAL);
    assert_int_equal(promtext_hist_init(&h, down, 2), -EINVAL);
    assert_int_equal(promtext_hist_init(&h, nan, 2), -EINVAL);
    assert_int_equal(promtext_hist_init(&h, inf, 2), -EINVAL);
    assert_int_equal(promtext_hist_init(&h, many, 0), -EINVAL);
    assert_int_equal(promtext_hist_init(&h, many, PYPROFD_ARRAY_SIZE(many)), -EINVAL);
    assert_int_equal(promtext_hist_init(&h, many, PROMTEXT_HIST_MAX_BOUNDS), 0);
    assert_int_equal(
        promtext_hist_init(&h, promtext_buckets_seconds, promtext_buckets_seconds_count), 0);
    assert_int_equal(promtext_hist_init(&h, promtext_buckets_bytes, promtext_buckets_bytes_count),
                     0);
}

static void *observe_many(void *arg)
{
    struct promtext_hist *h = arg;
    for (int i = 0; i < 20000; i++)
        promtext_hist_observe(h, (double)(i % 4)); /* 0,1,2,3: sum 30000 per thread */
    return NULL;
}

static void test_promtext__hist_observe_is_thread_safe(void **state)
{
    (void)state;
    static const double bounds[] = {1, 2};
    struct promtext_hist h;
    pthread_t t[4];
    assert_int_equal(promtext_hist_init(&h, bounds, 2), 0);
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&t[i], NULL, observe_many, &h), 0);
    for (size_t i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    struct promtext *w = new_writer(0);
    assert_int_equal(promtext_family(w, "h", PROMTEXT_HISTOGRAM, NULL), 0);
    assert_int_equal(promtext_histogram(w, NULL, 0, &h), 0);
    assert_string_equal(doc(w), "# TYPE h histogram\n"
                                "h_bucket{le=\"1\"} 40000\n"
                                "h_bucket{le=\"2\"} 60000\n"
                                "h_bucket{le=\"+Inf\"} 80000\n"
                                "h_sum 120000\n"
                                "h_count 80000\n");
    promtext_free(w);
}

static void test_promtext__rejects_bad_names_and_order(void **state)
{
    (void)state;
    struct promtext *w = new_writer(0);
    /* a sample with no family open */
    assert_int_equal(promtext_sample(w, "m", NULL, 0, 1), -EPROTO);
    assert_int_equal(promtext_family(w, "1abc", PROMTEXT_GAUGE, NULL), -EINVAL);
    assert_int_equal(promtext_family(w, "a-b", PROMTEXT_GAUGE, NULL), -EINVAL);
    assert_int_equal(promtext_family(w, "", PROMTEXT_GAUGE, NULL), -EINVAL);
    assert_int_equal(promtext_family(w, NULL, PROMTEXT_GAUGE, NULL), -EINVAL);
    assert_int_equal(promtext_family(w, "ok", (enum promtext_type)42, NULL), -EINVAL);
    size_t len = 0;
    (void)promtext_data(w, &len);
    assert_int_equal(len, 0);

    assert_int_equal(promtext_family(w, "m_total", PROMTEXT_COUNTER, "h"), 0);
    assert_int_equal(promtext_sample(w, NULL, PROMTEXT_LABELS({"1x", "v"}), 1), -EINVAL);
    assert_int_equal(promtext_sample(w, NULL, PROMTEXT_LABELS({"__name__", "v"}), 1), -EINVAL);
    assert_int_equal(promtext_sample(w, NULL, PROMTEXT_LABELS({"a-b", "v"}), 1), -EINVAL);
    assert_int_equal(promtext_sample(w, NULL, PROMTEXT_LABELS({"a", NULL}), 1), -EINVAL);
    assert_int_equal(promtext_sample(w, NULL, NULL, 2, 1), -EINVAL);
    /* names outside the open family */
    assert_int_equal(promtext_sample(w, "other", NULL, 0, 1), -EPROTO);
    assert_int_equal(promtext_sample(w, "_sum", NULL, 0, 1), -EPROTO);
    assert_int_equal(promtext_sample(w, "m_total_bucket", NULL, 0, 1), -EPROTO);
    assert_int_equal(promtext_sample(w, "bad name", NULL, 0, 1), -EINVAL);
    assert_int_equal(promtext_sample(w, "m_total", NULL, 0, 5), 0);
    /* a family has one type */
    assert_int_equal(promtext_family(w, "other", PROMTEXT_GAUGE, NULL), 0);
    assert_int_equal(promtext_family(w, "m_total", PROMTEXT_GAUGE, "again"), -EEXIST);
    /* a histogram's samples carry a suffix; a summary's plain name is a quantile */
    assert_int_equal(promtext_family(w, "h", PROMTEXT_HISTOGRAM, NULL), 0);
    assert_int_equal(promtext_sample(w, NULL, NULL, 0, 1), -EPROTO);
    assert_int_equal(promtext_sample(w, "_count", NULL, 0, 1), 0);
    assert_int_equal(promtext_family(w, "s", PROMTEXT_SUMMARY, NULL), 0);
    assert_int_equal(promtext_sample(w, NULL, PROMTEXT_LABELS({"quantile", "0.5"}), 1), 0);
    assert_int_equal(promtext_sample(w, "_bucket", NULL, 0, 1), -EPROTO);
    assert_int_equal(promtext_sample(w, "_sum", NULL, 0, 1), 0);
    /* none of the failures were sticky or left text behind */
    assert_int_equal(promtext_error(w), 0);
    assert_string_equal(doc(w), "# HELP m_total h\n"
                                "# TYPE m_total counter\n"
                                "m_total 5\n"
                                "# TYPE other gauge\n"
                                "# TYPE h histogram\n"
                                "h_count 1\n"
                                "# TYPE s summary\n"
                                "s{quantile=\"0.5\"} 1\n"
                                "s_sum 1\n");
    promtext_free(w);
}

/* Families opened again append to themselves: each comes out whole, where it was first opened. */
static void test_promtext__groups_samples_by_family(void **state)
{
    (void)state;
    struct promtext *w = new_writer(0);
    struct promtext_hist h;
    assert_int_equal(promtext_hist_init(&h, (const double[]){1}, 1), 0);
    promtext_hist_observe(&h, 0.5);
    /* two writers of one document, each with its own label value, interleaved */
    for (int i = 0; i < 2; i++) {
        const char *ep = i == 0 ? "a" : "b";
        assert_int_equal(promtext_family(w, "push_total", PROMTEXT_COUNTER, "Pushed."), 0);
        assert_int_equal(promtext_sample(w, NULL, PROMTEXT_LABELS({"endpoint", ep}), i + 1), 0);
        /* the second writer's help text is ignored: the first one's stands */
        assert_int_equal(promtext_family(w, "queue", PROMTEXT_GAUGE, i == 0 ? NULL : "Waiting."),
                         0);
        assert_int_equal(promtext_sample(w, NULL, PROMTEXT_LABELS({"endpoint", ep}), 10 + i), 0);
        assert_int_equal(promtext_family(w, "took", PROMTEXT_HISTOGRAM, "Time."), 0);
        assert_int_equal(promtext_histogram(w, PROMTEXT_LABELS({"endpoint", ep}), &h), 0);
    }
    /* and a family first opened after them comes last */
    assert_int_equal(promtext_family(w, "last", PROMTEXT_GAUGE, NULL), 0);
    assert_int_equal(promtext_sample(w, NULL, NULL, 0, 1), 0);
    assert_int_equal(promtext_family(w, "push_total", PROMTEXT_COUNTER, NULL), 0);
    assert_int_equal(promtext_sample(w, NULL, PROMTEXT_LABELS({"endpoint", "c"}), 3), 0);
    const char *want = "# HELP push_total Pushed.\n"
                       "# TYPE push_total counter\n"
                       "push_total{endpoint=\"a\"} 1\n"
                       "push_total{endpoint=\"b\"} 2\n"
                       "push_total{endpoint=\"c\"} 3\n"
                       "# TYPE queue gauge\n"
                       "queue{endpoint=\"a\"} 10\n"
                       "queue{endpoint=\"b\"} 11\n"
                       "# HELP took Time.\n"
                       "# TYPE took histogram\n"
                       "took_bucket{endpoint=\"a\",le=\"1\"} 1\n"
                       "took_bucket{endpoint=\"a\",le=\"+Inf\"} 1\n"
                       "took_sum{endpoint=\"a\"} 0.5\n"
                       "took_count{endpoint=\"a\"} 1\n"
                       "took_bucket{endpoint=\"b\",le=\"1\"} 1\n"
                       "took_bucket{endpoint=\"b\",le=\"+Inf\"} 1\n"
                       "took_sum{endpoint=\"b\"} 0.5\n"
                       "took_count{endpoint=\"b\"} 1\n"
                       "# TYPE last gauge\n"
                       "last 1\n";
    assert_string_equal(doc(w), want);
    /* reading it does not change it; taking it gives the same text */
    assert_string_equal(doc(w), want);
    char *out = NULL;
    size_t len = 0;
    assert_int_equal(promtext_take(w, &out, &len), 0);
    assert_string_equal(out, want);
    assert_int_equal(len, strlen(want));
    alloc_free(out);
    promtext_free(w);
}

/* A name has one type; refusing another changes nothing and is not sticky. */
static void test_promtext__refuses_a_conflicting_type(void **state)
{
    (void)state;
    struct promtext *w = new_writer(0);
    assert_int_equal(promtext_family(w, "m", PROMTEXT_COUNTER, "Counted."), 0);
    assert_int_equal(promtext_sample(w, NULL, NULL, 0, 1), 0);
    assert_int_equal(promtext_family(w, "g", PROMTEXT_GAUGE, NULL), 0);
    assert_int_equal(promtext_family(w, "m", PROMTEXT_GAUGE, "Counted."), -EEXIST);
    assert_int_equal(promtext_family(w, "m", PROMTEXT_HISTOGRAM, NULL), -EEXIST);
    assert_int_equal(promtext_family(w, "g", PROMTEXT_COUNTER, NULL), -EEXIST);
    assert_int_equal(promtext_error(w), 0);
    /* the family open before the refusal is still the open one */
    assert_int_equal(promtext_sample(w, NULL, NULL, 0, 2), 0);
    assert_string_equal(doc(w), "# HELP m Counted.\n"
                                "# TYPE m counter\n"
                                "m 1\n"
                                "# TYPE g gauge\n"
                                "g 2\n");
    promtext_free(w);
}

/* The cap counts the whole document, over every family. */
static void test_promtext__cap_counts_every_family(void **state)
{
    (void)state;
    struct promtext *w = new_writer(60);
    assert_int_equal(promtext_family(w, "a", PROMTEXT_GAUGE, NULL), 0); /* 15 bytes */
    assert_int_equal(promtext_family(w, "b", PROMTEXT_GAUGE, NULL), 0); /* 30 */
    int rc = 0;
    int n = 0;
    for (; rc == 0 && n < 100; n++) {
        rc = promtext_family(w, n % 2 ? "a" : "b", PROMTEXT_GAUGE, NULL);
        if (rc == 0)
            rc = promtext_sample(w, NULL, NULL, 0, 1); /* 4 bytes each */
    }
    assert_int_equal(rc, -E2BIG);
    size_t len = 0;
    assert_non_null(promtext_data(w, &len));
    assert_int_equal(len, 58); /* 30 + 7 samples; an eighth would be 62 */
    assert_int_equal(n, 8);
    promtext_free(w);
}

static void test_promtext__stops_at_the_cap(void **state)
{
    (void)state;
    struct promtext *w = new_writer(100);
    int rc = promtext_family(w, "m", PROMTEXT_GAUGE, "A gauge.");
    int i = 0;
    for (; rc == 0 && i < 100; i++)
        rc = promtext_sample(w, NULL, PROMTEXT_LABELS({"i", "0123456789"}), i);
    assert_int_equal(rc, -E2BIG);
    assert_true(i > 1 && i < 10);
    size_t len = 0;
    const char *d = promtext_data(w, &len);
    assert_true(len <= 100);
    assert_int_equal(d[len - 1], '\n'); /* only whole lines */
    /* sticky: everything fails from now on, even what would fit */
    assert_int_equal(promtext_error(w), -E2BIG);
    assert_int_equal(promtext_family(w, "n", PROMTEXT_GAUGE, NULL), -E2BIG);
    size_t len2 = 0;
    (void)promtext_data(w, &len2);
    assert_int_equal(len2, len);
    promtext_free(w);

    /* a line longer than the cap never fits */
    w = new_writer(10);
    assert_int_equal(promtext_family(w, "a_rather_long_name", PROMTEXT_GAUGE, NULL), -E2BIG);
    promtext_free(w);
}

static void test_promtext__take_hands_over_and_resets(void **state)
{
    (void)state;
    struct promtext *w = new_writer(0);
    char *out = NULL;
    size_t len = 0;
    assert_int_equal(promtext_family(w, "m", PROMTEXT_GAUGE, NULL), 0);
    assert_int_equal(promtext_sample(w, NULL, NULL, 0, 1), 0);
    assert_int_equal(promtext_take(w, &out, &len), 0);
    assert_int_equal(len, strlen("# TYPE m gauge\nm 1\n"));
    assert_string_equal(out, "# TYPE m gauge\nm 1\n");
    alloc_free(out);
    /* empty again, and the family may be written anew */
    assert_int_equal(promtext_sample(w, NULL, NULL, 0, 1), -EPROTO);
    assert_int_equal(promtext_family(w, "m", PROMTEXT_GAUGE, NULL), 0);
    assert_int_equal(promtext_take(w, &out, &len), 0);
    assert_string_equal(out, "# TYPE m gauge\n");
    alloc_free(out);
    /* taking an empty writer gives "" */
    assert_int_equal(promtext_take(w, &out, &len), 0);
    assert_int_equal(len, 0);
    assert_string_equal(out, "");
    alloc_free(out);
    promtext_free(w);
    promtext_free(NULL);
}

static void test_promtext__parses_proc_stat(void **state)
{
    (void)state;
    struct promtext_proc_stat st;
    /* the command name may hold spaces and parentheses */
    const char *line = "1234 (a) (b c) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 7 0 "
                       "98765 123456789 4321 18446744073709551615 1 1 0 0 0 0 0 0 0\n";
    assert_int_equal(promtext_parse_proc_stat(line, &st), 0);
    assert_int_equal(st.utime_ticks, 250);
    assert_int_equal(st.stime_ticks, 50);
    assert_int_equal(st.threads, 7);
    assert_int_equal(st.start_ticks, 98765);
    assert_int_equal(st.vsize_bytes, 123456789);
    assert_int_equal(st.rss_pages, 4321);
    assert_int_equal(promtext_parse_proc_stat("1234 (a) S 1 2 3\n", &st), -EINVAL);
    assert_int_equal(promtext_parse_proc_stat("no parenthesis", &st), -EINVAL);
    assert_int_equal(promtext_parse_proc_stat("1 (x) S 1 x 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 "
                                              "18 19 20 21 22\n",
                                              &st),
                     -EINVAL);
}

static void test_promtext__process_metrics(void **state)
{
    (void)state;
    struct promtext *w = new_writer(0);
    assert_int_equal(promtext_process_metrics(w), 0);
    const char *d = doc(w);
    static const char *const names[] = {
        "\nprocess_cpu_seconds_total ",
        "\nprocess_resident_memory_bytes ",
        "\nprocess_virtual_memory_bytes ",
        "\nprocess_start_time_seconds ",
        "\nprocess_threads ",
        "\nprocess_open_fds ",
        "\nprocess_max_fds ",
    };
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(names); i++) {
        if (!strstr(d, names[i]))
            fail_msg("missing %s in\n%s", names[i] + 1, d);
    }
    /* the start time is in the past, and not long ago */
    const char *p = strstr(d, "\nprocess_start_time_seconds ") + 28;
    double start = strtod(p, NULL);
    double now = (double)time(NULL);
    assert_true(start <= now + 1 && start > now - 600);
    /* at least this thread (sanitizers may add their own) */
    assert_true(strtod(strstr(d, "\nprocess_threads ") + 17, NULL) >= 1);
    /* a second call finds its families already written */
    assert_int_equal(promtext_process_metrics(w), -EEXIST);
    promtext_free(w);
}

/* Debian's promtool is the consumer that matters: it must accept a full document. */
static void test_promtext__promtool_accepts_document(void **state)
{
    (void)state;
    if (access("/usr/bin/promtool", X_OK) != 0)
        skip();
    struct promtext *w = new_writer(0);
    struct promtext_hist h;
    assert_int_equal(
        promtext_hist_init(&h, promtext_buckets_seconds, promtext_buckets_seconds_count), 0);
    promtext_hist_observe(&h, 0.003);
    promtext_hist_observe(&h, 7);
    assert_int_equal(
        promtext_family(w, "pyprofd_build_info", PROMTEXT_GAUGE, "Build information; always 1."),
        0);
    assert_int_equal(promtext_sample(w, NULL, PROMTEXT_LABELS({"version", "0.1.0"}), 1), 0);
    assert_int_equal(promtext_family(w, "pyprofd_samples_total", PROMTEXT_COUNTER,
                                     "Samples taken.\nSecond \\ line."),
                     0);
    assert_int_equal(
        promtext_sample(w, NULL, PROMTEXT_LABELS({"job", "a\"b\\c\nd"}, {"mode", "wall"}), 12), 0);
    assert_int_equal(promtext_sample(w, NULL, PROMTEXT_LABELS({"job", "\xff"}, {"mode", "cpu"}), 1),
                     0);
    assert_int_equal(promtext_family(w, "pyprofd_weird_ratio", PROMTEXT_GAUGE, "Odd values."), 0);
    assert_int_equal(promtext_sample(w, NULL, PROMTEXT_LABELS({"k", "nan"}), NAN), 0);
    assert_int_equal(promtext_sample(w, NULL, PROMTEXT_LABELS({"k", "inf"}), INFINITY), 0);
    assert_int_equal(promtext_sample(w, NULL, PROMTEXT_LABELS({"k", "-inf"}), -INFINITY), 0);
    assert_int_equal(promtext_sample(w, NULL, PROMTEXT_LABELS({"k", "small"}), 1e-12), 0);
    assert_int_equal(promtext_family(w, "pyprofd_encode_duration_seconds", PROMTEXT_HISTOGRAM,
                                     "Time to encode one profile."),
                     0);
    assert_int_equal(promtext_histogram(w, PROMTEXT_LABELS({"job", "web"}), &h), 0);
    /* families opened again, as several exporters do: grouped in the output */
    assert_int_equal(promtext_family(w, "pyprofd_samples_total", PROMTEXT_COUNTER, NULL), 0);
    assert_int_equal(
        promtext_sample(w, NULL, PROMTEXT_LABELS({"job", "batch"}, {"mode", "gil"}), 3), 0);
    assert_int_equal(promtext_family(w, "pyprofd_encode_duration_seconds", PROMTEXT_HISTOGRAM,
                                     "Time to encode one profile."),
                     0);
    assert_int_equal(promtext_histogram(w, PROMTEXT_LABELS({"job", "batch"}), &h), 0);
    assert_int_equal(promtext_process_metrics(w), 0);

    char path[] = "/tmp/pyprofd-promtext-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    size_t len = 0;
    const char *d = promtext_data(w, &len);
    assert_int_equal(write(fd, d, len), (ssize_t)len);
    close(fd);
    char cmd[256];
    char out[4096];
    snprintf(cmd, sizeof(cmd), "/usr/bin/promtool check metrics < %s 2>&1", path);
    int st = test_run(cmd, out, sizeof(out));
    unlink(path);
    if (st != 0)
        fail_msg("promtool check metrics failed (%d): %s\n%s", st, out, doc(w));
    promtext_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_promtext__counter_and_gauge),
        cmocka_unit_test(test_promtext__escapes_labels_and_help),
        cmocka_unit_test(test_promtext__formats_values),
        cmocka_unit_test(test_promtext__histogram),
        cmocka_unit_test(test_promtext__hist_init_checks_bounds),
        cmocka_unit_test(test_promtext__hist_observe_is_thread_safe),
        cmocka_unit_test(test_promtext__rejects_bad_names_and_order),
        cmocka_unit_test(test_promtext__groups_samples_by_family),
        cmocka_unit_test(test_promtext__refuses_a_conflicting_type),
        cmocka_unit_test(test_promtext__cap_counts_every_family),
        cmocka_unit_test(test_promtext__stops_at_the_cap),
        cmocka_unit_test(test_promtext__take_hands_over_and_resets),
        cmocka_unit_test(test_promtext__parses_proc_stat),
        cmocka_unit_test(test_promtext__process_metrics),
        cmocka_unit_test(test_promtext__promtool_accepts_document),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
