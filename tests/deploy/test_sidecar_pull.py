# SPDX-License-Identifier: MIT
"""ctest test_sidecar_pull: the sidecar of deploy/kubernetes/sidecar, as a
Pyroscope pull would see it, without a cluster.

A pod with shareProcessNamespace is stood in for by a new PID namespace
(unshare --pid --fork --mount-proc) holding the sidecar's application (the
inline script of deployment.yaml's app container, run by CPython 3.14 of the
test rootfs) and `pyprofd agent` with the sidecar's pyprofd.yml, its args
and the downward-API environment the pod would give. Then, from outside, as
Pyroscope's bundled Alloy does: GET /debug/pprof/profile?seconds=N on the
port the pod annotation profiles.grafana.com/cpu.port_name names. The
profile must be a gzipped pprof whose sample type is the job's mode
(cpu/nanoseconds), with the application's functions and the labels the
config sets (service_name, namespace, pod).

Differences from the pod, on purpose: the agent listens on a free loopback
port (--web.listen-address given last wins over the manifest's :7979, which
another agent on this machine may hold), and N is 3 s, not Alloy's 14.
Needs root and the test rootfs (scripts/python-rootfs.sh).
"""
import gzip
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("PYPROFD_SOURCE_DIR") or os.path.dirname(os.path.dirname(HERE))
PYPROFD = os.environ.get("PYPROFD_BINARY") or os.path.join(SRC, "build", "pyprofd")
SIDECAR = os.path.join(SRC, "deploy", "kubernetes", "sidecar")

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def manifest():
    """(app script, pyprofd args, env names, port name in the annotation,
    container port of that name) read from deployment.yaml's text."""
    with open(os.path.join(SIDECAR, "deployment.yaml"), encoding="utf-8") as f:
        text = f.read()
    script = re.search(r"\n            - \|\n((?:              .*\n|\n)+)", text).group(1)
    script = "\n".join(line[14:] for line in script.splitlines()) + "\n"
    args = re.search(r"          args:\n((?:            - .*\n)+)", text).group(1)
    args = [a.strip()[2:] for a in args.splitlines()]
    env = re.findall(r"            - name: (\w+)\n              valueFrom:", text)
    port_name = re.search(r'profiles\.grafana\.com/cpu\.port_name: (\S+)', text).group(1)
    port = int(re.search(r"- name: %s\n              containerPort: (\d+)" % re.escape(port_name),
                         text).group(1))
    return script, args, env, port_name, port


def varint(buf, i):
    shift = value = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return value, i


def fields(buf):
    """Top-level (field number, wire type, value) of a protobuf message."""
    i = 0
    while i < len(buf):
        key, i = varint(buf, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(buf, i)
        elif wt == 2:
            n, i = varint(buf, i)
            v, i = buf[i:i + n], i + n
        elif wt == 1:
            v, i = buf[i:i + 8], i + 8
        elif wt == 5:
            v, i = buf[i:i + 4], i + 4
        else:
            raise ValueError(f"wire type {wt}")
        yield num, wt, v


def pprof_summary(data):
    """(sample types as (type, unit) strings, string table) of a pprof."""
    prof = gzip.decompress(data)
    strings, types = [], []
    for num, _, v in fields(prof):
        if num == 6:
            strings.append(v.decode("utf-8", "replace"))
        elif num == 1:
            vt = {n: x for n, _, x in fields(v)}
            types.append((vt.get(1, 0), vt.get(2, 0)))
    return [(strings[t], strings[u]) for t, u in types], strings


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url, timeout=30):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.status, r.read()


def main():
    if os.geteuid() != 0:
        print("test_sidecar_pull: needs root (unshare, chroot)")
        return 77
    rootfs = os.environ.get("PYPROFD_ROOTFS") or subprocess.run(
        [os.path.join(SRC, "scripts", "python-rootfs.sh")], check=True, capture_output=True,
        text=True).stdout.strip()
    script, args, env_names, port_name, port = manifest()
    check(port == 7979 and "--web.listen-address=:7979" in args,
          f"the annotation's port '{port_name}' is the agent's :{port}")
    check(env_names == ["POD_NAME", "POD_NAMESPACE", "POD_UID", "NODE_NAME"],
          "the sidecar gets its identity from the downward API")

    tmp = tempfile.mkdtemp(prefix="sidecar-pull-")
    appdir = tempfile.mkdtemp(prefix="pyprofd-sidecar-", dir=os.path.join(rootfs, "tmp"))
    with open(os.path.join(appdir, "app.py"), "w", encoding="utf-8") as f:
        f.write(script)
    shutil.copy(os.path.join(SIDECAR, "pyprofd.yml"), os.path.join(tmp, "pyprofd.yml"))
    listen = free_port()
    kept = [a.replace("/etc/pyprofd/pyprofd.yml", os.path.join(tmp, "pyprofd.yml")) for a in args]
    argv = [PYPROFD] + kept + [f"--web.listen-address=127.0.0.1:{listen}"]
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "POD_NAME": "python-app-7c9d-x2x4q",
           "POD_NAMESPACE": "pyprofd-demo", "POD_UID": "00000000-0000-4000-8000-000000000001",
           "NODE_NAME": "node-1"}
    app = f"/tmp/{os.path.basename(appdir)}/app.py"
    # the "pod": app first (as after the native sidecar is up, order does
    # not matter to discovery), then the agent in the foreground
    pod_sh = ('chroot "$1" /usr/bin/python3.14 "$2" & shift 2; exec "$@"')
    log = open(os.path.join(tmp, "agent.log"), "w+", encoding="utf-8")
    pod = subprocess.Popen(["unshare", "--pid", "--fork", "--mount-proc", "--kill-child", "sh", "-c",
                            pod_sh, "sh", rootfs, app] + argv, env=env, stdout=log,
                           stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{listen}"
    try:
        deadline = time.monotonic() + 30
        ready = False
        while time.monotonic() < deadline and pod.poll() is None:
            try:
                ready = get(base + "/-/ready", 2)[0] == 200
            except OSError:
                pass
            if ready:
                break
            time.sleep(0.3)
        check(ready, "the sidecar answers /-/ready")
        active = []
        while ready and time.monotonic() < deadline:
            targets = json.loads(get(base + "/targets")[1])["targets"]
            active = [t for t in targets if t["state"] == "active"]
            if active:
                break
            time.sleep(0.5)
        check(len(active) == 1, f"one active target, the app ({len(active)})")
        if active:
            labels = active[0].get("labels", {})
            check(labels.get("service_name") == "pyprofd-demo/python-app",
                  f"service_name from the config's rule ({labels.get('service_name')})")
        if ready:
            status, data = get(base + "/debug/pprof/profile?seconds=3")
            check(status == 200 and data[:2] == b"\x1f\x8b", "GET /debug/pprof/profile?seconds=3: gzip")
            types, strings = pprof_summary(data)
            check(("cpu", "nanoseconds") in types, f"the sample type is the job's mode, cpu ({types})")
            for fn in ("handle", "checksum", "serve"):
                check(fn in strings, f"the app's function {fn} is in the profile")
            for value in ("pyprofd-demo/python-app", "python-app-7c9d-x2x4q", "pyprofd-demo"):
                check(value in strings, f"label value {value} is in the profile")
    finally:
        try:
            os.killpg(pod.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            pod.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(pod.pid, signal.SIGKILL)
            pod.wait()
        log.seek(0)
        agent_log = log.read()
        log.close()
        if failures:
            print(agent_log)
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(appdir, ignore_errors=True)
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
