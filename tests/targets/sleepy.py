# SPDX-License-Identifier: MIT
"""pyprofd test target: a main thread that mostly sleeps.

Stack of the main thread (innermost last), sampled almost always inside
time.sleep():

    <module>  ->  outer()  ->  middle()  ->  zażółć()  ->  leaf_sleep()

The loop runs at module level on purpose, so that the outermost frame is
<module>. zażółć() checks that non-ASCII function names survive unwinding,
symbolisation and export.

Prints "pyprofd-target: ready" once set up, then runs until SIGTERM/SIGINT
or until --duration SECONDS has elapsed.
"""

import argparse
import signal
import sys
import time


def leaf_sleep():
    time.sleep(0.01)


def zażółć():
    leaf_sleep()


def middle():
    zażółć()


def outer():
    middle()


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
    outer()
