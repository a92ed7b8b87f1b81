# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""Preflight rules for KEP-5517 node-allocatable mappings (``dra_cpu_node_allocatable_mapping``).

Owns the two checks of the ``node_allocatable_gate`` finding, asked only when the mapping is on: the
API server (its ``kubernetes_feature_enabled`` metric) and the kubelet of every driver node (its
``/configz`` ``featureGates``, its version) must run with ``DRANodeAllocatableResources``. Pure
functions over data gather.py read.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from typing import Any

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.types import K8sObject
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.preflight.types import Finding

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.common.versions import (
    VersionError,
    parse_version,
    version_at_least,
)
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.preflight.nodes import kubelet_config
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.preflight.rules import (
    ERROR,
    OK,
    WARNING,
    SettingGate,
    check_setting_gate,
    finding,
    parse_feature_gates,
)

CHECK = "node_allocatable_gate"
GATE = "DRANodeAllocatableResources"
VARIABLE = "dra_cpu_node_allocatable_mapping"
REQUIRED = "%s enabled" % GATE
# the gate is alpha from 1.36 (kube_features.go), where the API server and the scheduler know it; the
# kubelet accounts the mapped resources from 1.37 (pkg/kubelet reads it from 1.37.0; upstream
# dra-driver-cpu: "1.37+")
KUBELET_MIN_VERSION = "1.37"
# stages whose default is on: a kubelet that does not set the gate runs with the default
DEFAULT_ON_STAGES = ("BETA", "")
_OFF = "or install without the mapping (%s: false)" % VARIABLE


def _fix(where: str) -> str:
    return ("start %s with --feature-gates=%s=true (alpha in Kubernetes 1.37; enable it on kube-apiserver, "
            "kube-scheduler, kube-controller-manager and every kubelet), %s" % (where, GATE, _OFF))


GATE_RULE = SettingGate(
    check=CHECK, gate=GATE, variable=VARIABLE,
    tails=("", ": it would drop nodeAllocatableResources from every slice",
           ": it drops nodeAllocatableResources from every slice"),
    fixes=("grant 'get' on the non-resource URL /metrics to this user, %s" % _OFF,
           "use Kubernetes 1.37 or newer with the gate enabled, %s" % _OFF, _fix("kube-apiserver")))


def check_api_server(metrics_text: str | None, error: str | None = None) -> list[Finding]:
    """The API server must report ``DRANodeAllocatableResources`` enabled (rules.check_setting_gate)."""
    return check_setting_gate(GATE_RULE, metrics_text, error)


def kubelet_gates(configz: str | bytes | K8sObject) -> dict[str, bool]:
    """The ``featureGates`` a kubelet ``/configz`` shows (only the ones set). Raises ValueError
    when the document is not a kubelet configz."""
    gates: dict[str, bool] = kubelet_config(configz).get("featureGates") or {}
    if not isinstance(gates, dict):
        raise ValueError("featureGates is not a mapping")
    return gates


def _too_old(node: str, kubelet_version: str | None) -> list[Finding]:
    """A kubelet older than KUBELET_MIN_VERSION knows the gate (1.36) but does not account the CPUs."""
    try:
        old = bool(kubelet_version) and not version_at_least(parse_version(str(kubelet_version)),
                                                             parse_version(KUBELET_MIN_VERSION))
    except VersionError:
        return []
    if not old:
        return []
    return [finding(
        CHECK, ERROR,
        "node %s: %s: true, but its kubelet %s predates %s, the first kubelet that accounts the CPUs a "
        "node-allocatable mapping hands out" % (node, VARIABLE, kubelet_version, KUBELET_MIN_VERSION),
        node=node, observed="kubelet %s" % kubelet_version, required="kubelet >= %s, %s" % (KUBELET_MIN_VERSION, REQUIRED),
        fix="upgrade the kubelet of node %s to Kubernetes %s or newer, %s" % (node, KUBELET_MIN_VERSION, _OFF))]


def check_kubelet(node: str, configz: Any, error: str | None = None,
                  api_stage: str | None = None, kubelet_version: str | None = None) -> list[Finding]:
    """The kubelet of ``node`` must be >= 1.37 (``kubelet_version``, the Node's nodeInfo) and run with
    the gate. ``configz`` None (``error`` the reason) or unreadable: an error (nothing confirms it). A
    gate the kubelet does not set is its default, on only when the API server reports the gate beta
    or GA (``api_stage``)."""
    too_old = _too_old(node, kubelet_version)
    if too_old:
        return too_old
    gates = None
    if configz is not None:
        try:
            gates = kubelet_gates(configz)
        except (ValueError, TypeError) as exc:
            error = "unexpected /configz content: %s" % exc
    if gates is None:
        return [finding(
            CHECK, ERROR,
            "node %s: %s: true, but the kubelet configuration could not be read to confirm %s%s"
            % (node, VARIABLE, GATE, ": %s" % error if error else ""),
            node=node, observed="unknown", required=REQUIRED,
            fix="grant 'get' on nodes/proxy to this user (the kubelet's /configz), %s" % _OFF)]
    value = gates.get(GATE)
    if value is True:
        return [finding(CHECK, OK, "node %s: the kubelet runs with %s" % (node, GATE),
                        node=node, observed="enabled", required=REQUIRED)]
    if value is None and api_stage is not None and api_stage.upper() in DEFAULT_ON_STAGES:
        return [finding(CHECK, OK, "node %s: the kubelet keeps the default of %s (%s: on)"
                        % (node, GATE, api_stage or "GA"),
                        node=node, observed="default (%s)" % (api_stage or "GA"), required=REQUIRED)]
    observed = "disabled" if value is False else "not set (off by default)"
    return [finding(
        CHECK, ERROR,
        "node %s: %s: true, but the kubelet's featureGates do not enable %s (%s): it would not "
        "account the CPUs the mapping hands out" % (node, VARIABLE, GATE, observed),
        node=node, observed=observed, required=REQUIRED, fix=_fix("the kubelet of node %s" % node))]


def api_stage(metrics_text: str | None) -> str | None:
    """The gate's stage as the API server reports it (``ALPHA``, ``BETA``, '' for GA), None unknown."""
    state = parse_feature_gates(metrics_text).get(GATE) if metrics_text is not None else None
    return None if state is None else state["stage"]


def not_ready(node: str) -> list[Finding]:
    """A driver node that is not Ready cannot answer: a warning (its kubelet is checked when it is)."""
    return [finding(CHECK, WARNING,
                    "node %s is not Ready: its kubelet's %s was not checked" % (node, GATE),
                    node=node, observed="unknown", required=REQUIRED,
                    fix="run the role again once node %s is Ready" % node)]


def not_checked(node: str) -> list[Finding]:
    """``check_configz`` false: the kubelet's gate is not read, a warning."""
    return [finding(CHECK, WARNING,
                    "node %s: the kubelet's %s was not checked (check_configz is false)" % (node, GATE),
                    node=node, observed="not checked", required=REQUIRED,
                    fix="check the kubelet's --feature-gates by hand")]
