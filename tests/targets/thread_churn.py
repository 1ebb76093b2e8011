# SPDX-License-Identifier: MIT
"""pyprofd test target: threads that come and go.

The main thread starts a thread, joins it and sleeps 0.07 s, forever; each
thread spins for 0.15 s in churn() and exits. So every 0.22 s a thread of
the process ends: a sampler that keeps one perf event per thread must
notice each one's end (its event hangs up) and not wait on it. (0.22 s, not
0.2: a sampler that looks for new threads once a second would see a period
that divides a second at the same phase every time, and could find no
thread alive at all.) Prints "pyprofd-target: ready" once, then runs until
SIGTERM/SIGINT.
"""

import signal
import sys
import threading
import time


def churn():
    t = time.monotonic()
    while time.monotonic() - t < 0.15:
        pass


signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
print("pyprofd-target: ready", flush=True)
while True:
    th = threading.Thread(target=churn, name="churner")
    th.start()
    th.join()
    time.sleep(0.07)
