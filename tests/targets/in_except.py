# SPDX-License-Identifier: MIT
"""pyprofd test target: CPU time split between inside and outside an except block.

Stack of the main thread (innermost last), always on CPU:

    <module>  ->  run()  ->  spin_handling()   5 ms of every 10 ms, spinning
                                               inside "except TargetError:"
                                               (an exception is being handled)
                         ->  spin_plain()      5 ms of every 10 ms, spinning
                                               with no exception at all

Both spin on time.perf_counter() (C code), so they are the leaves; a slice
that overran (the process was preempted) is made up for later. In an
exception-mode profile (threads handling an exception) only spin_handling
appears; a wall-clock profile has both about equally. The garbage collector
is disabled.

Prints "pyprofd-target: ready", then runs until SIGTERM/SIGINT or until
--duration SECONDS has elapsed.
"""

import argparse
import gc
import signal
import sys
import time

perf_counter = time.perf_counter


class TargetError(Exception):
    pass


def spin_handling(until):
    try:
        raise TargetError(until)
    except TargetError:
        while perf_counter() < until:
            pass


def spin_plain(until):
    while perf_counter() < until:
        pass


def run(deadline):
    # 5 ms each per 10 ms; a slice that overran (the process was preempted)
    # is made up for in the next periods, so the halves stay equal.
    start = perf_counter()
    spent = [0.0, 0.0]
    end = start
    while deadline is None or end < deadline:
        end += 0.010
        for i, spin in enumerate((spin_handling, spin_plain)):
            now = perf_counter()
            budget = 0.5 * (end - start) - spent[i]
            if budget > 0:
                spin(now + budget)
                spent[i] += perf_counter() - now


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
gc.collect()
gc.disable()
print("pyprofd-target: ready", flush=True)
run(None if args.duration is None else perf_counter() + args.duration)
