/* SPDX-License-Identifier: MIT */
/*
 * mixed.h: one stack of C and Python frames from two reads of one thread:
 * the kernel's sample of it (unwind/native.h: C frames with their stack
 * pointers) and the Python stack read right after (unwind/unwind.h with
 * UNWIND_ENTRIES: Python frames and a marker at every entry frame, with the
 * entry frame's address).
 *
 * Where they join: each time C code calls into Python, the evaluation loop
 * pushes an entry frame on its own C stack frame (3.12+). So the entry
 * frame's address lies in exactly one C frame of the kernel's sample, the
 * evaluation loop that runs that stretch of Python frames, whatever the
 * loop's symbol is called or whether it has one (Debian's builds split it
 * into an unnamed part). The merged stack, leaf first, is
 *
 *   C frames above the innermost loop (what the Python leaf called),
 *   the Python frames that loop runs (up to its entry frame),
 *   C frames between that loop and the next one out (a sorted(), a C
 *   extension calling back), the next stretch of Python frames, ...,
 *   C frames below the outermost loop (PyEval_EvalCode ... main).
 *
 * The loop frames themselves are replaced by their Python frames.
 *
 * Before 3.12 the entry frames are not on the C stack (3.11 keeps them on
 * its own frame stack, marked is_entry; 3.9 and 3.10 run one loop per frame
 * object), so the loops are found by the symbol every CPython exports for
 * its loop, _PyEval_EvalFrameDefault: one per stretch (3.11: up to each
 * is_entry marker, which the unwinder gives without an address; 3.9, 3.10:
 * every frame, no marker), as many as there are stretches. C frames that
 * stop short of the outermost frame cut the stack at the first stretch
 * whose loop is not among them (MIXED_CUT, as below), even when none is (a
 * C extension recursing deeper than the frames unwound).
 *
 * The two reads are some microseconds apart, so they are checked before
 * they are joined: every entry frame must fall in the sample's stack, each
 * in its own C frame, innermost first; otherwise the thread's C stack was a
 * different one when it was read (MIXED_DISAGREE) and no merge is made. An
 * entry frame beyond the copied stack (a C stack deeper than the copy) ends
 * the C frames there: the remaining Python frames follow a <native> marker
 * (MIXED_CUT). What the entry frames cannot see, a Python call or return
 * within one stretch between the reads, is bounded by the caller in time
 * (docs/unwinder.md, "Mixed stacks").
 *
 * Ownership: a struct mixed owns the merged frames and their names, valid
 * until its next merge. Thread safety: one thread at a time. No allocation
 * after mixed_new().
 */
#ifndef PYPROFD_UNWIND_MIXED_H
#define PYPROFD_UNWIND_MIXED_H

#include "base/compat.h"

#include "pipeline.h"
#include "unwind/native.h"

enum mixed_result {
    MIXED_OK,       /* joined at every entry frame */
    MIXED_CUT,      /* joined as far as the C frames go; the rest is Python only */
    MIXED_DISAGREE, /* the reads disagree: no merge */
    MIXED_NO_ENTRY, /* nothing to join at: before 3.12, no C frame named as the loop in C
                       frames that reach the outermost one (a build without the symbol) */
};

struct mixed;

/** Returns 0 or -ENOMEM. */
PYPROFD_WARN_UNUSED int mixed_new(struct mixed **out);
/** NULL is a no-op. */
void mixed_free(struct mixed *m);

/**
 * Joins C frames @a c (@a nc, leaf first, from native_unwind(); @a c_complete:
 * they reach the outermost frame, native_complete()) and Python frames @a py
 * (@a npy, leaf first, read with UNWIND_ENTRIES) of the same thread. On MIXED_OK and MIXED_CUT, *@a
 * out and *@a nout are the merged stack (owned by @a m); otherwise they are untouched.
 */
enum mixed_result mixed_merge(struct mixed *m, const struct native_frame *c, size_t nc,
                              bool c_complete, const struct unwind_frame *py, size_t npy,
                              const struct unwind_frame **out, size_t *nout);

/**
 * The Python stack @a py (@a npy frames, read with UNWIND_ENTRIES) as it
 * would read with UNWIND_NATIVE only: the outermost entry marker dropped,
 * the others kept as <native>: what a sample shows when no merge is made.
 * Returns the number of frames in *@a out (owned by @a m).
 */
size_t mixed_python_only(struct mixed *m, const struct unwind_frame *py, size_t npy,
                         const struct unwind_frame **out);

/** The name mixed_merge() gives C frame @a f, in @a buf: its symbol, or FILE+0xSTART. */
const char *mixed_c_name(const struct native_frame *f, char *buf, size_t size);

#endif /* PYPROFD_UNWIND_MIXED_H */
