/* SPDX-License-Identifier: MIT */
/*
 * fake_runtime.h: what the fake libpython, the fake _asyncio module and the
 * fake programs' own sections export, for the fake programs and the tests.
 */
#ifndef PYPROFD_TESTS_FAKE_RUNTIME_H
#define PYPROFD_TESTS_FAKE_RUNTIME_H

#include <stdint.h>

/** Address of the shared object's .PyRuntime data, as the process sees it. */
uintptr_t fake_runtime_address(void);
/** Address of the executable's own .PyRuntime data (0 when it has none). */
uintptr_t fake_own_runtime_address(void);

/** The first entry of the fake asyncio debug table (fake_asyncio.c). */
#define FAKE_ASYNCIO_MAGIC 0x6173796e63696f21ull /* "!oicnysa" */
/**
 * Address of the fake .AsyncioDebug table of the file that defines it (0 when
 * the section is not in the loaded image).
 */
uintptr_t fake_asyncio_address(void);

#endif
