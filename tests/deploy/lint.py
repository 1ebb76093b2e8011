# SPDX-License-Identifier: MIT
"""Offline checks of pyprofd's Kubernetes manifests: the part that needs the
official Kubernetes client's API models (python3-kubernetes, run inside the
kube-tools rootfs by tests/deploy/validate.py, which renders the
kustomizations and runs `pyprofd check-config` on the host).

    python3 lint.py WORK

WORK holds request.json: {"help": text of `pyprofd agent --help`,
"trees": [{"name", "dir", "bundles": [{"name",
"file"}]}]}, where "dir" is a copy of a deploy/kubernetes-like tree and each
bundle is the rendered output of one of its kustomizations. Writes
WORK/result.json: per tree, the errors and the pyprofd configurations to
check (each with the files the pod would mount and its environment).

Checks (README.md next to this file explains each):
  * every object of every bundle, and every plain *.yaml file of the tree
    (kustomization.yaml aside), walked against the kubernetes.client models:
    unknown field, wrong type (bool/int/str/list/dict), unknown kind; PodMonitor
    against a small hand-written schema; duplicate YAML keys;
  * kustomization.yaml keys;
  * selector matches template labels; probe ports, PodMonitor ports,
    NetworkPolicy ports and profiles.grafana.com/*.port_name annotations name
    container ports;
    $(VAR) references defined earlier in the container's env; roleRef,
    subjects, serviceAccountName and non-optional ConfigMap/Secret volumes
    exist in the bundle;
  * no hostPort, privileged, hostPath or hostNetwork; added capabilities
    only from {SYS_PTRACE, CHECKPOINT_RESTORE, PERFMON}, after dropping ALL;
  * pyprofd's args: subcommand agent, every flag in `pyprofd agent --help`.
"""
import base64
import json
import os
import re
import sys

import yaml
from kubernetes import client

ALLOWED_CAPS = {"SYS_PTRACE", "CHECKPOINT_RESTORE", "PERFMON"}
WORKLOADS = {"DaemonSet", "Deployment", "StatefulSet", "ReplicaSet", "Job"}
# Fields typed dict(str, str) by the client whose values are Quantities: the
# API takes a number there too.
QUANTITY_DICTS = {"limits", "requests", "hard", "capacity", "allocatable"}

# A field list for the one CRD used (monitoring.coreos.com/v1 PodMonitor),
# with the field names of the Prometheus Operator API reference: only the
# fields these manifests use or are likely to use. Types are written as the
# client's openapi_types are; "PM..." names refer to this table.
HAND_SCHEMAS = {
    ("monitoring.coreos.com/v1", "PodMonitor"): "PMPodMonitor",
}
HAND_TYPES = {
    "PMPodMonitor": {
        "apiVersion": "str",
        "kind": "str",
        "metadata": "V1ObjectMeta",
        "spec": "PMPodMonitorSpec",
    },
    "PMPodMonitorSpec": {
        "jobLabel": "str",
        "podTargetLabels": "list[str]",
        "selector": "V1LabelSelector",
        "namespaceSelector": "PMNamespaceSelector",
        "podMetricsEndpoints": "list[PMPodMetricsEndpoint]",
        "sampleLimit": "int",
        "targetLimit": "int",
        "labelLimit": "int",
        "scrapeClass": "str",
    },
    "PMNamespaceSelector": {"any": "bool", "matchNames": "list[str]"},
    "PMPodMetricsEndpoint": {
        "port": "str",
        "portNumber": "int",
        "path": "str",
        "scheme": "str",
        "params": "dict(str, list[str])",
        "interval": "str",
        "scrapeTimeout": "str",
        "honorLabels": "bool",
        "honorTimestamps": "bool",
        "enableHttp2": "bool",
        "filterRunning": "bool",
        "followRedirects": "bool",
        "relabelings": "list[PMRelabelConfig]",
        "metricRelabelings": "list[PMRelabelConfig]",
    },
    "PMRelabelConfig": {
        "sourceLabels": "list[str]",
        "separator": "str",
        "targetLabel": "str",
        "regex": "str",
        "modulus": "int",
        "replacement": "str",
        "action": "str",
    },
}

# kustomization.yaml: the keys kustomize 5 knows, and those of the entries
# these files use.
KUSTOMIZATION_KEYS = {
    "apiVersion", "kind", "metadata", "resources", "components", "namespace",
    "namePrefix", "nameSuffix", "labels", "commonLabels", "commonAnnotations",
    "images", "replicas", "patches", "configMapGenerator", "secretGenerator",
    "generatorOptions", "replacements", "crds", "generators", "transformers",
    "validators", "openapi", "sortOptions", "buildMetadata", "helmCharts",
    "helmGlobals", "patchesStrategicMerge", "patchesJson6902", "vars", "bases",
}
KUSTOMIZATION_KINDS = {
    "Kustomization": "kustomize.config.k8s.io/v1beta1",
    "Component": "kustomize.config.k8s.io/v1alpha1",
}
ENTRY_KEYS = {
    "configMapGenerator": {"name", "namespace", "behavior", "files", "literals",
                           "envs", "options"},
    "secretGenerator": {"name", "namespace", "behavior", "files", "literals",
                        "envs", "type", "options"},
    "patches": {"path", "patch", "target", "options"},
    "images": {"name", "newName", "newTag", "digest"},
}


class DupLoader(yaml.SafeLoader):
    """A SafeLoader that refuses a key twice in one mapping."""


def _mapping(loader, node, deep=False):
    seen = {}
    for knode, _ in node.value:
        key = loader.construct_object(knode, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None,
                f"duplicate key '{key}' (first at line {seen[key] + 1})",
                knode.start_mark)
        seen[key] = knode.start_mark.line
    return yaml.SafeLoader.construct_mapping(loader, node, deep)


DupLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


def load_all(path):
    with open(path, encoding="utf-8") as f:
        return [d for d in yaml.load_all(f, Loader=DupLoader) if d is not None]


# ---- the model walk ----

def _split_generic(t):
    """dict(str, X) -> X; list[X] -> X."""
    if t.startswith("list["):
        return "list", t[5:-1]
    if t.startswith("dict("):
        return "dict", t[5:-1].split(",", 1)[1].strip()
    return None, t


def _fields(typename):
    """json key -> type string, or None when typename is unknown."""
    if typename in HAND_TYPES:
        return HAND_TYPES[typename]
    cls = getattr(client, typename, None)
    if cls is None:
        return None
    return {cls.attribute_map[a]: t for a, t in cls.openapi_types.items()}


def _kind_of(value):
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "dict"
    return type(value).__name__


def walk(value, typename, path, errors, field=""):
    if value is None:
        return
    generic, inner = _split_generic(typename)
    if generic == "list":
        if not isinstance(value, list):
            errors.append(f"{path}: expected a list, got {_kind_of(value)}")
            return
        for i, v in enumerate(value):
            walk(v, inner, f"{path}[{i}]", errors, field)
        return
    if generic == "dict":
        if not isinstance(value, dict):
            errors.append(f"{path}: expected a mapping, got {_kind_of(value)}")
            return
        for k, v in value.items():
            if not isinstance(k, str):
                errors.append(f"{path}: key {k!r} is not a string")
            if field in QUANTITY_DICTS and inner == "str" and _kind_of(v) in ("int", "float"):
                continue
            walk(v, inner, f"{path}.{k}", errors, field)
        return
    scalar = {"str": ("str",), "bool": ("bool",), "int": ("int",),
              "float": ("int", "float"), "datetime": ("str",), "date": ("str",)}
    if typename in scalar:
        if _kind_of(value) not in scalar[typename]:
            errors.append(f"{path}: expected {typename}, got {_kind_of(value)} {value!r}")
        return
    if typename == "object":  # IntOrString, Quantity, free-form: any scalar or value
        return
    fields = _fields(typename)
    if fields is None:
        errors.append(f"{path}: no model {typename}")
        return
    if not isinstance(value, dict):
        errors.append(f"{path}: expected a mapping ({typename}), got {_kind_of(value)}")
        return
    for k, v in value.items():
        if k not in fields:
            errors.append(f"{path}.{k}: unknown field (not in {typename})")
            continue
        walk(v, fields[k], f"{path}.{k}", errors, k)


def _camel(group):
    return "".join(p[:1].upper() + p[1:] for p in group.split("."))


def _snake(kind):
    return re.sub(r"(?<!^)(?=[A-Z])", "_", kind).lower()


def model_for(api_version, kind):
    """The model class name for apiVersion/kind, or an error string."""
    if (api_version, kind) in HAND_SCHEMAS:
        return HAND_SCHEMAS[(api_version, kind)], None
    if not isinstance(api_version, str) or not isinstance(kind, str):
        return None, "apiVersion and kind must be strings"
    group, _, version = api_version.rpartition("/")
    group = group or "core"
    name = version[:1].upper() + version[1:] + kind
    if getattr(client, name, None) is None:
        return None, f"unknown kind {kind} in {api_version} (no model {name})"
    # The group must be the kind's: its API class must create this kind.
    api = getattr(client, _camel(group.replace(".k8s.io", "")) + version[:1].upper()
                  + version[1:] + "Api", None)
    snake = _snake(kind)
    if api is None or not (hasattr(api, f"create_namespaced_{snake}")
                           or hasattr(api, f"create_{snake}")):
        return None, f"kind {kind} is not served by {api_version}"
    return name, None


def walk_object(obj, where, errors):
    if not isinstance(obj, dict):
        errors.append(f"{where}: a document that is not a mapping")
        return
    name, err = model_for(obj.get("apiVersion"), obj.get("kind"))
    if err:
        errors.append(f"{where}: {err}")
        return
    found = []
    walk(obj, name, "", found)
    errors.extend(f"{where}: {e.lstrip('.')}" for e in found)


# ---- kustomization.yaml ----

def check_kustomization(path, rel, errors):
    try:
        docs = load_all(path)
    except yaml.YAMLError as e:
        errors.append(f"{rel}: {e}")
        return
    if len(docs) != 1 or not isinstance(docs[0], dict):
        errors.append(f"{rel}: must hold one mapping")
        return
    k = docs[0]
    for key in k:
        if key not in KUSTOMIZATION_KEYS:
            errors.append(f"{rel}: unknown key '{key}'")
    kind = k.get("kind", "Kustomization")
    if kind not in KUSTOMIZATION_KINDS:
        errors.append(f"{rel}: unknown kind '{kind}'")
    elif k.get("apiVersion") != KUSTOMIZATION_KINDS[kind]:
        errors.append(f"{rel}: a {kind} is apiVersion {KUSTOMIZATION_KINDS[kind]}")
    for key, allowed in ENTRY_KEYS.items():
        for i, entry in enumerate(k.get(key) or []):
            if not isinstance(entry, dict):
                errors.append(f"{rel}: {key}[{i}] must be a mapping")
                continue
            for ek in entry:
                if ek not in allowed:
                    errors.append(f"{rel}: {key}[{i}]: unknown key '{ek}'")
    for key in ("resources", "components"):
        for r in k.get(key) or []:
            if not os.path.exists(os.path.join(os.path.dirname(path), r)):
                errors.append(f"{rel}: {key}: '{r}' does not exist")


# ---- semantic lints over one rendered bundle ----

def pod_spec(obj):
    kind = obj.get("kind")
    spec = obj.get("spec") or {}
    if kind == "Pod":
        return spec, obj.get("metadata") or {}
    if kind in WORKLOADS:
        tpl = spec.get("template") or {}
        return tpl.get("spec") or {}, tpl.get("metadata") or {}
    if kind == "CronJob":
        tpl = ((spec.get("jobTemplate") or {}).get("spec") or {}).get("template") or {}
        return tpl.get("spec") or {}, tpl.get("metadata") or {}
    return None, None


def containers(spec):
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for i, c in enumerate(spec.get(key) or []):
            yield f"{key}[{i}]", c


VAR_REF = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


def check_var_refs(text, defined, where, errors):
    if not isinstance(text, str):
        return
    for m in VAR_REF.finditer(text):
        if m.group(1) and m.group(1) not in defined:
            errors.append(f"{where}: $({m.group(1)}) is not defined earlier in the container's env")


def flags_of_help(text):
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9.-]*)", text))


def is_pyprofd(container):
    image = container.get("image") or ""
    base = image.split("@")[0].rsplit("/", 1)[-1].split(":")[0]
    return base == "pyprofd"


def resolve_env(container, meta_ns, objects):
    """The container's environment as the kubelet would set it (fieldRefs
    get fixed stand-in values)."""
    field_values = {
        "spec.nodeName": "node-1", "metadata.name": "pod-1",
        "metadata.namespace": meta_ns or "default",
        "metadata.uid": "00000000-0000-4000-8000-000000000001",
        "status.hostIP": "10.0.0.1", "status.podIP": "10.0.1.1",
        "spec.serviceAccountName": "default",
    }
    env = {}
    for e in container.get("env") or []:
        name = e.get("name")
        if "value" in e:
            v = VAR_REF.sub(lambda m: "$" if m.group(0) == "$$" else env.get(m.group(1), m.group(0)),
                            str(e["value"]))
            env[name] = v
        elif "valueFrom" in e:
            vf = e["valueFrom"]
            if "fieldRef" in vf:
                env[name] = field_values.get(vf["fieldRef"].get("fieldPath"), "x")
            elif "secretKeyRef" in vf or "configMapKeyRef" in vf:
                ref = vf.get("secretKeyRef") or vf.get("configMapKeyRef")
                kind = "Secret" if "secretKeyRef" in vf else "ConfigMap"
                o = objects.get((kind, meta_ns, ref.get("name")))
                env[name] = volume_files_of(o).get(ref.get("key"), "") if o else ""
            else:
                env[name] = "x"
    return env


def volume_files_of(obj):
    if obj is None:
        return {}
    files = {}
    for k, v in (obj.get("data") or {}).items():
        files[k] = base64.b64decode(v).decode("utf-8", "replace") if obj["kind"] == "Secret" else v
    for k, v in (obj.get("stringData") or {}).items():
        files[k] = v
    return files


def lint_bundle(bname, docs, help_text, errors, configs):
    objects = {}
    for d in docs:
        md = d.get("metadata") or {}
        objects[(d.get("kind"), md.get("namespace"), md.get("name"))] = d
    cluster_scoped = {"ClusterRole", "ClusterRoleBinding", "Namespace"}
    help_flags = flags_of_help(help_text)

    # (namespace, template labels, {port name: number}) of every pod template
    pods = []
    for d in docs:
        spec, tmeta = pod_spec(d)
        if spec is not None:
            named = {p.get("name"): p.get("containerPort") for _, c in containers(spec)
                     for p in c.get("ports") or [] if p.get("name")}
            pods.append(((d.get("metadata") or {}).get("namespace"), tmeta.get("labels") or {}, named))

    def selected(ns, selector):
        """The named ports of the pod templates in ns that selector selects."""
        match = (selector or {}).get("matchLabels") or {}
        out = {}
        for pns, labels, named in pods:
            if pns == ns and all(labels.get(k) == v for k, v in match.items()):
                out.update(named)
        return out

    for d in docs:
        kind = d.get("kind")
        md = d.get("metadata") or {}
        ns = md.get("namespace")
        where = f"{bname}: {kind}/{md.get('name')}"

        if kind == "PodMonitor":
            spec = d.get("spec") or {}
            names = (spec.get("namespaceSelector") or {}).get("matchNames") or [ns]
            ports = {}
            for n in names:
                ports.update(selected(n, spec.get("selector")))
            for i, ep in enumerate(spec.get("podMetricsEndpoints") or []):
                if "port" in ep and ep["port"] not in ports:
                    errors.append(f"{where}: podMetricsEndpoints[{i}].port '{ep['port']}' names no "
                                  f"container port of the pods it selects")
        if kind == "NetworkPolicy":
            spec = d.get("spec") or {}
            ports = selected(ns, spec.get("podSelector"))
            for i, rule in enumerate(spec.get("ingress") or []):
                for j, p in enumerate(rule.get("ports") or []):
                    port = p.get("port")
                    if port is not None and port not in ports and port not in ports.values():
                        errors.append(f"{where}: ingress[{i}].ports[{j}]: port {port} is not a "
                                      f"container port of the pods it selects")

        if kind in ("RoleBinding", "ClusterRoleBinding"):
            ref = d.get("roleRef") or {}
            rns = None if ref.get("kind") == "ClusterRole" else ns
            if (ref.get("kind"), rns, ref.get("name")) not in objects:
                errors.append(f"{where}: roleRef {ref.get('kind')}/{ref.get('name')} is not in the bundle")
            for s in d.get("subjects") or []:
                if s.get("kind") == "ServiceAccount" and \
                        ("ServiceAccount", s.get("namespace") or ns, s.get("name")) not in objects:
                    errors.append(f"{where}: subject ServiceAccount "
                                  f"{s.get('namespace') or ns}/{s.get('name')} is not in the bundle")
        if kind in cluster_scoped and ns:
            errors.append(f"{where}: a cluster-scoped object with a namespace")

        spec, tmeta = pod_spec(d)
        if spec is None:
            continue
        if kind in WORKLOADS:
            sel = ((d.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
            labels = tmeta.get("labels") or {}
            for k, v in sel.items():
                if labels.get(k) != v:
                    errors.append(f"{where}: spec.selector.matchLabels {k}={v} does not match "
                                  f"the pod template's labels")
            if not sel:
                errors.append(f"{where}: spec.selector has no matchLabels")
        all_ports = {p.get("name") for _, c in containers(spec) for p in c.get("ports") or []}
        for key, value in (tmeta.get("annotations") or {}).items():
            if key.startswith("profiles.grafana.com/") and key.endswith(".port_name") \
                    and value not in all_ports:
                errors.append(f"{where}: annotation {key}: '{value}' names no container port of the pod")
        for bad in ("hostNetwork", "hostIPC"):
            if spec.get(bad):
                errors.append(f"{where}: {bad}: true")
        sa = spec.get("serviceAccountName")
        if sa and sa != "default" and ("ServiceAccount", ns, sa) not in objects:
            errors.append(f"{where}: serviceAccountName {sa} is not in the bundle")
        volumes = {}
        for v in spec.get("volumes") or []:
            volumes[v.get("name")] = v
            if "hostPath" in v:
                errors.append(f"{where}: volume '{v.get('name')}' is a hostPath")
            for vk, nk, okind in (("configMap", "name", "ConfigMap"), ("secret", "secretName", "Secret")):
                src = v.get(vk)
                if src and not src.get("optional") and (okind, ns, src.get(nk)) not in objects:
                    errors.append(f"{where}: volume '{v.get('name')}': {okind} {src.get(nk)} "
                                  f"is not in the bundle and not optional")

        for cpath, c in containers(spec):
            cw = f"{where}: {cpath} ({c.get('name')})"
            ports = {p.get("name"): p.get("containerPort") for p in c.get("ports") or []}
            for p in c.get("ports") or []:
                if "hostPort" in p:
                    errors.append(f"{cw}: port {p.get('name')}: hostPort is set")
            for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
                pr = c.get(probe) or {}
                for h in ("httpGet", "tcpSocket", "grpc"):
                    if h not in pr:
                        continue
                    port = pr[h].get("port")
                    if isinstance(port, str) and port not in ports:
                        errors.append(f"{cw}: {probe} port '{port}' names no port of the container")
                    elif isinstance(port, int) and port not in ports.values():
                        errors.append(f"{cw}: {probe} port {port} is not a port of the container")
            sc = c.get("securityContext") or {}
            if sc.get("privileged"):
                errors.append(f"{cw}: privileged: true")
            caps = sc.get("capabilities") or {}
            for cap in caps.get("add") or []:
                if cap not in ALLOWED_CAPS:
                    errors.append(f"{cw}: capability {cap} is not in the documented table "
                                  f"({', '.join(sorted(ALLOWED_CAPS))})")
            if caps.get("add") and "ALL" not in (caps.get("drop") or []):
                errors.append(f"{cw}: capabilities are added without dropping ALL")
            defined = set()
            for i, e in enumerate(c.get("env") or []):
                check_var_refs(e.get("value"), defined, f"{cw}: env[{i}] ({e.get('name')})", errors)
                defined.add(e.get("name"))
            for key in ("command", "args"):
                for i, a in enumerate(c.get(key) or []):
                    check_var_refs(a, defined, f"{cw}: {key}[{i}]", errors)
            if not is_pyprofd(c):
                continue
            args = [str(a) for a in (c.get("command") or [])[1:] + (c.get("args") or [])]
            if not args or args[0] != "agent":
                errors.append(f"{cw}: pyprofd's first argument must be the subcommand agent")
                continue
            config_file, expand = None, False
            for i, a in enumerate(args[1:], 1):
                if not a.startswith("-"):
                    continue
                flag, _, value = a.partition("=")
                if flag not in help_flags:
                    errors.append(f"{cw}: args: flag {flag} is not in 'pyprofd agent --help'")
                if flag == "--config.file":
                    config_file = value or (args[i + 1] if i + 1 < len(args) else None)
                if flag == "--config.expand-env":
                    expand = True
            if not config_file:
                continue
            files, dirs, found = {}, [], False
            for m in c.get("volumeMounts") or []:
                v = volumes.get(m.get("name"))
                mp = m.get("mountPath", "").rstrip("/")
                if v is None:
                    errors.append(f"{cw}: volumeMount '{m.get('name')}' names no volume")
                    continue
                dirs.append(mp)
                content = {}
                if "configMap" in v:
                    content = volume_files_of(objects.get(("ConfigMap", ns, v["configMap"].get("name"))))
                    items = v["configMap"].get("items")
                elif "secret" in v:
                    content = volume_files_of(objects.get(("Secret", ns, v["secret"].get("secretName"))))
                    items = v["secret"].get("items")
                else:
                    items = None
                if items:
                    content = {it["path"]: content.get(it["key"], "") for it in items}
                for k, text in content.items():
                    files[f"{mp}/{k}"] = text
                    if f"{mp}/{k}" == config_file:
                        found = True
            if not found:
                errors.append(f"{cw}: --config.file {config_file} is in no mounted ConfigMap or Secret")
                continue
            configs.append({"where": cw, "config_file": config_file, "expand_env": expand,
                            "env": resolve_env(c, ns, objects), "files": files, "dirs": dirs})


def main():
    work = sys.argv[1]
    with open(os.path.join(work, "request.json"), encoding="utf-8") as f:
        req = json.load(f)
    result = {"trees": []}
    for tree in req["trees"]:
        errors, configs = [], []
        top = tree["dir"]
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames.sort()
            for fn in sorted(filenames):
                path = os.path.join(dirpath, fn)
                rel = os.path.relpath(path, top)
                if fn == "kustomization.yaml":
                    check_kustomization(path, rel, errors)
                elif fn.endswith(".yaml"):
                    try:
                        docs = load_all(path)
                    except yaml.YAMLError as e:
                        errors.append(f"{rel}: " + " ".join(str(e).replace(top + "/", "").split()))
                        continue
                    for i, d in enumerate(docs):
                        md = d.get("metadata") or {} if isinstance(d, dict) else {}
                        walk_object(d, f"{rel}: {d.get('kind') if isinstance(d, dict) else '?'}/"
                                    f"{md.get('name')}", errors)
        for b in tree["bundles"]:
            try:
                docs = load_all(b["file"])
            except yaml.YAMLError as e:
                errors.append(f"{b['name']}: {e}")
                continue
            for d in docs:
                md = d.get("metadata") or {}
                walk_object(d, f"{b['name']}: {d.get('kind')}/{md.get('name')}", errors)
            lint_bundle(b["name"], docs, req["help"], errors, configs)
        result["trees"].append({"name": tree["name"], "errors": errors, "configs": configs})
    with open(os.path.join(work, "result.json"), "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
