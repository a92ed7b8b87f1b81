# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""KubeVirt's Beta path (KEP-5517, node-allocatable mappings): is the claim's CPU count really accounted?

Owns, for a claim-only launcher pod: ``claim_status`` (the pod's
``status.nodeAllocatableResourceClaimStatuses`` names its claim, container ``compute`` and a ``cpu``
mapping of the claim's CPUs) and the probe (a pod on the same node asking for the CPU the node has left
without the claim must stay Unschedulable), with their shapes ``Probe`` and ``NodeAllocatableCheck``.
Why: docs/internals.md, "Why the preflight, the topology and verify read what they read".
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from typing import Any, Optional, TypedDict

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.types import K8sObject
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.preflight.types import Toleration

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.fact import TopologyError, parse_quantity
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.verify.manifests import (
    CONTAINER,
    MEMORY,
    POD_CLAIM,
    verify_pod,
)

DONE_PHASES = ("Succeeded", "Failed")


class Probe(TypedDict):
    """The accounting probe: its pod's name, the CPU it asks for, and what became of it (None: undecided)."""

    name: str
    cpu_millis: int
    outcome: Optional[str]


class NodeAllocatableCheck(TypedDict):
    """verify's ``node_allocatable``: the pod's status entry for the claim (None: none) and the probe."""

    claim_status: Optional[K8sObject]
    probe: Probe


def probe_name(vmi: str) -> str:
    return "%s-probe" % vmi


def _millis(value: Any) -> int:
    try:
        return int(round(float(parse_quantity(value)) * 1000))
    except TopologyError:
        return 0


def claim_status(pod: K8sObject, claim: str, cpus: int) -> tuple[K8sObject | None, list[str]]:
    """``(the pod's status entry for the claim, problems)``; ``claim`` is the ResourceClaim's name (the pod's
    reference ``cpu-dra`` is accepted too: the field names "the resource claim referenced by the pod")."""
    entries = ((pod or {}).get("status") or {}).get("nodeAllocatableResourceClaimStatuses") or []
    entry = next((e for e in entries if isinstance(e, dict) and e.get("resourceClaimName") in (claim, POD_CLAIM)), None)
    if entry is None:
        return None, ["the pod's status.nodeAllocatableResourceClaimStatuses names no claim %s (it has: %s): the "
                      "scheduler did not account the claim's CPUs (DRANodeAllocatableResources off in the scheduler?)"
                      % (claim, ", ".join(str(e.get("resourceClaimName")) for e in entries if isinstance(e, dict))
                         or "none")]
    problems = []
    if CONTAINER not in (entry.get("containers") or []):
        problems.append("the claim's node-allocatable status names containers %s, not %s"
                        % (entry.get("containers") or [], CONTAINER))
    mapped = dict((m.get("name"), m.get("quantity")) for m in (entry.get("mapping") or []) if isinstance(m, dict))
    if _millis(mapped.get("cpu")) != cpus * 1000:
        problems.append("the claim's node-allocatable status maps cpu %s, the claim holds %d CPUs"
                        % (mapped.get("cpu"), cpus))
    return entry, problems


def _requests_millis(pod: K8sObject) -> int:
    """A pod's effective CPU request: its containers' sum, or its largest init container's, plus overhead."""
    spec = (pod or {}).get("spec") or {}

    def cpu(container: K8sObject) -> int:
        return _millis((((container or {}).get("resources") or {}).get("requests") or {}).get("cpu") or 0)

    total = sum(cpu(c) for c in spec.get("containers") or [])
    init = max([cpu(c) for c in spec.get("initContainers") or []] or [0])
    return max(total, init) + _millis((spec.get("overhead") or {}).get("cpu") or 0)


def free_millis(node: K8sObject, pods: list[K8sObject]) -> int:
    """The node's allocatable CPU minus the requests of its pods that still hold it (the claim not counted)."""
    allocatable = _millis((((node or {}).get("status") or {}).get("allocatable") or {}).get("cpu") or 0)
    used = sum(_requests_millis(p) for p in pods if ((p.get("status") or {}).get("phase") not in DONE_PHASES))
    return allocatable - used


def probe_manifest(name: str, namespace: str, node: str, millis: int, image: str,
                   tolerations: list[Toleration] | None = None) -> K8sObject:
    """A pod that asks for ``millis`` of CPU on ``node`` (by affinity: the scheduler decides) and sleeps."""
    amount = {"cpu": "%dm" % millis, "memory": MEMORY}
    probe = {"name": "probe", "image": image, "command": ["sleep", "86400"],
             "resources": {"requests": dict(amount), "limits": dict(amount)}}
    return verify_pod(name, namespace, probe, tolerations, affinity={"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}}})


def probe_outcome(pod: K8sObject) -> str | None:
    """``unschedulable``, ``scheduled`` or None (not decided yet)."""
    if ((pod or {}).get("spec") or {}).get("nodeName"):
        return "scheduled"
    for condition in ((pod or {}).get("status") or {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False" \
                and condition.get("reason") == "Unschedulable":
            return "unschedulable"
    return None


def probe_problem(outcome: str | None, node: str, millis: int, cpus: int) -> str | None:
    if outcome == "unschedulable":
        return None
    if outcome == "scheduled":
        return ("a pod asking for %dm CPU, what node %s has left when the claim's %d CPUs are not counted, was "
                "scheduled beside the claim: the scheduler does not account the claim's CPUs (its "
                "DRANodeAllocatableResources feature gate is off?)" % (millis, node, cpus))
    return ("a pod asking for %dm CPU on node %s was neither scheduled nor refused by the scheduler in time"
            % (millis, node))
