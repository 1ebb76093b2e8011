# SPDX-License-Identifier: MIT
"""Shared pieces of the live integration tests (Debian's python3, stdlib only).

Where things are (the source tree, the pyprofd binary, the rootfs, go), and
targets started with scripts/run-target.sh that are always stopped, also
when a test fails or the driver is interrupted (stop_all()), and run(), the
main of every driver: the same command line, cleanup and closing line
everywhere.

A driver ends with

    if __name__ == "__main__":
        livelib.run(needs=("root", "rootfs", "go"))

and is run as
    /usr/bin/python3 tests/integration/test_NAME.py [-v] [-k PATTERN] [Class[.test]]
(unittest's command line). The last line of its output is
"N passed, N failed, N skipped", counting test methods (a method with failed
subtests counts once, as failed; an error in setUpClass counts as one failed);
the exit status is 0 only if nothing failed.

Environment:
    PYPROFD_BINARY      the pyprofd executable (default: SOURCE/build/pyprofd)
    PYPROFD_SOURCE_DIR  the source tree (default: two levels above this file)
    PYPROFD_ROOTFS      the rootfs (default: scripts/python-rootfs.sh --print-path)
    PYPROFD_GO          the go command (default: go on PATH, else /usr/bin/go)
"""

import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import unittest

SOURCE_DIR = os.path.abspath(os.environ.get("PYPROFD_SOURCE_DIR") or
                             os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
BINARY = os.environ.get("PYPROFD_BINARY") or os.path.join(SOURCE_DIR, "build", "pyprofd")
RUN_TARGET = os.path.join(SOURCE_DIR, "scripts", "run-target.sh")
TARGETS_DIR = os.path.join(SOURCE_DIR, "tests", "targets")
START_TIMEOUT = 30
# The environment run-target.sh gives a target (for programs a driver starts itself).
TARGET_ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
              "HOME": "/root", "LANG": "C.UTF-8"}

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


_bullseye = None


def bullseye_rootfs():
    """The Debian 11 rootfs with CPython 3.9 (scripts/python-rootfs.sh --bullseye)."""
    global _bullseye
    if _bullseye is None:
        path = os.environ.get("PYPROFD_BULLSEYE_ROOTFS")
        if not path:
            path = subprocess.run([os.path.join(SOURCE_DIR, "scripts", "python-rootfs.sh"),
                                   "--bullseye", "--print-path"], check=True, capture_output=True,
                                  text=True).stdout.strip()
        _bullseye = os.path.realpath(path)
    return _bullseye


def rootfs_for(version):
    """The root a @version target runs in: "/" for 3.11 (the host's own), the
    bullseye rootfs for 3.9, else rootfs()."""
    if version.startswith("3.11"):
        return "/"
    if version.startswith("3.9"):
        return bullseye_rootfs()
    return rootfs()


FT_RECORD = ".pyprofd-free-threaded"


def build_missing(version):
    """Why the rootfs has no interpreter for @version ("3.14t", "3.13d", ...), or None.

    Free-threaded builds are compiled by scripts/python-rootfs.sh from
    Debian's source packages; one whose source the mirror lacked is recorded
    as unavailable in the rootfs, and its tests skip with that reason.
    """
    if version.startswith("3.11"):
        # this machine's own Debian 12 interpreter (scripts/run-target.sh runs it without a rootfs)
        exe = f"/usr/bin/python{version}"
        return None if os.access(exe, os.X_OK) else f"{exe} is not installed (Debian 12 only)"
    root = rootfs_for(version)
    if version.endswith("t"):
        exe = os.path.join(root, "usr/local/bin", f"python{version}")
        if os.access(exe, os.X_OK):
            return None
        try:
            with open(os.path.join(root, FT_RECORD), encoding="utf-8") as f:
                for line in f:
                    if line.startswith(version[:-1] + " "):
                        return f"python{version}: {line.split(' ', 1)[1].strip()}"
        except FileNotFoundError:
            return f"the rootfs {root} predates free-threaded builds: rebuild it"
        return f"python{version} is not in the rootfs {root}"
    exe = os.path.join(root, "usr/bin", f"python{version}")
    return None if os.access(exe, os.X_OK) else f"python{version} is not in the rootfs {root}"


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
    """A target: host pid, log, how to stop it.

    Started by run-target.sh (stop() runs `run-target.sh stop`), or by a
    driver itself, which then passes its own @stop function.
    """

    def __init__(self, name, version, mode, pid, log, stop=None):
        self.name, self.version, self.mode, self.pid, self.log = name, version, mode, pid, log
        self._stop = stop
        self._stopped = False
        with _live_lock:
            _live[pid] = self

    def stop(self):
        if self._stopped:
            return
        self._stopped = True
        with _live_lock:
            _live.pop(self.pid, None)
        if self._stop is not None:
            self._stop()
            return
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


def start_target(tmp, script, version, mode="chroot", *args, env=None):
    """Starts @script (a name under tests/targets or a .py path) and waits until ready.

    @env: {NAME: VALUE} set for the target (which otherwise gets a small clean
    environment)."""
    name = os.path.basename(script).removesuffix(".py")
    log = os.path.join(tmp, f"{name}-{version}-{mode}.log")
    envs = [a for k, v in (env or {}).items() for a in ("--env", f"{k}={v}")]
    proc = subprocess.run([RUN_TARGET, "start", "--python", version, "--mode", mode,
                           "--log", log, "--timeout", str(START_TIMEOUT), *envs, script, *args],
                          capture_output=True, text=True, timeout=START_TIMEOUT + 30)
    if proc.returncode != 0 or not proc.stdout.strip().isdigit():
        raise RuntimeError(f"run-target.sh start {name} (python{version}, {mode}) failed "
                           f"({proc.returncode}):\n{proc.stdout}{proc.stderr}")
    return Target(name, version, mode, int(proc.stdout.strip()), log)


def stop_all():
    """Stops every target still running (each one, even if stopping another fails)."""
    with _live_lock:
        targets = list(_live.values())
    for t in targets:
        try:
            t.stop()
        except Exception as e:
            print(f"warning: stopping {t!r}: {e}", file=sys.stderr)


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


# --- running a driver --------------------------------------------------------

_scratch = None
_scratch_lock = threading.Lock()


def scratch():
    """This run's temporary directory, made on first use (from any thread).

    run() removes it when everything passed and names it otherwise (logs of
    the targets, profiles).
    """
    global _scratch
    with _scratch_lock:
        if _scratch is None:
            name = os.path.basename(sys.argv[0]).removesuffix(".py") or "driver"
            _scratch = tempfile.mkdtemp(prefix=f"pyprofd-{name}.")
        return _scratch


_notes = []           # (test id, line) kept for the end, without -v
_notes_lock = threading.Lock()
_result = None        # the running CountingResult


def note(text):
    """One line of what a test observed, printed whether it passes or not.

    With -v it follows the test's line at once; otherwise all of them are
    listed before the closing line, under the test's name.
    """
    with _notes_lock:
        r = _result
        if r is not None and r.showAll:
            if not r._newline:
                r.stream.writeln()
                r._newline = True
            r.noted = True  # the status follows on a line of its own
            r.stream.writeln(f"    {text}")
            r.stream.flush()
        else:
            current = getattr(r, "current", None)
            _notes.append((current.id() if current is not None else "-", text))


def _num(v):
    return f"{v:.2f}" if isinstance(v, float) else str(v)


def _observed(name, value, lo, hi, unit):
    text = f"{name} observed {_num(value)}{unit}" if name else f"observed {_num(value)}{unit}"
    if lo is not None and hi is not None:
        text += f" (bounds {_num(lo)}..{_num(hi)}{unit})"
    elif lo is not None:
        text += f" (bounds >= {_num(lo)}{unit})"
    elif hi is not None:
        text += f" (bounds <= {_num(hi)}{unit})"
    ok = (lo is None or value >= lo) and (hi is None or value <= hi)
    return text if ok else text + " OUT OF BOUNDS", ok


def within(test, what, value, lo=None, hi=None, msg=None, unit=""):
    """Asserts lo <= value <= hi (a bound may be None) for @test and note()s
    "WHAT: observed V (bounds LO..HI)" either way, so that a statistical
    bound's drift shows in the output before it fails. Returns @value."""
    text, ok = _observed(None, value, lo, hi, unit)
    note(f"{what}: {text}")
    if not ok:
        test.fail(f"{what}: {text}" + (f"; {msg}" if msg else ""))
    return value


def within_each(test, what, checks, msg=None, unit=""):
    """within() for several values on one line: @checks is a list of
    (name, value, lo, hi); a value with neither bound is only shown. Fails
    naming every value out of its bounds."""
    parts, bad = [], []
    for name, value, lo, hi in checks:
        text, ok = _observed(name, value, lo, hi, unit)
        parts.append(text)
        if not ok:
            bad.append(text)
    note(f"{what}: " + ", ".join(parts))
    if bad:
        test.fail(f"{what}: " + ", ".join(bad) + (f"; {msg}" if msg else ""))


class Scenario(unittest.TestCase):
    """Steps that build on each other, run as one test in the order written.

    A subclass defines step_NAME(self) methods instead of test_ methods;
    test_scenario runs them in the order they appear in the class body (a
    subclass's after its bases'), each as subTest(step=NAME): a failing step
    is reported by its name and the steps after it still run (they may fail
    as a consequence of it: read the first failure first). Each step's
    outcome and time are note()d. The scenario is one test in the closing
    count.
    """

    @classmethod
    def steps(cls):
        names = []
        for klass in reversed(cls.__mro__):
            for name, value in vars(klass).items():
                if name.startswith("step_") and callable(value) and name not in names:
                    names.append(name)
        return names

    def test_scenario(self):
        steps = self.steps()
        self.assertTrue(steps, f"{type(self).__name__} has no step_ methods")
        for name in steps:
            step = name[len("step_"):]
            started = time.monotonic()
            outcome = "FAILED"
            with self.subTest(step=step):
                getattr(self, name)()
                outcome = "ok"
            note(f"step {step}: {outcome} in {time.monotonic() - started:.1f} s")


class CountingResult(unittest.TextTestResult):
    """Counts test methods for the closing line (a failed subtest fails its method once)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.passed = 0
        self.failed = 0
        self.skipped_n = 0
        self.current = None   # the test running (None between tests)
        self.noted = False    # note()s printed for it (with -v)
        self._failed_ids = set()
        self._ended = set()   # ids of tests with an outcome

    def _fail(self, test):
        if test.id() not in self._failed_ids:
            self._failed_ids.add(test.id())
            self.failed += 1

    def startTest(self, test):
        self.current = test
        self.noted = False
        super().startTest(test)

    def _write_status(self, test, status):
        if self.noted and test is self.current:  # after the test's notes, not named again
            self.stream.writeln(f"    ... {status}")
            self.stream.flush()
            self._newline = True
            return
        super()._write_status(test, status)

    def stopTest(self, test):
        super().stopTest(test)
        if test.id() in self._ended or test.id() in self._failed_ids:
            self.current = None
        # else: interrupted (KeyboardInterrupt goes through stopTest): run() names it

    def _outcome(self, test):
        self._ended.add(test.id())

    def addSuccess(self, test):
        super().addSuccess(test)
        self._outcome(test)
        if test.id() not in self._failed_ids:
            self.passed += 1

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._outcome(test)
        self.passed += 1

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._outcome(test)
        self._fail(test)

    def addError(self, test, err):
        super().addError(test, err)
        self._outcome(test)
        self._fail(test)

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is not None:
            self._fail(test)

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._outcome(test)
        self._fail(test)

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._outcome(test)
        self.skipped_n += 1


class _Runner(unittest.TextTestRunner):
    """TextTestRunner on stdout with CountingResult; unittest.main passes -v/-q."""

    resultclass = CountingResult

    def __init__(self, **kwargs):
        kwargs["stream"] = sys.stdout
        super().__init__(**kwargs)

    def _makeResult(self):
        global _result
        result = super()._makeResult()
        with _notes_lock:
            _result = result
        return result


def _missing(needs):
    """Why the driver cannot run here, or None."""
    for need in needs:
        if need == "root" and os.geteuid() != 0:
            return "must run as root (chroot, unshare, reading other processes)"
        if need == "rootfs":
            try:
                path = rootfs()
            except (OSError, subprocess.CalledProcessError) as e:
                return f"cannot find the rootfs: {e}"
            if not os.path.isdir(path):
                return f"no rootfs at {path}: run scripts/python-rootfs.sh first"
        if need == "go" and not os.access(go_binary(), os.X_OK):
            return f"no go at {go_binary()}: install golang-go (scripts/bootstrap.sh)"
        if need == "promtool" and not os.access("/usr/bin/promtool", os.X_OK):
            return "no /usr/bin/promtool: install prometheus (scripts/bootstrap.sh)"
        if need == "openssl" and not shutil.which("openssl"):
            return "no openssl: install openssl"
        if need == "chromium":
            if not os.access("/usr/bin/chromium", os.X_OK) or \
                    not os.access("/usr/bin/chromedriver", os.X_OK):
                # a skip only where bootstrap found no .deb of it (Ubuntu's
                # is a snap); elsewhere a missing browser is a setup fault
                verdict = os.path.join(os.environ.get("XDG_CACHE_HOME") or
                                       os.path.expanduser("~/.cache"),
                                       "pyprofd", "bootstrap-unavailable")
                try:
                    with open(verdict) as f:
                        unavailable = set(f.read().split())
                except OSError:
                    unavailable = set()
                if unavailable & {"chromium", "chromium-driver"}:
                    return ("no chromium: the apt sources have no .deb of chromium or "
                            f"chromium-driver ({verdict})")
                print("no chromium or chromium-driver, though the apt sources were not found "
                      "without them: run scripts/bootstrap.sh", file=sys.stderr)
                sys.exit(1)
            try:
                import selenium  # noqa: F401
            except ImportError:
                return "no selenium: install python3-selenium (scripts/bootstrap.sh)"
    return None


def _children():
    """PIDs of this process's children (of any of its threads)."""
    pids = []
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return pids
    for tid in tasks:
        try:
            with open(f"/proc/self/task/{tid}/children") as f:
                pids += [int(p) for p in f.read().split()]
        except OSError:
            pass
    return pids


def _stop_children():
    """SIGTERM (then SIGKILL) children still running: agents and record runs a
    test started and an interruption kept it from stopping."""
    def cmdline(pid):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            return "?"

    def gone(pid):
        try:
            return os.waitpid(pid, os.WNOHANG)[0] == pid
        except ChildProcessError:
            return True

    left = [p for p in _children() if not gone(p)]
    for pid in left:
        print(f"warning: pid {pid} ({cmdline(pid)[:100]}) still running at the end: "
              f"stopping it", file=sys.stderr)
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + 10
    while left and time.monotonic() < deadline:
        left = [p for p in left if not gone(p)]
        time.sleep(0.05)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass


def _stop_strays():
    """SIGTERM (then SIGKILL) processes whose output goes to a file in
    scratch(): targets whose start was interrupted (run-target.sh start was
    stopped after it had started the target, so no Target knows them), or
    that a test forgot. Only this run's scratch directory: nobody else's."""
    if _scratch is None:
        return
    prefix = _scratch + os.sep
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            if os.readlink(f"/proc/{entry}/fd/1").startswith(prefix):
                found.append(int(entry))
        except OSError:
            pass
    for pid in found:
        print(f"warning: pid {pid} still writes to {_scratch} at the end: stopping it",
              file=sys.stderr)
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + 5
    while found and time.monotonic() < deadline:
        found = [p for p in found if os.path.exists(f"/proc/{p}") and
                 not _zombie(p)]
        time.sleep(0.05)
    for pid in found:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _zombie(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except (OSError, IndexError):
        return True


def _finish_pools(timeout):
    """Waits for the worker threads of thread pools (which may be starting
    targets while the main thread was interrupted) to finish their task."""
    deadline = time.monotonic() + timeout
    for t in threading.enumerate():
        if t is not threading.current_thread() and t.name.startswith("ThreadPoolExecutor"):
            t.join(max(0.0, deadline - time.monotonic()))


def _interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def run(needs=("root", "rootfs")):
    """The main of every driver; does not return.

    Checks @needs ("root", "rootfs", "go", "promtool", "openssl": without one
    it says why and exits 77, the automake/ctest code for "skipped"), runs
    the tests of __main__ with unittest's command line (-v, -k PATTERN,
    names), and on the way out, also after an exception, Ctrl-C or SIGTERM
    (ctest's timeout): stops every target (stop_all()) and any child still
    running, removes scratch() if everything passed (else names it), and
    prints the closing line "N passed, N failed, N skipped". Exit status 0
    only if nothing failed and the run was not interrupted.
    """
    name = os.path.basename(sys.argv[0]).removesuffix(".py")
    why = _missing(needs)
    if why:
        print(f"{name}: {why}", file=sys.stderr)
        sys.exit(77)
    signal.signal(signal.SIGTERM, _interrupt)
    interrupted = None
    try:
        unittest.main(module="__main__", testRunner=_Runner, exit=False)
    except KeyboardInterrupt as e:
        interrupted = f"interrupted ({e})" if str(e) else "interrupted"
    except SystemExit:
        raise  # usage errors, -h: unittest has said what
    except BaseException as e:
        traceback.print_exc()
        interrupted = f"{type(e).__name__}: {e}"
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the cleanup runs to its end
        stop_all()
        _stop_children()
        if interrupted:  # a pool may still be starting targets: wait, stop those too
            _finish_pools(START_TIMEOUT + 30)
            stop_all()
            _stop_children()
        _stop_strays()
    result = _result
    passed = result.passed if result else 0
    failed = result.failed if result else 0
    skipped = result.skipped_n if result else 0
    if interrupted:
        current = result.current if result else None
        if current is None or current.id() not in result._failed_ids:
            failed += 1  # the test that was running, or the run (between tests, setUpClass)
        print(f"{interrupted}" + (f" during {current.id()}" if current is not None else
                                  " (counted as one failed test)"), flush=True)
    ok = interrupted is None and result is not None and result.wasSuccessful()
    if _scratch is not None:
        if ok:
            shutil.rmtree(_scratch, ignore_errors=True)
        else:
            print(f"logs and profiles kept in {_scratch}", flush=True)
    if _notes:
        print("observed:", flush=True)
        last = None
        for test_id, text in _notes:
            if test_id != last:
                print(f"  {test_id}", flush=True)
                last = test_id
            print(f"    {text}", flush=True)
    print(f"{passed} passed, {failed} failed, {skipped} skipped", flush=True)
    if interrupted:
        sys.stderr.flush()
        os._exit(1)  # everything is stopped: not waiting for the tests' other threads
    sys.exit(0 if ok else 1)


def pprof_traces(path, tmp):
    """go tool pprof -traces of @path: [(value in ms, frames root first)]."""
    out = subprocess.run([go_binary(), "tool", "pprof", "-traces", path],
                         capture_output=True, text=True, timeout=120, env=go_env(tmp))
    if out.returncode != 0:
        raise AssertionError(f"go tool pprof -traces: {out.stderr}")
    traces, cur = [], None
    for line in out.stdout.splitlines():
        m = re.match(r"^\s+([0-9.]+)(s|ms|us)\s+(\S.*)$", line)
        if line.startswith("-----------+"):
            cur = None
        elif m:
            ms = float(m.group(1)) * {"s": 1000.0, "ms": 1.0, "us": 0.001}[m.group(2)]
            cur = [m.group(3)]
            traces.append((ms, cur))
        elif cur is not None and line.startswith("             ") and line.strip():
            cur.append(line.strip())
    return [(ms, frames[::-1]) for ms, frames in traces]


def thread_named(pid, name):
    """The TIDs of process @pid's threads whose OS name (comm) is @name."""
    tids = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                if f.read().strip() == name:
                    tids.append(tid)
        except OSError:
            pass  # ended meanwhile
    return tids


def apart(pid):
    """Puts every thread of process @pid on the last CPU and returns the prefix
    (taskset) that runs a sampler on the others, or () on one CPU. A sampler
    that shares a CPU with a thread that runs briefly waits, under EEVDF, until
    that thread's slice ends, and then finds it asleep: its share comes out
    low through no fault of the sampler's logic (seen on these 2-CPU guests)."""
    n = os.cpu_count() or 1
    if n < 2:
        return ()
    subprocess.run(["taskset", "-a", "-p", "-c", str(n - 1), str(pid)],
                   capture_output=True, check=True)
    return ("taskset", "-c", f"0-{n - 2}" if n > 2 else "0")


def _pb_fields(buf):
    """The (field, wire type, value) of one protobuf message: varints as ints,
    length-delimited fields as bytes (fixed-width ones are skipped)."""
    i, out = 0, []
    while i < len(buf):
        key, i = _pb_varint(buf, i)
        field, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _pb_varint(buf, i)
        elif wt == 2:
            n, i = _pb_varint(buf, i)
            v, i = buf[i:i + n], i + n
        elif wt in (1, 5):
            i += 8 if wt == 1 else 4
            continue
        else:
            raise ValueError(f"bad wire type {wt}")
        out.append((field, wt, v))
    return out


def _pb_varint(buf, i):
    v = shift = 0
    while True:
        b = buf[i]
        i += 1
        v |= (b & 0x7f) << shift
        shift += 7
        if not b & 0x80:
            return v, i


def _pb_ints(wt, v):
    """A repeated integer field: packed (bytes) or one varint."""
    if wt == 0:
        return [v]
    out, i = [], 0
    while i < len(v):
        x, i = _pb_varint(v, i)
        out.append(x)
    return out


def pprof_read(path):
    """The pprof profile at @path (profile.proto, read field by field, no library):
    {"samples": [(values, [location ids leaf first], {label: str or int})],
     "locations": {id: [(function id, line)]}, "functions": {id: (name, file, start line)}}."""
    import gzip
    with open(path, "rb") as f:
        raw = f.read()
    data = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
    strings, samples, locations, functions = [], [], {}, {}
    raw_samples = []
    for field, wt, v in _pb_fields(data):
        if field == 6:
            strings.append(v.decode("utf-8"))
        elif field == 2:
            raw_samples.append(v)
        elif field == 4:
            lid, lines = 0, []
            for f2, w2, v2 in _pb_fields(v):
                if f2 == 1:
                    lid = v2
                elif f2 == 4:
                    fid = line = 0
                    for f3, _, v3 in _pb_fields(v2):
                        fid = v3 if f3 == 1 else fid
                        line = v3 if f3 == 2 else line
                    lines.append((fid, line))
            locations[lid] = lines
        elif field == 5:
            fid, name, file, start = 0, 0, 0, 0
            for f2, _, v2 in _pb_fields(v):
                if f2 == 1:
                    fid = v2
                elif f2 == 2:
                    name = v2
                elif f2 == 4:
                    file = v2
                elif f2 == 5:
                    start = v2
            functions[fid] = (name, file, start)
    for v in raw_samples:
        locs, values, labels = [], [], {}
        for f2, w2, v2 in _pb_fields(v):
            if f2 == 1:
                locs += _pb_ints(w2, v2)
            elif f2 == 2:
                values += _pb_ints(w2, v2)
            elif f2 == 3:
                key = s = n = 0
                for f3, _, v3 in _pb_fields(v2):
                    key = v3 if f3 == 1 else key
                    s = v3 if f3 == 2 else s
                    n = v3 if f3 == 3 else n
                labels[key] = (s, n)
        samples.append((values, locs, {strings[k]: (strings[s] if s else n)
                                       for k, (s, n) in labels.items()}))
    functions = {k: (strings[n], strings[f], s) for k, (n, f, s) in functions.items()}
    return {"samples": samples, "locations": locations, "functions": functions}


def histogram(text, name, labels=None):
    """A Prometheus histogram of the /metrics @text: {"buckets": {le: cumulative count}
    (le a float, inf for +Inf), "sum": float, "count": float} summed over the series whose
    labels include @labels (a dict; None: every series), or None if there is none."""
    want = labels or {}
    out = {"buckets": {}, "sum": 0.0, "count": 0.0}
    seen = False
    pattern = re.compile(r"^" + re.escape(name) + r"_(bucket|sum|count)(?:\{(.*)\})? (\S+)$")
    for line in text.splitlines():
        m = pattern.match(line)
        if not m:
            continue
        got = dict(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
        if any(got.get(k) != v for k, v in want.items()):
            continue
        seen = True
        value = float(m.group(3))
        if m.group(1) == "bucket":
            le = float("inf") if got["le"] == "+Inf" else float(got["le"])
            out["buckets"][le] = out["buckets"].get(le, 0.0) + value
        else:
            out[m.group(1)] += value
    return out if seen else None


def histogram_delta(after, before):
    """@after less @before (histogram() results; @before may be None)."""
    if before is None:
        return after
    if after is None:
        return None
    return {"buckets": {le: n - before["buckets"].get(le, 0.0)
                        for le, n in after["buckets"].items()},
            "sum": after["sum"] - before["sum"], "count": after["count"] - before["count"]}


def histogram_share(h, bound):
    """The share of @h's observations at most @bound (a bucket's upper bound), 0 when empty."""
    if not h or not h["count"]:
        return 0.0
    return h["buckets"].get(float(bound), 0.0) / h["count"]


def histogram_merge(hists):
    """The sum of histogram() results (None ones left out)."""
    out = {"buckets": {}, "sum": 0.0, "count": 0.0}
    for h in hists:
        if h is None:
            continue
        out["sum"] += h["sum"]
        out["count"] += h["count"]
        for le, n in h["buckets"].items():
            out["buckets"][le] = out["buckets"].get(le, 0.0) + n
    return out


def start_delays(after, before, jobs):
    """pyprofd_target_start_delay_seconds between two /metrics texts (@before may be
    None): {job: histogram} for each of @jobs when its series carry a job label, else
    {None: the agent-wide histogram} (every target of every job), {} when there is none."""
    name = "pyprofd_target_start_delay_seconds"
    per = {}
    for job in jobs:
        h = histogram_delta(histogram(after, name, {"job": job}),
                            histogram(before, name, {"job": job}) if before else None)
        if h is not None:
            per[job] = h
    if per:
        return per
    h = histogram_delta(histogram(after, name), histogram(before, name) if before else None)
    return {None: h} if h is not None else {}


def delays_text(h):
    """One line of a start delay histogram() for note()."""
    b = h["buckets"]
    mean = 1000 * h["sum"] / h["count"] if h["count"] else 0.0
    return (f"{h['count']:.0f} targets: <= 25 ms {b.get(0.025, 0):.0f}, <= 50 ms "
            f"{b.get(0.05, 0):.0f}, <= 100 ms {b.get(0.1, 0):.0f}, <= 250 ms "
            f"{b.get(0.25, 0):.0f}, <= 0.5 s {b.get(0.5, 0):.0f}, <= 1 s {b.get(1.0, 0):.0f}; "
            f"mean {mean:.0f} ms")
