#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Benchmark: the agent at fleet scale. Starts N light targets
# (tests/targets/sleepy.py, spread over CPython 3.13, 3.14 and 3.15), runs
# `pyprofd agent` in wall mode at R Hz against exactly those, for N = 50, 100
# and 200, and reports the agent's CPU, CPU per sample, context switches per
# sample, memory and how evenly the targets were sampled; then a
# decomposition of the cost per sample (the agent with one target at the
# fleet's total rate, `pyprofd record` at that rate, `record` flat out). With
# two binaries it interleaves their runs and reports the ratio B / A.
# docs/performance.md ("Fleet scale") has runs. Not a test: `make test` does
# not run it.
set -euo pipefail

prog=agent_targets
script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_dir=$(dirname "$script_dir")
run_target=$repo_dir/scripts/run-target.sh
lib=$script_dir/benchlib.py
py=/usr/bin/python3

usage() {
	cat <<EOF
usage: bench/agent_targets.sh [-n LIST] [-r HZ] [-d SECONDS] [-c CYCLES]
                              [--pyprofd PATH] [--pyprofd-b PATH] [--budget FRACTION]
                              [--no-decomposition] [--decomposition-python 3.X]
                              [--agent-cpu LIST] [--target-cpus LIST] [--nice N] [--tsv FILE]
                              [--perf DIR] [--read-floor] [--idle]
                              [--mode wall|cpu] [--fleet busy|mixed]

For each target count in LIST (smallest first; targets are added, never
restarted), run the agent for a warm-up until every target is active plus
2 s, then measure SECONDS, CYCLES times; with --pyprofd-b the two binaries
take turns (A B A B ...). Then stop the fleet, start one target and run,
CYCLES times per binary, the decomposition:

  agent-1     the agent with that one target at the fleet's total rate
              (largest N x HZ, e.g. 200 x 100 = 20 kHz)
  record      pyprofd record -r (the same rate) on it, SECONDS long
  record-max  pyprofd record -r 1000k (flat out) on it

Per run: agent CPU (% of one core), us of CPU per sample taken, context
switches per sample (voluntary + involuntary, summed over the agent's
threads), VmRSS and VmHWM, samples taken per second per target (min / median
/ max over the targets, from /targets), failed, missed and skipped samples,
the busiest thread's CPU share, the 1-minute load average at start and end.
At the end: medians per binary, the ratio B / A, the decomposition, and
every run as TSV (lines starting "tsv<TAB>"; also in --tsv FILE).

  -n LIST                  target counts, comma-separated (default: 50,100,200)
  -r HZ                    sampling rate of every target (default: 100)
  -d SECONDS               measurement per run (default: 5)
  -c CYCLES                runs per binary and configuration (default: 3)
  --pyprofd PATH           binary A (default: build-release/pyprofd, built if
                           missing)
  --pyprofd-b PATH         binary B: interleave A and B, report B / A
  --budget FRACTION        after each fleet run, one more with cpu_budget
                           FRACTION (default: none)
  --no-decomposition       fleet runs only
  --decomposition-python V CPython of the one target (default: 3.15)
  --agent-cpu LIST         pin the agent and record (taskset -c LIST)
  --target-cpus LIST       pin the targets (taskset -c LIST)
  --nice N                 run the agent, record and the targets at niceness N
                           (e.g. -10: on a shared machine, other users' nice-0
                           builds then take little of their CPU; default: 0)
  --tsv FILE               also write the TSV (with a header line) to FILE
  --mode MODE              the agent's sampling mode, wall (default) or cpu;
                           rows of kind "fleet-cpu" in cpu mode
  --fleet KIND             busy (default): every target is sleepy.py (wakes
                           every 10 ms); mixed: 90 % blocked.py (blocked for
                           good) and 10 % waker.py (about 0.2 ms of Python every
                           20 ms), bench/targets/; rows of kind "fleet-mixed"
                           (or "fleet-mixed-cpu"). The decomposition and the
                           --idle and --read-floor runs are the busy fleet's
                           only
  --idle                   after the measured runs of the largest fleet, the
                           agent's idle cost: CYCLES runs per binary with
                           a relabel rule that keeps none of the targets
                           (every process is still scanned every 2 s);
                           rows of kind "idle", their CPU % is the figure
  --read-floor             after the measured runs of the largest fleet, the
                           same reads without the agent (bench/readfloor.c,
                           compiled with cc): four ranges shaped like a warm
                           sample's from each target, paced like the agent
                           (RATE per target, 1 ms ticks), then with 10 ms
                           ticks, round robin flat out, and one target flat
                           out, CYCLES times each: the floor under the
                           agent's CPU per sample
  --perf DIR               after the measured runs of the largest fleet, one
                           more run per binary under "perf record -g" (999 Hz,
                           kernel and user), written to DIR/perf-LABEL.data
                           with a "perf report" summary in DIR/perf-LABEL.txt;
                           its row (kind fleet-perf) is not one of the
                           measured ones: perf costs the agent CPU too

Unpinned (the default), the agent and the targets share every CPU. Needs root
and the test rootfs (scripts/python-rootfs.sh). With the defaults the runs
take about 3 minutes per binary, and starting the 200 targets about one
more on a quiet machine (5 at load 30-70): about 7 minutes for two binaries
when quiet.
EOF
}

die() {
	printf '%s: %s\n' "$prog" "$*" >&2
	exit 1
}

sizes=50,100,200 rate=100 duration=5 cycles=3 budget='' decomp=1 decomp_python=3.15
pyprofd_a='' pyprofd_b='' agent_cpus='' target_cpus='' tsv_out='' niceness=0 perf_dir=''
read_floor=0 idle=0 mode=wall fleet=busy
while (($#)); do
	case $1 in
	-n | -r | -d | -c | --pyprofd | --pyprofd-b | --budget | --decomposition-python | \
		--agent-cpu | --target-cpus | --nice | --tsv | --perf | --mode | --fleet)
		(($# >= 2)) || die "option $1 needs a value"
		case $1 in
		-n) sizes=$2 ;;
		-r) rate=$2 ;;
		-d) duration=$2 ;;
		-c) cycles=$2 ;;
		--pyprofd) pyprofd_a=$2 ;;
		--pyprofd-b) pyprofd_b=$2 ;;
		--budget) budget=$2 ;;
		--decomposition-python) decomp_python=$2 ;;
		--agent-cpu) agent_cpus=$2 ;;
		--target-cpus) target_cpus=$2 ;;
		--nice) niceness=$2 ;;
		--tsv) tsv_out=$2 ;;
		--perf) perf_dir=$2 ;;
		--mode) mode=$2 ;;
		--fleet) fleet=$2 ;;
		esac
		shift 2
		;;
	--no-decomposition) decomp=0 && shift ;;
	--read-floor) read_floor=1 && shift ;;
	--idle) idle=1 && shift ;;
	-h | --help) usage && exit 0 ;;
	*) usage >&2 && die "unknown argument: $1" ;;
	esac
done
[[ $sizes =~ ^[0-9]+(,[0-9]+)*$ ]] || die "bad -n $sizes: want counts like 50,100,200"
[[ $rate =~ ^[1-9][0-9]*$ ]] || die "bad -r $rate: want Hz, a whole number"
[[ $duration =~ ^[1-9][0-9]*$ ]] || die "bad -d $duration: want whole seconds"
if [[ -n $perf_dir ]]; then
	command -v perf >/dev/null || die "--perf needs perf (Debian: linux-perf)"
	mkdir -p -- "$perf_dir" || die "cannot create $perf_dir"
	perf_dir=$(cd "$perf_dir" && pwd)
fi
[[ $cycles =~ ^[1-9][0-9]*$ ]] || die "bad -c $cycles"
[[ $niceness =~ ^-?[0-9]+$ ]] || die "bad --nice $niceness"
[[ -z $budget || $budget =~ ^0?\.[0-9]+$ ]] || die "bad --budget $budget: want a fraction like 0.02"
case $decomp_python in 3.13 | 3.14 | 3.15) ;; *) die "bad --decomposition-python $decomp_python" ;; esac
((EUID == 0)) || die "needs root"
command -v taskset >/dev/null || die "taskset not found (Debian package util-linux)"
if [[ -z $pyprofd_a ]]; then
	pyprofd_a=$repo_dir/build-release/pyprofd
	if [[ ! -x $pyprofd_a ]]; then
		cmake --preset release -S "$repo_dir" >/dev/null
		cmake --build "$repo_dir/build-release" -j "$(nproc)" --target pyprofd >/dev/null
	fi
fi
[[ -x $pyprofd_a ]] || die "no binary at $pyprofd_a"
pyprofd_a=$(realpath -- "$pyprofd_a")
[[ -z $pyprofd_b || -x $pyprofd_b ]] || die "no binary at $pyprofd_b"
[[ -z $pyprofd_b ]] || pyprofd_b=$(realpath -- "$pyprofd_b")
labels=(A)
declare -A bin=([A]=$pyprofd_a)
if [[ -n $pyprofd_b ]]; then
	labels+=(B)
	bin[B]=$pyprofd_b
fi
[[ $mode == wall || $mode == cpu ]] || die "--mode: wall or cpu, not '$mode'"
[[ $fleet == busy || $fleet == mixed ]] || die "--fleet: busy or mixed, not '$fleet'"
# the kind of the fleet rows, and which targets they sample
fleet_kind=fleet
[[ $fleet == mixed ]] && fleet_kind+=-mixed
[[ $mode == cpu ]] && fleet_kind+=-cpu
fleet_pattern=sleepy
[[ $fleet == mixed ]] && fleet_pattern='(blocked|waker)'
IFS=, read -r -a size_list <<<"$sizes"
mapfile -t size_list < <(printf '%s\n' "${size_list[@]}" | sort -n)
n_max=${size_list[-1]}

# CPU placement.
all_cpus="0-$(($(nproc) - 1))"
agent_pin=(nice -n "$niceness" taskset -c "${agent_cpus:-$all_cpus}")
target_pin=(nice -n "$niceness" taskset -c "${target_cpus:-$all_cpus}")
if [[ -n $(comm -12 <("$py" "$lib" cpus "${agent_cpus:-$all_cpus}" | sort) \
	<("$py" "$lib" cpus "${target_cpus:-$all_cpus}" | sort)) ]]; then
	placement="agent ${agent_cpus:-$all_cpus} targets ${target_cpus:-$all_cpus}: shared"
else
	placement="agent $agent_cpus targets $target_cpus: separate"
fi
placement+=", nice $niceness"

work=$(mktemp -d "${TMPDIR:-/tmp}/pyprofd-bench.XXXXXX")
tsv=$work/runs.tsv
pids=()
wakers=0
agent=''
stop_targets() {
	local pid
	((${#pids[@]})) || return 0
	kill -TERM "${pids[@]}" 2>/dev/null || true
	for pid in "${pids[@]}"; do
		"$run_target" stop "$pid" >/dev/null 2>&1 || true
	done
	pids=()
}
cleanup() {
	if [[ -n $agent ]]; then
		kill "$agent" 2>/dev/null && wait "$agent" 2>/dev/null
	fi
	stop_targets
	if [[ -n $own_autogroup ]]; then
		printf '%s\n' "$own_autogroup" >"/proc/$$/autogroup" 2>/dev/null || true
	fi
	rm -rf -- "$work"
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

if ((read_floor)); then
	command -v cc >/dev/null || die "--read-floor needs a C compiler (cc)"
	cc -O2 -o "$work/readfloor" "$script_dir/readfloor.c" || die "cannot build bench/readfloor.c"
fi

# Copies of the targets under names the agent's relabeling keeps (other Python
# processes on a shared machine are left alone).
token=bench$$
cp "$repo_dir/tests/targets/sleepy.py" "$work/${token}_sleepy.py"
cp "$repo_dir/tests/targets/sleepy.py" "$work/${token}_one.py"
cp "$script_dir/targets/blocked.py" "$work/${token}_blocked.py"
cp "$script_dir/targets/waker.py" "$work/${token}_waker.py"

# start_targets COUNT FILE: COUNT more targets of FILE, twenty at a time,
# CPython versions in turn.
versions=(3.13 3.14 3.15)
start_targets() {
	local count=$1 file=$2 i k batch=() t0=$SECONDS
	for ((i = 0; i < count; i++)); do
		k=${#pids[@]}
		"${target_pin[@]}" "$run_target" start --python "${versions[(k + i) % ${#versions[@]}]}" "$file" \
			>"$work/pid.$i" &
		batch+=($!)
		if ((${#batch[@]} == 20 || i == count - 1)); then
			wait "${batch[@]}" || die "a target did not start"
			batch=()
			printf '.' >&2
		fi
	done
	for ((i = 0; i < count; i++)); do
		pids+=("$(<"$work/pid.$i")")
		autogroup_nice "${pids[-1]}"
	done
	printf ' %d s\n' "$((SECONDS - t0))" >&2
}

port=$((20000 + RANDOM % 20000))

# run_agent LABEL CYCLE KIND N RATE BUDGET FILEPATTERN: one agent run against
# the N targets whose command line matches FILEPATTERN; appends a TSV row
# and prints a readable one.
run_agent() {
	local label=$1 cycle=$2 kind=$3 n=$4 hz=$5 cpu_budget=$6 pattern=$7 ls le active waited
	cat >"$work/agent.yml" <<EOF
global:
  sample_rate: $hz
  mode: $mode
  profile_interval: 1m
  limits:
    max_targets: $((n + 10))
    cpu_budget: $cpu_budget
discovery:
  refresh_interval: 2s
  min_process_age: 0s
profile_configs:
  - job_name: bench
    all_threads: false
    relabel_configs:
      - source_labels: [__meta_process_commandline]
        regex: '.*/${token}_${pattern}[.]py.*'
        action: keep
server:
  listen_address: 127.0.0.1:$port
EOF
	ls=$(load1)
	"${agent_pin[@]}" "${bin[$label]}" agent --config.file "$work/agent.yml" >"$work/agent.log" 2>&1 &
	agent=$!
	for ((waited = 0; waited < 60; waited++)); do
		sleep 0.5
		active=$(curl -s "127.0.0.1:$port/metrics" | awk '/^pyprofd_targets\{job="bench"\}/ {print $2}') || true
		[[ ${active:-0} == "$n" ]] && break
	done
	[[ ${active:-0} == "$n" ]] || die "only ${active:-0} of $n targets active after 30 s; log: $(tail -5 "$work/agent.log")"
	sleep 2
	"$py" "$lib" snap "$agent" "$port" "$work/before.json"
	if [[ $kind == fleet-perf ]]; then
		perf record -q -F 999 -g -p "$agent" -o "$perf_dir/perf-$label.data" -- sleep "$duration" \
			>/dev/null 2>&1 || printf '%s: perf record failed\n' "$prog" >&2
	else
		sleep "$duration"
	fi
	"$py" "$lib" snap "$agent" "$port" "$work/after.json"
	kill "$agent"
	wait "$agent" || true
	agent=''
	le=$(load1)
	"$py" "$lib" agent-row "$work/before.json" "$work/after.json" label="$label" \
		binary="${bin[$label]}" cycle="$cycle" kind="$kind" n="$n" rate="$hz" \
		load_start="$ls" load_end="$le" cpus="$placement" >>"$tsv"
	show_last
}

# run_record LABEL CYCLE KIND RATE PID: one `pyprofd record` run.
run_record() {
	local label=$1 cycle=$2 kind=$3 hz=$4 pid=$5 ls le
	ls=$(load1)
	"$py" "$lib" rusage "$work/rusage.json" "$work/record.log" -- "${agent_pin[@]}" "${bin[$label]}" \
		record -r "$hz" -d "$duration" -o "$work/record.txt" "$pid"
	le=$(load1)
	"$py" "$lib" record-row "$work/rusage.json" "$work/record.log" label="$label" \
		binary="${bin[$label]}" cycle="$cycle" kind="$kind" n=1 rate="$hz" \
		load_start="$ls" load_end="$le" cpus="$placement" >>"$tsv"
	show_last
}

# The last TSV row, readable.
show_last() {
	tail -n 1 "$tsv" | awk -F'\t' '{
		printf "%s %-10s %4sx%-7s cycle %s: %7.2f us/sample %6.1f%% CPU %6.3f cs/sample RSS %6s MB HWM %6.1f MB  per target %s/%s/%s Hz  failed %s missed %s  load %s-%s\n",
			$1, $4, $5, $7, $3, $14, $11, $17, $18, $19, $20, $21, $22, $23, $24, $28, $29 }'
}

printf '#%s\n' "$("$py" -c "import sys; sys.path.insert(0, '$script_dir'); import benchlib; print('\t'.join(benchlib.COLUMNS))")" >"$tsv"
t_start=$(date +%s)
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
for label in "${labels[@]}"; do
	printf '%s: %s (sha256 %s)\n' "$label" "${bin[$label]}" "$(sha256sum "${bin[$label]}" | cut -c1-12)"
done
printf 'CPUs: %s (%s online); load average %s; %s x %s Hz, %s s per run, %s cycles\n\n' \
	"$placement" "$(nproc)" "$load_start" "$sizes" "$rate" "$duration" "$cycles"

for n in "${size_list[@]}"; do
	if ((n > ${#pids[@]})) && [[ $fleet == busy ]]; then
		printf 'starting %d more targets ' "$((n - ${#pids[@]}))" >&2
		start_targets "$((n - ${#pids[@]}))" "$work/${token}_sleepy.py"
	elif ((n > ${#pids[@]})); then
		# a tenth wakers (rounded up), the rest blocked for good
		want_wakers=$(((n + 9) / 10))
		if ((want_wakers > wakers)); then
			printf 'starting %d more waking targets ' "$((want_wakers - wakers))" >&2
			start_targets "$((want_wakers - wakers))" "$work/${token}_waker.py"
			wakers=$want_wakers
		fi
		printf 'starting %d more blocked targets ' "$((n - ${#pids[@]}))" >&2
		start_targets "$((n - ${#pids[@]}))" "$work/${token}_blocked.py"
	fi
	for ((c = 1; c <= cycles; c++)); do
		for label in "${labels[@]}"; do
			run_agent "$label" "$c" "$fleet_kind" "$n" "$rate" 1 "$fleet_pattern"
			if [[ -n $budget ]]; then
				run_agent "$label" "$c" "$fleet_kind-budget-$budget" "$n" "$rate" "$budget" \
					"$fleet_pattern"
			fi
		done
	done
	if [[ -n $perf_dir && $n == "$n_max" ]]; then
		for label in "${labels[@]}"; do
			run_agent "$label" 1 fleet-perf "$n" "$rate" 1 "$fleet_pattern"
			perf report -i "$perf_dir/perf-$label.data" --no-children --sort dso,symbol \
				--stdio 2>/dev/null | awk 'NR <= 80' >"$perf_dir/perf-$label.txt" || true
		done
	fi
	[[ $fleet == busy ]] || continue
	if ((idle)) && [[ $n == "$n_max" ]]; then
		for ((c = 1; c <= cycles; c++)); do
			for label in "${labels[@]}"; do
				run_agent "$label" "$c" idle 0 "$rate" 1 none
			done
		done
	fi
	if ((read_floor)) && [[ $n == "$n_max" ]]; then
		for ((c = 1; c <= cycles; c++)); do
			for args in "-m paced" "-m paced -t 10000" "-m flat" "-m one"; do
				# shellcheck disable=SC2086 # args: words on purpose
				"${agent_pin[@]}" "$work/readfloor" $args -r "$rate" -d "$duration" "${pids[@]}" |
					sed "s/^/cycle $c: /" | tee -a "$work/floor.txt"
			done
		done
	fi
done
stop_targets

if ((decomp)) && [[ $fleet == busy ]]; then
	total=$((n_max * rate))
	printf 'decomposition: one target (CPython %s) at %d Hz ' "$decomp_python" "$total" >&2
	versions=("$decomp_python")
	start_targets 1 "$work/${token}_one.py"
	for ((c = 1; c <= cycles; c++)); do
		for label in "${labels[@]}"; do
			run_agent "$label" "$c" agent-1 1 "$total" 1 one
			run_record "$label" "$c" record "$total" "${pids[0]}"
			run_record "$label" "$c" record-max 1000000 "${pids[0]}"
		done
	done
	stop_targets
fi

printf '\n'
"$py" "$lib" fleet-summary "$tsv"
if [[ -s $work/floor.txt ]]; then
	printf '\nread floor (bench/readfloor.c, %s processes), median over %s runs:\n' "$n_max" "$cycles"
	# lines: "cycle C: readfloor KIND: ..., X us CPU per read, ..."
	sed -n 's/^cycle [0-9]*: readfloor \([^:]*\):.* \([0-9.]*\) us CPU per read.*/\1\t\2/p' \
		"$work/floor.txt" | sort -t$'\t' -k1,1 -k2,2n | awk -F'\t' '
		{ v[$1] = v[$1] " " $2; n[$1]++ }
		END { for (k in v) { split(substr(v[k], 2), a, " "); m = n[k] % 2 ? a[(n[k] + 1) / 2] : (a[n[k] / 2] + a[n[k] / 2 + 1]) / 2
			printf "  %-22s %7.2f us of CPU per read\n", k, m } }' | sort
fi
printf '\nload average %s at the start, %s at the end; %s; %d s in all\n' "$load_start" \
	"$(cut -d' ' -f1-3 /proc/loadavg)" "$placement" "$(($(date +%s) - t_start))"
[[ -z $tsv_out ]] || cp -- "$tsv" "$tsv_out"
printf '\n'
sed 's/^/tsv\t/' "$tsv"
