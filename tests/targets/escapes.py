# SPDX-License-Identifier: MIT
"""pyprofd test target: names that hold terminal escape sequences.

A profiled process chooses its function names, file names and command line.
This one puts escape sequences in them, as an attacker would, to check that
pyprofd shows them instead of sending them to the user's terminal:

    TITLE  "\\x1b]0;pwned\\x07"  sets the terminal's (tmux pane's) title
    RED    "\\x1b[31m"           turns what follows red
    CSI    "\\x9b"               the one-character (C1) form of ESC [
    DEL    "\\x7f"               rubs out on some terminals

Stack of the main thread (innermost last), always on CPU:

    <module>  ->  run()  ->  TITLE + "evil" + RED + "red"

The leaf is compiled from source with the file name
"/tmp/" + RED + "red" + CSI + "31m" + DEL + TITLE + ".py", and its code object
renamed (co_name and co_qualname) to TITLE + "evil" + RED + "red"; it spins in
Python, so it is the leaf of every sample. The process also renames itself
(prctl PR_SET_NAME: /proc/PID/comm) to RED + "comm" + TITLE (its first 15
bytes), and run-target.sh may be given arguments, which end up in its command
line as they are.

Prints "pyprofd-target: ready", then runs until SIGTERM/SIGINT, or until
--duration SECONDS has elapsed (then exits with status 0), or until SIGUSR1:
then it replaces itself with /bin/sleep 600 (same PID, no Python any more).
"""

import argparse
import os
import signal
import sys
import time

TITLE = "\x1b]0;pwned\x07"
RED = "\x1b[31m"
CSI = "\x9b"
DEL = "\x7f"
NAME = TITLE + "evil" + RED + "red"
FILE = "/tmp/" + RED + "red" + CSI + "31m" + DEL + TITLE + ".py"

SOURCE = """
def spin(n):
    total = 0
    for i in range(n):
        total += i * i
    return total
"""

_exec = False


def _exec_requested(signum, frame):
    global _exec
    _exec = True


def make_leaf():
    space = {}
    exec(compile(SOURCE, FILE, "exec"), space)
    leaf = space["spin"]
    leaf.__code__ = leaf.__code__.replace(co_name=NAME, co_qualname=NAME)
    return leaf


def run(leaf, deadline):
    while not _exec and (deadline is None or time.monotonic() < deadline):
        leaf(20000)
    if _exec:
        os.execv("/bin/sleep", ["sleep", "600"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=float)
    ap.add_argument("rest", nargs="*")  # whatever the caller put in the command line
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda s, f: sys.exit(0))
    signal.signal(signal.SIGUSR1, _exec_requested)
    try:  # prctl(PR_SET_NAME): no /proc needed (a plain chroot has none)
        import ctypes
        ctypes.CDLL(None).prctl(15, (RED + "comm" + TITLE).encode()[:15], 0, 0, 0)
    except (OSError, AttributeError, ImportError):
        pass  # the name is only a bonus
    leaf = make_leaf()
    deadline = time.monotonic() + args.duration if args.duration else None
    print("pyprofd-target: ready", flush=True)
    run(leaf, deadline)


if __name__ == "__main__":
    main()
