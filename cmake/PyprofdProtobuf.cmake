# SPDX-License-Identifier: MIT
#
# pyprofd_protobuf_c(<target> <file.proto>...): run protoc-c at build time and
# add the generated .pb-c.c/.pb-c.h (in the build tree, never committed) to
# <target>. Used by the pprof encoder and the exporters' wire formats.

find_program(PROTOC_C_EXECUTABLE NAMES protoc-c protoc-gen-c REQUIRED)

function(pyprofd_protobuf_c target)
  set(outdir ${CMAKE_CURRENT_BINARY_DIR}/proto)
  file(MAKE_DIRECTORY ${outdir})
  foreach(proto IN LISTS ARGN)
    get_filename_component(abs ${proto} ABSOLUTE)
    get_filename_component(dir ${abs} DIRECTORY)
    get_filename_component(name ${abs} NAME_WE)
    add_custom_command(
      OUTPUT ${outdir}/${name}.pb-c.c ${outdir}/${name}.pb-c.h
      COMMAND ${PROTOC_C_EXECUTABLE} --proto_path=${dir} --c_out=${outdir} ${abs}
      DEPENDS ${abs}
      COMMENT "protoc-c ${name}.proto"
      VERBATIM)
    target_sources(${target} PRIVATE ${outdir}/${name}.pb-c.c)
  endforeach()
  target_include_directories(${target} PUBLIC ${outdir})
  target_link_libraries(${target} PUBLIC PkgConfig::PROTOBUFC)
endfunction()
