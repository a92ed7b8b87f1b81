"""verify's aligned mode (VEP 300's shape, issue 46 item 3) on a real node on the machine's own CPU
hardware, proven up to the allocation.

The second device is a ResourceSlice this test publishes for real01 under a driver name of its own
(`near.aligned.test`, DeviceClass of the same name): one device on the machine's real PCIe root (the
`/sys/devices/pciXXXX:YY` whose `pci_bus/<id>/cpulistaffinity` holds the CPU device's CPUs, as upstream's
`pkg/device/pciescan_amd64.go` reads them) and on the CPU device's NUMA node. No driver prepares it, so
verify runs with `dra_cpu_verify_aligned_allocation_only` and the pod is never started: the proof is the
scheduler's allocation of both requests under the `matchAttribute` constraint, read back and checked
against the published devices. Its negative control is `far.aligned.test`, one device on a PCIe root
and a NUMA node the machine does not have: the same claim against it is never allocated.
A DRA driver that prepares a device here (`sigs.k8s.io/dra-example-driver` v0.2.0, DeviceClass
`gpu.example.com`) publishes no `pcieRoot` and no `numaNode` (docs/upstream.md), so it could show only
that no aligned claim is allocated, which the far device shows too.

Two clusters, one per driver flavour (a module-scoped fixture), both with `dra_cpu_expose_pcie_roots`:
chart 0.3.0 (upstream main's flavour, the project's driver: `resource.kubernetes.io/numaNode` and
`resource.kubernetes.io/pcieRoot` on grouped devices) and chart 0.2.0 (upstream's own v0.2.0 binary:
`resource.kubernetes.io/pcieRoot`, a string list, no standard NUMA node), both on Kubernetes v1.37.2
(v1.36.3's scheduler compares a list as a scalar) with the API server's, controller manager's and
scheduler's `DRAListTypeAttributes` gate
(CLUSTER_FEATURE_GATES: without it the API server drops the list and `matchAttribute` cannot intersect
it). For each attribute: when the CPU devices carry it, the aligned claim is proven and the far one is
not allocated; when they do not, verify refuses before creating anything, saying what publishes it.
"""
import glob
import os
import re

import pytest

from ansible_run import run_playbook
from real_nodes_lib import NODE, apis, cpuset_ids, real_slices

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="real nodes need root (mount/UTS namespaces, cgroups)"),
    pytest.mark.late_build("real-node"),
    pytest.mark.timeout(1200),
]

PCIE_ROOT = "resource.kubernetes.io/pcieRoot"
NUMA = "resource.kubernetes.io/numaNode"
NEAR, FAR = "near.aligned.test", "far.aligned.test"
GATES = "DRAListTypeAttributes=true"
# the install's variables per flavour, PCIe roots on. Kubernetes v1.37.2: the kube-scheduler of v1.36.3
# never hands the gate to its allocator (pkg/scheduler/framework/plugins/dynamicresources/
# dynamicresources.go AllocatorFeatures has no ListTypeAttributes; v1.37.2's has), so there a list-valued
# pcieRoot is compared as a scalar and no aligned claim is ever allocated (seen)
K8S = "v1.37.2"
FLAVOURS = {
    "main": {"dra_cpu_expose_pcie_roots": True},
    "v0.2": {"dra_cpu_chart_version": "0.2.0", "dra_cpu_expose_pcie_roots": True},
}


def machine_cpus():
    with open("/sys/devices/system/cpu/online") as f:
        return cpuset_ids(f.read().strip())


def machine_roots():
    """{root name: its CPUs} of the machine's PCIe roots, read as upstream's PCIeDomainsFromFS reads them."""
    out = {}
    for path in glob.glob("/sys/devices/pci*"):
        name = os.path.basename(path)
        if not re.fullmatch(r"pci[0-9a-f]{4}:[0-9a-f]{2}", name):
            continue
        with open(os.path.join(path, "pci_bus", name[3:], "cpulistaffinity")) as f:
            out[name] = cpuset_ids(f.read().strip())
    return out


def cells():
    n = 0
    for d in glob.glob("/sys/devices/system/node/node[0-9]*"):
        with open(os.path.join(d, "cpulist")) as f:
            n += bool(f.read().strip())
    return n or 1


NOTHING_RESERVED = {"dra_cpu_reserved_cpus": "", "dra_cpu_num_vcpu": len(machine_cpus()),
                    "dra_cpu_num_numa_nodes": cells()}


def cpu_devices(c):
    return [d for s in real_slices(c) for d in s["spec"]["devices"]]


def values(device, name):
    value = (device.get("attributes") or {}).get(name) or {}
    for kind in ("int", "string"):
        if kind in value:
            return [value[kind]]
    return list(value.get("ints") or value.get("strings") or [])


def publish(c, driver, attributes):
    """A DeviceClass `driver` and a ResourceSlice of one device `nic0` on NODE with `attributes`."""
    _, custom = apis(c)
    custom.create_cluster_custom_object("resource.k8s.io", "v1", "deviceclasses", {
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": driver},
        "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{driver}'"}}]}})
    custom.create_cluster_custom_object("resource.k8s.io", "v1", "resourceslices", {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{driver}-{NODE}"},
        "spec": {"driver": driver, "nodeName": NODE,
                 "pool": {"name": NODE, "generation": 1, "resourceSliceCount": 1},
                 "devices": [{"name": "nic0", "attributes": attributes}]}})


@pytest.fixture(scope="module", params=sorted(FLAVOURS))
def aligned_node(request, cluster_factory):
    """A cluster of one real node on the machine's CPUs, the gate on, the driver of the given flavour
    installed with nothing reserved, and the near and far devices published."""
    c = cluster_factory(f"aligned-{request.param}", CLUSTER_NODES=0, CLUSTER_REAL_NODES=1,
                        CLUSTER_FEATURE_GATES=GATES, CLUSTER_K8S_VERSION=K8S,
                        CLUSTER_REAL_NODE_OVERRIDES={NODE: {"runtime": "containerd", "hardware": "machine"}})
    r = run_playbook(c, "install", extra_vars=dict(NOTHING_RESERVED, **FLAVOURS[request.param]))
    assert r.rc == 0, r.failure_messages() or r
    devices = cpu_devices(c)
    assert devices, "no dra.cpu device published"
    # grouped by NUMA node: the first device's node, and the CPUs the kernel gives it
    numa = (values(devices[0], NUMA) or values(devices[0], "dra.cpu/numaNodeID"))[0]
    with open(f"/sys/devices/system/node/node{numa}/cpulist") as f:
        cpus = cpuset_ids(f.read().strip())
    roots = machine_roots()
    near_root = sorted(root for root, local in roots.items() if local & cpus)
    assert near_root, f"no PCIe root of the machine is affine to its CPUs: {roots}"
    publish(c, NEAR, {PCIE_ROOT: {"string": near_root[0]}, NUMA: {"int": int(numa)}})
    publish(c, FAR, {PCIE_ROOT: {"string": "pci00ff:ff"}, NUMA: {"int": int(numa) + 7}})
    c.flavour, c.near_root, c.numa = request.param, near_root[0], int(numa)
    yield c
    c.down()


def verify(c, device_class, attribute, timeout=60):
    r = run_playbook(c, "verify", extra_vars={
        "dra_cpu_verify_cpus": 1, "dra_cpu_verify_aligned_device_class": device_class,
        "dra_cpu_verify_aligned_attribute": attribute, "dra_cpu_verify_aligned_allocation_only": True,
        "dra_cpu_verify_timeout": timeout})
    # the module's own result (registered with failed_when: false; the role's Fail task fails the run)
    found = [res for name, res in r.tasks() if "cpus" in res and "sizing" in res]
    assert len(found) == 1, [(name, sorted(res)) for name, res in r.tasks()]
    res = found[0]
    return r, res


@pytest.mark.parametrize("attribute", [PCIE_ROOT, NUMA])
def test_aligned_claim(aligned_node, attribute):
    c = aligned_node
    carried = [d["name"] for d in cpu_devices(c) if values(d, attribute)]
    r, res = verify(c, NEAR, attribute)
    if not carried:
        # refused before anything is created, saying what publishes the attribute
        assert r.rc != 0 and res["passed"] is False and f"no dra.cpu device on the driver's nodes carries {attribute}" \
            in res["msg"], res
        assert "claim_manifest" not in res, res
        pytest.skip(f"{c.flavour}: the driver publishes no {attribute} (refused before creation, as asserted)")
    assert r.rc == 0, r.failure_messages() or res
    proof = res["aligned"]
    assert proof["problems"] == [] and proof["attribute"] == attribute, proof
    want = c.near_root if attribute == PCIE_ROOT else c.numa
    assert proof["device"]["values"] == [want] and want in proof["cpu"]["values"], proof
    assert proof["device"]["driver"] == NEAR and proof["cpu"]["driver"] == "dra.cpu", proof
    assert "readout" not in res and "proven up to the allocation" in res["report"][-1], res["report"]
    claim = res["claim"]["spec"]["devices"]
    assert claim["constraints"] == [{"requests": ["cpu", "device"], "matchAttribute": attribute}], claim
    assert res["cleanup"] == ["deleted"], res
    # negative control: the same claim for the far device (another root, another NUMA node) is never allocated
    r, res = verify(c, FAR, attribute, timeout=30)
    assert r.rc != 0 and res["passed"] is False and "aligned" not in res, res
    assert "was not allocated within 30s" in res["msg"], res["msg"]
    assert res["cleanup"] == ["deleted"], res
