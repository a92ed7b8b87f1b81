# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""kubevirtci's node sizing rule, once (pure): a node's ``KUBEVIRT_NUM_VCPU`` CPUs split evenly and
contiguously over ``KUBEVIRT_NUM_NUMA_NODES`` cells, the reserved CPUs inside them, and which
published groupings are NUMA cells. validate checks the role's variables with it, topology the
published topology; each words its own message.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from collections.abc import Iterable
from typing import TypedDict

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.common.cpuset import format_cpuset

NUMANODE = "numanode"
INDIVIDUAL = "individual"
# the grouping of a release that sets none (the chart's and driver's default)
DEFAULT_GROUP_BY = NUMANODE


# one expected cell of a node (functional form: the sizing checks read its keys by name)
ExpectedCell = TypedDict("ExpectedCell", {
    "id": int, "cpus": str, "reserved": str, "allocatable": str, "allocatable_cpus": int})


class UnevenSplit(ValueError):
    """The vCPUs cannot be split evenly over the cells."""


def splits_evenly(num_vcpu: int, num_cells: int) -> bool:
    """Whether ``num_vcpu`` CPUs split evenly over ``num_cells`` cells."""
    return num_vcpu % num_cells == 0


def reserved_outside(reserved: Iterable[int], num_vcpu: int) -> list[int]:
    """The reserved CPU ids a node of ``num_vcpu`` CPUs does not have, sorted."""
    return sorted(set(c for c in reserved if c >= num_vcpu))


def cells_are_numa_nodes(mode: str | None, group_by: str | None) -> bool:
    """Whether the cells a driver publishes are the node's NUMA nodes: in individual mode (each
    device names its NUMA node) and when grouped by NUMA node (a release's '' is DEFAULT_GROUP_BY:
    the caller says so)."""
    return mode == INDIVIDUAL or group_by == NUMANODE


def expected_cells(num_vcpu: int, num_cells: int, reserved: Iterable[int] = ()) -> list[ExpectedCell]:
    """The cells of one node: cell i holds CPUs i*V/N .. (i+1)*V/N-1, its allocatable CPUs are those
    minus the reserved ones. ``[{id, cpus, reserved, allocatable_cpus, allocatable}]`` (cpuset
    strings). Raises ValueError on a count that is not positive, UnevenSplit on an uneven split."""
    if num_vcpu <= 0 or num_cells <= 0:
        raise ValueError("vCPUs (%d) and cells (%d) must be positive" % (num_vcpu, num_cells))
    if not splits_evenly(num_vcpu, num_cells):
        raise UnevenSplit("%d vCPUs cannot be split evenly over %d NUMA cells" % (num_vcpu, num_cells))
    per_cell = num_vcpu // num_cells
    reserved_set = set(reserved)
    cells: list[ExpectedCell] = []
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
