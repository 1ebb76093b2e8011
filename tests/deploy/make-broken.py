# SPDX-License-Identifier: MIT
"""Write tests/deploy/broken/: one small kustomize tree per check of
tests/deploy/validate.py, each a copy of the valid tree GOOD below with one
deliberate fault, and an `expect` file with the message(s) the validator
must give for it (test_deploy.py: every expected message must appear, and
every error must match one of them). Run it after changing a case:

    python3 tests/deploy/make-broken.py
"""
import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "broken")

GOOD = {
    "kustomization.yaml": """\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - rbac.yaml
  - daemonset.yaml
configMapGenerator:
  - name: pyprofd
    namespace: pyprofd
    files:
      - pyprofd.yml
""",
    "rbac.yaml": """\
apiVersion: v1
kind: ServiceAccount
metadata:
  name: pyprofd
  namespace: pyprofd
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: pyprofd
rules:
  - apiGroups: [""]
    resources: [pods]
    verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: pyprofd
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: pyprofd
subjects:
  - kind: ServiceAccount
    name: pyprofd
    namespace: pyprofd
""",
    "daemonset.yaml": """\
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: pyprofd
  namespace: pyprofd
spec:
  selector:
    matchLabels:
      app.kubernetes.io/name: pyprofd
  template:
    metadata:
      labels:
        app.kubernetes.io/name: pyprofd
    spec:
      hostPID: true
      serviceAccountName: pyprofd
      containers:
        - name: pyprofd
          image: pyprofd:0.1.0
          args:
            - agent
            - --config.file=/etc/pyprofd/pyprofd.yml
            - --config.expand-env
            - --web.listen-address=:7979
          env:
            - name: NODE_NAME
              valueFrom:
                fieldRef:
                  fieldPath: spec.nodeName
          ports:
            - name: http-metrics
              containerPort: 7979
          readinessProbe:
            httpGet:
              path: /-/ready
              port: http-metrics
          securityContext:
            runAsUser: 0
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            capabilities:
              drop: [ALL]
              add: [SYS_PTRACE]
          volumeMounts:
            - name: config
              mountPath: /etc/pyprofd
              readOnly: true
      volumes:
        - name: config
          configMap:
            name: pyprofd
""",
    "pyprofd.yml": """\
global:
  external_labels:
    node: ${NODE_NAME}
profile_configs:
  - job_name: python
server:
  listen_address: :7979
""",
}

# name: (file, old text, new text, expected messages)
CASES = {
    "unknown-field": ("daemonset.yaml", "readOnlyRootFilesystem: true",
                      "readOnlyRootFilesystm: true",
                      ["securityContext.readOnlyRootFilesystm: unknown field (not in V1SecurityContext)"]),
    "wrong-type": ("daemonset.yaml", "hostPID: true", 'hostPID: "true"',
                   ["spec.template.spec.hostPID: expected bool, got str 'true'"]),
    "wrong-type-int": ("daemonset.yaml", "containerPort: 7979", "containerPort: '7979'",
                       ["ports[0].containerPort: expected int, got str '7979'"]),
    "wrong-type-list": ("daemonset.yaml", "drop: [ALL]", "drop: ALL",
                        ["capabilities.drop: expected a list, got str"]),
    "duplicate-key": ("daemonset.yaml", "      hostPID: true\n",
                      "      hostPID: true\n      hostPID: false\n",
                      ["duplicate key 'hostPID'", "kubectl kustomize failed"]),
    "unknown-kind": ("rbac.yaml", "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\n",
                     "apiVersion: apps/v1\nkind: ClusterRole\n",
                     ["kind ClusterRole is not served by apps/v1"]),
    "selector-mismatch": ("daemonset.yaml", "      app.kubernetes.io/name: pyprofd\n  template",
                          "      app.kubernetes.io/name: pyprofd-agent\n  template",
                          ["spec.selector.matchLabels app.kubernetes.io/name=pyprofd-agent does not "
                           "match the pod template's labels"]),
    "probe-port": ("daemonset.yaml", "port: http-metrics", "port: metrics",
                   ["readinessProbe port 'metrics' names no port of the container"]),
    "undefined-var": ("daemonset.yaml", "            - --web.listen-address=:7979\n",
                      "            - --web.listen-address=$(POD_IP):7979\n",
                      ["args[3]: $(POD_IP) is not defined earlier in the container's env"]),
    "var-defined-later": ("daemonset.yaml", "          env:\n",
                          "          env:\n            - name: INSTANCE\n"
                          "              value: $(NODE_NAME)-pyprofd\n",
                          ["env[0] (INSTANCE): $(NODE_NAME) is not defined earlier in the "
                           "container's env"]),
    "dangling-roleref": ("rbac.yaml", "  kind: ClusterRole\n  name: pyprofd\n",
                         "  kind: ClusterRole\n  name: pyprofd-reader\n",
                         ["roleRef ClusterRole/pyprofd-reader is not in the bundle"]),
    "dangling-subject": ("rbac.yaml", "    name: pyprofd\n    namespace: pyprofd\n",
                         "    name: pyprofd-agent\n    namespace: pyprofd\n",
                         ["subject ServiceAccount pyprofd/pyprofd-agent is not in the bundle"]),
    "dangling-serviceaccount": ("daemonset.yaml", "serviceAccountName: pyprofd",
                                "serviceAccountName: profiler",
                                ["serviceAccountName profiler is not in the bundle"]),
    "missing-configmap": ("daemonset.yaml", "            name: pyprofd\n",
                          "            name: pyprofd-config\n",
                          ["volume 'config': ConfigMap pyprofd-config is not in the bundle and not "
                           "optional", "--config.file /etc/pyprofd/pyprofd.yml is in no mounted "
                           "ConfigMap or Secret"]),
    "hostport": ("daemonset.yaml", "containerPort: 7979", "containerPort: 7979\n              hostPort: 7979",
                 ["port http-metrics: hostPort is set"]),
    "privileged": ("daemonset.yaml", "runAsUser: 0", "runAsUser: 0\n            privileged: true",
                   ["privileged: true"]),
    "hostpath": ("daemonset.yaml", "      volumes:\n",
                 "      volumes:\n        - name: proc\n          hostPath:\n            path: /proc\n",
                 ["volume 'proc' is a hostPath"]),
    "host-network": ("daemonset.yaml", "hostPID: true", "hostPID: true\n      hostNetwork: true",
                     ["hostNetwork: true"]),
    "capability": ("daemonset.yaml", "add: [SYS_PTRACE]", "add: [SYS_PTRACE, SYS_ADMIN]",
                   ["capability SYS_ADMIN is not in the documented table"]),
    "capability-no-drop": ("daemonset.yaml", "drop: [ALL]", "drop: [NET_RAW]",
                           ["capabilities are added without dropping ALL"]),
    "unknown-flag": ("daemonset.yaml", "--web.listen-address=:7979", "--web.listen-addr=:7979",
                     ["args: flag --web.listen-addr is not in 'pyprofd agent --help'"]),
    "no-subcommand": ("daemonset.yaml", "            - agent\n", "",
                      ["pyprofd's first argument must be the subcommand agent"]),
    "bad-config": ("pyprofd.yml", "global:\n", "global:\n  sample_rate: -5\n",
                   ["pyprofd check-config: /etc/pyprofd/pyprofd.yml:2:16: global.sample_rate: "
                    "must be in (0, 1000000] Hz, got -5"]),
    "config-env": ("pyprofd.yml", "server:\n",
                   "remote_write:\n  - type: pyroscope\n    url: http://${PYROSCOPE_HOST}:4040\n"
                   "server:\n",
                   ["pyprofd check-config: /etc/pyprofd/pyprofd.yml:8:10: remote_write[0].url: "
                    "'http://:4040' has no host"]),
    "config-secret-file": ("pyprofd.yml", "server:\n",
                           "remote_write:\n  - type: parca\n    url: http://parca:7070\n"
                           "    authorization:\n"
                           "      credentials_file: /etc/pyprofd/secrets/parca-token\n"
                           "server:\n",
                           ["remote_write[0].authorization.credentials_file: cannot read "
                            "'/etc/pyprofd/secrets/parca-token': No such file or directory"]),
    "podmonitor-port": ("kustomization.yaml", "  - daemonset.yaml\n",
                        "  - daemonset.yaml\n  - podmonitor.yaml\n",
                        ["podMetricsEndpoints[0].port 'metrics' names no container port of the pods "
                         "it selects"]),
    "networkpolicy-port": ("kustomization.yaml", "  - daemonset.yaml\n",
                           "  - daemonset.yaml\n  - networkpolicy.yaml\n",
                           ["ingress[0].ports[0]: port 7070 is not a container port of the pods it "
                            "selects"]),
    "annotation-port": ("daemonset.yaml", "    metadata:\n      labels:\n",
                        "    metadata:\n      annotations:\n"
                        "        profiles.grafana.com/cpu.scrape: \"true\"\n"
                        "        profiles.grafana.com/cpu.port_name: http\n      labels:\n",
                        ["annotation profiles.grafana.com/cpu.port_name: 'http' names no container "
                         "port of the pod"]),
    "kustomization-key": ("kustomization.yaml", "resources:", "resource:",
                          ["kustomization.yaml: unknown key 'resource'", "kubectl kustomize failed"]),
    "podmonitor-field": ("kustomization.yaml", "  - daemonset.yaml\n",
                         "  - daemonset.yaml\n  - podmonitor.yaml\n",
                         ["podMetricsEndpoints[0].prot: unknown field (not in PMPodMetricsEndpoint)"]),
}

EXTRA = {
    "podmonitor-port": {
        "podmonitor.yaml": """\
apiVersion: monitoring.coreos.com/v1
kind: PodMonitor
metadata:
  name: pyprofd
  namespace: pyprofd
spec:
  selector:
    matchLabels:
      app.kubernetes.io/name: pyprofd
  podMetricsEndpoints:
    - port: metrics
      path: /metrics
""",
    },
    "networkpolicy-port": {
        "networkpolicy.yaml": """\
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: pyprofd
  namespace: pyprofd
spec:
  podSelector:
    matchLabels:
      app.kubernetes.io/name: pyprofd
  policyTypes: [Ingress]
  ingress:
    - ports:
        - protocol: TCP
          port: 7070
""",
    },
    "podmonitor-field": {
        "podmonitor.yaml": """\
apiVersion: monitoring.coreos.com/v1
kind: PodMonitor
metadata:
  name: pyprofd
  namespace: pyprofd
spec:
  selector:
    matchLabels:
      app.kubernetes.io/name: pyprofd
  podMetricsEndpoints:
    - prot: http-metrics
      path: /metrics
""",
    },
}


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    for name, (fname, old, new, expect) in CASES.items():
        d = os.path.join(OUT, name)
        os.makedirs(d)
        files = dict(GOOD)
        files.update(EXTRA.get(name, {}))
        assert files[fname].count(old) >= 1, (name, old)
        files[fname] = files[fname].replace(old, new, 1)
        for f, text in files.items():
            with open(os.path.join(d, f), "w", encoding="utf-8") as fh:
                fh.write(text)
        with open(os.path.join(d, "expect"), "w", encoding="utf-8") as fh:
            fh.write("".join(e + "\n" for e in expect))
    d = os.path.join(OUT, "good")
    os.makedirs(d)
    for f, text in GOOD.items():
        with open(os.path.join(d, f), "w", encoding="utf-8") as fh:
            fh.write(text)
    with open(os.path.join(d, "expect"), "w", encoding="utf-8") as fh:
        fh.write("")


if __name__ == "__main__":
    main()
