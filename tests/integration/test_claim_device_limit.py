"""Kubernetes' limit on the devices of one claim, against the real scheduler, on a real node.

k8s.io/api resource/v1 `AllocationResultsMaxSize = 32`: a claim's allocation holds at most 32
devices. In individual mode a claim is one device per CPU, so on a node with 80 CPUs in one NUMA
cell (78 allocatable, 0-1 reserved) the largest claim is 32, not 78: install reports 32 and
playbooks/verify.yml's default claim (that size; individual mode's spec.resourceClaims escape hatch, since
KubeVirt synthesizes grouped claims only) is allocated and its pod starts, while a claim of
33 devices, which the cell could hold, is refused by the scheduler.

Nodes: real01 is a real kubelet + containerd (tests/cluster/cluster_real_node.py) whose fake CPU
tree has 80 CPUs in one cell, running the project's driver (a real kubelet plugin on
k8s.io/dynamic-resource-allocation) in individual mode; it is the cluster's only node
(CLUSTER_NODES=0, as `make demo` runs, so it carries no taint and the chart's and verify's defaults
place their pods there). Runs last, after the real-node binaries are built (late_builds.py).
"""
import pytest

from ansible_run import run_playbook
from real_nodes_lib import NODE, skip_marks

pytestmark = skip_marks() + [pytest.mark.timeout(1200)]

INDIVIDUAL = {"dra_cpu_cpu_device_mode": "individual"}
# KubeVirt synthesizes grouped claims only: in individual mode verify proves the escape hatch's claim
ESCAPE_HATCH = {"dra_cpu_verify_individual_claim": True}
LIMIT = 32   # k8s.io/api resource/v1 AllocationResultsMaxSize


@pytest.fixture(scope="module")
def big_cell(cluster_factory):
    """80 vCPUs in one NUMA cell (kubevirtci's KUBEVIRT_NUM_VCPU / KUBEVIRT_NUM_NUMA_NODES) on the real
    node, the only one."""
    c = cluster_factory("claim-limit", KUBEVIRT_NUM_VCPU=80, KUBEVIRT_NUM_NUMA_NODES=1, CLUSTER_NODES=0,
                        CLUSTER_REAL_NODES=1)
    yield c
    # down at the module's end, not the session's: its kubelet, containerd and pods leave the
    # machine's 2 CPUs to the modules after it
    c.down()


@pytest.fixture(scope="module")
def installed(big_cell):
    r = run_playbook(big_cell, "install", extra_vars=INDIVIDUAL)
    assert r.rc == 0, r
    return r


def test_install_reports_the_claim_limit_not_the_cell(installed):
    topo = installed.fact("dra_cpu_topology")
    assert topo["mode"] == "individual", topo["mode"]
    # the kubevirtci sizing rule held (the role checked it): one cell of 80 - 2 reserved CPUs
    assert topo["nodes"][NODE]["cells"] == {"0": 78}
    assert {k: v for k, v in topo["largest_cell"].items() if k != "node"} == {"id": 0, "allocatable_cpus": 78}
    assert (topo["max_vm_host_cpus"], topo["max_node_host_cpus"], topo["claim_device_limit"]) == (LIMIT,) * 3
    table = installed.result("Wait until every driver node has published its CPU topology")["summary"]
    # in KubeVirt's vCPUs too: 32 host CPUs hold 32 vCPUs, or 31 + 1 isolated emulator thread (31 is
    # odd, so even parity takes 1 as well)
    assert "largest VM that fits: 32 host CPUs on one node (at most 32 devices, one per CPU) = 32 vCPUs, " \
        "31 with isolateEmulatorThread (31 with even parity)" in table, table
    assert "largest NUMA-aligned VM: 32 host CPUs (all its devices from one NUMA cell) = 32 vCPUs, " \
        "31 with isolateEmulatorThread (31 with even parity)" in table, table
    assert (topo["max_vm_vcpus"], topo["max_vm_vcpus_isolated_emulator_thread"],
            topo["max_vm_vcpus_even_parity"]) == (32, 31, 31), topo


def test_verify_default_claim_is_allocated_and_its_pod_starts(big_cell, installed):
    """The default size (max_vm_host_cpus) is one the scheduler allocates, 32 devices, not 78, and the
    real kubelet starts its pod with the 32 CPUs the driver prepared."""
    r = run_playbook(big_cell, "verify", extra_vars=ESCAPE_HATCH)
    assert r.rc == 0, r
    v = r.result("Verify that the claim KubeVirt synthesizes")
    claim = v["claim"]
    assert claim["spec"]["devices"]["requests"][0]["exactly"]["count"] == LIMIT, claim["spec"]
    # kept on one NUMA node (the driver's main flavour publishes the standard attribute)
    assert claim["spec"]["devices"]["constraints"] == [
        {"requests": ["cpu"], "matchAttribute": "resource.kubernetes.io/numaNode"}], claim["spec"]
    # the container read 32 devices' metadata, all of cell 0, and DRA_CPUSET_* of 32 CPUs (the metadata
    # is reported, not required: its findings are notes)
    meta = v["readout"]["metadata"]
    assert len(meta["devices"]) == LIMIT and meta["numa_nodes"] == ["0"] and meta["allocated_cpus"] == LIMIT, meta
    assert v["readout"]["dra_cpuset"] == "2-33" and v["readout"]["problems"] == [], v["readout"]
    results = claim["status"]["allocation"]["devices"]["results"]
    assert len(results) == LIMIT and {d["pool"] for d in results} == {NODE}, results
    text = " ".join(str(res.get("msg", "")) for _, res in r.tasks())
    assert f"claim dra-cpu-verify-cpu for 32 CPUs allocated: node {NODE}" in text, text
    assert "pod virt-launcher-dra-cpu-verify Running, QoS Guaranteed" in text, text
    # the driver's NRI pinning (upstream nri_hooks.go "guaranteed CPUs found"): 32 of the cell's CPUs,
    # none of the reserved 0-1
    assert f"its container pinned to CPUs 2-33 (the driver's log on {NODE})" in text, text


def test_one_device_more_is_refused_by_the_scheduler(big_cell, installed):
    """33 CPUs fit in the 78-CPU cell, but not in one claim: the limit is the API's, not the role's."""
    r = run_playbook(big_cell, "verify", extra_vars=dict(ESCAPE_HATCH, dra_cpu_verify_cpus=LIMIT + 1,
                                                                dra_cpu_verify_timeout=16))
    assert r.rc != 0, r
    msg = " ".join(r.failure_messages())
    assert "was not allocated" in msg and "exceeds the claim limit of 32" in msg, msg
