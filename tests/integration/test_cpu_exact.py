# SPDX-License-Identifier: MIT
"""cpu mode means on a CPU (issue 38): a thread that is runnable but waits for
a CPU (preempted, or throttled by its cgroup's CPU quota) is not counted, so
a cpu profile's time is the CPU time the kernel charged the process.

    ContentionTest  two record_stack.py (Debian's python3.11, spinning) on one
                    CPU, each running about half of it: `record --mode cpu`
                    of one, at once with perf events (the default idle
                    check), with them refused (a seccomp filter makes
                    perf_event_open fail, so the sampler falls back to
                    schedstat by itself), with --blocking (the exact path),
                    and with perf events from a sampler on the targets' own
                    CPU (its wake-up preempts the thread it looks at: the
                    switch records alone would see it waiting). Each
                    profile's CPU time is within 10 % of the kernel's CPU
                    time of the process over the profile's own span. Was 5 s
                    in 5 s for about 1.7 s of CPU (issue 38).
    QuotaTest       one record_stack.py in a child cgroup whose CPU quota is
                    30 % of one CPU (v1 cpu.cfs_quota_us, or v2 cpu.max),
                    recorded with perf events and with them refused: within
                    10 % of its CPU time (was 3.3 times it).

Both check first that the target really waited for a CPU (its CPU time at
most 70 % of the span, 40 % under the quota): where it did not, the old
count would pass as well, and the test fails saying so. The kernel's side is
the sum of the target's threads' schedstat CPU time, read every 10 ms and
taken at the profile's time_nanos and time_nanos + duration_nanos.

Environment: as the other drivers (livelib: PYPROFD_BINARY, ...); needs root
(cgroups, taskset) and no rootfs (python3.11 is the machine's own). Run by
ctest as test_cpu_exact_live (label integration), or by hand:
    /usr/bin/python3 tests/integration/test_cpu_exact.py [-v]
"""

import bisect
import gzip
import os
import platform
import shutil
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import livelib  # noqa: E402

BINARY = livelib.BINARY
VERSION = "3.11"  # the machine's own interpreter: no rootfs needed
RATE = "200"
SECONDS = 5
LOW, HIGH = 0.9, 1.1  # the profile's CPU time over the kernel's

# perf_event_open's number and the audit arch, for the seccomp filter that refuses it
PERF_SYSCALL = {"x86_64": (298, 0xC000003E), "aarch64": (241, 0xC00000B7)}

# Run as `python3 -c REFUSE NR ARCH PROGRAM ARGS...`: installs a seccomp
# filter under which perf_event_open fails with EPERM (as a container
# runtime's default profile does without CAP_PERFMON), then execs PROGRAM.
REFUSE = r"""
import ctypes, os, struct, sys
nr, arch = int(sys.argv[1]), int(sys.argv[2])
ins = lambda code, jt, jf, k: struct.pack("HBBI", code, jt, jf, k)
prog = b"".join([
    ins(0x20, 0, 0, 4),               # ld [4]: the arch
    ins(0x15, 0, 3, arch),            # jeq arch, else allow
    ins(0x20, 0, 0, 0),               # ld [0]: the syscall
    ins(0x15, 0, 1, nr),              # jeq perf_event_open, else allow
    ins(0x06, 0, 0, 0x00050000 | 1),  # ret ERRNO(EPERM)
    ins(0x06, 0, 0, 0x7FFF0000),      # ret ALLOW
])
buf = ctypes.create_string_buffer(prog)
class Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
fp = Fprog(len(prog) // 8, ctypes.addressof(buf))
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(38, 1, 0, 0, 0) or libc.prctl(22, 2, ctypes.byref(fp), 0, 0):
    sys.exit("seccomp: " + os.strerror(ctypes.get_errno()))
os.execv(sys.argv[3], sys.argv[3:])
"""


def refuse_perf():
    """The prefix that runs a command with perf_event_open refused, or None."""
    syscall = PERF_SYSCALL.get(platform.machine())
    if syscall is None:
        return None
    return ("/usr/bin/python3", "-c", REFUSE, str(syscall[0]), str(syscall[1]))


def process_cpu_ns(pid):
    """The CPU time of every thread of @pid so far (schedstat), in ns."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass  # ended meanwhile
    return total


class CpuClock:
    """The kernel's CPU time of a process, read every 10 ms in a thread, so
    that it can be taken over any span within (wall-clock ns)."""

    def __init__(self, pid):
        self.pid, self.series = pid, []
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.done.is_set():
            self.series.append((time.time_ns(), process_cpu_ns(self.pid)))
            self.done.wait(0.01)

    def stop(self):
        self.done.set()
        self.thread.join()
        self.series.append((time.time_ns(), process_cpu_ns(self.pid)))

    def at(self, t):
        i = bisect.bisect_left(self.series, (t, 0))
        if i == 0 or i >= len(self.series):
            raise AssertionError(f"no CPU time read around {t}")
        (t0, c0), (t1, c1) = self.series[i - 1], self.series[i]
        return c0 + (c1 - c0) * (t - t0) / max(t1 - t0, 1)


def profile_span(path):
    """(CPU ns the profile holds, its time_nanos, its duration_nanos)."""
    with open(path, "rb") as f:
        raw = f.read()
    data = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
    start = duration = 0
    for field, _, value in livelib._pb_fields(data):
        if field == 9:
            start = value
        elif field == 10:
            duration = value
    prof = livelib.pprof_read(path)
    return sum(values[-1] for values, _, _ in prof["samples"]), start, duration


class Cgroup:
    """A child cgroup with a CPU quota (v1 cpu controller, or v2 cpu.max)."""

    def __init__(self, name, quota_us, period_us):
        self.path = None
        v1 = next((p for p in ("/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct")
                   if os.path.isfile(os.path.join(p, "cpu.cfs_quota_us"))), None)
        if v1:
            self.path = os.path.join(v1, name)
            os.mkdir(self.path)
            self.write("cpu.cfs_period_us", str(period_us))
            self.write("cpu.cfs_quota_us", str(quota_us))
            self.version = 1
            return
        root = "/sys/fs/cgroup"
        try:
            with open(os.path.join(root, "cgroup.controllers")) as f:
                controllers = f.read().split()
        except OSError:
            controllers = []
        if "cpu" not in controllers:
            raise unittest.SkipTest("no cgroup cpu controller (v1 or v2) here")
        with open(os.path.join(root, "cgroup.subtree_control"), "w") as f:
            f.write("+cpu")
        self.path = os.path.join(root, name)
        os.mkdir(self.path)
        self.write("cpu.max", f"{quota_us} {period_us}")
        self.version = 2

    def write(self, name, text):
        with open(os.path.join(self.path, name), "w") as f:
            f.write(text)

    def add(self, pid):
        self.write("cgroup.procs", str(pid))  # every thread of it

    def remove(self):
        """Removes the cgroup (its processes must have ended: waits a little)."""
        if self.path is None:
            return
        for _ in range(50):
            try:
                os.rmdir(self.path)
                return
            except OSError:
                time.sleep(0.1)
        print(f"warning: cannot remove {self.path}", file=sys.stderr)


class CpuExactCase(unittest.TestCase):
    """Starts the targets, records them several ways at once, compares."""

    def setUp(self):
        missing = livelib.build_missing(VERSION)
        if missing:
            self.skipTest(missing)
        if not shutil.which("taskset"):
            self.skipTest("taskset is not installed")
        self.tmp = livelib.scratch()

    def start(self, n):
        targets = [livelib.start_target(self.tmp, "record_stack", VERSION) for _ in range(n)]
        for t in targets:
            self.addCleanup(t.stop)
        return targets

    def record(self, name, pid, wrap=(), args=()):
        out = os.path.join(self.tmp, f"{type(self).__name__}-{name}.pb.gz")
        cmd = [*wrap, BINARY, "record", "--mode", "cpu", "-r", RATE, "-d", str(SECONDS),
               "--no-progress", *args, "-o", out, str(pid)]
        return name, out, subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                                           stderr=subprocess.PIPE, text=True)

    def check(self, pid, runs, most_share):
        """Waits for @runs (record()'s), then checks each profile against the kernel."""
        clock = CpuClock(pid)
        results = []
        try:
            for name, out, proc in runs:
                try:
                    _, err = proc.communicate(timeout=SECONDS + 60)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    _, err = proc.communicate()
                results.append((name, out, proc.returncode, err))
        finally:
            clock.stop()
        for name, out, rc, err in results:
            with self.subTest(name):
                self.assertEqual(rc, 0, f"{name}: {err}")
                if name == "refused":
                    # perf refused: the watch fell back to schedstat by itself
                    self.assertRegex(err, r"idle threads found by schedstat: .*refused", err)
                elif "blocking" not in name:
                    self.assertRegex(err, r"idle threads \(perf\)", err)
                ns, start, duration = profile_span(out)
                self.assertGreater(duration, 0, f"{name}: no duration in the profile")
                kernel = clock.at(start + duration) - clock.at(start)
                share = kernel / duration
                livelib.note(f"{name}: profile {ns / 1e9:.3f} s, kernel {kernel / 1e9:.3f} s "
                             f"of CPU over {duration / 1e9:.2f} s ({100 * share:.0f} %)")
                # where the target did not wait for a CPU, counting 'R' would pass too
                livelib.within(self, f"{name}: the target's CPU share (it waited)", share,
                               0.02, most_share)
                livelib.within(self, f"{name}: profile CPU / kernel CPU", ns / kernel, LOW, HIGH)


class ContentionTest(CpuExactCase):
    """Two busy processes on one CPU: each is counted for the half it runs."""

    def test_two_busy_processes_on_one_cpu(self):
        """record_stack.py x 2 on the last CPU, `record --mode cpu` of one with perf
        events, with them refused, --blocking, and with perf on the targets' CPU:
        the profile's CPU time within 10 % of the kernel's"""
        a, b = self.start(2)
        wrap = ()
        for t in (a, b):  # the targets on the last CPU, the samplers on the others
            wrap = livelib.apart(t.pid)
        last = str((os.cpu_count() or 1) - 1)
        refuse = refuse_perf()
        runs = [self.record("perf", a.pid, wrap),
                self.record("refused", a.pid, (*wrap, *refuse)) if refuse else
                self.record("schedstat", a.pid, wrap, ("--idle-check", "schedstat")),
                self.record("blocking", a.pid, wrap, ("--blocking", "-r", "100")),
                self.record("perf-on-the-targets-cpu", a.pid, ("taskset", "-c", last))]
        self.check(a.pid, runs, 0.7)


class QuotaTest(CpuExactCase):
    """A busy process throttled by its cgroup's CPU quota (30 % of one CPU)."""

    def test_busy_process_under_a_cpu_quota(self):
        """record_stack.py in a cgroup with 30 ms of CPU every 100 ms, `record --mode
        cpu` with perf events and with them refused: within 10 % of its CPU time"""
        cgroup = Cgroup(f"pyprofd-test-cpu-exact-{os.getpid()}", 30000, 100000)
        self.addCleanup(cgroup.remove)  # (after the target stops: cleanups run last first)
        (t,) = self.start(1)
        cgroup.add(t.pid)
        wrap = livelib.apart(t.pid)
        refuse = refuse_perf()
        livelib.note(f"cgroup v{cgroup.version}: {cgroup.path}")
        runs = [self.record("perf", t.pid, wrap),
                self.record("refused", t.pid, (*wrap, *refuse)) if refuse else
                self.record("schedstat", t.pid, wrap, ("--idle-check", "schedstat"))]
        self.check(t.pid, runs, 0.4)
        # dump tells a thread that runs from one the quota holds back: of 12
        # dumps (each looks over a tick), some see it on a CPU, some waiting
        # for one (throttled 70 ms in 100), none "runnable" (schedstat is here)
        seen = []
        for _ in range(12):
            out = subprocess.run([*wrap, BINARY, "dump", str(t.pid)], capture_output=True,
                                 text=True, timeout=30)
            self.assertEqual(out.returncode, 0, out.stderr)
            line = next(x for x in out.stdout.splitlines() if x.startswith("Thread "))
            seen.append("waiting" if "waiting for a CPU" in line else
                        "on" if "on CPU" in line else "runnable" if "runnable" in line else line)
        livelib.note(f"dump under the quota: {seen}")
        self.assertIn("waiting", seen)
        self.assertIn("on", seen)
        self.assertNotIn("runnable", seen)


if __name__ == "__main__":
    livelib.run(needs=("root",))
