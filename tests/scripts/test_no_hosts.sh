#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Unit test (ctest test_no_hosts): no package registry or mirror host name is
# written in the tree (the mirror comes from the machine's own apt sources),
# and scripts/python-rootfs.sh finds the Debian archive in apt sources of
# both formats, refuses a machine without one, and takes the override.
set -euo pipefail
src=${PYPROFD_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
fail=0
pass=0
check() { # name, then the command
	local name=$1
	shift
	if "$@"; then
		pass=$((pass + 1))
	else
		echo "FAIL: $name" >&2
		fail=$((fail + 1))
	fi
}

hosts='deb[.]debian[.]org|security[.]debian[.]org|ftp[.]debian[.]org|snapshot[.]debian[.]org|archive[.]ubuntu[.]com|security[.]ubuntu[.]com|registry[.]npmjs[.]org|pypi[.]org|files[.]pythonhosted[.]org|proxy[.]golang[.]org'
no_hosts() {
	local hits
	hits=$(git -C "$src" grep -nIE "$hosts" -- . ':!tests/scripts/test_no_hosts.sh' 2>/dev/null || true)
	[[ -z $hits ]] || {
		echo "$hits" >&2
		return 1
	}
}
check "no registry or mirror host in the tree" no_hosts

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mirror() { PYPROFD_APT_SOURCES_DIR=$1 "$src/scripts/python-rootfs.sh" --print-mirror 2>/dev/null; }

mkdir -p "$tmp/a/sources.list.d"
cat >"$tmp/a/sources.list.d/debian.sources" <<'SRC'
# a comment
Types: deb
URIs: http://mirror.example/debian-security
Suites: trixie-security
Components: main

Types: deb deb-src
URIs: https://mirror.example/debian/
Suites: trixie trixie-updates
Components: main
SRC
check "deb822: the archive, not security" [ "$(mirror "$tmp/a")" = https://mirror.example/debian ]

mkdir -p "$tmp/b/sources.list.d"
printf 'deb-src http://src.example/debian trixie main\ndeb [arch=amd64 signed-by=/k.gpg] http://one.example/debian/ trixie main\n' >"$tmp/b/sources.list"
check "one-line format with options" [ "$(mirror "$tmp/b")" = http://one.example/debian ]

mkdir -p "$tmp/c/sources.list.d"
printf 'Types: deb\nURIs: http://archive.example/ubuntu\nSuites: noble noble-updates\n' >"$tmp/c/sources.list.d/ubuntu.sources"
check "no Debian archive: refused" bash -c "! PYPROFD_APT_SOURCES_DIR=$tmp/c $src/scripts/python-rootfs.sh --print-mirror >/dev/null 2>&1"
check "the override wins" [ "$(PYPROFD_DEBIAN_MIRROR=http://override.example/debian mirror "$tmp/c")" = http://override.example/debian ]

echo "$pass passed, $fail failed"
((fail == 0))
