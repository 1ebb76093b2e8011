# SPDX-License-Identifier: MIT
"""A strict check of JSON objects against the official client's models.

Runs where python3-kubernetes is installed (the kube-tools rootfs:
`chroot ROOT /usr/bin/python3 ...`). The client's own deserializer ignores
fields it does not know; strict_errors() walks the object beside the model
classes (openapi_types: attribute -> type, attribute_map: attribute -> JSON
key, inverted here) and reports every key the model does not have and every
value of the wrong JSON type, with its path.

    python3 kube_models.py TYPE FILE     TYPE: V1Pod, V1PodList, V1Status, ...
        FILE holds one object or a JSON list of them; exit status 0 if all
        deserialize and have no unknown field, else 1 with one line each
"""

import datetime
import json
import re
import sys

import kubernetes.client
from kubernetes.client import models

_PRIMITIVE = {"str": (str,), "int": (int,), "float": (int, float), "bool": (bool,),
              "date": (str,), "datetime": (str,), "object": (object,)}
_LIST = re.compile(r"^list\[(.+)\]$")
_DICT = re.compile(r"^dict\(([^,]+), (.+)\)$")


def _inverted(klass):
    return {key: attr for attr, key in klass.attribute_map.items()}


def strict_errors(value, type_name, path="$"):
    """Every problem of @value read as @type_name (a model name or an
    openapi type string), as "path: what" strings."""
    if value is None:
        return []  # null is what the API server writes for an unset optional field
    m = _LIST.match(type_name)
    if m:
        if not isinstance(value, list):
            return [f"{path}: {type(value).__name__} where a list of {m.group(1)} belongs"]
        return [e for i, v in enumerate(value)
                for e in strict_errors(v, m.group(1), f"{path}[{i}]")]
    m = _DICT.match(type_name)
    if m:
        if not isinstance(value, dict):
            return [f"{path}: {type(value).__name__} where a map belongs"]
        return [e for k, v in value.items() for e in strict_errors(v, m.group(2), f"{path}.{k}")]
    if type_name in _PRIMITIVE:
        ok = isinstance(value, _PRIMITIVE[type_name])
        if type_name in ("int", "float") and isinstance(value, bool):
            ok = False
        if ok and type_name == "datetime":
            try:
                datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError:
                return [f"{path}: {value!r} is no RFC 3339 time"]
        return [] if ok else [f"{path}: {type(value).__name__} where {type_name} belongs"]
    klass = getattr(models, type_name, None)
    if klass is None:
        return [f"{path}: the client has no model {type_name}"]
    if not isinstance(value, dict):
        return [f"{path}: {type(value).__name__} where a {type_name} object belongs"]
    keys = _inverted(klass)
    errors = []
    for key, v in value.items():
        attr = keys.get(key)
        if attr is None:
            errors.append(f"{path}.{key}: no such field in {type_name}")
            continue
        errors += strict_errors(v, klass.openapi_types[attr], f"{path}.{key}")
    return errors


class _Response:
    def __init__(self, obj):
        self.data = json.dumps(obj)


def check(obj, type_name):
    """Problems of @obj as @type_name: the client's deserializer (which
    also enforces required fields and enums) and the strict walk."""
    try:
        kubernetes.client.ApiClient().deserialize(_Response(obj), type_name)
    except Exception as e:  # the client raises ValueError and friends
        return [f"$: the client cannot deserialize it as {type_name}: {type(e).__name__}: {e}"]
    return strict_errors(obj, type_name)


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[2]) as f:
        data = json.load(f)
    objs = data if isinstance(data, list) else [data]
    bad = 0
    for i, obj in enumerate(objs):
        for e in check(obj, argv[1]):
            print(f"object {i} ({(obj.get('metadata') or {}).get('name', '?')}): {e}")
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
