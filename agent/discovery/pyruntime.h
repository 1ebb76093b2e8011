/* SPDX-License-Identifier: MIT */
/*
 * pyruntime.h: find a process's CPython runtime (discovery, stage 1).
 *
 * A process is a CPython 3.13+ target when one of the ELF files it maps (the
 * python executable, a libpython shared object, or any executable that embeds
 * the interpreter) has a .PyRuntime section whose first bytes, read live from
 * the process, are the "xdebugpy" cookie. Process and file names are only used
 * to pick which mapped files to open; the cookie decides. A file without the
 * cookie is a CPython 3.11/3.12 target when its symbols name _PyRuntime (or
 * it has a .PyRuntime section) and Py_Version, whose value, read live, gives
 * the version (no_table below); 3.9 and 3.10 have no Py_Version: their
 * version is the PY_VERSION string in the file, or its name's. The range
 * pyprofd reads is python/pyversion.h's (PYVERSION_SUPPORTED).
 *
 * What a file's ELF headers say is kept by the file's identity (device,
 * inode, size, mtime): when /proc/PID/exe is a file so known to hold the
 * runtime, it is placed without reading the maps, by AT_ENTRY in
 * /proc/PID/auxv less the file's e_entry (the load bias), and read live as
 * below; anything else, or a runtime not set up yet, takes the maps.
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
 * The asyncio debug table (CPython 3.14+, section .AsyncioDebug) is found the
 * same way, by pyruntime_find_asyncio(): it lives in the _asyncio extension
 * module, mapped only once the program imports asyncio, or in the file that
 * holds the runtime when _asyncio is built in. Callers look again while it is
 * missing; they do it between samples (housekeeping), never in a sampling
 * attempt: the search reads /proc/PID/maps (which allocates) and opens files.
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
    const char *opened_via; /* "map_files", "root" or "path" (static string): how the file
                             * was opened when it was read (for one known by its
                             * identity, the first time) */
    bool by_entry;          /* placed by AT_ENTRY, without reading the maps (the memo) */
    struct py_version version;
    /*
     * The runtime has an interpreter (runtime_state.interpreters_head set).
     * False only when no candidate had one: an initialised runtime is
     * preferred over a second libpython that was mapped but never started.
     */
    bool initialized;
    /*
     * No debug table (CPython 3.11, 3.12): raddr is the _PyRuntime symbol
     * (or the start of a .PyRuntime section without the cookie), the version
     * came from the Py_Version symbol (3.9, 3.10: the PY_VERSION string in the
     * file, else its name), and the unwinder uses a layout
     * generated from the version's headers, checked against the process
     * before it samples. code_type/unicode_type: PyCode_Type and
     * PyUnicode_Type in the process (0 when the file does not say), for
     * that check; none_object: _Py_NoneStruct (an exception state holding
     * None on 3.11/3.12 handles nothing).
     */
    bool no_table;
    const char *found_by; /* no_table: "_PyRuntime symbol" or ".PyRuntime section" */
    /* no_table: where the version came from: "Py_Version" (3.11, 3.12), "its
     * PY_VERSION string" or "the file's name ..." (3.9, 3.10; static strings) */
    const char *version_from;
    /* 3.9, 3.10: the process's PID in its own PID namespace (what its
     * threads' struct pthread holds as the main thread's TID) */
    pid_t ns_pid;
    uint64_t code_type, unicode_type, none_object;
    uint64_t frame_type; /* PyFrame_Type (0 when the file does not say) */
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
 *  -ENOENT  no mapped file holds an initialised CPython runtime pyprofd can
 *           place (a non-Python process, Python before 3.9, one without its
 *           _PyRuntime symbol, or a runtime not set up yet);
 *  -EPROTO  a cookie matched but the version word is implausible;
 *  -ENOMEM.
 * Whether the version is supported is the caller's decision
 * (pyversion_check_supported()).
 */
PYPROFD_WARN_UNUSED int pyruntime_locate(const char *proc_root, pid_t pid, struct memread *mr,
                                         struct pyruntime *out, char *why, size_t why_len);

/**
 * The name @a path (a mapping's, from /proc/PID/maps) has inside the root of
 * process @a pid when it is written from the reader's root (a chroot'ed
 * target: the kernel writes maps paths relative to the reader's root): the
 * target's root as the reader sees it is stripped off. Returns a pointer into
 * @a path ("/usr/bin/python3.14"), or NULL when @a path is not under that
 * root, or the root is "/" (the name is the same inside).
 */
const char *pyruntime_inside_root(const char *proc_root, pid_t pid, const char *path);

/**
 * Opens the file behind mapping @a e of @a pid as the target sees it (the
 * order described above: map_files, then the root paths or the plain path if
 * the inode matches), read-only and non-blocking (the fd is only pread). Each
 * name is looked at through an O_PATH descriptor first: only a regular file
 * is ever opened (never a FIFO or device planted under the mapped name).
 * Returns the fd (caller closes it) and sets *@a via to "map_files", "root"
 * or "path"; or -ENOENT.
 */
PYPROFD_WARN_UNUSED int pyruntime_open_mapped(const char *proc_root, pid_t pid,
                                              const struct proc_map_entry *e, const char **via);

/** Files pyruntime_find_asyncio() remembers having looked at without a table. */
#define PYRUNTIME_ASYNCIO_CHECKED 32u

/**
 * What pyruntime_find_asyncio() keeps between calls for one process: the
 * files (by inode) it looked at without finding the table, which it does not
 * open again, and how often it looked. An embeddable value: zero it before the
 * first call (e.g. `= {0}`); the fields are private to pyruntime.c, except
 * @c searches, which callers may read.
 */
struct pyruntime_asyncio_memo {
    uint64_t checked[PYRUNTIME_ASYNCIO_CHECKED];
    size_t nchecked;
    uint64_t searches; /* calls so far */
};

/** Where a section of a mapped file is in a process. */
struct pyruntime_section {
    uint64_t raddr; /* its first byte in the process */
    uint64_t size;  /* sh_size */
};

/**
 * Looks for the asyncio debug table (_Py_AsyncioModuleDebugOffsets, ELF
 * section .AsyncioDebug) of @a pid, whose runtime @a rt pyruntime_locate()
 * found, in the maps under @a proc_root. Candidates: the lowest mapping of
 * every mapped file whose name contains "_asyncio" (3.14 builds _asyncio as an
 * extension module) and of the file holding the runtime (3.15 builds it in),
 * each opened with pyruntime_open_mapped(). Files @a memo says were looked at
 * already are skipped, and every file looked at without a table is added to
 * it. The table's bytes are neither read nor validated: that is the caller's
 * (unwind/asyncio.h, asyncio_attach_table()).
 *
 * Returns 0 and the section in @a out; otherwise a negative errno and a
 * one-line reason in @a why:
 *  -ENOENT  not there (yet): no candidate has the section (the program has
 *           not imported asyncio yet, or a candidate could not be opened);
 *  -EPROTO  malformed: a file has the section, but it is not inside the
 *           file's loaded image (reported once: the file is not looked at
 *           again);
 *  -ESRCH   the process is gone; -EPERM its maps may not be read; -ENOMEM.
 *
 * Allocates and does file I/O. Thread safety: reentrant; @a memo is used by
 * one thread at a time.
 */
PYPROFD_WARN_UNUSED int pyruntime_find_asyncio(const char *proc_root, pid_t pid,
                                               const struct pyruntime *rt,
                                               struct pyruntime_asyncio_memo *memo,
                                               struct pyruntime_section *out, char *why,
                                               size_t why_len);

#endif /* PYPROFD_DISCOVERY_PYRUNTIME_H */
