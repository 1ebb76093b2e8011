# SPDX-License-Identifier: MIT
"""The fault suite, native frames: what a target's libraries name must not stop pyprofd.

A library's separate debug file is looked for below the target's root, as the
target could open it (agent/base/tfile.h), never with a plain open() of a name
the target controls and never over the network (docs/unwinder.md, "Separate
debug files"). The library here is tests/targets/native_spin.c, built with
debug information, split (objcopy --only-keep-debug), stripped, and given a
.gnu_debuglink; native_dlopen.py loads it and spins in its static churn(),
which only the debug file's .symtab names.

    DebugFileFaults
      record      a FIFO at LIBDIR/LINK (the first place a debuglink is looked
                  for), the real debug file at LIBDIR/.debug/LINK, and
                  DEBUGINFOD_URLS pointing at a server that never answers:
                  `record --native=full -d 3` ends in bounded time (it never
                  returned, SIGINT ignored), names churn from the debug file,
                  says what it refused, and the server saw no connection
      sparse      a library whose symbol table claims a gigabyte (sparse zeros):
                  `record --native=full` keeps its resident memory small (it
                  reached the gigabyte, and each lookup took seconds), names
                  the library's frames by offset, and says so
      agent       the same target under a native: full job beside a busy
                  target under a plain wall job: the wall target keeps its
                  rate (it went from 100 to 0 samples/s), a profile request
                  returns, the agent's CPU stays far below a core (its helper
                  thread spun at 100 %), and SIGTERM stops it in time

Run by ctest as test_faults_native_live (label integration), or by hand:
    /usr/bin/python3 tests/integration/test_faults_native.py [-v]
"""

import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import livelib  # noqa: E402
from test_native import folded, name, perf_refused  # noqa: E402

BINARY = livelib.BINARY
VERSION = "3.14"


class Listener:
    """A TCP port that counts the connections made to it and never answers."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self.done = threading.Event()
        self.held = []
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def loop(self):
        while not self.done.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            self.held.append(conn)

    def close(self):
        self.done.set()
        self.thread.join()
        for c in self.held:
            c.close()
        self.sock.close()


def build_library(directory, lib_name):
    """native_spin.c with its debug information split off: LIB stripped with a
    .gnu_debuglink to LIB.debug, which goes to .debug/; returns the link name."""
    src = os.path.join(livelib.SOURCE_DIR, "tests", "targets", "native_spin.c")
    lib = os.path.join(directory, lib_name)
    link = lib_name + ".debug"
    os.makedirs(os.path.join(directory, ".debug"))
    debug = os.path.join(directory, ".debug", link)
    for cmd in (["cc", "-g", "-O2", "-shared", "-fPIC", "-Wl,--build-id", "-o", lib, src],
                ["objcopy", "--only-keep-debug", lib, debug],
                ["objcopy", "--strip-all", lib],
                ["objcopy", f"--add-gnu-debuglink={debug}", lib]):
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if out.returncode != 0:
            raise AssertionError(f"{cmd[0]} failed: {out.stderr}")
    return link


def sparse_symtab_library(path):
    """native_spin.c as a library whose .symtab claims about 1 GiB: the section
    header's size grown over a sparse tail, the section headers moved to its end."""
    src = os.path.join(livelib.SOURCE_DIR, "tests", "targets", "native_spin.c")
    out = subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", path, src],
                         capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise AssertionError(f"cc failed: {out.stderr}")
    with open(path, "rb") as f:
        b = bytearray(f.read())
    size = 1 << 30
    shoff, = struct.unpack_from("<Q", b, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", b, 0x3a)
    headers = bytearray(b[shoff:shoff + shentsize * shnum])
    for i in range(shnum):
        at = shoff + i * shentsize
        if struct.unpack_from("<I", b, at + 4)[0] == 2:  # SHT_SYMTAB
            offset, = struct.unpack_from("<Q", b, at + 0x18)
            claimed = size - 4096 - offset
            struct.pack_into("<Q", headers, i * shentsize + 0x20, claimed - claimed % 24)
    struct.pack_into("<Q", b, 0x28, size - 4096)
    with open(path, "r+b") as f:
        f.write(b)
        f.truncate(size)
        f.seek(size - 4096)
        f.write(headers)


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def enough_samples(test, what, samples, cpu):
    """record --native=full counts the target's CPU time at 100 Hz: a loaded
    CI machine (2 cores, ASan, other tests) gives the target a tenth of the
    3 s or less, so the samples are judged against the CPU time it got."""
    test.assertGreater(cpu, 0.05, "the target got no CPU time")
    test.assertGreater(samples, 0)
    livelib.within(test, what, samples / (cpu * 100.0), 0.4, 1.3)


class DebugFileFaults(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        why = perf_refused()
        if why:
            raise unittest.SkipTest(f"perf events refused here: {why}")
        cls.tmp = livelib.scratch()
        rootfs = livelib.rootfs_for(VERSION)
        cls.inside = f"/pyprofd-targets/debugfaults-{os.getpid()}"
        cls.dir = rootfs + cls.inside
        os.makedirs(cls.dir)
        cls.lib_name = "libpyprofd_spin.so"
        link = build_library(cls.dir, cls.lib_name)
        # the first place a debuglink is looked for: a FIFO nobody writes
        os.mkfifo(os.path.join(cls.dir, link))
        cls.target = livelib.start_target(cls.tmp, "native_dlopen", VERSION, "chroot",
                                          f"{cls.inside}/{cls.lib_name}", "--before", "0.2",
                                          "--duration", "120")
        time.sleep(0.5)  # loaded

    @classmethod
    def tearDownClass(cls):
        livelib.stop_all()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_record(self):
        """record --native=full -d 3 past a FIFO, with a silent debuginfod server"""
        listener = Listener()
        path = os.path.join(self.tmp, "record.txt")
        env = dict(os.environ, DEBUGINFOD_URLS=f"http://127.0.0.1:{listener.port}")
        try:
            t0 = time.monotonic()
            cpu0 = cpu_seconds(self.target.pid)
            proc = subprocess.run([BINARY, "record", "--native=full", "-d", "3", "-o", path,
                                   str(self.target.pid)], capture_output=True, text=True,
                                  timeout=30, env=env)
            took = time.monotonic() - t0
            cpu = cpu_seconds(self.target.pid) - cpu0
        finally:
            listener.close()
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertLess(took, 15, f"record took {took:.1f} s\n{proc.stderr}")
        self.assertEqual(listener.connections, 0, "a debuginfod server was asked")
        # the FIFO refused (the rootfs's own -dbgsym files are used too)
        self.assertRegex(proc.stderr, r"separate debug files: [1-9]\d* used, 1 refused")
        with open(path, encoding="utf-8") as f:
            stacks = folded([line.rstrip("\n") for line in f if line.strip()])
        spin = sum(c for frames, c in stacks if "call_spin" in map(name, frames))
        churn = sum(c for frames, c in stacks
                    if any(name(f).startswith("churn") for f in frames))  # churn.constprop.0
        enough_samples(self, "call_spin's samples / the target's CPU time at 100 Hz", spin, cpu)
        # churn is named only by the debug file's .symtab
        livelib.within(self, "call_spin's samples in churn, named from the debug file",
                       churn / spin, 0.80, 1.0)

    def test_sparse(self):
        """a library whose .symtab claims a gigabyte: memory stays bounded"""
        lib = os.path.join(self.dir, "libsparse.so")
        sparse_symtab_library(lib)
        target = livelib.start_target(self.tmp, "native_dlopen", VERSION, "chroot",
                                      f"{self.inside}/libsparse.so", "--before", "0.2",
                                      "--duration", "60")
        path = os.path.join(self.tmp, "sparse.txt")
        try:
            time.sleep(0.5)
            proc = subprocess.Popen([BINARY, "record", "--native=full", "-d", "3", "-o", path,
                                     str(target.pid)], stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE, text=True)
            # the target's CPU time from when record starts sampling (its
            # attach, slow under ASan on a busy machine, is no sampling time)
            err = ""
            for line in proc.stderr:
                err += line
                if "sampling process" in line:
                    break
            cpu0 = cpu_seconds(target.pid)
            err += proc.stderr.read()
            proc.stderr.close()
            _, status, ru = os.wait4(proc.pid, 0)
            cpu = cpu_seconds(target.pid) - cpu0
            proc.returncode = os.waitstatus_to_exitcode(status)
        finally:
            target.stop()
        self.assertEqual(os.waitstatus_to_exitcode(status), 0, err)
        # ru_maxrss is in KiB; the ASan build's own shadow is a few tens of MiB
        livelib.within(self, "record's peak resident memory (MiB)", ru.ru_maxrss / 1024, 0,
                       256)
        self.assertIn("1 libraries with symbol tables over 64 MiB, named by offset", err)
        with open(path, encoding="utf-8") as f:
            stacks = folded([line.rstrip("\n") for line in f if line.strip()])
        spin = sum(c for frames, c in stacks if "call_spin" in map(name, frames))
        by_offset = sum(c for frames, c in stacks
                        if any(re.fullmatch(r"libsparse\.so\+0x[0-9a-f]+", name(f))
                               for f in frames))
        enough_samples(self, "call_spin's samples / the target's CPU time at 100 Hz", spin, cpu)
        livelib.within(self, "call_spin's samples with the library's frames by offset",
                       by_offset / spin, 0.80, 1.0)

    def test_agent(self):
        """a native: full job past the FIFO beside a wall job: nothing else stops"""
        busy = livelib.start_target(self.tmp, "busy", VERSION)
        agent = livelib.Agent(self.tmp, "native-faults", f"""\
global: {{sample_rate: 100, profile_interval: 1m}}
discovery: {{refresh_interval: 1s, min_process_age: 200ms}}
profile_configs:
  - job_name: native
    mode: cpu
    native: full
    relabel_configs:
      - source_labels: [__meta_process_pid]
        regex: '{self.target.pid}'
        action: keep
  - job_name: wall
    mode: wall
    relabel_configs:
      - source_labels: [__meta_process_pid]
        regex: '{busy.pid}'
        action: keep
server:
  listen_address: 127.0.0.1:{{port}}
""", extra_args=("--shutdown-timeout", "6"))
        try:
            agent.wait_http()
            agent.wait_state(self.target.pid, "active", timeout=15)
            agent.wait_state(busy.pid, "active", timeout=15)
            result = {}

            def profile(pid, key):
                result[key] = agent.get(f"/debug/pprof/profile?seconds=3&pid={pid}", timeout=30)

            threads = [threading.Thread(target=profile, args=(p, k))
                       for p, k in ((self.target.pid, "native"), (busy.pid, "wall"))]
            def attempts():
                text = agent.metrics()
                return sum(agent.metric(f'pyprofd_samples{kind}_total{{job="wall"}}', text) or 0
                           for kind in ("", "_failed"))  # made, not missed

            attempts0 = attempts()
            cpu0, t0 = cpu_seconds(agent.proc.pid), time.monotonic()
            target0 = cpu_seconds(self.target.pid)
            for t in threads:
                t.start()
            for t in threads:
                t.join(40)
            took = time.monotonic() - t0
            cpu = (cpu_seconds(agent.proc.pid) - cpu0) / took
            target_cpu = cpu_seconds(self.target.pid) - target0
            wall_attempts = attempts() - attempts0
            for key in ("native", "wall"):
                self.assertIn(key, result, f"the {key} profile request did not return")
                self.assertEqual(result[key][0], 200, result[key][1][:300])
            traces = {}
            for key in ("native", "wall"):
                p = os.path.join(self.tmp, f"agent-{key}.pb.gz")
                with open(p, "wb") as f:
                    f.write(result[key][1])
                traces[key] = livelib.pprof_traces(p, self.tmp)
            # the wall job kept its pace: 100 attempts a second while the native
            # job looked past the FIFO (a sampling thread stuck on it made none).
            # Attempts, not samples: two busy targets on two cores tear many of
            # the wall target's deep, fast-changing stacks, honestly counted as
            # failed ("incomplete"), so its sampled time varies from 0.2 to 0.9.
            livelib.within(self, "the wall job's attempts per second beside the native one",
                           wall_attempts / took / 100.0, 0.5, 1.2)
            self.assertGreater(sum(ms for ms, _ in traces["wall"]), 0, traces["wall"][:3])
            churn = sum(ms for ms, f in traces["native"] if any(x.startswith("churn") for x in f))
            # cpu mode: the target's CPU time, which a loaded CI machine (2 cores,
            # the ASan agent, other tests) cuts from 3 s to a tenth of that: the
            # profile holds most of what the kernel charged it, churn's at least half
            # (its spin), against the CPU time it got over the profile's span
            self.assertGreater(target_cpu, 0.05, "the target got no CPU time")
            livelib.within(self, "churn's time in the profile / the target's CPU time",
                           churn / 1000.0 / target_cpu, 0.5, 1.3, traces["native"][:3])
            livelib.within(self, "the agent's CPU (cores) while both are profiled", cpu, 0.0,
                           0.6)
        finally:
            t0 = time.monotonic()
            rc = agent.stop(timeout=20)
            took = time.monotonic() - t0
            busy.stop()
        self.assertEqual(rc, 0, agent.log())
        self.assertLess(took, 8, f"SIGTERM took {took:.1f} s\n{agent.log()}")
        self.assertNotIn("AddressSanitizer", agent.log())


if __name__ == "__main__":
    livelib.run(needs=("root", "rootfs", "go"))
