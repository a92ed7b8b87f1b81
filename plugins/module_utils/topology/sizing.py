# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""A published topology against what was asked for (pure): the kubevirtci sizing rule
(common/node_sizing.py) per node (``check_sizing``), the device mode and grouping (``check_shape``)
and the largest claim one cell holds (``check_min_cell_cpus``). Reads the ``dra_cpu_topology`` shape
fact.py builds; parses no slices and formats no tables.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from collections.abc import Iterable
from typing import Any

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.claim_limits import CLAIM_DEVICE_LIMIT
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.common.cpuset import format_cpuset
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.common import node_sizing
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.fact import (
    INDIVIDUAL,
    MACHINE,
)
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.types import Cell, ClusterTopology, NodeTopology, SizingProblem


def _problem(node: str | None, cell: int | None, observed: int | str | list[int], expected: int | str | list[int],
             message: str) -> SizingProblem:
    return {"node": node, "cell": cell, "observed": observed, "expected": expected, "message": message}


def check_shape(topology: ClusterTopology, expected_mode: str | None = "",
                expected_group_by: str | None = "") -> list[SizingProblem]:
    """Compare each node's published device mode and grouping with the ones asked for (the
    release's values; '' checks nothing). Returns problems as ``check_sizing``. After an upgrade to
    another mode or grouping the old driver's pool is complete until the new pod publishes: a
    mismatch here is what makes the topology stage look again (its ``sizing_grace``)."""
    problems = []
    for name in sorted(topology.get("nodes") or {}):
        node = topology["nodes"][name]
        mode, group_by = node.get("mode"), node.get("group_by")
        if expected_mode and mode != expected_mode:
            problems.append(_problem(name, None, mode, expected_mode,
                                     "node %s publishes %s devices, the release asks for %s"
                                     % (name, mode, expected_mode)))
        elif expected_group_by and mode != INDIVIDUAL and group_by != expected_group_by:
            problems.append(_problem(name, None, group_by, expected_group_by,
                                     "node %s publishes devices grouped by %s, the release asks for %s"
                                     % (name, group_by, expected_group_by)))
    return problems


def check_sizing(topology: ClusterTopology, expected_cells_per_node: int | str | None = None,
                 expected_cpus_per_node: int | str | None = None,
                 reserved_cpus: Iterable[int | str] = ()) -> list[SizingProblem]:
    """Compare the published topology with the kubevirtci sizing rule.

    Returns a list of problems ``{node, cell, observed, expected, message}``
    (empty when everything matches). With both expectations, every node must
    have the expected cells with ``V/N - reserved-in-cell`` allocatable CPUs
    (grouped mode omits a cell left with no CPU; individual mode also checks
    the CPU ids of each cell when published). With only one of them, the
    number of cells or the node total is checked.
    """
    reserved = sorted(set(int(c) for c in reserved_cpus or ()))
    cells_n = int(expected_cells_per_node) if expected_cells_per_node not in (None, "") else None
    cpus_n = int(expected_cpus_per_node) if expected_cpus_per_node not in (None, "") else None
    if cells_n is None and cpus_n is None:
        return []
    problems, plan = _expectations(cells_n, cpus_n, reserved)
    if cpus_n is not None and cells_n is not None and plan is None:
        return problems
    nodes = topology.get("nodes") or {}
    if not nodes:
        problems.append(_problem(None, None, 0, "at least one node", "no node has published its CPUs"))
        return problems
    node_total = cpus_n - len([c for c in reserved if c < cpus_n]) if cpus_n is not None else None
    for name in sorted(nodes):
        problems += _check_node(name, nodes[name], cells_n, cpus_n, node_total, plan, reserved)
    return problems


def _expectations(cells_n: int | None, cpus_n: int | None,
                  reserved: list[int]) -> tuple[list[SizingProblem], list[node_sizing.ExpectedCell] | None]:
    """(problems of the expectations themselves, the expected cells or None)."""
    problems: list[SizingProblem] = []
    if cpus_n is None:
        return problems, None
    outside = node_sizing.reserved_outside(reserved, cpus_n)
    if outside:
        problems.append(_problem(
            None, None, format_cpuset(outside), "0-%d" % (cpus_n - 1),
            "reserved CPUs %s do not exist on a node with %d CPUs" % (format_cpuset(outside), cpus_n)))
    if cells_n is None:
        return problems, None
    try:
        return problems, node_sizing.expected_cells(cpus_n, cells_n, reserved)
    except ValueError as exc:  # node_sizing.UnevenSplit, or a count that is not positive
        problems.append(_problem(None, None, cpus_n, "a multiple of %d" % cells_n, str(exc)))
        return problems, None


def _check_node(name: str, node: NodeTopology, cells_n: int | None, cpus_n: int | None, node_total: int | None,
                plan: list[node_sizing.ExpectedCell] | None, reserved: list[int]) -> list[SizingProblem]:
    """One node's problems against the expectations."""
    problems = []
    cells = node.get("cells") or []
    published: Any = node.get("allocatable_cpus")
    if cpus_n is not None and node_total is not None and published != node_total:
        problems.append(_problem(
            name, None, published, node_total,
            "node %s publishes %s allocatable CPUs, expected %d (%d CPUs - %d reserved)"
            % (name, published, node_total, cpus_n, cpus_n - node_total)))
    if node.get("group_by") == MACHINE and cells_n is not None and len(cells) != 1:
        problems.append(_problem(name, None, len(cells), 1,
                                 "node %s: machine grouping should publish one cell, found %d"
                                 % (name, len(cells))))
    if not node_sizing.cells_are_numa_nodes(node.get("mode"), node.get("group_by")):
        return problems
    if plan is None:
        if cells_n is not None and len(cells) != cells_n:
            problems.append(_problem(
                name, None, len(cells), cells_n,
                "node %s publishes %d NUMA cells, expected %d" % (name, len(cells), cells_n)))
        return problems
    return problems + _check_cells(name, cells, plan, cells_n, cpus_n, reserved)


def _check_cells(name: str, cells: list[Cell], plan: list[node_sizing.ExpectedCell], cells_n: int | None,
                 cpus_n: int | None, reserved: list[int]) -> list[SizingProblem]:
    """One node's published cells against the expected ones."""
    problems = []
    by_id = dict((c["id"], c) for c in cells)
    wanted = [c for c in plan if c["allocatable_cpus"] > 0]
    wanted_ids = [c["id"] for c in wanted]
    observed_ids = sorted(by_id)
    if observed_ids != wanted_ids:
        problems.append(_problem(
            name, None, observed_ids, wanted_ids,
            "node %s publishes cells %s, expected cells %s (%s CPUs over %s NUMA cells, reserved %s)"
            % (name, _ids(observed_ids), _ids(wanted_ids), cpus_n, cells_n, format_cpuset(reserved) or "none")))
    for cell in wanted:
        got = by_id.get(cell["id"])
        if got is None:
            continue
        if got["allocatable_cpus"] != cell["allocatable_cpus"]:
            problems.append(_problem(
                name, cell["id"], got["allocatable_cpus"], cell["allocatable_cpus"],
                "node %s cell %d has %d allocatable CPUs, expected %d (CPUs %s minus reserved %s)"
                % (name, cell["id"], got["allocatable_cpus"], cell["allocatable_cpus"],
                   cell["cpus"], cell["reserved"] or "none")))
        elif "cpus" in got and got["cpus"] != cell["allocatable"]:
            problems.append(_problem(
                name, cell["id"], got["cpus"], cell["allocatable"],
                "node %s cell %d holds CPUs %s, expected the contiguous CPUs %s"
                % (name, cell["id"], got["cpus"], cell["allocatable"])))
    return problems


def _ids(ids: list[int]) -> str:
    return "[" + ", ".join(str(i) for i in ids) + "]"


# nodes named one by one in check_min_cell_cpus's message (the fact and the report file have them all)
MAX_NAMED_NODES = 20
# how the min_cell_cpus check is turned off, at the end of its message
MIN_CELL_CPUS_OFF = "min_cell_cpus 0 (role variable dra_cpu_min_cell_cpus: 0) turns this check off"


def _host_cpus(count: int) -> str:
    return "%d host CPU%s" % (count, "" if count == 1 else "s")


def _nodes_cpus(topology: ClusterTopology) -> str:
    """Each node and what it publishes: ``node01 cells 0=4, 1=6; node02 no CPU; node03 not Ready``,
    past MAX_NAMED_NODES nodes ``and N more``."""
    names = sorted(topology.get("nodes") or {})
    if not names:
        return "no node has published its CPUs"
    parts = []
    for name in names[:MAX_NAMED_NODES]:
        node = topology["nodes"][name]
        cells = node.get("cells") or []
        if not node.get("ready", True):
            parts.append("%s not Ready" % name)
        elif not cells:
            parts.append("%s no CPU" % name)
        else:
            parts.append("%s cells %s" % (name, ", ".join("%s=%s" % (c["id"], c["allocatable_cpus"]) for c in cells)))
    if len(names) > MAX_NAMED_NODES:
        parts.append("and %d more" % (len(names) - MAX_NAMED_NODES))
    return "; ".join(parts)


def check_min_cell_cpus(topology: ClusterTopology, min_cell_cpus: int | str | None) -> str | None:
    """None when one claim of ``min_cell_cpus`` CPUs fits in one cell, else a message with the numbers:
    why, each node's cells (a node not Ready counts in no figure) and how to turn the check off.

    What fits in one cell is ``max_vm_host_cpus``: the largest cell, and in individual mode no more
    than the API's limit on the devices of one claim (claim_limits.py), however big the cell. None,
    '' or 0 check nothing (the role's default, 1, fails an install after which no cell holds a CPU).
    """
    if min_cell_cpus in (None, "") or int(min_cell_cpus) <= 0:
        return None
    need = int(min_cell_cpus)
    largest = topology.get("largest_cell")
    if largest and topology.get("max_vm_host_cpus", largest["allocatable_cpus"]) >= need:
        return None
    if not largest:
        why = "no Ready node publishes a CPU"
    elif largest["allocatable_cpus"] >= need:
        why = ("the largest cell, node %s cell %s, has %d allocatable CPUs, but in individual mode a claim is "
               "one device per CPU and Kubernetes allocates at most %s devices to one claim"
               % (largest["node"], largest["id"], largest["allocatable_cpus"],
                  topology.get("claim_device_limit", CLAIM_DEVICE_LIMIT)))
    else:
        why = ("the largest cell is node %s cell %s with %d allocatable CPUs"
               % (largest["node"], largest["id"], largest["allocatable_cpus"]))
    return "no cell can hold a VM of %s: %s (nodes: %s); %s" % (_host_cpus(need), why, _nodes_cpus(topology),
                                                                MIN_CELL_CPUS_OFF)
