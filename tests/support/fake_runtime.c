/* SPDX-License-Identifier: MIT */
/*
 * fake_runtime.c: a .PyRuntime section shaped like the head of CPython's
 * _PyRuntime (cookie, version word, free-threaded flag), built into the fake
 * python programs and the fake libpython. Compile-time switches:
 *   FAKE_VERSION        the version word (required unless FAKE_NO_RUNTIME)
 *   FAKE_FREE_THREADED  1 for a free-threaded build
 *   FAKE_BAD_COOKIE     write "notready" instead of "xdebugpy"
 *   FAKE_NO_RUNTIME     no section at all
 *   FAKE_EXPORT         define the exported fake_runtime_address() (the shared
 *                       object) instead of the executable-local
 *                       fake_own_runtime_address()
 * The data is static so the executable's copy never interposes the library's.
 */
#include <stdint.h>

#include "fake_runtime.h"

#ifndef FAKE_NO_RUNTIME
#ifndef FAKE_FREE_THREADED
#define FAKE_FREE_THREADED 0
#endif
#ifdef FAKE_BAD_COOKIE
#define FAKE_COOKIE "notready"
#else
#define FAKE_COOKIE "xdebugpy"
#endif

/* The real table is hundreds of bytes; the tail only makes the section realistic. */
struct fake_runtime_header {
    char cookie[8];
    uint64_t version;
    uint64_t free_threaded;
    uint64_t rest[125];
};

__attribute__((section(".PyRuntime"), used)) static struct fake_runtime_header fake_runtime_data = {
    .cookie = {FAKE_COOKIE[0], FAKE_COOKIE[1], FAKE_COOKIE[2], FAKE_COOKIE[3], FAKE_COOKIE[4],
               FAKE_COOKIE[5], FAKE_COOKIE[6], FAKE_COOKIE[7]},
    .version = (uint64_t)FAKE_VERSION,
    .free_threaded = FAKE_FREE_THREADED,
};
#endif

#ifdef FAKE_EXPORT
uintptr_t fake_runtime_address(void)
#else
__attribute__((visibility("hidden"))) uintptr_t fake_own_runtime_address(void)
#endif
{
#ifdef FAKE_NO_RUNTIME
    return 0;
#else
    return (uintptr_t)&fake_runtime_data;
#endif
}
