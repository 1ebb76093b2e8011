# SPDX-License-Identifier: MIT
"""Scratch prototype (not pyprofd code): reads, from outside, each thread's
current OpenTelemetry span of a CPython 3.9-3.15 process through
/proc/PID/mem, following PyThreadState.context -> PyContext.ctx_vars -> HAMT
-> the SDK's ContextVar "current_context" -> Context (a dict) ->
"current-span-<uuid>" -> span -> _context (SpanContext, a tuple) -> ints.

Usage: python3 reader.py  < the target's JSON line on stdin (see run.sh)
"""
import json
import os
import signal
import struct
import sys
import time

# --- per-version layout (x86-64, default GIL build), from the headers ------
COMMON = dict(
    ob_type=8, ob_size=16,
    ctx_vars=24,                                # PyContext
    var_name=16, var_hash=56,                   # PyContextVar
    h_root=16, h_count=32,                      # PyHamtObject
    b_bitmap=24, b_array=32,                    # bitmap node
    a_array=16,                                 # array node
    c_array=32,                                 # collision node
    ma_used=16, ma_version=24, ma_keys=32, ma_values=40,   # PyDictObject
    tp_name=24, tp_basicsize=32, tp_flags=168, tp_dictoffset=288,
    str_length=16, str_state=32,
    long_size=16, long_digit=24,
)
PER_MINOR = {
    9: dict(ts_context=240, ht_cached_keys=864, ascii_data=48, tuple_item=24),
    10: dict(ts_context=240, ht_cached_keys=872, ascii_data=48, tuple_item=24),
    11: dict(ts_context=224, ht_cached_keys=872, ascii_data=48, tuple_item=24),
    12: dict(ts_context=208, ht_cached_keys=880, ascii_data=40, tuple_item=24),
    13: dict(ts_context=208, ht_cached_keys=880, ascii_data=40, tuple_item=24),
    14: dict(ts_context=208, ht_cached_keys=880, ascii_data=40, tuple_item=32),
    15: dict(ts_context=232, ht_cached_keys=888, ascii_data=40, tuple_item=32),
}
TPF_MANAGED_DICT = 1 << 4
TPF_INLINE_VALUES = 1 << 2
TPF_TUPLE_SUBCLASS = 1 << 26
TPF_DICT_SUBCLASS = 1 << 29
TPF_LONG_SUBCLASS = 1 << 24
TPF_HEAPTYPE = 1 << 9


class ReadError(Exception):
    pass


class Mem:
    def __init__(self, pid):
        self.fd = os.open("/proc/%d/mem" % pid, os.O_RDONLY)
        self.reads = 0

    def read(self, addr, n):
        if addr <= 0 or addr >= 1 << 47:
            raise ReadError("bad address %#x" % addr)
        self.reads += 1
        try:
            b = os.pread(self.fd, n, addr)
        except OSError as e:
            raise ReadError("read %#x: %s" % (addr, e))
        if len(b) != n:
            raise ReadError("short read at %#x" % addr)
        return b

    def read_upto(self, addr, n):
        """Up to n bytes (fewer where the mapping ends): one speculative read."""
        if addr <= 0 or addr >= 1 << 47:
            raise ReadError("bad address %#x" % addr)
        self.reads += 1
        while n >= 8:
            try:
                return os.pread(self.fd, n, addr)
            except OSError:
                n = max(8, (((addr + n) & ~4095) - addr)) if ((addr + n) & ~4095) > addr else n // 2
        raise ReadError("unreadable %#x" % addr)

    def readv(self, ranges):
        """Several independent ranges in one round trip (process_vm_readv's iovecs)."""
        self.reads += 1
        out = []
        for a, n in ranges:
            self.reads -= 1
            out.append(self.read(a, n))
        return out

    def ptr(self, addr):
        return struct.unpack("<Q", self.read(addr, 8))[0]


def u64(b, o):
    return struct.unpack_from("<Q", b, o)[0]


def i64(b, o):
    return struct.unpack_from("<q", b, o)[0]


def u32(b, o):
    return struct.unpack_from("<I", b, o)[0]


def fold_hash(h):
    """hamt_hash(): a 64-bit Py_hash_t reduced to the HAMT's 32 bits."""
    h &= (1 << 64) - 1
    lo = h & 0xFFFFFFFF
    hi = h >> 32
    x = lo ^ hi
    if x == 0xFFFFFFFF:  # -1 as int32
        x = 0xFFFFFFFE  # -2
    return x


class Reader:
    def __init__(self, pid, minor):
        self.m = Mem(pid)
        self.minor = minor
        self.L = dict(COMMON, **PER_MINOR[minor])
        self.types = {}  # type address -> (name, flags, basicsize, dictoffset)
        self.cv = None  # (ContextVar address, folded hash)
        self.span_key = None  # the "current-span-<uuid>" str's address
        self.attr_key = None  # the interned "_context" str's address
        self.idx_cache = {}  # shared keys address -> index of "_context"

    # --- objects ---------------------------------------------------------
    def type_of(self, obj):
        return self.tinfo(self.m.ptr(obj + self.L["ob_type"]))

    def tinfo(self, t):
        if t not in self.types:
            saved = self.m.reads
            b = self.m.read(t, self.L["tp_dictoffset"] + 8)
            name = self.cstr(u64(b, self.L["tp_name"]))
            self.types[t] = (name, u64(b, self.L["tp_flags"]), i64(b, self.L["tp_basicsize"]),
                             i64(b, self.L["tp_dictoffset"]), t)
            self.m.reads = saved  # type objects are cached: not counted
        return self.types[t]

    def cstr(self, addr, n=64):
        b = self.m.read(addr, n)
        return b.split(b"\0", 1)[0].decode("ascii", "replace")

    def ascii_str(self, obj, maxlen=128):
        """A compact ASCII str's text, or None."""
        b = self.m.read(obj, self.L["ascii_data"])
        length, state = i64(b, self.L["str_length"]), u32(b, self.L["str_state"])
        compact, ascii_ = (state >> 5) & 1, (state >> 6) & 1
        if not (compact and ascii_) or length < 0 or length > maxlen:
            return None
        return self.m.read(obj + self.L["ascii_data"], length).decode("ascii") if length else ""

    def pylong(self, obj):
        return self.pylong_buf(self.m.read(obj, self.L["long_digit"] + 4 * 5))

    def pylong_buf(self, b):  # <= 5 digits: 150 bits
        if self.minor >= 12:
            tag = u64(b, self.L["long_size"])
            n, sign = tag >> 3, tag & 3
            if sign == 1:
                return 0
            neg = sign == 2
        else:
            s = i64(b, self.L["long_size"])
            n, neg = abs(s), s < 0
        if n > 5:
            raise ReadError("int of %d digits" % n)
        v = 0
        for i in range(n):
            v |= u32(b, self.L["long_digit"] + 4 * i) << (30 * i)
        return -v if neg else v

    # --- HAMT --------------------------------------------------------------
    def hamt_find(self, root, h32, key):
        node, shift = root, 0
        for _ in range(8):
            b = self.m.read_upto(node, self.L["b_array"] + 16 * 8)
            name = self.tinfo(u64(b, self.L["ob_type"]))[0]
            if name == "hamt_bitmap_node":
                bitmap = u32(b, self.L["b_bitmap"])
                bit = 1 << ((h32 >> shift) & 31)
                if not bitmap & bit:
                    return None
                idx = bin(bitmap & (bit - 1)).count("1")
                o = self.L["b_array"] + 16 * idx
                kv = b[o:o + 16] if o + 16 <= len(b) else self.m.read(node + o, 16)
                k, v = u64(kv, 0), u64(kv, 8)
                if k == 0:
                    node, shift = v, shift + 5
                    continue
                return v if k == key else None
            if name == "hamt_array_node":
                child = self.m.ptr(node + self.L["a_array"] + 8 * ((h32 >> shift) & 31))
                if child == 0:
                    return None
                node, shift = child, shift + 5
                continue
            if name == "hamt_collision_node":
                n = i64(b, self.L["ob_size"])
                if n < 4 or n > 64:
                    raise ReadError("collision node of %d" % n)
                arr = b[self.L["c_array"]:]
                if len(arr) < 8 * n:
                    arr = self.m.read(node + self.L["c_array"], 8 * n)
                for i in range(0, n, 2):
                    if u64(arr, 8 * i) == key:
                        return u64(arr, 8 * i + 8)
                return None
            raise ReadError("not a HAMT node: %s" % name)
        raise ReadError("HAMT deeper than 8 levels")

    def hamt_items(self, node, out, depth=0):
        """Every (key, value) of a HAMT (discovery only)."""
        if depth > 8:
            raise ReadError("HAMT too deep")
        name = self.type_of(node)[0]
        if name == "hamt_bitmap_node":
            b = self.m.read(node, self.L["b_array"])
            n = i64(b, self.L["ob_size"])
            arr = self.m.read(node + self.L["b_array"], 8 * n) if n else b""
            for i in range(0, n, 2):
                k, v = u64(arr, 8 * i), u64(arr, 8 * i + 8)
                if k:
                    out.append((k, v))
                else:
                    self.hamt_items(v, out, depth + 1)
        elif name == "hamt_array_node":
            arr = self.m.read(node + self.L["a_array"], 8 * 32)
            for i in range(32):
                c = u64(arr, 8 * i)
                if c:
                    self.hamt_items(c, out, depth + 1)
        elif name == "hamt_collision_node":
            n = i64(self.m.read(node, 24), self.L["ob_size"])
            arr = self.m.read(node + self.L["c_array"], 8 * n)
            for i in range(0, n, 2):
                out.append((u64(arr, 8 * i), u64(arr, 8 * i + 8)))
        else:
            raise ReadError("not a HAMT node: %s" % name)

    # --- dicts ---------------------------------------------------------------
    def keys_entries(self, keys):
        """(entry size, key offset in entry, value offset, entries address, n)"""
        b = self.m.read_upto(keys, 1024)  # header, indices and (usually) the entries
        self.last_keys = (keys, b)
        if self.minor <= 10:
            size, n = i64(b, 8), i64(b, 32)
            ixb = 1 if size <= 0xFF else 2 if size <= 0xFFFF else 4 if size <= 0xFFFFFFFF else 8
            return 24, 8, 16, keys + 40 + size * ixb, n
        log2_index_bytes, kind, n = b[9], b[10], i64(b, 24)
        ents = keys + 32 + (1 << log2_index_bytes)
        if kind == 0:  # DICT_KEYS_GENERAL: {hash, key, value}
            return 24, 8, 16, ents, n
        return 16, 0, 8, ents, n  # UNICODE / SPLIT: {key, value}

    def keys_index(self, keys, want_ptr, want_text):
        """Index of a str key in a keys object: by address once known, else by text."""
        esz, ko, vo, ents, n = self.keys_entries(keys)
        if n < 0 or n > 256:
            raise ReadError("dict keys of %d entries" % n)
        base, kb = self.last_keys
        o = ents - base
        arr = kb[o:o + esz * n] if o + esz * n <= len(kb) else self.m.read(ents, esz * n) if n else b""
        for i in range(n):
            k = u64(arr, esz * i + ko)
            if k and k == want_ptr:
                return i, k, u64(arr, esz * i + vo)
        if want_ptr is None:  # discovery: compare the text
            for i in range(n):
                k = u64(arr, esz * i + ko)
                if k and self.type_of(k)[0] == "str":
                    s = self.ascii_str(k)
                    if s is not None and want_text(s):
                        return i, k, u64(arr, esz * i + vo)
        return None

    def values_array(self, values):
        """Where PyDictValues' pointers start."""
        return values + (8 if self.minor >= 13 else 0)

    def dict_get(self, d, want_ptr, want_text):
        b = self.m.read(d, 48)
        if not self.tinfo(u64(b, 8))[1] & TPF_DICT_SUBCLASS:
            raise ReadError("not a dict: %s" % self.tinfo(u64(b, 8))[0])
        keys, values = u64(b, self.L["ma_keys"]), u64(b, self.L["ma_values"])
        r = self.keys_index(keys, want_ptr, want_text)
        if r is None:
            return None
        i, k, v = r
        if values:
            v = self.m.ptr(self.values_array(values) + 8 * i)
        return k, v

    def attr(self, obj, text):
        """obj.<text> from the instance's attributes (no descriptors)."""
        ob = self.m.read(obj - 32, 32 + 48)  # pre-header words, header, first fields
        tname, flags, basicsize, dictoffset, t = self.tinfo(u64(ob, 32 + self.L["ob_type"]))
        self.last_type = tname
        want = lambda s: s == text  # noqa: E731
        m = self.minor
        values = None
        if m >= 13 and flags & TPF_INLINE_VALUES:
            ix = self.idx_cache.get(self.m.ptr(t + self.L["ht_cached_keys"]))  # (per type: cached)
            self.m.reads -= 1
            if ix is not None:  # header and the value in one read
                vb = self.m.read(obj + basicsize, 8 + 8 * (ix + 1))
                if vb[3]:
                    return self.attr_key, u64(vb, 8 + 8 * ix)
            hdr = self.m.read(obj + basicsize, 4)
            if hdr[3]:  # valid
                values = obj + basicsize
        elif m == 12 and flags & TPF_MANAGED_DICT:
            dv = u64(ob, 32 - 24)
            if dv & 1:  # tagged: the values array's address - 1 (3.12's PyDictOrValues)
                values = dv + 1
            elif dv:
                r = self.dict_get(dv, self.attr_key, want)
                if r is not None:
                    self.attr_key = r[0]
                return r
        elif m == 11 and flags & TPF_MANAGED_DICT:
            values = u64(ob, 0) or None
        if values is not None:
            keys = self.m.ptr(t + self.L["ht_cached_keys"])
            self.m.reads -= 1  # per type: cached (shared keys are append-only)
            ix = self.idx_cache.get(keys)
            if ix is None:
                r = self.keys_index(keys, self.attr_key, want)
                if r is None:
                    return None
                ix = self.idx_cache[keys] = r[0]
                self.attr_key = r[1]
            return self.attr_key, self.m.ptr(self.values_array(values) + 8 * ix)
        if m >= 11 and flags & TPF_MANAGED_DICT:
            d = u64(ob, 32 - 24)
        elif 0 < dictoffset <= 40:
            d = u64(ob, 32 + dictoffset)
        elif dictoffset > 0:
            d = self.m.ptr(obj + dictoffset)
        else:
            return None
        r = self.dict_get(d, self.attr_key, want) if d else None
        if r is not None:
            self.attr_key = r[0]
        return r

    # --- the chain ------------------------------------------------------------
    def discover(self, hamt_root):
        items = []
        self.hamt_items(hamt_root, items)
        for k, v in items:
            kt = self.type_of(k)
            if kt[0] not in ("_contextvars.ContextVar", "ContextVar") or kt[1] & TPF_HEAPTYPE:
                continue
            b = self.m.read(k, 64)
            if self.ascii_str(u64(b, self.L["var_name"])) != "current_context":
                continue
            vt = self.type_of(v)
            if vt[0] != "Context" or not vt[1] & TPF_DICT_SUBCLASS or not vt[1] & TPF_HEAPTYPE:
                continue
            self.cv = (k, fold_hash(i64(b, self.L["var_hash"])))
            return True
        return False

    def thread_span(self, tstate, log=None):
        """(trace_id, span_id), or None (no span), for one thread."""
        ctx = self.m.ptr(tstate + self.L["ts_context"])
        if not ctx:
            return None
        b = self.m.read(ctx, 48)
        ti = self.tinfo(u64(b, 8))
        if ti[0] not in ("_contextvars.Context", "Context") or ti[1] & TPF_HEAPTYPE:  # 3.9: "Context"
            raise ReadError("tstate->context is a %s" % self.tinfo(u64(b, 8))[0])
        hamt = u64(b, self.L["ctx_vars"])
        hb = self.m.read(hamt, 40)
        root, count = u64(hb, self.L["h_root"]), i64(hb, self.L["h_count"])
        if count == 0:
            return None
        if self.cv is None and not self.discover(root):
            return None
        value = self.hamt_find(root, self.cv[1], self.cv[0])
        if value is None:
            return None
        r = self.dict_get(value, self.span_key, lambda s: s.startswith("current-span-"))
        if r is None:
            return None
        self.span_key, span = r
        r = self.attr(span, "_context")
        if r is None:
            raise ReadError("a %s without _context" % self.type_of(span)[0])
        sc = r[1]
        tb = self.m.read(sc, self.L["tuple_item"] + 16)
        st = self.tinfo(u64(tb, 8))
        if not st[1] & TPF_TUPLE_SUBCLASS:
            raise ReadError("_context is a %s" % st[0])
        if i64(tb, self.L["ob_size"]) < 2:
            raise ReadError("short SpanContext")
        a, c = u64(tb, self.L["tuple_item"]), u64(tb, self.L["tuple_item"] + 8)
        n = self.L["long_digit"] + 20
        la, lc = self.m.readv([(a, n), (c, n)])
        for lb in (la, lc):
            if not self.tinfo(u64(lb, 8))[1] & TPF_LONG_SUBCLASS:
                raise ReadError("id is a %s" % self.tinfo(u64(lb, 8))[0])
        tid, sid = self.pylong_buf(la), self.pylong_buf(lc)
        if log is not None:
            log.append(dict(span_type=self.last_type, sc_type=st[0], ptrs=dict(
                ctx=ctx, hamt=hamt, ctxdict=value, span=span, sc=sc, ints=(a, c))))
        return tid, sid


def stop(pid):
    os.kill(pid, signal.SIGSTOP)
    for _ in range(1000):
        states = []
        for t in os.listdir("/proc/%d/task" % pid):
            try:
                with open("/proc/%d/task/%s/stat" % (pid, t)) as f:
                    states.append(f.read().rsplit(")", 1)[1].split()[0])
            except OSError:
                pass
        if all(s in "tT" for s in states):
            return
        time.sleep(0.0005)
    raise RuntimeError("target did not stop")


def main():
    info = json.loads(sys.stdin.readline())
    pid, minor = info["pid"], info["version"][1]
    r = Reader(pid, minor)
    res = dict(version=".".join(map(str, info["version"])), sdk=info["sdk"], ok=0, bad=[], unknown=0,
               seen={}, reads=[], reads_by_thread={}, per_thread={}, aba={}, hamt_ok=0, hamt_bad=[])
    # HAMT node checks (array node, collisions, hash folding)
    for t in info["hamt_tests"]:
        hb = r.m.read(t["hamt"], 40)
        root = u64(hb, r.L["h_root"])
        for kid, h, vid in t["keys"]:
            got = r.hamt_find(root, fold_hash(h), kid)
            if got == vid:
                res["hamt_ok"] += 1
            else:
                res["hamt_bad"].append((h, vid, got))
        items = []
        r.hamt_items(root, items)
        if sorted(items) != sorted((k, v) for k, _, v in t["keys"]):
            res["hamt_bad"].append("iteration differs")
    node_types = set(n[0] for n in r.types.values())
    res["hamt_node_types"] = sorted(x for x in node_types if x.startswith("hamt"))
    aba = {}
    deadline = time.time() + float(os.environ.get("SAMPLE_SECONDS", "2"))
    samples = 0
    while time.time() < deadline:
        try:
            stop(pid)
        except (ProcessLookupError, FileNotFoundError):
            break
        try:
            marks = r.m.read(info["markers"], 64)
            for name, th in info["threads"].items():
                want = u64(marks, 8 * th["slot"])
                r.m.reads = 0
                log = []
                try:
                    got = r.thread_span(th["tstate"], log)
                except ReadError as e:
                    got = "error: %s" % e
                res["reads"].append(r.m.reads)
                if log and isinstance(got, tuple):
                    for kind, p in log[0]["ptrs"].items():
                        prev = aba.setdefault((name, kind, p), got)
                        key = kind + " reused for another span"
                        res["aba"].setdefault(key, 0)
                        if prev != got:
                            res["aba"][key] += 1
                            aba[(name, kind, p)] = got
                if log:
                    res["seen"].setdefault(name, set()).add((log[0]["span_type"], log[0]["sc_type"]))
                    res["reads_by_thread"].setdefault(name, set()).add(r.m.reads)
                if th["expect"] == "none":
                    ok = got is None
                elif want == 0:
                    res["unknown"] += 1
                    continue
                else:
                    ok = isinstance(got, tuple) and got[1] == want and got[0] != 0
                if ok:
                    res["ok"] += 1
                    pt = res["per_thread"].setdefault(name, [0, set()])
                    pt[0] += 1
                    if isinstance(got, tuple):
                        pt[1].add(got[1])
                else:
                    res["bad"].append((name, want, got))
        finally:
            os.kill(pid, signal.SIGCONT)
        samples += 1
        time.sleep(0.03)
    res["samples"] = samples
    res["nbad"] = len(res["bad"])
    res["per_thread"] = {k: "%d ok, %d distinct spans" % (v[0], len(v[1])) for k, v in res["per_thread"].items()}
    res["bad"] = res["bad"][:3]
    res["seen"] = {k: sorted(v) for k, v in res["seen"].items()}
    res["reads_by_thread"] = {k: sorted(v) for k, v in res["reads_by_thread"].items()}
    rd = res.pop("reads")
    res["reads_per_thread"] = dict(min=min(rd), max=max(rd), mean=round(sum(rd) / len(rd), 1)) if rd else None
    res["cv"] = hex(r.cv[0]) if r.cv else None
    res["types"] = sorted(set(n[0] for n in r.types.values()))
    print(json.dumps(res, default=str))


if __name__ == "__main__":
    main()
