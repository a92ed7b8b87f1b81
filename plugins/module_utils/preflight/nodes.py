# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""Preflight rules per node, and which nodes the driver DaemonSet will run on.

Owns: the per-node checks (container runtime, kubelet ``cpuManagerPolicy``
from ``/configz``, reserved CPU ids against the node's capacity), the
placement model (the chart's nodeSelector and tolerations plus the DaemonSet
controller's own tolerations) and the plan that keeps the driver off
incompatible nodes (a ``kubernetes.io/hostname NotIn`` affinity). Pure
functions, no I/O; findings are built with rules.finding.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import json
from collections.abc import Iterable
from typing import Any

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.common.cpuset import format_cpuset
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.types import K8sObject
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.preflight.types import (
    ExcludedNode,
    Finding,
    NodeAffinity,
    SkippedNode,
    Toleration,
)
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.preflight.rules import (
    ERROR,
    NODE_CHECKS,
    NODE_READY,
    OK,
    WARNING,
    finding,
)
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.common.versions import (
    parse_runtime_version,
    version_at_least,
)


# Minimum container runtimes (NRI + CDI) per upstream installation docs.
RUNTIME_MINIMUMS = {"cri-o": "1.30", "containerd": "2.0"}

# The chart's default tolerations.
CHART_TOLERATIONS: list[Toleration] = [{"operator": "Exists", "effect": "NoSchedule"}]

# Tolerations the DaemonSet controller adds to every daemon pod (hostNetwork pods
# also get network-unavailable).
DAEMONSET_TOLERATIONS: list[Toleration] = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/network-unavailable", "operator": "Exists", "effect": "NoSchedule"},
]

HOSTNAME_LABEL = "kubernetes.io/hostname"


# --------------------------------------------------------------------------- per node


def check_container_runtime(node: str, runtime_version: str | None) -> list[Finding]:
    """CRI-O >= 1.30 or containerd >= 2.0 (NRI and CDI)."""
    required = "cri-o >= %s or containerd >= %s" % (RUNTIME_MINIMUMS["cri-o"], RUNTIME_MINIMUMS["containerd"])
    name, version = parse_runtime_version(runtime_version)
    observed = runtime_version or "unknown"
    fix = "run the node on CRI-O >= 1.30 or containerd >= 2.0 with NRI and CDI enabled"
    if name not in RUNTIME_MINIMUMS:
        return [finding("container_runtime", ERROR,
                        "node %s runs container runtime %s, which the driver does not support"
                        % (node, observed),
                        node=node, observed=observed, required=required, fix=fix)]
    if version is None:
        return [finding("container_runtime", ERROR,
                        "node %s: cannot read the version of %s" % (node, observed),
                        node=node, observed=observed, required=required, fix=fix)]
    minimum = RUNTIME_MINIMUMS[name]
    if version_at_least(version, minimum):
        return [finding("container_runtime", OK, "node %s runs %s" % (node, observed),
                        node=node, observed=observed, required=required)]
    return [finding("container_runtime", ERROR,
                    "node %s runs %s, older than %s %s" % (node, observed, name, minimum),
                    node=node, observed=observed, required=required, fix=fix)]


def kubelet_config(configz: str | bytes | K8sObject) -> K8sObject:
    """The KubeletConfiguration in a kubelet ``/configz`` document (bytes, str or dict). Raises
    ValueError when the document is not a kubelet configz."""
    if isinstance(configz, bytes):
        configz = configz.decode("utf-8", "replace")
    if isinstance(configz, str):
        configz = json.loads(configz)
    if not isinstance(configz, dict):
        raise ValueError("configz is not a JSON object")
    config = configz.get("kubeletconfig")
    if config is None:
        config = configz.get("kubeletConfig")
    if not isinstance(config, dict):
        raise ValueError("configz has no kubeletconfig object")
    return config


def parse_configz(configz: str | bytes | K8sObject) -> str:
    """``cpuManagerPolicy`` from a kubelet ``/configz`` document (str or dict).

    A missing field means the kubelet default ``none``. Raises ValueError when
    the document is not a kubelet configz.
    """
    return kubelet_config(configz).get("cpuManagerPolicy") or "none"


def check_cpu_manager_policy(node: str, configz: K8sObject | str | None,
                             error: str | None = None) -> list[Finding]:
    """The kubelet's ``cpuManagerPolicy`` must be ``none``.

    ``configz`` None (``error`` the reason) or unparseable: a warning.
    """
    if configz is not None:
        try:
            policy = parse_configz(configz)
        except (ValueError, TypeError) as exc:
            configz, error = None, "unexpected /configz content: %s" % exc
    if configz is None:
        return [finding(
            "cpu_manager_policy", WARNING,
            "node %s: could not read the kubelet configuration%s; cpuManagerPolicy unknown"
            % (node, ": %s" % error if error else ""),
            node=node, observed="unknown", required="none",
            fix="grant 'get' on nodes/proxy to this user, or check the kubelet's --cpu-manager-policy "
                "by hand; set check_configz false to skip")]
    if policy == "none":
        return [finding("cpu_manager_policy", OK, "node %s: cpuManagerPolicy none" % node,
                        node=node, observed=policy, required="none")]
    return [finding(
        "cpu_manager_policy", ERROR,
        "node %s: kubelet cpuManagerPolicy is %s; the CPU manager and the CPU DRA driver cannot "
        "share a node" % (node, policy),
        node=node, observed=policy, required="none",
        fix="run the kubelet with cpuManagerPolicy none (kubevirtci starts worker nodes with "
            "--cpu-manager-policy=static), or keep the driver off the node with "
            "dra_cpu_skip_incompatible_nodes: true")]


def ready_condition(node_obj: K8sObject) -> K8sObject:
    """The node's ``Ready`` condition (a dict; {} when it has none)."""
    for cond in ((node_obj or {}).get("status") or {}).get("conditions") or []:
        if isinstance(cond, dict) and cond.get("type") == "Ready":
            return cond
    return {}


def is_ready(node_obj: K8sObject) -> bool:
    """True when the node's ``Ready`` condition is ``True`` (its kubelet reports and is healthy); the
    same for a pod (the topology stage's rollout: its containers are ready)."""
    return str(ready_condition(node_obj).get("status")) == "True"


def check_node_ready(node: str, node_obj: K8sObject) -> list[Finding]:
    """A warning (the install goes on) for a node whose ``Ready`` condition is not ``True``; nothing
    for a Ready node."""
    cond = ready_condition(node_obj)
    status = str(cond.get("status") or "unknown (no Ready condition)")
    why = ", ".join(x for x in (cond.get("reason"), cond.get("message")) if x)
    since = cond.get("lastTransitionTime")
    return [finding(
        NODE_READY, WARNING,
        "node %s is not Ready (Ready=%s%s)%s: the driver cannot start or publish there and no pod "
        "with a claim can start there; the pool it published before stays in the table, counted in no "
        "figure"
        % (node, status, ": %s" % why if why else "", " since %s" % since if since else ""),
        node=node, observed="Ready=%s" % status, required="Ready=True",
        fix="start the node's kubelet again (its service status and logs on the node), or remove the "
            "node from the cluster (kubectl delete node %s), then re-run" % node)]


def node_cpu_count(node_obj: K8sObject) -> int | None:
    """CPU count from ``status.capacity.cpu`` of a Node (int) or None."""
    capacity = ((node_obj or {}).get("status") or {}).get("capacity") or {}
    value = capacity.get("cpu")
    if value is None:
        return None
    text = str(value).strip()
    try:
        if text.endswith("m"):
            return int(text[:-1]) // 1000
        return int(float(text))
    except ValueError:
        return None


def check_reserved_cpus(node: str, reserved: Iterable[int | str] | None, cpu_count: int | None) -> list[Finding]:
    """Every reserved CPU id must exist on the node (ids < capacity cpu count),
    and at least one CPU must be left for the driver."""
    ids = sorted(set(int(c) for c in reserved or ()))
    observed = "%s CPUs" % cpu_count if cpu_count is not None else "unknown"
    required = "reserved CPUs %s present" % (format_cpuset(ids) or "(none)")
    if not ids:
        return [finding("reserved_cpus", OK, "node %s: no reserved CPUs" % node,
                        node=node, observed=observed, required=required)]
    if cpu_count is None:
        return [finding("reserved_cpus", WARNING,
                        "node %s does not report its CPU capacity; cannot check reserved CPUs %s"
                        % (node, format_cpuset(ids)),
                        node=node, observed=observed, required=required, fix="")]
    missing = [c for c in ids if c >= cpu_count]
    fix = "set dra_cpu_reserved_cpus to CPU ids between 0 and %d on this node" % (cpu_count - 1)
    if missing:
        return [finding("reserved_cpus", ERROR,
                        "node %s has %d CPUs (0-%d); reserved CPUs %s do not exist"
                        % (node, cpu_count, cpu_count - 1, format_cpuset(missing)),
                        node=node, observed=observed, required=required, fix=fix)]
    if len(ids) >= cpu_count:
        return [finding("reserved_cpus", ERROR,
                        "node %s: all %d CPUs are reserved, the driver would publish nothing"
                        % (node, cpu_count),
                        node=node, observed=observed, required="at least one unreserved CPU", fix=fix)]
    return [finding("reserved_cpus", OK,
                    "node %s: reserved CPUs %s of %d" % (node, format_cpuset(ids), cpu_count),
                    node=node, observed=observed, required=required)]


# --------------------------------------------------------------------------- placement


def _tolerates(toleration: Toleration, taint: K8sObject) -> bool:
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    operator = toleration.get("operator") or "Equal"
    if not key:
        return operator == "Exists"
    if key != taint.get("key"):
        return False
    if operator == "Exists":
        return True
    return (toleration.get("value") or "") == (taint.get("value") or "")


def untolerated_taints(node_obj: K8sObject, tolerations: list[Toleration]) -> list[K8sObject]:
    """NoSchedule/NoExecute taints of a node that ``tolerations`` (plus the
    DaemonSet controller's own) do not tolerate."""
    all_tolerations = list(tolerations or []) + DAEMONSET_TOLERATIONS
    taints = ((node_obj or {}).get("spec") or {}).get("taints") or []
    out = []
    for taint in taints:
        if taint.get("effect") not in ("NoSchedule", "NoExecute"):
            continue
        if not any(_tolerates(t, taint) for t in all_tolerations):
            out.append(taint)
    return out


def _taint_text(taint: K8sObject) -> str:
    text = taint.get("key") or ""
    if taint.get("value"):
        text += "=" + taint["value"]
    return "%s:%s" % (text, taint.get("effect"))


def node_name(node_obj: K8sObject | None) -> str | None:
    return ((node_obj or {}).get("metadata") or {}).get("name")


def eligible_nodes(nodes: list[K8sObject], node_selector: dict[str, str] | None = None,
                   tolerations: list[Toleration] | None = None) -> tuple[list[str], list[ExcludedNode]]:
    """Which nodes the driver DaemonSet will run on.

    Returns ``(eligible, excluded)``: ``eligible`` a sorted list of node
    names; ``excluded`` a list of ``{node, reason}``.
    """
    node_selector = node_selector or {}
    tolerations = CHART_TOLERATIONS if tolerations is None else tolerations
    eligible: list[str] = []
    excluded: list[ExcludedNode] = []
    for obj in sorted(nodes or [], key=lambda n: node_name(n) or ""):
        name: Any = node_name(obj)  # a Node always has a name
        labels = (obj.get("metadata") or {}).get("labels") or {}
        mismatched = ["%s=%s" % (k, v) for k, v in sorted(node_selector.items())
                      if labels.get(k) != str(v)]
        if mismatched:
            excluded.append({"node": name, "reason": "nodeSelector %s does not match" % ", ".join(mismatched)})
            continue
        taints = untolerated_taints(obj, tolerations)
        if taints:
            excluded.append({"node": name, "reason": "taint %s not tolerated"
                             % ", ".join(_taint_text(t) for t in taints)})
            continue
        eligible.append(name)
    return eligible, excluded


def check_eligible_nodes(eligible: list[str], excluded: list[ExcludedNode]) -> list[Finding]:
    """At least one node must be able to run the driver."""
    observed = "%d eligible, %d excluded" % (len(eligible), len(excluded))
    details = "; ".join("%s: %s" % (e["node"], e["reason"]) for e in excluded)
    if not eligible:
        return [finding(
            "eligible_nodes", ERROR,
            "no node can run the driver DaemonSet%s" % (" (%s)" % details if details else ""),
            observed=observed, required="at least one node",
            fix="adjust the chart's nodeSelector/tolerations (dra_cpu_chart_values) or the node taints")]
    message = "the driver will run on %s" % ", ".join(eligible)
    if details:
        message += "; not on %s" % details
    return [finding("eligible_nodes", OK, message, observed=observed, required="at least one node")]


def node_affinity(excluded_hostnames: list[str]) -> NodeAffinity:
    """A chart ``affinity`` value keeping the driver off the given hostnames ({} for none)."""
    values = sorted(set(excluded_hostnames or []))
    if not values:
        return {}
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{
                    "matchExpressions": [{
                        "key": HOSTNAME_LABEL,
                        "operator": "NotIn",
                        "values": values,
                    }],
                }],
            },
        },
    }


def plan_skip(findings: list[Finding], skip_incompatible_nodes: bool, supports_affinity: bool,
              eligible: list[str],
              hostnames: dict[str, str] | None = None) -> tuple[list[Finding], list[SkippedNode], NodeAffinity]:
    """``(findings, skipped_nodes, affinity)``: with ``skip_incompatible_nodes``, per-node errors
    become skipped nodes (``hostnames``: node -> its ``kubernetes.io/hostname``), unless the chart
    takes no affinity (one more error) or no node would be left (an ``eligible_nodes`` error)."""
    hostnames = hostnames or {}
    if not skip_incompatible_nodes:
        return list(findings), [], {}
    reasons: dict[str, list[str]] = {}
    for item in findings:
        if item["severity"] == ERROR and item["node"] and item["check"] in NODE_CHECKS:
            reasons.setdefault(item["node"], [])
            if item["check"] not in reasons[item["node"]]:
                reasons[item["node"]].append(item["check"])
    if not reasons:
        return list(findings), [], {}
    skipped: list[SkippedNode] = [{"node": node, "reasons": reasons[node]} for node in sorted(reasons)]
    if not supports_affinity:
        extra = finding(
            "eligible_nodes", ERROR,
            "cannot keep the driver off %s: this chart version has no affinity value "
            "(node affinity needs chart >= 0.3.0)" % ", ".join(sorted(reasons)),
            observed="chart without affinity", required="chart >= 0.3.0",
            fix="use chart 0.3.0 or newer, or fix the nodes")
        return list(findings) + [extra], [], {}
    out = []
    for item in findings:
        item = item.copy()
        if item["severity"] == ERROR and item["node"] in reasons and item["check"] in NODE_CHECKS:
            item["severity"] = WARNING
            item["message"] += " (node skipped: the driver will not run there)"
        out.append(item)
    remaining = [n for n in eligible if n not in reasons]
    if not remaining:
        out.append(finding(
            "eligible_nodes", ERROR,
            "every eligible node is incompatible (%s); nothing left to run the driver on"
            % ", ".join(sorted(reasons)),
            observed="0 compatible nodes", required="at least one node",
            fix="fix at least one node (see the findings above)"))
    affinity = node_affinity([hostnames.get(n, n) for n in reasons])
    return out, skipped, affinity
