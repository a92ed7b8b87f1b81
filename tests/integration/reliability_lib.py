"""Helpers of the reliability suite (tests/integration/test_reliability_*.py).

- the clusters it runs on (small, audit log on, one per kind, shared by the three files);
- ResourceSlices published by the test itself (clusters with CLUSTER_SIMULATE_DRIVER=false);
- a ServiceAccount + TokenRequest kubeconfig (least-privilege and write-counting runs);
- the audit log reader that counts writes per user;
- the secret scan over every captured output of the suite (figures in FIGURES): every credential
  of every cluster the suite started (the API server's tokens and the private keys of its PKI) and
  every ServiceAccount token it issued. Certificates are public and are not counted as secrets.
"""
import base64
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

import pytest
import yaml

from cluster_reset import helm  # noqa: F401 -- the suite's helm, shared with the set-up step

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
BIN = os.path.dirname(sys.executable)
WRITE_VERBS = ("create", "update", "patch", "delete", "deletecollection")

# filled by the tests; asserted and printed by test_reliability_security.py::test_zz_... (docs/reliability.md)
FIGURES = {"faults_injected": 0, "faults_survived": 0, "bad_inputs": 0, "bad_input_writes": 0,
           "outputs_scanned": 0, "vvv_outputs": 0, "vvv_failing": 0, "secrets_searched": 0,
           "secrets_leaked": 0}
CAPTURED = []        # (label, text) of every playbook run of the suite, scanned for secrets
SA_TOKENS = []       # every ServiceAccount token sa_kubeconfig() issued, scanned for at the end


def capture(label, result):
    """Keep a playbook result's stdout+stderr for the secret scan; returns result."""
    text = getattr(result, "stdout", "") + "\n" + getattr(result, "stderr", "")
    CAPTURED.append((label, text))
    return result


# ------------------------------------------------------------------------------------------ clusters

_CLUSTERS = {}


def get_cluster(cluster_factory, kind):
    """'slices': 3 simulated nodes and no driver (the test publishes the slices itself: shapes a
    driver does not make on demand, on Nodes it deletes); 'driver': 2 real nodes (real01, real02: a
    real kubelet + containerd each, the driver a real kubelet plugin; tests/cluster/cluster_real_node.py),
    the chart installed by the role. Audit log on."""
    if kind not in _CLUSTERS:
        knobs = {"CLUSTER_AUDIT_LOG": "true"}
        if kind == "slices":
            knobs.update(CLUSTER_NODES="3", CLUSTER_REAL_NODES="0", CLUSTER_SIMULATE_DRIVER="false")
        else:
            knobs.update(CLUSTER_NODES="0", CLUSTER_REAL_NODES="2")
        # shared: the three reliability modules use it, so it stays up until the session ends
        _CLUSTERS[kind] = cluster_factory("rel-" + kind, shared=True, **knobs)
    return _CLUSTERS[kind]


# the 'driver' cluster's real nodes need their binaries (tests/cluster/build.sh real-node) before a
# test's timeout starts; its tests keep their place (conftest.py, needs_build)
NEEDS_REAL_NODES = pytest.mark.needs_build("real-node")


def dyn(cluster):
    from kubernetes import dynamic
    return dynamic.DynamicClient(cluster.api_client)


def res(cluster, api_version, kind):
    return dyn(cluster).resources.get(api_version=api_version, kind=kind)


def cluster_py(cluster, *args, timeout=300):
    env = dict(os.environ, CLUSTER_STATE_DIR=cluster.state_dir)
    return subprocess.run([sys.executable, os.path.join(REPO, "tests", "cluster", "cluster.py"), *args],
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=timeout, check=True)


# ------------------------------------------------------------------------------------------ slices


def node_uid(cluster, node):
    return res(cluster, "v1", "Node").get(name=node).metadata.uid


def pool_slices(cluster, node, generation=1, chunks=2, reserved=(0, 1), cpus=12, cells=2, owner=True,
                driver="dra.cpu"):
    """Grouped-mode (numanode) slices of one pool, one device per cell, spread over `chunks` slices."""
    per = cpus // cells
    devices = []
    for cell in range(cells):
        n = len([c for c in range(cell * per, (cell + 1) * per) if c not in reserved])
        devices.append({
            "name": "cpudevnuma%03d" % cell, "allowMultipleAllocations": True,
            "attributes": {"dra.cpu/numaNodeID": {"int": cell}, "dra.cpu/socketID": {"int": 0},
                           "dra.cpu/smtEnabled": {"bool": False}, "dra.cpu/numCPUs": {"int": n},
                           "dra.net/numaNode": {"int": cell}},
            "capacity": {"dra.cpu/cpu": {"value": str(n)}},
        })
    parts = [devices[i::chunks] for i in range(chunks)]
    meta_owner = ([{"apiVersion": "v1", "kind": "Node", "name": node, "uid": node_uid(cluster, node),
                    "controller": True}] if owner else [])
    out = []
    for i, part in enumerate(parts):
        out.append({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": "rel-%s-%s-g%d-%d" % (driver.replace(".", "-"), node, generation, i),
                         "ownerReferences": meta_owner},
            "spec": {"driver": driver, "nodeName": node,
                     "pool": {"name": node, "generation": generation, "resourceSliceCount": chunks},
                     "devices": part},
        })
    return out


def publish(cluster, slices):
    api = res(cluster, "resource.k8s.io/v1", "ResourceSlice")
    for s in slices:
        api.create(body=s)


def delete_slices(cluster, driver="dra.cpu"):
    api = res(cluster, "resource.k8s.io/v1", "ResourceSlice")
    for s in api.get(field_selector="spec.driver=" + driver).items:
        api.delete(name=s.metadata.name)


def slice_names(cluster, driver=None):
    api = res(cluster, "resource.k8s.io/v1", "ResourceSlice")
    items = api.get(field_selector="spec.driver=" + driver).items if driver else api.get().items
    return sorted(s.metadata.name for s in items)


# ------------------------------------------------------------------------------------------ accounts


def sa_kubeconfig(cluster, name, cluster_role=None, rules=None, path=None):
    """ServiceAccount `name` in `default`, bound (ClusterRoleBinding) to `cluster_role` or to a new
    ClusterRole with `rules`; a token from the TokenRequest API; a kubeconfig for it. Returns
    (kubeconfig path, token, username)."""
    from kubernetes import client
    core = client.CoreV1Api(cluster.api_client)
    rbac = client.RbacAuthorizationV1Api(cluster.api_client)
    try:
        core.create_namespaced_service_account("default", {"metadata": {"name": name}})
    except client.ApiException as e:
        if e.status != 409:
            raise
    if rules is not None:
        cluster_role = "rel-" + name
        body = {"metadata": {"name": cluster_role}, "rules": rules}
        try:
            rbac.create_cluster_role(body)
        except client.ApiException as e:
            if e.status != 409:
                raise
            rbac.replace_cluster_role(cluster_role, body)
    binding = {"metadata": {"name": "rel-" + name},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": cluster_role},
               "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": "default"}]}
    try:
        rbac.create_cluster_role_binding(binding)
    except client.ApiException as e:
        if e.status != 409:
            raise
        rbac.replace_cluster_role_binding("rel-" + name, binding)
    tr = core.create_namespaced_service_account_token(
        name, "default", {"spec": {"expirationSeconds": 7200, "audiences": []}})
    token = tr.status.token
    SA_TOKENS.append(token)
    with open(cluster.env["CLUSTER_CA_FILE"], "rb") as f:
        ca = base64.b64encode(f.read()).decode()
    kc = {"apiVersion": "v1", "kind": "Config", "current-context": name,
          "clusters": [{"name": "test", "cluster": {"server": cluster.env["CLUSTER_APISERVER"],
                                                    "certificate-authority-data": ca}}],
          "users": [{"name": name, "user": {"token": token}}],
          "contexts": [{"name": name, "context": {"cluster": "test", "user": name}}]}
    path = path or os.path.join(tempfile.mkdtemp(prefix="rel-kc-"), "kubeconfig")
    with open(path, "w") as f:
        yaml.safe_dump(kc, f)
    os.chmod(path, 0o600)
    return path, token, "system:serviceaccount:default:" + name


def rbac_rules_from_docs():
    with open(os.path.join(REPO, "docs", "rbac.yml")) as f:
        doc = yaml.safe_load(f)
    items = doc["items"] if doc.get("kind") == "List" else [doc]
    role = next(i for i in items if i["kind"] == "ClusterRole")
    return role["rules"]


# ------------------------------------------------------------------------------------------ audit


class AuditLog:
    """Writes recorded by kube-apiserver's audit log (CLUSTER_AUDIT_LOG=true) after `mark()`."""

    def __init__(self, cluster):
        self.path = os.path.join(cluster.state_dir, "logs", "audit.log")
        assert os.path.exists(self.path), "the cluster runs without CLUSTER_AUDIT_LOG=true"
        self.offset = 0

    def mark(self):
        self.offset = os.path.getsize(self.path)
        return self

    def writes(self, user=None, exclude_agents=("dracpu-sim",)):
        time.sleep(0.3)   # blocking mode: the event is written before the response; margin for the flush
        out = []
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            for line in f:
                try:
                    ev = json.loads(line)
                except ValueError:
                    continue
                if ev.get("verb") not in WRITE_VERBS:
                    continue
                if user and (ev.get("user") or {}).get("username") != user:
                    continue
                if any((ev.get("userAgent") or "").startswith(a) for a in exclude_agents):
                    continue
                ref = ev.get("objectRef") or {}
                out.append("%s %s %s/%s (%s)" % (ev["verb"], ref.get("resource"), ref.get("namespace") or "",
                                                 ref.get("name") or "", ev.get("userAgent", "")[:40]))
        return out


# ------------------------------------------------------------------------------------------ secrets


# tokens of a cluster (<state>/pki/tokens.csv): admin, kube-controller-manager, kube-scheduler, and
# one per real node (system:node:<name>, its kubelet's)
BASE_TOKENS = 3
# private keys of a cluster: its PKI (cluster.py), the self-signed serving keys of the
# controller-manager and scheduler (6), plus a kubelet serving key: one for all the simulated
# kubelets, one per real kubelet (measured: 7 on 'slices', 8 on 'driver')
PKI_KEYS = ("ca.key", "apiserver.key", "apiserver-kubelet-client.key", "sa.key", "kubelet.key")
BASE_KEYS = 6


def expected_credentials(cluster):
    """(tokens, private keys) a cluster of these knobs holds (BASE_TOKENS, BASE_KEYS)."""
    sim, real = (int(cluster.env.get(k) or 0) for k in ("CLUSTER_NODES", "CLUSTER_REAL_NODES"))
    return BASE_TOKENS + real, BASE_KEYS + (1 if sim else 0) + real


def expected_totals():
    """(tokens, private keys) summed over every cluster the suite started."""
    pairs = [expected_credentials(c) for c in _CLUSTERS.values()]
    return sum(t for t, _ in pairs), sum(k for _, k in pairs)


# where a state dir holds private keys: pki/, kcm/, scheduler/; the simulated kubelets' serving key;
# each real kubelet's (its /var/lib/kubelet/pki). Not a recursive search: a real node's directory
# also holds its containers' root filesystems and volumes (a `**` glob there never ended)
KEY_GLOBS = ("*/*.key", "sim/kubelet-pki/*.key", "real-nodes/*/mnt/var/lib/kubelet/pki/*.key")


def cluster_credentials(cluster):
    """The secrets of one test cluster: ``{"tokens": [...], "private_keys": [...]}``.

    Tokens: every token the API server accepts from its token file (the admin kubeconfig's among
    them). Private keys: the first line of the base64 body of every PEM private key where the state
    dir holds them (KEY_GLOBS; enough to recognise the key in any output). Certificates (the CA data
    in kubeconfigs, the *.crt files) are public and left out.
    """
    pki = os.path.join(cluster.state_dir, "pki")
    with open(os.path.join(pki, "tokens.csv")) as f:
        tokens = [line.split(",", 1)[0] for line in f if line.strip()]
    with open(cluster.kubeconfig) as f:
        kc = yaml.safe_load(f)
    for u in kc.get("users") or []:
        user = u.get("user") or {}
        assert not user.get("client-key-data") and not user.get("password"), \
            "the admin kubeconfig carries a credential the scan does not know"
        assert user.get("token") in tokens, "the admin kubeconfig's token is not in the token file"
    keys, names = [], []
    for path in sorted(p for pattern in KEY_GLOBS for p in glob.glob(os.path.join(cluster.state_dir, pattern))):
        with open(path) as f:
            lines = f.read().splitlines()
        assert lines and "PRIVATE KEY" in lines[0], path
        keys.append(lines[1])
        names.append(os.path.relpath(path, cluster.state_dir))
    missing = [k for k in PKI_KEYS if k not in [os.path.basename(n) for n in names]]
    assert not missing, f"private keys not found under {cluster.state_dir}: {missing} (found {names})"
    return {"tokens": tokens, "private_keys": keys, "key_files": names}


def all_secrets():
    """Every secret the suite knows of: the credentials of each cluster it started and every
    ServiceAccount token it issued. Returns (secrets, counts) with counts per kind."""
    found, counts = [], {"clusters": 0, "cluster_tokens": 0, "private_keys": 0, "sa_tokens": len(SA_TOKENS)}
    for cluster in _CLUSTERS.values():
        creds = cluster_credentials(cluster)
        counts["clusters"] += 1
        counts["cluster_tokens"] += len(creds["tokens"])
        counts["private_keys"] += len(creds["private_keys"])
        found += creds["tokens"] + creds["private_keys"]
    found += SA_TOKENS
    assert all(len(x) >= 16 for x in found), "a secret too short to search for"
    assert len(set(found)) == len(found), "the same secret counted twice"
    return found, counts


def scan(secret_strings):
    """(label, secret prefix) for every captured output containing a secret."""
    leaks = []
    for label, text in CAPTURED:
        for s in secret_strings:
            if s in text:
                leaks.append((label, s[:6] + "..."))
    return leaks


def topology_playbook(tmp_path, name="topology", **options):
    """A playbook that runs kubevirtci.dra_cpu.cpu_topology once with `options`."""
    play = [{"name": "cpu_topology", "hosts": "localhost", "connection": "local", "gather_facts": False,
             "tasks": [{"name": "Wait for the topology", "kubevirtci.dra_cpu.cpu_topology": options,
                        "register": "topo"}]}]
    path = os.path.join(str(tmp_path), name + ".yml")
    with open(path, "w") as f:
        yaml.safe_dump(play, f, sort_keys=False)
    return path


def no_traceback(result):
    text = result.stdout + result.stderr
    return "Traceback (most recent call last)" not in text and "MODULE FAILURE" not in text
