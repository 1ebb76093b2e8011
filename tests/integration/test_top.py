# SPDX-License-Identifier: MIT
"""Integration test of `pyprofd top`: a live view in a real terminal (tmux).

Runs with Debian's /usr/bin/python3 (standard library only), as root, once
the test rootfs exists, with tmux (Debian's) for the terminal. The target is
tests/targets/shares.py, which burns 50 / 30 / 20 % of its time in
burn_half / burn_third / burn_fifth.

    terminal  in a 120x30 tmux pane, `pyprofd top PID`: within a few seconds
              the first row of the table is burn_half, with about half of the
              own share; `t` sorts by total (run and <module> above it, 100 %);
              `q` quits at once with status 0, and the cursor is shown again
    plain     stdout a pipe: a table every second with no escape sequences,
              the last one with burn_half first; -d ends it
    errors    no PID, a bad rate: status 2; a PID that is no Python: status 1
"""

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


def tmux(*args, check=True):
    proc = subprocess.run(["tmux", "-S", SOCKET, *args], capture_output=True, text=True,
                          timeout=10)
    if check and proc.returncode != 0:
        raise RuntimeError(f"tmux {' '.join(args)}: {proc.stderr}")
    return proc


SOCKET = None


def table(screen):
    """[(own %, total %, function)] of the table on a captured screen."""
    rows = []
    for line in screen.splitlines():
        m = re.match(r"^\s*([0-9.]+)%\s+([0-9.]+)%\s+(\S+)", line)
        if m:
            rows.append((float(m.group(1)), float(m.group(2)), m.group(3)))
    return rows


# Not top's default 100 Hz: shares.py's own period is 10 ms, and samples at
# its period alias with it (a CI run saw burn_third at 52 % instead of 30 %).
class TopTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        global SOCKET
        cls.tmp = livelib.scratch()
        SOCKET = os.path.join(cls.tmp, "tmux.sock")
        cls.target = livelib.start_target(cls.tmp, "shares", "3.14")

    @classmethod
    def tearDownClass(cls):
        cls.target.stop()
        if SOCKET:
            tmux("kill-server", check=False)

    def test_terminal(self):
        status = os.path.join(self.tmp, "status")
        tmux("new-session", "-d", "-s", "top", "-x", "120", "-y", "30",
             f"{BINARY} top {self.target.pid}; echo $? > {status}; sleep 30")
        rows, screen = [], ""
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            time.sleep(0.5)
            screen = tmux("capture-pane", "-p", "-t", "top").stdout
            rows = table(screen)
            # a few seconds of samples: the shares have settled
            if rows and rows[0][2] == "burn_half" and "thread samples" in screen and \
                    int(re.search(r"(\d+) thread samples", screen).group(1)) >= 200:
                break
        with open(os.path.join(self.tmp, "top-screen.txt"), "w") as f:
            f.write(screen)
        self.assertTrue(rows, f"no table on the screen:\n{screen}")
        self.assertEqual(rows[0][2], "burn_half", screen)
        livelib.within(self, "burn_half's own share on the screen", rows[0][0], 35.0, 65.0,
                       unit="%")
        self.assertIn("sorted by own", screen)
        self.assertRegex(screen, r"pyprofd top: process \d+, CPython 3\.14")
        self.assertRegex(screen, r"Hz achieved, \d+ thread samples in the window, \d+ failed, "
                                 r"\d+ missed")

        tmux("send-keys", "-t", "top", "t")
        time.sleep(1.5)
        screen = tmux("capture-pane", "-p", "-t", "top").stdout
        self.assertIn("sorted by total", screen)
        rows = table(screen)
        self.assertEqual(rows[0][1], 100.0, screen)  # <module> or run: on every stack
        self.assertIn(rows[0][2], ("<module>", "run"), screen)

        tmux("send-keys", "-t", "top", "q")
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not os.path.exists(status):
            time.sleep(0.1)
        self.assertTrue(os.path.exists(status), "q did not quit within 5 s")
        time.sleep(0.1)
        with open(status) as f:
            self.assertEqual(f.read().strip(), "0")
        tmux("kill-session", "-t", "top", check=False)

    def test_plain(self):
        proc = subprocess.run([BINARY, "top", "-d", "3.2", "-n", "5", str(self.target.pid)],
                              capture_output=True, text=True, timeout=30)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertNotIn("\x1b", proc.stdout, "escape sequences without a terminal")
        blocks = proc.stdout.split("--- ")[1:]
        self.assertGreaterEqual(len(blocks), 3, proc.stdout)
        rows = table(blocks[-1])
        self.assertEqual(len(rows), 5, blocks[-1])  # burn_* x 3, run, <module>: -n 5
        self.assertEqual(rows[0][2], "burn_half", blocks[-1])

    def test_errors(self):
        for args, rc in (([], 2), (["-r", "fast", "1"], 2), (["1"], 1)):
            proc = subprocess.run([BINARY, "top", *args], capture_output=True, text=True,
                                  timeout=30)
            self.assertEqual(proc.returncode, rc, f"top {args}: {proc.stderr}")
            self.assertTrue(proc.stderr.strip(), f"top {args}: no message")


if __name__ == "__main__":
    if not shutil.which("tmux"):
        print("test_top: tmux not found (scripts/bootstrap.sh installs it)", file=sys.stderr)
        sys.exit(77)
    livelib.run()
