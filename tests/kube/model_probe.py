#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""kube_watch_probe's contract, written in Python: a model to test the test.

Not the client under test and not run by ctest. It takes the probe's
command line and prints the probe's JSON lines, doing what
docs/configuration.md (discovery.kubernetes) and the reference ask of the C
client: list, then watch from the list's resourceVersion with bookmarks;
resume from the last RV (bookmarks included) after a cut or ended stream;
list again after ERROR 410; read the token file again after a 401; the
kubelet source polls GET /pods. Run the driver against it with

    PYPROFD_KUBE_PROBE=tests/kube/model_probe.py /usr/bin/python3 tests/kube/test_kube_client.py -v

to see that every assertion there can be met; a change to the driver or
the fake that this model no longer passes is suspect before the C client is.
"""

import argparse
import http.client
import json
import re
import ssl
import sys
import time
import urllib.parse


class Gone(Exception):
    pass


class Unauthorized(Exception):
    pass


def sanitize(name):
    return re.sub(r"[^a-zA-Z0-9_]", "_", name)


def pod_labels(pod):
    meta, spec, status = pod["metadata"], pod["spec"], pod.get("status", {})
    m = "__meta_kubernetes_"
    base = {m + "namespace": meta["namespace"], m + "pod_name": meta["name"],
            m + "pod_uid": meta.get("uid", ""), m + "pod_node_name": spec.get("nodeName", ""),
            m + "pod_ip": status.get("podIP", ""), m + "pod_host_ip": status.get("hostIP", ""),
            m + "pod_phase": status.get("phase", "")}
    ready = [c["status"] for c in status.get("conditions", []) if c["type"] == "Ready"]
    base[m + "pod_ready"] = ready[0].lower() if ready else "unknown"
    for k, v in (meta.get("labels") or {}).items():
        base[m + "pod_label_" + sanitize(k)] = v
        base[m + "pod_labelpresent_" + sanitize(k)] = "true"
    for k, v in (meta.get("annotations") or {}).items():
        base[m + "pod_annotation_" + sanitize(k)] = v
        base[m + "pod_annotationpresent_" + sanitize(k)] = "true"
    for o in meta.get("ownerReferences") or []:
        if o.get("controller"):
            base[m + "pod_controller_kind"] = o["kind"]
            base[m + "pod_controller_name"] = o["name"]
    out = {}
    images = {c["name"]: c["image"] for c in spec.get("containers", []) +
              spec.get("initContainers", [])}
    for key, init in (("containerStatuses", "false"), ("initContainerStatuses", "true")):
        for cs in status.get(key) or []:
            full = cs.get("containerID")
            if not full or "://" not in full:
                continue
            labels = dict(base)
            labels[m + "pod_container_name"] = cs["name"]
            labels[m + "pod_container_image"] = images.get(cs["name"], cs.get("image", ""))
            labels[m + "pod_container_init"] = init
            labels[m + "pod_container_id"] = full
            out[full.split("://", 1)[1]] = labels
    return out


class Client:
    def __init__(self, a):
        self.a = a
        u = urllib.parse.urlsplit(a.url)
        self.host, self.port = u.hostname, u.port or 443
        ctx = ssl.create_default_context(cafile=None if a.insecure else a.ca_file)
        if a.insecure:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        self.ctx = ctx
        self.token = None
        self.token_read = 0
        self.pods = {}        # (ns, name) -> {id: labels}
        self.revs = {}        # id -> (rev, labels)
        self.generation = 0
        self.synced = False
        self.stats = {"lists": 0, "watches": 0, "events": 0, "bookmarks": 0, "expired": 0,
                      "unauthorized": 0, "errors": 0}
        self.printed = None

    def read_token(self):
        try:
            with open(self.a.token_file) as f:
                self.token = f.read().strip()
        except OSError:
            self.token = None
        self.token_read = time.monotonic()

    def request(self, path, timeout):
        if self.token is None or time.monotonic() - self.token_read > 60:
            self.read_token()
        conn = http.client.HTTPSConnection(self.host, self.port, context=self.ctx,
                                           timeout=timeout)
        headers = {"Accept": "application/json"}
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        conn.request("GET", path, headers=headers)
        resp = conn.getresponse()
        if resp.status == 401:
            conn.close()
            self.stats["unauthorized"] += 1
            self.read_token()
            raise Unauthorized()
        if resp.status == 410:
            conn.close()
            raise Gone()
        if resp.status != 200:
            conn.close()
            raise OSError(f"HTTP {resp.status}")
        return conn, resp

    def emit(self):
        index = {}
        for ids in self.pods.values():
            index.update(ids)
        changed = False
        for cid, labels in index.items():
            old = self.revs.get(cid)
            if old is None or old[1] != labels:
                self.revs[cid] = ((old[0] + 1) if old else 1, labels)
                changed = True
        for cid in [c for c in self.revs if c not in index]:
            del self.revs[cid]
            changed = True
        key = (self.synced, tuple(sorted(self.revs)))
        if changed or key != self.printed:
            self.generation += 1
            self.printed = key
            print(json.dumps({"generation": self.generation, "synced": self.synced,
                              "stats": dict(self.stats),
                              "containers": {c: {"rev": r, "labels": lab}
                                             for c, (r, lab) in self.revs.items()}}), flush=True)

    def apply_list(self, items):
        self.pods = {(p["metadata"]["namespace"], p["metadata"]["name"]): pod_labels(p)
                     for p in items}
        self.synced = True
        self.emit()

    def relist(self):
        sel = urllib.parse.quote("spec.nodeName=" + self.a.node)
        items, cont = [], None
        while True:
            page = "" if cont is None else "&continue=" + urllib.parse.quote(cont)
            conn, resp = self.request(f"/api/v1/pods?fieldSelector={sel}&limit=500{page}", 30)
            body = json.loads(resp.read())
            conn.close()
            items += body["items"]
            cont = body["metadata"].get("continue")
            if not cont:
                break
        self.stats["lists"] += 1
        self.apply_list(items)
        return body["metadata"]["resourceVersion"]

    def watch(self, rv, deadline):
        sel = urllib.parse.quote("spec.nodeName=" + self.a.node)
        path = (f"/api/v1/pods?fieldSelector={sel}&watch=1&resourceVersion={rv}"
                f"&allowWatchBookmarks=true&timeoutSeconds={self.a.watch_timeout}")
        conn, resp = self.request(path, self.a.watch_timeout + 30)
        self.stats["watches"] += 1
        try:
            while time.monotonic() < deadline:
                try:
                    line = resp.readline()
                except (http.client.IncompleteRead, OSError):
                    break
                if not line.endswith(b"\n"):
                    break  # the end, or half an event
                ev = json.loads(line)
                obj = ev["object"]
                if ev["type"] == "ERROR":
                    if obj.get("code") == 410:
                        self.stats["expired"] += 1
                        raise Gone()
                    break
                rv = obj["metadata"]["resourceVersion"]
                if ev["type"] == "BOOKMARK":
                    self.stats["bookmarks"] += 1
                    continue
                self.stats["events"] += 1
                key = (obj["metadata"]["namespace"], obj["metadata"]["name"])
                if ev["type"] == "DELETED":
                    self.pods.pop(key, None)
                else:
                    self.pods[key] = pod_labels(obj)
                self.emit()
        finally:
            conn.close()
        return rv

    def run_api(self, deadline):
        rv = None
        while time.monotonic() < deadline:
            try:
                if rv is None:
                    rv = self.relist()
                rv = self.watch(rv, deadline)
            except Gone:
                rv = None
            except Unauthorized:
                time.sleep(0.5)
            except (OSError, ValueError, KeyError):
                self.stats["errors"] += 1
                time.sleep(0.5)

    def run_kubelet(self, deadline):
        while time.monotonic() < deadline:
            try:
                conn, resp = self.request("/pods", 30)
                body = json.loads(resp.read())
                conn.close()
                self.stats["lists"] += 1
                self.apply_list([p for p in body["items"]
                                 if p["spec"].get("nodeName") == self.a.node])
            except (Unauthorized, Gone, OSError, ValueError, KeyError):
                self.stats["errors"] += 1
            time.sleep(self.a.poll)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--node", required=True)
    ap.add_argument("--token-file", required=True)
    ap.add_argument("--ca-file", required=True)
    ap.add_argument("--insecure", action="store_true")
    ap.add_argument("--source", default="api_server", choices=("api_server", "kubelet"))
    ap.add_argument("--watch-timeout", type=int, default=300)
    ap.add_argument("--poll", type=float, default=15)
    ap.add_argument("--seconds", type=float, required=True)
    a = ap.parse_args()
    c = Client(a)
    deadline = time.monotonic() + a.seconds
    try:
        (c.run_kubelet if a.source == "kubelet" else c.run_api)(deadline)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    import signal
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    main()
