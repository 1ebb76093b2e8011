#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Captures the hybrid-runc-* and hybrid-host-* files of tests/fixtures/cgroup/
(see its README.md) on the machine this runs on: runc containers (runclib.py)
with kubelet-shaped cgroup paths, read back with `cat /proc/PID/cgroup`.

Needs root and runc. The root filesystem is an empty directory with the
host's /usr bound read-only (and /bin, /lib, ... as the host's symlinks), so
no image is needed. Writes <name>.txt files into OUTDIR (default: a new
temporary directory, printed); compare them with the checked-in fixtures
before copying any over. Ids and uids are fixed, so a rerun on the same kind
of host gives the same files.
"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "containers"))
import runclib  # noqa: E402

ID = "4c5f8e2b9d1a3f6e7b0c2d4e6f8a1b3c5d7e9f0a2b4c6d8e0f1a3b5c7d9e1f2a"
ID_DS = "1d2c3b4a5f6e7d8c9b0a1f2e3d4c5b6a7f8e9d0c1b2a3f4e5d6c7b8a9f0e1d2c"
UID = "6b1f4a3e-2c4d-4e8f-9a0b-1c2d3e4f5a6b"
UID_DS = "0f9e8d7c-6b5a-4f3e-8d2c-1b0a9f8e7d6c"
BURSTABLE = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{}.slice"
OWN_NS = ("pid", "ipc", "uts", "mount", "network")


def rootfs(tmp):
    """An empty root with the host's /usr (and its /bin, /lib... symlinks)."""
    root = os.path.join(tmp, "rootfs")
    os.makedirs(root)
    mounts = []
    for d in ("usr", "bin", "sbin", "lib", "lib64", "lib32"):
        host = "/" + d
        if os.path.islink(host):
            os.symlink(os.readlink(host), os.path.join(root, d))
        elif os.path.isdir(host):
            mounts.append({"destination": host, "type": "bind", "source": host,
                           "options": ["rbind", "ro"]})
    return root, mounts


def run(tmp, name, cgroups_path, script, namespaces=OWN_NS, marker="CAPTURED"):
    """Runs @script in a container at @cgroups_path; its output up to @marker."""
    root, mounts = rootfs(os.path.join(tmp, name))
    c = runclib.Container(tmp, name, root, ["/bin/sh", "-c", f"{script}; echo {marker}; sleep 60"],
                          caps=runclib.DEFAULT_CAPS, namespaces=namespaces,
                          cgroups_path=cgroups_path, mounts=mounts, seccomp=False)
    try:
        c.start(ready_line=marker)
        return c.log().split(marker)[0], c
    except BaseException:
        c.delete()
        raise


def main():
    if os.geteuid() != 0 or not os.access(runclib.RUNC, os.X_OK):
        sys.exit("capture-cgroup-fixtures: needs root and runc")
    out = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="cgroup-fixtures-")
    os.makedirs(out, exist_ok=True)
    files = {}
    with open("/proc/self/cgroup") as f:
        files["hybrid-host-process"] = f.read()
    with open("/proc/2/cgroup") as f:
        files["hybrid-host-kthread"] = f.read()
    runclib.cleanup_leftovers()
    with tempfile.TemporaryDirectory() as tmp:
        cat = "cat /proc/self/cgroup"
        for short, name, path in (
                ("burstable", "hybrid-runc-kubepods-cgroupfs-burstable",
                 f"/kubepods/burstable/pod{UID}/{ID}"),
                ("guaranteed", "hybrid-runc-kubepods-cgroupfs-guaranteed", f"/kubepods/pod{UID}/{ID}"),
                ("systemd", "hybrid-runc-kubepods-systemd-containerd",
                 BURSTABLE.format(UID.replace("-", "_")) + f"/cri-containerd-{ID}.scope")):
            files[name], c = run(tmp, short, path, cat)
            c.delete()
        files["hybrid-runc-cgroupns-own-view"], c = run(
            tmp, "ownview", f"/kubepods/besteffort/pod{UID}/{ID_DS}", cat, OWN_NS + ("cgroup",))
        c.delete()
        # a target, and a DaemonSet-like reader: own cgroup namespace, host PID namespace
        _, target = run(tmp, "target", BURSTABLE.format(UID.replace("-", "_"))
                        + f"/cri-containerd-{ID}.scope", "true")
        try:
            ds, reader = run(tmp, "daemonset", BURSTABLE.format(UID_DS.replace("-", "_"))
                             + f"/cri-containerd-{ID_DS}.scope",
                             f"cat /proc/{target.pid}/cgroup; echo SPLIT; cat /proc/1/cgroup",
                             ("ipc", "uts", "mount", "network", "cgroup"))
            reader.delete()
        finally:
            target.delete()
        view, host = ds.split("SPLIT\n")
        files["hybrid-runc-cgroupns-daemonset-view"] = view
        files["hybrid-runc-cgroupns-daemonset-view-of-host"] = host
    for name, text in sorted(files.items()):
        with open(os.path.join(out, name + ".txt"), "w") as f:
            f.write(text)
    print(out)


if __name__ == "__main__":
    main()
