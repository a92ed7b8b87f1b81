# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""verify's words (pure; no cluster): the report lines the role prints and the failure messages.

Owns: the allocation line (claim, node, devices, pool, the NUMA constraint), the readout lines
(``DRA_CPUSET_*`` as virt-launcher reads it, the container's cpuset and where it lies, the KEP-5304
metadata where the driver writes it, beside the driver's pinning), the KEP-5517 lines (the pod's claim
status, the accounting probe), the check-mode line, and the messages of a claim the scheduler did not allocate and of a pod that did not
start (its container's state and the pod's last events).
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from typing import Any, List, Optional, TypedDict

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.types import K8sObject
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.pcie_roots import (
    NUMA_NODE,
    PCIE_ROOT,
    Locality,
    locality_text,
)
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.types import TopologyFact

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.verify.aligned import AlignedProof
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.verify.manifests import (
    CONTAINER,
    DEVICE_CLASS,
    QOS_ONLY_CPU,
)
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.verify.node_allocatable import (
    SCHEDULED,
    UNSCHEDULABLE,
    NodeAllocatableCheck,
    Probe,
)
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.verify.readout import Readout
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.verify.sizing import VmSizing


class Vmi(VmSizing):
    """verify's ``vmi``: the VMI's name and its CPU fields."""

    name: str


class TopologyFacts(TypedDict):
    dra_cpu_topology: TopologyFact


class VerifyResult(TypedDict, total=False):
    """The verify module's result (plugins/modules/verify.py RETURN; built by verify/run.py)."""

    changed: bool
    failed: bool
    msg: str
    warnings: List[str]
    passed: bool
    report: List[str]
    topology: TopologyFact
    ansible_facts: TopologyFacts
    cpus: int
    vmi: Vmi
    mode: str
    claim_name: str
    pod_name: str
    claim_only: bool
    numa_attribute: Optional[str]
    sizing: str
    metadata_file: str
    claim_manifest: K8sObject
    pod_manifest: K8sObject
    claim: Optional[K8sObject]
    pod: K8sObject
    node: Optional[str]
    locality: Optional[Locality]
    pod_phase: Optional[str]
    qos_class: Optional[str]
    readout: Readout
    pinned: dict[str, Any]  # verify/pinned.py's result
    log: Optional[str]
    node_allocatable: NodeAllocatableCheck
    aligned: AlignedProof
    cleanup: List[str]


def _pod_status(pod: K8sObject) -> K8sObject:
    return (pod or {}).get("status") or {}


def check_mode_line(namespace: str, claim: str, pod: str, cpus: int, mode: str, numa: str | None,
                    claim_only: bool = False) -> str:
    if mode == "individual":
        shape = ("%d CPU devices on one NUMA node (matchAttribute %s)" % (cpus, numa) if numa
                 else "%d CPU devices" % cpus)
    else:
        shape = "dra.cpu/cpu: %d, one device" % cpus
    kind = ("claim-only (KEP-5517: a %s CPU request for the QoS class)" % QOS_ONLY_CPU if claim_only
            else "CPU requests = limits = %d" % cpus)
    return ("check mode: would create ResourceClaim %s/%s (request cpu, device class %s, %s) and pod %s (container "
            "compute, pod claim cpu-dra, %s), read what its container sees, and delete both"
            % (namespace, claim, DEVICE_CLASS, shape, pod, kind))


def allocation_line(claim: str, cpus: int, results: list[K8sObject], pod: K8sObject, mode: str,
                    numa: str | None) -> str:
    node = ((pod or {}).get("spec") or {}).get("nodeName") or (results[0].get("pool") if results else "?")
    devices = [str(r.get("device")) for r in results]
    shown = ", ".join(devices[:4]) + (", ... (%d devices)" % len(devices) if len(devices) > 4 else "")
    first = results[0] if results else {}
    line = ("claim %s for %d CPUs allocated: node %s, device %s (driver %s, pool %s)"
            % (claim, cpus, node, shown or "?", first.get("driver", "?"), first.get("pool", "?")))
    if mode == "individual":
        line += (", kept on one NUMA node by matchAttribute %s (individual mode: the spec.resourceClaims escape "
                 "hatch, not a claim KubeVirt synthesizes)" % numa if numa
                 else ", with no NUMA constraint (the driver publishes no NUMA attribute on every device)")
    status = _pod_status(pod)
    return line + "; pod %s %s, QoS %s" % ((pod.get("metadata") or {}).get("name") if pod else "?",
                                           status.get("phase", "?"), status.get("qosClass", "?"))


def _metadata_text(readout: Readout, metadata_file: str) -> str:
    meta = readout.get("metadata")
    if meta is None:
        return ("no KEP-5304 device metadata at %s (not read by KubeVirt's CPU path; other DRA consumers read it)"
                % metadata_file)
    if meta.get("error"):
        return "KEP-5304 device metadata at %s unreadable" % metadata_file
    attrs = sorted(set(str(d.get("numa_attribute")) for d in meta.get("devices") or []))
    devices = ", ".join(str(d.get("name")) for d in meta.get("devices") or [])
    return ("KEP-5304 device metadata at %s: device %s, NUMA node %s (%s), %s CPUs allocated (dra.cpu/allocatedNumCPUs)"
            % (metadata_file, devices or "none", ",".join(meta.get("numa_nodes") or []) or "?", ", ".join(attrs),
               meta.get("allocated_cpus")))


def readout_lines(readout: Readout, metadata_file: str, pinned: dict[str, Any] | None,
                  device_at: Locality | None = None) -> list[str]:
    """What the container saw, as virt-launcher reads it, beside where the allocated device sits
    (``device_at``: its PCIe roots and standard NUMA node, as published) and the driver's pinning."""
    located = locality_text(device_at) if device_at else ""
    lines = ["in compute, what virt-launcher reads: %s%s" % (
        ", ".join(readout.get("dra_cpuset_lines") or []) or "no DRA_CPUSET_*",
        "; the allocated device sits at %s (%s, %s)" % (located, PCIE_ROOT, NUMA_NODE) if located else "")]
    cpus = readout.get("container_cpus") or "?"
    if readout.get("cpuset_compared") and not readout.get("problems"):
        where = readout.get("placement")
        inside = (" inside %s %s (CPUs %s)" % ("NUMA node" if where["group"] == "numanode" else "socket",
                                               where["id"], where["kernel_cpus"])
                  if where and where.get("kernel_cpus") else "")
        lines.append("in compute: runs on exactly the claimed CPUs %s (Cpus_allowed_list; cgroup %s)%s"
                     % (cpus, readout.get("cgroup_cpus") or "?", inside))
    else:
        lines.append("in compute: runs on CPUs %s (Cpus_allowed_list; cgroup %s, online %s)"
                     % (cpus, readout.get("cgroup_cpus") or "?", readout.get("online_cpus") or "?"))
    lines.append("in compute: " + _metadata_text(readout, metadata_file))
    pinned = pinned or {}
    if readout.get("pinned"):
        lines.append("its container pinned to CPUs %s (the driver's log on %s)" % (readout["pinned"], pinned.get("node")))
    elif pinned.get("failed"):
        lines.append("its CPUs not read from the driver's log: %s" % pinned.get("msg"))
    else:
        lines.append("its CPUs not in the driver's log (it logs them at --v=2 or more)")
    lines.extend(readout.get("notes") or [])
    return lines


def _pod_outcome(pod: Probe) -> str:
    said = " (scheduler: %s)" % pod["message"] if pod.get("message") else ""
    return "(%dm CPU): %s%s" % (pod.get("cpu_millis") or 0, pod.get("outcome") or "undecided", said)


def node_allocatable_lines(status: K8sObject | None, probe: Probe, control: Probe, cpus: int) -> list[str]:
    """KEP-5517: the pod's claim status, the probe pod's and the control pod's outcomes."""
    if status is None:
        first = "claim-only pod (KEP-5517): no nodeAllocatableResourceClaimStatuses entry for its claim"
    else:
        mapped = ", ".join("%s %s" % (m.get("name"), m.get("quantity")) for m in status.get("mapping") or [])
        first = ("claim-only pod (KEP-5517): status.nodeAllocatableResourceClaimStatuses names claim %s, "
                 "containers %s, mapping %s" % (status.get("resourceClaimName"), ", ".join(status.get("containers") or []),
                                                mapped or "none"))
    lines = [first]
    if probe.get("outcome") == UNSCHEDULABLE:
        lines.append("the claim's %d CPUs are accounted: a pod asking for %dm CPU, one CPU more than the node has "
                     "left beside the claim, stays Unschedulable (scheduler: %s)"
                     % (cpus, probe.get("cpu_millis") or 0, probe.get("message")))
    else:
        lines.append("accounting probe %s" % _pod_outcome(probe))
    if control.get("outcome") == SCHEDULED:
        lines.append("and no more than them: a control pod asking for %dm CPU, one CPU less, was scheduled"
                     % (control.get("cpu_millis") or 0))
    else:
        lines.append("control pod %s" % _pod_outcome(control))
    return lines


def scheduler_message(pod: K8sObject) -> str:
    for condition in _pod_status(pod).get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("message"):
            return str(condition["message"])
    return "no message"


def not_allocated(namespace: str, name: str, cpus: int, timeout: int, pod: K8sObject) -> str:
    return ("ResourceClaim %s/%s (%s, %d CPUs) was not allocated within %ds. Scheduler: %s"
            % (namespace, name, DEVICE_CLASS, cpus, timeout, scheduler_message(pod)))


def _container_state(pod: K8sObject) -> str:
    for status in _pod_status(pod).get("containerStatuses") or []:
        if status.get("name") != CONTAINER:
            continue
        state = status.get("state") or {}
        for kind in ("waiting", "terminated"):
            if kind in state:
                detail = state[kind] or {}
                text = str(detail.get("reason") or kind)
                if detail.get("message"):
                    text += ": %s" % detail["message"]
                if kind == "terminated":
                    text += " (exit code %s)" % detail.get("exitCode")
                return text
        if "running" in state:
            return "running"
    return "no state"


def not_started(namespace: str, name: str, pod: K8sObject, timeout: int, events: list[K8sObject]) -> str:
    phase = _pod_status(pod).get("phase") or "unknown"
    node = ((pod or {}).get("spec") or {}).get("nodeName") or "?"
    recent = sorted(events, key=lambda e: str((e.get("metadata") or {}).get("creationTimestamp") or ""),
                    reverse=True)
    texts = [str(e.get("message")) for e in recent if e.get("message")][:5]
    return ("the claim was allocated, but pod %s/%s on node %s is %s after %ss, not Running with its readout "
            "(the kubelet prepares the claim through the driver, then the runtime starts the container). "
            "Container: %s. Events: %s"
            % (namespace, name, node, phase, timeout, _container_state(pod), " | ".join(texts) or "none"))
