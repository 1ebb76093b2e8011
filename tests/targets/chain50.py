# SPDX-License-Identifier: MIT
"""pyprofd test target: a fixed 50-frame Python stack, and a churning one.

Default: the main thread is exactly 50 Python frames deep and spins at the
bottom (<module> -> level(48) -> ... -> level(1) -> leaf), used to count the
reads of one warm sample. With --churn the main thread instead calls chains
of varying depth (1..60) in a tight loop, so its stack changes between and
during samples: the test that the unwinder reports torn reads as failures,
never as wrong stacks.

Prints "pyprofd-target: ready" once running; exits on SIGTERM.
"""

import argparse
import signal
import sys

done = False


def on_term(signum, frame):
    global done
    done = True


def leaf():
    while not done: pass


def level(n):
    if n == 0:
        return leaf()
    return level(n - 1)


def churn_leaf(i):
    return i * 2


def churn(n, i):
    if n == 0:
        return churn_leaf(i)
    return churn(n - 1, i)


parser = argparse.ArgumentParser()
parser.add_argument("--churn", action="store_true")
args = parser.parse_args()
signal.signal(signal.SIGTERM, on_term)
print("pyprofd-target: ready", flush=True)
if args.churn:
    i = 0
    while not done:
        churn(i % 60, i)
        i += 1
else:
    level(47)  # <module> + 48 level frames + leaf = 50 frames
sys.exit(0)
