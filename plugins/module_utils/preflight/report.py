# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""The preflight report: the lines the role prints, built from the findings.

Owns the text only: ``report`` (one header line, one line per finding, one per
node the driver is kept off) and the short ``summary`` (one line of counts, then
one line per warning or error), which the preflight module returns and
``roles/dra_cpu/tasks/preflight.yml`` shows when it fails (renders nothing itself).
Pure functions, no I/O.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from collections.abc import Iterable

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.preflight.rules import ERROR, OK, WARNING
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.auth import Target
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.preflight.types import Finding, SkippedNode


# the summary (and report) when the role turned the checks off (the module's ``checks: false``)
NOT_RUN = "preflight: not run (dra_cpu_preflight=false)"
# node names on the summary line, then "and K more"
SUMMARY_NODES = 3


def could_not_run(message: str) -> list[str]:
    """The report when preflight could not check at all (no findings)."""
    return ["Preflight could not run: %s" % (message or "no result")]


def _text(value: str | None) -> str:
    """A value as the role's template printed it (None as '')."""
    return "" if value is None else "%s" % (value,)


def finding_line(item: Finding) -> str:
    """``[ERROR] check on node: message (observed: x; required: y) fix: z``."""
    line = "[%s] %s" % (item["severity"].upper(), item["check"])
    if item.get("node"):
        line += " on %s" % item["node"]
    line += ": %s" % (item.get("message") or "")
    if item["severity"] != OK:
        line += " (observed: %s; required: %s)" % (_text(item.get("observed", "?")), _text(item.get("required", "?")))
        if item.get("fix"):
            line += " fix: %s" % item["fix"]
    return line


def render_report(findings: list[Finding], checked_nodes: list[str] | None = None,
                  skipped_nodes: list[SkippedNode] | None = None) -> list[str]:
    """The report lines for a preflight result."""
    errors = sum(1 for f in findings if f["severity"] == ERROR)
    warnings = sum(1 for f in findings if f["severity"] == WARNING)
    lines = ["Preflight: %d error(s), %d warning(s); checked nodes: %s"
             % (errors, warnings, ", ".join(checked_nodes or []) or "none")]
    lines.extend(finding_line(f) for f in findings)
    for skipped in skipped_nodes or []:
        lines.append("driver kept off %s: %s" % (skipped["node"], ", ".join(skipped.get("reasons") or [])))
    # one line per line of text, as printed (a message never holds a newline today)
    return "\n".join(lines).strip().split("\n")


def _node_list(names: Iterable[str] | None) -> str:
    names = list(names or [])
    if not names:
        return "no node"
    text = ", ".join(names[:SUMMARY_NODES])
    if len(names) > SUMMARY_NODES:
        text += " and %d more" % (len(names) - SUMMARY_NODES)
    return text


def cluster_line(cluster: Target) -> str:
    """``<API server> (context <name>, kubeconfig <path>)``: the cluster the role changes (the role's
    release task is named with it)."""
    return "%s (context %s, kubeconfig %s)" % (
        cluster.get("server"), cluster.get("context") or "none", cluster.get("kubeconfig"))


def summary_lines(findings: list[Finding], checked_nodes: list[str] | None = None,
                  checked: bool = True) -> list[str]:
    """``preflight: N checks passed on <nodes> (E errors, W warnings)`` and the warning and error lines
    (``finding_line``), or ``NOT_RUN`` when the checks were off. The cluster is not on it: the role's
    release task names it (``cluster_line``) before it changes anything."""
    if not checked:
        return [NOT_RUN]
    count = dict((severity, sum(1 for f in findings if f["severity"] == severity)) for severity in (OK, ERROR, WARNING))
    lines = ["preflight: %d checks passed on %s (%d errors, %d warnings)"
             % (count[OK], _node_list(checked_nodes), count[ERROR], count[WARNING])]
    lines.extend(finding_line(f) for f in findings if f["severity"] in (ERROR, WARNING))
    return lines
