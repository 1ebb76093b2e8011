# SPDX-License-Identifier: MIT
"""Integration test of pyprofd's Grafana Pyroscope exporter: `pyprofd agent`
on live CPython 3.13, 3.14 and 3.15 targets pushing to test receivers that
follow the upstream API (tests/integration/pyroscope_receiver.py).

Two agents run for the whole test, with a 2 s profile interval and cpu mode:

  agent 1 samples hotspot.py under 3.13 (chroot), 3.14 (container) and 3.15
  (chroot) and has three endpoints:
      main    push API, basic auth from a password file, tenant, a custom
              header, remote_timeout 2s, backoff 200ms..2s, no retry limit
      tls     push API over https with a CA made by this test (ca_file) and a
              bearer token file
      ingest  api: ingest (the legacy /ingest form)
  agent 2 samples the 3.13 target only and pushes to an endpoint that is down
  from the start, with queue.max_profiles 2, and to "bounded": max_profiles
  3, backoff 200ms..5m (a profile every 2 s).

The checks share the agents and the receivers and build on each other
(complete checks that what retry and down held back arrived later, and that
only the profile refused turned away is missing), so they are one scenario
(livelib.Scenario): steps run in the order below, each reported by name,
with its time, and a failing step does not stop the ones after it.

    normal        every endpoint gets profiles of all three targets with
                  __name__=process_cpu, service_name, job, the external label,
                  and nothing else starting with "__"; auth, tenant and the
                  custom header are present; the ingest form is right
    retry         the receiver answers 503 three times: those profiles come
                  again later (checked in complete)
    refused       a 400 is not retried: that profile is never sent again,
                  counted as permanent_error
    hang          a receiver that never answers trips remote_timeout (2s)
                  while sampling goes on (pyprofd_samples_total grows)
    overflow      agent 2: the oldest profiles were dropped and counted
                  (queue_full); once the receiver is up, the newest arrive
    down          the main receiver is down for 30 s, then back
    complete      per target, the main receiver saw every interval from the
                  first one on exactly once (time ranges back to back), but
                  the refused one; every stored pprof decodes with
                  `go tool pprof`; /metrics passes `promtool check metrics`
    bounded       the bounded receiver is down until its queue (3) has
                  overflowed three times, about 12 s, long enough for the
                  backoff to grow past 3 s, and comes back just after a
                  profile was dropped: the full queue was tried before each
                  arrival, the first delivery follows within one interval
                  (the backoff never outlasts the room in the queue),
                  nothing made after that is dropped, and the profiles lost
                  are exactly the oldest ones made while it was down, all
                  but the 3 the queue holds

Run by ctest as test_pyroscope_live (label integration), or by hand:
    /usr/bin/python3 tests/integration/test_pyroscope.py [-v]
The last line of the output is "N passed, N failed, N skipped" (livelib.run()).
"""

import base64
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import livelib  # noqa: E402
import pyroscope_receiver as pr  # noqa: E402

PROMTOOL = "/usr/bin/promtool"
INTERVAL_S = 2
DOWN_S = 30
BOUNDED_Q = 3
HOT = {"3.13": "hot_alpha", "3.14": "hot_beta", "3.15": "hot_gamma"}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(cond, timeout, what, step=0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(step)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def make_ca(tmp):
    """A CA and a server certificate for 127.0.0.1 signed by it."""
    def run(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=tmp)
    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
        "-days", "2", "-subj", "/CN=pyprofd test CA")
    run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "srv.key", "-out", "srv.csr",
        "-subj", "/CN=127.0.0.1")
    with open(os.path.join(tmp, "san.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    run("x509", "-req", "-in", "srv.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", "srv.pem", "-days", "2", "-extfile", "san.ext")
    return (os.path.join(tmp, "ca.pem"), os.path.join(tmp, "srv.pem"),
            os.path.join(tmp, "srv.key"))


class Agent:
    def __init__(self, tmp, name, config):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.path = os.path.join(tmp, f"{name}.yml")
        with open(self.path, "w") as f:
            f.write(config.replace("@PORT@", str(self.port)))
        self.log = open(os.path.join(tmp, f"{name}.log"), "w+")
        self.proc = subprocess.Popen([livelib.BINARY, "agent", "--config.file", self.path],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"agent {name} exited:\n{self.text()}")
            try:
                with urllib.request.urlopen(self.base + "/-/healthy", timeout=2):
                    return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"agent {name} does not answer:\n{self.text()}")

    def text(self):
        self.log.flush()
        with open(self.log.name) as f:
            return f.read()

    def metrics(self):
        with urllib.request.urlopen(self.base + "/metrics", timeout=30) as r:
            return r.read()

    def metric(self, sample):
        """The value of `sample` (name{labels} exactly as written), or None."""
        for line in self.metrics().decode().splitlines():
            if line.startswith(sample + " "):
                return float(line.rsplit(" ", 1)[1])
        return None

    def metric_sum(self, name, **labels):
        total = 0.0
        for line in self.metrics().decode().splitlines():
            m = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)$", line)
            if not m or m.group(1) != name:
                continue
            got = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
            if all(got.get(k) == v for k, v in labels.items()):
                total += float(m.group(3))
        return total

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


class PyroscopeTest(livelib.Scenario):
    agents = []

    @classmethod
    def setUpClass(cls):
        cls.tmp = livelib.scratch()
        cls.token = f"pyr{os.getpid()}"
        cls.targets = {}
        cls.receivers = []
        try:
            ca, cert, key = make_ca(cls.tmp)
            pwfile = os.path.join(cls.tmp, "password")
            with open(pwfile, "w") as f:
                f.write("s3cret\n")
            tokfile = os.path.join(cls.tmp, "token")
            with open(tokfile, "w") as f:
                f.write("tok-123\n")
            cls.main = pr.Receiver(os.path.join(cls.tmp, "main"), basic=("user", "s3cret"),
                                   tenant="tenant-1", required_headers={"X-Test": "yes"}).start()
            cls.tls = pr.Receiver(os.path.join(cls.tmp, "tls"), certfile=cert, keyfile=key,
                                  bearer="tok-123").start()
            cls.ingest = pr.Receiver(os.path.join(cls.tmp, "ingest")).start()
            cls.overflow = pr.Receiver(os.path.join(cls.tmp, "overflow"), port=free_port())
            cls.bounded = pr.Receiver(os.path.join(cls.tmp, "bounded")).start()
            cls.receivers = [cls.main, cls.tls, cls.ingest, cls.overflow, cls.bounded]
            for version, mode, which in (("3.13", "chroot", "alpha"),
                                         ("3.14", "container", "beta"),
                                         ("3.15", "chroot", "gamma")):
                cls.targets[version] = cls.start_hotspot(version, mode, which)
            common = f"""\
global:
  sample_rate: 100
  mode: cpu
  profile_interval: {INTERVAL_S}s
  external_labels:
    cluster: itest
discovery:
  refresh_interval: 1s
  min_process_age: 200ms
server:
  listen_address: 127.0.0.1:@PORT@
"""
            cls.agent1 = Agent(cls.tmp, "agent1", common + f"""\
profile_configs:
  - job_name: pyro-test
    relabel_configs:
      - source_labels: [__meta_process_commandline]
        regex: '.*/{cls.token}_[a-z0-9_]+[.]py.*'
        action: keep
remote_write:
  - name: main
    type: pyroscope
    url: http://127.0.0.1:{cls.main.port}/
    remote_timeout: 2s
    tenant_id: tenant-1
    basic_auth:
      username: user
      password_file: {pwfile}
    headers:
      X-Test: "yes"
    queue:
      max_profiles: 500
      min_backoff: 200ms
      max_backoff: 2s
      max_retries: 0
  - name: tls
    type: pyroscope
    url: https://127.0.0.1:{cls.tls.port}
    authorization:
      credentials_file: {tokfile}
    tls_config:
      ca_file: {ca}
  - name: ingest
    type: pyroscope
    api: ingest
    url: http://127.0.0.1:{cls.ingest.port}
""")
            cls.agents.append(cls.agent1)
            if b"pyprofd_push_queue_length" not in cls.agent1.metrics():
                raise RuntimeError("pyprofd agent has no push exporters: remote_write is not "
                                   "wired into the agent (cli/agent.c)")
            cls.agent2_started = time.time()
            cls.agent2 = Agent(cls.tmp, "agent2", common + f"""\
profile_configs:
  - job_name: pyro-overflow
    relabel_configs:
      - source_labels: [__meta_process_commandline]
        regex: '.*/{cls.token}_alpha_[a-z0-9_]+[.]py.*'
        action: keep
remote_write:
  - name: overflow
    type: pyroscope
    url: http://127.0.0.1:{cls.overflow.port}
    queue:
      max_profiles: 2
      min_backoff: 100ms
      max_backoff: 500ms
      max_retries: 0
  - name: bounded
    type: pyroscope
    url: http://127.0.0.1:{cls.bounded.port}
    queue:
      max_profiles: {BOUNDED_Q}
      min_backoff: 200ms
      max_backoff: 5m
      max_retries: 0
""")
            cls.agents.append(cls.agent2)
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        for a in cls.agents:
            a.stop()
        for r in cls.receivers:
            r.set_hang(False)
            r.stop()
        livelib.stop_all()

    @classmethod
    def start_hotspot(cls, version, mode, which):
        path = os.path.join(cls.tmp, f"{cls.token}_{which}_{version.replace('.', '')}.py")
        with open(os.path.join(livelib.TARGETS_DIR, "hotspot.py")) as src, open(path, "w") as dst:
            dst.write(src.read())
        return livelib.start_target(cls.tmp, path, version, mode, "--which", which)

    # --- helpers ------------------------------------------------------------

    def service(self, version):
        return f"{self.token}_{HOT[version].split('_')[1]}_{version.replace('.', '')}"

    def by_service(self, records):
        out = {}
        for r in records:
            out.setdefault(r.labels.get("service_name"), []).append(r)
        return out

    def wait_all_targets(self, receiver, timeout=20):
        services = {self.service(v) for v in self.targets}
        wait_for(lambda: services <= set(self.by_service(receiver.snapshot()[0])), timeout,
                 f"profiles of {services} at {receiver.dir}:\n{self.agent1.text()}")

    # --- tests ----------------------------------------------------------------

    def step_normal(self):
        for rcv in (self.main, self.tls, self.ingest):
            self.wait_all_targets(rcv)
        for rec in self.main.snapshot()[0] + self.tls.snapshot()[0]:
            self.assertEqual(rec.api, "push")
            lb = rec.labels
            self.assertEqual(lb["__name__"], "process_cpu", lb)
            self.assertEqual(lb["job"], "pyro-test", lb)
            self.assertEqual(lb["cluster"], "itest", lb)
            self.assertTrue(lb["service_name"].startswith(self.token), lb)
            self.assertFalse([k for k in lb if k.startswith("__") and k != "__name__"], lb)
            self.assertEqual(rec.headers["Content-Type"], "application/proto")
            self.assertGreater(rec.duration_nanos, 0)
        rec = self.main.snapshot()[0][0]
        self.assertEqual(rec.headers["Authorization"],
                         "Basic " + base64.b64encode(b"user:s3cret").decode())
        self.assertEqual(rec.headers["X-Scope-OrgID"], "tenant-1")
        self.assertEqual(rec.headers["X-Test"], "yes")
        self.assertEqual(self.tls.snapshot()[0][0].headers["Authorization"], "Bearer tok-123")
        for rec in self.ingest.snapshot()[0]:
            self.assertEqual(rec.api, "ingest")
            q = rec.query
            self.assertEqual(q["format"], "pprof")
            self.assertEqual(q["spyName"], "pyprofd")
            self.assertEqual(q["sampleRate"], "100")
            self.assertEqual(rec.labels["job"], "pyro-test")
            self.assertEqual(rec.labels["cluster"], "itest")
            self.assertEqual(rec.from_ns, rec.time_nanos // 10**9 * 10**9)
            self.assertEqual(rec.until_ns,
                             (rec.time_nanos + rec.duration_nanos) // 10**9 * 10**9)
        # each target's profile shows its own hot function
        by = self.by_service(self.main.snapshot()[0])
        for version in self.targets:
            top = livelib.pprof_top(by[self.service(version)][-1].path, self.tmp)
            self.assertIn(HOT[version], top, f"python{version}:\n{top}")

    def step_retry(self):
        before = len(self.main.snapshot()[0])
        with self.main.lock:
            self.main.fail_next.extend(["unavailable"] * 3)
        wait_for(lambda: not self.main.fail_next, 15, "three 503 answers")
        wait_for(lambda: len(self.main.snapshot()[0]) >= before + 3, 15, "deliveries after 503")
        self.assertGreaterEqual(
            self.agent1.metric('pyprofd_push_failures_total{endpoint="main",code="503"}'), 3)
        self.assertGreaterEqual(self.agent1.metric('pyprofd_push_retries_total{endpoint="main"}'),
                                3)

    def step_refused(self):
        with self.main.lock:
            self.main.fail_next.append("invalid_argument")
        wait_for(lambda: not self.main.fail_next, 15, "a 400 answer")
        refused = [k for code, k in self.main.rejected if code == "invalid_argument"]
        self.assertEqual(len(refused), 1, self.main.rejected)
        time.sleep(2 * INTERVAL_S)
        key = refused[0]
        self.assertNotIn(key, [r.key() for r in self.main.snapshot()[0]])
        self.assertEqual(self.agent1.metric('pyprofd_push_dropped_profiles_total'
                                            '{endpoint="main",reason="permanent_error"}'), 1)
        self.assertEqual(
            self.agent1.metric('pyprofd_push_failures_total{endpoint="main",code="400"}'), 1)

    def step_hang(self):
        samples = lambda: self.agent1.metric_sum("pyprofd_samples_total")  # noqa: E731
        self.main.set_hang(True)
        try:
            time.sleep(0.5)
            s0 = samples()
            wait_for(lambda: self.agent1.metric(
                'pyprofd_push_failures_total{endpoint="main",code="timeout"}'), 10,
                "a timeout against a receiver that never answers")
            s1 = samples()
            livelib.within(self, "samples taken while the push hung", s1 - s0, 101, None,
                           "sampling stalled while the push hung")
        finally:
            self.main.set_hang(False)

    def step_overflow(self):
        elapsed = time.time() - self.agent2_started
        if elapsed < 5 * INTERVAL_S:
            time.sleep(5 * INTERVAL_S - elapsed)
        a = self.agent2
        dropped = a.metric('pyprofd_push_dropped_profiles_total'
                           '{endpoint="overflow",reason="queue_full"}')
        self.assertGreaterEqual(dropped, 1, a.text())
        self.assertGreater(a.metric('pyprofd_push_dropped_bytes_total'
                                    '{endpoint="overflow",reason="queue_full"}'), 0)
        self.assertLessEqual(a.metric('pyprofd_push_queue_length{endpoint="overflow"}'), 3)
        self.assertGreaterEqual(
            a.metric_sum("pyprofd_push_failures_total", endpoint="overflow", code="connect"), 1)
        self.overflow.start()
        recs = wait_for(lambda: len(self.overflow.snapshot()[0]) >= 2 and
                        self.overflow.snapshot()[0], 10, "the queued profiles")
        first = min(r.time_nanos for r in recs) / 1e9
        # the oldest were dropped: what arrives starts well after the agent did
        self.assertGreater(first, self.agent2_started + 2 * INTERVAL_S,
                           f"{recs} (agent 2 started at {self.agent2_started})")

    def step_down(self):
        self.main.stop()
        time.sleep(DOWN_S)
        queued = self.agent1.metric('pyprofd_push_queue_length{endpoint="main"}')
        self.assertGreaterEqual(queued, DOWN_S // INTERVAL_S)
        self.main.start()
        wait_for(lambda: self.agent1.metric('pyprofd_push_queue_length{endpoint="main"}') == 0,
                 20, "the queue to drain")
        self.assertEqual(self.agent1.metric('pyprofd_push_dropped_profiles_total'
                                            '{endpoint="main",reason="queue_full"}'), 0)

    def step_complete(self):
        records = self.main.snapshot()[0]
        keys = [r.key() for r in records]
        self.assertEqual(len(keys), len(set(keys)), "a profile arrived twice")
        refused = {k for code, k in self.main.rejected if code == "invalid_argument"}
        by = self.by_service(records)
        for version in self.targets:
            recs = sorted(by[self.service(version)], key=lambda r: r.time_nanos)
            self.assertGreater(len(recs), DOWN_S // INTERVAL_S)
            for prev, cur in zip(recs, recs[1:]):
                gap = cur.time_nanos - (prev.time_nanos + prev.duration_nanos)
                if abs(gap) > 200_000_000:
                    # only the refused profile may be missing
                    missing = [k for k in refused if k[1] > prev.time_nanos and
                               k[1] < cur.time_nanos and
                               dict(k[0]).get("service_name") == self.service(version)]
                    self.assertTrue(missing, f"python{version}: gap of {gap / 1e9:.3f} s "
                                    f"between {prev} and {cur}")
        for rcv in (self.main, self.tls, self.ingest, self.overflow):
            files = [r.path for r in rcv.snapshot()[0]]
            self.assertTrue(files)
            out = subprocess.run([livelib.go_binary(), "tool", "pprof", "-top", *files],
                                 capture_output=True, text=True, timeout=300,
                                 env=livelib.go_env(self.tmp))
            self.assertEqual(out.returncode, 0, f"{rcv.dir}: {out.stderr[-2000:]}")
        for a in self.agents:
            check = subprocess.run([PROMTOOL, "check", "metrics"], input=a.metrics(),
                                   capture_output=True, timeout=60)
            self.assertEqual(check.returncode, 0, check.stdout + check.stderr)

    def step_bounded(self):
        a, rcv = self.agent2, self.bounded
        dropped = lambda: a.metric('pyprofd_push_dropped_profiles_total'  # noqa: E731
                                   '{endpoint="bounded",reason="queue_full"}')
        failed = lambda: a.metric_sum("pyprofd_push_failures_total",  # noqa: E731
                                      endpoint="bounded")
        count = lambda: len(rcv.snapshot()[0])  # noqa: E731
        self.assertEqual(dropped(), 0)
        # down right after a delivery: nothing is in flight or queued
        n0 = count()
        wait_for(lambda: count() > max(n0, 1), 10, f"profiles at {rcv.dir}:\n{a.text()}",
                 step=0.02)
        rcv.stop()
        t_down = time.monotonic()
        n_before = count()
        # the queue fills (BOUNDED_Q intervals), then overflows at every
        # arrival; by then the backoff has grown past 3 s
        d1 = wait_for(dropped, (BOUNDED_Q + 2) * INTERVAL_S, "the first queue_full drop",
                      step=0.02)
        f1 = failed()
        # up right after the second drop from then on, so that the next
        # profile is an interval away
        d_up = wait_for(lambda: dropped() >= d1 + 2 and dropped(), 3 * INTERVAL_S + 2,
                        "two more queue_full drops", step=0.02)
        f_up = failed()
        rcv.start()
        t_up, t_up_epoch = time.monotonic(), time.time()
        # the full queue was tried before each arrival, not after a backoff
        # grown to the length of the outage
        livelib.within(self, f"bounded: attempts in the last {d_up - d1:.0f} intervals of "
                       f"{t_up - t_down:.1f} s down", f_up - f1, 2, None)
        wait_for(lambda: count() > n_before, 4 * INTERVAL_S, f"a delivery:\n{a.text()}",
                 step=0.02)
        first = time.monotonic() - t_up
        wait_for(lambda: a.metric('pyprofd_push_queue_length{endpoint="bounded"}') == 0, 10,
                 "the queue to drain")
        time.sleep(INTERVAL_S + 0.5)
        livelib.within(self, "bounded: first delivery after the receiver came back (s)", first,
                       None, INTERVAL_S + 1)
        self.assertEqual(dropped(), d_up, "profiles dropped after the receiver came back")
        # what was delivered: back-to-back windows but for one hole, right
        # after the last one before the outage, of exactly the dropped ones;
        # of the profiles made while down, the newest BOUNDED_Q arrived
        recs = sorted(rcv.snapshot()[0], key=lambda r: r.time_nanos)
        self.assertEqual(len({r.key() for r in recs}), len(recs), "a profile arrived twice")
        holes = []
        for i in range(n_before, len(recs)):  # from the last one before the outage
            prev, cur = recs[i - 1], recs[i]
            gap = cur.time_nanos - (prev.time_nanos + prev.duration_nanos)
            if abs(gap) > 200_000_000:
                holes.append((i, round(gap / (INTERVAL_S * 1e9))))
        self.assertEqual(holes, [(n_before, d_up)], recs)
        # (a window's nominal end may be a few ms after it was pushed)
        during = [r for r in recs[n_before:]
                  if (r.time_nanos + r.duration_nanos / 2) / 1e9 < t_up_epoch]
        self.assertEqual(len(during), BOUNDED_Q, (recs, t_up_epoch))


if __name__ == "__main__":
    livelib.run(needs=("root", "rootfs", "go", "promtool", "openssl"))
