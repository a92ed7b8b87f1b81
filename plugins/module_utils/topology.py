# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""ResourceSlices of dra-driver-cpu -> pools, completeness and CPU topology.

Pure functions over ResourceSlice objects as plain dicts (the JSON shape of
``resource.k8s.io/v1``). Nothing here talks to a cluster.

Rules (see docs/internals.md and the driver reference):

* Slices are grouped by pool (``spec.pool.name``); the node of a pool is
  ``spec.nodeName``. Slice names are never looked at: they changed between
  driver releases.
* A pool is complete when the number of its slices at the pool's highest
  ``spec.pool.generation`` equals ``spec.pool.resourceSliceCount`` of those
  slices. Slices of older generations are left-overs of an update and are
  ignored.
* Grouped mode: one device per cell (NUMA node, socket or the machine) with
  capacity ``<driver>/cpu``; the cell's allocatable CPUs are that capacity.
* Individual mode: one device per CPU and no capacity; cells are the NUMA
  nodes (attribute ``numaNodeID``) and a cell's allocatable CPUs are its
  number of devices.
* ``max_vm_host_cpus`` is the largest allocatable count of a single cell: in
  grouped mode a claim takes all its CPUs from one device; in individual mode
  it is the biggest claim that stays inside one NUMA node (what KubeVirt's
  NUMA-aligned dedicated CPUs need). Upstream also limits an individual-mode
  claim to 32 devices; that limit is not applied here.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.cpuset import (
    format_cpuset,
)

DEFAULT_DRIVER = "dra.cpu"

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
_INDIVIDUAL_NAME = re.compile(r"^cpudev(\d+)$")

_QUANTITY = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*(m|k|M|G|T|Ki|Mi|Gi|Ti)?\s*$")
_SUFFIX = {None: 1, "m": 0.001, "k": 1000, "M": 10 ** 6, "G": 10 ** 9, "T": 10 ** 12,
           "Ki": 1024, "Mi": 1024 ** 2, "Gi": 1024 ** 3, "Ti": 1024 ** 4}


class TopologyError(ValueError):
    """The slices cannot be turned into a topology."""


# --------------------------------------------------------------------------- helpers


def parse_quantity(value):
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


def _spec(obj):
    return (obj or {}).get("spec") or {}


def _pool(obj):
    return _spec(obj).get("pool") or {}


def _int(value, default=0):
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def slice_node(obj):
    """The node a slice belongs to (``spec.nodeName``) or None."""
    return _spec(obj).get("nodeName") or None


def slice_name(obj):
    return ((obj or {}).get("metadata") or {}).get("name") or ""


def _devices(obj):
    devices = []
    for device in _spec(obj).get("devices") or []:
        if isinstance(device, dict) and "basic" in device and isinstance(device["basic"], dict):
            # v1beta1 shape: fields under "basic"
            merged = dict(device["basic"])
            merged["name"] = device.get("name")
            device = merged
        devices.append(device)
    return devices


def device_attribute(device, name, driver=DEFAULT_DRIVER, default=None):
    """Value of attribute ``name`` (qualified ``<driver>/name`` or bare ``name``)."""
    attrs = device.get("attributes") or {}
    for key in ("%s/%s" % (driver, name), name):
        if key in attrs:
            value = attrs[key]
            if isinstance(value, dict):
                for kind in ("int", "bool", "string", "version"):
                    if kind in value:
                        return value[kind]
                return default
            return value
    return default


def device_capacity(device, driver=DEFAULT_DRIVER):
    """The ``<driver>/cpu`` capacity of a device, or None (individual device)."""
    capacity = device.get("capacity") or {}
    for key in ("%s/cpu" % driver, "cpu"):
        if key in capacity:
            return parse_quantity(capacity[key])
    return None


# --------------------------------------------------------------------------- pools


def group_pools(slices, driver=DEFAULT_DRIVER):
    """Group slices by pool and judge each pool's completeness.

    Returns ``{pool_name: pool}`` where pool is a dict with keys ``name``,
    ``node``, ``generation`` (highest seen), ``resource_slice_count``
    (declared at that generation), ``slices`` (the slices at that
    generation), ``published`` (their number), ``stale_slices`` (number of
    slices of older generations), ``complete`` (bool) and ``reason`` (why it is
    not complete, '' when complete). Slices of other drivers are ignored.
    """
    by_pool = {}
    for obj in slices or []:
        spec = _spec(obj)
        if driver and spec.get("driver") not in (None, driver):
            continue
        pool = _pool(obj)
        name = pool.get("name") or slice_node(obj)
        if not name:
            continue
        by_pool.setdefault(name, []).append(obj)

    result = {}
    for name, members in by_pool.items():
        generation = max(_int(_pool(s).get("generation")) for s in members)
        current = [s for s in members if _int(_pool(s).get("generation")) == generation]
        counts = sorted(set(_int(_pool(s).get("resourceSliceCount"), 1) for s in current))
        declared = counts[-1]
        nodes = sorted(set(n for n in (slice_node(s) for s in current) if n))
        published = len(current)
        reason = ""
        if len(counts) > 1:
            reason = ("slices at generation %d disagree on resourceSliceCount (%s)"
                      % (generation, ", ".join(str(c) for c in counts)))
        elif published < declared:
            reason = ("%d of %d slices published at generation %d"
                      % (published, declared, generation))
        elif published > declared:
            reason = ("%d slices at generation %d but resourceSliceCount is %d"
                      % (published, generation, declared))
        result[name] = {
            "name": name,
            "node": nodes[0] if nodes else None,
            "generation": generation,
            "resource_slice_count": declared,
            "slices": sorted(current, key=slice_name),
            "published": published,
            "stale_slices": len(members) - published,
            "complete": not reason,
            "reason": reason,
        }
    return result


def pools_by_node(pools):
    """Map node name -> its pool (the pool named after the node wins)."""
    out = {}
    for name in sorted(pools):
        pool = pools[name]
        node = pool["node"]
        if not node:
            continue
        if node not in out or name == node:
            out[node] = pool
    return out


def pool_progress(slices, targets, driver=DEFAULT_DRIVER):
    """Where each target node stands: ``{complete, missing, incomplete}``.

    ``complete``: sorted node names with a complete pool; ``missing``: sorted
    node names without any slice; ``incomplete``: ``{node: reason}``.
    """
    by_node = pools_by_node(group_pools(slices, driver))
    progress = {"complete": [], "missing": [], "incomplete": {}}
    for node in sorted(set(targets)):
        pool = by_node.get(node)
        if pool is None:
            progress["missing"].append(node)
        elif pool["complete"]:
            progress["complete"].append(node)
        else:
            progress["incomplete"][node] = pool["reason"]
    return progress


def all_complete(slices, targets, driver=DEFAULT_DRIVER):
    """True when every node in ``targets`` has a complete pool."""
    progress = pool_progress(slices, targets, driver)
    return not progress["missing"] and not progress["incomplete"]


# --------------------------------------------------------------------------- topology


def _group_of(device, driver):
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


def _numa_of(device, driver):
    for attr, domain in (("numaNodeID", driver), ("numaNode", "dra.net"),
                         ("numaNode", "resource.kubernetes.io")):
        value = device_attribute(device, attr, domain)
        if value is not None:
            return int(value)
    return 0


def node_topology(pool, driver=DEFAULT_DRIVER):
    """The topology of one complete pool.

    Returns ``{pool_generation, allocatable_cpus, cells, mode, group_by,
    pool, slices, smt_enabled}``; each cell is ``{id, devices,
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

    cells = {}
    if grouped:
        mode = GROUPED
        groups = set()
        for device in grouped:
            group, cell_id = _group_of(device, driver)
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
        cpu_ids = {}
        for device in devices:
            cell_id = _numa_of(device, driver)
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
    }


def _device_sort_key(name):
    name = name or ""
    digits = re.search(r"(\d+)$", name)
    return (re.sub(r"\d+$", "", name), int(digits.group(1)) if digits else -1, name)


def _common(values):
    values = set(values)
    if not values:
        return None
    if len(values) == 1:
        return values.pop()
    return "mixed"


def build_topology(slices, driver=DEFAULT_DRIVER, nodes=None):
    """Build the ``dra_cpu_topology`` facts from ResourceSlices.

    Only nodes with a complete pool are included; ``nodes`` (optional)
    restricts the result to those node names.
    """
    by_node = pools_by_node(group_pools(slices, driver))
    wanted = set(nodes) if nodes is not None else None
    node_facts = {}
    for node in sorted(by_node):
        if wanted is not None and node not in wanted:
            continue
        pool = by_node[node]
        if not pool["complete"]:
            continue
        node_facts[node] = node_topology(pool, driver)

    all_cells = []
    for node in sorted(node_facts):
        for cell in node_facts[node]["cells"]:
            all_cells.append((node, cell))
    largest = smallest = None
    for node, cell in all_cells:
        if largest is None or cell["allocatable_cpus"] > largest[1]["allocatable_cpus"]:
            largest = (node, cell)
        if smallest is None or cell["allocatable_cpus"] < smallest[1]["allocatable_cpus"]:
            smallest = (node, cell)

    def _ref(item):
        if item is None:
            return None
        return {"node": item[0], "id": item[1]["id"], "allocatable_cpus": item[1]["allocatable_cpus"]}

    return {
        "driver": driver,
        "mode": _common(n["mode"] for n in node_facts.values()),
        "group_by": _common(n["group_by"] for n in node_facts.values()),
        "nodes": node_facts,
        "total_allocatable_cpus": sum(n["allocatable_cpus"] for n in node_facts.values()),
        "max_vm_host_cpus": largest[1]["allocatable_cpus"] if largest else 0,
        "largest_cell": _ref(largest),
        "smallest_cell": _ref(smallest),
    }


# --------------------------------------------------------------------------- sizing


def expected_cells(num_vcpu, num_cells, reserved=()):
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
    reserved = set(int(c) for c in reserved or ())
    cells = []
    for index in range(num_cells):
        cpus = set(range(index * per_cell, (index + 1) * per_cell))
        cells.append({
            "id": index,
            "cpus": format_cpuset(cpus),
            "reserved": format_cpuset(cpus & reserved),
            "allocatable": format_cpuset(cpus - reserved),
            "allocatable_cpus": len(cpus - reserved),
        })
    return cells


def _problem(node, cell, observed, expected, message):
    return {"node": node, "cell": cell, "observed": observed, "expected": expected, "message": message}


def check_sizing(topology, expected_cells_per_node=None, expected_cpus_per_node=None,
                 reserved_cpus=()):
    """Compare the published topology with the kubevirtci sizing rule.

    Returns a list of problems ``{node, cell, observed, expected, message}``
    (empty when everything matches). With both expectations, every node must
    have the expected cells with ``V/N - reserved-in-cell`` allocatable CPUs
    (grouped mode omits a cell left with no CPU; individual mode also checks
    the CPU ids of each cell when published). With only one of them, the
    number of cells or the node total is checked.
    """
    problems = []
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

        if node_total is not None and node.get("allocatable_cpus") != node_total:
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
                "node %s publishes cells %s, expected cells %s (%d CPUs over %d NUMA cells, reserved %s)"
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


def _ids(ids):
    return "[" + ", ".join(str(i) for i in ids) + "]"


def check_min_cell_cpus(topology, min_cell_cpus):
    """None when some cell has at least ``min_cell_cpus`` allocatable CPUs,
    else a message with the numbers."""
    if min_cell_cpus in (None, ""):
        return None
    need = int(min_cell_cpus)
    largest = topology.get("largest_cell")
    if largest and largest["allocatable_cpus"] >= need:
        return None
    cells = []
    for node in sorted(topology.get("nodes") or {}):
        for cell in topology["nodes"][node]["cells"]:
            cells.append("%s/%s=%s" % (node, cell["id"], cell["allocatable_cpus"]))
    if not largest:
        return "no cell can hold a VM of %d host CPUs: no CPU is published" % need
    return ("no cell can hold a VM of %d host CPUs: the largest cell is node %s cell %s with %d "
            "allocatable CPUs (cells: %s)"
            % (need, largest["node"], largest["id"], largest["allocatable_cpus"], ", ".join(cells)))


# --------------------------------------------------------------------------- rendering


def _device_list(devices):
    if len(devices) <= 3:
        return ",".join(devices)
    return "%s..%s (%d)" % (devices[0], devices[-1], len(devices))


def render_table(topology):
    """A readable table (list of lines): node, cell, devices, allocatable CPUs."""
    header = ("NODE", "CELL", "DEVICES", "ALLOCATABLE")
    rows = []
    nodes = topology.get("nodes") or {}
    for node in sorted(nodes):
        for cell in nodes[node]["cells"]:
            rows.append((node, str(cell["id"]), _device_list(cell["devices"]),
                         str(cell["allocatable_cpus"])))
    widths = [len(h) for h in header]
    for row in rows:
        widths = [max(w, len(v)) for w, v in zip(widths, row)]

    def line(values):
        return "  ".join(v.ljust(w) for v, w in zip(values, widths)).rstrip()

    lines = [line(header)]
    lines.extend(line(row) for row in rows)
    if not rows:
        lines.append("(no CPUs published)")
    mode = topology.get("mode") or "-"
    group_by = topology.get("group_by") or "-"
    lines.append("driver %s, mode %s, cells by %s, %d node(s), %d allocatable CPUs"
                 % (topology.get("driver"), mode, group_by, len(nodes),
                    topology.get("total_allocatable_cpus", 0)))
    largest = topology.get("largest_cell")
    if largest:
        lines.append("largest VM (dedicated host CPUs in one claim): %d (node %s cell %s)"
                     % (topology.get("max_vm_host_cpus", 0), largest["node"], largest["id"]))
    return lines
