# SPDX-License-Identifier: MIT
"""pyprofd test target: three threads running Python at the same time.

Stacks (innermost last). Each worker starts in threading's own frames
(Thread._bootstrap -> _bootstrap_inner -> run) before the functions below.

    MainThread  <module> -> main_wait() -> Event.wait() -> ...   (blocked)
    worker-a    loop_a() -> step_a()     pure-Python busy loop
    worker-b    loop_b() -> step_b()     pure-Python busy loop
    worker-c    loop_c() -> step_c()     pure-Python busy loop
    napper      nap()                    time.sleep(3600.0): never wakes in a test

On a free-threaded build the three workers run truly in parallel (as many
at once as there are CPUs) and are each attached to the interpreter while
they run; on a GIL build they take turns. The garbage collector is disabled.

Prints "pyprofd-expected: {...}" (version, free-threaded or not, the GIL's
state) and "pyprofd-target: ready" once every thread runs, then runs until
SIGTERM/SIGINT or until --duration SECONDS has elapsed.
"""

import argparse
import gc
import json
import signal
import sys
import sysconfig
import threading
import time

stop = threading.Event()


def step_a(n):
    total = 0
    for i in range(n):
        total += i
    return total


def step_b(n):
    total = 0
    for i in range(n):
        total ^= i
    return total


def step_c(n):
    total = 1
    for i in range(n):
        total = (total * 3 + i) & 0xFFFF
    return total


def loop_a(started):
    started.set()
    while not stop.is_set():
        step_a(2000)


def loop_b(started):
    started.set()
    while not stop.is_set():
        step_b(2000)


def loop_c(started):
    started.set()
    while not stop.is_set():
        step_c(2000)


def nap(started):
    started.set()
    # Asleep for good (a daemon thread: it ends with the process). Waking once
    # a second, it needed the GIL back from three busy workers each time, and
    # on a saturated machine (a CI run beside a headless browser) 3.9 showed
    # it runnable, waiting for a CPU to take the GIL on, in 12 % of the
    # ticks of a second: what cpu mode rightly counts, but not a sleeper.
    while True:
        time.sleep(3600.0)


def main_wait(deadline):
    stop.wait(deadline)


parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--duration", type=float, default=None,
                    help="exit after this many seconds (default: run until signalled)")
args = parser.parse_args()
signal.signal(signal.SIGTERM, lambda *_: stop.set())
signal.signal(signal.SIGINT, lambda *_: stop.set())
gc.disable()

events = []
for name, fn in (("worker-a", loop_a), ("worker-b", loop_b), ("worker-c", loop_c),
                 ("napper", nap)):
    ev = threading.Event()
    threading.Thread(target=fn, args=(ev,), name=name, daemon=True).start()
    events.append(ev)
for ev in events:
    ev.wait()
gil_enabled = sys._is_gil_enabled() if hasattr(sys, "_is_gil_enabled") else True
print("pyprofd-expected: " + json.dumps({
    "python": "%d.%d.%d" % sys.version_info[:3],
    "free_threaded": bool(sysconfig.get_config_var("Py_GIL_DISABLED")),
    "gil_enabled": gil_enabled,
    "debug": hasattr(sys, "gettotalrefcount"),
}), flush=True)
print("pyprofd-target: ready", flush=True)
main_wait(args.duration)
