# SPDX-License-Identifier: MIT
"""Integration test of the outputs other tools open: `pyprofd record` writes
pstats, speedscope, gecko (the Firefox Profiler's format) and heatmap files,
and each is opened by its real consumer.

Runs with Debian's /usr/bin/python3, as root, once the test rootfs exists.
One recording of tests/targets/shares.py on CPython 3.14 (50 / 30 / 20 % of
its time in burn_half / burn_third / burn_fifth), all threads, with
--opcodes, writes every format at once (-o several times), so each is
compared with the pprof of the same samples:

    pstats      Python's pstats module on every supported CPython (3.9 from
                the Debian 11 root, 3.11 the host's, 3.13-3.15 the rootfs's)
                loads it and sorts it; `python3 -m pstats FILE` prints it;
                each function's own and cumulative share within 3 points of
                the pprof's (own: innermost frame; cumulative: anywhere,
                each sample once); callers as the stacks have them
    speedscope  valid against the schema speedscope ships; one profile per
                sampled thread, weights adding up to the pprof's time;
                opened in the speedscope app (npm, pinned) in headless
                chromium, which names the page after the file once imported
    gecko       the Firefox Profiler's shape (version, tables, categories,
                threads with ids and names, samples in time order within
                the recording); opened in speedscope's Firefox importer
    heatmap     one page that loads nothing; in chromium, every line's own
                and total count equals the pprof's line-level counts; the
                source shown is the target's own file
    hostile     tests/targets/hostile_source.py: a Latin-1 source (bytes
                not UTF-8, a control byte, "</script>") and a function and
                file named with "</script>", a control byte and a lone
                surrogate: the pstats file loads, the JSON parses, the pages
                run no injected script and show the text escaped
"""

import collections
import json
import os
import shutil
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import livelib  # noqa: E402
import test_web  # noqa: E402  (its headless chromium)

BINARY = livelib.BINARY
ASSETS = os.environ.get("PYPROFD_TEST_ASSETS") or os.path.join(livelib.SOURCE_DIR, "build",
                                                               "test-assets")
SPEEDSCOPE = os.path.join(ASSETS, "speedscope")
RATE = "197"
FORMATS = ("pb.gz", "pstats", "speedscope.json", "gecko.json", "heatmap.html")


def speedscope_app():
    """The speedscope app (scripts/fetch-web-assets.sh --speedscope), fetched once."""
    if not os.path.exists(os.path.join(SPEEDSCOPE, "index.html")):
        os.makedirs(ASSETS, exist_ok=True)
        subprocess.run([os.path.join(livelib.SOURCE_DIR, "scripts", "fetch-web-assets.sh"),
                        "--speedscope", ASSETS], check=True, timeout=300)
    return SPEEDSCOPE


def record(tmp, target, name, extra=()):
    """Records @target for 3 s into every format; returns {ext: path} and the summary."""
    paths = {ext: os.path.join(tmp, f"{name}.{ext}") for ext in FORMATS}
    args = [BINARY, "record", str(target.pid), "-d", "3", "-r", RATE, "-a", *extra]
    for p in paths.values():
        args += ["-o", p]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=90)
    if proc.returncode != 0:
        raise RuntimeError(f"record failed ({proc.returncode}):\n{proc.stderr}")
    return paths, proc.stderr


def pprof_shares(prof):
    """From a pprof: ({function: own samples}, {function: samples it is in}, total),
    functions as (file, first line, name), --opcodes' markers left out."""
    own, cum = collections.Counter(), collections.Counter()
    total = 0
    for values, locs, _ in prof["samples"]:
        n = values[0]
        total += n
        fns = []
        for lid in locs:
            for fid, _line in prof["locations"][lid]:
                name, file, start = prof["functions"][fid]
                if not name.startswith("<op "):
                    fns.append((file, start, name))
        if fns:
            own[fns[0]] += n
            for f in set(fns):
                cum[f] += n
    return own, cum, total


def pprof_lines(prof):
    """From a pprof: {(file, line): [own, total]}: own where it was the innermost
    Python line (markers, C frames and opcode markers skipped), total each sample once."""
    lines = collections.defaultdict(lambda: [0, 0])
    for values, locs, _ in prof["samples"]:
        n = values[0]
        seen, inner = set(), True
        for lid in locs:
            for fid, line in prof["locations"][lid]:
                name, file, _ = prof["functions"][fid]
                if name.startswith("<op ") or file == "~" or line <= 0:
                    continue
                if inner:
                    lines[(file, line)][0] += n
                    inner = False
                if (file, line) not in seen:
                    seen.add((file, line))
                    lines[(file, line)][1] += n
    return lines


def pstats_in(root, interpreter, path, script):
    """Runs @script (reading the pstats file as sys.argv[1]) with @interpreter in @root."""
    if root == "/":
        cmd = [interpreter, "-c", script, path]
    else:
        inside = os.path.join("/tmp", os.path.basename(path))
        os.makedirs(os.path.join(root, "tmp"), exist_ok=True)
        shutil.copy(path, os.path.join(root, inside.lstrip("/")))
        cmd = ["chroot", root, interpreter, "-c", script, inside]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


class FormatsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = livelib.scratch()
        cls.target = livelib.start_target(cls.tmp, "shares", "3.14")
        try:
            cls.paths, cls.summary = record(cls.tmp, cls.target, "shares", ("--opcodes",))
        finally:
            cls.target.stop()
        cls.prof = livelib.pprof_read(cls.paths["pb.gz"])

    def test_wrote_each(self):
        for ext, path in self.paths.items():
            self.assertIn(f"pyprofd: wrote {path} (", self.summary)
            self.assertGreater(os.path.getsize(path), 100, ext)

    def test_pstats_matches_pprof(self):
        import marshal
        import pstats
        st = pstats.Stats(self.paths["pstats"])
        st.sort_stats("cumulative")
        own, cum, total = pprof_shares(self.prof)
        self.assertGreater(total, 400)
        interval = 1.0 / float(RATE)
        self.assertAlmostEqual(st.total_tt, total * interval, delta=total * interval * 0.05)
        checked = 0
        for key, (cc, nc, tt, ct, callers) in st.stats.items():
            self.assertGreaterEqual(nc, cc, key)
            own_pct = 100.0 * tt / st.total_tt
            cum_pct = 100.0 * ct / st.total_tt
            self.assertAlmostEqual(own_pct, 100.0 * own[key] / total, delta=3, msg=key)
            self.assertAlmostEqual(cum_pct, 100.0 * cum[key] / total, delta=3, msg=key)
            self.assertEqual(cc, cum[key], key)  # samples that held the function
            checked += 1
        self.assertEqual(checked, len(cum))
        by_name = {k[2]: v for k, v in st.stats.items()}
        half = by_name["burn_half"]
        livelib.within(self, "burn_half own share (%)", 100.0 * half[2] / st.total_tt, 40, 60)
        # burn_half is called by run(), which <module> calls
        self.assertEqual({k[2] for k in half[4]}, {"run"})
        self.assertIn("<module>", {k[2] for k in by_name["run"][4]})
        with open(self.paths["pstats"], "rb") as f:
            self.assertIsInstance(marshal.load(f), dict)

    def test_pstats_every_version(self):
        script = ("import pstats, sys; s = pstats.Stats(sys.argv[1]); "
                  "s.sort_stats('tottime').print_stats(3); "
                  "print('functions', len(s.stats))")
        for version in ("3.9", "3.11", "3.13", "3.14", "3.15"):
            root = livelib.rootfs_for(version)
            interpreter = "/usr/bin/python3" if version == "3.11" else f"/usr/bin/python{version}"
            with self.subTest(version=version):
                out = pstats_in(root, interpreter, self.paths["pstats"], script)
                self.assertEqual(out.returncode, 0, out.stderr)
                self.assertIn("burn_half", out.stdout)
                self.assertRegex(out.stdout, r"functions [1-9]")
        cli = subprocess.run(["/usr/bin/python3", "-m", "pstats", self.paths["pstats"]],
                             input="sort cumulative\nstats 5\nquit\n", capture_output=True,
                             text=True, timeout=60)
        self.assertEqual(cli.returncode, 0, cli.stderr)
        self.assertIn("burn_half", cli.stdout)

    def test_speedscope_schema_and_totals(self):
        import jsonschema
        with open(os.path.join(speedscope_app(), "file-format-schema.json")) as f:
            schema = json.load(f)
        with open(self.paths["speedscope.json"]) as f:
            doc = json.load(f)
        jsonschema.validate(doc, schema)
        own, cum, total = pprof_shares(self.prof)
        weights = sum(sum(p["weights"]) for p in doc["profiles"])
        ns = sum(v[1] for v, _, _ in self.prof["samples"])
        self.assertEqual(weights, ns)
        threads = {lab["thread_id"] for _, _, lab in self.prof["samples"]}
        self.assertEqual(len(doc["profiles"]), len(threads))
        self.assertTrue(doc["profiles"][0]["name"].endswith(f"({self.target.pid})"),
                        doc["profiles"][0]["name"])
        frames = doc["shared"]["frames"]
        half = [i for i, f in enumerate(frames) if f["name"] == "burn_half"]
        self.assertEqual(len(half), 1)
        main = doc["profiles"][0]
        in_half = sum(w for s, w in zip(main["samples"], main["weights"]) if half[0] in s)
        livelib.within(self, "burn_half share in speedscope (%)", 100.0 * in_half / weights, 40,
                       60)
        for p in doc["profiles"]:
            self.assertEqual(p["endValue"], sum(p["weights"]))
            for s in p["samples"]:  # root first: <module> before run before burn_*
                names = [frames[i]["name"] for i in s]
                if "run" in names and "<module>" in names:
                    self.assertLess(names.index("<module>"), names.index("run"))

    def test_gecko_shape(self):
        with open(self.paths["gecko.json"], "rb") as f:
            raw = f.read()
        self.assertEqual(raw[:1], b"{")  # the Firefox Profiler sniffs the first byte
        doc = json.loads(raw)
        self.assertEqual(doc["systemHost"]["name"], "Firefox")
        prof = doc["profile"]
        meta = prof["meta"]
        self.assertEqual(meta["version"], 36)
        self.assertTrue(meta["presymbolicated"])
        self.assertIn("grey", [c["color"] for c in meta["categories"]])
        self.assertEqual([c["name"] for c in meta["categories"]],
                         ["Python", "Native", "GC", "Other"])
        for key in ("libs", "processes", "threads"):
            self.assertIsInstance(prof[key], list)
        self.assertAlmostEqual(meta["interval"], 1000.0 / float(RATE), places=3)
        now_ms = time.time() * 1000
        self.assertLess(now_ms - meta["startTime"], 120000)
        main = prof["threads"][0]
        self.assertEqual(main["name"], "GeckoMain")
        self.assertEqual(main["tid"], self.target.pid)
        self.assertEqual(main["pid"], self.target.pid)
        n = 0
        for t in prof["threads"]:
            st = t["stringTable"]
            fs, ss = t["frameTable"]["schema"], t["stackTable"]["schema"]
            self.assertEqual(len(fs), 8)
            times = [row[1] for row in t["samples"]["data"]]
            self.assertEqual(times, sorted(times))
            self.assertLessEqual(times[-1], doc["duration"] + 1)
            self.assertIsNone(t["samples"]["data"][-1][0])  # the end of the recording
            for i, (prefix, frame) in enumerate(t["stackTable"]["data"]):
                self.assertTrue(prefix is None or prefix < i)
                self.assertLess(frame, len(t["frameTable"]["data"]))
            for row in t["frameTable"]["data"]:
                loc = st[row[fs["location"]]]
                if loc.startswith("burn_half ("):
                    self.assertEqual(row[fs["category"]], 0)
                    self.assertRegex(loc, r"^burn_half \(/.*shares\.py:\d+\)$")
            n += len(times) - 1
        self.assertEqual(n, sum(v[0] for v, _, _ in self.prof["samples"]))

    def open_in_speedscope(self, path):
        d = test_web.browser()
        d.get("file://" + os.path.join(speedscope_app(), "index.html"))
        test_web.wait(lambda: d.find_elements("id", "file"), 15, "speedscope's file input")
        d.find_element("id", "file").send_keys(path)
        title = test_web.wait(lambda: d.title if d.title != "speedscope" else None, 20,
                              f"speedscope importing {os.path.basename(path)}")
        return d, title

    def test_speedscope_app_opens_both(self):
        for ext in ("speedscope.json", "gecko.json"):
            with self.subTest(ext=ext):
                d, title = self.open_in_speedscope(self.paths[ext])
                self.assertEqual(title, f"{os.path.basename(self.paths[ext])} - speedscope")
                test_web.screenshot(d, f"speedscope-{ext.split('.')[0]}.png")

    def test_heatmap_lines_match_pprof(self):
        d = test_web.browser()
        d.get("file://" + self.paths["heatmap.html"])
        test_web.wait(lambda: d.find_element("id", "sources").get_attribute("data-rendered"),
                      15, "the heatmap drawn")
        self.assertEqual(d.execute_script(
            "return performance.getEntriesByType('resource').length"), 0)
        rows = d.execute_script("""
            return Array.from(document.querySelectorAll('section.file tr[data-line]'))
                .map(t => [t.closest('section').dataset.path, +t.dataset.line,
                           +t.dataset.own, +t.dataset.total]);""")
        shown = {(f, ln): [o, t] for f, ln, o, t in rows if o or t}
        expected = {k: v for k, v in pprof_lines(self.prof).items()}
        self.assertEqual(shown, expected)
        # the target's own file, shown from its root: the hot line's text
        src = d.execute_script("""
            const s = Array.from(document.querySelectorAll('section.file'))
                .find(s => s.dataset.path.endsWith('/shares.py'));
            return [s.querySelector('.source-error'),
                    Array.from(s.querySelectorAll('tr[data-line]'))
                        .sort((a, b) => b.dataset.own - a.dataset.own)[0]
                        .querySelector('td.src').textContent];""")
        self.assertIsNone(src[0])
        self.assertIn("perf_counter", src[1])
        d.execute_script("""
            const rows = Array.from(document.querySelectorAll('tr[data-line]'))
                .filter(t => t.closest('section').dataset.path.endsWith('/shares.py'));
            rows.find(t => +t.dataset.line === 32).scrollIntoView({block: 'start'});""")
        test_web.screenshot(d, "heatmap.png")


def heatmap_data(path):
    """The per-line JSON a heatmap page embeds."""
    with open(path, encoding="utf-8") as f:
        page = f.read()
    start = page.index('id="pyprofd-heatmap">') + len('id="pyprofd-heatmap">')
    return json.loads(page[start:page.index("</script>", start)])


class HeatmapSourceTest(unittest.TestCase):
    """The source is read through the target's root, also when it is gone."""

    def test_container(self):
        tmp = livelib.scratch()
        target = livelib.start_target(tmp, "shares", "3.14", "container")
        path = os.path.join(tmp, "c.heatmap.html")
        try:
            out = subprocess.run([BINARY, "record", str(target.pid), "-d", "1", "-o", path],
                                 capture_output=True, text=True, timeout=60)
        finally:
            target.stop()
        self.assertEqual(out.returncode, 0, out.stderr)
        files = {f["path"]: f for f in heatmap_data(path)["files"]}
        mine = [f for p, f in files.items() if p.endswith("/shares.py")]
        self.assertEqual(len(mine), 1, list(files))
        self.assertNotIn("error", mine[0])
        self.assertIn("def burn_half(until):", [t.strip() for t in mine[0]["text"]])
        frozen = [f for p, f in files.items() if p.startswith("<frozen")]
        for f in frozen:
            self.assertIn("not a file", f["error"])

    def test_after_exit(self):
        tmp = livelib.scratch()
        path = os.path.join(tmp, "gone.heatmap.html")
        script = os.path.join(livelib.TARGETS_DIR, "shares.py")
        out = subprocess.run([BINARY, "record", "-o", path, "--", "/usr/bin/python3", script,
                              "--duration", "1"], capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        files = {f["path"]: f for f in heatmap_data(path)["files"]}
        self.assertNotIn("error", files[script])
        self.assertGreater(files[script]["own"], 50)

    def test_unreadable_for_the_target(self):
        """A file the target's user could not read is not shown, with the reason."""
        tmp = livelib.scratch()
        secret = os.path.join(tmp, "secret.py")
        code = "def spin():\n    while True:\n        pass\n"
        with open(secret, "w") as f:
            f.write(code)
        os.chmod(secret, 0o600)  # root's alone
        # the code names the file but was compiled from a string: the target,
        # running as nobody, never read the file and could not
        prog = (f"ns = {{}}; exec(compile({code!r}, {secret!r}, 'exec'), ns); "
                "print('pyprofd-target: ready', flush=True); ns['spin']()")
        proc = subprocess.Popen(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                                 "/usr/bin/python3", "-c", prog], stdout=subprocess.PIPE, text=True)
        try:
            self.assertEqual(proc.stdout.readline().strip(), "pyprofd-target: ready")
            path = os.path.join(tmp, "secret.heatmap.html")
            out = subprocess.run([BINARY, "record", str(proc.pid), "-d", "0.5", "-o", path],
                                 capture_output=True, text=True, timeout=60)
        finally:
            proc.kill()
            proc.wait()
            proc.stdout.close()
        self.assertEqual(out.returncode, 0, out.stderr)
        files = {f["path"]: f for f in heatmap_data(path)["files"]}
        # (the scratch directory is root's, 0700: the walk stops there, before
        # the file's own mode; test_faults_sources.py has each case apart)
        self.assertIn("may not search a directory on the way to it", files[secret]["error"])
        self.assertNotIn("text", files[secret])


class HostileTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = livelib.scratch()
        cls.target = livelib.start_target(cls.tmp, "hostile_source", "3.14")
        try:
            cls.paths, cls.summary = record(cls.tmp, cls.target, "hostile")
        finally:
            cls.target.stop()

    def test_pstats_loads(self):
        import pstats
        st = pstats.Stats(self.paths["pstats"])
        names = {k[2] for k in st.stats}
        files = {k[0] for k in st.stats}
        self.assertIn("</script><b>\x01\ufffd", names)
        self.assertIn("</script>\x01\ufffd.py", files)

    def test_json_parses(self):
        for ext in ("speedscope.json", "gecko.json"):
            with open(self.paths[ext], "rb") as f:
                raw = f.read()
            self.assertNotIn(b"</script>", raw)
            json.loads(raw.decode("utf-8"))

    def test_heatmap_escaped(self):
        d = test_web.browser()
        d.get("file://" + self.paths["heatmap.html"])
        test_web.wait(lambda: d.find_element("id", "sources").get_attribute("data-rendered"),
                      15, "the heatmap drawn")
        with open(self.paths["heatmap.html"], "rb") as f:
            page = f.read()
        self.assertEqual(page.count(b"</script>"), page.count(b"<script"))
        self.assertEqual(d.execute_script("return document.scripts.length"),
                         page.count(b"<script"))
        texts = d.execute_script("""
            return Array.from(document.querySelectorAll('td.src')).map(t => t.textContent);""")
        self.assertIn('MARK = "</script><script>alert(1)</script>"', texts)
        bad = [t for t in texts if "Latin-1" in t and "control byte" in t and "\ufffd" in t]
        self.assertEqual(len(bad), 1, texts[:20])
        paths = d.execute_script(
            "return Array.from(document.querySelectorAll('section.file')).map(s => s.dataset.path)")
        self.assertIn("</script>\x01\ufffd.py", paths)
        self.assertTrue(any(p.endswith("/hostile_source.py") for p in paths))

    def test_speedscope_app_opens_both(self):
        for ext in ("speedscope.json", "gecko.json"):
            with self.subTest(ext=ext):
                d, title = FormatsTest.open_in_speedscope(self, self.paths[ext])
                self.assertEqual(title, f"{os.path.basename(self.paths[ext])} - speedscope")


class OptionsTest(unittest.TestCase):
    def run_record(self, *args):
        return subprocess.run([BINARY, "record", *args], capture_output=True, text=True,
                              timeout=60)

    def test_format_names(self):
        out = self.run_record("--format", "nope", "1")
        self.assertEqual(out.returncode, 2)
        self.assertIn("pstats, speedscope, gecko or heatmap", out.stderr)

    def test_format_with_several_outputs(self):
        out = self.run_record("--format", "pstats", "-o", "a", "-o", "b", "1")
        self.assertEqual(out.returncode, 2)
        self.assertIn("each file's format comes from its name", out.stderr)

    def test_same_output_twice(self):
        out = self.run_record("-o", "a.pstats", "-o", "a.pstats", "1")
        self.assertEqual(out.returncode, 2)
        self.assertIn("named twice", out.stderr)

    def test_default_names(self):
        tmp = livelib.scratch()
        target = livelib.start_target(tmp, "shares", "3.11")
        try:
            for fmt, ext in (("pstats", "pstats"), ("gecko", "gecko.json"),
                             ("speedscope", "speedscope.json"), ("heatmap", "heatmap.html")):
                out = subprocess.run([BINARY, "record", str(target.pid), "-d", "0.3", "--format",
                                      fmt], capture_output=True, text=True, timeout=60, cwd=tmp)
                self.assertEqual(out.returncode, 0, out.stderr)
                self.assertTrue(os.path.exists(os.path.join(tmp, f"pyprofd-{target.pid}.{ext}")),
                                out.stderr)
        finally:
            target.stop()


def tearDownModule():
    test_web.tearDownModule()  # the browser


if __name__ == "__main__":
    livelib.run(needs=("root", "rootfs", "chromium"))
