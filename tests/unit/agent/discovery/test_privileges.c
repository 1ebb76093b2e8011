/* SPDX-License-Identifier: MIT */
/*
 * Tests for discovery/privileges.c: CapEff parsing, which missing
 * capabilities the agent's start-up check reports, and what a refused read
 * is said to be refused by (facts injected, and read from a fake proc root).
 */
#include "base/compat.h"

#include "cmocka_wrap.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

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
             "CAP_PERFMON CAP_NET_ADMIN ");
    /* the DaemonSet's set: only the optional DAC_READ_SEARCH, PERFMON and NET_ADMIN are left */
    check(BIT(19) | BIT(40), "CAP_DAC_READ_SEARCH CAP_PERFMON CAP_NET_ADMIN ");
    /* with components/native */
    check(BIT(19) | BIT(40) | BIT(38), "CAP_DAC_READ_SEARCH CAP_NET_ADMIN ");
    /* SYS_PTRACE alone (the sidecar): map_files is what is lost */
    check(BIT(19), "CAP_CHECKPOINT_RESTORE CAP_SYS_ADMIN CAP_DAC_READ_SEARCH CAP_PERFMON "
                   "CAP_NET_ADMIN ");
    /* an old kernel's way to map_files stands in for CHECKPOINT_RESTORE, and
     * SYS_ADMIN for PERFMON; nothing for NET_ADMIN (the proc connector) */
    check(BIT(19) | BIT(21) | BIT(2), "CAP_NET_ADMIN ");
    check(BIT(19) | BIT(21) | BIT(2) | BIT(12), "");
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

/* The facts of a process with CAP_SYS_PTRACE in the host's user namespace, unconfined. */
static struct privileges_facts facts_root(void)
{
    return (struct privileges_facts){.caps_known = true,
                                     .eff = BIT(19) | BIT(40),
                                     .yama_scope = 1,
                                     .init_userns = 1,
                                     .seccomp = 0};
}

static void want_refusal(const struct privileges_facts *f, int err, const char *has,
                         const char *lacks)
{
    char buf[320];
    const char *got = privileges_refusal(f, err, buf, sizeof(buf));
    assert_ptr_equal(got, buf);
    if (!strstr(got, has))
        fail_msg("'%s' lacks '%s'", got, has);
    if (lacks && strstr(got, lacks))
        fail_msg("'%s' has '%s'", got, lacks);
}

/*
 * Who refused a read: a missing CAP_SYS_PTRACE is blamed only when it is
 * missing (issue 37: root with it was told it needed root); with it, Yama's
 * scope 3, a user namespace of its own, a security label or a seccomp
 * filter is named, in that order, else the kernel; the errno is the read's.
 */
static void test_privileges__refusal_names_what_refused(void **state)
{
    (void)state;
    struct privileges_facts f = {.yama_scope = -1, .init_userns = -1, .seccomp = -1};
    want_refusal(&f, -EACCES, "permission denied (needs root or CAP_SYS_PTRACE)", NULL);
    f = facts_root();
    f.eff = BIT(40); /* root without CAP_SYS_PTRACE (a dropped bounding set) */
    want_refusal(&f, -EPERM,
                 "operation not permitted (needs root or CAP_SYS_PTRACE; this process does not "
                 "have it; kernel.yama.ptrace_scope is 1)",
                 NULL);
    f = facts_root();
    f.yama_scope = 3;
    want_refusal(&f, -EPERM,
                 "although this process has CAP_SYS_PTRACE: kernel.yama.ptrace_scope is 3",
                 "needs root");
    f = facts_root();
    f.init_userns = 0;
    want_refusal(&f, -EACCES,
                 "permission denied although this process has CAP_SYS_PTRACE: it "
                 "holds it in a user namespace of its own",
                 "needs root");
    f = facts_root();
    snprintf(f.lsm_label, sizeof(f.lsm_label), "docker-default (enforce)");
    want_refusal(&f, -EACCES, "its security label 'docker-default (enforce)' (AppArmor)",
                 "needs root");
    snprintf(f.lsm_label, sizeof(f.lsm_label), "system_u:system_r:container_t:s0:c1,c2");
    want_refusal(&f, -EACCES, "'system_u:system_r:container_t:s0:c1,c2' (SELinux)", "needs root");
    f = facts_root();
    f.seccomp = 2;
    want_refusal(&f, -EPERM, "a seccomp filter (Seccomp: 2) may refuse process_vm_readv",
                 "needs root");
    f = facts_root();
    want_refusal(&f, -EPERM,
                 "operation not permitted although this process has CAP_SYS_PTRACE (no Yama",
                 "needs root");
    /* cut to the buffer, terminated */
    char small[12];
    privileges_refusal(&f, -EPERM, small, sizeof(small));
    assert_string_equal(small, "operation n");
}

static void put(const char *dir, const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void rm(const char *dir, const char *name)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    (void)remove(path);
}

/* The facts are read from a proc root: status, Yama, uid_map, the security label. */
static void test_privileges__facts_from_a_proc_root(void **state)
{
    (void)state;
    char root[] = "/tmp/pyprofd-privileges-XXXXXX";
    assert_non_null(mkdtemp(root));
    static const char *const dirs[] = {"self", "self/attr", "sys", "sys/kernel", "sys/kernel/yama"};
    char path[512];
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(dirs); i++) {
        snprintf(path, sizeof(path), "%s/%s", root, dirs[i]);
        assert_int_equal(mkdir(path, 0700), 0);
    }
    struct privileges_facts f;
    privileges_facts_read(root, &f); /* nothing there: nothing known */
    assert_false(f.caps_known);
    assert_int_equal(f.yama_scope, -1);
    assert_int_equal(f.init_userns, -1);
    assert_int_equal(f.seccomp, -1);
    assert_string_equal(f.lsm_label, "");

    put(root, "self/status", "Name:\tpyprofd\nCapEff:\t0000000000080000\nSeccomp:\t2\n");
    put(root, "sys/kernel/yama/ptrace_scope", "3\n");
    put(root, "self/uid_map", "         0          0 4294967295\n");
    put(root, "self/attr/current", "docker-default (enforce)\n");
    privileges_facts_read(root, &f);
    assert_true(f.caps_known && f.eff == BIT(19));
    assert_int_equal(f.seccomp, 2);
    assert_int_equal(f.yama_scope, 3);
    assert_int_equal(f.init_userns, 1);
    assert_string_equal(f.lsm_label, "docker-default (enforce)");

    put(root, "self/uid_map", "         0     100000      65536\n");
    put(root, "self/attr/current", "unconfined\n");
    privileges_facts_read(root, &f);
    assert_int_equal(f.init_userns, 0);
    assert_string_equal(f.lsm_label, "");
    put(root, "self/uid_map", "0 0 4294967295\n1 1 1\n"); /* not the initial one's */
    put(root, "self/attr/current", "unconfined_u:unconfined_r:unconfined_t:s0-s0:c0.c1023");
    privileges_facts_read(root, &f);
    assert_int_equal(f.init_userns, 0);
    assert_string_equal(f.lsm_label, "");

    static const char *const files[] = {"self/status", "sys/kernel/yama/ptrace_scope",
                                        "self/uid_map", "self/attr/current"};
    for (size_t i = 0; i < PYPROFD_ARRAY_SIZE(files); i++)
        rm(root, files[i]);
    for (size_t i = PYPROFD_ARRAY_SIZE(dirs); i-- > 0;)
        rm(root, dirs[i]);
    assert_int_equal(rmdir(root), 0);
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
        cmocka_unit_test(test_privileges__refusal_names_what_refused),
        cmocka_unit_test(test_privileges__facts_from_a_proc_root),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
