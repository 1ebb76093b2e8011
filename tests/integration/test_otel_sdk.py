# SPDX-License-Identifier: MIT
"""Integration test: the OpenTelemetry Python SDK's spans, read without a publisher (issue 40).

Runs with Debian's /usr/bin/python3 (standard library only), as root, once
the test rootfs exists (with Debian's python3-opentelemetry-sdk in it:
scripts/python-rootfs.sh), with `go tool pprof`. The target,
tests/targets/otel_sdk_spans.py, runs the real SDK: worker threads (index
I = 1..3) loop "a" span around in_span_a(), "b" span around in_span_b(),
then outside_span() with none; two asyncio tasks on one more thread loop a
span around task_in_span(), then task_outside_span(). Its id generator makes
the ids say where they were made: a0/b0 + I + cycle (span), 7e + I + cycle
(trace); a task's c0 + T + cycle and 7c + T + cycle (T = 1, 2). Nothing in
the target publishes a context: pyprofd reads the SDK's context variable
(unwind/otel_sdk.h).

What is checked:
    spans      for python 3.13, 3.14 and 3.15 (the rootfs's) and the host's
               3.11 (with the rootfs's pure-Python SDK packages on
               PYTHONPATH): `pyprofd record -a -d 3 -o X.pb.gz PID` says it
               reads the SDK's span; every sample whose leaf-most of the five
               functions is in_span_a has span_id "a0" + the thread's index
               + 12 hex digits and trace_id "7e" + the index + 28, of the same
               cycle; in_span_b likewise with "b0"; task_in_span "c0" + 01 or
               02 with trace "7c" + the same; outside_span, task_outside_span
               and the main thread: no span label. At most 2 % wrong; at
               least 50 samples in spans.
    shares     in the same profiles, per worker thread and for the task
               thread: the share of its samples (among those in the five
               functions) labelled with each kind of span is within 5
               points of the share of time the target measured itself
               spending in that phase (its pyprofd-times line at exit).
    tagfocus   `go tool pprof -top -tagfocus=span_id=ID` of the 3.13 file,
               ID the span seen most: busy() first, and that span's function
               (in_span_a, in_span_b or task_in_span) with as much cum as it.
    agent      (3.13) an agent job keeping the target: /targets says its
               trace_context is read from the SDK, with thread reads in a
               span counted; its 2 s /debug/pprof/profile passes the span
               checks.

Environment: as tests/integration/test_record.py (PYPROFD_BINARY, ...).
Run by ctest as test_otel_sdk_live (label integration), or by hand:
    /usr/bin/python3 tests/integration/test_otel_sdk.py [-v]
The last line of the output is "N passed, N failed, N skipped" (livelib.run()).
"""

import collections
import json
import os
import re
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import livelib  # noqa: E402

BINARY = livelib.BINARY
VERSIONS = ("3.13", "3.14", "3.15", "3.11")
TASKS = 2
MAX_MISMATCH = 0.02
MIN_IN_SPANS = 50
SHARE_POINTS = 0.05

SPAN_RE = re.compile(r"^(a0|b0|c0)([0-9a-f]{2})([0-9a-f]{12})$")
TRACE_RE = re.compile(r"^(7e|7c)([0-9a-f]{2})([0-9a-f]{28})$")
# leaf-most function -> (the span kind it runs in, None: none; the phase it times)
KINDS = {"in_span_a": ("a0", "a"), "in_span_b": ("b0", "b"), "outside_span": (None, "out"),
         "task_in_span": ("c0", "a"), "task_outside_span": (None, "out")}


def sdk_missing(version):
    """Why @version cannot run the SDK here, or None."""
    missing = livelib.build_missing(version)
    if missing:
        return missing
    site = os.path.join(livelib.rootfs(), "usr/lib/python3/dist-packages")
    if not os.path.isdir(os.path.join(site, "opentelemetry", "sdk")):
        return (f"no OpenTelemetry SDK in the test rootfs ({site}): rebuild it "
                "(scripts/python-rootfs.sh --rebuild)")
    return None


def start(tmp, version, script="otel_sdk_spans"):
    env = {}
    if version.startswith("3.11"):
        # the host's interpreter, with the rootfs's pure-Python packages
        site = os.path.join(livelib.rootfs(), "usr/lib/python3/dist-packages")
        env = {"PYTHONPATH": site, "PYTHONDONTWRITEBYTECODE": "1"}
    return livelib.start_target(tmp, script, version, "chroot", "--tasks", str(TASKS), env=env)


def log_line(target, prefix):
    with open(target.log, encoding="utf-8") as f:
        for line in f:
            if line.startswith(prefix):
                return json.loads(line.split(": ", 1)[1])
    return None


def frame_names(prof, loc_ids):
    names = []
    for loc in loc_ids:
        for fid, _ in prof["locations"].get(loc, ()):
            names.append(prof["functions"].get(fid, ("?",))[0])
    return names


def leaf_kind(names):
    for n in names:
        if n in KINDS:
            return n
    return None


def check_spans(test, what, prof, exp):
    """The span checks; returns ({span_id: samples}, {thread key: Counter of phase -> samples})."""
    index_of = {tid: int(name.rsplit("-", 1)[1]) for name, tid in exp["threads"].items()
                if name.startswith("otel-worker-")}
    loop_tid = exp["threads"].get("otel-loop")
    main = exp["main_thread_id"]
    counts, seen = collections.Counter(), collections.Counter()
    phases = collections.defaultdict(collections.Counter)
    bad = []
    for values, loc_ids, labels in prof["samples"]:
        n = values[0] if values else 1
        try:
            tid = int(labels.get("thread_id"))
        except (TypeError, ValueError):
            tid = None
        fn = leaf_kind(frame_names(prof, loc_ids))
        span, trace = labels.get("span_id"), labels.get("trace_id")
        if tid == main:
            fn = "main"
        if fn is None:
            continue  # between the functions (the SDK's own code, the loop): either is right
        want_kind, phase = KINDS.get(fn, (None, None))
        counts["in spans" if want_kind else "outside"] += n
        why = None
        if want_kind is None:
            if span is not None or trace is not None:
                why = "a span label outside any span"
        elif want_kind in ("a0", "b0") and tid not in index_of:
            why = f"thread_id {tid!r} is none of the workers"
        elif want_kind == "c0" and tid != loop_tid:
            why = f"thread_id {tid!r} is not the event loop's"
        else:
            ms, mt = SPAN_RE.match(str(span or "")), TRACE_RE.match(str(trace or ""))
            wants = ([f"{index_of[tid]:02x}"] if want_kind != "c0"
                     else [f"{t:02x}" for t in range(1, TASKS + 1)])
            top = "7e" if want_kind != "c0" else "7c"
            if not ms or ms.group(1) != want_kind or ms.group(2) not in wants:
                why = f"span_id {span!r}, want {want_kind}{'|'.join(wants)} + 12 hex digits"
            elif not mt or mt.group(1) != top or mt.group(2) != ms.group(2):
                why = f"trace_id {trace!r}, want {top}{ms.group(2)} + 28 hex digits"
            elif int(ms.group(3), 16) != int(mt.group(3), 16):
                why = f"span_id {span} and trace_id {trace} are of different cycles"
            else:
                seen[span] += n
        if why:
            counts["wrong"] += n
            if len(bad) < 5:
                bad.append(f"{why} (thread {tid}, {fn}, labels {labels})")
        if phase and tid is not None:
            key = str(index_of[tid]) if tid in index_of else "tasks" if tid == loop_tid else None
            if key:
                got = "out" if not span else {"a0": "a", "b0": "b", "c0": "a"}.get(span[:2], "?")
                phases[key][got] += n
    total = counts["in spans"] + counts["outside"]
    livelib.note(f"{what}: {counts['in spans']} samples in spans, {counts['outside']} outside, "
                 f"{counts['wrong']} wrong, {len(seen)} span ids"
                 + (f"; first wrong: {bad[0]}" if bad else ""))
    test.assertGreaterEqual(counts["in spans"], MIN_IN_SPANS,
                            f"{what}: too few samples in spans: {dict(counts)}")
    livelib.within(test, f"{what}: samples with wrong span labels", counts["wrong"] / total,
                   0.0, MAX_MISMATCH, msg="; ".join(bad))
    return seen, phases


def check_shares(test, what, phases, times):
    """Each thread's labelled shares within SHARE_POINTS of its measured time shares."""
    measured = {k: v for k, v in times.items() if int(k) < 100}
    tasks = collections.Counter()
    for k, v in times.items():
        if int(k) > 100:
            tasks.update(v)
    measured["tasks"] = tasks
    for key, got in sorted(phases.items()):
        spent = measured.get(key)
        test.assertTrue(spent, f"{what}: no times for {key}: {times}")
        n, t = sum(got.values()), sum(spent.values())
        for phase in ("a", "b", "out"):
            want = spent.get(phase, 0.0) / t
            share = got.get(phase, 0) / n
            livelib.within(test, f"{what}: thread {key} share in {phase}", share,
                           want - SHARE_POINTS, want + SHARE_POINTS,
                           msg=f"samples {dict(got)}, seconds {dict(spent)}")


def record(pid, path):
    return subprocess.run([BINARY, "record", "-a", "-d", "3", "-o", path, str(pid)],
                          capture_output=True, text=True, timeout=120)


class SpansTest(unittest.TestCase):
    """record's samples labelled with the SDK's current span."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = livelib.scratch()

    def spans(self, version):
        missing = sdk_missing(version)
        if missing:
            self.skipTest(missing)
        what = f"python{version} + the SDK"
        target = start(self.tmp, version)
        path = os.path.join(self.tmp, f"sdk-{version}.pb.gz")
        try:
            exp = log_line(target, "pyprofd-expected: ")
            proc = record(target.pid, path)
        finally:
            target.stop()
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("the OpenTelemetry SDK's current span", proc.stderr)
        livelib.note(f"{what}: " + " | ".join(
            line for line in proc.stderr.splitlines() if "trace context" in line))
        seen, phases = check_spans(self, what, livelib.pprof_read(path), exp)
        times = log_line(target, "pyprofd-times: ")
        self.assertIsNotNone(times, f"{what}: the target printed no times")
        check_shares(self, what, phases, times)
        if version == "3.13":
            span, _ = seen.most_common(1)[0]
            # every sample of the span (flat in busy()) runs in its function: 100 % cum
            top = livelib.pprof_top(path, self.tmp, [f"-tagfocus=span_id={span}"])
            want = {"a0": "in_span_a", "b0": "in_span_b", "c0": "task_in_span"}[span[:2]]
            self.assertEqual(livelib.top_function(top), "busy", top)
            cum = {p[5]: p[4] for p in (line.split() for line in top.splitlines())
                   if len(p) == 6 and p[4].endswith("%")}
            self.assertEqual(cum.get(want), cum.get("busy"),
                             f"-tagfocus=span_id={span}: not all in {want}:\n{top}")


def _case(version):
    def t(self):
        self.spans(version)
    t.__doc__ = f"python{version}: span labels and shares from the real SDK"
    return t


for _v in VERSIONS:
    setattr(SpansTest, f"test_sdk__{_v.replace('.', '_')}", _case(_v))


class AgentTest(livelib.Scenario):
    """The agent reads the SDK's spans of a target it keeps."""

    VERSION = "3.13"
    agent = None
    target = None

    @classmethod
    def setUpClass(cls):
        missing = sdk_missing(cls.VERSION)
        if missing:
            raise unittest.SkipTest(missing)
        cls.tmp = livelib.scratch()
        cls.token = f"osdk{os.getpid()}"
        script = os.path.join(cls.tmp, f"{cls.token}_otel_sdk_spans.py")
        shutil.copyfile(os.path.join(livelib.TARGETS_DIR, "otel_sdk_spans.py"), script)
        try:
            cls.agent = livelib.Agent(cls.tmp, "otel-sdk-agent", f"""\
global: {{mode: wall, sample_rate: 100, profile_interval: 1m}}
discovery: {{refresh_interval: 1s, min_process_age: 200ms}}
profile_configs:
  - job_name: otel-sdk
    relabel_configs:
      - source_labels: [__meta_process_commandline]
        regex: '.*/{cls.token}_otel_sdk_spans[.]py.*'
        action: keep
server:
  listen_address: 127.0.0.1:{{port}}
""").wait_http()
            cls.target = start(cls.tmp, cls.VERSION, script)
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        if cls.target:
            cls.target.stop()
        if cls.agent:
            rc = cls.agent.stop()
            if rc != 0:
                print(f"warning: the agent exited {rc}:\n{cls.agent.log()[-2000:]}",
                      file=sys.stderr)

    def step_targets(self):
        """/targets: the trace context is the SDK's, with reads in a span"""
        try:
            e = self.agent.wait_for(
                self.target.pid,
                lambda e: e is not None and e["state"] == "active" and
                e.get("trace_context_reads", {}).get("in_span", 0) > 0, 15,
                "active with thread reads in a span")
        except AssertionError as err:
            self.fail(f"{err}; entry now: {self.agent.targets().get(self.target.pid)}")
        livelib.note(f"/targets trace_context: {e['trace_context']!r}, "
                     f"reads {e['trace_context_reads']}")
        self.assertIn("sdk: the OpenTelemetry SDK's current span", e["trace_context"])

    def step_profile(self):
        """the agent's profile of the target carries the SDK's span labels"""
        status, body = self.agent.get(f"/debug/pprof/profile?seconds=2&pid={self.target.pid}",
                                      timeout=60)
        self.assertEqual(status, 200, body[:300])
        path = os.path.join(self.tmp, "agent-sdk.pb.gz")
        with open(path, "wb") as f:
            f.write(body)
        check_spans(self, f"agent, python{self.VERSION}", livelib.pprof_read(path),
                    log_line(self.target, "pyprofd-expected: "))


if __name__ == "__main__":
    livelib.run(needs=("root", "rootfs", "go"))
