# SPDX-License-Identifier: MIT
"""Validate pyprofd's Kubernetes manifests offline (tests/deploy/README.md).

    validate.py [--pyprofd BIN] [--rootfs DIR] [--json] [TREE...]

TREE is a directory laid out like deploy/kubernetes (default: that one).
For each tree:

 1. every kustomization in it (a kustomization.yaml of kind Kustomization,
    not a Component) is rendered with the real `kubectl kustomize` of the
    kube-tools rootfs (scripts/python-rootfs.sh --kube-tools), in a copy of
    the tree under the rootfs's /tmp;
 2. tests/deploy/lint.py runs there, with the rootfs's python3-kubernetes:
    the model walk and the semantic lints (lint.py's docstring lists them);
 3. every pyprofd configuration a pod of a rendered bundle would load is
    checked with the host's `pyprofd check-config` (with --config.expand-env
    when the container's args have it), in a private mount namespace whose
    root holds the host's /usr and exactly the files the pod would mount
    (its ConfigMap and Secret volumes at their mountPaths), with exactly the
    environment the pod would get (fieldRefs get stand-in values).

Prints one line per problem ("TREE: where: what") and exits 1 if there is
any, 0 otherwise; --json prints {tree: [errors]} instead. Needs root (chroot,
unshare). Runs with the host's python3 (standard library only).
"""
import argparse
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
JOBS = 4  # renders and check-config runs at once


def rootfs_path():
    env = os.environ.get("PYPROFD_KUBE_TOOLS_ROOTFS")
    if env:
        return env
    out = subprocess.run([os.path.join(SRC, "scripts", "python-rootfs.sh"), "--kube-tools",
                          "--print-path"], check=True, capture_output=True, text=True)
    return out.stdout.strip()


def kustomizations(top):
    """Directories under top holding a kustomization.yaml of kind
    Kustomization (components cannot be rendered alone)."""
    found = []
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames.sort()
        if "kustomization.yaml" not in filenames:
            continue
        with open(os.path.join(dirpath, "kustomization.yaml"), encoding="utf-8") as f:
            text = f.read()
        if "\nkind: Component" in "\n" + text:
            continue
        found.append(os.path.relpath(dirpath, top))
    return found


def check_config(pyprofd, cfg, scratch):
    """Run `pyprofd check-config` as the pod would load cfg; returns the
    error lines (empty when ok)."""
    root = tempfile.mkdtemp(prefix="pod-", dir=scratch)
    try:
        for d in ("usr", "etc", "tmp", "proc"):
            os.makedirs(os.path.join(root, d), exist_ok=True)
        for link in ("bin", "sbin", "lib", "lib64"):
            if os.path.islink("/" + link):
                os.symlink(os.readlink("/" + link), os.path.join(root, link))
        shutil.copy("/etc/ld.so.cache", os.path.join(root, "etc"))
        open(os.path.join(root, "pyprofd"), "w").close()  # the binary is bound here
        for d in cfg["dirs"]:
            os.makedirs(root + d, exist_ok=True)
        for path, text in cfg["files"].items():
            os.makedirs(os.path.dirname(root + path), exist_ok=True)
            with open(root + path, "w", encoding="utf-8") as f:
                f.write(text)
        argv = ["/pyprofd", "check-config"]
        if cfg["expand_env"]:
            argv.append("--config.expand-env")
        argv.append(cfg["config_file"])
        env = dict(cfg["env"])
        # /proc too: a pod has one, and a sanitizer build needs it (LeakSanitizer
        # reads /proc/self/task at exit)
        script = ('mount --bind -o ro /usr "$1/usr" && mount --bind -o ro "$2" "$1/pyprofd"'
                  ' && mount -t proc proc "$1/proc" && shift 2 && exec chroot "$@"')
        sanitizers = {k: v for k, v in os.environ.items()
                      if k in ("ASAN_OPTIONS", "LSAN_OPTIONS", "UBSAN_OPTIONS", "TSAN_OPTIONS")}
        r = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script,
                            "sh", root, os.path.abspath(pyprofd), root] + argv,
                           env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", **sanitizers, **env},
                           capture_output=True, text=True, timeout=30)
        if r.returncode == 0:
            return []
        lines = [ln for ln in r.stderr.splitlines() if ln.strip()] or \
            [f"check-config exited {r.returncode}"]
        return lines
    finally:
        shutil.rmtree(root, ignore_errors=True)


def validate(trees, pyprofd, rootfs):
    help_text = subprocess.run([pyprofd, "agent", "--help"], capture_output=True,
                               text=True).stdout
    if "--config.file" not in help_text:
        raise SystemExit(f"validate: '{pyprofd} agent --help' does not look like pyprofd's help")
    work = tempfile.mkdtemp(prefix=f"pyprofd-deploy-{os.getpid()}-", dir=os.path.join(rootfs, "tmp"))
    inner = "/tmp/" + os.path.basename(work)
    errors = {}
    try:
        req = {"help": help_text, "trees": []}
        shutil.copy(os.path.join(HERE, "lint.py"), work)
        renders = []
        for n, tree in enumerate(trees):
            name = os.path.relpath(os.path.abspath(tree), SRC)
            errors[name] = []
            copy = os.path.join(work, f"tree{n}")
            shutil.copytree(tree, copy)
            t = {"name": name, "dir": f"{inner}/tree{n}", "bundles": []}
            req["trees"].append(t)
            for k in kustomizations(copy):
                renders.append((n, name, k, t))

        def render(job):
            n, _, k, _ = job
            return subprocess.run(["chroot", rootfs, "kubectl", "kustomize", f"{inner}/tree{n}/{k}"],
                                  capture_output=True, text=True)

        with concurrent.futures.ThreadPoolExecutor(JOBS) as pool:
            for (n, name, k, t), r in zip(renders, pool.map(render, renders)):
                bname = f"kustomize {k}"
                if r.returncode != 0:
                    msg = " ".join(r.stderr.replace(f"{inner}/tree{n}/", "").split())
                    errors[name].append(f"{bname}: kubectl kustomize failed: {msg}")
                    continue
                out = f"tree{n}-{len(t['bundles'])}.yaml"
                with open(os.path.join(work, out), "w", encoding="utf-8") as f:
                    f.write(r.stdout)
                t["bundles"].append({"name": bname, "file": f"{inner}/{out}"})
        with open(os.path.join(work, "request.json"), "w", encoding="utf-8") as f:
            json.dump(req, f)
        r = subprocess.run(["chroot", rootfs, "python3", f"{inner}/lint.py", inner],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"validate: lint.py failed:\n{r.stderr}")
        with open(os.path.join(work, "result.json"), encoding="utf-8") as f:
            result = json.load(f)
        checks = []
        for t in result["trees"]:
            errors[t["name"]].extend(t["errors"])
            checks.extend((t["name"], cfg) for cfg in t["configs"])
        with concurrent.futures.ThreadPoolExecutor(JOBS) as pool:
            done = pool.map(lambda c: check_config(pyprofd, c[1], work), checks)
            for (name, cfg), lines in zip(checks, done):
                errors[name].extend(f"{cfg['where']}: pyprofd check-config: {ln}" for ln in lines)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return errors


def main():
    ap = argparse.ArgumentParser(description="validate pyprofd's Kubernetes manifests offline")
    ap.add_argument("--pyprofd", default=os.path.join(SRC, "build", "pyprofd"))
    ap.add_argument("--rootfs", help="kube-tools rootfs (default: scripts/python-rootfs.sh "
                    "--kube-tools --print-path)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("trees", nargs="*", default=[os.path.join(SRC, "deploy", "kubernetes")])
    args = ap.parse_args()
    rootfs = args.rootfs or rootfs_path()
    if not os.path.exists(os.path.join(rootfs, "usr", "bin", "kubectl")):
        raise SystemExit(f"validate: no kubectl in {rootfs}: run scripts/python-rootfs.sh --kube-tools")
    errors = validate(args.trees, args.pyprofd, rootfs)
    if args.json:
        print(json.dumps(errors, indent=1))
    else:
        for tree, errs in errors.items():
            for e in errs:
                print(f"{tree}: {e}")
            print(f"{tree}: {len(errs)} problem(s)", file=sys.stderr)
    return 1 if any(errors.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
