# SPDX-License-Identifier: MIT
"""pyprofd test target: a hot loop of attribute reads the interpreter specializes.

Stack of the main thread (innermost last), always on CPU:

    <module>  ->  spin()  ->  read_attr(p)

read_attr() reads p.x (and p.y) of an instance of a plain class in a loop:
after a few runs the adaptive interpreter (CPython 3.13 and later) rewrites
those LOAD_ATTR instructions into LOAD_ATTR_INSTANCE_VALUE, and the loop's
other instructions into their specialized forms too (FOR_ITER_RANGE,
BINARY_OP_ADD_INT, ...). A free-threaded 3.13 build does not specialize, so
there they stay LOAD_ATTR. The garbage collector is disabled.

Prints "pyprofd-target: ready" once it has warmed up, then runs until
SIGTERM/SIGINT or until --duration SECONDS has elapsed.
"""

import argparse
import gc
import signal
import sys
import time


class Point:
    def __init__(self, x, y):
        self.x = x
        self.y = y


def read_attr(p):
    total = 0
    for _ in range(1000):
        total += p.x
        total += p.y
    return total


stop = False


def on_signal(*_):
    global stop
    stop = True


def spin(deadline):
    p = Point(1, 2)
    for _ in range(100):  # warm up: let the interpreter specialize
        read_attr(p)
    print("pyprofd-target: ready", flush=True)
    while not stop and (deadline is None or time.monotonic() < deadline):
        read_attr(p)


parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--duration", type=float, default=None,
                    help="exit after this many seconds (default: run until signalled)")
args = parser.parse_args()
signal.signal(signal.SIGTERM, on_signal)
signal.signal(signal.SIGINT, on_signal)
gc.disable()
spin(None if args.duration is None else time.monotonic() + args.duration)
sys.exit(0)
