# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""The kubevirtci sizing rule, checked against a published topology.

Owns: the expected cells of a node (``KUBEVIRT_NUM_VCPU`` CPUs split evenly
and contiguously over ``KUBEVIRT_NUM_NUMA_NODES`` cells, minus the reserved
CPUs), the comparison with what the driver published (``check_sizing``;
``check_shape`` for the device mode and grouping the release asks for) and
the smallest-largest-cell check (``check_min_cell_cpus``, against the largest
claim one cell allows; its message names each node's cells and how to turn it off). Reads the ``dra_cpu_topology`` shape built by
fact.py; does not parse slices and does not format tables.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from collections.abc import Iterable
from typing import Any

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.claim_limits import CLAIM_DEVICE_LIMIT
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.common.cpuset import format_cpuset
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.fact import (
    INDIVIDUAL,
    MACHINE,
    NUMANODE,
    TopologyError,
)
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.types import ClusterTopology, SizingProblem


def expected_cells(num_vcpu: int | str, num_cells: int | str,
                   reserved: Iterable[int | str] = ()) -> list[dict[str, Any]]:
    """The kubevirtci sizing rule for one node.

    The VM's ``num_vcpu`` CPUs are split evenly and contiguously over
    ``num_cells`` NUMA cells (cell i holds CPUs i*V/N .. (i+1)*V/N-1); each
    cell's allocatable CPUs are its CPUs minus the reserved ones in it.
    Returns ``[{id, cpus, reserved, allocatable_cpus, allocatable}]`` where
    ``cpus`` / ``allocatable`` are cpuset strings. Raises TopologyError when
    the split is uneven.
    """
    num_vcpu = int(num_vcpu)
    num_cells = int(num_cells)
    if num_vcpu <= 0 or num_cells <= 0:
        raise TopologyError("vCPUs (%d) and cells (%d) must be positive" % (num_vcpu, num_cells))
    if num_vcpu % num_cells:
        raise TopologyError("%d vCPUs cannot be split evenly over %d NUMA cells" % (num_vcpu, num_cells))
    per_cell = num_vcpu // num_cells
    reserved_set = set(int(c) for c in reserved or ())
    cells = []
    for index in range(num_cells):
        cpus = set(range(index * per_cell, (index + 1) * per_cell))
        cells.append({
            "id": index,
            "cpus": format_cpuset(cpus),
            "reserved": format_cpuset(cpus & reserved_set),
            "allocatable": format_cpuset(cpus - reserved_set),
            "allocatable_cpus": len(cpus - reserved_set),
        })
    return cells


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
    problems: list[SizingProblem] = []
    reserved = sorted(set(int(c) for c in reserved_cpus or ()))
    cells_n = int(expected_cells_per_node) if expected_cells_per_node not in (None, "") else None
    cpus_n = int(expected_cpus_per_node) if expected_cpus_per_node not in (None, "") else None
    if cells_n is None and cpus_n is None:
        return problems

    plan = None
    node_total = None
    if cpus_n is not None:
        outside = [c for c in reserved if c >= cpus_n]
        if outside:
            problems.append(_problem(
                None, None, format_cpuset(outside), "0-%d" % (cpus_n - 1),
                "reserved CPUs %s do not exist on a node with %d CPUs"
                % (format_cpuset(outside), cpus_n)))
        node_total = cpus_n - len([c for c in reserved if c < cpus_n])
        if cells_n is not None:
            try:
                plan = expected_cells(cpus_n, cells_n, reserved)
            except TopologyError as exc:
                problems.append(_problem(None, None, cpus_n, "a multiple of %d" % cells_n, str(exc)))
                return problems

    nodes = topology.get("nodes") or {}
    if not nodes:
        problems.append(_problem(None, None, 0, "at least one node", "no node has published its CPUs"))
        return problems

    for name in sorted(nodes):
        node = nodes[name]
        cells = node.get("cells") or []
        by_id = dict((c["id"], c) for c in cells)
        group_by = node.get("group_by")
        per_cell_rule = group_by == NUMANODE or node.get("mode") == INDIVIDUAL

        if cpus_n is not None and node_total is not None and node.get("allocatable_cpus") != node_total:
            problems.append(_problem(
                name, None, node.get("allocatable_cpus"), node_total,
                "node %s publishes %s allocatable CPUs, expected %d (%d CPUs - %d reserved)"
                % (name, node.get("allocatable_cpus"), node_total, cpus_n, cpus_n - node_total)))

        if group_by == MACHINE and cells_n is not None and len(cells) != 1:
            problems.append(_problem(name, None, len(cells), 1,
                                     "node %s: machine grouping should publish one cell, found %d"
                                     % (name, len(cells))))
        if not per_cell_rule:
            continue

        if plan is None:
            if cells_n is not None and len(cells) != cells_n:
                problems.append(_problem(
                    name, None, len(cells), cells_n,
                    "node %s publishes %d NUMA cells, expected %d" % (name, len(cells), cells_n)))
            continue

        wanted = [c for c in plan if c["allocatable_cpus"] > 0]
        wanted_ids = [c["id"] for c in wanted]
        observed_ids = sorted(by_id)
        if observed_ids != wanted_ids:
            problems.append(_problem(
                name, None, observed_ids, wanted_ids,
                "node %s publishes cells %s, expected cells %s (%s CPUs over %s NUMA cells, reserved %s)"
                % (name, _ids(observed_ids), _ids(wanted_ids), cpus_n, cells_n,
                   format_cpuset(reserved) or "none")))
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
