# SPDX-License-Identifier: MIT
"""pyprofd benchmark target: a CPU-bound pure-Python loop that counts its own work.

The main thread calls work() over and over, --depth Python frames deep
(<module> -> main() -> descend() x (depth - 4) -> loop() -> work()), and
counts the calls.
work() is always the same arithmetic on small integers (no I/O, no
allocation the garbage collector sees; the collector is off), so the count
per second is the process's throughput and depends only on the CPU time it
gets and how fast it runs.

Reading the count costs the loop nothing between reads: on SIGUSR1 it
prints one line to stdout,

    pyprofd-cpubound: CALLS MONOTONIC_NS THREAD_CPU_NS

(calls of work() so far, time.monotonic_ns(), time.thread_time_ns(); the
signal is handled between two calls of work(), so the line is exact to one
call, under a microsecond), and the same line with "exit" after the colon
when it ends. Throughput over a window is the difference of two lines'
calls divided by the difference of their monotonic times; the CPU time shows
whether the process was on a CPU all along. bench/slowdown.sh uses it.

Prints "pyprofd-target: ready" once the loop is about to start, then runs
until SIGTERM/SIGINT or until --duration SECONDS has elapsed. Self-contained:
only this file is copied into the test rootfs.
"""

import argparse
import gc
import signal
import sys
import time

FIXED_FRAMES = 4  # <module>, main(), loop(), work()

done = False
report = False
calls = 0


def work():
    # About 12 us of bytecode per call on the machine of docs/performance.md.
    x = 0
    for k in range(200):
        x += k * k & 0xFF
    return x


def line(tag):
    print(f"pyprofd-cpubound:{tag} {calls} {time.monotonic_ns()} {time.thread_time_ns()}", flush=True)


def loop():
    global calls, report
    print("pyprofd-target: ready", flush=True)
    while not done:
        work()
        calls += 1
        if report:
            report = False
            line("")


def descend(n):
    if n > 0:
        descend(n - 1)
    else:
        loop()


def main(depth):
    descend(depth - FIXED_FRAMES - 1)  # descend(n) .. descend(0): n + 1 frames
    line("exit")


def _on_report(signum, frame):
    global report
    report = True


def _exit_cleanly(signum, frame):
    # Also needed in container mode, where we are PID 1 of a PID namespace and
    # the kernel would otherwise ignore SIGTERM.
    global done
    done = True


parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--depth", type=int, default=10,
                    help="Python frames on the main thread's stack while in work(), <module> included "
                         "(default: 10)")
parser.add_argument("--duration", type=float, default=None,
                    help="exit after this many seconds (default: run until killed)")
args = parser.parse_args()
if args.depth < FIXED_FRAMES + 1:
    parser.error(f"--depth must be at least {FIXED_FRAMES + 1}")
signal.signal(signal.SIGTERM, _exit_cleanly)
signal.signal(signal.SIGINT, _exit_cleanly)
signal.signal(signal.SIGUSR1, _on_report)
if args.duration is not None:
    signal.signal(signal.SIGALRM, _exit_cleanly)
    signal.setitimer(signal.ITIMER_REAL, args.duration)
sys.setrecursionlimit(max(sys.getrecursionlimit(), args.depth + 100))

gc.collect()
gc.disable()
main(args.depth)
sys.exit(0)
