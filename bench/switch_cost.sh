#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Benchmark: what the idle check's context-switch records cost the target
# (issue 26). bench/targets/pingpong.py makes ROUNDS round trips between two
# threads over pipes (four context switches each), alone, under
# `pyprofd record -a -r 1 --idle-check off` and under `--idle-check perf`
# (a perf event per thread writing a record at every switch), interleaved,
# CYCLES times; prints round trips per second per run and the medians' ratios
# to the run alone. At 1 Hz the samples themselves cost nothing measurable:
# the difference between off and perf is the records. Not a test.
set -euo pipefail

prog=switch_cost
script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_dir=$(dirname "$script_dir")
py=/usr/bin/python3
pyprofd=$repo_dir/build-release/pyprofd
cycles=5
rounds=100000

usage() {
	cat <<USAGE
usage: bench/switch_cost.sh [-c CYCLES] [-n ROUNDS] [--pyprofd PATH]

  -c CYCLES       runs of each condition, interleaved (default 5)
  -n ROUNDS       round trips per run (default 100000)
  --pyprofd PATH  the binary (default build-release/pyprofd)
USAGE
}

while (($#)); do
	case $1 in
	-c) cycles=$2; shift ;;
	-n) rounds=$2; shift ;;
	--pyprofd) pyprofd=$2; shift ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
	shift
done
[[ -x $pyprofd ]] || { printf '%s: no %s (make release)\n' "$prog" "$pyprofd" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# run CONDITION: one pingpong run, alone or under record; prints its rate
run() {
	local cond=$1 rate rec=''
	coproc PP { "$py" -u "$script_dir/targets/pingpong.py" "$rounds"; }
	local pid=$PP_PID line
	read -r line <&"${PP[0]}"
	[[ $line == 'pyprofd-target: ready' ]] || { printf '%s: %s\n' "$prog" "$line" >&2; exit 1; }
	if [[ $cond != alone ]]; then
		"$pyprofd" record -a -r 1 --idle-check "$cond" --no-progress -o "$work/out.txt" \
			"$pid" 2>"$work/record.log" &
		rec=$!
		sleep 1 # attached: the watch is open
	fi
	echo go >&"${PP[1]}"
	read -r line <&"${PP[0]}"
	rate=${line##* }
	wait "$pid" 2>/dev/null || true
	if [[ -n $rec ]]; then
		wait "$rec" 2>/dev/null || true
	fi
	printf '%s\n' "$rate"
}

declare -A rates
for ((c = 1; c <= cycles; c++)); do
	for cond in alone off perf; do
		r=$(run "$cond")
		rates[$cond]+="$r "
		printf 'cycle %d %-5s %s round trips/s\n' "$c" "$cond" "$r"
	done
done
"$py" - "${rates[alone]}" "${rates[off]}" "${rates[perf]}" <<'PY'
import statistics, sys
alone, off, perf = ([float(v) for v in a.split()] for a in sys.argv[1:4])
ma, mo, mp = (statistics.median(x) for x in (alone, off, perf))
print(f"medians: alone {ma:.0f}, record --idle-check off {mo:.0f} ({mo / ma:.3f}), "
      f"--idle-check perf {mp:.0f} ({mp / ma:.3f}); perf / off {mp / mo:.3f}")
PY
