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

/**
 * Calls @a missing(p, arg) for each row of the table whose capability is not
 * in @a eff, in table order, except an optional one whose purpose a present
 * capability already serves (CAP_SYS_ADMIN when CAP_CHECKPOINT_RESTORE is
 * there, CAP_PERFMON when CAP_SYS_ADMIN is). Returns how many were reported.
 */
size_t privileges_check(uint64_t eff, void (*missing)(const struct privilege *p, void *arg),
                        void *arg);

#endif /* PYPROFD_DISCOVERY_PRIVILEGES_H */
