# SPDX-License-Identifier: MIT
"""pyprofd test target: a CPU-bound main thread in pure Python.

Stack of the main thread (innermost last); it never sleeps or blocks:

    <module>  ->  compute()  ->  fib(n)  ->  fib(n - 1)  ->  ...  ->  fib(k)

fib() is plain recursion, so the depth varies from 1 to FIB_N fib() frames
below compute(). compute() calls fib(FIB_N) and then checksum(), a flat
loop, so a profile shows fib() with most samples and checksum() with some.

Prints "pyprofd-target: ready" once set up, then runs until SIGTERM/SIGINT
or until --duration SECONDS has elapsed.
"""

import argparse
import signal
import sys
import time

FIB_N = 20


def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


def checksum(limit):
    total = 0
    for i in range(limit):
        total = (total * 31 + i) % 1000003
    return total


def compute():
    return fib(FIB_N) + checksum(2000)


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
deadline = None if args.duration is None else time.monotonic() + args.duration

print("pyprofd-target: ready", flush=True)
while deadline is None or time.monotonic() < deadline:
    compute()
