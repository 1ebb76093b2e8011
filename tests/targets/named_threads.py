# SPDX-License-Identifier: MIT
"""pyprofd test target: four threads with known native ids and leaf functions.

Stacks (innermost last). The worker threads are daemon threads started with
threading.Thread(name=...), so each starts in threading's own frames
(Thread._bootstrap -> _bootstrap_inner -> run) before the functions below.

    MainThread  <module> -> main_wait()      (in time.sleep(3600), off CPU)
    spinner     spin_leaf()                  (always on CPU, `while not done:
                                              pass` on one line; the only
                                              thread that wants the GIL)
    sleeper     sleep_leaf()                 (in time.sleep(3600), off CPU)
    blocker     lock_leaf()                  (blocked in Lock.acquire() of a
                                              lock nobody releases, off CPU)

C functions (time.sleep, Lock.acquire) have no Python frame, so the leaf
Python frame of each thread is the function named above. The sleeping and
blocked threads have released the GIL and do not ask for it.

Once every thread runs, prints one line

    pyprofd-expected: {"python", "pid", "threads": [{"name", "thread_id",
                       "leaf", "main"}, ...]}

where thread_id is threading.get_native_id() of the thread, as the target
sees it (so in container mode the main thread is 1), then
"pyprofd-target: ready", and runs until SIGTERM/SIGINT or until --duration
SECONDS has elapsed. The garbage collector is disabled.
"""

import argparse
import gc
import json
import os
import platform
import signal
import sys
import threading
import time

done = False
never_released = threading.Lock()
never_released.acquire()


def spin_leaf(started):
    started.append(threading.get_native_id())
    while not done: pass  # noqa: E701 -- one line on purpose: a stable leaf line


def sleep_leaf(started):
    started.append(threading.get_native_id())
    while True:
        time.sleep(3600)


def lock_leaf(started):
    started.append(threading.get_native_id())
    while True:
        never_released.acquire()


def main_wait():
    while True:
        time.sleep(3600)


def _exit_cleanly(signum, frame):
    # Also needed in container mode, where we are PID 1 of a PID namespace and
    # the kernel would otherwise ignore SIGTERM. time.sleep() in the main
    # thread is interrupted by the signal; the workers are daemon threads.
    sys.exit(0)


parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--duration", type=float, default=None,
                    help="exit after this many seconds (default: run until killed)")
args = parser.parse_args()
signal.signal(signal.SIGTERM, _exit_cleanly)
signal.signal(signal.SIGINT, _exit_cleanly)
if args.duration is not None:
    signal.signal(signal.SIGALRM, _exit_cleanly)
    signal.setitimer(signal.ITIMER_REAL, args.duration)

gc.collect()
gc.disable()
threads = [{"name": threading.current_thread().name, "thread_id": threading.get_native_id(),
            "leaf": "main_wait", "main": True}]
for name, func in (("spinner", spin_leaf), ("sleeper", sleep_leaf), ("blocker", lock_leaf)):
    started = []
    thread = threading.Thread(target=func, name=name, args=(started,), daemon=True)
    thread.start()
    while not started:
        time.sleep(0.001)
    threads.append({"name": name, "thread_id": started[0], "leaf": func.__qualname__,
                    "main": False})
# Let the workers get from append() into their leaf call before saying ready.
time.sleep(0.05)
print("pyprofd-expected: " + json.dumps({"python": platform.python_version(),
                                         "pid": os.getpid(), "threads": threads}),
      flush=True)
print("pyprofd-target: ready", flush=True)
main_wait()
