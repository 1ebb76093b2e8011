# SPDX-License-Identifier: MIT
"""pyprofd test target: a second, never initialised CPython runtime mapped in.

Debian's /usr/bin/python3.X links libpython statically, so the executable
holds the live runtime (its .PyRuntime section). This target also loads the
shared libpython3.X.so.1.0 of the same version with ctypes.CDLL, without
initialising it: the process then maps two .PyRuntime sections with the same
cookie and version, and only the executable's is initialised. A profiler must
read the live one.

Stack of the main thread (innermost last), always on CPU:

    <module>  ->  main()  ->  spin_with_two_runtimes()

Before spinning, spin_with_two_runtimes() walks its own stack with
sys._getframe() and prints one line

    pyprofd-expected: {"python", "pid", "thread_id", "second_runtime": PATH,
                       "frames": [{"function", "file", "line", "end_line",
                                   "column", "end_column"}, ...]}

(leaf first; the leaf spins on one line, with null columns; PATH is the
libpython as /proc/self/maps shows it, null in a plain chroot without /proc). Then it prints
"pyprofd-target: ready" and spins until SIGTERM/SIGINT or until --duration
SECONDS has elapsed. The garbage collector is disabled while spinning.
"""

import argparse
import ctypes
import gc
import signal
import sys

from pyprofd_expected import announce

done = False


def load_second_runtime():
    """CDLL the shared libpython of our own version; return its mapped path.

    The path comes from /proc/self/maps, which a plain chroot lacks (the
    rootfs has no /proc mounted): there it is None.
    """
    name = "libpython%d.%d.so.1.0" % sys.version_info[:2]
    ctypes.CDLL(name)  # kept loaded: ctypes never dlclose()s
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                fields = line.split()
                if len(fields) >= 6 and fields[5].endswith("/" + name):
                    return fields[5]
    except OSError:
        return None
    raise SystemExit(f"{name} was loaded but is not in /proc/self/maps")


def spin_with_two_runtimes(second_runtime):
    me = sys._getframe()
    announce(me, me.f_lineno + 1, second_runtime=second_runtime)  # next line: the leaf
    while not done: pass  # noqa: E701 -- one line on purpose: a stable leaf line


def main():
    spin_with_two_runtimes(load_second_runtime())


def _exit_cleanly(signum, frame):
    # Also needed in container mode, where we are PID 1 of a PID namespace and
    # the kernel would otherwise ignore SIGTERM.
    sys.exit(0)


parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--duration", type=float, default=None,
                    help="exit after this many seconds (default: run until killed)")
args = parser.parse_args()
signal.signal(signal.SIGTERM, _exit_cleanly)
signal.signal(signal.SIGINT, _exit_cleanly)
if args.duration is not None:
    # The spinning leaf never looks at the clock: a one-shot timer ends it.
    signal.signal(signal.SIGALRM, _exit_cleanly)
    signal.setitimer(signal.ITIMER_REAL, args.duration)

gc.collect()
gc.disable()
main()
