# SPDX-License-Identifier: Apache-2.0
"""What verify's container saw, judged as KubeVirt's virt-launcher reads it (VEP 152 as merged,
docs/upstream.md, "KubeVirt's CPUsWithDRA design as merged"): DRA_CPUSET_<claim uid> required, the container's
own CPUs equal to it and inside the allocated device's NUMA node (or socket) as the kernel groups them; the
KEP-5304 metadata reported, required only when asked. The metadata shape is the one
k8s.io/dynamic-resource-allocation v0.37.0 writes (metadata.resource.k8s.io/v1beta1 DeviceMetadata, device
{driver, pool, name, attributes}; the test driver's metadata_test.go), with upstream main's attributes
(dra.cpu/allocatedNumCPUs = the consumed capacity in grouped mode)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.verify import readout as R
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.verify import report as T

UID = "0b1c-uid"
MARK = "@@dra-cpu-verify "
CLAIM = {"metadata": {"name": "vm1-cpu", "uid": UID}, "status": {"allocation": {"devices": {"results": [
    {"request": "cpu", "driver": "dra.cpu", "pool": "real01", "device": "cpudevnuma001",
     "consumedCapacity": {"dra.cpu/cpu": "6"}}]}}}}
DEFAULTS = {"require_metadata": False, "allow_missing_dra_cpuset": False}
NUMA1 = {"group": "numanode", "id": 1}
NODES = "/sys/devices/system/node/node0/cpulist 0-5\n/sys/devices/system/node/node1/cpulist 6-11"
PACKAGES = "\n".join("/sys/devices/system/cpu/cpu%d/topology/physical_package_id %d" % (c, c // 6) for c in range(12))


def metadata(devices=None, numa=1, allocated=6, name="cpudevnuma001"):
    attrs = {"dra.cpu/numaNodeID": {"int": numa}, "resource.kubernetes.io/numaNode": {"int": numa},
             "dra.cpu/numCPUs": {"int": 6}}
    if allocated is not None:
        attrs["dra.cpu/allocatedNumCPUs"] = {"int": allocated}
    doc = {"apiVersion": "metadata.resource.k8s.io/v1beta1", "kind": "DeviceMetadata",
           "metadata": {"name": "vm1-cpu", "namespace": "default", "uid": UID, "generation": 1},
           "requests": [{"name": "cpu", "devices": devices if devices is not None else [
               {"driver": "dra.cpu", "pool": "real01", "name": name, "attributes": attrs}]}]}
    return json.dumps(doc)


def log(meta=None, allowed="6-11", online="0-11", env="DRA_CPUSET_%s=6-11" % UID, end=True, cgroup=None,
        nodes=NODES, packages=PACKAGES):
    parts = [MARK + "metadata", meta if meta is not None else metadata(), "",
             MARK + "status", "Cpus_allowed_list:\t%s" % allowed, MARK + "cgroup", cgroup if cgroup is not None else allowed,
             MARK + "online", online, MARK + "nodes", nodes, MARK + "packages", packages, MARK + "env", env]
    if end:
        parts.append(MARK + "end")
    return "\n".join(parts) + "\n"


def judge(text, claim=None, cpus=6, mode="grouped", pinned=None, placement="numa1", **options):
    """R.judge with the defaults: CLAIM, NUMA node 1 (``placement`` None: not known)."""
    placement = NUMA1 if placement == "numa1" else placement
    return R.judge(text, claim or CLAIM, cpus, mode, pinned, dict(DEFAULTS, **options), "/m.json", placement)


MISSING = MARK + "missing"


def test_a_good_readout_has_no_problem():
    out = judge(log(), pinned="6-11")
    assert out["problems"] == [] and out["notes"] == [] and out["complete"] and out["cpuset_compared"]
    assert out["metadata"]["numa_nodes"] == ["1"] and out["metadata"]["allocated_cpus"] == 6
    assert out["dra_cpuset"] == "6-11" and out["container_cpus"] == "6-11"
    assert out["placement"] == {"group": "numanode", "id": 1, "kernel_cpus": "6-11"}


def test_a_metadata_file_of_two_documents_is_read_by_its_first():
    assert judge(log(meta=metadata() + "\n" + metadata(numa=0)))["problems"] == []


def test_missing_metadata_is_reported_not_failed_unless_required():
    """KubeVirt's CPU path never reads the KEP-5304 metadata (VEP 152 as merged): v0.2.0 writes none."""
    out = judge(log(meta=MISSING))
    assert out["problems"] == [] and out["metadata"] is None
    required = judge(log(meta=MISSING), require_metadata=True)["problems"]
    (problem,) = required
    assert "dra_cpu_verify_require_metadata asks for it" in problem and "/m.json" in problem
    assert "releases after v0.2.0 write it" in problem


def test_metadata_findings_are_notes_unless_required():
    other = judge(log(meta=metadata(name="cpudevnuma000")))
    assert other["problems"] == [] and any("not the claim's allocation" in n for n in other["notes"]), other
    small = judge(log(meta=metadata(allocated=4)), require_metadata=True)["problems"]
    assert any("4 CPUs allocated, the claim asks for 6" in p for p in small), small
    none = judge(log(meta=metadata(allocated=None)), require_metadata=True)["problems"]
    assert any("no dra.cpu/allocatedNumCPUs" in p for p in none), none
    bad = judge(log(meta="{not json"), require_metadata=True)["problems"]
    assert any("not JSON" in p for p in bad), bad


def test_a_driver_without_dra_cpuset_fails_by_default_with_kubevirts_reason():
    gone = judge(log(env=""))["problems"]
    (problem,) = gone
    assert "injected no DRA_CPUSET_%s into container compute (it has: none)" % UID in problem
    assert "pins no vCPU (no vcpupin)" in problem and "dra_cpu_verify_allow_missing_dra_cpuset=true" in problem
    other = judge(log(env="DRA_CPUSET_other=1"))["problems"]
    assert "(it has: DRA_CPUSET_other=1)" in other[0]
    accepted = judge(log(env=""), allow_missing_dra_cpuset=True)
    assert accepted["problems"] == [] and "accepted: dra_cpu_verify_allow_missing_dra_cpuset" in accepted["notes"][0]
    garbage = judge(log(env="DRA_CPUSET_%s=x-y" % UID), allow_missing_dra_cpuset=True)["problems"]
    assert garbage == ["DRA_CPUSET_%s=x-y is not a CPU list" % UID]


def individual(cpus_by_numa):
    devices, results, published = [], [], []
    for i, numa in enumerate(cpus_by_numa):
        name = "cpudev%03d" % i
        device = {"driver": "dra.cpu", "pool": "real01", "name": name, "attributes": {"dra.cpu/numaNodeID": {"int": numa}}}
        devices.append(device)
        published.append(("real01", {"name": name, "attributes": {"numaNodeID": {"int": numa}}}))
        results.append({"request": "cpu", "driver": "dra.cpu", "pool": "real01", "device": name})
    claim = {"metadata": {"uid": UID}, "status": {"allocation": {"devices": {"results": results}}}}
    return metadata(devices=devices), claim, published


def test_individual_escape_hatch_counts_devices_on_one_numa_node():
    meta, claim, published = individual([1, 1, 1])
    placement = R.placement_of(R.allocated_devices(claim), published, "individual")
    assert placement == NUMA1
    out = judge(log(meta=meta, allowed="6-8", env="DRA_CPUSET_%s=6-8" % UID), claim, 3, "individual",
                placement=placement, require_metadata=True)
    assert out["problems"] == [] and out["metadata"]["allocated_cpus"] == 3
    meta, claim, published = individual([0, 1, 1])
    assert R.placement_of(R.allocated_devices(claim), published, "individual") is None
    spread = judge(log(meta=meta, allowed="5-7", env="DRA_CPUSET_%s=5-7" % UID), claim, 3, "individual",
                   placement=None, require_metadata=True)
    assert any("span NUMA nodes 0, 1" in p for p in spread["problems"]), spread


def test_placement_of_a_grouped_device_is_its_numa_node_or_socket():
    results = R.allocated_devices(CLAIM)
    numa = [("real01", {"name": "cpudevnuma001", "attributes": {"dra.cpu/numaNodeID": {"int": 1}}})]
    assert R.placement_of(results, numa, "grouped") == NUMA1
    socket = [("real01", {"name": "cpudevnuma001", "attributes": {"socketID": {"int": 0}}})]
    assert R.placement_of([dict(results[0], device="cpudevsocket000")],
                          [("real01", {"name": "cpudevsocket000", "attributes": {"socketID": {"int": 0}}})],
                          "grouped") == {"group": "socket", "id": 0}
    assert R.placement_of(results, socket, "grouped") == {"group": "numanode", "id": 1}  # named by its name
    assert R.placement_of(results, [("other", numa[0][1])], "grouped") is None
    machine = [("real01", {"name": "cpudevmachine"})]
    assert R.placement_of([dict(results[0], device="cpudevmachine")], machine, "grouped") is None


def test_the_claims_cpus_must_lie_in_the_allocated_devices_numa_node_or_socket():
    """Grouped devices publish no CPU ids: the container's own sysfs says where its CPUs are."""
    wrong = judge(log(allowed="0-5", env="DRA_CPUSET_%s=0-5" % UID))["problems"]
    assert wrong == ["the claim's CPUs 0-5 are not all in NUMA node 1 of the allocated device (CPUs 6-11 as the "
                     "kernel reports them)"]
    socket = judge(log(), placement={"group": "socket", "id": 1})
    assert socket["problems"] == [] and socket["placement"]["kernel_cpus"] == "6-11"
    off = judge(log(), placement={"group": "socket", "id": 0})["problems"]
    assert off and "not all in socket 0" in off[0]
    unseen = judge(log(nodes=""))
    assert unseen["problems"] == [] and "NUMA node 1 not checked: the container sees no NUMA node 1" in unseen["notes"][0]


def test_the_cpuset_must_be_the_drivers():
    moved = judge(log(allowed="0-11", cgroup="6-11"))["problems"]
    assert any("runs on CPUs 0-11, not on the claim's 6-11" in p for p in moved), moved
    cgroup = judge(log(cgroup="0-11"))["problems"]
    assert cgroup == ["the container's cgroup cpuset is 0-11, not the claim's 6-11 (DRA_CPUSET_%s)" % UID]
    lied = judge(log(), pinned="2-7")["problems"]
    assert any("pinned the container to CPUs 2-7, but passed DRA_CPUSET_%s=6-11" % UID in p for p in lied), lied
    short = judge(log(env="DRA_CPUSET_%s=6-8" % UID, allowed="6-8"))["problems"]
    assert any("holds 3 CPUs, the claim asks for 6" in p for p in short), short


def test_cpus_the_kernel_does_not_have_are_reported_not_compared():
    """The test nodes' simulated hardware: the driver's CPUs 6-11, the machine's 0-1 (runc maps them)."""
    out = judge(log(allowed="0-1", online="0-1"), pinned="6-11")
    assert out["problems"] == [] and out["cpuset_compared"] is False and out["placement"] is None
    assert "not CPUs of this kernel (online 0-1)" in out["notes"][0]


def test_an_unfinished_readout_fails():
    out = judge(log(end=False))
    assert any("did not print its readout" in p for p in out["problems"])


def test_report_lines():
    out = judge(log(), pinned="6-11")
    pod = {"metadata": {"name": "virt-launcher-vm1"}, "spec": {"nodeName": "real01"},
           "status": {"phase": "Running", "qosClass": "Guaranteed"}}
    line = T.allocation_line("vm1-cpu", 6, R.allocated_devices(CLAIM), pod, "grouped", None)
    assert line == ("claim vm1-cpu for 6 CPUs allocated: node real01, device cpudevnuma001 (driver dra.cpu, pool "
                    "real01); pod virt-launcher-vm1 Running, QoS Guaranteed")
    lines = T.readout_lines(out, "/m.json", {"node": "real01", "containers": {"compute": "6-11"}})
    assert lines[0] == "in compute, what virt-launcher reads: DRA_CPUSET_%s=6-11" % UID
    assert lines[1] == ("in compute: runs on exactly the claimed CPUs 6-11 (Cpus_allowed_list; cgroup 6-11) inside "
                        "NUMA node 1 (CPUs 6-11)")
    assert lines[2] == ("in compute: KEP-5304 device metadata at /m.json: device cpudevnuma001, NUMA node 1 "
                        "(resource.kubernetes.io/numaNode), 6 CPUs allocated (dra.cpu/allocatedNumCPUs)")
    assert lines[3] == "its container pinned to CPUs 6-11 (the driver's log on real01)"
    missing = T.readout_lines(judge(log(meta=MISSING, allowed="0-1", online="0-1")), "/m.json", {})
    assert missing[1].startswith("in compute: runs on CPUs 0-1 (Cpus_allowed_list; cgroup 0-1, online 0-1)")
    assert missing[2] == ("in compute: no KEP-5304 device metadata at /m.json (not read by KubeVirt's CPU path; other "
                          "DRA consumers read it)")
    ind = T.allocation_line("c", 2, [{"device": "cpudev000"}, {"device": "cpudev001"}], pod, "individual", "x/numa")
    assert "kept on one NUMA node by matchAttribute x/numa (individual mode: the spec.resourceClaims escape hatch" in ind


def test_failure_messages():
    pod = {"spec": {"nodeName": "real01"}, "status": {"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "message": "0/1 nodes are available: Insufficient cpu."}],
        "containerStatuses": [{"name": "compute", "state": {"waiting": {"reason": "ErrImagePull", "message": "nope"}}}]}}
    assert T.not_allocated("default", "v", 6, 20, pod) == (
        "ResourceClaim default/v (dra.cpu, 6 CPUs) was not allocated within 20s. Scheduler: "
        "0/1 nodes are available: Insufficient cpu.")
    events = [{"metadata": {"creationTimestamp": "2026-01-01T00:00:01Z"}, "message": "old"},
              {"metadata": {"creationTimestamp": "2026-01-01T00:00:02Z"}, "message": "new"}]
    msg = T.not_started("default", "v", pod, 20, events)
    assert msg.startswith("the claim was allocated, but pod default/v on node real01 is Pending after 20s, ")
    assert "Container: ErrImagePull: nope. Events: new | old" in msg


def _keys(typed_dict):
    return typed_dict.__required_keys__ | typed_dict.__optional_keys__


def test_the_readout_has_the_declared_shape():
    """judge's readout, its metadata and placement have exactly the keys readout.py declares."""
    out = judge(log(), pinned="6-11")
    assert set(out) == _keys(R.Readout)
    assert set(out["metadata"]) == _keys(R.Metadata) - {"error"}
    assert set(out["metadata"]["devices"][0]) == _keys(R.MetadataDevice)
    assert set(out["placement"]) == _keys(R.PlacementReadout)
    assert set(R.parse_metadata("not json")) == {"error"}
