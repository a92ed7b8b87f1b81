"""The role against clusters that differ from the default: node topologies, incompatible nodes,
the DRAConsumableCapacity gate off, an old container runtime, Kubernetes 1.35.

Nodes: real wherever a real one can be had (issue 17 item 5): a real kubelet + containerd each
(tests/cluster/cluster_real_node.py), the driver a real kubelet plugin, every topology a fake sysfs
tree the kubelet and the driver read.
- 'topologies': six real nodes of different CPU hardware, kubelet policies and taints at once
  (CLUSTER_REAL_NODE_OVERRIDES); preflight reads each real kubelet's /configz, the driver publishes
  each node's cells: the project's driver under chart 0.3.0, upstream's own v0.2.0 under 0.2.0.
- 'gate-off': a real node beside two simulated nodes, the one case a real node cannot be here: a
  container runtime that cannot be built here (containerd 1.7 reports `containerd://1.7.27`, a
  CRI-O older than 1.30 `cri-o://1.29.9`; the real nodes run containerd 2.4.2 or CRI-O 1.36.3, the
  latter in test_real_crio.py). The chart's tolerations are widened to the real node's NoExecute
  taint (cluster_real_node_config.TAINT) so the driver would run on all and preflight checks all.
- 'k8s-1.35*': a 1.35.4 control plane and a real 1.35.4 kubelet (the kubelet may not be newer than
  the API server: Kubernetes' version skew policy), so the real 1.35 scheduler and kubelet
  allocate and prepare the claim.
The static policy on its own is test_real_static.py's.
"""
import json

import pytest

from ansible_run import run_playbook
from real_nodes_lib import TAINT_KEY, UPSTREAM_VERSION_LINE, assert_rolled_out, is_ready, wait

pytestmark = pytest.mark.timeout(1200)
# the 'topologies' and 'gate-off' clusters have real nodes: they run after the real-node build and,
# in `make test`, in the real-node lane (conftest.py's --real-nodes)
real_nodes = pytest.mark.late_build("real-node")

# Like kubevirtci, one node keeps the kubevirtci worker's cpuManagerPolicy static (real05); the
# others run the policy the driver needs, `none` (the real kubelets' default here).
TOPOLOGY_NODES = {
    "real01": {},                                             # 12 CPUs, 2 cells (the defaults)
    "real02": {"cpus": 16, "numa_nodes": 4},                  # 4 cells of 4
    "real03": {"numa_nodes": 1},                              # 1 cell of 12
    "real04": {"threads_per_core": 2},                        # SMT on
    "real05": {"cpu_manager_policy": "static"},               # a kubevirtci worker: static
    "real06": {"taints": [{"key": "dedicated", "value": "db", "effect": "NoExecute"}]},
}
# the chart's default tolerations plus the real node's NoExecute taint (beside a simulated node)
EVERY_NODE = {"dra_cpu_chart_values": {"tolerations": [{"key": TAINT_KEY, "operator": "Exists"},
                                                       {"operator": "Exists", "effect": "NoSchedule"}]}}


# the nodes differ on purpose, so the kubevirtci sizing check (which expects every node to be
# KUBEVIRT_NUM_VCPU over KUBEVIRT_NUM_NUMA_NODES cells) is turned off for these runs
NO_SIZING = {"KUBEVIRT_NUM_VCPU": "", "KUBEVIRT_NUM_NUMA_NODES": ""}


def sizing_rule(cpus, cells, reserved):
    """kubevirtci: cell i holds CPUs i*V/N .. (i+1)*V/N-1; allocatable = that minus the reserved."""
    size = cpus // cells
    return [(i, len(set(range(i * size, (i + 1) * size)) - reserved)) for i in range(cells)]


def preflight_findings(result):
    return result.result("Check the cluster's prerequisites").get("findings", [])


def runtime_findings(result):
    return {f["node"]: f for f in preflight_findings(result) if f["check"] == "container_runtime"}


@pytest.fixture(scope="module")
def topology_cluster(cluster_factory):
    c = cluster_factory("topologies", CLUSTER_NODES=0, CLUSTER_REAL_NODES=len(TOPOLOGY_NODES),
                        KUBEVIRT_NUM_VCPU=12, KUBEVIRT_NUM_NUMA_NODES=2,
                        CLUSTER_REAL_NODE_OVERRIDES=json.dumps(TOPOLOGY_NODES))
    yield c
    c.down()   # at the module's end: six kubelets and containerds leave the CPUs to the next tests


@real_nodes
def test_preflight_names_the_static_node_and_installs_nothing(topology_cluster):
    r = run_playbook(topology_cluster, "install")
    assert r.rc != 0
    msg = " ".join(r.failure_messages())
    assert "real05" in msg and "cpu_manager_policy" in msg and "static" in msg, msg
    # the policy as real05's own kubelet serves it on /configz
    pre = r.result("Check the cluster's prerequisites")
    policy = {f["node"]: f for f in pre["findings"] if f["check"] == "cpu_manager_policy"}
    assert policy["real05"]["severity"] == "error" and policy["real05"]["observed"] == "static", policy
    assert policy["real01"]["severity"] == "ok" and policy["real01"]["observed"] == "none", policy
    # real06's NoExecute taint is not tolerated by the chart: the driver will not run there,
    # so it is not checked, and the tainted node is not reported as a failure.
    assert "real06" not in msg and "real06" not in policy, policy
    from kubernetes import client
    names = [n.metadata.name for n in client.CoreV1Api(topology_cluster.api_client).list_namespace().items]
    assert "dra-driver-cpu" not in names


@real_nodes
def test_skip_incompatible_nodes_keeps_the_driver_off_them(topology_cluster):
    r = run_playbook(topology_cluster, "install", extra_vars={"dra_cpu_skip_incompatible_nodes": True},
                     env=NO_SIZING)
    assert r.rc == 0, r
    pre = r.result("Check the cluster's prerequisites")
    skipped = {s["node"]: s["reasons"] for s in pre.get("skipped_nodes", [])}
    assert list(skipped) == ["real05"] and "cpu_manager_policy" in skipped["real05"], pre
    topo = r.fact("dra_cpu_topology")
    assert sorted(topo["nodes"]) == ["real01", "real02", "real03", "real04"]
    reserved = {0, 1}
    got = {n: [(int(i), cpus) for i, cpus in v["cells"].items()] for n, v in topo["nodes"].items()}
    assert got == {
        "real01": sizing_rule(12, 2, reserved),
        "real02": sizing_rule(16, 4, reserved),
        "real03": sizing_rule(12, 1, reserved),
        "real04": sizing_rule(12, 2, reserved),
    }
    assert topo["max_vm_host_cpus"] == 10
    assert topo["largest_cell"] == {"node": "real03", "id": 0, "allocatable_cpus": 10}
    assert topo["smallest_cell"] == {"node": "real02", "id": 0, "allocatable_cpus": 2}
    # the real scheduler kept the DaemonSet off the skipped node (the role's nodeAffinity) and off
    # the tainted one: driver pods on the four others only
    from kubernetes import client
    pods = client.CoreV1Api(topology_cluster.api_client).list_namespaced_pod(
        "dra-driver-cpu", label_selector="app.kubernetes.io/name=dra-driver-cpu").items
    assert sorted(p.spec.node_name for p in pods) == ["real01", "real02", "real03", "real04"], pods
    again = run_playbook(topology_cluster, "install", extra_vars={"dra_cpu_skip_incompatible_nodes": True},
                         env=NO_SIZING)
    assert again.rc == 0 and again.changed == 0, again


@real_nodes
def test_min_cell_cpus_fails_with_the_numbers(topology_cluster):
    r = run_playbook(topology_cluster, "install", extra_vars={"dra_cpu_skip_incompatible_nodes": True,
                                                              "dra_cpu_min_cell_cpus": 11}, env=NO_SIZING)
    assert r.rc != 0
    msg = " ".join(r.failure_messages())
    assert "11" in msg and "10" in msg, msg


@real_nodes
def test_upstreams_own_v020_runs_on_every_node_and_reads_each_topology(topology_cluster):
    """Chart 0.2.0 on five real nodes sharing one network namespace: upstream's own v0.2.0 binary on
    each (issue 39), its health port on its node's address (the runc wrapper's --driver-bind-host: a
    second `:8080` could not bind here), each node's simulated topology read through the node's sysfs
    (--driver-sysfs: v0.2.0 reads its online CPUs from /sys), so its pools give the cells main's gave.
    0.2.0 has no affinity to keep the driver off real05 (the role refuses dra_cpu_skip_incompatible_nodes
    there), so real05's static policy is an ignored check and the driver runs there too."""
    r = run_playbook(topology_cluster, "install", extra_vars={"dra_cpu_preflight_ignore": ["cpu_manager_policy"],
                                                              "dra_cpu_chart_version": "0.2.0"}, env=NO_SIZING)
    assert r.rc == 0, r
    reserved = {0, 1}
    got = {n: [(int(i), cpus) for i, cpus in v["cells"].items()] for n, v in r.fact("dra_cpu_topology")["nodes"].items()}
    assert got == {"real01": sizing_rule(12, 2, reserved), "real02": sizing_rule(16, 4, reserved),
                   "real03": sizing_rule(12, 1, reserved), "real04": sizing_rule(12, 2, reserved),
                   "real05": sizing_rule(12, 2, reserved)}
    # the install returned with every new pod serving: after main (the module's earlier tests) the pools
    # were complete before upstream's pods started, and a CI run read a pod still ContainerCreating here
    assert_rolled_out(topology_cluster)
    from kubernetes import client
    core = client.CoreV1Api(topology_cluster.api_client)
    pods = [p for p in core.list_namespaced_pod("dra-driver-cpu", label_selector="app.kubernetes.io/name=dra-driver-cpu").items
            if not p.metadata.deletion_timestamp]
    assert sorted(p.spec.node_name for p in pods) == ["real01", "real02", "real03", "real04", "real05"], pods
    for pod in pods:
        assert pod.spec.containers[0].image.endswith("/dra-driver-cpu:v0.2.0"), pod.spec.containers[0].image
        log = core.read_namespaced_pod_log(pod.metadata.name, "dra-driver-cpu")
        assert UPSTREAM_VERSION_LINE in log, (pod.spec.node_name, log[:2000])
        # upstream logs its flags: the wrapper gave it the node's own address
        assert f'"FLAG" name="bind-address" value="{pod.status.pod_ip}:8080"' in log, (pod.spec.node_name, log[:3000])
    # each pod turns Ready: its kubelet's probe answers on its own node's address (the install may
    # return before the first probe, once the pod wrote its pool: rollout.py)
    wait("every upstream driver pod Ready", lambda: all(
        is_ready(p) for p in core.list_namespaced_pod("dra-driver-cpu", label_selector="app.kubernetes.io/name=dra-driver-cpu").items
        if not p.metadata.deletion_timestamp), timeout=60)


@pytest.fixture(scope="module")
def gate_off_cluster(cluster_factory):
    c = cluster_factory("gate-off", CLUSTER_NODES=2, CLUSTER_REAL_NODES=1,
                        CLUSTER_FEATURE_GATES="DRAConsumableCapacity=false",
                        CLUSTER_NODE_OVERRIDES={"node01": {"container_runtime": "containerd://1.7.27"},
                                                "node02": {"container_runtime": "cri-o://1.29.9",
                                                           "cpu_manager_policy": "none"}})
    yield c
    c.down()


@real_nodes
def test_gate_off_and_old_runtime_are_findings(gate_off_cluster):
    r = run_playbook(gate_off_cluster, "install", extra_vars=EVERY_NODE)
    assert r.rc != 0
    msg = " ".join(r.failure_messages())
    assert "DRAConsumableCapacity" in msg and "feature_gate" in msg, msg
    assert "node01" in msg and "container_runtime" in msg and "1.7.27" in msg, msg
    assert "node02" in msg and "cri-o://1.29.9" in msg, msg
    assert runtime_findings(r)["node02"]["severity"] == "error"
    # the real node's runtime as its real containerd reports it through the kubelet: no finding
    runtimes = runtime_findings(r)
    assert runtimes["real01"]["severity"] == "ok", runtimes
    assert runtimes["real01"]["observed"] == "containerd://2.4.2", runtimes
    # and no check fails or warns on it (the report's summary line still lists it among the checked)
    real01 = [f for f in preflight_findings(r) if f["node"] == "real01" and f["severity"] != "ok"]
    assert real01 == [], real01
    assert not [line for line in msg.splitlines() if line.strip().startswith("[") and "real01" in line], msg


@real_nodes
def test_check_mode_runs_preflight_too(gate_off_cluster):
    r = run_playbook(gate_off_cluster, "install", extra_vars=EVERY_NODE, check=True)
    assert r.rc != 0
    assert any("feature_gate" in m for m in r.failure_messages()), r


@real_nodes
def test_ignored_checks_become_warnings(gate_off_cluster):
    r = run_playbook(gate_off_cluster, "install", extra_vars=dict(
        EVERY_NODE, dra_cpu_preflight_ignore=["feature_gate", "container_runtime"]), check=True)
    assert r.rc == 0, r
    severities = {(f["check"], f.get("node")): f["severity"] for f in preflight_findings(r)}
    assert severities[("feature_gate", None)] == "warning"
    assert severities[("container_runtime", "node01")] == "warning"
    assert severities[("container_runtime", "node02")] == "warning"
    assert severities[("container_runtime", "real01")] == "ok"


# Kubernetes 1.35.x: its control plane, kubelet and kube-proxy are built by `make build` (about 7 min
# on a new machine, then cached); these tests run last, after that build (late_builds.py: the
# real-node line of 1.35.4 comes after its control plane's), and are never skipped for want of it.
K8S_135 = "v1.35.4"
built_135 = pytest.mark.late_build(f"real-node {K8S_135}")
REAL_135 = {"CLUSTER_K8S_VERSION": K8S_135, "CLUSTER_NODES": 0, "CLUSTER_REAL_NODES": 1}


@pytest.fixture(scope="module")
def cluster_135(cluster_factory):
    return cluster_factory("k8s-1.35", **REAL_135)


@built_135
def test_the_135_node_is_a_real_135_kubelet(cluster_135):
    from kubernetes import client
    node = client.CoreV1Api(cluster_135.api_client).read_node("real01")
    assert node.status.node_info.kubelet_version == K8S_135, node.status.node_info
    assert node.status.node_info.container_runtime_version == "containerd://2.4.2", node.status.node_info


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
    """What docs/troubleshooting.md's preflight section promises for 1.34/1.35: the gate shown on turns the version
    finding into a warning, and the real 1.35 scheduler allocates a claim from the grouped devices."""
    c = cluster_factory("k8s-1.35-gate-on", **REAL_135, CLUSTER_FEATURE_GATES="DRAConsumableCapacity=true")
    r = run_playbook(c, "install")
    assert r.rc == 0, r
    version = [f for f in preflight_findings(r) if f["check"] == "server_version"][0]
    assert version["severity"] == "warning" and "DRAConsumableCapacity" in version["message"], version
    assert r.fact("dra_cpu_topology")["max_vm_host_cpus"] == 6
    v = run_playbook(c, "verify")
    assert v.rc == 0, v
    text = " ".join(str(res.get("msg", "")) for _, res in v.tasks())
    assert "real01" in text and "cpudevnuma001" in text, text


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
        # KubeVirt synthesizes grouped claims only: the escape hatch's count claim
        v = run_playbook(cluster_135, "verify", extra_vars={"dra_cpu_verify_individual_claim": True})
        assert v.rc == 0, v
        text = " ".join(str(res.get("msg", "")) for _, res in v.tasks())
        assert "claim dra-cpu-verify-cpu for 6 CPUs allocated" in text and "real01" in text, text
    finally:
        u = run_playbook(cluster_135, "uninstall")
        assert u.rc == 0, u
