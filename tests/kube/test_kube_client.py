# SPDX-License-Identifier: MIT
"""The C pod metadata client against the fake API server, through its probe.

tests/integration/kube_watch_probe (built into
<build>/tests/integration/kube_watch_probe) runs the client alone:

    kube_watch_probe --url URL --node NAME --token-file F --ca-file F [--insecure]
                     [--source api_server|kubelet] [--watch-timeout SECS]
                     [--poll SECS] --seconds N

and prints one JSON line whenever its index changes:

    {"generation": G, "synced": bool, "stats": {...},
     "containers": {"<64 hex id>": {"rev": R, "labels": {"__meta_kubernetes_...": "..."}}}}

This driver runs the fake (fake_apiserver.py) in its own process, acts on
it and checks the probe's index and the server's request log:

    ApiServer (one probe, steps in order; livelib.Scenario)
      synced        list with fieldSelector=spec.nodeName=node-a, then a watch
                    from the list's resourceVersion with allowWatchBookmarks
                    and the timeoutSeconds asked for, bearer token sent; the
                    index holds exactly this node's running containers (init
                    container included, the pending pod's none, the other
                    node's none) with the Prometheus pod-role labels, exact
      events        a pod added later appears; a label change (MODIFIED)
                    shows, with a new rev; a restarted container (new id) and
                    the pending pod turning Running; a DELETED pod's
                    containers go
      bookmark      a BOOKMARK (at an RV only another node's pod used), then
                    the stream is cut mid-event: the next watch starts at the
                    bookmark's RV, no list in between, and events flow again
      timeout       a stream that ends cleanly (as at timeoutSeconds): the
                    next watch resumes from the last event's RV, no list
      expired       the history expires while a pod is deleted out of sight:
                    the watch gets ERROR 410, the client lists again (once;
                    a client that sends limit gets pages of 2 and must follow
                    continue), watches from the new list's RV, and the deleted
                    pod's containers are gone (the relist replaced the index)
      token         the server's token rotates and the stream is cut: 401;
                    the token file is then swapped as the kubelet swaps a
                    projected token (..data symlink renamed): the client reads
                    it again, is accepted, and a new pod appears
      other_node    no container of another node's pod appeared at any time;
                    generation never went back
    Kubelet         --source kubelet --insecure against a self-signed
                    certificate: GET /pods polled, the node's containers with
                    the same labels, an added pod appears and a deleted one
                    goes at the next poll; no /api/v1 request
    Tls             the API server's certificate from another CA and no
                    --insecure: nothing is requested, nothing synced

Exit 77 (skipped) when the probe is not built (PYPROFD_KUBE_PROBE, default
<source>/build/tests/integration/kube_watch_probe). No root needed.
Run by ctest as test_kube_client (label integration), or by hand:
    /usr/bin/python3 tests/kube/test_kube_client.py [-v]
"""

import json
import os
import signal
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

PROBE = os.environ.get("PYPROFD_KUBE_PROBE") or os.path.join(
    livelib.SOURCE_DIR, "build", "tests", "integration", "kube_watch_probe")
NODE = "node-a"
OTHER = "node-b"
WAIT = 15           # seconds for one change to show in the probe's index
WATCH_TIMEOUT = 30  # --watch-timeout: longer than any step, so it never ends a stream itself
# deleted pods and replaced container ids stay this long (the agent's default
# is 60 s: too long to wait for here)
GRACE = 2

# --- the expected index: literal values, from the fixtures ----------------------

CART = "ff72ebb825e4515fbe87dfb397c8544a008292239a84ad9e34510d9a169c411d"
ENVOY = "68c7b0142decb17cf8520d262751495f17fd6d0fd4b791d1f0f6fe9d4ed5713f"
MIGRATE = "fc998f1dbdcc6cd102d588a8d4bae203a330c7c5436c57d2e6c47625bc1f2dc5"
CHECKOUT = "3154377efdabc4b264920105e3d2ad5824d52b0ba7c1607b36a91fa32b98cc2d"
WORKER = "fe23edb6ce5b70a6ee79f177b9c1b41ce459b6b8885b65764640501b6373ed83"
OTHER_CART = "6c440a28e5dad2f19f9f5ce506a96c626cc944c4a0b4b58537509126f3bc7666"

M = "__meta_kubernetes_"
CART_POD = {
    M + "namespace": "shop",
    M + "pod_name": "cart-7c9d8f6b5-x2k4q",
    M + "pod_uid": "652416e1-51fe-4426-80a7-16bd333e9670",
    M + "pod_node_name": NODE,
    M + "pod_ip": "10.244.1.17",
    M + "pod_host_ip": "192.0.2.10",
    M + "pod_phase": "Running",
    M + "pod_ready": "true",
    M + "pod_label_app": "cart",
    M + "pod_label_pod_template_hash": "7c9d8f6b5",
    M + "pod_label_app_kubernetes_io_version": "1.4.2",
    M + "pod_annotation_pyroscope_io_service_name": "shop-cart",
    M + "pod_annotation_kubectl_kubernetes_io_default_container": "cart",
    M + "pod_controller_kind": "ReplicaSet",
    M + "pod_controller_name": "cart-7c9d8f6b5",
}
EXPECTED = {
    CART: {**CART_POD, M + "pod_container_name": "cart",
           M + "pod_container_image": "shop/cart:1.4.2", M + "pod_container_init": "false"},
    ENVOY: {**CART_POD, M + "pod_container_name": "envoy",
            M + "pod_container_image": "proxy/envoy:1.31.0", M + "pod_container_init": "false"},
    MIGRATE: {**CART_POD, M + "pod_container_name": "migrate",
              M + "pod_container_image": "shop/cart-migrate:1.4.2",
              M + "pod_container_init": "true"},
    CHECKOUT: {
        M + "namespace": "shop", M + "pod_name": "checkout-0",
        M + "pod_uid": "8638662b-065c-4545-8acc-8d5ef6248ee2", M + "pod_node_name": NODE,
        M + "pod_ip": "10.244.1.18", M + "pod_host_ip": "192.0.2.10",
        M + "pod_phase": "Running", M + "pod_ready": "true", M + "pod_label_app": "checkout",
        M + "pod_controller_kind": "StatefulSet", M + "pod_controller_name": "checkout",
        M + "pod_container_name": "checkout", M + "pod_container_image": "shop/checkout:2.0",
        M + "pod_container_init": "false"},
    WORKER: {  # no controller: no controller labels
        M + "namespace": "batch", M + "pod_name": "legacy-batch",
        M + "pod_uid": "8885f745-4370-4cb1-8b05-ae407a80b79a", M + "pod_node_name": NODE,
        M + "pod_ip": "10.244.1.19", M + "pod_host_ip": "192.0.2.10",
        M + "pod_phase": "Running", M + "pod_ready": "true", M + "pod_label_app": "legacy",
        M + "pod_container_name": "worker", M + "pod_container_image": "batch/worker:0.9",
        M + "pod_container_init": "false"},
}
SCHEME = {CART: "containerd://", ENVOY: "containerd://", MIGRATE: "containerd://",
          CHECKOUT: "cri-o://", WORKER: "docker://"}


def optional_labels(full_id, labels):
    """Prometheus pod-role labels a client may add, each with its one right
    value: the *present flags of the expected @labels, the container id
    with its scheme (@full_id)."""
    out = {M + "pod_container_id": full_id}
    for name in list(labels):
        for kind in ("label", "annotation"):
            prefix = M + f"pod_{kind}_"
            if name.startswith(prefix):
                out[M + f"pod_{kind}present_" + name[len(prefix):]] = "true"
    return out


def label_problems(cid, got, want, scheme=None):
    """Differences between a container's labels and the expected ones:
    every expected label with its exact value; a Prometheus optional one
    only with its exact value; no other __meta_kubernetes_ label. Port
    labels (__meta_kubernetes_pod_container_port_*) are not checked."""
    problems = []
    for k, v in want.items():
        if got.get(k) != v:
            problems.append(f"{k}: {got.get(k)!r}, want {v!r}")
    optional = optional_labels((scheme or SCHEME.get(cid, "")) + cid, want)
    for k, v in got.items():
        if k in want or not k.startswith(M) or k.startswith(M + "pod_container_port_"):
            continue
        if k not in optional:
            problems.append(f"{k}={v!r}: not expected (not a Prometheus pod-role label of "
                            f"this container)")
        elif v != optional[k]:
            problems.append(f"{k}: {v!r}, want {optional[k]!r}")
    return problems


# --- the probe ------------------------------------------------------------------

class Probe:
    """kube_watch_probe running; its states (parsed JSON lines) are
    collected by a reader thread. Always stop() it."""

    def __init__(self, tmp, name, args, seconds=170):
        self.name = name
        self.err_path = os.path.join(tmp, f"{name}.stderr")
        self.out_path = os.path.join(tmp, f"{name}.stdout")
        self._err = open(self.err_path, "w+")
        self.states = []
        self.noise = []
        self.cond = threading.Condition()
        self.proc = subprocess.Popen([PROBE, *args, "--seconds", str(seconds)],
                                     stdout=subprocess.PIPE, stderr=self._err, text=True)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        with open(self.out_path, "w") as copy:
            for line in self.proc.stdout:
                copy.write(line)
                copy.flush()
                try:
                    state = json.loads(line)
                    ok = isinstance(state, dict) and isinstance(state.get("containers"), dict)
                except ValueError:
                    ok = False
                with self.cond:
                    if ok:
                        self.states.append(state)
                    else:
                        self.noise.append(line.rstrip("\n"))
                    self.cond.notify_all()
        with self.cond:
            self.cond.notify_all()

    def latest(self):
        with self.cond:
            return self.states[-1] if self.states else None

    def count(self):
        with self.cond:
            return len(self.states)

    def all_states(self):
        with self.cond:
            return list(self.states)

    def stderr(self, tail=3000):
        self._err.flush()
        with open(self.err_path, errors="replace") as f:
            return f.read()[-tail:]

    def wait(self, pred, what, timeout=WAIT, server=None):
        """The first state (the latest at each change) for which pred holds."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                if self.states and pred(self.states[-1]):
                    return self.states[-1]
                left = deadline - time.monotonic()
                if left <= 0 or (self.proc.poll() is not None and not self._reader.is_alive()):
                    break
                self.cond.wait(min(left, 0.5))
        last = self.latest()
        brief = None if last is None else {
            "generation": last.get("generation"), "synced": last.get("synced"),
            "stats": last.get("stats"), "containers": sorted(last["containers"])}
        log = "" if server is None else "\nserver requests: " + "; ".join(
            f"{e['kind']} {e['query'].get('resourceVersion')} {e['status']}"
            for e in server.requests()[-15:])
        raise AssertionError(f"{self.name}: not {what} after {timeout} s "
                             f"(exit status {self.proc.poll()}); last state {brief}{log}\n"
                             f"stderr: {self.stderr()}")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._reader.join(5)
        self.proc.stdout.close()
        self._err.close()
        return self.proc.returncode


def synced_with(ids):
    ids = set(ids)
    return lambda s: s.get("synced") is True and set(s["containers"]) == ids


def has(cid):
    return lambda s: cid in s["containers"]


def lacks(cid):
    return lambda s: cid not in s["containers"]


class TokenDir:
    """A projected service account token as the kubelet writes it:
    DIR/..<timestamp>/token, DIR/..data -> ..<timestamp>, DIR/token ->
    ..data/token; rotate() writes a new timestamped directory and renames a
    new ..data symlink over the old one (atomic), then removes the old
    directory (the kubelet's AtomicWriter)."""

    def __init__(self, directory, token):
        self.dir = directory
        os.makedirs(directory)
        self._n = 0
        self._current = None
        self.rotate(token)
        os.symlink("..data/token", os.path.join(directory, "token"))
        self.path = os.path.join(directory, "token")

    def rotate(self, token):
        self._n += 1
        ts = f"..2026_12_01_00_00_{self._n:02d}.{os.getpid()}"
        os.mkdir(os.path.join(self.dir, ts))
        with open(os.path.join(self.dir, ts, "token"), "w") as f:
            f.write(token)
        tmp_link = os.path.join(self.dir, "..data_tmp")
        os.symlink(ts, tmp_link)
        os.rename(tmp_link, os.path.join(self.dir, "..data"))
        if self._current:
            os.remove(os.path.join(self.dir, self._current, "token"))
            os.rmdir(os.path.join(self.dir, self._current))
        self._current = ts


def node_ids(server, node=NODE):
    """The container ids of @node's pods on the server now."""
    with server.lock:
        pods = [p for p in server.pods.values() if p["spec"].get("nodeName") == node]
    return {cs["containerID"].split("://", 1)[1] for p in pods
            for key in ("containerStatuses", "initContainerStatuses")
            for cs in p["status"].get(key) or []}


# --- the scenarios -----------------------------------------------------------------

class ApiServer(livelib.Scenario):
    @classmethod
    def setUpClass(cls):
        cls.tmp = livelib.scratch()
        cls.certs = fake.make_certs(os.path.join(cls.tmp, "api-certs"))
        cls.tokens = TokenDir(os.path.join(cls.tmp, "serviceaccount"), "token-one")
        # no periodic bookmarks: the steps check which resourceVersion each watch resumes from
        cls.server = fake.FakeApiServer(cls.certs, token="token-one",
                                        bookmark_interval=None).start()
        cls.fixtures = fake.fixture_pods(NODE, OTHER)
        for role in ("deployment", "crio", "docker", "pending", "other_node"):
            cls.server.add_pod(cls.fixtures[role])
        cls.probe = None

    @classmethod
    def tearDownClass(cls):
        if cls.probe is not None:
            livelib.note(f"probe exit status {cls.probe.stop()}, "
                         f"{cls.probe.count()} states; last stats "
                         f"{(cls.probe.latest() or {}).get('stats')}")
        cls.server.stop()

    def wait(self, pred, what, timeout=WAIT):
        return self.probe.wait(pred, what, timeout, server=self.server)

    def consistent(self):
        """The index holds exactly the containers of this node's pods now."""
        want = node_ids(self.server)
        return self.wait(lambda st: set(st["containers"]) == want,
                         f"holding exactly this node's {len(want)} containers")

    def step_synced(self):
        s = self.server
        self.__class__.probe = Probe(self.tmp, "api", [
            "--url", s.url, "--node", NODE, "--token-file", self.tokens.path,
            "--ca-file", self.certs["ca"], "--source", "api_server",
            "--watch-timeout", str(WATCH_TIMEOUT), "--grace", str(GRACE)])
        state = self.wait(synced_with(EXPECTED), "synced with this node's five containers")
        for cid, want in EXPECTED.items():
            problems = label_problems(cid, state["containers"][cid]["labels"], want)
            self.assertEqual(problems, [], f"labels of {want[M + 'pod_container_name']}")
        served = [e for e in s.requests() if e["kind"] != "error"]
        if len(served) < len(s.requests()):
            livelib.note(f"connections that failed before a request: {s.counts().get('error')}")
        first = served[0]
        self.assertEqual(first["kind"], "list", f"first request: {first}")
        self.assertEqual(first["path"], "/api/v1/pods")
        self.assertEqual(first["query"].get("fieldSelector"), f"spec.nodeName={NODE}")
        self.assertEqual(first["token"], "token-one")
        watch = s.wait_for_request(lambda e: e["kind"] == "watch", WAIT, what="a watch")
        q = watch["query"]
        self.assertEqual(q.get("resourceVersion"), first["rv"], "the watch starts at the list's RV")
        self.assertEqual(q.get("fieldSelector"), f"spec.nodeName={NODE}")
        self.assertEqual(q.get("allowWatchBookmarks"), "true")
        self.assertEqual(q.get("timeoutSeconds"), str(WATCH_TIMEOUT))
        self.assertEqual(s.counts().get("list"), 1)
        livelib.note(f"synced at generation {state.get('generation')}, list RV {first['rv']}; "
                     f"stats {state.get('stats')}")

    def step_events(self):
        s = self.server
        self.wait(lambda st: st.get("synced"), "synced")
        lists = s.counts().get("list", 0)
        # a pod that arrives later
        late = fake.deployment_pod(NODE, name="cart-7c9d8f6b5-l8t3r")
        late_cart = fake.container_id("shop/cart-7c9d8f6b5-l8t3r/cart")
        s.add_pod(late)
        st = self.wait(has(late_cart), "showing the late pod's cart container")
        self.assertEqual(st["containers"][late_cart]["labels"].get(M + "pod_name"),
                         "cart-7c9d8f6b5-l8t3r")
        # a label change
        rev = st["containers"][CART]["rev"]
        s.modify_pod("shop", "cart-7c9d8f6b5-x2k4q",
                     lambda p: p["metadata"]["labels"].update({"track": "canary"}))
        st = self.wait(lambda st: st["containers"].get(CART, {}).get("labels", {})
                       .get(M + "pod_label_track") == "canary", "showing the new label track")
        self.assertNotEqual(st["containers"][CART]["rev"], rev, "cart's rev after MODIFIED")
        self.assertEqual(label_problems(CART, st["containers"][CART]["labels"],
                                        {**EXPECTED[CART], M + "pod_label_track": "canary"}), [])
        # a container restarted with a new id
        new_checkout = fake.container_id("shop/checkout-0/checkout#1")
        s.modify_pod("shop", "checkout-0", lambda p: fake.restarted(p, new_id=new_checkout))
        st = self.wait(lambda st: has(new_checkout)(st) and lacks(CHECKOUT)(st),
                       "showing checkout's new container id instead of the old")
        self.assertEqual(label_problems(new_checkout, st["containers"][new_checkout]["labels"],
                                        EXPECTED[CHECKOUT], scheme="cri-o://"), [])
        # the pending pod starts
        queued = fake.container_id("shop/queued-5d8f7/queued")
        running = fake.make_pod("queued-5d8f7", "shop", NODE, [("queued", "shop/queued:1.0")],
                                labels={"app": "queued"}, ip="10.244.1.20")
        s.modify_pod("shop", "queued-5d8f7", lambda p: p.update(status=running["status"]))
        st = self.wait(has(queued), "showing the formerly pending pod's container")
        self.assertEqual(st["containers"][queued]["labels"].get(M + "pod_phase"), "Running")
        self.assertEqual(st["containers"][queued]["labels"].get(M + "pod_ip"), "10.244.1.20")
        # a pod deleted: its container keeps its labels for the grace period
        # (a process still terminating), then goes
        deleted_at = time.monotonic()
        s.delete_pod("batch", "legacy-batch")
        self.wait(lacks(WORKER), "without the deleted pod's container")
        self.assertGreaterEqual(time.monotonic() - deleted_at, GRACE - 0.2,
                                "a deleted pod's container went before its grace")
        self.consistent()
        self.assertEqual(s.counts().get("list", 0), lists, "no list while the watch runs")

    def step_bookmark(self):
        s = self.server
        mark = s.mark()
        s.add_pod(fake.make_pod("idle-0", "shop", OTHER, [("idle", "shop/idle:1.0")]))
        bookmark_rv, n = s.bookmark()
        self.assertEqual(n, 1, "one open watch that allows bookmarks")
        dropped = time.monotonic()
        self.assertEqual(s.drop_watches(), 1)
        watch = s.wait_for_request(lambda e: e["kind"] == "watch", WAIT, since=mark,
                                   what="a watch after the dropped stream")
        self.assertEqual(watch["query"].get("resourceVersion"), bookmark_rv,
                         "the watch after the drop starts at the bookmark's RV")
        self.assertEqual(s.counts(since=mark).get("list", 0), 0, "no list after the drop")
        pod = fake.make_pod("after-bookmark", "shop", NODE, [("app", "shop/app:1.0")])
        s.add_pod(pod)
        self.wait(has(fake.container_id("shop/after-bookmark/app")),
                  "showing a pod added after the resumed watch")
        self.consistent()
        livelib.note(f"bookmark at RV {bookmark_rv}; resumed after "
                     f"{watch['t'] - dropped:.2f} s")

    def step_timeout(self):
        s = self.server
        mark = s.mark()
        last = s.delete_pod("shop", "after-bookmark")
        self.wait(lacks(fake.container_id("shop/after-bookmark/app")), "without after-bookmark")
        self.assertEqual(s.end_watches(), 1)
        watch = s.wait_for_request(lambda e: e["kind"] == "watch", WAIT, since=mark,
                                   what="a watch after the stream ended")
        self.assertEqual(watch["query"].get("resourceVersion"), last,
                         "the next watch starts at the last event's RV")
        self.assertEqual(s.counts(since=mark).get("list", 0), 0, "no list after a clean end")

    def step_expired(self):
        s = self.server
        self.wait(lambda st: st.get("synced"), "synced")
        mark = s.mark()
        gen = self.probe.latest().get("generation")
        s.page_size = 2  # a client that pages (limit) must follow continue
        with s.lock:  # atomically: the stream is cut before the deletion reaches it
            self.assertEqual(s.drop_watches(), 1)
            floor = s.expire_history()
            s.delete_pod("shop", "checkout-0")
        expired = s.wait_for_request(lambda e: e["kind"] == "watch" and e.get("expired"), WAIT,
                                     since=mark, what="a watch from the expired RV")
        self.assertLess(int(expired["query"].get("resourceVersion", "0")), int(floor))
        relist = s.wait_for_request(lambda e: e["kind"] == "list", WAIT, since=expired["n"],
                                    what="a list after 410")
        watch = s.wait_for_request(lambda e: e["kind"] == "watch", WAIT, since=relist["n"],
                                   what="a watch after the relist")
        self.assertEqual(watch["query"].get("resourceVersion"), relist["rv"])
        self.assertFalse(watch.get("expired"))
        new_checkout = fake.container_id("shop/checkout-0/checkout#1")
        want = node_ids(s)
        self.assertNotIn(new_checkout, want)
        st = self.wait(lambda st: set(st["containers"]) == want,
                       "without checkout-0 (deleted while expired), with the others")
        self.assertTrue(st.get("synced"))
        time.sleep(1)  # a relist storm would show here
        lists = [e for e in s.requests("list", since=mark)]
        pages = [e for e in lists if e["query"].get("continue")]
        self.assertEqual(len(lists) - len(pages), 1, "exactly one list after 410")
        if relist["query"].get("limit"):
            self.assertGreaterEqual(len(pages), 1, "a page with continue was not followed")
            self.assertTrue(all(e["status"] == 200 for e in pages))
        livelib.note(f"410 at RV {expired['query'].get('resourceVersion')} (oldest {floor}), "
                     f"relist {relist['t'] - expired['t']:.2f} s later in {len(lists)} "
                     f"page(s) (limit {relist['query'].get('limit')}); generation "
                     f"{gen} -> {st.get('generation')}")
        s.page_size = 0

    def step_token(self):
        s = self.server
        mark = s.mark()
        with s.lock:
            s.set_token("token-two")
            self.assertEqual(s.drop_watches(), 1)
        refused = s.wait_for_request(lambda e: e["kind"] == "unauthorized", WAIT, since=mark,
                                     what="a 401 with the old token")
        self.assertEqual(refused["token"], "token-one")
        self.tokens.rotate("token-two")
        rotated = time.monotonic()
        ok = s.wait_for_request(lambda e: e["status"] == 200 and e.get("token") == "token-two",
                                WAIT + 60, since=mark, what="a request with the new token")
        self.assertEqual(s.counts(since=ok["n"]).get("unauthorized", 0), 0)
        pod = fake.make_pod("after-rotation", "shop", NODE, [("app", "shop/app:1.0")])
        s.add_pod(pod)
        self.wait(has(fake.container_id("shop/after-rotation/app")),
                  "showing a pod added after the token rotation")
        self.consistent()
        livelib.within(self, "401s before the new token was read",
                       s.counts(since=mark).get("unauthorized", 0), 1, 10)
        # a client that re-reads the file only once a minute takes up to 60 s
        livelib.within(self, f"new token accepted ({ok['kind']}) after the file changed",
                       ok["t"] - rotated, 0, WAIT, unit=" s",
                       msg="the token file is to be read again after every 401")

    def step_other_node(self):
        others = {OTHER_CART, fake.container_id("shop/idle-0/idle")}
        seen = [cid for st in self.probe.all_states() for cid in st["containers"]
                if cid in others]
        self.assertEqual(seen, [], "containers of node-b's pods in the index")
        gens = [st.get("generation") for st in self.probe.all_states()]
        if all(isinstance(g, int) for g in gens):
            self.assertEqual(gens, sorted(gens), "generation went back")
        self.assertEqual(self.probe.noise, [], "probe stdout lines that are no state")


class Kubelet(unittest.TestCase):
    def test_kubelet_source(self):
        tmp = livelib.scratch()
        certs = fake.make_self_signed(os.path.join(tmp, "kubelet-certs"))
        ca = fake.make_certs(os.path.join(tmp, "kubelet-unrelated-ca"))["ca"]
        tokens = TokenDir(os.path.join(tmp, "kubelet-sa"), "kubelet-token")
        server = fake.FakeApiServer(certs, token="kubelet-token", kubelet_node=NODE).start()
        probe = None
        try:
            for pod in fake.fixture_pods(NODE, OTHER).values():
                server.add_pod(pod)
            probe = Probe(tmp, "kubelet", [
                "--url", server.url, "--node", NODE, "--token-file", tokens.path,
                "--ca-file", ca, "--insecure", "--source", "kubelet", "--poll", "1",
                "--grace", str(GRACE)])
            st = probe.wait(synced_with(EXPECTED), "synced with this node's five containers",
                            server=server)
            for cid, want in EXPECTED.items():
                self.assertEqual(label_problems(cid, st["containers"][cid]["labels"], want), [],
                                 f"labels of {want[M + 'pod_container_name']}")
            server.add_pod(fake.make_pod("polled", "shop", NODE, [("app", "shop/app:1.0")]))
            server.delete_pod("shop", "cart-7c9d8f6b5-x2k4q")
            polled = fake.container_id("shop/polled/app")
            probe.wait(lambda st: has(polled)(st) and lacks(CART)(st) and lacks(MIGRATE)(st),
                       "showing the added pod and not the deleted one", server=server)
            kinds = server.counts()
            self.assertEqual(set(kinds) - {"error"}, {"kubelet"}, f"requests: {kinds}")
            self.assertTrue(all(e.get("token") == "kubelet-token" and e["path"] == "/pods"
                                for e in server.requests("kubelet")))
            livelib.within(self, "kubelet polls in the run", kinds["kubelet"], 2, None)
        finally:
            if probe is not None:
                probe.stop()
            server.stop()


class Tls(unittest.TestCase):
    def test_unknown_ca(self):
        tmp = livelib.scratch()
        certs = fake.make_certs(os.path.join(tmp, "tls-certs"))
        wrong = fake.make_certs(os.path.join(tmp, "tls-wrong-ca"))["ca"]
        tokens = TokenDir(os.path.join(tmp, "tls-sa"), "tls-token")
        server = fake.FakeApiServer(certs, token="tls-token").start()
        probe = None
        try:
            server.add_pod(fake.fixture_pods(NODE)["deployment"])
            probe = Probe(tmp, "tls", [
                "--url", server.url, "--node", NODE, "--token-file", tokens.path,
                "--ca-file", wrong, "--source", "api_server",
                "--watch-timeout", str(WATCH_TIMEOUT)])
            time.sleep(3)
            self.assertEqual([e for e in server.requests() if e["kind"] != "error"], [],
                             "requests reached the server through an unverified TLS session")
            self.assertFalse(any(st.get("synced") or st["containers"]
                                 for st in probe.all_states()))
            livelib.note(f"TLS handshakes refused by the client: {server.counts().get('error', 0)}")
        finally:
            if probe is not None:
                probe.stop()
            server.stop()


if __name__ == "__main__":
    if not os.access(PROBE, os.X_OK):
        print(f"test_kube_client: skipped: no probe at {PROBE} (tests/integration/"
              f"kube_watch_probe, branch k1, is not built here)", file=sys.stderr)
        sys.exit(77)
    livelib.run(needs=("openssl",))
