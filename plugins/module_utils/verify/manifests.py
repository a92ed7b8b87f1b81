# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""verify's test objects, rendered as KubeVirt's virt-controller renders them for a VMI (pure; no cluster).

Owns the ResourceClaim ``<vmi>-cpu`` and the launcher pod ``virt-launcher-<vmi>`` (alpha: CPUs mirrored;
claim-only on the KEP-5517 path), individual mode's escape-hatch claim and its NUMA attribute, and the
script the container runs to print what virt-launcher reads (readout.py parses it). Why:
docs/internals.md, "Why the preflight, the topology and verify read what they read".
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from typing import Any

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.types import K8sObject
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.preflight.types import Toleration
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.slice_pools import group_pools

REQUEST = "cpu"
POD_CLAIM = "cpu-dra"
CONTAINER = "compute"
DEVICE_CLASS = "dra.cpu"
MANAGED_BY = {"app.kubernetes.io/managed-by": "kubevirtci.dra_cpu"}
# Guaranteed QoS needs memory requests = limits too; the shell needs little
MEMORY = "32Mi"
# KEP-5517 claim-only pod: the CPU request that only fixes the QoS class (upstream's example)
QOS_ONLY_CPU = "1m"
STANDARD_NUMA = "resource.kubernetes.io/numaNode"
LEGACY_NUMA = "dra.cpu/numaNodeID"
# the KEP-5304 metadata file (the library's ResourceClaimFilePath), reported where the driver writes it
METADATA_DIR = "/var/run/kubernetes.io/dra-device-attributes/resourceclaims"
# the marker of each section of the container's output
MARK = "@@dra-cpu-verify "
SECTIONS = ("metadata", "status", "cgroup", "online", "nodes", "packages", "env")


def claim_name(vmi: str) -> str:
    """virt-controller's claim name for a VMI."""
    return "%s-cpu" % vmi


def pod_name(vmi: str) -> str:
    """virt-controller's launcher pod name for a VMI."""
    return "virt-launcher-%s" % vmi


def metadata_path(claim: str, request: str = REQUEST, driver: str = DEVICE_CLASS) -> str:
    return "%s/%s/%s/%s-metadata.json" % (METADATA_DIR, claim, request, driver)


def _attribute_names(device: K8sObject, driver: str) -> set[str]:
    names = set()
    for key in (device.get("attributes") or {}):
        # a bare name is in the driver's domain (resource.k8s.io/v1 QualifiedName)
        names.add(key if "/" in key else "%s/%s" % (driver, key))
    return names


def newest_devices(slices: list[K8sObject], driver: str = DEVICE_CLASS) -> list[tuple[str, K8sObject]]:
    """``(pool, device)`` of each pool's newest generation, as the scheduler sees them (k8s.io/dynamic-resource-
    allocation structured: outdated slices are ignored; right after an upgrade the old ones may be listed)."""
    out: list[tuple[str, K8sObject]] = []
    for name, pool in group_pools(slices, driver).items():
        for obj in pool["slices"]:
            for device in (((obj or {}).get("spec") or {}).get("devices") or []):
                if isinstance(device, dict):
                    out.append((name, device))
    return out


def numa_attribute(slices: list[K8sObject], driver: str = DEVICE_CLASS) -> str | None:
    """The attribute a ``matchAttribute`` constraint keeps a count of CPU devices on one NUMA node
    with: the standard one when every published device of ``driver`` carries it, else the driver's
    ``numaNodeID`` when every device does, else None (no constraint can hold)."""
    devices = [d for _pool, d in newest_devices(slices, driver)]
    if not devices:
        return None
    named = [_attribute_names(d, driver) for d in devices]
    for candidate in (STANDARD_NUMA, LEGACY_NUMA):
        if all(candidate in names for names in named):
            return candidate
    return None


def claim_manifest(name: str, namespace: str, cpus: int, mode: str, numa: str | None = None) -> K8sObject:
    """The ResourceClaim: virt-controller's (a capacity request), or individual mode's escape-hatch count."""
    exactly: K8sObject = {"deviceClassName": DEVICE_CLASS}
    devices: K8sObject = {"requests": [{"name": REQUEST, "exactly": exactly}]}
    if mode == "individual":
        exactly.update(allocationMode="ExactCount", count=int(cpus))
        if numa:
            devices["constraints"] = [{"requests": [REQUEST], "matchAttribute": numa}]
    else:
        exactly["capacity"] = {"requests": {"%s/cpu" % DEVICE_CLASS: str(int(cpus))}}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(MANAGED_BY)},
        "spec": {"devices": devices},
    }


def container_script(claim: str) -> str:
    """What the container runs (a POSIX shell with cat, grep, tr and sleep: busybox does): each
    section after its marker, then a sleep until the pod is deleted."""
    lines = [
        "echo '%smetadata'" % MARK,
        "cat '%s' 2>/dev/null || echo '%smissing'" % (metadata_path(claim), MARK),
        "echo",
        "echo '%sstatus'" % MARK,
        "grep '^Cpus_allowed_list:' /proc/self/status",
        "echo '%scgroup'" % MARK,
        "cat /sys/fs/cgroup/cpuset.cpus.effective 2>/dev/null || "
        "cat /sys/fs/cgroup/cpuset/cpuset.effective_cpus 2>/dev/null || true",
        "echo '%sonline'" % MARK,
        "cat /sys/devices/system/cpu/online 2>/dev/null || true",
        # each NUMA node's CPUs and each CPU's socket, as the container reads them
        "echo '%snodes'" % MARK,
        "for f in /sys/devices/system/node/node[0-9]*/cpulist; do [ -r \"$f\" ] && echo \"$f $(cat \"$f\")\"; done",
        "echo '%spackages'" % MARK,
        "for f in /sys/devices/system/cpu/cpu[0-9]*/topology/physical_package_id; do "
        "[ -r \"$f\" ] && echo \"$f $(cat \"$f\")\"; done",
        "echo '%senv'" % MARK,
        # PID 1's environment: a shell does not pass on DRA_CPUSET_<claim uid> (a name with dashes)
        "tr '\\0' '\\n' < /proc/1/environ | grep '^DRA_CPUSET_' || true",
        "echo '%send'" % MARK,
        "exec sleep 86400",
    ]
    return "\n".join(lines) + "\n"


def verify_pod(name: str, namespace: str, container: K8sObject,
               tolerations: list[Toleration] | None = None, **spec: Any) -> K8sObject:
    """A pod of verify's: labelled as the collection's, never restarted, run as nobody without privileges,
    no tolerations unless asked for (a launcher pod has none for NoSchedule), ``spec`` laid over."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(MANAGED_BY)},
        "spec": dict({
            "restartPolicy": "Never",
            # 1, not 0: a deletion with a grace period of 0 is immediate (the API server removes the
            # pod at once, as a forced deletion), before the kubelet has unprepared the claim; the
            # kubelet then refuses the next claim of the same name ("old ResourceClaim with same name
            # ... still exists (previous pod force-deleted?!)"). With 1 the kubelet stops the
            # container, unprepares the claim, then removes the pod, which verify waits for.
            "terminationGracePeriodSeconds": 1,
            "tolerations": list(tolerations or []),
            "securityContext": {"runAsNonRoot": True, "runAsUser": 65535,
                                "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [dict(container, securityContext={"allowPrivilegeEscalation": False,
                                                            "capabilities": {"drop": ["ALL"]}})],
        }, **spec),
    }


def pod_manifest(name: str, namespace: str, claim: str, cpus: int, image: str,
                 tolerations: list[Toleration] | None = None, claim_only: bool = False) -> K8sObject:
    """The launcher pod: one container ``compute`` holding the claim as ``cpu-dra``; Guaranteed, with the
    claim's CPUs mirrored (alpha) or a QoS-only CPU request (``claim_only``, KEP-5517)."""
    amount = {"cpu": QOS_ONLY_CPU if claim_only else str(int(cpus)), "memory": MEMORY}
    compute: K8sObject = {"name": CONTAINER, "image": image, "command": ["sh", "-c", container_script(claim)],
                          "resources": {"requests": dict(amount), "limits": dict(amount),
                                        "claims": [{"name": POD_CLAIM, "request": REQUEST}]}}
    return verify_pod(name, namespace, compute, tolerations,
                      resourceClaims=[{"name": POD_CLAIM, "resourceClaimName": claim}])
