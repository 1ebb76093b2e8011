# SPDX-License-Identifier: MIT
"""Soak: `pyprofd agent` for an hour of process churn and push failures.

What runs (all on this machine, as root, from the test rootfs):
  - 8 long-lived targets on CPython 3.13, 3.14, 3.15 (two of them in
    container mode): two busy (hotspot.py), six mostly asleep (sleepy.py),
    sampled at 100 Hz in wall mode;
  - churn: a short-lived, mostly sleeping Python process (0.2-4 s, ending by
    exit, exception or SIGKILL) every 0.5 s, and every 20 s an execer that
    exec()s into itself, another Python or /bin/sleep;
  - a Pyroscope-API receiver (tests/integration/pyroscope_receiver.py)
    cycling every 90 s through: up 30 s, down (connection refused) 20 s,
    503 for every request 15 s, silent 25 s (a socket that accepts and reads
    but never answers, and never processes a request late);
  - storage into a directory with a 20 MB cap, and every 5 s a scrape of
    /metrics and /targets plus a 1 s profile request.

Every 10 s it records the agent's resident memory, open fds and threads
(one CSV line). At the end it stops the churn, brings the receiver up, waits
for the push queue to drain, reads /metrics, stops the agent (SIGTERM) and
checks:
  - RSS flat after warm-up: the slope over the second half, in KiB/min;
  - fds and threads: their range over the second half;
  - push accounting: profiles encoded = delivered + dropped (every reason) +
    still queued, exactly; the receiver holds every delivered profile (a
    send the receiver stored but whose reply was cut is sent again and
    counted as received twice: delivery is at least once).

    /usr/bin/python3 bench/soak.py [--minutes 60] [--binary build-release/pyprofd]
                                   [--out DIR]

Prints a summary (and writes DIR/soak.csv, DIR/summary.txt); exit status 1
when a check fails. Results go in docs/agent.md ("Soak").
"""

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
import livelib  # noqa: E402
import pyroscope_receiver  # noqa: E402


def proc_status(pid):
    rss = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
    return rss, len(os.listdir(f"/proc/{pid}/fd")), len(os.listdir(f"/proc/{pid}/task"))


def slope_kib_per_min(points):
    """Least-squares slope of (seconds, KiB) points, in KiB per minute."""
    n = len(points)
    if n < 2:
        return 0.0
    mx = sum(p[0] for p in points) / n
    my = sum(p[1] for p in points) / n
    sxx = sum((p[0] - mx) ** 2 for p in points)
    sxy = sum((p[0] - mx) * (p[1] - my) for p in points)
    return 60.0 * sxy / sxx if sxx else 0.0


class Soak:
    def __init__(self, args):
        self.args = args
        self.tmp = args.out or tempfile.mkdtemp(prefix="pyprofd-soak.")
        os.makedirs(self.tmp, exist_ok=True)
        self.token = f"soak{os.getpid()}"
        self.stop = threading.Event()
        self.rnd = random.Random(1)
        self.receiver = pyroscope_receiver.Receiver(os.path.join(self.tmp, "received")).start()
        self.phase = "up"
        self.churned = 0
        self.execs = 0

    def say(self, msg):
        print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)

    def copy(self, name, as_name):
        path = os.path.join(self.tmp, as_name + ".py")
        with open(os.path.join(livelib.TARGETS_DIR, name + ".py")) as s, open(path, "w") as d:
            d.write(s.read())
        return path

    def config(self):
        return f"""\
global:
  sample_rate: 100
  mode: wall
  profile_interval: 10s
discovery:
  refresh_interval: 1s
  min_process_age: 200ms
profile_configs:
  - job_name: soak
    relabel_configs:
      - source_labels: [__meta_process_commandline]
        regex: '.*/{self.token}_[a-z0-9_]+[.]py.*'
        action: keep
      # one series per process: a profile is told apart by its labels and time
      - source_labels: [__meta_process_pid]
        target_label: pid
storage:
  directory: {self.tmp}/store
  max_bytes: 20MB
remote_write:
  - type: pyroscope
    name: soak
    url: http://127.0.0.1:{self.receiver.port}
    queue:
      max_profiles: 200
      min_backoff: 200ms
      max_backoff: 30s
      max_retries: 0
    remote_timeout: 5s
server:
  listen_address: 127.0.0.1:{{port}}
"""

    # --- load ----------------------------------------------------------------

    def receiver_cycle(self):
        phases = (("up", 30), ("down", 20), ("failing", 15), ("silent", 25))
        hole = None
        while not self.stop.is_set():
            for name, secs in phases:
                if self.stop.is_set():
                    break
                self.phase = name
                if name == "down":
                    self.receiver.stop()
                elif name == "failing":
                    self.receiver.start()
                    with self.receiver.lock:
                        self.receiver.fail_next = ["unavailable"] * 1000000
                elif name == "silent":
                    with self.receiver.lock:
                        self.receiver.fail_next = []
                    self.receiver.stop()
                    hole = livelib.BlackHole(self.receiver.port)
                else:
                    if hole:
                        hole.close()
                        hole = None
                    if not self.receiver.server:
                        self.receiver.start()
                self.stop.wait(secs)
        if hole:
            hole.close()
        with self.receiver.lock:
            self.receiver.fail_next = []
        if not self.receiver.server:
            self.receiver.start()
        self.phase = "up"

    def churn(self):
        script = os.path.join(livelib.rootfs(), "pyprofd-targets", f"{self.token}_churn.py")
        with open(script, "w") as f:
            f.write("import os, sys, time\n"
                    "def churn_work(n):\n"
                    "    return sum(i * i for i in range(n))\n"
                    "end = time.monotonic() + float(sys.argv[1])\n"
                    "while time.monotonic() < end:\n"
                    "    churn_work(500)\n"
                    "    time.sleep(0.01)\n"
                    "if sys.argv[2] == 'raise':\n"
                    "    raise SystemExit(3)\n"
                    "if sys.argv[2] == 'kill':\n"
                    "    os.kill(os.getpid(), 9)\n")
        procs = []
        versions = ("3.13", "3.14", "3.15")
        next_exec = time.monotonic() + 20
        execer = self.copy("execer", f"{self.token}_execer")
        while not self.stop.is_set():
            procs = [p for p in procs if p.poll() is None]
            p = subprocess.Popen(
                ["chroot", livelib.rootfs(), f"/usr/bin/python{self.rnd.choice(versions)}",
                 f"/pyprofd-targets/{self.token}_churn.py", f"{self.rnd.uniform(0.2, 4):.2f}",
                 self.rnd.choice(("exit", "raise", "kill"))],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            procs.append(p)
            self.churned += 1
            if time.monotonic() >= next_exec:
                next_exec += 20
                to = self.rnd.choice(("self", "3.13", "sleep"))
                try:
                    t = livelib.start_target(self.tmp, execer, "3.14", "chroot", "--exec-to", to)
                    time.sleep(2)
                    os.kill(t.pid, signal.SIGUSR1)
                    time.sleep(3)
                    t.kill()
                    self.execs += 1
                except Exception as e:  # noqa: BLE001 - load, not a check
                    self.say(f"execer: {e}")
            self.stop.wait(0.5)
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait()
        os.unlink(script)

    def scrape(self, agent):
        while not self.stop.wait(5):
            try:
                agent.get("/metrics", timeout=10)
                agent.get("/targets", timeout=10)
                agent.get("/debug/pprof/profile?seconds=1", timeout=20)
            except Exception as e:  # noqa: BLE001 - counted by the agent's own metrics
                self.say(f"scrape: {e}")

    # --- the run -------------------------------------------------------------

    def run(self):
        a = self.args
        livelib.BINARY = os.path.abspath(a.binary)
        self.say(f"soak for {a.minutes} min with {livelib.BINARY}; output in {self.tmp}")
        for i, (v, mode) in enumerate((("3.13", "chroot"), ("3.14", "chroot"),
                                       ("3.15", "chroot"), ("3.14", "container"),
                                       ("3.13", "chroot"), ("3.14", "chroot"),
                                       ("3.15", "container"), ("3.15", "chroot"))):
            if i < 2:  # two busy, the rest mostly asleep, as on a real node
                livelib.start_target(self.tmp, self.copy("hotspot", f"{self.token}_long{i}"), v,
                                     mode, "--which", ("alpha", "beta")[i])
            else:
                livelib.start_target(self.tmp, self.copy("sleepy", f"{self.token}_long{i}"), v,
                                     mode)
        agent = livelib.Agent(self.tmp, "agent", self.config()).wait_http()
        threads = [threading.Thread(target=f, args=args, daemon=True)
                   for f, args in ((self.receiver_cycle, ()), (self.churn, ()),
                                   (self.scrape, (agent,)))]
        for t in threads:
            t.start()
        start = time.monotonic()
        end = start + a.minutes * 60
        rows = []
        with open(os.path.join(self.tmp, "soak.csv"), "w") as csv:
            csv.write("seconds,rss_kib,fds,threads,receiver\n")
            while time.monotonic() < end:
                if agent.proc.poll() is not None:
                    self.say(f"the agent exited ({agent.proc.returncode})")
                    break
                secs = time.monotonic() - start
                rss, fds, nthreads = proc_status(agent.proc.pid)
                rows.append((secs, rss, fds, nthreads))
                csv.write(f"{secs:.0f},{rss},{fds},{nthreads},{self.phase}\n")
                csv.flush()
                if len(rows) % 30 == 1:
                    self.say(f"{secs / 60:5.1f} min: RSS {rss / 1024:.1f} MiB, {fds} fds, "
                             f"{nthreads} threads, {self.churned} churned, {self.execs} execs, "
                             f"receiver {self.phase}")
                time.sleep(10)
        self.stop.set()
        for t in threads:
            t.join(timeout=60)
        # drain: the receiver is up, the queue empties
        deadline = time.monotonic() + 120
        queued = None
        while time.monotonic() < deadline and agent.proc.poll() is None:
            queued = agent.metric('pyprofd_push_queue_length{endpoint="soak"}')
            if queued == 0:
                break
            time.sleep(1)
        text = agent.metrics() if agent.proc.poll() is None else ""
        rc = agent.stop(timeout=30)
        livelib.stop_all()
        self.receiver.stop()
        return self.report(agent, rows, text, rc)

    def report(self, agent, rows, text, rc):
        m = lambda name: livelib.Agent.metric(agent, name, text) or 0  # noqa: E731
        encoded = m("pyprofd_profiles_encoded_total")
        pushed = m('pyprofd_push_profiles_total{endpoint="soak"}')
        reasons = ("queue_full", "too_old", "permanent_error", "retries_exhausted", "relabeled",
                   "shutdown")
        dropped = {r: m(f'pyprofd_push_dropped_profiles_total{{endpoint="soak",reason="{r}"}}')
                   for r in reasons}
        queued = m('pyprofd_push_queue_length{endpoint="soak"}')
        records, _ = self.receiver.snapshot()
        keys = [r.key() for r in records]
        half = [r for r in rows if r[0] >= rows[-1][0] / 2] if rows else []
        warm = [r for r in rows if r[0] >= 300] or rows
        lines = [
            f"duration: {rows[-1][0] / 60 if rows else 0:.1f} min; churned processes "
            f"{self.churned}, execs {self.execs}; agent exit status {rc}",
            f"RSS: start {rows[0][1] / 1024:.1f} MiB, after 5 min {warm[0][1] / 1024:.1f} MiB, "
            f"end {rows[-1][1] / 1024:.1f} MiB, max {max(r[1] for r in rows) / 1024:.1f} MiB; "
            f"slope over the second half {slope_kib_per_min([(r[0], r[1]) for r in half]):+.1f} "
            f"KiB/min" if rows else "no samples",
            f"fds over the second half: {min(r[2] for r in half)}-{max(r[2] for r in half)}; "
            f"threads: {min(r[3] for r in half)}-{max(r[3] for r in half)}" if half else "",
            f"push: encoded {encoded:.0f} = delivered {pushed:.0f} + dropped "
            f"{sum(dropped.values()):.0f} {json.dumps({k: v for k, v in dropped.items() if v})} "
            f"+ queued {queued:.0f}",
            f"receiver: {len(set(keys))} distinct profiles ({len(keys) - len(set(keys))} received "
            f"twice: a send cut after the receiver stored it, when it went down, is sent again: "
            f"delivery is at least once); {len(set(keys)) - pushed:.0f} more than counted "
            f"delivered before SIGTERM (the windows flushed at shutdown)",
        ]
        ok = rc == 0 and encoded == pushed + sum(dropped.values()) + queued and \
            len(set(keys)) >= pushed
        if half:
            ok = ok and abs(slope_kib_per_min([(r[0], r[1]) for r in half])) < 64
        lines.append("result: " + ("ok" if ok else "FAILED"))
        summary = "\n".join(x for x in lines if x)
        print(summary, flush=True)
        with open(os.path.join(self.tmp, "summary.txt"), "w") as f:
            f.write(summary + "\n")
        return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--minutes", type=float, default=60)
    ap.add_argument("--binary", default=os.path.join(livelib.SOURCE_DIR, "build-release",
                                                      "pyprofd"))
    ap.add_argument("--out")
    args = ap.parse_args()
    try:
        sys.exit(Soak(args).run())
    finally:
        livelib.stop_all()


if __name__ == "__main__":
    main()
