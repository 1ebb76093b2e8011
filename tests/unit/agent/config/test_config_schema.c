/* SPDX-License-Identifier: MIT */
/*
 * Tests for the schema table itself (agent/config/config.def), read
 * against the tree:
 *   - every key and section is documented in docs/configuration.md, in the
 *     table of its top-level section (a row whose first cell names it);
 *   - every key is read: the file named in its reader column uses the
 *     field (".field" or "->field"), and a key without a reader is a global
 *     default that a job key of the same name inherits.
 * Adding a key is one row in config.def plus its line in the docs (see
 * docs/development.md, "Adding a config key"); these tests fail when
 * either half is missing, or when a key is parsed and read by nothing.
 */
#include "base/compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_schema__every_key_is_documented),
        cmocka_unit_test(test_config_schema__every_key_is_read),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
