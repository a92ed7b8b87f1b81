# SPDX-License-Identifier: Apache-2.0
"""verify's claim and pod, rendered as KubeVirt's virt-controller renders them for a VMI (VEP 152 as merged,
docs/upstream.md, "KubeVirt's CPUsWithDRA design as merged"): claim <vmi>-cpu with request cpu (a dra.cpu/cpu capacity request), pod
virt-launcher-<vmi> whose container compute holds it as cpu-dra with CPU requests = limits = hostCPUs (alpha)
or claim-only (KEP-5517); individual mode's escape hatch a count kept on one NUMA node by matchAttribute, on
the standard attribute when every published device carries it (upstream main), else dra.cpu/numaNodeID."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.verify import manifests as M


def slice_of(*devices, driver="dra.cpu", pool="real01"):
    return {"spec": {"driver": driver, "pool": {"name": pool, "generation": 1, "resourceSliceCount": 1},
                     "devices": list(devices)}}


def dev(name, **attrs):
    return {"name": name, "attributes": dict((k, {"int": v}) for k, v in attrs.items())}


MAIN = slice_of(dev("cpudev000", **{"numaNodeID": 0, "dra.net/numaNode": 0, "resource.kubernetes.io/numaNode": 0}),
                dev("cpudev001", **{"dra.cpu/numaNodeID": 1, "resource.kubernetes.io/numaNode": 1}))
V02 = slice_of(dev("cpudev000", numaNodeID=0, **{"dra.net/numaNode": 0}), dev("cpudev001", numaNodeID=1), pool="node01")


def test_numa_attribute_read_from_the_published_devices():
    assert M.numa_attribute([MAIN]) == "resource.kubernetes.io/numaNode"
    assert M.numa_attribute([V02]) == "dra.cpu/numaNodeID"
    # one node of an older driver: the standard one is not on every device
    assert M.numa_attribute([MAIN, V02]) == "dra.cpu/numaNodeID"
    assert M.numa_attribute([slice_of(dev("x"))]) is None
    assert M.numa_attribute([]) is None
    assert M.numa_attribute([slice_of(dev("x", numaNodeID=0), driver="other")]) is None


def test_names_are_virt_controllers():
    """KubeVirt VEP 152 as merged: claim <vmi>-cpu, pod virt-launcher-<vmi>."""
    assert M.claim_name("vm1") == "vm1-cpu" and M.pod_name("vm1") == "virt-launcher-vm1"


def test_grouped_claim_is_virt_controllers_capacity_request():
    """The VEP's synthesized claim: one request `cpu`, class dra.cpu, capacity dra.cpu/cpu = hostCPUs, no
    selector, no count."""
    claim = M.claim_manifest("vm1-cpu", "default", 6, "grouped")
    assert claim["apiVersion"] == "resource.k8s.io/v1" and claim["kind"] == "ResourceClaim"
    assert claim["metadata"]["name"] == "vm1-cpu"
    assert claim["spec"]["devices"] == {"requests": [{"name": "cpu", "exactly": {
        "deviceClassName": "dra.cpu", "capacity": {"requests": {"dra.cpu/cpu": "6"}}}}]}
    assert claim["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "kubevirtci.dra_cpu"}


def test_individual_escape_hatch_claim_is_a_count_on_one_numa_node():
    claim = M.claim_manifest("c", "ns", 4, "individual", "resource.kubernetes.io/numaNode")
    devices = claim["spec"]["devices"]
    assert devices["requests"][0] == {"name": "cpu", "exactly": {
        "deviceClassName": "dra.cpu", "allocationMode": "ExactCount", "count": 4}}
    assert devices["constraints"] == [{"requests": ["cpu"], "matchAttribute": "resource.kubernetes.io/numaNode"}]
    assert "constraints" not in M.claim_manifest("c", "ns", 4, "individual", None)["spec"]["devices"]


def test_pod_is_virt_launchers_alpha_pod():
    """compute holds the claim as pod claim cpu-dra; alpha: CPU requests = limits = hostCPUs (Guaranteed)."""
    pod = M.pod_manifest("virt-launcher-vm1", "default", "vm1-cpu", 3, "img", [{"key": "k", "operator": "Exists"}])
    spec = pod["spec"]
    assert pod["metadata"]["name"] == "virt-launcher-vm1"
    assert spec["resourceClaims"] == [{"name": "cpu-dra", "resourceClaimName": "vm1-cpu"}]
    assert spec["tolerations"] == [{"key": "k", "operator": "Exists"}]
    (c,) = spec["containers"]
    assert c["name"] == "compute" and c["image"] == "img"
    assert c["resources"]["requests"] == c["resources"]["limits"] == {"cpu": "3", "memory": "32Mi"}
    assert c["resources"]["claims"] == [{"name": "cpu-dra", "request": "cpu"}]
    assert c["command"][:2] == ["sh", "-c"]
    assert M.pod_manifest("n", "ns", "n", 1, "i")["spec"]["tolerations"] == []


def test_claim_only_pod_mirrors_no_cpus():
    """KEP-5517 (Beta): no mirrored CPUs, a 1m request = limit for the QoS class only, as upstream's
    hack/examples/pod_with_resource_claim_node_allocatable.yaml."""
    c = M.pod_manifest("p", "ns", "vm1-cpu", 6, "i", claim_only=True)["spec"]["containers"][0]
    assert c["resources"]["requests"] == c["resources"]["limits"] == {"cpu": "1m", "memory": "32Mi"}
    assert c["resources"]["claims"] == [{"name": "cpu-dra", "request": "cpu"}]


def test_the_container_prints_what_virt_launcher_reads():
    script = M.container_script("vm1-cpu")
    assert ("/var/run/kubernetes.io/dra-device-attributes/resourceclaims/vm1-cpu/cpu/"
            "dra.cpu-metadata.json") in script
    for text in ("Cpus_allowed_list", "/sys/devices/system/cpu/online", "/proc/1/environ", "^DRA_CPUSET_",
                 "cpuset.cpus.effective", "cpuset.effective_cpus", "/sys/devices/system/node/node[0-9]*/cpulist",
                 "topology/physical_package_id", "@@dra-cpu-verify end", "exec sleep"):
        assert text in script
    assert M.metadata_path("x") == "/var/run/kubernetes.io/dra-device-attributes/resourceclaims/x/cpu/dra.cpu-metadata.json"


def test_numa_attribute_reads_only_each_pools_newest_generation():
    """Right after an upgrade from v0.2 the old generation may still be listed; the scheduler uses
    only a pool's newest generation (k8s.io/dynamic-resource-allocation structured: outdated slices
    are ignored), so verify does too (seen on the real node, test_real_driver)."""
    def pooled(s, pool, generation):
        return {"spec": dict(s["spec"], pool={"name": pool, "generation": generation})}
    assert M.numa_attribute([pooled(V02, "real01", 1), pooled(MAIN, "real01", 2)]) == "resource.kubernetes.io/numaNode"
    # another pool of the old driver still counts
    assert M.numa_attribute([pooled(V02, "node01", 1), pooled(MAIN, "real01", 2)]) == "dra.cpu/numaNodeID"
