# SPDX-License-Identifier: MIT
#
# Every dependency is a Debian package (scripts/bootstrap.sh installs them) found
# through pkg-config. Found up front so a missing package fails at configure time
# with its name, not halfway through a build.

find_package(PkgConfig REQUIRED)
set(THREADS_PREFER_PTHREAD_FLAG ON)
find_package(Threads REQUIRED)
pkg_check_modules(CURL       REQUIRED IMPORTED_TARGET libcurl)
pkg_check_modules(PROTOBUFC  REQUIRED IMPORTED_TARGET libprotobuf-c)
pkg_check_modules(ZLIB       REQUIRED IMPORTED_TARGET zlib)
pkg_check_modules(YAML       REQUIRED IMPORTED_TARGET yaml-0.1)
pkg_check_modules(MHD        REQUIRED IMPORTED_TARGET libmicrohttpd)
pkg_check_modules(JSONC      REQUIRED IMPORTED_TARGET json-c)
pkg_check_modules(PCRE2      REQUIRED IMPORTED_TARGET libpcre2-8)
pkg_check_modules(MD         REQUIRED IMPORTED_TARGET libmd)
pkg_check_modules(DW         REQUIRED IMPORTED_TARGET libdw)
if(PYPROFD_TESTS)
  pkg_check_modules(CMOCKA   REQUIRED IMPORTED_TARGET cmocka)
endif()
