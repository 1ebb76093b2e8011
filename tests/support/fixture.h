/* SPDX-License-Identifier: MIT */
/*
 * fixture.h: loading files from tests/fixtures/ (the source tree is found via
 * PYPROFD_SOURCE_DIR, which CMake compiles in and ctest also exports).
 */
#ifndef PYPROFD_TESTS_FIXTURE_H
#define PYPROFD_TESTS_FIXTURE_H

#include "base/compat.h"

/**
 * Reads tests/fixtures/@a rel into a new buffer (alloc_free() it), NUL
 * terminated one past *@a len. NULL when the file cannot be read.
 */
uint8_t *fixture_load(const char *rel, size_t *len);

/** The absolute path of tests/fixtures/@a rel in @a buf. */
const char *fixture_path(const char *rel, char *buf, size_t len);

#endif
