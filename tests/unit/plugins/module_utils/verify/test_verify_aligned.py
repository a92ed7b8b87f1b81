# SPDX-License-Identifier: Apache-2.0
"""verify's aligned mode (VEP 300's shape): the claim it renders, the refusal before anything is created,
the proof of an allocation (each with a control that changes the reason and fails), and the run against
test_verify_run's fake API server (an allocation of both requests, aligned or not; allocation only)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

import pytest

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.verify import aligned as A
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.verify import manifests as M

import test_verify_run as R

ROOT = A.PCIE_ROOT
NUMA = "resource.kubernetes.io/numaNode"
POOL = {"name": "real01", "generation": 1, "resourceSliceCount": 1}


def cpu_slice(roots=("pci0000:00",), numa=0, name="cpudevnuma000"):
    attrs = {"dra.cpu/numaNodeID": {"int": numa}, NUMA: {"int": numa}}
    if roots is not None:
        attrs[ROOT] = {"strings": list(roots)}
    return {"spec": {"driver": "dra.cpu", "nodeName": "real01", "pool": POOL,
                     "devices": [{"name": name, "attributes": attrs}]}}


def nic_slice(root="pci0000:00", numa=0, driver="nic.example.com", name="nic0"):
    attrs = {}
    if root is not None:
        attrs[ROOT] = {"string": root}
    if numa is not None:
        attrs[NUMA] = {"int": numa}
    return {"spec": {"driver": driver, "nodeName": "real01", "pool": POOL, "devices": [{"name": name, "attributes": attrs}]}}


def allocated(cpu="cpudevnuma000", device="nic0", driver="nic.example.com"):
    results = [{"request": "cpu", "driver": "dra.cpu", "pool": "real01", "device": cpu}]
    if device:
        results.append({"request": "device", "driver": driver, "pool": "real01", "device": device})
    return {"status": {"allocation": {"devices": {"results": results}}}}


def test_attribute_names_short_and_full():
    assert A.attribute_name("pcieRoot") == A.attribute_name(ROOT) == ROOT
    assert A.attribute_name("numaNode") == A.attribute_name(NUMA) == NUMA
    assert A.attribute_name("dra.cpu/numaNodeID") is None


def test_values_of_scalar_list_bare_and_missing():
    device = {"attributes": {ROOT: {"strings": ["pci0000:00", "pci0000:40"]}, NUMA: {"int": 1}, "numCPUs": {"int": 4}}}
    assert A.attribute_values(device, ROOT, "dra.cpu") == ["pci0000:00", "pci0000:40"]
    assert A.attribute_values(device, NUMA, "dra.cpu") == [1]
    # a bare name is in the driver's domain
    assert A.attribute_values(device, "dra.cpu/numCPUs", "dra.cpu") == [4]
    assert A.attribute_values(device, "dra.cpu/socketID", "dra.cpu") is None
    assert A.attribute_values({"attributes": {ROOT: {"unknown": 1}}}, ROOT, "dra.cpu") is None


def test_claim_adds_the_device_request_and_the_constraint():
    cpu = M.claim_manifest("vm-cpu", "default", 4, "grouped")
    before = copy.deepcopy(cpu)
    out = A.claim_manifest(cpu, "gpu.example.com", ROOT)
    assert cpu == before
    requests = out["spec"]["devices"]["requests"]
    assert requests[0] == before["spec"]["devices"]["requests"][0]
    assert requests[1] == {"name": "device", "exactly": {"deviceClassName": "gpu.example.com",
                                                         "allocationMode": "ExactCount", "count": 1}}
    assert out["spec"]["devices"]["constraints"] == [{"requests": ["cpu", "device"], "matchAttribute": ROOT}]


def test_refused_before_creation_when_no_cpu_device_carries_the_attribute():
    assert A.cpu_devices_problem([cpu_slice()], ROOT, "grouped", "dra.cpu") is None
    assert A.cpu_devices_problem([cpu_slice()], NUMA, "grouped", "dra.cpu") is None
    problem = A.cpu_devices_problem([cpu_slice(roots=None)], ROOT, "grouped", "dra.cpu")
    assert "--expose-pcie-roots" in problem and "DRAListTypeAttributes" in problem
    assert "grouped" in A.cpu_devices_problem([cpu_slice()], ROOT, "individual", "dra.cpu")


def test_proven_when_the_cpu_roots_hold_the_device_root():
    slices = [cpu_slice(roots=("pci0000:00", "pci0000:40")), nic_slice(root="pci0000:40")]
    proof = A.prove(allocated(), slices, "nic.example.com", ROOT)
    assert proof["problems"] == [] and proof["common"] == ["pci0000:40"]
    assert proof["cpu"]["values"] == ["pci0000:00", "pci0000:40"] and proof["device"]["values"] == ["pci0000:40"]
    line = A.report_line(proof, True)
    assert "holds device nic.example.com/real01/nic0's [pci0000:40]" in line and "up to the allocation" in line


def test_not_proven_on_another_root_control():
    # the same allocation, the device on a root the CPU device does not list
    proof = A.prove(allocated(), [cpu_slice(roots=("pci0000:00",)), nic_slice(root="pci0000:40")],
                    "nic.example.com", ROOT)
    assert proof["problems"] and "not among the CPU device's [pci0000:00]" in proof["problems"][0]
    assert "NOT proven" in A.report_line(proof, False)


def test_numa_node_proof_and_its_control():
    assert A.prove(allocated(), [cpu_slice(numa=1), nic_slice(numa=1)], "c", NUMA)["problems"] == []
    assert A.prove(allocated(), [cpu_slice(numa=1), nic_slice(numa=0)], "c", NUMA)["problems"]


def test_not_proven_without_the_device_request_or_its_attribute_or_its_slice():
    slices = [cpu_slice(), nic_slice(root=None)]
    assert "request device holds 0 devices" in A.prove(allocated(device=None), slices, "c", ROOT)["problems"][0]
    assert "carries no %s" % ROOT in A.prove(allocated(), slices, "c", ROOT)["problems"][0]
    assert "not among the published devices" in A.prove(allocated(device="nic9"), slices, "c", ROOT)["problems"][0]


# the run, against test_verify_run's fake API server
NIC_CLASS = "/apis/resource.k8s.io/v1/deviceclasses/nic.example.com"


@pytest.fixture(autouse=True)
def topology(monkeypatch):
    monkeypatch.setattr(R.V, "_topology", lambda api, params, clock, sleep: (dict(R.TOPO), None))


class AlignedApi(R.FakeApi):
    """Slices per driver; a created claim's allocation holds the device request too."""

    def __init__(self, cpu=None, nic=None, **kw):
        super(AlignedApi, self).__init__(**kw)
        self.slices = {"dra.cpu": [cpu or cpu_slice(name="cpudevnuma001")], "nic.example.com": [nic or nic_slice()]}
        self.objects[NIC_CLASS] = {"metadata": {"name": "nic.example.com"}}

    server = {"gitVersion": "v1.37.2"}

    def version(self):
        return self.server

    def get_json(self, path, query=None, timeout=None):
        if path == "/apis/resource.k8s.io/v1/resourceslices":
            self.calls.append(("GET", path))
            driver = (query or {}).get("fieldSelector", "").partition("=")[2]
            return {"items": self.slices.get(driver, [])}
        obj = super(AlignedApi, self).get_json(path, query, timeout)
        if path.startswith(R.CLAIMS) and self.allocate:
            obj["status"]["allocation"]["devices"]["results"].append(
                {"request": "device", "driver": "nic.example.com", "pool": "real01", "device": "nic0"})
        return obj


def run(api, **params):
    return R.verify(api, aligned_device_class="nic.example.com", cpus=6, **params)


def test_run_proves_the_aligned_claim_then_the_readout():
    api = AlignedApi()
    result = run(api)
    assert result.get("failed") is not True and result["passed"] is True, result
    claim = result["claim_manifest"]["spec"]["devices"]
    assert [r["name"] for r in claim["requests"]] == ["cpu", "device"]
    assert claim["constraints"] == [{"requests": ["cpu", "device"], "matchAttribute": ROOT}]
    assert result["aligned"]["problems"] == [] and result["readout"]["problems"] == []
    assert any("aligned claim on %s" % ROOT in line for line in result["report"])
    assert result["cleanup"] == ["deleted"] and not [p for p in api.objects if p.startswith(R.CLAIMS)]


def test_run_fails_when_the_allocation_is_not_aligned():
    api = AlignedApi(nic=nic_slice(root="pci0000:40"))
    result = run(api)
    assert result["failed"] is True and result["passed"] is False
    assert "not among the CPU device's" in result["msg"]


def test_run_allocation_only_stops_before_the_readout():
    api = AlignedApi(run=False)
    result = run(api, aligned_allocation_only=True)
    assert result["passed"] is True and "readout" not in result, result
    assert ("LOG", "default/virt-launcher-dra-cpu-verify") not in api.calls
    assert "up to the allocation" in result["report"][-1]
    # control: the same run without allocation_only waits for a pod that never runs, and fails
    assert run(AlignedApi(run=False))["failed"] is True


@pytest.mark.parametrize("change, words", [
    (lambda api: api.objects.pop(NIC_CLASS), "no DeviceClass nic.example.com"),
    (lambda api: api.slices.update({"dra.cpu": [cpu_slice(roots=None, name="cpudevnuma001")]}), "--expose-pcie-roots"),
])
def test_run_refuses_before_creating_anything(change, words):
    api = AlignedApi()
    change(api)
    result = run(api)
    assert result["failed"] is True and words in result["msg"]
    assert not [c for c in api.calls if c[0] in ("POST", "DELETE")]


def test_check_mode_says_what_it_would_add():
    api = AlignedApi()
    result = R.verify(api, check_mode=True, aligned_device_class="nic.example.com", cpus=6)
    assert "one device of class nic.example.com" in result["report"][-1]
    assert not [c for c in api.calls if c[0] in ("POST", "DELETE")]


def test_an_older_scheduler_is_refused_for_pcie_roots_before_anything_is_created():
    """kube-scheduler v1.36.3 compares a list attribute as one value (no ListTypeAttributes in its
    AllocatorFeatures): refused there for pcieRoot, tried on 1.37, and the NUMA node is not affected."""
    from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.verify import aligned as al
    slices = [{"spec": {"driver": "dra.cpu", "pool": {"name": "n", "generation": 1, "resourceSliceCount": 1},
                        "devices": [{"name": "cpudevnuma000", "attributes": {
                            "resource.kubernetes.io/pcieRoot": {"strings": ["pci0000:00"]},
                            "resource.kubernetes.io/numaNode": {"int": 0}}}]}}]
    got = al.cpu_devices_problem(slices, al.PCIE_ROOT, "grouped", "dra.cpu", {"gitVersion": "v1.36.3"})
    assert got and "older than 1.37" in got and "1.37.0 or newer" in got
    assert al.cpu_devices_problem(slices, al.PCIE_ROOT, "grouped", "dra.cpu", {"gitVersion": "v1.37.2"}) is None
    assert al.cpu_devices_problem(slices, al.STANDARD_NUMA, "grouped", "dra.cpu", {"gitVersion": "v1.36.3"}) is None
