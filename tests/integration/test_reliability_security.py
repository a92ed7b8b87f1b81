"""Security (issue 6): verified helm download, no secrets in output (even at -vvv and on failure),
least privilege (docs/rbac.yml is enough; a missing permission names verb and resource), and an
uninstall that never removes what the collection does not own. Runs on the 'driver' cluster: two
real nodes (real01, real02), the driver a real kubelet plugin there, so every install waits for
real slices and every uninstall for the kubelets to remove them.
"""
import hashlib
import json
import os
import socket
import subprocess
import sys
import time

import pytest

from ansible_run import run_playbook
from reliability_lib import (CAPTURED, FIGURES, NEEDS_REAL_NODES, AuditLog, all_secrets, capture, expected_totals,
                             get_cluster, helm, no_traceback, rbac_rules_from_docs, res, sa_kubeconfig,
                             scan)

pytestmark = [pytest.mark.timeout(900), NEEDS_REAL_NODES]


@pytest.fixture(scope="module")
def dc(cluster_factory):
    c = get_cluster(cluster_factory, "driver")
    yield c


def as_user(cluster, kubeconfig, tmp, **extra):
    """Variables for a run with another kubeconfig and a fresh helm cache."""
    v = {"dra_cpu_kubeconfig": kubeconfig, "dra_cpu_helm_cache_dir": str(tmp / "helm-cache"),
         "dra_cpu_topology_timeout": 60, "dra_cpu_uninstall_timeout": 60, "dra_cpu_helm_timeout": "90s"}
    v.update(extra)
    return v


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ------------------------------------------------------------------------------ helm download


def test_helm_checksum_mismatch_is_refused_and_nothing_written(dc, tmp_path):
    version = dc.env["CLUSTER_HELM_VERSION"]
    name = f"helm-{version}-linux-amd64.tar.gz"
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    real = os.path.join(os.path.dirname(os.path.dirname(dc.env["CLUSTER_HELM_BINARY"])), "..", "helm-mirror", name)
    src = real if os.path.exists(real) else None
    data = open(src, "rb").read() if src else b"not helm"
    (mirror / name).write_bytes(data + b"tampered")
    (mirror / (name + ".sha256sum")).write_text(f"{hashlib.sha256(data).hexdigest()}  {name}\n")
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "http.server", "--bind", "127.0.0.1", "--directory",
                               str(mirror), str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    kubeconfig, token, user = sa_kubeconfig(dc, "rel-checksum", cluster_role="cluster-admin")
    try:
        time.sleep(1)
        audit = AuditLog(dc).mark()
        r = capture("checksum", run_playbook(dc, "install", as_user(
            dc, kubeconfig, tmp_path, dra_cpu_helm_mirror=f"http://127.0.0.1:{port}",
            dra_cpu_helm_mirror_allow_http=True)))
        writes = audit.writes(user=user)
    finally:
        server.kill()
        server.wait()
    msg = " ".join(r.failure_messages())
    assert r.rc != 0
    assert "does not match its published sha256" in msg and "nothing was installed" in msg, msg
    assert not list((tmp_path / "helm-cache").rglob("helm")), "an unverified helm was unpacked"
    assert writes == [], writes
    assert no_traceback(r)


def test_plain_http_mirror_only_when_allowed(dc, tmp_path):
    r = capture("http mirror", run_playbook(dc, "install", {
        "dra_cpu_helm_mirror_allow_http": False, "dra_cpu_helm_cache_dir": str(tmp_path / "c")}))
    msg = " ".join(r.failure_messages())
    assert r.rc != 0
    assert "dra_cpu_helm_mirror: '%s' uses plain http" % dc.env["CLUSTER_HELM_MIRROR"] in msg, msg
    assert "dra_cpu_helm_mirror_allow_http" in msg
    assert not (tmp_path / "c").exists()


# ------------------------------------------------------------------------------ least privilege


def test_missing_permission_names_verb_and_resource(dc, tmp_path):
    rules = []
    for rule in rbac_rules_from_docs():
        rule = dict(rule)
        if rule.get("resources") == ["nodes"]:
            rule["verbs"] = ["get"]            # no list/watch on nodes
        rules.append(rule)
    kubeconfig, token, user = sa_kubeconfig(dc, "rel-no-node-list", rules=rules)
    audit = AuditLog(dc).mark()
    r = capture("missing permission", run_playbook(dc, "install", as_user(dc, kubeconfig, tmp_path)))
    msg = " ".join(r.failure_messages())
    assert r.rc != 0
    assert "permission denied: cannot list nodes" in msg, msg
    assert no_traceback(r), r.stdout[-2000:]
    assert audit.writes(user=user) == []


def test_least_privilege_install_wait_and_uninstall_spare_what_is_not_ours(dc, tmp_path):
    """docs/rbac.yml is enough to install, wait and uninstall. Meanwhile someone else put a release
    into the namespace the role created, another driver published a slice and another namespace
    holds a release: the uninstall removes only the role's release."""
    kubeconfig, token, user = sa_kubeconfig(dc, "rel-installer", rules=rbac_rules_from_docs())
    r = capture("rbac install", run_playbook(dc, "install", as_user(dc, kubeconfig, tmp_path), verbosity=0))
    assert r.rc == 0, r.failure_messages()
    assert r.fact("dra_cpu_topology")["nodes"]["real01"]["allocatable_cpus"] == 10
    assert list((tmp_path / "helm-cache").rglob("helm")), "helm was not downloaded from the http mirror"
    ns = res(dc, "v1", "Namespace").get(name="dra-driver-cpu")
    assert ns.metadata.labels["app.kubernetes.io/managed-by"] == "kubevirtci.dra_cpu"

    # someone else's things
    chart = tmp_path / "other-chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: other\nversion: 1.0.0\n")
    (chart / "templates" / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other-{{ .Release.Name }}\ndata: {a: b}\n")
    helm(dc, "install", "other", str(chart), "-n", "dra-driver-cpu")
    helm(dc, "install", "elsewhere", str(chart), "-n", "rel-elsewhere", "--create-namespace")
    slices = res(dc, "resource.k8s.io/v1", "ResourceSlice")
    slices.create(body={"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                        "metadata": {"name": "other-driver-real01"},
                        "spec": {"driver": "gpu.example.com", "nodeName": "real01",
                                 "pool": {"name": "real01", "generation": 1, "resourceSliceCount": 1},
                                 "devices": [{"name": "gpu0"}]}})
    try:
        r = capture("rbac uninstall", run_playbook(dc, "uninstall", as_user(dc, kubeconfig, tmp_path)))
        assert r.rc == 0, r.failure_messages()
        releases = sorted((x["name"], x["namespace"]) for x in
                          json.loads(helm(dc, "list", "-A", "-a", "-o", "json").stdout))
        assert releases == [("elsewhere", "rel-elsewhere"), ("other", "dra-driver-cpu")], releases
        assert [s.metadata.name for s in slices.get(field_selector="spec.driver=gpu.example.com").items] \
            == ["other-driver-real01"]
        assert not slices.get(field_selector="spec.driver=dra.cpu").items
        res(dc, "v1", "Namespace").get(name="dra-driver-cpu")        # kept: 'other' lives there
        assert r.result("Uninstall release dra-driver-cpu on ")["report"][1] == (
            "namespace dra-driver-cpu: left in place, created by this collection but it also holds helm "
            "release(s) other")
        # the other release gone, the namespace the role created goes too
        helm(dc, "uninstall", "other", "-n", "dra-driver-cpu", "--wait")
        r = capture("rbac uninstall 2", run_playbook(dc, "uninstall", as_user(dc, kubeconfig, tmp_path)))
        assert r.rc == 0, r.failure_messages()
        assert "dra-driver-cpu" not in [n.metadata.name for n in res(dc, "v1", "Namespace").get().items]
        assert "rel-elsewhere" in [n.metadata.name for n in res(dc, "v1", "Namespace").get().items]
    finally:
        slices.delete(name="other-driver-real01")
        helm(dc, "uninstall", "elsewhere", "-n", "rel-elsewhere", check=False)


# ------------------------------------------------------------------------------ secrets


def test_no_secret_in_output_at_vvv_success_and_failure(dc, tmp_path):
    kubeconfig, token, _ = sa_kubeconfig(dc, "rel-vvv", cluster_role="cluster-admin")
    for label, variables in [
        ("vvv install (admin kubeconfig)", {"dra_cpu_topology_timeout": 60}),
        ("vvv failing install", as_user(dc, kubeconfig, tmp_path, dra_cpu_min_cell_cpus=64)),
        ("vvv bad context", as_user(dc, kubeconfig, tmp_path, dra_cpu_context="nope")),
        ("vvv uninstall", {"dra_cpu_uninstall_timeout": 60}),
    ]:
        proc = run_playbook(dc, "uninstall" if "uninstall" in label else "install", variables, verbosity=3,
                            callback="ansible.builtin.default")
        CAPTURED.append((label, proc.stdout + proc.stderr))
        FIGURES["vvv_outputs"] += 1
        FIGURES["vvv_failing"] += 1 if proc.returncode != 0 else 0
        if "failing" in label:
            assert proc.returncode != 0 and "no cell can hold a VM of 64 host CPUs" in proc.stdout
        elif "context" in label:
            assert proc.returncode != 0 and "dra_cpu_context: 'nope'" in proc.stdout
        else:
            assert proc.returncode == 0, proc.stdout[-3000:]
        assert "Traceback" not in proc.stdout + proc.stderr
    secrets, _ = all_secrets()
    assert token in secrets
    leaks = scan(secrets)
    assert leaks == [], leaks


def test_zz_secret_scan_of_every_captured_output_and_figures(dc, request):
    """The secret scan over every output the suite captured, and the figures of docs/reliability.md.
    The exact figures hold when the three reliability files ran completely (make integration);
    a partial run (-k, one file) checks what it ran."""
    secrets, counts = all_secrets()
    leaks = scan(secrets)
    FIGURES["outputs_scanned"] = len(CAPTURED)
    FIGURES["secrets_searched"] = len(secrets)
    FIGURES["secrets_leaked"] = len(leaks)
    print("\nRELIABILITY FIGURES " + json.dumps(FIGURES) + " SECRETS " + json.dumps(counts))
    assert leaks == [], leaks
    # every credential of every cluster started, every ServiceAccount token issued, no certificate
    assert (counts["cluster_tokens"], counts["private_keys"]) == expected_totals(), counts
    assert len(secrets) == counts["cluster_tokens"] + counts["private_keys"] + counts["sa_tokens"]
    collected = {}
    for item in request.session.items:
        collected.setdefault(os.path.basename(str(item.fspath)), []).append(item.name)
    faults = collected.get("test_reliability_faults.py", [])
    # a fault counts as survived only once every assert of its test passed
    assert FIGURES["faults_survived"] == FIGURES["faults_injected"] == len(faults), (FIGURES, faults)
    full = (len(faults) == 10 and "test_all_cases_ran" in collected.get("test_reliability_bad_input.py", [])
            and len(collected.get("test_reliability_security.py", [])) == 6
            and len(collected.get("test_real_driver_cannot_run.py", [])) == 2)
    if full:
        # the figures of docs/reliability.md
        # 'slices': 3 tokens, 7 keys; 'driver' (2 real nodes): 3 + 2 kubelet tokens, 6 + 2 kubelet serving keys
        assert counts == {"clusters": 2, "cluster_tokens": 8, "private_keys": 15, "sa_tokens": 5}, counts
        assert len(secrets) == 28
        assert FIGURES["faults_injected"] == FIGURES["faults_survived"] == 10
        assert FIGURES["bad_inputs"] == 50 and FIGURES["bad_input_writes"] == 0, FIGURES
        # the three files' 24 outputs and test_real_driver_cannot_run.py's 3 installs (the same 'driver' cluster)
        assert FIGURES["outputs_scanned"] == 27, [label for label, _ in CAPTURED]
        assert FIGURES["vvv_outputs"] == 4 and FIGURES["vvv_failing"] == 2, FIGURES
