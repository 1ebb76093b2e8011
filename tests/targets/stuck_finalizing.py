# SPDX-License-Identifier: MIT
"""pyprofd test target: a process that stays in interpreter shutdown.

Runs hot_loop() until SIGUSR1, then returns from the script: the interpreter
starts shutting down (its runtime's finalizing flag is set), and while it
tears the modules down an object's __del__ sleeps for --hold seconds (default
600). Every sample of that process fails as `finalizing` for that long: the
fault suite (tests/integration/test_faults.py) checks that the agent then
attaches to it again, counts and shows it, and keeps trying ever more
rarely.

Prints "pyprofd-target: ready" once set up.
"""

import argparse
import signal
import sys
import time


class _Holder:
    hold = 600.0

    def __del__(self):
        time.sleep(self.hold)


def hot_loop():
    total = 0
    for i in range(20000):
        total += i * i
    return total


_stop = False


def _stop_requested(signum, frame):
    global _stop
    _stop = True


def main():
    global holder
    ap = argparse.ArgumentParser()
    ap.add_argument("--hold", type=float, default=600.0)
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda s, f: sys.exit(0))
    signal.signal(signal.SIGUSR1, _stop_requested)
    _Holder.hold = args.hold
    holder = _Holder()  # a module global: torn down while finalizing
    print("pyprofd-target: ready", flush=True)
    while not _stop:
        hot_loop()
    # SIGTERM must still end it while it holds: the default action, not an exception
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


holder = None

if __name__ == "__main__":
    main()
