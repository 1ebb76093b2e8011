/* SPDX-License-Identifier: MIT */
/*
 * privileges.c: the capability table and the start-up check (see
 * privileges.h). Evidence for each row is in docs/kubernetes.md.
 */
#include "base/compat.h"

#include "base/strnum.h"
#include "discovery/privileges.h"

#include <fcntl.h>
#include <unistd.h>

#define CAP_BIT_DAC_READ_SEARCH    2u
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

int privileges_effective(const char *proc_root, uint64_t *eff)
{
    char path[512], buf[4096];
    snprintf(path, sizeof(path), "%s/self/status", proc_root);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    size_t len = 0;
    while (len < sizeof(buf)) {
        ssize_t n = read(fd, buf + len, sizeof(buf) - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    return privileges_parse_status(buf, len, eff);
}

static bool privileges_has(uint64_t eff, unsigned bit)
{
    return bit < 64 && (eff >> bit & 1u);
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
