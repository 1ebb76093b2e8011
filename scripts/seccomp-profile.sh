#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Docker's default seccomp profile (profiles/seccomp/default.json), as the
# machine's own apt archive ships it in golang-github-docker-docker-dev, for
# the container tests (tests/containers/runclib.py). Prints the path of the
# JSON file on stdout: profile=$(scripts/seccomp-profile.sh)
#
# The package is not installed (its dependencies are some 250 Go source
# packages): its .deb (about 1 MB) is fetched with apt-get download, which
# checks it against apt's signed package index, and only the profile is
# taken out of it, into the cache, once per package version. The profile is
# never copied into the source tree.
set -euo pipefail

prog=seccomp-profile
PACKAGE=golang-github-docker-docker-dev
MEMBER=./usr/share/gocode/src/github.com/docker/docker/profiles/seccomp/default.json

usage() {
	cat <<EOF
usage: scripts/seccomp-profile.sh

Print the path of Docker's default seccomp profile (default.json of the
$PACKAGE version apt would install here), fetching the package's .deb with
apt-get download and extracting only that file on first use. Needs apt's
package lists (apt-get update) and, the first time, the network; root is not
needed.

environment:
  PYPROFD_CACHE_DIR  cache directory (default: \${XDG_CACHE_HOME:-\$HOME/.cache}/pyprofd);
                     the profile is docker-seccomp-<version>.json in it
EOF
}

die() {
	printf '%s: %s\n' "$prog" "$*" >&2
	exit 1
}

say() {
	printf '%s: %s\n' "$prog" "$*" >&2
}

case ${1:-} in
'') ;;
-h | --help)
	usage
	exit 0
	;;
*)
	usage >&2
	die "unknown argument: $1"
	;;
esac

export LC_ALL=C

cache_dir=${PYPROFD_CACHE_DIR:-}
if [[ -z $cache_dir ]]; then
	cache_home=${XDG_CACHE_HOME:-}
	if [[ -z $cache_home ]]; then
		[[ -n ${HOME:-} ]] ||
			die "cannot choose a cache directory: HOME is not set (set PYPROFD_CACHE_DIR)"
		cache_home=$HOME/.cache
	fi
	cache_dir=$cache_home/pyprofd
fi

# The version apt would install, and the SHA256 its signed index gives for it.
record=$(apt-cache show --no-all-versions "$PACKAGE" 2>/dev/null) || record=
version=$(awk '/^Version: / {print $2; exit}' <<<"$record")
sha256=$(awk '/^SHA256: / {print $2; exit}' <<<"$record")
[[ -n $version && -n $sha256 ]] ||
	die "apt knows no downloadable $PACKAGE: run apt-get update (as root), or add the Debian (or Ubuntu universe) archive that has it to apt's sources"

# apt's own spelling of an epoch in a file name
out=$cache_dir/docker-seccomp-${version//:/%3a}.json
if [[ -s $out ]]; then
	printf '%s\n' "$out"
	exit 0
fi

mkdir -p -- "$cache_dir" || die "cannot create $cache_dir"
tmp=$(mktemp -d "$cache_dir/docker-seccomp.tmp.XXXXXX") || die "cannot create a directory in $cache_dir"
trap 'rm -rf -- "$tmp"' EXIT
# as root, apt downloads as user _apt, which must be able to write here
if ((EUID == 0)) && getent passwd _apt >/dev/null; then
	chown _apt "$tmp"
fi

say "fetching $PACKAGE $version with apt-get download (once; about 1 MB)"
if ! (cd "$tmp" && apt-get -q download "$PACKAGE=$version") >"$tmp/apt.log" 2>&1; then
	cat -- "$tmp/apt.log" >&2
	die "cannot download $PACKAGE $version with apt-get download: check the network and apt's sources, or run apt-get update (as root)"
fi
debs=("$tmp"/*.deb)
[[ ${#debs[@]} == 1 && -f ${debs[0]} ]] || die "apt-get download left no single .deb in $tmp"
deb=${debs[0]}
# apt-get download already checked this; say it in the script too
got=$(sha256sum -- "$deb" | cut -d ' ' -f 1)
[[ $got == "$sha256" ]] ||
	die "$deb: SHA256 $got is not the $sha256 of apt's index for $PACKAGE $version"

dpkg-deb --fsys-tarfile "$deb" | tar -xO -f - "$MEMBER" >"$tmp/default.json" ||
	die "cannot extract $MEMBER from $deb"
python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
if not isinstance(p.get("syscalls"), list) or "defaultAction" not in p:
    sys.exit("no defaultAction or syscalls list")
' "$tmp/default.json" ||
	die "$MEMBER of $PACKAGE $version is not a seccomp profile"
chmod 0644 "$tmp/default.json"
mv -f -- "$tmp/default.json" "$out" || die "cannot write $out"
say "Docker's default seccomp profile of $PACKAGE $version in $out"
printf '%s\n' "$out"
