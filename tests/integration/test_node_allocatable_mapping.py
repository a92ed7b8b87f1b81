"""dra_cpu_node_allocatable_mapping (KEP-5517, the Beta path of KubeVirt's CPUsWithDRA) on Kubernetes
1.37.2, where DRANodeAllocatableResources is alpha (off by default), on one real node each.

- 'k8s-1.37-kep5517-off': the gate at its default (off) everywhere. The install with the mapping on is
  refused by preflight before any change (no namespace, no release), naming the API server and the
  real kubelet. The real 1.37.2 API server drops nodeAllocatableResources from a ResourceSlice (what
  the topology stage's message says); with the gate check ignored the install goes on, the driver
  publishes the mapping, the API server drops it and the topology stage fails saying so, long before
  its timeout.
- 'k8s-1.37-kep5517': the gate on on the API server, scheduler, controller-manager and the real
  kubelet (CLUSTER_FEATURE_GATES): the install with the mapping on passes preflight, the slices carry
  exactly upstream main's mapping (grouped: capacityKey dra.cpu/cpu x 1; individual:
  deviceMultiplier 1), the fact and the report say so; verify's claim-only launcher pod runs, the
  scheduler lists its claim in the pod's status and accounts its CPUs; turned off again, the slices
  carry none.
The kubelet may not be newer than the API server (version skew policy), so the control plane and the
kubelet are both 1.37.2, built by `make build` (late_builds.py: "real-node v1.37.2").
"""
import time

import pytest

from ansible_run import run_playbook

pytestmark = [pytest.mark.timeout(1500), pytest.mark.late_build("real-node v1.37.2")]

K8S_137 = "v1.37.2"
REAL_137 = {"CLUSTER_K8S_VERSION": K8S_137, "CLUSTER_NODES": 0, "CLUSTER_REAL_NODES": 1}
GATE = "DRANodeAllocatableResources"
ON = {"dra_cpu_node_allocatable_mapping": True}
GROUPED = {"cpu": {"mapping": {"capacityKey": "dra.cpu/cpu", "capacityMultiplier": "1"}}}
INDIVIDUAL = {"cpu": {"mapping": {"deviceMultiplier": "1"}}}
TOPOLOGY_TASK = "Wait until every driver node has published its CPU topology"


def _slices(cluster):
    """ResourceSlices as the API server returns them (dicts: every field, whatever the client's models know)."""
    from kubernetes import client
    return client.CustomObjectsApi(cluster.api_client), ("resource.k8s.io", "v1", "resourceslices")


def driver_devices(cluster):
    api, gvp = _slices(cluster)
    items = api.list_cluster_custom_object(*gvp, field_selector="spec.driver=dra.cpu")["items"]
    return [d for s in items for d in s["spec"].get("devices") or []]


def gate_findings(result):
    pre = result.result("Check the cluster's prerequisites")
    return dict(((f["node"], (f["severity"], f["observed"])) for f in pre.get("findings", [])
                 if f["check"] == "node_allocatable_gate"))


def namespaces(cluster):
    from kubernetes import client
    return [n.metadata.name for n in client.CoreV1Api(cluster.api_client).list_namespace().items]


@pytest.fixture(scope="module")
def cluster_off(cluster_factory):
    return cluster_factory("k8s-1.37-kep5517-off", **REAL_137)


@pytest.fixture(scope="module")
def cluster_on(cluster_factory):
    return cluster_factory("k8s-1.37-kep5517", **REAL_137, CLUSTER_FEATURE_GATES=f"{GATE}=true")


def test_gate_off_the_mapping_is_refused_before_any_change(cluster_off):
    r = run_playbook(cluster_off, "install", extra_vars=ON)
    assert r.rc != 0, r
    pre = r.result("Check the cluster's prerequisites")
    assert pre["server_version"] == K8S_137, pre
    # one finding for the API server, one for the real kubelet, each naming what is missing
    assert gate_findings(r) == {None: ("error", "disabled (ALPHA)"),
                                "real01": ("error", "not set (off by default)")}, gate_findings(r)
    msg = " ".join(r.failure_messages())
    assert "cluster [node_allocatable_gate]" in msg and "node real01 [node_allocatable_gate]" in msg, msg
    assert "dra_cpu_node_allocatable_mapping: true" in msg and f"--feature-gates={GATE}=true" in msg, msg
    # nothing was changed: no namespace, so no release either
    assert "dra-driver-cpu" not in namespaces(cluster_off)


def probe(cluster):
    """The device of a ResourceSlice created with nodeAllocatableResources, as stored."""
    body = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": "kep5517-probe"},
            "spec": {"driver": "probe.example.com", "allNodes": True,
                     "pool": {"name": "probe", "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": "dev0", "nodeAllocatableResources": INDIVIDUAL}]}}
    api, gvp = _slices(cluster)
    created = api.create_cluster_custom_object(*gvp, body)
    try:
        stored = api.get_cluster_custom_object(*gvp, "kep5517-probe")
        assert created["spec"]["devices"] == stored["spec"]["devices"], (created, stored)
        return stored["spec"]["devices"][0]
    finally:
        api.delete_cluster_custom_object(*gvp, "kep5517-probe")


def test_gate_off_the_api_server_drops_the_field(cluster_off):
    """What the topology stage's message relies on, on the real 1.37.2 API server (its resourceslice
    strategy's dropDisabledDRANodeAllocatableResourcesFields)."""
    device = probe(cluster_off)
    assert device["name"] == "dev0" and "nodeAllocatableResources" not in device, device


def test_gate_off_and_the_check_ignored_the_topology_stage_says_the_field_is_dropped(cluster_off):
    start = time.monotonic()
    r = run_playbook(cluster_off, "install", extra_vars=dict(ON, dra_cpu_preflight_ignore=["node_allocatable_gate"],
                                                             dra_cpu_topology_timeout=600))
    took = time.monotonic() - start
    try:
        assert r.rc != 0, r
        assert set(s for s, _ in gate_findings(r).values()) == {"warning"}, gate_findings(r)
        topo = r.result(TOPOLOGY_TASK)
        assert "the API server drops the field" in topo["msg"] and "real01" in topo["msg"], topo["msg"]
        assert topo["topology"]["node_allocatable_mapping"] is False, topo["topology"]
        # the upgrade grace (30 s), not the 600 s timeout
        assert took < 400, took
        assert driver_devices(cluster_off) and not any("nodeAllocatableResources" in d
                                                       for d in driver_devices(cluster_off))
    finally:
        cluster_off.down()


def test_gate_on_the_api_server_keeps_the_field(cluster_on):
    device = probe(cluster_on)
    assert device.get("nodeAllocatableResources") == INDIVIDUAL, device


def test_gate_on_verify_runs_kubevirts_claim_only_launcher_pod(cluster_on):
    """KubeVirt's Beta path (VEP 152 as merged, KEP-5517): with the mapping published, virt-launcher's pod
    is claim-only (a 1m CPU request = limit for the QoS class, upstream's
    hack/examples/pod_with_resource_claim_node_allocatable.yaml). The real 1.37.2 scheduler writes the pod's
    status.nodeAllocatableResourceClaimStatuses (its dynamicresources plugin, buildNodeAllocatableDRAInfo:
    resourceClaimName, containers, mapping cpu = the consumed dra.cpu/cpu) and counts the claim's CPUs:
    a pod asking for one CPU more than the node has left beside them stays Unschedulable for insufficient
    CPU, and a control pod one CPU smaller is scheduled."""
    r = run_playbook(cluster_on, "install", extra_vars=ON)
    assert r.rc == 0, r
    v = run_playbook(cluster_on, "verify")
    assert v.rc == 0, v.failure_messages() or v
    res = v.result("Verify that the claim KubeVirt synthesizes")
    assert res["claim_only"] is True and res["cpus"] == 6, res
    compute = res["pod"]["spec"]["containers"][0]
    assert compute["resources"]["requests"]["cpu"] == "1m" == compute["resources"]["limits"]["cpu"], compute
    assert res["pod"]["status"]["qosClass"] == "Guaranteed", res["pod"]["status"]
    status = res["node_allocatable"]["claim_status"]
    assert status["resourceClaimName"] == "dra-cpu-verify-cpu" and status["containers"] == ["compute"], status
    assert [(m["name"], m["quantity"]) for m in status["mapping"]] == [("cpu", "6")], status
    probe, control = res["node_allocatable"]["probe"], res["node_allocatable"]["control"]
    assert probe["outcome"] == "unschedulable" and "Insufficient cpu" in probe["message"], probe
    assert control["outcome"] == "scheduled" and control["cpu_millis"] == probe["cpu_millis"] - 1000 > 0, control
    text = " ".join(str(line) for line in res["report"])
    assert "claim-only pod (KEP-5517): status.nodeAllocatableResourceClaimStatuses names claim dra-cpu-verify-cpu" in text
    assert "stays Unschedulable (scheduler: " in text and "one CPU less, was scheduled" in text, text


def test_gate_on_the_slices_carry_upstreams_mapping(cluster_on):
    r = run_playbook(cluster_on, "install", extra_vars=ON)
    assert r.rc == 0, r
    assert gate_findings(r) == {None: ("ok", "enabled (ALPHA)"), "real01": ("ok", "enabled")}, gate_findings(r)
    assert r.fact("dra_cpu_topology")["node_allocatable_mapping"] is True
    assert "node-allocatable mapping (KEP-5517): on" in r.result(TOPOLOGY_TASK)["report"]
    devices = driver_devices(cluster_on)
    assert devices and all(d.get("nodeAllocatableResources") == GROUPED for d in devices), devices

    # individual mode: one CPU per device
    r = run_playbook(cluster_on, "install", extra_vars=dict(ON, dra_cpu_cpu_device_mode="individual"))
    assert r.rc == 0, r
    assert r.fact("dra_cpu_topology")["mode"] == "individual"
    assert r.fact("dra_cpu_topology")["node_allocatable_mapping"] is True
    devices = driver_devices(cluster_on)
    assert devices and all(d.get("nodeAllocatableResources") == INDIVIDUAL for d in devices), devices

    # off again: the release drops the key, the driver publishes none, the fact says so
    r = run_playbook(cluster_on, "install")
    assert r.rc == 0, r
    assert gate_findings(r) == {}
    assert r.fact("dra_cpu_topology")["node_allocatable_mapping"] is False
    assert "node-allocatable mapping (KEP-5517): on" not in r.result(TOPOLOGY_TASK)["report"]
    devices = driver_devices(cluster_on)
    assert devices and not any("nodeAllocatableResources" in d for d in devices), devices
