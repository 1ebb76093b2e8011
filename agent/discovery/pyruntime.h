/* SPDX-License-Identifier: MIT */
/*
 * pyruntime.h: find a process's CPython runtime (discovery, stage 1).
 *
 * A process is a CPython 3.13+ target when one of the ELF files it maps (the
 * python executable, a libpython shared object, or any executable that embeds
 * the interpreter) has a .PyRuntime section whose first bytes, read live from
 * the process, are the "xdebugpy" cookie. Process and file names are only used
 * to pick which mapped files to open; the cookie decides.
 *
 * Candidates, in map order: every mapped file whose name contains "python"
 * (python3.X, libpython3.X.so.1.0) and the main executable, whatever it is
 * called. Each file is opened as the target sees it: /proc/PID/map_files/
 * first (always the mapped file, even inside a chroot or another mount
 * namespace, or deleted; but its directory belongs to the target's user, so
 * an agent of another user needs CAP_DAC_READ_SEARCH besides the capability
 * map_files itself asks for), then /proc/PID/root/<path> (the target in
 * another mount namespace: maps paths are relative to its root), then
 * /proc/PID/root/<path less the target's root as the reader sees it> (a
 * chroot'ed target: maps paths are relative to the reader's root), then
 * <path>. /proc/PID/root needs only ptrace access, not the right to walk the
 * directories above the target's root, so the middle two work for an agent
 * with CAP_SYS_PTRACE alone. A file opened by name is used only if its inode
 * matches the mapping (and, opened by the plain path, its device too), and
 * only if it is a regular file. Every candidate's cookie is checked and the
 * first good one wins. A second libpython that was mapped but never started
 * (dlopen'ed by ctypes, say) carries the cookie too, since the table is static
 * data; so for the versions pyprofd knows, a runtime whose interpreter list is
 * still empty is kept only as a fallback when no initialised one exists.
 *
 * Errors are returned, never logged. Thread safety: reentrant.
 */
#ifndef PYPROFD_DISCOVERY_PYRUNTIME_H
#define PYPROFD_DISCOVERY_PYRUNTIME_H

#include "base/compat.h"

#include <limits.h>
#include <sys/types.h>

#include "discovery/proc_maps.h"
#include "memread/memread.h"
#include "python/pyversion.h"

/** At most this many candidate files are opened per process. */
#define PYRUNTIME_MAX_CANDIDATES 16

/** Why no runtime was found (when pyruntime_locate() fails with -ENOENT). */
enum pyruntime_miss {
    PYRUNTIME_MISS_NO_CANDIDATE, /* nothing python-like is mapped */
    PYRUNTIME_MISS_NO_SECTION,   /* python files without a .PyRuntime section */
    PYRUNTIME_MISS_NO_COOKIE,    /* .PyRuntime without the cookie: < 3.13, or not set up */
    PYRUNTIME_MISS_UNREADABLE,   /* candidates could not be opened or read */
};

/** Where a process's runtime is. */
struct pyruntime {
    uint64_t raddr;         /* address of _PyRuntime, i.e. of the _Py_DebugOffsets table */
    uint64_t section_size;  /* size of the .PyRuntime section */
    uint64_t map_start;     /* start of the lowest mapping of the file holding it */
    char path[PATH_MAX];    /* that file, as /proc/PID/maps names it */
    bool deleted;           /* the file was deleted after it was mapped */
    const char *opened_via; /* "map_files", "root" or "path" (static string) */
    struct py_version version;
    /*
     * The runtime has an interpreter (runtime_state.interpreters_head set).
     * False only when no candidate had one: an initialised runtime is
     * preferred over a second libpython that was mapped but never started.
     */
    bool initialized;
    /* On failure: why, and the minor version a file name suggests (0 if none). */
    enum pyruntime_miss miss;
    unsigned name_minor;
};

/**
 * Locates the runtime of @a pid, reading its maps under @a proc_root (usually
 * "/proc") and its memory through @a mr (borrowed). Returns 0 and fills
 * @a out; otherwise a negative errno and a one-line reason in @a why:
 *  -ESRCH   the process is gone;
 *  -EPERM   its maps or memory may not be read (needs root/CAP_SYS_PTRACE);
 *  -ENOENT  no mapped file holds an initialised CPython 3.13+ runtime (a
 *           non-Python process, Python <= 3.12, or a runtime not set up yet);
 *  -EPROTO  a cookie matched but the version word is implausible;
 *  -ENOMEM.
 * Whether the version is supported is the caller's decision
 * (pyversion_check_supported()).
 */
PYPROFD_WARN_UNUSED int pyruntime_locate(const char *proc_root, pid_t pid, struct memread *mr,
                                         struct pyruntime *out, char *why, size_t why_len);

/**
 * Opens the file behind mapping @a e of @a pid as the target sees it (the
 * order described above: map_files, then the root paths or the plain path if
 * the inode matches), read-only and non-blocking (the fd is only pread). Returns the fd (caller
 * closes it) and sets *@a via to "map_files", "root" or "path"; or -ENOENT. Also used to find the
 * asyncio table (unwind/asyncio.h).
 */
PYPROFD_WARN_UNUSED int pyruntime_open_mapped(const char *proc_root, pid_t pid,
                                              const struct proc_map_entry *e, const char **via);

#endif /* PYPROFD_DISCOVERY_PYRUNTIME_H */
