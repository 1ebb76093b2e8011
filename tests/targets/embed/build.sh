#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Build tests/targets/embed/embed.c against the shared libpython3.X of the
# test rootfs (scripts/python-rootfs.sh) with the host's gcc, using the rootfs
# as sysroot (its libc6-dev, its python3.X-dev headers), into
# OUTDIR/embedder-3.X. The result runs inside the rootfs (chroot), e.g. copied
# to ROOTFS/pyprofd-targets/embedder-3.X. Its name has no "python" in it on
# purpose. Prints the path of the binary.
#
# usage: tests/targets/embed/build.sh 3.X OUTDIR
#   PYPROFD_ROOTFS  the rootfs (default: scripts/python-rootfs.sh --print-path)
#   CC              the compiler (default: gcc)
set -euo pipefail

prog=embed/build.sh
die() {
	printf '%s: %s\n' "$prog" "$*" >&2
	exit 1
}

(($# == 2)) || die "usage: build.sh 3.X OUTDIR"
ver=$1
out=$2
[[ $ver =~ ^3\.[0-9]+$ ]] || die "bad Python version $ver: want 3.X"

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source_dir=$(cd "$here/../../.." && pwd)
rootfs=${PYPROFD_ROOTFS:-}
if [[ -z $rootfs ]]; then
	rootfs=$("$source_dir/scripts/python-rootfs.sh" --print-path) ||
		die "cannot find the rootfs path (scripts/python-rootfs.sh --print-path failed)"
fi
[[ -d $rootfs ]] || die "no rootfs at $rootfs: run scripts/python-rootfs.sh (as root) first"
rootfs=$(realpath -- "$rootfs")
multiarch=x86_64-linux-gnu
[[ -f $rootfs/usr/include/python$ver/Python.h ]] ||
	die "no python$ver headers in $rootfs (python$ver-dev): rebuild the rootfs"
[[ -e $rootfs/usr/lib/$multiarch/libpython$ver.so ]] ||
	die "no libpython$ver.so in $rootfs/usr/lib/$multiarch (libpython$ver-dev): rebuild the rootfs"

mkdir -p -- "$out"
bin=$out/embedder-$ver
tmp=$(mktemp "$out/.embedder-$ver.XXXXXX")
trap 'rm -f -- "$tmp"' EXIT

# "=DIR" is DIR inside the sysroot. Debian's python3.X/pyconfig.h includes the
# multiarch one from <x86_64-linux-gnu/python3.X/pyconfig.h>, found through
# the sysroot's /usr/include. -rpath-link lets ld find libpython's own
# dependencies in the rootfs, not on the host.
"${CC:-gcc}" --sysroot="$rootfs" -std=c11 -O1 -g -Wall -Wextra -Werror \
	-isystem "=/usr/include/python$ver" \
	-o "$tmp" "$here/embed.c" \
	-L"=/usr/lib/$multiarch" -Wl,-rpath-link,"$rootfs/usr/lib/$multiarch" \
	-Wl,-rpath-link,"$rootfs/lib/$multiarch" \
	"-lpython$ver"
chmod 755 -- "$tmp"
mv -f -- "$tmp" "$bin"
trap - EXIT
printf '%s\n' "$bin"
