#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the generated seed inputs of the fuzz targets (seeds/elf_sections and
seeds/pyversion). Deterministic; rerun after changing it and commit the output.
The proc_maps seeds are text files kept by hand."""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def elf(etype=2, vaddr=0x400000, sec_addr=0x4b1000, names=(b".PyRuntime",), xnum=False):
    """A minimal ELF64 LE file: ehdr, one PT_LOAD, one data blob per section."""
    shstr = b"\0" + b"\0".join(names) + b"\0.shstrtab\0"
    data = b"xdebugpy" + struct.pack("<QQ", 0x030E08F0, 0)
    ehsize, phsize, shsize = 64, 56, 64
    data_off = ehsize + phsize
    str_off = data_off + len(data)
    sh_off = (str_off + len(shstr) + 7) & ~7
    nsec = 2 + len(names)
    ident = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9)
    eh = ident + struct.pack("<HHIQQQIHHHHHH", etype, 62, 1, 0, ehsize, sh_off, 0,
                             ehsize, phsize, 1, shsize, 0 if xnum else nsec,
                             0xFFFF if xnum else nsec - 1)
    ph = struct.pack("<IIQQQQQQ", 1, 5, 0, vaddr, vaddr, 0x1000, 0x1000, 0x1000)
    body = eh + ph + data + shstr
    body += bytes(sh_off - len(body))
    first = struct.pack("<IIQQQQIIQQ", 0, 0, 0, 0, 0, nsec if xnum else 0,
                        nsec - 1 if xnum else 0, 0, 0, 0)
    secs = [first]
    name_pos = 1
    for n in names:
        secs.append(struct.pack("<IIQQQQIIQQ", name_pos, 1, 3, sec_addr, data_off,
                                len(data), 0, 0, 8, 0))
        name_pos += len(n) + 1
    secs.append(struct.pack("<IIQQQQIIQQ", name_pos, 3, 0, 0, str_off, len(shstr),
                            0, 0, 1, 0))
    return body + b"".join(secs)


def header(cookie, version, ft):
    return cookie + struct.pack("<QQ", version, ft)


def write(sub, name, blob):
    d = os.path.join(HERE, "seeds", sub)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(blob)


write("elf_sections", "exec_pyruntime.elf", elf())
write("elf_sections", "dyn_pyruntime.elf", elf(etype=3, vaddr=0, sec_addr=0x1000))
write("elf_sections", "two_sections.elf", elf(names=(b".PyRuntime", b".AsyncioDebug")))
write("elf_sections", "extended_numbering.elf", elf(xnum=True))
write("elf_sections", "truncated.elf", elf()[:100])
write("pyversion", "3.13.15", header(b"xdebugpy", 0x030D0FF0, 0))
write("pyversion", "3.14.8", header(b"xdebugpy", 0x030E08F0, 0))
write("pyversion", "3.15.0", header(b"xdebugpy", 0x030F00F0, 0))
write("pyversion", "3.15.0b1", header(b"xdebugpy", 0x030F00B1, 0))
write("pyversion", "3.14.8t", header(b"xdebugpy", 0x030E08F0, 1))
write("pyversion", "3.16.0", header(b"xdebugpy", 0x031000F0, 0))
write("pyversion", "bad_cookie", header(b"xdebugpz", 0x030E08F0, 0))
write("pyversion", "short", b"xdebugpy\xf0\x08")


def unwind_seeds():
    """Recorded images of real processes (tests/fixtures/unwind) as fuzz inputs."""
    fixtures = os.path.join(HERE, "..", "fixtures", "unwind")
    for case in ("3.13-callback", "3.14-callback", "3.15-generators"):
        meta = {}
        with open(os.path.join(fixtures, case, "meta.txt")) as f:
            for line in f:
                key, value = line.split()
                meta[key] = int(value, 0)
        with open(os.path.join(fixtures, case, "memory.bin"), "rb") as f:
            memory = f.read()
        minor = (meta["version"] >> 16) & 0xFF
        head = struct.pack("<BBQQ", minor - 13, meta["flags"], meta["runtime"],
                           meta["section_size"])
        write("unwind", case, head + memory)


unwind_seeds()
