#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Benchmark: the agent's resident memory with no target, then with N and
# 2N targets of mixed shapes (sleeping, threaded, deep recursion,
# generators, a fake web service with many distinct stacks), to size the
# DaemonSet's memory request and limit (deploy/kubernetes/base) as
# base + max_targets x per-target cost. docs/performance.md ("The agent in a
# DaemonSet: memory") has a run. Everything runs at low priority (nice 19).
# Not a test: `make test` does not run it.
set -euo pipefail

prog=agent_memory
script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_dir=$(dirname "$script_dir")
run_target=$repo_dir/scripts/run-target.sh

usage() {
	cat <<EOF
usage: bench/agent_memory.sh [-n TARGETS] [-d SECONDS] [--mode MODE] [--pyprofd PATH]

  -n TARGETS      targets of the first step; the second step doubles them (default: 10)
  -d SECONDS      time per step (default: 60)
  --mode MODE     the job's mode (default: wall: every thread stack is recorded)
  --pyprofd PATH  the binary (default: build/pyprofd)

The agent runs with target_memory_bytes 4MiB and a 15 s profile_interval, as
the DaemonSet's pyprofd.yml does. Needs root and the test rootfs
(scripts/python-rootfs.sh).
EOF
}

die() {
	printf '%s: %s\n' "$prog" "$*" >&2
	exit 1
}

n=10 duration=60 mode=wall pyprofd=$repo_dir/build/pyprofd
while (($#)); do
	case $1 in
	-n) n=$2 && shift ;;
	-d) duration=$2 && shift ;;
	--mode) mode=$2 && shift ;;
	--pyprofd) pyprofd=$2 && shift ;;
	-h | --help) usage && exit 0 ;;
	*) usage >&2 && die "unknown argument: $1" ;;
	esac
	shift
done
[ "$(id -u)" -eq 0 ] || die "needs root"
[ -x "$pyprofd" ] || die "no binary at $pyprofd"

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

# Copies of the targets under names the agent's relabeling keeps (other
# Python processes on a shared machine are left alone).
token=mem$$
shapes=(sleepy named_threads threads deep generators demo_workload sleepy named_threads sleepy generators)
for s in "${shapes[@]}"; do
	cp "$repo_dir/tests/targets/$s.py" "$work/${token}_$s.py"
done

port=$((20000 + RANDOM % 20000))
cat >"$work/agent.yml" <<CONF
global:
  sample_rate: 100
  mode: $mode
  profile_interval: 15s
  limits:
    max_targets: $((2 * n + 10))
    target_memory_bytes: 4MiB
discovery:
  refresh_interval: 2s
  min_process_age: 0s
profile_configs:
  - job_name: bench
    relabel_configs:
      - source_labels: [__meta_process_commandline]
        regex: '.*/${token}_[a-z_]+[.]py.*'
        action: keep
server:
  listen_address: 127.0.0.1:$port
CONF

rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$agent/status"; }
active() { curl -s "127.0.0.1:$port/metrics" | awk '/^pyprofd_targets\{job="bench"\}/ {print $2}'; }

# step NAME: watch the agent for $duration s; print one row (RSS at the end
# and at most, in MiB)
step() {
	local name=$1 max=0 r=0 t
	for ((t = 0; t < duration; t += 5)); do
		sleep 5
		r=$(rss_kib)
		((r > max)) && max=$r
	done
	printf '%-12s %7s %9.1f %9.1f\n' "$name" "$(active)" "$((r * 10 / 1024))e-1" "$((max * 10 / 1024))e-1"
}

# start COUNT: COUNT more targets, shapes and versions in turn
versions=(3.13 3.14 3.15)
start() {
	local i k
	for ((i = 0; i < $1; i++)); do
		k=${#pids[@]}
		pids+=("$(nice -n 19 "$run_target" start --python "${versions[k % 3]}" \
			"$work/${token}_${shapes[k % ${#shapes[@]}]}.py")")
	done
}

nice -n 19 "$pyprofd" agent --config.file "$work/agent.yml" >"$work/agent.log" 2>&1 &
agent=$!
sleep 2
printf '%-12s %7s %9s %9s\n' step targets "RSS MiB" "max MiB"
step idle
start "$n"
step "$n targets"
start "$n"
step "$((2 * n)) targets"
printf 'VmHWM %s\n' "$(awk '/^VmHWM:/ {print $2, $3}' "/proc/$agent/status")"
