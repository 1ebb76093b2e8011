# SPDX-License-Identifier: MIT
"""Real containers for the tests: runc bundles built at test time.

A Container is one runc container whose config.json starts from `runc spec`
(runc's own defaults: mounts, masked and read-only paths) and is changed the
way a Kubernetes pod spec would change it: the root filesystem, the process,
its capabilities (bounding, effective and permitted exactly the given set),
noNewPrivileges, which namespaces are new, joined or the host's, the cgroup
path, extra mounts, and a seccomp profile.

The seccomp profile is the container runtime's default: Docker's
profiles/seccomp/default.json (from Debian's golang-github-docker-docker-dev,
whose .deb scripts/seccomp-profile.sh fetches with apt and extracts into the
cache, without installing it; never copied into the tree), translated
into OCI linux.seccomp for the capability set in use, as the runtime does:
a rule whose includes name a capability the container lacks, or whose
excludes name one it has, is left out (also by architecture and kernel).

Every container lives under one runc state directory (STATE_ROOT) with an
id that carries the pid of the test that made it, so leftovers of a test
that was killed are found and deleted by the next run (cleanup_leftovers()).
delete() kills and deletes the container and removes the cgroup
directories its start created, in every hierarchy.
"""

import json
import os
import platform
import secrets
import shutil
import subprocess
import sys
import time

RUNC = shutil.which("runc") or "/usr/sbin/runc"
STATE_ROOT = "/run/pyprofd-test-runc"
SECCOMP_PROFILE_SH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                  "scripts", "seccomp-profile.sh")
ID_PREFIX = "pyprofd-test"

# The capabilities containerd and Docker give a container by default (an
# application container of a pod without a securityContext).
DEFAULT_CAPS = ["CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD",
                "CAP_NET_RAW", "CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP",
                "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE"]

_GOARCH = {"x86_64": "amd64", "aarch64": "arm64", "armv7l": "arm", "ppc64le": "ppc64le",
           "s390x": "s390x", "riscv64": "riscv64"}
_SECCOMP_ARCH = {"amd64": "SCMP_ARCH_X86_64", "arm64": "SCMP_ARCH_AARCH64",
                 "arm": "SCMP_ARCH_ARM", "ppc64le": "SCMP_ARCH_PPC64LE",
                 "s390x": "SCMP_ARCH_S390X", "riscv64": "SCMP_ARCH_RISCV64"}


def missing():
    """Why containers cannot run here, or None."""
    if os.geteuid() != 0:
        return "must run as root (runc, cgroups)"
    if not os.access(RUNC, os.X_OK):
        return "no runc: install runc (scripts/bootstrap.sh)"
    for tool in ("umoci", "mmdebstrap"):
        if not shutil.which(tool):
            return f"no {tool}: install {tool} (scripts/bootstrap.sh)"
    # no seccomp profile is a failure, not a skip: apt reaches the archive
    # wherever bootstrap.sh could install the packages (docker_seccomp_path()
    # raises with scripts/seccomp-profile.sh's reason)
    return None


_seccomp_path = None


def docker_seccomp_path():
    """The path of Docker's default seccomp profile, from
    scripts/seccomp-profile.sh (which fetches it the first time); raises
    RuntimeError with the script's own message when it cannot."""
    global _seccomp_path  # pylint: disable=global-statement
    if _seccomp_path is None:
        out = subprocess.run([SECCOMP_PROFILE_SH], capture_output=True, text=True, timeout=300,
                             check=False)
        sys.stderr.write(out.stderr)
        if out.returncode != 0 or not out.stdout.strip():
            raise RuntimeError("no Docker default seccomp profile: scripts/seccomp-profile.sh: "
                               f"exit {out.returncode}: "
                               f"{(out.stderr.strip().splitlines() or ['?'])[-1]}")
        _seccomp_path = out.stdout.strip()
    return _seccomp_path


def hex_id():
    """A container id as a runtime makes one: 64 hex digits."""
    return secrets.token_hex(32)


def runc(*args, timeout=30, check=True, **kw):
    out = subprocess.run([RUNC, "--root", STATE_ROOT, *args], capture_output=True, text=True,
                         timeout=timeout, **kw)
    if check and out.returncode != 0:
        raise RuntimeError(f"runc {' '.join(args)}: exit {out.returncode}: "
                           f"{out.stderr.strip()}")
    return out


def _kernel():
    parts = platform.release().split("-")[0].split(".")
    return tuple(int(p) for p in parts[:2] if p.isdigit())


def docker_seccomp(caps, path=None):
    """Docker's default profile (@path, or docker_seccomp_path()) as OCI
    linux.seccomp for capability set @caps."""
    with open(path or docker_seccomp_path()) as f:
        prof = json.load(f)
    goarch = _GOARCH.get(platform.machine(), platform.machine())
    native = _SECCOMP_ARCH[goarch]
    arches = [native]
    for m in prof.get("archMap") or []:
        if m["architecture"] == native:
            arches += m.get("subArchitectures") or []
    caps = set(caps)
    kernel = _kernel()
    out = {"defaultAction": prof["defaultAction"], "architectures": arches, "syscalls": []}
    if "defaultErrnoRet" in prof:
        out["defaultErrnoRet"] = prof["defaultErrnoRet"]
    for rule in prof["syscalls"]:
        inc = rule.get("includes") or {}
        exc = rule.get("excludes") or {}
        if inc.get("caps") and not set(inc["caps"]) <= caps:
            continue
        if inc.get("arches") and goarch not in inc["arches"]:
            continue
        if inc.get("minKernel"):
            want = tuple(int(p) for p in inc["minKernel"].split(".")[:2])
            if kernel < want:
                continue
        if exc.get("caps") and set(exc["caps"]) & caps:
            continue
        if exc.get("arches") and goarch in exc["arches"]:
            continue
        names = rule.get("names") or ([rule["name"]] if rule.get("name") else [])
        r = {"names": names, "action": rule["action"]}
        if rule.get("args"):
            r["args"] = [{k: a[k] for k in ("index", "value", "valueTwo", "op") if k in a}
                         for a in rule["args"]]
        if "errnoRet" in rule:
            r["errnoRet"] = rule["errnoRet"]
        out["syscalls"].append(r)
    return out


def seccomp_allows(seccomp, name):
    """Whether an unconditional rule of @seccomp allows syscall @name."""
    return any(name in r["names"] and r["action"] == "SCMP_ACT_ALLOW" and not r.get("args")
               for r in seccomp["syscalls"])


CAP_NUMBERS = {"CAP_CHOWN": 0, "CAP_DAC_OVERRIDE": 1, "CAP_DAC_READ_SEARCH": 2,
               "CAP_FOWNER": 3, "CAP_FSETID": 4, "CAP_KILL": 5, "CAP_SETGID": 6,
               "CAP_SETUID": 7, "CAP_SETPCAP": 8, "CAP_NET_BIND_SERVICE": 10,
               "CAP_NET_RAW": 13, "CAP_SYS_CHROOT": 18, "CAP_SYS_PTRACE": 19,
               "CAP_SYS_ADMIN": 21, "CAP_MKNOD": 27, "CAP_AUDIT_WRITE": 29,
               "CAP_SETFCAP": 31, "CAP_PERFMON": 38, "CAP_CHECKPOINT_RESTORE": 40}


def cap_mask(caps):
    return sum(1 << CAP_NUMBERS[c] for c in caps)


def process_security(pid):
    """What the kernel says about process @pid: capability sets (masks),
    NoNewPrivs, seccomp mode, whether its root is mounted read-only, and
    whether it is in this process's PID and network namespaces."""
    status = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            status[k] = v.strip()
    root_ro = None
    with open(f"/proc/{pid}/mountinfo") as f:
        for line in f:
            fields = line.split()
            if fields[4] == "/":
                root_ro = "ro" in fields[5].split(",")
    return {"CapBnd": int(status["CapBnd"], 16), "CapEff": int(status["CapEff"], 16),
            "CapPrm": int(status["CapPrm"], 16), "CapInh": int(status["CapInh"], 16),
            "NoNewPrivs": int(status["NoNewPrivs"]), "Seccomp": int(status["Seccomp"]),
            "Uid": int(status["Uid"].split()[1]), "root_ro": root_ro,
            "host_pid_ns": os.readlink(f"/proc/{pid}/ns/pid") == os.readlink("/proc/self/ns/pid"),
            "host_net_ns": os.readlink(f"/proc/{pid}/ns/net") == os.readlink("/proc/self/ns/net")}


def _cgroup_mounts():
    """Mount points of every cgroup hierarchy (v1 controllers, named, unified)."""
    mounts = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, right = line.split(" - ", 1)
            if right.split()[0] in ("cgroup", "cgroup2"):
                mounts.append(left.split()[4])
    return mounts


def _prefixes(path):
    """/a/b/c -> [/a, /a/b, /a/b/c]."""
    parts = [p for p in path.split("/") if p]
    return ["/" + "/".join(parts[:i]) for i in range(1, len(parts) + 1)]


def _rmdir_cgroup(path):
    """Removes cgroup directory @path unless another cgroup is below it."""
    for _ in range(50):  # an exiting task can hold the cgroup for a moment
        try:
            os.rmdir(path)
            return
        except FileNotFoundError:
            return
        except OSError:
            try:
                if any(e.is_dir() for e in os.scandir(path)):
                    return  # in use by a sibling: not ours to remove
            except FileNotFoundError:
                return
            time.sleep(0.02)


def cleanup_leftovers():
    """Deletes containers of earlier test runs whose process is gone."""
    if not os.path.isdir(STATE_ROOT):
        return
    out = runc("list", "--format", "json", check=False)
    for c in json.loads(out.stdout or "null") or []:
        cid = c["id"]
        if not cid.startswith(ID_PREFIX + "-"):
            continue
        try:
            owner = int(cid.split("-")[2])
        except (IndexError, ValueError):
            continue
        if owner != os.getpid() and os.path.exists(f"/proc/{owner}"):
            continue  # a test still running
        print(f"deleting container {cid} left by test pid {owner}", file=sys.stderr)
        runc("delete", "--force", cid, check=False)
        # its cgroups too, deepest first; a level another cgroup is below
        # (/kubepods/burstable holding someone else's pod) stays
        try:
            with open(os.path.join(c["bundle"], "config.json")) as f:
                path = json.load(f)["linux"]["cgroupsPath"]
        except (OSError, KeyError, ValueError):
            continue
        for p in reversed(_prefixes(path)):
            for mnt in _cgroup_mounts():
                _rmdir_cgroup(mnt + p)


class Container:
    """One runc container. Build with the arguments, start(), always delete()."""

    def __init__(self, tmp, name, rootfs, args, *, caps, env=(), readonly=True,
                 no_new_privs=True, namespaces=("pid", "ipc", "uts", "mount", "network"),
                 join=None, cgroups_path=None, mounts=(), seccomp=True, cwd="/"):
        self.name = name
        self.id = f"{ID_PREFIX}-{os.getpid()}-{name}-{secrets.token_hex(3)}"
        self.bundle = os.path.join(tmp, f"bundle-{name}")
        self.log_path = os.path.join(tmp, f"{name}.log")
        self.cgroups_path = cgroups_path or f"/{self.id}"
        self.pid = None
        self._existed = {}
        os.makedirs(self.bundle)
        subprocess.run([RUNC, "spec", "--bundle", self.bundle], check=True)
        with open(os.path.join(self.bundle, "config.json")) as f:
            spec = json.load(f)
        spec["root"] = {"path": os.path.abspath(rootfs), "readonly": readonly}
        spec["hostname"] = name
        proc = spec["process"]
        proc["terminal"] = False
        proc["args"] = list(args)
        proc["env"] = ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                       *env]
        proc["cwd"] = cwd
        proc["user"] = {"uid": 0, "gid": 0}
        proc["noNewPrivileges"] = no_new_privs
        proc["capabilities"] = {k: list(caps) for k in ("bounding", "effective", "permitted")}
        proc["capabilities"].update(inheritable=[], ambient=[])
        linux = spec["linux"]
        joined = dict(join or {})
        linux["namespaces"] = [{"type": t} for t in namespaces if t not in joined]
        linux["namespaces"] += [{"type": t, "path": p} for t, p in joined.items()]
        linux["cgroupsPath"] = self.cgroups_path
        self.caps = list(caps)
        self.seccomp = docker_seccomp(caps) if seccomp else None
        if self.seccomp:
            linux["seccomp"] = self.seccomp
        spec["mounts"] += list(mounts)
        with open(os.path.join(self.bundle, "config.json"), "w") as f:
            json.dump(spec, f, indent=1)
        self.spec = spec

    def start(self, ready_line=None, timeout=30):
        """runc run --detach; waits for @ready_line in the container's output."""
        os.makedirs(STATE_ROOT, exist_ok=True)
        for mnt in _cgroup_mounts():
            for p in _prefixes(self.cgroups_path):
                self._existed[(mnt, p)] = os.path.isdir(mnt + p)
        pid_file = os.path.join(self.bundle, "pid")
        with open(self.log_path, "w") as log:
            out = subprocess.run([RUNC, "--root", STATE_ROOT, "run", "--detach", "--bundle",
                                  self.bundle, "--pid-file", pid_file, self.id],
                                 stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                 timeout=timeout)
        if out.returncode != 0:
            raise RuntimeError(f"runc run {self.name}: exit {out.returncode}:\n{self.log()}")
        with open(pid_file) as f:
            self.pid = int(f.read())
        if ready_line:
            deadline = time.monotonic() + timeout
            while ready_line not in self.log():
                if time.monotonic() > deadline or not self.running():
                    raise RuntimeError(f"{self.name} not ready after {timeout} s "
                                       f"(running: {self.running()}):\n{self.log()}")
                time.sleep(0.05)
        return self

    def log(self):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def state(self):
        out = runc("state", self.id, check=False)
        return json.loads(out.stdout)["status"] if out.returncode == 0 else None

    def running(self):
        return self.state() == "running"

    def exec(self, *args, timeout=30):
        """runc exec: the container's own process settings (capabilities, seccomp)."""
        return runc("exec", self.id, *args, timeout=timeout, check=False)

    def stop(self, timeout=15):
        """SIGTERM, and wait until it stopped (SIGKILL after @timeout)."""
        if self.state() != "running":
            return
        runc("kill", self.id, "TERM", check=False)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.state() != "running":
                return
            time.sleep(0.05)
        runc("kill", self.id, "KILL", check=False)

    def delete(self):
        """Kills and deletes the container and removes the cgroups it made;
        safe to call twice, and on a container that never started."""
        runc("delete", "--force", self.id, check=False, timeout=60)
        for (mnt, p), existed in sorted(self._existed.items(), key=lambda kv: -len(kv[0][1])):
            if not existed:
                _rmdir_cgroup(mnt + p)

    def cgroups_left(self):
        """Directories of this container's cgroup path still present (should be [])."""
        return [mnt + p for mnt in _cgroup_mounts() for p in _prefixes(self.cgroups_path)
                if os.path.isdir(mnt + p) and not self._existed.get((mnt, p), False)]
