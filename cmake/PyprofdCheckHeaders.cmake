# SPDX-License-Identifier: MIT
#
# pyprofd_check_headers(<name> <stage-target> <header>...): compile every header
# on its own (a generated translation unit that includes only that header,
# with the include directories and definitions of <stage-target>), so a header
# that leans on its includer's includes breaks the build. Built by the
# 'check-headers' target, which 'all' depends on.

if(NOT TARGET check-headers)
  add_custom_target(check-headers ALL)
endif()

function(pyprofd_check_headers name stage)
  set(srcs)
  foreach(hdr IN LISTS ARGN)
    string(MAKE_C_IDENTIFIER ${hdr} id)
    set(tu ${CMAKE_CURRENT_BINARY_DIR}/hdrcheck/${id}.c)
    file(CONFIGURE OUTPUT ${tu} CONTENT "#include \"${hdr}\"\ntypedef int hdrcheck_${id}; /* a TU must declare something */\n")
    list(APPEND srcs ${tu})
  endforeach()
  add_library(${name} OBJECT ${srcs})
  target_link_libraries(${name} PRIVATE pyprofd::warnings ${stage})
  add_dependencies(check-headers ${name})
endfunction()
