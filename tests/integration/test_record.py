# SPDX-License-Identifier: MIT
"""Integration test of `pyprofd record` against live CPython 3.13, 3.14, 3.15.

Runs with Debian's /usr/bin/python3 (3.11, standard library only), as root,
once the test rootfs exists (scripts/python-rootfs.sh). Targets from
tests/targets are started by scripts/run-target.sh (or, for the command form
`record -- COMMAND`, by pyprofd itself); pprof output is read with the real
consumer, `go tool pprof` (Debian's golang-go), folded output is parsed here.
Test methods are generated per version, e.g. test_shares__3_14, so a failure
names it.

What is checked:
    shares     shares.py burns 5/3/2 ms of every 10 ms in three functions:
               `record -r 1k -d 5 -o X.pb.gz` gives flat shares of 50/30/20 %
               (+-3 points) in `go tool pprof -top`, and ~5000 samples;
               at the default 100 Hz, the target's own period, 50/30/20 %
               (+-10 points: 500 samples) too
    modes      modes.py (spinner, sleeper, GIL-releasing hasher, waiting
               main), `-a -r 500 -d 2`: wall has all four threads, cpu not the
               sleeper, gil neither the sleeper nor (almost) the hasher;
               cpu also in container mode
    exception  in_except.py: --mode exception keeps only the function that
               spins inside an except block; wall has both halves
    native     callback.py: --native puts <native> between sort_with_key and
               slow_key in the folded stacks; without it there is none
    gc         gc_heavy.py: <GC> in the folded stacks, none with --no-gc
    command    `record -o X.pb.gz -- chroot ROOTFS python3.X script` runs
               until the command exits by itself, exits 0, and the profile
               has the work function
    errors     a missing PID: non-zero exit, one line; `-r fast`: exit 2;
               --blocking keeps the target's signals; a command that never
               starts Python: exit 1, one line

The shares and modes tests run one version after the other (parallel CPU
burners on a small machine would skew the shares); the others record all
versions at once. Every started target is stopped (also when a test fails)
and profiles go to a temporary directory (livelib.scratch()).

The classes do not depend on each other's order: each one starts its own
targets, records and stops them (run-target.sh stop waits until they are
gone) before its tests return, and reads only its own recordings; so
unittest runs them in its usual (alphabetical) order, and any order works.
Every statistical bound is printed with the value observed, also on success
(livelib.within(): under each test with -v, else before the closing line).

Environment:
    PYPROFD_BINARY          the pyprofd executable (default: SOURCE/build/pyprofd)
    PYPROFD_SOURCE_DIR      the source tree (default: two levels above this file)
    PYPROFD_ROOTFS          the rootfs (default: scripts/python-rootfs.sh --print-path)
    PYPROFD_RECORD_VERSIONS comma-separated subset of 3.9,3.11,3.13,3.14,3.15 (default: all)
    PYPROFD_GO              the go command (default: go on PATH, else /usr/bin/go)

Run by ctest as test_record_live (label integration), or by hand:
    /usr/bin/python3 tests/integration/test_record.py [-v] [-k shares]
The last line of the output is "N passed, N failed, N skipped" (one per
test method, livelib.run()); the exit status is non-zero if anything failed.
"""

import concurrent.futures
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import livelib  # noqa: E402

BINARY = livelib.BINARY

# 3.11: the host's own Debian 12 interpreter (a generated layout)
ALL_VERSIONS = ("3.9", "3.11", "3.13", "3.14", "3.15")
VERSIONS = tuple(v for v in os.environ.get("PYPROFD_RECORD_VERSIONS",
                                           ",".join(ALL_VERSIONS)).split(",") if v)

SUMMARY_RE = re.compile(r"^pyprofd: (\d+) samples in ([0-9.]+) s \(([0-9.]+) Hz achieved\), "
                        r"(\d+) failed \(([0-9.]+)%\), (\d+) missed \(([0-9.]+)%\)$")


def start_target(name, version, mode="chroot", *args):
    """tests/targets/NAME.py started by run-target.sh (a livelib.Target)."""
    return livelib.start_target(livelib.scratch(), name, version, mode, *args)


# --- pyprofd record ----------------------------------------------------------

class Recording:
    """One `pyprofd record` run: exit status, output, the profile."""

    def __init__(self, argv, rc, stdout, stderr, path, seconds):
        self.argv, self.rc, self.stdout, self.stderr = argv, rc, stdout, stderr
        self.path, self.seconds = path, seconds

    def summary(self):
        """(samples, seconds, hz, failed, failed%, missed, missed%) of the summary line."""
        for line in reversed(self.stderr.splitlines()):
            m = SUMMARY_RE.match(line)
            if m:
                g = m.groups()
                return (int(g[0]), float(g[1]), float(g[2]), int(g[3]), float(g[4]), int(g[5]),
                        float(g[6]))
        return None

    def describe(self):
        return (f"`{' '.join(self.argv)}` exited {self.rc} after {self.seconds:.2f} s; "
                f"stderr:\n{self.stderr}")


_counter = [0]
_counter_lock = threading.Lock()


def record(flags, pid=None, command=None, suffix=".pb.gz", env=None, timeout=60, wrap=()):
    """Run `[WRAP] pyprofd record FLAGS -o TMP/xxxSUFFIX (PID | -- COMMAND)`."""
    with _counter_lock:
        _counter[0] += 1
        n = _counter[0]
    path = os.path.join(livelib.scratch(), f"profile-{n}{suffix}")
    argv = [*wrap, BINARY, "record", *flags, "-o", path]
    argv += [str(pid)] if command is None else ["--", *command]
    t0 = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, timeout=timeout, cwd=livelib.scratch(),
                          stdin=subprocess.DEVNULL, env=env)
    return Recording(argv, proc.returncode, proc.stdout.decode("utf-8", errors="replace"),
                     proc.stderr.decode("utf-8", errors="replace"), path,
                     time.monotonic() - t0)


def session(name, version, mode, runs, target_args=(), at_once=False):
    """Start NAME, run each record FLAGS of RUNS (in turn, or all at once), stop it.

    Returns {key: Recording or Exception}; a target that does not start
    makes every run that exception.
    """
    try:
        target = start_target(name, version, mode, *target_args)
    except Exception as e:
        return {key: e for key in runs}
    try:
        jobs = {key: (lambda flags=flags, suffix=suffix: record(flags, target.pid,
                                                                suffix=suffix))
                for key, (flags, suffix) in runs.items()}
        if at_once:
            results = parallel(jobs)
        else:
            results = {}
            for key, job in jobs.items():
                try:
                    results[key] = job()
                except Exception as e:
                    results[key] = e
        for r in results.values():
            if isinstance(r, Recording):
                r.target = target
    finally:
        target.stop()
    return results


def parallel(jobs):
    """Run {key: callable} at once; {key: result or exception}."""
    out = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(jobs) or 1) as pool:
        futures = {key: pool.submit(job) for key, job in jobs.items()}
    for key, future in futures.items():
        try:
            out[key] = future.result()
        except Exception as e:
            out[key] = e
    return out


# --- reading profiles --------------------------------------------------------

def go_pprof(*args):
    """Run `go tool pprof -symbolize=none ARGS`; return (rc, stdout, stderr).

    -symbolize=none: otherwise, when every function's system name equals
    its name, pprof "demangles" the names as C++ and its simplifier turns
    "<module>" into an empty name.
    """
    home = os.path.join(livelib.scratch(), "gohome")
    os.makedirs(home, exist_ok=True)
    env = dict(os.environ, HOME=home, GOCACHE=os.path.join(home, "cache"),
               PPROF_TMPDIR=os.path.join(home, "pprof"), GOFLAGS="", GOTOOLCHAIN="local")
    proc = subprocess.run([livelib.go_binary(), "tool", "pprof", "-symbolize=none", *args],
                          capture_output=True, timeout=60, env=env, cwd=home)
    return (proc.returncode, proc.stdout.decode("utf-8", errors="replace"),
            proc.stderr.decode("utf-8", errors="replace"))


class Sample:
    def __init__(self, values, frames, labels, files=None):
        self.values = values    # one per sample type
        self.frames = frames    # function names, leaf first
        self.labels = labels    # {key: value}, strings
        self.files = files or [""] * len(frames)  # each frame's file name

    def has(self, function):
        return function in self.frames


class Profile:
    """A pprof profile as `go tool pprof -raw` prints it (Profile.String())."""

    def __init__(self, text):
        self.text = text
        self.sample_types = []
        self.period_type = None
        self.samples = []
        locations = {}
        raw = []          # (values, location ids, labels)
        section = None
        sample_line = re.compile(r"^\s*((?:-?\d+\s+)*-?\d+):\s*((?:\d+\s*)*)$")
        label_re = re.compile(r"(\w+):\[([^\]]*)\]")
        loc_line = re.compile(r"^\s*(\d+): 0x[0-9a-fA-F]+ (?:M=\d+ )?(.*)$")
        # NAME FILE:LINE s=START(SYSTEM_NAME); a frozen module's FILE has a space
        func_re = re.compile(r"^(.*?) (<frozen [^>]*>|\S*):(-?\d+) s=(-?\d+)(?:\(.*\))?$")
        for line in text.splitlines():
            if line.startswith("PeriodType:"):
                self.period_type = line.split(":", 1)[1].strip()
                continue
            if line.startswith("Samples:"):
                section = "samples-header"
                continue
            if line.startswith("Locations"):
                section = "locations"
                continue
            if line.startswith("Mappings"):
                section = "mappings"
                continue
            if section == "samples-header":
                self.sample_types = line.split()
                section = "samples"
            elif section == "samples":
                m = sample_line.match(line)
                if m:
                    raw.append(([int(v) for v in m.group(1).split()],
                                [int(i) for i in m.group(2).split()], {}))
                elif raw and label_re.search(line):
                    for k, v in label_re.findall(line):
                        raw[-1][2][k] = v
            elif section == "locations":
                m = loc_line.match(line)
                if m:
                    fm = func_re.match(m.group(2))
                    locations[int(m.group(1))] = ((fm.group(1), fm.group(2)) if fm else
                                                  (m.group(2), ""))
        for values, ids, labels in raw:
            frames = [locations.get(i, ("?", "")) for i in ids]
            self.samples.append(Sample(values, [f[0] for f in frames], labels,
                                       [f[1] for f in frames]))

    def total(self, index=0):
        return sum(s.values[index] for s in self.samples)

    def count(self, pred, index=0):
        return sum(s.values[index] for s in self.samples if pred(s))


def read_folded(path):
    """[(frames root first, count)] of a folded-stacks file."""
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            stack, _, count = line.rpartition(" ")
            out.append((stack.split(";"), int(count)))
    return out


def frame_name(frame):
    """'qualname (file:line)' -> 'qualname'; markers stay as they are."""
    return frame.split(" (", 1)[0]


# --- test cases --------------------------------------------------------------

def per_version(cls):
    """Turn each check_NAME(self, version) into test_NAME__3_X."""
    for attr in [a for a in vars(cls) if a.startswith("check_")]:
        check = getattr(cls, attr)
        for version in VERSIONS:
            def test(self, check=check, version=version):
                check(self, version)
            test.__name__ = f"test_{attr[len('check_'):]}__{version.replace('.', '_')}"
            test.__doc__ = f"{check.__doc__ or attr} [python{version}]"
            setattr(cls, test.__name__, test)
    return cls


class RecordCase(unittest.TestCase):
    maxDiff = None

    def result(self, results, key):
        r = results.get(key)
        if isinstance(r, Exception):
            self.fail(f"{key}: {r}")
        self.assertIsNotNone(r, f"no recording for {key}")
        return r

    def assert_recorded(self, rec):
        self.assertEqual(rec.rc, 0, rec.describe())
        self.assertTrue(os.path.isfile(rec.path), f"no output file; {rec.describe()}")
        self.assertIsNotNone(rec.summary(), f"no summary line; {rec.describe()}")

    def pprof(self, rec, mode):
        """The profile of REC read by go tool pprof -raw; sample types checked."""
        self.assert_recorded(rec)
        rc, out, err = go_pprof("-raw", rec.path)
        self.assertEqual(rc, 0, f"go tool pprof -raw {rec.path} failed:\n{err}")
        prof = Profile(out)
        self.assertEqual(prof.sample_types, ["samples/count", f"{mode}/nanoseconds"],
                         f"sample types of {rec.path}")
        self.assertTrue(prof.samples, f"no samples in {rec.path}; {rec.describe()}")
        for s in prof.samples:
            self.assertIn("thread_id", s.labels, f"labels of a sample: {s.labels}")
            self.assertTrue(s.labels["thread_id"].isdigit(), s.labels)
            self.assertIn("thread_name", s.labels, f"labels of a sample: {s.labels}")
        return prof

    def folded(self, rec):
        self.assert_recorded(rec)
        stacks = read_folded(rec.path)
        self.assertTrue(stacks, f"empty folded output; {rec.describe()}")
        return stacks


@per_version
class SharesTest(RecordCase):
    """shares.py: 50/30/20 % of the CPU time in burn_half/burn_third/burn_fifth.

    One version after the other, a single target at a time.
    """

    WANT = {"burn_half": 50.0, "burn_third": 30.0, "burn_fifth": 20.0}
    TOLERANCE = 3.0

    def check_shares(self, version):
        """record -r 1k -d 5: flat shares 50/30/20 +-3 points, ~5000 samples"""
        target = start_target("shares", version)
        self.addCleanup(target.stop)
        rec = record(["-r", "1k", "-d", "5"], target.pid)
        target.stop()
        self.assert_recorded(rec)
        samples, seconds, hz, failed, _, missed, _ = rec.summary()
        breakdown = "".join(f" ({line[len('pyprofd: '):]})" for line in rec.stderr.splitlines()
                            if line.startswith("pyprofd: failed samples:"))
        livelib.note(f"python{version}: {samples} samples in {seconds} s ({hz} Hz), "
                     f"{failed} failed, {missed} missed{breakdown}")
        livelib.within(self, f"python{version} samples", samples, 4500, 5050, rec.describe())
        livelib.within(self, f"python{version} seconds", seconds, 4.5, 5.5, rec.describe())

        prof = self.pprof(rec, "wall")
        self.assertEqual(prof.total(0), samples, "samples in the profile vs. the summary line")
        self.assertEqual({s.labels["thread_id"] for s in prof.samples}, {str(target.pid)},
                         "thread_id of the main thread (== pid in a chroot)")
        for s in prof.samples:  # one sample = one period of 1 ms
            self.assertEqual(s.values[1], s.values[0] * 1000000, "wall ns = samples x 1 ms")

        for index in (0, 1):
            rc, out, err = go_pprof("-top", "-nodecount=50", f"-sample_index={index}", rec.path)
            self.assertEqual(rc, 0, f"go tool pprof -top failed:\n{err}")
            flat = {}
            for line in out.splitlines():
                fields = line.split()
                if len(fields) == 6 and fields[1].endswith("%"):
                    flat[fields[5]] = float(fields[1][:-1])
            livelib.within_each(
                self, f"python{version} flat shares (sample_index={index})",
                [(f, flat.get(f, 0.0), want - self.TOLERANCE, want + self.TOLERANCE)
                 for f, want in self.WANT.items()], msg=f"go tool pprof -top:\n{out}", unit="%")


class OwnPeriodTest(RecordCase):
    """shares.py at the default 100 Hz, which is the target's own period."""

    def test_shares_at_the_targets_own_period(self):
        """record -d 5 (100 Hz): flat shares 50/30/20 +-10 points, ~500 samples

        Every attempt is made at a random point of its whole interval. When
        that point was drawn from the first half only, samples at 100 Hz saw
        one half of shares.py's 10 ms cycle: burn_third came out anywhere
        from 3 % to 57 %, depending on where the recording started. The
        bound is about 4.5 standard deviations of 500 samples; one version
        is enough, the schedule does not depend on it.
        """
        target = start_target("shares", "3.13")
        self.addCleanup(target.stop)
        rec = record(["-d", "5"], target.pid)
        target.stop()
        prof = self.pprof(rec, "wall")
        total = prof.total(0)
        livelib.within(self, "samples at 100 Hz", total, 450, 505, rec.describe())
        livelib.within_each(
            self, f"shares at 100 Hz ({total} samples)",
            [(f, 100.0 * prof.count(lambda s, f=f: s.has(f)) / total, want - 10.0, want + 10.0)
             for f, want in SharesTest.WANT.items()], unit="%")


IDLE_RE = re.compile(r"^pyprofd: idle threads \((\w+)[^)]*(?:\([^)]*\))?[^)]*\): (\d+) samples made "
                     r"without a read, (\d+) thread stacks counted again$", re.M)


class IdleCheckTest(RecordCase):
    """brief.py with -a: the idle check (issue 26) keeps every share.

    A thread computes for 1 ms every 10 ms; another never runs. Recorded
    with each --idle-check (perf: context-switch records; schedstat: /proc;
    off: every sample reads) in wall and cpu mode: brief_work() must come
    out in proportion to the time it runs whether or not samples in between
    were made without a read, and blocked_wait() at every sample."""

    TOLERANCE = 3.0   # points; about 4 standard deviations of 2000 samples

    def run_one(self, pid, mode, how, wrap=()):
        rec = record(["-a", "-r", "1k", "-d", "2", "--mode", mode, "--idle-check", how,
                      "--no-progress"], pid, wrap=wrap)
        prof = self.pprof(rec, mode)
        samples = rec.summary()[0]
        m = IDLE_RE.search(rec.stderr)
        if how == "off":
            self.assertIsNone(m, rec.describe())
            saved = reused = 0
        else:
            self.assertIsNotNone(m, f"no idle-threads line; {rec.describe()}")
            self.assertEqual(m.group(1), how, rec.describe())
            saved, reused = int(m.group(2)), int(m.group(3))
        return rec, prof, samples, saved, reused

    @staticmethod
    def schedstat(pid, tid):
        """(CPU time, time waiting for a CPU) of a thread in seconds, and when."""
        with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
            run, wait, _ = (int(v) for v in f.read().split())
        return run / 1e9, wait / 1e9, time.monotonic()

    def test_brief_thread_in_proportion(self):
        """-a -r 1k -d 2, wall and cpu, --idle-check perf/schedstat/off: the brief
        thread's share (cpu: of the samples, on a CPU; wall: brief_work's share of
        its samples) lies between its CPU time and its CPU time plus its wait for a
        CPU as the kernel counted them over the recording, +- 3 points (wall: -6
        below); blocked_wait at every wall sample and never in cpu mode; perf
        makes most samples without a read"""
        target = start_target("brief", "3.14")
        self.addCleanup(target.stop)
        wrap = livelib.apart(target.pid)  # what is measured is the check, not the scheduler
        tids = livelib.thread_named(target.pid, "brief")
        self.assertEqual(len(tids), 1, "the brief thread by its OS name (3.14 sets it)")
        for mode in ("wall", "cpu"):
            for how in ("perf", "schedstat", "off"):
                run0, wait0, t0 = self.schedstat(target.pid, tids[0])
                rec, prof, samples, saved, reused = self.run_one(target.pid, mode, how, wrap)
                run1, wait1, t1 = self.schedstat(target.pid, tids[0])
                # the kernel's view of the brief thread over the recording (a
                # little longer: the start and the write)
                lo = 100.0 * (run1 - run0) / (t1 - t0)
                hi = 100.0 * (run1 - run0 + wait1 - wait0) / (t1 - t0)
                work = prof.count(lambda s: s.has("brief_work"))
                blocked = prof.count(lambda s: s.has("blocked_wait"))
                if mode == "wall":
                    brief = prof.count(lambda s: s.has("brief_loop"))
                    share = 100.0 * work / brief if brief else 0.0
                    # every attempt counts the blocked thread, read or not
                    self.assertEqual(blocked, samples, f"{how}: {rec.describe()}")
                    self.assertEqual(brief, samples, f"{how}: {rec.describe()}")
                    self.assertLessEqual(reused, 3 * saved, rec.describe())
                    # brief_work only: part of the thread's CPU time is spent
                    # inside brief_sleep (waking up, taking the GIL back)
                    low = lo - 2 * self.TOLERANCE
                else:
                    # every moment of the thread on a CPU is below brief_loop
                    share = 100.0 * prof.count(lambda s: s.has("brief_loop")) / samples
                    self.assertEqual(blocked, 0, f"{how}: never on a CPU; {rec.describe()}")
                    self.assertGreater(work, 0, rec.describe())
                    low = lo - self.TOLERANCE
                livelib.note(f"{mode} {how}: {samples} samples, brief thread {share:.1f} % "
                             f"(kernel: on CPU {lo:.1f} %, + waiting {hi:.1f} %), {saved} "
                             f"without a read, {reused} stacks counted again")
                livelib.within(self, f"{mode} --idle-check {how}: share %", share,
                               low, hi + self.TOLERANCE, rec.describe())
                if how == "perf":
                    # between the brief thread's runs all three sleep: most
                    # samples need no read (cpu: about 90 %, wall: fewer, the
                    # first after each run reads)
                    livelib.within(self, f"{mode} perf: share made without a read",
                                   100.0 * saved / samples, 50.0 if mode == "cpu" else 30.0,
                                   100.0, rec.describe())


    def test_main_thread_waiting_for_good(self):
        """brief.py's main thread (joins for good), -r 1k -d 1 per --idle-check: every
        sample in main_wait; perf and schedstat make at least 80 % of them without a
        read (schedstat: once its values held for a tick), cpu mode keeps none"""
        target = start_target("brief", "3.13")
        self.addCleanup(target.stop)
        for how in ("perf", "schedstat"):
            rec = record(["-r", "1k", "-d", "1", "--idle-check", how, "--no-progress"],
                         target.pid)
            prof = self.pprof(rec, "wall")
            samples = rec.summary()[0]
            self.assertEqual(prof.count(lambda s: s.has("main_wait")), samples, rec.describe())
            m = IDLE_RE.search(rec.stderr)
            self.assertIsNotNone(m, rec.describe())
            livelib.within(self, f"{how}: % made without a read", 100.0 * int(m.group(2)) / samples,
                           80.0, 100.0, rec.describe())
            self.assertEqual(int(m.group(3)), int(m.group(2)), "one stack counted again each")
            rec = record(["-r", "1k", "-d", "1", "--mode", "cpu", "--idle-check", how,
                          "--no-progress", "--format", "collapsed"], target.pid, suffix=".txt")
            self.assert_recorded(rec)
            with open(rec.path, encoding="utf-8") as f:
                self.assertNotIn("main_wait", f.read(), rec.describe())
            m = IDLE_RE.search(rec.stderr)
            self.assertIsNotNone(m, rec.describe())
            livelib.within(self, f"cpu {how}: % made without a read",
                           100.0 * int(m.group(2)) / rec.summary()[0], 80.0, 100.0,
                           rec.describe())


MODES_RUNS = {"wall": (["-a", "-r", "500", "-d", "2", "--mode", "wall"], ".pb.gz"),
              "cpu": (["-a", "-r", "500", "-d", "2", "--mode", "cpu"], ".pb.gz"),
              "gil": (["-a", "-r", "500", "-d", "2", "--mode", "gil"], ".pb.gz")}
THREAD_FUNCS = {"spinner": "spinner_loop", "sleeper": "sleeper_loop", "hasher": "hasher_loop",
                "MainThread": "main_wait"}


@per_version
class ModesTest(RecordCase):
    """modes.py with -a: which threads each of --mode wall, cpu, gil keeps."""

    @classmethod
    def setUpClass(cls):
        # One target at a time, its three recordings at once: the cpu check
        # needs the machine not to be overloaded (a thread woken on a busy
        # machine is runnable, i.e. "on CPU", until it gets a core), and the
        # targets burn two cores each.
        cls.results = {v: session("modes", v, "chroot", MODES_RUNS, at_once=True)
                       for v in VERSIONS}
        cls.container = {v: session("modes", v, "container", {"cpu": MODES_RUNS["cpu"]})
                         for v in VERSIONS}

    def shares(self, prof, what):
        total = prof.total(0)
        self.assertGreater(total, 0)
        got = {name: 100.0 * prof.count(lambda s, f=f: s.has(f)) / total
               for name, f in THREAD_FUNCS.items()}
        self.total = total
        return got

    def assert_shares(self, got, what, bounds):
        """Each thread's share of @got within @bounds {name: (lo, hi)}; all of them noted."""
        livelib.within_each(self, f"{what} ({self.total} samples), share",
                            [(name, share, *bounds.get(name, (None, None)))
                             for name, share in got.items()], msg=f"{got}", unit="%")

    def get(self, results, version, mode):
        r = results.get(version)
        if isinstance(r, Exception):
            self.fail(f"python{version}: {r}")
        return self.result(r, mode)

    def check_wall(self, version):
        """wall: every thread (the three workers and main) in every tick"""
        rec = self.get(self.results, version, "wall")
        prof = self.pprof(rec, "wall")
        got = self.shares(prof, f"python{version} wall")
        self.assert_shares(got, f"python{version} wall", {name: (20.0, 30.0) for name in got})
        # one thread_id per thread, and on 3.14+ the OS thread names
        by_func = {}
        for s in prof.samples:
            for name, f in THREAD_FUNCS.items():
                if s.has(f):
                    by_func.setdefault(name, set()).add((s.labels["thread_id"],
                                                         s.labels["thread_name"]))
        for name, ids in by_func.items():
            self.assertEqual(len(ids), 1, f"{name}: more than one (thread_id, thread_name): {ids}")
        self.assertEqual(len({next(iter(ids))[0] for ids in by_func.values()}), 4,
                         f"want four different thread ids: {by_func}")
        main_tid = next(iter(by_func["MainThread"]))[0]
        self.assertEqual(main_tid, str(rec.target.pid), "the main thread's id is the pid")
        if version not in ("3.9", "3.11", "3.13"):  # 3.14+ name OS threads after threading's names
            for name in ("spinner", "sleeper", "hasher"):
                self.assertEqual(next(iter(by_func[name]))[1], name, f"thread_name of {name}")

    def assert_cpu(self, rec, what):
        prof = self.pprof(rec, "cpu")
        got = self.shares(prof, what)
        # A sleeping thread is off CPU. After each wake-up it is runnable
        # (state R) until it gets a core and the GIL, which on a loaded
        # 2-core machine (an ASan pyprofd, two busy threads) takes a while:
        # that counted up to 3.3% (against 25% in wall mode) until cpu mode
        # counted CPU time only (issue 38: 0.00% since).
        self.assert_shares(got, what, {"sleeper": (None, 8.0), "MainThread": (None, 8.0),
                                      "spinner": (35.0, None)})

    def check_cpu(self, version):
        """cpu: the spinner (and hasher), not the sleeper nor the waiting main thread"""
        self.assert_cpu(self.get(self.results, version, "cpu"), f"python{version} cpu")

    def check_cpu_container(self, version):
        """cpu in container mode: namespace TIDs mapped to host TIDs for the on-CPU check"""
        self.assert_cpu(self.get(self.container, version, "cpu"),
                        f"python{version} cpu (container)")

    def check_gil(self, version):
        """gil: the spinner dominates; (almost) no sleeper, main, and <= 5% hasher"""
        prof = self.pprof(self.get(self.results, version, "gil"), "gil")
        got = self.shares(prof, f"python{version} gil")
        # Waking from time.sleep, the sleeper takes the GIL for a moment to
        # return into Python: it can be caught holding it (0.11% seen).
        self.assert_shares(got, f"python{version} gil", {
            "sleeper": (None, 1.0), "MainThread": (None, 1.0), "hasher": (None, 5.0),
            "spinner": (90.0, None)})


@per_version
class ExceptionTest(RecordCase):
    """in_except.py: spin_handling() spins inside an except block, spin_plain() outside."""

    @classmethod
    def setUpClass(cls):
        runs = {"wall": (["-r", "1k", "-d", "2"], ".pb.gz"),
                "exception": (["-r", "1k", "-d", "2", "--mode", "exception"], ".pb.gz")}
        cls.results = parallel({v: (lambda v=v: session("in_except", v, "chroot", runs))
                                for v in VERSIONS})

    def get(self, version, key):
        r = self.results.get(version)
        if isinstance(r, Exception):
            self.fail(f"python{version}: {r}")
        return self.result(r, key)

    def check_exception_mode(self, version):
        """--mode exception: >= 95% of the samples in spin_handling"""
        prof = self.pprof(self.get(version, "exception"), "exception")
        total = prof.total(0)
        handling = prof.count(lambda s: s.frames[:1] == ["spin_handling"])
        plain = prof.count(lambda s: s.has("spin_plain"))
        livelib.note(f"python{version} exception: {total} samples, spin_handling {handling}, "
                     f"spin_plain {plain}")
        livelib.within(self, f"python{version} exception-mode samples", total, 500, None,
                       "samples while handling (about half of 2000)")
        livelib.within(self, f"python{version} exception mode, spin_handling's share",
                       100.0 * handling / total, 95.0, None,
                       f"spin_handling {handling} of {total} exception-mode samples", unit="%")

    def check_wall_mode(self, version):
        """--mode wall: both halves"""
        prof = self.pprof(self.get(version, "wall"), "wall")
        total = prof.total(0)
        handling = prof.count(lambda s: s.has("spin_handling"))
        plain = prof.count(lambda s: s.has("spin_plain"))
        self.assertGreater(total, 0, "no samples")
        # Nominally half each; under load (an ASan pyprofd on two busy cores)
        # a half was measured at 29%. What matters: wall keeps both.
        livelib.within_each(self, f"python{version} wall ({total} samples), share",
                            [("spin_handling", 100.0 * handling / total, 20.0, None),
                             ("spin_plain", 100.0 * plain / total, 20.0, None)], unit="%")


@per_version
class NativeTest(RecordCase):
    """callback.py: sort_with_key -> C sorted() -> slow_key, folded stacks."""

    @classmethod
    def setUpClass(cls):
        runs = {"native": (["-r", "1k", "-d", "1", "--native", "--format", "collapsed"],
                           ".folded"),
                "plain": (["-r", "1k", "-d", "1", "--format", "collapsed"], ".folded")}
        cls.results = parallel({v: (lambda v=v: session("callback", v, "chroot", runs))
                                for v in VERSIONS})

    def get(self, version, key):
        r = self.results.get(version)
        if isinstance(r, Exception):
            self.fail(f"python{version}: {r}")
        return self.result(r, key)

    def check_native(self, version):
        """--native: sort_with_key (...);<native>;slow_key (...) in the stacks"""
        stacks = self.folded(self.get(version, "native"))
        if version.startswith(("3.9", "3.10")):
            # frame objects do not say where C called into Python: no markers,
            # the callback's stack as without --native
            self.assertEqual([";".join(f) for f, _ in stacks if "<native>" in f], [])
            self.assertTrue(any(re.search(r"(^|;)sort_with_key \([^;]*\);slow_key \(",
                                          ";".join(f)) for f, _ in stacks), stacks)
            return
        pattern = re.compile(r"(^|;)sort_with_key \([^;]*\);<native>;slow_key \(")
        total = sum(c for _, c in stacks)
        hit = sum(c for frames, c in stacks if pattern.search(";".join(frames)))
        self.assertGreater(hit, 0, "no stack with sort_with_key;<native>;slow_key:\n" +
                           "\n".join(";".join(f) + f" {c}" for f, c in stacks))
        livelib.within(self, f"python{version} --native ({total} samples), share with "
                       f"sort_with_key;<native>;slow_key", 100.0 * hit / total, 90.0, None,
                       "most samples are in the callback", unit="%")
        for frames, _ in stacks:
            self.assertLessEqual(frames.count("<native>"), 1, f"one C boundary: {frames}")
            # no root (nor leaf) marker, on 3.15 either (docs/unwinder.md section 5)
            self.assertNotIn("<native>", (frames[0], frames[-1]), frames)

    def check_no_native(self, version):
        """without --native: no <native> at all"""
        stacks = self.folded(self.get(version, "plain"))
        bad = [";".join(f) for f, _ in stacks if any("<native>" in x for x in f)]
        self.assertEqual(bad, [], "<native> without --native")
        self.assertTrue(any([frame_name(x) for x in f][-2:] == ["slow_key", "日本語"]
                            for f, _ in stacks), "the callback's stack")


@per_version
class GCTest(RecordCase):
    """gc_heavy.py: the cyclic collector runs all the time."""

    @classmethod
    def setUpClass(cls):
        runs = {"gc": (["-r", "1k", "-d", "2", "--format", "collapsed"], ".folded"),
                "nogc": (["-r", "1k", "-d", "2", "--format", "collapsed", "--no-gc"],
                         ".folded")}
        cls.results = parallel({v: (lambda v=v: session("gc_heavy", v, "chroot", runs))
                                for v in VERSIONS})

    def get(self, version, key):
        r = self.results.get(version)
        if isinstance(r, Exception):
            self.fail(f"python{version}: {r}")
        return self.result(r, key)

    def check_gc(self, version):
        """<GC> in the folded stacks (as the leaf, below the Python frames)"""
        stacks = self.folded(self.get(version, "gc"))
        total = sum(c for _, c in stacks)
        gc = sum(c for f, c in stacks if "<GC>" in f)
        livelib.within(self, f"python{version} samples with <GC> (of {total})", gc, 1, None,
                       "no <GC> frame")
        for frames, _ in stacks:
            if "<GC>" in frames:
                self.assertEqual(frames[-1], "<GC>", f"<GC> is the leaf: {frames}")
                # The collector runs where the interpreter checks for pending
                # work: inside make_cycles or, after it returns, in churn.
                self.assertIn("churn", [frame_name(f) for f in frames],
                              f"GC below the target's Python code: {frames}")

    def check_no_gc(self, version):
        """--no-gc: no <GC>"""
        stacks = self.folded(self.get(version, "nogc"))
        bad = [";".join(f) for f, _ in stacks if any("<GC>" in x for x in f)]
        self.assertEqual(bad, [], "<GC> with --no-gc")
        self.assertTrue(any("make_cycles" in [frame_name(x) for x in f] for f, _ in stacks))


@per_version
class SubinterpreterTest(RecordCase):
    """subinterpreters.py: a sub-interpreter's samples are labelled with its id."""

    @classmethod
    def setUpClass(cls):
        runs = {"all": (["-a", "-r", "200", "-d", "1"], ".pb.gz")}
        cls.results = parallel({v: (lambda v=v: session("subinterpreters", v, "chroot", runs))
                                for v in VERSIONS})

    def check_interpreter_label(self, version):
        """-a: sub_work()'s samples carry interpreter_id (the target's own id), the main
        interpreter's none"""
        r = self.results.get(version)
        if isinstance(r, Exception):
            self.fail(f"python{version}: {r}")
        rec = self.result(r, "all")
        prof = self.pprof(rec, "wall")
        with open(rec.target.log, encoding="utf-8") as f:
            want = next(json.loads(line.split(": ", 1)[1]) for line in f
                        if line.startswith("pyprofd-expected: "))
        sub = [s for s in prof.samples if s.has("sub_work")]
        main = [s for s in prof.samples if s.has("main_loop")]
        self.assertTrue(sub and main, f"sub {len(sub)}, main {len(main)} samples")
        for s in sub:
            self.assertEqual(s.labels.get("interpreter_id"), str(want["sub_interpreter_id"]),
                             s.labels)
        for s in main:
            self.assertNotIn("interpreter_id", s.labels, s.labels)


@per_version
class OpcodesTest(RecordCase):
    """opcodes.py: read_attr()'s attribute reads, specialized by the interpreter."""

    @classmethod
    def setUpClass(cls):
        runs = {"pprof": (["--opcodes", "-r", "500", "-d", "1"], ".pb.gz"),
                "plain": (["-r", "200", "-d", "1"], ".pb.gz")}
        cls.results = parallel({v: (lambda v=v: session("opcodes", v, "chroot", runs))
                                for v in VERSIONS})

    def get(self, version, key):
        r = self.results.get(version)
        if isinstance(r, Exception):
            self.fail(f"python{version}: {r}")
        return self.result(r, key)

    def check_opcodes(self, version):
        """--opcodes: below every Python frame its instruction's marker; the hot
        attribute read shows both names, <op LOAD_ATTR_INSTANCE_VALUE (LOAD_ATTR)>"""
        prof = self.pprof(self.get(version, "pprof"), "wall")
        total = prof.total(0)
        if version in ("3.9", "3.11"):
            # no opcode names before 3.13 (docs/unwinder.md): the stacks, without markers
            self.assertFalse([f for s in prof.samples for f in s.frames if f.startswith("<op ")])
            self.assertTrue(prof.count(lambda s: s.frames[:1] == ["read_attr"]) > 0)
            return
        for s in prof.samples:
            # leaf first: marker, its frame, marker, its frame, ...
            self.assertEqual(len(s.frames) % 2, 0, s.frames)
            for i in range(0, len(s.frames), 2):
                self.assertTrue(s.frames[i].startswith("<op "), s.frames)
                self.assertFalse(s.frames[i + 1].startswith("<op "), s.frames)
            # the callers are calls
            for i in range(2, len(s.frames), 2):
                self.assertTrue(s.frames[i].startswith("<op CALL"), s.frames)
        attr = prof.count(lambda s: s.frames[:2] == ["<op LOAD_ATTR_INSTANCE_VALUE (LOAD_ATTR)>",
                                                     "read_attr"])
        livelib.within(self, f"python{version} samples in the specialized attribute read",
                       100.0 * attr / total, 3.0, None, f"{attr} of {total}", unit="%")
        # and without --opcodes, none
        plain = self.pprof(self.get(version, "plain"), "wall")
        self.assertFalse([f for s in plain.samples for f in s.frames if f.startswith("<op ")])


@per_version
class CommandTest(RecordCase):
    """record -- COMMAND: pyprofd starts the program and profiles it until it exits."""

    DURATION = 1.5

    @classmethod
    def setUpClass(cls):
        # Copy the script into the rootfs atomically, as run-target.sh does.
        for root in {livelib.rootfs_for(v) for v in VERSIONS}:
            dest = os.path.join(root, "pyprofd-targets")
            os.makedirs(dest, exist_ok=True)
            tmp = os.path.join(dest, f".shares.py.{os.getpid()}")
            shutil.copyfile(os.path.join(livelib.TARGETS_DIR, "shares.py"), tmp)
            os.chmod(tmp, 0o644)
            os.replace(tmp, os.path.join(dest, "shares.py"))

        def run(version):
            cmd = ["chroot", livelib.rootfs_for(version), f"/usr/bin/python{version}", "-u",
                   "/pyprofd-targets/shares.py", "--duration", str(cls.DURATION)]
            return record([], command=cmd, env=livelib.TARGET_ENV, timeout=60)
        cls.results = parallel({v: (lambda v=v: run(v)) for v in VERSIONS})

    def check_command(self, version):
        """runs until the command exits by itself, exit 0, a readable profile with the work"""
        rec = self.results.get(version)
        if isinstance(rec, Exception):
            self.fail(f"python{version}: {rec}")
        self.assertEqual(rec.rc, 0, rec.describe())
        self.assertIn("pyprofd-target: ready", rec.stdout, "the command's own output")
        # at least the command's run; at most a stop long after it ended
        livelib.within(self, f"python{version} seconds recorded", rec.seconds, self.DURATION,
                       self.DURATION + 10, rec.describe())
        prof = self.pprof(rec, "wall")
        samples = rec.summary()[0]
        livelib.within(self, f"python{version} samples (burn_half in "
                       f"{prof.count(lambda s: s.has('burn_half'))})", samples, 100, None,
                       "~1.5 s at the default 100 Hz")
        self.assertEqual(prof.total(0), samples)
        for f in ("burn_half", "burn_third", "burn_fifth"):
            self.assertTrue(any(s.has(f) for s in prof.samples), f"{f} not in the profile")
        script = "/pyprofd-targets/shares.py"
        stdlib = (f"/usr/lib/python{version}/", "<frozen ")
        for s in prof.samples:
            # no Python frame at all (start-up, teardown), only markers:
            # <interpreter>, or <GC> when the collector runs from C (seen
            # once as a whole stack in ~300 samples under load)
            if s.frames in (["<interpreter>"], ["<GC>"]):
                continue
            where = list(zip(s.frames, s.files))
            if script in s.files:
                # the command's own code: whole stacks, from its <module>
                self.assertEqual(where[-1], ("<module>", script), f"root frame: {where}")
            else:
                # While the interpreter starts and ends, its C code calls
                # into its own library directly (importlib's _find_and_load,
                # the codec registry's encodings.search_function, ...): such
                # stacks have other roots, always in that library. (A loaded
                # machine makes start-up long enough to catch them often.)
                self.assertTrue(s.files[-1].startswith(stdlib), f"root frame: {where}")


class CommandLineTest(RecordCase):
    """The command line's habits: options after the PID, the live progress line, --version."""

    def test_options_after_the_pid(self):
        """record PID -o FILE -d 1 -r 200: the same recording as with the options before
        the PID (same format, same sample count within a few, same hottest function)"""
        target = start_target("shares", "3.14")
        runs = {}
        try:
            for order in ("before", "after"):
                path = os.path.join(livelib.scratch(), f"{order}-pid.pb.gz")
                opts = ["-o", path, "-d", "1", "-r", "200"]
                argv = [*opts, str(target.pid)] if order == "before" else [str(target.pid), *opts]
                proc = subprocess.run([BINARY, "record", *argv], capture_output=True, text=True,
                                      timeout=60)
                self.assertEqual(proc.returncode, 0, proc.stderr)
                self.assertTrue(os.path.isfile(path), proc.stderr)
                self.assertNotIn("\r", proc.stderr, "a progress line without a terminal")
                m = re.search(r"pyprofd: (\d+) samples in 1\.\d\d s \(\d+\.\d Hz", proc.stderr)
                self.assertIsNotNone(m, proc.stderr)
                top = livelib.top_function(livelib.pprof_top(path, livelib.scratch()))
                runs[order] = (int(m.group(1)), top)
        finally:
            target.stop()
        livelib.note(f"options before the PID: {runs['before']}, after: {runs['after']}")
        self.assertEqual(runs["before"][1], "burn_half")
        self.assertEqual(runs["after"][1], "burn_half")
        self.assertLessEqual(abs(runs["before"][0] - runs["after"][0]), 10)

    def test_double_dash_still_ends_options(self):
        """after --, what looks like an option is the command's: -r fast is not ours"""
        rec = record(["-d", "1"], command=["/bin/true", "-r", "fast", "-d", "x"])
        self.assertEqual(rec.rc, 1, rec.describe())  # a command that never starts Python
        self.assertNotIn("usage", rec.stderr)

    def test_progress_on_a_terminal(self):
        """on a terminal, one live line (samples, elapsed, rate) redrawn in place, erased
        before the summary; --no-progress: none"""
        import pty
        target = start_target("busy", "3.14")
        outputs = {}
        try:
            for key, extra in (("on", []), ("off", ["--no-progress"])):
                path = os.path.join(livelib.scratch(), f"progress-{key}.txt")
                master, slave = pty.openpty()
                proc = subprocess.Popen([BINARY, "record", "-d", "1.5", *extra, "-o", path,
                                         str(target.pid)], stdin=subprocess.DEVNULL,
                                        stdout=slave, stderr=slave)
                os.close(slave)
                chunks = []
                while True:
                    try:
                        data = os.read(master, 4096)
                    except OSError:  # EIO: the other side closed
                        break
                    if not data:
                        break
                    chunks.append(data)
                os.close(master)
                self.assertEqual(proc.wait(timeout=60), 0, b"".join(chunks))
                outputs[key] = b"".join(chunks).decode("utf-8", errors="replace")
        finally:
            target.stop()
        on = outputs["on"]
        lines = re.findall(r"\rpyprofd: (\d+) samples, ([0-9.]+) of 1\.5 s, (\d+) Hz, "
                           r"\d+ failed, \d+ missed\x1b\[K", on)
        self.assertGreaterEqual(len(lines), 3, repr(on))
        counts = [int(n) for n, _, _ in lines]
        self.assertEqual(counts, sorted(counts), "the count only grows")
        self.assertIn("\r\x1b[K", on, "the line is erased before the summary")
        self.assertRegex(on, r"\r\x1b\[Kpyprofd: wrote ")
        self.assertNotIn("\rpyprofd:", outputs["off"])
        self.assertRegex(outputs["off"], r"pyprofd: \d+ samples in 1\.\d\d s")

    def test_names_with_escapes_on_a_terminal(self):
        """escapes.py's names hold escape sequences: on a terminal (progress line, summary)
        record sends none of them, nor any other control but its own \\r and erase-line;
        the folded file keeps the names' bytes (it is data)"""
        import pty
        target = start_target("escapes", "3.14", "chroot", "\x1b]0;argv\x07")
        path = os.path.join(livelib.scratch(), "escapes.txt")
        try:
            master, slave = pty.openpty()
            proc = subprocess.Popen([BINARY, "record", "-d", "1", "-o", path, str(target.pid)],
                                    stdin=subprocess.DEVNULL, stdout=slave, stderr=slave)
            os.close(slave)
            chunks = []
            while True:
                try:
                    data = os.read(master, 4096)
                except OSError:  # EIO: the other side closed
                    break
                if not data:
                    break
                chunks.append(data)
            os.close(master)
            self.assertEqual(proc.wait(timeout=60), 0, b"".join(chunks))
        finally:
            target.stop()
        shown = b"".join(chunks).decode("utf-8").replace("\r\x1b[K", "").replace("\x1b[K", "")
        bad = [c for c in shown if (ord(c) < 0x20 and c not in "\r\n") or 0x7f <= ord(c) <= 0x9f]
        self.assertEqual(bad, [], f"controls sent to the terminal: {shown!r}")
        self.assertRegex(shown, r"pyprofd: \d+ samples in 1\.\d\d s")
        leaves = {frame_name(stack[-1]) for stack, _ in read_folded(path)}
        # (the format's separator, ";", becomes ":" in names)
        self.assertIn("\x1b]0:pwned\x07evil\x1b[31mred", leaves)

    def test_version(self):
        """--version: version and git revision, build date, compiler, build type; the
        revision is the source tree's (-dirty when it had changes)"""
        proc = subprocess.run([BINARY, "--version"], capture_output=True, text=True, timeout=10)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        lines = proc.stdout.splitlines()
        self.assertEqual(len(lines), 4, proc.stdout)
        m = re.match(r"^pyprofd, version (\d+\.\d+\.\d+) \(revision: ([0-9a-f]{12}(-dirty)?|"
                     r"unknown)\)$", lines[0])
        self.assertIsNotNone(m, lines[0])
        self.assertRegex(lines[1], r"^  build date:  \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
        self.assertRegex(lines[2], r"^  compiler:    (GNU|Clang) \d+\.")
        self.assertRegex(lines[3], r"^  build type:  \S+$")
        src = livelib.SOURCE_DIR
        if os.path.isdir(os.path.join(src, ".git")):
            head = subprocess.run(["git", "-C", src, "rev-parse", "--short=12", "HEAD"],
                                  capture_output=True, text=True).stdout.strip()
            self.assertEqual(m.group(2).removesuffix("-dirty"), head)


class ErrorTest(RecordCase):
    """Errors on the command line and with the target."""

    def test_no_such_process(self):
        """a PID that does not exist: non-zero exit, one line on stderr, no file"""
        with open("/proc/sys/kernel/pid_max") as f:
            pid = int(f.read()) - 1
        while os.path.exists(f"/proc/{pid}"):
            pid -= 1
        rec = record(["-d", "1"], pid)
        self.assertNotEqual(rec.rc, 0, rec.describe())
        lines = rec.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, f"want one line on stderr:\n{rec.stderr}")
        self.assertRegex(lines[0], re.compile(r"no such process", re.I))
        self.assertEqual(rec.stdout, "")
        self.assertFalse(os.path.exists(rec.path), "wrote a profile")

    def test_blocking_keeps_signals(self):
        """--blocking stops the target around each sample: signals sent meanwhile still arrive"""
        target = start_target("sigcount", "3.14")
        try:
            with tempfile.TemporaryDirectory() as d:
                proc = subprocess.Popen([BINARY, "record", "--blocking", "-r", "200", "-d", "2",
                                         "-o", os.path.join(d, "x.txt"), str(target.pid)],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                time.sleep(0.5)
                for _ in range(5):
                    os.kill(target.pid, signal.SIGUSR1)
                    time.sleep(0.1)
                _, err = proc.communicate(timeout=60)
                self.assertEqual(proc.returncode, 0, err)
        finally:
            target.stop()
        with open(target.log, encoding="utf-8", errors="replace") as f:
            log = f.read()
        self.assertIn("pyprofd-signals: 5", log, f"signals handled by the target:\n{log}")

    def test_blocking_cpu_mode(self):
        """--blocking --mode cpu: a thread stopped for the sample counts as on a CPU when it
        ran just before the stop (its state then is 't'); a sleeping one does not (was:
        nothing kept at all)"""
        busy = start_target("shares", "3.14")
        sleepy = start_target("sleepy", "3.14")
        try:
            busy_rec = record(["--blocking", "--mode", "cpu", "-d", "1", "--format",
                               "collapsed"], busy.pid, suffix=".txt")
            sleepy_rec = record(["--blocking", "--mode", "cpu", "-d", "1", "--format",
                                 "collapsed"], sleepy.pid, suffix=".txt")
        finally:
            busy.stop()
            sleepy.stop()
        self.assertEqual(busy_rec.rc, 0, busy_rec.describe())
        self.assertEqual(sleepy_rec.rc, 0, sleepy_rec.describe())
        with open(busy_rec.path, encoding="utf-8") as f:
            total = sum(int(line.rsplit(" ", 1)[1]) for line in f if line.strip())
        livelib.within(self, "--blocking --mode cpu: samples of a CPU-bound target kept",
                       total / 100, 0.8, 1.01)
        with open(sleepy_rec.path, encoding="utf-8") as f:
            asleep = sum(int(line.rsplit(" ", 1)[1]) for line in f if line.strip())
        # (it wakes now and then: a sample may catch it running)
        livelib.within(self, "--blocking --mode cpu: samples of a sleeping target kept",
                       asleep / 100, 0.0, 0.05)

    def test_command_without_python(self):
        """record -- /bin/true: the command never starts Python; exit 1, one clear line"""
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "x.txt")
            proc = subprocess.run([BINARY, "record", "-o", out, "--", "/bin/true"],
                                  capture_output=True, text=True, timeout=60)
            self.assertEqual(proc.returncode, 1, proc.stderr)  # not a crash (139)
            self.assertRegex(proc.stderr, re.compile(r"exited before Python started"))
            self.assertFalse(os.path.exists(out), "wrote a profile")

    def test_bad_rate(self):
        """-r fast: usage error, exit 2"""
        rec = record(["-r", "fast"], os.getpid())
        self.assertEqual(rec.rc, 2, rec.describe())
        self.assertRegex(rec.stderr, re.compile(r"rate|fast", re.I))
        self.assertFalse(os.path.exists(rec.path), "wrote a profile")


if __name__ == "__main__":
    livelib.run(needs=("root", "rootfs", "go"))
