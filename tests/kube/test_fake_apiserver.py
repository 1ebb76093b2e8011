# SPDX-License-Identifier: MIT
"""The fake API server (fake_apiserver.py) checked with the official client.

What keeps the fake honest: forky's python3-kubernetes 35.0.0 (the
kube-tools rootfs, scripts/python-rootfs.sh --kube-tools) runs
official_client.py in a chroot against the fake on loopback HTTPS (a CA
made by openssl, ssl_ca_cert, a bearer token), while this driver acts on
the server between its steps. Everything runs in setUpClass; the tests read
what the client reported:

    fixtures     every fixture pod, and every other shape the fake serves or
                 the tests make (fake_apiserver.validation_set(): restarted,
                 deleted, started pods, a PodList, a bookmark, Status
                 bodies) deserializes into its model and has no field or
                 JSON type the models do not know (kube_models.py)
    list         list_pod_for_all_namespaces(field_selector=spec.nodeName=N)
                 decodes into V1PodList of V1Pod, holds this node's four pods
                 and not the other node's, passes the strict walk; limit=2
                 pages through the same pods; list_namespaced_pod too
    watch        Watch().stream(..., resource_version=<the list's>,
                 allow_watch_bookmarks=True, timeout_seconds=10) sees ADDED,
                 MODIFIED, DELETED and BOOKMARK in order with the server's
                 resourceVersions, every object a V1Pod (the bookmark
                 too, checked strictly), nothing of the other node's pods
    timeout      a watch without resourceVersion gets ADDED for every pod,
                 then ends at its timeoutSeconds (2 s)
    expired      after expire_history() a watch from the old RV raises
                 ApiException 410 (the ERROR event's Status, reason Expired)
    token        a wrong token: ApiException 401 with a Status, reason
                 Unauthorized; after set_token() the old token gets 401 and
                 the new one the list

Needs root (chroot) and the kube-tools rootfs (else skipped, exit 77).
Run by ctest as test_fake_apiserver (label integration), or by hand:
    /usr/bin/python3 tests/kube/test_fake_apiserver.py [-v]
Environment: PYPROFD_KUBE_ROOTFS (default: python-rootfs.sh --kube-tools
--print-path).
"""

import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, HERE)
import fake_apiserver as fake  # noqa: E402
import livelib  # noqa: E402

NODE = "node-a"
TOKEN = "fake-sa-token-0"
STEP_TIMEOUT = 30


def kube_rootfs():
    path = os.environ.get("PYPROFD_KUBE_ROOTFS")
    if not path:
        out = subprocess.run([os.path.join(livelib.SOURCE_DIR, "scripts", "python-rootfs.sh"),
                              "--kube-tools", "--print-path"], capture_output=True, text=True)
        path = out.stdout.strip()
    return os.path.realpath(path) if path else None


def missing():
    """Why this test cannot run here, or None."""
    if os.geteuid() != 0:
        return "must run as root (chroot into the kube-tools rootfs)"
    root = kube_rootfs()
    client = os.path.join(root or "/nonexistent", "usr/lib/python3/dist-packages/kubernetes")
    if not root or not os.path.isdir(client):
        return (f"no python3-kubernetes in the kube-tools rootfs ({root}): "
                "run scripts/python-rootfs.sh --kube-tools")
    if not shutil.which("openssl"):
        return "no openssl"
    return None


class OfficialClient(unittest.TestCase):
    steps = {}

    @classmethod
    def setUpClass(cls):
        tmp = livelib.scratch()
        certs = fake.make_certs(os.path.join(tmp, "certs"))
        root = kube_rootfs()
        # what the chroot needs, in a directory of its own inside the rootfs
        cls.inside = tempfile.mkdtemp(prefix="pyprofd-kube-", dir=os.path.join(root, "tmp"))
        os.chmod(cls.inside, 0o755)
        jail = "/tmp/" + os.path.basename(cls.inside)
        for name in ("official_client.py", "kube_models.py"):
            shutil.copy(os.path.join(HERE, name), cls.inside)
        shutil.copy(certs["ca"], os.path.join(cls.inside, "ca.crt"))
        cls.fixtures = fake.fixture_pods(NODE)
        cls.shapes = fake.validation_set(NODE)
        with open(os.path.join(cls.inside, "fixtures.json"), "w") as f:
            json.dump(cls.shapes, f)
        # no periodic bookmarks: the watch step checks the exact sequence of events
        cls.server = fake.FakeApiServer(certs, token=TOKEN, bookmark_interval=None).start()
        cls.expect = {}
        try:
            for role in ("deployment", "crio", "docker", "pending", "other_node"):
                cls.server.add_pod(cls.fixtures[role])
            cls._run_client(root, jail, tmp)
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        shutil.rmtree(cls.inside, ignore_errors=True)

    @classmethod
    def _run_client(cls, root, jail, tmp):
        s = cls.server
        err = open(os.path.join(tmp, "official_client.stderr"), "w+")
        proc = subprocess.Popen(
            ["chroot", root, "/usr/bin/python3", f"{jail}/official_client.py", s.url,
             f"{jail}/ca.crt", TOKEN, NODE, f"{jail}/fixtures.json"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True, bufsize=1,
            env=livelib.TARGET_ENV, cwd="/")
        try:
            for line in cls._lines(proc, err):
                msg = json.loads(line)
                if "step" in msg:
                    cls.steps[msg["step"]] = msg
                    if msg["step"] == "done":
                        break
                    continue
                name = msg["sync"]
                if name == "expire":
                    cls.expect["floor"] = s.expire_history()
                elif name == "rotate":
                    s.set_token(TOKEN + "-rotated")
                proc.stdin.write("go\n")
                proc.stdin.flush()
                if name == "watch":
                    cls._finish_watch()
            proc.wait(timeout=STEP_TIMEOUT)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stdin.close()
            proc.stdout.close()
            err.close()

    @classmethod
    def _lines(cls, proc, err):
        """The client's stdout lines (a reader thread: select() on a buffered
        pipe misses lines already read into the buffer)."""
        lines = queue.Queue()

        def reader():
            for line in proc.stdout:
                lines.put(line)
            lines.put(None)

        threading.Thread(target=reader, daemon=True).start()
        while True:
            try:
                line = lines.get(timeout=STEP_TIMEOUT)
            except queue.Empty:
                line = "silent"
            if not line or line == "silent":
                err.seek(0)
                raise RuntimeError(f"official_client.py: {'exited' if not line else 'silent'} "
                                   f"after the steps {sorted(cls.steps)}:\n{err.read()[-3000:]}")
            yield line

    @classmethod
    def _finish_watch(cls):
        """Once the client's watch is open: add, modify, delete a pod (and add
        one on another node), bookmark, end the stream."""
        s = cls.server
        deadline = time.monotonic() + STEP_TIMEOUT
        while s.watches() == 0:
            if time.monotonic() > deadline:
                raise RuntimeError("the client's watch never arrived")
            time.sleep(0.02)
        pod = fake.deployment_pod(NODE, name="cart-7c9d8f6b5-n3w9p")
        e = cls.expect
        e["added"] = s.add_pod(pod)
        e["other"] = s.add_pod(fake.make_pod("cart-7c9d8f6b5-q7r2t", "shop", "node-b",
                                             [("cart", "shop/cart:1.4.2")],
                                             labels={"app": "cart"}))
        e["modified"] = s.modify_pod("shop", "cart-7c9d8f6b5-n3w9p",
                                     lambda p: p["metadata"]["labels"].update(version="v2"))
        e["deleted"] = s.delete_pod("shop", "cart-7c9d8f6b5-n3w9p")
        s.bump()  # the bookmark's RV is ahead of every pod event
        e["bookmark"], n = s.bookmark()
        if n != 1:
            raise RuntimeError(f"the bookmark reached {n} watches, not 1")
        s.end_watches()

    def step(self, name):
        self.assertIn(name, self.steps, f"official_client.py did not report {name}")
        return self.steps[name]

    def test_fixtures(self):
        errors = self.step("fixtures")["errors"]
        self.assertEqual(sorted(errors), sorted(self.shapes))
        for name, errs in errors.items():
            self.assertEqual(errs, [], f"{name} ({self.shapes[name][0]})")
        livelib.note(f"{len(errors)} shapes valid: {', '.join(sorted(errors))}")

    def test_list(self):
        r = self.step("list")
        ours = sorted(p["metadata"]["name"] for role, p in self.fixtures.items()
                      if role != "other_node")
        self.assertEqual(r["type"], "V1PodList")
        self.assertEqual(r["item_types"], ["V1Pod"])
        self.assertEqual(sorted(r["names"]), ours)
        self.assertEqual(r["errors"], [])
        self.assertEqual([n for page in r["pages"] for n in page], r["names"])
        self.assertEqual([len(p) for p in r["pages"]], [2, 2])
        self.assertEqual(sorted(r["namespaced"]),
                         sorted(p["metadata"]["name"] for role, p in self.fixtures.items()
                                if role != "other_node" and p["metadata"]["namespace"] == "shop"))
        dep = self.fixtures["deployment"]["status"]["containerStatuses"]
        self.assertEqual(r["containers"]["cart-7c9d8f6b5-x2k4q"], [c["containerID"] for c in dep])
        self.assertTrue(all(c.startswith("containerd://") and len(c) == 13 + 64 for c in
                            r["containers"]["cart-7c9d8f6b5-x2k4q"]))
        self.assertTrue(r["containers"]["checkout-0"][0].startswith("cri-o://"))
        self.assertTrue(r["containers"]["legacy-batch"][0].startswith("docker://"))
        self.assertEqual(r["containers"]["queued-5d8f7"], [])
        livelib.note(f"list: {len(r['names'])} pods at resourceVersion {r['rv']}, "
                     f"pages {r['pages']}")

    def test_watch(self):
        r = self.step("watch")
        e = self.expect
        name = "cart-7c9d8f6b5-n3w9p"
        self.assertEqual(r["events"], [["ADDED", name, e["added"], "V1Pod"],
                                       ["MODIFIED", name, e["modified"], "V1Pod"],
                                       ["DELETED", name, e["deleted"], "V1Pod"],
                                       ["BOOKMARK", None, e["bookmark"], "dict"]])
        self.assertEqual(r["errors"], [])
        livelib.note(f"watch: {[ev[0] for ev in r['events']]} in {r['seconds']:.1f} s "
                     f"(ended by the server)")

    def test_timeout(self):
        r = self.step("timeout")
        ours = sorted(p["metadata"]["name"] for role, p in self.fixtures.items()
                      if role != "other_node")
        self.assertEqual(sorted(n for t, n in r["events"]), ours)
        self.assertEqual({t for t, n in r["events"]}, {"ADDED"})
        livelib.within(self, "a watch with timeoutSeconds=2 lasted", r["seconds"], 1.8, 6,
                       unit=" s")

    def test_expired(self):
        r = self.step("expired")
        self.assertIsNotNone(r["exception"], f"no exception; events {r.get('events')}")
        self.assertEqual(r["exception"]["status"], 410)
        self.assertIn("Expired: too old resource version", r["exception"]["reason"])
        self.assertTrue(any(q["query"].get("watch") and q.get("expired")
                            for q in self.server.requests("watch")))

    def test_token(self):
        r = self.step("wrong_token")["exception"]
        self.assertIsNotNone(r)
        self.assertEqual(r["status"], 401)
        self.assertEqual(r["body"]["kind"], "Status")
        self.assertEqual(r["body"]["reason"], "Unauthorized")
        rot = self.step("rotated")
        self.assertIsNotNone(rot["old"], "the old token still works after set_token")
        self.assertEqual(rot["old"]["status"], 401)
        self.assertEqual(len(rot["new_names"]), 4)
        self.assertEqual(self.server.counts().get("unauthorized"), 2)


if __name__ == "__main__":
    why = missing()
    if why:
        print(f"test_fake_apiserver: {why}", file=sys.stderr)
        sys.exit(77)
    livelib.run(needs=("root", "openssl"))
