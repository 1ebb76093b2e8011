# SPDX-License-Identifier: MIT
"""pyprofd test target: frames of code written on one line (issue 37).

CPython 3.9 leaves a code object's co_lnotab empty when all its
instructions are on its first line: a lambda, a one-line function, a
generator expression on one line. Such a frame is on co_firstlineno, as the
interpreter's own f_lineno says (a profiler that took the empty table for a
missing one put it at line 0).

The main thread spins on CPU in

    <module> -> one_line() -> <lambda> -> spin() -> [C: any()] -> <genexpr>

each of the last four written on one line, so each of their frames is on
its code object's first line. Before spinning it prints

    pyprofd-expected: {"python": "3.X.Y", "lines": {NAME: LINE, ...}}

(NAME: co_name, LINE: co_firstlineno, for the four), then
"pyprofd-target: ready", and spins until SIGTERM/SIGINT.
"""

import json
import platform
import signal
import sys


def spin(): return any(False for _ in iter(int, 1))  # noqa: E704 (one line on purpose)
run = lambda: spin()  # noqa: E731
def one_line(): return run()  # noqa: E302, E704


def _exit(signum, frame):
    sys.exit(0)


signal.signal(signal.SIGTERM, _exit)
signal.signal(signal.SIGINT, _exit)
genexpr = next(c for c in spin.__code__.co_consts if hasattr(c, "co_code"))
lines = {c.co_name: c.co_firstlineno for c in (one_line.__code__, run.__code__, spin.__code__,
                                               genexpr)}
print("pyprofd-expected: " + json.dumps({"python": platform.python_version(), "lines": lines}),
      flush=True)
print("pyprofd-target: ready", flush=True)
one_line()
