#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Benchmark: the agent with many targets on one sampling thread. Starts N
# targets (tests/targets/sleepy.py, spread over CPython 3.13, 3.14 and 3.15),
# runs `pyprofd agent` in wall mode against exactly those, and reports the
# agent's CPU and memory and how evenly the targets were sampled, once
# without a CPU budget and once with one (fair throttling). docs/performance.md
# has a run. Not a test: `make test` does not run it.
set -euo pipefail

prog=agent_targets
script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_dir=$(dirname "$script_dir")
run_target=$repo_dir/scripts/run-target.sh

usage() {
	cat <<EOF
usage: bench/agent_targets.sh [-n TARGETS] [-r HZ] [-d SECONDS] [--budget FRACTION]
                              [--pyprofd PATH]

  -n TARGETS          targets to start (default: 100)
  -r HZ               sampling rate of every target (default: 100)
  -d SECONDS          measurement time per run, after a 3 s warm-up (default: 10)
  --budget FRACTION   cpu_budget of the second run (default: 0.02)
  --pyprofd PATH      the binary (default: build-release/pyprofd, built if missing)

Needs root and the test rootfs (scripts/python-rootfs.sh).
EOF
}

die() {
	printf '%s: %s\n' "$prog" "$*" >&2
	exit 1
}

n=100 rate=100 duration=10 budget=0.02 pyprofd=
while (($#)); do
	case $1 in
	-n) n=$2 && shift ;;
	-r) rate=$2 && shift ;;
	-d) duration=$2 && shift ;;
	--budget) budget=$2 && shift ;;
	--pyprofd) pyprofd=$2 && shift ;;
	-h | --help) usage && exit 0 ;;
	*) usage >&2 && die "unknown argument: $1" ;;
	esac
	shift
done
[ "$(id -u)" -eq 0 ] || die "needs root"
if [ -z "$pyprofd" ]; then
	pyprofd=$repo_dir/build-release/pyprofd
	if [ ! -x "$pyprofd" ]; then
		cmake --preset release -S "$repo_dir" >/dev/null
		cmake --build "$repo_dir/build-release" -j "$(nproc)" --target pyprofd >/dev/null
	fi
fi

work=$(mktemp -d)
pids=()
agent=
cleanup() {
	[ -n "$agent" ] && kill "$agent" 2>/dev/null && wait "$agent" 2>/dev/null
	for pid in "${pids[@]}"; do
		"$run_target" stop "$pid" >/dev/null 2>&1 || true
	done
	rm -rf "$work"
}
trap cleanup EXIT INT TERM

# A copy of sleepy.py under a name the agent's relabeling keeps, and nothing else.
token=bench$$
cp "$repo_dir/tests/targets/sleepy.py" "$work/${token}_sleepy.py"
printf 'starting %d targets ' "$n" >&2
versions=(3.13 3.14 3.15)
for ((i = 0; i < n; i++)); do
	pids+=("$("$run_target" start --python "${versions[i % 3]}" "$work/${token}_sleepy.py")")
	((i % 10 == 9)) && printf '.' >&2
done
printf '\n' >&2

port=$((20000 + RANDOM % 20000))
ticks=$(getconf CLK_TCK)

# run NAME BUDGET: one agent run; prints one table row
run() {
	local name=$1 cpu_budget=$2
	cat >"$work/agent.yml" <<EOF
global:
  sample_rate: $rate
  mode: wall
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
        regex: '.*/${token}_sleepy[.]py.*'
        action: keep
server:
  listen_address: 127.0.0.1:$port
EOF
	"$pyprofd" agent --config.file "$work/agent.yml" >"$work/agent.log" 2>&1 &
	agent=$!
	sleep 3
	local active
	active=$(curl -s "127.0.0.1:$port/metrics" | awk '/^pyprofd_targets\{job="bench"\}/ {print $2}')
	[ "$active" = "$n" ] || die "only ${active:-0} of $n targets active after 3 s"
	local t0 c0 t1 c1 rss
	t0=$(date +%s.%N)
	c0=$(awk '{print $14 + $15}' "/proc/$agent/stat")
	curl -s "127.0.0.1:$port/targets" >"$work/before.json"
	sleep "$duration"
	c1=$(awk '{print $14 + $15}' "/proc/$agent/stat")
	t1=$(date +%s.%N)
	curl -s "127.0.0.1:$port/targets" >"$work/after.json"
	rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$agent/status")
	kill "$agent"
	wait "$agent" || true
	agent=
	/usr/bin/python3 - "$work/before.json" "$work/after.json" "$name" "$t0" "$t1" "$c0" "$c1" \
		"$ticks" "$rss" "$rate" <<'EOF'
import json, statistics, sys
before, after, name = sys.argv[1], sys.argv[2], sys.argv[3]
t0, t1, c0, c1, ticks, rss, rate = map(float, sys.argv[4:11])
def counts(path):
    return {t["pid"]: t["counts"] for t in json.load(open(path))["targets"] if t["state"] == "active"}
b, a = counts(before), counts(after)
secs = t1 - t0
rates = [(a[p]["samples"] - b[p]["samples"]) / secs for p in a if p in b]
failed = sum(a[p]["failed"] - b[p]["failed"] for p in a if p in b)
missed = sum(a[p]["missed"] - b[p]["missed"] for p in a if p in b)
skipped = sum(a[p]["skipped"] - b[p]["skipped"] for p in a if p in b)
taken = sum(rates) * secs
cpu = (c1 - c0) / ticks
print(f"{name:<12} {len(rates):>7} {rate * len(rates):>9.0f} {sum(rates):>9.0f} "
      f"{min(rates):>7.1f} {statistics.median(rates):>7.1f} {max(rates):>7.1f} "
      f"{100 * cpu / secs:>6.1f}% {1e6 * cpu / max(taken, 1):>9.1f} {rss / 1024:>8.1f} "
      f"{failed:>7.0f} {missed:>7.0f} {skipped:>8.0f}")
EOF
}

printf '%-12s %7s %9s %9s %7s %7s %7s %7s %9s %8s %7s %7s %8s\n' run targets "want/s" "got/s" \
	"min/t" "med/t" "max/t" "cpu" "us/sample" "RSS MB" failed missed skipped
run "no budget" 1
run "budget $budget" "$budget"
