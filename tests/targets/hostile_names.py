# SPDX-License-Identifier: MIT
"""A target whose names are not text (tests/integration/test_utf8.py).

The test copies this file into the rootfs under a file name holding bytes
that are not UTF-8 and an escape sequence, and passes arguments like that.
The process then names itself (its comm, which is also its main thread's
name) and its worker thread with such bytes through prctl(PR_SET_NAME), the
way a C extension or a setproctitle-like library can; the kernel cuts the
process's name at 15 bytes, inside a character. Python itself keeps the
file name's undecodable bytes as lone surrogates in co_filename.

Threads: the main thread alternates hot_text() (a small loop) with a short
sleep; the worker sleeps in idle_text() -> time.sleep(). --idle: the main
thread only sleeps (a second copy the test expects to be dropped).
"""

import ctypes
import signal
import sys
import threading
import time

PR_SET_NAME = 15
# 15 bytes kept: m FE ESC ] 0 ; t BEL, two 3-byte characters, then the first
# byte of a third: the kernel's cut splits it
PROCESS_NAME = b"m\xfe\x1b]0;t\x07\xe6\x97\xa5\xe6\x97\xa5\xe6\x97\xa5"
WORKER_NAME = b"w\xff\x1b[31mrk\xe2\x82"

libc = ctypes.CDLL(None, use_errno=True)
named = threading.Barrier(2)


def set_name(name):
    if libc.prctl(PR_SET_NAME, ctypes.c_char_p(name), 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NAME)")


def hot_text(n):
    total = 0
    for i in range(n):
        total += i * i
    return total


def idle_text():
    time.sleep(0.01)


def worker():
    set_name(WORKER_NAME)
    named.wait()
    while True:
        idle_text()


def main():
    signal.signal(signal.SIGTERM, lambda s, f: sys.exit(0))
    signal.signal(signal.SIGINT, lambda s, f: sys.exit(0))
    idle = "--idle" in sys.argv[1:]
    set_name(PROCESS_NAME)
    threading.Thread(target=worker, daemon=True).start()
    named.wait()
    print("pyprofd-target: ready", flush=True)
    while True:
        if idle:
            idle_text()
        else:
            hot_text(3000)
            time.sleep(0.002)


main()
