# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""One run of cpu_topology: targets, the wait, the topology, the sizing checks, the reports.

Owns: the order of a run (resolve the driver's pods and their nodes, wait for or snapshot their
pools, build the ``dra_cpu_topology`` fact, check it against the sizing rule) and what it returns to
the module: ``(result, failure message or None)``. The wait is waiter.py, the fact fact.py, the
checks sizing.py, the table table.py, the timeout message pod_diagnostics.py and the
report files reports.py; the module (plugins/modules/cpu_topology.py) holds the options,
the client and the exit.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology import sizing
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology import fact as topo
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.table import render_table
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.driver_pods import (
    describe_selectors,
    driver_nodes,
    list_driver_pods,
    resolve_pod_selectors,
)
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.pod_diagnostics import pending_report, timeout_message
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.reports import write_topology_reports
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.waiter import SliceWaiter


def run(api, params, reserved, clock=None, sleep=None, report_dir=None):
    """Resolve the targets, wait, build the topology. Returns (result, failure message or None);
    with ``report_dir`` the topology or the failure is also written there (reports.py)."""
    selectors, problem = resolve_pod_selectors(api, params["namespace"], params.get("release_name"),
                                               params.get("pod_selector"))
    result, failure = _wait(api, params, reserved, selectors, problem, clock, sleep)
    # an earlier step's failure to record (the role's rescue): the report is about that one
    write_topology_reports(report_dir, api, params, selectors, result, params.get("record_failure") or failure)
    return result, failure


def _wait(api, params, reserved, selectors, problem, clock, sleep):
    kwargs = dict((k, v) for k, v in (("clock", clock), ("sleep", sleep)) if v is not None)
    waiter = SliceWaiter(api, params["driver"], **kwargs)
    explicit = params.get("nodes")
    empty = {"targets": [], "dropped_nodes": [], "pending_nodes": [], "sizing_problems": [], "wait_stats": {}}
    if explicit:
        targets = sorted(set(explicit))
    else:
        if problem and params["wait"]:
            return empty, problem
        targets = driver_nodes(list_driver_pods(api, params["namespace"], selectors))
        if not targets and params["wait"]:
            return empty, (
                "no driver pod found in namespace %s with %s: is the chart installed, and can its "
                "DaemonSet run on any node?" % (params["namespace"], describe_selectors(selectors)))

    if params["wait"]:
        waited = waiter.wait(targets, params["timeout"])
    else:
        waited = waiter.snapshot(targets)

    stats = dict(waited["stats"])
    if "elapsed" in waited:
        stats["elapsed"] = waited["elapsed"]
    result = {
        "targets": waited["targets"],
        "dropped_nodes": waited["dropped_nodes"],
        "pending_nodes": [],
        "sizing_problems": [],
        "wait_stats": stats,
    }
    if not waited["complete"]:
        entries = pending_report(api, waited, params["namespace"], selectors,
                                 log_lines=params["log_lines"])
        result["pending_nodes"] = entries
        if params["wait"]:
            message = timeout_message(params["driver"], params["timeout"], entries)
            if waited.get("last_error"):
                message += "\nlast API error: %s" % waited["last_error"]
            # the nodes that did complete are reported all the same (returned as ``topology``)
            result["topology"] = _facts(waited, params["driver"])
            return result, message

    facts = _facts(waited, params["driver"])
    result["ansible_facts"] = {"dra_cpu_topology": facts}
    result["summary"] = render_table(facts)

    problems = sizing.check_sizing(facts, params.get("expected_cells_per_node"),
                                   params.get("expected_cpus_per_node"), reserved)
    result["sizing_problems"] = problems
    messages = [p["message"] for p in problems]
    too_small = sizing.check_min_cell_cpus(facts, params.get("min_cell_cpus"))
    if too_small:
        messages.append(too_small)
    if messages:
        return result, "the published CPU topology does not match: " + "; ".join(messages)
    return result, None


def _facts(waited, driver):
    """The topology of the targets that completed: their node topologies were built by the waiter
    as each pool completed, so only the cluster-wide part is left to do here."""
    if waited["targets"]:
        return topo.cluster_topology(waited["node_facts"], driver)
    return topo.build_topology(waited["slices"], driver)
