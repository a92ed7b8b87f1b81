# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""One run of cpu_topology: targets, the wait, the topology, the sizing checks, the reports.

Owns: the order of a run (resolve the driver's pods and their nodes, wait for or snapshot their
pools, then, targets taken from the pods, wait for the driver's rollout, build the
``dra_cpu_topology`` fact, check it against the sizing rule) and what it returns to the module:
``(result, failure message or None)``. The wait is waiter.py, the rollout rollout.py, the fact
fact.py, the checks sizing.py, the table table.py, the timeout messages pod_diagnostics.py and the
report files reports.py; ``run_cpu_topology`` is the whole run of the module and of its action
plugin (options checked, client built, ``run``, the result with ``failed``; k8s/runner.py runs it in either place);
``argument_spec`` the module's options. The module (plugins/modules/cpu_topology.py) holds the
documentation and the exit.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import time
from collections.abc import Callable, Iterable
from typing import Any, Dict, List, TypedDict

from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.auth import ArgumentSpec, auth_argument_spec
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.client import ClusterError, RawApi
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s import factory
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.types import ModuleParams
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.wait import WaitStats, poll_until
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.preflight.nodes import is_ready, node_name
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology import node_allocatable, pcie_roots, sizing
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.common.chart_values import GROUP_BY, MODES
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.common.cpuset import CpusetError, parse_cpuset
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology import fact as topo
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.types import ClusterTopology, SizingProblem, TopologyFact
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.table import not_published_line, render_table
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.driver_pods import (
    describe_selectors,
    driver_nodes,
    list_driver_pods,
    resolve_pod_selectors,
)
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.pod_diagnostics import (
    DriverHealth,
    PendingEntry,
    cannot_run_message,
    pending_report,
    rollout_message,
    rollout_report,
    timeout_message,
)
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.rollout import wait_serving
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.reports import write_topology_reports
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.waiter import SliceWaiter, WaitOutcome


class TopologyResult(TypedDict, total=False):
    """The cpu_topology module's result (plugins/modules/cpu_topology.py RETURN): the targets, the
    nodes the wait ended on, the sizing problems and the wait's stats; the fact on success, else
    ``topology``, ``failed`` and ``msg``; the table (``summary``) and the role's ``report``."""

    targets: List[str]
    dropped_nodes: List[str]
    pending_nodes: List[PendingEntry]
    sizing_problems: List[SizingProblem]
    wait_stats: WaitStats
    topology: TopologyFact
    ansible_facts: Dict[str, TopologyFact]
    summary: List[str]
    report: List[str]
    changed: bool
    failed: bool
    msg: str


def argument_spec() -> ArgumentSpec:
    spec: ArgumentSpec = dict(
        driver=dict(type="str", default=topo.DEFAULT_DRIVER),
        nodes=dict(type="list", elements="str"),
        namespace=dict(type="str", default="dra-driver-cpu"),
        release_name=dict(type="str", default=""),
        pod_selector=dict(type="str"),
        wait=dict(type="bool", default=True),
        timeout=dict(type="int", default=300),
        expected_cells_per_node=dict(type="int"),
        expected_cpus_per_node=dict(type="int"),
        reserved_cpus=dict(type="str", default=""),
        min_cell_cpus=dict(type="int"),
        log_lines=dict(type="int", default=20),
        report_dir=dict(type="path", default=""),
        record_failure=dict(type="str", default=""),
        expected_mode=dict(type="str", default="", choices=[""] + list(MODES)),
        expected_group_by=dict(type="str", default="", choices=[""] + list(GROUP_BY)),
        # KEP-5517: true = a pool counts only with nodeAllocatableResources on every device (false:
        # only without); unset = not checked
        expected_node_allocatable_mapping=dict(type="bool"),
        # PCIe roots: true = a pool counts only when some device carries resource.kubernetes.io/pcieRoot
        # (false: only when none does); unset = not checked
        expected_pcie_roots=dict(type="bool"),
        sizing_grace=dict(type="int", default=0),
        not_ready_nodes=dict(type="list", elements="str"),
    )
    spec.update(auth_argument_spec(AUTH_ARG_SPEC))
    return spec


def check_params(params: ModuleParams) -> tuple[list[str], list[int]]:
    """Problems with the options (list of messages) and the reserved CPU list."""
    problems: list[str] = []
    reserved: list[int] = []
    try:
        reserved = parse_cpuset(params["reserved_cpus"])
    except CpusetError as exc:
        problems.append("reserved_cpus: '%s' is not a valid cpuset (%s)" % (params["reserved_cpus"], exc))
    for name in ("timeout", "expected_cells_per_node", "expected_cpus_per_node", "min_cell_cpus"):
        value = params.get(name)
        if value is not None and value <= 0:
            problems.append("%s: %s is not positive" % (name, value))
    if params.get("log_lines") is not None and params["log_lines"] < 0:
        problems.append("log_lines: %s is negative" % params["log_lines"])
    cells, cpus = params.get("expected_cells_per_node"), params.get("expected_cpus_per_node")
    if cells and cpus and cpus > 0 and cells > 0 and cpus % cells:
        problems.append("expected_cpus_per_node: %d cannot be split evenly over %d cells (expected_cells_per_node)"
                        % (cpus, cells))
    return problems, reserved


def run_cpu_topology(params: ModuleParams, check_mode: bool, source: Any,
                     get_client: factory.GetClient) -> TopologyResult:
    """The module's result (``failed`` and ``msg`` on failure, when the topology is returned as
    ``topology`` instead of the fact); ``get_client(source)`` builds the client."""
    problems, reserved = check_params(params)
    if problems:
        return {"failed": True, "msg": "; ".join(problems)}
    try:
        api = factory.connect(get_client, source, params).api
        result, failure = run(api, params, reserved, report_dir=None if check_mode else params["report_dir"])
    except ClusterError as exc:
        return {"failed": True, "msg": factory.failure("cannot read the driver's CPU topology", exc)}
    result["changed"] = False
    if failure:
        # facts are not set on failure; the topology is still returned for the record
        facts = result.pop("ansible_facts", None)
        if facts:
            result["topology"] = facts["dra_cpu_topology"]
        result["failed"], result["msg"] = True, failure
    return result


def run(api: RawApi, params: ModuleParams, reserved: list[int], clock: Callable[[], float] | None = None,
        sleep: Callable[[float], None] | None = None,
        report_dir: str | None = None) -> tuple[TopologyResult, str | None]:
    """Resolve the targets, wait, build the topology. Returns (result, failure message or None);
    with ``report_dir`` the topology or the failure is also written there (reports.py)."""
    selectors, problem = resolve_pod_selectors(api, params["namespace"], params.get("release_name"),
                                               params.get("pod_selector"))
    result, failure, detail = _wait(api, params, reserved, selectors, problem, clock, sleep)
    result, failure, detail = _settle(api, params, reserved, selectors, problem, clock, sleep, result, failure,
                                      detail)
    # an earlier step's failure to record (the role's rescue): the report is about that one
    write_topology_reports(report_dir, api, params, selectors, result, params.get("record_failure") or failure,
                           detail)
    return result, failure


def _settle(api: RawApi, params: ModuleParams, reserved: list[int], selectors: list[str], problem: str | None,
            clock: Callable[[], float] | None, sleep: Callable[[float], None] | None, result: TopologyResult,
            failure: str | None,
            detail: ClusterTopology | None) -> tuple[TopologyResult, str | None, ClusterTopology | None]:
    """Every pool is complete but does not have the sizes asked for: within ``sizing_grace`` seconds
    look again, once a second. After an upgrade (new reservedCPUs) upstream's ResourceSlice
    controller keeps a pool's generation when at most one slice changed (docs/internals.md, "Why the
    waits are as they are"). Polled through k8s/wait.py (each look is a whole wait)."""
    grace = params.get("sizing_grace") or 0
    if not (grace > 0 and params["wait"] and failure and result.get("ansible_facts")):
        return result, failure, detail

    def again() -> tuple[TopologyResult, str | None, ClusterTopology | None]:
        return _wait(api, params, reserved, selectors, problem, clock, sleep)

    def settled(seen: tuple[TopologyResult, str | None, ClusterTopology | None]) -> bool:
        return not (seen[1] and seen[0].get("ansible_facts"))

    verdict = poll_until(again, settled, grace, 1.0, clock or time.monotonic, sleep or time.sleep,
                         initial=(result, failure, detail))
    seen: tuple[TopologyResult, str | None, ClusterTopology | None] = verdict.seen
    return seen


def _wait(api: RawApi, params: ModuleParams, reserved: list[int], selectors: list[str], problem: str | None,
          clock: Callable[[], float] | None,
          sleep: Callable[[float], None] | None) -> tuple[TopologyResult, str | None, ClusterTopology | None]:
    """One wait (or snapshot): ``(result, failure message or None, detailed topology or None)``; the
    result holds the fact (fact.fact_of), the table and the sizing checks read the detail."""
    kwargs: dict[str, Any] = dict((k, v) for k, v in (("clock", clock), ("sleep", sleep)) if v is not None)
    health = DriverHealth(api, params["namespace"], selectors, clock or time.monotonic, params["log_lines"])
    waiter = SliceWaiter(api, params["driver"], driver_check=health.check,
                         pool_check=pcie_roots.pool_check(params.get("expected_pcie_roots")), **kwargs)
    explicit = params.get("nodes")
    empty: TopologyResult = {"targets": [], "dropped_nodes": [], "pending_nodes": [], "sizing_problems": [], "wait_stats": {}}
    if explicit:
        targets = sorted(set(explicit))
    else:
        if problem and params["wait"]:
            return empty, problem, None
        targets = driver_nodes(list_driver_pods(api, params["namespace"], selectors))
        if not targets and params["wait"]:
            return empty, (
                "no driver pod found in namespace %s with %s: is the chart installed, and can its "
                "DaemonSet run on any node?" % (params["namespace"], describe_selectors(selectors))), None

    waited = waiter.wait(targets, params["timeout"]) if params["wait"] else waiter.snapshot(targets)

    stats = waited["stats"].copy()
    if "elapsed" in waited:
        stats["elapsed"] = waited["elapsed"]
    result: TopologyResult = {
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
            # the nodes that did complete are reported all the same (returned as ``topology``)
            detail = _facts(api, waited, params)
            result["topology"] = topo.fact_of(detail)
            return result, _pools_failure(params, waited, entries), detail

    down = None
    if params["wait"] and not explicit and waited["targets"]:
        # the pools are complete: is the driver that published them the one running now (rollout.py)?
        down = not_ready_nodes(api, params, waited["targets"])
        failure = _wait_rollout(api, params, selectors, [n for n in waited["targets"] if n not in down],
                                waited, stats, (clock, sleep, health), result)
        if failure:
            detail = _facts(api, waited, params, down)
            result["topology"] = topo.fact_of(detail)
            return result, failure, detail

    detail = _facts(api, waited, params, down)
    result["ansible_facts"] = {"dra_cpu_topology": topo.fact_of(detail)}
    result["summary"] = render_table(detail)
    # the role's report: the table; not waited for (check mode) with nodes missing or no node at all:
    # the table and one line saying so
    result["report"] = list(result["summary"])
    if not waited["complete"] or not (params["wait"] or detail.get("nodes")):
        result["report"].append(not_published_line([e.get("node") for e in result["pending_nodes"]],
                                                   params["timeout"]))

    result["report"] += node_allocatable.report_lines(detail)
    problems = sizing.check_shape(detail, params.get("expected_mode"), params.get("expected_group_by"))
    problems += node_allocatable.check_mapping(detail, params.get("expected_node_allocatable_mapping"))
    problems += sizing.check_sizing(detail, params.get("expected_cells_per_node"),
                                    params.get("expected_cpus_per_node"), reserved)
    result["sizing_problems"] = problems
    messages = [p["message"] for p in problems]
    too_small = sizing.check_min_cell_cpus(detail, params.get("min_cell_cpus"))
    if too_small:
        messages.append(too_small)
    if messages:
        return result, "the published CPU topology does not match: " + "; ".join(messages), detail
    return result, None, detail


def _pools_failure(params: ModuleParams, waited: WaitOutcome, entries: list[PendingEntry]) -> str:
    """Why the pools' wait did not complete: the driver cannot run, or time ran out (the last API error)."""
    failure = waited.get("failure")
    message = (cannot_run_message(params["driver"], failure) if failure
               else timeout_message(params["driver"], params["timeout"], entries))
    if waited.get("last_error"):
        message += "\nlast API error: %s" % waited["last_error"]
    return message


def _wait_rollout(api: RawApi, params: ModuleParams, selectors: list[str], nodes: list[str],
                  waited: WaitOutcome, stats: WaitStats,
                  timing: tuple[Callable[[], float] | None, Callable[[float], None] | None, DriverHealth],
                  result: TopologyResult) -> str | None:
    """Wait, within what is left of the timeout, until the release's DaemonSets have rolled out and
    every Ready target node's driver pod is Ready or wrote that node's pool (rollout.py), or the driver
    cannot run (``timing``'s DriverHealth). The failure message, or None; on failure
    ``result["pending_nodes"]`` holds each such node's pod state and logs."""
    clock, sleep, health = timing
    left = float(params["timeout"]) - float(waited.get("elapsed") or 0.0)
    release = "" if params.get("pod_selector") else (params.get("release_name") or "")
    serving = wait_serving(api, params["namespace"], selectors, release, nodes, left, clock or time.monotonic,
                           sleep or time.sleep, slices=waited.get("slices"), health=health)
    stats["rollout_passes"] = serving["passes"]
    if serving["done"]:
        return None
    entries = rollout_report(api, serving, params["namespace"], log_lines=params["log_lines"])
    result["pending_nodes"] = entries
    if serving["failure"]:
        return cannot_run_message(params["driver"], serving["failure"])
    return rollout_message(params["driver"], params["timeout"], serving, entries)


def not_ready_nodes(api: RawApi, params: ModuleParams, names: Iterable[str]) -> list[str]:
    """The nodes among ``names`` whose ``Ready`` condition is not ``True``: the role passes what its
    preflight read (``not_ready_nodes``); without it one list of the Nodes tells."""
    wanted = set(names)
    given = params.get("not_ready_nodes")
    if given is not None:
        return sorted(wanted.intersection(given))
    if not wanted:
        return []
    return sorted(str(node_name(obj)) for obj in api.list_nodes() if node_name(obj) in wanted and not is_ready(obj))


def _facts(api: RawApi, waited: WaitOutcome, params: ModuleParams,
           down: list[str] | None = None) -> ClusterTopology:
    """The detailed topology of the targets that completed: their node topologies were built by the waiter
    as each pool completed, so only the cluster-wide part is left to do here. ``down``: the not-Ready
    targets when already read."""
    driver = params["driver"]
    if waited["targets"]:
        if down is None:
            down = not_ready_nodes(api, params, waited["node_facts"])
        return topo.cluster_topology(waited["node_facts"], driver, down)
    nodes = topo.complete_node_topologies(waited["slices"], driver)
    return topo.cluster_topology(nodes, driver, not_ready_nodes(api, params, nodes))
