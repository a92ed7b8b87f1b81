# SPDX-License-Identifier: Apache-2.0
"""verify's claim and pod, shaped as KubeVirt's virt-controller renders them (VEP 152): the claim on a
container named compute with CPU requests = limits = the claim's CPUs; grouped mode a dra.cpu/cpu capacity
request; individual mode a count kept on one NUMA node by matchAttribute, on the standard attribute when
every published device carries it (upstream main), else dra.cpu/numaNodeID (v0.2.0)."""
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


def test_grouped_claim_is_a_capacity_request():
    claim = M.claim_manifest("dra-cpu-verify", "default", 6, "grouped")
    assert claim["apiVersion"] == "resource.k8s.io/v1" and claim["kind"] == "ResourceClaim"
    assert claim["spec"]["devices"] == {"requests": [{"name": "req-cpu", "exactly": {
        "deviceClassName": "dra.cpu", "allocationMode": "ExactCount", "count": 1,
        "capacity": {"requests": {"dra.cpu/cpu": "6"}}}}]}
    assert claim["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "kubevirtci.dra_cpu"}


def test_individual_claim_is_a_count_on_one_numa_node():
    claim = M.claim_manifest("c", "ns", 4, "individual", "resource.kubernetes.io/numaNode")
    devices = claim["spec"]["devices"]
    assert devices["requests"][0]["exactly"] == {"deviceClassName": "dra.cpu", "allocationMode": "ExactCount", "count": 4}
    assert devices["constraints"] == [{"requests": ["req-cpu"], "matchAttribute": "resource.kubernetes.io/numaNode"}]
    assert "constraints" not in M.claim_manifest("c", "ns", 4, "individual", None)["spec"]["devices"]


def test_pod_is_shaped_like_a_launcher_pod():
    pod = M.pod_manifest("dra-cpu-verify", "default", "dra-cpu-verify", 3, "img", [{"key": "k", "operator": "Exists"}])
    spec = pod["spec"]
    assert spec["resourceClaims"] == [{"name": "cpu", "resourceClaimName": "dra-cpu-verify"}]
    assert spec["tolerations"] == [{"key": "k", "operator": "Exists"}]
    (c,) = spec["containers"]
    assert c["name"] == "compute" and c["image"] == "img"
    assert c["resources"]["requests"] == c["resources"]["limits"] == {"cpu": "3", "memory": "32Mi"}
    assert c["resources"]["claims"] == [{"name": "cpu", "request": "req-cpu"}]
    assert c["command"][:2] == ["sh", "-c"]
    assert M.pod_manifest("n", "ns", "n", 1, "i")["spec"]["tolerations"] == []


def test_the_container_prints_what_virt_launcher_reads():
    script = M.container_script("dra-cpu-verify")
    assert ("/var/run/kubernetes.io/dra-device-attributes/resourceclaims/dra-cpu-verify/req-cpu/"
            "dra.cpu-metadata.json") in script
    for text in ("Cpus_allowed_list", "/sys/devices/system/cpu/online", "/proc/1/environ", "^DRA_CPUSET_", "cpuset.cpus.effective",
                 "@@dra-cpu-verify end", "exec sleep"):
        assert text in script
    assert M.metadata_path("x") == "/var/run/kubernetes.io/dra-device-attributes/resourceclaims/x/req-cpu/dra.cpu-metadata.json"


def test_numa_attribute_reads_only_each_pools_newest_generation():
    """Right after an upgrade from v0.2 the old generation may still be listed; the scheduler uses
    only a pool's newest generation (k8s.io/dynamic-resource-allocation structured: outdated slices
    are ignored), so verify does too (seen on the real node, test_real_driver)."""
    def pooled(s, pool, generation):
        return {"spec": dict(s["spec"], pool={"name": pool, "generation": generation})}
    assert M.numa_attribute([pooled(V02, "real01", 1), pooled(MAIN, "real01", 2)]) == "resource.kubernetes.io/numaNode"
    # another pool of the old driver still counts
    assert M.numa_attribute([pooled(V02, "node01", 1), pooled(MAIN, "real01", 2)]) == "dra.cpu/numaNodeID"
