# SPDX-License-Identifier: MIT
"""A Parca WriteRaw receiver for the tests: a real gRPC server.

No Parca server can be installed from Debian, so the tests talk to Debian's
python3-grpcio instead: HTTP/2, the length-prefixed message framing, the
headers and the trailers are all checked by an independent gRPC
implementation. The service is registered with a generic handler
(parca.profilestore.v1alpha1.ProfileStoreService/WriteRaw, unary-unary),
and requests are decoded with python3-protobuf from pyprofd's own
exporters/parca/proto/profilestore.proto, compiled into a descriptor set by
protoc-c (which every pyprofd build has; Debian's python3-protobuf comes
without protoc).

Like Parca, the receiver answers INVALID_ARGUMENT when a series has no
__name__ label or a label name that is not a Prometheus label name. Besides
accepting, it can
    require a bearer token   (token=...; UNAUTHENTICATED when it is wrong)
    fail the first N calls   (fail_first=N, with fail_code, default UNAVAILABLE)
    refuse every call        (always=grpc.StatusCode.INVALID_ARGUMENT, say)
    serve TLS                (tls=(key_pem, cert_pem); see make_ca())
Every call is recorded in `attempts`, every accepted profile in `accepted`:
its series labels, the raw_profile bytes as received, the pprof decompressed,
the `normalized` flag and the call's metadata.

Standalone, for trying the agent by hand:
    /usr/bin/python3 tests/integration/parca_receiver.py [--port 7070] [--token T]
prints one line per received profile.
"""

import argparse
import gzip
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from concurrent import futures

import grpc
from google.protobuf import descriptor_pb2, message_factory

SOURCE_DIR = os.path.abspath(os.environ.get("PYPROFD_SOURCE_DIR") or
                             os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
PROFILESTORE_PROTO = os.path.join(SOURCE_DIR, "exporters", "parca", "proto", "profilestore.proto")
PPROF_PROTO = os.path.join(SOURCE_DIR, "agent", "pprof", "proto", "profile.proto")
SERVICE = "parca.profilestore.v1alpha1.ProfileStoreService"
LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


def load_proto(path, tmp):
    """The message classes of @path, by full name, through a protoc-c descriptor set."""
    out = os.path.join(tmp, os.path.basename(path) + ".desc")
    subprocess.run(["protoc-c", f"--proto_path={os.path.dirname(path)}",
                    f"--descriptor_set_out={out}", path], check=True)
    with open(out, "rb") as f:
        fds = descriptor_pb2.FileDescriptorSet.FromString(f.read())
    return message_factory.GetMessages(fds.file)


def make_ca(tmp, name="localhost"):
    """A self-signed CA and a server certificate it signed for @name and 127.0.0.1.

    Returns (ca_file, key_pem, cert_pem)."""
    def openssl(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)
    ca_key, ca_crt = os.path.join(tmp, "ca.key"), os.path.join(tmp, "ca.crt")
    key, csr, crt = (os.path.join(tmp, f"server.{x}") for x in ("key", "csr", "crt"))
    ext = os.path.join(tmp, "server.ext")
    with open(ext, "w") as f:
        f.write(f"subjectAltName=DNS:{name},IP:127.0.0.1\n"
                "basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl("req", "-x509", *ec, "-keyout", ca_key, "-out", ca_crt, "-days", "2",
            "-subj", "/CN=pyprofd test CA")
    openssl("req", *ec, "-keyout", key, "-out", csr, "-subj", f"/CN={name}")
    openssl("x509", "-req", "-in", csr, "-CA", ca_crt, "-CAkey", ca_key, "-CAcreateserial",
            "-out", crt, "-days", "2", "-extfile", ext)
    with open(key, "rb") as k, open(crt, "rb") as c:
        return ca_crt, k.read(), c.read()


class Received:
    """One profile of one WriteRaw call."""

    def __init__(self, labels, raw, normalized, metadata, n_series, n_samples):
        self.labels = labels  # dict: series labels
        self.raw = raw  # raw_profile as received
        self.pprof = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
        self.normalized = normalized
        self.metadata = metadata  # dict: the call's metadata (lower-case keys)
        self.n_series, self.n_samples = n_series, n_samples
        self.at = time.monotonic()

    def __repr__(self):
        return f"<profile {self.labels} {len(self.raw)} bytes>"


class ParcaReceiver:
    def __init__(self, messages, *, token=None, fail_first=0,
                 fail_code=grpc.StatusCode.UNAVAILABLE, always=None, tls=None):
        self.req_cls = messages["parca.profilestore.v1alpha1.WriteRawRequest"]
        self.resp_cls = messages["parca.profilestore.v1alpha1.WriteRawResponse"]
        self.token, self.fail_first, self.fail_code = token, fail_first, fail_code
        self.always, self.tls = always, tls
        self.lock = threading.Lock()
        self.calls = 0
        self.attempts = []  # Received, every call (also refused ones)
        self.accepted = []  # Received, accepted calls only
        self.server = None
        self.port = None

    @property
    def scheme(self):
        return "https" if self.tls else "http"

    @property
    def url(self):
        return f"{self.scheme}://127.0.0.1:{self.port}"

    def start(self, port=0):
        handler = grpc.method_handlers_generic_handler(SERVICE, {
            "WriteRaw": grpc.unary_unary_rpc_method_handler(
                self._write_raw, request_deserializer=self.req_cls.FromString,
                response_serializer=self.resp_cls.SerializeToString),
        })
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4),
                                  handlers=[handler])
        if self.tls:
            creds = grpc.ssl_server_credentials([(self.tls[0], self.tls[1])])
            self.port = self.server.add_secure_port(f"127.0.0.1:{port}", creds)
        else:
            self.port = self.server.add_insecure_port(f"127.0.0.1:{port}")
        self.server.start()
        return self

    def stop(self):
        if self.server:
            self.server.stop(grace=0).wait()
            self.server = None

    def snapshot(self):
        with self.lock:
            return list(self.attempts), list(self.accepted)

    def _write_raw(self, request, context):
        metadata = {k.lower(): v for k, v in context.invocation_metadata()}
        received = []
        for series in request.series:
            labels = {label.name: label.value for label in series.labels.labels}
            for sample in series.samples:
                received.append(Received(labels, sample.raw_profile, request.normalized,
                                         metadata, len(request.series), len(series.samples)))
        with self.lock:
            self.calls += 1
            call = self.calls
            self.attempts.extend(received)
        if self.token is not None and metadata.get("authorization") != f"Bearer {self.token}":
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "receiver: bad or missing token")
        if call <= self.fail_first:
            context.abort(self.fail_code, f"receiver: failing on purpose ({call} of "
                          f"{self.fail_first}), try again later")
        if self.always is not None:
            context.abort(self.always, "receiver: refused on purpose — «bad profile» 100%")
        for r in received:
            if "__name__" not in r.labels:
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, "missing __name__ label")
            bad = [n for n in r.labels if not LABEL_NAME.match(n)]
            if bad:
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"invalid label name {bad[0]}")
        with self.lock:
            self.accepted.extend(received)
        return self.resp_cls()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, default=7070)
    ap.add_argument("--token")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="parca-receiver.")
    rx = ParcaReceiver(load_proto(PROFILESTORE_PROTO, tmp), token=args.token).start(args.port)
    print(f"listening on {rx.url}", file=sys.stderr)
    seen = 0
    try:
        while True:
            time.sleep(0.5)
            _, accepted = rx.snapshot()
            for r in accepted[seen:]:
                print(f"{r.labels} {len(r.raw)} bytes", flush=True)
            seen = len(accepted)
    except KeyboardInterrupt:
        rx.stop()


if __name__ == "__main__":
    main()
