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
/**
 * The same for a free-threaded build: 3.13t's real table
 * (debug_offsets/3.13t.bin); for 3.14t/3.15t the GIL build's table with the
 * free-threaded flag and synthetic per-thread bytecode offsets (no such
 * interpreter could be built here: see docs/unwinder.md).
 */
struct pyimage *pyimage_new_ft(unsigned minor);
/**
 * Free-threaded 3.14+: gives @a code a per-thread bytecode copy @a index
 * (1-7; code->co_tlbc's array is made on first use) and returns its address.
 */
uint64_t pyimage_tlbc(struct pyimage *img, uint64_t code, unsigned index);
/** Makes @a frame execute code unit @a unit of copy @a index at @a base. */
void pyimage_frame_tlbc(struct pyimage *img, uint64_t frame, unsigned index, uint64_t base,
                        unsigned unit);
/** Sets the interpreter's tlbc_generation (free-threaded 3.14+). */
void pyimage_tlbc_generation(struct pyimage *img, uint32_t gen);
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

/** Space for an object of @a len bytes (16-aligned, zeroed); *@a local is its bytes here. */
uint64_t pyimage_object(struct pyimage *img, size_t len, uint8_t **local);
/** Thread @a t's state as it will be installed (PYABI_MAX_TSTATE bytes), to set fields. */
uint8_t *pyimage_tstate(struct pyimage *img, unsigned t);
/** The address of thread @a t's state. */
uint64_t pyimage_tstate_raddr(const struct pyimage *img, unsigned t);
/**
 * Makes @a frame (built elsewhere, e.g. inside a coroutine object) the top of
 * thread @a t: its previous pointer is set to the current top, and later
 * pushes go above it.
 */
void pyimage_link_frame(struct pyimage *img, unsigned t, uint64_t frame);
/**
 * Writes the installed regions as records (u64 address, u64 length, bytes;
 * the objects region only as far as used), the format of the unwinder's and
 * asyncio's fuzz seeds. Returns 0 or -EIO.
 */
int pyimage_write_records(const struct pyimage *img, FILE *out);

/**
 * Installs (copies) the image into @a fake and describes the runtime in
 * @a rt, ready for unwinder_new(). Call it once, after building; change the
 * installed image with memread_fake_poke().
 */
void pyimage_install(struct pyimage *img, struct memread_fake *fake, struct pyruntime *rt);

#endif
