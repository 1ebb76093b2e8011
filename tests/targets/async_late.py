# SPDX-License-Identifier: MIT
"""pyprofd test target: a program that imports asyncio late (async-aware stacks).

For --delay SECONDS the main thread computes without asyncio imported:
<module> -> main() -> before_import() -> tick() (line TICK_CALL). CPython 3.14
maps its _asyncio extension module, which holds the asyncio debug table, only
when asyncio is imported, so pyprofd cannot find the table yet. Then main()
imports asyncio and runs forever, in the task "main", the task "late":

        main    run()           awaits late             line RUN_AWAIT
        late    late_work()     calls tick()            line LATE_CALL

yielding to the event loop between two slices of computing.

Prints "pyprofd-target: ready" at once (before the import), then runs until
SIGTERM/SIGINT or until --duration SECONDS has elapsed.
"""

import argparse
import os
import signal
import time

SLICE = 0.004  # seconds of computing per tick


def tick():
    deadline = time.monotonic() + SLICE
    x = 0
    while time.monotonic() < deadline:
        x += 1
    return x


def before_import(delay):
    end = time.monotonic() + delay
    while time.monotonic() < end:
        tick()  # TICK_CALL


asyncio = None  # imported by main(), late


async def late_work():
    while True:
        tick()  # LATE_CALL
        await asyncio.sleep(0)


async def run():
    asyncio.current_task().set_name("main")
    await asyncio.create_task(late_work(), name="late")  # RUN_AWAIT


def main(delay):
    global asyncio
    before_import(delay)  # BEFORE_CALL
    import asyncio  # only now: the point of this target

    asyncio.run(run())  # MAIN_RUN


def _exit_now(signum, frame):
    # Also as PID 1 of a PID namespace, where SIGTERM is otherwise ignored.
    os._exit(0)


parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--delay", type=float, default=5.0,
                    help="seconds before asyncio is imported (default: 5)")
parser.add_argument("--duration", type=float, default=None,
                    help="exit after this many seconds (default: run until killed)")
args = parser.parse_args()
signal.signal(signal.SIGTERM, _exit_now)
signal.signal(signal.SIGINT, _exit_now)
if args.duration is not None:
    signal.signal(signal.SIGALRM, _exit_now)
    signal.setitimer(signal.ITIMER_REAL, args.duration)
print("pyprofd-target: ready", flush=True)
main(args.delay)
