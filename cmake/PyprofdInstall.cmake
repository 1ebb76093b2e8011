# SPDX-License-Identifier: MIT
#
# What `make install PREFIX=...` and the Debian package install:
#   bin/pyprofd, bin/pyprofd-lite
#   share/man/man1/pyprofd.1 (and pyprofd-lite.1), generated from --help and
#     --version by help2man at build time (skipped, with a message, without it)
#   share/bash-completion/completions/pyprofd and pyprofd-lite
#   /etc/pyprofd/pyprofd.yml (the shipped default config; a conffile in the .deb)
#   lib/systemd/system/pyprofd.service
#   share/doc/pyprofd/ (README.md, copyright)
# and the CPack settings of `make package` (cpack -G DEB; dpkg-shlibdeps works
# out the library dependencies). docs/development.md, "Installing".

include(GNUInstallDirs)

# the supported range, as the binary's help says it: from agent/python/pyversion.h
file(STRINGS ${PROJECT_SOURCE_DIR}/agent/python/pyversion.h pyprofd_minors
     REGEX "^#define PYVERSION_(MIN|MAX)_MINOR +[0-9]+")
string(REGEX REPLACE ".*MIN_MINOR +([0-9]+).*" "\\1" pyprofd_min "${pyprofd_minors}")
string(REGEX REPLACE ".*MAX_MINOR +([0-9]+).*" "\\1" pyprofd_max "${pyprofd_minors}")
set(PYPROFD_SUPPORTED "3.${pyprofd_min} to 3.${pyprofd_max}")

install(TARGETS pyprofd pyprofd-lite RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

find_program(HELP2MAN help2man)
if(HELP2MAN)
  foreach(prog IN ITEMS pyprofd pyprofd-lite)
    if(prog STREQUAL "pyprofd")
      set(what "continuous profiler for CPython ${PYPROFD_SUPPORTED}")
    else()
      set(what "record, dump and probe CPython processes (pyprofd without the agent)")
    endif()
    # compressed as Debian wants them, reproducibly (gzip -n: no name, no time)
    add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/man/${prog}.1.gz
      COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/man
      COMMAND ${HELP2MAN} --no-info --section=1 --name=${what} --version-string=${PROJECT_VERSION}
              --output=${CMAKE_BINARY_DIR}/man/${prog}.1 $<TARGET_FILE:${prog}>
      COMMAND gzip -9nf ${CMAKE_BINARY_DIR}/man/${prog}.1
      DEPENDS ${prog}
      COMMENT "man page of ${prog} (help2man)"
      VERBATIM)
    list(APPEND pyprofd_man_pages ${CMAKE_BINARY_DIR}/man/${prog}.1.gz)
  endforeach()
  add_custom_target(man ALL DEPENDS ${pyprofd_man_pages})
  install(FILES ${pyprofd_man_pages} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
else()
  message(STATUS "help2man not found: no man page (apt-get install help2man)")
endif()

install(FILES deploy/bash-completion/pyprofd
        DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/bash-completion/completions)
install(FILES deploy/bash-completion/pyprofd
        DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/bash-completion/completions
        RENAME pyprofd-lite)
# /etc/pyprofd for the prefix /usr (the package), PREFIX/etc/pyprofd else,
# decided when installing: `make install PREFIX=...` and CPack set the prefix
# then, not at configure time
install(CODE "
  if(CMAKE_INSTALL_PREFIX STREQUAL \"/usr\")
    set(pyprofd_etc /etc/pyprofd)
  else()
    set(pyprofd_etc \"\${CMAKE_INSTALL_PREFIX}/etc/pyprofd\")
  endif()
  file(INSTALL DESTINATION \"\${pyprofd_etc}\" TYPE FILE
       FILES \"${PROJECT_SOURCE_DIR}/config/pyprofd.yml\")
")
install(FILES deploy/systemd/pyprofd.service DESTINATION lib/systemd/system)
install(FILES README.md deploy/debian/copyright DESTINATION ${CMAKE_INSTALL_DOCDIR})
# Debian wants the changelog compressed, reproducibly (no name, no time)
# (a native package: changelog.gz)
add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/changelog.gz
  COMMAND gzip -9n -c ${PROJECT_SOURCE_DIR}/deploy/debian/changelog > ${CMAKE_BINARY_DIR}/changelog.gz
  DEPENDS ${PROJECT_SOURCE_DIR}/deploy/debian/changelog
  VERBATIM)
add_custom_target(debian_changelog ALL DEPENDS ${CMAKE_BINARY_DIR}/changelog.gz)
install(FILES ${CMAKE_BINARY_DIR}/changelog.gz DESTINATION ${CMAKE_INSTALL_DOCDIR})

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME pyprofd)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
# no real address exists yet: a reserved .invalid domain (RFC 2606) says so
set(PYPROFD_DEB_MAINTAINER "pyprofd developers <pyprofd@pyprofd.invalid>"
    CACHE STRING "Maintainer of the Debian package")
set(CPACK_PACKAGE_CONTACT "${PYPROFD_DEB_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "continuous profiling agent for CPython ${PYPROFD_SUPPORTED}")
set(CPACK_PACKAGE_DESCRIPTION "pyprofd finds every CPython ${PYPROFD_SUPPORTED} process on a
machine by its runtime, samples the stacks of each from outside by reading its
memory, guided by the interpreter's own debug offsets table (or layouts
generated from the headers of versions before 3.13), and ships pprof
profiles to Grafana Pyroscope or Parca or serves them over HTTP. It also
records and dumps single processes from the command line.")
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${CMAKE_CURRENT_SOURCE_DIR}/deploy/debian/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
