# SPDX-License-Identifier: MIT
"""pyprofd in real containers (runc), as Kubernetes runs it.

The agent runs from the image filesystem deploy/container/rootfs.sh builds
(the Containerfile's runtime stage without a container engine; built, or
found in its cache, by the first step) against CPython 3.14 targets that run
in runc containers of their own, whose root is the forky test rootfs
(read-only), each PID 1 of its own PID namespace, in Kubernetes-shaped
cgroups: /kubepods/burstable/pod<uid>/<64 hex> (cgroupfs driver) and
/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice/
cri-containerd-<64 hex>.scope (systemd driver's names; runc's cgroupfs
driver takes any path).

The agent's container is the DaemonSet's securityContext translated to
config.json: uid 0, noNewPrivileges, read-only root, the host PID
namespace (no pid namespace), the host network (the test reaches its HTTP
port on 127.0.0.1: a pod's own network namespace would need a veth the test
does not build), Docker's default seccomp profile for the capability set
in use (runclib.docker_seccomp), capabilities bounding/effective/permitted
exactly that set, a tmpfs on /tmp, and the config bind-mounted read-only on
/etc/pyprofd as a ConfigMap would be; its process is the image's
ENTRYPOINT + CMD from the image config umoci wrote.

Steps (one scenario, livelib.Scenario; each reported with its time):

    image                  rootfs.sh built the image (cached); the runtime
                           package list is what the Containerfile says;
                           the binary runs in it
    ptrace_checkpoint      caps {SYS_PTRACE, CHECKPOINT_RESTORE}: both
                           targets active in /targets with their container
                           id and in-container PID 1; a 2 s profile holds
                           each target's function; `pyprofd probe` run in
                           the agent's container opens python via map_files
    ptrace                 caps {SYS_PTRACE}: the same, and probe opens via
                           /proc/PID/root; a binary with the start-up
                           capability check names CAP_CHECKPOINT_RESTORE
                           missing here, and nothing with both
    no_caps                no capabilities: the targets are not sampled,
                           their reason names CAP_SYS_PTRACE, and so does
                           the agent's stderr (each agent step also checks
                           the kernel's view of its process: capability
                           sets, NoNewPrivs, seccomp, read-only root,
                           namespaces)
    native                 `record --native=full` in the agent's container:
                           with {SYS_PTRACE} the seccomp profile refuses
                           perf_event_open, and record falls back to
                           <native> markers saying so (and probe); with
                           SYS_PTRACE and the capability the profile allows
                           it with (PERFMON; SYS_ADMIN in Debian's older
                           copy) the profile has C frames
    cgroupns               caps {SYS_PTRACE} and a cgroup namespace of its
                           own (containerd's default on cgroup v2 nodes): the
                           targets' cgroup paths read relative (/../..), and
                           their container ids are still found
    sidecar                one shared PID namespace: the app container
                           (python3.14, PID 1) makes it, the pyprofd
                           container joins it (caps {SYS_PTRACE}, env
                           POD_NAME/POD_NAMESPACE/NODE_NAME as the downward
                           API sets them, external_labels from them with
                           --config.expand-env); a profile fetched from the
                           host carries those labels and the app's function
    cleanup                every container deleted, every cgroup it made gone

Needs root, runc, umoci, mmdebstrap and golang-go (scripts/bootstrap.sh),
Docker's default seccomp profile (scripts/seccomp-profile.sh fetches it with
apt the first time: a failure to fetch it fails the test), and the forky
rootfs (scripts/python-rootfs.sh); without root or a tool it exits 77
(skipped) saying which.
Run by ctest as test_containers (label integration), or by hand:
    /usr/bin/python3 tests/containers/test_containers.py [-v]
"""

import json
import os
import re
import subprocess
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, HERE)
import livelib  # noqa: E402
import runclib  # noqa: E402

ROOTFS_SH = os.path.join(livelib.SOURCE_DIR, "deploy", "container", "rootfs.sh")
READY = "pyprofd-target: ready"
TARGET_DIR = "/pyprofd-targets"  # exists in the forky rootfs: no mount point is created in it
WORKLOAD = '''\
import signal
import sys


def hot_in_kubepods_pod(n):
    return sum(i * i for i in range(n))


def hot_in_systemd_slice(n):
    return sum(i * i for i in range(n))


def hot_in_sidecar_app(n):
    return sum(i * i for i in range(n))


signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # PID 1 has no default action
work = globals()[sys.argv[1]]
print("pyprofd-target: ready", flush=True)
while True:
    work(2000)
'''


def pod_uid():
    return str(uuid.uuid4())


def kube_cgroup(uid, cid):
    return f"/kubepods/burstable/pod{uid}/{cid}"


def systemd_cgroup(uid, cid):
    u = uid.replace("-", "_")
    return (f"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{u}.slice/"
            f"cri-containerd-{cid}.scope")


def entry_container_id(e):
    return e.get("container_id") or e.get("discovered_labels", {}).get("__container_id__")


def entry_nspid(e):
    v = e.get("nspid")
    if v is None:
        v = e.get("discovered_labels", {}).get("__meta_process_nspid")
    return None if v is None else int(v)


class ContainersTest(livelib.Scenario):
    containers = []

    @classmethod
    def setUpClass(cls):
        cls.tmp = livelib.scratch()
        os.chmod(cls.tmp, 0o755)
        runclib.cleanup_leftovers()
        cls.token = f"ctr{os.getpid()}"
        cls.workdir = os.path.join(cls.tmp, "workload")
        os.makedirs(cls.workdir)
        cls.script = f"{cls.token}_busy.py"
        with open(os.path.join(cls.workdir, cls.script), "w") as f:
            f.write(WORKLOAD)
        cls.forky = livelib.rootfs()
        cls.opened_via = {}
        cls.image = None
        cls.targets = {}
        try:
            cls.build_image()
            for shape, fn in (("kubepods", "hot_in_kubepods_pod"),
                              ("systemd", "hot_in_systemd_slice")):
                cid = runclib.hex_id()
                uid = pod_uid()
                path = kube_cgroup(uid, cid) if shape == "kubepods" else systemd_cgroup(uid, cid)
                c = cls.python_container(f"target-{shape}", fn, path)
                cls.targets[shape] = {"container": c, "id": cid, "function": fn, "cgroup": path}
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        for c in reversed(cls.containers):
            try:
                c.delete()
            except Exception as e:  # the others still go
                print(f"warning: deleting {c.name}: {e}", file=sys.stderr)

    # --- helpers --------------------------------------------------------------

    @classmethod
    def track(cls, c):
        """Deleted at the end (tearDownClass), also when the run is interrupted:
        livelib.run() stops every livelib.Target (stop_all()), here keyed by
        the container's id, before the container even starts."""
        cls.containers.append(c)
        livelib.Target(c.name, "-", "runc", c.id, c.log_path, stop=c.delete)
        return c

    @classmethod
    def build_image(cls):
        out = os.path.join(os.path.dirname(os.path.abspath(livelib.BINARY)), "container-image")
        started = time.monotonic()
        proc = subprocess.run([ROOTFS_SH, "--binary", livelib.BINARY, "--out", out],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              timeout=1200)
        sys.stderr.write(proc.stderr)
        if proc.returncode != 0:
            raise RuntimeError(f"rootfs.sh failed ({proc.returncode})")
        cls.image = proc.stdout.strip()
        cls.image_seconds = time.monotonic() - started
        with open(os.path.join(cls.image, "bundle", "config.json")) as f:
            cls.image_process = json.load(f)["process"]

    @classmethod
    def python_container(cls, name, function, cgroups_path, namespaces=None):
        """A CPython 3.14 workload running @function, PID 1 of its own PID namespace."""
        kw = {"namespaces": namespaces} if namespaces else {}
        c = runclib.Container(
            cls.tmp, name, cls.forky,
            ["/usr/bin/python3.14", f"{TARGET_DIR}/{cls.script}", function],
            caps=runclib.DEFAULT_CAPS, no_new_privs=False, cgroups_path=cgroups_path,
            env=["HOME=/root", "LANG=C.UTF-8"],
            mounts=[{"destination": TARGET_DIR, "type": "bind", "source": cls.workdir,
                     "options": ["rbind", "ro"]},
                    {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs",
                     "options": ["nosuid", "nodev", "mode=1777", "size=16m"]}], **kw)
        cls.track(c)
        c.start(READY)
        return c

    def agent_container(self, name, caps, config, args=None, env=(), join=None, cgroupns=False):
        """pyprofd from the image, with the DaemonSet's securityContext and @caps
        (and its own cgroup namespace: what containerd gives a pod on cgroup v2)."""
        port = livelib.free_port()
        confdir = os.path.join(self.tmp, f"config-{name}")
        os.makedirs(confdir)
        with open(os.path.join(confdir, "pyprofd.yml"), "w") as f:
            f.write(config.replace("{port}", str(port)))
        os.chmod(os.path.join(confdir, "pyprofd.yml"), 0o644)
        namespaces = ("ipc", "uts", "mount") + (("pid",) if join else ()) + \
            (("cgroup",) if cgroupns else ())
        c = runclib.Container(
            self.tmp, name, os.path.join(self.image, "bundle", "rootfs"),
            args or self.image_process["args"], caps=caps, env=env,
            namespaces=namespaces, join=join,
            cgroups_path=kube_cgroup(pod_uid(), runclib.hex_id()),
            mounts=[{"destination": "/etc/pyprofd", "type": "bind", "source": confdir,
                     "options": ["rbind", "ro"]},
                    {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs",
                     "options": ["nosuid", "nodev", "noexec", "mode=1777", "size=16m"]}])
        self.track(c)
        c.start()
        c.http = AgentHttp(c, f"http://127.0.0.1:{port}")
        c.http.wait_http()
        return c

    def check_security(self, agent, caps, host_pid_ns=True):
        """The kernel's view of the agent's process is the securityContext asked for."""
        sec = runclib.process_security(agent.pid)
        want = runclib.cap_mask(caps)
        self.assertEqual((sec["CapBnd"], sec["CapEff"], sec["CapPrm"], sec["CapInh"]),
                         (want, want, want, 0), sec)
        self.assertEqual((sec["Uid"], sec["NoNewPrivs"], sec["Seccomp"], sec["root_ro"]),
                         (0, 1, 2, True), sec)
        self.assertEqual((sec["host_pid_ns"], sec["host_net_ns"]), (host_pid_ns, True), sec)

    def daemonset_config(self, native=None):
        job_native = f"    native: {native}\n" if native else ""
        return f"""\
global:
  sample_rate: 100
  mode: cpu
  profile_interval: 1m
discovery:
  refresh_interval: 1s
  min_process_age: 200ms
profile_configs:
  - job_name: containers
{job_native}    relabel_configs:
      - source_labels: [__meta_process_commandline]
        regex: '.*/{self.token}_busy[.]py.*'
        action: keep
server:
  listen_address: 127.0.0.1:{{port}}
"""

    def profile_raw(self, agent, name):
        status, body = agent.http.get("/debug/pprof/profile?seconds=2", timeout=30)
        self.assertEqual(status, 200, body[:300])
        path = os.path.join(self.tmp, name)
        with open(path, "wb") as f:
            f.write(body)
        env = livelib.go_env(self.tmp)
        out = subprocess.run([livelib.go_binary(), "tool", "pprof", "-symbolize=none", "-raw",
                              path], capture_output=True, text=True, timeout=120, env=env)
        self.assertEqual(out.returncode, 0, out.stderr)
        return out.stdout

    def probe_route(self, agent, pid):
        """How `pyprofd probe`, run in @agent's container, opens python's file."""
        out = agent.exec(self.image_process["args"][0], "probe", str(pid))
        m = re.search(r"opened via (\w+)", out.stdout)
        return (m.group(1) if m else None), out.stdout + out.stderr

    def check_sampled(self, caps_name, caps):
        agent = self.agent_container(f"agent-{caps_name}", caps, self.daemonset_config())
        try:
            self.check_security(agent, caps)
            for shape, t in self.targets.items():
                e = agent.http.wait_state(t["container"].pid, "active", timeout=15)
                self.assertEqual(entry_container_id(e), t["id"], f"{shape}: {e}")
                self.assertEqual(entry_nspid(e), 1, f"{shape}: {e}")
                self.assertEqual(e["discovered_labels"].get("__meta_process_cgroup_path"),
                                 t["cgroup"], f"{shape}: {e}")
            livelib.note(f"{caps_name}: /targets: both active, container ids and nspid 1 "
                         f"(top-level fields: {'container_id' in e and 'nspid' in e})")
            raw = self.profile_raw(agent, f"{caps_name}.pb.gz")
            for t in self.targets.values():
                self.assertIn(t["function"], raw)
            via, text = self.probe_route(agent, self.targets["kubepods"]["container"].pid)
            livelib.note(f"{caps_name}: probe in the agent container opens python via {via}")
            self.opened_via[caps_name] = via
            self.assertIsNotNone(via, text)
            # the agent does not show its own route yet; once /targets does, it must agree
            e = agent.http.targets()[self.targets["kubepods"]["container"].pid]
            if "opened_via" in e:
                self.assertEqual(e["opened_via"], via, e)
            # the start-up check (when the binary has it) names what is missing, only that
            agent.stop()
            missing = [line for line in agent.log().splitlines() if "missing capability" in line]
            livelib.note(f"{caps_name}: start-up warnings: {[m[:80] for m in missing]}")
            for cap in ("CAP_SYS_PTRACE", "CAP_CHECKPOINT_RESTORE"):
                named = [m for m in missing if cap in m.split("(")[0]]
                self.assertEqual(bool(named), bool(missing) and cap not in caps, missing)
            return via
        finally:
            agent.delete()
            self.assertEqual(agent.cgroups_left(), [])

    # --- steps ------------------------------------------------------------------

    def step_image(self):
        livelib.note(f"image ready in {self.image_seconds:.1f} s: {self.image}")
        listed = subprocess.run([ROOTFS_SH, "--print-packages"], capture_output=True,
                                text=True, check=True).stdout.split()
        config = subprocess.run([ROOTFS_SH, "--print-image-config"], capture_output=True,
                                text=True, check=True).stdout.splitlines()
        build = {line.split()[1] for line in config if line.startswith("build-package ")}
        # the build stage has every library bootstrap.sh installs to build
        # pyprofd here (but cmocka, for the tests the image does not build)
        with open(os.path.join(livelib.SOURCE_DIR, "scripts", "bootstrap.sh")) as f:
            boot = f.read()
        libs = boot.split("\t# libraries\n", 1)[1].split("\t# tooling\n", 1)[0]
        libs = {line.split()[0] for line in libs.splitlines() if line.strip()} - {"libcmocka-dev"}
        self.assertLessEqual(libs, build, "build stage lacks libraries bootstrap.sh installs")
        self.assertIn("libcurl4", listed)
        # no -dev package in the runtime stage
        self.assertFalse([p for p in listed if p.endswith("-dev")], listed)
        rootfs = os.path.join(self.image, "bundle", "rootfs")
        status = os.path.join(rootfs, "var", "lib", "dpkg", "status")
        with open(status) as f:
            installed = set(re.findall(r"^Package: (\S+)", f.read(), re.M))
        self.assertLessEqual(set(listed), installed)
        self.assertFalse([p for p in installed if p.endswith("-dev")])
        self.assertEqual(self.image_process["user"]["uid"], 0)
        self.assertEqual(self.image_process["args"],
                         ["/usr/bin/pyprofd", "agent", "--config.file=/etc/pyprofd/pyprofd.yml"])
        self.assertTrue(os.path.isfile(os.path.join(rootfs, "etc/pyprofd/pyprofd.yml")))
        with open(os.path.join(self.image, "oci", "index.json")) as f:
            tags = [m.get("annotations", {}).get("org.opencontainers.image.ref.name")
                    for m in json.load(f)["manifests"]]
        self.assertIn("pyprofd", tags)

    def step_ptrace_checkpoint(self):
        self.check_sampled("ptrace_checkpoint", ["CAP_SYS_PTRACE", "CAP_CHECKPOINT_RESTORE"])
        self.assertEqual(self.opened_via["ptrace_checkpoint"], "map_files")

    def step_ptrace(self):
        seccomp = runclib.docker_seccomp(["CAP_SYS_PTRACE"])
        self.assertTrue(runclib.seccomp_allows(seccomp, "process_vm_readv"))
        self.assertFalse(runclib.seccomp_allows(runclib.docker_seccomp([]), "process_vm_readv"))
        self.check_sampled("ptrace", ["CAP_SYS_PTRACE"])
        self.assertEqual(self.opened_via["ptrace"], "root")
        self.assertNotEqual(self.opened_via.get("ptrace_checkpoint"), self.opened_via["ptrace"])

    def native_record(self, agent):
        """`pyprofd record --native=full -d 1` of the kubepods target, run in @agent's
        container: (its stderr, the folded profile)."""
        pyprofd = self.image_process["args"][0]
        pid = str(self.targets["kubepods"]["container"].pid)
        rec = agent.exec(pyprofd, "record", "--native=full", "-d", "1", "-o", "/tmp/native.txt",
                         pid, timeout=60)
        self.assertEqual(rec.returncode, 0, rec.stdout + rec.stderr)
        folded = agent.exec("/bin/cat", "/tmp/native.txt").stdout
        self.assertIn(self.targets["kubepods"]["function"], folded, rec.stderr)
        return rec.stderr, folded

    def agent_native(self, agent, permitted):
        """The agent itself with a job's native: full: each target "full" in /targets and
        C frames in its profile, or "markers: <why>" and counted as a fallback."""
        entries = {shape: agent.http.wait_state(t["container"].pid, "active", timeout=15)
                   for shape, t in self.targets.items()}
        for shape, e in entries.items():
            if permitted:
                self.assertEqual(e.get("native"), "full", f"{shape}: {e}")
                # the kernel drives: no idle check
                self.assertNotIn("idle_check", e, f"{shape}: {e}")
            else:
                self.assertRegex(e.get("native", ""), r"^markers: perf_event_open refused "
                                 r"\(EPERM\): a seccomp filter", f"{shape}: {e}")
                # idle threads: the same refusal, so /proc's schedstat (issue 26)
                self.assertRegex(e.get("idle_check", ""), r"^schedstat: perf_event_open "
                                 r"refused \(EPERM\): a seccomp filter", f"{shape}: {e}")
        raw = self.profile_raw(agent, f"native-{permitted}.pb.gz")
        for t in self.targets.values():
            self.assertIn(t["function"], raw)
        metrics = agent.http.metrics()
        fallbacks = agent.http.metric('pyprofd_native_fallbacks_total{job="containers"}', metrics)
        joined = agent.http.metric(
            'pyprofd_native_samples_total{job="containers",outcome="joined"}', metrics)
        self.assertEqual(fallbacks, 0 if permitted else len(self.targets), metrics[-3000:])
        if permitted:
            self.assertIn("Py_RunMain", raw)
            self.assertGreater(joined, 0)
        else:
            self.assertNotIn("Py_RunMain", raw)
            self.assertIn("<native>", raw)
            self.assertEqual(joined, 0)
            self.assertIn("native: full refused, <native> markers instead", agent.log())
            self.assertIn("idle threads: perf_event_open refused (EPERM)", agent.log())
            self.assertEqual(agent.http.metric(
                'pyprofd_idle_check_targets{job="containers",method="schedstat"}', metrics),
                len(self.targets), metrics[-3000:])
        livelib.note(f"agent native ({'permitted' if permitted else 'refused'}): "
                     f"{next(iter(entries.values())).get('native', '?')[:100]}; joined {joined}, "
                     f"fallbacks {fallbacks}")

    def step_native(self):
        """--native=full in the agent's container: with CAP_SYS_PTRACE alone the runtime's
        seccomp profile refuses perf_event_open, and record falls back to <native>
        markers saying why (probe says so too); with the capability the profile
        allows it with added (CAP_PERFMON, or CAP_SYS_ADMIN in older ones), C frames"""
        self.assertFalse(runclib.seccomp_allows(runclib.docker_seccomp(["CAP_SYS_PTRACE"]),
                                                "perf_event_open"))
        # the capability the profile allows perf_event_open with: CAP_PERFMON in
        # Docker >= 23 and containerd, CAP_SYS_ADMIN in the older profile Debian ships
        with open(runclib.docker_seccomp_path()) as f:
            rules = json.load(f)["syscalls"]
        perf_caps = next(r.get("includes", {}).get("caps") for r in rules
                         if "perf_event_open" in (r.get("names") or []) and
                         r["action"] == "SCMP_ACT_ALLOW")
        livelib.note(f"native: the seccomp profile allows perf_event_open with {perf_caps}")
        with_perf = ["CAP_SYS_PTRACE"] + [c for c in perf_caps if c != "CAP_SYS_PTRACE"]
        self.assertTrue(runclib.seccomp_allows(runclib.docker_seccomp(with_perf),
                                               "perf_event_open"))
        pyprofd = self.image_process["args"][0]
        pid = str(self.targets["kubepods"]["container"].pid)
        for caps in (["CAP_SYS_PTRACE"], with_perf):
            name = "agent-native-" + "-".join(c[4:].lower() for c in caps)
            agent = self.agent_container(name, caps, self.daemonset_config(native="full"))
            try:
                self.check_security(agent, caps)
                self.agent_native(agent, caps == with_perf)
                probe = agent.exec(pyprofd, "probe", pid).stdout
                err, folded = self.native_record(agent)
                if caps != with_perf:
                    self.assertIn("perf_event_open refused (EPERM): a seccomp filter", probe)
                    self.assertIn("--native=full falls back to <native> markers here", probe)
                    self.assertIn("pyprofd: no native frames: perf_event_open refused (EPERM)",
                                  err)
                    self.assertNotIn("Py_RunMain", folded)
                else:
                    self.assertIn("  perf      permitted", probe)
                    self.assertIn("C frames from the kernel's samples", err)
                    self.assertIn("Py_RunMain", folded, err)
                livelib.note(f"{name}: " + next((line for line in err.splitlines()
                                                 if "native" in line), "?")[:160])
            finally:
                agent.delete()
                self.assertEqual(agent.cgroups_left(), [])

    def step_no_caps(self):
        agent = self.agent_container("agent-no-caps", [], self.daemonset_config())
        problems = []  # all of them, not only the first
        try:
            self.check_security(agent, [])
            for shape, t in self.targets.items():
                e = agent.http.wait_for(t["container"].pid,
                                        lambda e: e is not None and e["state"] != "young",
                                        15, "looked at")
                self.assertNotEqual(e["state"], "active", f"{shape}: {e}")
                livelib.note(f"no caps: {shape}: {e['state']}: {e.get('reason')}")
                if "CAP_SYS_PTRACE" not in e.get("reason", ""):
                    problems.append(f"{shape}: the reason does not name CAP_SYS_PTRACE: {e}")
            agent.stop()
            named = [line for line in agent.log().splitlines() if "CAP_SYS_PTRACE" in line]
            livelib.note(f"no caps: stderr lines naming CAP_SYS_PTRACE: {len(named)}"
                         + (f", first: {named[0]}" if named else ""))
            if not named:
                problems.append("the agent's stderr does not name CAP_SYS_PTRACE")
        finally:
            agent.delete()
            self.assertEqual(agent.cgroups_left(), [])
        self.assertFalse(problems, "\n".join(problems))

    def step_cgroupns(self):
        agent = self.agent_container("agent-cgroupns", ["CAP_SYS_PTRACE"],
                                     self.daemonset_config(), cgroupns=True)
        try:
            self.assertNotEqual(os.readlink(f"/proc/{agent.pid}/ns/cgroup"),
                                os.readlink("/proc/self/ns/cgroup"))
            for shape, t in self.targets.items():
                seen = agent.exec("/bin/cat", f"/proc/{t['container'].pid}/cgroup").stdout
                e = agent.http.wait_state(t["container"].pid, "active", timeout=15)
                livelib.note(f"cgroupns: {shape}: the agent reads "
                             f"{seen.splitlines()[0] if seen else None!r}; container id "
                             f"{'found' if entry_container_id(e) else 'missing'}")
                self.assertEqual(entry_container_id(e), t["id"], f"{shape}: {e}\n{seen}")
        finally:
            agent.delete()
            self.assertEqual(agent.cgroups_left(), [])

    def step_sidecar(self):
        uid = pod_uid()
        app_id, agent_id = runclib.hex_id(), runclib.hex_id()
        app = self.python_container("sidecar-app", "hot_in_sidecar_app",
                                    kube_cgroup(uid, app_id))
        pod = {"POD_NAME": f"shop-{self.token}", "POD_NAMESPACE": "checkout",
               "NODE_NAME": "node-7"}
        config = """\
global:
  sample_rate: 100
  mode: cpu
  profile_interval: 1m
  external_labels:
    pod: ${POD_NAME}
    namespace: ${POD_NAMESPACE}
    node: ${NODE_NAME}
discovery:
  refresh_interval: 1s
  min_process_age: 200ms
profile_configs:
  - job_name: sidecar
server:
  listen_address: 127.0.0.1:{port}
"""
        args = [*self.image_process["args"], "--config.expand-env"]
        agent = None
        try:
            agent = self.agent_container(
                "sidecar-pyprofd", ["CAP_SYS_PTRACE"], config, args=args,
                env=[f"{k}={v}" for k, v in pod.items()],
                join={"pid": f"/proc/{app.pid}/ns/pid"})
            self.check_security(agent, ["CAP_SYS_PTRACE"], host_pid_ns=False)
            self.assertEqual(os.readlink(f"/proc/{agent.pid}/ns/pid"),
                             os.readlink(f"/proc/{app.pid}/ns/pid"))
            # in the shared namespace the app is PID 1
            e = agent.http.wait_state(1, "active", timeout=15)
            self.assertEqual(entry_container_id(e), app_id, e)
            for k, v in (("pod", pod["POD_NAME"]), ("namespace", pod["POD_NAMESPACE"]),
                         ("node", pod["NODE_NAME"])):
                self.assertEqual(e["labels"].get(k), v, e)
            raw = self.profile_raw(agent, "sidecar.pb.gz")
            self.assertIn("hot_in_sidecar_app", raw)
            for t in self.targets.values():  # other pods' processes are not in its namespace
                self.assertNotIn(t["function"], raw)
            for k, v in (("pod", pod["POD_NAME"]), ("namespace", pod["POD_NAMESPACE"]),
                         ("node", pod["NODE_NAME"])):
                self.assertIn(f"{k}:[{v}]", raw)
            livelib.note(f"sidecar: app is pid 1 in the shared namespace, host pid {app.pid}; "
                         f"the profile carries pod/namespace/node labels")
        finally:
            if agent is not None:
                agent.delete()
            app.delete()
        self.assertEqual(app.cgroups_left(), [])

    def step_cleanup(self):
        for t in self.targets.values():
            t["container"].delete()
        left = runclib.runc("list", "--format", "json").stdout
        mine = [c["id"] for c in json.loads(left or "null") or []
                if c["id"].startswith(f"{runclib.ID_PREFIX}-{os.getpid()}-")]
        self.assertEqual(mine, [])
        for c in self.containers:
            self.assertEqual(c.cgroups_left(), [], c.name)


class _Alive:
    """What livelib.Agent asks of its process (poll(), returncode), for a container."""

    def __init__(self, c):
        self.c = c
        self.returncode = None

    def poll(self):
        if self.c.running():
            return None
        self.returncode = self.c.state() or "deleted"
        return self.returncode


class AgentHttp(livelib.Agent):
    """livelib.Agent's HTTP helpers (get, targets, wait_for, ...) for an
    agent that runs in container @c and listens on @base (host network)."""

    def __init__(self, c, base):  # pylint: disable=super-init-not-called
        self.name, self.base, self.proc, self.c = c.name, base, _Alive(c), c

    def log(self):
        return self.c.log()


if __name__ == "__main__":
    why = runclib.missing()
    if why:
        print(f"test_containers: {why}", file=sys.stderr)
        sys.exit(77)
    livelib.run(needs=("root", "rootfs", "go"))
