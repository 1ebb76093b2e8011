# SPDX-License-Identifier: MIT
"""uWSGI's forked workers (issue 38, item 2): thread ids that belong to the process.

uWSGI loads the application in its master and forks the workers without
CPython's after-fork hook (unless --py-call-osafterfork), so each worker's
thread state still names the master's thread (native_thread_id). pyprofd
resolves it from the TID glibc keeps, updated by the fork, in the thread's
struct pthread (docs/unwinder.md §6). Before, `dump` printed the master's
TID and cpu mode found the worker never on a CPU: 0 samples.

Debian's uwsgi-core and uwsgi-plugin-python3 (embedding Debian 12's
python3.11), a master and 2 workers serving app.py (busy_handler() burns
5 ms of CPU per request) on a free port of 127.0.0.1, under the load of 3
client threads; once without the hook, once with it:

    dump     `pyprofd dump WORKER` (text and --json): the worker's own TID
             and main; without the hook the JSON says it came from the
             pthread and names the master's as the one the thread state has,
             and the text says so
    cpu      `pyprofd record --mode cpu -d 3 WORKER`: samples > 0, all
             labelled with the worker's TID; busy_handler's share >= 0.5; the
             profile's CPU time >= 0.3 x the worker's CPU time as the kernel
             counted it over the span (/proc/PID/stat; a loose bound: cpu
             mode's running-or-runnable accounting is another issue's); the
             summary counts the resolved samples (without the hook only)
    wall     `pyprofd record --mode wall -d 3 WORKER`: samples > 0, the
             worker's TID; busy_handler's share >= 0.1
    agent    `pyprofd agent`, a cpu job keeping the two workers: a 3 s
             /debug/pprof/profile of each has samples, each labelled with its
             own worker's TID; /metrics passes promtool and counts the
             resolved samples in pyprofd_stale_thread_ids_total (without the
             hook only)

Environment: as the other drivers (livelib: PYPROFD_BINARY, ...). Skipped
(77) without uwsgi and its python3 plugin. Run by ctest as test_uwsgi_live
(label integration), or by hand:
    /usr/bin/python3 tests/integration/test_uwsgi.py [-v]
"""

import concurrent.futures
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import livelib  # noqa: E402

BINARY = livelib.BINARY
PROMTOOL = "/usr/bin/promtool"
PLUGIN_DIR = "/usr/lib/uwsgi/plugins"
SECONDS = 3
CLIENTS = 3

APP = '''\
import os
import time


def busy_handler(seconds):
    """The recognisable work: burns @seconds of CPU time."""
    end = time.process_time() + seconds
    n = 0
    while time.process_time() < end:
        n += 1
    return n


def application(environ, start_response):
    busy_handler(0.005)
    body = str(os.getpid()).encode()
    start_response("200 OK", [("Content-Type", "text/plain"),
                              ("Content-Length", str(len(body)))])
    return [body]
'''


def uwsgi_missing():
    """Why uWSGI cannot be run here, or None."""
    if not shutil.which("uwsgi"):
        return "no uwsgi (Debian's uwsgi-core: scripts/bootstrap.sh)"
    if not os.path.exists(os.path.join(PLUGIN_DIR, "python3_plugin.so")):
        return f"no {PLUGIN_DIR}/python3_plugin.so (Debian's uwsgi-plugin-python3)"
    return None


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return sorted(int(p) for p in f.read().split())
    except OSError:
        return []


def cpu_ns(pid):
    """The CPU time process @pid has used (utime + stime of /proc/PID/stat), in ns."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])  # fields 14 and 15 of the line
    return ticks * 1_000_000_000 // os.sysconf("SC_CLK_TCK")


class Uwsgi:
    """A uWSGI master with 2 workers serving APP, with or without the after-fork hook."""

    def __init__(self, tmp, hook):
        self.hook = hook
        name = "uwsgi-hook" if hook else "uwsgi"
        self.port = livelib.free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        app = os.path.join(tmp, f"{name}-app.py")
        with open(app, "w") as f:
            f.write(APP)
        self.log = os.path.join(tmp, f"{name}.log")
        cmd = ["uwsgi", "--plugin", "python3", "--http-socket", f"127.0.0.1:{self.port}",
               "--master", "--processes", "2", "--wsgi-file", app, "--need-app",
               "--disable-logging", "--die-on-term"]
        if hook:
            cmd.append("--py-call-osafterfork")
        with open(self.log, "w") as out:
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, cwd=tmp)
        self.master = self.proc.pid
        self.target = livelib.Target(name, "3.11", "host", self.master, self.log, stop=self.stop)
        self.workers = self.wait_ready()

    def wait_ready(self, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"uwsgi exited ({self.proc.returncode}):\n{self.read_log()}")
            workers = children(self.master)
            if len(workers) == 2:
                try:
                    with urllib.request.urlopen(self.url, timeout=5) as r:
                        if r.status == 200:
                            return workers
                except OSError:
                    pass
            time.sleep(0.1)
        raise RuntimeError(f"uwsgi not serving on {self.url} after {timeout} s:\n{self.read_log()}")

    def read_log(self):
        with open(self.log, errors="replace") as f:
            return f.read()[-4000:]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)  # uWSGI: stop the workers and exit
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                for pid in children(self.master) + [self.master]:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                self.proc.wait()


class Load:
    """CLIENTS threads requesting @url back to back until stop(); counts the
    requests each worker (the PID in the body) served."""

    def __init__(self, url):
        self.url = url
        self.served = {}
        self.errors = 0
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.threads = [threading.Thread(target=self.loop, daemon=True) for _ in range(CLIENTS)]
        for t in self.threads:
            t.start()

    def loop(self):
        while not self.done.is_set():
            try:
                with urllib.request.urlopen(self.url, timeout=10) as r:
                    pid = int(r.read())
                with self.lock:
                    self.served[pid] = self.served.get(pid, 0) + 1
            except (OSError, ValueError):
                with self.lock:
                    self.errors += 1
                time.sleep(0.01)

    def stop(self):
        self.done.set()
        for t in self.threads:
            t.join(15)


def profile_facts(path):
    """(samples, the share of them in busy_handler, their time in ns, their thread_id labels)
    of the pprof at @path."""
    prof = livelib.pprof_read(path)
    names = {lid: [prof["functions"][fid][0] for fid, _ in lines]
             for lid, lines in prof["locations"].items()}
    total = busy = ns = 0
    tids = set()
    for values, locs, labels in prof["samples"]:
        total += values[0]
        ns += values[-1]
        if any(n == "busy_handler" for lid in locs for n in names.get(lid, ())):
            busy += values[0]
        tids.add(labels.get("thread_id"))
    return total, (busy / total if total else 0.0), ns, tids


class UwsgiTest(unittest.TestCase):
    """A uWSGI worker under load, dumped, recorded in cpu and wall mode and sampled by
    the agent: its own TID everywhere, its CPU seen; with and without the hook."""

    @classmethod
    def setUpClass(cls):
        why = uwsgi_missing()
        if why:
            raise unittest.SkipTest(why)

    def test_without_hook(self):
        """uWSGI without --py-call-osafterfork: the thread state names the master's TID,
        resolved from the pthread to the worker's in dump, record cpu/wall and the agent"""
        self.workers_profiled(hook=False)

    def test_with_hook(self):
        """uWSGI with --py-call-osafterfork: the thread state's own TID, the worker's, in
        dump, record cpu/wall and the agent; nothing counted as stale"""
        self.workers_profiled(hook=True)

    def workers_profiled(self, hook):
        tmp = livelib.scratch()
        srv = Uwsgi(tmp, hook)
        load = Load(srv.url)
        try:
            worker = srv.workers[0]
            livelib.note(f"master {srv.master}, workers {srv.workers}")
            with self.subTest("dump"):
                self.dump(srv, worker)
            for mode in ("cpu", "wall"):
                with self.subTest(f"record --mode {mode}"):
                    self.record(srv, worker, mode, tmp)
            with self.subTest("agent"):
                self.agent(srv, tmp)
        finally:
            load.stop()
            srv.target.stop()
        livelib.note(f"requests served per worker: {load.served}, errors {load.errors}")
        for w in srv.workers:
            self.assertGreater(load.served.get(w, 0), 0, f"worker {w} served nothing")

    def dump(self, srv, worker):
        out = subprocess.run([BINARY, "dump", "--json", str(worker)], capture_output=True,
                             text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        th = json.loads(out.stdout)["threads"][0]
        self.assertEqual(th["thread_id"], worker, th)
        self.assertTrue(th["main"], th)
        text = subprocess.run([BINARY, "dump", str(worker)], capture_output=True, text=True,
                              timeout=60)
        self.assertEqual(text.returncode, 0, text.stderr)
        line = next(ln for ln in text.stdout.splitlines() if ln.startswith("Thread "))
        livelib.note(f"dump: {line}")
        if srv.hook:
            self.assertEqual(th["thread_id_source"], "thread_state", th)
            self.assertNotIn("stated_thread_id", th)
            self.assertTrue(line.startswith(f"Thread {worker} (main)"), line)
        else:
            self.assertEqual(th["thread_id_source"], "pthread", th)
            self.assertEqual(th["stated_thread_id"], srv.master, th)
            self.assertTrue(line.startswith(
                f"Thread {worker} (main; the thread state names {srv.master}, a thread of its "
                f"parent, process {srv.master}: resolved from the TID in its pthread)"), line)

    def record(self, srv, worker, mode, tmp):
        path = os.path.join(tmp, f"{'hook' if srv.hook else 'nohook'}-{mode}.pb.gz")
        proc = subprocess.Popen([BINARY, "record", "--mode", mode, "-d", str(SECONDS),
                                 "--no-progress", "-o", path, str(worker)],
                                stderr=subprocess.PIPE, text=True)
        try:
            first = proc.stderr.readline()  # "pyprofd: sampling process ...": it starts now
            cpu0, t0 = cpu_ns(worker), time.monotonic()
            rest = proc.stderr.read()
            proc.wait(timeout=120)
            cpu1, t1 = cpu_ns(worker), time.monotonic()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stderr.close()
        err = first + rest
        self.assertEqual(proc.returncode, 0, err)
        samples, busy, ns, tids = profile_facts(path)
        self.assertGreater(samples, 0, err)
        self.assertEqual(tids, {worker}, "thread_id labels")
        stale = re.search(r"(\d+) thread samples named a thread id not of the process: "
                          r"(\d+) resolved from the thread's pthread", err)
        if srv.hook:
            self.assertIsNone(stale, err)
        else:
            self.assertIsNotNone(stale, err)
        if mode == "cpu":
            livelib.within(self, "record cpu: busy_handler's share of samples", busy, 0.5, None)
            kernel = cpu1 - cpu0
            livelib.note(f"record cpu: {samples} samples, profile {ns / 1e9:.2f} s of CPU, "
                         f"kernel {kernel / 1e9:.2f} s over {t1 - t0:.2f} s")
            livelib.within(self, "record cpu: profile CPU / kernel CPU",
                           ns / kernel if kernel else 0.0, 0.8, 1.1,
                           msg="cpu mode missed or inflated the worker's CPU time "
                               "(the kernel's is over record's whole run, a little more "
                               "than the profile's span)")
        else:
            livelib.note(f"record wall: {samples} samples")
            livelib.within(self, "record wall: busy_handler's share of samples", busy, 0.1, None)

    def agent(self, srv, tmp):
        name = "agent-hook" if srv.hook else "agent"
        regex = "|".join(str(w) for w in srv.workers)
        agent = livelib.Agent(tmp, name, f"""\
global: {{sample_rate: 100, profile_interval: 1m}}
discovery: {{refresh_interval: 1s, min_process_age: 200ms}}
profile_configs:
  - job_name: uwsgi
    mode: cpu
    relabel_configs:
      - source_labels: [__meta_process_pid]
        regex: '{regex}'
        action: keep
server:
  listen_address: 127.0.0.1:{{port}}
""")
        try:
            agent.wait_http()
            for w in srv.workers:
                agent.wait_state(w, "active", timeout=20)

            def profile(w):
                status, body = agent.get(f"/debug/pprof/profile?seconds={SECONDS}&pid={w}",
                                         timeout=SECONDS + 60)
                path = os.path.join(tmp, f"{name}-{w}.pb.gz")
                with open(path, "wb") as f:
                    f.write(body)
                return status, path

            with concurrent.futures.ThreadPoolExecutor(len(srv.workers)) as pool:
                got = dict(zip(srv.workers, pool.map(profile, srv.workers)))
            for w, (status, path) in got.items():
                self.assertEqual(status, 200, f"worker {w}")
                samples, busy, _, tids = profile_facts(path)
                livelib.note(f"agent cpu: worker {w}: {samples} samples, busy_handler "
                             f"{busy:.2f}, thread_id {sorted(tids)}")
                self.assertGreater(samples, 0, f"worker {w}")
                self.assertEqual(tids, {w}, f"worker {w}'s thread_id labels")
            status, body = agent.get("/metrics")
            self.assertEqual(status, 200)
            if os.access(PROMTOOL, os.X_OK):
                check = subprocess.run([PROMTOOL, "check", "metrics"], input=body,
                                       capture_output=True, timeout=60)
                self.assertEqual(check.returncode, 0, check.stdout + check.stderr)
            resolved = agent.metric(
                'pyprofd_stale_thread_ids_total{job="uwsgi",resolution="pthread"}',
                body.decode())
            unresolved = agent.metric(
                'pyprofd_stale_thread_ids_total{job="uwsgi",resolution="unresolved"}',
                body.decode())
            livelib.note(f"agent: stale thread ids resolved from the pthread {resolved}, "
                         f"unresolved {unresolved}")
            self.assertEqual(unresolved, 0)
            if srv.hook:
                self.assertEqual(resolved, 0)
            else:
                self.assertGreater(resolved, 0)
        finally:
            rc = agent.stop()
            self.assertEqual(rc, 0, agent.log())


if __name__ == "__main__":
    livelib.run(needs=("root",))
