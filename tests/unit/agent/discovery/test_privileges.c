/* SPDX-License-Identifier: MIT */
/*
 * Tests for discovery/privileges.c: CapEff parsing and which missing
 * capabilities the agent's start-up check reports.
 */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include <stdio.h>
#include <stdlib.h>

#include "discovery/privileges.h"

#define BIT(n) (UINT64_C(1) << (n))

static void test_privileges__parses_capeff(void **state)
{
    (void)state;
    static const char status[] = "Name:\tpyprofd\nCapInh:\t0000000000000000\n"
                                 "CapPrm:\t000001ffffffffff\nCapEff:\t0000010000080000\n"
                                 "CapBnd:\t000001ffffffffff\n";
    uint64_t eff = 0;
    assert_int_equal(privileges_parse_status(status, sizeof(status) - 1, &eff), 0);
    assert_true(eff == (BIT(19) | BIT(40)));
    /* the last line without its newline, upper-case hex */
    static const char last[] = "Uid:\t0\nCapEff:\t00000000000800FF";
    assert_int_equal(privileges_parse_status(last, sizeof(last) - 1, &eff), 0);
    assert_true(eff == (BIT(19) | 0xff));
    static const char *const bad[] = {"CapPrm:\t00\n", "CapEff:\n", "CapEff:\t0x80000\n",
                                      "CapEff:\t00000000000800001\n", ""};
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(bad); i++)
        assert_int_equal(privileges_parse_status(bad[i], strlen(bad[i]), &eff), -EINVAL);
}

static void collect(const struct privilege *p, void *arg)
{
    char *out = arg;
    size_t n = strlen(out);
    snprintf(out + n, 256 - n, "%s ", p->name);
}

static void check(uint64_t eff, const char *want)
{
    char got[256] = "";
    privileges_check(eff, collect, got);
    assert_string_equal(got, want);
}

static void test_privileges__reports_what_is_missing(void **state)
{
    (void)state;
    check(0, "CAP_SYS_PTRACE CAP_CHECKPOINT_RESTORE CAP_SYS_ADMIN CAP_DAC_READ_SEARCH "
             "CAP_PERFMON ");
    /* the DaemonSet's set: only the optional DAC_READ_SEARCH and PERFMON are left */
    check(BIT(19) | BIT(40), "CAP_DAC_READ_SEARCH CAP_PERFMON ");
    /* with components/native */
    check(BIT(19) | BIT(40) | BIT(38), "CAP_DAC_READ_SEARCH ");
    /* SYS_PTRACE alone (the sidecar): map_files is what is lost */
    check(BIT(19), "CAP_CHECKPOINT_RESTORE CAP_SYS_ADMIN CAP_DAC_READ_SEARCH CAP_PERFMON ");
    /* an old kernel's way to map_files stands in for CHECKPOINT_RESTORE, and
     * SYS_ADMIN for PERFMON */
    check(BIT(19) | BIT(21) | BIT(2), "");
    check(~UINT64_C(0), "");
}

static void test_privileges__table_is_complete(void **state)
{
    (void)state;
    assert_true(privileges_count >= 2);
    assert_string_equal(privileges[0].name, "CAP_SYS_PTRACE");
    assert_int_equal(privileges[0].need, PRIVILEGE_REQUIRED);
    for (size_t i = 0; i < privileges_count; i++) {
        assert_true(privileges[i].bit < 64);
        assert_true(strncmp(privileges[i].name, "CAP_", 4) == 0);
        assert_true(privileges[i].enables[0] && privileges[i].without[0]);
        assert_string_not_equal(privilege_need_name(privileges[i].need), "?");
    }
}

/* The README and docs/kubernetes.md name every capability of the table. */
static void test_privileges__documented(void **state)
{
    (void)state;
    static const char *const docs[] = {"README.md", "docs/kubernetes.md"};
    const char *src = getenv("PYPROFD_SOURCE_DIR"); /* NOLINT(concurrency-mt-unsafe) */
    assert_non_null(src);
    for (size_t d = 0; d < PYPROFD_ARRAY_SIZE(docs); d++) {
        char path[1024], text[65536];
        snprintf(path, sizeof(path), "%s/%s", src, docs[d]);
        FILE *f = fopen(path, "r");
        assert_non_null(f);
        size_t n = fread(text, 1, sizeof(text) - 1, f);
        fclose(f);
        text[n] = '\0';
        for (size_t i = 0; i < privileges_count; i++) {
            char cell[64];
            snprintf(cell, sizeof(cell), "| `%s` | %s", privileges[i].name,
                     privilege_need_name(privileges[i].need));
            if (!strstr(text, cell))
                fail_msg("%s has no row \"%s ...\"", docs[d], cell);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_privileges__parses_capeff),
        cmocka_unit_test(test_privileges__reports_what_is_missing),
        cmocka_unit_test(test_privileges__table_is_complete),
        cmocka_unit_test(test_privileges__documented),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
