#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Fetch the flame graph library that pyprofd's HTML report and the agent's
# page embed (web/CMakeLists.txt runs this at build time), from the npm
# registry that npm is configured with. Nothing fetched is checked into the
# tree. Each package is pinned by version and by its registry integrity hash
# (sha512, as package-lock.json records it); a tarball whose hash differs is
# refused. Tarballs are kept in the cache, so a warm build does not touch
# the network.
#
# usage: scripts/fetch-web-assets.sh OUTDIR
#   writes OUTDIR/d3.min.js, OUTDIR/d3-flamegraph.min.js,
#   OUTDIR/d3-flamegraph.css and the packages' licences (OUTDIR/LICENSE.*)
#        scripts/fetch-web-assets.sh --speedscope OUTDIR
#   writes the speedscope app (its dist/release: index.html, its scripts and
#   file-format-schema.json) to OUTDIR/speedscope, for the tests that open
#   pyprofd's speedscope and gecko files in it (tests/integration/
#   test_formats.py); nothing of it is embedded in pyprofd
#
# environment:
#   PYPROFD_CACHE_DIR  cache directory (default: ${XDG_CACHE_HOME:-$HOME/.cache}/pyprofd)
set -euo pipefail

# name version integrity: the only list. To move a pin, take the version's
# "integrity" from `npm view NAME@VERSION dist.integrity`.
PACKAGES=(
	"d3 7.9.2 sha512-ZKb/mONPVKzaO5UlcWcwN8bS4ezvQaYu+bsou+XgNABdGC800kwH651ADTbbTxMPHW13UlvbQafdmJQDk1w7Mg=="
	"d3-flame-graph 5.0.0 sha512-ALZQ4at8Dex8HCoj9D5p5TY6gLNEc2vAZAy+NKO/6GLEfhYJmGxYuRClO6RPoplndyOHxQTPipdlGeMggkjtnQ=="
)
TEST_PACKAGES=(
	"speedscope 1.25.0 sha512-cpf9HWTZf1ijLXBJrk87Ve/54tnYx6rlf0gUThvn3ook6h63hLXVOQiMf44PT+XoV503cPfvfiT5gP5vojp6Ag=="
)

die() {
	echo "fetch-web-assets: $*" >&2
	exit 1
}

speedscope=false
if [[ ${1:-} == --speedscope ]]; then
	speedscope=true
	shift
fi
[[ $# -eq 1 ]] || die "usage: $0 [--speedscope] OUTDIR"
out=$1
cache=${PYPROFD_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pyprofd}/npm
mkdir -p "$out" "$cache"

# The integrity string of a file, in npm's "sha512-<base64>" form.
integrity_of() {
	printf 'sha512-%s' "$(openssl dgst -sha512 -binary "$1" | base64 -w0)"
}

# Puts NAME-VERSION.tgz in the cache, checked against INTEGRITY; prints its path.
fetch() {
	local name=$1 version=$2 want=$3
	local tgz="$cache/$name-$version.tgz"
	if [[ -f $tgz && $(integrity_of "$tgz") == "$want" ]]; then
		echo "$tgz"
		return
	fi
	command -v npm >/dev/null || die "npm is not installed (scripts/bootstrap.sh installs it)"
	local tmp
	tmp=$(mktemp -d "$cache/.fetch.XXXXXX")
	echo "fetch-web-assets: fetching $name@$version from the npm registry" >&2
	if ! (cd "$tmp" && npm pack --silent "$name@$version" >/dev/null 2>"$tmp/err"); then
		cat "$tmp/err" >&2
		rm -rf "$tmp"
		die "cannot fetch $name@$version (is the npm registry reachable?)"
	fi
	local got
	got=$(integrity_of "$tmp/$name-$version.tgz")
	if [[ $got != "$want" ]]; then
		rm -rf "$tmp"
		die "$name@$version: integrity $got is not the pinned $want; refusing it"
	fi
	mv "$tmp/$name-$version.tgz" "$tgz"
	rm -rf "$tmp"
	echo "$tgz"
}

# Extracts member PATH of a package tarball to DEST (atomically).
extract() {
	local tgz=$1 member=$2 dest=$3
	tar -xzOf "$tgz" "package/$member" >"$dest.tmp" || die "$tgz has no $member"
	mv "$dest.tmp" "$dest"
}

if $speedscope; then
	read -r name version want <<<"${TEST_PACKAGES[0]}"
	tgz=$(fetch "$name" "$version" "$want")
	tmp=$(mktemp -d "$out/.speedscope.XXXXXX")
	tar -xzf "$tgz" -C "$tmp" package/dist/release package/LICENSE || die "$tgz has no dist/release"
	rm -rf "$out/speedscope"
	mv "$tmp/package/dist/release" "$out/speedscope"
	mv "$tmp/package/LICENSE" "$out/speedscope/LICENSE"
	rm -rf "$tmp"
	exit 0
fi

for p in "${PACKAGES[@]}"; do
	read -r name version want <<<"$p"
	tgz=$(fetch "$name" "$version" "$want")
	case $name in
	d3)
		extract "$tgz" dist/d3.min.js "$out/d3.min.js"
		extract "$tgz" LICENSE "$out/LICENSE.d3"
		;;
	d3-flame-graph)
		extract "$tgz" dist/d3-flamegraph.umd.min.js "$out/d3-flamegraph.min.js"
		extract "$tgz" dist/d3-flamegraph.css "$out/d3-flamegraph.css"
		extract "$tgz" LICENSE "$out/LICENSE.d3-flame-graph"
		;;
	*) die "no files are known for $name" ;;
	esac
done
