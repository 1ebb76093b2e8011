# SPDX-License-Identifier: MIT
"""pyprofd test target: the OpenTelemetry Python SDK's spans, no publisher (issue 40).

Runs the real SDK (opentelemetry-sdk: a TracerProvider with an id generator
of its own, so that the ids say where they were made, and no exporter) in
--threads N worker threads (otel-worker-1 ... -N; index I is 1 to N) and,
with --tasks M, M asyncio tasks on one more thread (otel-loop; task index
T is 101 to 100 + M), while the main thread waits. Each worker loops:

    with start_as_current_span("a"): in_span_a()    busy for --period-ms
    with start_as_current_span("b"): in_span_b()    busy for --period-ms
    outside_span()                                  busy, no span

and each task: with a span, task_in_span() (busy, no await inside), then
await asyncio.sleep(0); task_outside_span() (busy, no span); sleep(0) —
so that the loop runs the tasks in turn, each in its own context.

Ids (the cycle C counts each thread's or task's loops from 1): span ids
(16 hex digits) a0 II CCCCCCCCCCCC, b0 II CCCC..., and c0 TT CCCC... for a
task's (TT = T - 100); the trace id of a cycle (32 hex digits):
7e II CCCC... (workers) or 7c TT CCCC... (tasks).

Prints "pyprofd-expected: {...}" (python, pid, SDK version, the main
thread's native id, and the threads' by name) and "pyprofd-target: ready",
and when --duration ends (or at SIGTERM/SIGINT) "pyprofd-times: {...}": per
thread index (and task index), the wall seconds each phase's busy function
ran ("a", "b", "out"; a task's span is "a").
"""

import argparse
import asyncio
import json
import os
import signal
import sys
import threading
import time

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.version import __version__ as sdk_version

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--threads", type=int, default=3)
parser.add_argument("--tasks", type=int, default=0)
parser.add_argument("--duration", type=float, default=None)
parser.add_argument("--period-ms", type=float, default=20.0)
args = parser.parse_args()

local = threading.local()


class Ids(IdGenerator):
    """Ids from what the calling thread (or task) says it is doing."""

    def generate_span_id(self):
        kind, index, cycle = local.next_span
        return (kind << 56) | (index << 48) | (cycle & 0xFFFFFFFFFFFF)

    def generate_trace_id(self):
        kind, index, cycle = local.next_span
        top = 0x7E if kind in (0xA0, 0xB0) else 0x7C
        return (top << 120) | (index << 112) | (cycle & ((1 << 112) - 1))


provider = TracerProvider(id_generator=Ids())
tracer = provider.get_tracer("pyprofd-test")
period = args.period_ms / 1000.0
stop = threading.Event()
times = {}
lock = threading.Lock()


def busy(seconds):
    end = time.perf_counter() + seconds
    n = 0
    while time.perf_counter() < end:
        n += 1
    return n


def in_span_a():
    return busy(period)


def in_span_b():
    return busy(period)


def outside_span():
    return busy(period)


def task_in_span():
    return busy(period)


def task_outside_span():
    return busy(period)


def timed(acc, key, fn):
    t0 = time.perf_counter()
    fn()
    acc[key] += time.perf_counter() - t0


def worker(index):
    acc = {"a": 0.0, "b": 0.0, "out": 0.0}
    with lock:
        times[str(index)] = acc
    cycle = 0
    while not stop.is_set():
        cycle += 1
        local.next_span = (0xA0, index, cycle)
        with tracer.start_as_current_span("a"):
            timed(acc, "a", in_span_a)
        local.next_span = (0xB0, index, cycle)
        with tracer.start_as_current_span("b"):
            timed(acc, "b", in_span_b)
        timed(acc, "out", outside_span)


async def task(index):
    acc = {"a": 0.0, "b": 0.0, "out": 0.0}
    with lock:
        times[str(index)] = acc
    cycle = 0
    while not stop.is_set():
        cycle += 1
        local.next_span = (0xC0, index - 100, cycle)
        with tracer.start_as_current_span("t"):
            timed(acc, "a", task_in_span)
            await asyncio.sleep(0)
        timed(acc, "out", task_outside_span)
        await asyncio.sleep(0)


def loop_thread():
    async def main():
        await asyncio.gather(*(task(101 + i) for i in range(args.tasks)))
    asyncio.run(main())


def main_wait():
    while not stop.wait(0.1):
        pass


def on_signal(signum, frame):
    stop.set()


signal.signal(signal.SIGTERM, on_signal)
signal.signal(signal.SIGINT, on_signal)

natives = {}
threads = []
for i in range(1, args.threads + 1):
    threads.append(threading.Thread(target=worker, args=(i,), name="otel-worker-%d" % i))
if args.tasks:
    threads.append(threading.Thread(target=loop_thread, name="otel-loop"))
for t in threads:
    t.start()
time.sleep(0.2)
for t in threads:
    natives[t.name] = t.native_id
print("pyprofd-expected: " + json.dumps({
    "python": "%d.%d" % sys.version_info[:2], "pid": os.getpid(), "sdk": sdk_version,
    "main_thread_id": threading.main_thread().native_id, "threads": natives}), flush=True)
print("pyprofd-target: ready", flush=True)
if args.duration is not None:
    threading.Timer(args.duration, stop.set).start()
main_wait()
for t in threads:
    t.join()
print("pyprofd-times: " + json.dumps(times), flush=True)
