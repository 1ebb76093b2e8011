# SPDX-License-Identifier: MIT
"""pyprofd test target: a Python process that replaces itself with exec().

Stack of the main thread before the exec (innermost last):

    <module>  ->  run()  ->  hot_before()

On SIGUSR1 it calls os.execv() with what --exec-to names:

    sleep    /bin/sleep 600: no Python any more
    self     this interpreter again, running hot_after() (same PID, same start
             time, and for a non-PIE python the same runtime address)
    3.X      /usr/bin/python3.X running hot_after()

After the exec (when it is Python) the stack is <module> -> run() ->
hot_after(). Used by the fault suite (tests/integration/test_faults.py): the
agent must notice the exec and look at the process again.

Prints "pyprofd-target: ready" once set up (only before the exec).
"""

import argparse
import os
import signal
import sys


def _spin(n):
    total = 0
    for i in range(n):
        total += i * i
    return total


def hot_before():
    return _spin(20000)


def hot_after():
    return _spin(20000)


_go = False


def _exec_requested(signum, frame):
    global _go
    _go = True


def run(fn, to):
    while not _go:
        fn()
    if to == "sleep":
        os.execv("/bin/sleep", ["sleep", "600"])
    interp = sys.executable if to == "self" else f"/usr/bin/python{to}"
    os.execv(interp, [interp, "-u", os.path.abspath(__file__), "--after"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--exec-to", default="sleep")
    ap.add_argument("--after", action="store_true")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda s, f: sys.exit(0))
    if args.after:
        while True:
            hot_after()
    signal.signal(signal.SIGUSR1, _exec_requested)
    print("pyprofd-target: ready", flush=True)
    run(hot_before, args.exec_to)


if __name__ == "__main__":
    main()
