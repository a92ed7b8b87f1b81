# SPDX-License-Identifier: Apache-2.0
"""The preflight report text. The expected lines are what the role's Jinja template printed for the
same findings before the module rendered the report (compared with ansible-core 2.19)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.preflight.report import could_not_run, render_report


def f(check, severity, message, node=None, observed=None, required=None, fix=""):
    return {"check": check, "severity": severity, "node": node, "observed": observed, "required": required,
            "message": message, "fix": fix}


def test_every_kind_of_line():
    findings = [
        f("server_version", "ok", "Kubernetes v1.36.3", observed="v1.36.3", required=">= 1.36"),
        f("feature_gate", "warning", "could not read", observed="unknown", required="DRAConsumableCapacity enabled",
          fix="grant get"),
        f("cpu_manager_policy", "error", "node node02: static", node="node02", observed="static", required="none"),
        f("reserved_cpus", "warning", "m (node skipped: the driver will not run there)", node="node03",
          required="x"),
    ]
    skipped = [{"node": "node02", "reasons": ["cpu_manager_policy", "reserved_cpus"]}]
    assert render_report(findings, ["node01", "node02"], skipped) == [
        "Preflight: 1 error(s), 2 warning(s); checked nodes: node01, node02",
        "[OK] server_version: Kubernetes v1.36.3",
        "[WARNING] feature_gate: could not read (observed: unknown; required: DRAConsumableCapacity enabled) "
        "fix: grant get",
        "[ERROR] cpu_manager_policy on node02: node node02: static (observed: static; required: none)",
        "[WARNING] reserved_cpus on node03: m (node skipped: the driver will not run there) "
        "(observed: ; required: x)",
        "driver kept off node02: cpu_manager_policy, reserved_cpus",
    ]


def test_no_findings_and_no_nodes():
    assert render_report([], [], []) == ["Preflight: 0 error(s), 0 warning(s); checked nodes: none"]


def test_cluster_error_with_fix():
    findings = [f("eligible_nodes", "error", "no node", observed="0 eligible, 1 excluded",
                  required="at least one node", fix="adjust")]
    assert render_report(findings) == [
        "Preflight: 1 error(s), 0 warning(s); checked nodes: none",
        "[ERROR] eligible_nodes: no node (observed: 0 eligible, 1 excluded; required: at least one node) fix: adjust",
    ]


def test_could_not_run():
    assert could_not_run("cannot create a Kubernetes client: boom") == [
        "Preflight could not run: cannot create a Kubernetes client: boom"]
    assert could_not_run("") == ["Preflight could not run: no result"]
