#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Build once, then reuse, a minimal Debian root filesystem holding CPython
# 3.13, 3.14 and 3.15 (from Debian testing), so that tests can profile real
# interpreters. Prints the rootfs path on stdout: root=$(scripts/python-rootfs.sh)
#
# Three builds of each minor version, the ones users run:
#   /usr/bin/python3.X         Debian's default (GIL) build
#   /usr/bin/python3.Xd        Debian's debug build (python3.X-dbg: Py_DEBUG)
#   /usr/local/bin/python3.Xt  free-threaded (--disable-gil), which Debian does
#                              not package: built here from Debian's own source
#                              package of the installed version (plain, not
#                              PGO; several minutes each, once). A version
#                              whose source package the mirror does not have
#                              is recorded as unavailable in $FT_RECORD
#                              inside the rootfs, and its tests skip saying so.
# and the OpenTelemetry Python SDK (python3-opentelemetry-sdk and what it
# pulls in, pure Python) for the trace-context tests (docs/tracing.md).
#
# With --bullseye, a Debian 11 (bullseye) rootfs holds CPython 3.9 instead:
# /usr/bin/python3.9 and its debug build /usr/bin/python3.9d, the interpreter
# RHEL 9 / UBI 9 and Debian 11 nodes run (no free-threaded build: 3.9 has none).
#
# With --kube-tools, a second rootfs (same suite) holds instead the Kubernetes
# tools the deploy/ and API-client tests check against: kubectl (kustomize
# rendering), kustomize and python3-kubernetes (the official client and its
# API models). Debian 12 packages none of them in a usable version.
set -euo pipefail

prog=python-rootfs
script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source_tree=$(dirname "$script_dir")

# Bump RECIPE_VERSION whenever the way the rootfs is built changes, so that
# existing rootfs directories get rebuilt.
RECIPE_VERSION=2
PYTHON_VERSIONS=(3.13 3.14 3.15)
# What a plain --disable-gil build needs, beside the source package.
FT_BUILD_DEPS=(gcc make libc6-dev dpkg-dev xz-utils pkgconf libffi-dev zlib1g-dev libssl-dev
	libexpat1-dev libbz2-dev liblzma-dev libmpdec-dev libzstd-dev libsqlite3-dev)
FT_CONFIGURE=(--disable-gil --prefix=/usr/local --without-ensurepip --with-system-expat)
# One line per minor version: "3.X built SOURCE VERSION" or "3.X unavailable: WHY".
FT_RECORD=.pyprofd-free-threaded
SUITE=${PYPROFD_DEBIAN_SUITE:-forky}
APT_SOURCES_DIR=${PYPROFD_APT_SOURCES_DIR:-/etc/apt}
STAMP_NAME=.pyprofd-rootfs

KUBE_TOOLS=0
[[ " $* " == *" --kube-tools "* ]] && KUBE_TOOLS=1
BULLSEYE=0
if [[ " $* " == *" --bullseye "* ]]; then
	BULLSEYE=1
	SUITE=bullseye
	PYTHON_VERSIONS=(3.9)
fi
# python3-cffi-backend: debootstrap does not resolve the virtual packages
# python3-cryptography depends on (python3-cffi-backend-api-{min,max})
KUBE_TOOLS_INCLUDE=(kubectl kustomize python3-kubernetes python3-yaml python3-cffi-backend)
# The OpenTelemetry Python SDK (pure Python; importable by every python3.X of
# the tree): the trace-context tests read its current span from outside.
OTEL_SDK_INCLUDE=(python3-opentelemetry-sdk)

INCLUDE=()
if ((KUBE_TOOLS)); then
	INCLUDE=("${KUBE_TOOLS_INCLUDE[@]}")
else
	for v in "${PYTHON_VERSIONS[@]}"; do
		INCLUDE+=("python$v" "libpython$v" "python$v-dev" "python$v-dbg")
	done
	((BULLSEYE)) || INCLUDE+=("${OTEL_SDK_INCLUDE[@]}")
fi
include_list=$(IFS=,; echo "${INCLUDE[*]}")
RECIPE="pyprofd-rootfs recipe=$RECIPE_VERSION variant=minbase suite=$SUITE include=$include_list"
((KUBE_TOOLS || BULLSEYE)) || RECIPE+=" free-threaded=$(IFS=,; echo "${FT_BUILD_DEPS[*]}") configure=${FT_CONFIGURE[*]}"

usage() {
	cat <<EOF
usage: scripts/python-rootfs.sh [--kube-tools | --bullseye] [--print-path | --print-mirror | --rebuild]

Build (once, as root) or reuse a Debian $SUITE rootfs with CPython
${PYTHON_VERSIONS[*]} (default, debug and free-threaded builds), and print its
path on stdout. The first build takes about a minute plus several minutes per
free-threaded interpreter compiled from Debian's source packages.

  --kube-tools  the Kubernetes tools rootfs instead (${KUBE_TOOLS_INCLUDE[*]};
                default directory: \$PYPROFD_CACHE_DIR/kube-tools-$SUITE, or
                \$PYPROFD_KUBE_TOOLS_ROOTFS)
  --bullseye    a Debian 11 rootfs with CPython 3.9 (default and debug builds)
                instead (default directory: \$PYPROFD_CACHE_DIR/rootfs-bullseye,
                or \$PYPROFD_BULLSEYE_ROOTFS)
  --print-path  print the rootfs path without building anything
  --print-mirror print the Debian mirror a build would use
  --rebuild     rebuild the rootfs even if it is up to date
  -h, --help    show this help

environment:
  PYPROFD_ROOTFS         rootfs directory (default: \$PYPROFD_CACHE_DIR/rootfs-$SUITE)
  PYPROFD_CACHE_DIR      cache directory (default: \${XDG_CACHE_HOME:-\$HOME/.cache}/pyprofd)
  PYPROFD_DEBIAN_SUITE   Debian suite (default: forky)
  PYPROFD_APT_SOURCES_DIR  where the apt sources are read (default: /etc/apt)
  PYPROFD_DEBIAN_MIRROR  Debian mirror (default: the Debian archive this machine's own
                         apt sources name, in /etc/apt/sources.list.d/*.sources or
                         /etc/apt/sources.list)
EOF
}

die() {
	printf '%s: %s\n' "$prog" "$*" >&2
	exit 1
}

say() {
	printf '%s: %s\n' "$prog" "$*" >&2
}

# The Debian archive this machine's apt sources use: the first "deb" source
# with a plain suite (a codename such as bookworm, not bookworm-security or
# bookworm-updates) whose URI path ends in /debian. deb822 files
# (sources.list.d/*.sources) first, then the one-line format. Prints nothing
# when there is none (an Ubuntu machine: its archive has no Debian suites).
apt_debian_mirror() {
	local f line key value uris suites types found=
	for f in "$APT_SOURCES_DIR"/sources.list.d/*.sources; do
		[[ -r $f ]] || continue
		uris='' suites='' types=''
		# a blank line ends a stanza; a final one is added so the last ends too
		while IFS= read -r line || [[ -n $line ]]; do
			if [[ -z ${line//[[:space:]]/} ]]; then
				found=$(apt_pick "$types" "$uris" "$suites")
				[[ -n $found ]] && break
				uris='' suites='' types=''
				continue
			fi
			[[ $line == \#* || $line != *:* ]] && continue
			key=${line%%:*}
			value=${line#*:}
			case ${key,,} in
			types) types=$value ;;
			uris) uris=$value ;;
			suites) suites=$value ;;
			esac
		done < <(cat -- "$f"; echo)
		[[ -n $found ]] && break
	done
	if [[ -z $found ]]; then
		for f in "$APT_SOURCES_DIR"/sources.list "$APT_SOURCES_DIR"/sources.list.d/*.list; do
			[[ -r $f ]] || continue
			while read -r line; do
				[[ $line == 'deb '* ]] || continue
				line=${line#deb }
				# options: "deb [arch=amd64 signed-by=...] URI SUITE ..."
				[[ $line == '['*']'* ]] && line=${line#*]}
				local uri suite
				read -r uri suite _ <<<"$line"
				found=$(apt_pick deb "$uri" "$suite")
				[[ -n $found ]] && break 2
			done <"$f"
		done
	fi
	printf '%s' "$found"
}

# The first of the URIs $2 when the types $1 include deb and the suites $3
# include a plain codename and the URI's path ends in /debian.
apt_pick() {
	local types=$1 uris=$2 suites=$3 u s
	[[ " $types " == *" deb "* ]] || return 0
	for s in $suites; do
		[[ $s == *-* || $s == */* ]] && continue
		for u in $uris; do
			u=${u%/}
			if [[ $u == http://*/debian || $u == https://*/debian ]]; then
				printf '%s' "$u"
				return 0
			fi
		done
	done
}

if [[ ${1:-} == --print-mirror ]]; then
	m=${PYPROFD_DEBIAN_MIRROR:-$(apt_debian_mirror)}
	[[ -n $m ]] || die "no Debian archive in the apt sources under $APT_SOURCES_DIR; set PYPROFD_DEBIAN_MIRROR"
	printf '%s\n' "$m"
	exit 0
fi

print_path=0
rebuild=0
while (($#)); do
	case $1 in
	--print-path) print_path=1 ;;
	--rebuild) rebuild=1 ;;
	--kube-tools | --bullseye) ;;
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

if ((KUBE_TOOLS)) && [[ -n ${PYPROFD_KUBE_TOOLS_ROOTFS:-} ]]; then
	rootfs=$PYPROFD_KUBE_TOOLS_ROOTFS
elif ((BULLSEYE)) && [[ -n ${PYPROFD_BULLSEYE_ROOTFS:-} ]]; then
	rootfs=$PYPROFD_BULLSEYE_ROOTFS
elif ((!KUBE_TOOLS && !BULLSEYE)) && [[ -n ${PYPROFD_ROOTFS:-} ]]; then
	rootfs=$PYPROFD_ROOTFS
else
	cache_dir=${PYPROFD_CACHE_DIR:-}
	if [[ -z $cache_dir ]]; then
		cache_home=${XDG_CACHE_HOME:-}
		if [[ -z $cache_home ]]; then
			[[ -n ${HOME:-} ]] ||
				die "cannot choose a rootfs directory: HOME is not set (set PYPROFD_ROOTFS or PYPROFD_CACHE_DIR)"
			cache_home=$HOME/.cache
		fi
		cache_dir=$cache_home/pyprofd
	fi
	if ((KUBE_TOOLS)); then
		rootfs=$cache_dir/kube-tools-$SUITE
	else
		rootfs=$cache_dir/rootfs-$SUITE
	fi
fi
rootfs=$(realpath -m -- "$rootfs")
case $rootfs/ in
"$source_tree"/*) die "refusing to use $rootfs: it is inside the source tree $source_tree" ;;
esac
[[ $rootfs != / ]] || die "refusing to use / as the rootfs"

if ((print_path)); then
	printf '%s\n' "$rootfs"
	exit 0
fi

# True when the rootfs exists, was built by the current recipe and has every
# interpreter. Only bash builtins and tests: this is the fast path.
rootfs_is_current() {
	local stamp=$rootfs/$STAMP_NAME v
	[[ -f $stamp && $(<"$stamp") == "$RECIPE" ]] || return 1
	if ((KUBE_TOOLS)); then
		[[ -x $rootfs/usr/bin/kubectl && -x $rootfs/usr/bin/kustomize ]]
		return
	fi
	((BULLSEYE)) || [[ -f $rootfs/$FT_RECORD ]] || return 1
	for v in "${PYTHON_VERSIONS[@]}"; do
		[[ -x $rootfs/usr/bin/python$v && -x $rootfs/usr/bin/python${v}d ]] || return 1
	done
}

# Directories left by builds that were killed (SIGKILL skips our traps).
have_leftovers() {
	local d
	for d in "$rootfs".tmp.* "$rootfs".old.*; do
		[[ -d $d ]] && return 0
	done
	return 1
}

if ((!rebuild)) && rootfs_is_current; then
	# Fast path. Only when there is something to clean up, and only if
	# nobody is building right now, go on to the (slower) locked path below.
	if ! have_leftovers || ((EUID != 0)) || ! flock --nonblock "$rootfs.lock" true 2>/dev/null; then
		printf '%s\n' "$rootfs"
		exit 0
	fi
fi

((EUID == 0)) ||
	die "cannot build $rootfs: must run as root (debootstrap and chroot need it)"

# Print the mount points at or below $1, deepest first.
mounts_under() {
	local dir=$1 mnt
	# Field 5 of mountinfo is the mount point, with space, tab, newline and
	# backslash written as octal escapes.
	while read -r _ _ _ _ mnt _; do
		[[ $mnt != *\\* ]] || mnt=$(printf '%b' "$mnt")
		if [[ $mnt == "$dir" || $mnt == "$dir"/* ]]; then
			printf '%s\n' "$mnt"
		fi
	done </proc/self/mountinfo | sort -r
}

# Unmount whatever is mounted at or below $1; fail if anything stays mounted.
unmount_under() {
	local dir=$1 mnt left
	while IFS= read -r mnt; do
		say "unmounting leftover mount $mnt"
		umount -- "$mnt" 2>/dev/null || umount --lazy -- "$mnt" ||
			say "cannot unmount $mnt"
	done < <(mounts_under "$dir")
	left=$(mounts_under "$dir")
	[[ -z $left ]] || die "cannot remove $dir: still mounted: $(echo "$left" | tr '\n' ' ')"
}

# Print the PIDs of processes whose root directory is at or below $1
# (targets started by scripts/run-target.sh, in either mode).
processes_rooted_in() {
	local dir=$1 pids
	# find fails on processes that exit meanwhile: ignore that.
	pids=$({ find /proc/[0-9]*/root -maxdepth 0 \( -lname "$dir" -o -lname "$dir/*" \) 2>/dev/null || true; } |
		while IFS=/ read -r _ _ p _; do
			printf '%s ' "$p"
		done)
	printf '%s' "${pids% }"
}

# Safely delete a rootfs (or a half-built one): never through a mount.
remove_tree() {
	local dir=$1
	[[ -e $dir ]] || return 0
	unmount_under "$dir"
	rm -rf --one-file-system -- "$dir" || die "cannot remove $dir"
}

parent=$(dirname "$rootfs")
mkdir -p -- "$parent" || die "cannot create $parent"

MIRROR=${PYPROFD_DEBIAN_MIRROR:-$(apt_debian_mirror)}
[[ -n $MIRROR ]] ||
	die "cannot choose a Debian mirror: no Debian archive in this machine's apt sources ($APT_SOURCES_DIR/sources.list.d/*.sources, $APT_SOURCES_DIR/sources.list); set PYPROFD_DEBIAN_MIRROR to one"

# Make sure debootstrap and friends are installed.
"$script_dir/bootstrap.sh" || die "cannot install the packages needed to build the rootfs (scripts/bootstrap.sh failed)"

# Serialise concurrent runs; whoever waited re-checks the stamp afterwards.
lock=$rootfs.lock
exec {lock_fd}>"$lock" || die "cannot open lock file $lock"
if ! flock --nonblock "$lock_fd"; then
	say "waiting for another python-rootfs.sh run to finish (lock $lock)..."
	flock "$lock_fd" || die "cannot lock $lock"
fi

if ((!rebuild)) && rootfs_is_current && ! have_leftovers; then
	printf '%s\n' "$rootfs"
	exit 0
fi

# Directories left by runs that were killed (we hold the lock, so nobody is
# building right now), unless a target still runs in an old rootfs.
for stale in "$rootfs".tmp.* "$rootfs".old.*; do
	[[ -d $stale && -z $(processes_rooted_in "$stale") ]] || continue
	say "removing leftover $stale"
	remove_tree "$stale"
done

if ((!rebuild)) && rootfs_is_current; then
	printf '%s\n' "$rootfs"
	exit 0
fi

if [[ -e $rootfs ]]; then
	busy=$(processes_rooted_in "$rootfs")
	[[ -z $busy ]] ||
		die "cannot replace $rootfs: processes still run in it (stop them first): $busy"
fi

tmp=$(mktemp -d "$rootfs.tmp.XXXXXX") || die "cannot create a temporary directory next to $rootfs"
chmod 755 "$tmp"
log=$rootfs.log
cleanup() {
	if [[ -n ${tmp:-} && -e $tmp ]]; then
		remove_tree "$tmp"
	fi
}
build_pgid=
# On SIGINT/SIGTERM stop debootstrap and everything it started (its own
# process group) before the EXIT trap removes the half-built tree.
on_signal() {
	local i
	if [[ -n $build_pgid ]]; then
		kill -TERM -- "-$build_pgid" 2>/dev/null || true
		for ((i = 0; i < 100; i++)); do
			kill -0 -- "-$build_pgid" 2>/dev/null || break
			sleep 0.05
		done
		kill -KILL -- "-$build_pgid" 2>/dev/null || true
	fi
	say "interrupted"
	exit "$1"
}
trap cleanup EXIT
trap 'on_signal 130' INT
trap 'on_signal 143' TERM

script=/usr/share/debootstrap/scripts/$SUITE
[[ -e $script ]] || script=/usr/share/debootstrap/scripts/sid
debootstrap_args=(--variant=minbase "--include=$include_list")
# Explicit keyring, so that this also works on Ubuntu hosts.
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
[[ -f $keyring ]] && debootstrap_args+=("--keyring=$keyring")

if ((KUBE_TOOLS)); then
	say "building Debian $SUITE rootfs with ${INCLUDE[*]} in $rootfs (a few minutes, once)..."
else
	if ((BULLSEYE)); then
		say "building Debian $SUITE rootfs with CPython ${PYTHON_VERSIONS[*]} in $rootfs (once: about a minute)..."
	else
		say "building Debian $SUITE rootfs with CPython $(IFS=/; echo "${PYTHON_VERSIONS[*]}") in $rootfs (once: about a minute, then the free-threaded builds)..."
	fi
fi
start=$SECONDS
# In the background (so that signals reach our traps at once) and in its own
# process group (so that on_signal can stop all of it). A background child of
# a non-interactive shell is no process group leader: setsid does not fork.
setsid debootstrap "${debootstrap_args[@]}" "$SUITE" "$tmp" "$MIRROR" "$script" </dev/null >"$log" 2>&1 &
build_pgid=$!
status=0
wait "$build_pgid" || status=$?
build_pgid=
if ((status != 0)); then
	say "cannot run debootstrap: exit status $status; last lines of $log:"
	tail -n 25 "$log" >&2 || true
	if [[ -f $tmp/debootstrap/debootstrap.log ]]; then
		say "last lines of debootstrap.log:"
		tail -n 25 "$tmp/debootstrap/debootstrap.log" >&2 || true
	fi
	exit 1
fi
# debootstrap may leave its bind mounts behind on some hosts.
unmount_under "$tmp"

# Run "$@" in the new tree, output to $log, in its own process group (so that
# on_signal can stop it). Returns its exit status.
in_tree() {
	local status=0
	setsid chroot "$tmp" /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/root \
		DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 "$@" </dev/null >>"$log" 2>&1 &
	build_pgid=$!
	wait "$build_pgid" || status=$?
	build_pgid=
	return "$status"
}

# Free-threaded interpreters, from Debian's source package of the very
# version installed (apt verifies it against the signed index). The index may
# be past its Valid-Until on a frozen mirror: the signature is still checked.
build_free_threaded() {
	local apt=(apt-get -q -o Acquire::Check-Valid-Until=false) v pkg ver src t0 out
	: >"$tmp/$FT_RECORD"
	printf 'deb-src %s %s main\n' "$MIRROR" "$SUITE" >"$tmp/etc/apt/sources.list.d/pyprofd-src.list"
	mount -t proc proc "$tmp/proc" || die "cannot mount /proc in $tmp for the free-threaded builds"
	say "installing the compiler and libraries for the free-threaded builds..."
	if ! { in_tree "${apt[@]}" update && in_tree "${apt[@]}" install -y --no-install-recommends "${FT_BUILD_DEPS[@]}"; }; then
		say "cannot install the build dependencies; last lines of $log:"
		tail -n 25 "$log" >&2 || true
		exit 1
	fi
	for v in "${PYTHON_VERSIONS[@]}"; do
		pkg=python$v
		# shellcheck disable=SC2016 # a dpkg-query format, not a shell expansion
		ver=$(chroot "$tmp" dpkg-query -W -f='${source:Version}' "$pkg") ||
			die "cannot tell which version of $pkg is installed"
		src=/usr/src/pyprofd-ft/$v
		mkdir -p "$tmp$src"
		printf '\n== python%st from %s %s ==\n' "$v" "$pkg" "$ver" >>"$log"
		if ! in_tree sh -c "cd $src && apt-get -q -o Acquire::Check-Valid-Until=false source --only-source $pkg=$ver"; then
			say "python${v}t: the mirror has no source package $pkg $ver: not built (its tests will skip)"
			printf '%s unavailable: the mirror has no source package %s %s\n' "$v" "$pkg" "$ver" >>"$tmp/$FT_RECORD"
			rm -rf -- "$tmp$src"
			continue
		fi
		say "python${v}t: building from $pkg $ver (several minutes)..."
		t0=$SECONDS
		in_tree sh -c "cd $src && mkdir obj && cd obj && ../$pkg-*/configure ${FT_CONFIGURE[*]} && make -j$(nproc) && make altinstall" || {
			say "cannot build python${v}t; last lines of $log:"
			tail -n 25 "$log" >&2 || true
			exit 1
		}
		out=$(chroot "$tmp" "/usr/local/bin/python${v}t" -c \
			'import sys, sysconfig; print(sysconfig.get_config_var("Py_GIL_DISABLED"), sys._is_gil_enabled())' 2>&1) ||
			die "cannot run the new python${v}t: $out"
		[[ $out == "1 False" ]] || die "python${v}t is not free-threaded (Py_GIL_DISABLED, GIL enabled: $out)"
		# altinstall also links python3.X, idle3.X and pydoc3.X to the new
		# build, which would shadow Debian's default build on PATH
		rm -f -- "$tmp/usr/local/bin/python$v" "$tmp/usr/local/bin/idle$v" "$tmp/usr/local/bin/pydoc$v"
		printf '%s built %s %s\n' "$v" "$pkg" "$ver" >>"$tmp/$FT_RECORD"
		rm -rf -- "$tmp$src"
		say "python${v}t: built in $((SECONDS - t0)) s"
	done
	rm -rf -- "$tmp/usr/src/pyprofd-ft" "$tmp"/var/lib/apt/lists/*Sources*
	umount -- "$tmp/proc" || die "cannot unmount $tmp/proc"
}
((KUBE_TOOLS || BULLSEYE)) || build_free_threaded

if ((KUBE_TOOLS)); then
	out=$(chroot "$tmp" /usr/bin/python3 -c 'import kubernetes, yaml; print(kubernetes.__version__)' 2>&1) ||
		die "cannot import the kubernetes client in the new rootfs: $out"
	say "python3-kubernetes $out, $(chroot "$tmp" /usr/bin/kustomize version 2>&1 | awk 'NR == 1')"
fi
for v in "${PYTHON_VERSIONS[@]}"; do
	((KUBE_TOOLS)) && break
	# (older Debian releases may name the debug build python3.X-dbg only)
	if [[ ! -e $tmp/usr/bin/python${v}d && -e $tmp/usr/bin/python$v-dbg ]]; then
		ln -s "python$v-dbg" "$tmp/usr/bin/python${v}d"
	fi
	out=$(chroot "$tmp" "/usr/bin/python$v" -c \
		'import sys; print("%d.%d" % sys.version_info[:2], hex(sys.hexversion))' 2>&1) ||
		die "cannot run python$v in the new rootfs: $out"
	[[ $out == "$v "* ]] || die "python$v in the new rootfs reports the wrong version: $out"
	say "python$v: hexversion ${out#* }"
	out=$(chroot "$tmp" "/usr/bin/python${v}d" -c 'import sys; print(hasattr(sys, "gettotalrefcount"))' 2>&1) ||
		die "cannot run python${v}d in the new rootfs: $out"
	[[ $out == True ]] || die "python${v}d in the new rootfs is not a debug build: $out"
done

# The rootfs is also a sysroot (tests/targets/embed/build.sh links against
# it): an absolute symlink to the dynamic loader (Debian 11's
# /lib64/ld-linux-x86-64.so.2) would resolve on the host. Make it relative.
for link in "$tmp"/usr/lib64/ld-linux-*.so.* "$tmp"/lib64/ld-linux-*.so.*; do
	[[ -L $link ]] || continue
	target=$(readlink -- "$link")
	[[ $target == /* ]] || continue
	ln -sfn -- "$(realpath -m --relative-to="$(dirname -- "$link")" -- "$tmp$target")" "$link"
done

# Downloaded .deb files are not needed any more (about 100 MB).
rm -f "$tmp"/var/cache/apt/archives/*.deb
mkdir -p "$tmp/pyprofd-targets"
printf '%s\n' "$RECIPE" >"$tmp/$STAMP_NAME"

if [[ -e $rootfs ]]; then
	old=$(mktemp -d "$rootfs.old.XXXXXX")
	unmount_under "$rootfs"
	mv -T -- "$rootfs" "$old" || die "cannot move the old rootfs $rootfs out of the way"
	mv -T -- "$tmp" "$rootfs" || die "cannot move the new rootfs into place at $rootfs"
	tmp=
	busy=$(processes_rooted_in "$old")
	if [[ -z $busy ]]; then
		say "removing the old rootfs"
		remove_tree "$old"
	else
		say "keeping the old rootfs in $old for now: processes still run in it: $busy"
	fi
else
	mv -T -- "$tmp" "$rootfs" || die "cannot move the new rootfs into place at $rootfs"
	tmp=
fi
rm -f -- "$log"
say "rootfs ready in $((SECONDS - start)) s: $rootfs"
printf '%s\n' "$rootfs"
