# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""Preflight rules: one pure function per check, each returning findings.

A finding is a dict ``{check, severity, node, observed, required, message,
fix}`` with ``severity`` one of ``error``, ``warning``, ``ok`` and ``node``
None for cluster-wide checks. The module gathers the raw data (version,
discovery, metrics text, configz JSON, Node objects) and calls these.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.cpuset import format_cpuset
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.versions import (
    VersionError,
    parse_kube_version,
    parse_version,
    version_at_least,
    parse_runtime_version,
)

ERROR = "error"
WARNING = "warning"
OK = "ok"

CHECKS = (
    "server_version",
    "resource_api",
    "feature_gate",
    "container_runtime",
    "cpu_manager_policy",
    "reserved_cpus",
    "eligible_nodes",
)
NODE_CHECKS = ("container_runtime", "cpu_manager_policy", "reserved_cpus")

DEFAULT_MIN_VERSION = "1.36"
DEFAULT_FEATURE_GATE = "DRAConsumableCapacity"
RESOURCE_GROUP = "resource.k8s.io"
RESOURCE_VERSION = "v1"

# Minimum container runtimes (NRI + CDI) per upstream installation docs.
RUNTIME_MINIMUMS = {"cri-o": "1.30", "containerd": "2.0"}

# The chart's default tolerations.
CHART_TOLERATIONS = [{"operator": "Exists", "effect": "NoSchedule"}]

# Tolerations the DaemonSet controller adds to every daemon pod (hostNetwork pods
# also get network-unavailable).
DAEMONSET_TOLERATIONS = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/network-unavailable", "operator": "Exists", "effect": "NoSchedule"},
]

HOSTNAME_LABEL = "kubernetes.io/hostname"


def finding(check, severity, message, node=None, observed=None, required=None, fix=""):
    """Build one finding dict."""
    return {
        "check": check,
        "severity": severity,
        "node": node,
        "observed": observed,
        "required": required,
        "message": message,
        "fix": fix,
    }


# --------------------------------------------------------------------------- feature gates


_METRIC_LINE = re.compile(
    r"^kubernetes_feature_enabled\{(?P<labels>[^}]*)\}\s+(?P<value>[-+0-9.eE]+|NaN)(?:\s+\d+)?\s*$"
)
_LABEL = re.compile(r'(?P<key>[A-Za-z_][A-Za-z0-9_]*)="(?P<value>(?:[^"\\]|\\.)*)"')


def parse_feature_gates(metrics_text):
    """Parse the ``kubernetes_feature_enabled`` samples of a Prometheus text.

    Returns ``{gate_name: {"enabled": bool, "stage": str}}``; an empty dict
    when the metric family is absent.
    """
    gates = {}
    if not metrics_text:
        return gates
    if isinstance(metrics_text, bytes):
        metrics_text = metrics_text.decode("utf-8", "replace")
    for line in metrics_text.splitlines():
        line = line.strip()
        if not line.startswith("kubernetes_feature_enabled{"):
            continue
        match = _METRIC_LINE.match(line)
        if not match:
            continue
        labels = dict((m.group("key"), m.group("value")) for m in _LABEL.finditer(match.group("labels")))
        name = labels.get("name")
        if not name:
            continue
        try:
            enabled = float(match.group("value")) == 1.0
        except ValueError:
            enabled = False
        gates[name] = {"enabled": enabled, "stage": labels.get("stage", "")}
    return gates


def gate_enabled(metrics_text, gate=DEFAULT_FEATURE_GATE):
    """True/False when the metric shows the gate, None when it cannot tell."""
    gates = parse_feature_gates(metrics_text)
    if gate not in gates:
        return None
    return gates[gate]["enabled"]


def check_feature_gate(metrics_text, gate=DEFAULT_FEATURE_GATE, error=None):
    """``gate`` must be enabled on the API server (``kubernetes_feature_enabled``).

    ``metrics_text`` None (with ``error`` the reason) means the metrics could
    not be read: a warning, never a pass.
    """
    required = "%s enabled" % gate
    fix = ("enable the feature gate %s on kube-apiserver, kube-scheduler, kube-controller-manager "
           "and kubelet (--feature-gates=%s=true; on by default from Kubernetes 1.36)" % (gate, gate))
    if metrics_text is None:
        return [finding(
            "feature_gate", WARNING,
            "could not read the API server metrics to confirm %s is enabled%s"
            % (gate, ": %s" % error if error else ""),
            observed="unknown", required=required,
            fix="grant 'get' on the non-resource URL /metrics to this user, or check the gate by hand")]
    gates = parse_feature_gates(metrics_text)
    if not gates:
        return [finding(
            "feature_gate", WARNING,
            "the API server metrics have no kubernetes_feature_enabled samples; cannot confirm %s" % gate,
            observed="unknown", required=required,
            fix="check the gate by hand (Kubernetes >= 1.26 exports kubernetes_feature_enabled)")]
    if gate not in gates:
        return [finding(
            "feature_gate", ERROR,
            "the API server does not know the feature gate %s (it is too old)" % gate,
            observed="absent", required=required, fix=fix)]
    state = gates[gate]
    stage = state["stage"] or "GA"
    if state["enabled"]:
        return [finding("feature_gate", OK, "%s is enabled (%s)" % (gate, stage),
                        observed="enabled (%s)" % stage, required=required)]
    return [finding(
        "feature_gate", ERROR,
        "%s is disabled on the API server (%s): grouped CPU devices lose allowMultipleAllocations"
        % (gate, stage),
        observed="disabled (%s)" % stage, required=required, fix=fix)]


# --------------------------------------------------------------------------- server


def check_server_version(version, min_version=DEFAULT_MIN_VERSION, gate_on=None,
                         gate=DEFAULT_FEATURE_GATE):
    """The server must be >= ``min_version``; an older one passes only (as a
    warning) when ``gate_on`` is True (the gate metric shows it enabled)."""
    try:
        parsed = parse_kube_version(version)
    except VersionError as exc:
        return [finding("server_version", ERROR, "cannot read the server version: %s" % exc,
                        observed=str(version), required=">= %s" % min_version,
                        fix="check that the kubeconfig points at a Kubernetes API server")]
    minimum = parse_version(min_version)
    observed = parsed.text
    required = ">= %s" % min_version
    if version_at_least(parsed, minimum):
        return [finding("server_version", OK, "Kubernetes %s" % observed,
                        observed=observed, required=required)]
    if gate_on:
        return [finding(
            "server_version", WARNING,
            "Kubernetes %s is older than %s but %s is enabled on the API server; it must also be "
            "enabled on the scheduler, controller-manager and kubelets" % (observed, min_version, gate),
            observed=observed, required=required,
            fix="upgrade to Kubernetes %s or newer, or enable %s on every component" % (min_version, gate))]
    return [finding(
        "server_version", ERROR,
        "Kubernetes %s predates %s, where %s became beta and on by default"
        % (observed, min_version, gate),
        observed=observed, required=required,
        fix="use a cluster with Kubernetes %s or newer, or enable the %s feature gate on every "
            "component" % (min_version, gate))]


def served_group_versions(discovery):
    """``group/version`` strings served, from an APIGroupList dict or a list."""
    served = set()
    if isinstance(discovery, dict):
        for group in discovery.get("groups") or []:
            for version in group.get("versions") or []:
                gv = version.get("groupVersion") or "%s/%s" % (group.get("name"), version.get("version"))
                served.add(gv)
    elif discovery:
        for item in discovery:
            served.add(str(item))
    return served


def check_resource_api(discovery, group=RESOURCE_GROUP, version=RESOURCE_VERSION):
    """``resource.k8s.io/v1`` must be served."""
    wanted = "%s/%s" % (group, version)
    served = served_group_versions(discovery)
    same_group = sorted(gv for gv in served if gv.startswith(group + "/"))
    if wanted in served:
        return [finding("resource_api", OK, "%s is served" % wanted,
                        observed=", ".join(same_group), required=wanted)]
    return [finding(
        "resource_api", ERROR,
        "%s is not served (served: %s)" % (wanted, ", ".join(same_group) or "no %s version" % group),
        observed=", ".join(same_group) or "none", required=wanted,
        fix="use Kubernetes >= 1.34 or enable --runtime-config=%s=true on the API server" % wanted)]


# --------------------------------------------------------------------------- per node


def check_container_runtime(node, runtime_version):
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


def parse_configz(configz):
    """``cpuManagerPolicy`` from a kubelet ``/configz`` document (str or dict).

    A missing field means the kubelet default ``none``. Raises ValueError when
    the document is not a kubelet configz.
    """
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
    return config.get("cpuManagerPolicy") or "none"


def check_cpu_manager_policy(node, configz, error=None):
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


def node_cpu_count(node_obj):
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


def check_reserved_cpus(node, reserved, cpu_count):
    """Every reserved CPU id must exist on the node (ids < capacity cpu count),
    and at least one CPU must be left for the driver."""
    reserved = sorted(set(int(c) for c in reserved or ()))
    observed = "%s CPUs" % cpu_count if cpu_count is not None else "unknown"
    required = "reserved CPUs %s present" % (format_cpuset(reserved) or "(none)")
    if not reserved:
        return [finding("reserved_cpus", OK, "node %s: no reserved CPUs" % node,
                        node=node, observed=observed, required=required)]
    if cpu_count is None:
        return [finding("reserved_cpus", WARNING,
                        "node %s does not report its CPU capacity; cannot check reserved CPUs %s"
                        % (node, format_cpuset(reserved)),
                        node=node, observed=observed, required=required, fix="")]
    missing = [c for c in reserved if c >= cpu_count]
    fix = "set dra_cpu_reserved_cpus to CPU ids between 0 and %d on this node" % (cpu_count - 1)
    if missing:
        return [finding("reserved_cpus", ERROR,
                        "node %s has %d CPUs (0-%d); reserved CPUs %s do not exist"
                        % (node, cpu_count, cpu_count - 1, format_cpuset(missing)),
                        node=node, observed=observed, required=required, fix=fix)]
    if len(reserved) >= cpu_count:
        return [finding("reserved_cpus", ERROR,
                        "node %s: all %d CPUs are reserved, the driver would publish nothing"
                        % (node, cpu_count),
                        node=node, observed=observed, required="at least one unreserved CPU", fix=fix)]
    return [finding("reserved_cpus", OK,
                    "node %s: reserved CPUs %s of %d" % (node, format_cpuset(reserved), cpu_count),
                    node=node, observed=observed, required=required)]


# --------------------------------------------------------------------------- placement


def _tolerates(toleration, taint):
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


def untolerated_taints(node_obj, tolerations):
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


def _taint_text(taint):
    text = taint.get("key") or ""
    if taint.get("value"):
        text += "=" + taint["value"]
    return "%s:%s" % (text, taint.get("effect"))


def node_name(node_obj):
    return ((node_obj or {}).get("metadata") or {}).get("name")


def eligible_nodes(nodes, node_selector=None, tolerations=None):
    """Which nodes the driver DaemonSet will run on.

    Returns ``(eligible, excluded)``: ``eligible`` a sorted list of node
    names; ``excluded`` a list of ``{node, reason}``.
    """
    node_selector = node_selector or {}
    tolerations = CHART_TOLERATIONS if tolerations is None else tolerations
    eligible = []
    excluded = []
    for obj in sorted(nodes or [], key=lambda n: node_name(n) or ""):
        name = node_name(obj)
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


def check_eligible_nodes(eligible, excluded):
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


# --------------------------------------------------------------------------- outcome


def apply_ignore(findings, ignore):
    """Downgrade errors of the named checks to warnings (new list)."""
    ignore = set(ignore or [])
    out = []
    for item in findings:
        item = dict(item)
        if item["check"] in ignore and item["severity"] == ERROR:
            item["severity"] = WARNING
            item["message"] += " (ignored: %s is in the preflight ignore list)" % item["check"]
        out.append(item)
    return out


def node_affinity(excluded_hostnames):
    """A chart ``affinity`` value keeping the driver off the given hostnames.

    Uses ``kubernetes.io/hostname NotIn`` (the DaemonSet controller replaces
    ``matchFields`` terms, so ``metadata.name`` cannot be used). {} when the
    list is empty.
    """
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


def plan_skip(findings, skip_incompatible_nodes, supports_affinity, eligible, hostnames=None):
    """Turn per-node errors into skipped nodes when asked to.

    ``hostnames`` maps node name -> its ``kubernetes.io/hostname`` label.
    Returns ``(findings, skipped_nodes, affinity)``. Without
    ``skip_incompatible_nodes`` nothing changes. When the chart cannot take
    a node affinity, the per-node errors stay and one more error says so.
    When every eligible node would be skipped, an ``eligible_nodes`` error is
    added.
    """
    hostnames = hostnames or {}
    if not skip_incompatible_nodes:
        return list(findings), [], {}
    reasons = {}
    for item in findings:
        if item["severity"] == ERROR and item["node"] and item["check"] in NODE_CHECKS:
            reasons.setdefault(item["node"], [])
            if item["check"] not in reasons[item["node"]]:
                reasons[item["node"]].append(item["check"])
    if not reasons:
        return list(findings), [], {}
    skipped = [{"node": node, "reasons": reasons[node]} for node in sorted(reasons)]
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
        item = dict(item)
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


def summarize(findings):
    """``{errors, warnings, passed, message}``; message lists each error."""
    errors = [f for f in findings if f["severity"] == ERROR]
    warnings = [f for f in findings if f["severity"] == WARNING]
    lines = []
    for item in errors:
        where = "node %s" % item["node"] if item["node"] else "cluster"
        line = "%s [%s]: %s (observed %s)" % (where, item["check"], item["message"], item["observed"])
        if item.get("fix"):
            line += "; fix: %s" % item["fix"]
        lines.append(line)
    message = ""
    if errors:
        message = "preflight failed with %d error(s): %s" % (len(errors), " | ".join(lines))
    return {"errors": len(errors), "warnings": len(warnings), "passed": not errors, "message": message}
