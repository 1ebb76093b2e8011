# SPDX-License-Identifier: MIT
"""ctest test_deploy: the manifests under deploy/kubernetes pass
tests/deploy/validate.py, and each tree in tests/deploy/broken/ fails it with
exactly the messages its `expect` file lists (every expected message is
given, and no other). Also: the pyprofd.yml of each push component is the
base file plus its remote_write block, so the copies cannot drift apart.

Needs root and the kube-tools rootfs (built on first use by
scripts/python-rootfs.sh --kube-tools). One validator run covers every tree,
so python3-kubernetes is imported once: about 15 s of CPU in all.
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("PYPROFD_SOURCE_DIR") or os.path.dirname(os.path.dirname(HERE))
PYPROFD = os.environ.get("PYPROFD_BINARY") or os.path.join(SRC, "build", "pyprofd")
KUBE = os.path.join(SRC, "deploy", "kubernetes")
BROKEN = os.path.join(HERE, "broken")

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def body(path):
    """A pyprofd.yml without its leading comment block and remote_write."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    while lines and lines[0].startswith("#"):
        lines.pop(0)
    text = "\n".join(lines)
    return text.split("\nremote_write:", 1)[0].rstrip()


def main():
    if os.geteuid() != 0:
        print("test_deploy: needs root (chroot, unshare)")
        return 77
    rootfs = subprocess.run([os.path.join(SRC, "scripts", "python-rootfs.sh"), "--kube-tools"],
                            check=True, capture_output=True, text=True).stdout.strip()
    cases = sorted(d for d in os.listdir(BROKEN) if os.path.isdir(os.path.join(BROKEN, d)))
    trees = [KUBE] + [os.path.join(BROKEN, c) for c in cases]
    r = subprocess.run([sys.executable, os.path.join(HERE, "validate.py"), "--pyprofd", PYPROFD,
                        "--rootfs", rootfs, "--json"] + trees, capture_output=True, text=True)
    if r.returncode not in (0, 1):
        print(r.stdout, r.stderr)
        return 1
    errors = json.loads(r.stdout)

    real = errors[os.path.relpath(KUBE, SRC)]
    check(not real, f"deploy/kubernetes passes ({len(real)} problem(s))")
    for e in real:
        print("     " + e)

    for c in cases:
        got = errors[os.path.relpath(os.path.join(BROKEN, c), SRC)]
        with open(os.path.join(BROKEN, c, "expect"), encoding="utf-8") as f:
            want = [ln for ln in f.read().splitlines() if ln]
        missing = [w for w in want if not any(w in e for e in got)]
        extra = [e for e in got if not any(w in e for w in want)]
        check(not missing and not extra,
              f"broken/{c}: " + ("passes, as it must" if not want else "fails as expected"))
        for w in missing:
            print("     missing: " + w)
        for e in extra:
            print("     unexpected: " + e)

    base = body(os.path.join(KUBE, "base", "pyprofd.yml"))
    for comp in ("pyroscope", "parca"):
        check(body(os.path.join(KUBE, "components", comp, "pyprofd.yml")) == base,
              f"components/{comp}/pyprofd.yml is base/pyprofd.yml plus remote_write")

    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
