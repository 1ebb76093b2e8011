# SPDX-License-Identifier: MIT
"""pyprofd test target: a main thread spinning below generator and coroutine frames.

Stack of the main thread (innermost last), always on CPU:

    <module>  ->  drive()  ->  worker()  ->  ticks()  ->  countdown()  ->  spin()

where
    drive()      is a plain function that creates the coroutine worker() and
                 drives it by hand with coro.send(None) (no event loop);
    worker()     is a coroutine (async def) whose body iterates over the
                 generator ticks() with a for loop;
    ticks()      is a generator that yields once, then delegates with
                 "yield from" to the generator countdown();
    countdown()  is a generator that calls spin() on its first resumption.

So worker, ticks and countdown are frames owned by coroutine/generator
objects, not by the C stack, and must appear in that order between drive()
and spin(). The C calls in between (coro.send, the for loop's first
next()) may show up as <native> frames with --native.

Before spinning, spin() walks its own stack with sys._getframe() and prints
one line

    pyprofd-expected: {"python", "pid", "thread_id",
                       "frames": [{"function", "file", "line", "end_line",
                                   "column", "end_column"}, ...]}

(leaf first; positions of each caller's current instruction; the leaf spins
on one line, with null columns). Then it prints "pyprofd-target: ready" and
spins until SIGTERM/SIGINT or until --duration SECONDS has elapsed. The
garbage collector is disabled while spinning.
"""

import argparse
import gc
import signal
import sys

from pyprofd_expected import announce

done = False


def spin():
    me = sys._getframe()
    announce(me, me.f_lineno + 1)  # the next line is the leaf's line
    while not done: pass  # noqa: E701 -- one line on purpose: a stable leaf line


def countdown():
    spin()
    yield "spun"


def ticks():
    yield "first"
    yield from countdown()


async def worker():
    seen = []
    for tick in ticks():
        seen.append(tick)
    return seen


def drive():
    coro = worker()
    try:
        coro.send(None)
    except StopIteration:
        pass


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
drive()
