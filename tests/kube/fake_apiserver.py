# SPDX-License-Identifier: MIT
"""A fake Kubernetes API server (and kubelet) for the pod metadata tests.

Standard library only (Debian's python3). It runs in the test's own process
on loopback HTTPS and speaks the real API server's wire format for pods:

    GET /api/v1/pods?fieldSelector=spec.nodeName%3DNODE[&limit=N&continue=T]
    GET /api/v1/namespaces/NS/pods?...          (the official client's other path)
        a v1 PodList, filtered by the field selector (spec.nodeName=X,
        metadata.namespace=X, metadata.name=X; comma = and), paginated by
        limit/continue (a consistent snapshot per list, remainingItemCount;
        page_size caps a page below the client's limit, as the API allows)
    ...&watch=1|true&resourceVersion=RV&allowWatchBookmarks=true&timeoutSeconds=N
        HTTP/1.1 200, chunked, application/json, one event per line
        {"type":"ADDED|MODIFIED|DELETED|BOOKMARK","object":{...}}: the events
        after RV from the history log, then live ones, until timeoutSeconds;
        RV absent or "0": ADDED for every pod, then live events; RV older
        than the retained history: one ERROR event carrying a Status
        (reason Expired, code 410), then the end of the stream
    GET /pods                                    (the kubelet's read-only list)
        a PodList of the pods on the server's kubelet_node
    Authorization: Bearer TOKEN must match the current token, else 401 with
    a Status (reason Unauthorized); no token configured: anything goes

Control (methods, from any thread): add_pod, modify_pod, delete_pod (each
bumps the resourceVersion and logs the event), bookmark, drop_watches (half
an event line, then the connection is cut), end_watches (a clean end, as a
timeout), expire_history (the next watch from an older RV gets 410),
set_token (the old token gets 401 from then on), and the request log:
requests(), counts() ({"list": n, "watch": n, "kubelet": n,
"unauthorized": n, ...}), wait_for_request().

Fixtures: fixture_pods(node) gives real-shaped pods (a Deployment pod with
an init container on containerd, a CRI-O pod, a Docker pod, a pending pod
without containerStatuses, a pod of another node), make_pod() more of
them, restarted() and deleted() their later states; validation_set() is
every shape served, which test_fake_apiserver.py checks against the
official client's models (kube_models.py).

make_certs(dir) makes a CA and a server certificate for IP:127.0.0.1 with
openssl; make_self_signed(dir) a kubelet-style self-signed one.

By hand: /usr/bin/python3 tests/kube/fake_apiserver.py [--node NODE]
serves the fixtures until Ctrl-C and prints its URL, token and CA file.
"""

import base64
import copy
import hashlib
import http.server
import json
import os
import queue
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse

DEFAULT_WATCH_TIMEOUT = 60  # a watch without timeoutSeconds (the real server picks 30-60 min)


# --- certificates ------------------------------------------------------------

def _openssl(cwd, *args):
    out = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True,
                         timeout=60)
    if out.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(args)} failed: {out.stderr.strip()}")


_EC = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")


def make_certs(directory, name="kube-apiserver"):
    """A CA and a server certificate (SAN IP:127.0.0.1, DNS:localhost) signed
    by it, in @directory: returns {"ca": ca.crt, "cert": server.crt,
    "key": server.key}. The extensions are those a strict verifier wants
    (CA basicConstraints and keyUsage critical, key identifiers)."""
    os.makedirs(directory, exist_ok=True)
    _openssl(directory, "req", "-x509", *_EC, "-keyout", "ca.key", "-out", "ca.crt",
             "-days", "2", "-subj", "/CN=fake-kubernetes-ca",
             "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign",
             "-addext", "subjectKeyIdentifier=hash")
    _openssl(directory, "req", *_EC, "-keyout", "server.key", "-out", "server.csr",
             "-subj", f"/CN={name}")
    with open(os.path.join(directory, "server.ext"), "w") as f:
        f.write("basicConstraints=critical,CA:FALSE\n"
                "keyUsage=critical,digitalSignature,keyEncipherment\n"
                "extendedKeyUsage=serverAuth\n"
                "subjectKeyIdentifier=hash\n"
                "authorityKeyIdentifier=keyid:always\n"
                "subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    _openssl(directory, "x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
             "-CAcreateserial", "-out", "server.crt", "-days", "2", "-extfile", "server.ext")
    return {"ca": os.path.join(directory, "ca.crt"),
            "cert": os.path.join(directory, "server.crt"),
            "key": os.path.join(directory, "server.key")}


def make_self_signed(directory, name="127.0.0.1"):
    """A self-signed serving certificate as a kubelet makes one for itself
    (CN host@timestamp, SAN IP:127.0.0.1): {"cert": ..., "key": ...}; a
    client can only take it with verification off (--insecure)."""
    os.makedirs(directory, exist_ok=True)
    _openssl(directory, "req", "-x509", *_EC, "-keyout", "kubelet.key", "-out", "kubelet.crt",
             "-days", "2", "-subj", f"/CN={name}@{int(time.time())}",
             "-addext", "subjectAltName=IP:127.0.0.1",
             "-addext", "extendedKeyUsage=serverAuth")
    return {"cert": os.path.join(directory, "kubelet.crt"),
            "key": os.path.join(directory, "kubelet.key")}


# --- fixtures ----------------------------------------------------------------

def container_id(seed):
    """A stable 64-hex container id for @seed."""
    return hashlib.sha256(seed.encode()).hexdigest()


def _uid(seed):
    h = hashlib.sha256(("uid:" + seed).encode()).hexdigest()
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-8{h[17:20]}-{h[20:32]}"


def _image_id(image):
    return image.split(":")[0] + "@sha256:" + hashlib.sha256(image.encode()).hexdigest()


T0 = "2026-11-30T08:00:00Z"
T1 = "2026-11-30T08:00:05Z"
T2 = "2026-11-30T08:00:07Z"


def _container_spec(name, image, port=None):
    c = {"name": name, "image": image, "resources": {},
         "terminationMessagePath": "/dev/termination-log",
         "terminationMessagePolicy": "File", "imagePullPolicy": "IfNotPresent"}
    if port:
        c["ports"] = [{"name": "http", "containerPort": port, "protocol": "TCP"}]
    return c


def _running_status(name, image, cid, restarts=0):
    return {"name": name, "state": {"running": {"startedAt": T2}}, "lastState": {},
            "ready": True, "restartCount": restarts, "image": image,
            "imageID": _image_id(image), "containerID": cid, "started": True}


def make_pod(name, namespace, node, containers, runtime="containerd", init=(), labels=None,
             annotations=None, owner=None, phase="Running", ip="10.244.1.10",
             host_ip="192.0.2.10"):
    """A pod as the API server returns it.

    @containers and @init are lists of (name, image); their ids are
    container_id("<namespace>/<name>/<container>") under the @runtime scheme
    (containerd, cri-o, docker). @owner is (kind, name, apiVersion) of the
    controller. phase "Pending" makes a just-scheduled pod: no IP, no
    container statuses, PodScheduled only.
    """
    scheme = {"containerd": "containerd://", "cri-o": "cri-o://", "docker": "docker://"}[runtime]
    meta = {"name": name, "namespace": namespace, "uid": _uid(f"{namespace}/{name}"),
            "resourceVersion": "0", "creationTimestamp": T0,
            "labels": dict(labels or {}), "annotations": dict(annotations or {})}
    if owner:
        kind, oname, api = owner
        meta["generateName"] = oname + "-"
        meta["ownerReferences"] = [{"apiVersion": api, "kind": kind, "name": oname,
                                    "uid": _uid(f"{namespace}/{kind}/{oname}"),
                                    "controller": True, "blockOwnerDeletion": True}]
    spec = {"nodeName": node,
            "containers": [_container_spec(c, img, 8080 if i == 0 else None)
                           for i, (c, img) in enumerate(containers)],
            "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst", "serviceAccountName": "default",
            "serviceAccount": "default", "securityContext": {},
            "schedulerName": "default-scheduler", "enableServiceLinks": True,
            "priority": 0, "preemptionPolicy": "PreemptLowerPriority",
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                             "effect": "NoExecute", "tolerationSeconds": 300}]}
    if init:
        spec["initContainers"] = [_container_spec(c, img) for c, img in init]
    if phase == "Pending":
        status = {"phase": "Pending", "qosClass": "BestEffort",
                  "conditions": [{"type": "PodScheduled", "status": "True",
                                  "lastProbeTime": None, "lastTransitionTime": T0}]}
    else:
        cid = lambda c: scheme + container_id(f"{namespace}/{name}/{c}")  # noqa: E731
        status = {"phase": phase, "qosClass": "BestEffort", "hostIP": host_ip,
                  "hostIPs": [{"ip": host_ip}], "podIP": ip, "podIPs": [{"ip": ip}],
                  "startTime": T0,
                  "conditions": [{"type": t, "status": "True", "lastProbeTime": None,
                                  "lastTransitionTime": T1 if t != "PodScheduled" else T0}
                                 for t in ("PodReadyToStartContainers", "Initialized", "Ready",
                                           "ContainersReady", "PodScheduled")],
                  "containerStatuses": [_running_status(c, img, cid(c))
                                        for c, img in containers]}
        if init:
            status["initContainerStatuses"] = [
                {"name": c, "state": {"terminated": {"exitCode": 0, "reason": "Completed",
                                                     "startedAt": T0, "finishedAt": T1,
                                                     "containerID": cid(c)}},
                 "lastState": {}, "ready": True, "restartCount": 0, "image": img,
                 "imageID": _image_id(img), "containerID": cid(c), "started": False}
                for c, img in init]
    return {"kind": "Pod", "apiVersion": "v1", "metadata": meta, "spec": spec, "status": status}


def deployment_pod(node, name="cart-7c9d8f6b5-x2k4q", rs="cart-7c9d8f6b5"):
    """The Deployment pod: ReplicaSet controller, app=cart, pod-template-hash,
    pyroscope.io/service_name, two containers and an init container, containerd."""
    return make_pod(name, "shop", node,
                    [("cart", "shop/cart:1.4.2"), ("envoy", "proxy/envoy:1.31.0")],
                    init=[("migrate", "shop/cart-migrate:1.4.2")],
                    labels={"app": "cart", "pod-template-hash": rs.rsplit("-", 1)[1],
                            "app.kubernetes.io/version": "1.4.2"},
                    annotations={"pyroscope.io/service_name": "shop-cart",
                                 "kubectl.kubernetes.io/default-container": "cart"},
                    owner=("ReplicaSet", rs, "apps/v1"), ip="10.244.1.17")


def fixture_pods(node, other_node="node-b"):
    """Every fixture, by role: deployment, crio, docker, pending, other_node."""
    return {
        "deployment": deployment_pod(node),
        "crio": make_pod("checkout-0", "shop", node, [("checkout", "shop/checkout:2.0")],
                         runtime="cri-o", labels={"app": "checkout"},
                         owner=("StatefulSet", "checkout", "apps/v1"), ip="10.244.1.18"),
        "docker": make_pod("legacy-batch", "batch", node, [("worker", "batch/worker:0.9")],
                           runtime="docker", labels={"app": "legacy"}, ip="10.244.1.19"),
        "pending": make_pod("queued-5d8f7", "shop", node, [("queued", "shop/queued:1.0")],
                            labels={"app": "queued"}, phase="Pending"),
        "other_node": make_pod("cart-7c9d8f6b5-zz9w1", "shop", other_node,
                               [("cart", "shop/cart:1.4.2")], labels={"app": "cart"},
                               owner=("ReplicaSet", "cart-7c9d8f6b5", "apps/v1"),
                               ip="10.244.2.5", host_ip="192.0.2.11"),
    }


def restarted(pod, index=0, new_id=None, scheme=None):
    """@pod (changed in place) after its container @index was OOM-killed and
    restarted with the container id @new_id (64 hex; default derived from
    the old); returns the new id."""
    cs = pod["status"]["containerStatuses"][index]
    old_scheme, old = cs["containerID"].split("://", 1)
    new_id = new_id or container_id(old + "#restart")
    cs["lastState"] = {"terminated": {"exitCode": 137, "reason": "OOMKilled", "startedAt": T0,
                                      "finishedAt": T2, "containerID": cs["containerID"]}}
    cs["containerID"] = (scheme or old_scheme + "://") + new_id
    cs["restartCount"] += 1
    return new_id


def deleted(pod):
    """@pod (changed in place) as a DELETED event carries it."""
    pod["metadata"]["deletionTimestamp"] = T2
    pod["metadata"]["deletionGracePeriodSeconds"] = 0
    return pod


def validation_set(node):
    """Every object shape this module serves, for kube_models.py:
    {name: [model, object]}: the fixtures, the variants the tests make
    (a minimal pod, a restarted container, a deleted pod, a pending pod
    started), a PodList, a bookmark and the Status bodies."""
    pods = fixture_pods(node)
    out = {role: ["V1Pod", p] for role, p in pods.items()}
    out["minimal"] = ["V1Pod", make_pod("app-0", "shop", node, [("app", "shop/app:1.0")])]
    r = copy.deepcopy(pods["crio"])
    restarted(r)
    out["restarted"] = ["V1Pod", r]
    out["deleted"] = ["V1Pod", deleted(copy.deepcopy(pods["deployment"]))]
    started = copy.deepcopy(pods["pending"])
    started["status"] = make_pod("queued-5d8f7", "shop", node, [("queued", "shop/queued:1.0")],
                                 ip="10.244.1.20")["status"]
    out["started"] = ["V1Pod", started]
    out["podlist"] = ["V1PodList", {"kind": "PodList", "apiVersion": "v1",
                                    "metadata": {"resourceVersion": "7", "continue": "x",
                                                 "remainingItemCount": 1},
                                    "items": [pods["docker"]]}]
    out["bookmark"] = ["V1Pod", {"kind": "Pod", "apiVersion": "v1",
                                 "metadata": {"resourceVersion": "7"}}]
    for code, reason in ((401, "Unauthorized"), (410, "Expired"), (400, "BadRequest"),
                         (404, "NotFound")):
        out[f"status_{code}"] = ["V1Status", status_body(code, reason, "message")]
    return out


def status_body(code, reason, message):
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}


# --- the server --------------------------------------------------------------

class _Watcher:
    def __init__(self, selector, bookmarks):
        self.selector = selector
        self.bookmarks = bookmarks
        self.q = queue.Queue()


def _parse_selector(text):
    """spec.nodeName=X,metadata.namespace=Y -> [(path, value, equal)]; None if malformed."""
    out = []
    for term in filter(None, (text or "").split(",")):
        for op, eq in (("!=", False), ("==", True), ("=", True)):
            if op in term:
                key, value = term.split(op, 1)
                break
        else:
            return None
        if key not in ("spec.nodeName", "metadata.namespace", "metadata.name"):
            return None
        out.append((key.split("."), value, eq))
    return out


def _matches(pod, selector, namespace=None):
    if namespace is not None and pod["metadata"]["namespace"] != namespace:
        return False
    for path, value, eq in selector:
        v = pod.get(path[0], {}).get(path[1], "")
        if (v == value) != eq:
            return False
    return True


class FakeApiServer:
    """The server; start() it, stop() it (also on failure).

    @token: the bearer token required (None: none required). @certs: from
    make_certs() or make_self_signed(). @kubelet_node: whose pods GET /pods
    returns.
    """

    def __init__(self, certs, token=None, kubelet_node=None):
        self.lock = threading.Condition()
        self.token = token
        self.kubelet_node = kubelet_node
        self.rv = 100                 # the last resourceVersion issued
        self.floor = 0                # a watch from an RV below this gets 410
        self.pods = {}                # (namespace, name) -> pod
        self.history = []             # (rv, type, pod)
        self.watchers = set()
        self.log = []                 # one dict per request
        self.continues = {}           # continue token -> remaining items, rv
        self.page_size = 0            # >0: a list with limit gets at most this many per page
        self._conns = set()
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(certs["cert"], certs["key"])
        ctx.set_alpn_protocols(["http/1.1"])
        self._ctx = ctx
        self._httpd = None
        self._thread = None
        self.port = None
        self.url = None

    # --- lifecycle

    def start(self):
        fake = self

        class Handler(_Handler):
            server_state = fake

        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        httpd.daemon_threads = True
        httpd.socket = self._ctx.wrap_socket(httpd.socket, server_side=True,
                                             do_handshake_on_connect=False)
        httpd.handle_error = self._handle_error
        self._httpd = httpd
        self.port = httpd.server_address[1]
        self.url = f"https://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.1},
                                        name="fake-apiserver", daemon=True)
        self._thread.start()
        return self

    def stop(self):
        """Ends every watch, closes every connection, stops serving."""
        if self._httpd is None:
            return
        with self.lock:
            for w in self.watchers:
                w.q.put(("end",))
            conns = list(self._conns)
        self._httpd.shutdown()
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._httpd.server_close()
        self._thread.join(5)
        self._httpd = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def _handle_error(self, request, client_address):
        # TLS handshakes a client refused, connections it cut: logged, not printed
        e = sys.exc_info()[1]
        self._record({"kind": "error", "path": None, "query": {}, "status": None,
                      "error": f"{type(e).__name__}: {e}"})

    # --- control

    def _bump(self):
        self.rv += 1
        return str(self.rv)

    def _event(self, etype, pod):
        """Logs an event and hands it to the watches it matches (lock held)."""
        rv = int(pod["metadata"]["resourceVersion"])
        snap = copy.deepcopy(pod)
        self.history.append((rv, etype, snap))
        line = _event_line(etype, snap)
        for w in self.watchers:
            if _matches(snap, w.selector[0], w.selector[1]):
                w.q.put(("line", line))
        self.lock.notify_all()

    def add_pod(self, pod):
        """Adds @pod (a fixture dict; copied) as ADDED; returns its resourceVersion."""
        with self.lock:
            pod = copy.deepcopy(pod)
            key = (pod["metadata"]["namespace"], pod["metadata"]["name"])
            if key in self.pods:
                raise ValueError(f"pod {key} exists")
            pod["metadata"]["resourceVersion"] = self._bump()
            self.pods[key] = pod
            self._event("ADDED", pod)
            return pod["metadata"]["resourceVersion"]

    def modify_pod(self, namespace, name, change):
        """Calls @change(pod) on a copy of the pod, stores it as MODIFIED;
        returns its new resourceVersion."""
        with self.lock:
            pod = copy.deepcopy(self.pods[(namespace, name)])
            change(pod)
            pod["metadata"]["resourceVersion"] = self._bump()
            self.pods[(namespace, name)] = pod
            self._event("MODIFIED", pod)
            return pod["metadata"]["resourceVersion"]

    def delete_pod(self, namespace, name):
        """Removes the pod (DELETED carries its last state, at a new RV); returns the RV."""
        with self.lock:
            pod = deleted(self.pods.pop((namespace, name)))
            pod["metadata"]["resourceVersion"] = self._bump()
            self._event("DELETED", pod)
            return pod["metadata"]["resourceVersion"]

    def pod(self, namespace, name):
        with self.lock:
            return copy.deepcopy(self.pods[(namespace, name)])

    def bookmark(self):
        """A BOOKMARK at the current RV to every open watch that allows
        bookmarks; returns (rv, how many watches got it)."""
        with self.lock:
            rv = str(self.rv)
            line = _event_line("BOOKMARK", {"kind": "Pod", "apiVersion": "v1",
                                            "metadata": {"resourceVersion": rv}})
            n = 0
            for w in self.watchers:
                if w.bookmarks:
                    w.q.put(("line", line))
                    n += 1
            return rv, n

    def bump(self):
        """Takes an RV without an event any watch of pods sees (another
        resource was written); returns it."""
        with self.lock:
            return self._bump()

    def drop_watches(self):
        """Every open watch gets half an event line, then its connection is
        cut (no terminating chunk); returns how many."""
        return self._to_watchers(("drop",))

    def end_watches(self):
        """Every open watch ends cleanly (as at timeoutSeconds); returns how many."""
        return self._to_watchers(("end",))

    def _to_watchers(self, item):
        with self.lock:
            for w in self.watchers:
                w.q.put(item)
            return len(self.watchers)

    def watches(self):
        with self.lock:
            return len(self.watchers)

    def expire_history(self):
        """Compaction: the history is gone and the RV moves on; a watch from
        any RV issued before gets ERROR 410 (a list gives a fresh one).
        Returns the new oldest RV a watch may start from."""
        with self.lock:
            self.history.clear()
            self.continues.clear()
            self.floor = int(self._bump())
            return str(self.floor)

    def set_token(self, token):
        """From now on only @token is accepted (open watches go on)."""
        with self.lock:
            self.token = token

    # --- the request log

    def _record(self, entry):
        with self.lock:
            entry["t"] = time.monotonic()
            entry["n"] = len(self.log)
            self.log.append(entry)
            self.lock.notify_all()

    def requests(self, kind=None, since=0):
        """The log (copies) from index @since: dicts with kind ("list",
        "watch", "kubelet", "unauthorized", "bad", "notfound", "error"),
        path, query (dict), status, token, n (index), t (monotonic)."""
        with self.lock:
            return [dict(e) for e in self.log[since:] if kind is None or e["kind"] == kind]

    def mark(self):
        """The log's length now (for requests(since=...))."""
        with self.lock:
            return len(self.log)

    def counts(self, since=0):
        out = {}
        for e in self.requests(since=since):
            out[e["kind"]] = out.get(e["kind"], 0) + 1
        return out

    def wait_for_request(self, pred, timeout, since=0, what="a request"):
        """The first log entry from @since for which pred(entry) holds,
        waiting up to @timeout s; AssertionError naming @what otherwise."""
        deadline = time.monotonic() + timeout
        with self.lock:
            while True:
                for e in self.log[since:]:
                    if pred(e):
                        return dict(e)
                left = deadline - time.monotonic()
                if left <= 0:
                    kinds = [(e["kind"], e["query"].get("resourceVersion"), e["status"])
                             for e in self.log[since:]]
                    raise AssertionError(f"no {what} in {timeout} s; requests since: {kinds}")
                self.lock.wait(left)

    # --- serving (called by the handler)

    def _list(self, selector, namespace, query):
        with self.lock:
            cont = query.get("continue")
            if cont:
                state = self.continues.pop(cont, None)
                if state is None:
                    return 410, status_body(410, "Expired",
                                            "The provided continue parameter is too old "
                                            "to display a consistent list result. You can "
                                            "start a new list without the continue parameter.")
                items, rv = state
            else:
                items = [copy.deepcopy(p) for k, p in sorted(self.pods.items())
                         if _matches(p, selector, namespace)]
                rv = str(self.rv)
            meta = {"resourceVersion": rv}
            limit = int(query.get("limit") or 0)
            if limit > 0 and self.page_size > 0:
                limit = min(limit, self.page_size)  # "may return fewer than limit"
            if limit > 0 and len(items) > limit:
                rest = items[limit:]
                items = items[:limit]
                token = base64.urlsafe_b64encode(os.urandom(12)).decode()
                self.continues[token] = (rest, rv)
                meta["continue"] = token
                meta["remainingItemCount"] = len(rest)
            return 200, {"kind": "PodList", "apiVersion": "v1", "metadata": meta,
                         "items": items}

    def _kubelet_list(self):
        with self.lock:
            items = [copy.deepcopy(p) for k, p in sorted(self.pods.items())
                     if p["spec"].get("nodeName") == self.kubelet_node]
        return {"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": items}

    def _open_watch(self, selector, namespace, query):
        """(initial lines, watcher) or (410 ERROR line, None)."""
        rv = query.get("resourceVersion") or "0"
        bookmarks = query.get("allowWatchBookmarks", "").lower() in ("true", "1")
        with self.lock:
            if rv == "0":
                lines = [_event_line("ADDED", p) for k, p in sorted(self.pods.items())
                         if _matches(p, selector, namespace)]
            else:
                n = int(rv)
                if n < self.floor:
                    return [_event_line("ERROR", status_body(
                        410, "Expired", f"too old resource version: {n} ({self.floor})"))], None
                lines = [_event_line(t, p) for r, t, p in self.history
                         if r > n and _matches(p, selector, namespace)]
            w = _Watcher((selector, namespace), bookmarks)
            self.watchers.add(w)
            return lines, w

    def _close_watch(self, w):
        with self.lock:
            self.watchers.discard(w)


def _event_line(etype, obj):
    return (json.dumps({"type": etype, "object": obj}, separators=(",", ":")) + "\n").encode()


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_state = None  # the FakeApiServer (set in a subclass)

    def log_message(self, fmt, *args):
        pass

    def setup(self):
        super().setup()
        with self.server_state.lock:
            self.server_state._conns.add(self.connection)

    def finish(self):
        try:
            super().finish()
        finally:
            with self.server_state.lock:
                self.server_state._conns.discard(self.connection)

    def _send_json(self, code, body):
        data = json.dumps(body, separators=(",", ":")).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def do_GET(self):
        s = self.server_state
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True))
        auth = self.headers.get("Authorization") or ""
        token = auth[len("Bearer "):] if auth.startswith("Bearer ") else None
        entry = {"path": url.path, "query": query, "token": token, "status": None}
        parts = url.path.strip("/").split("/")
        namespace = None
        if url.path == "/api/v1/pods":
            kind = "list"
        elif len(parts) == 5 and parts[:3] == ["api", "v1", "namespaces"] and parts[4] == "pods":
            kind, namespace = "list", parts[3]
        elif url.path == "/pods" and s.kubelet_node is not None:
            kind = "kubelet"
        else:
            kind = "notfound"
        if kind == "list" and query.get("watch", "").lower() in ("1", "true"):
            kind = "watch"
        with s.lock:
            required = s.token
        if required is not None and token != required and kind != "notfound":
            entry.update(kind="unauthorized", status=401, wanted=kind)
            s._record(entry)
            self._send_json(401, status_body(401, "Unauthorized", "Unauthorized"))
            return
        if kind == "notfound":
            entry.update(kind=kind, status=404)
            s._record(entry)
            self._send_json(404, status_body(404, "NotFound", "the server could not find "
                                             "the requested resource"))
            return
        if kind == "kubelet":
            entry.update(kind=kind, status=200)
            s._record(entry)
            self._send_json(200, s._kubelet_list())
            return
        selector = _parse_selector(query.get("fieldSelector"))
        rv = query.get("resourceVersion", "")
        if selector is None or (rv and not rv.isdigit()) or \
                not (query.get("timeoutSeconds") or "0").isdigit() or \
                not (query.get("limit") or "0").isdigit():
            entry.update(kind="bad", status=400, wanted=kind)
            s._record(entry)
            self._send_json(400, status_body(400, "BadRequest",
                                             f"invalid query: {url.query}"))
            return
        if kind == "list":
            code, body = s._list(selector, namespace, query)
            entry.update(kind=kind, status=code, rv=body["metadata"].get("resourceVersion"))
            s._record(entry)
            self._send_json(code, body)
            return
        self._watch(entry, selector, namespace, query)

    def _watch(self, entry, selector, namespace, query):
        s = self.server_state
        timeout = int(query.get("timeoutSeconds") or DEFAULT_WATCH_TIMEOUT)
        lines, w = s._open_watch(selector, namespace, query)
        entry.update(kind="watch", status=200, expired=w is None)
        s._record(entry)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()
        try:
            for line in lines:
                self._chunk(line)
            if w is None:
                self._end()
                return
            deadline = time.monotonic() + timeout
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    self._end()
                    return
                try:
                    item = w.q.get(timeout=min(left, 0.5))
                except queue.Empty:
                    continue
                if item[0] == "line":
                    self._chunk(item[1])
                elif item[0] == "end":
                    self._end()
                    return
                elif item[0] == "drop":
                    half = _event_line("MODIFIED", {"kind": "Pod", "apiVersion": "v1",
                                                    "metadata": {"name": "torn",
                                                                 "resourceVersion": str(s.rv)}})
                    self._chunk(half[:len(half) // 2])
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
        except OSError:
            self.close_connection = True  # the client went away
        finally:
            s._close_watch(w)

    def _end(self):
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def main():
    import argparse
    import tempfile
    ap = argparse.ArgumentParser(description="serve the fixtures until Ctrl-C")
    ap.add_argument("--node", default="node-a")
    ap.add_argument("--token", default="fake-token")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="fake-apiserver.") as tmp:
        certs = make_certs(tmp)
        with FakeApiServer(certs, token=args.token, kubelet_node=args.node) as srv:
            for pod in fixture_pods(args.node).values():
                srv.add_pod(pod)
            print(f"url {srv.url}\ntoken {args.token}\nca {certs['ca']}", flush=True)
            try:
                while True:
                    time.sleep(3600)
            except KeyboardInterrupt:
                pass


if __name__ == "__main__":
    main()
