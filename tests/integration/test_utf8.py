# SPDX-License-Identifier: MIT
"""Valid UTF-8 out, always: pyprofd against a target whose names are not text.

A real CPython 3.14 process (tests/targets/hostile_names.py, copied into the
rootfs under a file name holding the bytes FF FE and ESC [31m) runs with an
argument of bytes that are not UTF-8, names itself (comm, 15 bytes cut by
the kernel inside a character) and its worker thread with such bytes and
control characters. A second copy (CPython 3.13) carries "secret" and an
invalid byte in its arguments. Then (docs/agent.md, "Text is valid UTF-8"):

    record      `pyprofd record` writes a pprof and an HTML report: both
                decode as strict UTF-8; the pprof parses with Python's
                protobuf (a proto3 decoder that refuses invalid UTF-8) and
                holds the file name, thread names and comm in their U+FFFD
                form, exactly as Python's bytes.decode("utf-8", "replace")
                writes them (a character the kernel's cut split dropped);
                the report embeds the command line the same way
    relabel     the job's keep rule matches the command line through its
                U+FFFD form (the target is active); its drop rule on
                "secret" drops the second copy despite its invalid byte
    agent       /targets, /flamegraph, /debug/pprof/profile and /metrics
                decode as strict UTF-8 and carry the U+FFFD forms;
                /metrics passes `promtool check metrics` and counts the
                replacements (pyprofd_utf8_replaced_total)
    push        a real gRPC server (python3-grpcio, parca_receiver.py)
                accepts the agent's WriteRaw pushes, whose series labels
                carry the command line, and each pushed pprof parses
    log         the agent's log is valid UTF-8

Run by ctest as test_utf8_live (label integration), or by hand:
    /usr/bin/python3 tests/integration/test_utf8.py [-v]
The last line of the output is "N passed, N failed, N skipped" (livelib.run()).
"""

import gzip
import json
import os
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import livelib  # noqa: E402
import parca_receiver  # noqa: E402

PROMTOOL = "/usr/bin/promtool"
FFFD = "\ufffd"
TAG = b"\xc0\xaf\x1b]0;x\x07\xe2\x82"  # an overlong '/', a title escape, a cut euro sign
# hostile_names.py's names as the kernel keeps them, and what pyprofd must show
COMM = "m" + FFFD + "\x1b]0;t\x07\u65e5\u65e5"  # 15 bytes cut inside the third character
WORKER = "w" + FFFD + "\x1b[31mrk" + FFFD


def strict(data, what):
    """@data (bytes) decoded as UTF-8 that must be valid."""
    try:
        return data.decode("utf-8", "strict")
    except UnicodeDecodeError as e:
        raise AssertionError(f"{what} is not valid UTF-8: {e}: "
                             f"{data[max(0, e.start - 40):e.end + 40]!r}") from None


class HostileText(unittest.TestCase):
    agent = None
    receiver = None
    procs = []

    @classmethod
    def setUpClass(cls):
        cls.tmp = livelib.scratch()
        cls.token = f"u8t{os.getpid()}"
        try:
            cls.profile_cls = parca_receiver.load_proto(parca_receiver.PPROF_PROTO, cls.tmp)[
                "perftools.profiles.Profile"]
            messages = parca_receiver.load_proto(parca_receiver.PROFILESTORE_PROTO, cls.tmp)
            cls.receiver = parca_receiver.ParcaReceiver(messages).start()
            cls.start_targets()
            cls.agent = livelib.Agent(cls.tmp, "agent", cls.config())
            cls.agent.wait_http()
            cls.agent.wait_state(cls.main.pid, "active", timeout=15)
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def start_targets(cls):
        name = f"{cls.token}_".encode() + b"\xff\xfe\x1b[31mevil.py"
        cls.script = os.path.join(os.fsencode(livelib.rootfs()), b"pyprofd-targets", name)
        with open(os.path.join(livelib.TARGETS_DIR, "hostile_names.py"), "rb") as src, \
                open(cls.script, "wb") as dst:
            dst.write(src.read())
        inside = b"/pyprofd-targets/" + name
        cls.file = inside.decode("utf-8", "replace")
        cls.main_argv = [b"/usr/bin/python3.14", b"-u", inside, b"--tag", TAG]
        cls.dodge_argv = [b"/usr/bin/python3.13", b"-u", inside, b"--idle", b"--secret\xff"]
        cls.main = cls.start(cls.main_argv, "main")
        cls.dodge = cls.start(cls.dodge_argv, "dodge")

    @classmethod
    def start(cls, argv, what):
        p = subprocess.Popen([b"chroot", os.fsencode(livelib.rootfs()), *argv],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             env=livelib.TARGET_ENV)
        cls.procs.append(p)
        line = p.stdout.readline()
        if b"pyprofd-target: ready" not in line:
            raise RuntimeError(f"the {what} target did not start: {line!r}")

        def stop():
            p.terminate()
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            p.stdout.close()
        return livelib.Target(what, argv[0].decode()[-4:], "chroot", p.pid, None, stop=stop)

    @classmethod
    def config(cls):
        return f"""\
global:
  sample_rate: 100
  mode: wall
  profile_interval: 1s
discovery:
  refresh_interval: 1s
  min_process_age: 100ms
profile_configs:
  - job_name: text
    relabel_configs:
      - source_labels: [__meta_process_commandline]
        regex: '.*/{cls.token}_\\x{{fffd}}\\x{{fffd}}\\x1b\\[31mevil[.]py .*'
        action: keep
      - source_labels: [__meta_process_commandline]
        regex: '.*secret.*'
        action: drop
      - source_labels: [__meta_process_commandline]
        target_label: cmdline
server:
  listen_address: 127.0.0.1:{{port}}
  show_sensitive_labels: true
remote_write:
  - name: parca
    type: parca
    url: {cls.receiver.url}
    queue: {{min_backoff: 100ms, max_backoff: 1s}}
"""

    @classmethod
    def tearDownClass(cls):
        try:
            if cls.agent and cls.agent.proc.poll() is None:
                cls.agent.stop()
        finally:
            livelib.stop_all()
            if cls.receiver:
                cls.receiver.stop()
            if getattr(cls, "script", None) and os.path.exists(cls.script):
                os.unlink(cls.script)

    # --- helpers ----------------------------------------------------------

    def cmdline(self, argv):
        return b" ".join(argv).decode("utf-8", "replace")

    def parse_pprof(self, data, what):
        """A pprof (gzipped or not) parsed by Python's protobuf, which refuses invalid UTF-8."""
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        try:
            return self.profile_cls.FromString(data)
        except Exception as e:  # DecodeError: "string field ... contains invalid UTF-8"
            raise AssertionError(f"{what}: Python's protobuf refuses it: {e}") from None

    def labels(self, p, sample, key):
        return [p.string_table[lb.str] for lb in sample.label
                if p.string_table[lb.key] == key and lb.str]

    def embedded(self, html, name):
        """The text of the report's <script id=NAME> element."""
        start = html.index(f'id="{name}">') + len(f'id="{name}">')
        return html[start:html.index("</script>", start)]

    def files(self, tree):
        """Every file name in a flame graph's call tree (flamegraph.h)."""
        out, stack = set(), [tree]
        while stack:
            n = stack.pop()
            out.add(n.get("f"))
            stack.extend(n.get("c", []))
        return out

    def check_profile(self, p, what, labels=True):
        strings = set(p.string_table)
        self.assertIn("idle_text", strings, what)
        self.assertIn(self.file, strings, f"{what}: no file name {self.file!r}")
        self.assertTrue(self.file.startswith(f"/pyprofd-targets/{self.token}_{FFFD}{FFFD}\x1b"))
        names = {n for s in p.sample for n in self.labels(p, s, "thread_name")}
        self.assertIn(WORKER, names, what)
        self.assertIn(COMM, names, what)  # the main thread's name is the process's
        if labels:
            cmd = {c for s in p.sample for c in self.labels(p, s, "cmdline")}
            self.assertEqual(cmd, {self.cmdline(self.main_argv)}, what)

    # --- tests ------------------------------------------------------------

    def test_record(self):
        """`pyprofd record` to pprof and to HTML, at once."""
        out = {fmt: os.path.join(self.tmp, f"record.{fmt}") for fmt in ("pb.gz", "html")}
        runs = [subprocess.Popen([livelib.BINARY, "record", "-d", "1", "-a", "--no-progress",
                                  "-o", path, str(self.main.pid)], stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT) for path in out.values()]
        for r in runs:
            log = r.communicate(timeout=60)[0]
            self.assertEqual(r.returncode, 0, log)
            strict(log, "record's output")
        with open(out["pb.gz"], "rb") as f:
            p = self.parse_pprof(f.read(), "record's pprof")
        self.check_profile(p, "record's pprof", labels=False)
        for s in p.string_table:  # (the parse checked it already; say it plainly)
            strict(s.encode("utf-8"), "a string of record's pprof")
        with open(out["html"], "rb") as f:
            html = strict(f.read(), "record's HTML report")
        meta = json.loads(self.embedded(html, "pyprofd-meta"))
        self.assertEqual(meta["command"], self.cmdline(self.main_argv))
        self.assertIn(self.file, self.files(json.loads(self.embedded(html, "pyprofd-tree"))))

    def test_relabel(self):
        """keep matches through U+FFFD; drop is not dodged by an invalid byte."""
        t = self.agent.targets()
        self.assertEqual(t[self.main.pid]["state"], "active", t[self.main.pid])
        e = self.agent.wait_state(self.dodge.pid, "dropped")
        self.assertIn("relabel_configs", e["reason"])

    def test_agent(self):
        a = self.agent
        status, body = a.get("/targets")
        self.assertEqual(status, 200)
        doc = json.loads(strict(body, "/targets"))
        e = {t["pid"]: t for t in doc["targets"]}[self.main.pid]
        want = self.cmdline(self.main_argv)
        self.assertEqual(e["comm"], COMM)
        self.assertEqual(e["discovered_labels"]["__meta_process_comm"], COMM)
        self.assertEqual(e["discovered_labels"]["__meta_process_commandline"], want)
        self.assertEqual(e["labels"]["cmdline"], want)
        self.assertEqual(e["labels"]["service_name"],
                         f"{self.token}_{FFFD}{FFFD}\x1b[31mevil")  # the script's name

        results = {}

        def get(path):
            results[path] = a.get(path, timeout=60)
        threads = [threading.Thread(target=get, args=(path,)) for path in
                   ("/flamegraph?seconds=1", "/debug/pprof/profile?seconds=1")]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        status, body = results["/flamegraph?seconds=1"]
        self.assertEqual(status, 200, body[:300])
        tree = json.loads(strict(body, "/flamegraph"))
        part = tree["c"][0]["n"]
        self.assertEqual(part, f"{self.token}_{FFFD}{FFFD}\x1b[31mevil (pid {self.main.pid})")
        self.assertIn(self.file, self.files(tree))
        status, body = results["/debug/pprof/profile?seconds=1"]
        self.assertEqual(status, 200, body[:300])
        self.check_profile(self.parse_pprof(body, "/debug/pprof/profile"), "/debug/pprof/profile")

        status, body = a.get("/metrics")
        self.assertEqual(status, 200)
        text = strict(body, "/metrics")
        check = subprocess.run([PROMTOOL, "check", "metrics"], input=body, capture_output=True,
                               timeout=60)
        self.assertEqual(check.returncode, 0, check.stdout + check.stderr)
        # at least: the main target's command line 5 and comm 1, the second copy's 3 and 1
        livelib.within(self, "pyprofd_utf8_replaced_total",
                       a.metric("pyprofd_utf8_replaced_total", text), 10)

    def test_push(self):
        """A real gRPC server (strict protobuf) takes the pushes; each pprof parses."""
        deadline = time.monotonic() + 15
        mine = []
        while time.monotonic() < deadline and not mine:
            attempts, accepted = self.receiver.snapshot()
            mine = [r for r in accepted if r.labels.get("cmdline") ==
                    self.cmdline(self.main_argv)]
            time.sleep(0.2)
        self.assertTrue(mine, f"no push accepted: {len(attempts)} attempts\n"
                              f"{self.agent.log()[-3000:]}")
        self.assertEqual(len(attempts), len(accepted), "the receiver refused a push")
        for r in mine:  # (the command line is a series label here, not a sample label)
            self.check_profile(self.parse_pprof(r.pprof, "a pushed pprof"), "a pushed pprof",
                               labels=False)

    def test_zz_log(self):
        """Last: the agent's log after SIGTERM (every window flushed) is valid UTF-8."""
        rc = self.agent.stop()
        self.assertEqual(rc, 0)
        with open(self.agent.log_path, "rb") as f:
            log = strict(f.read(), "the agent's log")
        self.assertIn(f"process {self.main.pid} ", log)


if __name__ == "__main__":
    livelib.run(needs=("root", "rootfs", "promtool"))
