# SPDX-License-Identifier: MIT
"""Integration test of `pyprofd agent` against live CPython 3.13, 3.14, 3.15.

One agent runs for the whole test with a config whose only job keeps the
processes whose command line names this run's target files (so Python
processes of anything else on the machine are never sampled), a long
profile interval (so that any profile file on disk before the end is a
flush: a target that exited, a reload, SIGTERM), a 1 s refresh, storage in a
temporary directory, and the HTTP server on a free loopback port.

The checks share the agent and build on each other (a late target joins the
three, the reload changes the config, SIGTERM ends the agent), so they are
one scenario (livelib.Scenario): steps run in the order below, each reported
by name, with its time, and a failing step does not stop the ones after it.

    targets        hotspot.py under 3.13 (chroot), 3.14 (container: own PID
                   and mount namespaces) and 3.15 (chroot) are all in
                   /targets as active, with job, service_name, version
    profile        /debug/pprof/profile?seconds=2&pid=P for the three at once:
                   `go tool pprof -top` of each shows that target's own hot
                   function first; without pid: all three, told apart by the
                   labels every sample carries
    metrics        /metrics passes `promtool check metrics` (Debian's
                   prometheus) and counts samples for the job; the agent's
                   heap (pyprofd_heap_inuse_bytes) is there
    late           a target started after the agent is active within one
                   refresh interval (plus slack); the heap gauge moved
    exit           a target that exits by itself mid-interval has its
                   samples flushed: a file for its pid in storage, whose
                   profile shows its hot function
    old_python     Debian's own python3 (3.11: no debug table, a generated
                   layout) and Debian 11's python3.9 (frame objects) are
                   active beside 3.13-3.15 and their profiles show their
                   hot functions
    reload         a broken config on SIGHUP and on POST /-/reload is refused
                   (500, pyprofd_config_last_reload_successful 0), the agent
                   keeps sampling; the good config again is accepted (200, 1)
    sigterm        SIGTERM: the agent exits 0 within its deadline and every
                   running target's partial window is on disk
    (metrics also asks /debug/pprof/profile for a pid that is not a target: 404)

and, on its own (AgentErrorTest):
    errors         `pyprofd agent --config.file` with a missing file: exit 1

Run by ctest as test_agent_live (label integration), or by hand:
    /usr/bin/python3 tests/integration/test_agent.py [-v]
The last line of the output is "N passed, N failed, N skipped" (livelib.run()).
"""

import glob
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import livelib  # noqa: E402

REFRESH_S = 1.0
PROMTOOL = "/usr/bin/promtool"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class AgentTest(livelib.Scenario):
    agent = None

    @classmethod
    def setUpClass(cls):
        cls.tmp = livelib.scratch()
        cls.token = f"agt{os.getpid()}"
        cls.store = os.path.join(cls.tmp, "store")
        cls.port = free_port()
        cls.base = f"http://127.0.0.1:{cls.port}"
        cls.config = os.path.join(cls.tmp, "pyprofd.yml")
        cls.good_config = f"""\
global:
  sample_rate: 200
  mode: wall
  profile_interval: 5m
discovery:
  refresh_interval: {int(REFRESH_S * 1000)}ms
  min_process_age: 200ms
profile_configs:
  - job_name: agent-test
    relabel_configs:
      - source_labels: [__meta_process_commandline]
        regex: '.*/{cls.token}_[a-z0-9_]+[.]py.*'
        action: keep
storage:
  directory: {cls.store}
server:
  listen_address: 127.0.0.1:{cls.port}
  enable_lifecycle: true
"""
        with open(cls.config, "w") as f:
            f.write(cls.good_config)
        cls.targets = {}
        try:
            for version, mode, which in (("3.13", "chroot", "alpha"),
                                         ("3.14", "container", "beta"),
                                         ("3.15", "chroot", "gamma")):
                cls.targets[version] = cls.start_hotspot(version, mode, which)
            cls.agent_log = open(os.path.join(cls.tmp, "agent.log"), "w+")
            cls.agent = subprocess.Popen([livelib.BINARY, "agent", "--config.file", cls.config],
                                         stdout=cls.agent_log, stderr=subprocess.STDOUT)
            cls.wait_http()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        if cls.agent and cls.agent.poll() is None:
            cls.agent.kill()
            cls.agent.wait()
        livelib.stop_all()
        if getattr(cls, "agent_log", None):
            cls.agent_log.close()

    # --- helpers ----------------------------------------------------------

    @classmethod
    def start_hotspot(cls, version, mode, which, *args):
        """hotspot.py copied under a name this run's config keeps."""
        path = os.path.join(cls.tmp, f"{cls.token}_{which}_{version.replace('.', '')}.py")
        with open(os.path.join(livelib.TARGETS_DIR, "hotspot.py")) as src, open(path, "w") as dst:
            dst.write(src.read())
        return livelib.start_target(cls.tmp, path, version, mode, "--which", which, *args)

    @classmethod
    def wait_http(cls, timeout=15):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if cls.agent.poll() is not None:
                raise RuntimeError(f"the agent exited ({cls.agent.returncode}):\n{cls.log()}")
            try:
                with urllib.request.urlopen(cls.base + "/-/healthy", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"the agent does not answer on {cls.base}:\n{cls.log()}")

    @classmethod
    def log(cls):
        cls.agent_log.flush()
        with open(cls.agent_log.name) as f:
            return f.read()

    def get(self, path, timeout=30, method="GET"):
        req = urllib.request.Request(self.base + path, method=method)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def targets_by_pid(self):
        status, body = self.get("/targets")
        self.assertEqual(status, 200)
        return {t["pid"]: t for t in json.loads(body)["targets"]}

    def wait_active(self, pid, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            t = self.targets_by_pid().get(pid)
            if t and t["state"] == "active":
                return t
            time.sleep(0.05)
        self.fail(f"pid {pid} not active after {timeout} s: "
                  f"{self.targets_by_pid().get(pid)}\n{self.log()}")

    def profile_top(self, path, name):
        status, body = self.get(path, timeout=60)
        self.assertEqual(status, 200, body[:200])
        out = os.path.join(self.tmp, name)
        with open(out, "wb") as f:
            f.write(body)
        return livelib.pprof_top(out, self.tmp)

    def metric(self, name):
        status, body = self.get("/metrics")
        self.assertEqual(status, 200)
        for line in body.decode().splitlines():
            if line.startswith(name + " ") or line.startswith(name + "{"):
                return float(line.rsplit(" ", 1)[1])
        return None

    def stored(self, pid):
        return sorted(glob.glob(os.path.join(self.store, f"agent-test-{pid}-*.pb.gz")))

    # --- tests --------------------------------------------------------------

    def step_targets(self):
        for version, t in self.targets.items():
            info = self.wait_active(t.pid, 10)
            self.assertEqual(info["job"], "agent-test")
            self.assertTrue(info["python_version"].startswith(version), info)
            self.assertEqual(info["labels"]["job"], "agent-test")
            self.assertTrue(info["labels"]["service_name"].startswith(self.token), info)
            self.assertFalse([k for k in info["labels"] if k.startswith("__")], info)
            self.assertEqual(info["mode"], "wall")

    def step_profile(self):
        results = {}

        def one(version, t):
            try:
                results[version] = self.profile_top(
                    f"/debug/pprof/profile?seconds=2&pid={t.pid}", f"pid-{t.pid}.pb.gz")
            except Exception as e:  # reported below, in the test's thread
                results[version] = e

        threads = [threading.Thread(target=one, args=item) for item in self.targets.items()]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        hot = {"3.13": "hot_alpha", "3.14": "hot_beta", "3.15": "hot_gamma"}
        for version, top in results.items():
            if isinstance(top, Exception):
                raise top
            self.assertIn(livelib.top_function(top), (hot[version], "_spin"),
                          f"python{version}:\n{top}")
            self.assertIn(hot[version], top)
            for other in set(hot.values()) - {hot[version]}:
                self.assertNotIn(other, top, f"python{version}:\n{top}")
        # all targets in one profile, told apart by their labels
        top = self.profile_top("/debug/pprof/profile?seconds=2", "all.pb.gz")
        for name in hot.values():
            self.assertIn(name, top)
        raw = livelib.pprof_top(os.path.join(self.tmp, "all.pb.gz"), self.tmp,
                                ["-tagfocus=service_name=" + f"{self.token}_beta_314"])
        self.assertIn("hot_beta", raw)
        self.assertNotIn("hot_alpha", raw)

    def step_metrics(self):
        status, body = self.get("/metrics")
        self.assertEqual(status, 200)
        check = subprocess.run([PROMTOOL, "check", "metrics"], input=body,
                               capture_output=True, timeout=60)
        self.assertEqual(check.returncode, 0, check.stdout + check.stderr)
        text = body.decode()
        self.assertIn('pyprofd_targets{job="agent-test"} 3', text)
        livelib.within(self, "pyprofd_samples_total{job=\"agent-test\"}",
                       self.metric('pyprofd_samples_total{job="agent-test"}') or 0, 101, None)
        self.assertIn("pyprofd_build_info{", text)
        # the revision label is the one --version prints
        version = subprocess.run([livelib.BINARY, "--version"], capture_output=True, text=True,
                                 timeout=10).stdout.splitlines()[0]
        revision = re.search(r"revision: (\S+)\)", version).group(1)
        self.assertRegex(text, r'pyprofd_build_info\{[^}]*revision="%s"' % re.escape(revision))
        self.assertIn("process_cpu_seconds_total", text)
        # the agent's own heap (what it allocated, touched or not)
        self.heap = self.metric("pyprofd_heap_inuse_bytes")
        self.assertIsNotNone(self.heap, "no pyprofd_heap_inuse_bytes")
        livelib.within(self, "pyprofd_heap_inuse_bytes (MB)", self.heap / 1e6, 0.01, None)
        # not a target: 404 with the reason, at once
        status, body = self.get(f"/debug/pprof/profile?seconds=5&pid={os.getpid()}")
        self.assertEqual(status, 404)
        self.assertIn(b"not a current target", body)

    def step_late(self):
        t = self.start_hotspot("3.14", "chroot", "alpha")
        # from when it is ready: starting it can take seconds on a loaded machine
        started = time.monotonic()
        self.wait_active(t.pid, REFRESH_S + 3)
        livelib.within(self, "late target active after (s)", time.monotonic() - started,
                       None, REFRESH_S + 3)
        # a fourth target holds a window, an unwinder, a sampler: the heap moved
        heap = self.metric("pyprofd_heap_inuse_bytes")
        self.assertIsNotNone(heap)
        self.assertNotEqual(heap, getattr(self, "heap", None))
        t.stop()

    def step_exit(self):
        t = self.start_hotspot("3.15", "chroot", "gamma", "--duration", "3")
        started = time.monotonic()
        self.wait_active(t.pid, 5)
        # it must be active before it exits, 3 s after it was ready: the margin
        livelib.note(f"exit: active {time.monotonic() - started:.1f} s after its start "
                     f"returned (it exits 3 s after it was ready)")
        deadline = time.monotonic() + 15
        while t.alive() and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertFalse(t.alive(), "the target did not exit by itself")
        deadline = time.monotonic() + 3 * REFRESH_S + 5
        while not self.stored(t.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        files = self.stored(t.pid)
        self.assertEqual(len(files), 1, f"{files}\n{self.log()}")
        top = livelib.pprof_top(files[0], self.tmp)
        self.assertIn("hot_gamma", top)
        self.assertNotIn(t.pid, self.targets_by_pid())
        t.stop()

    def step_old_python(self):
        """Debian's own python3 (3.11, no debug table) and Debian 11's python3.9 (frame
        objects) beside 3.13-3.15: active, profiled"""
        script = os.path.join(self.tmp, f"{self.token}_old.py")
        with open(script, "w") as f:
            f.write("def old_hot():\n    n = 0\n    for i in range(100000):\n        n += i\n"
                    "print('ready', flush=True)\nwhile True:\n    old_hot()\n")
        old = subprocess.Popen(["/usr/bin/python3", script], stdout=subprocess.PIPE)
        try:
            old.stdout.readline()
            info = self.wait_active(old.pid, REFRESH_S + 5)
            self.assertTrue(info["python_version"].startswith("3.11"), info)
            self.assertEqual(info["build"], "gil", info)
            top = self.profile_top(f"/debug/pprof/profile?seconds=1&pid={old.pid}", "old.pb.gz")
            self.assertEqual(livelib.top_function(top), "old_hot", top)
        finally:
            old.kill()
            old.wait()
            old.stdout.close()
        # Debian 11's python3.9 (frame objects, co_lnotab), in the bullseye rootfs
        t = self.start_hotspot("3.9", "chroot", "beta")
        try:
            info = self.wait_active(t.pid, REFRESH_S + 5)
            self.assertTrue(info["python_version"].startswith("3.9."), info)
            top = self.profile_top(f"/debug/pprof/profile?seconds=1&pid={t.pid}", "old39.pb.gz")
            self.assertIn(livelib.top_function(top), ("_spin", "hot_beta"), top)
            self.assertIn("hot_beta", top)
        finally:
            t.stop()

    def step_reload(self):
        with open(self.config, "w") as f:
            f.write(self.good_config.replace("mode: wall", "mode: sideways"))
        self.agent.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 5
        while self.metric("pyprofd_config_last_reload_successful") != 0 and \
                time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertEqual(self.metric("pyprofd_config_last_reload_successful"), 0)
        status, body = self.get("/-/reload", method="POST")
        self.assertEqual(status, 500)
        self.assertIn(b"sideways", body)
        self.assertIsNone(self.agent.poll())
        before = self.metric('pyprofd_samples_total{job="agent-test"}')
        time.sleep(0.5)
        self.assertGreater(self.metric('pyprofd_samples_total{job="agent-test"}'), before)
        with open(self.config, "w") as f:
            f.write(self.good_config)
        status, body = self.get("/-/reload", method="POST")
        self.assertEqual(status, 200, body)
        self.assertEqual(self.metric("pyprofd_config_last_reload_successful"), 1)
        for t in self.targets.values():
            self.wait_active(t.pid, REFRESH_S + 5)

    def step_sigterm(self):
        # the windows the reload flushed (step reload) reach the disk a moment later
        # (every target's: the export thread writes them one after another,
        # so two equal counts 0.5 s apart are not enough: a CI run under
        # TSan saw one target's file come later)
        before, deadline = None, time.monotonic() + 20
        while time.monotonic() < deadline:
            now = {v: len(self.stored(t.pid)) for v, t in self.targets.items()}
            if now == before and min(now.values()) >= 1:
                break
            before = now
            time.sleep(0.5)
        time.sleep(1)  # something to flush
        started = time.monotonic()
        self.agent.send_signal(signal.SIGTERM)
        rc = self.agent.wait(timeout=15)
        self.assertEqual(rc, 0, self.log())
        self.assertLess(time.monotonic() - started, 11)
        for version, t in self.targets.items():
            files = self.stored(t.pid)
            self.assertEqual(len(files), before[version] + 1, f"python{version}: {files}")
            self.assertIn({"3.13": "hot_alpha", "3.14": "hot_beta", "3.15": "hot_gamma"}[version],
                          livelib.pprof_top(files[-1], self.tmp))



class IdleParkTest(unittest.TestCase):
    """Issue 26: the agent parks a target whose threads stay idle (no attempt is made
    for it until one runs) and still sees a thread that wakes now and then in
    proportion to the time it runs."""

    def test_parked_target_seen_in_proportion(self):
        """brief.py 300 30 (30 ms of work every 300 ms) under a cpu job and a wall job:
        over a 4 s /debug/pprof/profile, the brief thread's share (cpu: on a CPU;
        wall: brief_work of its samples) lies within 3 points of its CPU time as the
        kernel counted it (wall: -6), the blocked thread is in every wall sample and
        no cpu sample, every thread has one sample per attempt, and most attempts
        were made without a read"""
        tmp = livelib.scratch()
        targets = {mode: livelib.start_target(tmp, "brief", "3.14", "chroot", "300", "30")
                   for mode in ("cpu", "wall")}
        agent = None
        try:
            wrap = ()
            for t in targets.values():  # the check is measured, not the scheduler
                wrap = livelib.apart(t.pid)
            jobs = "".join(f"""\
  - job_name: idle-{mode}
    mode: {mode}
    relabel_configs:
      - source_labels: [__meta_process_pid]
        regex: '{t.pid}'
        action: keep
""" for mode, t in targets.items())
            agent = livelib.Agent(tmp, "idle-park", f"""\
global: {{sample_rate: 100, profile_interval: 1m}}
discovery: {{refresh_interval: 1s, min_process_age: 200ms}}
profile_configs:
{jobs}server:
  listen_address: 127.0.0.1:{{port}}
""", wrap=wrap).wait_http()
            for t in targets.values():
                e = agent.wait_state(t.pid, "active", timeout=15)
                self.assertEqual(e.get("idle_check"), "perf", e)
            # parked between the brief thread's runs (a thread ran: back on the schedule)
            deadline, parked = time.monotonic() + 5, set()
            while time.monotonic() < deadline and len(parked) < len(targets):
                parked |= {p for p, e in agent.targets().items() if e.get("parked")}
                time.sleep(0.05)
            self.assertEqual(parked, {t.pid for t in targets.values()}, "parked at some point")
            for mode, t in targets.items():
                task = f"/proc/{t.pid}/task"
                tid = livelib.thread_named(t.pid, "brief")[0]
                with open(f"{task}/{tid}/schedstat") as f:
                    run0, wait0 = (int(v) for v in f.read().split()[:2])
                t0 = time.monotonic()
                status, body = agent.get(f"/debug/pprof/profile?seconds=4&pid={t.pid}")
                t1 = time.monotonic()
                with open(f"{task}/{tid}/schedstat") as f:
                    run1, wait1 = (int(v) for v in f.read().split()[:2])
                self.assertEqual(status, 200, body[:300])
                path = os.path.join(tmp, f"idle-{mode}.pb.gz")
                with open(path, "wb") as f:
                    f.write(body)
                traces = livelib.pprof_traces(path, tmp)
                lo = 100.0 * (run1 - run0) / 1e9 / (t1 - t0)
                hi = 100.0 * (run1 - run0 + wait1 - wait0) / 1e9 / (t1 - t0)

                def ms(fn):
                    return sum(v for v, frames in traces if any(fn in f for f in frames))

                brief, work, blocked = ms("brief_loop"), ms("brief_work"), ms("blocked_wait")
                attempts = 4000.0  # 4 s at 100 Hz, 10 ms each
                if mode == "cpu":
                    share = 100.0 * brief / attempts
                    self.assertAlmostEqual(blocked, 0, delta=0.5, msg=traces[:5])
                    low = lo - 3.0
                else:
                    share = 100.0 * work / brief if brief else 0.0
                    # (go tool pprof prints values in decimal seconds or ms: sums of floats)
                    self.assertAlmostEqual(blocked, brief, delta=0.5,
                                           msg="one blocked_wait per brief_loop sample")
                    self.assertAlmostEqual(ms("main_wait"), brief, delta=0.5,
                                           msg="one main_wait per attempt")
                    livelib.within(self, "wall: attempts in the profile", brief, 3800, 4200)
                    low = lo - 6.0
                livelib.note(f"agent {mode}: brief thread {share:.1f} % (kernel: on CPU "
                             f"{lo:.1f} %, + waiting {hi:.1f} %)")
                livelib.within(self, f"agent {mode}: brief thread %", share, low, hi + 3.0)
            metrics = agent.metrics()
            for mode in targets:
                saved = agent.metric(f'pyprofd_reads_saved_total{{job="idle-{mode}"}}', metrics)
                taken = agent.metric(f'pyprofd_samples_total{{job="idle-{mode}"}}', metrics)
                livelib.note(f"agent {mode}: {saved:.0f} of {taken:.0f} samples without a read")
                livelib.within(self, f"agent {mode}: share without a read", saved / taken,
                               0.5, 1.0)
        finally:
            for t in targets.values():
                t.stop()
            if agent:
                self.assertEqual(agent.stop(), 0, agent.log())


class AgentErrorTest(unittest.TestCase):
    def test_missing_config(self):
        """`pyprofd agent --config.file` with a missing file: exit 1, the file named"""
        missing = subprocess.run([livelib.BINARY, "agent", "--config.file",
                                  os.path.join(livelib.scratch(), "missing.yml")],
                                 capture_output=True, text=True, timeout=30)
        self.assertEqual(missing.returncode, 1)
        self.assertIn("missing.yml", missing.stderr)

    def test_configmap_swap(self):
        """a ConfigMap-style symlink swap of the config file reloads it (same
        content: no reload; new content: reloaded; broken: refused, the agent
        runs on), and --log.format=json writes one JSON object per line"""
        tmp = livelib.scratch()
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        text = f"""\
profile_configs:
  - job_name: none
    relabel_configs:
      - source_labels: [__meta_process_pid]
        regex: 'no such pid'
        action: keep
server:
  listen_address: 127.0.0.1:{port}
"""
        generation = [0]

        def publish(content):
            # as the kubelet does: a new timestamped directory, a new ..data
            # symlink renamed over the old one; pyprofd.yml -> ..data/pyprofd.yml
            generation[0] += 1
            d = f"..2026_12_01_{generation[0]:04d}"
            os.mkdir(os.path.join(tmp, d))
            with open(os.path.join(tmp, d, "pyprofd.yml"), "w") as f:
                f.write(content)
            os.symlink(d, os.path.join(tmp, "..data_tmp"))
            os.rename(os.path.join(tmp, "..data_tmp"), os.path.join(tmp, "..data"))

        publish(text)
        os.symlink("..data/pyprofd.yml", os.path.join(tmp, "pyprofd.yml"))
        log_path = os.path.join(tmp, "agent.log")
        with open(log_path, "w+") as log:
            agent = subprocess.Popen([livelib.BINARY, "agent", "--config.file",
                                      os.path.join(tmp, "pyprofd.yml"), "--log.format=json"],
                                     stdout=log, stderr=subprocess.STDOUT)
            try:
                def lines():
                    log.flush()
                    with open(log_path) as f:
                        return [json.loads(line) for line in f if line.strip()]

                def wait_for(what, timeout):
                    deadline = time.monotonic() + timeout
                    while time.monotonic() < deadline:
                        if any(what in e["msg"] for e in lines()):
                            return
                        self.assertIsNone(agent.poll(), lines())
                        time.sleep(0.2)
                    self.fail(f"no '{what}' after {timeout} s: {lines()}")

                wait_for("agent started", 15)
                publish(text)  # same content, new inode: no reload
                time.sleep(7)  # more than one look (every 5 s)
                self.assertFalse([e for e in lines() if "changed on disk" in e["msg"]], lines())
                publish(text.replace("job_name: none", "job_name: renamed"))
                wait_for("changed on disk: reloading", 12)
                wait_for("configuration reloaded", 5)
                publish(text.replace("job_name: none", "job_name: [broken"))
                deadline = time.monotonic() + 12
                while time.monotonic() < deadline and \
                        sum("changed on disk" in e["msg"] for e in lines()) < 2:
                    time.sleep(0.2)
                wait_for("reload failed, keeping the running configuration", 5)
                with urllib.request.urlopen(base + "/metrics", timeout=10) as r:
                    metrics = r.read().decode()
                self.assertIn("pyprofd_config_last_reload_successful 0", metrics)
                self.assertIsNone(agent.poll())
                for e in lines():
                    self.assertEqual(sorted(e), ["level", "msg", "ts"], e)
                    self.assertRegex(e["ts"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
            finally:
                agent.terminate()
                agent.wait(timeout=15)


if __name__ == "__main__":
    livelib.run(needs=("root", "rootfs", "go", "promtool"))
