# SPDX-License-Identifier: MIT
"""pyprofd test target: counts the SIGUSR1 signals it receives.

The main thread spins in count_loop(). On SIGTERM it prints
"pyprofd-signals: N" (the number of SIGUSR1 handled) and exits. Used to check
that `record --blocking`, which stops the target around every sample, passes
on the signals that arrive meanwhile instead of swallowing them.
"""

import signal
import sys

handled = 0


def on_usr1(signum, frame):
    global handled
    handled += 1


def on_term(signum, frame):
    print(f"pyprofd-signals: {handled}", flush=True)
    sys.exit(0)


def count_loop():
    while True:
        sum(range(1000))


signal.signal(signal.SIGUSR1, on_usr1)
signal.signal(signal.SIGTERM, on_term)
print("pyprofd-target: ready", flush=True)
count_loop()
