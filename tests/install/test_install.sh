#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# ctest test_install BUILD_DIR: what `make install` and `make package` make of
# a build tree. Installs BUILD_DIR under a scratch DESTDIR with the prefix /usr
# and with /opt/pyprofd, checks every file is where the docs say, that the man
# page renders, that bash completion completes commands, options, option
# values and PIDs, then builds the Debian package (cpack -G DEB) and checks
# its contents, its dependencies (dpkg-shlibdeps), that lintian reports no
# error, and that it installs (dpkg -i) into a fresh Debian root of this
# machine's suite, chroot, where pyprofd --version then runs. Exit 77
# (skipped) without help2man, cpack's DEB tools or lintian; only the fresh
# root check is skipped (saying why) without root, umoci or the package
# layer deploy/container/rootfs.sh caches.
set -euo pipefail
build=${1:?usage: test_install.sh BUILD_DIR}
build=$(cd "$build" && pwd)
for tool in help2man dpkg-deb dpkg-shlibdeps lintian cpack; do
	command -v "$tool" >/dev/null || {
		echo "test_install: $tool not found (scripts/bootstrap.sh installs it)" >&2
		exit 77
	}
done
tmp=$(mktemp -d)
trap 'rm -rf --one-file-system "$tmp"' EXIT
fail=0
pass=0
skipped=0
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
skip() { # name, why
	echo "SKIP: $1: $2" >&2
	skipped=$((skipped + 1))
}

# --- make install, prefix /usr and /opt/pyprofd -------------------------------
DESTDIR=$tmp/usr-root cmake --install "$build" --prefix /usr >/dev/null
DESTDIR=$tmp/opt-root cmake --install "$build" --prefix /opt/pyprofd >/dev/null
expect_files() { # root, prefix, etc dir
	local root=$1 p=$2 etc=$3 f missing=()
	for f in "$p/bin/pyprofd" "$p/bin/pyprofd-lite" "$p/share/man/man1/pyprofd.1.gz" \
		"$p/share/man/man1/pyprofd-lite.1.gz" "$p/share/bash-completion/completions/pyprofd" \
		"$p/share/bash-completion/completions/pyprofd-lite" "$etc/pyprofd/pyprofd.yml" \
		"$p/lib/systemd/system/pyprofd.service" "$p/share/doc/pyprofd/copyright" \
		"$p/share/doc/pyprofd/changelog.gz" "$p/share/doc/pyprofd/README.md"; do
		[[ -f $root$f ]] || missing+=("$f")
	done
	((${#missing[@]} == 0)) || {
		echo "missing under $root: ${missing[*]}" >&2
		return 1
	}
	[[ -x $root$p/bin/pyprofd ]]
}
check "install --prefix /usr: the files, config in /etc" expect_files "$tmp/usr-root" /usr /etc
check "install --prefix /opt/pyprofd: the files, config in PREFIX/etc" \
	expect_files "$tmp/opt-root" /opt/pyprofd /opt/pyprofd/etc
check "the installed binary runs" "$tmp/usr-root/usr/bin/pyprofd" --version
check "the config installed is the shipped one" cmp "$tmp/usr-root/etc/pyprofd/pyprofd.yml" \
	"$(dirname "$0")/../../config/pyprofd.yml"

man_page() {
	local text
	text=$(zcat "$tmp/usr-root/usr/share/man/man1/pyprofd.1.gz")
	[[ $text == *'.SH NAME'* && $text == *'continuous profiler for CPython'* ]] || return 1
	[[ $text == *record* && $text == *agent* && $text == *dump* ]] || return 1
	if command -v man >/dev/null; then
		text=$(MANWIDTH=80 man -l "$tmp/usr-root/usr/share/man/man1/pyprofd.1.gz" 2>/dev/null)
		[[ $text == 'PYPROFD(1)'* || $text == *$'\nPYPROFD(1)'* ]]
	fi
}
check "man page: generated from --help, renders" man_page

# --- bash completion ------------------------------------------------------------
complete_words() { # the words typed so far (the last one being completed)
	bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _pyprofd
		printf "%s\n" "${COMPREPLY[@]}"' _ \
		"$tmp/usr-root/usr/share/bash-completion/completions/pyprofd" "$@"
}
completes() { # expected word, then the words
	local want=$1
	shift
	local words
	words=$(complete_words "$@")
	grep -qx -- "$want" <<<"$words"
}
check "completion: commands" completes record pyprofd rec
check "completion: agent only for pyprofd" completes agent pyprofd ag
check "completion: record's options" completes --opcodes pyprofd record --op
check "completion: --mode's values" completes exception pyprofd record --mode ex
check "completion: a PID" completes "$$" pyprofd dump "$$"
registered() {
	bash -c "source '$1'; complete -p pyprofd pyprofd-lite" >/dev/null
}
check "completion: registered for both programs" \
	registered "$tmp/usr-root/usr/share/bash-completion/completions/pyprofd-lite"

# --- the Debian package ------------------------------------------------------------
(cd "$tmp" && cpack -G DEB -B "$tmp/pkg" --config "$build/CPackConfig.cmake" >"$tmp/cpack.log" 2>&1) || {
	cat "$tmp/cpack.log" >&2
	exit 1
}
deb=$(find "$tmp/pkg" -maxdepth 1 -name 'pyprofd_*.deb' -print -quit)
check "cpack made a .deb" test -n "$deb"
# (each reads the whole output first: under pipefail, grep -q leaving at the
# first match could kill the writer with SIGPIPE and fail the pipeline)
deb_has() {
	local list
	list=$(dpkg-deb -c "$deb" | awk '{print $6}')
	grep -qx -- "$1" <<<"$list"
}
check "the .deb: /usr/bin/pyprofd" deb_has ./usr/bin/pyprofd
check "the .deb: /etc/pyprofd/pyprofd.yml" deb_has ./etc/pyprofd/pyprofd.yml
check "the .deb: the man page" deb_has ./usr/share/man/man1/pyprofd.1.gz
check "the .deb: the systemd unit" deb_has ./usr/lib/systemd/system/pyprofd.service
conffile() {
	local list
	list=$(dpkg-deb -I "$deb" conffiles)
	grep -qx /etc/pyprofd/pyprofd.yml <<<"$list"
}
check "the .deb: the config is a conffile" conffile
shlibdeps() {
	local depends
	depends=$(dpkg-deb -f "$deb" Depends)
	grep -q libcurl4 <<<"$depends"
}
check "the .deb: library dependencies from dpkg-shlibdeps" shlibdeps
lintian_clean() {
	local out
	out=$(lintian "$deb" 2>&1 | grep -v 'running with root privileges' || true)
	if grep -q '^E: ' <<<"$out"; then
		echo "$out" >&2
		return 1
	fi
	[[ -z $out ]] || echo "lintian (no errors): $out" >&2
}
check "lintian: no errors" lintian_clean

# --- the .deb in a fresh Debian root ---------------------------------------------
# The root is the package layer deploy/container/rootfs.sh caches for the
# Containerfile (mmdebstrap --variant=minbase of this machine's suite with the
# runtime libraries: dpkg, and what the .deb's Depends name), unpacked afresh
# under $tmp. test_containers builds that layer the first time (minutes, from
# the network), so without it the check is skipped, saying why. Nothing is
# mounted where it could outlive the test: dpkg -i runs without /proc, and
# pyprofd (an ASan build needs a /proc) in a private mount and PID namespace.
image_base() { # the layer's OCI layout (tag base) on stdout, or why not (status 1)
	local cache=${PYPROFD_CACHE_DIR:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/pyprofd}
	local suite packages stamp words p best=''
	# shellcheck source=/dev/null
	suite=$(. /etc/os-release && printf '%s' "${VERSION_CODENAME:-}")
	packages=$("$(dirname "$0")/../../deploy/container/rootfs.sh" --print-packages) || {
		echo "rootfs.sh --print-packages failed"
		return 1
	}
	# Its stamp (recipe=N suite=S arch=A variant=minbase packages=P1 P2 ...
	# dpkg=...) names this suite and architecture and every runtime package;
	# the newest such one if a recipe change left several.
	for stamp in "$cache"/image-base-*/stamp; do
		[[ -f $stamp && -f ${stamp%/stamp}/oci/index.json ]] || continue
		words=" $(tr '=\n' '  ' <"$stamp") "
		[[ $words == *" suite $suite "* && $words == *" arch $(dpkg --print-architecture) "* ]] ||
			continue
		for p in $packages; do
			[[ $words == *" $p "* ]] || continue 2
		done
		[[ -n $best && $best -nt $stamp ]] || best=$stamp
	done
	[[ -n $best ]] || {
		echo "no package layer of Debian ${suite:-?} with the Containerfile's runtime packages in $cache (deploy/container/rootfs.sh builds it; test_containers runs it)"
		return 1
	}
	printf '%s\n' "${best%/stamp}/oci"
}
fresh_root_install() {
	local oci=$1 root=$tmp/fresh-root out
	# (rootfs.sh holds this lock while it rebuilds the layer)
	flock --shared "${oci%/oci}.lock" umoci raw unpack --image "$oci:base" "$root" \
		>"$tmp/umoci.log" 2>&1 || {
		cat "$tmp/umoci.log" >&2
		return 1
	}
	cp -- "$deb" "$root/tmp/pyprofd.deb" || return 1
	# dpkg -i exits non-zero when a dependency is missing (the package is
	# left unconfigured)
	out=$(PATH=/usr/sbin:/usr/bin:/sbin:/bin chroot "$root" dpkg -i /tmp/pyprofd.deb 2>&1) || {
		echo "dpkg -i in the fresh root failed: $out" >&2
		return 1
	}
	out=$(PATH=/usr/sbin:/usr/bin:/sbin:/bin unshare --mount --pid --fork \
		--mount-proc="$root/proc" chroot "$root" pyprofd --version 2>"$tmp/version.err") || {
		echo "pyprofd --version in the fresh root failed: $out $(<"$tmp/version.err")" >&2
		return 1
	}
	[[ $out == 'pyprofd, version '* ]] || {
		echo "pyprofd --version in the fresh root printed: $out $(<"$tmp/version.err")" >&2
		return 1
	}
}
name="the .deb: dpkg -i into a fresh Debian root (chroot), pyprofd --version runs there"
if ((EUID != 0)); then
	skip "$name" "needs root (chroot, umoci unpack)"
elif ! command -v umoci >/dev/null; then
	skip "$name" "umoci not found (scripts/bootstrap.sh installs it)"
elif ! oci=$(image_base); then
	skip "$name" "$oci"
else
	check "$name" fresh_root_install "$oci"
fi

echo "$pass passed, $fail failed, $skipped skipped"
((fail == 0))
