/* SPDX-License-Identifier: MIT */
/*
 * privileges.h: the Linux capabilities pyprofd uses, what each enables and
 * what is lost without it: one table (privileges[]) behind `pyprofd agent
 * --help`, the agent's start-up check and the tables in the README and
 * docs/kubernetes.md (a unit test holds the docs to it).
 *
 * privileges_check() reads the agent's effective set from
 * /proc/self/status (CapEff:) and says, once per missing capability, what is
 * lost; the agent logs that at start. Nothing else changes: every target is
 * still tried, and one that cannot be read is listed `unreadable` with why.
 *
 * When a read is refused (EPERM, EACCES), privileges_refusal() says why as
 * far as this process can tell from its own side (struct privileges_facts:
 * its capabilities, Yama, its user namespace, its security label, seccomp):
 * it blames a missing capability only when CAP_SYS_PTRACE is missing, and
 * otherwise names what refuses a process that has it.
 *
 * Thread safety: the table is constant; the functions are reentrant.
 */
#ifndef PYPROFD_DISCOVERY_PRIVILEGES_H
#define PYPROFD_DISCOVERY_PRIVILEGES_H

#include "base/compat.h"

/** How much pyprofd needs a capability. */
enum privilege_need {
    PRIVILEGE_REQUIRED,    /* nothing (or only the agent's own user) is sampled without it */
    PRIVILEGE_RECOMMENDED, /* granted by the shipped manifests */
    PRIVILEGE_OPTIONAL,    /* documented, never granted by default */
};

/** One capability pyprofd may use. */
struct privilege {
    const char *name;    /* "CAP_SYS_PTRACE" */
    const char *enables; /* what it is used for */
    const char *without; /* what fails without it */
    unsigned bit;        /* capability number (linux/capability.h) */
    enum privilege_need need;
};

extern const struct privilege privileges[];
extern const size_t privileges_count;

/** "required", "recommended" or "optional". */
const char *privilege_need_name(enum privilege_need need);

/**
 * The effective capability set from /proc/self/status text (@a len bytes,
 * not necessarily NUL-terminated): the hex of its "CapEff:" line. Returns 0,
 * or -EINVAL when there is no such line or it is not hex.
 */
PYPROFD_WARN_UNUSED int privileges_parse_status(const char *text, size_t len, uint64_t *eff);

/**
 * Reads this process's effective set (/proc/self/status under @a proc_root).
 * Returns 0, -errno of the read, or -EINVAL.
 */
PYPROFD_WARN_UNUSED int privileges_effective(const char *proc_root, uint64_t *eff);

/** What decides whether this process may read another's memory, as read from its side. */
struct privileges_facts {
    bool caps_known;    /* eff was read */
    uint64_t eff;       /* the effective capability set (CapEff) */
    int yama_scope;     /* kernel.yama.ptrace_scope 0..3; -1: no Yama (or unreadable) */
    int init_userns;    /* 1: in the initial user namespace; 0: in another; -1: unknown */
    int seccomp;        /* "Seccomp:" of /proc/self/status: 0, 1, 2 (a filter); -1: unknown */
    char lsm_label[96]; /* the security label when confined ("docker-default (enforce)",
                         * "system_u:system_r:container_t:s0"); "" when unconfined or none */
};

/**
 * Reads @a out for this process: @a proc_root/self/status, uid_map and
 * attr/current, and @a proc_root/sys/kernel/yama/ptrace_scope (give "/proc":
 * the agent's own, not a host's mount). What cannot be read stays unknown.
 * Never fails.
 */
void privileges_facts_read(const char *proc_root, struct privileges_facts *out);

/**
 * Why reading another process was refused with @a err (-EPERM or -EACCES,
 * the read's own errno), given @a f: written into @a buf (@a len bytes,
 * always NUL-terminated when @a len > 0) and returned, e.g. "permission
 * denied (needs root or CAP_SYS_PTRACE; this process does not have it)",
 * "permission denied although this process has CAP_SYS_PTRACE:
 * kernel.yama.ptrace_scope is 3 (...)". Pure: the facts are injected.
 */
const char *privileges_refusal(const struct privileges_facts *f, int err, char *buf, size_t len);

/**
 * Calls @a missing(p, arg) for each row of the table whose capability is not
 * in @a eff, in table order, except an optional one whose purpose a present
 * capability already serves (CAP_SYS_ADMIN when CAP_CHECKPOINT_RESTORE is
 * there, CAP_PERFMON when CAP_SYS_ADMIN is). Returns how many were reported.
 */
size_t privileges_check(uint64_t eff, void (*missing)(const struct privilege *p, void *arg),
                        void *arg);

#endif /* PYPROFD_DISCOVERY_PRIVILEGES_H */
