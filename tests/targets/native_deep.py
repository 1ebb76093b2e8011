# SPDX-License-Identifier: MIT
"""pyprofd test target: a C stack some hundreds of frames deep (issue 37).

Loads LIB (argument: a path; tests/integration/test_faults_accuracy.py
builds it from native_spin.c, stripped) with ctypes, and the main thread
calls, forever,

    <module> -> call_deep() -> [ctypes] -> pyprofd_deep() x DEPTH -> churn()

so that its C stack below the Python frames is deeper than what a native
unwinder takes (256 frames, or the stack copy): a mixed stack must come out
cut, its leaf C frames kept, not as Python frames alone.

Arguments: LIB [--depth N] (default 400). Prints "pyprofd-target: ready",
then runs until SIGTERM/SIGINT.
"""

import argparse
import ctypes
import signal
import sys

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("lib")
parser.add_argument("--depth", type=int, default=400)
args = parser.parse_args()


def call_deep(deep, depth):
    while True:
        deep(depth, 200000)


signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
signal.signal(signal.SIGINT, lambda *_: sys.exit(0))
lib = ctypes.CDLL(args.lib)
lib.pyprofd_deep.argtypes = [ctypes.c_long, ctypes.c_long]
lib.pyprofd_deep.restype = ctypes.c_uint64
print("pyprofd-target: ready", flush=True)
call_deep(lib.pyprofd_deep, args.depth)
