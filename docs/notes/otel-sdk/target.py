# SPDX-License-Identifier: MIT
"""Scratch target for the out-of-process OTel span reader prototype.

Runs the real OpenTelemetry SDK (or, with --standin, a minimal stand-in) in a
few threads and an asyncio loop, and publishes, per thread, its PyThreadState
address and a marker slot (8 bytes in a bytearray) holding the span_id the
thread is in *right now* (0 = unknown / in transition). The reader stops the
process (SIGSTOP), reads the chain, and compares with the markers.

It also builds HAMTs with keys of chosen hashes (_testcapi/_testinternalcapi
.hamt()) so the reader can check array and collision nodes.

Prints one JSON line, then runs for DURATION seconds.
"""
import asyncio
import contextvars
import ctypes
import json
import os
import struct
import sys
import threading
import time

DURATION = float(os.environ.get("DURATION", "3"))
STANDIN = "--standin" in sys.argv

if STANDIN:
    # A minimal stand-in with the SDK's relevant structure only.
    import uuid
    import random

    class Context(dict):
        pass

    _CV = contextvars.ContextVar("current_context", default=Context())
    _SPAN_KEY = "current-span-" + str(uuid.uuid4())

    class SpanContext(tuple):
        def __new__(cls, trace_id, span_id, is_remote=False):
            return tuple.__new__(cls, (trace_id, span_id, is_remote, 0, None, True))

        @property
        def trace_id(self):
            return self[0]

        @property
        def span_id(self):
            return self[1]

    class _Span:
        def __init__(self, name, context):
            self._name = name
            self._context = context
            self._attributes = {}

        def get_span_context(self):
            return self._context

    class _Cm:
        def __init__(self, name, parent_tid):
            self.span = _Span(name, SpanContext(parent_tid or random.getrandbits(128), random.getrandbits(64)))

        def __enter__(self):
            cur = _CV.get()
            new = Context(cur)
            dict.__setitem__(new, _SPAN_KEY, self.span)
            self.tok = _CV.set(new)
            return self.span

        def __exit__(self, *a):
            _CV.reset(self.tok)

    class Tracer:
        def start_as_current_span(self, name):
            cur = _CV.get().get(_SPAN_KEY)
            return _Cm(name, cur._context[0] if cur else None)

    tracer = tracer_off = Tracer()
    SDK = "stand-in"
else:
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

    tracer = TracerProvider().get_tracer("h-sdk")
    tracer_off = TracerProvider(sampler=ALWAYS_OFF).get_tracer("h-sdk-off")
    import opentelemetry.version as _v

    SDK = "opentelemetry-api " + _v.__version__

_get_ts = ctypes.pythonapi.PyThreadState_Get
_get_ts.restype = ctypes.c_void_p

NSLOTS = 8
markers = bytearray(8 * NSLOTS)
_mview = (ctypes.c_char * len(markers)).from_buffer(markers)  # pins the buffer
markers_addr = ctypes.addressof(_mview)

threads = {}
lock = threading.Lock()
ready = threading.Event()
stop_at = [0.0]


def mark(slot, span):
    sid = span.get_span_context().span_id if span is not None else 0
    struct.pack_into("<Q", markers, 8 * slot, sid)


def register(name, slot, **extra):
    with lock:
        threads[name] = dict(tstate=_get_ts(), slot=slot, native=threading.get_native_id(), **extra)


def wait_end():
    ready.wait()
    while time.time() < stop_at[0]:
        time.sleep(0.002)


def t_plain(slot):
    register("plain", slot, expect="none")
    wait_end()


def t_nested(slot):
    register("nested", slot, expect="span")
    ready.wait()
    with tracer.start_as_current_span("outer") as a:
        mark(slot, a)
        while time.time() < stop_at[0]:
            mark(slot, None)
            with tracer.start_as_current_span("inner") as b:
                mark(slot, b)
                time.sleep(0.003)
                mark(slot, None)
            mark(slot, a)
            time.sleep(0.003)
        mark(slot, None)


def t_nonrecording(slot):
    register("nonrecording", slot, expect="span")
    ready.wait()
    with tracer_off.start_as_current_span("off") as a:
        mark(slot, a)
        wait_end()
        mark(slot, None)


def t_manyvars(slot):
    # 40 other context variables set in this thread's context first: the
    # HAMT's root becomes an array node.
    vs = [contextvars.ContextVar("v%d" % i) for i in range(40)]
    for i, v in enumerate(vs):
        v.set(i)
    register("manyvars", slot, expect="span")
    ready.wait()
    with tracer.start_as_current_span("many") as a:
        mark(slot, a)
        wait_end()
        mark(slot, None)


def t_realdict(slot):
    # the span's attributes moved to a real dict (its __dict__ replaced)
    register("realdict", slot, expect="span")
    ready.wait()
    with tracer.start_as_current_span("realdict") as a:
        a.__dict__ = dict(a.__dict__)
        mark(slot, a)
        wait_end()
        mark(slot, None)


def t_async(slot):
    register("asyncio", slot, expect="span")
    ready.wait()

    async def worker(i):
        with tracer.start_as_current_span("task%d" % i) as s:
            while time.time() < stop_at[0]:
                mark(slot, s)
                t0 = time.perf_counter()
                while time.perf_counter() - t0 < 0.002:
                    pass
                mark(slot, None)
                await asyncio.sleep(0.004)

    async def main():
        await asyncio.gather(*(worker(i) for i in range(3)))

    with tracer.start_as_current_span("loop-base"):
        asyncio.run(main())


# HAMTs with chosen hashes (keys are objects whose __hash__ we choose)
class K:
    def __init__(self, h):
        self.h = h

    def __hash__(self):
        return self.h

    def __eq__(self, o):
        return self is o


try:
    import _testinternalcapi as _tc

    _hamt = _tc.hamt
except (ImportError, AttributeError):
    import _testcapi as _tc

    _hamt = _tc.hamt

hamt_tests = []
keep = []
# 1. array node at the root (> 16 distinct 5-bit chunks at level 0)
h = _hamt()
ks = [K(i) for i in range(20)]
for i, k in enumerate(ks):
    h = h.set(k, "v%d" % i)
keep += [h, ks]
hamt_tests.append(dict(hamt=id(h), keys=[[id(k), k.h, id(h[k])] for k in ks]))
# 2. collisions: equal 32-bit folded hashes (and one 64-bit hash folding to the same)
h2 = _hamt()
ks2 = [K(12345), K(12345), K((5 << 32) | (12345 ^ 5)), K(7), K(7 | (1 << 20)), K(-1), K(1), K(4294967295)]
for i, k in enumerate(ks2):
    h2 = h2.set(k, "w%d" % i)
keep += [h2, ks2]
hamt_tests.append(dict(hamt=id(h2), keys=[[id(k), hash(k), id(h2[k])] for k in ks2]))

slots = [t_plain, t_nested, t_nonrecording, t_manyvars, t_realdict, t_async]
ths = [threading.Thread(target=f, args=(i + 1,), name=f.__name__) for i, f in enumerate(slots)]
for t in ths:
    t.start()
while len(threads) < len(slots):
    time.sleep(0.001)
register("main", 0, expect="span")
stop_at[0] = time.time() + DURATION
with tracer.start_as_current_span("main") as m:
    mark(0, m)
    print(
        json.dumps(
            dict(
                pid=os.getpid(),
                version=list(sys.version_info[:3]),
                sdk=SDK,
                markers=markers_addr,
                threads=threads,
                hamt_tests=hamt_tests,
            )
        ),
        flush=True,
    )
    ready.set()
    for t in ths:
        t.join()
    mark(0, None)
