"""Kubernetes' limit on the devices of one claim, against the real scheduler.

k8s.io/api resource/v1 `AllocationResultsMaxSize = 32`: a claim's allocation holds at most 32
devices. In individual mode a claim is one device per CPU, so on a node with 80 CPUs in one NUMA
cell (78 allocatable, 0-1 reserved) the largest claim is 32, not 78: install reports 32 and
playbooks/verify.yml's default claim (that size) is allocated, while a claim of 33 devices, which the
cell could hold, is refused by the scheduler.

Nodes: one simulated node of 80 vCPUs in one cell (not moved to a real one yet).
"""
import pytest

from ansible_run import run_playbook

pytestmark = pytest.mark.timeout(1200)

INDIVIDUAL = {"dra_cpu_cpu_device_mode": "individual"}
LIMIT = 32   # k8s.io/api resource/v1 AllocationResultsMaxSize


@pytest.fixture(scope="module")
def big_cell(cluster_factory):
    """One node, 80 vCPUs in one NUMA cell (kubevirtci's KUBEVIRT_NUM_VCPU / KUBEVIRT_NUM_NUMA_NODES)."""
    return cluster_factory("claim-limit", KUBEVIRT_NUM_VCPU=80, KUBEVIRT_NUM_NUMA_NODES=1,
                           CLUSTER_SLICE_DELETE_DELAY=3)


@pytest.fixture(scope="module")
def installed(big_cell):
    r = run_playbook(big_cell, "install", extra_vars=INDIVIDUAL)
    assert r.rc == 0, r
    return r


def test_install_reports_the_claim_limit_not_the_cell(installed):
    topo = installed.fact("dra_cpu_topology")
    assert topo["mode"] == "individual", topo["mode"]
    # the kubevirtci sizing rule held (the role checked it): one cell of 80 - 2 reserved CPUs
    assert topo["nodes"]["node01"]["cells"] == {"0": 78}
    assert topo["largest_cell"] == {"node": "node01", "id": 0, "allocatable_cpus": 78}
    assert (topo["max_vm_host_cpus"], topo["max_node_host_cpus"], topo["claim_device_limit"]) == (LIMIT,) * 3
    table = installed.result("Wait until every driver node has published its CPU topology")["summary"]
    assert "largest VM that fits: 32 host CPUs on one node (at most 32 devices, one per CPU)" \
        in table, table
    assert "largest NUMA-aligned VM: 32 host CPUs (all its devices from one NUMA cell)" \
        in table, table


def test_verify_default_claim_is_allocated(big_cell, installed):
    """The default size (max_vm_host_cpus) is one the scheduler allocates: 32 devices, not 78."""
    r = run_playbook(big_cell, "verify")
    assert r.rc == 0, r
    claim = r.result("Wait until the scheduler allocates the claim")["resources"][0]
    assert claim["spec"]["devices"]["requests"][0]["exactly"]["count"] == LIMIT, claim["spec"]
    results = claim["status"]["allocation"]["devices"]["results"]
    assert len(results) == LIMIT and {d["pool"] for d in results} == {"node01"}, results
    text = " ".join(str(res.get("msg", "")) for _, res in r.tasks())
    assert "claim for 32 CPUs allocated" in text and "QoS Guaranteed" in text, text


def test_one_device_more_is_refused_by_the_scheduler(big_cell, installed):
    """33 CPUs fit in the 78-CPU cell, but not in one claim: the limit is the API's, not the role's."""
    r = run_playbook(big_cell, "verify", extra_vars={"dra_cpu_verify_cpus": LIMIT + 1, "dra_cpu_verify_timeout": 16})
    assert r.rc != 0, r
    msg = " ".join(r.failure_messages())
    assert "was not allocated" in msg and "exceeds the claim limit of 32" in msg, msg
