# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""The per-cell table of a ``dra_cpu_topology`` fact, as lines of text.

Owns: the one rendering of the topology that users see. ``cpu_topology``
returns it as ``summary`` and the role's tasks only print it (no Jinja copy).
Reads the shape built by fact.py; computes nothing about pools or
sizing (a claim's size in vCPUs is common/kubevirt_sizes.py's).
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from typing import Any

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.common.kubevirt_sizes import vm_sizes
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.fact import (
    GROUPED,
    INDIVIDUAL,
    MACHINE,
    NUMANODE,
    SOCKET,
)
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.pcie_roots import locality_text
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.types import Cell, ClusterTopology

DEVICES_WIDTH = 20
EMPTY = "(no CPUs published)"
# rows for at most this many nodes (the fact has them all): 1,000 nodes x 8 cells would be 9,000
# lines, 0.4 MB of result that Ansible scrubs, sends and prints
MAX_NODES = 50
# after the total of a node whose Ready condition is not True (fact.py counts it nowhere else)
NOT_READY = " (node not Ready: counted in no figure below)"
# what one grouped-mode device spans, per group_by
_DEVICE_SPAN = {NUMANODE: "one NUMA cell", SOCKET: "one socket", MACHINE: "the machine"}


def _devices(names: list[str]) -> str:
    """The device names joined by commas, cut to DEVICES_WIDTH with '...'."""
    text = ",".join(names)
    if len(text) > DEVICES_WIDTH:
        text = text[:DEVICES_WIDTH - 3] + "..."
    return text


def _where(cell: Cell) -> str:
    """Where a cell's CPUs sit, as its devices publish it (pcie_roots.locality_text), '' if not."""
    return locality_text({"pcie_roots": list(cell.get("pcie_roots") or []), "numa_node": cell.get("numa_node")})


def in_vcpus(host_cpus: Any) -> str:
    """A claim of ``host_cpus`` in KubeVirt's terms, after the host CPUs: `` = 6 vCPUs, 5 with
    isolateEmulatorThread (5 with even parity)`` (no IO threads: each takes one more host CPU);
    '' when the number is unknown."""
    if not isinstance(host_cpus, int) or isinstance(host_cpus, bool):
        return ""
    sizes = vm_sizes(host_cpus)
    if not sizes["vcpus"]:
        return " = no VM"
    text = " = %d vCPU%s" % (sizes["vcpus"], "" if sizes["vcpus"] == 1 else "s")
    if not sizes["isolated_emulator_thread"]:
        return text + ", none with isolateEmulatorThread"
    # 2 host CPUs or more: even parity always leaves at least a 1-vCPU VM (1 + 1 emulator CPU)
    return text + ", %d with isolateEmulatorThread (%d with even parity)" % (
        sizes["isolated_emulator_thread"], sizes["even_parity"])


def sizing_lines(topology: ClusterTopology) -> list[str]:
    """The largest VM, worded for the device mode (the numbers come from fact.py), in host CPUs and
    in KubeVirt's vCPUs (``in_vcpus``).

    Grouped mode: one line, a claim being one device. Individual (or mixed) mode: the largest
    claim on one node, which the API's device limit caps, then the largest in one NUMA cell.
    """
    vm = topology.get("max_vm_host_cpus", "?")
    if topology.get("mode") == GROUPED:
        group_by: Any = topology.get("group_by")
        return ["largest VM that fits: %s host CPUs, all from one device (%s)%s"
                % (vm, _DEVICE_SPAN.get(group_by, "one cell"), in_vcpus(vm))]
    limit = topology.get("claim_device_limit", "?")
    if topology.get("mode") == INDIVIDUAL:
        why = "at most %s devices, one per CPU" % limit
    else:
        why = ("one device on a grouped node, at most %s devices, one per CPU, on an "
               "individual-mode node" % limit)
    node = topology.get("max_node_host_cpus", "?")
    return ["largest VM that fits: %s host CPUs on one node (%s)%s" % (node, why, in_vcpus(node)),
            "largest NUMA-aligned VM: %s host CPUs (all its devices from one NUMA cell)%s" % (vm, in_vcpus(vm)),
            INDIVIDUAL_WARNING]


# KubeVirt's design as merged (VEP 152): virt-controller synthesizes one capacity request per VM, which only
# grouped devices serve; the sizes above hold for a claim a user writes (spec.resourceClaims)
INDIVIDUAL_WARNING = ("warning: individual mode cannot serve the CPU claims KubeVirt synthesizes (grouped mode only; "
                      "upstream is deprecating individual mode): the sizes above hold only for a claim a VMI "
                      "references through spec.resourceClaims. For CPUsWithDRA install with "
                      "dra_cpu_cpu_device_mode=grouped")


def not_published_line(pending_nodes: list[str], timeout: int) -> str:
    """The report's line when the topology was read without waiting (check mode) and is incomplete."""
    names = [n for n in pending_nodes if n]
    where = (" on %s" % ", ".join(names[:3]) + (" and %d more" % (len(names) - 3) if len(names) > 3 else "")
             if names else "")
    return ("CPU topology: not (fully) published yet%s; not waited for (check mode), a real run waits up "
            "to %ss" % (where, timeout))


def render_table(topology: ClusterTopology) -> list[str]:
    """Node, cell, devices, allocatable CPUs; a total per node (marked when the node is not Ready); the
    largest VM (sizing_lines) and, for more than one node, the largest and smallest cells.

    Returns a list of lines; a topology without nodes gives ``[EMPTY]``. Past ``MAX_NODES`` nodes,
    one line says how many more there are instead of their rows.
    """
    nodes = topology.get("nodes") or {}
    if not nodes:
        return [EMPTY]
    width = max([4] + [len(name) for name in nodes])
    names = sorted(nodes)
    located = any(_where(c) for n in names[:MAX_NODES] for c in nodes[n].get("cells") or [])
    header = "%-*s  CELL  %-*s  ALLOCATABLE CPUS" % (width, "NODE", DEVICES_WIDTH, "DEVICES")
    lines = [header + ("  WHERE (PCIE ROOTS, NUMA NODE)" if located else "")]
    for name in names[:MAX_NODES]:
        node = nodes[name]
        for cell in node.get("cells") or []:
            row = "%-*s  %4s  %-*s  %s" % (width, name, cell["id"], DEVICES_WIDTH,
                                           _devices(cell.get("devices") or []), cell["allocatable_cpus"])
            if located:
                row = "%-*s  %s" % (len(header), row, _where(cell) or "-")
            lines.append(row.rstrip())
        mark = "" if node.get("ready", True) else NOT_READY
        lines.append("%-*s  total   %*s%s%s" % (width, name, DEVICES_WIDTH, "", node.get("allocatable_cpus", "?"), mark))
    if len(names) > MAX_NODES:
        lines.append("... and %d more node(s), %s to %s: their cells are in the dra_cpu_topology fact"
                     % (len(names) - MAX_NODES, names[MAX_NODES], names[-1]))
    lines.extend(sizing_lines(topology))
    largest, smallest = topology.get("largest_cell"), topology.get("smallest_cell")
    # one node: its rows above show the same cells, the line would only repeat them
    if largest and len(nodes) > 1:
        line = "largest cell: %s cell %s, %s CPUs" % (largest["node"], largest["id"], largest["allocatable_cpus"])
        if smallest:
            line += "; smallest cell: %s cell %s, %s CPUs" % (smallest["node"], smallest["id"],
                                                              smallest["allocatable_cpus"])
        lines.append(line)
    return lines
