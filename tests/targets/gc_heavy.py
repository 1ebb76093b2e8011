# SPDX-License-Identifier: MIT
"""pyprofd test target: the cyclic garbage collector runs all the time.

Stack of the main thread (innermost last), always on CPU:

    <module>  ->  churn()  ->  make_cycles()

make_cycles() creates small reference cycles (Node objects pointing at each
other, plus a dict each), which only the cyclic collector can free; churn()
calls it forever. A long-lived population of LIVE container objects makes
every collection of the older generations expensive, and the collector's
thresholds are lowered, so a good share of the time is spent inside
automatic collections (started from whatever allocation crosses the
threshold, below make_cycles()). Nothing calls gc.collect() while running.

Prints "pyprofd-target: ready", then runs until SIGTERM/SIGINT or until
--duration SECONDS has elapsed.
"""

import argparse
import gc
import signal
import sys
import time

LIVE = 200_000


class Node:
    __slots__ = ("other", "attrs")


def make_cycles(n):
    for i in range(n):
        a, b = Node(), Node()
        a.other, b.other = b, a
        a.attrs = {"peer": b, "i": i}
        b.attrs = [a, i]


def churn(deadline):
    while deadline is None or time.monotonic() < deadline:
        make_cycles(1000)


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
live = [[i] for i in range(LIVE)]  # long-lived containers the collector must traverse
gc.set_threshold(200, 2, 2)
print("pyprofd-target: ready", flush=True)
churn(None if args.duration is None else time.monotonic() + args.duration)
