# SPDX-License-Identifier: MIT
"""pyprofd benchmark target: a process blocked for good.

The main thread waits on an event nobody sets (<module> -> serve() ->
threading.Event.wait()), like a server between requests or a worker on an
empty queue: it never runs again until SIGTERM/SIGINT. Its stack cannot
change, and it is never on a CPU. Prints "pyprofd-target: ready" first.
Self-contained: only this file is copied into the test rootfs.
"""

import signal
import sys
import threading


def serve(never):
    never.wait()


signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
print("pyprofd-target: ready", flush=True)
serve(threading.Event())
