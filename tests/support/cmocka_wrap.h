/* SPDX-License-Identifier: MIT */
/*
 * cmocka_wrap.h: cmocka and the headers it expects before it, in one include.
 */
#ifndef PYPROFD_TESTS_CMOCKA_WRAP_H
#define PYPROFD_TESTS_CMOCKA_WRAP_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#endif
