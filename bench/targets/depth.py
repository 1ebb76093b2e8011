# SPDX-License-Identifier: MIT
"""pyprofd benchmark target: a main thread spinning at the bottom of a stack of a chosen depth.

Stack of the main thread (innermost last), always on CPU, never changing:

    <module>  ->  descend()  ->  recurse(k)  ->  ...  ->  recurse(1)  ->  spin()

with as many recurse() frames as make the whole stack exactly --depth Python
frames (<module>, descend() and spin() included; --depth must be at least 4).
The leaf spins in a pure-Python loop, so the stack is fixed for the whole run:
a profiler sampling it measures the cost of reading a stack of that depth.
bench/compare_tachyon.sh starts it at depths 10, 50 and 200.

Prints "pyprofd-target: ready" once spinning is about to start, then spins
until SIGTERM/SIGINT or until --duration SECONDS has elapsed. The garbage
collector is disabled while spinning. Self-contained: only this file is copied
into the test rootfs.
"""

import argparse
import gc
import signal
import sys

FIXED_FRAMES = 3  # <module>, descend(), spin()

done = False


def spin():
    print("pyprofd-target: ready", flush=True)
    while not done: pass  # noqa: E701 -- one line on purpose: a stable leaf line


def recurse(n):
    if n > 1:
        recurse(n - 1)
    else:
        spin()


def descend(count):
    recurse(count)


def _exit_cleanly(signum, frame):
    # Also needed in container mode, where we are PID 1 of a PID namespace and
    # the kernel would otherwise ignore SIGTERM. Setting the flag (rather than
    # raising SystemExit out of 200 frames) lets the spin loop end normally.
    global done
    done = True


parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--depth", type=int, default=50,
                    help="Python frames on the main thread's stack, <module> included (default: 50)")
parser.add_argument("--duration", type=float, default=None,
                    help="exit after this many seconds (default: run until killed)")
args = parser.parse_args()
if args.depth < FIXED_FRAMES + 1:
    parser.error(f"--depth must be at least {FIXED_FRAMES + 1}")
signal.signal(signal.SIGTERM, _exit_cleanly)
signal.signal(signal.SIGINT, _exit_cleanly)
if args.duration is not None:
    # The spinning leaf never looks at the clock: a one-shot timer ends it.
    signal.signal(signal.SIGALRM, _exit_cleanly)
    signal.setitimer(signal.ITIMER_REAL, args.duration)
sys.setrecursionlimit(max(sys.getrecursionlimit(), args.depth + 100))

gc.collect()
gc.disable()
descend(args.depth - FIXED_FRAMES)
sys.exit(0)
