/* SPDX-License-Identifier: MIT */
/*
 * native.h: native (C) stacks of one process from the kernel's samples of
 * its threads (perf/perfsample.h): each sample's user registers and stack
 * copy are unwound with the DWARF call-frame information of the binaries the
 * process maps (.eh_frame, or .debug_frame from a separate debug file found
 * by build id), through elfutils' libdwfl, as `perf record --call-graph
 * dwarf` does afterwards; frames are named from .symtab/.dynsym.
 *
 * The binaries are opened as the target sees them (map_files, its root, or
 * the same file by device and inode: discovery's pyruntime_open_mapped()),
 * so a container's libraries are read, not the host's. A library's separate
 * debug file (its .symtab when it is stripped, its .debug_frame) is looked
 * for by its build id and its .gnu_debuglink, below the target's root, as
 * the target itself could open it (base/tfile.h: a FIFO, a device, a file
 * the target may not read, one of another build id are refused, and a
 * filesystem that stalls is given up after TFILE_TIMEOUT_MS); never through
 * libdwfl's own search, which opens what the target names with a plain
 * open() and may ask a debuginfod server, and never over the network. What
 * a search found is kept for the session's life (native_files()). Memory
 * the unwinder asks for is served from the sample's stack copy only: never
 * from the live process, whose stack has moved on since the sample. An
 * address outside the copy ends the stack there (a deeper stack than the
 * copy is cut, and counted by the caller as such).
 *
 * Ownership: a struct native owns its libdwfl session and the names it
 * returns; frames returned stay valid until the next native_unwind() or
 * native_refresh().
 *
 * Errors: negative errno, with words. Thread safety: one thread at a time.
 */
#ifndef PYPROFD_UNWIND_NATIVE_H
#define PYPROFD_UNWIND_NATIVE_H

#include "base/compat.h"

#include <sys/types.h>

#include "pipeline.h"
#include "perf/perfsample.h"

#define NATIVE_MAX_FRAMES 256u
#define NATIVE_DEBUG_MAX  (1ull << 30) /* bytes: a larger separate debug file is not read */
/* bytes of symbol tables (.symtab + .dynsym, about 2.8 million symbols) above
 * which a library's symbols are not searched: its frames are named by offset */
#define NATIVE_MAX_SYMTAB (64ull << 20)

/** What the separate debug files of a session's libraries cost and gave. */
struct native_files {
    uint64_t debug_lookups; /* candidate names looked up (base/tfile.h) */
    uint64_t debug_found;   /* debug files used (their build id is the library's) */
    uint64_t debug_refused; /* candidates refused: not a regular file, not the process's to
                               read, on procfs, another build id, ... */
    uint64_t debug_stalled; /* lookups given up: a filesystem that did not answer in time */
    uint64_t huge_symtabs;  /* libraries (reports of them) whose symbols are over
                               NATIVE_MAX_SYMTAB: never searched */
};

/** One native frame. */
struct native_frame {
    uint64_t pc;          /* the return address (the sampled IP for the first frame) */
    uint64_t sp;          /* its stack pointer: the frame's own stack is [sp, the caller's sp) */
    const char *function; /* its symbol, or NULL (a stripped static function) */
    uint64_t offset;      /* pc - the symbol's start, when function is set */
    const char *file;     /* the mapped file as the target names it, or NULL (none) */
    uint64_t file_offset; /* where pc is in that file (pc - load bias) */
    /* where the function starts in that file, from its symbol or, when it
     * has none, from its call-frame information (the FDE that covers pc):
     * names a stripped function the same at every pc; 0 when not known */
    uint64_t start_offset;
    const struct frame_mapping *mapping; /* the file, its build id and range, or NULL */
};

struct native;

/**
 * A session for process @a pid, whose /proc files are under @a proc_root:
 * reads its mappings now (native_refresh() to read them again). Returns 0,
 * or a negative errno with words in @a why.
 */
PYPROFD_WARN_UNUSED int native_new(const char *proc_root, pid_t pid, struct native **out, char *why,
                                   size_t whylen);
void native_free(struct native *n);

/** Reads the mappings again (a library loaded or unloaded since). Returns 0 or -errno. */
PYPROFD_WARN_UNUSED int native_refresh(struct native *n);

/**
 * Unwinds sample @a s (of a thread of this process) into @a frames (leaf
 * first, at most @a max). Returns the number of frames (0 when the sample
 * has no user registers), or -ENOENT when the sampled IP is in no known
 * mapping (read them again).
 */
int native_unwind(struct native *n, const struct perfsample_record *s, struct native_frame *frames,
                  size_t max);

/** What the separate debug file lookups of @a n cost and gave, since native_new(). */
struct native_files native_files(const struct native *n);

/**
 * Whether the last native_unwind() reached the outermost frame (one whose
 * return address the call-frame information leaves undefined: _start, a
 * thread's clone), rather than stopping where the stack copy or the
 * call-frame information ended, or at @a max frames.
 */
bool native_complete(const struct native *n);

#endif /* PYPROFD_UNWIND_NATIVE_H */
