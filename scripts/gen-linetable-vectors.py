#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Generates the location-table test vectors of agent/unwind/linetable.c.

For each CPython of the test rootfs (3.13, 3.14, 3.15), and the host's own
Debian 12 python3.11 (3.11 and 3.12 have the same table format), this compiles a fixed
set of source snippets and stdlib modules, chosen so that every entry form of
the PEP 626/657 location table occurs (short forms 0-9, one-line forms with
line deltas 0/1/2, no-column, long form with multi-line spans and negative
deltas, no-location, tables over 4096 bytes, multi-byte varints, non-ASCII
source), walks every nested code object, and writes for each one its
co_firstlineno, its co_linetable in hex and what code.co_positions() reports
for every code unit (as runs of equal positions). The output is deterministic:
no addresses, no timestamps, code objects in compile order.

Regenerate all three files (as root; the rootfs is built if missing):

    scripts/gen-linetable-vectors.py            # writes tests/fixtures/linetable/3.1X.txt
    scripts/gen-linetable-vectors.py --check    # fails if the committed files are stale

The wrapper runs this same file inside the rootfs, for each interpreter, as
`chroot ROOTFS /usr/bin/python3.X - --emit < this-file`; --emit writes one
version's vectors to stdout. The wrapper also writes the fuzz seeds
tests/fuzz/seeds/linetable/*.bin from the 3.14 vectors (format described in
tests/fuzz/fuzz_linetable.c). The wrapper itself runs under any python3 >= 3.9.
"""
import argparse
import os
import struct
import subprocess
import sys

# 3.11 is the host's own Debian 12 interpreter (same table format as 3.13+)
VERSIONS = ("3.11", "3.13", "3.14", "3.15")
# Under --emit the script is read from stdin and has no __file__.
HERE = os.path.dirname(os.path.abspath(globals().get("__file__", "-")))
TREE = os.path.dirname(HERE)

# Stdlib modules compiled from the interpreter's own sources, for code as
# people write it: generators and async generators (whose prologue has a
# no-column entry), decorators, try/finally, with, classes.
STDLIB_MODULES = ("contextlib", "textwrap")


def _long_function(name, n):
    """A function whose location table is far over CPython's 4096-byte mark."""
    lines = ["def %s(a, b):" % name, "    acc = 0"]
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


# (label, source). Labels are ASCII without spaces; sources must compile
# under every supported version (version-specific ones are added below).
SNIPPETS = [
    ("short_columns", (
        "def f(a, b, c, d):\n"
        "    return a + b\n"
        "def g(x):\n"
        "    y = x.aaaaaaaaaaaaaaaaaaaa.bbbbbbbbbbbbbbb.ccccccccccccccc.dddddddddddddd.ee.ff.gg.hh(1)\n"
        "    return (x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x)\n"
    )),
    ("one_line_deltas", (
        "def f(x):\n"
        "    a = x\n"
        "    b = a\n"
        "\n"
        "    c = b\n"
        "\n"
        "\n"
        "    d = c\n"
        "    return\\\n"
        "        d\n"
        "x = 1; y = 2; z = x + y\n"
        "w = ('.' * 200) + str(x)                                                                                                                                                                                                                           + str(y) + str(z)\n"
    )),
    ("multiline_negative", (
        "def f(g, a, b):\n"
        "    r = g(\n"
        "        a,\n"
        "        b,\n"
        "    )\n"
        "    s = [\n"
        "        i * 2\n"
        "        for i in r\n"
        "        if i\n"
        "    ]\n"
        "    while a < b:\n"
        "        a += 1\n"
        "    for k in range(3):\n"
        "        b -= k\n"
        "    return (r +\n"
        "            s)\n"
        "@staticmethod\n"
        "@property\n"
        "def decorated(self):\n"
        "    return 1\n"
        "class C(\n"
        "        object):\n"
        "    attr = (1,\n"
        "            2)\n"
        "    def m(self, *args, **kw):\n"
        "        return super().m(*args,\n"
        "                         **kw)\n"
    )),
    ("exceptions", (
        "def f(x):\n"
        "    try:\n"
        "        x()\n"
        "    except ValueError as e:\n"
        "        raise RuntimeError('bad') from e\n"
        "    except (KeyError, TypeError):\n"
        "        pass\n"
        "    else:\n"
        "        return 1\n"
        "    finally:\n"
        "        x.close()\n"
        "def g(cm):\n"
        "    with cm() as a, cm() as b:\n"
        "        return a + b\n"
        "def h(x):\n"
        "    assert x, 'message'\n"
        "    del x\n"
        "    try:\n"
        "        pass\n"
        "    except* OSError:\n"
        "        pass\n"
    )),
    ("generators_async", (
        "def gen(n):\n"
        "    yield from range(n)\n"
        "    yield n\n"
        "async def coro(aw, ait):\n"
        "    await aw\n"
        "    async for v in ait:\n"
        "        await v\n"
        "    async with aw as c:\n"
        "        return c\n"
        "async def agen(n):\n"
        "    for i in range(n):\n"
        "        yield i\n"
        "lam = lambda x: (yield x)\n"
        "ge = (v for v in range(3) if v)\n"
        "sc = {k: v for k, v in {}.items()}\n"
    )),
    ("match_fstrings", (
        "def f(cmd, name, width):\n"
        "    match cmd:\n"
        "        case [\"go\", direction]:\n"
        "            return f\"going {direction!r:>{width}} for {name}\"\n"
        "        case {\"x\": x, **rest} if x > 0:\n"
        "            return x\n"
        "        case str() | bytes():\n"
        "            return None\n"
        "        case _:\n"
        "            return f\"\"\"multi\n"
        "{cmd}\n"
        "   {name.upper()}\"\"\"\n"
        "v = 1 if f else 2\n"
        "ok = 0 < v < 10 and not v is None\n"
        "global_annotated: int = 3\n"
        "def annotated(a: int, b: 'str' = 'x') -> list[int]:\n"
        "    return [a]\n"
    )),
    ("non_ascii", (
        "# -*- coding: utf-8 -*-\n"
        "def naïve(café, 名前):\n"
        "    résumé = café + 名前 + \"ünïcödé ✓ 🐍\"\n"
        "    return résumé.upper() + \"αβγ\".lower() + 名前.strip()\n"
        "Ω = naïve(\"é\", \"日本語\")\n"
    )),
    ("big_line_delta", (
        "def far(x):\n"
        "    a = x\n"
        + "\n" * 70000 +
        "    b = a\n"
        + "\n" * 300 +
        "    return b\n"
    )),
    ("wide_columns", (
        "def wide(x):\n"
        "    return x.a(x) + '" + "." * 300 + "' + x.b(x) + '" + "-" * 5000 + "' + x.c(x)\n"
    )),
    ("long_function", _long_function("big", 240)),
    ("long_module", "".join("v%d = v%d + %d if %d else (\n  %d)\n" % (i, i - 1, i, i, i)
                            for i in range(1, 120))),
]
SNIPPETS_314 = [
    ("template_strings", (
        "def t(name, value):\n"
        "    return t\"{name}: {value:>10} {value!r}\"\n"
        "def excepts(x):\n"
        "    try:\n"
        "        x()\n"
        "    except ValueError, TypeError:\n"
        "        pass\n"
    )),
]


def _varint(tab, i):
    shift = val = 0
    while True:
        b = tab[i]
        i += 1
        val |= (b & 0x3F) << shift
        shift += 6
        if not b & 0x40:
            return val, i


def entry_forms(tab):
    """Yields (code, ncodeunits) per entry; only walks the headers."""
    i = 0
    while i < len(tab):
        head = tab[i]
        i += 1
        if not head & 0x80:
            raise ValueError("entry without start bit at byte %d" % (i - 1))
        code = (head >> 3) & 0xF
        if code < 10:
            i += 1
        elif code < 13:
            i += 2
        elif code == 13:
            _, i = _varint(tab, i)
        elif code == 14:
            for _ in range(4):
                _, i = _varint(tab, i)
        yield code, (head & 7) + 1


def _walk(code):
    yield code
    for const in code.co_consts:
        if isinstance(const, type(code)):
            yield from _walk(const)


def _field(v):
    return "-" if v is None else str(v)


def emit(out):
    """Writes this interpreter's vectors to the binary stream @out."""
    import sysconfig

    sources = list(SNIPPETS)
    if sys.version_info >= (3, 14):
        sources += SNIPPETS_314
    stdlib = sysconfig.get_paths()["stdlib"]
    for mod in STDLIB_MODULES:
        with open(os.path.join(stdlib, mod + ".py"), "rb") as f:
            sources.append(("stdlib_" + mod, f.read()))

    forms = [0] * 16
    blocks = []
    index = 0
    for label, src in sources:
        top = compile(src, "<%s>" % label, "exec", dont_inherit=True)
        for co in _walk(top):
            tab = co.co_linetable
            units = 0
            for code, n in entry_forms(tab):
                forms[code] += 1
                units += n
            positions = list(co.co_positions())
            if units != len(positions):
                raise SystemExit("%s: table covers %d units, co_positions() gave %d"
                                 % (co.co_qualname, units, len(positions)))
            lines = ["code %d %s:%s %d %d" % (index, label, co.co_qualname,
                                              co.co_firstlineno, len(positions)),
                     "table " + tab.hex()]
            start = 0
            while start < len(positions):
                end = start + 1
                while end < len(positions) and positions[end] == positions[start]:
                    end += 1
                lines.append("%d %d %s" % (start, end - start,
                                           " ".join(_field(v) for v in positions[start])))
                start = end
            lines.append("end")
            blocks.append("\n".join(lines) + "\n")
            index += 1

    v = sys.version_info
    head = [
        "# Location-table test vectors: co_linetable and co_positions() of CPython %d.%d.%d."
        % (v.major, v.minor, v.micro),
        "# Generated by scripts/gen-linetable-vectors.py; do not edit.",
        "# One block per code object, in compile order:",
        "#   code <index> <snippet>:<qualname> <co_firstlineno> <code units>",
        "#   table <co_linetable in hex>",
        "#   <first unit> <units> <line> <end_line> <col> <end_col>   (runs; '-' is None)",
        "#   end",
        "# Entries per form (code 0-15): " + " ".join("%d:%d" % (c, n) for c, n in enumerate(forms)),
        "python %d.%d.%d" % (v.major, v.minor, v.micro),
    ]
    out.write(("\n".join(head) + "\n").encode("ascii"))
    for b in blocks:
        out.write(b.encode("utf-8"))


def rootfs_path():
    return subprocess.run([os.path.join(HERE, "python-rootfs.sh")], check=True,
                          stdout=subprocess.PIPE, universal_newlines=True).stdout.strip()


def run_version(root, ver):
    with open(os.path.abspath(__file__), "rb") as script:
        res = subprocess.run(["chroot", "/" if ver == "3.11" else root,
                              "/usr/bin/python" + ver, "-", "--emit"],
                             stdin=script, stdout=subprocess.PIPE, check=True)
    return res.stdout


def parse_vectors(text):
    """Yields (label, firstlineno, table bytes, units) from a vector file."""
    cur = None
    for line in text.decode("utf-8").splitlines():
        if line.startswith("code "):
            _, _, label, first, units = line.split(" ")
            cur = [label, int(first), None, int(units)]
        elif line.startswith("table ") and cur is not None:
            cur[2] = bytes.fromhex(line[6:])
        elif line == "end" and cur is not None:
            yield tuple(cur)
            cur = None


# Seeds: (file name, label in the 3.14 vectors, addrq as a fraction of the units).
SEEDS = (
    ("short_columns_g", "short_columns:g", 0.5),
    ("multiline_negative_f", "multiline_negative:f", 0.7),
    ("exceptions_f", "exceptions:f", 0.9),
    ("generator", "generators_async:gen", 0.0),
    ("non_ascii", "non_ascii:naïve", 0.5),
    ("big_line_delta", "big_line_delta:far", 0.8),
    ("wide_columns", "wide_columns:wide", 0.99),
    ("long_function", "long_function:big", 0.95),
)


def seeds_from(text):
    """Fuzz seeds: int32 LE firstlineno, uint32 LE addrq, then the table."""
    by_label = {}
    for label, first, tab, units in parse_vectors(text):
        by_label.setdefault(label, (first, tab, units))
    out = {}
    for name, label, frac in SEEDS:
        first, tab, units = by_label[label]
        out[name + ".bin"] = struct.pack("<iI", first, int(units * frac)) + tab
    # Past the end, and a truncated long-form entry.
    first, tab, units = by_label["short_columns:f"]
    out["past_end.bin"] = struct.pack("<iI", first, units) + tab
    out["truncated.bin"] = struct.pack("<iI", 1, 0) + bytes([0xF0, 0x43, 0x41])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--emit", action="store_true",
                    help="write the running interpreter's vectors to stdout (run in the rootfs)")
    ap.add_argument("--check", action="store_true",
                    help="regenerate in memory and fail if the committed files differ")
    ap.add_argument("--rootfs", help="rootfs directory (default: scripts/python-rootfs.sh)")
    ap.add_argument("--out-dir", default=os.path.join(TREE, "tests", "fixtures", "linetable"),
                    help="where 3.1X.txt go (default: %(default)s)")
    ap.add_argument("--seed-dir", default=os.path.join(TREE, "tests", "fuzz", "seeds", "linetable"),
                    help="where the fuzz seeds go (default: %(default)s)")
    args = ap.parse_args()

    if args.emit:
        emit(sys.stdout.buffer)
        return 0

    root = args.rootfs or rootfs_path()
    files = {}
    for ver in VERSIONS:
        files[os.path.join(args.out_dir, ver + ".txt")] = run_version(root, ver)
    for name, blob in seeds_from(files[os.path.join(args.out_dir, "3.14.txt")]).items():
        files[os.path.join(args.seed_dir, name)] = blob

    stale = []
    for path, blob in sorted(files.items()):
        try:
            with open(path, "rb") as f:
                same = f.read() == blob
        except OSError:
            same = False
        if same:
            continue
        stale.append(path)
        if not args.check:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(blob)
    for path in stale:
        print("%s %s" % ("stale:" if args.check else "wrote", os.path.relpath(path, TREE)))
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
