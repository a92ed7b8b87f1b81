# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""One run of preflight, shared by the module and its action plugin (k8s/runner.py).

Owns: the module's options (``argument_spec``), their checks beyond the spec, the choice between
the checks (gather.py) and, with ``checks: false``, only the cluster and what is installed, the
report file and the result: ``failed`` with ``msg`` (the summary lines appended), ``report`` and
``summary`` when preflight could not check or did not pass. The client is k8s/factory.py's.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import copy
from typing import Any

from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.auth import ArgumentSpec, auth_argument_spec, describe_target
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.client import ClusterError, RawApi
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s import factory
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.types import ModuleParams
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.preflight import nodes as preflight_nodes
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.preflight import report as preflight_report
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.preflight import rules
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.preflight.gather import read_installed, run_checks
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.preflight.types import PreflightResult
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.common.chart_values import supports_node_affinity
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.common.preflight_checks import CHECKS
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.common.report_files import PREFLIGHT, write_report
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.common.cpuset import CpusetError, parse_cpuset
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.common.versions import parse_version


def argument_spec() -> ArgumentSpec:
    spec: ArgumentSpec = dict(
        checks=dict(type="bool", default=True),
        cpu_device_mode=dict(type="str", default=rules.GROUPED, choices=list(rules.MODES)),
        min_version=dict(type="str", default=rules.DEFAULT_MIN_VERSION),
        feature_gate=dict(type="str", default=rules.DEFAULT_FEATURE_GATE),
        node_allocatable_mapping=dict(type="bool", default=False),
        expose_pcie_roots=dict(type="bool", default=False),
        node_selector=dict(type="dict", default={}),
        tolerations=dict(type="list", elements="dict", default=copy.deepcopy(preflight_nodes.CHART_TOLERATIONS)),
        reserved_cpus=dict(type="str", default=""),
        ignore=dict(type="list", elements="str", default=[], choices=list(CHECKS)),
        skip_incompatible_nodes=dict(type="bool", default=False),
        chart_version=dict(type="str", default=""),
        chart_affinity=dict(type="bool"),
        check_configz=dict(type="bool", default=True),
        namespace=dict(type="str", default=""),
        namespace_labels=dict(type="dict", default={}),
        release_name=dict(type="str", default=""),
        chart=dict(type="str", removed_in_version="1.0.0", removed_from_collection="kubevirtci.dra_cpu"),
        report_dir=dict(type="path", default=""),
    )
    spec.update(auth_argument_spec(AUTH_ARG_SPEC))
    return spec


def could_not_run(message: str) -> PreflightResult:
    """The failure before any finding, with the one-line report the role prints."""
    lines = preflight_report.could_not_run(message)
    return {"failed": True, "msg": message, "report": lines, "summary": lines}


def option_problem(params: ModuleParams) -> tuple[str | None, list[int] | None]:
    """The first option the spec cannot check that is wrong (message), and the reserved CPUs."""
    try:
        reserved = parse_cpuset(params["reserved_cpus"])
    except CpusetError as exc:
        return "reserved_cpus: '%s' is not a valid cpuset (%s)" % (params["reserved_cpus"], exc), None
    try:
        supports_node_affinity(params["chart_version"])
    except ValueError as exc:
        return "chart_version: %s" % exc, None
    try:
        parse_version(params["min_version"])
    except ValueError as exc:
        return "min_version: %s" % exc, None
    return None, reserved


def not_checked(api: RawApi, params: ModuleParams) -> PreflightResult:
    """``checks: false``: the shape of a passing result without findings (the cluster is asked for
    its version all the same, so an unreachable one fails here as target_cluster does)."""
    result: PreflightResult = {
        "server_version": api.version().get("gitVersion"),
        "findings": [], "error_count": 0, "warning_count": 0, "passed": True,
        "checked_nodes": [], "excluded_nodes": [], "skipped_nodes": [], "node_affinity": {},
        "report": [preflight_report.NOT_RUN],
    }
    if params["namespace"]:
        result["installed"] = read_installed(api, params)
    return result


def run_preflight(params: ModuleParams, check_mode: bool, source: Any,
                  get_client: factory.GetClient) -> PreflightResult:
    """The module's result; ``get_client(source)`` builds the client (k8s/factory.py)."""
    problem, reserved = option_problem(params)
    if problem:
        return could_not_run(problem)
    try:
        cluster = factory.connect(get_client, source, params)
        if params["checks"]:
            result, message = run_checks(cluster.api, params, reserved)
        else:
            result, message = not_checked(cluster.api, params), None
    except ClusterError as exc:
        return could_not_run(factory.failure("preflight could not read the cluster", exc))
    # the cluster checked (and about to be changed by the role): API server URL, context, kubeconfig
    target = describe_target(params, cluster.host)
    result["cluster"] = {"server": target["server"], "context": target["context"], "kubeconfig": target["kubeconfig"],
                         "text": preflight_report.cluster_line(target)}
    # the checked nodes whose Ready condition is not True (None: not asked): cpu_topology counts
    # their pools in no figure without asking again
    result["not_ready_nodes"] = (sorted(set(f["node"] for f in result["findings"]
                                            if f["check"] == rules.NODE_READY and f["node"]))
                                 if params["checks"] else None)
    result["summary"] = preflight_report.summary_lines(result["findings"], result["checked_nodes"],
                                                       checked=params["checks"])
    if params["checks"] and not check_mode:
        write_report(params["report_dir"], PREFLIGHT,
                     dict((key, result.get(key)) for key in ("passed", "findings", "report", "cluster")))
    result["changed"] = False
    if not result["passed"]:
        # the lines with the message: the role fails on this result and prints nothing before it
        result["failed"] = True
        result["msg"] = "\n".join([message or ""] + result["summary"])
    return result
