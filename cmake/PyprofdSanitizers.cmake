# SPDX-License-Identifier: MIT
#
# PYPROFD_SANITIZE selects a sanitizer set for every target (applied globally so
# that libraries, tests and the binary agree). CI runs the tests under asan-ubsan.

if(PYPROFD_SANITIZE STREQUAL "asan-ubsan")
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=all
                      -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined -fno-sanitize-recover=all)
elseif(PYPROFD_SANITIZE STREQUAL "tsan")
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
elseif(NOT PYPROFD_SANITIZE STREQUAL "")
  message(FATAL_ERROR "PYPROFD_SANITIZE must be '', 'asan-ubsan' or 'tsan', not '${PYPROFD_SANITIZE}'")
endif()

if(PYPROFD_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "PYPROFD_FUZZ needs clang (libFuzzer); configure with CC=clang or the asan-ubsan preset")
  endif()
  # Instrument everything for coverage; only the fuzz executables link libFuzzer's main.
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
