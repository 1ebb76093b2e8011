# SPDX-License-Identifier: MIT
"""pyprofd test target: one CPU-bound function, chosen on the command line.

Stack of the main thread (innermost last):

    <module>  ->  run()  ->  hot_alpha() | hot_beta() | hot_gamma()

The agent's integration test (tests/integration/test_agent.py) starts one
per Python version with a different --which, so each target's profile must
show its own hot function.

Prints "pyprofd-target: ready" once set up, then runs until SIGTERM/SIGINT
or until --duration SECONDS has elapsed (then exits 0 by itself).
"""

import argparse
import signal
import sys
import time


def _spin(n):
    total = 0
    for i in range(n):
        total += i * i
    return total


def hot_alpha():
    return _spin(20000)


def hot_beta():
    return _spin(20000)


def hot_gamma():
    return _spin(20000)


def run(fn, deadline):
    while deadline is None or time.monotonic() < deadline:
        fn()


def _exit_cleanly(signum, frame):
    # Also needed in container mode, where we are PID 1 of a PID namespace.
    sys.exit(0)


parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--which", choices=["alpha", "beta", "gamma"], default="alpha")
parser.add_argument("--duration", type=float, default=None,
                    help="exit after this many seconds (default: run until killed)")
args = parser.parse_args()
signal.signal(signal.SIGTERM, _exit_cleanly)
signal.signal(signal.SIGINT, _exit_cleanly)
deadline = None if args.duration is None else time.monotonic() + args.duration

print("pyprofd-target: ready", flush=True)
run({"alpha": hot_alpha, "beta": hot_beta, "gamma": hot_gamma}[args.which], deadline)
