#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Benchmark: what reading the OpenTelemetry thread context costs per sample.

One CPython process is sampled at RATE Hz, every thread, in interleaved
turns. With --source publisher (the default) it is tests/targets/otel_spans.py:
THREADS threads entering and leaving spans through
tests/targets/otel_publisher.c, built with the TLS model asked for; with
--source sdk, tests/targets/otel_sdk_spans.py: THREADS threads entering and
leaving spans of the real OpenTelemetry Python SDK (the test rootfs's; on
3.11 from PYTHONPATH), read from its context variable. The samplers:

  plain     pyprofd record -a --no-trace-context
  context   pyprofd record -a               (labels trace_id / span_id)
  tachyon   python3.15 -m profiling.sampling attach -a (only with --python
            3.15: CPython's own sampler reads its own version only, and no
            trace context; the same target, for scale)

Each variant runs twice, for SHORT and for SECONDS seconds: the CPU per
sample is the difference of the two runs' CPU time (user + system) over the
difference of their samples, which leaves out what a run costs once (start,
attach, the ELF and GOT reads that place the variable). Reports, per
variant, the median over CYCLES cycles of microseconds per sample and per
thread sample, and the context's extra against plain. Target and sampler are
pinned to different CPUs (--target-cpu, --sampler-cpu): say so with the
numbers. docs/performance.md ("Trace context: what it costs") has runs.
Root (the rootfs's chroot, reading another process's memory). Not a test.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))
import livelib  # noqa: E402  (where the rootfs is, how a target starts)

MODELS = {"tlsdesc": "-mtls-dialect=gnu2", "gd": "-mtls-dialect=gnu",
          "ie": "-ftls-model=initial-exec"}


def run(cmd, cpu):
    """Runs @cmd pinned to @cpu: (rc, output, its CPU seconds)."""
    proc = subprocess.Popen(["taskset", "-c", str(cpu), *cmd], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    out = proc.stdout.read().decode("utf-8", "replace")
    _, status, ru = os.wait4(proc.pid, 0)
    return os.waitstatus_to_exitcode(status), out, ru.ru_utime + ru.ru_stime


def record(args, pid, seconds, extra, tmp):
    rc, out, cpu_s = run([args.pyprofd, "record", "-a", "-r", str(args.rate), "-d",
                          str(seconds), "--no-progress", "-o", os.path.join(tmp, "p.pb.gz"),
                          *extra, str(pid)], args.sampler_cpu)
    if rc != 0:
        sys.exit(f"trace_cost: pyprofd record failed:\n{out}")
    samples = int(re.search(r"^pyprofd: (\d+) samples in", out, re.M).group(1))
    m = re.search(r"trace context(?: \(OpenTelemetry SDK\))?: (\d+) of (\d+) thread reads "
                  r"in a span", out)
    threads = int(m.group(2)) if m else 0
    if "--no-trace-context" not in extra and not m:
        sys.exit(f"trace_cost: no trace context found:\n{out}")
    return cpu_s, samples, threads


def tachyon(args, pid, seconds, tmp):
    # in the target's own mount and PID namespaces and root (the target runs
    # container-style for this variant): it attaches to the PID seen there
    with open(f"/proc/{pid}/status") as f:
        inner = [ln.split()[-1] for ln in f if ln.startswith("NSpid:")][0]
    cmd = ["nsenter", "--target", str(pid), "--mount", "--pid", "--root", "--wd=/",
           "python3.15", "-m", "profiling.sampling", "attach", "-a", "-r", str(args.rate),
           "-d", str(int(round(seconds))), "--collapsed", "-o", "/tmp/tachyon.txt", inner]
    rc, out, cpu_s = run(cmd, args.sampler_cpu)
    if rc != 0:
        sys.exit(f"trace_cost: tachyon failed:\n{out}")
    m = re.search(r"Captured ([0-9,]+) samples?", out)
    if not m:
        sys.exit(f"trace_cost: cannot parse tachyon's summary:\n{out}")
    return cpu_s, int(m.group(1).replace(",", "")), 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pyprofd", default=os.path.join(REPO, "build-release", "pyprofd"))
    ap.add_argument("--python", default="3.13", help="3.11 (the host's) or a rootfs version")
    ap.add_argument("--model", choices=sorted(MODELS), default="tlsdesc")
    ap.add_argument("--source", choices=("publisher", "sdk"), default="publisher")
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("-r", "--rate", type=int, default=1000)
    ap.add_argument("--short", type=int, default=1)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("-c", "--cycles", type=int, default=3)
    ap.add_argument("--target-cpu", type=int, default=0)
    ap.add_argument("--sampler-cpu", type=int, default=1)
    args = ap.parse_args()
    variants = ["plain", "context"] + (["tachyon"] if args.python == "3.15" else [])
    with tempfile.TemporaryDirectory() as tmp:
        host = args.python == "3.11"
        sdk = args.source == "sdk"
        root = None if host else livelib.rootfs_for(args.python)
        lib_dir = tmp if host else os.path.join(root, "pyprofd-targets")
        lib = None if sdk else os.path.join(lib_dir, f"libotel-bench-{os.getpid()}.so")
        if lib:
            subprocess.run(["cc", "-O2", "-shared", "-fPIC", MODELS[args.model], "-o", lib,
                            os.path.join(REPO, "tests", "targets", "otel_publisher.c")],
                           check=True)
        name = "otel_sdk_spans" if sdk else "otel_spans"
        script = os.path.join(REPO, "tests", "targets", name + ".py")
        total = args.cycles * len(variants) * (args.short + args.seconds) + 60
        common = ["--threads", str(args.threads), "--duration", str(total)]
        try:
            if host:
                env = dict(os.environ)
                if sdk:
                    env["PYTHONPATH"] = os.path.join(livelib.rootfs(),
                                                     "usr/lib/python3/dist-packages")
                    env["PYTHONDONTWRITEBYTECODE"] = "1"
                target = subprocess.Popen(["taskset", "-c", str(args.target_cpu),
                                           "/usr/bin/python3.11", script,
                                           *([lib] if lib else []), *common],
                                          stdout=subprocess.PIPE, env=env)
                pid = target.pid
            else:
                mode = "container" if "tachyon" in variants else "chroot"
                target = livelib.start_target(
                    tmp, name, args.python, mode,
                    *(["/pyprofd-targets/" + os.path.basename(lib)] if lib else []), *common)
                pid = target.pid
                subprocess.run(["taskset", "-a", "-p", "-c", str(args.target_cpu), str(pid)],
                               capture_output=True, check=True)
            time.sleep(1.0)
            res = {v: [] for v in variants}
            for cycle in range(args.cycles):
                for v in variants:
                    runs = []
                    for secs in (args.short, args.seconds):
                        if v == "tachyon":
                            runs.append(tachyon(args, pid, secs, tmp))
                        else:
                            extra = ["--no-trace-context"] if v == "plain" else []
                            runs.append(record(args, pid, secs, extra, tmp))
                    (c1, n1, t1), (c2, n2, t2) = runs
                    us = 1e6 * (c2 - c1) / max(n2 - n1, 1)
                    per_thread = 1e6 * (c2 - c1) / max(t2 - t1, 1) if t2 > t1 else None
                    res[v].append((us, per_thread, (t2 - t1) / max(n2 - n1, 1)))
                    print(f"cycle {cycle} {v}: {us:.2f} us/sample"
                          + (f", {per_thread:.2f} us/thread read" if per_thread else ""),
                          flush=True)
        finally:
            target.kill() if host else target.stop()
            if lib:
                os.unlink(lib)
    print(f"\nCPython {args.python}, {args.threads} threads, "
          f"{'the SDK' if sdk else 'model ' + args.model}, "
          f"{args.rate} Hz, target on CPU {args.target_cpu}, sampler on CPU "
          f"{args.sampler_cpu} (not shared); medians of {args.cycles} cycles")
    med = {v: statistics.median(x[0] for x in res[v]) for v in variants}
    for v in variants:
        print(f"  {v:8s} {med[v]:8.2f} us/sample  x{med[v] / med['plain']:.2f} of plain")
    # thread reads per sample, as the context runs counted them
    per = statistics.median(x[2] for x in res["context"])
    print(f"  context read: {med['context'] - med['plain']:+.2f} us/sample, "
          f"{(med['context'] - med['plain']) / per:+.2f} us per thread sample "
          f"({per:.1f} thread reads per sample)")


if __name__ == "__main__":
    main()
