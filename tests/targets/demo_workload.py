# SPDX-License-Identifier: MIT
"""pyprofd demo target: a tiny fake web service for `make demo`.

Three "http-worker-N" threads each handle an endless, seeded (so repeatable)
stream of fake requests; a "cache-janitor" thread churns garbage. Nothing is
printed per request. Stacks (innermost last), below threading's own
Thread._bootstrap -> _bootstrap_inner -> run frames:

    http-worker-N  serve(), then handle_request() -> one of
                     parse_request() -> parse_query() / json.loads   (CPU)
                     query_database() -> time.sleep                  (fake I/O)
                     render_template() -> render_row()               (CPU)
                     hash_payload() -> checksum() / hashlib          (CPU)
                     build_report() -> make_record()                 (garbage)
    cache-janitor  janitor() -> refill_cache() -> make_record()      (garbage,
                                                                      cycles)
                   janitor() -> time.sleep
    MainThread     <module> -> wait_until_stopped() -> Event.wait() -> ...

Prints "pyprofd-target: ready" once all threads are running, then runs until
SIGTERM/SIGINT or until --duration SECONDS has elapsed.
"""

import argparse
import hashlib
import json
import random
import signal
import sys
import threading
import time

WORKERS = 3
PATHS = ("/api/orders", "/api/users", "/api/search", "/report")

stop = threading.Event()


def make_request(rng):
    path = rng.choice(PATHS)
    query = "&".join(f"k{i}=v{rng.randrange(1000)}" for i in range(rng.randrange(2, 8)))
    body = json.dumps({"user": rng.randrange(10000),
                       "items": [rng.randrange(100) for _ in range(rng.randrange(5, 40))]})
    return f"GET {path}?{query} HTTP/1.1\r\nHost: demo\r\nUser-Agent: fake\r\n\r\n{body}"


def parse_query(query):
    params = {}
    for pair in query.split("&"):
        key, _, value = pair.partition("=")
        params[key] = value
    return params


def parse_request(raw):
    head, _, body = raw.partition("\r\n\r\n")
    request_line, *header_lines = head.split("\r\n")
    method, target, _ = request_line.split(" ")
    path, _, query = target.partition("?")
    headers = dict(line.split(": ", 1) for line in header_lines)
    return {"method": method, "path": path, "params": parse_query(query),
            "headers": headers, "body": json.loads(body)}


def query_database(request, rng):
    time.sleep(rng.uniform(0.001, 0.005))  # simulated I/O
    return [{"id": item, "name": f"item-{item}", "price": item * 1.25}
            for item in request["body"]["items"]]


def render_row(row):
    return f"<tr><td>{row['id']}</td><td>{row['name']}</td><td>{row['price']:.2f}</td></tr>"


def render_template(request, rows):
    parts = [f"<html><h1>{request['path']}</h1><table>"]
    for _ in range(10):
        parts.extend(render_row(row) for row in rows)
    parts.append("</table></html>")
    return "".join(parts)


def checksum(data):
    total = 0
    for byte in data[:16384]:
        total = (total * 33 + byte) & 0xFFFFFFFF
    return total


def hash_payload(body):
    data = body.encode()
    return hashlib.sha256(data).hexdigest(), checksum(data)


def make_record(i):
    record = {"id": i, "tags": [f"t{j}" for j in range(8)], "parent": None}
    record["self"] = record  # a reference cycle: only the cyclic GC frees it
    return record


def build_report():
    records = [make_record(i) for i in range(2000)]
    return sum(len(r["tags"]) for r in records)


def handle_request(raw, rng):
    request = parse_request(raw)
    if request["path"] == "/report":
        build_report()
    rows = query_database(request, rng)
    body = render_template(request, rows)
    return hash_payload(body)


def serve(worker_id, started):
    rng = random.Random(worker_id)
    started.set()
    while not stop.is_set():
        handle_request(make_request(rng), rng)


def refill_cache(cache, generation):
    cache.clear()
    for i in range(500):
        cache[(generation, i)] = make_record(i)


def janitor(started):
    cache = {}
    generation = 0
    started.set()
    while not stop.is_set():
        refill_cache(cache, generation)
        generation += 1
        time.sleep(0.05)


def wait_until_stopped(deadline):
    while not stop.is_set():
        timeout = 1.0 if deadline is None else deadline - time.monotonic()
        if timeout <= 0:
            break
        stop.wait(min(timeout, 1.0))


def _exit_cleanly(signum, frame):
    # Also needed in container mode, where we are PID 1 of a PID namespace and
    # the kernel would otherwise ignore SIGTERM.
    sys.exit(0)


parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--duration", type=float, default=None,
                    help="exit after this many seconds (default: run until killed)")
args = parser.parse_args()
signal.signal(signal.SIGTERM, _exit_cleanly)
signal.signal(signal.SIGINT, _exit_cleanly)
deadline = None if args.duration is None else time.monotonic() + args.duration

jobs = [(f"http-worker-{n}", serve, (n,)) for n in range(1, WORKERS + 1)]
jobs.append(("cache-janitor", janitor, ()))
threads = []
for name, func, func_args in jobs:
    started = threading.Event()
    thread = threading.Thread(target=func, name=name, args=(*func_args, started))
    thread.start()
    started.wait()
    threads.append(thread)

print("pyprofd-target: ready", flush=True)
try:
    wait_until_stopped(deadline)
finally:
    stop.set()
    for thread in threads:
        thread.join()
