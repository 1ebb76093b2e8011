# SPDX-License-Identifier: MIT
"""pyprofd benchmark target: two threads that hand a byte back and forth.

Each round trip is two context switches of each thread (a blocking read
on a pipe): the worst case for anything that costs per context switch,
such as the idle check's context-switch records (issue 26). Prints
"pyprofd-target: ready", waits for a line on stdin (the profiler is
attached), makes ROUNDS round trips and prints "round trips/s: N".
"""

import os
import sys
import threading
import time

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 100000


def echo(rfd, wfd, n):
    for _ in range(n):
        os.write(wfd, os.read(rfd, 1))


a_r, a_w = os.pipe()
b_r, b_w = os.pipe()
peer = threading.Thread(target=echo, args=(a_r, b_w, ROUNDS), name="echo")
peer.start()
print("pyprofd-target: ready", flush=True)
sys.stdin.readline()
t0 = time.perf_counter()
for _ in range(ROUNDS):
    os.write(a_w, b"x")
    os.read(b_r, 1)
dt = time.perf_counter() - t0
peer.join()
print(f"round trips/s: {ROUNDS / dt:.0f}", flush=True)
