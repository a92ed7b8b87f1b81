# SPDX-License-Identifier: Apache-2.0
"""What verify's container saw, judged as virt-launcher needs it (KubeVirt VEP 152: the KEP-5304 device
metadata must be there, else virt-launcher fails the VM). The metadata shape is the one
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
CLAIM = {"metadata": {"name": "dra-cpu-verify", "uid": UID}, "status": {"allocation": {"devices": {"results": [
    {"request": "req-cpu", "driver": "dra.cpu", "pool": "real01", "device": "cpudevnuma001",
     "consumedCapacity": {"dra.cpu/cpu": "6"}}]}}}}


def metadata(devices=None, numa=1, allocated=6, name="cpudevnuma001"):
    attrs = {"dra.cpu/numaNodeID": {"int": numa}, "resource.kubernetes.io/numaNode": {"int": numa},
             "dra.cpu/numCPUs": {"int": 6}}
    if allocated is not None:
        attrs["dra.cpu/allocatedNumCPUs"] = {"int": allocated}
    doc = {"apiVersion": "metadata.resource.k8s.io/v1beta1", "kind": "DeviceMetadata",
           "metadata": {"name": "dra-cpu-verify", "namespace": "default", "uid": UID, "generation": 1},
           "requests": [{"name": "req-cpu", "devices": devices if devices is not None else [
               {"driver": "dra.cpu", "pool": "real01", "name": name, "attributes": attrs}]}]}
    return json.dumps(doc)


def log(meta=None, allowed="6-11", online="0-11", env="DRA_CPUSET_%s=6-11" % UID, end=True):
    parts = [MARK + "metadata", meta if meta is not None else metadata(), "",
             MARK + "status", "Cpus_allowed_list:\t%s" % allowed, MARK + "cgroup", allowed,
             MARK + "online", online, MARK + "env", env]
    if end:
        parts.append(MARK + "end")
    return "\n".join(parts) + "\n"


MISSING = "cat: can't open '/var/run/...': No such file or directory\n" + MARK + "missing"


def test_a_good_readout_has_no_problem():
    out = R.judge(log(), CLAIM, 6, "grouped", "6-11")
    assert out["problems"] == [] and out["complete"] and out["cpuset_compared"]
    assert out["metadata"]["numa_nodes"] == ["1"] and out["metadata"]["allocated_cpus"] == 6
    assert out["dra_cpuset"] == "6-11" and out["container_cpus"] == "6-11"


def test_a_metadata_file_of_two_documents_is_read_by_its_first():
    out = R.judge(log(meta=metadata() + "\n" + metadata(numa=0)), CLAIM, 6, "grouped", None)
    assert out["problems"] == [], out


def test_missing_metadata_fails_with_kubevirts_reason_unless_accepted():
    text = log(meta=MISSING)
    out = R.judge(text, CLAIM, 6, "grouped", "6-11", metadata_file="/var/run/x.json")
    (problem,) = out["problems"]
    assert "KubeVirt's virt-launcher fails a VM" in problem and "releases after v0.2.0 write it" in problem
    assert "dra_cpu_verify_allow_missing_metadata=true" in problem and "/var/run/x.json" in problem
    accepted = R.judge(text, CLAIM, 6, "grouped", "6-11", allow_missing_metadata=True)
    assert accepted["problems"] == [] and accepted["metadata"] is None
    assert "accepted: dra_cpu_verify_allow_missing_metadata" in accepted["notes"][0]


def test_metadata_must_match_the_allocation_numa_and_size():
    other = R.judge(log(meta=metadata(name="cpudevnuma000")), CLAIM, 6, "grouped", None)["problems"]
    assert any("not the claim's allocation" in p for p in other), other
    small = R.judge(log(meta=metadata(allocated=4)), CLAIM, 6, "grouped", None)["problems"]
    assert any("4 CPUs allocated, the claim asks for 6" in p for p in small), small
    none = R.judge(log(meta=metadata(allocated=None)), CLAIM, 6, "grouped", None)["problems"]
    assert any("no dra.cpu/allocatedNumCPUs" in p for p in none), none
    bad = R.judge(log(meta="{not json"), CLAIM, 6, "grouped", None)["problems"]
    assert any("not JSON" in p for p in bad), bad


def individual(cpus_by_numa):
    devices, results = [], []
    for i, numa in enumerate(cpus_by_numa):
        name = "cpudev%03d" % i
        devices.append({"driver": "dra.cpu", "pool": "real01", "name": name,
                        "attributes": {"dra.cpu/numaNodeID": {"int": numa}}})
        results.append({"request": "req-cpu", "driver": "dra.cpu", "pool": "real01", "device": name})
    claim = {"metadata": {"uid": UID}, "status": {"allocation": {"devices": {"results": results}}}}
    return metadata(devices=devices), claim


def test_individual_mode_counts_devices_on_one_numa_node():
    meta, claim = individual([1, 1, 1])
    out = R.judge(log(meta=meta, allowed="6-8", env="DRA_CPUSET_%s=6-8" % UID), claim, 3, "individual", None)
    assert out["problems"] == [] and out["metadata"]["allocated_cpus"] == 3
    meta, claim = individual([0, 1, 1])
    spread = R.judge(log(meta=meta, allowed="5-7", env="DRA_CPUSET_%s=5-7" % UID), claim, 3, "individual", None)
    assert any("span NUMA nodes 0, 1" in p for p in spread["problems"]), spread


def test_the_cpuset_must_be_the_drivers():
    moved = R.judge(log(allowed="0-11"), CLAIM, 6, "grouped", "6-11")["problems"]
    assert any("runs on CPUs 0-11, not on the claim's 6-11" in p for p in moved), moved
    lied = R.judge(log(), CLAIM, 6, "grouped", "2-7")["problems"]
    assert any("pinned the container to CPUs 2-7, but passed DRA_CPUSET_%s=6-11" % UID in p for p in lied), lied
    gone = R.judge(log(env=""), CLAIM, 6, "grouped", None)["problems"]
    assert any("no DRA_CPUSET_%s" % UID in p for p in gone), gone
    short = R.judge(log(env="DRA_CPUSET_%s=6-8" % UID, allowed="6-8"), CLAIM, 6, "grouped", None)["problems"]
    assert any("holds 3 CPUs, the claim asks for 6" in p for p in short), short


def test_cpus_the_kernel_does_not_have_are_reported_not_compared():
    """The test nodes' simulated hardware: the driver's CPUs 6-11, the machine's 0-1 (runc maps them)."""
    out = R.judge(log(allowed="0-1", online="0-1"), CLAIM, 6, "grouped", "6-11")
    assert out["problems"] == [] and out["cpuset_compared"] is False
    assert "not CPUs of this kernel (online 0-1)" in out["notes"][0]


def test_an_unfinished_readout_fails():
    out = R.judge(log(end=False), CLAIM, 6, "grouped", None)
    assert any("did not print its readout" in p for p in out["problems"])


def test_report_lines():
    out = R.judge(log(), CLAIM, 6, "grouped", "6-11")
    pod = {"spec": {"nodeName": "real01"}, "status": {"phase": "Running", "qosClass": "Guaranteed"}}
    line = T.allocation_line(6, R.allocated_devices(CLAIM), pod, "grouped", None)
    assert line == ("claim for 6 CPUs allocated: node real01, device cpudevnuma001 (driver dra.cpu, pool real01); "
                    "test pod Running, QoS Guaranteed")
    lines = T.readout_lines(out, "/m.json", {"node": "real01", "containers": {"compute": "6-11"}})
    assert lines[0] == ("in the container: device metadata at /m.json: 1 device(s), NUMA node 1 "
                        "(resource.kubernetes.io/numaNode), 6 CPUs allocated")
    assert "runs on CPUs 6-11 (Cpus_allowed_list" in lines[1] and "DRA_CPUSET_%s=6-11" % UID in lines[1]
    assert lines[2] == "its container pinned to CPUs 6-11 (the driver's log on real01)"
    ind = T.allocation_line(2, [{"device": "cpudev000"}, {"device": "cpudev001"}], pod, "individual", "x/numa")
    assert "kept on one NUMA node by matchAttribute x/numa" in ind


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
