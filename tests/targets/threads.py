# SPDX-License-Identifier: MIT
"""pyprofd test target: three named threads doing different things.

Stacks (innermost last). Each worker thread starts in threading's own frames
(Thread._bootstrap -> _bootstrap_inner -> run) before the functions below.

    MainThread  <module> -> wait_until_stopped() -> Event.wait() -> ...
    spinner     spin() -> crunch()                  (always on CPU)
    sleeper     nap() -> doze()                     (in time.sleep)
    raiser      raise_and_catch() -> fail()         (raises TargetError,
                                                     caught one frame up;
                                                     then sleeps a little)

The raiser raises RAISES_PER_ROUND exceptions, always from the same line of
fail(), then sleeps 10 ms, for a later "exception mode" to find.

Prints "pyprofd-target: ready" once all three threads are running, then runs
until SIGTERM/SIGINT or until --duration SECONDS has elapsed.
"""

import argparse
import signal
import sys
import threading
import time

RAISES_PER_ROUND = 100

stop = threading.Event()


def crunch(n):
    total = 0
    for i in range(n):
        total += i * i
    return total


def spin(started):
    started.set()
    while not stop.is_set():
        crunch(10000)


def doze():
    time.sleep(0.05)


def nap(started):
    started.set()
    while not stop.is_set():
        doze()


class TargetError(Exception):
    pass


def fail(i):
    raise TargetError(i)


def raise_and_catch(started):
    started.set()
    while not stop.is_set():
        for i in range(RAISES_PER_ROUND):
            try:
                fail(i)
            except TargetError:
                pass
        time.sleep(0.01)


def wait_until_stopped(deadline):
    while not stop.is_set():
        timeout = 1.0 if deadline is None else deadline - time.monotonic()
        if timeout <= 0:
            break
        stop.wait(min(timeout, 1.0))


def _exit_cleanly(signum, frame):
    # Also needed in container mode, where we are PID 1 of a PID namespace and
    # the kernel would otherwise ignore SIGTERM. Raising (rather than calling
    # stop.set() here) avoids deadlocking on the lock inside stop.wait().
    sys.exit(0)


parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--duration", type=float, default=None,
                    help="exit after this many seconds (default: run until killed)")
args = parser.parse_args()
signal.signal(signal.SIGTERM, _exit_cleanly)
signal.signal(signal.SIGINT, _exit_cleanly)
deadline = None if args.duration is None else time.monotonic() + args.duration

workers = []
for name, func in (("spinner", spin), ("sleeper", nap), ("raiser", raise_and_catch)):
    started = threading.Event()
    thread = threading.Thread(target=func, name=name, args=(started,))
    thread.start()
    started.wait()
    workers.append(thread)

print("pyprofd-target: ready", flush=True)
try:
    wait_until_stopped(deadline)
finally:
    stop.set()
    for thread in workers:
        thread.join()
