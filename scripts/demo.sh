#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# demo.sh: what `make demo` shows. Starts the bundled workload
# (tests/targets/demo_workload.py) under CPython 3.13, 3.14 and 3.15 from the
# test rootfs, each in its own PID and mount namespace as in a Kubernetes pod,
# under this machine's own Debian 12 python3.11 and Debian 11's python3.9 (the
# bullseye rootfs; no debug table: generated layouts), and points one pyprofd
# binary at all five. Each later capability upgrades
# this script so the demo always shows the best the agent can do.
#
# Under pipefail a pipeline fails when any stage dies of SIGPIPE, so no stage
# here may stop reading before its input ends (head, grep -q, sed Nq, awk's
# exit): a writer still writing, sort with a large input, would die and take
# the demo with it. Top-N is awk 'NR <= N' after the sort, which reads it all
# (tests/scripts/test_pipefail.sh fails if such a stage comes back).
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

echo "== $bin --version"
"$bin" --version | sed 's/^/   /'
echo
versions=(3.13 3.14 3.15)
[ -x /usr/bin/python3.11 ] && versions+=(3.11) # the host's own (Debian 12)
[ -x "$(scripts/python-rootfs.sh --bullseye --print-path)/usr/bin/python3.9" ] && versions+=(3.9)
echo "== starting the demo workload under CPython ${versions[*]} (container-like namespaces;"
echo "   3.11 is this machine's own /usr/bin/python3.11 and 3.9 Debian 11's, read by layouts"
echo "   generated from their headers)"
for v in "${versions[@]}"; do
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

echo
echo "== setpriv --bounding-set -all,+sys_ptrace $bin probe ${pids[1]}"
echo "   (least privilege, as the Kubernetes sidecar runs: root with CAP_SYS_PTRACE only;"
echo "   without CAP_CHECKPOINT_RESTORE the file is opened through /proc/PID/root - deploy/)"
echo
setpriv --bounding-set -all,+sys_ptrace --inh-caps -all "$bin" probe "${pids[1]}" |
    grep -E '^pid|opened via|supported' | sed 's/^/   /'

sleep 0.5 # let the workload's threads get going
for i in "${!pids[@]}"; do
    echo
    echo "== $bin dump --all-threads --native ${pids[$i]}   (python${versions[$i]})"
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
echo "== $bin top -d 3 -n 8 ${pids[1]}   (the live view; on a terminal it redraws in place,"
echo "   o/t sort by own/total share, q quits; here stdout is a pipe: a table every second)"
"$bin" top -d 3 -n 8 "${pids[1]}" | awk '/^---/ {n++} n == 3' | sed 's/^/   /'
echo
echo "== every build: free-threaded (--disable-gil) and debug interpreters, read by the same binary"
if [ -x "$(scripts/python-rootfs.sh --print-path)/usr/local/bin/python3.13t" ]; then
    ftpid=$(scripts/run-target.sh start --python 3.13t parallel)
    pids+=("$ftpid")
    sleep 0.3
    echo "   tests/targets/parallel.py under a free-threaded CPython 3.13t: three busy workers"
    echo
    "$bin" probe "$ftpid" | grep -E '^pid|build' | sed 's/^/   /'
    echo
    echo "== $bin dump --all-threads $ftpid   (no GIL: several threads attached at once)"
    echo
    "$bin" dump --all-threads "$ftpid" | grep -E '^Process|^Thread' | sed 's/^/   /'
    echo
    echo "== $bin record -a --mode gil -r 200 -d 1 $ftpid   (gil mode = attached threads: ~3 per tick)"
    "$bin" record -a --mode gil -r 200 -d 1 --format collapsed -o "$out/ft.txt" "$ftpid" 2>&1 |
        tail -n 1 | sed 's/^/   /'
    awk '{n += $NF} END {printf "   %d thread samples\n", n}' "$out/ft.txt"
    scripts/run-target.sh stop "$ftpid" # three busy threads: not on while the rest runs
else
    echo "   (no python3.13t in the rootfs: see docs/unwinder.md section 9)"
fi
dbgpid=$(scripts/run-target.sh start --python 3.15d record_stack)
pids+=("$dbgpid")
echo
echo "== $bin dump $dbgpid   (Debian's debug build, python3.15d: no special case)"
echo
"$bin" dump "$dbgpid" | sed 's/^/   /'
scripts/run-target.sh stop "$dbgpid"

echo
echo "== opcodes: tests/targets/opcodes.py under CPython 3.15, record --opcodes"
echo "   (each frame's instruction as the interpreter has it now, specialized form and base)"
oppid=$(scripts/run-target.sh start --python 3.15 opcodes)
pids+=("$oppid")
"$bin" record --opcodes -r 1k -d 1 -o "$out/opcodes.pb.gz" "$oppid" 2>&1 | tail -n 1 | sed 's/^/   /'
echo
HOME="$out" GOCACHE="$out/gocache" go tool pprof -top -nodecount=6 "$out/opcodes.pb.gz" 2>&1 |
    grep -v '^Main binary filename not available' | sed 's/^/   /'
scripts/run-target.sh stop "$oppid"

echo
echo "== async-aware stacks: an asyncio server (tests/targets/async_server.py) under CPython 3.15"
echo "   main -> gather(worker-1, worker-2) -> each awaits a cruncher task that computes"
echo
apid=$(scripts/run-target.sh start --python 3.15 async_server)
pids+=("$apid")
sleep 0.5
echo "== $bin dump --async-aware $apid   (the thread's own stack, then the task tree)"
echo
"$bin" dump --async-aware "$apid" | sed 's/^/   /'
echo
echo "== $bin record --async-aware -d 2 --format collapsed $apid   (the top logical stacks,"
echo "   root first: each cruncher under the worker awaiting it under main, not under the event loop)"
echo
"$bin" record --async-aware -d 2 --format collapsed -o "$out/async.txt" "$apid" 2>&1 | sed 's/^/   /'
awk '{print $NF "\t" $0}' "$out/async.txt" | sort -nr | awk 'NR <= 3' | cut -f2- |
    sed -e 's| ([^)]*)||g' -e 's/^/   /'

echo
echo "== native frames: tests/targets/native_work.py under CPython 3.14 (OpenSSL's SHA-256 and"
echo "   zlib under two Python functions), record --native=full: the C frames from the kernel's"
echo "   samples of the thread (perf events, no stopping), joined with its Python frames; the"
echo "   kernel samples CPU time: 100 per CPU-second of the thread, which shares the machine's"
echo "   CPUs with the demo's other workloads here, so fewer per wall-clock second"
echo
npid=$(scripts/run-target.sh start --python 3.14 native_work)
pids+=("$npid")
"$bin" probe "$npid" | grep -E '^  (perf|native) ' | sed 's/^/   /'
native_html=build/demo-native.html
"$bin" record --native=full -d 3 --no-progress -o "$native_html" "$npid" 2>&1 | sed 's/^/   /'
"$bin" record --native=full -d 2 --no-progress --format collapsed -o "$out/native.txt" "$npid" \
    >/dev/null 2>&1 || true
echo "   the two top stacks, root first, from PyEval_EvalCode on (below it: the interpreter's"
echo "   C frames down to _start; a C function without a symbol is FILE+0xSTART):"
awk '{print $NF "\t" $0}' "$out/native.txt" | sort -nr | awk 'NR <= 2' | cut -f2- |
    sed -e 's| ([^)]*)||g' -e 's/^.*;PyEval_EvalCode;/.../' -e 's/^/   /'
echo "   the flame graph: $(pwd)/$native_html"
scripts/run-target.sh stop "$npid"

echo
echo "== $bin agent --config.file config/pyprofd.yml   (the daemon, with the shipped default config)"
echo "   one job samples every Python process at 100 Hz in cpu mode; HTTP on 127.0.0.1:7979"
echo
agent_log="$out/agent.log"
"$bin" agent --config.file config/pyprofd.yml >"$agent_log" 2>&1 &
agent=$!
trap 'kill "$agent" 2>/dev/null || true; cleanup; rm -rf "$out"' EXIT
for _ in $(seq 100); do
    curl -sf http://127.0.0.1:7979/-/ready >/dev/null 2>&1 && break
    kill -0 "$agent" 2>/dev/null || { cat "$agent_log" >&2; exit 1; }
    sleep 0.1
done
sleep 1 # the first scan found the workload; let it collect a little
sed 's/^/   /' "$agent_log"
echo
echo "== curl http://127.0.0.1:7979/targets   (every Python process the agent knows, summarised)"
echo
curl -s http://127.0.0.1:7979/targets | /usr/bin/python3 -c '
import json, sys
for t in json.load(sys.stdin)["targets"]:
    c = t.get("counts", {})
    print("   pid %-7s nspid %-5s %-11s python %-8s %-13s job %-8s service_name %-14s samples %s" % (
        t["pid"], t.get("nspid", "-"), t["state"], t.get("python_version", "-"),
        t.get("build", "-"), t.get("job", "-"), t.get("labels", {}).get("service_name", "-"),
        c.get("samples", "-")))'
echo
echo "== go tool pprof -top http://127.0.0.1:7979/debug/pprof/profile?seconds=3&pid=${pids[1]}"
echo "   (3 s of the CPython 3.14 workload, taken from the running agent as from a Go program)"
echo
HOME="$out" GOCACHE="$out/gocache" go tool pprof -top -nodecount=10 \
    "http://127.0.0.1:7979/debug/pprof/profile?seconds=3&pid=${pids[1]}" 2>&1 |
    grep -v '^Main binary filename not available\|^Saved profile in\|^Fetching profile' | sed 's/^/   /'
echo
echo "== the agent's page: http://127.0.0.1:7979/ (targets, and flame graphs on demand; offline)"
echo "   it draws what /flamegraph returns, e.g. 2 s of the CPython 3.14 workload:"
curl -s "http://127.0.0.1:7979/flamegraph?seconds=2&pid=${pids[1]}" | /usr/bin/python3 -c '
import json, sys
def walk(n, depth):
    if depth <= 4:
        print("   %s%-40s %5d samples" % ("  " * depth, n["n"], n["v"]))
        for c in sorted(n.get("c", []), key=lambda c: -c["v"])[:2]:
            walk(c, depth + 1)
walk(json.load(sys.stdin), 0)'
echo
echo "== curl http://127.0.0.1:7979/metrics   (a few of the agent's own metrics)"
echo
curl -s http://127.0.0.1:7979/metrics |
    grep -E '^(pyprofd_targets|pyprofd_samples_total|pyprofd_samples_failed_total|pyprofd_samples_missed_total|pyprofd_profiles_total|process_resident_memory_bytes|process_cpu_seconds_total)' |
    sed 's/^/   /'
echo
echo "   where to look: http://127.0.0.1:7979/ (landing page), /targets, /metrics,"
echo "   /debug/pprof/profile?seconds=N[&pid=P]; set storage.directory to also get one"
echo "   JOB-PID-TIME.pb.gz file per target and interval (docs/agent.md, docs/configuration.md)"
echo
echo "== short processes: 10 x /usr/bin/python3 -c '<0.3 s of work>', one every 0.1 s, while the"
echo "   agent runs (discovery.watch: each is looked at 40 ms after its exec, sampled until it"
echo "   exits, and its last partial window is kept; docs/discovery.md)"
echo
delay_metric() { # the start delay histogram's count, and its bucket le=0.1
    curl -s http://127.0.0.1:7979/metrics |
        awk '/^pyprofd_target_start_delay_seconds_count/ {c = $2}
             /^pyprofd_target_start_delay_seconds_bucket\{le="0.1"\}/ {b = $2}
             END {print c + 0, b + 0}'
}
read -r count0 fast0 <<<"$(delay_metric)"
short=()
for _ in $(seq 10); do
    /usr/bin/python3 -c 'import time
end = time.time() + 0.3
while time.time() < end: pass' &
    short+=($!)
    sleep 0.1
done
for p in "${short[@]}"; do wait "$p" || true; done
sleep 0.3 # the last one's end is housekept (every 100 ms)
read -r count1 fast1 <<<"$(delay_metric)"
seen=0
for p in "${short[@]}"; do
    grep -q "stopped sampling process $p (python): it exited" "$agent_log" && seen=$((seen + 1))
done
echo "   sampled and flushed at their exit: $seen of ${#short[@]} (the agent's log);"
echo "   first sample within 100 ms of the process's start: $((fast1 - fast0)) of $((count1 - count0))"
echo "   (pyprofd_target_start_delay_seconds); how new processes are found here:"
curl -s http://127.0.0.1:7979/metrics | grep -E '^pyprofd_discovery_watch_info' | sed 's/^/   /'
echo
echo "== kill -TERM the agent: partial windows are flushed, then it exits"
kill -TERM "$agent"
wait "$agent" || true
tail -n 3 "$agent_log" | sed 's/^/   /'
echo
echo "== pushing: the agent sends each target's profile every 5 s to a Pyroscope endpoint"
echo "   (here tests/integration/pyroscope_receiver.py, a stand-in that implements Pyroscope's"
echo "   push API, push.v1.PusherService/Push; a real Pyroscope or Grafana Cloud works the same,"
echo "   and so does Parca with type: parca - see docs/exporters.md)"
echo
port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
/usr/bin/python3 -u tests/integration/pyroscope_receiver.py --port "$port" --dir "$out/received" \
    >"$out/receiver.log" 2>&1 &
receiver=$!
trap 'kill "$receiver" 2>/dev/null || true; cleanup; rm -rf "$out"' EXIT
for _ in $(seq 50); do
    grep -q listening "$out/receiver.log" 2>/dev/null && break
    sleep 0.1
done
cat >"$out/push.yml" <<EOF
global:
  sample_rate: 100
  mode: cpu
  profile_interval: 5s
  external_labels: {cluster: demo}
profile_configs:
  - job_name: demo
    relabel_configs:
      - source_labels: [__meta_process_commandline]
        regex: '.*demo_workload[.]py.*'
        action: keep
remote_write:
  - name: local-pyroscope
    type: pyroscope
    url: http://127.0.0.1:$port
server:
  listen_address: ""
EOF
sed 's/^/   /' "$out/push.yml"
echo
"$bin" agent --config.file "$out/push.yml" >"$out/push-agent.log" 2>&1 &
agent=$!
sleep 6
kill -TERM "$agent"
wait "$agent" || true
sleep 0.5
echo "   what the endpoint received (the last three are the partial windows flushed at SIGTERM):"
grep '^received' "$out/receiver.log" | sed 's/^/   /'
first=$(find "$out/received" -name '*.pb.gz' | sort | awk 'NR == 1')
if [ -n "$first" ]; then
    echo
    echo "== go tool pprof -top ${first##*/}   (one pushed profile, as the backend stores it)"
    echo
    HOME="$out" GOCACHE="$out/gocache" go tool pprof -top -nodecount=6 "$first" 2>&1 |
        grep -v '^Main binary filename not available' | sed 's/^/   /'
fi
kill "$receiver" 2>/dev/null || true

echo
echo "== hostile input: a target that puts terminal escape sequences in its own names"
echo "   (tests/targets/escapes.py: a function named ESC]0;pwned BEL evil ESC[31m red, to retitle"
echo "   and recolour the terminal); pyprofd dump shows them escaped, as ps and ls do"
echo
epid=$(scripts/run-target.sh start --python 3.14 escapes)
pids+=("$epid")
"$bin" dump "$epid" 2>&1 | awk 'NR <= 4' | sed 's/^/   /'
scripts/run-target.sh stop "$epid" || true
echo
echo "== pod metadata from a hostile API server: one 35 MiB pod list (40 pods of 10,000"
echo "   environment variables and managedFields each) from tests/kube/fake_apiserver.py on"
echo "   loopback HTTPS; the agent scans it as it streams and keeps only what labels use"
echo
mkdir -p "$out/kube"
/usr/bin/python3 -u - "$out/kube" >"$out/kube/server.log" 2>&1 <<'PY' &
import os, sys, time
sys.path.insert(0, "tests/kube")
import fake_apiserver as fake
d = sys.argv[1]
certs = fake.make_certs(d)
with open(os.path.join(d, "token"), "w") as f:
    f.write("demo-token\n")
with fake.FakeApiServer(certs, token="demo-token") as srv:
    srv.serve_list(fake.heavy_items(40, "demo-node"))
    print("url", srv.url, flush=True)
    while True:
        time.sleep(3600)
PY
apiserver=$!
trap 'kill "$apiserver" 2>/dev/null || true; cleanup; rm -rf "$out"' EXIT
for _ in $(seq 100); do
    grep -q '^url ' "$out/kube/server.log" 2>/dev/null && break
    sleep 0.1
done
kport=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$out/kube.yml" <<KUBE
discovery:
  kubernetes:
    enabled: true
    api_server: $(awk '/^url / {print $2}' "$out/kube/server.log")
    node_name: demo-node
    bearer_token_file: $out/kube/token
    tls_config: {ca_file: $out/kube/ca.crt}
server:
  listen_address: 127.0.0.1:$kport
KUBE
"$bin" agent --config.file "$out/kube.yml" >"$out/kube-agent.log" 2>&1 &
agent=$!
for _ in $(seq 300); do
    [[ $(curl -s "http://127.0.0.1:$kport/metrics" 2>/dev/null) == *$'\npyprofd_kubernetes_up 1'* ]] && break
    sleep 0.1
done
grep 'kubernetes' "$out/kube-agent.log" | sed 's/^/   /'
curl -s "http://127.0.0.1:$kport/metrics" |
    grep -E '^(pyprofd_kubernetes_(up|pods|memory_bytes)|process_resident_memory_bytes) ' |
    sed 's/^/   /'
awk '/^VmHWM/ {printf "   the agent'\''s peak resident memory: %.0f MiB (VmHWM)\n", $2 / 1024}' "/proc/$agent/status"
kill -TERM "$agent"
wait "$agent" || true
kill "$apiserver" 2>/dev/null || true
echo "   (docs/kubernetes.md, \"Bounds and liveness\": every bound, and what the agent does past it)"

html=build/demo-flamegraph.html
fmts=(build/demo.pstats build/demo.speedscope.json build/demo.gecko.json build/demo.heatmap.html)
echo
echo "== $bin record -a -d 3 -o $html$(printf ' -o %s' "${fmts[@]}") ${pids[1]}"
echo "   (one recording, every format other tools open: an HTML flame graph, pstats,"
echo "   speedscope, the Firefox Profiler's gecko, a source heatmap)"
echo
"$bin" record -a -d 3 --no-progress -o "$html" -o "${fmts[0]}" -o "${fmts[1]}" -o "${fmts[2]}" \
	-o "${fmts[3]}" "${pids[1]}" 2>&1 | grep -E "wrote|samples in" | sed 's/^/   /'
echo
echo "== /usr/bin/python3 -m pstats ${fmts[0]}: sort cumulative, the top 5"
echo
printf 'sort cumulative\nstats 5\nquit\n' | /usr/bin/python3 -m pstats "${fmts[0]}" 2>&1 |
	sed -n '/ncalls/,/^$/p' | sed 's/^/   /'
echo
echo "== trace context: a process that publishes its OpenTelemetry context (here"
echo "   tests/targets/otel_publisher.c, a publisher written from OTEP 4719 and 4947, loaded by"
echo "   tests/targets/otel_spans.py under /usr/bin/python3.11): its samples carry the trace_id"
echo "   and span_id their thread was in (docs/tracing.md)"
echo
otel_lib="build/demo-libotel.so"
cc -O2 -shared -fPIC -mtls-dialect=gnu2 -o "$otel_lib" tests/targets/otel_publisher.c
otel_py=/usr/bin/python3.11
[ -x "$otel_py" ] || otel_py=/usr/bin/python3
"$otel_py" tests/targets/otel_spans.py "$otel_lib" --duration 5 >/dev/null &
otel_pid=$!
sleep 1
"$bin" probe "$otel_pid" | grep -E '^  (otel|thread) |^            ' | sed 's/^/   /'
"$bin" record -a -d 2 --no-progress -o build/demo-spans.pb.gz "$otel_pid" 2>&1 |
	grep -E "trace context" | sed 's/^/   /'
wait "$otel_pid" || true
/usr/bin/python3 - build/demo-spans.pb.gz <<'PY' | sed 's/^/   /'
import collections, sys
sys.path.insert(0, "tests/integration")
import livelib
p = livelib.pprof_read(sys.argv[1])
by = collections.Counter()
for values, locs, labels in p["samples"]:
    leaf = p["functions"][p["locations"][locs[0]][0][0]][0]
    by[(leaf, labels.get("span_id", "none")[:2])] += values[0]
print("samples by leaf function and the span kind (span_id's first byte: a0 or b0):")
for (leaf, span), n in sorted(by.items(), key=lambda x: -x[1])[:6]:
    print(f"  {n:5d}  {leaf:14s} {span}")
PY
echo
echo "== stopping the workload"
echo
echo "== the flame graph of the CPython 3.14 workload is in $(pwd)/$html"
echo "   open it in any browser (hover, click to zoom, search; top functions and summary beside);"
echo "   $(pwd)/${native_html:-build/demo-native.html} has C and Python frames together"
echo "   the same recording as pstats, speedscope, gecko and heatmap files:"
for f in "${fmts[@]}"; do
	echo "     $(pwd)/$f"
done
echo "   (python3 -m pstats, snakeviz; speedscope; profiler.firefox.com, \"Load a profile from"
echo "   file\"; the heatmap in any browser: docs/usage.md, \"Output formats\")"
