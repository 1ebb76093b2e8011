#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Start a test target (a Python program from tests/targets) under CPython
# 3.13/3.14/3.15 (default, debug or free-threaded build) in the rootfs built
# by scripts/python-rootfs.sh, either
# chroot'ed in the host PID namespace or "container" style (own PID and mount
# namespaces, like a Kubernetes pod), and print its host PID; or stop one.
set -euo pipefail

prog=run-target
script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
targets_dir=$(dirname "$script_dir")/tests/targets
READY_LINE='pyprofd-target: ready'
HELPER=pyprofd_expected # a module of tests/targets the targets import, not a target
POLL_INTERVAL=0.02

usage() {
	cat <<EOF
usage: scripts/run-target.sh start --python 3.X [--mode chroot|container] [--rootfs DIR]
                                   [--log FILE] [--timeout SECONDS] [--env NAME=VALUE]...
                                   TARGET [ARGS...]
   or: scripts/run-target.sh stop PID

start  run TARGET (a name under tests/targets, e.g. sleepy, or a path to a .py
       file) with python3.X inside the rootfs, in the background; wait
       until it prints "$READY_LINE" and print the host PID of the
       python process on stdout. The target keeps running after this exits.

       --python 3.X       interpreter: 3.13, 3.14 or 3.15 (required): Debian's
                          /usr/bin/python3.X; 3.Xd is its debug build
                          (/usr/bin/python3.Xd), 3.Xt the free-threaded build
                          (/usr/local/bin/python3.Xt); 3.11 and 3.11d are this
                          machine's own (Debian 12), run without a rootfs;
                          3.9 and 3.9d are Debian 11's, in the bullseye rootfs
                          (scripts/python-rootfs.sh --bullseye)
       --mode chroot      run chroot'ed, in the host PID namespace (default)
       --mode container   run as PID 1 of new PID and mount namespaces, with
                          its own /proc (unshare --pid --mount --fork)
       --rootfs DIR       rootfs (default: scripts/python-rootfs.sh --print-path)
       --log FILE         where the target's stdout and stderr go
                          (default: a temporary file, removed once it is ready)
       --timeout SECONDS  how long to wait for it to be ready (default: 30)
       --env NAME=VALUE   set an environment variable for the target (the
                          target otherwise gets a small clean environment)

stop   send SIGTERM to PID, wait up to 3 s, then SIGKILL; in container mode
       also make sure the unshare process around it goes. Succeeds silently
       if PID is already gone.
EOF
}

die() {
	printf '%s: %s\n' "$prog" "$*" >&2
	exit 1
}

# Microseconds since the epoch, without forking.
now_us() {
	local t=${EPOCHREALTIME/[.,]/}
	printf '%s' "$((10#$t))"
}

# Process state letter (R, S, Z, ...) of $1, or nothing if it does not exist.
proc_state() {
	local stat rest
	{ stat=$(<"/proc/$1/stat"); } 2>/dev/null || return 0
	rest=${stat##*) }
	printf '%s' "${rest%% *}"
}

# True while $1 exists and is not a zombie.
alive() {
	local s
	s=$(proc_state "$1")
	[[ -n $s && $s != Z && $s != X ]]
}

proc_ppid() {
	local stat rest
	{ stat=$(<"/proc/$1/stat"); } 2>/dev/null || return 0
	rest=${stat##*) }
	rest=${rest#* }
	printf '%s' "${rest%% *}"
}

proc_comm() {
	local comm
	{ comm=$(<"/proc/$1/comm"); } 2>/dev/null || return 0
	printf '%s' "$comm"
}

# First child of $1 (needs CONFIG_PROC_CHILDREN, as on every distro kernel).
first_child() {
	local children
	{ children=$(<"/proc/$1/task/$1/children"); } 2>/dev/null || return 0
	children=${children%% *}
	printf '%s' "${children%$'\n'}"
}

# Wait until $1 is gone (or a zombie) for at most $2 microseconds.
wait_gone() {
	local pid=$1 deadline=$(($(now_us) + $2))
	while alive "$pid"; do
		(($(now_us) < deadline)) || return 1
		sleep "$POLL_INTERVAL"
	done
}

cmd_start() {
	local python='' mode=chroot rootfs='' log='' timeout=30 envs=()
	while (($#)); do
		case $1 in
		--python | --mode | --rootfs | --log | --timeout | --env)
			(($# >= 2)) || die "option $1 needs a value"
			case $1 in
			--python) python=$2 ;;
			--mode) mode=$2 ;;
			--rootfs) rootfs=$2 ;;
			--log) log=$2 ;;
			--timeout) timeout=$2 ;;
			--env) envs+=("$2") ;;
			esac
			shift 2
			;;
		--python=* | --mode=* | --rootfs=* | --log=* | --timeout=* | --env=*)
			set -- "${1%%=*}" "${1#*=}" "${@:2}"
			;;
		-h | --help)
			usage
			exit 0
			;;
		--)
			shift
			break
			;;
		-*)
			usage >&2
			die "unknown option: $1"
			;;
		*) break ;;
		esac
	done
	(($# >= 1)) || {
		usage >&2
		die "start: no TARGET given"
	}
	local target=$1
	shift

	local interp
	local host=0 # 3.11: this machine's own Debian 12 interpreter, no rootfs
	local bullseye=0 # 3.9: Debian 11's, in the bullseye rootfs
	case $python in
	3.11 | 3.11d)
		interp=/usr/bin/python$python
		host=1
		;;
	3.9 | 3.9d)
		interp=/usr/bin/python$python
		bullseye=1
		;;
	3.13 | 3.14 | 3.15 | 3.13d | 3.14d | 3.15d) interp=/usr/bin/python$python ;;
	3.13t | 3.14t | 3.15t) interp=/usr/local/bin/python$python ;;
	'') die "start: --python is required (3.9, 3.11, 3.13, 3.14 or 3.15, with a d or t suffix for the debug or free-threaded build)" ;;
	*) die "start: unsupported --python $python: use 3.9, 3.11, 3.13, 3.14 or 3.15 (or 3.Xd, 3.Xt)" ;;
	esac
	case $mode in
	chroot | container) ;;
	*) die "start: unknown --mode $mode: use chroot or container" ;;
	esac
	[[ $timeout =~ ^[0-9]+(\.[0-9]{1,6})?$ ]] ||
		die "start: bad --timeout $timeout: want a number of seconds"
	local timeout_us frac
	frac=${timeout#*.}
	[[ $timeout == *.* ]] || frac=
	frac=${frac}000000
	timeout_us=$((10#${timeout%%.*} * 1000000 + 10#${frac:0:6}))
	((timeout_us > 0)) || die "start: bad --timeout $timeout: must be more than 0"
	local e
	for e in "${envs[@]}"; do
		[[ $e =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || die "start: bad --env $e: want NAME=VALUE"
	done

	((EUID == 0)) || die "start: must run as root (chroot and unshare need it)"

	# The rootfs.
	if ((host)); then
		[[ -x $interp ]] ||
			die "start: no $interp on this machine (Debian 12's python${python%d}$([[ $python == *d ]] && echo -dbg) package: scripts/bootstrap.sh installs it)"
		rootfs=/
	elif [[ -z $rootfs ]] && ((bullseye)); then
		rootfs=$("$script_dir/python-rootfs.sh" --bullseye --print-path) ||
			die "start: cannot find the rootfs path (scripts/python-rootfs.sh --bullseye --print-path failed)"
	elif [[ -z $rootfs ]]; then
		rootfs=$("$script_dir/python-rootfs.sh" --print-path) ||
			die "start: cannot find the rootfs path (scripts/python-rootfs.sh --print-path failed)"
	fi
	((host)) || [[ -d $rootfs ]] ||
		die "start: no rootfs at $rootfs: run scripts/python-rootfs.sh$( ((bullseye)) && echo ' --bullseye') (as root) first"
	((host)) || [[ -x $rootfs$interp ]] ||
		die "start: no $interp in the rootfs $rootfs: run scripts/python-rootfs.sh (as root) to (re)build it"
	rootfs=$(realpath -- "$rootfs")

	# The target script.
	local src name
	if [[ $target == */* || $target == *.py ]]; then
		src=$target
	else
		src=$targets_dir/$target.py
	fi
	[[ -f $src ]] || die "start: no such target: $target ($src not found)"
	name=$(basename -- "$src" .py)
	[[ $name =~ ^[A-Za-z0-9_.-]+$ ]] ||
		die "start: bad target name $name: use letters, digits, '_', '-' and '.'"

	# Copy it into the rootfs atomically: parallel starts never see half a file.
	# The module the targets share (tests/targets/$HELPER.py) goes next to it,
	# in the script's own directory, where its import finds it.
	local inside=/pyprofd-targets tmp f
	# (3.11 on the host: the host's own /pyprofd-targets, the same path as in a rootfs)
	local dest_dir=${rootfs%/}$inside
	mkdir -p -- "$dest_dir" || die "start: cannot create $dest_dir"
	for f in "$src:$name" "$targets_dir/$HELPER.py:$HELPER"; do
		tmp=$(mktemp "$dest_dir/.${f##*:}.py.XXXXXX") ||
			die "start: cannot create a temporary file in $dest_dir"
		if ! cp -- "${f%:*}" "$tmp" || ! chmod 644 -- "$tmp" ||
			! mv -f -- "$tmp" "$dest_dir/${f##*:}.py"; then
			rm -f -- "$tmp"
			die "start: cannot copy ${f%:*} into $dest_dir"
		fi
	done

	# The log.
	local own_log=0
	if [[ -z $log ]]; then
		log=$(mktemp "${TMPDIR:-/tmp}/pyprofd-target-$name.XXXXXX.log") ||
			die "start: cannot create a temporary log file"
		own_log=1
	else
		: >"$log" || die "start: cannot write log file $log"
	fi

	# A small, predictable environment: nothing from the host's Python setup
	# (PYTHONPATH, virtualenvs, ...) may leak into the rootfs interpreter.
	local cmd=(env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
		HOME=/root LANG=C.UTF-8 "${envs[@]}")
	# setsid detaches the target from our terminal and session. A background
	# child of a non-interactive shell is not a process group leader, so
	# setsid does not fork: the started PID stays the same through every exec.
	if [[ $mode == chroot ]]; then
		cmd+=(setsid chroot "$rootfs")
	else
		cmd+=(setsid unshare --pid --mount --fork --kill-child
			"--mount-proc=${rootfs%/}/proc" chroot "$rootfs")
	fi
	cmd+=("$interp" -u "$inside/$name.py" "$@")

	(
		# Do not hand our callers' extra file descriptors (pipes of a test
		# runner, lock files, ...) to a long-running process.
		for fd in /proc/self/fd/*; do
			fd=${fd##*/}
			if ((fd > 2)); then
				exec {fd}>&-
			fi
		done
		exec "${cmd[@]}"
	) </dev/null >>"$log" 2>&1 &
	local started=$! pid='' exe='' reason=''

	local deadline=$(($(now_us) + timeout_us))
	while :; do
		if ! alive "$started"; then
			local status=0
			wait "$started" || status=$?
			reason="exited with status $status before it was ready"
			break
		fi
		if [[ $mode == container ]]; then
			pid=$(first_child "$started")
		else
			pid=$started
		fi
		if [[ -n $pid ]]; then
			exe=$(readlink "/proc/$pid/exe" 2>/dev/null) || exe=''
			if [[ $exe == *"/python$python" ]] && grep -qF -- "$READY_LINE" "$log"; then
				break
			fi
		fi
		if (($(now_us) >= deadline)); then
			reason="not ready after $timeout s"
			break
		fi
		sleep "$POLL_INTERVAL"
	done

	if [[ -n $reason ]]; then
		kill -KILL "$started" 2>/dev/null || true
		if [[ -n $pid && $pid != "$started" ]]; then
			kill -KILL "$pid" 2>/dev/null || true
		fi
		wait "$started" 2>/dev/null || true
		printf '%s: start: %s (python%s, %s mode): %s; last lines of %s:\n' \
			"$prog" "$target" "$python" "$mode" "$reason" "$log" >&2
		tail -n 20 -- "$log" >&2 || true
		exit 1
	fi

	if ((own_log)); then
		# The target keeps writing to the (now unlinked) file; while it runs
		# its output is still readable through /proc/PID/fd/1.
		rm -f -- "$log"
	fi
	printf '%s\n' "$pid"
}

cmd_stop() {
	(($# == 1)) || {
		usage >&2
		die "stop: want exactly one PID"
	}
	local pid=$1
	[[ $pid =~ ^[1-9][0-9]*$ ]] || die "stop: bad PID $pid"
	alive "$pid" || return 0

	local exe parent wrapper=''
	exe=$(readlink "/proc/$pid/exe" 2>/dev/null) || exe=''
	if [[ -z $exe ]]; then
		alive "$pid" || return 0
		die "stop: cannot read /proc/$pid/exe (not root?)"
	fi
	[[ $exe =~ /python3\.[0-9]+[dt]?$ ]] ||
		die "stop: refusing to stop $pid: not a python target (it runs $exe)"
	parent=$(proc_ppid "$pid")
	if [[ -n $parent && $parent != 1 && $(proc_comm "$parent") == unshare ]]; then
		wrapper=$parent
	fi

	kill -TERM "$pid" 2>/dev/null || true
	if ! wait_gone "$pid" 3000000; then
		printf '%s: stop: %s did not exit within 3 s of SIGTERM; sending SIGKILL\n' "$prog" "$pid" >&2
		kill -KILL "$pid" 2>/dev/null || true
		wait_gone "$pid" 2000000 || die "stop: $pid is still there after SIGKILL"
	fi
	if [[ -n $wrapper ]]; then
		# unshare exits as soon as its child does; give it a moment.
		if ! wait_gone "$wrapper" 1000000; then
			kill -KILL "$wrapper" 2>/dev/null || true
			wait_gone "$wrapper" 2000000 || die "stop: unshare process $wrapper is still there after SIGKILL"
		fi
	fi
}

(($# >= 1)) || {
	usage >&2
	die "no command given: use start or stop"
}
case $1 in
start)
	shift
	cmd_start "$@"
	;;
stop)
	shift
	cmd_stop "$@"
	;;
-h | --help | help) usage ;;
*)
	usage >&2
	die "unknown command: $1"
	;;
esac
