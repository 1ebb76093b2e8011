# SPDX-License-Identifier: MIT
"""The real agent with discovery.kubernetes against the fake API server.

`pyprofd agent` (livelib.BINARY) runs with discovery.kubernetes pointed at
fake_apiserver.py on loopback HTTPS (api_server, node_name,
bearer_token_file, tls_config.ca_file in its config; a 1 s refresh). Its
targets are hotspot.py under CPython 3.14 from the test rootfs, each
but one moved into a Kubernetes-shaped cgroup (cgroupfs driver):

    <cgroup2 mount>/pyprofd-kube-<token>/kubepods/burstable/pod<uid>/<64 hex>

so that its /proc/PID/cgroup names the container id its pod's
containerStatuses give (containerd://<id>). The host is cgroup v1 hybrid:
pyprofd takes the unified ("0::") path when it is not "/"; without a
unified mount the name=systemd hierarchy is used. Every cgroup made is
removed again (the process moved back out first), also when a test fails or
the run is interrupted (the targets' stop functions do it, and livelib stops
every target on the way out).

Targets (file <token>_<role>.py; pods in namespace shop on node-a; plain runs
as PID 1 of its own PID and mount namespaces, the others chroot'ed):

    cart     pod cart-<token> (ReplicaSet, app=cart, pod-template-hash,
             annotation pyroscope.io/service_name=shop-cart, an envoy
             sidecar), container cart; the pod is on the server from the start
    plain    pod plain-<token> (StatefulSet, app=plain, no annotation),
             container worker; on the server from the start
    early    pod early-<token>, container early: the pod comes later
    orphan   pod orphan-<token>, container orphan: the pod comes later
    host     no container

Jobs of the agent (first that keeps wins):

    pods     this run's files with a pod uid (Parca-style rules as in
             deploy/kubernetes/components/parca/pyprofd.yml: phase drop,
             namespace/pod/container/node, labelmap of pod labels, labeldrop
             of pod_template_hash)
    all      this run's early and host files, pod or not

Steps (one agent, in order; livelib.Scenario):

    pods         cart and plain active in job pods: container_id, nspid,
                 the exact __meta_kubernetes_* discovered labels (the
                 annotation's value "<hidden>"), the exact final labels;
                 service_name from the annotation, else <namespace>/<container>
    host         the host target: active in job all, no container id, no
                 __meta_kubernetes_* label
    before_pod   early is sampled in job all without pod labels, orphan is
                 dropped (job pods keeps pods only); both pods are added:
                 within two refreshes both are active in job pods with their
                 pod's labels (an earlier job keeps them now: judged again)
    kubernetes   /targets' kubernetes object (synced, pods, containers, the
                 URL and node) and /metrics (pyprofd_kubernetes_up 1, pods,
                 containers, requests_total{outcome="ok"}, watch events by
                 type), which passes `promtool check metrics`
    profile      GET /debug/pprof/profile?seconds=2: every sample of each
                 target carries exactly that target's labels (decoded here),
                 and `go tool pprof -tagfocus=pod=...` picks one target's samples
    modified     plain's pod changes where no label shows (a condition's
                 time): its target is not judged again; its readiness flips
                 four times: the target stays attached, its labels and window
                 whole; then it gets a label (MODIFIED): its target's labels
                 follow within a second, in place (the same target)
    deleted      plain's pod is DELETED: the agent's pod count drops, the
                 container id stays (grace), and the target keeps its labels.
                 The grace (60 s) is not configurable in the agent (struct
                 kube_opts has grace_ns, daemon/podmeta.c never sets it and
                 the config has no key), so its end is not waited for here
    reload       a reload that keeps discovery.kubernetes as it was keeps the
                 client (no new list); server.show_sensitive_labels shows the
                 annotation's value; every target is judged again, plain still
                 labelled from its pod in grace

and on their own, each with its own agent:

    UnknownCa      the server's certificate is not from tls_config.ca_file:
                   sampling without pod labels, last_error names the URL, up
                   0, no list reached the server; a reload with the right CA
                   starts the client again and the pod's labels come
    Misconfigured  discovery.kubernetes.enabled with no api_server and no
                   KUBERNETES_SERVICE_HOST in the agent's environment: the
                   agent samples all the same (no pod labels), /targets'
                   kubernetes object says why, pyprofd_kubernetes_up is 0, and
                   the problem is logged once

Root (cgroups, chroot), the rootfs, go, promtool and openssl are needed
(else exit 77). Run by ctest as test_agent_pods (label integration), or by
hand:
    /usr/bin/python3 tests/kube/test_agent_pods.py [-v]
"""

import collections
import concurrent.futures
import gzip
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, HERE)
import fake_apiserver as fake  # noqa: E402
import livelib  # noqa: E402

NODE = "node-a"
OTHER = "node-b"
NS = "shop"
REFRESH_S = 1.0
RELABEL_S = 2 * REFRESH_S + 1.0  # "within two refreshes", plus the watch's delivery
PROMTOOL = "/usr/bin/promtool"
TOKEN = f"kp{os.getpid()}"       # this run's files, pods and cgroups
API_TOKEN = f"api-token-{TOKEN}"
M = "__meta_kubernetes_"
ROLES = ("cart", "plain", "early", "orphan", "host")
HOT = {"cart": "alpha", "plain": "beta", "early": "gamma", "orphan": "alpha", "host": "beta"}
# plain runs as PID 1 of its own PID and mount namespaces, as in a pod; the others chroot'ed
MODE = {"cart": "chroot", "plain": "container", "early": "chroot", "orphan": "chroot",
        "host": "chroot"}


# --- cgroups ----------------------------------------------------------------------

def cgroup_lines(pid):
    with open(f"/proc/{pid}/cgroup") as f:
        return f.read().splitlines()


class KubeCgroups:
    """Kubernetes-shaped cgroups (the kubelet's cgroupfs driver) under one
    directory of this run, in the cgroup2 mount when the host has one (a
    hybrid host: /sys/fs/cgroup/unified), else in the v1 name=systemd
    hierarchy. place() moves a process in; release() moves it back where it
    was and removes every cgroup of this run that is then empty. Removing a
    directory that still holds a process fails (EBUSY): release() moves out
    first, so it works while the process runs, and again after it exited."""

    CANDIDATES = (("/sys/fs/cgroup/unified", "0::"), ("/sys/fs/cgroup", "0::"),
                  ("/sys/fs/cgroup/systemd", None))

    def __init__(self, token):
        self.top_name = f"pyprofd-kube-{token}"
        self.mount = self.prefix = None
        for mount, prefix in self.CANDIDATES:
            if os.path.exists(os.path.join(mount, "cgroup.procs")) and \
                    (prefix or self._systemd_prefix()) and self._is_hierarchy(mount, prefix):
                self.mount, self.prefix = mount, prefix or self._systemd_prefix()
                break
        self.made = []    # directories made, parents first
        self.placed = {}  # pid -> (its cgroup path relative to the mount, where it came from)
        self.lock = threading.Lock()  # targets are started (and placed) in parallel

    @staticmethod
    def _systemd_prefix():
        for line in cgroup_lines("self"):
            hid, ctrl, _ = line.split(":", 2)
            if ctrl == "name=systemd":
                return f"{hid}:{ctrl}:"
        return None

    @staticmethod
    def _is_hierarchy(mount, prefix):
        """@mount holds the hierarchy of the /proc/PID/cgroup line @prefix."""
        with open("/proc/self/mounts") as f:
            mounts = {fields[1]: fields[2] for fields in (line.split() for line in f)}
        if prefix == "0::":
            return mounts.get(mount) == "cgroup2"
        return mounts.get(mount) == "cgroup"

    def available(self):
        return self.mount is not None

    def path(self, pod_uid, cid):
        """The cgroup path (as /proc/PID/cgroup shows it) of container @cid of pod @pod_uid."""
        return f"/{self.top_name}/kubepods/burstable/pod{pod_uid}/{cid}"

    def _line(self, pid):
        for line in cgroup_lines(pid):
            if line.startswith(self.prefix):
                return line[len(self.prefix):]
        return None

    def place(self, pid, pod_uid, cid):
        with self.lock:
            return self._place(pid, pod_uid, cid)

    def _place(self, pid, pod_uid, cid):
        rel = self.path(pod_uid, cid)
        before = self._line(pid)
        d = self.mount
        for part in rel.strip("/").split("/"):
            d = os.path.join(d, part)
            if not os.path.isdir(d):
                os.mkdir(d)
                self.made.append(d)
        self.placed[pid] = (rel, before or "/")
        with open(os.path.join(d, "cgroup.procs"), "w") as f:
            f.write(str(pid))
        now = self._line(pid)
        if now != rel:
            raise RuntimeError(f"pid {pid} is in {now!r}, not {rel!r}: {cgroup_lines(pid)}")
        return rel

    def release(self, pid=None):
        """Moves @pid (None: every process placed) back to the cgroup it came
        from, then removes this run's cgroups that are empty."""
        with self.lock:
            self._release(pid)

    def _release(self, pid):
        for p in ([pid] if pid is not None else list(self.placed)):
            entry = self.placed.pop(p, None)
            if entry is None:
                continue
            back = os.path.join(self.mount, entry[1].lstrip("/"), "cgroup.procs")
            try:
                if self._line(p) == entry[0]:
                    with open(back, "w") as f:
                        f.write(str(p))
            except (OSError, ValueError):
                pass  # it exited
        for d in reversed(list(self.made)):
            try:
                os.rmdir(d)
                self.made.remove(d)
            except FileNotFoundError:
                self.made.remove(d)
            except OSError:
                pass  # not empty yet: another placed process, or a child cgroup

    def leftovers(self):
        return [d for d in self.made if os.path.isdir(d)]


def ns_tids(pid):
    """The thread ids of @pid as its own PID namespace numbers them (the last
    NSpid of each task: what pprof's thread_id label holds)."""
    out = set()
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/status") as f:
            for line in f:
                if line.startswith("NSpid:"):
                    out.add(int(line.split()[-1]))
    return out


# --- profiles ---------------------------------------------------------------------

def _varint(buf, i):
    shift = value = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, i
        shift += 7


def _fields(buf):
    """(field number, value) of a protobuf message: int for varints and
    fixed, bytes for length-delimited."""
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        wt = key & 7
        if wt == 0:
            v, i = _varint(buf, i)
        elif wt == 1:
            v, i = int.from_bytes(buf[i:i + 8], "little"), i + 8
        elif wt == 2:
            n, i = _varint(buf, i)
            v, i = buf[i:i + n], i + n
        elif wt == 5:
            v, i = int.from_bytes(buf[i:i + 4], "little"), i + 4
        else:
            raise ValueError(f"wire type {wt} at {i}")
        yield key >> 3, v


def profile_label_sets(raw):
    """{frozenset of (key, value): samples} of a pprof profile (gzip or not):
    each sample's labels (Sample.label; a numeric one's value an int), from
    profile.proto's numbers: Profile.sample 2, string_table 6; Sample.label
    3; Label.key 1, str 2, num 3."""
    data = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
    strings, samples = [], []
    for num, v in _fields(data):
        if num == 6:
            strings.append(v.decode())
        elif num == 2:
            samples.append(v)
    out = collections.Counter()
    for s in samples:
        labels = {}
        for num, v in _fields(s):
            if num == 3:
                label = dict(_fields(v))
                key = strings[label.get(1, 0)]
                labels[key] = strings[label[2]] if 2 in label else label.get(3, 0)
        out[frozenset(labels.items())] += 1
    return out


# --- pods -------------------------------------------------------------------------

def pod_of(role):
    """The pod fixture of @role (None for host), named for this run."""
    name = f"{role}-{TOKEN}"
    if role == "cart":
        return fake.make_pod(name, NS, NODE, [("cart", "shop/cart:1.4.2"),
                                              ("envoy", "proxy/envoy:1.31.0")],
                             labels={"app": "cart", "pod-template-hash": "7c9d8f6b5",
                                     "app.kubernetes.io/version": "1.4.2"},
                             annotations={"pyroscope.io/service_name": "shop-cart"},
                             owner=("ReplicaSet", f"cart-{TOKEN}-7c9d8f6b5", "apps/v1"),
                             ip="10.244.1.17")
    if role == "plain":
        return fake.make_pod(name, NS, NODE, [("worker", "shop/worker:2.0")],
                             labels={"app": "plain"},
                             owner=("StatefulSet", f"plain-{TOKEN}", "apps/v1"),
                             ip="10.244.1.18")
    if role in ("early", "orphan"):
        return fake.make_pod(name, NS, NODE, [(role, f"shop/{role}:1.0")],
                             labels={"app": role}, ip="10.244.1.19" if role == "early"
                             else "10.244.1.20")
    return None


CONTAINER = {"cart": "cart", "plain": "worker", "early": "early", "orphan": "orphan"}


def cid_of(role):
    return fake.container_id(f"{NS}/{role}-{TOKEN}/{CONTAINER[role]}")


def uid_of(pod):
    return pod["metadata"]["uid"]


def expected_meta(role, pod):
    """The exact __meta_kubernetes_* labels of @role's container, as
    /targets shows them (annotation values hidden)."""
    meta = pod["metadata"]
    container = CONTAINER[role]
    image = next(c["image"] for c in pod["spec"]["containers"] if c["name"] == container)
    out = {
        M + "namespace": NS,
        M + "pod_name": meta["name"],
        M + "pod_uid": meta["uid"],
        M + "pod_node_name": NODE,
        M + "pod_ip": pod["status"]["podIP"],
        M + "pod_host_ip": "192.0.2.10",
        M + "pod_phase": "Running",
        M + "pod_ready": "true",
        M + "pod_container_name": container,
        M + "pod_container_id": "containerd://" + cid_of(role),
        M + "pod_container_image": image,
        M + "pod_container_init": "false",
    }
    for k, v in meta["labels"].items():
        name = "".join(c if c.isalnum() or c == "_" else "_" for c in k)
        out[M + "pod_label_" + name] = v
        out[M + "pod_labelpresent_" + name] = "true"
    for k, v in meta["annotations"].items():
        name = "".join(c if c.isalnum() or c == "_" else "_" for c in k)
        out[M + "pod_annotation_" + name] = "<hidden>" if v else ""
        out[M + "pod_annotationpresent_" + name] = "true"
    for ref in meta.get("ownerReferences", []):
        if ref.get("controller"):
            out[M + "pod_controller_kind"] = ref["kind"]
            out[M + "pod_controller_name"] = ref["name"]
    return out


def kube_meta(entry):
    return {k: v for k, v in entry["discovered_labels"].items() if k.startswith(M)}


# --- the agent's config ---------------------------------------------------------------

def agent_config(kubernetes):
    """The config: @kubernetes is the discovery.kubernetes block (YAML lines,
    indented for their place)."""
    files = f"'.*/{TOKEN}_[a-z]+[.]py.*'"
    return f"""\
global:
  sample_rate: 100
  mode: wall
  profile_interval: 5m
discovery:
  refresh_interval: {int(REFRESH_S * 1000)}ms
  min_process_age: 100ms
  kubernetes:
{kubernetes}
profile_configs:
  - job_name: pods
    relabel_configs:
      - source_labels: [__meta_process_commandline]
        regex: {files}
        action: keep
      - source_labels: [__meta_kubernetes_pod_uid]
        regex: .+
        action: keep
      - source_labels: [__meta_kubernetes_pod_phase]
        regex: Succeeded|Failed
        action: drop
      - source_labels: [__meta_kubernetes_namespace]
        target_label: namespace
      - source_labels: [__meta_kubernetes_pod_name]
        target_label: pod
      - source_labels: [__meta_kubernetes_pod_container_name]
        target_label: container
      - source_labels: [__meta_kubernetes_pod_node_name]
        target_label: node
      - action: labelmap
        regex: __meta_kubernetes_pod_label_(.+)
      - action: labeldrop
        regex: pod_template_hash
  - job_name: all
    relabel_configs:
      - source_labels: [__meta_process_commandline]
        regex: '.*/{TOKEN}_(early|host|cart)[.]py.*'
        action: keep
server:
  listen_address: 127.0.0.1:{{port}}
"""


def start_targets(tmp, cgroups, roles):
    """hotspot.py as TOKEN_ROLE.py under 3.14 (chroot) for each role, in
    parallel; each placed in its container's cgroup (host: none). Each
    Target's stop moves it out of its cgroup, stops it and removes the
    cgroups left empty. Returns {role: Target}."""
    def one(role):
        path = os.path.join(tmp, f"{TOKEN}_{role}.py")
        with open(os.path.join(livelib.TARGETS_DIR, "hotspot.py")) as src, \
                open(path, "w") as dst:
            dst.write(src.read())
        t = livelib.start_target(tmp, path, "3.14", MODE[role], "--which", HOT[role])
        if role == "host":
            return role, t

        def stop(pid=t.pid):
            try:
                cgroups.release(pid)
            finally:
                out = subprocess.run([livelib.RUN_TARGET, "stop", str(pid)],
                                     capture_output=True, text=True, timeout=30)
                if out.returncode != 0:
                    print(f"warning: run-target.sh stop {pid}: {out.stderr.strip()}",
                          file=sys.stderr)
                cgroups.release()  # and whatever else of this run is empty now
        # the same pid: this Target (with its cgroup cleanup) replaces t in livelib's list
        t = livelib.Target(t.name, t.version, t.mode, t.pid, t.log, stop=stop)
        cgroups.place(t.pid, uid_of(pod_of(role)), cid_of(role))
        return role, t

    with concurrent.futures.ThreadPoolExecutor(max_workers=len(roles)) as pool:
        return dict(pool.map(one, roles))


# --- the scenario -------------------------------------------------------------------

class AgentPods(livelib.Scenario):
    agent = server = cgroups = None
    targets = {}

    @classmethod
    def setUpClass(cls):
        cls.tmp = livelib.scratch()
        cls.cgroups = KubeCgroups(TOKEN)
        if not cls.cgroups.available():
            raise unittest.SkipTest("no cgroup2 mount and no name=systemd hierarchy")
        try:
            certs = fake.make_certs(os.path.join(cls.tmp, "api-certs"))
            cls.token_file = os.path.join(cls.tmp, "token")
            with open(cls.token_file, "w") as f:
                f.write(API_TOKEN + "\n")
            cls.server = fake.FakeApiServer(certs, token=API_TOKEN).start()
            cls.pods = {role: pod_of(role) for role in ROLES if role != "host"}
            for role in ("cart", "plain"):
                cls.server.add_pod(cls.pods[role])
            # another node's pod, with early's container id: never its labels
            other = pod_of("early")
            other["metadata"].update(name=f"elsewhere-{TOKEN}", uid=f"{TOKEN}-elsewhere")
            other["spec"]["nodeName"] = OTHER
            cls.server.add_pod(other)
            cls.targets = start_targets(cls.tmp, cls.cgroups, ROLES)
            cls.placed = {role: [x for x in cgroup_lines(t.pid)
                                 if x.startswith(cls.cgroups.prefix)]
                          for role, t in cls.targets.items()}
            kube = f"""\
    enabled: true
    api_server: {cls.server.url}
    node_name: {NODE}
    bearer_token_file: {cls.token_file}
    tls_config:
      ca_file: {certs['ca']}"""
            cls.agent = livelib.Agent(cls.tmp, "agent", agent_config(kube)).wait_http()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        if cls.agent is not None:
            rc = cls.agent.stop()
            if rc != 0:
                livelib.note(f"agent exit status {rc}")
        for t in cls.targets.values():
            t.stop()
        if cls.server is not None:
            cls.server.stop()
        if cls.cgroups is not None:
            cls.cgroups.release()
            left = cls.cgroups.leftovers()
            if left:
                print(f"warning: cgroups left behind: {left}", file=sys.stderr)

    # --- helpers

    def entry(self, role):
        return self.agent.targets().get(self.targets[role].pid)

    def wait_labels(self, role, want, timeout, what):
        """Waits until @role's target is active with labels @want exactly."""
        pid = self.targets[role].pid
        return self.agent.wait_for(
            pid, lambda e: e is not None and e["state"] == "active" and e["labels"] == want,
            timeout, what)

    def relabels(self, role):
        """The agent's log lines saying it stopped @role's target because of its pod."""
        head = f"stopped sampling process {self.targets[role].pid} ("
        return [line for line in self.agent.log().splitlines()
                if head in line and "its pod changed" in line]

    def relabelled_in_place(self, role):
        """The agent's log lines saying @role's target carries its pod's new labels."""
        head = f"process {self.targets[role].pid} ("
        return [line for line in self.agent.log().splitlines()
                if head in line and "its pod's labels changed" in line]

    def pod_labels(self, role, **extra):
        pod = self.pods[role]
        labels = {"job": "pods", "namespace": NS, "pod": pod["metadata"]["name"],
                  "container": CONTAINER[role], "node": NODE,
                  "service_name": f"{NS}/{CONTAINER[role]}"}
        for k, v in pod["metadata"]["labels"].items():
            if k != "pod-template-hash":
                labels["".join(c if c.isalnum() or c == "_" else "_" for c in k)] = v
        labels.update(extra)
        return labels

    def check_pod_target(self, role, entry):
        t = self.targets[role]
        self.assertEqual(entry["state"], "active", entry)
        self.assertEqual(entry["job"], "pods", entry)
        self.assertEqual(entry["container_id"], cid_of(role), entry)
        # the PID in its own PID namespace: 1 in a container, the pid without one
        self.assertEqual(entry["nspid"], 1 if MODE[role] == "container" else t.pid, entry)
        d = entry["discovered_labels"]
        self.assertEqual(d["__container_id__"], cid_of(role))
        self.assertEqual(d["__meta_process_cgroup_path"],
                         self.cgroups.path(uid_of(self.pods[role]), cid_of(role)))
        self.assertNotIn("__meta_container_runtime", d)  # cgroupfs: no runtime in the path
        self.assertEqual(d["__meta_process_commandline"], "<hidden>")
        self.assertEqual(kube_meta(entry), expected_meta(role, self.pods[role]))

    # --- steps

    def step_pods(self):
        for role, t in self.targets.items():
            livelib.note(f"{role}: pid {t.pid}, {self.placed[role]}")
        if self.relabels("cart"):  # a scan before the first list: cart was in job all
            livelib.note(f"cart labelled again at the first list: {self.relabels('cart')}")
        want = {"cart": self.pod_labels("cart", service_name="shop-cart"),
                "plain": self.pod_labels("plain")}
        for role in ("cart", "plain"):
            e = self.wait_labels(role, want[role], 10, f"active with {role}'s pod labels")
            self.check_pod_target(role, e)
        e = self.entry("cart")
        self.assertEqual(
            e["discovered_labels"][M + "pod_annotation_pyroscope_io_service_name"], "<hidden>")
        self.assertEqual(e["labels"]["service_name"], "shop-cart")
        self.assertEqual(self.entry("plain")["labels"]["service_name"], "shop/worker")

    def step_host(self):
        pid = self.targets["host"].pid
        e = self.agent.wait_state(pid, "active", 10)
        self.assertEqual(e["job"], "all")
        self.assertNotIn("container_id", e)
        self.assertEqual(e["labels"], {"job": "all", "service_name": f"{TOKEN}_host"})
        self.assertEqual(e["discovered_labels"].get("__container_id__"), None)
        self.assertEqual(kube_meta(e), {}, e)
        before = e["counts"]["samples"]
        time.sleep(0.5)
        self.assertGreater(self.entry("host")["counts"]["samples"], before)

    def step_before_pod(self):
        early, orphan = self.targets["early"].pid, self.targets["orphan"].pid
        e = self.agent.wait_state(early, "active", 10)
        self.assertEqual(e["job"], "all")
        self.assertEqual(e["labels"], {"job": "all", "service_name": f"{TOKEN}_early"})
        self.assertEqual(e["container_id"], cid_of("early"))
        self.assertEqual(kube_meta(e), {}, e)
        o = self.agent.wait_state(orphan, "dropped", 10)
        self.assertEqual(o["container_id"], cid_of("orphan"))
        self.assertEqual(o["reason"], "no job's relabel_configs kept it")
        time.sleep(0.3)
        self.assertGreater(self.entry("early")["counts"]["samples"], e["counts"]["samples"])
        started = time.monotonic()
        for role in ("early", "orphan"):
            self.server.add_pod(self.pods[role])
        for role in ("early", "orphan"):
            e = self.wait_labels(role, self.pod_labels(role), RELABEL_S + 5,
                                 f"relabeled with {role}'s pod")
            livelib.within(self, f"{role} relabeled after (s)", time.monotonic() - started,
                           None, RELABEL_S)
            self.check_pod_target(role, e)
        self.assertEqual(self.agent.targets()[early]["job"], "pods")
        # early was a target of job all, and job pods (the first) keeps it now:
        # ended (window flushed) and judged again
        self.assertEqual(self.relabels("early"),
                         [f"pyprofd: info: stopped sampling process {early} (all): its pod "
                          f"changed and its job no longer keeps it: judging it again"])
        self.assertEqual(self.relabels("orphan"), [])  # dropped: no target to end

    def step_kubernetes(self):
        status, body = self.agent.get("/targets")
        self.assertEqual(status, 200)
        k = json.loads(body)["kubernetes"]
        self.assertEqual(k, {"source": "api_server", "url": self.server.url, "node": NODE,
                             "running": True, "synced": True, "pods": 4, "containers": 5}, k)
        text = self.agent.metrics()
        check = subprocess.run([PROMTOOL, "check", "metrics"], input=text.encode(),
                               capture_output=True, timeout=60)
        self.assertEqual(check.returncode, 0, check.stdout + check.stderr)
        m = lambda name: self.agent.metric(name, text)  # noqa: E731
        self.assertEqual(m("pyprofd_kubernetes_up"), 1)
        self.assertEqual(m("pyprofd_kubernetes_pods"), 4)
        self.assertEqual(m("pyprofd_kubernetes_containers"), 5)
        ok = m('pyprofd_kubernetes_requests_total{outcome="ok"}')
        livelib.within(self, 'pyprofd_kubernetes_requests_total{outcome="ok"}', ok, 1, None)
        self.assertEqual(m('pyprofd_kubernetes_watch_events_total{type="added"}'), 2)
        self.assertEqual(m('pyprofd_kubernetes_watch_events_total{type="deleted"}'), 0)
        self.assertEqual(m("pyprofd_kubernetes_relists_total"), 0)
        self.assertEqual(m("pyprofd_kubernetes_decode_errors_total"), 0)
        self.assertEqual(m('pyprofd_targets{job="pods"}'), 4)
        self.assertEqual(m('pyprofd_targets{job="all"}'), 1)
        # the agent's requests: a list and a watch of node-a's pods, with the token
        lists = self.server.requests("list")
        watches = self.server.requests("watch")
        self.assertTrue(lists and watches, self.server.counts())
        self.assertEqual(lists[0]["query"]["fieldSelector"], f"spec.nodeName={NODE}")
        self.assertEqual({e["token"] for e in lists + watches}, {API_TOKEN})
        self.assertEqual(self.server.counts().get("unauthorized", 0), 0)

    def step_profile(self):
        status, body = self.agent.get("/debug/pprof/profile?seconds=2", timeout=60)
        self.assertEqual(status, 200, body[:200])
        path = os.path.join(self.tmp, "all.pb.gz")
        with open(path, "wb") as f:
            f.write(body)
        sets = profile_label_sets(body)
        role_of = {frozenset(self.entry(role)["labels"].items()): role for role in ROLES}
        tids = {role: ns_tids(self.targets[role].pid) for role in ROLES}
        got = collections.Counter()
        for labels, n in sets.items():
            d = dict(labels)
            # the target's labels, and the thread's (thread_id numeric, in the
            # target's PID namespace; thread_name)
            thread = {k: d.pop(k, None) for k in ("thread_id", "thread_name")}
            role = role_of.get(frozenset(d.items()))
            self.assertIsNotNone(role, f"a sample whose labels are no target's: {dict(labels)}")
            self.assertIn(thread["thread_id"], tids[role], dict(labels))
            self.assertEqual(thread["thread_name"], "python3.14", dict(labels))
            got[role] += n
        livelib.within_each(self, "pprof samples (stacks) per target in 2 s",
                            [(r, got[r], 1, None) for r in ROLES])
        top = livelib.pprof_top(path, self.tmp, [f"-tagfocus=pod=cart-{TOKEN}"])
        self.assertIn("hot_alpha", top)
        self.assertNotIn("hot_beta", top)  # plain and host

    def step_modified(self):
        # a change no label shows (a condition's time): nothing is judged again
        e = self.entry("plain")

        def touch(p):
            p["status"]["conditions"][0]["lastTransitionTime"] = "2026-11-30T09:00:00Z"
        self.server.modify_pod(NS, f"plain-{TOKEN}", touch)
        time.sleep(2 * REFRESH_S + 0.5)
        self.assertEqual(self.agent.metric(
            'pyprofd_kubernetes_watch_events_total{type="modified"}'), 1)
        after = self.entry("plain")
        self.assertEqual(after["labels"], e["labels"])
        self.assertGreater(after["counts"]["samples"], e["counts"]["samples"])
        self.assertEqual(self.relabels("plain"), [])
        # readiness flips (a label no rule of job pods uses): the target stays
        # attached, its labels and window as they were
        for ready in ("False", "True", "False", "True"):
            def flip(p, ready=ready):
                for c in p["status"]["conditions"]:
                    if c["type"] in ("Ready", "ContainersReady"):
                        c["status"] = ready
            self.server.modify_pod(NS, f"plain-{TOKEN}", flip)
            self.agent.wait_for(
                self.targets["plain"].pid,
                lambda e, want=ready.lower(): e is not None and
                e["discovered_labels"].get(M + "pod_ready") == want, RELABEL_S + 5,
                f"__meta_kubernetes_pod_ready {ready.lower()}")
        after = self.entry("plain")
        self.assertEqual(after["state"], "active", after)
        self.assertEqual(after["labels"], e["labels"])
        self.assertEqual(after["counts"]["profiles"], e["counts"]["profiles"])  # no window cut
        self.assertGreater(after["counts"]["samples"], e["counts"]["samples"])  # the same target
        self.assertEqual(self.relabels("plain"), [])
        self.assertEqual(self.relabelled_in_place("plain"), [])
        # a new pod label: the target's labels follow within a second, in place
        started = time.monotonic()
        self.server.modify_pod(NS, f"plain-{TOKEN}",
                               lambda p: p["metadata"]["labels"].update(tier="backend"))
        self.pods["plain"]["metadata"]["labels"]["tier"] = "backend"
        e = self.wait_labels("plain", self.pod_labels("plain"), RELABEL_S + 5,
                             "relabeled after its pod's MODIFIED event")
        livelib.within(self, "plain relabeled after (s)", time.monotonic() - started,
                       None, 1.0)
        self.assertEqual(e["labels"]["tier"], "backend")
        self.check_pod_target("plain", e)
        self.assertGreater(e["counts"]["samples"], after["counts"]["samples"])  # not a new one
        self.assertEqual(self.relabels("plain"), [])
        self.assertEqual(len(self.relabelled_in_place("plain")), 1,
                         self.relabelled_in_place("plain"))

    def step_deleted(self):
        want = self.pod_labels("plain")
        self.server.delete_pod(NS, f"plain-{TOKEN}")
        deadline = time.monotonic() + RELABEL_S + 5
        k = None
        while time.monotonic() < deadline:
            k = json.loads(self.agent.get("/targets")[1])["kubernetes"]
            if k["pods"] == 3:
                break
            time.sleep(0.1)
        self.assertEqual((k["pods"], k["containers"]), (3, 5), k)  # the ids stay in grace
        samples = self.entry("plain")["counts"]["samples"]
        time.sleep(2 * REFRESH_S + 0.5)  # two scans after the delete
        e = self.entry("plain")
        self.assertEqual(e["state"], "active", e)
        self.assertEqual(e["labels"], want)
        self.assertEqual(kube_meta(e)[M + "pod_name"], f"plain-{TOKEN}")
        self.assertGreater(e["counts"]["samples"], samples)  # the same target, not a new one
        text = self.agent.metrics()
        self.assertEqual(self.agent.metric(
            'pyprofd_kubernetes_watch_events_total{type="deleted"}', text), 1)
        self.assertEqual(self.agent.metric("pyprofd_kubernetes_pods", text), 3)
        self.assertNotIn("its pod is gone", self.agent.log())
        self.assertEqual(self.relabels("plain"), [])
        self.assertEqual(len(self.relabelled_in_place("plain")), 1,
                         self.relabelled_in_place("plain"))

    def step_reload(self):
        """A reload with the same discovery.kubernetes keeps the client (no
        new list); server.show_sensitive_labels shows the annotation; every
        process is judged again: plain's pod, deleted but in grace, still
        labels it."""
        lists = len(self.server.requests("list"))
        mark = len(self.agent.log())
        with open(self.agent.config) as f:
            text = f.read()
        with open(self.agent.config, "w") as f:
            f.write(text.replace("server:\n", "server:\n  show_sensitive_labels: true\n"))
        self.agent.proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 5
        while "configuration applied" not in self.agent.log()[mark:] and \
                time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertIn("configuration applied", self.agent.log()[mark:])
        for role in ROLES:
            self.agent.wait_state(self.targets[role].pid, "active", RELABEL_S + 5)
        log = self.agent.log()[mark:]
        for role in ROLES:  # every target ended and judged again
            self.assertIn(f"stopped sampling process {self.targets[role].pid} (", log)
        e = self.entry("cart")
        self.assertEqual(e["discovered_labels"][M + "pod_annotation_pyroscope_io_service_name"],
                         "shop-cart")
        self.assertEqual(e["discovered_labels"]["__meta_process_commandline"].split()[-2:],
                         ["--which", "alpha"])
        self.assertEqual(self.entry("plain")["labels"], self.pod_labels("plain"))
        self.assertEqual(self.agent.metric("pyprofd_config_last_reload_successful"), 1)
        self.assertEqual(len(self.server.requests("list")), lists)  # the same client
        self.assertEqual(self.agent.metric("pyprofd_kubernetes_up"), 1)


class UnknownCa(unittest.TestCase):
    def test_unknown_ca_then_fixed(self):
        """an API server whose certificate the configured CA did not sign: the
        agent samples without pod labels, /targets says why, up 0; a reload
        with the right CA restarts the client and the pod's labels come"""
        tmp = os.path.join(livelib.scratch(), "unknown-ca")
        os.makedirs(tmp)
        certs = fake.make_certs(os.path.join(tmp, "api-certs"))
        wrong = fake.make_certs(os.path.join(tmp, "other-ca"), name="someone-else")
        token_file = os.path.join(tmp, "token")
        with open(token_file, "w") as f:
            f.write(API_TOKEN)
        cgroups = KubeCgroups(TOKEN + "ca")
        server = fake.FakeApiServer(certs, token=API_TOKEN).start()
        agent = None
        targets = {}
        try:
            server.add_pod(pod_of("cart"))
            targets = start_targets(tmp, cgroups, ("cart",))
            pid = targets["cart"].pid

            def kube(ca):
                return (f"    enabled: true\n    api_server: {server.url}\n"
                        f"    node_name: {NODE}\n    bearer_token_file: {token_file}\n"
                        f"    tls_config:\n      ca_file: {ca}")
            agent = livelib.Agent(tmp, "agent", agent_config(kube(wrong["ca"]))).wait_http()
            e = agent.wait_state(pid, "active", 10)
            self.assertEqual(e["labels"], {"job": "all", "service_name": f"{TOKEN}_cart"})
            self.assertEqual(e["container_id"], cid_of("cart"))
            self.assertEqual(kube_meta(e), {}, e)
            deadline = time.monotonic() + 10
            k = None
            while time.monotonic() < deadline:
                k = json.loads(agent.get("/targets")[1])["kubernetes"]
                if k.get("last_error"):
                    break
                time.sleep(0.1)
            livelib.note(f"last_error with an unknown CA: {k.get('last_error')!r}")
            self.assertEqual({x: k.get(x) for x in ("running", "synced", "pods", "problem")},
                             {"running": True, "synced": False, "pods": 0, "problem": None}, k)
            self.assertIn(server.url, k["last_error"])
            text = agent.metrics()
            self.assertEqual(agent.metric("pyprofd_kubernetes_up", text), 0)
            self.assertGreaterEqual(
                agent.metric('pyprofd_kubernetes_requests_total{outcome="transport"}', text), 1)
            self.assertEqual(agent.metric('pyprofd_kubernetes_requests_total{outcome="ok"}',
                                          text), 0)
            self.assertEqual(server.requests("list"), [])  # refused at the handshake
            # the right CA: the client is started again with it
            mark = len(agent.log())
            with open(agent.config, "w") as f:
                f.write(agent_config(kube(certs["ca"])).replace("{port}", str(agent.port)))
            agent.proc.send_signal(signal.SIGHUP)
            want = {"job": "pods", "namespace": NS, "pod": f"cart-{TOKEN}", "container": "cart",
                    "node": NODE, "app": "cart", "app_kubernetes_io_version": "1.4.2",
                    "service_name": "shop-cart"}
            started = time.monotonic()
            e = agent.wait_for(pid, lambda e: e is not None and e["state"] == "active" and
                               e["labels"] == want, 10, "labelled from its pod")
            livelib.within(self, "labelled after the reload (s)", time.monotonic() - started,
                           None, RELABEL_S + 1)
            self.assertEqual(kube_meta(e), expected_meta("cart", pod_of("cart")))
            self.assertEqual(agent.metric("pyprofd_kubernetes_up"), 1)
            self.assertEqual(agent.log()[mark:].count("discovery.kubernetes: watching the pods"),
                             1, agent.log()[mark:])
        finally:
            if agent is not None:
                self.assertEqual(agent.stop(), 0, agent.log())
            for t in targets.values():
                t.stop()
            server.stop()
            cgroups.release()
            self.assertEqual(cgroups.leftovers(), [])


class Misconfigured(unittest.TestCase):
    def test_no_api_server(self):
        """discovery.kubernetes without api_server outside a cluster: the agent
        samples all the same, /targets says why, pyprofd_kubernetes_up 0"""
        tmp = livelib.scratch()
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("KUBERNETES_") and k != "NODE_NAME"}
        targets = start_targets(tmp, None, ("host",))
        agent = livelib.Agent(tmp, "misconfigured", agent_config("    enabled: true"), env=env)
        try:
            agent.wait_http()
            pid = targets["host"].pid
            e = agent.wait_state(pid, "active", 10)
            self.assertEqual(e["labels"], {"job": "all", "service_name": f"{TOKEN}_host"})
            time.sleep(0.5)
            self.assertGreater(agent.targets()[pid]["counts"]["samples"], 0)
            k = json.loads(agent.get("/targets")[1])["kubernetes"]
            self.assertEqual(k, {
                "source": "api_server", "url": "", "node": socket.gethostname(),
                "running": False,
                "problem": "no discovery.kubernetes.api_server and not in a cluster "
                           "(KUBERNETES_SERVICE_HOST is not set)",
                "synced": False, "pods": 0, "containers": 0}, k)
            text = agent.metrics()
            check = subprocess.run([PROMTOOL, "check", "metrics"], input=text.encode(),
                                   capture_output=True, timeout=60)
            self.assertEqual(check.returncode, 0, check.stdout + check.stderr)
            self.assertEqual(agent.metric("pyprofd_kubernetes_up", text), 0)
            self.assertEqual(agent.metric("pyprofd_kubernetes_pods", text), 0)
            self.assertIsNone(agent.proc.poll())
            time.sleep(REFRESH_S + 0.2)  # more scans: still logged once
            said = [line for line in agent.log().splitlines() if "discovery.kubernetes" in line]
            self.assertEqual(len(said), 1, said)
            self.assertIn("sampling goes on without pod labels", said[0])
        finally:
            self.assertEqual(agent.stop(), 0, agent.log())
            targets["host"].stop()


if __name__ == "__main__":
    livelib.run(needs=("root", "rootfs", "go", "promtool", "openssl"))
