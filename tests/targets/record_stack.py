# SPDX-License-Identifier: MIT
"""pyprofd test target: a main thread that records its own stack, then spins.

Stack of the main thread (innermost last), always on CPU:

    <module>  ->  outer()  ->  Klass.method()  ->  inner()  ->  spin()

Klass.method is a method, so its co_qualname ("Klass.method") differs from
its co_name ("method"). Before it starts spinning, spin() walks its own stack
with sys._getframe() and prints it, leaf first, as one line

    pyprofd-expected: {"python": ..., "pid": ..., "thread_id": ...,
                       "frames": [{"function", "file", "line", "end_line",
                                   "column", "end_column"}, ...]}

where each caller frame carries the PEP 657 positions of its current
instruction (code.co_positions()[f_lasti // 2]): the CALL that is still
running, so they stay valid while the leaf spins. The leaf spins in
`while not done: pass`, a loop whose every instruction is on that one line on
3.13, 3.14 and 3.15 (checked with dis), so its line is stable; its columns
are not (they depend on which loop instruction is current) and are recorded
as null. "pid" is the PID as the target sees it (1 in container mode).

Prints the expected line, then "pyprofd-target: ready", then spins until
SIGTERM/SIGINT or until --duration SECONDS has elapsed. The garbage
collector is disabled while spinning (the loop allocates nothing anyway), so
no <GC> marker shows up in a sample.
"""

import argparse
import gc
import signal
import sys

from pyprofd_expected import announce

done = False


def spin():
    me = sys._getframe()
    announce(me, me.f_lineno + 1, check_lines=True)  # the next line is the leaf's line
    while not done: pass  # noqa: E701 -- one line on purpose: a stable leaf line


def inner():
    spin()


class Klass:
    def method(self):
        inner()


def outer():
    Klass().method()


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
outer()
