# SPDX-License-Identifier: MIT
"""pyprofd test target: Python -> C -> Python, with non-ASCII function names.

Stack of the main thread (innermost last), always on CPU:

    <module>  ->  zażółć()  ->  sort_with_key()  ->  [C: sorted()]
              ->  slow_key()  ->  日本語()

sort_with_key() calls sorted(data, key=slow_key); sorted is C code, which
calls back into Python for the key of the first element: slow_key() calls
日本語(), which spins forever. So there is exactly one C boundary, between
slow_key (called by C) and sort_with_key (the caller of sorted): with
--native, pyprofd dump shows one <native> frame there. The names zażółć and
日本語 (valid identifiers, unchanged by NFKC) check that UTF-8 names come out
exactly.

Before spinning, 日本語() walks its own stack with sys._getframe() (which
skips the C call) and prints one line

    pyprofd-expected: {"python", "pid", "thread_id",
                       "frames": [{"function", "file", "line", "end_line",
                                   "column", "end_column"}, ...]}

(leaf first; positions of each caller's current instruction; the leaf spins
on one line, with null columns; JSON with ASCII escapes, so plain ASCII). Then
it prints "pyprofd-target: ready" and spins until SIGTERM/SIGINT or until
--duration SECONDS has elapsed. The garbage collector is disabled while
spinning.
"""

import argparse
import gc
import signal
import sys

from pyprofd_expected import announce

done = False


def 日本語():
    me = sys._getframe()
    announce(me, me.f_lineno + 1)  # the next line is the leaf's line
    while not done: pass  # noqa: E701 -- one line on purpose: a stable leaf line


def slow_key(item):
    日本語()
    return item


def sort_with_key(data):
    return sorted(data, key=slow_key)


def zażółć():
    sort_with_key([3, 1, 2])


def _exit_cleanly(signum, frame):
    # Also needed in container mode, where we are PID 1 of a PID namespace and
    # the kernel would otherwise ignore SIGTERM.
    sys.exit(0)


parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--duration", type=float, default=None,
                    help="exit after this many seconds (default: run until killed)")
args = parser.parse_args()
signal.signal(signal.SIGTERM, _exit_cleanly)
signal.signal(signal.SIGINT, _exit_cleanly)
if args.duration is not None:
    # The spinning leaf never looks at the clock: a one-shot timer ends it.
    signal.signal(signal.SIGALRM, _exit_cleanly)
    signal.setitimer(signal.ITIMER_REAL, args.duration)

gc.collect()
gc.disable()
zażółć()
