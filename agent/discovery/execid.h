/* SPDX-License-Identifier: MIT */
/*
 * execid.h: which program image a process runs (discovery, stage 1).
 *
 * A process's identity (PID plus start time, proc_scan.h) survives exec(2):
 * a Python process that execs /bin/sleep, or another Python, keeps both. What
 * changes is the whole address space, and with it the 16 random bytes the
 * kernel writes for every new program image and points to from the auxiliary
 * vector (AT_RANDOM, the seed of glibc's stack protector and pointer guard;
 * nothing writes them afterwards). The address of those bytes (from
 * /proc/PID/auxv) and their value identify one image: after an exec the old
 * address is unmapped or holds other bytes, even with address-space layout
 * randomisation turned off (new random bytes at the same place).
 *
 * Checking costs one 16-byte read through the target's memread, no /proc
 * file. Errors are returned, never logged. Thread safety: reentrant.
 */
#ifndef PYPROFD_DISCOVERY_EXECID_H
#define PYPROFD_DISCOVERY_EXECID_H

#include "base/compat.h"

#include <sys/types.h>

#include "memread/memread.h"

#define EXECID_RANDOM_LEN 16u
#define EXECID_AUXV_MAX   4096u /* bytes of /proc/PID/auxv read (about 30 entries is normal) */

/** One program image of a process. Plain value; zeroed means "not known". */
struct exec_id {
    uint64_t random_raddr; /* AT_RANDOM: where the image's random bytes are; 0: not known */
    uint8_t random[EXECID_RANDOM_LEN];
};

/**
 * Finds the entry of @a type (AT_RANDOM, AT_ENTRY, ...) in the auxiliary
 * vector @a data, as execid_parse_auxv() below finds AT_RANDOM: 0 and its
 * (non-zero) @a value, -ENOENT, or -EINVAL.
 */
PYPROFD_WARN_UNUSED int execid_auxv_value(const uint8_t *data, size_t len, uint64_t type,
                                          uint64_t *value);

/**
 * Finds AT_RANDOM in the auxiliary vector @a data (@a len bytes of a 64-bit
 * process's /proc/PID/auxv: native-endian (type, value) pairs of 8 bytes,
 * ended by AT_NULL). Returns 0 and the address in @a raddr, -ENOENT when the
 * vector has no (non-zero) AT_RANDOM before its end, -EINVAL when it is
 * malformed (no AT_NULL, a partial pair).
 */
PYPROFD_WARN_UNUSED int execid_parse_auxv(const uint8_t *data, size_t len, uint64_t *raddr);

/**
 * Reads the current image's identity of process @a pid: /proc/PID/auxv under
 * @a proc_root, then the random bytes through @a mr (borrowed). Returns 0,
 * -ESRCH (gone), -EPERM/-EACCES (not allowed), -ENOENT/-EINVAL (no usable
 * AT_RANDOM; also while the process is in the middle of an exec, whose new
 * vector is written after /proc/PID/exe changes: try again later), or a
 * memread error.
 */
PYPROFD_WARN_UNUSED int execid_read(const char *proc_root, pid_t pid, struct memread *mr,
                                    struct exec_id *out);

/**
 * Whether the process still runs the image @a id (from execid_read(); a
 * zeroed @a id always matches: nothing to compare). Reads the 16 bytes again
 * through @a mr. Returns 0 and *@a same; -ESRCH when the process is gone;
 * -EPERM. An unmapped or short read (-EFAULT) means another image: 0 with
 * *@a same false.
 */
PYPROFD_WARN_UNUSED int execid_check(struct memread *mr, const struct exec_id *id, bool *same);

#endif /* PYPROFD_DISCOVERY_EXECID_H */
