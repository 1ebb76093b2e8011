# SPDX-License-Identifier: MIT
"""pyprofd test target: a C library loaded mid-run, and a process that ends.

    python_phase()   spins in Python for --before seconds (no C library yet);
    then loads LIB (argument: a path, test_native.py builds it from
    native_spin.c, stripped) with ctypes, which dlopens it while a profiler
    may already be attached, and
    call_spin()      calls its pyprofd_spin() (which spends its time in an
                     unnamed static function) until --duration seconds have
                     passed since the start; then the process exits by itself.

Prints "pyprofd-target: ready" at the start.
"""

import argparse
import ctypes
import time

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("lib")
parser.add_argument("--before", type=float, default=1.0)
parser.add_argument("--duration", type=float, default=4.0)
args = parser.parse_args()


def python_phase(until):
    x = 0
    while time.monotonic() < until:
        x += 1
    return x


def call_spin(spin, until):
    while time.monotonic() < until:
        spin(200000)


start = time.monotonic()
print("pyprofd-target: ready", flush=True)
python_phase(start + args.before)
lib = ctypes.CDLL(args.lib)
lib.pyprofd_spin.argtypes = [ctypes.c_long]
lib.pyprofd_spin.restype = ctypes.c_uint64
call_spin(lib.pyprofd_spin, start + args.duration)
