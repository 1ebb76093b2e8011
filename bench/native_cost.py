#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Benchmark: the CPU cost of mixed C and Python stacks (`record --native=full`).

One CPython process (tests/targets/native_work.py: SHA-256 and zlib under two
Python functions, always on a CPU) is sampled at RATE Hz for SECONDS, in
interleaved turns, by

  python        pyprofd record --mode cpu             (Python stacks only)
  native-S      pyprofd record --native=full --native-stack S
  perf-S        perf record -e task-clock --call-graph dwarf,S (the kernel's
                copies written to a file), then perf script (their unwinding
                and symbols, what --native=full does as it goes)

for each stack-copy size S, over CYCLES cycles; and with --agent also

  agent-python  pyprofd agent, a job in mode cpu (Python stacks only)
  agent-native  pyprofd agent, a job with native: full

each measured in its steady state: the agent's CPU time and its
pyprofd_samples_total (/metrics) read SHORT seconds after the target went
active and again SECONDS later; the CPU per sample is the difference over
the difference (the agent's housekeeping and scans are in both variants). Each variant runs twice, for
SHORT and for SECONDS seconds: the CPU per sample is the difference of the
two runs' CPU time (user + system) over the difference of their samples,
which leaves out what a run costs once (start, attach, reading the
binaries' symbols and CFI). Reports, per variant, the median of those
microseconds per sample, the ratio to `python`, the one-off cost, and for
--native=full how the samples went (joined, late, ...).
Target and samplers are pinned to different CPUs by default (--target-cpu,
--sampler-cpu): say so with the numbers. docs/performance.md ("Native
frames: what they cost") has runs. Root (perf events on another user's
process, the rootfs's chroot). Not a test: `make test` does not run it.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
RUN_TARGET = os.path.join(REPO, "scripts", "run-target.sh")


def run(cmd, cpu):
    """Runs @cmd pinned to @cpu; (rc, output, cpu seconds of it and its children)."""
    t0 = time.monotonic()
    proc = subprocess.Popen(["taskset", "-c", str(cpu), *cmd], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    out = proc.stdout.read().decode("utf-8", "replace")
    _, status, ru = os.wait4(proc.pid, 0)
    return os.waitstatus_to_exitcode(status), out, ru.ru_utime + ru.ru_stime, \
        time.monotonic() - t0


def pyprofd(args, pid, seconds, rate, cpu, tmp):
    path = os.path.join(tmp, "profile.txt")
    rc, out, cpu_s, _ = run([args.pyprofd, "record", "-r", str(rate), "-d", str(seconds),
                             "--no-progress", "-o", path, *args.extra, str(pid)], cpu)
    if rc != 0:
        sys.exit(f"native_cost: pyprofd record failed:\n{out}")
    m = re.search(r"^pyprofd: (\d+) samples in", out, re.M)
    native = re.search(r"^pyprofd: native: .*$", out, re.M)
    return cpu_s, int(m.group(1)) if m else 0, native.group(0) if native else ""


def perf(pid, seconds, rate, stack, cpu, tmp):
    data = os.path.join(tmp, "perf.data")
    rc, out, rec_s, _ = run(["perf", "record", "-q", "-e", "task-clock", "-F", str(rate),
                             "--call-graph", f"dwarf,{stack}", "-p", str(pid), "-o", data, "--",
                             "sleep", str(seconds)], cpu)
    if rc != 0:
        sys.exit(f"native_cost: perf record failed:\n{out}")
    rc, out, script_s, _ = run(["perf", "script", "-i", data, "-F", "ip,sym"], cpu)
    samples = sum(1 for block in out.split("\n\n") if block.strip())
    return rec_s, script_s, samples


def agent(args, pid, native, seconds, cpu, tmp):
    """(us of agent CPU per sample, samples/s, note) in the steady state."""
    import json
    import socket
    import urllib.request
    with socket.socket() as so:
        so.bind(("127.0.0.1", 0))
        port = so.getsockname()[1]
    cfg = os.path.join(tmp, "agent.yml")
    with open(cfg, "w") as f:
        f.write(f"""global: {{mode: cpu, sample_rate: {args.rate}, profile_interval: 1m}}
discovery: {{refresh_interval: 1s, min_process_age: 200ms}}
profile_configs:
  - job_name: bench
    native: {"full" if native else "false"}
    relabel_configs:
      - source_labels: [__meta_process_pid]
        regex: '{pid}'
        action: keep
server:
  listen_address: 127.0.0.1:{port}
""")
    proc = subprocess.Popen(["taskset", "-c", str(cpu), args.pyprofd, "agent", "--config.file",
                             cfg], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def get(path):
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
            return r.read().decode()

    def state():
        cpu_s = sum(int(x) for x in open(f"/proc/{proc.pid}/stat").read().rsplit(")", 1)[1]
                    .split()[11:13]) / os.sysconf("SC_CLK_TCK")
        m = re.search(r'^pyprofd_samples_total\{job="bench"\} (\S+)', get("/metrics"), re.M)
        return cpu_s, float(m.group(1)) if m else 0.0
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                t = [x for x in json.loads(get("/targets"))["targets"] if x["pid"] == pid]
                if t and t[0]["state"] == "active":
                    break
            except OSError:
                pass
            time.sleep(0.1)
        else:
            sys.exit("native_cost: the agent did not attach to the target")
        time.sleep(args.short)
        c1, n1 = state()
        time.sleep(seconds)
        c2, n2 = state()
        note = [x for x in json.loads(get("/targets"))["targets"] if x["pid"] == pid][0]
        words = f"native {note.get('native', '-')}, {note.get('native_samples', '')}"
    finally:
        proc.terminate()
        proc.wait()
    return 1e6 * (c2 - c1) / max(n2 - n1, 1), (n2 - n1) / seconds, words


def marginal(measure, short, long_):
    """(us per sample, one-off ms, note) from @measure(seconds) -> (cpu s, samples, note)."""
    c1, n1, _ = measure(short)
    c2, n2, note = measure(long_)
    per = (c2 - c1) / max(n2 - n1, 1)
    return 1e6 * per, 1e3 * max(c1 - per * n1, 0.0), note


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pyprofd", default=os.path.join(REPO, "build-release", "pyprofd"))
    p.add_argument("--python", default="3.14")
    p.add_argument("-d", "--seconds", type=float, default=5)
    p.add_argument("--short", type=float, default=1)
    p.add_argument("-c", "--cycles", type=int, default=3)
    p.add_argument("-r", "--rate", type=int, default=100)
    p.add_argument("--stacks", default="4096,8192,16384,32768")
    p.add_argument("--target-cpu", type=int, default=0)
    p.add_argument("--sampler-cpu", type=int, default=1)
    p.add_argument("--agent", action="store_true", help="also the agent, with and without "
                   "native: full (steady state)")
    p.add_argument("--only-agent", action="store_true", help="the agent variants only")
    args = p.parse_args()
    args.extra = []
    stacks = [int(s) for s in args.stacks.split(",")]
    tmp = subprocess.run(["mktemp", "-d"], capture_output=True, text=True).stdout.strip()
    pid = int(subprocess.run([RUN_TARGET, "start", "--python", args.python, "native_work"],
                             capture_output=True, text=True, check=True).stdout.strip())
    subprocess.run(["taskset", "-a", "-p", "-c", str(args.target_cpu), str(pid)],
                   capture_output=True, check=True)
    rows = {}  # variant -> [(us per sample, note)]
    try:
        for cycle in range(args.cycles):
            def rec(extra):
                def measure(secs):
                    args.extra = extra
                    return pyprofd(args, pid, secs, args.rate, args.sampler_cpu, tmp)
                return measure

            def perf_measure(stack, with_script):
                def measure(secs):
                    rec_s, script_s, n = perf(pid, secs, args.rate, stack, args.sampler_cpu, tmp)
                    return rec_s + (script_s if with_script else 0), n, f"{n} samples"
                return measure
            variants = [("python", rec(["--mode", "cpu"]))]
            if args.agent or args.only_agent:
                for native in (False, True):
                    def ag(native=native):
                        us, rate, note = agent(args, pid, native, args.seconds, args.sampler_cpu,
                                               tmp)
                        return us, 0.0, f"{rate:.0f} samples/s; {note}"
                    rows.setdefault(f"agent-{'native' if native else 'python'}", []).append(ag())
            for st in ([] if args.only_agent else stacks):
                variants += [(f"native-{st}", rec(["--native=full", "--native-stack", str(st)])),
                             (f"perf-{st} record", perf_measure(st, False)),
                             (f"perf-{st} record+script", perf_measure(st, True))]
            for name, measure in variants:
                rows.setdefault(name, []).append(marginal(measure, args.short, args.seconds))
            print(f"cycle {cycle + 1} of {args.cycles} done", file=sys.stderr)
    finally:
        subprocess.run([RUN_TARGET, "stop", str(pid)], capture_output=True)
        subprocess.run(["rm", "-rf", tmp])
    base = statistics.median(v for v, _, _ in rows["python"])
    print(f"CPython {args.python}, native_work.py, {args.rate} Hz, runs of {args.short:g} s and "
          f"{args.seconds:g} s x {args.cycles} cycles (medians); target on CPU "
          f"{args.target_cpu}, samplers on CPU {args.sampler_cpu}; load "
          f"{os.getloadavg()[0]:.2f}")
    print(f"{'variant':<26} {'us CPU/sample':>13} {'x python':>9} {'once, ms':>9}  last run")
    for name, vals in rows.items():
        med = statistics.median(v for v, _, _ in vals)
        once = statistics.median(o for _, o, _ in vals)
        print(f"{name:<26} {med:>13.1f} {med / base:>9.1f} {once:>9.1f}  {vals[-1][2][:100]}")

if __name__ == "__main__":
    main()
