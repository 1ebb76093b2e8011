/* SPDX-License-Identifier: MIT */
/*
 * The corpus of whole /proc/PID/cgroup files in tests/fixtures/cgroup/ (one
 * per runtime, cgroup driver and cgroup version; see its README.md) against
 * tests/fixtures/cgroup/expected.tsv: proc_scan_parse_cgroup() must choose
 * the expected path and find the expected container id and runtime. Every
 * fixture needs a row and every row a fixture, and each fixture must also be
 * a seed of the proc_files fuzz target (tests/fuzz/make_seeds.py copies them).
 */
#include "base/compat.h"

#include <dirent.h>

#include "cmocka_wrap.h"

#include "base/alloc.h"
#include "discovery/proc_scan_parse.h"
#include "fixture.h"

#define CORPUS_MAX_ROWS 256
#define CORPUS_NAME_MAX 128
/* The fuzz target's first byte: 2 selects proc_scan_parse_cgroup(). */
#define CORPUS_SEED_SELECTOR '\x02'

/* One row of expected.tsv; the strings point into the loaded file. */
struct corpus_row {
    const char *name, *path, *id, *runtime;
    bool seen; /* a fixture file exists for it */
};

struct corpus {
    char *tsv;
    struct corpus_row rows[CORPUS_MAX_ROWS];
    size_t n;
};

/* "-" stands for "none": no path (NULL), no id, no runtime (""). */
static const char *corpus_field(const char *s)
{
    return strcmp(s, "-") == 0 ? NULL : s;
}

/* Splits @line at tabs into @n fields; false unless there are exactly @n. */
static bool corpus_split(char *line, char **fields, size_t n)
{
    size_t k = 0;
    fields[k++] = line;
    for (char *p = line; *p; p++) {
        if (*p != '\t')
            continue;
        if (k == n)
            return false;
        *p = '\0';
        fields[k++] = p + 1;
    }
    return k == n;
}

static void corpus_load(struct corpus *c)
{
    size_t len = 0;
    memset(c, 0, sizeof(*c));
    c->tsv = (char *)fixture_load("cgroup/expected.tsv", &len);
    if (!c->tsv)
        fail_msg("cannot read tests/fixtures/cgroup/expected.tsv (PYPROFD_SOURCE_DIR?)");
    char *line = c->tsv;
    unsigned lineno = 0;
    while (line && *line) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        lineno++;
        if (*line && *line != '#') {
            char *f[4];
            if (!corpus_split(line, f, 4))
                fail_msg("expected.tsv:%u: want 4 tab-separated fields", lineno);
            if (c->n == CORPUS_MAX_ROWS)
                fail_msg("expected.tsv: more than %d rows", CORPUS_MAX_ROWS);
            if (strlen(f[0]) == 0 || strlen(f[0]) >= CORPUS_NAME_MAX)
                fail_msg("expected.tsv:%u: bad name", lineno);
            for (size_t i = 0; i < c->n; i++) {
                if (strcmp(c->rows[i].name, f[0]) == 0)
                    fail_msg("expected.tsv:%u: '%s' twice", lineno, f[0]);
            }
            c->rows[c->n++] = (struct corpus_row){
                .name = f[0],
                .path = corpus_field(f[1]),
                .id = corpus_field(f[2]) ? f[2] : "",
                .runtime = corpus_field(f[3]) ? f[3] : "",
            };
        }
        line = nl ? nl + 1 : NULL;
    }
    assert_true(c->n > 0);
}

static struct corpus_row *corpus_find(struct corpus *c, const char *name, size_t len)
{
    for (size_t i = 0; i < c->n; i++) {
        if (strlen(c->rows[i].name) == len && memcmp(c->rows[i].name, name, len) == 0)
            return &c->rows[i];
    }
    return NULL;
}

/* Prints every way @r's fixture differs from its row; returns whether it does. */
static bool corpus_check_one(const struct corpus_row *r)
{
    char rel[CORPUS_NAME_MAX + 32];
    size_t len = 0;
    snprintf(rel, sizeof(rel), "cgroup/%s.txt", r->name);
    char *text = (char *)fixture_load(rel, &len);
    if (!text) {
        print_error("%s: no fixture file for this row of expected.tsv\n", r->name);
        return true;
    }
    struct proc_cgroup cg;
    bool bad = false;
    if (proc_scan_parse_cgroup(text, len, &cg) != 0) {
        print_error("%s: proc_scan_parse_cgroup failed\n", r->name);
        bad = true;
    } else {
        bool path_ok = r->path ? cg.path && cg.path_len == strlen(r->path) &&
                                     memcmp(cg.path, r->path, cg.path_len) == 0
                               : cg.path == NULL;
        if (!path_ok) {
            print_error("%s: path '%.*s', expected '%s'\n", r->name, cg.path ? (int)cg.path_len : 1,
                        cg.path ? cg.path : "-", r->path ? r->path : "-");
            bad = true;
        }
        if (strcmp(cg.container_id, r->id) != 0) {
            print_error("%s: container id '%s', expected '%s'\n", r->name, cg.container_id, r->id);
            bad = true;
        }
        if (strcmp(cg.runtime, r->runtime) != 0) {
            print_error("%s: runtime '%s', expected '%s'\n", r->name, cg.runtime, r->runtime);
            bad = true;
        }
    }

    /* the same bytes, behind the selector byte, replay in the fuzz corpus */
    char seed_rel[CORPUS_NAME_MAX + 64];
    size_t seed_len = 0;
    snprintf(seed_rel, sizeof(seed_rel), "../fuzz/seeds/proc_files/cgroup_corpus_%s.txt", r->name);
    char *seed = (char *)fixture_load(seed_rel, &seed_len);
    if (!seed || seed_len != len + 1 || seed[0] != CORPUS_SEED_SELECTOR ||
        memcmp(seed + 1, text, len) != 0) {
        print_error("%s: tests/fuzz/seeds/proc_files/cgroup_corpus_%s.txt is missing or stale "
                    "(run tests/fuzz/make_seeds.py)\n",
                    r->name, r->name);
        bad = true;
    }
    alloc_free(seed);
    alloc_free(text);
    return bad;
}

static void test_cgroup_corpus__every_fixture_parses_as_expected(void **state)
{
    (void)state;
    struct corpus c;
    corpus_load(&c);
    size_t failed = 0;
    for (size_t i = 0; i < c.n; i++)
        failed += corpus_check_one(&c.rows[i]);
    alloc_free(c.tsv);
    if (failed)
        fail_msg("%zu of %zu cgroup fixtures do not match expected.tsv", failed, c.n);
}

static void test_cgroup_corpus__every_fixture_has_an_expectation(void **state)
{
    (void)state;
    struct corpus c;
    corpus_load(&c);
    char dir[4096];
    DIR *d = opendir(fixture_path("cgroup", dir, sizeof(dir)));
    if (!d)
        fail_msg("cannot open '%s'", dir);
    size_t orphans = 0, files = 0;
    const struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n < 4 || strcmp(e->d_name + n - 4, ".txt") != 0)
            continue;
        files++;
        struct corpus_row *r = corpus_find(&c, e->d_name, n - 4);
        if (!r) {
            print_error("%s: fixture without a row in expected.tsv\n", e->d_name);
            orphans++;
        } else {
            r->seen = true;
        }
    }
    closedir(d);
    size_t missing = 0;
    for (size_t i = 0; i < c.n; i++) {
        if (!c.rows[i].seen) {
            print_error("%s: row of expected.tsv without a fixture\n", c.rows[i].name);
            missing++;
        }
    }
    alloc_free(c.tsv);
    if (orphans || missing)
        fail_msg("%zu fixtures without a row, %zu rows without a fixture", orphans, missing);
    assert_true(files > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cgroup_corpus__every_fixture_parses_as_expected),
        cmocka_unit_test(test_cgroup_corpus__every_fixture_has_an_expectation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
