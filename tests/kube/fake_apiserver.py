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

Bookmarks come as the API server's watch cache sends them to a watch that
asked allowWatchBookmarks=true (cacheWatcher.nextBookmarkTime and
Cacher.dispatchEvents in k8s.io/apiserver/pkg/storage/cacher): one every
bookmark_interval (upstream's defaultBookmarkFrequency, 1 minute; a test may
set another, or None for none) and one 2 s before the watch's
timeoutSeconds, whichever comes first, each only when the resourceVersion
moved past the last one the watch was sent (cacheWatcher.process drops the
others). Upstream's timer fires every 1 s +-25 % and keeps watches in 1-s
buckets; here the times are exact.

Control (methods, from any thread): add_pod, modify_pod, delete_pod (each
bumps the resourceVersion and logs the event), bookmark, drop_watches (half
an event line, then the connection is cut), end_watches (a clean end, as a
timeout), expire_history (the next watch from an older RV gets 410),
set_token (the old token gets 401 from then on), and the request log:
requests(), counts() ({"list": n, "watch": n, "kubelet": n,
"unauthorized": n, ...}), wait_for_request(). Each entry gets, once its
response is over, "end" ("complete", "client closed", "stopped"), "bytes"
(of body written) and "t_end"; "mode" names the hostile mode that answered.

Hostile modes (for the requests that come after; heal() ends them all, and
a response already under way goes on until the client leaves or stop()):

    serve_list(items, ignore_limit=True, rate=None)
        every list answered with @items (pod JSON made on demand: PodItems,
        heavy_items(), ordinary_items(), small_items(), RepeatedItem; 100k
        and more are never held at once), chunked as a Go server sends a big
        body; ignore_limit: all in one body, as the watch cache answers
        resourceVersion=0 ("limits are ignored when resource version is
        zero"), else pages of the client's limit with upstream-shaped
        continue tokens (base64url of {"v","rv","start"}) and
        remainingItemCount; rate: the body trickles at that many bytes/s
    gone_after(seconds)
        every watch: 200 and events as usual, then after @seconds one ERROR
        event with a 410 Status (reason Expired, "The resourceVersion for the
        provided watch is too old.", as etcd compaction ends a watch) and the
        end of the stream
    trickle_watch(rate, count=1)
        the next @count watches: 200, then one event that never ends, at
        @rate bytes/s
    fail(kinds, code=500, endless=True, rate=None)
        @kinds ("list", "watch") answered @code with an InternalError Status
        whose message never ends (endless=False: a whole Status)
    throttle(kinds, code=429, retry_after=30, shape="filter")
        @kinds answered @code with Retry-After (seconds, a string such as
        http_date(30), or a function making it for each answer): shape
        "filter" as the max-in-flight and APF filters answer (text/plain
        "Too many requests, please try again later."; upstream's filters
        always say Retry-After: 1), "status" as a handler returning
        NewTooManyRequests (a Status with details.retryAfterSeconds, copied
        into the header by ErrorNegotiated; another code: a
        ServiceUnavailable Status)
    inject(line)
        raw bytes (an event line of any size or shape) to every open watch
    heal(relist=False)
        healthy again; relist=True also expires the history and ends the
        open watches, so a client holding what a hostile list gave it must
        list again (its watch gets 410)

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
import email.utils
import hashlib
import http.server
import itertools
import json
import os
import queue
import select
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


def _env_name(i):
    return f"E{i:04d}"


def heavy_pod(name, namespace, node, env=10000):
    """A pod as a Deployment with a very long environment makes it: its
    container has @env variables ({"name","value"}), and metadata.managedFields
    holds what the API server records for them: kube-controller-manager's
    Update of the pod it created (FieldsV1, a "k:{...}" key per container and
    per variable, "." for the entry itself) and the kubelet's Update of the
    status subresource. 10 000 variables make about 0.85 MiB of JSON."""
    pod = make_pod(name, namespace, node, [("app", "shop/app:1.0")],
                   labels={"app": "heavy", "pod-template-hash": "5d8f7c9b6"},
                   owner=("ReplicaSet", "heavy-5d8f7c9b6", "apps/v1"), ip="10.244.1.30")
    container = pod["spec"]["containers"][0]
    container["env"] = [{"name": _env_name(i), "value": str(i)} for i in range(env)]
    env_fields = {".": {}}
    for i in range(env):
        env_fields[f'k:{{"name":"{_env_name(i)}"}}'] = {".": {}, "f:name": {}, "f:value": {}}
    owner_uid = pod["metadata"]["ownerReferences"][0]["uid"]
    spec_fields = {
        "f:metadata": {"f:generateName": {}, "f:labels": {".": {}, "f:app": {},
                                                         "f:pod-template-hash": {}},
                       "f:ownerReferences": {".": {}, f'k:{{"uid":"{owner_uid}"}}': {}}},
        "f:spec": {"f:containers": {'k:{"name":"app"}': {
            ".": {}, "f:env": env_fields, "f:image": {}, "f:imagePullPolicy": {}, "f:name": {},
            "f:ports": {".": {}, 'k:{"containerPort":8080,"protocol":"TCP"}': {
                ".": {}, "f:containerPort": {}, "f:name": {}, "f:protocol": {}}},
            "f:resources": {}, "f:terminationMessagePath": {},
            "f:terminationMessagePolicy": {}}},
            "f:dnsPolicy": {}, "f:enableServiceLinks": {}, "f:restartPolicy": {},
            "f:schedulerName": {}, "f:securityContext": {},
            "f:terminationGracePeriodSeconds": {}}}
    status_fields = {"f:status": {
        "f:conditions": {f'k:{{"type":"{t}"}}': {".": {}, "f:lastProbeTime": {},
                                                   "f:lastTransitionTime": {}, "f:status": {},
                                                   "f:type": {}}
                         for t in ("ContainersReady", "Initialized", "PodReadyToStartContainers",
                                   "Ready")},
        "f:containerStatuses": {}, "f:hostIP": {}, "f:hostIPs": {}, "f:phase": {},
        "f:podIP": {}, "f:podIPs": {".": {}, 'k:{"ip":"10.244.1.30"}': {".": {}, "f:ip": {}}},
        "f:startTime": {}}}
    pod["metadata"]["managedFields"] = [
        {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1",
         "time": T0, "fieldsType": "FieldsV1", "fieldsV1": spec_fields},
        {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": T2,
         "fieldsType": "FieldsV1", "fieldsV1": status_fields, "subresource": "status"},
    ]
    return pod


def small_pod(name, namespace, node):
    """The least a running pod of one container carries (about 0.5 KiB)."""
    image = "load/worker:1.0"
    cid = "containerd://" + container_id(f"{namespace}/{name}/worker")
    return {"kind": "Pod", "apiVersion": "v1",
            "metadata": {"name": name, "namespace": namespace,
                         "uid": _uid(f"{namespace}/{name}"), "resourceVersion": "0",
                         "creationTimestamp": T0, "labels": {"app": "load"}},
            "spec": {"nodeName": node, "containers": [{"name": "worker", "image": image}]},
            "status": {"phase": "Running",
                       "containerStatuses": [{"name": "worker",
                                              "state": {"running": {"startedAt": T2}},
                                              "ready": True, "restartCount": 0, "image": image,
                                              "imageID": _image_id(image),
                                              "containerID": cid}]}}


class PodItems:
    """@n list items (JSON bytes each) made on demand by @make(i): len(),
    [i], key(i) (the item's storage key below /registry/pods/, for continue
    tokens) and encode(start, stop) (items start..stop-1 joined by commas).
    A list of bytes will do as @make's source: PodItems.of(list)."""

    def __init__(self, n, make, key=None):
        self.n, self.make = n, make
        self._key = key or (lambda i: f"items/{i:09d}")

    @classmethod
    def of(cls, items):
        items = list(items)
        return cls(len(items), items.__getitem__)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return self.make(i)

    def key(self, i):
        return self._key(i)

    def encode(self, start, stop):
        return b",".join(self.make(i) for i in range(start, stop))


class RepeatedItem(PodItems):
    """@item (bytes) @n times, e.g. b"{}" for a list of empty objects."""

    def __init__(self, item, n):
        super().__init__(n, lambda i: item)
        self.item = item

    def encode(self, start, stop):
        return b",".join(itertools.repeat(self.item, stop - start))


def _templated(proto, namespace, prefix, containers, n):
    """PodItems of @n copies of pod @proto (named prefix-00000000) named
    prefix-<i>, each with its own uid and container ids."""
    name0 = f"{prefix}-{0:08d}"
    text = json.dumps(proto, separators=(",", ":"))
    swaps = [(name0, lambda name: name), (_uid(f"{namespace}/{name0}"),
                                          lambda name: _uid(f"{namespace}/{name}"))]
    for c in containers:
        swaps.append((container_id(f"{namespace}/{name0}/{c}"),
                      lambda name, c=c: container_id(f"{namespace}/{name}/{c}")))
    for old, _ in swaps:
        if text.count(old) == 0:
            raise ValueError(f"{old} is not in the prototype")

    def make(i):
        name = f"{prefix}-{i:08d}"
        out = text
        for old, new in swaps:
            out = out.replace(old, new(name))
        return out.encode()

    return PodItems(n, make, key=lambda i: f"{namespace}/{prefix}-{i:08d}")


def heavy_items(n, node, namespace="heavy", env=10000):
    """@n heavy_pod()s (about 0.85 MiB each with 10 000 variables)."""
    return _templated(heavy_pod(f"heavy-{0:08d}", namespace, node, env), namespace, "heavy",
                      ["app"], n)


def ordinary_items(n, node, namespace="ordinary"):
    """@n pods as make_pod() makes them (one container, labels, a
    ReplicaSet), about 2.5 KiB each."""
    proto = make_pod(f"web-{0:08d}", namespace, node, [("web", "shop/web:2.1")],
                     labels={"app": "web", "tier": "frontend", "pod-template-hash": "6f9c7d"},
                     annotations={"kubectl.kubernetes.io/default-container": "web"},
                     owner=("ReplicaSet", "web-6f9c7d", "apps/v1"))
    return _templated(proto, namespace, "web", ["web"], n)


def small_items(n, node, namespace="load"):
    """@n small_pod()s (about 0.5 KiB each)."""
    return _templated(small_pod(f"load-{0:08d}", namespace, node), namespace, "load",
                      ["worker"], n)


def http_date(seconds_from_now):
    """An HTTP-date @seconds_from_now in the future (for Retry-After)."""
    return email.utils.formatdate(time.time() + seconds_from_now, usegmt=True)


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
    # the hostile modes' shapes, small: the heavy pod with 20 variables, the
    # small pod, a list item of a [{},{},...] list, the 429 and 500 Statuses
    out["heavy"] = ["V1Pod", heavy_pod("heavy-0", "heavy", node, env=20)]
    out["small"] = ["V1Pod", small_pod("load-0", "load", node)]
    out["empty_item"] = ["V1Pod", {}]
    out["status_429"] = ["V1Status", too_many_requests_body(30)]
    out["status_500"] = ["V1Status", internal_error_body("etcdserver: request timed out")]
    return out


def status_body(code, reason, message):
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}


def too_many_requests_body(retry_after_seconds, message="the server has received too many "
                           "requests and has asked us to try again later"):
    """apierrors.NewTooManyRequests(message, retryAfterSeconds) as ErrorNegotiated writes it."""
    body = status_body(429, "TooManyRequests", message)
    body["details"] = {"retryAfterSeconds": retry_after_seconds}
    body["code"] = body.pop("code")  # after details, as Go orders metav1.Status
    return body


def internal_error_body(cause):
    """apierrors.NewInternalError(cause) as the handlers write it."""
    body = status_body(500, "InternalError", f"Internal error occurred: {cause}")
    body["details"] = {"causes": [{"message": cause}]}
    body["code"] = body.pop("code")
    return body


# --- the server --------------------------------------------------------------

class _Watcher:
    def __init__(self, selector, bookmarks, rv):
        self.selector = selector
        self.bookmarks = bookmarks
        self.q = queue.Queue()  # ("line", bytes, rv or None), ("end",), ("drop",)
        self.sent_rv = rv       # the last resourceVersion the watch was sent


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
    returns. @bookmark_interval: seconds between the periodic bookmarks of a
    watch that allows them (upstream: 60); None: no periodic bookmarks, not
    even the one before timeoutSeconds (bookmark() still sends one).
    """

    def __init__(self, certs, token=None, kubelet_node=None, bookmark_interval=60.0):
        self.lock = threading.Condition()
        self.bookmark_interval = bookmark_interval
        self.hostile = {}             # "list"/"watch" -> (mode name, parameters)
        self._stopping = threading.Event()
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
        self._stopping.set()
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
                w.q.put(("line", line, rv))
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
                    w.q.put(("line", line, int(rv)))
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

    # --- hostile modes (see the module's docstring)

    def _set(self, kinds, mode, **params):
        with self.lock:
            for kind in kinds:
                if kind not in ("list", "watch"):
                    raise ValueError(f"not a request kind: {kind}")
                self.hostile[kind] = (mode, params)

    def serve_list(self, items, ignore_limit=True, rate=None):
        """Every list gets @items (PodItems, or a list of pod dicts or
        bytes) at a new resourceVersion, in one body (ignore_limit) or in
        pages of the client's limit; @rate: bytes/s (None: as fast as the
        client reads)."""
        if not isinstance(items, PodItems):
            items = PodItems.of(i if isinstance(i, bytes) else
                                json.dumps(i, separators=(",", ":")).encode() for i in items)
        self._set(("list",), "serve_list", items=items, ignore_limit=ignore_limit, rate=rate)

    def gone_after(self, seconds):
        """Every watch ends after @seconds with an ERROR event carrying a 410 Status."""
        self._set(("watch",), "gone_after", seconds=seconds)

    def trickle_watch(self, rate, count=1):
        """The next @count watches (None: all) send one event that never ends, at @rate bytes/s."""
        self._set(("watch",), "trickle_watch", rate=rate, count=count)

    def fail(self, kinds, code=500, endless=True, rate=None):
        """@kinds answered @code with an InternalError Status; endless: its
        message never ends (at @rate bytes/s, None: as fast as read)."""
        self._set(kinds, "fail", code=code, endless=endless, rate=rate)

    def throttle(self, kinds, code=429, retry_after=30, shape="filter"):
        """@kinds answered @code with Retry-After: @retry_after (int
        seconds, a string sent as is, or a function called for each
        answer, e.g. lambda: http_date(30)); @shape
        "filter" (text/plain, as the max-in-flight and APF filters) or
        "status" (a TooManyRequests Status with details.retryAfterSeconds)."""
        if shape not in ("filter", "status"):
            raise ValueError(f"not a shape: {shape}")
        self._set(kinds, "throttle", code=code, retry_after=retry_after, shape=shape)

    def inject(self, line, rv=None):
        """Sends @line (bytes, an event line with its newline, of any size
        or shape) to every open watch; @rv: the resourceVersion it carries,
        for the periodic bookmarks. Returns how many watches got it."""
        return self._to_watchers(("line", line, rv))

    def heal(self, relist=False):
        """Healthy again for the requests to come (a hostile response under
        way goes on); @relist: also expire the history and end the open
        watches, so that the client lists again. Returns the modes ended."""
        with self.lock:
            ended = sorted(m for m, _ in self.hostile.values())
            self.hostile.clear()
        if relist:
            self.expire_history()
            self.end_watches()
        return ended

    def _mode(self, kind):
        """The hostile mode (name, parameters) for a request of @kind, or None."""
        with self.lock:
            mode = self.hostile.get(kind)
            if mode is None:
                return None
            name, params = mode
            if name == "trickle_watch" and params["count"] is not None:
                if params["count"] <= 0:
                    del self.hostile[kind]
                    return None
                params["count"] -= 1
            return name, dict(params)

    def _finish(self, entry, end, nbytes):
        """Marks the log entry of a response that is over."""
        with self.lock:
            entry.update(end=end, bytes=nbytes, t_end=time.monotonic())
            self.lock.notify_all()

    def _list_page(self, items, query):
        """(metadata, start, stop) of the hostile list page asked for, or
        None (a continue token this server did not give, or gave before
        heal(relist=True))."""
        with self.lock:
            start = 0
            cont = query.get("continue")
            if cont:
                state = self.continues.pop(cont, None)
                if state is None:
                    return None
                start, rv = state
            else:
                rv = self._bump()
            limit = int(query.get("limit") or 0)
            stop = len(items) if limit <= 0 else min(len(items), start + limit)
            meta = {"resourceVersion": rv}
            if stop < len(items):
                token = encode_continue(items.key(stop - 1), int(rv))
                self.continues[token] = (stop, rv)
                meta["continue"] = token
                meta["remainingItemCount"] = len(items) - stop
            return meta, start, stop

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
                sent = self.rv
            else:
                n = int(rv)
                if n < self.floor:
                    return [_event_line("ERROR", status_body(
                        410, "Expired", f"too old resource version: {n} ({self.floor})"))], None
                events = [(r, t, p) for r, t, p in self.history
                          if r > n and _matches(p, selector, namespace)]
                lines = [_event_line(t, p) for r, t, p in events]
                sent = max([n] + [r for r, _, _ in events])
            w = _Watcher((selector, namespace), bookmarks, sent)
            self.watchers.add(w)
            return lines, w

    def _close_watch(self, w):
        with self.lock:
            self.watchers.discard(w)


def _event_line(etype, obj):
    return (json.dumps({"type": etype, "object": obj}, separators=(",", ":")) + "\n").encode()


def encode_continue(key, rv):
    """A continue token as the API server's storage makes one
    (storage.EncodeContinue): base64url, unpadded, of
    {"v":"meta.k8s.io/v1","rv":RV,"start":"<key after /registry/pods/>\\u0000"}."""
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": key + "\x00"},
                     separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).rstrip(b"=").decode()


GONE_MESSAGE = "The resourceVersion for the provided watch is too old."
CONTINUE_EXPIRED = ("The provided continue parameter is too old to display a consistent list "
                    "result. You can start a new list without the continue parameter.")
THROTTLED_TEXT = b"Too many requests, please try again later.\n"
STREAM_PIECE = 256 << 10  # bytes per write of a big body


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
        mode = s._mode(kind)
        if mode is not None and mode[0] != "gone_after":
            entry.update(kind=kind, mode=mode[0])
            getattr(self, "_hostile_" + mode[0])(entry, kind, query, **mode[1])
            return
        if kind == "list":
            code, body = s._list(selector, namespace, query)
            entry.update(kind=kind, status=code, rv=body["metadata"].get("resourceVersion"))
            s._record(entry)
            self._send_json(code, body)
            return
        if mode is not None:
            entry["mode"] = mode[0]
        self._watch(entry, selector, namespace, query,
                    gone_after=mode[1]["seconds"] if mode is not None else None)

    def _watch(self, entry, selector, namespace, query, gone_after=None):
        """A watch; @gone_after: seconds after which it ends with ERROR 410."""
        s = self.server_state
        timeout = int(query.get("timeoutSeconds") or DEFAULT_WATCH_TIMEOUT)
        lines, w = s._open_watch(selector, namespace, query)
        entry.update(kind="watch", status=200, expired=w is None)
        s._record(entry)
        self._start_chunked(200, headers=(("Cache-Control", "no-cache, private"),))
        sent, end = 0, "complete"
        try:
            for line in lines:
                self._chunk(line)
                sent += len(line)
            if w is None:
                self._end()
                return
            start = time.monotonic()
            deadline = start + timeout
            gone_at = start + gone_after if gone_after is not None else None
            every = s.bookmark_interval if w.bookmarks else None
            # cacheWatcher.nextBookmarkTime: a minute on, or 2 s before the deadline
            next_bookmark = None
            if every is not None and min(start + every, deadline - 2) > start:
                next_bookmark = min(start + every, deadline - 2)
            while True:
                now = time.monotonic()
                if now >= deadline:
                    self._end()
                    return
                if gone_at is not None and now >= gone_at:
                    line = _event_line("ERROR", status_body(410, "Expired", GONE_MESSAGE))
                    self._chunk(line)
                    sent += len(line)
                    self._end()
                    return
                if next_bookmark is not None and now >= next_bookmark:
                    with s.lock:
                        rv = s.rv
                    if rv > w.sent_rv:  # cacheWatcher.process sends only newer RVs
                        line = _event_line("BOOKMARK", {"kind": "Pod", "apiVersion": "v1",
                                                        "metadata": {"resourceVersion": str(rv)}})
                        self._chunk(line)
                        sent += len(line)
                        w.sent_rv = rv
                    after = min(now + every, deadline - 2)
                    next_bookmark = after if after > now else None
                wake = min(t for t in (deadline, gone_at, next_bookmark) if t is not None)
                try:
                    item = w.q.get(timeout=max(0.0, min(wake - now, 0.5)))
                except queue.Empty:
                    continue
                if item[0] == "line":
                    self._chunk(item[1])
                    sent += len(item[1])
                    if item[2] is not None:
                        w.sent_rv = max(w.sent_rv, item[2])
                elif item[0] == "end":
                    self._end()
                    return
                elif item[0] == "drop":
                    half = _event_line("MODIFIED", {"kind": "Pod", "apiVersion": "v1",
                                                    "metadata": {"name": "torn",
                                                                 "resourceVersion": str(s.rv)}})
                    self._chunk(half[:len(half) // 2])
                    sent += len(half) // 2
                    end = "cut"
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
        except OSError:
            end = "client closed"
            self.close_connection = True  # the client went away
        finally:
            s._close_watch(w)
            s._finish(entry, end, sent)

    # --- hostile answers (one method per mode)

    def _start_chunked(self, code, ctype="application/json", headers=()):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _client_gone(self, timeout):
        """Waits up to @timeout s; True if the client closed its side (or
        sent anything: an HTTP/1.1 client does not while it reads a
        response) or the server stops."""
        s = self.server_state
        if s._stopping.is_set():
            return True
        try:
            readable, _, _ = select.select([self.connection], [], [], timeout)
        except (OSError, ValueError):
            return True
        return bool(readable) or s._stopping.is_set()

    def _stream(self, entry, pieces, rate=None):
        """Writes @pieces (bytes) as chunks, as fast as the client reads or
        at @rate bytes/s, then ends the body; stops when the client leaves
        or the server stops. Logs how it ended and the bytes written."""
        s = self.server_state
        sent, end = 0, "complete"
        try:
            for piece in pieces:
                if s._stopping.is_set():
                    end = "stopped"
                    break
                if rate is None:
                    self._chunk(piece)
                    sent += len(piece)
                    continue
                step = max(1, int(rate / 4))
                for i in range(0, len(piece), step):
                    if self._client_gone(step / rate):
                        end = "stopped" if s._stopping.is_set() else "client closed"
                        break
                    self._chunk(piece[i:i + step])
                    sent += len(piece[i:i + step])
                if end != "complete":
                    break
            if end == "complete":
                self._end()
        except OSError:
            end = "client closed"
        finally:
            if end != "complete":
                self.close_connection = True
            s._finish(entry, end, sent)

    def _hostile_serve_list(self, entry, kind, query, items, ignore_limit, rate):
        s = self.server_state
        q = {k: v for k, v in query.items() if not (ignore_limit and k == "limit")}
        page = s._list_page(items, q)
        if page is None:
            entry.update(status=410)
            s._record(entry)
            self._send_json(410, status_body(410, "Expired", CONTINUE_EXPIRED))
            return
        meta, start, stop = page
        entry.update(status=200, rv=meta["resourceVersion"], items=stop - start,
                     cont=meta.get("continue"))
        s._record(entry)
        head = ('{"kind":"PodList","apiVersion":"v1","metadata":' +
                json.dumps(meta, separators=(",", ":")) + ',"items":[').encode()

        def pieces():
            yield head
            if stop > start:
                per = max(1, STREAM_PIECE // max(1, len(items[start])))
                for i in range(start, stop, per):
                    yield (b"," if i > start else b"") + items.encode(i, min(stop, i + per))
            yield b"]}"
        self._start_chunked(200)
        self._stream(entry, pieces(), rate)

    def _hostile_trickle_watch(self, entry, kind, query, rate, count):
        s = self.server_state
        entry.update(status=200)
        s._record(entry)
        self._start_chunked(200, headers=(("Cache-Control", "no-cache, private"),))
        head = (b'{"type":"MODIFIED","object":{"kind":"Pod","apiVersion":"v1","metadata":'
                b'{"name":"slow","namespace":"shop","annotations":{"note":"')
        self._stream(entry, itertools.chain([head], itertools.repeat(b"a" * 64)), rate)

    def _hostile_fail(self, entry, kind, query, code, endless, rate):
        s = self.server_state
        entry.update(status=code)
        s._record(entry)
        if not endless:
            self._send_json(code, internal_error_body("etcdserver: request timed out"))
            s._finish(entry, "complete", None)
            return
        head = json.dumps(internal_error_body("x"), separators=(",", ":"))
        head = head[:head.index('"message":"') + len('"message":"Internal error occurred: ')]
        self._start_chunked(code)
        self._stream(entry, itertools.chain([head.encode()], itertools.repeat(b"x" * STREAM_PIECE)),
                     rate)

    def _hostile_throttle(self, entry, kind, query, code, retry_after, shape):
        s = self.server_state
        if callable(retry_after):
            retry_after = retry_after()
        entry.update(status=code, retry_after=str(retry_after))
        s._record(entry)
        self.send_response(code)
        self.send_header("Retry-After", str(retry_after))
        if shape == "filter":
            # http.Error(w, ..., 429), with the APF filter's classification headers
            body = THROTTLED_TEXT
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("X-Content-Type-Options", "nosniff")
            self.send_header("X-Kubernetes-Pf-Flowschema-Uid", _uid("flowschema/workload"))
            self.send_header("X-Kubernetes-Pf-Prioritylevel-Uid", _uid("prioritylevel/low"))
        else:
            seconds = retry_after if isinstance(retry_after, int) else 0
            if code != 429:
                obj = status_body(code, "ServiceUnavailable",
                                  "the server is currently unable to handle the request")
            elif seconds:
                obj = too_many_requests_body(seconds)
            else:
                obj = status_body(code, "TooManyRequests", "Too many requests")
            body = json.dumps(obj, separators=(",", ":")).encode()
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        s._finish(entry, "complete", len(body))

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
