# SPDX-License-Identifier: MIT
"""Not a target: what the targets that record their own stack share.

record_stack.py, deep.py, generators.py, callback.py and
ctypes_second_libpython.py walk their stack with sys._getframe() before
they spin and print it, leaf first, as one line

    pyprofd-expected: {"python": ..., "pid": ..., "thread_id": ...,
                       "frames": [{"function", "file", "line", "end_line",
                                   "column", "end_column"}, ...], ...}

followed by "pyprofd-target: ready". scripts/run-target.sh copies this file
next to the target (/pyprofd-targets in the rootfs), where `import
pyprofd_expected` finds it (a script's own directory leads sys.path). Its
functions' frames are gone from the stack before the target spins.
"""

import json
import os
import platform
import threading


def frame_record(frame, leaf_line=None, check_line=False):
    """One frame as pyprofd dump --json prints it; the leaf gets leaf_line.

    Each caller carries the PEP 657 positions of its current instruction
    (code.co_positions()[f_lasti // 2]: the CALL still running); 3.9 and
    3.10 have lines only. With check_line, a line that f_lineno and
    co_positions disagree on is reported (not expected on 3.13+).
    """
    code = frame.f_code
    function = getattr(code, "co_qualname", code.co_name)  # (<= 3.10: co_name)
    if leaf_line is not None:
        return {"function": function, "file": code.co_filename, "line": leaf_line,
                "end_line": None, "column": None, "end_column": None}
    positions = (list(code.co_positions())[frame.f_lasti // 2] if hasattr(code, "co_positions")
                 else (frame.f_lineno, None, None, None))  # <= 3.10: lines only
    if check_line and positions[0] != frame.f_lineno:
        # shows up as a test failure if it happens
        print(f"pyprofd-target: warning: f_lineno {frame.f_lineno} != co_positions "
              f"line {positions[0]} in {code.co_name}", flush=True)
    return {"function": function, "file": code.co_filename, "line": frame.f_lineno,
            "end_line": positions[1], "column": positions[2], "end_column": positions[3]}


def announce(leaf, leaf_line, *, check_lines=False, **extra):
    """Print the expected stack (leaf first, from frame leaf up), with the
    fields in extra, and the ready line."""
    frames = [frame_record(leaf, leaf_line)]
    frame = leaf.f_back
    while frame is not None:
        frames.append(frame_record(frame, check_line=check_lines))
        frame = frame.f_back
    expected = {"python": platform.python_version(), "pid": os.getpid(),
                "thread_id": threading.get_native_id(), "frames": frames, **extra}
    print("pyprofd-expected: " + json.dumps(expected), flush=True)
    print("pyprofd-target: ready", flush=True)
