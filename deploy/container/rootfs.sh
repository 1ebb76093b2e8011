#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Build the filesystem of the pyprofd container image (deploy/container/
# Containerfile) without a container engine, as root: mmdebstrap makes the
# runtime stage's Debian root with exactly the Containerfile's runtime package
# list, the built binary and the shipped config are added where the build
# stage installs them, umoci packs it into an OCI image layout with the
# Containerfile's USER, ENTRYPOINT and CMD, and unpacks it again as a runc
# bundle. Everything this script takes from the image definition it parses
# out of the Containerfile, so the two cannot drift.
#
# The package part (minutes the first time) is cached under
# $PYPROFD_CACHE_DIR/image-base-<hash of the package list and recipe>; the
# rest takes seconds, and nothing when neither the binary nor the config
# changed. Prints the output directory on stdout:
#
#   OUT/oci             OCI image layout, tag "pyprofd"
#   OUT/bundle/rootfs   the image's filesystem
#   OUT/bundle/config.json  umoci's runtime config for it (process from the image config)
set -euo pipefail

prog=rootfs.sh
script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source_tree=$(cd "$script_dir/../.." && pwd)
containerfile=${PYPROFD_CONTAINERFILE:-$script_dir/Containerfile}

# Bump whenever the way the package layer is built changes.
RECIPE_VERSION=1
IMAGE_TAG=pyprofd
# What debian:*-slim leaves out (its dpkg path filters), kept in the image
# as /etc/dpkg/dpkg.cfg.d/99mmdebstrap so later installs leave them out too.
SLIM_DPKG_OPTS=(
	'path-exclude=/usr/share/doc/*'
	'path-include=/usr/share/doc/*/copyright'
	'path-exclude=/usr/share/man/*'
	'path-exclude=/usr/share/groff/*'
	'path-exclude=/usr/share/info/*'
	'path-exclude=/usr/share/lintian/*'
	'path-exclude=/usr/share/linda/*'
	'path-exclude=/usr/share/locale/*'
	'path-include=/usr/share/locale/locale.alias'
)

usage() {
	cat <<EOF
usage: deploy/container/rootfs.sh [--binary FILE] [--out DIR] [--rebuild]
   or: deploy/container/rootfs.sh --print-packages | --print-image-config

Build the pyprofd image filesystem without a container engine (as root) and
print the output directory (OUT/oci: OCI layout, tag $IMAGE_TAG; OUT/bundle:
the unpacked rootfs and config.json).

  --binary FILE         the pyprofd executable to put in the image
                        (default: build-release/pyprofd, the build stage's)
  --out DIR             output directory (default: \$PYPROFD_CACHE_DIR/image)
  --rebuild             rebuild the cached package layer too
  --print-packages      print the runtime package list read from the Containerfile
  --print-image-config  print what is read from the Containerfile, one item a line
  -h, --help            show this help

environment:
  PYPROFD_CACHE_DIR      cache directory (default: \${XDG_CACHE_HOME:-\$HOME/.cache}/pyprofd)
  PYPROFD_DEBIAN_MIRROR  Debian mirror (default: the one this machine's apt sources
                         name, as scripts/python-rootfs.sh --print-mirror finds it)
EOF
}

die() {
	printf '%s: %s\n' "$prog" "$*" >&2
	exit 1
}

started=$SECONDS
say() {
	printf '%s: [%3ds] %s\n' "$prog" "$((SECONDS - started))" "$*" >&2
}

# --- reading the Containerfile ------------------------------------------------

# Fills INSTR (one logical instruction per element: continuation lines
# joined, comment lines dropped) and STAGE (the index of the FROM each
# instruction belongs to).
INSTR=()
STAGE=()
read_containerfile() {
	local line cur='' stage=-1
	[[ -r $containerfile ]] || die "cannot read $containerfile"
	while IFS= read -r line || [[ -n $line ]]; do
		[[ $line =~ ^[[:space:]]*# ]] && continue
		if [[ $line =~ \\[[:space:]]*$ ]]; then
			cur+="${line%\\*} "
			continue
		fi
		cur+=$line
		if [[ -n ${cur//[[:space:]]/} ]]; then
			# shellcheck disable=SC2086 # the first word, without leading blanks
			set -- $cur
			[[ ${1^^} == FROM ]] && stage=$((stage + 1))
			INSTR+=("$cur")
			STAGE+=("$stage")
		fi
		cur=''
	done <"$containerfile"
	((stage >= 1)) || die "$containerfile: expected a build stage and a runtime stage"
	LAST_STAGE=$stage
}

# The instructions of stage $1 whose keyword is $2, one a line (without it).
instructions() {
	local i words
	for i in "${!INSTR[@]}"; do
		[[ ${STAGE[$i]} == "$1" ]] || continue
		read -r -a words <<<"${INSTR[$i]}"
		[[ ${words[0]^^} == "${2^^}" ]] || continue
		printf '%s\n' "${INSTR[$i]#*"${words[0]}"}"
	done
}

# The packages of stage $1's "apt-get install": the words after "install"
# that are no option, up to the next shell operator.
stage_packages() {
	local run words w in_install pkgs=()
	while IFS= read -r run; do
		read -r -a words <<<"$run"
		in_install=0
		for w in "${words[@]}"; do
			if ((in_install)); then
				case $w in
				'&&' | '||' | ';' | '|') in_install=0 ;;
				-*) ;;
				*) pkgs+=("$w") ;;
				esac
			elif [[ $w == install ]]; then
				in_install=1
			fi
		done
	done < <(instructions "$1" RUN | grep -E 'apt-get[[:space:]].*[[:space:]]install[[:space:]]')
	((${#pkgs[@]})) || die "$containerfile: no 'apt-get install' in stage $(($1 + 1))"
	printf '%s\n' "${pkgs[@]}"
}

# The last value of instruction $1 in the runtime stage, as one line per
# JSON array element (exec form), or the word itself (USER).
runtime_value() {
	local v
	v=$(instructions "$LAST_STAGE" "$1" | tail -n 1)
	v=${v#"${v%%[![:space:]]*}"}
	[[ -n $v ]] || die "$containerfile: no $1 in the last stage"
	if [[ $v == '['* ]]; then
		# exec form: a JSON array of strings (\" and \\ unescaped)
		local rest=${v#[} re='^[[:space:]]*"(([^"\\]|\\.)*)"[[:space:]]*([],])(.*)$' a
		while [[ $rest =~ $re ]]; do
			a=${BASH_REMATCH[1]//\\\"/\"}
			printf '%s\n' "${a//\\\\/\\}"
			rest=${BASH_REMATCH[4]}
			[[ ${BASH_REMATCH[3]} == ']' ]] && break
		done
		[[ ${BASH_REMATCH[3]:-} == ']' && -z ${rest//[[:space:]]/} ]] ||
			die "$containerfile: $1 is not a JSON array of strings: $v"
	else
		printf '%s\n' "$v"
	fi
}

# "SRC DEST MODE" for every "install ... -m MODE SRC /out/DEST" of the stage
# the runtime stage copies /out/ from (COPY --from=NAME /out/ /).
installed_files() {
	local copy words from='' build_stage='' i run w prev mode args cmd
	copy=$(instructions "$LAST_STAGE" COPY | awk '/--from=/ && !n++')
	read -r -a words <<<"$copy"
	for w in "${words[@]}"; do
		[[ $w == --from=* ]] && from=${w#--from=}
	done
	[[ ${words[-2]:-} == /out/ && ${words[-1]:-} == / ]] ||
		die "$containerfile: expected 'COPY --from=<stage> /out/ /' in the last stage"
	for i in "${!INSTR[@]}"; do
		read -r -a words <<<"${INSTR[$i]}"
		if [[ ${words[0]^^} == FROM && ${words[-2]^^} == AS && ${words[-1]} == "$from" ]]; then
			build_stage=${STAGE[$i]}
		fi
	done
	[[ -n $build_stage ]] || die "$containerfile: no stage named '$from'"
	while IFS= read -r run; do
		read -r -a words <<<"$run"
		args=() prev='' mode=0644 cmd=''
		for w in "${words[@]}" '&&'; do
			case $w in
			'&&' | '||' | ';')
				if [[ $cmd == install && ${#args[@]} == 2 && ${args[1]} == /out/* ]]; then
					printf '%s %s %s\n' "${args[0]}" "/${args[1]#/out/}" "$mode"
				fi
				args=() mode=0644 cmd=''
				;;
			*)
				if [[ -z $cmd ]]; then
					cmd=$w
				elif [[ $prev == -m ]]; then
					mode=$w
				elif [[ $w != -* ]]; then
					args+=("$w")
				fi
				;;
			esac
			prev=$w
		done
	done < <(instructions "$build_stage" RUN | grep -E '(^|[[:space:]])install[[:space:]]')
}

# The suite of the runtime stage's base image: debian:<suite>-slim.
runtime_suite() {
	local from
	from=$(instructions "$LAST_STAGE" FROM | tail -n 1)
	read -r from _ <<<"$from"
	[[ $from =~ ^(docker\.io/)?(library/)?debian:([a-z]+)(-slim)?$ ]] ||
		die "$containerfile: the runtime stage is not FROM debian:<suite>-slim: $from"
	printf '%s\n' "${BASH_REMATCH[3]}"
}

# --- options --------------------------------------------------------------------

binary=$source_tree/build-release/pyprofd
out=
rebuild=0
print=
while (($#)); do
	case $1 in
	--binary)
		(($# >= 2)) || die "--binary needs a file"
		binary=$2
		shift
		;;
	--out)
		(($# >= 2)) || die "--out needs a directory"
		out=$2
		shift
		;;
	--rebuild) rebuild=1 ;;
	--print-packages) print=packages ;;
	--print-image-config) print=config ;;
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

read_containerfile
# (assignments, not mapfile < <(...): a die in them must stop the script)
lines=$(stage_packages "$LAST_STAGE")
mapfile -t PACKAGES <<<"$lines"
lines=$(runtime_value ENTRYPOINT)
mapfile -t ENTRYPOINT <<<"$lines"
lines=$(runtime_value CMD)
mapfile -t CMD <<<"$lines"
USER_SPEC=$(runtime_value USER)
lines=$(installed_files)
[[ -n $lines ]] || die "$containerfile: the build stage installs nothing under /out"
mapfile -t FILES <<<"$lines"
SUITE=$(runtime_suite)

if [[ $print == packages ]]; then
	printf '%s\n' "${PACKAGES[@]}"
	exit 0
fi
if [[ $print == config ]]; then
	printf 'suite %s\n' "$SUITE"
	printf 'package %s\n' "${PACKAGES[@]}"
	lines=$(stage_packages 0)
	mapfile -t build_packages <<<"$lines"
	printf 'build-package %s\n' "${build_packages[@]}"
	printf 'file %s\n' "${FILES[@]}"
	printf 'user %s\n' "$USER_SPEC"
	printf 'entrypoint %s\n' "${ENTRYPOINT[@]}"
	printf 'cmd %s\n' "${CMD[@]}"
	exit 0
fi

((EUID == 0)) || die "must run as root (mmdebstrap, umoci unpack)"
for tool in mmdebstrap umoci sha256sum flock unshare; do
	command -v "$tool" >/dev/null || die "cannot find $tool: install it (scripts/bootstrap.sh)"
done

# shellcheck source=/dev/null
host_suite=$(. /etc/os-release && printf '%s' "${VERSION_CODENAME:-}")
[[ $host_suite == "$SUITE" ]] ||
	die "the Containerfile's runtime stage is debian:$SUITE-slim but this machine runs Debian '${host_suite:-?}': the packages come from this machine's own suite, so the two must be the same"

cache_dir=${PYPROFD_CACHE_DIR:-${XDG_CACHE_HOME:-${HOME:?HOME is not set}/.cache}/pyprofd}
out=$(realpath -m -- "${out:-$cache_dir/image}")
case $out/ in
"$source_tree"/build*/*) ;; # a build directory is fine
"$source_tree"/*) die "refusing to write $out: it is inside the source tree" ;;
esac

# Where each file the build stage installs comes from here.
source_of() {
	case $1 in
	build-release/pyprofd) printf '%s' "$binary" ;;
	*) printf '%s' "$source_tree/$1" ;;
	esac
}
for f in "${FILES[@]}"; do
	read -r src _ _ <<<"$f"
	src=$(source_of "$src")
	[[ -f $src ]] || die "cannot find $src; for build-release/pyprofd: cmake --preset release && cmake --build --preset release, or pass --binary"
done

# --- the package layer (cached) -------------------------------------------------

arch=$(dpkg --print-architecture)
base_recipe="recipe=$RECIPE_VERSION suite=$SUITE arch=$arch variant=minbase packages=$(printf '%s\n' "${PACKAGES[@]}" | sort | tr '\n' ' ')dpkg=${SLIM_DPKG_OPTS[*]}"
base_key=$(printf '%s' "$base_recipe" | sha256sum | cut -c1-16)
base=$cache_dir/image-base-$base_key
mkdir -p -- "$cache_dir"

exec {base_lock}>"$base.lock" || die "cannot open $base.lock"
if ! flock --nonblock "$base_lock"; then
	say "waiting for another rootfs.sh building $base..."
	flock "$base_lock"
fi
if ((rebuild)) || [[ ! -f $base/stamp || $(<"$base/stamp") != "$base_recipe" ]]; then
	mirror=${PYPROFD_DEBIAN_MIRROR:-$("$source_tree/scripts/python-rootfs.sh" --print-mirror)} ||
		die "cannot choose a Debian mirror (set PYPROFD_DEBIAN_MIRROR)"
	rm -rf --one-file-system -- "$base" "$base".tmp.*
	tmp=$(mktemp -d "$base.tmp.XXXXXX")
	trap 'rm -rf --one-file-system -- "$tmp"' EXIT
	say "building the package layer: Debian $SUITE minbase + ${PACKAGES[*]} (minutes, once; log $tmp/mmdebstrap.log)"
	opts=(--variant=minbase "--include=$(IFS=,; echo "${PACKAGES[*]}")")
	for o in "${SLIM_DPKG_OPTS[@]}"; do
		opts+=("--dpkgopt=$o")
	done
	keyring=/usr/share/keyrings/debian-archive-keyring.gpg
	[[ -f $keyring ]] && opts+=("--keyring=$keyring")
	if ! mmdebstrap "${opts[@]}" "$SUITE" "$tmp/rootfs" \
		"deb $mirror $SUITE main" "deb $mirror $SUITE-updates main" >"$tmp/mmdebstrap.log" 2>&1; then
		tail -n 30 "$tmp/mmdebstrap.log" >&2
		die "mmdebstrap failed"
	fi
	say "packing the package layer with umoci"
	umoci init --layout "$tmp/oci"
	umoci new --image "$tmp/oci:base"
	umoci insert --image "$tmp/oci:base" --history.created_by "mmdebstrap $SUITE minbase: ${PACKAGES[*]}" \
		"$tmp/rootfs" / >/dev/null
	rm -rf --one-file-system -- "$tmp/rootfs"
	printf '%s\n' "$base_recipe" >"$tmp/stamp"
	mv -T -- "$tmp" "$base"
	trap - EXIT
	say "package layer cached in $base ($(du -sh "$base" | cut -f1))"
fi
exec {base_lock}>&-

# --- the image: package layer + pyprofd layer + image config -------------------

file_hashes=$(for f in "${FILES[@]}"; do
	read -r src dest mode <<<"$f"
	printf '%s %s %s\n' "$(sha256sum <"$(source_of "$src")" | cut -c1-64)" "$dest" "$mode"
done)
out_recipe="base=$base_key files=$file_hashes user=$USER_SPEC entrypoint=${ENTRYPOINT[*]} cmd=${CMD[*]}"

exec {out_lock}>"$out.lock" || die "cannot open $out.lock"
flock "$out_lock"
if [[ -f $out/stamp && $(<"$out/stamp") == "$out_recipe" && -x $out/bundle/rootfs${ENTRYPOINT[0]} ]]; then
	say "image up to date in $out"
	printf '%s\n' "$out"
	exit 0
fi

rm -rf --one-file-system -- "$out.new"
mkdir -p -- "$out.new/oci" "$out.new/layer"
trap 'rm -rf --one-file-system -- "$out.new"' EXIT
# The blobs are content-addressed and never rewritten: hard links.
cp -al -- "$base/oci/blobs" "$out.new/oci/blobs"
cp -- "$base/oci/index.json" "$base/oci/oci-layout" "$out.new/oci/"
for f in "${FILES[@]}"; do
	read -r src dest mode <<<"$f"
	install -D -m "$mode" -- "$(source_of "$src")" "$out.new/layer$dest"
done
say "adding $(printf '%s ' "${FILES[@]}" | awk '{for (i = 2; i <= NF; i += 3) printf "%s ", $i}')as a layer"
umoci insert --image "$out.new/oci:base" --tag "$IMAGE_TAG" \
	--history.created_by "COPY --from=build /out/ /" "$out.new/layer" / >/dev/null
rm -rf -- "$out.new/layer"
config_args=(--config.user "$USER_SPEC")
for a in "${ENTRYPOINT[@]}"; do
	config_args+=("--config.entrypoint=$a")
done
for a in "${CMD[@]}"; do
	config_args+=("--config.cmd=$a")
done
umoci config --image "$out.new/oci:$IMAGE_TAG" "${config_args[@]}" \
	--history.created_by "USER $USER_SPEC; ENTRYPOINT; CMD"
umoci gc --layout "$out.new/oci"
say "unpacking as a runc bundle"
umoci unpack --image "$out.new/oci:$IMAGE_TAG" "$out.new/bundle" >/dev/null

# The runtime package list is complete when every library the binary needs
# resolves inside the image.
missing=$(chroot "$out.new/bundle/rootfs" ldd "${ENTRYPOINT[0]}" 2>&1 | grep -F 'not found' || true)
[[ -z $missing ]] ||
	die "libraries missing from the image (add their packages to the Containerfile's last stage): $missing"
# With a /proc of its own (a sanitizer build needs one), in a private mount
# and PID namespace, so nothing is left mounted in the rootfs.
version=$(unshare --mount --pid --fork --mount-proc="$out.new/bundle/rootfs/proc" \
	chroot "$out.new/bundle/rootfs" "${ENTRYPOINT[0]}" --version 2>&1) ||
	die "cannot run ${ENTRYPOINT[0]} in the image: $version"
printf '%s\n' "$out_recipe" >"$out.new/stamp"
rm -rf --one-file-system -- "$out"
mv -T -- "$out.new" "$out"
trap - EXIT
say "image ready: $version, $(du -sh "$out/bundle/rootfs" | cut -f1) unpacked, in $out"
printf '%s\n' "$out"
