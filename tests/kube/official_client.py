# SPDX-License-Identifier: MIT
"""The official Kubernetes client against the fake API server.

Runs in the kube-tools rootfs (python3-kubernetes), started by
test_fake_apiserver.py, which drives the server:

    chroot ROOT /usr/bin/python3 official_client.py URL CA TOKEN NODE FIXTURES

Every step's result goes to stdout as one JSON line {"step": NAME, ...};
where the driver must act on the server first the script writes
{"sync": NAME} and waits for a line on stdin. Assertions are the driver's;
this script only records what the client did and saw, and the strict walk's
findings (kube_models.py) on every object it received.
"""

import json
import sys
import time

import kube_models
from kubernetes import client, watch
from kubernetes.client.rest import ApiException


def out(obj):
    print(json.dumps(obj), flush=True)


def sync(name):
    out({"sync": name})
    if sys.stdin.readline().strip() != "go":
        raise SystemExit(f"driver did not answer sync {name}")


def api(url, ca, token):
    conf = client.Configuration(host=url)
    conf.ssl_ca_cert = ca
    conf.api_key = {"authorization": "Bearer " + token}
    return client.CoreV1Api(client.ApiClient(conf))


def raw(call, *args, **kwargs):
    """The same call undecoded: the JSON the server sent."""
    resp = call(*args, _preload_content=False, **kwargs)
    try:
        return json.loads(resp.data)
    finally:
        resp.release_conn()


def exc(e):
    try:
        body = json.loads(e.body) if e.body else None
    except ValueError:
        body = e.body
    return {"status": e.status, "reason": e.reason, "body": body}


def main(url, ca, token, node, fixtures_path):
    selector = "spec.nodeName=" + node
    with open(fixtures_path) as f:
        fixtures = json.load(f)
    out({"step": "fixtures",
         "errors": {name: kube_models.check(obj, model)
                    for name, (model, obj) in fixtures.items()}})

    v1 = api(url, ca, token)

    # list: typed, raw (strict walk), paginated, namespaced
    typed = v1.list_pod_for_all_namespaces(field_selector=selector)
    body = raw(v1.list_pod_for_all_namespaces, field_selector=selector)
    pages, cont = [], None
    while True:
        page = v1.list_pod_for_all_namespaces(field_selector=selector, limit=2,
                                              **({"_continue": cont} if cont else {}))
        pages.append([p.metadata.name for p in page.items])
        cont = page.metadata._continue
        if not cont:
            break
    ns = v1.list_namespaced_pod("shop", field_selector=selector)
    out({"step": "list", "type": type(typed).__name__,
         "item_types": sorted({type(p).__name__ for p in typed.items}),
         "names": [p.metadata.name for p in typed.items],
         "rv": typed.metadata.resource_version,
         "containers": {p.metadata.name: [s.container_id for s in p.status.container_statuses or []]
                        for p in typed.items},
         "errors": kube_models.check(body, "V1PodList"),
         "pages": pages, "namespaced": [p.metadata.name for p in ns.items]})
    rv = typed.metadata.resource_version

    # watch from the list's RV: the driver adds, modifies, deletes, bookmarks
    sync("watch")
    events, errors = [], []
    w = watch.Watch()
    started = time.monotonic()
    for e in w.stream(v1.list_pod_for_all_namespaces, field_selector=selector,
                      resource_version=rv, allow_watch_bookmarks=True, timeout_seconds=10):
        obj, rawobj = e["object"], e["raw_object"]
        if e["type"] == "BOOKMARK":
            errors += kube_models.check(rawobj, "V1Pod")  # metadata only, still a Pod
            events.append([e["type"], None, rawobj["metadata"]["resourceVersion"], "dict"])
        else:
            errors += kube_models.check(rawobj, "V1Pod")
            events.append([e["type"], obj.metadata.name, obj.metadata.resource_version,
                           type(obj).__name__])
    out({"step": "watch", "events": events, "errors": errors,
         "seconds": time.monotonic() - started})
    last_rv = events[-1][2] if events else rv

    # a watch from "0" (all pods ADDED) that ends at its timeoutSeconds
    started = time.monotonic()
    initial = [[e["type"], e["object"].metadata.name]
               for e in watch.Watch().stream(v1.list_pod_for_all_namespaces,
                                             field_selector=selector, timeout_seconds=2)]
    out({"step": "timeout", "events": initial, "seconds": time.monotonic() - started})

    # the driver expires the history: a watch from the old RV gets 410
    sync("expire")
    try:
        got = [e["type"] for e in watch.Watch().stream(
            v1.list_pod_for_all_namespaces, field_selector=selector, resource_version=last_rv,
            allow_watch_bookmarks=True, timeout_seconds=5)]
        out({"step": "expired", "exception": None, "events": got})
    except ApiException as e:
        out({"step": "expired", "exception": exc(e)})

    # a wrong token, then a rotated one
    try:
        api(url, ca, "not-" + token).list_pod_for_all_namespaces(field_selector=selector)
        out({"step": "wrong_token", "exception": None})
    except ApiException as e:
        out({"step": "wrong_token", "exception": exc(e)})
    sync("rotate")
    result = {"step": "rotated"}
    try:
        v1.list_pod_for_all_namespaces(field_selector=selector)
        result["old"] = None
    except ApiException as e:
        result["old"] = exc(e)
    new = api(url, ca, token + "-rotated").list_pod_for_all_namespaces(field_selector=selector)
    result["new_names"] = [p.metadata.name for p in new.items]
    out(result)
    out({"step": "done"})


if __name__ == "__main__":
    main(*sys.argv[1:])
