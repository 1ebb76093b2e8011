# SPDX-License-Identifier: MIT
"""pyprofd test target: threads that come and go.

The main thread starts a thread, joins it and sleeps 0.1 s, forever; each
thread spins for 0.1 s in churn() and exits. So every 0.2 s a thread of
the process ends: a sampler that keeps one perf event per thread must
notice each one's end (its event hangs up) and not wait on it. Prints
"pyprofd-target: ready" once, then runs until SIGTERM/SIGINT.
"""

import signal
import sys
import threading
import time


def churn():
    t = time.monotonic()
    while time.monotonic() - t < 0.1:
        pass


signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
print("pyprofd-target: ready", flush=True)
while True:
    th = threading.Thread(target=churn, name="churner")
    th.start()
    th.join()
    time.sleep(0.1)
