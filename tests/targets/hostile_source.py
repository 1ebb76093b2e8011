# -*- coding: latin-1 -*-
# SPDX-License-Identifier: MIT
"""A target whose source text and names are hostile to the pages and files
pyprofd writes (tests/integration/test_formats.py).

The file is Latin-1, so the byte on the comment line below is not UTF-8 as
it stands on disk (the heatmap shows it as U+FFFD); that line also holds a
control byte. A string holds "</script>". The hot function's name and file
name, given with code.replace() and compile(), hold "</script>", a control
byte and a lone surrogate (not UTF-8 at all).

Stack: <module> -> spin() (this file, line 24) -> the hostile function
(line 1 of its made-up file), which loops; <module> also sleeps a little.
"""
# Latin-1 ÿ and a control byte  here; </script><script>alert(1)</script>
import signal
import sys
import time

MARK = "</script><script>alert(1)</script>"
HOSTILE = compile("def hot(n):\n    while n: n -= 1\n", "</script>\x01\udcff.py", "exec")


def spin(f):
    f(20000)


ns = {}
exec(HOSTILE, ns)
hot = ns["hot"]
if hasattr(hot.__code__, "co_qualname"):
    hot.__code__ = hot.__code__.replace(co_qualname="</script><b>\x01\udcff", co_name="h\x01")
stop = False


def on_signal(signum, frame):
    global stop
    stop = True


signal.signal(signal.SIGTERM, on_signal)
signal.signal(signal.SIGINT, on_signal)
end = time.monotonic() + float(sys.argv[sys.argv.index("--duration") + 1]) \
    if "--duration" in sys.argv else None
print("pyprofd-target: ready", flush=True)
while not stop and (end is None or time.monotonic() < end):
    spin(hot)
