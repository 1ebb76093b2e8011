# SPDX-License-Identifier: MIT
"""pyprofd test target: Python functions that spend their time in C libraries.

The main thread alternates, forever, between

    <module> -> hash_loop() -> hashlib.sha256(...).update()   (OpenSSL's SHA-256)
    <module> -> deflate_loop() -> zlib.compress(...)          (zlib's deflate)

so that native stacks show OpenSSL and zlib frames below those two Python
functions (about 85 % and 15 % of the time), switching about ten times a
second: mixed stacks join a kernel's sample with a Python read some tens of
microseconds later, and a switch in between would join one function's C
frames with the other's Python frames (docs/unwinder.md, "Mixed stacks"),
so the rate of switches bounds what a test can expect. The data to
compress is sliced once, so deflate_loop() spends its time in zlib, not in
copying. Prints "pyprofd-target: ready" once set up, then runs until
SIGTERM/SIGINT.
"""

import hashlib
import signal
import sys
import zlib

BLOCK = bytes(range(256)) * 4096  # 1 MiB


TO_COMPRESS = BLOCK[:1048576]


def hash_loop():
    h = hashlib.sha256()
    for _ in range(32):
        h.update(BLOCK)
    return h.digest()


def deflate_loop():
    return zlib.compress(TO_COMPRESS, 6)


signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
print("pyprofd-target: ready", flush=True)
while True:
    hash_loop()
    deflate_loop()
