# SPDX-License-Identifier: MIT
#
# pyprofd_stage(<name> SOURCES <src>... [HEADERS <hdr>...] [DEPS <stage>...]
#               [LIBS <target>...])
#
# One pipeline stage as two static libraries from one list of sources:
#   pyprofd_<name>     the product code;
#   pyprofd_<name>_ut  the same with -DPYPROFD_UNITTEST (PYPROFD_STATIC
#                      functions become reachable), for the unit tests.
# Each links only the stages it DEPS on (their _ut twins for the _ut one), so
# the link lists cannot drift apart and a stage cannot call one it does not
# name. HEADERS (paths relative to the stage's include root: agent/ for the
# agent's stages, the project root for exporters/ and cli/) are each compiled
# alone by the check-headers target. The stage order itself is written in
# docs/architecture.md and checked on includes by scripts/check-deps.sh.

function(pyprofd_stage name)
  cmake_parse_arguments(S "" "" "SOURCES;HEADERS;DEPS;LIBS" ${ARGN})
  foreach(v IN ITEMS "" _ut)
    set(t pyprofd_${name}${v})
    add_library(${t} STATIC ${S_SOURCES})
    target_include_directories(${t} PUBLIC ${PROJECT_SOURCE_DIR}/agent ${PROJECT_SOURCE_DIR})
    target_link_libraries(${t} PUBLIC pyprofd::warnings ${S_LIBS})
    foreach(d IN LISTS S_DEPS)
      target_link_libraries(${t} PUBLIC pyprofd_${d}${v})
    endforeach()
    # the version is reported by the commands and in /metrics (pyprofd_build_info)
    target_compile_definitions(${t} PRIVATE PYPROFD_VERSION="${PROJECT_VERSION}")
  endforeach()
  target_compile_definitions(pyprofd_${name}_ut PUBLIC PYPROFD_UNITTEST)
  if(S_HEADERS)
    pyprofd_check_headers(pyprofd_check_${name}_headers pyprofd_${name} ${S_HEADERS})
  endif()
endfunction()
