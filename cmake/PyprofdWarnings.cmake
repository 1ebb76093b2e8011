# SPDX-License-Identifier: MIT
#
# pyprofd::warnings: the house warning set (docs/style in ../shared/style.md, §4),
# an INTERFACE target every pyprofd target links. -Werror is behind PYPROFD_WERROR.

add_library(pyprofd_warnings INTERFACE)
add_library(pyprofd::warnings ALIAS pyprofd_warnings)

target_compile_options(pyprofd_warnings INTERFACE
  -Wall -Wextra -Wpedantic
  -Wshadow -Wconversion -Wsign-conversion
  -Wmissing-prototypes -Wmissing-declarations -Wstrict-prototypes -Wold-style-definition
  -Wundef -Wvla -Wwrite-strings -Wpointer-arith -Wcast-align
  -Wformat=2 -Wimplicit-fallthrough -Wnull-dereference
  -fno-common -fno-omit-frame-pointer)
target_compile_definitions(pyprofd_warnings INTERFACE _GNU_SOURCE)

if(PYPROFD_WERROR)
  target_compile_options(pyprofd_warnings INTERFACE -Werror)
endif()

# Hardening for optimised builds (FORTIFY needs optimisation to do anything).
if(CMAKE_BUILD_TYPE MATCHES "Rel" AND NOT PYPROFD_SANITIZE)
  target_compile_options(pyprofd_warnings INTERFACE
    -U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=3 -fstack-protector-strong)
  target_link_options(pyprofd_warnings INTERFACE -Wl,-z,relro,-z,now)
  set(CMAKE_POSITION_INDEPENDENT_CODE ON)
endif()
