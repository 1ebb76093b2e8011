# SPDX-License-Identifier: MIT
"""Integration test of the Parca exporter: `pyprofd agent` pushing to real gRPC servers.

One agent samples hotspot.py under CPython 3.13 (chroot), 3.14 (container)
and 3.15 (chroot) in cpu mode with a 1 s profile interval, and pushes every
window to four `type: parca` endpoints at once, each a receiver from
parca_receiver.py (Debian's python3-grpcio, so HTTP/2, the gRPC framing and
the trailers are checked by an independent implementation):

    plain    h2c (http://), bearer token from authorization.credentials_file
             required (UNAUTHENTICATED otherwise)
    tls      https:// with a certificate from a CA made by the test
             (tls_config.ca_file)
    flaky    answers UNAVAILABLE to the first three calls, then accepts
    invalid  answers INVALID_ARGUMENT to every call

The agent also writes every window to its storage directory; those files
are the list of intervals that must arrive. After a few seconds the agent is
stopped with SIGTERM (it drains its queues before exiting), all in
setUpClass; the tests only read what was collected, so their order does not
matter:

    labels      every profile arrives with __name__=process_cpu, job and the
                target's service_name, no other reserved label; one series
                with one sample per call, normalized set, gzipped raw_profile
    pprof       every received pprof parses (python3-protobuf) and shows its
                target's hot function and no other's; `go tool pprof -top`
                reads all of them (one run per target over every receiver's
                profiles) and shows the hot function
    bearer      every call to `plain` carried "Bearer <token>"; the others none
    tls         the TLS receiver got every interval
    retried     UNAVAILABLE three times, then OK: every interval arrives, none
                twice, and exactly three calls were refused
    dropped     INVALID_ARGUMENT: one attempt per profile, never retried; the
                server's grpc-message (percent-encoded on the wire) is logged
                decoded
    (labels also checks that every interval stored arrived at plain, none twice)

Run by ctest as test_parca_live (label integration), or by hand:
    /usr/bin/python3 tests/integration/test_parca.py [-v]
The last line of the output is "N passed, N failed, N skipped" (livelib.run()).
"""

import glob
import gzip
import json
import os
import signal
import socket
import subprocess
import sys
import time
import unittest
import urllib.request

import grpc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import livelib  # noqa: E402
import parca_receiver  # noqa: E402

RUN_S = 6  # how long the agent pushes before SIGTERM
HOT = {"3.13": "hot_alpha", "3.14": "hot_beta", "3.15": "hot_gamma"}
WHICH = {"3.13": "alpha", "3.14": "beta", "3.15": "gamma"}
REFUSAL = "receiver: refused on purpose — «bad profile» 100%"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ParcaTest(unittest.TestCase):
    agent = None
    receivers = {}

    @classmethod
    def setUpClass(cls):
        cls.tmp = livelib.scratch()
        cls.token = f"prc{os.getpid()}"
        cls.secret = f"parca-secret-{os.getpid()}"
        cls.store = os.path.join(cls.tmp, "store")
        cls.port = free_port()
        try:
            cls.messages = parca_receiver.load_proto(parca_receiver.PROFILESTORE_PROTO, cls.tmp)
            cls.pprof = parca_receiver.load_proto(parca_receiver.PPROF_PROTO, cls.tmp)[
                "perftools.profiles.Profile"]
            ca_file, key, crt = parca_receiver.make_ca(cls.tmp)
            R = parca_receiver.ParcaReceiver
            cls.receivers = {
                "plain": R(cls.messages, token=cls.secret).start(),
                "tls": R(cls.messages, tls=(key, crt)).start(),
                "flaky": R(cls.messages, fail_first=3).start(),
                "invalid": R(cls.messages, always=grpc.StatusCode.INVALID_ARGUMENT).start(),
            }
            secret_file = os.path.join(cls.tmp, "parca-token")
            with open(secret_file, "w") as f:
                f.write(cls.secret + "\n")
            rx = cls.receivers
            config = f"""\
global:
  sample_rate: 100
  mode: cpu
  profile_interval: 1s
discovery:
  refresh_interval: 1s
  min_process_age: 200ms
profile_configs:
  - job_name: parca-test
    relabel_configs:
      - source_labels: [__meta_process_commandline]
        regex: '.*/{cls.token}_[a-z0-9_]+[.]py.*'
        action: keep
storage:
  directory: {cls.store}
server:
  listen_address: 127.0.0.1:{cls.port}
remote_write:
  - name: plain
    type: parca
    url: {rx["plain"].url}
    authorization:
      credentials_file: {secret_file}
    queue: {{min_backoff: 100ms, max_backoff: 1s}}
  - name: tls
    type: parca
    url: {rx["tls"].url}
    tls_config:
      ca_file: {ca_file}
    queue: {{min_backoff: 100ms, max_backoff: 1s}}
  - name: flaky
    type: parca
    url: {rx["flaky"].url}
    queue: {{min_backoff: 100ms, max_backoff: 1s}}
  - name: invalid
    type: parca
    url: {rx["invalid"].url}
    queue: {{min_backoff: 100ms, max_backoff: 1s}}
"""
            cls.config = os.path.join(cls.tmp, "pyprofd.yml")
            with open(cls.config, "w") as f:
                f.write(config)
            cls.targets = {}
            for version, mode in (("3.13", "chroot"), ("3.14", "container"), ("3.15", "chroot")):
                path = os.path.join(cls.tmp, f"{cls.token}_{WHICH[version]}_"
                                    f"{version.replace('.', '')}.py")
                with open(os.path.join(livelib.TARGETS_DIR, "hotspot.py")) as src, \
                        open(path, "w") as dst:
                    dst.write(src.read())
                cls.targets[version] = livelib.start_target(cls.tmp, path, version, mode,
                                                            "--which", WHICH[version])
            cls.agent_log = open(os.path.join(cls.tmp, "agent.log"), "w+")
            cls.agent = subprocess.Popen([livelib.BINARY, "agent", "--config.file", cls.config],
                                         stdout=cls.agent_log, stderr=subprocess.STDOUT)
            cls.wait_active()
            time.sleep(RUN_S)
            cls.agent.send_signal(signal.SIGTERM)
            cls.agent_rc = cls.agent.wait(timeout=30)
            cls.collect()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        if cls.agent and cls.agent.poll() is None:
            cls.agent.kill()
            cls.agent.wait()
        livelib.stop_all()
        for rx in cls.receivers.values():
            rx.stop()
        if getattr(cls, "agent_log", None):
            cls.agent_log.close()

    # --- helpers ----------------------------------------------------------

    @classmethod
    def log(cls):
        cls.agent_log.flush()
        with open(cls.agent_log.name) as f:
            return f.read()

    @classmethod
    def wait_active(cls, timeout=20):
        """Until the three targets are active in /targets."""
        deadline = time.monotonic() + timeout
        pids = {t.pid for t in cls.targets.values()}
        active = set()
        while time.monotonic() < deadline:
            if cls.agent.poll() is not None:
                raise RuntimeError(f"the agent exited ({cls.agent.returncode}):\n{cls.log()}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{cls.port}/targets",
                                            timeout=2) as r:
                    active = {t["pid"] for t in json.loads(r.read())["targets"]
                              if t["state"] == "active"}
                if pids <= active:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"targets {pids - active} not active after {timeout} s:\n{cls.log()}")

    @classmethod
    def parse(cls, data):
        """(time_nanos, function names) of a pprof, gzipped or not."""
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        p = cls.pprof.FromString(data)
        st = p.string_table
        assert st[0] == "", "string_table[0] is not empty"
        return p.time_nanos, {st[f.name] for f in p.function}

    @classmethod
    def collect(cls):
        """The stored windows, and what each receiver got."""
        by_pid = {t.pid: cls.service_of(v) for v, t in cls.targets.items()}
        cls.stored = {}  # (service_name, time_nanos) -> path
        for path in sorted(glob.glob(os.path.join(cls.store, "parca-test-*.pb.gz"))):
            pid = int(os.path.basename(path).split("-")[2])
            with open(path, "rb") as f:
                t, _ = cls.parse(f.read())
            cls.stored[(by_pid.get(pid), t)] = path
        cls.got = {}
        for name, rx in cls.receivers.items():
            cls.got[name] = rx.snapshot()  # (attempts, accepted)

    @classmethod
    def service_of(cls, version):
        return f"{cls.token}_{WHICH[version]}_{version.replace('.', '')}"

    def keys(self, received):
        return [(r.labels.get("service_name"), self.parse(r.raw)[0]) for r in received]

    def assert_every_interval_once(self, name):
        _, accepted = self.got[name]
        keys = self.keys(accepted)
        self.assertEqual(len(keys), len(set(keys)), f"{name}: a profile arrived twice")
        self.assertEqual(set(keys), set(self.stored),
                         f"{name}: missing {sorted(set(self.stored) - set(keys))}, "
                         f"extra {sorted(set(keys) - set(self.stored))}\n{self.log()}")

    # --- tests --------------------------------------------------------------

    def test_labels(self):
        self.assertEqual(self.agent_rc, 0, self.log())
        services = {self.service_of(v) for v in HOT}
        self.assertEqual({k[0] for k in self.stored}, services)
        # at least two intervals per target (RUN_S seconds at 1 s)
        for s in services:
            self.assertGreaterEqual(len([k for k in self.stored if k[0] == s]), 2)
        for name in ("plain", "tls", "flaky", "invalid"):
            attempts, _ = self.got[name]
            self.assertTrue(attempts, f"{name}: nothing arrived\n{self.log()}")
            for r in attempts:
                self.assertEqual(r.labels.get("__name__"), "process_cpu", r.labels)
                self.assertEqual(r.labels.get("job"), "parca-test", r.labels)
                self.assertIn(r.labels.get("service_name"), services, r.labels)
                self.assertFalse([k for k in r.labels if k.startswith("__") and k != "__name__"],
                                 r.labels)
                self.assertEqual((r.n_series, r.n_samples), (1, 1))
                self.assertTrue(r.normalized)
                self.assertEqual(r.raw[:2], b"\x1f\x8b", "raw_profile is not gzipped")
        self.assert_every_interval_once("plain")

    def test_pprof(self):
        by_service = {}
        for name, (attempts, _) in self.got.items():
            for i, r in enumerate(attempts):
                service = r.labels["service_name"]
                version = next(v for v in HOT if self.service_of(v) == service)
                _, functions = self.parse(r.raw)
                self.assertIn(HOT[version], functions, f"{name}: {service}")
                for other in set(HOT.values()) - {HOT[version]}:
                    self.assertNotIn(other, functions, f"{name}: {service}")
                path = os.path.join(self.tmp, f"rx-{name}-{service}-{i}.pb.gz")
                with open(path, "wb") as f:
                    f.write(r.raw)
                by_service.setdefault(version, []).append(path)
        self.assertEqual(set(by_service), set(HOT))
        for version, paths in by_service.items():
            top = livelib.pprof_top(paths[0], self.tmp, paths[1:])
            self.assertIn(livelib.top_function(top), (HOT[version], "_spin"), top)
            self.assertIn(HOT[version], top)

    def test_bearer(self):
        for name, (attempts, _) in self.got.items():
            for r in attempts:
                if name == "plain":
                    self.assertEqual(r.metadata.get("authorization"), f"Bearer {self.secret}")
                else:
                    self.assertNotIn("authorization", r.metadata)
        attempts, accepted = self.got["plain"]
        self.assertEqual(len(attempts), len(accepted), "a call with the token was refused")

    def test_tls(self):
        self.assert_every_interval_once("tls")

    def test_retried(self):
        attempts, accepted = self.got["flaky"]
        self.assertEqual(len(attempts), len(accepted) + 3)
        self.assert_every_interval_once("flaky")
        self.assertIn("UNAVAILABLE: receiver: failing on purpose", self.log())

    def test_dropped(self):
        attempts, accepted = self.got["invalid"]
        self.assertEqual(accepted, [])
        keys = self.keys(attempts)
        self.assertEqual(len(keys), len(set(keys)), "a refused profile was sent again")
        self.assertEqual(set(keys), set(self.stored))
        self.assertIn(f"INVALID_ARGUMENT: {REFUSAL}", self.log())


if __name__ == "__main__":
    livelib.run(needs=("root", "rootfs", "go", "openssl"))
