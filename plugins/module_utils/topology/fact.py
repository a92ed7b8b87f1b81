# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""Complete pools -> the CPU topology of each node and of the cluster, and their shapes.

Owns: reading a pool's devices (attributes, ``<driver>/cpu`` capacity, the cell of each device), the
detailed topology (``cluster_topology``) that the table, the sizing checks and the report files read,
and the ``dra_cpu_topology`` fact (``fact_of``), as types.py declares them. Which slices form a
pool is slice_pools.py, the largest claim claim_limits.py. Pure; the upstream facts it rests on are in
docs/internals.md, "Why the preflight, the topology and verify read what they read".
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import re
from collections.abc import Iterable
from typing import Any, cast

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.claim_limits import (
    CLAIM_DEVICE_LIMIT,
    largest_claims,
)
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.common.cpuset import (
    format_cpuset,
)
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.common.kubevirt_sizes import vm_sizes
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.types import K8sObject
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology import node_allocatable, pcie_roots
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.slice_pools import (
    DEFAULT_DRIVER,
    group_pools,
    pools_by_node,
    slice_devices,
)
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.types import (
    Cell,
    CellRef,
    ClusterTopology,
    NodeFact,
    NodeTopology,
    Pool,
    TopologyFact,
)

GROUPED = "grouped"
INDIVIDUAL = "individual"

NUMANODE = "numanode"
SOCKET = "socket"
MACHINE = "machine"

_GROUP_NAMES = (
    (re.compile(r"^cpudevnuma(\d+)$"), NUMANODE),
    (re.compile(r"^cpudevsocket(\d+)$"), SOCKET),
    (re.compile(r"^cpudevmachine$"), MACHINE),
)

_QUANTITY = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*(m|k|M|G|T|Ki|Mi|Gi|Ti)?\s*$")
_SUFFIX = {None: 1, "m": 0.001, "k": 1000, "M": 10 ** 6, "G": 10 ** 9, "T": 10 ** 12,
           "Ki": 1024, "Mi": 1024 ** 2, "Gi": 1024 ** 3, "Ti": 1024 ** 4}


class TopologyError(ValueError):
    """The slices cannot be turned into a topology."""


# --------------------------------------------------------------------------- devices


def parse_quantity(value: Any) -> float | int:
    """Parse a Kubernetes quantity holding a CPU count: ``"4"``, ``4``, ``"4000m"``.

    Returns an int when the value is whole, a float otherwise; raises
    TopologyError for anything else.
    """
    if isinstance(value, dict):
        value = value.get("value")
    if isinstance(value, bool) or value is None:
        raise TopologyError("not a quantity: %r" % (value,))
    if isinstance(value, (int, float)):
        number = value
    else:
        match = _QUANTITY.match(str(value))
        if not match:
            raise TopologyError("not a quantity: %r" % (value,))
        number = float(match.group(1)) * _SUFFIX[match.group(2)]
    if float(number).is_integer():
        return int(number)
    return number


def device_attribute(device: K8sObject, name: str, driver: str = DEFAULT_DRIVER, default: Any = None) -> Any:
    """Value of attribute ``name`` (qualified ``<driver>/name`` or bare ``name``)."""
    attrs = device.get("attributes") or {}
    for key in ("%s/%s" % (driver, name), name):
        if key in attrs:
            return attribute_value(attrs[key], default)
    return default


def attribute_value(value: Any, default: Any = None) -> Any:
    """A DRA device attribute's value: the one field of its typed form (``{"int": 3}``), or the value
    itself when it is not wrapped; ``default`` for a typed form of no known kind."""
    if isinstance(value, dict):
        for kind in ("int", "bool", "string", "version"):
            if kind in value:
                return value[kind]
        return default
    return value


def device_capacity(device: K8sObject, driver: str = DEFAULT_DRIVER) -> int | float | None:
    """The ``<driver>/cpu`` capacity of a device, or None (individual device)."""
    capacity = device.get("capacity") or {}
    for key in ("%s/cpu" % driver, "cpu"):
        if key in capacity:
            return parse_quantity(capacity[key])
    return None


# --------------------------------------------------------------------------- topology


def group_of(device: K8sObject, driver: str) -> tuple[str, int]:
    """(group_by, cell_id) of a grouped-mode device."""
    name = device.get("name") or ""
    for pattern, group in _GROUP_NAMES:
        match = pattern.match(name)
        if match:
            if group == NUMANODE:
                cell = device_attribute(device, "numaNodeID", driver)
            elif group == SOCKET:
                cell = device_attribute(device, "socketID", driver)
            else:
                return MACHINE, 0
            if cell is None:
                cell = int(match.group(1))
            return group, int(cell)
    # unknown name: infer from the attributes
    numa = device_attribute(device, "numaNodeID", driver)
    if numa is not None:
        return NUMANODE, int(numa)
    socket = device_attribute(device, "socketID", driver)
    if socket is not None:
        return SOCKET, int(socket)
    return MACHINE, 0


def numa_of(device: K8sObject, driver: str) -> int:
    for attr, domain in (("numaNodeID", driver), ("numaNode", "dra.net"),
                         ("numaNode", "resource.kubernetes.io")):
        value = device_attribute(device, attr, domain)
        if value is not None:
            return int(value)
    return 0


def node_topology(pool: Pool, driver: str = DEFAULT_DRIVER) -> NodeTopology:
    """The topology of one complete pool (``node_allocatable_mapping``: every device carries
    KEP-5517's ``nodeAllocatableResources``; ``ready`` true: cluster_topology sets it false for a
    node that is not Ready)."""
    devices = []
    for obj in pool["slices"]:
        devices.extend(slice_devices(obj))
    grouped = [d for d in devices if device_capacity(d, driver) is not None]
    smt = None
    for device in devices:
        value = device_attribute(device, "smtEnabled", driver)
        if value is not None:
            smt = bool(value) if smt is None else (smt or bool(value))

    cells: dict[int, Cell] = {}
    members: dict[int, list[K8sObject]] = {}
    if grouped:
        mode = GROUPED
        groups = set()
        for device in grouped:
            group, cell_id = group_of(device, driver)
            groups.add(group)
            cell = cells.setdefault(cell_id, {"id": cell_id, "devices": [], "allocatable_cpus": 0})
            cell["devices"].append(device.get("name") or "")
            members.setdefault(cell_id, []).append(device)
            # not None: ``grouped`` holds the devices with a capacity
            capacity: Any = device_capacity(device, driver)
            cell["allocatable_cpus"] += capacity
        if len(groups) == 1:
            group_by = groups.pop()
        else:
            group_by = "mixed"
    else:
        mode = INDIVIDUAL
        group_by = NUMANODE
        cpu_ids: dict[int, list[int]] = {}
        for device in devices:
            cell_id = numa_of(device, driver)
            cell = cells.setdefault(cell_id, {"id": cell_id, "devices": [], "allocatable_cpus": 0})
            cell["devices"].append(device.get("name") or "")
            members.setdefault(cell_id, []).append(device)
            cell["allocatable_cpus"] += 1
            cpu = device_attribute(device, "cpuID", driver)
            if cpu is not None:
                cpu_ids.setdefault(cell_id, []).append(int(cpu))
        for cell_id, ids in cpu_ids.items():
            cells[cell_id]["cpus"] = format_cpuset(ids)

    ordered = []
    for cell_id in sorted(cells):
        cell = cells[cell_id]
        cell["devices"] = sorted(cell["devices"], key=_device_sort_key)
        _locate(cell, members.get(cell_id) or [])
        ordered.append(cell)
    return {
        "pool": pool["name"],
        "pool_generation": pool["generation"],
        "slices": pool["published"],
        "mode": mode,
        "group_by": group_by,
        "smt_enabled": smt,
        "allocatable_cpus": sum(c["allocatable_cpus"] for c in ordered),
        "cells": ordered,
        "ready": True,
        "node_allocatable_mapping": node_allocatable.all_carry(devices),
    }


def _locate(cell: Cell, devices: list[K8sObject]) -> None:
    """Where the cell's CPUs sit, as its devices publish it: ``pcie_roots`` (the union of the
    devices' ``resource.kubernetes.io/pcieRoot``) and ``numa_node`` (``resource.kubernetes.io/numaNode``),
    each only when published."""
    where = pcie_roots.locality(devices)
    if where["pcie_roots"]:
        cell["pcie_roots"] = where["pcie_roots"]
    if where["numa_node"] is not None:
        cell["numa_node"] = where["numa_node"]


def _device_sort_key(name: str) -> tuple[str, int, str]:
    name = name or ""
    digits = re.search(r"(\d+)$", name)
    return (re.sub(r"\d+$", "", name), int(digits.group(1)) if digits else -1, name)


def _common(values: Iterable[str | None]) -> str | None:
    distinct = set(values)
    if not distinct:
        return None
    if len(distinct) == 1:
        return distinct.pop()
    return "mixed"


def complete_node_topologies(slices: list[K8sObject], driver: str = DEFAULT_DRIVER,
                             nodes: list[str] | None = None) -> dict[str, NodeTopology]:
    """``{node: node_topology()}`` of the nodes with a complete pool; ``nodes`` (optional) restricts
    it to those node names."""
    by_node = pools_by_node(group_pools(slices, driver))
    wanted = set(nodes) if nodes is not None else None
    return dict((node, node_topology(by_node[node], driver)) for node in sorted(by_node)
                if (wanted is None or node in wanted) and by_node[node]["complete"])


def cluster_topology(node_facts: dict[str, NodeTopology], driver: str = DEFAULT_DRIVER,
                     not_ready: list[str] | None = None) -> ClusterTopology:
    """The detailed topology of the per-node topologies: the cluster-wide figures and every node.
    The ``not_ready`` nodes stay in ``nodes`` (``ready: false``) but count in no figure."""
    down = set(not_ready or ())
    node_facts = dict((name, _not_ready(facts) if name in down else facts) for name, facts in node_facts.items())
    largest: tuple[str, Cell] | None = None
    smallest: tuple[str, Cell] | None = None
    in_one_cell = on_one_node = 0
    for node in sorted(node_facts):
        facts = node_facts[node]
        if not facts["ready"]:
            continue
        claims = largest_claims([c["allocatable_cpus"] for c in facts["cells"]], facts["allocatable_cpus"],
                                facts["mode"] == INDIVIDUAL)
        in_one_cell, on_one_node = max(in_one_cell, claims[0]), max(on_one_node, claims[1])
        for cell in facts["cells"]:
            if largest is None or cell["allocatable_cpus"] > largest[1]["allocatable_cpus"]:
                largest = (node, cell)
            if smallest is None or cell["allocatable_cpus"] < smallest[1]["allocatable_cpus"]:
                smallest = (node, cell)

    def _ref(item: tuple[str, Cell] | None) -> CellRef | None:
        if item is None:
            return None
        return {"node": item[0], "id": item[1]["id"], "allocatable_cpus": item[1]["allocatable_cpus"]}

    vcpus = vm_sizes(in_one_cell)
    return {
        "driver": driver,
        "mode": _common(n["mode"] for n in node_facts.values()),
        "group_by": _common(n["group_by"] for n in node_facts.values()),
        "nodes": node_facts,
        "not_ready_nodes": sorted(n for n in node_facts if n in down),
        "total_allocatable_cpus": sum(n["allocatable_cpus"] for n in node_facts.values() if n["ready"]),
        "max_vm_host_cpus": in_one_cell,
        "max_node_host_cpus": on_one_node,
        "max_vm_vcpus": vcpus["vcpus"],
        "max_vm_vcpus_isolated_emulator_thread": vcpus["isolated_emulator_thread"],
        "max_vm_vcpus_even_parity": vcpus["even_parity"],
        "claim_device_limit": CLAIM_DEVICE_LIMIT,
        "largest_cell": _ref(largest),
        "smallest_cell": _ref(smallest),
        # KEP-5517: every device of every pool carries nodeAllocatableResources (verify reads it)
        "node_allocatable_mapping": node_allocatable.cluster_mapping(node_facts),
    }


def _not_ready(facts: NodeTopology) -> NodeTopology:
    copy = facts.copy()
    copy["ready"] = False
    return copy


def _node_fact(node: NodeTopology) -> NodeFact:
    """A node in the fact; ``pcie_roots`` / ``numa_nodes`` ({cell id: roots / NUMA node}) only when
    some cell publishes them (pcie_roots.py)."""
    fact = NodeFact(allocatable_cpus=node["allocatable_cpus"], ready=node["ready"],
                    pool_generation=node["pool_generation"],
                    cells=dict((str(c["id"]), c["allocatable_cpus"]) for c in node["cells"]))
    roots = dict((str(c["id"]), list(c["pcie_roots"])) for c in node["cells"] if c.get("pcie_roots"))
    numa = dict((str(c["id"]), c["numa_node"]) for c in node["cells"] if c.get("numa_node") is not None)
    if roots:
        fact["pcie_roots"] = roots
    if numa:
        fact["numa_nodes"] = numa
    return fact


def fact_of(topology: ClusterTopology) -> TopologyFact:
    """The ``dra_cpu_topology`` fact of a detailed topology: its figures and, per node, a mapping of
    numbers (cheap for Ansible to copy at 1,000 nodes; bench/goal_causes.json)."""
    nodes = dict((name, _node_fact(node)) for name, node in topology["nodes"].items())
    # the same figures, in the same order, with the nodes' facts in place of their topologies
    return cast(TopologyFact, dict(topology, nodes=nodes))
