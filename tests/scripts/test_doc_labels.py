#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Every meta label the docs, the example configs and deploy/ name is one
pyprofd produces: a relabel rule on a label that never exists keeps or drops
nothing and says nothing. The set produced is read from the sources that set
the labels (agent/discovery/proc_scan.c, agent/daemon/targets.c for the
process, agent/discovery/otel_process.c for its OpenTelemetry context,
agent/discovery/kube_pod.c for the pod), so neither side drifts."""
import os
import re
import sys

SRC = os.environ.get("PYPROFD_SOURCE_DIR") or os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))

# labels that belong to another program's discovery, where the docs show
# that program's config (not pyprofd's): label -> why
FOREIGN = {
    "__meta_kubernetes_pod_container_port_name":
        "Prometheus/Parca kubernetes_sd_configs in docs/kubernetes.md's Parca scrape job",
}
# the pod-role labels kube_pod.c builds from "__meta_kubernetes_" + "pod_" + suffix
KUBE_POD = ["name", "uid", "ip", "node_name", "host_ip", "phase", "ready", "controller_kind",
            "controller_name", "container_name", "container_id", "container_image",
            "container_init"]
KUBE_POD_PREFIXES = ["label_", "labelpresent_", "annotation_", "annotationpresent_"]


def read(path):
    with open(os.path.join(SRC, path), encoding="utf-8") as f:
        return f.read()


def produced():
    exact, prefixes = set(), []
    for path in ("agent/discovery/proc_scan.c", "agent/daemon/targets.c"):
        exact |= set(re.findall(r'"(__[a-z_]+)"', read(path)))
    kube = read("agent/discovery/kube_pod.c")
    literals = set(re.findall(r'"([a-z_]+)"', kube))
    missing = [s for s in KUBE_POD + KUBE_POD_PREFIXES + ["namespace"] if s not in literals]
    if missing or '"__meta_kubernetes_"' not in kube or '"pod_"' not in kube:
        sys.exit(f"test_doc_labels: kube_pod.c no longer spells {missing or 'its prefixes'}: "
                 "update KUBE_POD in this test with the labels it produces")
    # the OpenTelemetry process context's: a family by its prefix, and the schema
    for lit in re.findall(r'"(__meta_otel_[a-z_]+)"', read("agent/discovery/otel_process.c") +
                          read("agent/discovery/otel_process.h")):
        if lit.endswith("_"):
            prefixes.append(lit)
        else:
            exact.add(lit)
    exact.add("__meta_kubernetes_namespace")
    exact |= {"__meta_kubernetes_pod_" + s for s in KUBE_POD}
    prefixes += ["__meta_kubernetes_pod_" + p for p in KUBE_POD_PREFIXES]
    return exact, prefixes


def documents():
    for top in ("docs", "config", "deploy"):
        for root, dirs, files in os.walk(os.path.join(SRC, top)):
            # research notes (docs/notes) speak of CPython's own dunder names
            dirs[:] = [d for d in dirs if os.path.join(root, d) != os.path.join(SRC, "docs", "notes")]
            for name in sorted(files):
                if name.endswith((".md", ".yml", ".yaml")):
                    yield os.path.relpath(os.path.join(root, name), SRC)
    yield "README.md"


def main():
    exact, prefixes = produced()
    bad, seen = [], 0
    for doc in documents():
        for n, line in enumerate(read(doc).splitlines(), 1):
            for label in re.findall(r"__meta_[a-z0-9_]+|__[a-z_]+__", line):
                seen += 1
                if label in exact or label in FOREIGN or label in ("__name__", "__aexit__"):
                    continue
                # a family as written in a regex: __meta_kubernetes_pod_label_(.+)
                if label.startswith(tuple(prefixes)):
                    continue
                # a family named by its prefix in prose ("__meta_kubernetes_*")
                if label.endswith("_") and any(e.startswith(label) for e in exact):
                    continue
                bad.append(f"{doc}:{n}: {label} is not a label pyprofd produces")
    for b in bad:
        print(b)
    print(f"test_doc_labels: {seen} label mentions checked, {len(bad)} unknown")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
