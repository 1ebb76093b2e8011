# SPDX-License-Identifier: MIT
"""gunicorn's respawned workers (issue 38, items 3 and 4): every worker that
serves a request is sampled, also one forked a moment ago.

Debian's gunicorn (20.1, on Debian 12's python3.11) is a pre-fork server: a
master forks its workers (no exec), and with --max-requests a worker exits
after that many requests and the master forks a new one. The agent must
notice each new worker from its fork (the proc connector's fork event, or the
PID poll) and sample it from then until it exits, its last window flushed.

The agent runs first, with the shipped discovery defaults, a cpu-mode job
keeping the processes whose command line names this run's app module (a
token in its name: the master and its workers) and storage in a temporary
directory. Then gunicorn serves a Flask app (app:index runs busy_handler(),
20 ms of CPU, and returns os.getpid()) with 2 sync workers and
--max-requests 10, under a bounded load: REQUESTS requests from CLIENTS
threads, so that about REQUESTS / 10 workers serve in turn. Checks:

    - every worker that served a request (the PIDs in the answers), the
      respawned ones included, has a profile in storage with samples in
      busy_handler (the exited ones flushed at their exit, the last two at
      gunicorn's shutdown)
    - pyprofd_target_start_delay_seconds over the load (the difference of
      two scrapes: the workers forked meanwhile) has one observation per
      forked worker, each within 250 ms of its fork
    - /metrics passes `promtool check metrics`

About 10 s. Environment: as the other drivers (livelib: PYPROFD_BINARY,
...). Skipped (77) without root, promtool, gunicorn or python3-flask. Run by
ctest as test_gunicorn_live (label integration), or by hand:
    /usr/bin/python3 tests/integration/test_gunicorn.py [-v]
"""

import glob
import os
import signal
import subprocess
import sys
import threading
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import livelib  # noqa: E402

GUNICORN = "/usr/bin/gunicorn"
PROMTOOL = "/usr/bin/promtool"
MAX_REQUESTS = 10
REQUESTS = 100
CLIENTS = 2
FORK_WITHIN = 0.25  # s: a bucket of the start delay histogram

APP = '''\
import os
import time

from flask import Flask

app = Flask(__name__)


def busy_handler(seconds):
    """The recognisable work: burns @seconds of CPU time."""
    end = time.process_time() + seconds
    n = 0
    while time.process_time() < end:
        n += 1
    return n


@app.route("/")
def index():
    busy_handler(0.02)
    return str(os.getpid())
'''


def gunicorn_missing():
    if not os.access(GUNICORN, os.X_OK):
        return f"no {GUNICORN} (Debian's gunicorn: scripts/bootstrap.sh)"
    if subprocess.run(["/usr/bin/python3", "-c", "import flask"],
                      capture_output=True).returncode != 0:
        return "no flask for /usr/bin/python3 (Debian's python3-flask)"
    return None


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return sorted(int(p) for p in f.read().split())
    except OSError:
        return []


class Gunicorn:
    """gunicorn serving APP from @tmp with 2 sync workers and --max-requests."""

    def __init__(self, tmp, module):
        self.port = livelib.free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.log = os.path.join(tmp, "gunicorn.log")
        cmd = [GUNICORN, "--workers", "2", "--worker-class", "sync",
               "--max-requests", str(MAX_REQUESTS), "--bind", f"127.0.0.1:{self.port}",
               "--chdir", tmp, "--graceful-timeout", "10", "--log-level", "info",
               f"{module}:app"]
        with open(self.log, "w") as out:
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, cwd=tmp, env=livelib.TARGET_ENV)
        self.master = self.proc.pid
        self.target = livelib.Target("gunicorn", "3.11", "host", self.master, self.log,
                                     stop=self.stop)

    def wait_ready(self, served, timeout=30):
        """The two first workers, once one of them answered."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"gunicorn exited ({self.proc.returncode}):\n"
                                   f"{self.read_log()}")
            workers = children(self.master)
            if len(workers) == 2:
                try:
                    with urllib.request.urlopen(self.url, timeout=5) as r:
                        pid = int(r.read())
                    served[pid] = served.get(pid, 0) + 1
                    return workers
                except (OSError, ValueError):
                    pass
            time.sleep(0.1)
        raise RuntimeError(f"gunicorn not serving on {self.url} after {timeout} s:\n"
                           f"{self.read_log()}")

    def read_log(self):
        with open(self.log, errors="replace") as f:
            return f.read()[-4000:]

    def stop(self):
        """SIGTERM: the workers finish and exit (their windows flush), then the master."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                for pid in children(self.master) + [self.master]:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                self.proc.wait()


class Load:
    """CLIENTS threads sending REQUESTS requests in all, back to back; counts the
    requests each worker (the PID in the body) served."""

    def __init__(self, url, served):
        self.url, self.served = url, served
        self.errors = []
        self.left = REQUESTS
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.loop, daemon=True) for _ in range(CLIENTS)]
        for t in self.threads:
            t.start()

    def loop(self):
        while True:
            with self.lock:
                if self.left <= 0:
                    return
                self.left -= 1
            try:
                with urllib.request.urlopen(self.url, timeout=20) as r:
                    pid = int(r.read())
                with self.lock:
                    self.served[pid] = self.served.get(pid, 0) + 1
            except (OSError, ValueError) as e:
                with self.lock:
                    self.errors.append(repr(e))

    def join(self, timeout):
        deadline = time.monotonic() + timeout
        for t in self.threads:
            t.join(max(0.0, deadline - time.monotonic()))
        return not any(t.is_alive() for t in self.threads)


def busy_samples(files):
    """(samples in the profiles at @files, those with busy_handler on the stack)."""
    total = busy = 0
    for path in files:
        prof = livelib.pprof_read(path)
        names = {lid: {prof["functions"][fid][0] for fid, _ in lines}
                 for lid, lines in prof["locations"].items()}
        for values, locs, _ in prof["samples"]:
            total += values[0]
            if any("busy_handler" in names.get(lid, ()) for lid in locs):
                busy += values[0]
    return total, busy


class GunicornTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        why = gunicorn_missing()
        if why:
            raise unittest.SkipTest(why)

    def test_respawned_workers(self):
        """every worker that served, respawned ones included, has busy_handler in a stored
        profile; each worker forked under load was first sampled within 250 ms"""
        tmp = livelib.scratch()
        token = f"gun{os.getpid()}"
        module = f"{token}_app"
        with open(os.path.join(tmp, f"{module}.py"), "w") as f:
            f.write(APP)
        store = os.path.join(tmp, "store")
        os.makedirs(store)
        agent = livelib.Agent(tmp, "agent", f"""\
global:
  mode: cpu
profile_configs:
  - job_name: gunicorn
    relabel_configs:
      - source_labels: [__meta_process_commandline]
        regex: '.* {module}:app( .*)?'
        action: keep
storage:
  directory: {store}
server:
  listen_address: 127.0.0.1:{{port}}
""")
        srv = None
        try:
            agent.wait_http()
            deadline = time.monotonic() + 10
            while not [ln for ln in agent.metrics().splitlines()
                       if ln.startswith("pyprofd_discovery_watch_info{") and ln.endswith(" 1")]:
                self.assertLess(time.monotonic(), deadline, "no pyprofd_discovery_watch_info")
                time.sleep(0.1)
            source = [ln for ln in agent.metrics().splitlines()
                      if ln.startswith("pyprofd_discovery_watch_info{") and ln.endswith(" 1")]
            served = {}
            srv = Gunicorn(tmp, module)
            first = srv.wait_ready(served)
            for pid in [srv.master] + first:
                agent.wait_state(pid, "active", timeout=5)
            livelib.note(f"{source[0]}; master {srv.master}, first workers {first}")
            time.sleep(0.2)
            before = agent.metrics()
            # which workers /targets lists as active, polled while the load runs
            active_seen, stop_poll = {}, threading.Event()

            def poll():
                while not stop_poll.is_set():
                    try:
                        for pid, e in agent.targets().items():
                            if e["state"] == "active":
                                active_seen.setdefault(pid, time.monotonic())
                    except (OSError, RuntimeError):
                        pass
                    stop_poll.wait(0.05)

            poller = threading.Thread(target=poll, daemon=True)
            poller.start()
            t0 = time.monotonic()
            load = Load(srv.url, served)
            finished = load.join(60)
            spread = time.monotonic() - t0
            time.sleep(0.5)  # the last worker forked is looked at
            stop_poll.set()
            poller.join()
            after = agent.metrics()
            self.assertTrue(finished, "the load did not finish in 60 s")
            forked = [p for p in children(srv.master) if p not in first]
            livelib.note(f"{REQUESTS} requests from {CLIENTS} clients in {spread:.1f} s; "
                         f"served per worker: {served}; errors: {load.errors[:5]}")
            self.assertFalse(load.errors, "requests that failed")
            respawned = sorted(set(served) - set(first))
            livelib.within(self, "respawned workers that served",
                           len(respawned), REQUESTS // MAX_REQUESTS - 3, None)
            missed_live = [p for p in served if p not in active_seen]
            livelib.note(f"workers never seen active in /targets (polled every 50 ms): "
                         f"{missed_live}")

            # start delays: the workers forked during the load
            delays = livelib.start_delays(after, before, ["gunicorn"])
            self.assertTrue(delays, "no pyprofd_target_start_delay_seconds in /metrics")
            if None in delays:
                livelib.note("pyprofd_target_start_delay_seconds has no job label: the agent's "
                             "one histogram (its one job keeps gunicorn's processes only)")
            h = next(iter(delays.values()))
            livelib.note(f"start delay of the workers forked under load: "
                         f"{livelib.delays_text(h)}")
            # the respawned workers that served, and the one forked last that may not have
            livelib.within(self, "observations over the load", h["count"],
                           len(respawned), len(respawned) + len(forked) + 2)
            livelib.within(self, f"forked workers first sampled within "
                           f"{FORK_WITHIN * 1000:g} ms (share)",
                           livelib.histogram_share(h, FORK_WITHIN), 1.0, 1.0)
            status, body = agent.get("/metrics")
            self.assertEqual(status, 200)
            check = subprocess.run([PROMTOOL, "check", "metrics"], input=body,
                                   capture_output=True, timeout=60)
            self.assertEqual(check.returncode, 0, check.stdout + check.stderr)

            # every worker that served: its profile, flushed at its exit
            srv.target.stop()
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:
                if all(glob.glob(os.path.join(store, f"gunicorn-{p}-*.pb.gz")) for p in served) \
                        and not [p for p in served if p in agent.targets()]:
                    break
                time.sleep(0.2)
            time.sleep(0.5)  # a second file of a window cut meanwhile
            bad = {}
            for pid in sorted(served):
                files = glob.glob(os.path.join(store, f"gunicorn-{pid}-*.pb.gz"))
                total, busy = busy_samples(files)
                if busy == 0:
                    bad[pid] = (len(files), total)
                livelib.note(f"worker {pid}{' (respawned)' if pid in respawned else ''}: "
                             f"{served[pid]} requests, {len(files)} file(s), {total} samples, "
                             f"{busy} in busy_handler")
            self.assertFalse(bad, f"workers that served without busy_handler in storage "
                                  f"(files, samples): {bad}\n{agent.log()[-3000:]}")
        finally:
            if srv is not None:
                srv.target.stop()
            rc = agent.stop()
        self.assertEqual(rc, 0, agent.log()[-3000:])


if __name__ == "__main__":
    livelib.run(needs=("root", "promtool"))
