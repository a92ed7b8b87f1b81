# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""KubeVirt's Beta path (KEP-5517, node-allocatable mappings): is the claim's CPU count really accounted?

Owns, for a claim-only launcher pod: ``claim_status`` (the pod's
``status.nodeAllocatableResourceClaimStatuses`` names its claim, container ``compute`` and a ``cpu``
mapping of the claim's CPUs), the probe and its control (two pods bound to the claim's node by affinity:
the probe asks for one CPU more than the node has left beside the claim and must stay Unschedulable for
insufficient CPU, as the scheduler's condition or event says; the control asks for one CPU less, exactly
what is left, and must be scheduled: together the scheduler counts more than ``cpus - 1`` and at most
``cpus`` CPUs for the claim), with their shapes ``Probe`` and ``NodeAllocatableCheck``.
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
# the scheduler's NodeResourcesFit reason (k8s.io/kubernetes pkg/scheduler/framework/plugins/noderesources/
# fit.go: fmt.Sprintf("Insufficient %v", resourceName)), in the PodScheduled condition and FailedScheduling event
INSUFFICIENT_CPU = "Insufficient cpu"
UNSCHEDULABLE = "unschedulable"            # refused for insufficient CPU
UNSCHEDULABLE_OTHER = "unschedulable, not for insufficient CPU"
SCHEDULED = "scheduled"


class Probe(TypedDict):
    """A probe or control pod: its name, the CPU it asks for, what became of it (None: undecided; ``not
    run: ...``) and the scheduler's words (its PodScheduled condition's message or FailedScheduling event)."""

    name: str
    cpu_millis: int
    outcome: Optional[str]
    message: Optional[str]


class NodeAllocatableCheck(TypedDict):
    """verify's ``node_allocatable``: the pod's status entry for the claim (None: none), the probe and its
    control."""

    claim_status: Optional[K8sObject]
    probe: Probe
    control: Probe


def probe_name(vmi: str) -> str:
    return "%s-probe" % vmi


def control_name(vmi: str) -> str:
    return "%s-probe-control" % vmi


def probe_sizes(free: int, cpus: int) -> tuple[int, int]:
    """``(probe, control)`` millicpus for a node with ``free`` millicpus left when the claim is not counted:
    the probe one CPU more than what is left beside the claim's ``cpus``, the control exactly that."""
    control = free - cpus * 1000
    return control + 1000, control


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


def probe_outcome(pod: K8sObject, events: list[str] | None = None) -> tuple[str | None, str | None]:
    """``(outcome, the scheduler's message)``: SCHEDULED, UNSCHEDULABLE (its PodScheduled condition or a
    FailedScheduling event says INSUFFICIENT_CPU), UNSCHEDULABLE_OTHER, or None (not decided yet)."""
    if ((pod or {}).get("spec") or {}).get("nodeName"):
        return SCHEDULED, None
    for condition in ((pod or {}).get("status") or {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False" \
                and condition.get("reason") == "Unschedulable":
            said = [str(m) for m in [condition.get("message")] + list(events or []) if m]
            cpu = next((m for m in said if INSUFFICIENT_CPU in m), None)
            if cpu is not None:
                return UNSCHEDULABLE, cpu
            return UNSCHEDULABLE_OTHER, "; ".join(said) or "no message"
    return None, None


def probe_problem(probe: Probe, node: str, cpus: int) -> str | None:
    """None when the probe (one CPU more than the node has beside the claim) was refused for lack of CPU."""
    outcome, millis = probe["outcome"], probe["cpu_millis"]
    if outcome == UNSCHEDULABLE:
        return None
    if outcome == SCHEDULED:
        return ("a pod asking for %dm CPU, one CPU more than node %s has left beside the claim's %d CPUs, was "
                "scheduled beside the claim: the scheduler does not account all the claim's CPUs (its "
                "DRANodeAllocatableResources feature gate is off?)" % (millis, node, cpus))
    if outcome == UNSCHEDULABLE_OTHER:
        return ("a pod asking for %dm CPU on node %s is Unschedulable, but not for insufficient CPU (scheduler: %s): "
                "that does not show the claim's CPUs are accounted" % (millis, node, probe.get("message")))
    return ("a pod asking for %dm CPU on node %s was neither scheduled nor refused by the scheduler in time"
            % (millis, node))


def control_problem(control: Probe, node: str, cpus: int) -> str | None:
    """None when the control (what the node has left beside the claim) was scheduled, or was not run."""
    outcome, millis = control["outcome"], control["cpu_millis"]
    if outcome == SCHEDULED or str(outcome).startswith("not run"):
        return None
    if outcome == UNSCHEDULABLE:
        return ("a pod asking for %dm CPU, what node %s has left beside the claim's %d CPUs, was refused for "
                "insufficient CPU (scheduler: %s): the scheduler counts more than the claim's CPUs"
                % (millis, node, cpus, control.get("message")))
    if outcome == UNSCHEDULABLE_OTHER:
        return ("the control pod asking for %dm CPU on node %s is Unschedulable (scheduler: %s): the probe's "
                "refusal bounds the accounting from below only" % (millis, node, control.get("message")))
    return ("the control pod asking for %dm CPU on node %s was neither scheduled nor refused by the scheduler in "
            "time" % (millis, node))


def too_little_left(free: int, node: str, cpus: int) -> str:
    return ("node %s has %dm CPU left when the claim is not counted, less than the claim's %d CPUs beside which "
            "its pod was scheduled: the scheduler did not account the claim's CPUs" % (node, free, cpus))
