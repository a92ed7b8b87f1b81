# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""Complete pools -> the CPU topology of each node and of the cluster.

Owns: reading the devices of a complete pool (attributes, ``<driver>/cpu``
capacity, the cell each device belongs to), the detailed topology that the
table, the sizing checks and the report files read, and the shape of the
``dra_cpu_topology`` fact (``fact_of``: per node its total and its cells'
allocatable CPUs, the cluster-wide figures). Which slices form a complete pool is
slice_pools.py; the largest claim the API allocates is claim_limits.py; the
sizing rule is sizing.py; the table is table.py. Pure functions;
nothing here talks to a cluster.

* Grouped mode: one device per cell (NUMA node, socket or the machine) with
  capacity ``<driver>/cpu``; the cell's allocatable CPUs are that capacity.
* Individual mode: one device per CPU and no capacity; cells are the NUMA
  nodes (attribute ``numaNodeID``) and a cell's allocatable CPUs are its
  number of devices.
* ``max_vm_host_cpus`` is the largest claim the API allocates with all its
  CPUs in one cell, ``max_node_host_cpus`` the largest on one node at all
  (claim_limits.py): in grouped mode both are the largest device's capacity
  (a claim takes all its CPUs from one device); in individual mode they are
  the largest cell and the largest node, each cut to the API's limit of
  ``claim_device_limit`` devices per claim.
* ``max_vm_vcpus``, ``max_vm_vcpus_isolated_emulator_thread`` and ``max_vm_vcpus_even_parity`` are
  the largest VM in vCPUs whose claim is ``max_vm_host_cpus`` (KubeVirt's claim size,
  common/kubevirt_sizes.py): without ``isolateEmulatorThread``, with it, and with it and even parity.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import re
from collections.abc import Iterable
from typing import Any

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.claim_limits import (
    CLAIM_DEVICE_LIMIT,
    largest_claims,
)
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.common.cpuset import (
    format_cpuset,
)
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.common.kubevirt_sizes import vm_sizes
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology import node_allocatable
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.slice_pools import (
    DEFAULT_DRIVER,
    group_pools,
    pools_by_node,
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


def _devices(obj: dict[str, Any]) -> list[dict[str, Any]]:
    devices = []
    for device in ((obj or {}).get("spec") or {}).get("devices") or []:
        if isinstance(device, dict) and "basic" in device and isinstance(device["basic"], dict):
            # v1beta1 shape: fields under "basic"
            merged = dict(device["basic"])
            merged["name"] = device.get("name")
            device = merged
        devices.append(device)
    return devices


def device_attribute(device: dict[str, Any], name: str, driver: str = DEFAULT_DRIVER, default: Any = None) -> Any:
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


def device_capacity(device: dict[str, Any], driver: str = DEFAULT_DRIVER) -> int | float | None:
    """The ``<driver>/cpu`` capacity of a device, or None (individual device)."""
    capacity = device.get("capacity") or {}
    for key in ("%s/cpu" % driver, "cpu"):
        if key in capacity:
            return parse_quantity(capacity[key])
    return None


# --------------------------------------------------------------------------- topology


def group_of(device: dict[str, Any], driver: str) -> tuple[str, int]:
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


def numa_of(device: dict[str, Any], driver: str) -> int:
    for attr, domain in (("numaNodeID", driver), ("numaNode", "dra.net"),
                         ("numaNode", "resource.kubernetes.io")):
        value = device_attribute(device, attr, domain)
        if value is not None:
            return int(value)
    return 0


def node_topology(pool: dict[str, Any], driver: str = DEFAULT_DRIVER) -> dict[str, Any]:
    """The topology of one complete pool.

    Returns ``{pool_generation, allocatable_cpus, cells, mode, group_by,
    pool, slices, smt_enabled, ready, node_allocatable_mapping}`` (the last: every device carries
    KEP-5517's ``nodeAllocatableResources``; ``ready`` true: cluster_topology
    sets it false for a node that is not Ready); each cell is ``{id, devices,
    allocatable_cpus}`` (individual mode adds ``cpus``, the cpuset of the
    cell's CPU ids when the driver publishes ``cpuID``).
    """
    devices = []
    for obj in pool["slices"]:
        devices.extend(_devices(obj))
    grouped = [d for d in devices if device_capacity(d, driver) is not None]
    smt = None
    for device in devices:
        value = device_attribute(device, "smtEnabled", driver)
        if value is not None:
            smt = bool(value) if smt is None else (smt or bool(value))

    cells: dict[int, dict[str, Any]] = {}
    if grouped:
        mode = GROUPED
        groups = set()
        for device in grouped:
            group, cell_id = group_of(device, driver)
            groups.add(group)
            cell = cells.setdefault(cell_id, {"id": cell_id, "devices": [], "allocatable_cpus": 0})
            cell["devices"].append(device.get("name"))
            cell["allocatable_cpus"] += device_capacity(device, driver)
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
            cell["devices"].append(device.get("name"))
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


def complete_node_topologies(slices: list[dict[str, Any]], driver: str = DEFAULT_DRIVER,
                             nodes: list[str] | None = None) -> dict[str, Any]:
    """``{node: node_topology()}`` of the nodes with a complete pool; ``nodes`` (optional) restricts
    it to those node names."""
    by_node = pools_by_node(group_pools(slices, driver))
    wanted = set(nodes) if nodes is not None else None
    return dict((node, node_topology(by_node[node], driver)) for node in sorted(by_node)
                if (wanted is None or node in wanted) and by_node[node]["complete"])


def cluster_topology(node_facts: dict[str, Any], driver: str = DEFAULT_DRIVER,
                     not_ready: list[str] | None = None) -> dict[str, Any]:
    """The detailed topology from the per-node topologies (``{node: node_topology()}``): the
    cluster-wide figures of the fact and, in ``nodes``, every node's whole ``node_topology()``
    (fact_of keeps the figures and a node's total and cells).

    ``not_ready`` names the nodes whose ``Ready`` condition is not ``True``: their pools stay in
    ``nodes`` (what the driver last published, ``ready: false``) but count in none of the
    cluster-wide figures, as the scheduler places no new pod there (the node lifecycle controller
    taints it ``node.kubernetes.io/unreachable`` or ``not-ready``, NoSchedule).
    """
    down = set(not_ready or ())
    node_facts = dict((name, dict(facts, ready=False) if name in down else facts)
                      for name, facts in node_facts.items())
    largest = smallest = None
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

    def _ref(item: tuple[str, dict[str, Any]] | None) -> dict[str, Any] | None:
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


# a node's keys in the fact (fact_of); the rest of node_topology() is in the table and the report files
FACT_NODE_KEYS = ("allocatable_cpus", "ready", "pool_generation")


def fact_of(topology: dict[str, Any]) -> dict[str, Any]:
    """The ``dra_cpu_topology`` fact of a detailed topology (cluster_topology): its cluster-wide
    figures, and per node ``allocatable_cpus``, ``ready``, ``pool_generation`` and ``cells``, a
    mapping of cell id (a string, as in JSON) to the cell's allocatable CPUs.

    A mapping of numbers, not the cells' dicts: Ansible copies a fact several times after the task
    (the worker's copies for the task's conditions, the registered result, every later task's
    variables), and the cost grows with the containers in it (bench/goal_causes.json).
    """
    fact = dict(topology)
    fact["nodes"] = dict(
        (name, dict([(key, node[key]) for key in FACT_NODE_KEYS]
                    + [("cells", dict((str(c["id"]), c["allocatable_cpus"]) for c in node["cells"]))]))
        for name, node in topology["nodes"].items())
    return fact
