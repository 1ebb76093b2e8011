# SPDX-License-Identifier: MIT
"""pyprofd test target: Python functions that spend their time in C libraries.

The main thread alternates, forever, between

    <module> -> hash_loop() -> hashlib.sha256(...).update()   (OpenSSL's SHA-256)
    <module> -> deflate_loop() -> zlib.compress(...)          (zlib's deflate)

so that native stacks show OpenSSL and zlib frames below those two Python
functions. Prints "pyprofd-target: ready" once set up, then runs until
SIGTERM/SIGINT.
"""

import hashlib
import signal
import sys
import zlib

BLOCK = bytes(range(256)) * 4096  # 1 MiB


def hash_loop():
    h = hashlib.sha256()
    for _ in range(8):
        h.update(BLOCK)
    return h.digest()


def deflate_loop():
    return zlib.compress(BLOCK[:262144], 6)


signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
print("pyprofd-target: ready", flush=True)
while True:
    hash_loop()
    deflate_loop()
