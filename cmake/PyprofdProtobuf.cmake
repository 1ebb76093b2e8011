# SPDX-License-Identifier: MIT
#
# pyprofd_protobuf_c(<target> [PROTO_ROOT <dir>] <file.proto>...): run protoc-c
# at build time and add the generated .pb-c.c/.pb-c.h (in the build tree,
# never committed) to <target>. Used by the pprof encoder and the exporters'
# wire formats. Without PROTO_ROOT each file is compiled from its own
# directory; with it (files that import each other by path, as the vendored
# opentelemetry-proto does) from <dir>, and the outputs keep the files' paths
# below it, as their #includes of each other expect.

find_program(PROTOC_C_EXECUTABLE NAMES protoc-c protoc-gen-c REQUIRED)

function(pyprofd_protobuf_c target)
  cmake_parse_arguments(P "" "PROTO_ROOT" "" ${ARGN})
  set(outdir ${CMAKE_CURRENT_BINARY_DIR}/proto)
  file(MAKE_DIRECTORY ${outdir})
  foreach(proto IN LISTS P_UNPARSED_ARGUMENTS)
    get_filename_component(abs ${proto} ABSOLUTE)
    get_filename_component(name ${abs} NAME_WE)
    if(P_PROTO_ROOT)
      set(dir ${P_PROTO_ROOT})
      file(RELATIVE_PATH rel ${dir} ${abs})
      get_filename_component(reldir ${rel} DIRECTORY)
      set(out ${outdir}/${reldir}/${name})
    else()
      get_filename_component(dir ${abs} DIRECTORY)
      set(out ${outdir}/${name})
    endif()
    add_custom_command(
      OUTPUT ${out}.pb-c.c ${out}.pb-c.h
      COMMAND ${PROTOC_C_EXECUTABLE} --proto_path=${dir} --c_out=${outdir} ${abs}
      DEPENDS ${abs}
      COMMENT "protoc-c ${name}.proto"
      VERBATIM)
    target_sources(${target} PRIVATE ${out}.pb-c.c)
  endforeach()
  target_include_directories(${target} PUBLIC ${outdir})
  target_link_libraries(${target} PUBLIC PkgConfig::PROTOBUFC)
endfunction()
