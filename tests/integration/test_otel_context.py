# SPDX-License-Identifier: MIT
"""Integration test of OpenTelemetry context in pyprofd's profiles (issue 40).

Runs with Debian's /usr/bin/python3 (standard library only), as root, once
the test rootfs exists, with `cc` and `readelf` (the host's) and `go tool
pprof`. The target, tests/targets/otel_spans.py, loads
tests/targets/otel_publisher.c (built here, three ways), which publishes
the OpenTelemetry process context (OTEP 4719: a mapping named OTEL_CTX with
a ProcessContext protobuf) and each thread's context (OTEP 4947: the TLS
variable otel_thread_ctx_v1 pointing to a record with trace and span ids).
Its worker threads (index I = 1..3) loop: span "a0 II C..." attached around
in_span_a(), span "b0 II C..." around in_span_b(), then outside_span() with
none (ids in tests/targets/README.md).

What is checked:
    builds     the library built with -mtls-dialect=gnu2 has an
               R_X86_64_TLSDESC relocation against otel_thread_ctx_v1, with
               -mtls-dialect=gnu R_X86_64_DTPMOD64 and R_X86_64_DTPOFF64,
               with -ftls-model=initial-exec R_X86_64_TPOFF64 (readelf -rW);
               each exports otel_thread_ctx_v1 as a TLS GLOBAL DEFAULT
               symbol (readelf --dyn-syms -W). The fixture itself: no pyprofd
    spans      for python 3.13 with each of the three builds, and 3.9
               (Debian 11), 3.11 (the host's Debian 12), 3.14 and 3.15 with
               the TLSDESC build: otel_spans.py has its OTEL_CTX mapping
               (/memfd:OTEL_CTX, or [anon:OTEL_CTX] where the kernel names
               anonymous mappings; the fixture), then
               `pyprofd record -a -d 3 -o X.pb.gz PID`, read field by field:
               every sample with in_span_a among its frames has the label
               span_id = 16 lowercase hex digits "a0" + the thread's index
               (2 digits) + 12 more, and trace_id = 32 lowercase hex digits
               "7e" + the index + 28 more, the same cycle in both; in_span_b
               likewise with "b0"; samples in outside_span, and every sample
               of the main thread, have neither label. At most 2 % of those
               samples may be wrong (a read torn by the thread moving on
               between the stack and its context); at least 50 samples in
               spans. `go tool pprof -top -tagfocus=span_id=ID` of the
               file, ID the span id seen most, is not empty and has that
               span's function (in_span_a or in_span_b) first
    agent      (one scenario, 3.14) an agent whose job keeps the target and
               relabels __meta_otel_resource_deployment_environment_name to
               env and __meta_otel_resource_service_version to
               service_version: /targets shows the target active with
               service_name "otel-fixture" (the process context's
               service.name, not the command-line fallback
               TOKEN_otel_spans), env "test", service_version "1.0" and no
               "__" label; the target re-publishes with service.version
               "2.0" 2 s after it is ready (--update-after 2), and
               /targets then shows service_version "2.0"; a 2 s
               /debug/pprof/profile of the target passes the span checks
               above

The OpenTelemetry Python SDK without a publisher is test_otel_sdk.py's.

Environment: as tests/integration/test_record.py (PYPROFD_BINARY, ...).
Run by ctest as test_otel_context_live (label integration), or by hand:
    /usr/bin/python3 tests/integration/test_otel_context.py [-v]
The last line of the output is "N passed, N failed, N skipped" (livelib.run()).
"""

import collections
import ctypes
import json
import os
import re
import shutil
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import livelib  # noqa: E402

BINARY = livelib.BINARY
SOURCE = os.path.join(livelib.TARGETS_DIR, "otel_publisher.c")
SYMBOL = "otel_thread_ctx_v1"

# build name -> (cc flags, relocation types against the symbol)
BUILDS = {
    "tlsdesc": (["-mtls-dialect=gnu2"], {"R_X86_64_TLSDESC"}),
    "gnu": (["-mtls-dialect=gnu"], {"R_X86_64_DTPMOD64", "R_X86_64_DTPOFF64"}),
    "ie": (["-ftls-model=initial-exec"], {"R_X86_64_TPOFF64"}),
}

# (version, build, mapping): every build on 3.13, TLSDESC elsewhere (the
# models differ in the library, not in the interpreter); both mapping kinds
# where the kernel can name anonymous mappings
CASES = (
    ("3.13", "tlsdesc", "memfd"),
    ("3.13", "gnu", "anon"),
    ("3.13", "ie", "memfd"),
    ("3.14", "tlsdesc", "anon"),
    ("3.15", "tlsdesc", "memfd"),
    ("3.11", "tlsdesc", "memfd"),
    ("3.9", "tlsdesc", "anon"),
)

MAX_MISMATCH = 0.02
MIN_IN_SPANS = 50
# the agent scenario's target re-publishes this long after it is ready: the
# agent (1 s refresh) must have read the first context by then
UPDATE_AFTER = 2

SPAN_RE = re.compile(r"^(a0|b0)([0-9a-f]{2})([0-9a-f]{12})$")
TRACE_RE = re.compile(r"^7e([0-9a-f]{2})([0-9a-f]{28})$")
KINDS = {"in_span_a": "a0", "in_span_b": "b0", "outside_span": None}

_anon = []


def anon_naming():
    """None if this kernel names anonymous mappings (PR_SET_VMA_ANON_NAME,
    CONFIG_ANON_VMA_NAME), else why not. Asked once, of this process."""
    if _anon:
        return _anon[0]
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong,
                           ctypes.c_char_p]
    # PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS
    addr = libc.mmap(None, 4096, 0x3, 0x22, -1, 0)
    if addr in (None, ctypes.c_void_p(-1).value):
        why = f"mmap: {os.strerror(ctypes.get_errno())}"
    else:
        rc = libc.prctl(0x53564d41, 0, addr, 4096, b"pyprofd-probe")
        why = None if rc == 0 else (f"prctl(PR_SET_VMA_ANON_NAME): "
                                    f"{os.strerror(ctypes.get_errno())}")
        libc.munmap(addr, 4096)
    _anon.append(why)
    return why


def build(kind):
    """otel_publisher.c built as @kind under scratch(): its path (built once)."""
    path = os.path.join(livelib.scratch(), f"libotelpub-{kind}.so")
    if not os.path.exists(path):
        out = subprocess.run(["cc", "-O2", "-shared", "-fPIC", *BUILDS[kind][0], "-o", path,
                              SOURCE], capture_output=True, text=True, timeout=120)
        if out.returncode != 0:
            raise AssertionError(f"cc ({kind}) failed: {out.stderr}")
    return path


def install(kind, version):
    """The @kind library copied to the root @version runs in: (host path, path inside)."""
    name = f"libotelpub-{os.getpid()}-{kind}.so"
    host = os.path.join(livelib.rootfs_for(version), "pyprofd-targets", name)
    os.makedirs(os.path.dirname(host), exist_ok=True)
    shutil.copyfile(build(kind), host)
    os.chmod(host, 0o755)
    return host, f"/pyprofd-targets/{name}"


def expected(target):
    """The target's pyprofd-expected line."""
    with open(target.log, encoding="utf-8") as f:
        for line in f:
            if line.startswith("pyprofd-expected: "):
                return json.loads(line.split(": ", 1)[1])
    raise AssertionError(f"{target!r} printed no expected line")


def otel_mappings(pid):
    """The names of process @pid's mappings that a reader takes for the process context."""
    with open(f"/proc/{pid}/maps") as f:
        names = [line.split(None, 5)[5].strip() for line in f if len(line.split(None, 5)) > 5]
    return [n for n in names
            if n.startswith(("[anon_shmem:OTEL_CTX]", "[anon:OTEL_CTX]", "/memfd:OTEL_CTX"))]


def mapping_for(mapping):
    """@mapping, or memfd where the kernel cannot name anonymous mappings."""
    return mapping if mapping == "memfd" or anon_naming() is None else "memfd"


def start(tmp, version, kind, mapping, *args):
    """otel_spans.py on @version with the @kind library: (target, library's host path)."""
    host, inside = install(kind, version)
    try:
        target = livelib.start_target(tmp, "otel_spans", version, "chroot", inside,
                                      "--mapping", mapping_for(mapping), *args)
    except BaseException:
        os.unlink(host)
        raise
    return target, host


def frame_names(prof, loc_ids):
    names = []
    for loc in loc_ids:
        for fid, _ in prof["locations"].get(loc, ()):
            names.append(prof["functions"].get(fid, ("?",))[0])
    return names


def span_kind(names):
    """"a0", "b0" or None (outside_span) by the leaf-most of the three
    functions among @names (leaf first); "" when none of them is there."""
    for n in names:
        if n in KINDS:
            return KINDS[n]
    return ""


def check_spans(test, what, prof, exp):
    """The span checks of the module docstring on one profile (pprof_read()).

    Returns {span_id: samples} of the spans seen."""
    index_of = {t["thread_id"]: t["index"] for t in exp["threads"]}
    main = exp["main_thread_id"]
    counts = collections.Counter()
    seen = collections.Counter()
    bad = []
    for values, loc_ids, labels in prof["samples"]:
        n = values[0] if values else 1
        try:
            tid = int(labels.get("thread_id"))
        except (TypeError, ValueError):
            tid = None
        kind = span_kind(frame_names(prof, loc_ids))
        span, trace = labels.get("span_id"), labels.get("trace_id")
        if tid == main:
            kind = None
        if kind == "":
            continue  # a worker between the three functions: either is right
        counts["in spans" if kind else "outside"] += n
        why = None
        if kind is None:
            if span is not None or trace is not None:
                why = "a span label outside any span"
        elif tid not in index_of:
            why = f"thread_id {tid!r} is none of the workers"
        else:
            ms, mt = SPAN_RE.match(str(span or "")), TRACE_RE.match(str(trace or ""))
            want = f"{index_of[tid]:02x}"
            if not ms or ms.group(1) != kind or ms.group(2) != want:
                why = f"span_id {span!r}, want {kind}{want} + 12 hex digits"
            elif not mt or mt.group(1) != want:
                why = f"trace_id {trace!r}, want 7e{want} + 28 hex digits"
            elif int(ms.group(3), 16) != int(mt.group(2), 16):
                why = f"span_id {span} and trace_id {trace} are of different cycles"
            else:
                seen[span] += n
        if why:
            counts["wrong"] += n
            if len(bad) < 5:
                bad.append(f"{why} (thread {tid}, {kind or 'outside_span'}, labels {labels})")
    total = counts["in spans"] + counts["outside"]
    livelib.note(f"{what}: {counts['in spans']} samples in spans, {counts['outside']} outside "
                 f"(outside_span, main thread), {counts['wrong']} wrong, {len(seen)} span ids"
                 + (f"; first wrong: {bad[0]}" if bad else ""))
    test.assertGreaterEqual(counts["in spans"], MIN_IN_SPANS,
                            f"{what}: too few samples in spans: {dict(counts)}")
    livelib.within(test, f"{what}: samples with wrong span labels", counts["wrong"] / total,
                   0.0, MAX_MISMATCH, msg="; ".join(bad))
    return seen


def record(pid, path):
    """`pyprofd record -a -d 3 -o PATH PID`."""
    return subprocess.run([BINARY, "record", "-a", "-d", "3", "-o", path, str(pid)],
                          capture_output=True, text=True, timeout=120)


class BuildTest(unittest.TestCase):
    def test_builds(self):
        """each build has its model's relocations against otel_thread_ctx_v1 and
        exports it as a global TLS symbol"""
        for kind, (_, relocs) in BUILDS.items():
            with self.subTest(build=kind):
                lib = build(kind)
                out = subprocess.run(["readelf", "-rW", lib], capture_output=True, text=True,
                                     timeout=60, check=True).stdout
                found = {f[2] for f in (line.split() for line in out.splitlines())
                         if len(f) >= 5 and f[4] == SYMBOL}
                livelib.note(f"{kind}: relocations against {SYMBOL}: {sorted(found)}")
                self.assertTrue(relocs <= found, f"{kind}: want {sorted(relocs)}:\n{out}")
                syms = subprocess.run(["readelf", "--dyn-syms", "-W", lib], capture_output=True,
                                      text=True, timeout=60, check=True).stdout
                self.assertRegex(syms, r"(?m)^\s*\d+: [0-9a-f]+\s+8 TLS\s+GLOBAL DEFAULT\s+\d+ "
                                 + SYMBOL + "$")


class SpansTest(unittest.TestCase):
    """record's samples labelled with the span the thread was in."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = livelib.scratch()
        why = anon_naming()
        if why:
            livelib.note(f"anonymous mappings cannot be named here ({why}): every case "
                         "publishes in a memfd")

    def spans(self, version, kind, mapping):
        missing = livelib.build_missing(version)
        if missing:
            self.skipTest(missing)
        what = f"python{version} {kind} {mapping_for(mapping)}"
        target, lib = start(self.tmp, version, kind, mapping)
        path = os.path.join(self.tmp, f"spans-{version}-{kind}.pb.gz")
        try:
            exp = expected(target)
            names = otel_mappings(target.pid)
            want = "/memfd:OTEL_CTX" if mapping_for(mapping) == "memfd" else "[anon:OTEL_CTX]"
            self.assertTrue([n for n in names if n.startswith(want)],
                            f"the fixture: no {want} mapping in /proc/{target.pid}/maps: {names}")
            proc = record(target.pid, path)
        finally:
            target.stop()
            os.unlink(lib)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        seen = check_spans(self, what, livelib.pprof_read(path), exp)
        self.assertTrue(seen, f"{what}: no span id seen")
        span, _ = seen.most_common(1)[0]
        top = livelib.pprof_top(path, self.tmp, [f"-tagfocus=span_id={span}"])
        function = livelib.top_function(top)
        self.assertIsNotNone(function, f"-tagfocus=span_id={span}: an empty top:\n{top}")
        self.assertEqual(function, "in_span_a" if span.startswith("a0") else "in_span_b",
                         f"-tagfocus=span_id={span}:\n{top}")


def _case(version, kind, mapping):
    def t(self):
        self.spans(version, kind, mapping)
    t.__doc__ = f"python{version}, the {kind} build, --mapping {mapping}"
    return t


for _v, _k, _m in CASES:
    setattr(SpansTest, f"test_spans__{_v.replace('.', '_')}_{_k}", _case(_v, _k, _m))


class AgentTest(livelib.Scenario):
    """The agent's target labels from the process context, and its update."""

    VERSION = "3.14"
    agent = None
    target = None
    lib = None

    @classmethod
    def setUpClass(cls):
        cls.tmp = livelib.scratch()
        cls.token = f"otc{os.getpid()}"
        # a copy of the target under a name only this run's job keeps
        script = os.path.join(cls.tmp, f"{cls.token}_otel_spans.py")
        shutil.copyfile(os.path.join(livelib.TARGETS_DIR, "otel_spans.py"), script)
        try:
            cls.agent = livelib.Agent(cls.tmp, "otel-agent", f"""\
global: {{mode: wall, sample_rate: 100, profile_interval: 1m}}
discovery: {{refresh_interval: 1s, min_process_age: 200ms}}
profile_configs:
  - job_name: otel
    relabel_configs:
      - source_labels: [__meta_process_commandline]
        regex: '.*/{cls.token}_otel_spans[.]py.*'
        action: keep
      - source_labels: [__meta_otel_resource_deployment_environment_name]
        target_label: env
      - source_labels: [__meta_otel_resource_service_version]
        target_label: service_version
server:
  listen_address: 127.0.0.1:{{port}}
""").wait_http()
            host, inside = install("tlsdesc", cls.VERSION)
            cls.lib = host
            cls.target = livelib.start_target(cls.tmp, script, cls.VERSION, "chroot", inside,
                                              "--mapping", mapping_for("anon"),
                                              "--update-after", str(UPDATE_AFTER))
            cls.ready = time.monotonic()
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
        if cls.lib and os.path.exists(cls.lib):
            os.unlink(cls.lib)

    def labels(self):
        e = self.agent.targets().get(self.target.pid)
        return e["labels"] if e else {}

    def step_labels(self):
        """service_name from the process context, env and service_version relabelled,
        before the update"""
        pid = self.target.pid
        try:
            e = self.agent.wait_for(pid, lambda e: e is not None and e["state"] == "active" and
                                    e["labels"].get("service_version"), 10,
                                    "active with a service_version label")
        except AssertionError as err:
            self.fail(f"{err}; labels now: {self.labels()}")
        labels = e["labels"]
        livelib.note(f"/targets labels {time.monotonic() - self.ready:.1f} s after ready: "
                     f"{labels}")
        self.assertEqual(labels.get("service_version"), "1.0",
                         ("the agent first read the context after its update, "
                          f"{UPDATE_AFTER} s after the target was ready: "
                          if labels.get("service_version") == "2.0" else "") + str(labels))
        self.assertEqual(labels.get("service_name"), "otel-fixture",
                         f"the process context's service.name, not the command line's "
                         f"{self.token}_otel_spans: {labels}")
        self.assertEqual(labels.get("env"), "test", labels)
        self.assertEqual(labels.get("job"), "otel", labels)
        self.assertFalse([k for k in labels if k.startswith("__")], labels)

    def step_update(self):
        """the re-published service.version reaches the target's labels"""
        pid = self.target.pid
        try:
            e = self.agent.wait_for(pid, lambda e: e is not None and
                                    e["labels"].get("service_version") == "2.0", 10,
                                    "relabelled with service_version 2.0")
        except AssertionError as err:
            self.fail(f"{err}; labels now: {self.labels()}")
        livelib.note(f"service_version 2.0 {time.monotonic() - self.ready:.1f} s after ready "
                     f"(published at {UPDATE_AFTER} s)")
        self.assertEqual(e["labels"].get("service_name"), "otel-fixture", e["labels"])
        self.assertEqual(e["labels"].get("env"), "test", e["labels"])

    def step_profile(self):
        """the agent's profile of the target carries the span labels"""
        status, body = self.agent.get(f"/debug/pprof/profile?seconds=2&pid={self.target.pid}",
                                      timeout=60)
        self.assertEqual(status, 200, body[:300])
        path = os.path.join(self.tmp, "agent-otel.pb.gz")
        with open(path, "wb") as f:
            f.write(body)
        check_spans(self, f"agent, python{self.VERSION}", livelib.pprof_read(path),
                    expected(self.target))


if __name__ == "__main__":
    livelib.run(needs=("root", "rootfs", "go"))
