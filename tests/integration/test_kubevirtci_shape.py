"""kubevirtci's k8s-1.36 provider with two nodes, end to end through its installer (issue 32).

The cluster is shaped like `KUBEVIRT_PROVIDER=k8s-1.36 KUBEVIRT_NUM_NODES=2 KUBEVIRT_NUM_VCPU=12
KUBEVIRT_NUM_NUMA_NODES=2`: two real nodes, both on CRI-O v1.36.3 (as the provider's CentOS Stream 9
nodes run CRI-O 1.36), real01 with the kubelet's default CPU manager policy (node01), real02 with
`static` and kube-reserved / system-reserved cpu=500m (kubevirtci starts node02+ with
`--cpu-manager-policy=static --kube-reserved=cpu=500m --system-reserved=cpu=500m`). The collection's
drop-in, scripts/install_dra_driver_cpu.sh, runs as kubevirtci's `up()` runs it (the host stripped to
PATH=/usr/bin:/bin, a temporary HOME, the kubeconfig at $KUBEVIRTCI_CONFIG_PATH/$KUBEVIRT_PROVIDER/
.kubeconfig, the collection from its tarball; test_installer_script.py has the details):
- the first run fails in preflight naming real02, the check and the fix, and changes nothing;
- with the documented setting (`-e dra_cpu_skip_incompatible_nodes=true`, docs/kubevirtci.md
  "The kubevirtci flow") the driver stays off real02 and the install ends with real01's cells;
- verify's claim runs on real01, pinned by the driver through CRI-O's NRI;
- a re-run changes nothing.
Tests in this module run in order. Runs last, after `build.sh cri-o` (late_builds.py).
"""
import os
import re
import subprocess

import pytest

from ansible_run import REPO, run_playbook
from test_installer_script import kubevirtci_host

pytestmark = [
    pytest.mark.late_build("cri-o"),
    pytest.mark.skipif(os.geteuid() != 0, reason="real nodes need root (mount/UTS namespaces, cgroups)"),
    pytest.mark.timeout(1500),
]

SCRIPT = os.path.join(REPO, "scripts", "install_dra_driver_cpu.sh")
PROVIDER = "k8s-1.36"
SKIP = ["-e", "dra_cpu_skip_incompatible_nodes=true"]   # docs/kubevirtci.md


@pytest.fixture(scope="module")
def shaped(cluster_factory):
    c = cluster_factory("kubevirtci-k8s-1.36", CLUSTER_NODES=0, CLUSTER_REAL_NODES=2, KUBEVIRT_NUM_VCPU=12,
                        KUBEVIRT_NUM_NUMA_NODES=2, CLUSTER_REAL_NODE_OVERRIDES={
                            "real01": {"runtime": "cri-o"},
                            "real02": {"runtime": "cri-o", "cpu_manager_policy": "static",
                                       "kube_reserved_cpu": "500m", "system_reserved_cpu": "500m"}})
    yield c
    c.down()


@pytest.fixture(scope="module")
def host(shaped, tmp_path_factory):
    base = tmp_path_factory.mktemp("kubevirtci-shape-host")
    _home, _config, env, args = kubevirtci_host(shaped, base)
    return {"env": env, "args": args, "cwd": str(base)}


def install(host, *extra):
    r = subprocess.run(["/bin/bash", SCRIPT, *host["args"], *extra], env=host["env"], cwd=host["cwd"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=1200)
    return r.returncode, r.stdout


def recap_changed(out):
    found = re.findall(r"localhost\s+: ok=\d+\s+changed=(\d+)", out)
    assert len(found) == 1, out[-3000:]
    return int(found[0])


def test_the_nodes_are_kubevirtcis(shaped):
    from kubernetes import client
    nodes = {n.metadata.name: n for n in client.CoreV1Api(shaped.api_client).list_node().items}
    assert sorted(nodes) == ["real01", "real02"]
    assert {n.status.node_info.container_runtime_version for n in nodes.values()} == {"cri-o://1.36.3"}
    # kube-reserved + system-reserved 500m each: the scheduler sees 11 of real02's 12 CPUs
    assert nodes["real02"].status.allocatable["cpu"] == "11", nodes["real02"].status.allocatable
    assert nodes["real01"].status.allocatable["cpu"] == "12"


def test_the_first_run_fails_naming_node_2_and_the_fix(shaped, host):
    rc, out = install(host)
    assert rc != 0, out[-3000:]
    errors = [line for line in out.splitlines() if "[ERROR]" in line]
    assert errors and all("real02" in line for line in errors), out[-3000:]
    assert any("cpu_manager_policy on real02" in line and "static" in line
               and "dra_cpu_skip_incompatible_nodes: true" in line for line in errors), errors
    assert "container_runtime" not in " ".join(errors)        # CRI-O 1.36.3 passes
    from kubernetes import client
    assert not client.CoreV1Api(shaped.api_client).list_namespaced_pod(
        "dra-driver-cpu", label_selector="app.kubernetes.io/name=dra-driver-cpu").items


def test_the_documented_setting_keeps_the_driver_off_node_2_and_installs(shaped, host):
    rc, out = install(host, *SKIP)
    assert rc == 0, out[-4000:]
    assert recap_changed(out) > 0
    assert "real02" in out and "skipped" in out, out[-3000:]
    assert re.search(r"real01\s+0\s+cpudevnuma000\s+4", out) and re.search(r"real01\s+1\s+cpudevnuma001\s+6", out), \
        out[-3000:]
    assert not re.search(r"^real02\s+\d", out, re.M), out[-3000:]
    assert "largest VM that fits: 6 host CPUs" in out
    from kubernetes import client
    pods = client.CoreV1Api(shaped.api_client).list_namespaced_pod(
        "dra-driver-cpu", label_selector="app.kubernetes.io/name=dra-driver-cpu").items
    assert [p.spec.node_name for p in pods] == ["real01"]


def test_verify_runs_on_node_1(shaped, host):
    r = run_playbook(shaped, "verify")
    assert r.rc == 0, r
    text = " ".join(str(res.get("msg", "")) for _, res in r.tasks())
    assert "claim dra-cpu-verify-cpu for 6 CPUs allocated: node real01" in text, text
    assert "pod virt-launcher-dra-cpu-verify Running, QoS Guaranteed" in text, text
    assert "its container pinned to CPUs 6-11 (the driver's log on real01)" in text, text


def test_a_rerun_changes_nothing(shaped, host):
    rc, out = install(host, *SKIP)
    assert rc == 0, out[-4000:]
    assert recap_changed(out) == 0, out[-3000:]
