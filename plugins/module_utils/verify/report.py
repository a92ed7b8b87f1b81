# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""verify's words (pure; no cluster): the report lines the role prints and the failure messages.

Owns: the allocation line (node, devices, pool, the NUMA constraint), the readout lines (the metadata
at the path KubeVirt reads, the container's cpuset, ``DRA_CPUSET_*``, beside the driver's pinning), the
check-mode line, and the messages of a claim the scheduler did not allocate and of a pod that did not
start (its container's state and the pod's last events).
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from typing import Any

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.verify.manifests import CONTAINER, DEVICE_CLASS


def _pod_status(pod: dict[str, Any]) -> dict[str, Any]:
    return (pod or {}).get("status") or {}


def check_mode_line(namespace: str, name: str, cpus: int, mode: str, numa: str | None) -> str:
    shape = ("%d CPU devices on one NUMA node (matchAttribute %s)" % (cpus, numa) if mode == "individual" and numa
             else "%d CPU devices" % cpus if mode == "individual" else "%d CPUs of one device" % cpus)
    return ("check mode: would create ResourceClaim %s/%s for %s (device class %s) and a pod using it, read "
            "what its container sees, and delete both" % (namespace, name, shape, DEVICE_CLASS))


def allocation_line(cpus: int, results: list[dict[str, Any]], pod: dict[str, Any], mode: str,
                    numa: str | None) -> str:
    node = ((pod or {}).get("spec") or {}).get("nodeName") or (results[0].get("pool") if results else "?")
    devices = [str(r.get("device")) for r in results]
    shown = ", ".join(devices[:4]) + (", ... (%d devices)" % len(devices) if len(devices) > 4 else "")
    first = results[0] if results else {}
    line = ("claim for %d CPUs allocated: node %s, device %s (driver %s, pool %s)"
            % (cpus, node, shown or "?", first.get("driver", "?"), first.get("pool", "?")))
    if mode == "individual":
        line += (", kept on one NUMA node by matchAttribute %s" % numa if numa
                 else ", with no NUMA constraint (the driver publishes no NUMA attribute on every device)")
    status = _pod_status(pod)
    return line + "; test pod %s, QoS %s" % (status.get("phase", "?"), status.get("qosClass", "?"))


def readout_lines(readout: dict[str, Any], metadata_file: str, pinned: dict[str, Any] | None) -> list[str]:
    """What the container saw, beside the driver's pinning."""
    meta = readout.get("metadata")
    if meta is None:
        meta_text = "no device metadata at %s" % metadata_file
    elif meta.get("error"):
        meta_text = "device metadata at %s unreadable" % metadata_file
    else:
        attrs = sorted(set(str(d.get("numa_attribute")) for d in meta.get("devices") or []))
        meta_text = ("device metadata at %s: %d device(s), NUMA node %s (%s), %s CPUs allocated"
                     % (metadata_file, len(meta.get("devices") or []), ",".join(meta.get("numa_nodes") or []) or "?",
                        ", ".join(attrs), meta.get("allocated_cpus")))
    lines = ["in the container: " + meta_text]
    lines.append("in the container: runs on CPUs %s (Cpus_allowed_list; cgroup %s, online %s); from the driver %s"
                 % (readout.get("container_cpus") or "?", readout.get("cgroup_cpus") or "?",
                    readout.get("online_cpus") or "?",
                    ", ".join(readout.get("dra_cpuset_lines") or []) or "no DRA_CPUSET_*"))
    pinned = pinned or {}
    if readout.get("pinned"):
        lines.append("its container pinned to CPUs %s (the driver's log on %s)" % (readout["pinned"], pinned.get("node")))
    elif pinned.get("failed"):
        lines.append("its CPUs not read from the driver's log: %s" % pinned.get("msg"))
    else:
        lines.append("its CPUs not in the driver's log (it logs them at --v=2 or more)")
    lines.extend(readout.get("notes") or [])
    return lines


def scheduler_message(pod: dict[str, Any]) -> str:
    for condition in _pod_status(pod).get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("message"):
            return str(condition["message"])
    return "no message"


def not_allocated(namespace: str, name: str, cpus: int, timeout: int, pod: dict[str, Any]) -> str:
    return ("ResourceClaim %s/%s (%s, %d CPUs) was not allocated within %ds. Scheduler: %s"
            % (namespace, name, DEVICE_CLASS, cpus, timeout, scheduler_message(pod)))


def _container_state(pod: dict[str, Any]) -> str:
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


def not_started(namespace: str, name: str, pod: dict[str, Any], timeout: int, events: list[dict[str, Any]]) -> str:
    phase = _pod_status(pod).get("phase") or "unknown"
    node = ((pod or {}).get("spec") or {}).get("nodeName") or "?"
    recent = sorted(events, key=lambda e: str((e.get("metadata") or {}).get("creationTimestamp") or ""),
                    reverse=True)
    texts = [str(e.get("message")) for e in recent if e.get("message")][:5]
    return ("the claim was allocated, but pod %s/%s on node %s is %s after %ss, not Running with its readout "
            "(the kubelet prepares the claim through the driver, then the runtime starts the container). "
            "Container: %s. Events: %s"
            % (namespace, name, node, phase, timeout, _container_state(pod), " | ".join(texts) or "none"))
