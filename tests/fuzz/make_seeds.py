#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the generated seed inputs of the fuzz targets (seeds/elf_sections,
seeds/pyversion, seeds/unwind, seeds/pprof_multi, seeds/kube_stream, seeds/termtext, seeds/jsonw,
seeds/otel_process, seeds/otel_thread, seeds/otel_sdk and the
seeds/proc_files/cgroup_corpus_* copies of tests/fixtures/cgroup). Deterministic; rerun
after changing it and commit the output. The proc_maps seeds are text files
kept by hand; the two libraries of seeds/otel_thread are built by cc only when
they are missing (delete them to rebuild)."""
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


def elf_symbols():
    """A minimal ELF64 LE shared object with .dynsym/.dynstr naming _PyRuntime,
    Py_Version and an undefined PyCode_Type (the 3.11/3.12 discovery path)."""
    dynstr = b"\0_PyRuntime\0Py_Version\0PyCode_Type\0"
    syms = [struct.pack("<IBBHQQ", 0, 0, 0, 0, 0, 0),
            struct.pack("<IBBHQQ", 1, 0x11, 0, 20, 0xA5B740, 0x28B20),
            struct.pack("<IBBHQQ", 12, 0x11, 0, 16, 0x8CC3E8, 8),
            struct.pack("<IBBHQQ", 23, 0x11, 0, 0, 0, 0)]
    shstr = b"\0.dynsym\0.dynstr\0.shstrtab\0"
    ident = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9)
    str_off = 64
    sym_off = (str_off + len(dynstr) + 7) & ~7
    shs_off = sym_off + 24 * len(syms)
    sh_off = (shs_off + len(shstr) + 7) & ~7
    eh = ident + struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, sh_off, 0, 64, 56, 0, 64, 4, 3)
    body = eh + dynstr
    body += bytes(sym_off - len(body)) + b"".join(syms) + shstr
    body += bytes(sh_off - len(body))
    secs = [bytes(64),
            struct.pack("<IIQQQQIIQQ", 1, 11, 2, 0, sym_off, 24 * len(syms), 2, 1, 8, 24),
            struct.pack("<IIQQQQIIQQ", 9, 3, 2, 0, str_off, len(dynstr), 0, 0, 1, 0),
            struct.pack("<IIQQQQIIQQ", 17, 3, 0, 0, shs_off, len(shstr), 0, 0, 1, 0)]
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
write("elf_sections", "dynsym_pyruntime.elf", elf_symbols())
write("pyversion", "3.13.15", header(b"xdebugpy", 0x030D0FF0, 0))
write("pyversion", "3.14.8", header(b"xdebugpy", 0x030E08F0, 0))
write("pyversion", "3.15.0", header(b"xdebugpy", 0x030F00F0, 0))
write("pyversion", "3.15.0b1", header(b"xdebugpy", 0x030F00B1, 0))
write("pyversion", "3.14.8t", header(b"xdebugpy", 0x030E08F0, 1))
write("pyversion", "3.16.0", header(b"xdebugpy", 0x031000F0, 0))
write("pyversion", "bad_cookie", header(b"xdebugpz", 0x030E08F0, 0))
write("pyversion", "short", b"xdebugpy\xf0\x08")
# PY_VERSION in read-only data (3.9, 3.10): on its own, and as a merged tail
write("pyversion", "py_version_string", b"%.80s (%.80s) %.80s\x003.9.2\x00Python %s\n")
write("pyversion", "py_version_tail", b"\x00/opt/python/3.10.13\x00\x003.10.13rc1\x00")


# Table positions of the free-threaded 3.14/3.15 entries (debug_offsets_3_1X.c):
# interpreter_state.tlbc_generation, interpreter_frame.tlbc_index, code_object.co_tlbc,
# and of what their synthetic values derive from: code_object_generation,
# interpreter_frame.size, code_object.size.
FT_POS = {14: ((168, 304, 392), (160, 248, 312)), 15: ((168, 368, 456), (160, 312, 376))}


def make_free_threaded(memory, runtime, minor):
    """A recorded 3.14/3.15 image turned free-threaded in its table: the flag at
    +16 and synthetic per-thread bytecode offsets (as tests/support/pyimage.c)."""
    memory = bytearray(memory)
    at = 0
    while at + 16 <= len(memory):
        addr, length = struct.unpack_from("<QQ", memory, at)
        data = at + 16
        if addr <= runtime and runtime + 512 <= addr + length:
            def word(pos):
                return struct.unpack_from("<Q", memory, data + runtime - addr + pos)[0]

            def put(pos, value):
                struct.pack_into("<Q", memory, data + runtime - addr + pos, value)
            put(16, 1)
            (gen_pos, idx_pos, tlbc_pos), (code_gen, fr_size, co_size) = FT_POS[minor]
            put(gen_pos, word(code_gen) + 8)
            put(idx_pos, word(fr_size) - 8)
            put(tlbc_pos, word(co_size) - 16)
            return bytes(memory)
        at = data + length
    raise SystemExit("make_seeds: no record holds the runtime's table")


def unwind_seeds():
    """Recorded images of real processes (tests/fixtures/unwind) as fuzz inputs;
    bit 3 of the flags byte makes the fuzz target read them as free-threaded."""
    fixtures = os.path.join(HERE, "..", "fixtures", "unwind")
    for case, ft in (("3.13-callback", False), ("3.14-callback", False),
                     ("3.15-generators", False), ("3.13t-threads", True),
                     ("3.14-generators", True)):
        meta = {}
        with open(os.path.join(fixtures, case, "meta.txt")) as f:
            for line in f:
                key, value = line.split()
                meta[key] = int(value, 0)
        with open(os.path.join(fixtures, case, "memory.bin"), "rb") as f:
            memory = f.read()
        minor = (meta["version"] >> 16) & 0xFF
        name = case
        if ft and minor > 13:
            memory = make_free_threaded(memory, meta["runtime"], minor)
            name = case.replace("-", "t-", 1) + "-synthetic"
        head = struct.pack("<BBQQ", minor - 13, meta["flags"] | (8 if ft else 0),
                           meta["runtime"], meta["section_size"])
        write("unwind", name, head + memory)


unwind_seeds()


# -- pprof_multi: merged profiles (the input format is in fuzz_pprof_multi.c)
# Palette indices of fuzz_pprof_multi.c's label names and values.
N_PID, N_JOB, N_EMPTY, N_THREAD_NAME, N_TASK_NAME, N_THREAD_ID, N_PID2, N_LONG = range(8)
N_UTF8, N_SERVICE, N_SAMPLES, N_MAIN, N_DASH, N_INSTANCE, N_EURO, N_NULL = range(8, 16)
V_EMPTY, V_1, V_2, V_LONG, V_UTF8, V_MAIN, V_CPU, V_NS = range(8)
V_THREAD, V_NULL, V_X, V_TASK, V_FILE, V_THREAD_ID, V_QUOTE, V_1B = range(8, 16)
CPU, WALL, GIL, TIME = range(4)


def sample(thread, task, count, frames):
    return bytes([thread, task, count - 1, len(frames)] + list(frames))


def part(labels=(), samples=(), null=False, reuse=False, tight=False):
    head = len(labels) | null << 3 | reuse << 4 | tight << 5
    body = bytes([head]) + bytes(n << 4 | v for n, v in labels)
    if not reuse:
        body += bytes([len(samples)]) + b"".join(samples)
    return body


def multi(parts, vtype=CPU, comment=False, period_ms=10, cap32=0):
    return bytes([vtype | comment << 2 | period_ms << 4, cap32, len(parts) - 1]) + b"".join(parts)


BUSY = [sample(0, 0, 3, [6, 1, 0]), sample(1, 0, 1, [3, 1, 0]), sample(2, 1, 2, [5, 6]),
        sample(3, 2, 1, [12, 13])]
TARGET = [(N_PID, V_1), (N_SERVICE, V_UTF8)]


def pprof_multi_seeds():
    seeds = {
        # the README's quick start: one idle target in cpu mode
        "quick_start_idle": multi([part(TARGET)]),
        "no_input": b"",
        # empty parts first, between and last, among parts with 0, 1, 2 labels
        "empty_among_labelled": multi([
            part([(N_PID, V_2), (N_JOB, V_X)]),
            part(TARGET, BUSY),
            part([(N_INSTANCE, V_FILE), (N_PID, V_1B), (N_UTF8, V_LONG)]),
            part([(N_PID, V_2)], [sample(0, 0, 1, [2])]),
            part([], [sample(1, 1, 4, [4, 0])]),
            part([(N_JOB, V_X)]),
        ], comment=True),
        # every sample dropped at a cap: tables, no samples
        "all_dropped": multi([
            part(TARGET, [sample(0, 0, 1, [0, 1, 3, 4, 5, 6, 7]),
                          sample(1, 2, 2, [15, 14, 13, 12, 11])], tight=True),
            part([(N_PID, V_2)], BUSY[:2]),
        ], vtype=WALL),
        # repeated, empty, reserved and NULL names; empty and NULL values
        "label_rules": multi([
            part([(N_PID, V_1), (N_PID2, V_2), (N_JOB, V_EMPTY), (N_JOB, V_X),
                  (N_EMPTY, V_X), (N_THREAD_NAME, V_X), (N_NULL, V_X)], BUSY),
            part([(N_TASK_NAME, V_TASK), (N_THREAD_ID, V_1), (N_SAMPLES, V_NULL),
                  (N_MAIN, V_MAIN), (N_DASH, V_CPU), (N_JOB, V_1), (N_JOB, V_2)], BUSY[2:]),
        ], vtype=GIL),
        # long and UTF-8 names and values, strings the windows use
        "long_utf8": multi([
            part([(N_LONG, V_LONG), (N_EURO, V_QUOTE), (N_UTF8, V_UTF8), (N_INSTANCE, V_THREAD),
                  (N_SERVICE, V_THREAD_ID)], BUSY),
        ], vtype=TIME, comment=True, period_ms=0),
        # one window in two parts with other labels; NULL labels
        "reused_window": multi([
            part([(N_PID, V_1)], BUSY),
            part([(N_PID, V_2), (N_JOB, V_X)], reuse=True),
            part([(N_PID, V_1B)], null=True),
            part([(N_JOB, V_NS)], null=True, reuse=True),
        ]),
        # a cap the profile does not fit in
        "small_cap": multi([part(TARGET, BUSY), part(TARGET, BUSY)], cap32=8),
        # eight parts, every other one empty
        "eight_parts": multi([part([(i % 16, (i * 5) % 16)] * (i % 4),
                                   BUSY[: i % 5] if i % 2 else ())
                              for i in range(8)], vtype=WALL, period_ms=15),
    }
    for name, blob in seeds.items():
        write("pprof_multi", name, blob)


pprof_multi_seeds()


def kube_stream_seeds():
    """fuzz_kube_stream: byte 0 is the mode (bit 0: 0 watch, 1 list; bit 1: small chunks), the
    rest a watch stream or a PodList built from the pods of tests/fixtures/kube/."""
    import json
    fixtures = os.path.join(HERE, "..", "fixtures", "kube")
    pods = [json.load(open(os.path.join(fixtures, f), encoding="utf-8"))
            for f in sorted(os.listdir(fixtures)) if f.endswith(".json")]

    def compact(o):
        return json.dumps(o, separators=(",", ":"), sort_keys=True).encode()

    def event(kind, obj):
        return compact({"type": kind, "object": obj}) + b"\n"

    def status(code, reason):
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": "too old resource version", "reason": reason, "code": code}

    added = b"".join(event("ADDED", p) for p in pods)
    modified = json.loads(json.dumps(pods[0]))
    modified["metadata"]["labels"]["app.kubernetes.io/version"] = "2.4.2"
    modified["status"]["containerStatuses"][0]["containerID"] = "containerd://" + "ab" * 32
    bookmark = {"kind": "Pod", "apiVersion": "v1", "metadata": {"resourceVersion": "190000"}}
    write("kube_stream", "watch_added", b"\x00" + added)
    write("kube_stream", "watch_lifecycle", b"\x02" + added + event("MODIFIED", modified)
          + event("BOOKMARK", bookmark) + event("DELETED", pods[1])
          + event("ERROR", status(500, "InternalError")) + b"\r\n\n"
          + event("ERROR", status(410, "Expired")) + event("ADDED", pods[2]))
    write("kube_stream", "watch_cut", b"\x00" + added[: len(added) // 2])
    podlist = {"kind": "PodList", "apiVersion": "v1",
               "metadata": {"resourceVersion": "184467", "continue": "eyJ2IjoibWV0YSJ9"},
               "items": pods}
    write("kube_stream", "list", b"\x01" + compact(podlist))
    write("kube_stream", "list_small_chunks", b"\x03" + compact(podlist) + b"\n")
    write("kube_stream", "list_empty", b"\x01" + b'{"kind":"PodList","metadata":{},"items":null}')


kube_stream_seeds()


def cgroup_corpus_seeds():
    """fuzz_proc_files: byte 0 selects the parser (2: /proc/PID/cgroup), the rest is a whole
    cgroup file of tests/fixtures/cgroup/ (test_cgroup_corpus checks that the copies are current).
    Copies of fixtures that are gone are removed."""
    fixtures = os.path.join(HERE, "..", "fixtures", "cgroup")
    seeds = os.path.join(HERE, "seeds", "proc_files")
    names = sorted(f for f in os.listdir(fixtures) if f.endswith(".txt"))
    for f in os.listdir(seeds):
        if f.startswith("cgroup_corpus_") and f[len("cgroup_corpus_"):] not in names:
            os.remove(os.path.join(seeds, f))
    for name in names:
        with open(os.path.join(fixtures, name), "rb") as f:
            write("proc_files", "cgroup_corpus_" + name, b"\x02" + f.read())


cgroup_corpus_seeds()


def termtext_seeds():
    """fuzz_termtext: byte 0 is the output size - 1, byte 1 the column budget (255: none),
    the rest the text: names a target may hold."""
    whole, roomy = b"\xff\xff", b"\xff\x1e"
    write("termtext", "ascii", whole + b"burn_half (/app/shares.py:12)")
    write("termtext", "title_and_red", whole + b"\x1b]0;pwned\x07f\x1b[31mred\x1b[0m\r\n\t\x7f")
    write("termtext", "c1_utf8_and_raw", whole + b"a\xc2\x9b31mb\x9b31m\xc2\x85\xc2\xa0")
    write("termtext", "utf8", roomy + "zażółć 日本語 😀 ½".encode())
    write("termtext", "invalid_utf8", whole + b"\xc0\xaf\xed\xa0\x80\xf4\x90\x80\x80\xe6\x97")
    write("termtext", "cut_inside_escape", b"\x09\xff" + b"ab\x1b\x1bcd")
    write("termtext", "cut_inside_wide", b"\xff\x05" + "日本語".encode())
    write("termtext", "nul", whole + b"a\x00b")


termtext_seeds()


def oldlines_seeds():
    """fuzz_oldlines: byte 0 the format (0: 3.9 co_lnotab, 1: 3.10 co_linetable), then
    co_firstlineno and a byte offset (little-endian), then the table: the largest tables of
    tests/fixtures/linetable/3.9.txt and 3.10.txt, and a few small ones."""
    for fmt, version in ((0, "3.9"), (1, "3.10")):
        with open(os.path.join(HERE, "..", "fixtures", "linetable", version + ".txt")) as f:
            blocks, first, size = [], 0, 0
            for line in f:
                parts = line.split()
                if parts[:1] == ["code"]:
                    first, size = int(parts[3]), int(parts[4])
                elif parts[:1] == ["table"]:
                    blocks.append((first, size, bytes.fromhex(parts[1] if len(parts) > 1 else "")))
        picked = sorted(blocks, key=lambda b: -len(b[2]))[:3] + blocks[1:4]
        for i, (first, size, table) in enumerate(picked):
            addr = size // 2 & ~1
            write("oldlines", "%s_%d" % (version, i),
                  bytes([fmt]) + struct.pack("<iI", first, addr) + table)


oldlines_seeds()


def perfsample_seeds():
    """fuzz_perfsample: PERF_RECORD_SAMPLE records of the layout perfsample.c asks for
    (tid, time, the task clock, 17 x86-64 user registers, a user stack copy), and a lost
    record."""
    def sample(stack, dyn, abi=2, nregs=17, extra=b""):
        body = struct.pack("<IIQQQ", 4242, 4243, 123456789, 5550000, abi)
        if abi:
            body += b"".join(struct.pack("<Q", 0x7ffd0000 + 8 * i) for i in range(nregs))
        body += struct.pack("<Q", len(stack))
        if stack:
            body += stack + struct.pack("<Q", dyn)
        body += extra
        return struct.pack("<IHH", 9, 2, 8 + len(body)) + body
    stack = bytes(range(256)) * 4
    write("perfsample", "sample_1k", sample(stack, 1024))
    write("perfsample", "sample_partial", sample(stack, 400))
    write("perfsample", "sample_no_regs", sample(b"", 0, abi=0))
    write("perfsample", "sample_no_stack", sample(b"", 0))
    write("perfsample", "lost", struct.pack("<IHHQQ", 2, 0, 24, 7, 3))


perfsample_seeds()


def native_seeds():
    """fuzz_native: 17 registers (the IP is moved into the fuzzer's own code) and a stack
    copy: zeros, a chain of plausible frame pointers, random-looking words."""
    regs = b"".join(struct.pack("<Q", 0x7ffd00001000 + 8 * i) for i in range(17))
    write("native", "zeros", regs + bytes(256))
    chain = b"".join(struct.pack("<QQ", 0x7ffd00001000 + 16 * (i + 1), 0x401000 + i)
                     for i in range(32))
    write("native", "frame_chain", regs + chain)
    write("native", "words", regs + bytes((i * 37 + 11) % 256 for i in range(1024)))


native_seeds()


def switches_seeds():
    """fuzz_switches: a ring of 256 bytes written backward (three heads, then the ring) with
    switch, fork and exit records (the waker's with their times), one that wraps, a
    malformed one, a small ring with a record cut by its end; a schedstat line and a stat
    line."""
    def ring(records, size=256):
        buf = bytearray(size)
        head = 0
        for rec in records:
            head -= len(rec)
            for i, b in enumerate(rec):
                buf[(head + i) % size] = b
        return head % (1 << 64), bytes(buf)

    def rec(type_, misc, body=b""):
        return struct.pack("<IHH", type_, misc, 8 + len(body)) + body

    switch_in, switch_out = rec(14, 0), rec(14, 0x2000)
    preempt = rec(14, 0x6000)
    fork = rec(7, 0, struct.pack("<IIIIQ", 5, 1, 6, 5, 99))
    exit_ = rec(4, 0, struct.pack("<IIIIQ", 5, 1, 5, 5, 100))
    timed = [rec(14, 0, struct.pack("<Q", 1000 + i)) for i in range(3)]
    cases = {
        "asleep": [switch_in, switch_out] * 4,
        "preempted": [switch_in, preempt],
        "forked": [switch_in, fork, switch_out],
        "exited": [switch_in, exit_],
        "waker_timed": timed,
        "wraps": [switch_in, switch_out] * 40,
    }
    for name, records in cases.items():
        head, buf = ring(records)
        write("switches", name, struct.pack("<QQQ", head, 0, 16) + buf)
    head, buf = ring([switch_in, rec(14, 0, b"\0" * 4)[:8]])
    write("switches", "malformed", struct.pack("<QQQ", head + 4, 0, 3) + buf)
    # a ring of 64 bytes whose exit record is cut in two by its end (40..63 and 0..7),
    # looked at since the head before it (-56): the walk goes across the end
    head, buf = ring([switch_out] * 7 + [exit_, fork], size=64)
    write("switches", "straddles", struct.pack("<QQQ", head, (1 << 64) - 56, 64) + buf)
    write("switches", "schedstat", b"123456789 42 7\n")
    write("switches", "stat_line", b"4242 (python3.14) R 1 4242 4242 0 -1 4194560 1057 0 0 0 "
          b"123 45 0 0 20 0 3 0 1234567 0 0\n")


switches_seeds()


def jsonw_seeds():
    """Operations for the JSON writer (fuzz_jsonw.c): byte 0 flags and cap, then ops,
    each its byte, its key inside an object, its payload."""
    def m(k, value):  # a member of an object: the key goes after the op byte
        return value[:1] + bytes([len(k)]) + k + value[1:]

    def string(s, pictures=False):
        return bytes([3 | (0x80 if pictures else 0)]) + bytes([len(s)]) + s

    def num(kind, v, digits=None):
        body = struct.pack("<q" if kind == 4 else "<Q" if kind == 5 else "<d", v)
        return bytes([kind]) + body + (bytes([digits]) if digits is not None else b"")

    obj, arr, end, true, null = b"\x00", b"\x01", b"\x02", b"\x88", b"\x09"
    flat = (obj + m(b"name", string(b"main")) + m(b"line", num(4, -12))
            + m(b"n", num(5, 2**64 - 1)) + m(b"ok", true) + m(b"none", null) + end)
    write("jsonw", "flat", b"\x00" + flat)
    nested = (obj + m(b"targets", arr) + obj + m(b"pid", num(4, 42)) + m(b"labels", obj) + end
              + m(b"rate", num(6, 100.0, 17)) + end + arr + end + end
              + m(b"empty", obj) + end + end)
    write("jsonw", "pretty_nested", b"\x01" + nested)
    hostile = (arr + string(b"</script><!-- \"q\" \\ \x01\x1b[31m\x7f")
               + string(b"\xc2\x85\xc2\x9b\xc2\xa0 \xe2\x80\xa8 \xff\xc0\xaf\xed\xa0\x80 \xe2\x80")
               + string(b"a\x00b") + end)
    write("jsonw", "hostile_strings", b"\x00" + hostile)
    write("jsonw", "hostile_terminal_not_html", b"\x06" + hostile)
    write("jsonw", "pictures", b"\x00" + arr
          + string(b"\tx = '<y>'\x01\x7f\r\xff\xc3\xa9", pictures=True) + end)
    write("jsonw", "numbers", b"\x00" + arr + num(4, -2**63) + num(5, 0) + num(6, 0.1, 17)
          + num(6, float("nan"), 6) + num(7, float("-inf"), 3) + num(7, 1700000000123.456, 3)
          + num(6, 1e300, 19) + num(7, 1e300, 19) + end)
    write("jsonw", "deep", b"\x00" + arr * 70 + num(4, 1))
    write("jsonw", "keys", b"\x01" + obj + m(b"<k\"\n>", null) + m(b"a\x00b", null)
          + m(b"\xff", null) + end)
    write("jsonw", "small_cap", b"\x10" + hostile * 3)
    write("jsonw", "scalar_then_more", b"\x00" + num(4, 7) + arr + end)
    write("jsonw", "string_cut_short", b"\x00" + arr + b"\x03")  # no length: an empty string


jsonw_seeds()


def proc_events_seeds():
    """fuzz_proc_events: proc connector datagrams as the kernel sends them (netlink header,
    cn_msg of CN_IDX_PROC, one proc_event each), and broken ones."""
    def event(what, words):
        ev = struct.pack("<IIQ", what, 0, 123456789) + struct.pack("<%dI" % len(words), *words)
        cn = struct.pack("<IIIIHH", 1, 1, 0, 0, len(ev), 0) + ev
        nl = struct.pack("<IHHII", 16 + len(cn), 3, 0, 0, 0) + cn
        return nl + bytes((-len(nl)) % 4)
    fork, exe, thread = 0x1, 0x2, 0x1
    write("proc_events", "ack", event(0, [0]))
    write("proc_events", "ack_eperm", event(0, [1]))
    write("proc_events", "fork_exec", event(fork, [10, 10, 20, 20]) + event(exe, [20, 20]))
    write("proc_events", "thread", event(thread, [10, 10, 21, 20]))
    write("proc_events", "exit", event(0x80000000, [20, 20, 0, 17, 10, 10]))
    write("proc_events", "comm", event(0x200, [20, 20]) + b"python3".ljust(16, b"\0"))
    whole = event(exe, [30, 30])
    write("proc_events", "cut", whole[:-3])
    write("proc_events", "bad_len", struct.pack("<I", 4096) + whole[4:])
    write("proc_events", "other_connector", whole[:16] + struct.pack("<I", 2) + whole[20:])
    write("proc_events", "noop_then_exec", struct.pack("<IHHII", 16, 1, 0, 0, 0) + whole)


proc_events_seeds()


def pb_varint(v):
    out = b""
    while True:
        c = v & 0x7F
        v >>= 7
        if v:
            out += bytes([c | 0x80])
        else:
            return out + bytes([c])


def pb_len(field, blob):
    return pb_varint(field << 3 | 2) + pb_varint(len(blob)) + blob


def pb_kv(key, value):
    """KeyValue {key, value: AnyValue (its bytes)}."""
    return pb_len(1, key.encode()) + pb_len(2, value)


def otel_header(payload, version=2, ns=1733600000123456789, at=0x7F3A00002000, size=None):
    return (b"OTEL_CTX" + struct.pack("<IIQQ", version, len(payload) if size is None else size,
                                      ns, at) + payload)


def otel_process_seeds():
    """fuzz_otel_process: a 32-byte OTEL_CTX header and a ProcessContext (OTEP 4719) after it:
    Resource attributes of each kind, the thread context's threadlocal.* keys, and refused
    ones (deep nesting, a torn header, a cut payload)."""
    s = lambda t: pb_len(1, t.encode())  # AnyValue string_value
    res = (pb_len(1, pb_kv("service.name", s("checkout")))
           + pb_len(1, pb_kv("service.instance.id", s("627cc493-f310-47de-96bd-71410b7dec09")))
           + pb_len(1, pb_kv("deployment.environment.name", s("prod")))
           + pb_len(1, pb_kv("telemetry.sdk.language", s("python")))
           + pb_len(1, pb_kv("host.arm", pb_varint(2 << 3) + b"\x00"))         # bool
           + pb_len(1, pb_kv("process.pid", pb_varint(3 << 3) + pb_varint(4242)))  # int
           + pb_len(1, pb_kv("ratio", pb_varint(4 << 3 | 1) + struct.pack("<d", 0.25)))
           + pb_len(1, pb_kv("tags", pb_len(5, pb_len(1, s("a")) + pb_len(1, s("b")))))
           + pb_len(1, pb_kv("kv", pb_len(6, pb_len(1, pb_kv("k", s("v"))))))
           + pb_len(1, pb_kv("raw", pb_len(7, b"\x00\x01"))))
    keys = pb_len(5, pb_len(1, s("http.route")) + pb_len(1, s("http.method")))
    attrs = (pb_len(2, pb_kv("threadlocal.schema_version", s("tlsdesc_v1_dev")))
             + pb_len(2, pb_kv("threadlocal.attribute_key_map", keys)))
    ctx = pb_len(1, res) + attrs
    write("otel_process", "context", otel_header(ctx))
    write("otel_process", "context_v1", otel_header(ctx, version=1))
    write("otel_process", "resource_only", otel_header(pb_len(1, res)))
    write("otel_process", "torn", otel_header(ctx, ns=0))
    write("otel_process", "cut", otel_header(ctx[:-5], size=len(ctx)))
    for name, levels in (("deep", 40), ("nested", 20)):  # over the nesting cap, and under it
        deep = s("leaf")
        for _ in range(levels):
            deep = pb_len(5, pb_len(1, deep))
        write("otel_process", name, otel_header(pb_len(1, pb_len(1, pb_kv("deep", deep)))))


otel_process_seeds()


def otel_thread_record(seed, valid=1, attrs=b"", size=None):
    ids = bytes((seed + i) & 0xFF for i in range(24)) if seed else bytes(24)
    return ids + struct.pack("<BBH", valid, 1, len(attrs) if size is None else size) + attrs


OTEL_THREAD_C = b"""\
__thread void *otel_thread_ctx_v1;
void **otel_thread_ctx_addr(void) { return &otel_thread_ctx_v1; }
"""


def otel_thread_elf(name, dialect):
    """A small shared object defining otel_thread_ctx_v1 and reaching it with the TLS
    dialect @dialect (gnu2: TLSDESC; gnu: general dynamic), built by cc when the seed is not
    there yet: the committed one is kept (another compiler would write other bytes)."""
    import subprocess
    import tempfile
    path = os.path.join(HERE, "seeds", "otel_thread", name)
    if os.path.exists(path):
        return
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "t.c")
        with open(src, "wb") as f:
            f.write(OTEL_THREAD_C)
        subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-mtls-dialect=" + dialect, "-nostdlib",
                        "-s", "-fno-ident", "-fno-asynchronous-unwind-tables",
                        "-Wl,--build-id=none", "-Wl,-z,norelro", "-Wl,-z,noseparate-code",
                        "-Wl,-z,max-page-size=16", "-Wl,-z,common-page-size=16",
                        "-o", os.path.join(tmp, "t.so"), src], check=True)
        with open(os.path.join(tmp, "t.so"), "rb") as f:
            write("otel_thread", name, f.read())


def otel_thread_seeds():
    """fuzz_otel_thread: thread context records (OTEP 4947) with attributes, and libraries
    that define the thread context's variable."""
    attrs = b"\x00\x09/checkout" + b"\x01\x04POST" + b"\x07\x02xy" + b"\x00\x05/cart"
    write("otel_thread", "record_attrs", otel_thread_record(0x40, attrs=attrs))
    write("otel_thread", "record_cut_attrs", otel_thread_record(0x40, attrs=attrs[:-2],
                                                                size=len(attrs)))
    write("otel_thread", "record_no_ids", otel_thread_record(0))
    write("otel_thread", "record_writing", otel_thread_record(0x40, valid=0))
    otel_thread_elf("tlsdesc.so", "gnu2")
    otel_thread_elf("general_dynamic.so", "gnu")


otel_thread_seeds()


def otel_sdk_input(minor, flags=0, threads=0x03, contexts=0xE4, patches=b""):
    """An input of fuzz_otel_sdk: the image's version and flags, the threads (0x03: four),
    their contexts (2 bits each, 0xE4: in a span, without one, without the SDK, NULL), then
    patches."""
    return bytes((minor - 9, flags, threads, contexts)) + patches


def otel_sdk_raw(offset, blob):
    return struct.pack("<BH", len(blob), offset) + blob


def otel_sdk_pointer(offset, obj, delta=0):
    return struct.pack("<BHBb", 0x80, offset, obj, delta)


def otel_sdk_seeds():
    """fuzz_otel_sdk: every version's image as built, its shapes (array node root 1, collision
    node 2, attributes in a dict 4, split dict 8, a hash folding to -1 16), and a few patched."""
    for minor in range(9, 16):
        write("otel_sdk", "3.%d" % minor, otel_sdk_input(minor))
    write("otel_sdk", "3.11-array-collision", otel_sdk_input(11, flags=3))
    write("otel_sdk", "3.9-split-dict", otel_sdk_input(9, flags=8))
    write("otel_sdk", "3.13-attr-split-dict", otel_sdk_input(13, flags=12))
    # published thread 0, thread 1 not sampled and sharing thread 0's state, the clock moving
    write("otel_sdk", "3.12-fold-published", otel_sdk_input(12, flags=16, threads=0x3F))
    write("otel_sdk", "3.15-no-sdk", otel_sdk_input(15, threads=0x21, contexts=0xAA))
    write("otel_sdk", "3.14-patched-bytes",
          otel_sdk_input(14, patches=otel_sdk_raw(0x100, b"\xff" * 8) +
                         otel_sdk_raw(0x1234, b"\x00" * 16)))
    # words that point at objects of the chain (8: the span, 9: its SpanContext, 0: a context)
    write("otel_sdk", "3.10-pointer-patches",
          otel_sdk_input(10, patches=otel_sdk_pointer(0x200, 8) + otel_sdk_pointer(0x2f8, 9, -8) +
                         otel_sdk_pointer(0x1000, 0, 8)))


otel_sdk_seeds()
