# SPDX-License-Identifier: MIT
"""A Grafana Pyroscope ingestion endpoint for tests (Debian's python3, stdlib
plus python3-protobuf), following the upstream API definitions:

  POST /push.v1.PusherService/Push   Connect unary (connectrpc protocol):
      Content-Type application/proto (application/json is not supported here),
      optional Connect-Protocol-Version: 1, optional Content-Encoding: gzip;
      the body a push.v1.PushRequest (grafana/pyroscope api/push/v1/push.proto,
      api/types/v1/types.proto), decoded with python3-protobuf from
      descriptors built here from the published field numbers, not from
      pyprofd's .proto files. Validated as the distributor does: a valid
      __name__, sorted-unique label names after sorting, name/value lengths,
      at most 30 labels, every raw_profile a pprof (gzip or raw) of at most
      4 MiB decompressed, every ID a UUID. Success: 200, application/proto,
      an empty PushResponse. Errors: the Connect JSON body
      {"code": "...", "message": "..."} with the code's HTTP status.
  POST /ingest?name=APP{k=v,...}&from=&until=&format=pprof&...: the legacy
      API; with format=pprof the whole body is the pprof (gzip or raw).

Checks on every request: Authorization (basic user/password or a bearer
token, when configured), X-Scope-OrgID (when a tenant is required), plus any
extra headers required. Failing checks answer 401 unauthenticated.

The test can make it answer 503 (unavailable) or 400 (invalid_argument) for
the next N requests, hang (read the request, never answer until released),
or be down (the listening socket closed: connection refused) and come back on
the same port. Every accepted profile is stored (Record) with its labels,
time range and the pprof bytes written to a file.

Usable in-process (class Receiver) or as a program:
    pyroscope_receiver.py --port P [--tls-cert C --tls-key K] --dir D
"""

import base64
import gzip
import http.server
import json
import os
import re
import socket
import ssl
import threading
import time
import urllib.parse
import uuid

from google.protobuf import descriptor_pb2, descriptor_pool

try:
    from google.protobuf import message_factory
except ImportError:  # pragma: no cover
    message_factory = None

# --- the wire schema, from upstream's field numbers -------------------------

_F = descriptor_pb2.FieldDescriptorProto


def _field(msg, name, number, ftype, label=_F.LABEL_OPTIONAL, type_name=None, json_name=None):
    f = msg.field.add(name=name, number=number, type=ftype, label=label)
    if type_name:
        f.type_name = type_name
    if json_name:
        f.json_name = json_name


def _build_classes():
    types = descriptor_pb2.FileDescriptorProto(name="types/v1/types.proto", package="types.v1",
                                               syntax="proto3")
    m = types.message_type.add(name="LabelPair")
    _field(m, "name", 1, _F.TYPE_STRING)
    _field(m, "value", 2, _F.TYPE_STRING)
    m = types.message_type.add(name="ProfileAnnotation")
    _field(m, "key", 1, _F.TYPE_STRING)
    _field(m, "value", 2, _F.TYPE_STRING)

    push = descriptor_pb2.FileDescriptorProto(name="push/v1/push.proto", package="push.v1",
                                              syntax="proto3",
                                              dependency=["types/v1/types.proto"])
    m = push.message_type.add(name="PushRequest")
    _field(m, "series", 1, _F.TYPE_MESSAGE, _F.LABEL_REPEATED, ".push.v1.RawProfileSeries")
    push.message_type.add(name="PushResponse")
    m = push.message_type.add(name="RawProfileSeries")
    _field(m, "labels", 1, _F.TYPE_MESSAGE, _F.LABEL_REPEATED, ".types.v1.LabelPair")
    _field(m, "samples", 2, _F.TYPE_MESSAGE, _F.LABEL_REPEATED, ".push.v1.RawSample")
    _field(m, "annotations", 3, _F.TYPE_MESSAGE, _F.LABEL_REPEATED,
           ".types.v1.ProfileAnnotation")
    m = push.message_type.add(name="RawSample")
    _field(m, "raw_profile", 1, _F.TYPE_BYTES)
    _field(m, "ID", 2, _F.TYPE_STRING, json_name="ID")

    pool = descriptor_pool.DescriptorPool()
    pool.Add(types)
    pool.Add(push)

    def cls(name):
        d = pool.FindMessageTypeByName(name)
        if hasattr(message_factory, "GetMessageClass"):
            return message_factory.GetMessageClass(d)
        return message_factory.MessageFactory(pool).GetPrototype(d)

    return cls("push.v1.PushRequest"), cls("push.v1.PushResponse")


PushRequest, PushResponse = _build_classes()

CONNECT_STATUS = {
    "canceled": 499, "unknown": 500, "invalid_argument": 400, "deadline_exceeded": 504,
    "not_found": 404, "already_exists": 409, "permission_denied": 403,
    "resource_exhausted": 429, "failed_precondition": 400, "aborted": 409, "out_of_range": 400,
    "unimplemented": 501, "internal": 500, "unavailable": 503, "data_loss": 500,
    "unauthenticated": 401,
}

METRIC_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
APP_NAME = re.compile(r"^[a-zA-Z0-9_.\-/]+$")
TAG_KEY = re.compile(r"^[a-zA-Z0-9_.]+$")
MAX_PROFILE = 4 << 20


class Reject(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code, self.message = code, message


def _varint(buf, i):
    v = shift = 0
    while True:
        if i >= len(buf):
            raise ValueError("truncated varint")
        b = buf[i]
        i += 1
        v |= (b & 0x7f) << shift
        shift += 7
        if not b & 0x80:
            return v, i


def pprof_times(raw):
    """(time_nanos, duration_nanos) of a pprof (gzip or raw), by walking its fields."""
    data = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
    if len(data) > MAX_PROFILE:
        raise Reject("invalid_argument", f"profile too large: {len(data)} bytes")
    i, t, d = 0, 0, 0
    while i < len(data):
        key, i = _varint(data, i)
        field, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _varint(data, i)
            if field == 9:
                t = v
            elif field == 10:
                d = v
        elif wt == 2:
            n, i = _varint(data, i)
            i += n
        elif wt == 1:
            i += 8
        elif wt == 5:
            i += 4
        else:
            raise ValueError(f"bad wire type {wt}")
    if i != len(data):
        raise ValueError("truncated field")
    return t, d


def parse_attime(s):
    """Pyroscope's attime.Parse for the all-digit forms, in ns."""
    if not s.isdigit():
        raise Reject("invalid_argument", f"unsupported time {s!r}")
    n = len(s)
    if n == 8:
        return int(time.mktime(time.strptime(s, "%Y%m%d"))) * 10**9
    if n == 13:
        return int(s) * 10**6
    if n == 16:
        return int(s) * 10**3
    if n == 19:
        return int(s)
    return int(s) * 10**9


class Record:
    def __init__(self, api, labels, time_nanos, duration_nanos, path, headers, query=None):
        self.api, self.labels = api, labels
        self.time_nanos, self.duration_nanos = time_nanos, duration_nanos
        self.path, self.headers, self.query = path, headers, query

    def key(self):
        return (tuple(sorted(self.labels.items())), self.time_nanos)

    def __repr__(self):
        return f"Record({self.api}, {self.labels}, {self.time_nanos}, {self.duration_nanos})"


class Receiver:
    def __init__(self, directory, port=0, certfile=None, keyfile=None, basic=None, bearer=None,
                 tenant=None, required_headers=None):
        self.dir = directory
        os.makedirs(directory, exist_ok=True)
        self.port = port
        self.certfile, self.keyfile = certfile, keyfile
        self.basic, self.bearer, self.tenant = basic, bearer, tenant
        self.required_headers = required_headers or {}
        self.lock = threading.Lock()
        self.records = []
        self.requests = []     # (time, path, status, code)
        self.fail_next = []    # codes to answer with, one per request
        self.rejected = []     # (code, Record.key()) of the profiles refused that way
        self.conns = set()     # open client connections, cut by stop()
        # held by a request from its checks to its answer, and by stop() while
        # it cuts the connections: a profile stored is answered, so a client
        # never retries one that arrived (which would store it twice)
        self.busy = threading.Lock()
        self.down = False      # stop() ran: requests still coming are cut, not stored
        self.hang = threading.Event()   # set: hang every request
        self.release = threading.Event()
        self.server = None
        self.announce = False  # print each accepted profile (when run as a program)
        self.thread = None
        self.seq = 0

    # --- lifecycle ---------------------------------------------------------

    def start(self):
        self.down = False
        receiver = self

        class Handler(_Handler):
            r = receiver

        srv = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler,
                                              bind_and_activate=False)
        srv.allow_reuse_address = True
        srv.daemon_threads = True
        srv.server_bind()
        srv.server_activate()
        self.port = srv.server_address[1]
        if self.certfile:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(self.certfile, self.keyfile)
            ctx.set_alpn_protocols(["http/1.1"])
            srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
        self.server = srv
        self.thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05},
                                       daemon=True)
        self.thread.start()
        return self

    def stop(self):
        """Down: the port refuses connections until start() again."""
        if self.server:
            self.server.shutdown()
            self.server.server_close()
            with self.busy:  # between requests: none is stored without its answer
                self.down = True
                with self.lock:
                    conns = list(self.conns)
                for c in conns:  # keep-alive connections too: down means down
                    try:
                        c.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
            self.thread.join()
            self.server = None

    def set_hang(self, on):
        if on:
            self.release.clear()
            self.hang.set()
        else:
            self.hang.clear()
            self.release.set()

    def snapshot(self):
        with self.lock:
            return list(self.records), list(self.requests)

    # --- request handling (called by the handler) ----------------------------

    def check_headers(self, h):
        auth = h.get("Authorization")
        if self.basic:
            want = "Basic " + base64.b64encode(f"{self.basic[0]}:{self.basic[1]}".encode()).decode()
            if auth != want:
                raise Reject("unauthenticated", f"bad basic auth {auth!r}")
        if self.bearer and auth != f"Bearer {self.bearer}":
            raise Reject("unauthenticated", f"bad bearer auth {auth!r}")
        if self.tenant and h.get("X-Scope-OrgID") != self.tenant:
            raise Reject("unauthenticated", "no org id")
        for k, v in self.required_headers.items():
            if h.get(k) != v:
                raise Reject("invalid_argument", f"header {k} is {h.get(k)!r}, want {v!r}")

    def store(self, api, labels, raw, headers, query=None, times=None):
        t, d = pprof_times(raw)
        if times:
            t, d = times
        with self.lock:
            self.seq += 1
            path = os.path.join(self.dir, f"{self.seq:05d}.pb.gz")
        with open(path, "wb") as f:
            f.write(raw)
        rec = Record(api, labels, t, d, path, headers, query)
        with self.lock:
            self.records.append(rec)
        if self.announce:  # run as a program: one line per profile, for people
            names = dict(labels)
            rest = ",".join(f'{k}="{v}"' for k, v in sorted(names.items()) if k != "__name__")
            print(f"received {names.get('__name__', '?')}{{{rest}}} "
                  f"{d / 1e9:.1f} s, {len(raw)} bytes -> {path}", flush=True)
        return rec

    def peek_keys(self, url, h, body):
        """The Record.key() of each profile in a request, without storing it."""
        keys = []
        try:
            if url.path == "/push.v1.PusherService/Push":
                req = PushRequest()
                req.ParseFromString(body)
                for s in req.series:
                    labels = {lp.name: lp.value for lp in s.labels}
                    for smp in s.samples:
                        keys.append((tuple(sorted(labels.items())),
                                     pprof_times(smp.raw_profile)[0]))
        except Exception:  # noqa: BLE001 - best effort
            pass
        return keys

    def handle_push(self, h, body):
        ct = h.get("Content-Type", "")
        if ct != "application/proto":
            raise Reject("invalid_argument", f"unsupported content type {ct!r}")
        if h.get("Connect-Protocol-Version") not in (None, "1"):
            raise Reject("invalid_argument", "bad Connect-Protocol-Version")
        if h.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        elif h.get("Content-Encoding") not in (None, "identity"):
            raise Reject("unimplemented", "unknown encoding")
        req = PushRequest()
        try:
            req.ParseFromString(body)
        except Exception as e:  # noqa: BLE001 - any decode error is the client's
            raise Reject("invalid_argument", f"cannot decode PushRequest: {e}")
        if not req.series:
            raise Reject("invalid_argument", "no series")
        todo = []
        for s in req.series:
            names = [lp.name for lp in s.labels]
            if len(set(names)) != len(names):
                raise Reject("invalid_argument", f"duplicate label names {names}")
            if len(names) > 30:
                raise Reject("invalid_argument", "too many labels")
            labels = {lp.name: lp.value for lp in s.labels}
            for k, v in labels.items():
                if not k or len(k) > 1024 or len(v) > 2048:
                    raise Reject("invalid_argument", f"bad label {k!r}")
            if not METRIC_NAME.match(labels.get("__name__", "")):
                raise Reject("invalid_argument", f"invalid __name__ in {labels}")
            if not s.samples:
                raise Reject("invalid_argument", "series without samples")
            for smp in s.samples:
                try:
                    uuid.UUID(smp.ID)
                except ValueError:
                    raise Reject("invalid_argument", f"ID {smp.ID!r} is not a UUID")
                try:
                    pprof_times(smp.raw_profile)
                except ValueError as e:
                    raise Reject("invalid_argument", f"raw_profile is not a pprof: {e}")
                todo.append((labels, smp.raw_profile))
        for labels, raw in todo:
            self.store("push", labels, raw, dict(h))
        return PushResponse().SerializeToString()

    def handle_ingest(self, h, query, body):
        q = urllib.parse.parse_qs(query, keep_blank_values=True, strict_parsing=False)
        one = {k: v[0] for k, v in q.items()}
        name = one.get("name", "")
        m = re.match(r"^([^{]*)\{(.*)\}$", name) or re.match(r"^([^{]*)$", name)
        if not m or not m.group(1) or not APP_NAME.match(m.group(1)):
            raise Reject("invalid_argument", f"bad name {name!r}")
        tags = {}
        if m.lastindex == 2 and m.group(2):
            for kv in m.group(2).split(","):
                k, sep, v = kv.partition("=")
                if not sep or not TAG_KEY.match(k) or k == "__name__":
                    raise Reject("invalid_argument", f"bad tag {kv!r}")
                tags[k] = v
        if one.get("format") != "pprof":
            raise Reject("invalid_argument", f"format {one.get('format')!r}, want pprof")
        if "multipart/form-data" in h.get("Content-Type", ""):
            raise Reject("invalid_argument", "format=pprof takes the body as is, not a form")
        t_from = parse_attime(one.get("from", ""))
        t_until = parse_attime(one.get("until", ""))
        if t_until < t_from:
            raise Reject("invalid_argument", "until before from")
        if int(one.get("sampleRate", "100")) < 0:
            raise Reject("invalid_argument", "bad sampleRate")
        try:
            t, d = pprof_times(body)
        except ValueError as e:
            raise Reject("invalid_argument", f"body is not a pprof: {e}")
        labels = dict(tags)
        labels["service_name"] = m.group(1)
        labels["pyroscope_spy"] = one.get("spyName", "unknown")
        rec = self.store("ingest", labels, body, dict(h), one, (t, d))
        rec.from_ns, rec.until_ns = t_from, t_until
        return b""


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    r = None  # the Receiver, set by a subclass

    def log_message(self, fmt, *args):
        pass

    def setup(self):
        super().setup()
        with self.r.lock:
            self.r.conns.add(self.connection)

    def finish(self):
        with self.r.lock:
            self.r.conns.discard(self.connection)
        try:
            super().finish()
        except OSError:
            pass

    def _send(self, status, body, ctype):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _error(self, code, message):
        body = json.dumps({"code": code, "message": message}).encode()
        self._send(CONNECT_STATUS[code], body, "application/json")
        return CONNECT_STATUS[code]

    def do_POST(self):
        r = self.r
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        url = urllib.parse.urlsplit(self.path)
        if r.hang.is_set():
            with r.lock:
                r.requests.append((time.time(), url.path, 0, "hang"))
            r.release.wait(120)
            self.close_connection = True
            return
        with r.busy:
            if r.down:  # cut while it waited: never stored, so the retry is no duplicate
                self.close_connection = True
                return
            status, code = self._answer(url, body)
        if status is None:
            return
        with r.lock:
            r.requests.append((time.time(), url.path, status, code))

    def _answer(self, url, body):
        """Checks, stores and answers one request: (status, code), or (None, None)
        when the client went away."""
        r = self.r
        status, code = 200, "ok"
        with r.lock:
            forced = r.fail_next.pop(0) if r.fail_next else None
        try:
            r.check_headers(self.headers)
            if forced:
                with r.lock:
                    r.rejected.extend((forced, k) for k in r.peek_keys(url, self.headers, body))
                raise Reject(forced, f"told to answer {forced}")
            if url.path == "/push.v1.PusherService/Push":
                out = r.handle_push(self.headers, body)
                self._send(200, out, "application/proto")
            elif url.path == "/ingest":
                r.handle_ingest(self.headers, url.query, body)
                self._send(200, b"", "text/plain")
            else:
                raise Reject("unimplemented", f"no route {url.path}")
        except Reject as e:
            status, code = self._error(e.code, e.message), e.code
        except (BrokenPipeError, ConnectionResetError):
            return None, None
        return status, code


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=4040)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--tls-cert")
    ap.add_argument("--tls-key")
    a = ap.parse_args()
    rv = Receiver(a.dir, a.port, a.tls_cert, a.tls_key)
    rv.announce = True
    rv = rv.start()
    print(f"listening on {rv.port}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        rv.stop()
