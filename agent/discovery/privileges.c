/* SPDX-License-Identifier: MIT */
/*
 * privileges.c: the capability table and the start-up check (see
 * privileges.h). Evidence for each row is in docs/kubernetes.md.
 */
#include "base/compat.h"

#include "base/readfile.h"
#include "base/strnum.h"
#include "discovery/privileges.h"

#include <stdio.h>

#define CAP_BIT_DAC_READ_SEARCH    2u
#define CAP_BIT_NET_ADMIN          12u
#define CAP_BIT_SYS_PTRACE         19u
#define CAP_BIT_SYS_ADMIN          21u
#define CAP_BIT_PERFMON            38u
#define CAP_BIT_CHECKPOINT_RESTORE 40u

const struct privilege privileges[] = {
    {"CAP_SYS_PTRACE",
     "read a target's memory (process_vm_readv) and its /proc/PID/maps, root, exe and cwd",
     "processes of other users, and under a container runtime's default seccomp profile every "
     "process, are listed unreadable (\"needs root or CAP_SYS_PTRACE\")",
     CAP_BIT_SYS_PTRACE, PRIVILEGE_REQUIRED},
    {"CAP_CHECKPOINT_RESTORE", "open mapped files through /proc/PID/map_files (Linux 5.9+)",
     "files are opened through /proc/PID/root instead; an interpreter deleted or replaced on disk "
     "since the target started (an upgrade in place) cannot be read",
     CAP_BIT_CHECKPOINT_RESTORE, PRIVILEGE_RECOMMENDED},
    {"CAP_SYS_ADMIN",
     "/proc/PID/map_files before Linux 5.9 (never needed otherwise; not granted by default)",
     "as without CAP_CHECKPOINT_RESTORE", CAP_BIT_SYS_ADMIN, PRIVILEGE_OPTIONAL},
    {"CAP_DAC_READ_SEARCH",
     "walk /proc/PID/map_files of a target running as another user, and read interpreter files "
     "root may not read (not granted by default)",
     "such files are opened through /proc/PID/root, which needs only CAP_SYS_PTRACE",
     CAP_BIT_DAC_READ_SEARCH, PRIVILEGE_OPTIONAL},
    {"CAP_PERFMON",
     "a job's native: full: perf_event_open on the targets' threads under a container runtime's "
     "default seccomp profile, or with kernel.perf_event_paranoid above 2 (granted by "
     "deploy/kubernetes/components/native only)",
     "native: full jobs sample with <native> markers instead, and /targets says why",
     CAP_BIT_PERFMON, PRIVILEGE_OPTIONAL},
    {"CAP_NET_ADMIN",
     "the kernel's process events (the proc connector): a new process is seen at its exec; it "
     "also needs the host's network, PID and user namespaces (root on the host; not a pod "
     "without hostNetwork, which the manifests do not ask for)",
     "new processes between scans are found from /proc/loadavg's last PID, read every 20 ms "
     "(discovery.watch: poll): as many are seen, at a little more CPU on a busy node",
     CAP_BIT_NET_ADMIN, PRIVILEGE_OPTIONAL},
};
const size_t privileges_count = PYPROFD_ARRAY_SIZE(privileges);

const char *privilege_need_name(enum privilege_need need)
{
    switch (need) {
    case PRIVILEGE_REQUIRED:
        return "required";
    case PRIVILEGE_RECOMMENDED:
        return "recommended";
    case PRIVILEGE_OPTIONAL:
        return "optional";
    }
    return "?";
}

int privileges_parse_status(const char *text, size_t len, uint64_t *eff)
{
    static const char key[] = "CapEff:";
    const size_t klen = sizeof(key) - 1;
    size_t i = 0;
    while (i < len) {
        size_t end = i;
        while (end < len && text[end] != '\n')
            end++;
        if (end - i > klen && memcmp(text + i, key, klen) == 0) {
            size_t j = i + klen;
            while (j < end && (text[j] == ' ' || text[j] == '\t'))
                j++;
            /* at most 16 hex digits, no prefix: anything else is not a CapEff line */
            return strnum_parse_hex_u64(text + j, end - j, eff) == 0 ? 0 : -EINVAL;
        }
        i = end + 1;
    }
    return -EINVAL;
}

/*
 * Reads up to @a cap - 1 bytes of @a proc_root/@a name into @a buf, NUL-terminated. Returns the
 * length (what came before a failed read, too) or -errno.
 */
static ssize_t privileges_read(const char *proc_root, const char *name, char *buf, size_t cap)
{
    char path[512];
    size_t len = 0;
    snprintf(path, sizeof(path), "%s/%s", proc_root, name);
    int err = readfile_into(path, buf, cap, &len, READFILE_INTO_KERNEL);
    return err && len == 0 ? err : (ssize_t)len;
}

int privileges_effective(const char *proc_root, uint64_t *eff)
{
    char buf[4096 + 1] = ""; /* zeroed: the analyzer cannot see read() fill it */
    ssize_t len = privileges_read(proc_root, "self/status", buf, sizeof(buf));
    return len < 0 ? (int)len : privileges_parse_status(buf, (size_t)len, eff);
}

/* The number after "Seccomp:" in /proc/self/status text, or -1. */
static int privileges_seccomp(const char *text, size_t len)
{
    static const char key[] = "\nSeccomp:";
    for (size_t i = 0; i + sizeof(key) < len; i++) {
        if (memcmp(text + i, key, sizeof(key) - 1) != 0)
            continue;
        size_t j = i + sizeof(key) - 1;
        while (j < len && (text[j] == ' ' || text[j] == '\t'))
            j++;
        return j < len && text[j] >= '0' && text[j] <= '2' ? text[j] - '0' : -1;
    }
    return -1;
}

/* Whether uid_map text @a map is the initial user namespace's: every id to itself, one line
 * "0 0 4294967295" (however it is spaced). */
static bool privileges_init_userns(const char *map)
{
    static const char *const want[] = {"0", "0", "4294967295"};
    size_t i = 0;
    for (const char *p = map; *p;) {
        while (*p == ' ' || *p == '\t' || *p == '\n')
            p++;
        size_t n = strcspn(p, " \t\n");
        if (n == 0)
            break;
        if (i >= PYPROFD_ARRAY_SIZE(want) || n != strlen(want[i]) || memcmp(p, want[i], n) != 0)
            return false;
        i++;
        p += n;
    }
    return i == PYPROFD_ARRAY_SIZE(want);
}

static bool privileges_has(uint64_t eff, unsigned bit)
{
    return bit < 64 && (eff >> bit & 1u);
}

void privileges_facts_read(const char *proc_root, struct privileges_facts *out)
{
    *out = (struct privileges_facts){.yama_scope = -1, .init_userns = -1, .seccomp = -1};
    char buf[4096 + 1] = ""; /* zeroed: the analyzer cannot see read() fill it */
    ssize_t n = privileges_read(proc_root, "self/status", buf, sizeof(buf));
    if (n > 0) {
        out->caps_known = privileges_parse_status(buf, (size_t)n, &out->eff) == 0;
        out->seccomp = privileges_seccomp(buf, (size_t)n);
    }
    n = privileges_read(proc_root, "sys/kernel/yama/ptrace_scope", buf, 4 + 1);
    if (n > 0 && buf[0] >= '0' && buf[0] <= '3')
        out->yama_scope = buf[0] - '0';
    n = privileges_read(proc_root, "self/uid_map", buf, sizeof(buf) - 1);
    if (n > 0)
        out->init_userns = privileges_init_userns(buf);
    /* AppArmor's profile or SELinux's context; "unconfined" (or none) is no limit */
    n = privileges_read(proc_root, "self/attr/current", buf, sizeof(out->lsm_label));
    size_t k = 0;
    for (ssize_t i = 0; i < n && buf[i] && buf[i] != '\n'; i++)
        out->lsm_label[k++] = buf[i] >= 0x20 && buf[i] < 0x7f ? buf[i] : '?';
    out->lsm_label[k] = '\0';
    if (strcmp(out->lsm_label, "unconfined") == 0 || strstr(out->lsm_label, ":unconfined_t:") ||
        strstr(out->lsm_label, ":spc_t:") || strstr(out->lsm_label, ":kernel_t:"))
        out->lsm_label[0] = '\0';
}

const char *privileges_refusal(const struct privileges_facts *f, int err, char *buf, size_t len)
{
    const char *what = err == -EACCES ? "permission denied" : "operation not permitted";
    char yama[48] = "";
    if (f->yama_scope > 0)
        snprintf(yama, sizeof(yama), "; kernel.yama.ptrace_scope is %d", f->yama_scope);
    if (!f->caps_known) {
        snprintf(buf, len, "%s (needs root or CAP_SYS_PTRACE%s)", what, yama);
    } else if (!privileges_has(f->eff, CAP_BIT_SYS_PTRACE)) {
        snprintf(buf, len, "%s (needs root or CAP_SYS_PTRACE; this process does not have it%s)",
                 what, yama);
    } else if (f->yama_scope == 3) {
        snprintf(buf, len,
                 "%s although this process has CAP_SYS_PTRACE: kernel.yama.ptrace_scope is 3, "
                 "which lets no process read another's memory (it is lowered only by a reboot)",
                 what);
    } else if (f->init_userns == 0) {
        snprintf(buf, len,
                 "%s although this process has CAP_SYS_PTRACE: it holds it in a user namespace "
                 "of its own, which does not reach a process outside it (run pyprofd in the "
                 "host's user namespace)",
                 what);
    } else if (f->lsm_label[0]) {
        snprintf(buf, len,
                 "%s although this process has CAP_SYS_PTRACE: its security label '%s' (%s) "
                 "may forbid reading other processes",
                 what, f->lsm_label, strchr(f->lsm_label, ':') ? "SELinux" : "AppArmor");
    } else if (f->seccomp == 2) {
        snprintf(buf, len,
                 "%s although this process has CAP_SYS_PTRACE: a seccomp filter (Seccomp: 2) "
                 "may refuse process_vm_readv (try --backend procmem)",
                 what);
    } else {
        snprintf(buf, len,
                 "%s although this process has CAP_SYS_PTRACE (no Yama, user namespace or "
                 "security label here explains it: a security module of the kernel refused)",
                 what);
    }
    return buf;
}

size_t privileges_check(uint64_t eff, void (*missing)(const struct privilege *p, void *arg),
                        void *arg)
{
    size_t n = 0;
    for (size_t i = 0; i < privileges_count; i++) {
        const struct privilege *p = &privileges[i];
        if (privileges_has(eff, p->bit))
            continue;
        /* CAP_SYS_ADMIN only stands in for CAP_CHECKPOINT_RESTORE */
        if (p->bit == CAP_BIT_SYS_ADMIN && privileges_has(eff, CAP_BIT_CHECKPOINT_RESTORE))
            continue;
        /* nor is it missed when map_files is reached the current way */
        if (p->bit == CAP_BIT_CHECKPOINT_RESTORE && privileges_has(eff, CAP_BIT_SYS_ADMIN))
            continue;
        /* the kernel and the seccomp profiles take CAP_SYS_ADMIN for CAP_PERFMON */
        if (p->bit == CAP_BIT_PERFMON && privileges_has(eff, CAP_BIT_SYS_ADMIN))
            continue;
        missing(p, arg);
        n++;
    }
    return n;
}
