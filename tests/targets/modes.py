# SPDX-License-Identifier: MIT
"""pyprofd test target: threads that are on CPU, off CPU, and on CPU without the GIL.

Stacks (innermost last). Each worker starts in threading's own frames
(Thread._bootstrap -> _bootstrap_inner -> run) before the function below.

    MainThread  <module> -> main_wait() -> Event.wait() -> ...   (blocked)
    spinner     spinner_loop()   pure-Python busy loop: on CPU, holds the GIL
    sleeper     sleeper_loop()   time.sleep(1.0) in a loop: off CPU
    hasher      hasher_loop()    hashlib.sha256 of a 16 MiB buffer in a loop:
                                 on CPU, but with the GIL released while
                                 hashing (C code, so hasher_loop is the leaf)

So a wall-clock profile has all four threads; a CPU profile has the spinner
and the hasher; a GIL profile has (almost only) the spinner, the hasher's
Python frame holding the GIL only between two hashes. On Python 3.14+ the
thread names are also the OS thread names. The garbage collector is disabled.

Prints "pyprofd-target: ready" once the three threads run, then runs until
SIGTERM/SIGINT or until --duration SECONDS has elapsed.
"""

import argparse
import gc
import hashlib
import signal
import sys
import threading
import time

BUFFER = bytes(range(256)) * (16 * 1024 * 1024 // 256)  # 16 MiB

stop = threading.Event()


def spinner_loop(started):
    started.set()
    n = 0
    while not stop.is_set():
        for i in range(1000):
            n += i


def sleeper_loop(started):
    started.set()
    while not stop.is_set():
        time.sleep(1.0)


def hasher_loop(started):
    started.set()
    while not stop.is_set():
        hashlib.sha256(BUFFER).digest()  # releases the GIL while hashing


def main_wait(deadline):
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
gc.collect()
gc.disable()

workers = []
for name, func in (("spinner", spinner_loop), ("sleeper", sleeper_loop),
                   ("hasher", hasher_loop)):
    started = threading.Event()
    thread = threading.Thread(target=func, name=name, args=(started,), daemon=True)
    thread.start()
    started.wait()
    workers.append(thread)

print("pyprofd-target: ready", flush=True)
try:
    main_wait(deadline)
finally:
    stop.set()
    for thread in workers:
        thread.join()
