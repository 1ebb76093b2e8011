#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# kube_decode.sh: pod lists like the ones a hostile (or just large) API
# server sends, decoded by pyprofd's streaming decoder and, beside it, by
# json-c's tree (what the pod-metadata client did before issue 28): time,
# throughput and peak resident memory of each, from the optimised build.
# Results in docs/performance.md ("Pod lists from a hostile API server").
#
#   bench/kube_decode.sh [-c CYCLES]
#
# Bodies (made with tests/kube/fake_apiserver.py's generators, as
# tests/kube/test_kube_hostile.py serves them): 40 pods of 10,000 environment
# variables and managedFields (35 MiB), 31 MiB of ordinary pods, 100,000
# small pods (65 MiB), 2M empty objects (6 MiB). CYCLES (default 3) rounds of
# stream, jsonc, stream, jsonc, ... per body; each run keeps its best of 3
# decodes; the medians are printed. No root needed.
set -euo pipefail
cd "$(dirname "$0")/.."
cycles=3
while [ $# -gt 0 ]; do
	case $1 in
	-c) cycles=$2; shift 2 ;;
	-h | --help) sed -n '3,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "kube_decode.sh: unknown argument '$1'" >&2; exit 2 ;;
	esac
done

cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)" --target pyprofd >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
r=build-release/agent
cc -O2 -D_GNU_SOURCE -Iagent -o "$work/kube_decode" bench/kube_decode.c \
	"$r/discovery/libpyprofd_discovery.a" "$r/memread/libpyprofd_memread.a" \
	"$r/python/libpyprofd_python.a" "$r/base/libpyprofd_base.a" \
	$(pkg-config --cflags --libs json-c libcurl) -lpthread -lm

/usr/bin/python3 - "$work" <<'PY'
import sys
sys.path.insert(0, "tests/kube")
import fake_apiserver as fake
d = sys.argv[1]
def write(name, items):
    with open(f"{d}/{name}.json", "wb") as f:
        f.write(b'{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"7"},"items":[')
        for i in range(len(items)):
            if i:
                f.write(b",")
            f.write(items[i])
        f.write(b"]}")
write("heavy40", fake.heavy_items(40, "node-a"))
one = len(fake.ordinary_items(1, "node-a")[0])
write("ordinary31", fake.ordinary_items((31 << 20) // one, "node-a"))
write("small100k", fake.small_items(100000, "node-a"))
write("empty2m", fake.PodItems(2 << 20, lambda i: b"{}"))
PY

printf '%s\n' "machine: $(nproc) CPUs, $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo), load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-12s %-7s %9s %10s %10s %12s\n' body decoder MiB 's (median)' 'MiB/s' 'VmHWM MiB'
for body in heavy40 ordinary31 small100k empty2m; do
	for mode in stream jsonc; do : >"$work/$body.$mode"; done
	for _ in $(seq "$cycles"); do
		for mode in stream jsonc; do
			"$work/kube_decode" "$mode" "$work/$body.json" 3 >>"$work/$body.$mode"
		done
	done
	for mode in stream jsonc; do
		/usr/bin/python3 - "$work/$body.$mode" "$body" "$mode" <<'PY'
import statistics, sys
rows = [l.split("\t") for l in open(sys.argv[1]) if l.strip()]
size = int(rows[0][1].split()[0]) / 1048576
secs = statistics.median(float(r[2].split()[0]) for r in rows)
hwm = statistics.median(int(r[5].split()[1]) for r in rows) / 1024
print(f"{sys.argv[2]:<12} {sys.argv[3]:<7} {size:9.1f} {secs:10.3f} {size / secs:10.0f} {hwm:12.0f}")
PY
	done
done
