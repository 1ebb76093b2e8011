# SPDX-License-Identifier: MIT
"""The fault suite: `pyprofd agent` against what a node throws at it.

Each class is one kind of fault, run against the real agent (the ASan+UBSan
build under `make test`: a sanitizer report fails the agent and the test) and
real CPython 3.13/3.14/3.15 processes from the test rootfs. Every scenario
checks the defined outcome: what is kept, what is dropped and counted, what
is refused, and that the agent is still alive and answering at the end.

    TargetFaults      idle targets in a profile request (issue 11, defect 1:
                      the crash), processes that exec() another program
                      (defect 3), a process stuck in shutdown (every attempt
                      fails: attached afresh, counted, shown), stopped,
                      killed, and a churn of short-lived processes (no fd or
                      thread leak, /targets forgets them)
    StorageFaults     a full and a read-only storage directory: counted,
                      logged once, sampling goes on
    PrivilegeFaults   the agent as an unprivileged user with CAP_SYS_PTRACE
                      (+ CAP_CHECKPOINT_RESTORE), with none; targets under
                      a 0700 directory (defect 7), a deleted executable
    HttpFaults        garbage, oversized and slow clients (slowloris:
                      defect 4), bad queries, more profile requests than
                      allowed: each gets its status, /metrics keeps answering
    BackendFaults     push endpoints that are down, silent, failing (503)
                      and slow beside a healthy one: each accounts for every
                      profile (delivered + dropped + queued = encoded), the
                      healthy one is not held up, SIGTERM ends in time
    ConfigFaults      hostile configuration files: every one refused with an
                      error, at once, by check-config and by the agent

Run by ctest as test_faults_live (label integration), or by hand:
    /usr/bin/python3 tests/integration/test_faults.py [-v] [Class[.test]]
The last line of the output is "N passed, N failed, N skipped" (livelib.run()).
"""

import glob
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import livelib  # noqa: E402

PROMTOOL = "/usr/bin/promtool"
NOBODY = 65534


def sanitizer_report(text):
    return "AddressSanitizer" in text or "runtime error:" in text or "LeakSanitizer" in text


def copy_target(tmp, name, as_name):
    """tests/targets/NAME.py copied under a name this run's config keeps."""
    path = os.path.join(tmp, as_name + ".py")
    shutil.copyfile(os.path.join(livelib.TARGETS_DIR, name + ".py"), path)
    return path


def agent_fds(agent):
    return len(os.listdir(f"/proc/{agent.proc.pid}/fd"))


def agent_fd_kinds(agent):
    """{what each descriptor is (its link, or "anon_inode:[perf_event]" ...): count}."""
    kinds = {}
    d = f"/proc/{agent.proc.pid}/fd"
    for fd in os.listdir(d):
        try:
            link = os.readlink(f"{d}/{fd}")
        except OSError:
            continue
        kind = link if link.startswith("anon_inode:") else "other"
        kinds[kind] = kinds.get(kind, 0) + 1
    return kinds


def agent_threads(agent):
    return len(os.listdir(f"/proc/{agent.proc.pid}/task"))


class FaultCase(unittest.TestCase):
    """A temporary directory, a token in every target's name, agents stopped at the end."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix=f"pyprofd-faults-{cls.__name__}.")
        os.chmod(cls.tmp, 0o755)  # an unprivileged agent reads its config here
        cls.token = f"flt{os.getpid()}"
        cls.agents = []

    @classmethod
    def tearDownClass(cls):
        for a in cls.agents:
            if a.proc.poll() is None:
                a.proc.kill()
                a.proc.wait()
        livelib.stop_all()

    @classmethod
    def start_agent(cls, name, config, **kw):
        a = livelib.Agent(cls.tmp, name, config, **kw)
        cls.agents.append(a)
        return a.wait_http()

    def check_alive(self, agent):
        self.assertIsNone(agent.proc.poll(), f"the agent exited:\n{agent.log()}")
        self.assertEqual(agent.get("/-/healthy")[0], 200)
        self.assertFalse(sanitizer_report(agent.log()), agent.log())

    def check_metrics(self, agent):
        text = agent.metrics()
        check = subprocess.run([PROMTOOL, "check", "metrics"], input=text.encode(),
                               capture_output=True, timeout=60)
        self.assertEqual(check.returncode, 0, check.stdout + check.stderr)
        return text

    def stop_agent(self, agent):
        rc = agent.stop()
        self.assertEqual(rc, 0, agent.log())
        self.assertFalse(sanitizer_report(agent.log()), agent.log())


class TargetFaults(FaultCase):
    """Targets that are idle, exec, hang in shutdown, stop, die and churn."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.store = os.path.join(cls.tmp, "store")
        t = cls.token
        try:
            idle = os.path.join(cls.tmp, f"{t}_idle.py")
            with open(idle, "w") as f:  # off CPU for good: no sample in cpu mode
                f.write("import signal, sys, threading\n"
                        "signal.signal(signal.SIGTERM, lambda s, f: sys.exit(0))\n"
                        "print('pyprofd-target: ready', flush=True)\n"
                        "threading.Event().wait()\n")
            cls.idle = livelib.start_target(cls.tmp, idle, "3.14")
            cls.busy = livelib.start_target(
                cls.tmp, copy_target(cls.tmp, "hotspot", f"{t}_busy"), "3.15", "chroot",
                "--which", "alpha")
            cls.execers = {}
            for to, version in (("self", "3.14"), ("3.13", "3.14"), ("sleep", "3.15")):
                name = f"{t}_exec_{to.replace('.', '')}"
                cls.execers[to] = livelib.start_target(
                    cls.tmp, copy_target(cls.tmp, "execer", name), version, "chroot",
                    "--exec-to", to)
            cls.stuck = livelib.start_target(
                cls.tmp, copy_target(cls.tmp, "stuck_finalizing", f"{t}_stuck"), "3.13")
            cls.agent = cls.start_agent("targets", f"""\
global:
  sample_rate: 100
  profile_interval: 5m
discovery:
  refresh_interval: 1s
  min_process_age: 100ms
profile_configs:
  - job_name: idle
    mode: cpu
    relabel_configs:
      - source_labels: [__meta_process_commandline]
        regex: '.*/{t}_idle[.]py.*'
        action: keep
  - job_name: faults
    mode: wall
    relabel_configs:
      - source_labels: [__meta_process_commandline]
        regex: '.*/{t}_[a-z0-9_]+[.]py.*'
        action: keep
storage:
  directory: {cls.store}
server:
  listen_address: 127.0.0.1:{{port}}
""")
        except BaseException:
            cls.tearDownClass()
            raise

    def profile(self, query, name):
        status, body = self.agent.get(f"/debug/pprof/profile?{query}", timeout=60)
        self.assertEqual(status, 200, body[:300])
        path = os.path.join(self.tmp, name)
        with open(path, "wb") as f:
            f.write(body)
        return livelib.pprof_top(path, self.tmp)

    def stored(self, pid):
        return sorted(glob.glob(os.path.join(self.store, f"*-{pid}-*.pb.gz")))

    def test_idle_target_in_a_profile_request(self):
        """Defect 1: a target with no samples in a merged profile (it crashed the agent)."""
        a = self.agent
        a.wait_state(self.idle.pid, "active")
        a.wait_state(self.busy.pid, "active")
        top = self.profile("seconds=2", "all.pb.gz")
        self.assertIn("hot_alpha", top)
        # the README's quick start: an idle process alone (it crashed the agent)
        status, body = a.get(f"/debug/pprof/profile?seconds=1&pid={self.idle.pid}")
        self.assertEqual(status, 200, f"{body[:300]!r}\n{a.log()[-3000:]}")
        path = os.path.join(self.tmp, "idle.pb.gz")
        with open(path, "wb") as f:
            f.write(body)
        livelib.pprof_top(path, self.tmp)  # an empty profile, but a valid one
        self.assertEqual(a.targets()[self.idle.pid]["counts"]["thread_samples"], 0)
        self.check_alive(a)

    def test_exec(self):
        """Defect 3: exec() into itself, into another Python, into /bin/sleep."""
        a = self.agent
        for t in self.execers.values():
            a.wait_state(t.pid, "active")
        before = a.metric('pyprofd_target_reattaches_total{job="faults",reason="exec"}') or 0
        for t in self.execers.values():
            os.kill(t.pid, signal.SIGUSR1)
        again = lambda e: e is not None and e["state"] == "active" and e.get("reattaches")  # noqa
        me = a.wait_for(self.execers["self"].pid, again, 10, "attached again")
        self.assertIn("exec", me["last_reattach"])
        other = a.wait_for(self.execers["3.13"].pid, again, 10, "attached again")
        self.assertTrue(other["python_version"].startswith("3.13"), other)
        a.wait_for(self.execers["sleep"].pid, lambda e: e is None or e["state"] != "active", 10,
                   "gone from the targets")
        self.execers["sleep"].kill()  # /bin/sleep now: run-target.sh would not stop it
        # the same interpreter image again: names from the new process, not a stale cache
        for to in ("self", "3.13"):
            top = self.profile(f"seconds=1&pid={self.execers[to].pid}", f"exec-{to}.pb.gz")
            self.assertIn("hot_after", top)
            self.assertNotIn("hot_before", top)
        self.assertEqual(
            a.metric('pyprofd_target_reattaches_total{job="faults",reason="exec"}'), before + 3)
        # what was sampled before the exec went to storage with the first target's window
        self.assertTrue(self.stored(self.execers["self"].pid))
        self.check_alive(a)

    def test_stuck_in_shutdown(self):
        """Defect 2's safety net: every attempt fails (finalizing): a fresh attach, counted."""
        a = self.agent
        a.wait_state(self.stuck.pid, "active")
        os.kill(self.stuck.pid, signal.SIGUSR1)  # now it hangs in shutdown
        e = a.wait_for(self.stuck.pid, lambda e: e is not None and e.get("reattaches"), 25,
                       "attached again")
        self.assertIn("finalizing", e["last_reattach"])
        self.assertIn("failed", e["last_reattach"])
        self.assertGreaterEqual(
            a.metric('pyprofd_target_reattaches_total{job="faults",reason="failing"}'), 1)
        self.assertIn(f"process {self.stuck.pid} ", a.log())
        self.check_alive(a)

    def test_stopped_and_killed(self):
        a = self.agent
        t = livelib.start_target(self.tmp, copy_target(self.tmp, "hotspot", f"{self.token}_kill"),
                                 "3.13", "chroot", "--which", "gamma")
        a.wait_state(t.pid, "active")
        os.kill(t.pid, signal.SIGSTOP)
        try:
            # a stopped process is still read: its frozen stack, every attempt
            first = a.targets()[t.pid]["counts"]["samples"]
            time.sleep(1)
            e = a.targets()[t.pid]
            self.assertEqual(e["state"], "active")
            self.assertGreater(e["counts"]["samples"], first + 50)
        finally:
            os.kill(t.pid, signal.SIGCONT)
        os.kill(t.pid, signal.SIGKILL)
        a.wait_for(t.pid, lambda e: e is None, 5, "forgotten")
        deadline = time.monotonic() + 5
        while not self.stored(t.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        files = self.stored(t.pid)
        self.assertEqual(len(files), 1, files)
        self.assertIn("hot_gamma", livelib.pprof_top(files[0], self.tmp))
        t.stop()
        self.check_alive(a)

    def test_churn(self):
        """Short-lived processes by the dozen: nothing leaks, /targets forgets them."""
        a = self.agent
        time.sleep(1)
        fds, threads = agent_fds(a), agent_threads(a)
        perf0 = agent_fd_kinds(a).get("anon_inode:[perf_event]", 0)
        script = os.path.join(livelib.rootfs(), "pyprofd-targets", f"{self.token}_churn.py")
        with open(script, "w") as f:
            f.write("import os, sys, time\n"
                    "def churn_work(n):\n"
                    "    return sum(i * i for i in range(n))\n"
                    "end = time.monotonic() + float(sys.argv[1])\n"
                    "while time.monotonic() < end:\n"
                    "    churn_work(5000)\n"
                    "if sys.argv[2] == 'raise':\n"
                    "    raise SystemExit(3)\n"
                    "if sys.argv[2] == 'kill':\n"
                    "    os.kill(os.getpid(), 9)\n")
        procs, pids = [], set()
        versions = ("3.13", "3.14", "3.15")
        ends = ("exit", "raise", "kill")
        for i in range(60):
            life = 0.1 + (i % 7) * 0.2
            p = subprocess.Popen(["chroot", livelib.rootfs(), f"/usr/bin/python{versions[i % 3]}",
                                  f"/pyprofd-targets/{self.token}_churn.py", str(life),
                                  ends[i % 3]], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
            procs.append(p)
            pids.add(p.pid)
            while sum(q.poll() is None for q in procs) >= 6:
                time.sleep(0.02)
        for p in procs:
            p.wait(timeout=30)
        # every churned process leaves the targets within a few refreshes
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            left = [pid for pid in pids if pid in a.targets()]
            if not left:
                break
            time.sleep(0.2)
        self.assertEqual(left, [])
        seen = [pid for pid in pids if f"sampling process {pid} " in a.log()]
        self.assertGreater(len(seen), 10, "the churn was not sampled at all")
        for pid in seen:
            self.assertLessEqual(len(self.stored(pid)), 1)
        time.sleep(1)  # windows flushed, readers closed
        # the idle check's descriptors belong to targets still sampled (two perf
        # events per thread at most, once parked), and the parking waiter's epoll
        # set and eventfd to the agent, from the first parked target on
        # (docs/agent.md): not leaks
        kinds = agent_fd_kinds(a)
        perf = kinds.get("anon_inode:[perf_event]", 0)
        live = sum(len(os.listdir(f"/proc/{pid}/task")) for pid in a.targets()
                   if os.path.isdir(f"/proc/{pid}/task"))
        self.assertLessEqual(perf, 2 * live, kinds)
        self.assertLessEqual(agent_fds(a) - perf, fds - perf0 + 3 + 2,
                             os.listdir(f"/proc/{a.proc.pid}/fd"))
        self.assertLessEqual(agent_threads(a), threads + 1)
        self.check_metrics(a)
        self.check_alive(a)
        os.unlink(script)

    @classmethod
    def tearDownClass(cls):
        try:
            if getattr(cls, "agent", None):
                cls.agent.stop()
        finally:
            super().tearDownClass()


class StorageFaults(FaultCase):
    """A storage directory that is full, or read-only."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.mounts = []
        try:
            cls.target = livelib.start_target(
                cls.tmp, copy_target(cls.tmp, "hotspot", f"{cls.token}_disk"), "3.14", "chroot",
                "--which", "beta")
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            super().tearDownClass()
        finally:
            for m in reversed(cls.mounts):
                subprocess.run(["umount", "-l", m], capture_output=True)

    def mount(self, *args):
        path = args[-1]
        os.makedirs(path, exist_ok=True)
        subprocess.run(["mount", *args], check=True, capture_output=True)
        self.mounts.append(path)

    def run_with_storage(self, name, directory):
        a = self.start_agent(name, f"""\
global:
  sample_rate: 200
  mode: wall
  profile_interval: 1s
discovery:
  refresh_interval: 1s
  min_process_age: 100ms
profile_configs:
  - job_name: disk
    relabel_configs:
      - source_labels: [__meta_process_commandline]
        regex: '.*/{self.token}_disk[.]py.*'
        action: keep
storage:
  directory: {directory}
server:
  listen_address: 127.0.0.1:{{port}}
""")
        a.wait_state(self.target.pid, "active")
        deadline = time.monotonic() + 8
        while (a.metric("pyprofd_storage_write_errors_total") or 0) < 2 and \
                time.monotonic() < deadline:
            time.sleep(0.2)
        self.assertGreaterEqual(a.metric("pyprofd_storage_write_errors_total") or 0, 2, a.log())
        # sampling goes on, profiles are still made (and counted), the error said once
        before = a.metric('pyprofd_samples_total{job="disk"}')
        time.sleep(0.5)
        self.assertGreater(a.metric('pyprofd_samples_total{job="disk"}'), before)
        self.assertGreaterEqual(a.metric('pyprofd_profiles_total{job="disk"}'), 2)
        self.assertEqual(a.log().count("cannot write profile"), 1, a.log())
        self.check_metrics(a)
        self.check_alive(a)
        self.stop_agent(a)

    def test_full(self):
        d = os.path.join(self.tmp, "full")
        self.mount("-t", "tmpfs", "-o", "size=16k,nr_inodes=64", "tmpfs", d)
        with open(os.path.join(d, "ballast"), "wb") as f:
            try:
                f.write(b"\0" * 16384)
            except OSError:
                pass
        self.run_with_storage("full", d)

    def test_read_only(self):
        d = os.path.join(self.tmp, "ro")
        os.makedirs(d)
        self.mount("--bind", "-o", "ro", d, d)
        self.run_with_storage("ro", d)


class PrivilegeFaults(FaultCase):
    """An agent that is not root: the capabilities it documents, and none."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        t = cls.token
        cls.deleted_copy = None
        try:
            # under the default rootfs, itself under /root (0700): a chroot'ed
            # target whose files a non-root agent cannot reach by name
            cls.target = livelib.start_target(
                cls.tmp, copy_target(cls.tmp, "hotspot", f"{t}_priv"), "3.14", "chroot",
                "--which", "alpha")
            # a deleted executable: only /proc/PID/map_files still reaches it
            root = livelib.rootfs()
            cls.deleted_copy = os.path.join(root, "tmp", f"{t}-python3.15")
            shutil.copy2(os.path.join(root, "usr/bin/python3.15"), cls.deleted_copy)
            src = copy_target(cls.tmp, "hotspot", f"{t}_deleted")
            shutil.copyfile(src, os.path.join(root, "pyprofd-targets", f"{t}_deleted.py"))
            cls.deleted = subprocess.Popen(
                ["chroot", root, f"/tmp/{t}-python3.15", "-u", f"/pyprofd-targets/{t}_deleted.py",
                 "--which", "beta"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            if b"ready" not in cls.deleted.stdout.readline():
                raise RuntimeError("the deleted-executable target did not start")
            os.unlink(cls.deleted_copy)
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            super().tearDownClass()
        finally:
            if getattr(cls, "deleted", None):
                cls.deleted.kill()
                cls.deleted.wait()
                cls.deleted.stdout.close()
            if cls.deleted_copy and os.path.exists(cls.deleted_copy):
                os.unlink(cls.deleted_copy)

    def config(self):
        return f"""\
global:
  sample_rate: 100
  mode: wall
  profile_interval: 5m
discovery:
  refresh_interval: 1s
  min_process_age: 100ms
profile_configs:
  - job_name: priv
    relabel_configs:
      - source_labels: [__meta_process_commandline]
        regex: '.*/{self.token}_[a-z]+[.]py.*'
        action: keep
server:
  listen_address: 127.0.0.1:{{port}}
"""

    def setpriv(self, caps):
        wrap = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
        if caps:
            c = ",".join("+" + x for x in caps)
            wrap += [f"--inh-caps={c}", f"--ambient-caps={c}"]
        else:
            wrap += ["--inh-caps=-all"]
        return wrap

    def test_documented_capabilities(self):
        """Defect 7: CAP_SYS_PTRACE reaches a chroot under a 0700 directory."""
        for caps in (["sys_ptrace", "checkpoint_restore"], ["sys_ptrace"]):
            with self.subTest(caps=caps):
                a = self.start_agent("priv-" + "-".join(caps), self.config(),
                                     wrap=self.setpriv(caps))
                a.wait_state(self.target.pid, "active")
                status, body = a.get(f"/debug/pprof/profile?seconds=1&pid={self.target.pid}")
                self.assertEqual(status, 200)
                path = os.path.join(self.tmp, "priv.pb.gz")
                with open(path, "wb") as f:
                    f.write(body)
                self.assertIn("hot_alpha", livelib.pprof_top(path, self.tmp))
                # the deleted executable is listed, with why, not hidden
                e = a.wait_state(self.deleted.pid, "unreadable")
                self.assertIn("cannot open", e["reason"])
                self.assertIn(f"process {self.deleted.pid} ", a.log())
                self.check_alive(a)
                self.stop_agent(a)

    def test_no_capabilities(self):
        a = self.start_agent("priv-none", self.config(), wrap=self.setpriv([]))
        e = a.wait_state(self.target.pid, "unreadable")
        self.assertTrue("permission" in e["reason"].lower() or "denied" in e["reason"].lower(),
                        e)
        self.check_alive(a)
        self.stop_agent(a)

    def test_root_reads_the_deleted_executable(self):
        a = self.start_agent("priv-root", self.config())
        a.wait_state(self.deleted.pid, "active")
        self.stop_agent(a)


class HttpFaults(FaultCase):
    """Garbage, oversized and slow clients, bad queries, too many profile requests."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        try:
            cls.target = livelib.start_target(
                cls.tmp, copy_target(cls.tmp, "hotspot", f"{cls.token}_http"), "3.15", "chroot",
                "--which", "gamma")
            cls.agent = cls.start_agent("http", f"""\
global:
  sample_rate: 100
  mode: wall
discovery:
  refresh_interval: 1s
  min_process_age: 100ms
profile_configs:
  - job_name: http
    relabel_configs:
      - source_labels: [__meta_process_commandline]
        regex: '.*/{cls.token}_http[.]py.*'
        action: keep
server:
  listen_address: 127.0.0.1:{{port}}
  max_concurrent_profiles: 6
""")
        except BaseException:
            cls.tearDownClass()
            raise

    def raw(self, data, timeout=15):
        """Sends @data on a new connection; the status line of the reply ("" if none)."""
        import socket
        with socket.create_connection(("127.0.0.1", self.agent.port), timeout=timeout) as c:
            c.sendall(data)
            reply = b""
            try:
                while b"\r\n" not in reply:
                    chunk = c.recv(4096)
                    if not chunk:
                        break
                    reply += chunk
            except socket.timeout:
                pass
            return reply.split(b"\r\n", 1)[0].decode(errors="replace")

    def test_malformed_and_oversized(self):
        for what, data, status in (
                ("garbage line", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"x" * 64, "400"),
                ("no version", b"GET /metrics\r\n\r\n", "400"),
                ("control byte in a header", b"GET /metrics HTTP/1.1\r\nX: a\x01b\r\n\r\n", "400"),
                ("huge header", b"GET /metrics HTTP/1.1\r\nX: " + b"a" * 40000 + b"\r\n\r\n",
                 "431")):
            with self.subTest(what=what):
                started = time.monotonic()
                line = self.raw(data)
                self.assertIn(f" {status} ", line + " ", f"{what}: {line!r}")
                self.assertLess(time.monotonic() - started, 5)
        self.check_alive(self.agent)

    def test_bad_queries(self):
        a = self.agent
        a.wait_state(self.target.pid, "active")
        for q, status in (("seconds=abc", 400), ("seconds=-1", 400), ("seconds=99999999999", 400),
                          ("pid=abc", 400), ("seconds=1&pid=1", 404),
                          ("&".join(f"x{i}=1" for i in range(40)), 400)):
            with self.subTest(query=q):
                self.assertEqual(a.get(f"/debug/pprof/profile?{q}", timeout=20)[0], status)
        self.assertEqual(a.get("/nope")[0], 404)
        self.assertEqual(a.get("/metrics", method="DELETE")[0], 405)
        self.check_alive(a)

    def test_too_many_profile_requests(self):
        """max_concurrent_profiles: 6 (above the 4 a sampler once had taps for): six
        requests at once each get the target's profile, the two more a 503."""
        import gzip
        a = self.agent
        a.wait_state(self.target.pid, "active")
        results = []
        lock = threading.Lock()

        def one():
            st, body = a.get("/debug/pprof/profile?seconds=2", timeout=30)
            with lock:
                results.append((st, body))

        threads = [threading.Thread(target=one) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        statuses = [st for st, _ in results]
        self.assertEqual(statuses.count(200), 6, statuses)
        self.assertEqual(statuses.count(503), 2, statuses)
        for st, body in results:
            if st == 200:  # each has the target's samples, not an empty profile
                self.assertIn(b"hot_gamma", gzip.decompress(body))
            else:
                self.assertIn(b"(limit 6)", body)
        self.check_alive(a)

    def test_slowloris(self):
        """Defect 4: 300 connections trickling a header: /metrics still answers."""
        import socket
        a = self.agent
        conns = []
        try:
            for _ in range(300):
                try:
                    c = socket.create_connection(("127.0.0.1", a.port), timeout=5)
                    c.sendall(b"GET /metrics HTTP/1.1\r\n")
                    conns.append(c)
                except OSError:
                    pass
            answered = 0
            for i in range(10):
                for c in conns[i * 30:(i + 1) * 30]:
                    try:
                        c.sendall(b"X-Slow: 1\r\n")  # a byte now and then: no idle timeout
                    except OSError:
                        pass
                started = time.monotonic()
                try:
                    status, _ = a.get("/metrics", timeout=5)
                    answered += status == 200 and time.monotonic() - started < 5
                except OSError:
                    pass
                time.sleep(0.2)
            self.assertEqual(answered, 10)
        finally:
            for c in conns:
                c.close()
        text = a.metrics()
        self.assertGreater(sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                               if line.startswith("pyprofd_http_connections_rejected_total{")), 0)
        self.check_alive(a)


class BackendFaults(FaultCase):
    """Push endpoints that are down, silent, failing and slow, beside a healthy one."""

    ENDPOINTS = ("ok", "down", "silent", "failing", "slow")

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        import pyroscope_receiver
        cls.receivers, cls.holes = {}, []
        cls.pulse_stop = threading.Event()
        try:
            cls.target = livelib.start_target(
                cls.tmp, copy_target(cls.tmp, "hotspot", f"{cls.token}_push"), "3.14", "chroot",
                "--which", "beta")
            for name in ("ok", "failing", "slow"):
                cls.receivers[name] = pyroscope_receiver.Receiver(
                    os.path.join(cls.tmp, f"recv-{name}")).start()
            with cls.receivers["failing"].lock:
                cls.receivers["failing"].fail_next = ["unavailable"] * 100000
            cls.receivers["slow"].set_hang(True)
            threading.Thread(target=cls.pulse, daemon=True).start()
            cls.holes.append(livelib.BlackHole(livelib.free_port()))
            ports = {name: r.port for name, r in cls.receivers.items()}
            ports["silent"] = cls.holes[0].sock.getsockname()[1]
            ports["down"] = livelib.free_port()  # nothing listens there
            remote = "".join(f"""\
  - type: pyroscope
    name: {name}
    url: http://127.0.0.1:{ports[name]}
    remote_timeout: 2s
    queue:
      max_profiles: 5
      min_backoff: 100ms
      max_backoff: 2s
      max_retries: 0
""" for name in cls.ENDPOINTS)
            cls.agent = cls.start_agent("push", f"""\
global:
  sample_rate: 100
  mode: wall
  profile_interval: 1s
discovery:
  refresh_interval: 1s
  min_process_age: 100ms
profile_configs:
  - job_name: push
    relabel_configs:
      - source_labels: [__meta_process_commandline]
        regex: '.*/{cls.token}_push[.]py.*'
        action: keep
remote_write:
{remote}server:
  listen_address: 127.0.0.1:{{port}}
""", extra_args=("--shutdown-timeout", "3"))
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def pulse(cls):
        """The slow receiver answers one hung request every 1.5 s."""
        r = cls.receivers["slow"]
        while not cls.pulse_stop.wait(1.5):
            r.release.set()
            time.sleep(0.05)
            r.release.clear()

    @classmethod
    def tearDownClass(cls):
        try:
            super().tearDownClass()
        finally:
            cls.pulse_stop.set()
            for r in getattr(cls, "receivers", {}).values():
                r.set_hang(False)
                r.stop()
            for h in getattr(cls, "holes", []):
                h.close()

    def account(self, text, name):
        m = lambda q: self.agent.metric(q, text) or 0  # noqa: E731
        delivered = m(f'pyprofd_push_profiles_total{{endpoint="{name}"}}')
        dropped = sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                      if line.startswith("pyprofd_push_dropped_profiles_total{")
                      and f'endpoint="{name}"' in line)
        queued = m(f'pyprofd_push_queue_length{{endpoint="{name}"}}')
        return delivered, dropped, queued

    def test_each_endpoint_on_its_own(self):
        a = self.agent
        a.wait_state(self.target.pid, "active")
        time.sleep(8)
        # one scrape is not one instant: a profile encoded just before it may
        # not be offered to the endpoints yet; a profile lost stays lost, so
        # the accounts are read again (a few times, 0.3 s apart) until they agree
        for _ in range(5):
            text = self.check_metrics(a)
            encoded = a.metric("pyprofd_profiles_encoded_total", text)
            if all(sum(self.account(text, n)) == encoded for n in self.ENDPOINTS):
                break
            time.sleep(0.3)
        self.assertGreaterEqual(encoded, 5)
        for name in self.ENDPOINTS:
            with self.subTest(endpoint=name):
                delivered, dropped, queued = self.account(text, name)
                # every profile offered is in exactly one place
                self.assertEqual(delivered + dropped + queued, encoded,
                                 f"{name}: {delivered} + {dropped} + {queued} != {encoded}")
        # the healthy endpoint is not held up by the others
        ok = self.account(text, "ok")[0]
        self.assertGreaterEqual(ok, encoded - 2, text)
        self.assertGreaterEqual(len(self.receivers["ok"].snapshot()[0]), ok)
        self.assertEqual(self.account(text, "failing")[0], 0)
        self.assertEqual(self.account(text, "down")[0], 0)
        self.assertEqual(self.account(text, "silent")[0], 0)
        for name, code in (("down", "connect"), ("silent", "timeout"), ("failing", "503")):
            self.assertGreater(
                a.metric(f'pyprofd_push_failures_total{{endpoint="{name}",code="{code}"}}', text)
                or 0, 0, f"{name}: no {code} failure counted")
        # an endpoint whose queue overflowed dropped the oldest, counted
        self.assertGreater(a.metric('pyprofd_push_dropped_profiles_total'
                                    '{endpoint="down",reason="queue_full"}', text) or 0, 0)
        self.check_alive(a)
        # SIGTERM: out within --shutdown-timeout despite a silent and a slow endpoint
        started = time.monotonic()
        self.stop_agent(a)
        self.assertLess(time.monotonic() - started, 8, a.log())


# name, file content: each must be refused (exit 1, an error line, no report)
HOSTILE_CONFIGS = [
    ("nul", "global:\n  sample_rate: 1\0000\n"),
    ("binary", bytes(range(256)) * 4),
    ("bad_utf8", b"global:\n  mode: \xff\xfe\n"),
    ("tabs", "global:\n\tmode: wall\n"),
    ("deep", "a:\n" + "".join("  " * i + "- \n" for i in range(1, 200))),
    ("flow_deep", "global: " + "[" * 5000 + "]" * 5000 + "\n"),
    ("alias_bomb", "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
                   + "".join(f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)},"
                             f" *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
                             for i in range(9))),
    ("unknown_top", "bogus: 1\n"),
    ("unknown_key", "global:\n  sampel_rate: 100\n"),
    ("dup_key", "global:\n  sample_rate: 100\n  sample_rate: 200\n"),
    ("wrong_type", "global:\n  sample_rate: [1, 2]\n"),
    ("rate_zero", "global:\n  sample_rate: 0\n"),
    ("rate_negative", "global:\n  sample_rate: -5\n"),
    ("rate_huge", "global:\n  sample_rate: 1e400\n"),
    ("rate_nan", "global:\n  sample_rate: .nan\n"),
    ("rate_inf", "global:\n  sample_rate: .inf\n"),
    ("bad_mode", "global:\n  mode: sideways\n"),
    ("interval_zero", "global:\n  profile_interval: 0s\n"),
    ("interval_garbage", "global:\n  profile_interval: 5 fortnights\n"),
    ("interval_overflow", "global:\n  profile_interval: 99999999999999999999999h\n"),
    ("big_string", "global:\n  external_labels:\n    a: '" + "x" * 2_000_000 + "'\n"),
    ("many_jobs", "profile_configs:\n" + "".join(f"  - job_name: j{i}\n" for i in range(20000))),
    ("dup_job", "profile_configs:\n  - job_name: a\n  - job_name: a\n"),
    ("job_no_name", "profile_configs:\n  - mode: wall\n"),
    ("bad_regex", "profile_configs:\n  - job_name: a\n    relabel_configs:\n"
                  "      - source_labels: [x]\n        regex: '(unclosed'\n"),
    ("bad_action", "profile_configs:\n  - job_name: a\n    relabel_configs:\n"
                   "      - action: explode\n"),
    ("hashmod_zero", "profile_configs:\n  - job_name: a\n    relabel_configs:\n"
                     "      - source_labels: [a]\n        action: hashmod\n"
                     "        target_label: b\n        modulus: 0\n"),
    ("label_name", "global:\n  external_labels:\n    'bad-name': x\n"),
    ("listen_garbage", "server:\n  listen_address: 'not an address'\n"),
    ("listen_port", "server:\n  listen_address: 127.0.0.1:99999\n"),
    ("remote_no_url", "remote_write:\n  - type: pyroscope\n"),
    ("remote_bad_type", "remote_write:\n  - type: carrier-pigeon\n    url: http://a/\n"),
    ("remote_bad_scheme", "remote_write:\n  - type: pyroscope\n    url: gopher://a/\n"),
    ("remote_header_crlf", "remote_write:\n  - type: pyroscope\n    url: http://a/\n"
                           "    headers:\n      X-A: \"b\\r\\nX-Injected: 1\"\n"),
    ("tenant_crlf", "remote_write:\n  - type: pyroscope\n    url: http://a/\n"
                    "    tenant_id: \"t\\r\\nX-Injected: 1\"\n"),
    ("username_ctl", "remote_write:\n  - type: pyroscope\n    url: http://a/\n"
                     "    basic_auth:\n      username: \"u\\x01\"\n      password: p\n"),
    ("url_no_host", "remote_write:\n  - type: pyroscope\n    url: http://:4040\n"),
    ("ca_file_missing", "remote_write:\n  - type: pyroscope\n    url: https://a/\n"
                        "    tls_config:\n      ca_file: /nonexistent/ca.pem\n"),
    ("secret_file_missing", "remote_write:\n  - type: pyroscope\n    url: http://a/\n"
                            "    basic_auth:\n      username: u\n"
                            "      password_file: /nonexistent/pw\n"),
    ("limits_negative", "limits:\n  max_targets: -1\n"),
    ("budget_big", "limits:\n  cpu_budget: 5\n"),
    ("env_unterminated", "global:\n  mode: ${MODE\n"),
    ("document_stream", "global: {}\n---\nglobal: {}\n"),
    ("scalar_root", "just a string\n"),
    ("sequence_root", "- a\n- b\n"),
]


class ConfigFaults(FaultCase):
    """Hostile configuration files: refused, each with an error, at once."""

    def write(self, name, content):
        path = os.path.join(self.tmp, f"{name}.yml")
        with open(path, "wb") as f:
            f.write(content.encode() if isinstance(content, str) else content)
        return path

    def refused(self, argv, what):
        if "-v" in sys.argv:
            print(what, end=" ", flush=True)
        started = time.monotonic()
        out = subprocess.run(argv, capture_output=True, text=True, errors="replace", timeout=20)
        took = time.monotonic() - started
        self.assertEqual(out.returncode, 1, f"{what}: exit {out.returncode}\n{out.stderr[-2000:]}")
        self.assertTrue(out.stderr.strip(), f"{what}: no message")
        self.assertFalse(sanitizer_report(out.stderr), f"{what}:\n{out.stderr[-4000:]}")
        self.assertLess(took, 10, what)
        return out.stderr

    def test_check_config_refuses_each(self):
        for name, content in HOSTILE_CONFIGS:
            with self.subTest(config=name):
                self.refused([livelib.BINARY, "check-config", self.write(name, content)], name)

    def test_agent_refuses_a_sample(self):
        """The agent's own start path, for a few of them (each start costs a second)."""
        for name, content in HOSTILE_CONFIGS[::7]:
            with self.subTest(config=name):
                err = self.refused([livelib.BINARY, "agent", "--config.file",
                                    self.write(name, content), "--web.listen-address", ""], name)
                self.assertIn(name, err)

    def test_expanded_url_without_host(self):
        """Defect 8: http://${UNSET}:4040 is refused at load, not retried forever."""
        path = self.write("env_host", "remote_write:\n  - type: pyroscope\n"
                                      "    url: http://${PYPROFD_FAULTS_UNSET_HOST}:4040\n")
        env = {k: v for k, v in os.environ.items() if k != "PYPROFD_FAULTS_UNSET_HOST"}
        out = subprocess.run([livelib.BINARY, "check-config", "--config.expand-env", path],
                             capture_output=True, text=True, timeout=20, env=env)
        self.assertEqual(out.returncode, 1, out.stdout + out.stderr)
        self.assertIn("host", out.stderr)

    def test_print_hides_url_passwords(self):
        """Defect 10: --print writes <secret>, as Prometheus does."""
        path = self.write("url_password", "remote_write:\n  - type: pyroscope\n"
                                          "    url: http://bob:hunter2@example.invalid:4040/\n")
        out = subprocess.run([livelib.BINARY, "check-config", "--print", path],
                             capture_output=True, text=True, timeout=20)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertNotIn("hunter2", out.stdout + out.stderr)
        self.assertIn("<secret>", out.stdout)

    def test_not_a_file(self):
        """Defect 9: a FIFO (or any non-regular file) is refused at once, not waited on."""
        fifo = os.path.join(self.tmp, "fifo.yml")
        os.mkfifo(fifo)
        for what, path in (("a directory", self.tmp), ("a device", "/dev/zero"),
                           ("a fifo", fifo), ("missing", os.path.join(self.tmp, "missing.yml"))):
            with self.subTest(what=what):
                self.refused([livelib.BINARY, "check-config", path], what)
        # the agent too, and SIGTERM is not ignored while it starts
        started = time.monotonic()
        agent = subprocess.Popen([livelib.BINARY, "agent", "--config.file", fifo,
                                  "--web.listen-address", ""], stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True)
        try:
            out, _ = agent.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            agent.send_signal(signal.SIGTERM)
            out, _ = agent.communicate(timeout=10)
            self.fail(f"the agent waited on a FIFO config:\n{out}")
        self.assertEqual(agent.returncode, 1, out)
        self.assertIn("regular", out)
        self.assertLess(time.monotonic() - started, 10)


if __name__ == "__main__":
    livelib.run(needs=("root", "rootfs", "go", "promtool"))
