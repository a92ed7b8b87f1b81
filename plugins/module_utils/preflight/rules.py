# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""Preflight rules for the cluster as a whole, and the outcome of all findings.

Owns: building a finding, the cluster-wide checks (server version, the ``resource.k8s.io/v1`` API,
the feature gate from the API server's ``kubernetes_feature_enabled`` metric), the ignore list and
the summary. Pure; the per-node checks are nodes.py's, the report text report.py's, the shapes
types.py's.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import re
from collections.abc import Iterable
from typing import TypedDict

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.types import K8sObject
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.preflight.types import Finding, GateState, Summary

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.common.versions import (
    VersionError,
    parse_kube_version,
    parse_version,
    version_at_least,
)

ERROR = "error"
WARNING = "warning"
OK = "ok"

NODE_CHECKS = ("container_runtime", "cpu_manager_policy", "reserved_cpus")
# only ever a warning (a node that is not Ready), so not among the CHECKS ``ignore`` takes
# (common/preflight_checks.py): it has no error to downgrade, and it does not count among the checks passed
NODE_READY = "node_ready"

# upstream's compatibility table: docs/internals.md, "Why the preflight, the topology and verify read what they read"
GROUPED = "grouped"
INDIVIDUAL = "individual"
MODES = (GROUPED, INDIVIDUAL)
RESOURCE_MIN_VERSION = "1.34"
DEFAULT_MIN_VERSION = "1.36"
DEFAULT_FEATURE_GATE = "DRAConsumableCapacity"
RESOURCE_GROUP = "resource.k8s.io"
RESOURCE_VERSION = "v1"


def finding(check: str, severity: str, message: str, node: str | None = None, observed: str | None = None,
            required: str | None = None, fix: str = "") -> Finding:
    """Build one finding."""
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


def parse_feature_gates(metrics_text: bytes | str | None) -> dict[str, GateState]:
    """Parse the ``kubernetes_feature_enabled`` samples of a Prometheus text.

    Returns ``{gate_name: {"enabled": bool, "stage": str}}``; an empty dict
    when the metric family is absent.
    """
    gates: dict[str, GateState] = {}
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


def gate_enabled(metrics_text: str, gate: str = DEFAULT_FEATURE_GATE) -> bool | None:
    """True/False when the metric shows the gate, None when it cannot tell."""
    gates = parse_feature_gates(metrics_text)
    if gate not in gates:
        return None
    return gates[gate]["enabled"]


class SettingGate(TypedDict):
    """An API-server gate that a setting needs: the check's name, the gate, the setting's variable, what
    each message adds (``tails``: metrics unread, gate absent, gate disabled) and each one's fix."""
    check: str
    gate: str
    variable: str
    tails: tuple[str, str, str]
    fixes: tuple[str, str, str]


def check_setting_gate(rule: SettingGate, metrics_text: str | None, error: str | None = None) -> list[Finding]:
    """The API server must report ``rule``'s gate enabled; metrics that cannot be read (``error`` the
    reason) or that lack the gate's sample are an error too: the setting is asked for and nothing
    confirms the API server keeps what it publishes."""
    check, gate, variable = rule["check"], rule["gate"], rule["variable"]
    required = "%s enabled" % gate
    if metrics_text is None:
        return [finding(check, ERROR, "%s: true, but the API server metrics could not be read to confirm %s%s%s"
                        % (variable, gate, ": %s" % error if error else "", rule["tails"][0]),
                        observed="unknown", required=required, fix=rule["fixes"][0])]
    state = parse_feature_gates(metrics_text).get(gate)
    if state is None:
        return [finding(check, ERROR, "%s: true, but the API server does not know the feature gate %s (it is older "
                        "than Kubernetes 1.36)%s" % (variable, gate, rule["tails"][1]),
                        observed="absent", required=required, fix=rule["fixes"][1])]
    stage = state["stage"] or "GA"
    if state["enabled"]:
        return [finding(check, OK, "%s is enabled on the API server (%s)" % (gate, stage),
                        observed="enabled (%s)" % stage, required=required)]
    return [finding(check, ERROR, "%s: true, but %s is disabled on the API server (%s)%s"
                    % (variable, gate, stage, rule["tails"][2]),
                    observed="disabled (%s)" % stage, required=required, fix=rule["fixes"][2])]


def _gate_not_needed(metrics_text: str | None, gate: str) -> list[Finding]:
    """Individual mode: the gate is reported, never required."""
    state = parse_feature_gates(metrics_text).get(gate) if metrics_text is not None else None
    if state is None:
        observed = "not checked"
    else:
        observed = "%s (%s)" % ("enabled" if state["enabled"] else "disabled", state["stage"] or "GA")
    return [finding("feature_gate", OK, "%s is not needed in individual mode (%s)" % (gate, observed),
                    observed=observed, required="not needed (individual mode)")]


def check_feature_gate(metrics_text: str | None, gate: str = DEFAULT_FEATURE_GATE, error: str | None = None,
                       mode: str = GROUPED) -> list[Finding]:
    """In grouped mode ``gate`` must be enabled on the API server
    (``kubernetes_feature_enabled``); individual mode does not need it.

    ``metrics_text`` None (with ``error`` the reason) means the metrics could
    not be read: a warning, never a pass.
    """
    if mode == INDIVIDUAL:
        return _gate_not_needed(metrics_text, gate)
    required = "%s enabled" % gate
    fix = ("enable the feature gate %s on kube-apiserver, kube-scheduler, kube-controller-manager "
           "and kubelet (--feature-gates=%s=true; on by default from Kubernetes 1.36), or use "
           "individual mode (dra_cpu_cpu_device_mode: individual), which does not need it" % (gate, gate))
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


def check_server_version(version: str | K8sObject, min_version: str = DEFAULT_MIN_VERSION,
                         gate_on: bool | None = None, gate: str = DEFAULT_FEATURE_GATE,
                         mode: str = GROUPED) -> list[Finding]:
    """Every mode needs Kubernetes >= 1.34 (``resource.k8s.io/v1``).

    Grouped mode needs >= ``min_version`` (where ``gate`` is on by default); an
    older server passes only (as a warning) when ``gate_on`` is True (the gate
    metric shows it enabled). Individual mode needs 1.34 only.
    """
    if mode == INDIVIDUAL:
        min_version = RESOURCE_MIN_VERSION
    try:
        parsed = parse_kube_version(version)
    except VersionError as exc:
        return [finding("server_version", ERROR, "cannot read the server version: %s" % exc,
                        observed=str(version), required=">= %s" % min_version,
                        fix="check that the kubeconfig points at a Kubernetes API server")]
    minimum = parse_version(min_version)
    observed = parsed.text
    required = ">= %s" % min_version
    floor = RESOURCE_MIN_VERSION
    if not version_at_least(parsed, parse_version(floor)) and version_at_least(minimum, parse_version(floor)):
        return [finding(
            "server_version", ERROR,
            "Kubernetes %s predates %s, where resource.k8s.io/v1 (DRA) became GA; the driver needs it "
            "in every mode" % (observed, floor),
            observed=observed, required=">= %s" % floor,
            fix="use a cluster with Kubernetes %s or newer" % floor)]
    if version_at_least(parsed, minimum):
        if mode == INDIVIDUAL:
            return [finding("server_version", OK, "Kubernetes %s (individual mode needs %s)" % (observed, floor),
                            observed=observed, required=required)]
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
        fix="use a cluster with Kubernetes %s or newer, enable the %s feature gate on every "
            "component, or use individual mode (dra_cpu_cpu_device_mode: individual), which runs on "
            "Kubernetes %s without it" % (min_version, gate, RESOURCE_MIN_VERSION))]


def served_group_versions(discovery: K8sObject | list[str]) -> set[str]:
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


def check_resource_api(discovery: K8sObject | list[str], group: str = RESOURCE_GROUP,
                       version: str = RESOURCE_VERSION) -> list[Finding]:
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


# --------------------------------------------------------------------------- outcome


def apply_ignore(findings: list[Finding], ignore: Iterable[str] | None) -> list[Finding]:
    """Downgrade errors of the named checks to warnings (new list)."""
    ignored = set(ignore or [])
    out = []
    for item in findings:
        item = item.copy()
        if item["check"] in ignored and item["severity"] == ERROR:
            item["severity"] = WARNING
            item["message"] += " (ignored: %s is in the preflight ignore list)" % item["check"]
        out.append(item)
    return out


def summarize(findings: list[Finding]) -> Summary:
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
