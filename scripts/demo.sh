#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# demo.sh: what `make demo` shows. Starts the bundled workload
# (tests/targets/demo_workload.py) under CPython 3.13, 3.14 and 3.15 from the
# test rootfs, each in its own PID and mount namespace as in a Kubernetes pod,
# and points one pyprofd binary at all three. Each later capability upgrades
# this script so the demo always shows the best the agent can do.
set -euo pipefail
cd "$(dirname "$0")/.."

bin=build/pyprofd
[ -x "$bin" ] || { echo "demo: '$bin' is missing; run 'make build'" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "demo: needs root (chroot, unshare, reading other processes)" >&2; exit 1; }

pids=()
cleanup() {
    for pid in "${pids[@]}"; do
        scripts/run-target.sh stop "$pid" || true
    done
}
trap cleanup EXIT INT TERM

echo "== starting the demo workload under CPython 3.13, 3.14 and 3.15 (container-like namespaces)"
for v in 3.13 3.14 3.15; do
    pid=$(scripts/run-target.sh start --python "$v" --mode container demo_workload)
    pids+=("$pid")
    nspid=$(awk '/^NSpid:/ {print $NF}' "/proc/$pid/status")
    printf '   python%s: host pid %s (pid %s inside its namespace): %s\n' "$v" "$pid" "$nspid" \
        "$(tr '\0' ' ' <"/proc/$pid/cmdline")"
done

echo
echo "== $bin probe ${pids[*]}"
echo "   (one binary; every fact below is read live from the target's memory)"
echo
"$bin" probe "${pids[@]}"

sleep 0.5 # let the workload's threads get going
for i in 0 1 2; do
    echo
    echo "== $bin dump --all-threads --native ${pids[$i]}"
    echo
    "$bin" dump --all-threads --native "${pids[$i]}"
done

echo
echo "== $bin dump --json ${pids[2]}   (main thread, as JSON)"
echo
"$bin" dump --json "${pids[2]}"

out=$(mktemp -d)
trap 'cleanup; rm -rf "$out"' EXIT
echo
echo "== $bin record -a -r 1k -d 3 -o demo.pb.gz ${pids[2]}   (CPython 3.15, every thread, 3 s at 1 kHz)"
echo
"$bin" record -a -r 1k -d 3 -o "$out/demo.pb.gz" "${pids[2]}"
echo
echo "== its top functions (go tool pprof -top, sample index 1 = wall time)"
echo
HOME="$out" GOCACHE="$out/gocache" GOFLAGS=-mod=mod GOPROXY=off \
    go tool pprof -top -nodecount=12 -sample_index=1 "$out/demo.pb.gz" 2>&1 |
    grep -v '^Main binary filename not available'
echo
echo "== stopping the workload"
