# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""verify's test objects, shaped as KubeVirt's virt-controller renders them (pure; no cluster).

Owns the ResourceClaim and the pod (KubeVirt VEP 152, ``../shared/reference/kubevirt.md``):
- the claim has one request, ``req-cpu``, of device class ``dra.cpu``: in grouped mode one device with a
  ``dra.cpu/cpu`` capacity request of the claim's CPUs; in individual mode a ``count`` of CPU devices
  kept on one NUMA node by a ``matchAttribute`` constraint, on the standard
  ``resource.kubernetes.io/numaNode`` when every published device carries it, else on the driver's own
  ``dra.cpu/numaNodeID`` (``numa_attribute``: decided from the published ResourceSlices, not from a
  version), so the claim proves the NUMA-aligned size the report gives;
- the pod's container is named ``compute`` (virt-launcher's) and references the claim by name and
  request, with CPU requests = limits = the claim's CPUs (Guaranteed QoS, as in alpha); no
  tolerations unless asked for (a launcher pod has none for NoSchedule);
- the container prints what virt-launcher reads (``readout.py`` parses it): the KEP-5304 device
  metadata file at the path KubeVirt reads, the CPUs the kernel confines it to, the online CPUs as it
  sees them, and the ``DRA_CPUSET_*`` variables the driver passes (from ``/proc/1/environ``: the shell, PID 1, does not
  pass on a name with dashes), then sleeps until deleted.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from typing import Any

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.slice_pools import group_pools

REQUEST = "req-cpu"
POD_CLAIM = "cpu"
CONTAINER = "compute"
DEVICE_CLASS = "dra.cpu"
MANAGED_BY = {"app.kubernetes.io/managed-by": "kubevirtci.dra_cpu"}
# Guaranteed QoS needs memory requests = limits too; the shell needs little
MEMORY = "32Mi"
STANDARD_NUMA = "resource.kubernetes.io/numaNode"
LEGACY_NUMA = "dra.cpu/numaNodeID"
# the KEP-5304 metadata file as virt-launcher reads it (the library's ResourceClaimFilePath)
METADATA_DIR = "/var/run/kubernetes.io/dra-device-attributes/resourceclaims"
# the marker of each section of the container's output
MARK = "@@dra-cpu-verify "
SECTIONS = ("metadata", "status", "cgroup", "online", "env")


def metadata_path(claim: str, request: str = REQUEST, driver: str = DEVICE_CLASS) -> str:
    return "%s/%s/%s/%s-metadata.json" % (METADATA_DIR, claim, request, driver)


def _attribute_names(device: dict[str, Any], driver: str) -> set[str]:
    names = set()
    for key in (device.get("attributes") or {}):
        # a bare name is in the driver's domain (resource.k8s.io/v1 QualifiedName)
        names.add(key if "/" in key else "%s/%s" % (driver, key))
    return names


def numa_attribute(slices: list[dict[str, Any]], driver: str = DEVICE_CLASS) -> str | None:
    """The attribute a ``matchAttribute`` constraint keeps a count of CPU devices on one NUMA node
    with: the standard one when every published device of ``driver`` carries it, else the driver's
    ``numaNodeID`` when every device does, else None (no constraint can hold). Only each pool's newest
    generation counts, as for the scheduler: right after an upgrade the old generation's slices (of
    another driver version, perhaps without the standard attribute) may still be listed."""
    devices = [d for pool in group_pools(slices, driver).values() for obj in pool["slices"]
               for d in (((obj or {}).get("spec") or {}).get("devices") or []) if isinstance(d, dict)]
    if not devices:
        return None
    named = [_attribute_names(d, driver) for d in devices]
    for candidate in (STANDARD_NUMA, LEGACY_NUMA):
        if all(candidate in names for names in named):
            return candidate
    return None


def claim_manifest(name: str, namespace: str, cpus: int, mode: str, numa: str | None = None) -> dict[str, Any]:
    """The ResourceClaim: grouped mode a capacity request, individual mode a count on one NUMA node."""
    exactly: dict[str, Any] = {"deviceClassName": DEVICE_CLASS, "allocationMode": "ExactCount"}
    devices: dict[str, Any] = {"requests": [{"name": REQUEST, "exactly": exactly}]}
    if mode == "individual":
        exactly["count"] = int(cpus)
        if numa:
            devices["constraints"] = [{"requests": [REQUEST], "matchAttribute": numa}]
    else:
        exactly["count"] = 1
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
        "cat '%s' 2>&1 || echo '%smissing'" % (metadata_path(claim), MARK),
        "echo",
        "echo '%sstatus'" % MARK,
        "grep '^Cpus_allowed_list:' /proc/self/status",
        "echo '%scgroup'" % MARK,
        "cat /sys/fs/cgroup/cpuset.cpus.effective 2>/dev/null || "
        "cat /sys/fs/cgroup/cpuset/cpuset.effective_cpus 2>/dev/null || true",
        "echo '%sonline'" % MARK,
        "cat /sys/devices/system/cpu/online 2>/dev/null || true",
        "echo '%senv'" % MARK,
        # PID 1's environment as the runtime set it: a shell does not pass on a variable whose name is not
        # a shell name (DRA_CPUSET_<claim uid> holds dashes), so a child's `env` would not show it
        "tr '\\0' '\\n' < /proc/1/environ | grep '^DRA_CPUSET_' || true",
        "echo '%send'" % MARK,
        "exec sleep 86400",
    ]
    return "\n".join(lines) + "\n"


def pod_manifest(name: str, namespace: str, claim: str, cpus: int, image: str,
                 tolerations: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The pod: one container ``compute`` holding the claim, Guaranteed, shaped as a launcher pod."""
    amount = {"cpu": str(int(cpus)), "memory": MEMORY}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(MANAGED_BY)},
        "spec": {
            "restartPolicy": "Never",
            # 1, not 0: a deletion with a grace period of 0 is immediate (the API server removes the
            # pod at once, as a forced deletion), before the kubelet has unprepared the claim; the
            # kubelet then refuses the next claim of the same name ("old ResourceClaim with same name
            # ... still exists (previous pod force-deleted?!)"). With 1 the kubelet stops the
            # container, unprepares the claim, then removes the pod, which verify waits for.
            "terminationGracePeriodSeconds": 1,
            "tolerations": list(tolerations or []),
            "resourceClaims": [{"name": POD_CLAIM, "resourceClaimName": claim}],
            "securityContext": {"runAsNonRoot": True, "runAsUser": 65535,
                                "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{
                "name": CONTAINER,
                "image": image,
                "command": ["sh", "-c", container_script(claim)],
                "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
                "resources": {"requests": dict(amount), "limits": dict(amount),
                              "claims": [{"name": POD_CLAIM, "request": REQUEST}]},
            }],
        },
    }
