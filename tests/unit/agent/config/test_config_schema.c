/* SPDX-License-Identifier: MIT */
/*
 * Tests for the schema table itself (agent/config/config.def), read
 * against the tree:
 *   - every key and section is documented in docs/configuration.md, in the
 *     table of its top-level section (a row whose first cell names it);
 *   - every key is read: the file named in its reader column uses the
 *     field (".field" or "->field"), and a key without a reader is a global
 *     default that a job key of the same name inherits;
 *   - every key path a page of documentation names exists in the schema.
 * Adding a key is one row in config.def plus its line in the docs (see
 * docs/development.md, "Adding a config key"); these tests fail when
 * either half is missing, or when a key is parsed and read by nothing.
 *
 * What counts as a key path in the documentation. The pages are every
 * Markdown file (*.md) of the source tree, except under directories whose
 * name starts with "." and build trees (a directory holding a
 * CMakeCache.txt). In them, an inline code span (`...` on one line, outside
 * ``` fenced blocks, which hold YAML and console output) names a key path
 * when all of these hold:
 *   1. it is a dotted path and nothing else: two or more components joined
 *      by ".", each an identifier ([A-Za-z_][A-Za-z0-9_]*) optionally
 *      followed by "[]" or "[N]" (a list item): `server.listen_address`,
 *      `limits.max_targets`, `remote_write[0].url`,
 *      `discovery.kubernetes.tls_config.ca_file`;
 *   2. its first component is the name of a section of the schema (a
 *      CONFIG_SUB row: `global`, `limits`, `queue`, `tls_config`, ...); a
 *      path may start at any section, as the docs write `limits.X` for
 *      `global.limits.X` and `queue.X` for `remote_write[].queue.X`. So
 *      `http.server`, `status.phase` or `threads.main` are not key paths;
 *   3. its last component is not a file extension (`discovery.md`,
 *      `remote_write.yml` are file names);
 *   4. it is not one of doc_not_keys[] below: dotted names that begin like
 *      a section but are fields of a JSON document (/targets), each listed
 *      with where it comes from.
 * Such a path must resolve: starting at some section of that name, each
 * following component is a key or subsection of the section reached so far;
 * "[]"/"[N]" only follows a list (a CONFIG_LIST section or a relabel rule
 * list); after a label map or header map (`global.external_labels.team`)
 * one more component, a user's name, is free; after a relabel rule list
 * one of the rule's fields follows; nothing follows any other key. A bare
 * key name (`listen_address`) is not checked: without its section it is
 * ambiguous, and the tables of docs/configuration.md are checked above.
 */
#include "base/compat.h"

#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "base/alloc.h"
#include "config/config_schema.h"

struct row {
    const char *id;  /* the row's ID, for messages */
    bool is_section; /* a CONFIG_SUB row */
    enum config_section section, sub;
    const char *name;
    const char *field; /* the struct member path, as written in config.def */
    unsigned flags;
    const char *reader; /* NULL: inherited by jobs */
};

static const struct row rows[] = {
#define CONFIG_SUB(id, parent, name, flags, doc)                                                   \
    {#id, true, CONFIG_S_##parent, CONFIG_S_##id, name, NULL, flags, NULL},
#define CONFIG_KEY(id, section, name, type, field, lo, hi, def, arg, flags, reader, doc)           \
    {#id, false, CONFIG_S_##section, CONFIG_S_ROOT, name, #field, flags, reader},
#include "config/config.def"
#undef CONFIG_SUB
#undef CONFIG_KEY
};

#define NROWS (sizeof(rows) / sizeof(rows[0]))

static enum config_section parent_of(enum config_section s)
{
    for (size_t i = 0; i < NROWS; i++)
        if (rows[i].is_section && rows[i].sub == s)
            return rows[i].section;
    return CONFIG_S_ROOT;
}

static enum config_section top_of(enum config_section s)
{
    while (s != CONFIG_S_ROOT && parent_of(s) != CONFIG_S_ROOT)
        s = parent_of(s);
    return s;
}

static char *slurp(const char *rel)
{
    const char *src = getenv("PYPROFD_SOURCE_DIR");
    char path[4096];
    assert_non_null(src);
    snprintf(path, sizeof(path), "%s/%s", src, rel);
    FILE *f = fopen(path, "r");
    if (!f)
        fail_msg("cannot open %s", path);
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    assert_true(n < sizeof(buf) - 1);
    buf[n] = '\0';
    char *copy = alloc_strdup(buf);
    assert_non_null(copy);
    return copy;
}

/* The text of "## `name`" up to the next "## " heading, or NULL. */
static const char *doc_section(const char *doc, const char *name, size_t *len)
{
    char head[128];
    snprintf(head, sizeof(head), "\n## `%s`\n", name);
    const char *s = strstr(doc, head);
    if (!s)
        return NULL;
    s += strlen(head);
    const char *e = strstr(s, "\n## ");
    *len = e ? (size_t)(e - s) : strlen(s);
    return s;
}

/*
 * Whether some table row of [sec, sec+len) has a first cell naming @a name
 * ("`name`" or "`a.name`"), and, when @a prefix is not NULL, "`prefix." or
 * ".prefix." too (a key of a subsection: "`basic_auth.password` /
 * `password_file`", "`kubernetes.tls_config.ca_file`").
 */
static bool doc_has_row(const char *sec, size_t len, const char *name, const char *prefix)
{
    char plain[128], dotted[128], pre[128], inner[128];
    snprintf(plain, sizeof(plain), "`%s`", name);
    snprintf(dotted, sizeof(dotted), ".%s`", name);
    snprintf(pre, sizeof(pre), "`%s.", prefix ? prefix : "");
    /* a deeper path spelled out: "`kubernetes.tls_config.ca_file`" */
    snprintf(inner, sizeof(inner), ".%s.", prefix ? prefix : "");
    const char *end = sec + len;
    for (const char *l = sec; l < end;) {
        const char *nl = memchr(l, '\n', (size_t)(end - l));
        size_t ll = nl ? (size_t)(nl - l) : (size_t)(end - l);
        if (ll > 2 && l[0] == '|' && l[1] == ' ') {
            const char *cell_end = strstr(l + 2, " |");
            if (cell_end && cell_end < l + ll) {
                char cell[512];
                size_t cl = (size_t)(cell_end - l);
                if (cl >= sizeof(cell))
                    cl = sizeof(cell) - 1;
                memcpy(cell, l, cl);
                cell[cl] = '\0';
                bool named = strstr(cell, plain) || strstr(cell, dotted);
                if (named && (!prefix || strstr(cell, pre) || strstr(cell, inner)))
                    return true;
            }
        }
        l += ll + 1;
    }
    return false;
}

static void test_config_schema__every_key_is_documented(void **state)
{
    (void)state;
    char *doc = slurp("docs/configuration.md");
    int missing = 0;
    for (size_t i = 0; i < NROWS; i++) {
        const struct row *r = &rows[i];
        enum config_section where = r->is_section ? r->sub : r->section;
        enum config_section top = top_of(where);
        size_t len = 0;
        const char *sec = doc_section(doc, config_schema_section_name(top), &len);
        if (!sec) {
            print_error("%s: docs/configuration.md has no section \"## `%s`\"\n", r->id,
                        config_schema_section_name(top));
            missing++;
            continue;
        }
        if (r->is_section && r->section == CONFIG_S_ROOT)
            continue; /* the heading is its documentation */
        bool ok;
        if (r->is_section) /* a subsection: some row names one of its keys */
            ok = doc_has_row(sec, len, "", r->name) || strstr(sec, r->name);
        else
            ok = doc_has_row(sec, len, r->name,
                             r->section == top ? NULL : config_schema_section_name(r->section));
        if (!ok) {
            print_error("%s: no row for `%s` in the `%s` table of docs/configuration.md\n", r->id,
                        r->name, config_schema_section_name(top));
            missing++;
        }
    }
    alloc_free(doc);
    assert_int_equal(missing, 0);
}

static void test_config_schema__every_key_is_read(void **state)
{
    (void)state;
    int unread = 0;
    for (size_t i = 0; i < NROWS; i++) {
        const struct row *r = &rows[i];
        if (r->is_section)
            continue;
        if (!r->reader) {
            /* a global default: some job key of the same name inherits it */
            bool inherited = r->section == CONFIG_S_GLOBAL;
            bool found = false;
            for (size_t j = 0; j < NROWS && inherited; j++)
                found |= !rows[j].is_section && rows[j].section == CONFIG_S_JOB &&
                         (rows[j].flags & CONFIG_INHERIT) && strcmp(rows[j].name, r->name) == 0;
            if (!found) {
                print_error("%s: no reader, and no job key inherits it\n", r->id);
                unread++;
            }
            continue;
        }
        const char *last = strrchr(r->field, '.');
        last = last ? last + 1 : r->field;
        char dot[128], arrow[128];
        snprintf(dot, sizeof(dot), ".%s", last);
        snprintf(arrow, sizeof(arrow), "->%s", last);
        char *src = slurp(r->reader);
        bool used = false;
        /* a use, not a longer name that starts the same */
        for (const char *pats[2] = {dot, arrow}, **p = pats; p < pats + 2 && !used; p++) {
            for (const char *s = strstr(src, *p); s && !used; s = strstr(s + 1, *p)) {
                char next = s[strlen(*p)];
                used = !(next == '_' || (next >= 'a' && next <= 'z') ||
                         (next >= 'A' && next <= 'Z') || (next >= '0' && next <= '9'));
            }
        }
        alloc_free(src);
        if (!used) {
            print_error("%s: %s does not read %s\n", r->id, r->reader, r->field);
            unread++;
        }
    }
    assert_int_equal(unread, 0);
}

/* ---- key paths named in the documentation (rules at the top of the file) ---- */

/* Rule 4: dotted names that start like a section but are no config key. */
static const struct {
    const char *path, *why;
} doc_not_keys[] = {
    {"kubernetes.problem", "/targets' JSON: the `kubernetes` object's problem field"},
};

/* Rule 3: a last component that makes the span a file name. */
static const char *const doc_file_exts[] = {"c",   "h",    "def",  "md",   "py",    "sh",
                                            "go",  "yml",  "yaml", "json", "proto", "txt",
                                            "tsv", "html", "js",   "css",  "so",    "toml"};

/* The fields of one relabel rule (config_walk.c), what may follow `relabel_configs[]`. */
static const char *const doc_relabel_fields[] = {"source_labels", "separator",   "regex", "modulus",
                                                 "target_label",  "replacement", "action"};

#define DOC_MAX_COMPONENTS 16

struct doc_component {
    char name[128];
    bool subscript; /* followed by [] or [N] */
};

static bool doc_ident_char(char c, bool first)
{
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (!first && c >= '0' && c <= '9');
}

/*
 * Splits the code span @a s (@a n bytes) into components (rule 1); returns
 * how many, or 0 when it is not a dotted path of identifiers.
 */
static size_t doc_split(const char *s, size_t n, struct doc_component *out)
{
    size_t k = 0, i = 0;
    while (i < n) {
        if (k == DOC_MAX_COMPONENTS || !doc_ident_char(s[i], true))
            return 0;
        size_t start = i;
        while (i < n && doc_ident_char(s[i], false))
            i++;
        if (i - start >= sizeof(out[k].name))
            return 0;
        memcpy(out[k].name, s + start, i - start);
        out[k].name[i - start] = '\0';
        out[k].subscript = false;
        if (i < n && s[i] == '[') {
            i++;
            while (i < n && s[i] >= '0' && s[i] <= '9')
                i++;
            if (i == n || s[i] != ']')
                return 0;
            i++;
            out[k].subscript = true;
        }
        k++;
        if (i == n)
            break;
        if (s[i] != '.' || i + 1 == n)
            return 0;
        i++;
    }
    return k >= 2 ? k : 0;
}

static bool doc_in(const char *name, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(name, list[i]) == 0)
            return true;
    return false;
}

/* Whether c[1..n) resolves inside section @a s (c[0] named it; its subscript checked by caller). */
static bool doc_resolves(enum config_section s, const struct doc_component *c, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        const struct config_key *k = config_schema_find(s, c[i].name);
        if (!k)
            return false;
        if (k->type == CONFIG_T_SECTION) {
            if (c[i].subscript && !(k->flags & CONFIG_LIST))
                return false;
            s = k->sub;
            continue;
        }
        bool relabel = k->type == CONFIG_T_RELABEL;
        if (c[i].subscript && !relabel)
            return false;
        size_t rest = n - i - 1;
        if (rest == 0)
            return true;
        if (k->type == CONFIG_T_LABELS || k->type == CONFIG_T_HEADERS)
            return rest == 1 && !c[i + 1].subscript;
        if (relabel)
            return rest == 1 && !c[i + 1].subscript &&
                   doc_in(c[i + 1].name, doc_relabel_fields,
                          PYPROFD_ARRAY_SIZE(doc_relabel_fields));
        return false; /* a scalar has no keys */
    }
    return true;
}

/*
 * Whether the code span @a s (@a n bytes) names a key path (rules 1-4): 0
 * not one, 1 one that resolves, -1 one that does not.
 */
static int doc_check_span(const char *s, size_t n)
{
    struct doc_component c[DOC_MAX_COMPONENTS];
    size_t k = doc_split(s, n, c);
    if (k == 0)
        return 0;
    if (doc_in(c[k - 1].name, doc_file_exts, PYPROFD_ARRAY_SIZE(doc_file_exts)))
        return 0;
    char whole[512];
    snprintf(whole, sizeof(whole), "%.*s", (int)n, s);
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(doc_not_keys); i++)
        if (strcmp(whole, doc_not_keys[i].path) == 0)
            return 0;
    bool section = false;
    for (size_t i = 0; i < CONFIG_NKEYS; i++) {
        const struct config_key *r = &config_keys[i];
        if (r->type != CONFIG_T_SECTION || strcmp(r->name, c[0].name) != 0)
            continue;
        section = true;
        if (c[0].subscript && !(r->flags & CONFIG_LIST))
            continue;
        if (doc_resolves(r->sub, c, k))
            return 1;
    }
    return section ? -1 : 0;
}

/*
 * Checks every key path named in the Markdown @a text (from @a file, for
 * the messages, printed when @a report); returns how many do not resolve,
 * and adds how many were checked to *@a checked.
 */
static int doc_check_text(const char *text, const char *file, bool report, int *checked)
{
    int bad = 0, line = 0;
    bool fenced = false;
    for (const char *l = text; *l;) {
        const char *nl = strchr(l, '\n');
        size_t ll = nl ? (size_t)(nl - l) : strlen(l);
        line++;
        const char *t = l;
        while (t < l + ll && (*t == ' ' || *t == '>'))
            t++; /* indented or quoted fences count too */
        if ((size_t)(l + ll - t) >= 3 && strncmp(t, "```", 3) == 0) {
            fenced = !fenced;
        } else if (!fenced) {
            for (const char *p = memchr(l, '`', ll); p;) {
                const char *q = memchr(p + 1, '`', (size_t)(l + ll - p - 1));
                if (!q)
                    break;
                int r = doc_check_span(p + 1, (size_t)(q - p - 1));
                if (r != 0)
                    (*checked)++;
                if (r < 0 && report)
                    print_error("%s:%d: `%.*s` is no key of the configuration schema "
                                "(agent/config/config.def)\n",
                                file, line, (int)(q - p - 1), p + 1);
                bad += r < 0;
                p = q + 1 < l + ll ? memchr(q + 1, '`', (size_t)(l + ll - q - 1)) : NULL;
            }
        }
        if (!nl)
            break;
        l = nl + 1;
    }
    return bad;
}

/* The rule itself, on made-up text: what is checked, what is left alone. */
static void test_config_schema__doc_key_path_rule(void **state)
{
    (void)state;
    static const struct {
        const char *span;
        int want; /* doc_check_span() */
    } cases[] = {
        {"server.listen_address", 1},
        {"server.max_concurrent_profiles", 1},
        {"global.limits.max_targets", 1},
        {"limits.max_targets", 1},
        {"discovery.kubernetes.tls_config.ca_file", 1},
        {"kubernetes.watch_timeout", 1},
        {"remote_write[0].url", 1},
        {"remote_write[].queue.max_bytes", 1},
        {"queue.max_backoff", 1},
        {"tls_config.server_name", 1},
        {"basic_auth.password_file", 1},
        {"profile_configs[].relabel_configs", 1},
        {"profile_configs[0].relabel_configs[0].action", 1},
        {"global.external_labels.team", 1},
        {"discovery.kubernetes", 1},
        /* sections and keys that do not exist, or in the wrong place */
        {"server.max_concurrent_profilez", -1},
        {"global.max_targets", -1},
        {"limits.max_target", -1},
        {"server[0].listen_address", -1},
        {"server.listen_address.port", -1},
        {"queue.max_bytes[]", -1},
        {"profile_configs[].relabel_configs[].regexp", -1},
        {"global.external_labels.team.x", -1},
        {"kubernetes.tls_config.cert_file", -1},
        /* not key paths: no section first, a file, a JSON field, not a path */
        {"http.server", 0},
        {"status.phase", 0},
        {"threads.main", 0},
        {"discovery.md", 0},
        {"remote_write.yml", 0},
        {"kubernetes.problem", 0},
        {"server", 0},
        {"listen_address", 0},
        {"server.listen_address: ''", 0},
        {"server. listen_address", 0},
        {"pyprofd check-config", 0},
        {"server..x", 0},
        {"server.", 0},
    };
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(cases); i++) {
        int got = doc_check_span(cases[i].span, strlen(cases[i].span));
        if (got != cases[i].want)
            fail_msg("`%s`: got %d, want %d", cases[i].span, got, cases[i].want);
    }
    int checked = 0;
    /* spans in fenced blocks are not inline code; two spans on a line both count */
    const char *md = "Set `server.listen_addres` and `limits.max_targets`.\n"
                     "```yaml\n"
                     "x: `server.nope`\n"
                     "```\n"
                     "  ```console\n"
                     "`server.nope2`\n"
                     "  ```\n"
                     "`http.server` and `queue.max_bytes` and `queue.nope`\n";
    assert_int_equal(doc_check_text(md, "made-up.md", false, &checked), 2);
    assert_int_equal(checked, 4);
}

/* Whether directory @a path is a build tree (holds a CMakeCache.txt). */
static bool doc_is_build_tree(const char *path)
{
    char cache[4096];
    struct stat st;
    snprintf(cache, sizeof(cache), "%s/CMakeCache.txt", path);
    return stat(cache, &st) == 0;
}

/* Checks every *.md under @a dir (@a rel: its path from the top, "" at the top). */
static int doc_check_tree(const char *top, const char *rel, int *files, int *checked)
{
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s%s%s", top, rel[0] ? "/" : "", rel);
    if (doc_is_build_tree(dir))
        return 0;
    DIR *d = opendir(dir);
    if (!d)
        fail_msg("cannot open directory %s", dir);
    int bad = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char sub[4096], path[8192];
        snprintf(sub, sizeof(sub), "%s%s%s", rel, rel[0] ? "/" : "", e->d_name);
        snprintf(path, sizeof(path), "%s/%s", top, sub);
        struct stat st;
        if (lstat(path, &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            bad += doc_check_tree(top, sub, files, checked);
            continue;
        }
        size_t len = strlen(e->d_name);
        if (!S_ISREG(st.st_mode) || len < 4 || strcmp(e->d_name + len - 3, ".md") != 0)
            continue;
        char *text = slurp(sub);
        bad += doc_check_text(text, sub, true, checked);
        alloc_free(text);
        (*files)++;
    }
    closedir(d);
    return bad;
}

static void test_config_schema__every_key_path_in_the_docs_exists(void **state)
{
    (void)state;
    const char *top = getenv("PYPROFD_SOURCE_DIR");
    assert_non_null(top);
    int files = 0, checked = 0;
    int bad = doc_check_tree(top, "", &files, &checked);
    /* the scan did find the pages and the paths they name (the docs directory alone names 100+) */
    assert_true(files >= 15);
    assert_true(checked >= 60);
    assert_int_equal(bad, 0);
    /* each exception of rule 4 is needed: no key of the schema has its name */
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(doc_not_keys); i++) {
        struct doc_component c[DOC_MAX_COMPONENTS];
        const char *p = doc_not_keys[i].path;
        size_t k = doc_split(p, strlen(p), c);
        assert_true(k >= 2);
        for (size_t r = 0; r < CONFIG_NKEYS; r++) {
            if (config_keys[r].type == CONFIG_T_SECTION &&
                strcmp(config_keys[r].name, c[0].name) == 0 &&
                doc_resolves(config_keys[r].sub, c, k))
                fail_msg("`%s` is listed as no config key (%s) but is one", p, doc_not_keys[i].why);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_schema__every_key_is_documented),
        cmocka_unit_test(test_config_schema__every_key_is_read),
        cmocka_unit_test(test_config_schema__doc_key_path_rule),
        cmocka_unit_test(test_config_schema__every_key_path_in_the_docs_exists),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
