# SPDX-License-Identifier: MIT
"""pyprofd test target: OpenTelemetry process and thread context (issue 40).

Loads LIB (argument: a path; tests/integration/test_otel_context.py builds
it from otel_publisher.c, in one of three TLS models) with ctypes, publishes
the process context (OTEP 4719) with a ProcessContext protobuf payload
encoded here by hand:

    resource.attributes         service.name = "otel-fixture",
                                service.version = "1.0" ("2.0" after the update),
                                deployment.environment.name = "test"
    attributes                  threadlocal.schema_version = "tlsdesc_v1_dev",
                                threadlocal.attribute_key_map = ["http_route"]

and runs --threads N worker threads (named otel-worker-1 ... -N; index I
is 1 to N) while the main thread waits in main_wait(). Each worker loops,
with a cycle counter C (1, 2, ...):

    attach span A -> in_span_a()     busy in Python for --period-ms
    detach
    attach span B -> in_span_b()     busy for --period-ms
    detach
    outside_span()                   busy for --period-ms, no span attached

Span ids (8 bytes, shown as 16 hex digits): A's are a0 II CCCCCCCCCCCC,
B's b0 II CCCCCCCCCCCC (II the index, C the cycle, big-endian); the trace
id of both (16 bytes): 7e II CCCCCCCCCCCCCCCCCCCCCCCCCCCC. Each record has
one attribute, key 0 (http_route) = "/a" or "/b".

Before the ready line it prints

    pyprofd-expected: {"python": ..., "pid": ..., "mapping": "memfd"|"anon",
                       "main_thread_id": TID, "threads": [{"index": I,
                       "thread_id": TID, "slot": ADDRESS, "thread_pointer": TP}]}

(thread_id: threading.get_native_id(); slot: &otel_thread_ctx_v1 in that
thread, thread_pointer: its pthread_self(), both as integers, for tests
that read the record themselves).

Options: --threads N (3), --duration SECONDS (none: until SIGTERM/SIGINT),
--period-ms P (20), --mapping memfd|anon (memfd), --update-after SECONDS
(re-publish with service.version "2.0" that long after the ready line; 0:
never).
"""

import argparse
import ctypes
import json
import os
import platform
import signal
import sys
import threading
import time

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("lib")
parser.add_argument("--threads", type=int, default=3)
parser.add_argument("--duration", type=float, default=None)
parser.add_argument("--period-ms", type=float, default=20.0)
parser.add_argument("--mapping", choices=("memfd", "anon"), default="memfd")
parser.add_argument("--update-after", type=float, default=0.0)
args = parser.parse_args()

if not 1 <= args.threads <= 255:
    parser.error("--threads: 1 to 255 (the index is one byte of the ids)")


# --- a protobuf writer: only what ProcessContext needs -----------------------
# Field numbers from opentelemetry-proto v1.11.0: ProcessContext {resource = 1,
# attributes = 2}; Resource {attributes = 1}; KeyValue {key = 1, value = 2};
# AnyValue {string_value = 1, array_value = 5}; ArrayValue {values = 1}.

def pb_varint(n):
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def pb_bytes(field, data):
    """A length-delimited field (wire type 2): strings and sub-messages."""
    return pb_varint(field << 3 | 2) + pb_varint(len(data)) + data


def any_string(text):
    return pb_bytes(1, text.encode("utf-8"))


def any_array(values):
    return pb_bytes(5, b"".join(pb_bytes(1, v) for v in values))


def key_value(key, any_value):
    return pb_bytes(1, key.encode("utf-8")) + pb_bytes(2, any_value)


def process_context(version):
    resource = b"".join(pb_bytes(1, key_value(k, any_string(v))) for k, v in (
        ("service.name", "otel-fixture"),
        ("service.version", version),
        ("deployment.environment.name", "test")))
    attributes = [
        key_value("threadlocal.schema_version", any_string("tlsdesc_v1_dev")),
        key_value("threadlocal.attribute_key_map", any_array([any_string("http_route")])),
    ]
    return pb_bytes(1, resource) + b"".join(pb_bytes(2, kv) for kv in attributes)


# --- the library -------------------------------------------------------------

lib = ctypes.CDLL(args.lib)
lib.otelpub_publish.argtypes = [ctypes.c_char_p, ctypes.c_uint32, ctypes.c_int]
lib.otelpub_publish.restype = ctypes.c_int
lib.otelpub_update.argtypes = [ctypes.c_char_p, ctypes.c_uint32]
lib.otelpub_update.restype = ctypes.c_int
lib.otelpub_attach.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p]
lib.otelpub_attach.restype = None
lib.otelpub_detach.argtypes = []
lib.otelpub_detach.restype = None
lib.otelpub_slot_address.argtypes = []
lib.otelpub_slot_address.restype = ctypes.c_void_p
lib.otelpub_thread_pointer.argtypes = []
lib.otelpub_thread_pointer.restype = ctypes.c_ulong


def publish(version, update=False):
    payload = process_context(version)
    if update:
        rc = lib.otelpub_update(payload, len(payload))
    else:
        rc = lib.otelpub_publish(payload, len(payload), 0 if args.mapping == "memfd" else 1)
    if rc != 0:
        sys.exit(f"otel_spans: cannot {'update' if update else 'publish'} the process context: "
                 f"{os.strerror(-rc)}")


# --- the workers -------------------------------------------------------------

done = threading.Event()
period = args.period_ms / 1000.0


# Each spins in its own loop, so that it is the leaf Python frame of its
# samples (time.perf_counter is C: no frame).

def in_span_a():
    end, x = time.perf_counter() + period, 0
    while time.perf_counter() < end:
        x += 1
    return x


def in_span_b():
    end, x = time.perf_counter() + period, 0
    while time.perf_counter() < end:
        x += 1
    return x


def outside_span():
    end, x = time.perf_counter() + period, 0
    while time.perf_counter() < end:
        x += 1
    return x


def worker(index, info, started):
    info.update(index=index, thread_id=threading.get_native_id(),
                slot=lib.otelpub_slot_address(), thread_pointer=lib.otelpub_thread_pointer())
    started.set()
    cycle = 0
    while not done.is_set():
        cycle += 1
        trace = bytes((0x7E, index)) + cycle.to_bytes(14, "big")
        lib.otelpub_attach(trace, bytes((0xA0, index)) + cycle.to_bytes(6, "big"), 0, b"/a")
        in_span_a()
        lib.otelpub_detach()
        lib.otelpub_attach(trace, bytes((0xB0, index)) + cycle.to_bytes(6, "big"), 0, b"/b")
        in_span_b()
        lib.otelpub_detach()
        outside_span()


def main_wait(update_at, end_at):
    while not done.is_set():
        now = time.monotonic()
        if end_at is not None and now >= end_at:
            done.set()
            break
        if update_at is not None and now >= update_at:
            publish("2.0", update=True)
            print("otel_spans: process context updated (service.version 2.0)", flush=True)
            update_at = None
        waits = [t - now for t in (update_at, end_at) if t is not None]
        done.wait(min(waits + [1.0]))


signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
signal.signal(signal.SIGINT, lambda *_: sys.exit(0))
publish("1.0")
threads = []
for i in range(1, args.threads + 1):
    info, started = {}, threading.Event()
    t = threading.Thread(target=worker, args=(i, info, started), name=f"otel-worker-{i}",
                         daemon=True)
    t.start()
    started.wait()
    threads.append(info)
print("pyprofd-expected: " + json.dumps({
    "python": platform.python_version(), "pid": os.getpid(), "mapping": args.mapping,
    "main_thread_id": threading.get_native_id(), "threads": threads}), flush=True)
print("pyprofd-target: ready", flush=True)
start = time.monotonic()
main_wait(start + args.update_after if args.update_after > 0 else None,
          start + args.duration if args.duration is not None else None)
