# SPDX-License-Identifier: MIT
"""The heatmap's sources read as the target could (issue 37): `pyprofd
record --format heatmap` against targets whose code names files they could
not read, files that are not files, and one file under twenty names.

Each target is Debian's python3 running a chain of functions compiled with
compile(SRC, NAME, "exec"), one per NAME, the innermost spinning: every
sample has a frame in every file named, and the target never reads any of
them itself. Each file holds a marker string of its own.

    NobodyTest  the target runs as nobody (65534, no groups):
                  locked/secret.py     0644 in a 0700 directory of root's,
                                       by its name and through a link
                  open/rootonly.py     0600, root's
                  open/fifo, fifo2     FIFOs (fifo has a writer waiting in
                                       open(): it would return if anything
                                       opened the FIFO)
                  open/zero, /dev/zero a character device (1, 5), made here
                                       and the system's
                  /proc/self/environ   procfs (pyprofd's own "self")
                  open/nul.py          4 MiB of NULs, three names
                  open/big.py          4 MiB of text, twenty names (hard
                                       links and symbolic links)
                  open/lt0-2.py        4 MiB of '<' each (6 bytes each in
                                       the page): over the page's budget
                no marker of an unreadable file in the page, each refused
                with its reason, none of them opened (inotify: an O_PATH
                step makes no IN_OPEN, an open does), big.py's text once
                (nineteen "same_as"), the page under the 64 MiB budget plus
                its frame, the budget's left-outs counted and shown by the
                page in chromium, record done in bounded time
    RootTest    a root target naming /proc/self/environ (refused: neither
                its environment's marker nor pyprofd's in the page) and the
                locked secret by both names (shown, once: root may read it)

Run by ctest as test_faults_sources (label integration), or by hand:
    /usr/bin/python3 tests/integration/test_faults_sources.py [-v] [Class[.test]]
"""

import ctypes
import json
import os
import select
import stat
import struct
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import livelib  # noqa: E402
import test_web  # noqa: E402  (its headless chromium)

BINARY = livelib.BINARY
NOBODY = 65534
MIB = 1 << 20
BUDGET = 64 * MIB  # HEATMAP_MAX_PAGE_TEXT
RECORD_LIMIT = 40  # seconds record may take, reading every file (ASan, a loaded machine)

# The target: a chain of one function per name in argv, the innermost spinning.
CHAIN = """\
import sys
def leaf():
    while True:
        pass
nxt = leaf
for name in reversed(sys.argv[1:]):
    ns = {"nxt": nxt}
    exec(compile("def hop():\\n    return nxt()\\n", name, "exec"), ns)
    nxt = ns["hop"]
print("pyprofd-target: ready", flush=True)
nxt()
"""

IN_OPEN = 0x20


class OpenWatch:
    """inotify IN_OPEN on some files: which of them something opened."""

    def __init__(self, paths):
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self.libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        self.names = {}
        for p in paths:
            wd = self.libc.inotify_add_watch(self.fd, os.fsencode(p), IN_OPEN)
            if wd < 0:
                raise OSError(ctypes.get_errno(), f"inotify_add_watch {p}")
            self.names[wd] = p

    def opened(self):
        """The watched paths opened since the last call."""
        seen = set()
        while select.select([self.fd], [], [], 0.1)[0]:
            data = os.read(self.fd, 65536)
            i = 0
            while i < len(data):
                wd, mask, _cookie, n = struct.unpack_from("iIII", data, i)
                if mask & IN_OPEN and wd in self.names:
                    seen.add(self.names[wd])
                i += 16 + n
        return seen

    def close(self):
        os.close(self.fd)


def make_file(path, data, mode=0o644):
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, mode)


def heatmap_data(path):
    """The per-line JSON a heatmap page embeds."""
    with open(path, encoding="utf-8") as f:
        page = f.read()
    start = page.index('id="pyprofd-heatmap">') + len('id="pyprofd-heatmap">')
    return json.loads(page[start:page.index("</script>", start)])


def record(pid, page, env_mark):
    """`pyprofd record PID -d 1 -o PAGE`, pyprofd's environment holding @env_mark;
    returns (the CompletedProcess, its seconds)."""
    env = dict(os.environ, PYPROFD_TEST_ENV_MARK=env_mark)
    started = time.monotonic()
    out = subprocess.run([BINARY, "record", str(pid), "-d", "1", "-r", "50", "-o", page],
                         capture_output=True, text=True, timeout=RECORD_LIMIT + 60, env=env)
    return out, time.monotonic() - started


class SourcesCase(unittest.TestCase):
    def start(self, names, as_nobody, env_mark):
        """The chain over @names as nobody or root; stopped at the test's end."""
        argv = ["/usr/bin/python3", "-c", CHAIN, *names]
        if as_nobody:
            argv = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *argv]
        env = dict(livelib.TARGET_ENV, PYPROFD_TEST_ENV_MARK=env_mark)
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, cwd="/", env=env)

        def stop():
            proc.kill()
            proc.wait()
            proc.stdout.close()
        self.addCleanup(stop)
        self.assertEqual(proc.stdout.readline().strip(), "pyprofd-target: ready")
        return proc

    def by_path(self, data):
        files = {}
        for i, f in enumerate(data["files"]):
            f["index"] = i
            files[f["path"]] = f
        return files


class NobodyTest(SourcesCase):
    @classmethod
    def setUpClass(cls):
        tmp = cls.tmp = os.path.join(livelib.scratch(), "nobody")
        os.makedirs(tmp)
        os.chmod(livelib.scratch(), 0o755)  # nobody may search down to open/
        os.chmod(tmp, 0o755)
        locked, opened = os.path.join(tmp, "locked"), os.path.join(tmp, "open")
        os.mkdir(locked, 0o700)
        os.mkdir(opened, 0o755)
        cls.secret = os.path.join(locked, "secret.py")
        make_file(cls.secret, b"SECRET = 'PYPROFD-MARK-LOCKED'\n")
        cls.secret_link = os.path.join(opened, "to-locked.py")
        os.symlink("../locked/secret.py", cls.secret_link)
        cls.rootonly = os.path.join(opened, "rootonly.py")
        make_file(cls.rootonly, b"ROOT = 'PYPROFD-MARK-ROOTONLY'\n", 0o600)
        cls.fifo, cls.fifo2 = os.path.join(opened, "fifo"), os.path.join(opened, "fifo2")
        for f in (cls.fifo, cls.fifo2):
            os.mkfifo(f, 0o666)
            os.chmod(f, 0o666)
        cls.zero = os.path.join(opened, "zero")
        os.mknod(cls.zero, stat.S_IFCHR | 0o666, os.makedev(1, 5))
        os.chmod(cls.zero, 0o666)
        nul = os.path.join(opened, "nul.py")
        make_file(nul, b"NUL = 'PYPROFD-MARK-NUL'\n" + b"\0" * (4 * MIB - 25))
        cls.nul_names = [nul, os.path.join(opened, "nul-h.py"), os.path.join(opened, "nul-s.py")]
        os.link(nul, cls.nul_names[1])
        os.symlink("nul.py", cls.nul_names[2])
        # 4 MiB exactly (the largest file shown), lines of 4 KiB
        big = os.path.join(opened, "big.py")
        line = b"#" * 4095 + b"\n"
        make_file(big, b"BIG = 'PYPROFD-MARK-BIG'" + b" " * 4071 + b"\n" + line * 1023)
        assert os.path.getsize(big) == 4 * MIB
        cls.big_names = [big]
        for i in range(10):
            os.link(big, os.path.join(opened, f"big-h{i}.py"))
            cls.big_names.append(os.path.join(opened, f"big-h{i}.py"))
        for i in range(9):
            os.symlink("big.py" if i % 2 else big, os.path.join(opened, f"big-s{i}.py"))
            cls.big_names.append(os.path.join(opened, f"big-s{i}.py"))
        # three texts of 24 MiB each in the page: not all fit in 64
        cls.lt_names = []
        for i in range(3):
            p = os.path.join(opened, f"lt{i}.py")
            make_file(p, (f"LT{i} = 'PYPROFD-MARK-LT{i}'\n".encode() +
                          (b"<" * (64 * 1024 - 1) + b"\n") * 64)[:4 * MIB])
            cls.lt_names.append(p)
        cls.refused = {  # name -> (what the reason says, its marker)
            cls.secret: ("may not search a directory on the way to it", "PYPROFD-MARK-LOCKED"),
            cls.secret_link: ("may not search a directory on the way to it",
                              "PYPROFD-MARK-LOCKED"),
            cls.rootonly: ("the program itself may not read it", "PYPROFD-MARK-ROOTONLY"),
            cls.fifo: ("not a regular file: a FIFO", None),
            cls.fifo2: ("not a regular file: a FIFO", None),
            cls.zero: ("not a regular file: a character device", None),
            "/dev/zero": ("not a regular file: a character device", None),
            "/proc/self/environ": ("on procfs or sysfs", "PYPROFD-MARK-ENV"),
        }
        for n in cls.nul_names:
            cls.refused[n] = ("not text: it holds a NUL byte", "PYPROFD-MARK-NUL")

    def test_sources(self):
        names = list(self.refused) + self.big_names + self.lt_names
        # never opened: the unreadable files, the FIFO and the device made here
        watch = OpenWatch([self.secret, self.rootonly, self.fifo, self.fifo2, self.zero])
        self.addCleanup(watch.close)
        probe = os.open(self.secret, os.O_PATH)  # the detector itself: O_PATH is no open
        os.close(probe)
        self.assertEqual(watch.opened(), set(), "an O_PATH open made IN_OPEN: no detector")
        target = self.start(names, True, "PYPROFD-MARK-ENV-TARGET")
        # a writer waiting for a reader of fifo: its open() returns if one comes
        writer = {}

        def wait_for_reader():
            fd = os.open(self.fifo, os.O_WRONLY)
            writer["opened_at"] = time.monotonic()
            os.close(fd)
        t = threading.Thread(target=wait_for_reader, daemon=True)
        t.start()
        page = os.path.join(self.tmp, "nobody.heatmap.html")
        out, seconds = record(target.pid, page, "PYPROFD-MARK-ENV-RECORD")
        done = time.monotonic()
        livelib.note(f"record (1 s of samples, {len(names)} files) took {seconds:.1f} s; "
                     f"page {os.path.getsize(page) / MIB:.1f} MiB")
        opened = watch.opened()
        r = os.open(self.fifo, os.O_RDONLY | os.O_NONBLOCK)  # lets the writer go
        t.join(10)
        os.close(r)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertLess(seconds, RECORD_LIMIT)
        self.assertEqual(opened, set(), "pyprofd opened what the target could not")
        self.assertGreaterEqual(writer.get("opened_at", 0), done, "the FIFO was opened")

        with open(page, "rb") as f:
            raw = f.read()
        for mark in ("PYPROFD-MARK-LOCKED", "PYPROFD-MARK-ROOTONLY", "PYPROFD-MARK-NUL",
                     "PYPROFD-MARK-ENV"):
            self.assertNotIn(mark.encode(), raw)
        self.assertNotIn(b"\\u0000", raw)
        self.assertLess(len(raw), BUDGET + MIB)

        data = heatmap_data(page)
        files = self.by_path(data)
        for name, (why, _) in self.refused.items():
            with self.subTest(name=name):
                self.assertIn(name, files)
                self.assertNotIn("text", files[name])
                self.assertIn(why, files[name]["error"])
        # twenty names, one text
        first = min(files[n]["index"] for n in self.big_names)
        for n in self.big_names:
            with self.subTest(name=n):
                f = files[n]
                self.assertNotIn("error", f)
                if f["index"] == first:
                    self.assertEqual(len(f["text"]), 1024)
                    self.assertIn("PYPROFD-MARK-BIG", f["text"][0])
                else:
                    self.assertNotIn("text", f)
                    self.assertEqual(f["same_as"], first)
        self.assertEqual(raw.count(b"PYPROFD-MARK-BIG"), 1)
        # the budget: the '<' texts that fit, the others left out and counted
        shown = [n for n in self.lt_names if "text" in files[n]]
        left = [n for n in self.lt_names if "text" not in files[n]]
        self.assertTrue(shown and left, (shown, left))
        for n in left:
            self.assertIn("left out: the page's source budget is spent", files[n]["error"])
        self.assertEqual(data.get("text_left_off"), len(left))
        text_bytes = sum(len(json.dumps(f["text"], ensure_ascii=False).replace("<", "\\u003c")
                             .encode()) for f in data["files"] if "text" in f)
        self.assertLessEqual(text_bytes, BUDGET)
        self.assertGreater(text_bytes, BUDGET - 24 * MIB - 1024)  # the budget was what stopped

        # the page as a browser shows it
        d = test_web.browser()
        d.get("file://" + page)
        test_web.wait(lambda: d.find_element("id", "sources").get_attribute("data-rendered"),
                      60, "the heatmap drawn")
        shown = d.execute_script("""
            const out = {};
            for (const s of document.querySelectorAll('section.file')) {
              const err = s.querySelector('.source-error'), same = s.querySelector('.same-as');
              const src = s.querySelector('td.src');
              out[s.dataset.path] = [err && err.textContent, same && same.textContent,
                                     s.querySelectorAll('tr[data-line]').length,
                                     src ? src.textContent.slice(0, 40) : null];
            }
            return [out, document.getElementById('status').textContent];""")
        sections, status = shown
        self.assertIn(f"the source of {len(left)} files left out: the page's source budget",
                      status)
        # big.py's text drawn once: other names draw their lines with samples (line 2)
        for n in self.big_names:
            err, same, rows, first_line = sections[n]
            self.assertIsNone(err)
            if files[n]["index"] == first:
                self.assertIsNone(same)
                self.assertEqual(rows, 1024)
                self.assertIn("PYPROFD-MARK-BIG", first_line)
            else:
                self.assertEqual(same, "the same file as " + data["files"][first]["path"] +
                                 " (only the lines with samples here)")
                self.assertEqual(rows, 1)
                self.assertEqual(first_line, "#" * 40)
        for name, (why, _) in self.refused.items():
            self.assertIn(why, sections[name][0])


class RootTest(SourcesCase):
    def test_proc_self_environ(self):
        tmp = os.path.join(livelib.scratch(), "root")
        os.makedirs(os.path.join(tmp, "locked"), 0o700)
        secret = os.path.join(tmp, "locked", "secret.py")
        make_file(secret, b"SECRET = 'PYPROFD-MARK-LOCKED'\n")
        link = os.path.join(tmp, "to-locked.py")
        os.symlink("locked/secret.py", link)
        target = self.start(["/proc/self/environ", "/proc/1/environ", secret, link], False,
                            "PYPROFD-MARK-ENV-TARGET")
        page = os.path.join(tmp, "root.heatmap.html")
        out, seconds = record(target.pid, page, "PYPROFD-MARK-ENV-RECORD")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertLess(seconds, RECORD_LIMIT)
        with open(page, "rb") as f:
            raw = f.read()
        self.assertNotIn(b"PYPROFD-MARK-ENV", raw)
        self.assertNotIn(b"PYPROFD_TEST_ENV_MARK", raw)
        files = self.by_path(heatmap_data(page))
        for name in ("/proc/self/environ", "/proc/1/environ"):
            self.assertIn("on procfs or sysfs", files[name]["error"])
            self.assertNotIn("text", files[name])
        # root may read the locked file: shown, once, under both names
        self.assertEqual(raw.count(b"PYPROFD-MARK-LOCKED"), 1)
        a, b = sorted((files[secret], files[link]), key=lambda f: f["index"])
        self.assertEqual(a["text"], ["SECRET = 'PYPROFD-MARK-LOCKED'"])
        self.assertEqual(b["same_as"], a["index"])


def tearDownModule():
    test_web.tearDownModule()  # the browser


if __name__ == "__main__":
    livelib.run(needs=("root", "chromium"))
