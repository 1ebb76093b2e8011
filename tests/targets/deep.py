# SPDX-License-Identifier: MIT
"""pyprofd test target: a main thread spinning at the bottom of deep recursion.

Stack of the main thread (innermost last), always on CPU:

    <module>  ->  descend()  ->  recurse(500)  ->  recurse(499)  ->  ...
              ->  recurse(1)  ->  spin()

so exactly DEPTH (500) recurse frames, all on the same line, between
descend() and spin(); a reader that loses, repeats or reorders frames of a
long chain shows up here. Before it spins, spin() walks its own stack with
sys._getframe() and prints one line

    pyprofd-expected: {"python", "pid", "thread_id", "depth": 500,
                       "frames": [{"function", "file", "line", "end_line",
                                   "column", "end_column"}, ...]}

(leaf first; positions of each caller's current CALL instruction; the leaf
spins on one line, with null columns). Then it prints "pyprofd-target: ready"
and spins until SIGTERM/SIGINT or until --duration SECONDS has elapsed. The
garbage collector is disabled while spinning.
"""

import argparse
import gc
import signal
import sys

from pyprofd_expected import announce

DEPTH = 500

done = False


def spin():
    me = sys._getframe()
    announce(me, me.f_lineno + 1, depth=DEPTH)  # the next line is the leaf's line
    while not done: pass  # noqa: E701 -- one line on purpose: a stable leaf line


def recurse(n):
    if n > 1:
        recurse(n - 1)
    else:
        spin()


def descend():
    recurse(DEPTH)


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
sys.setrecursionlimit(max(sys.getrecursionlimit(), DEPTH + 100))

gc.collect()
gc.disable()
descend()
