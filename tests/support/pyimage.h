/* SPDX-License-Identifier: MIT */
/*
 * pyimage.h: builds a synthetic memory image of a CPython process for the
 * unwinder's unit tests: a real _Py_DebugOffsets table (from
 * tests/fixtures/debug_offsets/), a runtime, one interpreter, threads, code
 * objects with names and line tables, and frame chains in data-stack chunks,
 * all placed with the offsets that table gives. The image is installed into a
 * memread_fake, so each test controls exactly what the "process" holds and
 * can then break it (loops, torn chains, bad owners, unreadable objects).
 */
#ifndef PYPROFD_TESTS_PYIMAGE_H
#define PYPROFD_TESTS_PYIMAGE_H

#include "base/compat.h"

#include "discovery/pyruntime.h"
#include "memread_fake.h"
#include "python/pyabi.h"

#define PYIMAGE_RUNTIME 0x10000000ull

struct pyimage;

/** A new image for CPython 3.@a minor (13, 14 or 15). Aborts the test on failure. */
struct pyimage *pyimage_new(unsigned minor);
void pyimage_free(struct pyimage *img);
const struct py_layout *pyimage_layout(const struct pyimage *img);

/** A compact ASCII str object holding @a ascii. */
uint64_t pyimage_str(struct pyimage *img, const char *ascii);
/**
 * A code object whose line table maps code unit i (i < 64) to line
 * firstlineno + 1 + i, columns 0-4.
 */
uint64_t pyimage_code(struct pyimage *img, const char *qualname, const char *file,
                      int32_t firstlineno);

/** Adds a thread (the first added is the main thread). Returns its index. */
unsigned pyimage_thread(struct pyimage *img, uint64_t native_tid);
/**
 * Pushes a frame on thread @a t: the first push is the outermost frame. For
 * a Python frame give @a code and the code unit @a unit it executes; owner 3
 * (entry frames) ignore them. Returns the frame's address.
 */
uint64_t pyimage_push(struct pyimage *img, unsigned t, unsigned owner, uint64_t code,
                      unsigned unit);
/** Sets a frame's previous pointer (to make loops and torn chains). */
void pyimage_set_previous(struct pyimage *img, uint64_t frame, uint64_t previous);
/** Marks thread @a t as holding the GIL. */
void pyimage_hold_gil(struct pyimage *img, unsigned t);
/** Sets gc.collecting, and on 3.15 gc.frame. */
void pyimage_gc(struct pyimage *img, uint64_t frame);
/** Sets the runtime's interpreters head (0: not initialised) and finalizing flag. */
void pyimage_runtime_state(struct pyimage *img, bool initialized, bool finalizing);
/** Sets the interpreter's code_object_generation (3.14+). */
void pyimage_code_generation(struct pyimage *img, uint64_t gen);

/**
 * Installs (copies) the image into @a fake and describes the runtime in
 * @a rt, ready for unwinder_new(). Call it once, after building; change the
 * installed image with memread_fake_poke().
 */
void pyimage_install(struct pyimage *img, struct memread_fake *fake, struct pyruntime *rt);

#endif
