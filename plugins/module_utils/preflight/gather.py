# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""Gather what preflight needs from the cluster and run the rules on it.

Owns: the reads (version, /metrics, /apis, nodes, each node's /configz, the
namespace and the helm release Secret) and the order of the checks (with
``node_allocatable_mapping`` also node_allocatable.py's, with ``expose_pcie_roots``
list_attributes.py's, from the same reads). The
rules themselves are pure (rules.py, nodes.py); the
module (plugins/modules/preflight.py) only parses its options and exits.
Read-only: never writes to the cluster.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.preflight import installed
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.preflight import list_attributes
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.preflight import node_allocatable
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.preflight import nodes as nodes_rules
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.preflight import rules
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.common.chart_values import supports_node_affinity
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.client import KubeRequestError, RawApi
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.types import K8sObject, ModuleParams
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.preflight.report import render_report
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.preflight.types import (
    ExcludedNode,
    Finding,
    Installed,
    PreflightResult,
    ReleaseState,
)


# seconds for one node's /configz through the API server's node proxy: a kubelet that stops
# answering while its node still shows Ready must not hold preflight up
CONFIGZ_TIMEOUT = 15


def read_installed(api: RawApi, params: ModuleParams) -> Installed:
    """The namespace and the helm release as they are now (read-only)."""
    try:
        namespace = installed.namespace_state(
            params["namespace"], api.get_namespace(params["namespace"]), params["namespace_labels"])
        release: ReleaseState = {}
        others: list[str] = []
        # a terminating namespace takes its release with it: the role waits and installs afresh. One
        # list of every helm release's revisions: this release's newest, and the others (uninstall
        # keeps a namespace that holds any)
        if params["release_name"] and namespace["exists"] and not namespace["terminating"]:
            secrets = api.list_secrets(params["namespace"], installed.HELM_SELECTOR)
            release = installed.release_state(params["release_name"], secrets)
            others = installed.other_releases(params["release_name"], secrets)
    except KubeRequestError as exc:
        return {"readable": False, "error": exc.message}
    return {
        "readable": True,
        "namespace": namespace,
        "release": release,
        "other_releases": others,
    }


def _cluster_checks(api: RawApi, params: ModuleParams) -> tuple[str | None, list[Finding], str | None]:
    """The server version, the resource API and the feature gates: ``(gitVersion, findings, the
    node-allocatable gate's stage)``."""
    version = api.version()
    metrics, metrics_error = None, None
    try:
        metrics = api.metrics()
    except KubeRequestError as exc:
        metrics_error = exc.message
    gate_on = rules.gate_enabled(metrics, params["feature_gate"]) if metrics is not None else None

    findings = rules.check_server_version(
        version, params["min_version"], gate_on, params["feature_gate"], params["cpu_device_mode"])
    try:
        findings += rules.check_resource_api(api.api_groups())
    except KubeRequestError as exc:
        findings.append(rules.finding("resource_api", rules.ERROR, "cannot read the API groups: %s" % exc.message,
                                      observed="unknown", required="resource.k8s.io/v1",
                                      fix="grant get on the non-resource URL /apis"))
    findings += rules.check_feature_gate(metrics, params["feature_gate"], metrics_error, params["cpu_device_mode"])
    if params.get("node_allocatable_mapping"):
        findings += node_allocatable.check_api_server(metrics, metrics_error)
    if params.get("expose_pcie_roots"):
        findings += list_attributes.check_api_server(metrics, metrics_error)
        findings += list_attributes.check_scheduler(version)
    return version.get("gitVersion"), findings, node_allocatable.api_stage(metrics)


def _node_checks(api: RawApi, params: ModuleParams, name: str, obj: K8sObject, stage: str | None,
                 reserved: list[int] | None) -> list[Finding]:
    """The checks of one eligible node: runtime, Ready, its kubelet's /configz, reserved CPUs."""
    mapping = bool(params.get("node_allocatable_mapping"))
    node_info = (obj.get("status") or {}).get("nodeInfo") or {}
    findings = nodes_rules.check_container_runtime(name, node_info.get("containerRuntimeVersion"))
    ready = nodes_rules.is_ready(obj)
    if not ready:
        findings += nodes_rules.check_node_ready(name, obj)
    # a node that is not Ready cannot answer (its kubelet is what does not report): the
    # node_ready warning says so, instead of a 503 from the node proxy after its timeout
    if params["check_configz"] and ready:
        configz, configz_error = None, None
        try:
            configz = api.configz(name, timeout=CONFIGZ_TIMEOUT)
        except KubeRequestError as exc:
            configz_error = exc.message
        findings += nodes_rules.check_cpu_manager_policy(name, configz, configz_error)
        if mapping:
            findings += node_allocatable.check_kubelet(name, configz, configz_error, stage,
                                                       node_info.get("kubeletVersion"))
    elif mapping:
        findings += node_allocatable.not_ready(name) if not ready else node_allocatable.not_checked(name)
    findings += nodes_rules.check_reserved_cpus(name, reserved, nodes_rules.node_cpu_count(obj))
    return findings


def run_checks(api: RawApi, params: ModuleParams, reserved: list[int] | None) -> tuple[PreflightResult, str]:
    """Gather the data and run every rule: the result and the summary message."""
    server_version, findings, stage = _cluster_checks(api, params)
    try:
        nodes: list[K8sObject] | None = api.list_nodes()
    except KubeRequestError as exc:
        findings.append(rules.finding("eligible_nodes", rules.ERROR, "cannot list the nodes: %s" % exc.message,
                                      observed="unknown", required="at least one node",
                                      fix="grant list on nodes to this user"))
        nodes = None

    eligible: list[str] = []
    excluded: list[ExcludedNode] = []
    hostnames = {}
    if nodes is not None:
        eligible, excluded = nodes_rules.eligible_nodes(nodes, params["node_selector"], params["tolerations"])
        findings += nodes_rules.check_eligible_nodes(eligible, excluded)
        by_name = dict((nodes_rules.node_name(n), n) for n in nodes)
        for name in eligible:
            obj = by_name[name]
            labels = (obj.get("metadata") or {}).get("labels") or {}
            hostnames[name] = labels.get(nodes_rules.HOSTNAME_LABEL, name)
            findings += _node_checks(api, params, name, obj, stage, reserved)

    findings = rules.apply_ignore(findings, params["ignore"])
    findings, skipped, affinity = nodes_rules.plan_skip(
        findings, params["skip_incompatible_nodes"],
        supports_node_affinity(params["chart_version"]) if params.get("chart_affinity") is None
        else params["chart_affinity"],
        eligible, hostnames)
    summary = rules.summarize(findings)
    result: PreflightResult = {
        "server_version": server_version,
        "findings": findings,
        "error_count": summary["errors"],
        "warning_count": summary["warnings"],
        "passed": summary["passed"],
        "checked_nodes": eligible,
        "excluded_nodes": excluded,
        "skipped_nodes": skipped,
        "node_affinity": affinity,
        "report": render_report(findings, eligible, skipped),
    }
    if params["namespace"]:
        result["installed"] = read_installed(api, params)
    return result, summary["message"]
