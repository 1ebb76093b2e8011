# SPDX-License-Identifier: MIT
"""Shared pieces of the live integration tests (Debian's python3, stdlib only).

Where things are (the source tree, the pyprofd binary, the rootfs, go), and
targets started with scripts/run-target.sh that are always stopped, also
when a test fails or the driver is interrupted (stop_all()).

Environment:
    PYPROFD_BINARY      the pyprofd executable (default: SOURCE/build/pyprofd)
    PYPROFD_SOURCE_DIR  the source tree (default: two levels above this file)
    PYPROFD_ROOTFS      the rootfs (default: scripts/python-rootfs.sh --print-path)
    PYPROFD_GO          the go command (default: go on PATH, else /usr/bin/go)
"""

import os
import shutil
import subprocess
import sys
import threading
import select
import socket

SOURCE_DIR = os.path.abspath(os.environ.get("PYPROFD_SOURCE_DIR") or
                             os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
BINARY = os.environ.get("PYPROFD_BINARY") or os.path.join(SOURCE_DIR, "build", "pyprofd")
RUN_TARGET = os.path.join(SOURCE_DIR, "scripts", "run-target.sh")
TARGETS_DIR = os.path.join(SOURCE_DIR, "tests", "targets")
START_TIMEOUT = 30

_rootfs = None
_live = {}  # host pid -> Target, for stop_all()
_live_lock = threading.Lock()


def rootfs():
    global _rootfs
    if _rootfs is None:
        path = os.environ.get("PYPROFD_ROOTFS")
        if not path:
            path = subprocess.run([os.path.join(SOURCE_DIR, "scripts", "python-rootfs.sh"),
                                   "--print-path"], check=True, capture_output=True,
                                  text=True).stdout.strip()
        _rootfs = os.path.realpath(path)
    return _rootfs


def go_binary():
    return os.environ.get("PYPROFD_GO") or shutil.which("go") or "/usr/bin/go"


def go_env(tmp):
    """An environment in which go keeps its caches under @tmp."""
    env = dict(os.environ)
    env.setdefault("GOCACHE", os.path.join(tmp, "gocache"))
    env.setdefault("HOME", tmp)
    return env


def pprof_top(path, tmp, extra=()):
    """`go tool pprof -top` of a profile file: its stdout, or an exception."""
    out = subprocess.run([go_binary(), "tool", "pprof", "-top", *extra, path],
                         capture_output=True, text=True, timeout=120, env=go_env(tmp))
    if out.returncode != 0:
        raise RuntimeError(f"go tool pprof -top {path} failed: {out.stderr.strip()}")
    return out.stdout


def top_function(top_output):
    """The function with the most flat time in `go tool pprof -top` output."""
    for line in top_output.splitlines():
        parts = line.split()
        if len(parts) >= 6 and parts[1].endswith("%") and parts[2].endswith("%"):
            return " ".join(parts[5:])
    return None


class Target:
    """A target started by run-target.sh: host pid, log, how to stop it."""

    def __init__(self, name, version, mode, pid, log):
        self.name, self.version, self.mode, self.pid, self.log = name, version, mode, pid, log
        self._stopped = False
        with _live_lock:
            _live[pid] = self

    def stop(self):
        if self._stopped:
            return
        self._stopped = True
        with _live_lock:
            _live.pop(self.pid, None)
        out = subprocess.run([RUN_TARGET, "stop", str(self.pid)], capture_output=True,
                             text=True, timeout=30)
        if out.returncode != 0:
            print(f"warning: run-target.sh stop {self.pid}: {out.stderr.strip()}",
                  file=sys.stderr)

    def kill(self):
        """SIGKILL, for a target that is not the python run-target.sh started any more."""
        if self._stopped:
            return
        self._stopped = True
        with _live_lock:
            _live.pop(self.pid, None)
        try:
            os.kill(self.pid, 9)
        except ProcessLookupError:
            pass

    def alive(self):
        try:
            with open(f"/proc/{self.pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
        except (FileNotFoundError, ProcessLookupError, IndexError):
            return False

    def __repr__(self):
        return f"{self.name} (python{self.version}, {self.mode}, pid {self.pid})"


def start_target(tmp, script, version, mode="chroot", *args):
    """Starts @script (a name under tests/targets or a .py path) and waits until ready."""
    name = os.path.basename(script).removesuffix(".py")
    log = os.path.join(tmp, f"{name}-{version}-{mode}.log")
    proc = subprocess.run([RUN_TARGET, "start", "--python", version, "--mode", mode,
                           "--log", log, "--timeout", str(START_TIMEOUT), script, *args],
                          capture_output=True, text=True, timeout=START_TIMEOUT + 30)
    if proc.returncode != 0 or not proc.stdout.strip().isdigit():
        raise RuntimeError(f"run-target.sh start {name} (python{version}, {mode}) failed "
                           f"({proc.returncode}):\n{proc.stdout}{proc.stderr}")
    return Target(name, version, mode, int(proc.stdout.strip()), log)


def stop_all():
    with _live_lock:
        targets = list(_live.values())
    for t in targets:
        t.stop()


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Agent:
    """`pyprofd agent` run with a config text, on a free loopback port.

    @config is the YAML with {port} where the listen port goes. @wrap is a
    command prefix (e.g. setpriv ... to run it with fewer privileges). The
    agent's output goes to TMP/NAME.log. Always stop() it (also on failure).
    """

    def __init__(self, tmp, name, config, wrap=(), extra_args=(), env=None):
        import urllib.request  # noqa: F401 (used by get)
        self.tmp, self.name = tmp, name
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.config = os.path.join(tmp, f"{name}.yml")
        with open(self.config, "w") as f:
            f.write(config.replace("{port}", str(self.port)))
        os.chmod(self.config, 0o644)
        self.log_path = os.path.join(tmp, f"{name}.log")
        self._log = open(self.log_path, "w+")
        self.proc = subprocess.Popen([*wrap, BINARY, "agent", "--config.file", self.config,
                                      *extra_args], stdout=self._log, stderr=subprocess.STDOUT,
                                     env=env)

    def wait_http(self, timeout=20):
        import time
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"agent {self.name} exited ({self.proc.returncode}):\n"
                                   f"{self.log()}")
            try:
                if self.get("/-/healthy", timeout=2)[0] == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"agent {self.name} does not answer on {self.base}:\n{self.log()}")

    def log(self):
        if not self._log.closed:
            self._log.flush()
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def get(self, path, timeout=30, method="GET"):
        import urllib.error
        import urllib.request
        req = urllib.request.Request(self.base + path, method=method)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def targets(self):
        import json
        status, body = self.get("/targets")
        if status != 200:
            raise RuntimeError(f"/targets: {status} {body[:200]!r}")
        return {t["pid"]: t for t in json.loads(body)["targets"]}

    def wait_for(self, pid, pred, timeout, what):
        """Polls /targets until pred(entry or None) holds; returns the entry."""
        import time
        deadline = time.monotonic() + timeout
        entry = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"agent {self.name} exited ({self.proc.returncode}) while "
                                   f"waiting for pid {pid} to be {what}:\n{self.log()}")
            entry = self.targets().get(pid)
            if pred(entry):
                return entry
            time.sleep(0.1)
        raise AssertionError(f"pid {pid} not {what} after {timeout} s: {entry}\n{self.log()}")

    def wait_state(self, pid, state, timeout=10):
        return self.wait_for(pid, lambda e: e is not None and e["state"] == state, timeout, state)

    def metrics(self):
        status, body = self.get("/metrics")
        if status != 200:
            raise RuntimeError(f"/metrics: {status}")
        return body.decode()

    def metric(self, name, text=None):
        """The value of one sample (NAME or NAME{labels} exactly as written), or None."""
        for line in (text if text is not None else self.metrics()).splitlines():
            if not line.startswith("#") and line.rsplit(" ", 1)[0] == name:
                return float(line.rsplit(" ", 1)[1])
        return None

    def stop(self, timeout=20):
        """SIGTERM, wait; returns the exit status (SIGKILL after @timeout: None)."""
        import signal as _signal
        rc = None
        if self.proc.poll() is None:
            self.proc.send_signal(_signal.SIGTERM)
            try:
                rc = self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        else:
            rc = self.proc.returncode
        self._log.close()
        return rc


class BlackHole:
    """Listens on a port and accepts connections, reads what comes, never answers
    (a receiver behind a dead load balancer): unlike a hung receiver it never
    processes a request late, so every retry after a timeout is no duplicate."""

    def __init__(self, port):
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.sock.listen(64)
        self.conns = []
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def loop(self):
        while not self.done.is_set():
            ready, _, _ = select.select([self.sock] + self.conns, [], [], 0.2)
            for r in ready:
                if r is self.sock:
                    try:
                        self.conns.append(self.sock.accept()[0])
                    except OSError:
                        pass
                else:
                    try:
                        if not r.recv(65536):
                            self.conns.remove(r)
                            r.close()
                    except OSError:
                        self.conns.remove(r)

    def close(self):
        self.done.set()
        self.thread.join()
        for c in self.conns:
            c.close()
        self.sock.close()
