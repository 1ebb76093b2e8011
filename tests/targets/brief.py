# SPDX-License-Identifier: MIT
"""pyprofd test target: a thread that runs briefly, one that never runs.

    blocked   waits for good on an event nobody sets (blocked_wait()): never
              on a CPU, its stack never changes;
    brief     every 10 ms (on a fixed schedule): computes for 1 ms in
              brief_work(), then sleeps to the next 10 ms in brief_sleep():
              on a CPU about 10 % of the time;
    main      waits for the other two (main_wait()).

For issue 26's idle check: a sampler that counts a read again while no
thread ran, or finds them all asleep, must still see brief_work() in
proportion to the time it runs, and blocked_wait() at every sample.

Arguments: PERIOD_MS WORK_MS [JITTER_MS] (default 10 1 0): a longer period
lets the agent park the process between runs (nothing is due for it until a
thread runs again). JITTER_MS > 0 starts each run at a random point of the
first JITTER_MS of its period: the runs then fall at every phase of a
sampler's tick, where a fixed schedule meets the sampler's clock at one
phase only (whether the last sample of each run falls in it or just after
depends on that phase: over a whole recording a 2 ms run was seen at 0.7 to
1.2 of its time at 1 kHz, with the idle check off too).

SIGUSR1 prints "pyprofd-brief: worked SECONDS": the wall time brief_work()
has run so far (preempted or not: what a wall profile sees it in), a finer
reference than the thread's CPU time, which has its wake-ups besides.

Prints "pyprofd-target: ready" once both threads run, then runs until
SIGTERM/SIGINT.
"""

import random
import signal
import sys
import threading
import time

PERIOD = (float(sys.argv[1]) if len(sys.argv) > 1 else 10.0) / 1000.0
WORK = (float(sys.argv[2]) if len(sys.argv) > 2 else 1.0) / 1000.0
JITTER = (float(sys.argv[3]) if len(sys.argv) > 3 else 0.0) / 1000.0
worked = 0.0  # seconds in brief_work(), for SIGUSR1


def blocked_wait(never):
    never.wait()


def brief_work(until):
    x = 0
    while time.perf_counter() < until:
        x += 1
    return x


def brief_sleep(until):
    delay = until - time.perf_counter()
    if delay > 0:
        time.sleep(delay)


def brief_loop(started):
    global worked
    started.set()
    t = start = time.perf_counter()
    while True:
        entered = time.perf_counter()
        brief_work(start + WORK)
        worked += time.perf_counter() - entered
        t += PERIOD
        now = time.perf_counter()
        if t < now:  # fell behind (a loaded machine): keep the phase, skip a cycle
            t += PERIOD * int((now - t) / PERIOD + 1)
        start = t + random.random() * JITTER if JITTER else t
        brief_sleep(start)


def main_wait(threads):
    for th in threads:
        th.join()


def _exit(signum, frame):
    sys.stdout.flush()
    sys.exit(0)


def _report(signum, frame):
    print(f"pyprofd-brief: worked {worked:.6f}", flush=True)


signal.signal(signal.SIGTERM, _exit)
signal.signal(signal.SIGINT, _exit)
signal.signal(signal.SIGUSR1, _report)
never, started = threading.Event(), threading.Event()
threads = [threading.Thread(target=blocked_wait, args=(never,), name="blocked", daemon=True),
           threading.Thread(target=brief_loop, args=(started,), name="brief", daemon=True)]
for th in threads:
    th.start()
started.wait()
print("pyprofd-target: ready", flush=True)
main_wait(threads)
