# SPDX-License-Identifier: MIT
"""Integration test of `pyprofd dump` against live CPython 3.9, 3.11, 3.13, 3.14, 3.15.

Runs with Debian's /usr/bin/python3 (3.11, standard library only), as root,
once the test rootfs exists (scripts/python-rootfs.sh). Each target of
tests/targets is started under every interpreter of the rootfs and in both
launch modes (plain chroot, and container: own PID + mount namespace) by
scripts/run-target.sh; the targets print the stack they expect to be seen
("pyprofd-expected: {json}", recorded with sys._getframe() and
code.co_positions() from inside) and the test compares `pyprofd dump` with
it. Test methods are generated per version and mode, e.g.
test_record_stack__3_14__container, so a failure names both.

Environment:
    PYPROFD_BINARY        the pyprofd executable (default: SOURCE/build/pyprofd)
    PYPROFD_SOURCE_DIR    the source tree (default: two levels above this file)
    PYPROFD_ROOTFS        the rootfs (default: scripts/python-rootfs.sh --print-path)
    PYPROFD_DUMP_VERSIONS comma-separated subset of 3.9,3.11,3.13,3.14,3.15 (default: all;
                          3.11 is the host's own Debian 12 interpreter, 3.9 Debian 11's
                          in the bullseye rootfs)
    PYPROFD_DUMP_MODES    comma-separated subset of chroot,container (default: both)

Run by ctest as test_dump (label integration), or by hand:
    /usr/bin/python3 tests/integration/test_dump.py [-v] [-k record_stack]
The last line of the output is "N passed, N failed, N skipped" (one per
generated test method, livelib.run()); the exit status is non-zero if
anything failed. Target logs are kept if anything failed.
"""

import concurrent.futures
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import livelib  # noqa: E402

BINARY = livelib.BINARY
EMBED_BUILD = os.path.join(livelib.SOURCE_DIR, "tests", "targets", "embed", "build.sh")

# 3.11: the host's own Debian 12 interpreter (no debug table: a generated layout)
# 3.9: Debian 11's, in the bullseye rootfs (frame objects, co_lnotab)
ALL_VERSIONS = ("3.9", "3.11", "3.13", "3.14", "3.15")
OLD_PREFIXES = ("3.9", "3.10", "3.11", "3.12")  # read by generated layouts
FRAME_OBJECT_PREFIXES = ("3.9", "3.10")  # no <native> entry marks, no qualified names
ALL_MODES = ("chroot", "container")
VERSIONS = tuple(v for v in os.environ.get("PYPROFD_DUMP_VERSIONS", ",".join(ALL_VERSIONS)).split(",")
                 if v)
MODES = tuple(m for m in os.environ.get("PYPROFD_DUMP_MODES", ",".join(ALL_MODES)).split(",") if m)
CASES = tuple((v, m) for v in VERSIONS for m in MODES)

EXPECTED_PREFIX = "pyprofd-expected: "
READY_LINE = "pyprofd-target: ready"
FRAME_KEYS = {"function", "file", "line", "end_line", "column", "end_column"}
STATUS_KEYS = {"holds_gil", "attached", "gil_requested", "on_cpu", "waiting_for_cpu",
               "has_exception"}
DUMP_TIMEOUT = 30
START_TIMEOUT = livelib.START_TIMEOUT


def read_expected(log):
    """The target's "pyprofd-expected:" line, parsed."""
    with open(log, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith(EXPECTED_PREFIX):
                return json.loads(line[len(EXPECTED_PREFIX):])
    with open(log, encoding="utf-8", errors="replace") as f:
        raise AssertionError(f"no {EXPECTED_PREFIX!r} line in {log}:\n{f.read()[-2000:]}")


def with_expected(target):
    """@target (a livelib.Target) with .expected, what it recorded; stopped if that fails."""
    try:
        target.expected = read_expected(target.log)
    except BaseException:
        target.stop()
        raise
    return target


def start_target(name, version, mode, *args):
    """Start tests/targets/NAME.py with run-target.sh; a livelib.Target with .expected."""
    return with_expected(livelib.start_target(livelib.scratch(), name, version, mode, *args))


def proc_children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []


def proc_exe(pid):
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return ""


def wait_gone(pid, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.02)
    return False


def start_program(name, version, mode, argv, exe_suffix):
    """Start an executable inside the rootfs the way run-target.sh does.

    run-target.sh only runs .py files with /usr/bin/python3.X, so the embedder
    is started here with the same two modes: chroot (the started process is
    the target) and container (unshare --pid --mount --fork: the target is
    the child of unshare, PID 1 inside).
    """
    log = os.path.join(livelib.scratch(), f"{name}-{version}-{mode}.log")
    root = livelib.rootfs_for(version)
    if mode == "chroot":
        cmd = ["setsid", "chroot", root]
    else:
        cmd = ["setsid", "unshare", "--pid", "--mount", "--fork", "--kill-child",
               f"--mount-proc={root.rstrip('/')}/proc", "chroot", root]
    with open(log, "wb") as out:
        popen = subprocess.Popen(cmd + argv, stdin=subprocess.DEVNULL, stdout=out,
                                 stderr=subprocess.STDOUT, env=livelib.TARGET_ENV,
                                 close_fds=True)
    pid = None

    def stop():
        for p in ([pid] if pid else []) + ([popen.pid] if popen.pid != pid else []):
            try:
                os.kill(p, signal.SIGTERM)
            except ProcessLookupError:
                pass
            if not wait_gone(p, 3):
                try:
                    os.kill(p, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        try:
            popen.wait(timeout=5)
        except subprocess.TimeoutExpired:
            popen.kill()
            popen.wait()

    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if popen.poll() is not None:
                raise RuntimeError(f"{argv} (python{version}, {mode}) exited with "
                                   f"{popen.returncode} before it was ready:\n{tail(log)}")
            candidate = popen.pid if mode == "chroot" else next(iter(proc_children(popen.pid)),
                                                                None)
            if candidate and proc_exe(candidate).endswith(exe_suffix):
                with open(log, encoding="utf-8", errors="replace") as f:
                    if READY_LINE in f.read():
                        pid = candidate
                        break
            if time.monotonic() > deadline:
                raise RuntimeError(f"{argv} (python{version}, {mode}) not ready after "
                                   f"{START_TIMEOUT} s:\n{tail(log)}")
            time.sleep(0.02)
    except BaseException:
        stop()
        raise
    return with_expected(livelib.Target(name, version, mode, pid, log, stop=stop))


def tail(log, n=20):
    with open(log, encoding="utf-8", errors="replace") as f:
        return "".join(f.readlines()[-n:])


def dump(pid, *flags):
    """Run `pyprofd dump FLAGS PID`; return (exit status, stdout, stderr)."""
    proc = subprocess.run([BINARY, "dump", *flags, str(pid)], capture_output=True,
                          timeout=DUMP_TIMEOUT)
    return (proc.returncode, proc.stdout.decode("utf-8", errors="replace"),
            proc.stderr.decode("utf-8", errors="replace"))


def describe(frames):
    return "\n".join(f"  {f.get('function')} ({f.get('file')}:{f.get('line')}) "
                     f"[{f.get('end_line')}, {f.get('column')}, {f.get('end_column')}]"
                     for f in frames)


class DumpCase(unittest.TestCase):
    """Shared helpers. Subclasses set TARGET; setUpClass starts it everywhere."""

    TARGET = None
    TARGET_ARGS = ()
    maxDiff = None

    @classmethod
    def setUpClass(cls):
        cls.targets = {}
        if cls.TARGET is None:
            return
        cls.start_all(lambda v, m: start_target(cls.TARGET, v, m, *cls.TARGET_ARGS))

    @classmethod
    def start_all(cls, starter):
        """Start one target per (version, mode) in parallel; failures are kept."""
        with concurrent.futures.ThreadPoolExecutor(max_workers=len(CASES) or 1) as pool:
            futures = {case: pool.submit(starter, *case) for case in CASES}
        for case, future in futures.items():
            try:
                target = future.result()
            except Exception as e:  # reported by each test of that case
                cls.targets[case] = e
            else:
                cls.targets[case] = target
                cls.addClassCleanup(target.stop)

    def target(self, version, mode):
        t = self.targets.get((version, mode))
        if isinstance(t, Exception):
            self.fail(f"target did not start: {t}")
        self.assertIsNotNone(t, "no target started")
        return t

    def dump_json(self, target, *flags):
        rc, out, err = dump(target.pid, "--json", *flags)
        self.assertEqual(rc, 0, f"pyprofd dump --json {' '.join(flags)} {target!r} exited "
                                f"{rc}; stderr:\n{err}\nstdout:\n{out[:2000]}")
        try:
            result = json.loads(out)
        except ValueError as e:
            self.fail(f"dump --json of {target!r} is not one JSON object ({e}):\n{out[:2000]}")
        self.check_schema(result, target)
        return result

    def check_schema(self, result, target):
        self.assertIsInstance(result, dict)
        self.assertEqual(set(result), {"pid", "python", "free_threaded", "threads"},
                         "top-level keys")
        self.assertIs(result["free_threaded"], False, "Debian's builds have a GIL")
        self.assertEqual(result["pid"], target.pid, "pid: the PID dump was given")
        self.assertIsInstance(result["threads"], list)
        self.assertTrue(result["threads"], f"no threads in {json.dumps(result)}")
        for thread in result["threads"]:
            self.assertEqual(set(thread), {"thread_id", "thread_id_source", "main",
                                           "interpreter_id", "status", "frames"},
                             f"thread keys of {thread}")
            self.assertIsInstance(thread["thread_id"], int)
            # every thread state names a thread of its own process here, in a
            # container too (checked against its threads by their NSpid)
            self.assertEqual(thread["thread_id_source"], "thread_state", thread)
            self.assertIsInstance(thread["interpreter_id"], int)
            self.assertIsInstance(thread["main"], bool)
            self.assertEqual(set(thread["status"]), STATUS_KEYS, "status keys")
            for key, value in thread["status"].items():
                self.assertIsInstance(value, bool, f"status.{key}")
            for frame in thread["frames"]:
                self.assertEqual(set(frame) - {"opcode"}, FRAME_KEYS, f"frame keys of {frame}")
                self.assertIsInstance(frame["function"], str)
                self.assertIsInstance(frame["file"], str)
                self.assertIsInstance(frame["line"], int)
                for key in ("end_line", "column", "end_column"):
                    self.assertTrue(frame[key] is None or isinstance(frame[key], int),
                                    f"{key} of {frame}")
                self.assertNotEqual(frame["function"], "<GC>",
                                    f"<GC> marker while the target does no GC:\n"
                                    f"{describe(thread['frames'])}")

    def main_thread(self, result):
        mains = [t for t in result["threads"] if t["main"]]
        self.assertEqual(len(mains), 1, f"want exactly one main thread, got {result['threads']}")
        return mains[0]

    def assert_no_native(self, frames):
        natives = [i for i, f in enumerate(frames) if f["function"] == "<native>"]
        self.assertEqual(natives, [], f"<native> frames without --native:\n{describe(frames)}")

    def assert_stack_equal(self, frames, expected, positions=True):
        """frames == expected; the leaf by function/file/line only."""
        def project(frame, leaf):
            keys = ("function", "file", "line")
            if positions and not leaf:
                keys += ("end_line", "column", "end_column")
            return {k: frame.get(k) for k in keys}
        got = [project(f, i == 0) for i, f in enumerate(frames)]
        want = [project(f, i == 0) for i, f in enumerate(expected)]
        self.assertEqual(got, want, f"stack differs.\ngot:\n{describe(frames)}\n"
                                    f"expected:\n{describe(expected)}")


def per_case(cls):
    """Turn each check_NAME(self, version, mode) into test_NAME__3_X__MODE."""
    for attr in [a for a in vars(cls) if a.startswith("check_")]:
        check = getattr(cls, attr)
        for version, mode in CASES:
            def test(self, check=check, version=version, mode=mode):
                check(self, version, mode)
            test.__name__ = f"test_{attr[len('check_'):]}__{version.replace('.', '_')}__{mode}"
            test.__doc__ = f"{check.__doc__ or attr} [python{version}, {mode}]"
            setattr(cls, test.__name__, test)
    return cls


@per_case
class RecordStackTest(DumpCase):
    """record_stack.py: <module> -> outer -> Klass.method -> inner -> spin."""

    TARGET = "record_stack"

    def check_record_stack(self, version, mode):
        """dump --json: the main thread's stack is exactly what the target recorded"""
        t = self.target(version, mode)
        want = t.expected
        self.assertEqual(want["python"].rsplit(".", 1)[0], version, "target's own version")
        # (<= 3.10 have no co_qualname: a method is named by co_name alone)
        method = "method" if version.startswith(FRAME_OBJECT_PREFIXES) else "Klass.method"
        self.assertEqual([f["function"] for f in want["frames"]],
                         ["spin", "inner", method, "outer", "<module>"],
                         "the target recorded an unexpected stack")
        result = self.dump_json(t)
        self.assertEqual(result["python"], want["python"])
        self.assertEqual(len(result["threads"]), 1, "without -a only the main thread")
        thread = self.main_thread(result)
        self.assertIs(thread["main"], True)
        self.assertEqual(thread["thread_id"], want["thread_id"],
                         "thread_id: threading.get_native_id() as the target sees it")
        self.assert_stack_equal(thread["frames"], want["frames"])

    def check_ptrace_only(self, version, mode):
        """with CAP_SYS_PTRACE alone (the sidecar's set: no map_files, no DAC
        override) the interpreter is opened through /proc/PID/root (a chroot's
        maps paths, written from the reader's root, less the target's root),
        or by the path as the agent sees it when that file's device and inode
        match the mapping; the stack reads as with every capability"""
        t = self.target(version, mode)
        only = ["setpriv", "--bounding-set", "-all,+sys_ptrace", "--inh-caps", "-all", BINARY]
        probe = subprocess.run(only + ["probe", str(t.pid)], capture_output=True, text=True,
                               timeout=DUMP_TIMEOUT)
        self.assertEqual(probe.returncode, 0, probe.stderr)
        self.assertRegex(probe.stdout, r"opened via (root|path)\)", probe.stdout)
        self.assertIn("supported yes", probe.stdout)
        # perf_event_paranoid 2 here: CAP_SYS_PTRACE is enough to sample its threads
        self.assertIn("  perf      permitted", probe.stdout)
        # what --native=full does: joins at entry frames on the C stack (3.12+),
        # before that at the loop's named C frames
        self.assertIn("  native    --native=full: C and Python frames joined", probe.stdout)
        self.assertEqual("named _PyEval_EvalFrameDefault" in probe.stdout,
                         version.startswith(("3.9", "3.10", "3.11")), probe.stdout)
        proc = subprocess.run(only + ["dump", "--json", str(t.pid)], capture_output=True,
                              text=True, timeout=DUMP_TIMEOUT)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assert_stack_equal(self.main_thread(json.loads(proc.stdout))["frames"],
                                t.expected["frames"])

    def check_status_flags(self, version, mode):
        """the only thread spins: it holds the GIL, nobody asks for it, no exception"""
        t = self.target(version, mode)
        status = self.main_thread(self.dump_json(t))["status"]
        self.assertEqual({k: status[k] for k in ("holds_gil", "gil_requested", "has_exception")},
                         {"holds_gil": True, "gil_requested": False, "has_exception": False},
                         f"status {status}")

    def check_all_threads_single(self, version, mode):
        """-a on a single-threaded target gives the same one thread"""
        t = self.target(version, mode)
        result = self.dump_json(t, "-a")
        self.assertEqual(len(result["threads"]), 1, f"threads: {result['threads']}")
        self.assertEqual(self.main_thread(result)["thread_id"], t.expected["thread_id"])
        self.assert_stack_equal(self.main_thread(result)["frames"], t.expected["frames"])

    def check_native_flag_no_boundary(self, version, mode):
        """--native adds nothing where no C code called back into Python"""
        t = self.target(version, mode)
        frames = self.main_thread(self.dump_json(t, "--native"))["frames"]
        self.assert_stack_equal(frames, t.expected["frames"])

    def check_opcodes(self, version, mode):
        """--opcodes: every frame's current instruction, number, name and base; the
        callers are calls (CALL, or a specialized CALL_*), the stack as without it"""
        if mode != "chroot":
            self.skipTest("the launch mode changes nothing the opcodes read")
        t = self.target(version, mode)
        frames = self.main_thread(self.dump_json(t, "--opcodes"))["frames"]
        self.assert_stack_equal(frames, t.expected["frames"])
        if version.startswith(OLD_PREFIXES):
            # no opcode tables before 3.13: the stack, without them
            self.assertEqual([f for f in frames if "opcode" in f], [])
            return
        for f in frames:
            op = f["opcode"]
            self.assertEqual(set(op), {"number", "name", "base"}, f)
            self.assertTrue(0 <= op["number"] <= 255, f)
            self.assertRegex(op["name"], r"^[A-Z_]+$", f)
        for f in frames[1:]:
            self.assertEqual(f["opcode"]["base"], "CALL", f)
            self.assertTrue(f["opcode"]["name"].startswith("CALL"), f)
        self.assertNotIn("opcode", self.main_thread(self.dump_json(t))["frames"][0])

    def check_human_output(self, version, mode):
        """without --json: the thread id and `function (file:line)` per frame, leaf first"""
        t = self.target(version, mode)
        rc, out, err = dump(t.pid)
        self.assertEqual(rc, 0, f"dump {t!r} exited {rc}; stderr:\n{err}")
        self.assertIn(str(t.expected["thread_id"]), out)
        positions = []
        for frame in t.expected["frames"]:
            text = f"{frame['function']} ({frame['file']}:{frame['line']})"
            self.assertIn(text, out, f"no line with {text!r} in:\n{out}")
            positions.append(out.index(text))
        self.assertEqual(positions, sorted(positions), f"frames not leaf first:\n{out}")


@per_case
class DeepTest(DumpCase):
    """deep.py: <module> -> descend -> recurse x 500 -> spin."""

    TARGET = "deep"

    def check_deep(self, version, mode):
        """all 500 recurse frames, in order, none missing or repeated"""
        t = self.target(version, mode)
        want = t.expected
        depth = want["depth"]
        self.assertEqual(depth, 500)
        names = [f["function"] for f in want["frames"]]
        self.assertEqual(names, ["spin"] + ["recurse"] * depth + ["descend", "<module>"],
                         "the target recorded an unexpected stack")
        frames = self.main_thread(self.dump_json(t))["frames"]
        got = [f["function"] for f in frames]
        self.assertEqual(got.count("recurse"), depth,
                         f"{got.count('recurse')} recurse frames of {len(got)}")
        self.assertEqual(got, names)
        self.assert_stack_equal(frames, want["frames"])


@per_case
class GeneratorsTest(DumpCase):
    """generators.py: <module> -> drive -> worker (coro) -> ticks (gen) -> countdown (gen) -> spin."""

    TARGET = "generators"
    CHAIN = ["spin", "countdown", "ticks", "worker", "drive", "<module>"]

    def check_generators(self, version, mode):
        """generator and coroutine frames between their driver and the leaf"""
        t = self.target(version, mode)
        self.assertEqual([f["function"] for f in t.expected["frames"]], self.CHAIN,
                         "the target recorded an unexpected stack")
        frames = self.main_thread(self.dump_json(t))["frames"]
        self.assert_no_native(frames)
        self.assert_stack_equal(frames, t.expected["frames"])

    def check_generators_native(self, version, mode):
        """with --native: the same frames once the <native> markers are taken out"""
        t = self.target(version, mode)
        frames = self.main_thread(self.dump_json(t, "--native"))["frames"]
        self.assertNotEqual(frames[0]["function"], "<native>", describe(frames))
        self.assertNotEqual(frames[-1]["function"], "<native>", describe(frames))
        for f in frames:
            if f["function"] == "<native>":
                self.assertEqual(f, {"function": "<native>", "file": "~", "line": 0,
                                     "end_line": None, "column": None, "end_column": None})
        real = [f for f in frames if f["function"] != "<native>"]
        self.assert_stack_equal(real, t.expected["frames"])
        names = [f["function"] for f in frames]
        if version.startswith(FRAME_OBJECT_PREFIXES):
            # frame objects do not say where C called into Python: no markers
            self.assertNotIn("<native>", names, describe(frames))
            return
        # drive() calls coro.send(), C code that runs worker(): a C boundary.
        self.assertEqual(names[names.index("worker") + 1], "<native>",
                         f"no <native> between worker and drive (coro.send):\n{describe(frames)}")


@per_case
class CallbackTest(DumpCase):
    """callback.py: <module> -> zażółć -> sort_with_key -> [sorted] -> slow_key -> 日本語."""

    TARGET = "callback"
    CHAIN = ["日本語", "slow_key", "sort_with_key", "zażółć", "<module>"]

    def check_callback(self, version, mode):
        """without --native: no <native>, exact stack, non-ASCII names intact"""
        t = self.target(version, mode)
        self.assertEqual([f["function"] for f in t.expected["frames"]], self.CHAIN,
                         "the target recorded an unexpected stack")
        frames = self.main_thread(self.dump_json(t))["frames"]
        self.assert_no_native(frames)
        self.assertEqual([f["function"] for f in frames], self.CHAIN)
        self.assert_stack_equal(frames, t.expected["frames"])

    def check_callback_native(self, version, mode):
        """with --native: exactly one <native> between slow_key and sort_with_key"""
        t = self.target(version, mode)
        frames = self.main_thread(self.dump_json(t, "--native"))["frames"]
        names = [f["function"] for f in frames]
        if version.startswith(FRAME_OBJECT_PREFIXES):
            # frame objects do not say where C called into Python: no markers
            self.assertEqual(names, self.CHAIN, describe(frames))
            self.assert_stack_equal(frames, t.expected["frames"])
            return
        self.assertEqual(names, ["日本語", "slow_key", "<native>", "sort_with_key", "zażółć",
                                 "<module>"], describe(frames))
        self.assertEqual(frames[2], {"function": "<native>", "file": "~", "line": 0,
                                     "end_line": None, "column": None, "end_column": None})
        real = frames[:2] + frames[3:]
        self.assert_stack_equal(real, t.expected["frames"])

    def check_callback_human(self, version, mode):
        """without --json the UTF-8 names come out exactly"""
        t = self.target(version, mode)
        proc = subprocess.run([BINARY, "dump", str(t.pid)], capture_output=True,
                              timeout=DUMP_TIMEOUT)
        self.assertEqual(proc.returncode, 0, proc.stderr.decode(errors="replace"))
        out = proc.stdout.decode("utf-8")  # strict: must be valid UTF-8
        for frame in t.expected["frames"]:
            text = f"{frame['function']} ({frame['file']}:{frame['line']})"
            self.assertIn(text, out)


@per_case
class ThreadsTest(DumpCase):
    """named_threads.py: MainThread + spinner, sleeper, blocker with known native ids."""

    TARGET = "named_threads"

    def check_all_threads(self, version, mode):
        """-a: every thread, with its native id and leaf function; one main thread"""
        t = self.target(version, mode)
        want = {th["thread_id"]: th for th in t.expected["threads"]}
        self.assertEqual(len(want), 4, t.expected)
        result = self.dump_json(t, "-a")
        got = {th["thread_id"]: th for th in result["threads"]}
        self.assertEqual(len(got), len(result["threads"]),
                         f"a thread id twice: {[th['thread_id'] for th in result['threads']]}")
        self.assertEqual(sorted(got), sorted(want), "thread ids")
        self.assertEqual(sum(th["main"] for th in result["threads"]), 1, "one main thread")
        for tid, w in want.items():
            th = got[tid]
            frames = th["frames"]
            self.assertEqual(th["main"], w["main"], f"main flag of {w['name']}")
            self.assertTrue(frames, f"no frames for {w['name']}")
            self.assertEqual(frames[0]["function"], w["leaf"],
                             f"leaf of {w['name']}:\n{describe(frames)}")
            self.assertEqual(frames[0]["file"], "/pyprofd-targets/named_threads.py")
            bootstrap = ("_bootstrap" if version.startswith(FRAME_OBJECT_PREFIXES)
                         else "Thread._bootstrap")
            root = "<module>" if w["main"] else bootstrap
            self.assertEqual(frames[-1]["function"], root,
                             f"root of {w['name']}:\n{describe(frames)}")
            self.assert_no_native(frames)

    def check_main_only(self, version, mode):
        """without -a: only the main thread"""
        t = self.target(version, mode)
        main = next(th for th in t.expected["threads"] if th["main"])
        result = self.dump_json(t)
        self.assertEqual(len(result["threads"]), 1, result["threads"])
        thread = self.main_thread(result)
        self.assertEqual(thread["thread_id"], main["thread_id"])
        self.assertEqual([f["function"] for f in thread["frames"]], ["main_wait", "<module>"])

    def check_thread_status(self, version, mode):
        """blocked threads neither hold nor want the GIL and are off CPU; the spinner holds it"""
        t = self.target(version, mode)
        by_name = {th["name"]: th["thread_id"] for th in t.expected["threads"]}
        spinner_held = []
        for _ in range(3):  # the spinner gives the GIL away now and then
            got = {th["thread_id"]: th["status"] for th in self.dump_json(t, "-a")["threads"]}
            for name in ("MainThread", "sleeper", "blocker"):
                status = got[by_name[name]]
                self.assertEqual(status, {"holds_gil": False, "attached": False,
                                          "gil_requested": False, "on_cpu": False,
                                          "waiting_for_cpu": False, "has_exception": False},
                                 f"status of {name}")
            spinner_held.append(got[by_name["spinner"]]["holds_gil"])
            if spinner_held[-1]:
                break
        self.assertIn(True, spinner_held, "the spinner never held the GIL in 3 dumps")


@per_case
class SubinterpreterTest(DumpCase):
    """subinterpreters.py: a sub-interpreter running sub_work() in thread "sub"."""

    TARGET = "subinterpreters"

    def check_subinterpreters(self, version, mode):
        """-a walks every interpreter: the sub-interpreter's stack appears"""
        t = self.target(version, mode)
        result = self.dump_json(t, "-a")
        stacks = [[f["function"] for f in th["frames"]] for th in result["threads"]]
        self.assertIn(["sub_work", "<module>"], stacks, f"no sub-interpreter stack: {stacks}")
        self.assertIn(["main_loop", "<module>"], stacks, f"no main stack: {stacks}")
        sub = [th for th in result["threads"] if th["frames"] and
               th["frames"][0]["function"] == "sub_work"][0]
        self.assertEqual(sub["thread_id"], t.expected["sub_tid"])
        # each thread says which interpreter it belongs to (the main one is 0)
        self.assertEqual(sub["interpreter_id"], t.expected["sub_interpreter_id"])
        self.assertNotEqual(sub["interpreter_id"], 0)
        self.assertTrue(all(th["interpreter_id"] in (0, t.expected["sub_interpreter_id"])
                            for th in result["threads"]), result["threads"])
        # "main" is per interpreter, as in CPython: running code in a
        # sub-interpreter makes that thread the sub-interpreter's main thread
        if version.startswith(OLD_PREFIXES):
            # before 3.13 an interpreter has no main thread of its own: main
            # is the main interpreter's first thread only
            self.assertFalse(sub["main"])
        else:
            self.assertTrue(sub["main"], "the thread running the sub-interpreter is its main")
        main = [th for th in result["threads"] if th["frames"] and
                th["frames"][0]["function"] == "main_loop"][0]
        self.assertTrue(main["main"])
        self.assertEqual(main["thread_id"], t.expected["main_tid"])
        self.assertEqual(main["interpreter_id"], 0)
        # the text view names the sub-interpreter, and only for its thread
        rc, text, err = dump(t.pid, "-a")
        self.assertEqual(rc, 0, err)
        sub_main = "" if version.startswith(OLD_PREFIXES) else " (main)"
        self.assertIn(f"Thread {t.expected['sub_tid']}{sub_main} (interpreter "
                      f"{t.expected['sub_interpreter_id']})", text)
        self.assertEqual(text.count("(interpreter "), 1, text)
        # without -a: only the main interpreter's main thread
        only = self.dump_json(t)
        self.assertEqual([[f["function"] for f in th["frames"]] for th in only["threads"]],
                         [["main_loop", "<module>"]])


@per_case
class SecondRuntimeTest(DumpCase):
    """ctypes_second_libpython.py: an uninitialised libpython3.X.so mapped as well."""

    TARGET = "ctypes_second_libpython"

    def check_second_runtime(self, version, mode):
        """dump reads the live runtime (the executable's), not the ctypes-loaded one"""
        t = self.target(version, mode)
        lib = f"libpython{version}.so.1.0"
        with open(f"/proc/{t.pid}/maps") as f:
            self.assertIn(lib, f.read(), "precondition: the second runtime is mapped")
        result = self.dump_json(t)
        self.assertEqual(result["python"], t.expected["python"])
        thread = self.main_thread(result)
        self.assertEqual(thread["thread_id"], t.expected["thread_id"])
        self.assertEqual(thread["frames"][0]["function"], "spin_with_two_runtimes")
        self.assert_stack_equal(thread["frames"], t.expected["frames"])


@per_case
class EmbedTest(DumpCase):
    """embed/embed.c: a C program running Python through the shared libpython3.X."""

    @classmethod
    def setUpClass(cls):
        cls.targets = {}
        cls.build_errors = {}
        outdir = os.path.join(livelib.scratch(), "embed")

        def build(version):
            # 3.11 runs on the host: its libpython and headers are the host's own
            root = livelib.rootfs_for(version)
            dest = os.path.join(root, "pyprofd-targets")
            os.makedirs(dest, exist_ok=True)
            proc = subprocess.run([EMBED_BUILD, version, outdir], capture_output=True, text=True,
                                  timeout=120, env=dict(os.environ, PYPROFD_ROOTFS=root))
            if proc.returncode != 0:
                raise RuntimeError(f"{EMBED_BUILD} {version} failed:\n{proc.stdout}{proc.stderr}")
            binary = proc.stdout.strip().splitlines()[-1]
            # Atomically into the rootfs: parallel runs never see half a file.
            tmp = os.path.join(dest, f".embedder-{version}.{os.getpid()}")
            shutil.copy2(binary, tmp)
            os.replace(tmp, os.path.join(dest, f"embedder-{version}"))

        with concurrent.futures.ThreadPoolExecutor(max_workers=len(VERSIONS) or 1) as pool:
            futures = {v: pool.submit(build, v) for v in VERSIONS}
        for version, future in futures.items():
            try:
                future.result()
            except Exception as e:
                cls.build_errors[version] = e

        def starter(version, mode, before_init=False):
            if version in cls.build_errors:
                raise cls.build_errors[version]
            argv = [f"/pyprofd-targets/embedder-{version}"] + (["--before-init"] if before_init
                                                              else [])
            name = "embedder-before-init" if before_init else "embedder"
            return start_program(name, version, mode, argv, f"/embedder-{version}")

        cls.start_all(starter)
        running, cls.targets = cls.targets, {}
        cls.start_all(lambda v, m: starter(v, m, before_init=True))
        cls.before_init, cls.targets = cls.targets, running

    def check_embedded(self, version, mode):
        """dump finds the runtime in the mapped libpython of an embedding program

        The thread that initialised Python (and runs __main__, tid == pid)
        is the main thread, so dump without -a shows it, "main": true. An
        embedder never calls _PyInterpreterState_SetRunningMain() (only
        python's own pymain_run_python() does), so interp->threads.main is
        NULL here: this tells whether dump relies on it alone.
        """
        t = self.target(version, mode)
        self.assertFalse(re.search(r"python", os.path.basename(proc_exe(t.pid))),
                         "the executable's name must not say python")
        with open(f"/proc/{t.pid}/maps") as f:
            self.assertIn(f"libpython{version}.so.1.0", f.read())
        self.assertEqual([f["function"] for f in t.expected["frames"]],
                         ["embedded_work", "<module>"])
        result = self.dump_json(t)
        self.assertEqual(result["python"], t.expected["python"])
        thread = self.main_thread(result)
        self.assertEqual(thread["thread_id"], t.expected["thread_id"])
        self.assertEqual(thread["frames"][0]["function"], "embedded_work")
        self.assert_stack_equal(thread["frames"], t.expected["frames"])

    def check_embedded_all_threads(self, version, mode):
        """-a: the one thread, with its stack (whether or not it counts as main)"""
        t = self.target(version, mode)
        result = self.dump_json(t, "-a")
        self.assertEqual([th["thread_id"] for th in result["threads"]], [t.expected["thread_id"]])
        self.assert_stack_equal(result["threads"][0]["frames"], t.expected["frames"])

    def check_before_init(self, version, mode):
        """libpython mapped but Python never initialised: a one-line error, no output"""
        t = self.before_init.get((version, mode))
        if isinstance(t, Exception):
            self.fail(f"target did not start: {t}")
        self.assertFalse(t.expected["initialized"])
        rc, out, err = dump(t.pid, "--json")
        self.assertNotEqual(rc, 0, f"dump of an uninitialised runtime succeeded:\n{out}")
        self.assertEqual(out, "")
        self.assertEqual(len(err.strip().splitlines()), 1, f"want one line on stderr:\n{err}")
        self.assertRegex(err, re.compile(r"initiali[sz]", re.I))


class EscapesTest(unittest.TestCase):
    """Names that hold escape sequences (tests/targets/escapes.py), once (3.14, chroot):
    the text shows them escaped as \\xNN, JSON as \\u00NN, and neither sends a
    control character (C0, DEL, C1) to the terminal."""

    NAME = "\x1b]0;pwned\x07evil\x1b[31mred"
    FILE = "/tmp/\x1b[31mred\x9b31m\x7f\x1b]0;pwned\x07.py"

    @classmethod
    def setUpClass(cls):
        cls.target = livelib.start_target(livelib.scratch(), "escapes", "3.14", "chroot",
                                          "\x1b]0;argv\x07")
        cls.addClassCleanup(cls.target.stop)

    def dump_bytes(self, *flags):
        proc = subprocess.run([BINARY, "dump", *flags, str(self.target.pid)],
                              capture_output=True, timeout=DUMP_TIMEOUT)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        for stream in (proc.stdout, proc.stderr):
            text = stream.decode("utf-8", errors="strict")  # valid UTF-8
            bad = [c for c in text if (ord(c) < 0x20 and c != "\n") or 0x7f <= ord(c) <= 0x9f]
            self.assertEqual(bad, [], f"dump {' '.join(flags)} sent controls:\n{text!r}")
        return proc.stdout.decode()

    def test_text(self):
        out = self.dump_bytes()
        self.assertIn(r"\x1b]0;pwned\x07evil\x1b[31mred (/tmp/\x1b[31mred\xc2\x9b31m\x7f"
                      r"\x1b]0;pwned\x07.py:", out)

    def test_json(self):
        out = self.dump_bytes("--json")
        frames = json.loads(out)["threads"][0]["frames"]
        self.assertEqual((frames[0]["function"], frames[0]["file"]), (self.NAME, self.FILE),
                         "JSON keeps the names exactly")
        self.assertIn(r"\u009b", out)
        self.assertIn(r"\u007f", out)


class ErrorTest(DumpCase):
    """Errors: one line on stderr, nothing on stdout, non-zero exit."""

    def assert_error(self, pid, pattern, what, flags=("--json",)):
        rc, out, err = dump(pid, *flags)
        self.assertNotEqual(rc, 0, f"dump of {what} exited 0:\n{out}")
        self.assertEqual(out, "", f"stdout for {what}")
        lines = err.strip().splitlines()
        self.assertEqual(len(lines), 1, f"want one line on stderr for {what}, got:\n{err}")
        self.assertRegex(lines[0], re.compile(pattern, re.I), f"message for {what}")
        return lines[0]

    def host_process(self, argv, ready=None):
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL)

        def stop():
            proc.kill()
            proc.wait()
            proc.stdout.close()
        self.addCleanup(stop)
        if ready is not None:
            self.assertEqual(proc.stdout.readline().decode().strip(), ready)
        else:
            deadline = time.monotonic() + 5
            while not proc_exe(proc.pid).endswith("/" + os.path.basename(argv[0])):
                self.assertLess(time.monotonic(), deadline, "the process did not start")
                time.sleep(0.01)
        return proc.pid

    def test_not_python(self):
        """a non-Python process (sleep)"""
        pid = self.host_process([shutil.which("sleep") or "/bin/sleep", "300"])
        self.assert_error(pid, r"not a python|no python|python.*not found", "a sleep process")
        self.assert_error(pid, r"not a python|no python|python.*not found", "a sleep process",
                          flags=())

    def test_no_such_process(self):
        """a PID that does not exist"""
        with open("/proc/sys/kernel/pid_max") as f:
            pid = int(f.read()) - 1
        while os.path.exists(f"/proc/{pid}"):
            pid -= 1
        self.assert_error(pid, r"no such process", f"pid {pid} (does not exist)")

    def test_host_python3_just_works(self):
        """the host's own /usr/bin/python3 (Debian 12's 3.11: no debug offsets table)"""
        pid = self.host_process(["/usr/bin/python3", "-c",
                                 "import time; print('ready', flush=True); time.sleep(300)"],
                                ready="ready")
        rc, out, err = dump(pid)
        self.assertEqual(rc, 0, err)
        self.assertIn("<module> (<string>:1)", out)

    def test_permission_denied(self):
        """an unprivileged user cannot read a root-owned target"""
        if os.geteuid() != 0:
            self.skipTest("needs root to switch to nobody")
        pid = self.host_process(["/usr/bin/python3", "-c",
                                 "import time; print('ready', flush=True); time.sleep(300)"],
                                ready="ready")
        probe = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                                BINARY, "version"], capture_output=True)
        if probe.returncode != 0:
            self.skipTest(f"nobody cannot run {BINARY}: {probe.stderr.decode(errors='replace')}")
        proc = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                               BINARY, "dump", "--json", str(pid)], capture_output=True,
                              timeout=DUMP_TIMEOUT)
        err = proc.stderr.decode(errors="replace")
        self.assertNotEqual(proc.returncode, 0)
        self.assertEqual(proc.stdout, b"")
        self.assertEqual(len(err.strip().splitlines()), 1, f"want one line on stderr:\n{err}")
        self.assertRegex(err, re.compile(r"permission|not permitted|denied", re.I))

    def test_refusal_names_what_refused(self):
        """issue 37: a refused read says what refused it, and blames a missing CAP_SYS_PTRACE
        only when it is missing: root in a user namespace of its own (all capabilities, but
        there) is told so; root without CAP_SYS_PTRACE before a process of another user is
        told it lacks it; a process that made itself not dumpable is read by root with it"""
        if os.geteuid() != 0:
            self.skipTest("needs root")
        nondumpable = self.host_process(
            ["/usr/bin/python3", "-c", "import ctypes, time; ctypes.CDLL(None).prctl(4, 0, 0, 0, 0); "
             "print('ready', flush=True); time.sleep(300)"], ready="ready")
        rc, out, err = dump(nondumpable)
        self.assertEqual(rc, 0, err)
        self.assertIn("<module> (<string>:1)", out)
        userns = subprocess.run(["unshare", "--user", "--map-root-user", BINARY, "dump",
                                 str(nondumpable)], capture_output=True, timeout=DUMP_TIMEOUT)
        err = userns.stderr.decode(errors="replace")
        if userns.returncode != 0 and "unshare" in err and "pyprofd" not in err:
            self.skipTest(f"no user namespace here: {err.strip()}")
        self.assertNotEqual(userns.returncode, 0, err)
        self.assertIn("although this process has CAP_SYS_PTRACE: it holds it in a user namespace",
                      err)
        self.assertNotIn("needs root", err)
        nobody = self.host_process(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                                    "/usr/bin/python3", "-c",
                                    "import time; print('ready', flush=True); time.sleep(300)"],
                                   ready="ready")
        nocap = subprocess.run(["setpriv", "--bounding-set", "-sys_ptrace", "--inh-caps",
                                "-sys_ptrace", BINARY, "dump", str(nobody)],
                               capture_output=True, timeout=DUMP_TIMEOUT)
        err = nocap.stderr.decode(errors="replace")
        self.assertNotEqual(nocap.returncode, 0, err)
        self.assertIn("(needs root or CAP_SYS_PTRACE; this process does not have it", err)
        self.assertEqual(len(err.strip().splitlines()), 1, err)


if __name__ == "__main__":
    livelib.run(needs=("root", "rootfs"))
