#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Benchmark: how much a sampler slows a CPU-bound target. One CPython 3.15
# process (bench/targets/cpubound.py) runs a pure-Python loop that counts its
# own work; its throughput is measured alone and while `pyprofd record` or
# CPython 3.15's own sampler ("Tachyon", python3.15 -m profiling.sampling)
# samples it at 100 Hz and 10 kHz, in interleaved turns (alone, pyprofd,
# Tachyon, alone, ...), several cycles. Reports the throughput ratio to the
# median alone run and the target's involuntary context switches per second.
# docs/performance.md ("Fleet scale") has runs. Not a test: `make test` does
# not run it.
set -euo pipefail

prog=slowdown
script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_dir=$(dirname "$script_dir")
run_target=$repo_dir/scripts/run-target.sh
target_src=$script_dir/targets/cpubound.py
lib=$script_dir/benchlib.py
py=/usr/bin/python3
python=3.15

usage() {
	cat <<EOF
usage: bench/slowdown.sh [-d SECONDS] [-c CYCLES] [--rates "100 10000"] [--depth N]
                         [--pyprofd PATH] [--pyprofd-b PATH] [--no-tachyon]
                         [--cpus LIST] [--sampler-cpus LIST] [--nice N] [--tsv FILE]

Starts bench/targets/cpubound.py under CPython $python (container mode, as
bench/compare_tachyon.sh does, so that Tachyon can join its namespaces), then
for each cycle and each rate measures SECONDS of the target's throughput in
turn:

  alone       nothing samples it
  pyprofd     pyprofd record -r RATE (from the host, by host PID)
  pyprofd-b   the same with --pyprofd-b's binary, if given
  tachyon     python$python -m profiling.sampling attach -r RATE --collapsed
              (inside the target's mount and PID namespaces and root)

(the samplers' order alternates from cycle to cycle). A sampler starts 1 s
before its window and runs 1 s past it. The window is two SIGUSR1s to the
target, which answers with its count of work() calls and its clock, exact to
one call (about 12 us). Reported per condition: throughput as a ratio to the
median of every alone window (median, min and max over the cycles), the
target's CPU share, its involuntary and voluntary context switches per
second (/proc/PID/status of its only thread), the sampler's CPU (% of one
core, whole run, from wait4), its achieved rate, and the throughput per
second of the target's own CPU time as a ratio to alone's (what remains once
preemption and waiting for a CPU are taken out), and the median "paired"
ratio: each window against the alone window that opened its cycle and rate
(follows a machine whose speed drifts). At the end every window as TSV (lines starting "tsv<TAB>"; also in --tsv FILE).

  -d SECONDS          measurement window (default: 5)
  -c CYCLES           cycles (default: 3)
      --rates LIST    sampling rates in Hz (default: "100 10000")
      --depth N       the target's stack depth in Python frames (default: 10)
      --pyprofd PATH  pyprofd binary (default: build-release/pyprofd; build
                      it with: cmake --preset release && cmake --build
                      --preset release -j2)
      --pyprofd-b PATH  a second binary, run as its own condition
      --no-tachyon    leave CPython's sampler out
      --cpus LIST     CPUs of the target and of the sampler (taskset -c;
                      default: every online CPU, so on a 2-core machine
                      both can use both cores, as a pod's sidecar would)
      --sampler-cpus LIST  the sampler's CPUs instead (e.g. --cpus 0
                      --sampler-cpus 1: the sampler on another CPU)
      --nice N        run the target and the samplers at niceness N (e.g.
                      -10: on a shared machine, other users' nice-0 builds
                      then take little of their CPU; default: 0)
      --tsv FILE      also write the TSV (with a header line) to FILE
  -h, --help          show this help

Needs root and the test rootfs (scripts/python-rootfs.sh). Takes about
CYCLES x rates x (conditions x (SECONDS + 2.5)) s: with the defaults, about
2.5 minutes.
EOF
}

die() {
	printf '%s: %s\n' "$prog" "$*" >&2
	exit 1
}

duration=5 cycles=3 rates="100 10000" depth=10 pyprofd_a=$repo_dir/build-release/pyprofd pyprofd_b=''
tachyon=1 cpus='' sampler_cpus='' tsv_out='' niceness=0
while (($#)); do
	case $1 in
	-d | -c | --rates | --depth | --pyprofd | --pyprofd-b | --cpus | --sampler-cpus | --nice | --tsv)
		(($# >= 2)) || die "option $1 needs a value"
		case $1 in
		-d) duration=$2 ;;
		-c) cycles=$2 ;;
		--rates) rates=$2 ;;
		--depth) depth=$2 ;;
		--pyprofd) pyprofd_a=$2 ;;
		--pyprofd-b) pyprofd_b=$2 ;;
		--cpus) cpus=$2 ;;
		--sampler-cpus) sampler_cpus=$2 ;;
		--nice) niceness=$2 ;;
		--tsv) tsv_out=$2 ;;
		esac
		shift 2
		;;
	--no-tachyon) tachyon=0 && shift ;;
	-h | --help) usage && exit 0 ;;
	*) usage >&2 && die "unknown argument: $1" ;;
	esac
done
[[ $duration =~ ^[1-9][0-9]*$ ]] || die "bad -d $duration: want whole seconds"
[[ $cycles =~ ^[1-9][0-9]*$ ]] || die "bad -c $cycles"
[[ $niceness =~ ^-?[0-9]+$ ]] || die "bad --nice $niceness"
if ! [[ $depth =~ ^[0-9]+$ ]] || ((depth < 5)); then die "bad --depth $depth: want at least 5"; fi
for r in $rates; do
	[[ $r =~ ^[1-9][0-9]*$ ]] || die "bad rate $r: want Hz, a whole number"
done
((EUID == 0)) || die "must run as root (chroot, nsenter and reading the target's memory need it)"
[[ -x $pyprofd_a ]] || die "no pyprofd binary at $pyprofd_a: build it with" \
	"'cmake --preset release && cmake --build --preset release -j2', or pass --pyprofd"
pyprofd_a=$(realpath -- "$pyprofd_a")
if [[ -n $pyprofd_b ]]; then
	[[ -x $pyprofd_b ]] || die "no binary at $pyprofd_b"
	pyprofd_b=$(realpath -- "$pyprofd_b")
fi
command -v nsenter >/dev/null || die "nsenter not found (Debian package util-linux)"
command -v taskset >/dev/null || die "taskset not found (Debian package util-linux)"
rootfs=$("$repo_dir/scripts/python-rootfs.sh" --print-path) || die "cannot find the rootfs path"
[[ -x $rootfs/usr/bin/python$python ]] ||
	die "no python$python in the rootfs $rootfs: run scripts/python-rootfs.sh (as root)"
rootfs=$(realpath -- "$rootfs")

# CPU placement: both pinned to the same set unless --sampler-cpus.
cpus=${cpus:-0-$(($(nproc) - 1))}
sampler_cpus=${sampler_cpus:-$cpus}
if [[ -n $(comm -12 <("$py" "$lib" cpus "$cpus" | sort) <("$py" "$lib" cpus "$sampler_cpus" | sort)) ]]; then
	placement="target $cpus sampler $sampler_cpus: shared"
else
	placement="target $cpus sampler $sampler_cpus: separate"
fi
placement+=", nice $niceness"

work=$(mktemp -d "${TMPDIR:-/tmp}/pyprofd-bench.XXXXXX")
inner=$(mktemp -d "$rootfs/tmp/pyprofd-bench.XXXXXX")
tsv=$work/windows.tsv
target_pid=''
sampler=''
cleanup() {
	if [[ -n $sampler ]]; then
		kill "$sampler" 2>/dev/null && wait "$sampler" 2>/dev/null
	fi
	if [[ -n $target_pid ]]; then
		"$run_target" stop "$target_pid" || true
	fi
	if [[ -n $own_autogroup ]]; then
		printf '%s\n' "$own_autogroup" >"/proc/$$/autogroup" 2>/dev/null || true
	fi
	rm -rf -- "$work" "$inner"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

load1() { cut -d' ' -f1 /proc/loadavg; }

# With autogroup scheduling (/proc/sys/kernel/sched_autogroup_enabled), a
# process's niceness counts only against the processes of its own session,
# and every session (each target: run-target.sh uses setsid) competes with
# equal weight. --nice therefore also sets the niceness of the group: the
# script's own session's (the agent and the samplers) while it runs, and each
# target's.
own_autogroup=''
autogroup_nice() {
	if ((niceness != 0)) && [[ -w /proc/$1/autogroup ]]; then
		printf '%s\n' "$niceness" >"/proc/$1/autogroup" 2>/dev/null || true
	fi
}
if ((niceness != 0)) && [[ -w /proc/$$/autogroup ]]; then
	own_autogroup=$(awk '{print $NF}' "/proc/$$/autogroup")
	autogroup_nice $$
fi

# mark: ask the target for its count; prints "CALLS MONO_NS CPU_NS IVCS VCS".
tlog=$work/target.log
mark() {
	local before lines i=0 st ivcs vcs
	before=$(grep -c '^pyprofd-cpubound: ' "$tlog" || true)
	st=$(<"/proc/$target_pid/status")
	kill -USR1 "$target_pid"
	ivcs=$(awk '/^nonvoluntary_ctxt_switches:/ {print $2}' <<<"$st")
	vcs=$(awk '/^voluntary_ctxt_switches:/ {print $2}' <<<"$st")
	while :; do
		lines=$(grep -c '^pyprofd-cpubound: ' "$tlog" || true)
		((lines > before)) && break
		((++i < 500)) || die "the target did not answer SIGUSR1"
		sleep 0.01
	done
	printf '%s %s %s\n' "$(grep '^pyprofd-cpubound: ' "$tlog" | tail -n 1 | cut -d' ' -f2-4)" "$ivcs" "$vcs"
}

# window CYCLE RATE CONDITION: one measured window; appends a TSV row.
window() {
	local cycle=$1 hz=$2 cond=$3 ls le m0 m1 cmd=() samples='' shz='' scpu='' ru
	ls=$(load1)
	case $cond in
	pyprofd | pyprofd-b)
		local b=$pyprofd_a
		[[ $cond == pyprofd-b ]] && b=$pyprofd_b
		cmd=("$b" record -r "$hz" -d "$((duration + 2))" -o "$work/record.txt" "$target_pid")
		;;
	tachyon)
		cmd=(env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8
			nsenter --target "$target_pid" --mount --pid --root --wd=/
			"/usr/bin/python$python" -m profiling.sampling attach -r "$hz" -d "$((duration + 2))"
			--collapsed -o "/tmp/${inner##*/}/tachyon.txt" "$ipid")
		;;
	esac
	if ((${#cmd[@]})); then
		(cd / && exec "$py" "$lib" rusage "$work/rusage.json" "$work/sampler.log" -- \
			nice -n "$niceness" taskset -c "$sampler_cpus" "${cmd[@]}") &
		sampler=$!
	fi
	sleep 1
	m0=$(mark)
	sleep "$duration"
	m1=$(mark)
	if [[ -n $sampler ]]; then
		wait "$sampler" || die "$cond failed: $(tail -5 "$work/sampler.log")"
		sampler=''
		ru=$(<"$work/rusage.json")
		[[ $ru == *'"rc": 0,'* ]] || die "$cond failed: $(tail -5 "$work/sampler.log")"
		local re
		if [[ $cond == tachyon ]]; then
			re='Captured ([0-9,]+) samples? in ([0-9.]+) seconds'
		else
			re='pyprofd: ([0-9]+) samples in ([0-9.]+) s'
		fi
		[[ $(<"$work/sampler.log") =~ $re ]] || die "cannot parse $cond's summary: $(tail -5 "$work/sampler.log")"
		samples=${BASH_REMATCH[1]//,/}
		shz=$(awk -v n="$samples" -v s="${BASH_REMATCH[2]}" 'BEGIN { printf "%.0f", n / s }')
		scpu=$("$py" "$lib" cpu-pct "$work/rusage.json")
	fi
	le=$(load1)
	awk -v OFS='\t' -v m0="$m0" -v m1="$m1" -v cyc="$cycle" -v hz="$hz" -v cond="$cond" -v ls="$ls" -v le="$le" \
		-v samples="$samples" -v shz="$shz" -v scpu="$scpu" -v cpus="$placement" '
		BEGIN {
			split(m0, a, " "); split(m1, b, " ")
			secs = (b[2] - a[2]) / 1e9
			print cond, cyc, (cond == "alone" ? "-" : hz), sprintf("%.3f", secs), b[1] - a[1],
				sprintf("%.1f", (b[1] - a[1]) / secs), sprintf("%.1f", 100 * (b[3] - a[3]) / 1e9 / secs),
				sprintf("%.1f", (b[4] - a[4]) / secs), sprintf("%.1f", (b[5] - a[5]) / secs),
				scpu, samples, shz, ls, le, cpus
		}' >>"$tsv"
	tail -n 1 "$tsv" | awk -F'\t' '{ printf "cycle %s %-9s %6s Hz: %9s calls/s, target CPU %5s%%, %7s invol. cs/s; sampler CPU %6s%%, %7s Hz achieved; load %s-%s\n",
		$2, $1, $3, $6, $7, $8, ($10 == "" ? "-" : $10), ($12 == "" ? "-" : $12), $13, $14 }'
}

printf '#condition\tcycle\trate\tsecs\tcalls\tcalls_per_s\ttarget_cpu_pct\ttarget_ivcs_per_s\ttarget_vcs_per_s\tsampler_cpu_pct\tsampler_samples\tsampler_hz\tload_start\tload_end\tcpus\n' >"$tsv"
t_start=$(date +%s)
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
target_pid=$(nice -n "$niceness" taskset -c "$cpus" "$run_target" start --python "$python" --mode container --log "$tlog" \
	"$target_src" --depth "$depth")
ipid=$(awk '/^NSpid:/ { print $NF }' "/proc/$target_pid/status")
autogroup_nice "$target_pid"
printf 'pyprofd: %s (sha256 %s)\n' "$pyprofd_a" "$(sha256sum "$pyprofd_a" | cut -c1-12)"
[[ -z $pyprofd_b ]] || printf 'pyprofd-b: %s (sha256 %s)\n' "$pyprofd_b" "$(sha256sum "$pyprofd_b" | cut -c1-12)"
printf 'target: cpubound.py --depth %s, CPython %s; CPUs %s (%s online); load average %s; %s s windows, %s cycles\n\n' \
	"$depth" "$(chroot "$rootfs" "/usr/bin/python$python" -c 'import platform; print(platform.python_version())' 2>/dev/null ||
		echo "$python")" "$placement" "$(nproc)" "$load_start" "$duration" "$cycles"

samplers=(pyprofd)
[[ -n $pyprofd_b ]] && samplers+=(pyprofd-b)
((tachyon)) && samplers+=(tachyon)
for ((c = 1; c <= cycles; c++)); do
	for r in $rates; do
		window "$c" "$r" alone
		order=("${samplers[@]}")
		if ((c % 2 == 0)); then
			mapfile -t order < <(printf '%s\n' "${samplers[@]}" | tac)
		fi
		for s in "${order[@]}"; do
			window "$c" "$r" "$s"
		done
	done
done

printf '\n'
"$py" "$lib" slowdown-summary "$tsv"
printf '\nload average %s at the start, %s at the end; %s; %d s in all\n' "$load_start" \
	"$(cut -d' ' -f1-3 /proc/loadavg)" "$placement" "$(($(date +%s) - t_start))"
[[ -z $tsv_out ]] || cp -- "$tsv" "$tsv_out"
printf '\n'
sed 's/^/tsv\t/' "$tsv"
