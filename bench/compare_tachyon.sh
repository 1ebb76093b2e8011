#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Benchmark: CPU cost per sample of pyprofd against CPython 3.15's own
# sampling profiler ("Tachyon", python3.15 -m profiling.sampling), both
# sampling the same live CPython 3.15 process as fast as they can, at several
# stack depths, for each build asked for (default, free-threaded, debug); on
# a build Tachyon does not exist for (3.13, 3.14) pyprofd alone. Prints a
# table; docs/performance.md has a run and what it means.
# Not a test: `make test` does not run it.
set -euo pipefail

prog=compare_tachyon
script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_dir=$(dirname "$script_dir")
run_target=$repo_dir/scripts/run-target.sh
target_src=$script_dir/targets/depth.py
pythons=3.15

usage() {
	cat <<EOF
usage: bench/compare_tachyon.sh [-d SECONDS] [-c CYCLES] [--depths "10 50 200"]
                                [--python "3.15 3.15t"] [--pyprofd PATH] [--rate HZ]
                                [--tachyon-rate HZ] [--sampler-cpu LIST]
                                [--target-cpu LIST] [--keep DIR]

For each build and stack depth, start bench/targets/depth.py under that
CPython (a main thread that recurses that deep, then spins in pure Python),
then sample it, one profiler after the other, CYCLES times (the order
alternates between cycles: pyprofd first, then Tachyon first, ...):

  1. pyprofd record -r RATE -d SECONDS        (from the host, by host PID)
  2. python3.15 -m profiling.sampling attach -r TACHYON_RATE -d SECONDS
     --collapsed                              (CPython's own sampler, inside
                                               the target's rootfs, run by
                                               the target's own interpreter:
                                               a free-threaded target needs a
                                               free-threaded profiler)

and print, for each: achieved samples per second and samples taken (from the
tool's own summary; Tachyon's successful samples are counted in its collapsed
output), failed and missed samples, CPU seconds of the profiler process
(user + sys, from bash's \`times\`: the nsenter wrapper costs nothing), CPU
seconds per 1,000 samples, and the ratio pyprofd / Tachyon of the latter;
with several cycles, medians over them and the median of each cycle's ratio.

  -d, --duration SECONDS  how long each profiler samples (default: 5)
  -c, --cycles N          runs of each profiler per depth (default: 1)
      --depths LIST       stack depths, in Python frames (default: "10 50 200")
      --python LIST       builds, as scripts/run-target.sh names them (default:
                          3.15): 3.15, 3.15t (free-threaded), 3.15d (debug);
                          3.11 (the host's Debian 12 python3.11: a generated
                          layout), 3.13, 3.14 get pyprofd only (no Tachyon there);
                          3.9 (Debian 11's, the bullseye rootfs) gets pyprofd
                          and austin (Debian 12's 1.0.1, at -i 1) instead
      --pyprofd PATH      pyprofd binary (default: build-release/pyprofd; build
                          it with: cmake --preset release && cmake --build
                          --preset release -j2)
      --rate HZ           pyprofd's rate (default: 1000k, its maximum)
      --tachyon-rate HZ   Tachyon's rate (default: 1000000, its maximum: it
                          takes a 1 us interval and never sleeps when late)
      --sampler-cpu LIST  pin both samplers (taskset -c LIST; default: none)
      --target-cpu LIST   pin the target (taskset -c LIST; default: none);
                          e.g. --sampler-cpu 0 --target-cpu 1: each on a
                          core of its own, as the issue measured
      --keep DIR          keep the profiles and logs in DIR
  -h, --help              show this help

Needs root (chroot, namespaces, reading another process's memory) and the
test rootfs (scripts/python-rootfs.sh). The target runs in --mode container:
Tachyon needs a /proc inside the rootfs and must share the target's mount
namespace, so that the paths in /proc/PID/maps name files it can open; it
joins the target's namespaces and root with nsenter. Takes about
(2 x CYCLES x SECONDS + 3) s per depth.
EOF
}

die() {
	printf '%s: %s\n' "$prog" "$*" >&2
	exit 1
}

duration=5
depths="10 50 200"
pyprofd=$repo_dir/build-release/pyprofd
rate=1000k
tachyon_rate=1000000
keep=''
cycles=1 sampler_cpu='' target_cpu=''
while (($#)); do
	case $1 in
	-d | --duration | --depths | --pyprofd | --rate | --tachyon-rate | --keep | -c | --cycles | \
		--sampler-cpu | --target-cpu | --python)
		(($# >= 2)) || die "option $1 needs a value"
		case $1 in
		-d | --duration) duration=$2 ;;
		-c | --cycles) cycles=$2 ;;
		--sampler-cpu) sampler_cpu=$2 ;;
		--target-cpu) target_cpu=$2 ;;
		--depths) depths=$2 ;;
		--python) pythons=$2 ;;
		--pyprofd) pyprofd=$2 ;;
		--rate) rate=$2 ;;
		--tachyon-rate) tachyon_rate=$2 ;;
		--keep) keep=$2 ;;
		esac
		shift 2
		;;
	-h | --help)
		usage
		exit 0
		;;
	*)
		usage >&2
		die "unknown argument: $1"
		;;
	esac
done

[[ $duration =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "bad --duration $duration: want seconds"
[[ $cycles =~ ^[1-9][0-9]*$ ]] || die "bad --cycles $cycles"
sampler_pin=() target_pin=()
if [[ -n $sampler_cpu ]]; then
	command -v taskset >/dev/null || die "taskset not found (Debian package util-linux)"
	sampler_pin=(taskset -c "$sampler_cpu")
fi
if [[ -n $target_cpu ]]; then
	command -v taskset >/dev/null || die "taskset not found (Debian package util-linux)"
	target_pin=(taskset -c "$target_cpu")
fi
for depth in $depths; do
	if ! [[ $depth =~ ^[0-9]+$ ]] || ((depth < 4)); then
		die "bad depth $depth: want an integer of at least 4"
	fi
done
((EUID == 0)) || die "must run as root (chroot, nsenter and reading the target's memory need it)"
[[ -x $pyprofd ]] || die "no pyprofd binary at $pyprofd: build it with" \
	"'cmake --preset release && cmake --build --preset release -j2', or pass --pyprofd"
command -v nsenter >/dev/null || die "nsenter not found (Debian package util-linux)"
rootfs=$("$repo_dir/scripts/python-rootfs.sh" --print-path) || die "cannot find the rootfs path"
rootfs=$(realpath -- "$rootfs")
bullseye=$("$repo_dir/scripts/python-rootfs.sh" --bullseye --print-path) || die "cannot find the bullseye rootfs path"
# root_of BUILD: the root it runs in (3.11: the host's own Debian 12 python3.11;
# 3.9: Debian 11's, in the bullseye rootfs)
root_of() {
	case $1 in
	3.11*) printf '/' ;;
	3.9*) printf '%s' "$bullseye" ;;
	*) printf '%s' "$rootfs" ;;
	esac
}
# interp_of BUILD: the interpreter's path inside the rootfs
interp_of() {
	case $1 in
	3.1[3-9]t) printf '/usr/local/bin/python%s' "$1" ;;
	3.1[3-9] | 3.1[3-9]d | 3.11 | 3.11d | 3.9 | 3.9d) printf '/usr/bin/python%s' "$1" ;;
	*) die "bad --python build $1: want 3.X, 3.Xt or 3.Xd" ;;
	esac
}
for python in $pythons; do
	interp=$(interp_of "$python")
	if [[ ! -x $(root_of "$python")$interp ]]; then
		why=''
		[[ $python == *t && -f $rootfs/.pyprofd-free-threaded ]] &&
			why=$(grep "^${python%t} " "$rootfs/.pyprofd-free-threaded" | cut -d' ' -f2-)
		die "no $interp in the rootfs $rootfs${why:+: $why}; run scripts/python-rootfs.sh (as root)"
	fi
done

# Scratch space: on the host for pyprofd, inside the rootfs for Tachyon (which
# writes through the target's root).
work=$(mktemp -d "${TMPDIR:-/tmp}/pyprofd-bench.XXXXXX")
inner=$(mktemp -d "$rootfs/tmp/pyprofd-bench.XXXXXX")
target_pid=''
cleanup() {
	if [[ -n $target_pid ]]; then
		"$run_target" stop "$target_pid" || true
	fi
	if [[ -n $keep ]]; then
		if ! mkdir -p -- "$keep" || ! cp -r -- "$work"/. "$inner"/. "$keep"/; then
			printf '%s: cannot keep the results in %s\n' "$prog" "$keep" >&2
		fi
	fi
	rm -rf -- "$work" "$inner"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# "XmY.YYYs" (bash's times) to seconds.
to_seconds() {
	awk -v t="$1" 'BEGIN { split(t, a, "m"); sub("s", "", a[2]); printf "%.3f", a[1] * 60 + a[2] }'
}

# cpu_of LOG COMMAND...: runs COMMAND (stdout and stderr to LOG) in a fresh
# subshell and prints "USER SYS": the CPU seconds of everything it ran (a
# forked subshell starts with zero child times). Its exit status goes to
# $work/rc.
cpu_of() {
	local log=$1
	shift
	(
		rc=0
		"$@" >"$log" 2>&1 || rc=$?
		echo "$rc" >"$work/rc"
		times >"$work/times"
	)
	local line
	line=$(sed -n 2p "$work/times")
	printf '%s %s\n' "$(to_seconds "${line%% *}")" "$(to_seconds "${line##* }")"
}

# PID of host PID $1 inside its own PID namespace (the last NSpid field).
inner_pid() {
	awk '/^NSpid:/ { print $NF }' "/proc/$1/status"
}

# Most frames on one line of a collapsed profile, minus $2 prefix fields.
stack_frames() {
	awk -F';' -v skip="$2" 'NF - skip > m { m = NF - skip } END { print m + 0 }' "$1"
}

# Sum of the counts (last field) of a collapsed profile.
collapsed_total() {
	awk '{ s += $NF } END { print s + 0 }' "$1"
}

# CPU seconds USER + SYS per 1,000 of N samples.
per_k() {
	awk -v u="$1" -v s="$2" -v n="$3" 'BEGIN { printf "%.6f", (n > 0 ? 1000 * (u + s) / n : 0) }'
}

# median of the numbers given
median() {
	printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'
}

# run_pyprofd DEPTH CYCLE: one pyprofd run; appends a row.
run_pyprofd() {
	local depth=$1 c=$2 plog pout pu ps summary re
	plog=$work/pyprofd-d$depth-c$c.log
	pout=$work/pyprofd-d$depth-c$c.txt
	printf '%s: python%s depth %s cycle %s: pyprofd record -r %s -d %s\n' "$prog" "$python" "$depth" "$c" "$rate" "$duration" >&2
	read -r pu ps < <(cpu_of "$plog" "${sampler_pin[@]}" "$pyprofd" record -r "$rate" -d "$duration" \
		-o "$pout" "$target_pid")
	[[ $(<"$work/rc") == 0 ]] || die "pyprofd failed (depth $depth); its output: $(cat "$plog")"
	summary=$(grep -E '^pyprofd: [0-9]+ samples in ' "$plog") || die "no summary line from pyprofd: $(cat "$plog")"
	re='^pyprofd: ([0-9]+) samples in ([0-9.]+) s \(([0-9.]+) Hz achieved\), ([0-9]+) failed \(([0-9.]+)%\), ([0-9]+) missed \(([0-9.]+)%\)'
	[[ $summary =~ $re ]] || die "cannot parse pyprofd's summary: $summary"
	local p_samples=${BASH_REMATCH[1]} p_secs=${BASH_REMATCH[2]} p_hz=${BASH_REMATCH[3]}
	local p_failed=${BASH_REMATCH[5]} p_missed=${BASH_REMATCH[7]}
	rows+=("$python $depth pyprofd $c $rate $p_secs $p_hz $p_samples $p_failed $p_missed $pu $ps $(per_k "$pu" "$ps" "$p_samples") $(stack_frames "$pout" 0)")
}

# run_austin DEPTH CYCLE: one austin run (Debian 12's austin 1.0.1, on 3.9:
# it finds no 3.11 interpreter), from the host by host PID, at its shortest
# interval (1 us), stopped with SIGINT after DURATION; appends a row. Its
# samples and invalid ones are from its own closing statistics.
run_austin() {
	local depth=$1 c=$2 alog aout au as re
	alog=$work/austin-d$depth-c$c.log
	aout=$work/austin-d$depth-c$c.txt
	printf '%s: python%s depth %s cycle %s: austin -i 1 for %s s\n' "$prog" "$python" "$depth" "$c" "$duration" >&2
	read -r au as < <(cpu_of "$alog" "${sampler_pin[@]}" timeout -s INT "$duration" austin -p "$target_pid" \
		-i 1 -o "$aout")
	[[ -s $aout ]] || die "austin wrote no profile (depth $depth); its output: $(cat "$alog")"
	re='Error rate : ([0-9]+)/([0-9]+)'
	[[ $(<"$alog") =~ $re ]] || die "cannot parse austin's statistics: $(cat "$alog")"
	local a_bad=${BASH_REMATCH[1]} a_n=${BASH_REMATCH[2]} a_samples a_hz a_failed
	a_samples=$((a_n - a_bad))
	a_hz=$(awk -v n="$a_n" -v s="$duration" 'BEGIN { printf "%.1f", n / s }')
	a_failed=$(awk -v b="$a_bad" -v n="$a_n" 'BEGIN { printf "%.1f", (n > 0 ? 100 * b / n : 0) }')
	# its lines start with "Thread ID;"
	rows+=("$python $depth austin $c 1000000 $duration $a_hz $a_samples $a_failed 0.0 $au $as $(per_k "$au" "$as" "$a_samples") $(awk -F';' '{ n = 0; for (i = 2; i <= NF; i++) if ($i !~ /^L[0-9]+/) n++; if (n > m) m = n } END { print m + 0 }' "$aout")")
}

# run_peer DEPTH CYCLE: the peer of this build (Tachyon or austin)
run_peer() {
	if [[ $peer == austin ]]; then run_austin "$@"; else run_tachyon "$@"; fi
}

# run_tachyon DEPTH CYCLE: one Tachyon run, inside the target's mount and PID
# namespaces and root (it attaches to the target's PID as seen there); appends a row.
run_tachyon() {
	local depth=$1 c=$2 tlog tout tu ts re
	tlog=$work/tachyon-d$depth-c$c.log
	tout=$inner/tachyon-d$depth-c$c.txt
	printf '%s: python%s depth %s cycle %s: python%s -m profiling.sampling attach -r %s -d %s\n' \
		"$prog" "$python" "$depth" "$c" "$python" "$tachyon_rate" "$duration" >&2
	read -r tu ts < <(cd / && cpu_of "$tlog" "${sampler_pin[@]}" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
		LANG=C.UTF-8 nsenter --target "$target_pid" --mount --pid --root --wd=/ \
		"$interp" -m profiling.sampling attach -r "$tachyon_rate" -d "$duration" \
		--collapsed -o "/tmp/${inner##*/}/${tout##*/}" "$ipid")
	[[ $(<"$work/rc") == 0 ]] || die "Tachyon failed (depth $depth); its output: $(cat "$tlog")"
	[[ -f $tout ]] || die "Tachyon wrote no profile (depth $depth); its output: $(cat "$tlog")"
	re='Captured ([0-9,]+) samples? in ([0-9.]+) seconds'
	[[ $(<"$tlog") =~ $re ]] || die "cannot parse Tachyon's summary: $(cat "$tlog")"
	local t_attempts=${BASH_REMATCH[1]//,/} t_secs=${BASH_REMATCH[2]} t_samples t_missed=0.0 t_hz t_failed
	t_samples=$(collapsed_total "$tout")
	re='missed ([0-9]+) samples from the expected total of ([0-9]+)'
	if [[ $(<"$tlog") =~ $re ]]; then
		t_missed=$(awk -v m="${BASH_REMATCH[1]}" -v e="${BASH_REMATCH[2]}" 'BEGIN { printf "%.1f", 100 * m / e }')
	fi
	t_hz=$(awk -v n="$t_attempts" -v s="$t_secs" 'BEGIN { printf "%.1f", (s > 0 ? n / s : 0) }')
	t_failed=$(awk -v n="$t_attempts" -v ok="$t_samples" 'BEGIN { printf "%.1f", (n > 0 ? 100 * (n - ok) / n : 0) }')
	# its lines start with "tid:N;"
	rows+=("$python $depth Tachyon $c $tachyon_rate $t_secs $t_hz $t_samples $t_failed $t_missed $tu $ts $(per_k "$tu" "$ts" "$t_samples") $(stack_frames "$tout" 1)")
}

rows=()
ratios=()
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
versions=()
for python in $pythons; do
	interp=$(interp_of "$python")
	# Tachyon is CPython 3.15's; austin reads 3.9 (not 3.11 or newer): a build
	# of another version gets pyprofd only
	tachyon=0 peer=''
	[[ $python == 3.15* ]] && tachyon=1 peer=Tachyon
	[[ $python == 3.9* ]] && command -v austin >/dev/null && tachyon=1 peer=austin
	versions+=("$python $(chroot "$(root_of "$python")" "$interp" -c 'import platform, sysconfig; print(platform.python_version() + ("t" if sysconfig.get_config_var("Py_GIL_DISABLED") else ""))')")
	for depth in $depths; do
		printf '%s: python%s depth %s: starting the target\n' "$prog" "$python" "$depth" >&2
		target_pid=$("${target_pin[@]}" "$run_target" start --python "$python" --mode container "$target_src" --depth "$depth")
		ipid=$(inner_pid "$target_pid")
		for ((c = 1; c <= cycles; c++)); do
			if ((c % 2 || !tachyon)); then
				run_pyprofd "$depth" "$c"
				((tachyon)) && run_peer "$depth" "$c"
			else
				run_peer "$depth" "$c"
				run_pyprofd "$depth" "$c"
			fi
		done
		"$run_target" stop "$target_pid"
		target_pid=''
	done
done

printf '\npyprofd %s (%s); CPython %s; %s s per profiler per depth; load average %s before, %s after\n\n' \
	"$(git -C "$repo_dir" rev-parse --short HEAD 2>/dev/null || echo '?')" "$pyprofd" \
	"$(printf '%s, ' "${versions[@]}" | sed 's/, $//')" \
	"$duration" "$load_before" "$(cut -d' ' -f1-3 /proc/loadavg)"
fmt='%-6s  %5s  %-7s  %5s  %9s  %5s  %11s  %9s  %7s  %7s  %6s  %6s  %7s  %12s  %6s\n'
# shellcheck disable=SC2059 # the format is ours
printf "$fmt" python depth tool cycle 'rate asked' secs 'achieved Hz' samples 'failed%' 'missed%' 'user s' 'sys s' 'CPU s' 'CPU s/1k smp' frames
for row in "${rows[@]}"; do
	read -r py d tool c r secs hz n f m u s k fr <<<"$row"
	# shellcheck disable=SC2059
	printf "$fmt" "$py" "$d" "$tool" "$c" "$r" "$secs" "$hz" "$n" "$f" "$m" "$u" "$s" \
		"$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')" "$k" "$fr"
done
printf '\nmedians over %s cycle(s); sampler CPUs %s, target CPUs %s:\n' "$cycles" \
	"${sampler_cpu:-any}" "${target_cpu:-any}"
printf '%-6s  %5s  %-7s  %11s  %14s  %18s\n' python depth tool 'achieved Hz' 'us CPU/sample' 'pyprofd / peer'
for python in $pythons; do
	for depth in $depths; do
		declare -A med_hz=() med_k=()
		peer=Tachyon
		[[ $python == 3.9* ]] && peer=austin
		for tool in pyprofd "$peer"; do
			hz=() k=()
			for row in "${rows[@]}"; do
				read -r py d t _ _ _ h _ _ _ _ _ kk _ <<<"$row"
				[[ $py == "$python" && $d == "$depth" && $t == "$tool" ]] || continue
				hz+=("$h") k+=("$kk")
			done
			((${#hz[@]})) || continue
			med_hz[$tool]=$(median "${hz[@]}")
			med_k[$tool]=$(median "${k[@]}")
		done
		# CPU s per 1,000 samples x 1000 = us per sample
		printf '%-6s  %5s  %-7s  %11.0f  %14.2f\n' "$python" "$depth" pyprofd "${med_hz[pyprofd]}" \
			"$(awk -v k="${med_k[pyprofd]}" 'BEGIN { print k * 1000 }')"
		if [[ -n ${med_k[$peer]:-} ]]; then
			# each cycle's own ratio, then their median
			cyc=()
			for ((c = 1; c <= cycles; c++)); do
				pk='' tk=''
				for row in "${rows[@]}"; do
					read -r py d t cc _ _ _ _ _ _ _ _ kk _ <<<"$row"
					[[ $py == "$python" && $d == "$depth" && $cc == "$c" ]] || continue
					[[ $t == pyprofd ]] && pk=$kk
					[[ $t == "$peer" ]] && tk=$kk
				done
				cyc+=("$(awk -v p="$pk" -v t="$tk" 'BEGIN { printf "%.3f", (t > 0 ? p / t : 0) }')")
			done
			ratio=$(median "${cyc[@]}")
			ratios+=("$python $depth $ratio $peer")
			printf '%-6s  %5s  %-7s  %11.0f  %14.2f  %18.3f\n' "$python" "$depth" "$peer" \
				"${med_hz[$peer]}" "$(awk -v k="${med_k[$peer]}" 'BEGIN { print k * 1000 }')" "$ratio"
		fi
		unset med_hz med_k
	done
done
if ((${#ratios[@]})); then
	printf '\nCPU per sample, pyprofd / peer (median of the per-cycle ratios; against Tachyon the bar: <= 0.50 at depth 50; the aim: <= 0.10):\n'
	for r in "${ratios[@]}"; do
		read -r py d ratio pr <<<"$r"
		printf '  python%-6s depth %5s: %s (pyprofd / %s)\n' "$py" "$d" "$ratio" "$pr"
	done
fi
