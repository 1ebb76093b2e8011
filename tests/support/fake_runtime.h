/* SPDX-License-Identifier: MIT */
/*
 * fake_runtime.h: what the fake libpython exports for the fake programs.
 */
#ifndef PYPROFD_TESTS_FAKE_RUNTIME_H
#define PYPROFD_TESTS_FAKE_RUNTIME_H

#include <stdint.h>

/** Address of the shared object's .PyRuntime data, as the process sees it. */
uintptr_t fake_runtime_address(void);
/** Address of the executable's own .PyRuntime data (0 when it has none). */
uintptr_t fake_own_runtime_address(void);

#endif
