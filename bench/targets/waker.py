# SPDX-License-Identifier: MIT
"""pyprofd benchmark target: a process that wakes every 20 ms for a moment.

The main thread sleeps 20 ms, then runs about 0.2 ms of Python
(<module> -> tick() -> work()), forever, like a lightly loaded service:
on a CPU about 1 % of the time. Prints "pyprofd-target: ready" first, then
runs until SIGTERM/SIGINT. Self-contained: only this file is copied into the
test rootfs.
"""

import signal
import sys
import time


def work(n):
    total = 0
    for i in range(n):
        total += i * i
    return total


def tick():
    work(2000)
    time.sleep(0.02)


signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
print("pyprofd-target: ready", flush=True)
while True:
    tick()
