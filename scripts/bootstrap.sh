#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Install every Debian/Ubuntu package that pyprofd needs to build and test.
# Idempotent: when everything is already installed it does nothing, quickly
# and silently. Works on Debian 12+ and Ubuntu 22.04+.
set -euo pipefail

# Everything the project needs, by purpose. Keep this the only list.
PACKAGES=(
	# build
	gcc
	g++
	make
	cmake
	pkg-config
	clang
	libclang-rt-dev # libFuzzer and sanitizer runtimes for clang
	# libraries
	libcurl4-openssl-dev
	libprotobuf-c-dev
	protobuf-c-compiler
	zlib1g-dev
	libyaml-dev
	libdw-dev
	libcmocka-dev
	libmicrohttpd-dev
	libpcre2-dev
	libjson-c-dev
	libmd-dev # MD5 for relabeling's hashmod
	# tooling
	clang-format
	clang-tidy
	cppcheck
	shellcheck
	help2man # the man page, from pyprofd --help (make install, the .deb)
	lintian  # checks the .deb (tests/install)
	tmux     # pyprofd top is tested in a real terminal (tests/integration/test_top.py)
	dpkg-dev # dpkg-shlibdeps: the .deb's library dependencies
	nodejs # npm fetches the flame graph library at build time (scripts/fetch-web-assets.sh)
	openssl # ... and its integrity hash is checked
	chromium # the HTML flame graph and the agent's page are tested in a headless browser
	chromium-driver # (both OPTIONAL below)
	python3-selenium
	python3-jsonschema # the speedscope files are checked against the schema speedscope ships
	golang-go # go tool pprof reads our profiles in tests
	prometheus # promtool check metrics validates /metrics in tests
	python3-grpcio # a real gRPC server receives Parca pushes in tests
	python3-protobuf
	python3 # test drivers and vector generators run on Debian's own /usr/bin/python3
	gunicorn # real servers profiled in tests: gunicorn with Flask workers (pre-fork, respawn)
	python3-flask
	uwsgi-core # ... and uWSGI's Python plugin, whose workers fork without CPython's hook
	uwsgi-plugin-python3
	python3.11 # Debian 12's own interpreter: a live CPython 3.11 target (OPTIONAL)
	python3.11-dbg # ... and its debug build
	python3.11-dev # its headers: the generated 3.11 layout is checked against them
	austin # a peer profiler, compared with pyprofd on a live CPython 3.9 (tests, bench)
	# test rootfs (scripts/python-rootfs.sh, scripts/run-target.sh)
	debootstrap
	util-linux # unshare, setsid
	systemd # systemd-analyze checks deploy/systemd/pyprofd.service (tests/deploy)
	procps
	ca-certificates
	debian-archive-keyring
	# container image and real-container tests (deploy/container/rootfs.sh,
	# tests/containers/): the image's filesystem without a container engine,
	# packed as an OCI layout and run with runc. Docker's default seccomp
	# profile is not a package here: scripts/seccomp-profile.sh takes it out of
	# golang-github-docker-docker-dev's .deb (apt-get download) into the cache,
	# as installing that package would pull some 250 Go source packages
	mmdebstrap
	umoci
	runc
)

# Packages a distribution may not have as a .deb (Ubuntu ships chromium as a
# snap): when apt knows no candidate for one once its lists are fresh (after
# this script's apt-get update), it is left out, saying so, and the tests
# that need it skip, saying why (tests/integration/test_web.py). That
# verdict is kept in UNAVAILABLE_FILE, so later runs neither update the lists
# again for it nor say it again; remove the file to have it looked for anew.
OPTIONAL=(chromium chromium-driver python3.11 python3.11-dbg python3.11-dev) # python3.11*: Debian 12 only
UNAVAILABLE_FILE=${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/pyprofd/bootstrap-unavailable

prog=bootstrap

usage() {
	cat <<EOF
usage: scripts/bootstrap.sh [--check] [-v]

Install the Debian packages pyprofd needs to build and test (as root).

  --check    only report missing packages; exit 1 if any are missing
  -v         say so when everything is already installed
  -h, --help show this help
EOF
}

die() {
	printf '%s: %s\n' "$prog" "$*" >&2
	exit 1
}

check_only=0
verbose=0
while (($#)); do
	case $1 in
	--check) check_only=1 ;;
	-v | --verbose) verbose=1 ;;
	-h | --help)
		usage
		exit 0
		;;
	*)
		usage >&2
		die "unknown argument: $1"
		;;
	esac
	shift
done

# Ask dpkg once for all packages (much faster than one call per package).
# Unknown packages make dpkg-query complain and exit 1: that just means
# "not installed". A package can be listed once per architecture.
declare -A installed=()
while read -r pkg status; do
	if [[ $status == installed ]]; then
		installed[${pkg%%:*}]=1
	fi
done < <(dpkg-query -W -f='${Package} ${db:Status-Status}\n' "${PACKAGES[@]}" 2>/dev/null || true)

# Whether $1 is an optional package.
optional() {
	local o
	for o in "${OPTIONAL[@]}"; do
		[[ $o == "$1" ]] && return 0
	done
	return 1
}

# Whether apt has no candidate for optional package $1 in its lists as they
# are. (The output is read whole: with pipefail, grep -q leaving early would
# kill apt-cache with SIGPIPE and fail the pipeline, now and then.)
no_candidate() {
	local policy
	optional "$1" || return 1
	policy=$(apt-cache policy "$1" 2>/dev/null || true)
	[[ ! $policy =~ Candidate:\ [^\(] ]]
}

# Whether an earlier run found no candidate for optional package $1 after
# updating the lists.
known_unavailable() {
	optional "$1" && [[ -f $UNAVAILABLE_FILE ]] && grep -qx -- "$1" "$UNAVAILABLE_FILE"
}

missing=()
for pkg in "${PACKAGES[@]}"; do
	if [[ -z ${installed[$pkg]:-} ]] && ! known_unavailable "$pkg"; then
		missing+=("$pkg")
	fi
done
# Debian's nodejs comes without npm (package npm); other builds of nodejs
# (the machine's own apt sources may carry one) bundle it and conflict with it.
if ! command -v npm >/dev/null && [[ -z ${installed[npm]:-} ]]; then
	missing+=(npm)
fi

if ((${#missing[@]} == 0)); then
	if ((verbose)); then
		left=()
		for pkg in "${PACKAGES[@]}"; do
			[[ -z ${installed[$pkg]:-} ]] && left+=("$pkg")
		done
		if ((${#left[@]} > 0)); then
			printf '%s: all %d packages are installed but %s (not in the apt sources)\n' \
				"$prog" "${#PACKAGES[@]}" "${left[*]}" >&2
		else
			printf '%s: all %d packages are installed\n' "$prog" "${#PACKAGES[@]}" >&2
		fi
	fi
	exit 0
fi

if ((check_only)); then
	die "missing packages: ${missing[*]}"
fi

if ((EUID != 0)); then
	die "cannot install missing packages: ${missing[*]}: not root; run scripts/bootstrap.sh as root (e.g. with sudo)"
fi

printf '%s: installing %s\n' "$prog" "${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get -q update >&2 ||
	die "cannot run apt-get update: exit status $?"
wanted=("${missing[@]}")
missing=()
unavailable=()
for pkg in "${wanted[@]}"; do
	if no_candidate "$pkg"; then
		printf '%s: %s: no package in the apt sources; the tests that need it will skip (remove %s to look again)\n' \
			"$prog" "$pkg" "$UNAVAILABLE_FILE" >&2
		unavailable+=("$pkg")
	else
		missing+=("$pkg")
	fi
done
if ((${#unavailable[@]} > 0)); then
	mkdir -p "$(dirname "$UNAVAILABLE_FILE")"
	printf '%s\n' "${unavailable[@]}" >"$UNAVAILABLE_FILE"
else
	rm -f "$UNAVAILABLE_FILE"
fi
((${#missing[@]} > 0)) || exit 0
apt-get -q install -y --no-install-recommends "${missing[@]}" >&2 ||
	die "cannot install packages with apt-get: exit status $?: ${missing[*]}"
printf '%s: installed %d packages\n' "$prog" "${#missing[@]}" >&2
