"""The role against clusters that differ from the default: node topologies, incompatible nodes,
the DRAConsumableCapacity gate off, an old container runtime.

Nodes: simulated, because the cases need what a real node here cannot be: container runtimes a real
containerd 2.4.2 cannot report (containerd 1.7, CRI-O), several nodes of different topologies and
kubelet policies at once, and a 1.35 control plane without a 1.35 kubelet build. The static policy
on a real kubelet is test_real_static.py's.
"""

import pytest

from ansible_run import run_playbook

pytestmark = pytest.mark.timeout(1200)

# Like kubevirtci, the simulator starts node02+ with cpuManagerPolicy static: the nodes meant to
# run the driver say `none` explicitly; node05 keeps the kubevirtci worker default.
NONE = {"cpu_manager_policy": "none"}
TOPOLOGY_NODES = {
    "node01": {},                                             # 12 CPUs, 2 cells (the defaults)
    "node02": dict(NONE, cpus=16, numa_nodes=4),              # 4 cells of 4
    "node03": dict(NONE, numa_nodes=1),                       # 1 cell of 12
    "node04": dict(NONE, threads_per_core=2),                 # SMT on
    "node05": {},                                             # a kubevirtci worker: static
    "node06": dict(NONE, taints=[{"key": "dedicated", "value": "db", "effect": "NoExecute"}]),
}


# the nodes differ on purpose, so the kubevirtci sizing check (which expects every node to be
# KUBEVIRT_NUM_VCPU over KUBEVIRT_NUM_NUMA_NODES cells) is turned off for these runs
NO_SIZING = {"KUBEVIRT_NUM_VCPU": "", "KUBEVIRT_NUM_NUMA_NODES": ""}


def sizing_rule(cpus, cells, reserved):
    """kubevirtci: cell i holds CPUs i*V/N .. (i+1)*V/N-1; allocatable = that minus the reserved."""
    size = cpus // cells
    return [(i, len(set(range(i * size, (i + 1) * size)) - reserved)) for i in range(cells)]


@pytest.fixture(scope="module")
def topology_cluster(cluster_factory):
    return cluster_factory("topologies", CLUSTER_NODES=len(TOPOLOGY_NODES), KUBEVIRT_NUM_VCPU=12,
                           KUBEVIRT_NUM_NUMA_NODES=2, CLUSTER_NODE_OVERRIDES=TOPOLOGY_NODES,
                           CLUSTER_SLICE_DELETE_DELAY=3)


def test_preflight_names_the_static_node_and_installs_nothing(topology_cluster):
    r = run_playbook(topology_cluster, "install")
    assert r.rc != 0
    msg = " ".join(r.failure_messages())
    assert "node05" in msg and "cpu_manager_policy" in msg and "static" in msg, msg
    # node06's NoExecute taint is not tolerated by the chart: the driver will not run there,
    # so it is not checked, and the tainted node is not reported as a failure.
    assert "node06" not in msg
    from kubernetes import client
    names = [n.metadata.name for n in client.CoreV1Api(topology_cluster.api_client).list_namespace().items]
    assert "dra-driver-cpu" not in names


def test_skip_incompatible_nodes_keeps_the_driver_off_them(topology_cluster):
    r = run_playbook(topology_cluster, "install", extra_vars={"dra_cpu_skip_incompatible_nodes": True},
                     env=NO_SIZING)
    assert r.rc == 0, r
    pre = r.result("Check the cluster's prerequisites")
    skipped = {s["node"]: s["reasons"] for s in pre.get("skipped_nodes", [])}
    assert list(skipped) == ["node05"] and "cpu_manager_policy" in skipped["node05"], pre
    topo = r.fact("dra_cpu_topology")
    assert sorted(topo["nodes"]) == ["node01", "node02", "node03", "node04"]
    reserved = {0, 1}
    got = {n: [(int(i), cpus) for i, cpus in v["cells"].items()] for n, v in topo["nodes"].items()}
    assert got == {
        "node01": sizing_rule(12, 2, reserved),
        "node02": sizing_rule(16, 4, reserved),
        "node03": sizing_rule(12, 1, reserved),
        "node04": sizing_rule(12, 2, reserved),
    }
    assert topo["max_vm_host_cpus"] == 10
    assert topo["largest_cell"] == {"node": "node03", "id": 0, "allocatable_cpus": 10}
    assert topo["smallest_cell"] == {"node": "node02", "id": 0, "allocatable_cpus": 2}
    again = run_playbook(topology_cluster, "install", extra_vars={"dra_cpu_skip_incompatible_nodes": True},
                         env=NO_SIZING)
    assert again.rc == 0 and again.changed == 0, again


def test_min_cell_cpus_fails_with_the_numbers(topology_cluster):
    r = run_playbook(topology_cluster, "install", extra_vars={"dra_cpu_skip_incompatible_nodes": True,
                                                              "dra_cpu_min_cell_cpus": 11}, env=NO_SIZING)
    assert r.rc != 0
    msg = " ".join(r.failure_messages())
    assert "11" in msg and "10" in msg, msg


@pytest.fixture(scope="module")
def gate_off_cluster(cluster_factory):
    return cluster_factory("gate-off", CLUSTER_NODES=2, CLUSTER_FEATURE_GATES="DRAConsumableCapacity=false",
                           CLUSTER_NODE_OVERRIDES={"node02": {"container_runtime": "containerd://1.7.27",
                                                             "cpu_manager_policy": "none"}})


def test_gate_off_and_old_runtime_are_findings(gate_off_cluster):
    r = run_playbook(gate_off_cluster, "install")
    assert r.rc != 0
    msg = " ".join(r.failure_messages())
    assert "DRAConsumableCapacity" in msg and "feature_gate" in msg, msg
    assert "node02" in msg and "container_runtime" in msg and "1.7.27" in msg, msg


def test_check_mode_runs_preflight_too(gate_off_cluster):
    r = run_playbook(gate_off_cluster, "install", check=True)
    assert r.rc != 0
    assert any("feature_gate" in m for m in r.failure_messages()), r


def test_ignored_checks_become_warnings(gate_off_cluster):
    r = run_playbook(gate_off_cluster, "install", extra_vars={
        "dra_cpu_preflight_ignore": ["feature_gate", "container_runtime"]}, check=True)
    assert r.rc == 0, r
    findings = r.result("Check the cluster's prerequisites").get("findings", [])
    severities = {(f["check"], f.get("node")): f["severity"] for f in findings}
    assert severities[("feature_gate", None)] == "warning"
    assert severities[("container_runtime", "node02")] == "warning"


# Kubernetes 1.35.x: its control plane is built by `make build` (about 7 min on a new machine, then
# cached); these tests run last, after that build (late_builds.py), and are never skipped for want of it.
K8S_135 = "v1.35.4"
built_135 = pytest.mark.late_build(f"kubernetes {K8S_135}")


@pytest.fixture(scope="module")
def cluster_135(cluster_factory):
    return cluster_factory("k8s-1.35", CLUSTER_K8S_VERSION=K8S_135)


@built_135
def test_kubernetes_135_is_the_version_finding_and_nothing_is_installed(cluster_135):
    r = run_playbook(cluster_135, "install")
    assert r.rc != 0
    pre = r.result("Check the cluster's prerequisites")
    assert pre["server_version"] == K8S_135, pre
    version = [f for f in pre["findings"] if f["check"] == "server_version"][0]
    assert version["severity"] == "error" and version["observed"] == K8S_135, version
    msg = " ".join(r.failure_messages())
    assert "server_version" in msg and "1.35.4" in msg and "1.36" in msg, msg
    from kubernetes import client
    names = [n.metadata.name for n in client.CoreV1Api(cluster_135.api_client).list_namespace().items]
    assert "dra-driver-cpu" not in names


@built_135
def test_kubernetes_135_in_check_mode_reports_the_same(cluster_135):
    r = run_playbook(cluster_135, "install", check=True)
    assert r.rc != 0
    assert any("server_version" in m and "1.35.4" in m for m in r.failure_messages()), r


@built_135
def test_kubernetes_135_with_the_gate_on_is_a_warning_and_installs(cluster_factory):
    """What README's preflight section promises for 1.34/1.35: the gate shown on turns the version
    finding into a warning, and the real 1.35 scheduler allocates a claim from the grouped devices."""
    c = cluster_factory("k8s-1.35-gate-on", CLUSTER_K8S_VERSION=K8S_135,
                        CLUSTER_FEATURE_GATES="DRAConsumableCapacity=true", CLUSTER_SLICE_DELETE_DELAY=3)
    r = run_playbook(c, "install")
    assert r.rc == 0, r
    version = [f for f in r.result("Check the cluster's prerequisites")["findings"]
               if f["check"] == "server_version"][0]
    assert version["severity"] == "warning" and "DRAConsumableCapacity" in version["message"], version
    assert r.fact("dra_cpu_topology")["max_vm_host_cpus"] == 6
    v = run_playbook(c, "verify")
    assert v.rc == 0, v
    text = " ".join(str(res.get("msg", "")) for _, res in v.tasks())
    assert "node01" in text and "cpudevnuma001" in text, text


@built_135
def test_kubernetes_135_individual_mode_without_the_gate_installs(cluster_135):
    """Upstream's compatibility table: individual mode needs no DRAConsumableCapacity, so the real
    1.35 control plane with the gate off (its default) installs, and the real scheduler allocates an
    individual-mode claim (count: N devices) for a Guaranteed pod."""
    r = run_playbook(cluster_135, "install", extra_vars={"dra_cpu_cpu_device_mode": "individual"})
    try:
        assert r.rc == 0, r
        pre = r.result("Check the cluster's prerequisites")
        by_check = {f["check"]: f for f in pre["findings"] if f["node"] is None}
        assert by_check["server_version"]["severity"] == "ok", by_check
        assert by_check["feature_gate"]["severity"] == "ok", by_check
        assert by_check["feature_gate"]["observed"].startswith("disabled"), by_check
        topo = r.fact("dra_cpu_topology")
        assert topo["mode"] == "individual" and topo["max_vm_host_cpus"] == 6, topo
        v = run_playbook(cluster_135, "verify", extra_vars={"dra_cpu_cpu_device_mode": "individual"})
        assert v.rc == 0, v
        text = " ".join(str(res.get("msg", "")) for _, res in v.tasks())
        assert "claim for 6 CPUs allocated" in text and "node01" in text, text
    finally:
        u = run_playbook(cluster_135, "uninstall")
        assert u.rc == 0, u
