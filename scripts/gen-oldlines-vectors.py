#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Generates the line-table test vectors of CPython 3.9 and 3.10.

3.9 keeps a code object's lines in co_lnotab and 3.10 in co_linetable (PEP
626); neither has co_positions(). What CPython itself says a byte offset's
line is comes from its own C function PyCode_Addr2Line(code, offset), called
here through ctypes: for each code object of a fixed set of snippets and
stdlib modules (long functions, line jumps over 127 and byte jumps over 255,
negative line deltas, decorators, generators, comprehensions, try/finally,
lines that 3.10 marks as none, lambdas and one-line functions, whose 3.9
table is empty, and functions given an empty table), every instruction's
offset is looked up and
written out as runs of equal lines. agent/unwind/linetable.c must report the
same (tests/unit/agent/unwind/test_linetable.c).

    scripts/gen-oldlines-vectors.py            # writes tests/fixtures/linetable/3.9.txt, 3.10.txt
    scripts/gen-oldlines-vectors.py --check    # fails if the committed files are stale

The interpreters: $PYPROFD_PYTHON_3_9 and $PYPROFD_PYTHON_3_10, else
/usr/bin/python3.9 in the Debian 11 rootfs (scripts/python-rootfs.sh
--bullseye, run through chroot) and pyenv's 3.10 ($HOME/.pyenv/versions/3.10.*).
Each runs this same file with --emit, which writes one version's vectors to
stdout. Output is deterministic: no addresses, code objects in compile order.
"""
import argparse
import glob
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(globals().get("__file__", "-")))
TREE = os.path.dirname(HERE)
VERSIONS = ("3.9", "3.10")
STDLIB_MODULES = ("contextlib", "textwrap")


def _long_function(n):
    lines = ["def long(a, b):", "    acc = 0"]
    for i in range(n):
        if i % 3 == 0:
            lines.append("    acc += a[%d] * b.f%d(%d)" % (i, i, i))
        elif i % 3 == 1:
            lines.append("    if acc > %d:" % (i * 7))
            lines.append("        acc -= b[%d]" % i)
        else:
            lines.append("    acc = (acc +")
            lines.append("           %d)" % i)
    lines.append("    return acc")
    return "\n".join(lines) + "\n"


SNIPPETS = [
    ("simple", "def f(a, b):\n    c = a + b\n    return c\n"),
    ("blank_lines", "def f(x):\n    a = x\n" + "\n" * 200 + "    b = a\n" + "\n" * 400 + "    return b\n"),
    ("negative", (
        "def f(x):\n"
        "    return g(x,\n"
        "             h(1,\n"
        "               2),\n"
        "             3)\n"
    )),
    ("big_bytes", "def f(x):\n    return (" + " + ".join("x.a%d" % i for i in range(120)) + ")\n"),
    ("loops", (
        "def f(n):\n"
        "    t = 0\n"
        "    for i in range(n):\n"
        "        if i % 2:\n"
        "            continue\n"
        "        t += i\n"
        "    while t > 0:\n"
        "        t -= 3\n"
        "    return t\n"
    )),
    ("try_finally", (
        "def f(x):\n"
        "    try:\n"
        "        y = 1 / x\n"
        "    except ZeroDivisionError:\n"
        "        y = 0\n"
        "    finally:\n"
        "        x = None\n"
        "    with open('/dev/null') as fh:\n"
        "        fh.read()\n"
        "    return y\n"
    )),
    ("generators", (
        "import functools\n"
        "@functools.lru_cache()\n"
        "def f(n):\n"
        "    return [i * 2 for i in range(n) if i]\n"
        "def g(n):\n"
        "    yield from range(n)\n"
        "    yield {k: v for k, v in zip('ab', 'cd')}\n"
        "async def h(x):\n"
        "    await x\n"
        "    return lambda y: (y,\n"
        "                      x)\n"
    )),
    ("nonascii", "def caf\u00e9(\u00e9t\u00e9):\n    \u00e9t\u00e9 = '\u2603'\n    return \u00e9t\u00e9\n"),
    # 3.9 leaves co_lnotab empty when every instruction is on co_firstlineno
    ("one_line", (
        "f = lambda: 0\n"
        "def g(x): return x + 1\n"
        "class C:\n"
        "    def m(self): return [y for y in (lambda: self)()]\n"
    )),
    ("long", _long_function(400)),
]


def _write_code(out, addr2line, field, index, label, code):
    n = len(code.co_code)
    out.write("code %d %s:%s %d %d\n" % (index, label, code.co_name, code.co_firstlineno, n))
    out.write("table %s\n" % getattr(code, field).hex())
    runs = []
    for off in range(0, n, 2):
        line = addr2line(code, off)
        if runs and runs[-1][2] == line:
            runs[-1][1] += 2
        else:
            runs.append([off, 2, line])
    for start, length, line in runs:
        out.write("%d %d %s\n" % (start, length, "-" if line == -1 else line))
    out.write("end\n")


def _codes(code, label):
    yield label, code
    for c in code.co_consts:
        if hasattr(c, "co_code"):
            yield from _codes(c, label)


# Functions of these snippets also emitted with an empty table (code.replace):
# what PyCode_Addr2Line() makes of none at all (3.9: co_firstlineno
# everywhere; 3.10: no line).
EMPTIED = ("loops", "generators")


def emit(out):
    import ctypes
    addr2line = ctypes.pythonapi.PyCode_Addr2Line
    addr2line.argtypes = [ctypes.py_object, ctypes.c_int]
    addr2line.restype = ctypes.c_int
    v = sys.version_info
    minor = v[1]
    field = "co_lnotab" if minor == 9 else "co_linetable"
    sources = list(SNIPPETS)
    for mod in STDLIB_MODULES:
        path = __import__(mod).__file__
        with open(path, encoding="utf-8") as fh:
            sources.append((mod, fh.read()))
    out.write("# Line-table test vectors: %s and PyCode_Addr2Line() of CPython %d.%d.%d.\n"
              % (field, v[0], v[1], v[2]))
    out.write("# Generated by scripts/gen-oldlines-vectors.py; do not edit.\n")
    out.write("# One block per code object, in compile order:\n")
    out.write("#   code <index> <snippet>:<co_name> <co_firstlineno> <bytes of co_code>\n")
    out.write("#   table <%s in hex>\n" % field)
    out.write("#   <first byte offset> <bytes> <line>   (runs over instruction offsets; '-' is -1)\n")
    out.write("#   end\n")
    out.write("python %d.%d.%d\n" % (v[0], v[1], v[2]))
    index = 0
    for label, src in sources:
        top = compile(src, "<%s>" % label, "exec")
        for lab, code in _codes(top, label):
            _write_code(out, addr2line, field, index, lab, code)
            index += 1
    emptied = []
    for label, src in sources:
        if label in EMPTIED:
            top = compile(src, "<%s>" % label, "exec")
            emptied += [("emptied_" + label, c.replace(**{field: b""}))
                        for c in top.co_consts if hasattr(c, "co_code")]
    for label, code in emptied:
        _write_code(out, addr2line, field, index, label, code)
        index += 1


def interpreter(version):
    env = os.environ.get("PYPROFD_PYTHON_%s" % version.replace(".", "_"))
    if env:
        return [env]
    if version == "3.9":
        root = subprocess.run([os.path.join(HERE, "python-rootfs.sh"), "--bullseye"], check=True,
                              stdout=subprocess.PIPE, text=True).stdout.strip()
        return ["chroot", root, "/usr/bin/python3.9"]
    found = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/%s.*/bin/python%s" % (version, version))))
    if not found:
        raise SystemExit("gen-oldlines-vectors: no python%s: set PYPROFD_PYTHON_%s"
                         % (version, version.replace(".", "_")))
    return [found[-1]]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--emit", action="store_true", help="write this interpreter's vectors to stdout")
    ap.add_argument("--check", action="store_true", help="fail if the committed files are stale")
    args = ap.parse_args()
    if args.emit:
        emit(sys.stdout)
        return 0
    with open(os.path.abspath(__file__), "rb") as fh:
        me = fh.read()
    stale = []
    for version in VERSIONS:
        res = subprocess.run(interpreter(version) + ["-", "--emit"], input=me, check=True,
                             stdout=subprocess.PIPE)
        path = os.path.join(TREE, "tests", "fixtures", "linetable", "%s.txt" % version)
        if args.check:
            with open(path, "rb") as fh:
                if fh.read() != res.stdout:
                    stale.append(path)
        else:
            with open(path, "wb") as fh:
                fh.write(res.stdout)
            print("wrote %s" % os.path.relpath(path, TREE))
    if stale:
        print("stale: %s" % " ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
