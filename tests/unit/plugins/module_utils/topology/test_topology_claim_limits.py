# SPDX-License-Identifier: Apache-2.0
"""The largest claim the Kubernetes API allocates, per device mode, in the dra_cpu_topology fact.

The limit is the API's: k8s.io/api resource/v1 ``AllocationResultsMaxSize = 32`` devices in one
claim's allocation (the scheduler refuses more: "number of requested devices 78 exceeds the claim
limit of 32"). In individual mode a claim is one device per CPU, so it binds there; in grouped mode a
claim is one device whatever its capacity, so it never does.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology import claim_limits
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology import sizing
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.table import INDIVIDUAL_WARNING, render_table
from ansible_collections.kubevirtci.dra_cpu.tests.unit.plugins.module_utils.topology.fact_helpers import build_topology


def _slice(node, devices, index=0, count=1):
    return {"metadata": {"name": "%05d-dra.cpu-%s" % (index, node)},
            "spec": {"driver": "dra.cpu", "nodeName": node, "devices": devices,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": count}}}


def individual_slices(node, cpus, cells, reserved=()):
    """What the driver publishes in individual mode: kubevirtci's split of ``cpus`` over ``cells``
    NUMA cells, one device per available CPU, chunks of 128 devices."""
    per_cell = cpus // cells
    devices = []
    for cpu in range(cpus):
        if cpu in reserved:
            continue
        devices.append({"name": "cpudev%03d" % len(devices),
                        "attributes": {"dra.cpu/numaNodeID": {"int": cpu // per_cell},
                                       "dra.cpu/cpuID": {"int": cpu}}})
    chunks = [devices[i:i + 128] for i in range(0, len(devices), 128)]
    return [_slice(node, chunk, i, len(chunks)) for i, chunk in enumerate(chunks)]


def grouped_slices(node, cells):
    """Grouped by NUMA node: one device per cell with capacity dra.cpu/cpu."""
    devices = [{"name": "cpudevnuma%03d" % i, "allowMultipleAllocations": True,
                "attributes": {"dra.cpu/numaNodeID": {"int": i}},
                "capacity": {"dra.cpu/cpu": {"value": str(n)}}} for i, n in enumerate(cells)]
    return [_slice(node, devices)]


def claims(topology):
    return topology["max_vm_host_cpus"], topology["max_node_host_cpus"], topology["claim_device_limit"]


def test_the_limit_is_the_apis():
    # k8s.io/api resource/v1: const AllocationResultsMaxSize = 32
    assert claim_limits.CLAIM_DEVICE_LIMIT == 32


def test_individual_one_cell_of_78_gives_32_not_78():
    """80 CPUs in one NUMA cell, 0-1 reserved: 78 devices, but one claim gets at most 32 of them."""
    topology = build_topology(individual_slices("node01", 80, 1, reserved={0, 1}))
    assert topology["mode"] == "individual"
    assert topology["nodes"]["node01"]["allocatable_cpus"] == 78
    assert topology["largest_cell"] == {"node": "node01", "id": 0, "allocatable_cpus": 78}
    assert claims(topology) == (32, 32, 32)
    # one node: no largest/smallest cell line (its rows show the cells)
    assert render_table(topology)[-3:-1] == [
        "largest VM that fits: 32 host CPUs on one node (at most 32 devices, one per CPU) = 32 vCPUs, "
        "31 with isolateEmulatorThread (31 with even parity)",
        "largest NUMA-aligned VM: 32 host CPUs (all its devices from one NUMA cell) = 32 vCPUs, "
        "31 with isolateEmulatorThread (31 with even parity)",
    ]


def test_individual_two_cells_of_20():
    """A NUMA-aligned claim gets one cell (20); one that may span cells gets the node, cut to 32."""
    topology = build_topology(individual_slices("node01", 40, 2))
    assert [c["allocatable_cpus"] for c in topology["nodes"]["node01"]["cells"]] == [20, 20]
    assert claims(topology) == (20, 32, 32)


def test_individual_small_cells_are_not_cut():
    """kubevirtci's 12 CPUs over 2 cells, 0-1 reserved: cells of 4 and 6, node 10 (README)."""
    topology = build_topology(individual_slices("node01", 12, 2, reserved={0, 1}))
    assert [c["allocatable_cpus"] for c in topology["nodes"]["node01"]["cells"]] == [4, 6]
    assert claims(topology) == (6, 10, 32)
    assert render_table(topology)[-3:-1] == [
        "largest VM that fits: 10 host CPUs on one node (at most 32 devices, one per CPU) = 10 vCPUs, "
        "9 with isolateEmulatorThread (9 with even parity)",
        "largest NUMA-aligned VM: 6 host CPUs (all its devices from one NUMA cell) = 6 vCPUs, "
        "5 with isolateEmulatorThread (5 with even parity)",
    ]


@pytest.mark.parametrize("cells, largest", [([4, 6], 6), ([78], 78), ([40, 40], 40)])
def test_grouped_is_one_device_whatever_its_capacity(cells, largest):
    """A grouped claim is count: 1 with a capacity request: the device limit does not bind."""
    topology = build_topology(grouped_slices("node01", cells))
    assert topology["mode"] == "grouped"
    assert claims(topology) == (largest, largest, 32)
    assert render_table(topology)[-1] == (
        "largest VM that fits: %d host CPUs, all from one device (one NUMA cell) = %d vCPUs, "
        "%d with isolateEmulatorThread (%d with even parity)" % (largest, largest, largest - 1, largest - 1))


def test_nodes_are_sized_one_by_one():
    """The largest claim is the largest of any one node's: two nodes' CPUs never add up."""
    items = individual_slices("node01", 40, 2) + individual_slices("node02", 12, 1)
    assert claims(build_topology(items)) == (20, 32, 32)
    items = individual_slices("node01", 24, 2) + individual_slices("node02", 16, 1)
    assert claims(build_topology(items)) == (16, 24, 32)


def test_mixed_modes_take_the_largest_of_each_node():
    items = grouped_slices("node01", [40]) + individual_slices("node02", 80, 2)
    topology = build_topology(items)
    assert topology["mode"] == "mixed"
    assert claims(topology) == (40, 40, 32)
    assert render_table(topology)[-2] == INDIVIDUAL_WARNING
    assert render_table(topology)[-4] == (
        "largest VM that fits: 40 host CPUs on one node (one device on a grouped node, "
        "at most 32 devices, one per CPU, on an individual-mode node) = 40 vCPUs, "
        "39 with isolateEmulatorThread (39 with even parity)")


@pytest.mark.parametrize("cells, node_cpus, per_cpu, expected", [
    ([78], 78, True, (32, 32)),
    ([20, 20], 40, True, (20, 32)),
    ([4, 6], 10, True, (6, 10)),
    ([32], 32, True, (32, 32)),
    ([33], 33, True, (32, 32)),
    ([4, 6], 10, False, (6, 6)),
    ([78], 78, False, (78, 78)),
    ([], 0, True, (0, 0)),
])
def test_largest_claims(cells, node_cpus, per_cpu, expected):
    assert claim_limits.largest_claims(cells, node_cpus, per_cpu) == expected


def test_min_cell_cpus_counts_the_device_limit():
    """dra_cpu_min_cell_cpus: a 78-CPU cell in individual mode holds a claim of 32, not of 33."""
    topology = build_topology(individual_slices("node01", 80, 1, reserved={0, 1}))
    assert sizing.check_min_cell_cpus(topology, 32) is None
    assert sizing.check_min_cell_cpus(topology, 33) == (
        "no cell can hold a VM of 33 host CPUs: the largest cell, node node01 cell 0, has 78 allocatable CPUs, "
        "but in individual mode a claim is one device per CPU and Kubernetes allocates at most 32 devices "
        "to one claim (nodes: node01 cells 0=78); min_cell_cpus 0 (role variable dra_cpu_min_cell_cpus: 0) "
        "turns this check off")
    # grouped: one device of 78 holds a claim of 78
    assert sizing.check_min_cell_cpus(build_topology(grouped_slices("node01", [78])), 78) is None
    # a cell too small is reported as before
    assert sizing.check_min_cell_cpus(topology, 79).startswith(
        "no cell can hold a VM of 79 host CPUs: the largest cell is node node01 cell 0 with 78 allocatable CPUs")
