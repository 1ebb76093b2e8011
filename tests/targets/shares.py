# SPDX-License-Identifier: MIT
"""pyprofd test target: known CPU shares between three functions.

Stack of the main thread (innermost last), always on CPU:

    <module>  ->  run()  ->  burn_half()     5 ms of every 10 ms
                         ->  burn_third()    3 ms of every 10 ms
                         ->  burn_fifth()    2 ms of every 10 ms

Each burn_*() spins on time.perf_counter() (C code, not a Python frame, so the
burn_* function is the leaf) until its slice is over; run() calls the three
in turn forever, making up in later periods for a slice that overran (the
process was preempted), so the wall-clock shares stay 50/30/20 on a busy
machine too. A sampling profiler must see them in those proportions (time in
run() itself is negligible), but not at exactly 100 Hz or a divisor of it:
that is the target's own period, and samples would always fall at the same
point of it. The garbage collector is disabled.

Prints "pyprofd-target: ready", then runs until SIGTERM/SIGINT or until
--duration SECONDS has elapsed.
"""

import argparse
import gc
import signal
import sys
import time

perf_counter = time.perf_counter


def burn_half(until):
    while perf_counter() < until:
        pass


def burn_third(until):
    while perf_counter() < until:
        pass


def burn_fifth(until):
    while perf_counter() < until:
        pass


SLICES = ((burn_half, 0.5), (burn_third, 0.3), (burn_fifth, 0.2))
PERIOD = 0.010


def run(deadline):
    # Each period of 10 ms gives every burn_*() its share of the wall-clock
    # time elapsed so far minus what it has had: 5, 3 and 2 ms normally, and
    # when the process is preempted in one slice (which then overruns, on a
    # busy machine), the next periods make up for it, so the cumulative
    # shares stay 50/30/20 instead of drifting towards whoever was preempted.
    start = perf_counter()
    spent = [0.0] * len(SLICES)
    end = start
    while deadline is None or end < deadline:
        end += PERIOD
        for i, (burn, share) in enumerate(SLICES):
            now = perf_counter()
            budget = share * (end - start) - spent[i]
            if budget > 0:
                burn(now + budget)
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
