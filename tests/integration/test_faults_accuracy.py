# SPDX-License-Identifier: MIT
"""Accuracy faults (issue 37): what an adversarial run measured, each scenario
asserting its outcome on live CPython processes.

    ParkedBurstTest  brief.py 100 2 1 (a thread that works 2 ms every 100 ms,
                     at a random point of the period's first ms) under the
                     agent's default idle check (perf: the target parks
                     between the runs), a wall job and a cpu job at 2 kHz:
                     over a 10 s /debug/pprof/profile the thread's work is
                     seen at >= 0.9 of what it took (wall: brief_work's
                     share of the thread's samples against the share of the
                     time it was in brief_work, as brief.py measures it; cpu:
                     the profile's time in brief_loop against the thread's
                     CPU time as the kernel counted it), and not above its
                     CPU time plus its wait for a CPU (+10 %). Was 0.49 (wall) and 0.79
                     (cpu) at 100 Hz, about 0.6 and 0.7 here: the attempts
                     due just before a wake-up were counted as idle, and the
                     ones due since were made at the next tick and timer
                     slack, after much of the run. With idle_check off it is
                     about the same. Not on an oversubscribed machine: with
                     three CPU hogs on the two CPUs both modes fell to
                     0.5-0.8, with the idle check off as well (the sampling
                     thread waits for a CPU while the runs go by), hence
                     PROCESSORS 2 in ctest.
    OneLineTest      one_line.py on CPython 3.9 (Debian 11), 3.11, 3.13, 3.14,
                     3.15: `pyprofd dump --json` puts the frames of a lambda,
                     one-line functions and a one-line generator expression
                     on their own first line (3.9 leaves their co_lnotab
                     empty: they came out at line 0).
    DeepNativeTest   native_deep.py on 3.9, 3.11 and 3.14: a C extension 400
                     frames deep, `record --native=full -d 2`: the stacks are
                     cut (the leaf's C frames, then <native> and the Python
                     frames), as on 3.14, not Python only (3.9 and 3.11 lost
                     every C frame).

Environment: as the other drivers (livelib: PYPROFD_BINARY, ...). Run by
ctest as test_faults_accuracy_live (label integration), or by hand:
    /usr/bin/python3 tests/integration/test_faults_accuracy.py [-v]
"""

import concurrent.futures
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import livelib  # noqa: E402

BINARY = livelib.BINARY


def schedstat(pid, tid):
    """(CPU time, time waiting for a CPU) of thread @tid in ns."""
    with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
        run, wait = (int(v) for v in f.read().split()[:2])
    return run, wait


def worked(target, timeout=5):
    """Seconds brief.py's brief_work() has run so far (it prints them on SIGUSR1)."""
    with open(target.log, encoding="utf-8") as f:
        before = f.read().count("pyprofd-brief: worked ")
    os.kill(target.pid, signal.SIGUSR1)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(target.log, encoding="utf-8") as f:
            found = re.findall(r"^pyprofd-brief: worked ([0-9.]+)$", f.read(), re.M)
        if len(found) > before:
            return float(found[-1])
        time.sleep(0.01)
    raise AssertionError(f"{target!r} did not say how long it worked")


def profile_ns(path, pred):
    """The time (ns, the last sample value) of the samples of the pprof at @path whose
    stack has a function @pred accepts."""
    prof = livelib.pprof_read(path)
    names = {lid: [prof["functions"][fid][0] for fid, _ in lines]
             for lid, lines in prof["locations"].items()}
    return sum(values[-1] for values, locs, _ in prof["samples"]
               if any(pred(n) for lid in locs for n in names.get(lid, ())))


class ParkedBurstTest(unittest.TestCase):
    """A thread that works 2 ms every 100 ms, seen at all its work although its
    process parks between the runs (docs/agent.md, "Idle threads cost no reads")."""

    RATE = 2000      # Hz: about 4 samples per run, 400 in brief_work over the profile
    SECONDS = 10
    LOW = 0.9        # of its time in brief_work (wall), of its CPU time (cpu), at least
    HIGH = 1.1       # of its CPU time plus its wait for a CPU, at most

    def test_short_bursts_seen_in_full(self):
        """brief.py 100 2 1, wall and cpu jobs at 2 kHz, idle_check perf (default): both
        parked between runs; over 10 s, wall: brief_work's share of the brief thread's
        samples >= 0.9 x its share of time in brief_work (and <= 1.1 x its CPU + wait);
        cpu: the profile's time in brief_loop >= 0.9 x its CPU time (<= 1.1 x CPU +
        wait)"""
        tmp = livelib.scratch()
        # (runs 1 ms apart at random: a fixed schedule meets the agent's tick at
        # one phase only, and a 2 ms run's share then depends on it, by +-15 %
        # at 1 kHz with the idle check off too)
        targets = {mode: livelib.start_target(tmp, "brief", "3.14", "chroot", "100", "2", "1")
                   for mode in ("wall", "cpu")}
        wrap = ()
        for t in targets.values():  # the logic is measured, not the scheduler
            wrap = livelib.apart(t.pid)
        jobs = "".join(f"""\
  - job_name: burst-{mode}
    mode: {mode}
    relabel_configs:
      - source_labels: [__meta_process_pid]
        regex: '{t.pid}'
        action: keep
""" for mode, t in targets.items())
        agent = livelib.Agent(tmp, "burst", f"""\
global: {{sample_rate: {self.RATE}, profile_interval: 1m}}
discovery: {{refresh_interval: 1s, min_process_age: 200ms}}
profile_configs:
{jobs}server:
  listen_address: 127.0.0.1:{{port}}
""", wrap=wrap)
        try:
            agent.wait_http()
            for t in targets.values():
                e = agent.wait_state(t.pid, "active", timeout=15)
                self.assertEqual(e.get("idle_check"), "perf", e)
            results, parked = {}, set()

            def profile(mode, t):
                tid = livelib.thread_named(t.pid, "brief")[0]
                run0, wait0 = schedstat(t.pid, tid)
                work0 = worked(t) if mode == "wall" else 0.0
                t0 = time.monotonic_ns()
                status, body = agent.get(f"/debug/pprof/profile?seconds={self.SECONDS}"
                                         f"&pid={t.pid}", timeout=self.SECONDS + 30)
                elapsed = time.monotonic_ns() - t0
                work1 = worked(t) if mode == "wall" else 0.0
                run1, wait1 = schedstat(t.pid, tid)
                self.assertEqual(status, 200, body[:300])
                path = os.path.join(tmp, f"burst-{mode}.pb.gz")
                with open(path, "wb") as f:
                    f.write(body)
                results[mode] = (path, run1 - run0, wait1 - wait0, elapsed,
                                 (work1 - work0) * 1e9)

            threads = [threading.Thread(target=profile, args=item) for item in targets.items()]
            for th in threads:
                th.start()
            while any(th.is_alive() for th in threads):  # parked between the runs
                parked |= {p for p, e in agent.targets().items() if e.get("parked")}
                time.sleep(0.05)
            for th in threads:
                th.join()
            self.assertEqual(set(results), set(targets), "a profile request failed")
            self.assertEqual(parked, {t.pid for t in targets.values()}, "parked at some point")
            metrics = agent.metrics()
            for mode, (path, run, wait, elapsed, in_work) in results.items():
                job = f'{{job="burst-{mode}"}}'
                livelib.note(f"{mode}: attempts failed " + ", ".join(
                    f"{k} {agent.metric(f'pyprofd_samples_{k}_total{job}', metrics):.0f}"
                    for k in ("failed", "retried", "missed", "skipped")))
                brief = profile_ns(path, lambda n: n == "brief_loop")
                work = profile_ns(path, lambda n: n == "brief_work")
                if mode == "wall":
                    # every attempt has the brief thread, working or not: its share
                    # of them in brief_work, against the share of the time it was in
                    # brief_work as it measured it (its CPU time has its wake-ups
                    # too, outside brief_work: about 5 % of it, which left too
                    # little room to the bound)
                    seen, ref, most = work / brief, in_work / elapsed, (run + wait) / elapsed
                    what = "its time in brief_work"
                else:
                    seen, ref, most = brief, run, run + wait
                    what = "its CPU time"
                livelib.note(f"{mode}: seen {seen / ref:.2f} of {what} ("
                             f"{'share' if mode == 'wall' else 'ns'} {seen:.4g} vs {ref:.4g}; "
                             f"CPU {run / (elapsed if mode == 'wall' else 1):.4g}, +wait "
                             f"{most:.4g}); brief_work {work / 1e6:.0f} ms of brief_loop "
                             f"{brief / 1e6:.0f} ms")
                livelib.within(self, f"{mode}: the brief thread's work seen / {what}",
                               seen / ref, self.LOW, None)
                livelib.within(self, f"{mode}: ... / its CPU time and wait", seen / most,
                               None, self.HIGH)
        finally:
            rc = agent.stop()
            for t in targets.values():
                t.stop()
        self.assertEqual(rc, 0, agent.log()[-2000:])


class OneLineTest(unittest.TestCase):
    """Frames of code written on one line are on that line, on every version."""

    VERSIONS = ("3.9", "3.11", "3.13", "3.14", "3.15")

    @classmethod
    def setUpClass(cls):
        cls.tmp = livelib.scratch()
        with concurrent.futures.ThreadPoolExecutor(len(cls.VERSIONS)) as pool:
            futures = {v: pool.submit(livelib.start_target, cls.tmp, "one_line", v)
                       for v in cls.VERSIONS if not livelib.build_missing(v)}
        cls.targets = {}
        for v, f in futures.items():
            try:
                cls.targets[v] = f.result()
            except Exception as e:  # pylint: disable=broad-except (reported by the test)
                cls.targets[v] = e
            else:
                cls.addClassCleanup(cls.targets[v].stop)

    def check(self, version):
        missing = livelib.build_missing(version)
        if missing:
            self.skipTest(missing)
        t = self.targets[version]
        if isinstance(t, Exception):
            self.fail(f"target did not start: {t}")
        with open(t.log, encoding="utf-8") as f:
            m = re.search(r"^pyprofd-expected: (.*)$", f.read(), re.M)
        self.assertIsNotNone(m, "the target printed no expected lines")
        want = json.loads(m.group(1))["lines"]
        # the generator expression is on the stack while it runs, not while any()
        # (C) does: dumps until every frame was seen
        got, dumps = {}, 0
        while set(got) != set(want) and dumps < 20:
            proc = subprocess.run([BINARY, "dump", "--json", str(t.pid)], capture_output=True,
                                  text=True, timeout=60)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            dumps += 1
            threads = json.loads(proc.stdout)["threads"]
            frames = [f for th in threads if th["main"] for f in th["frames"]]
            # 3.11+ name a frame by co_qualname (spin.<locals>.<genexpr>), 3.9 by co_name
            for f in frames:
                name = f["function"].rsplit(".", 1)[-1]
                if name in want:
                    got.setdefault(name, set()).add(f["line"])
        livelib.note(f"{version}: {got} in {dumps} dumps (co_firstlineno: {want})")
        self.assertEqual(got, {k: {v} for k, v in want.items()})


class DeepNativeTest(unittest.TestCase):
    """A C stack deeper than the frames unwound is cut, its leaf C frames kept."""

    VERSIONS = ("3.9", "3.11", "3.14")
    NATIVE_RE = re.compile(r"^pyprofd: native: (\d+) kernel samples of \d+ threads: (\d+) joined "
                           r"\([0-9.]+%\), (\d+) cut at the stack copy, (\d+) Python only", re.M)

    @classmethod
    def setUpClass(cls):
        out = subprocess.run([BINARY, "probe", str(os.getpid())], capture_output=True,
                             text=True, timeout=60)
        m = re.search(r"^\s*perf\s+(.*)$", out.stdout, re.M)
        if not m or not m.group(1).startswith("permitted"):
            raise unittest.SkipTest(f"perf events refused here: {m.group(1) if m else out}")
        cls.tmp = livelib.scratch()
        cls.results = {}
        with concurrent.futures.ThreadPoolExecutor(len(cls.VERSIONS)) as pool:
            futures = {v: pool.submit(cls.run_one, v) for v in cls.VERSIONS
                       if not livelib.build_missing(v)}
        for v, f in futures.items():
            try:
                cls.results[v] = f.result()
            except Exception as e:  # pylint: disable=broad-except (reported by the test)
                cls.results[v] = e

    @classmethod
    def run_one(cls, version):
        lib_name = f"libpyprofd_deep-{os.getpid()}-{version}.so"
        lib_dir = os.path.join(livelib.rootfs_for(version), "pyprofd-targets")
        os.makedirs(lib_dir, exist_ok=True)
        lib = os.path.join(lib_dir, lib_name)
        src = os.path.join(livelib.SOURCE_DIR, "tests", "targets", "native_spin.c")
        build = subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-s", "-o", lib, src],
                               capture_output=True, text=True, timeout=120)
        if build.returncode != 0:
            raise AssertionError(f"cc failed: {build.stderr}")
        try:
            target = livelib.start_target(cls.tmp, "native_deep", version, "chroot",
                                          f"/pyprofd-targets/{lib_name}", "--depth", "400")
            out = os.path.join(cls.tmp, f"deep-{version}.txt")
            try:
                proc = subprocess.run([BINARY, "record", "--native=full", "-d", "2", "-o", out,
                                       str(target.pid)], capture_output=True, text=True,
                                      timeout=120)
            finally:
                target.stop()
        finally:
            os.unlink(lib)
        lines = []
        if os.path.exists(out):
            with open(out, encoding="utf-8") as f:
                lines = [line.rstrip("\n") for line in f if line.strip()]
        return proc, lines, lib_name

    def check(self, version):
        missing = livelib.build_missing(version)
        if missing:
            self.skipTest(missing)
        result = self.results[version]
        if isinstance(result, Exception):
            raise result
        proc, lines, lib_name = result
        self.assertEqual(proc.returncode, 0, proc.stderr)
        m = self.NATIVE_RE.search(proc.stderr)
        self.assertIsNotNone(m, f"no native summary line:\n{proc.stderr}")
        livelib.note(f"{version}: {m.group(0)}")
        samples, _, cut, python = (int(x) for x in m.groups())
        calls = deep = 0
        for line in lines:
            stack, _, count = line.rpartition(" ")
            names = [re.sub(r" \([^()]*\)$", "", f) for f in stack.split(";")]
            if "call_deep" not in names:
                continue
            calls += int(count)
            below = names[names.index("call_deep") + 1:]
            # C frames below call_deep, down to the leaf: the library's (pyprofd_deep,
            # its unnamed churn)
            if below.count("pyprofd_deep") >= 100 and (
                    names[-1] == "pyprofd_deep" or names[-1].startswith(lib_name + "+0x")):
                deep += int(count)
        self.assertGreater(calls, 50, lines[:3])
        livelib.within(self, f"{version}: call_deep's samples with its deep C frames and leaf",
                       deep / calls, 0.8, 1.0)
        livelib.within(self, f"{version}: kernel samples cut / kept", cut / samples, 0.8, 1.0)
        livelib.within(self, f"{version}: kernel samples kept as Python only", python / samples,
                       0.0, 0.05)


def _make(check, version):
    def t(self):
        check(self, version)
    t.__doc__ = f"{check.__name__} on python{version}"
    return t


for _cls in (OneLineTest, DeepNativeTest):
    for _v in _cls.VERSIONS:
        setattr(_cls, f"test_{_v.replace('.', '_')}", _make(_cls.check, _v))


if __name__ == "__main__":
    livelib.run(needs=("root", "rootfs"))
