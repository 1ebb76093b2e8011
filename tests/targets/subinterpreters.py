# SPDX-License-Identifier: MIT
"""pyprofd test target: a sub-interpreter running in its own thread.

Stacks (innermost last):

    main interpreter, MainThread   <module> -> main_loop()        (time.sleep)
    main interpreter, thread "sub" Thread._bootstrap ... -> run_sub()
                                   (blocked in the C call that runs the
                                   sub-interpreter's code)
    sub-interpreter, same OS thread  <module> -> sub_work()       (time.sleep)

The OS thread "sub" has a thread state in each interpreter, so `dump -a`
shows it twice, once per interpreter. Running code in the sub-interpreter
makes "sub" that interpreter's main thread ("main" is per interpreter, as in
CPython). Prints one line

    pyprofd-expected: {"main_tid": <native id of MainThread>,
                       "sub_tid": <native id of thread "sub">,
                       "sub_interpreter_id": <the sub-interpreter's id>}

then "pyprofd-target: ready"; exits on SIGTERM.
"""

import json
import signal
import sys
import threading
import time

try:
    import _interpreters
except ImportError:  # 3.11, 3.12: the same calls, by their older name
    import _xxsubinterpreters as _interpreters

SUB_CODE = """\
import time
def sub_work():
    while True:
        time.sleep(0.01)
sub_work()
"""

sub_tid = []
sub_id = []


def run_sub():
    interp = _interpreters.create()
    sub_id.append(int(interp))
    sub_tid.append(threading.get_native_id())
    _interpreters.run_string(interp, SUB_CODE)


def main_loop():
    while True:
        time.sleep(0.05)


signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
threading.Thread(target=run_sub, name="sub", daemon=True).start()
while not sub_tid:
    time.sleep(0.01)
time.sleep(0.3)  # let the sub-interpreter reach sub_work()
print("pyprofd-expected: " + json.dumps({"main_tid": threading.get_native_id(),
                                          "sub_tid": sub_tid[0],
                                          "sub_interpreter_id": sub_id[0]}), flush=True)
print("pyprofd-target: ready", flush=True)
main_loop()
