# SPDX-License-Identifier: Apache-2.0
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

import pytest

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology import sizing
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology import slice_pools
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology import fact as t
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology import types
from ansible_collections.kubevirtci.dra_cpu.tests.unit.plugins.module_utils.topology.fact_helpers import build_topology

OFF = "min_cell_cpus 0 (role variable dra_cpu_min_cell_cpus: 0) turns this check off"


# ------------------------------------------------------------------ reference example


def test_reference_grouped_numanode(slices):
    topo = build_topology(slices("reference_grouped_numanode.yaml"))
    assert topo["driver"] == "dra.cpu"
    assert topo["mode"] == "grouped"
    assert topo["group_by"] == "numanode"
    node = topo["nodes"]["node-a"]
    assert node["pool_generation"] == 1
    assert node["allocatable_cpus"] == 10
    assert node["smt_enabled"] is False
    assert node["cells"] == [
        {"id": 0, "devices": ["cpudevnuma000"], "allocatable_cpus": 4},
        {"id": 1, "devices": ["cpudevnuma001"], "allocatable_cpus": 6},
    ]
    assert topo["max_vm_host_cpus"] == 6
    # a grouped claim is one device: on one node it gets no more than in one cell
    assert topo["max_node_host_cpus"] == 6
    assert topo["claim_device_limit"] == 32
    assert topo["largest_cell"] == {"node": "node-a", "id": 1, "allocatable_cpus": 6}
    assert topo["smallest_cell"] == {"node": "node-a", "id": 0, "allocatable_cpus": 4}
    assert topo["total_allocatable_cpus"] == 10


def test_reference_individual(slices):
    topo = build_topology(slices("reference_individual.yaml"))
    assert topo["mode"] == "individual"
    assert topo["group_by"] == "numanode"
    cells = topo["nodes"]["node-a"]["cells"]
    assert [c["id"] for c in cells] == [0, 1]
    assert cells[0]["allocatable_cpus"] == 4
    assert cells[0]["devices"] == ["cpudev000", "cpudev001", "cpudev002", "cpudev003"]
    assert cells[0]["cpus"] == "2-5"
    assert cells[1]["allocatable_cpus"] == 6
    assert cells[1]["cpus"] == "6-11"
    assert cells[1]["devices"][-1] == "cpudev009"
    # individual mode: the largest claim inside one NUMA cell, and on the node (devices from both cells)
    assert topo["max_vm_host_cpus"] == 6
    assert topo["max_node_host_cpus"] == 10


def test_the_fact_keeps_each_cells_cpus_and_the_figures(slices):
    """fact_of: per node its total, Ready, generation and cell id (a string, as JSON keys are) ->
    allocatable CPUs; every cluster-wide figure as the detailed topology has it; nothing shared."""
    detail = t.cluster_topology(t.complete_node_topologies(slices("v010_names_two_nodes.yaml")), not_ready=["node02"])
    fact = t.fact_of(detail)
    assert fact["nodes"] == {
        "node01": {"allocatable_cpus": 10, "ready": True, "pool_generation": 1, "cells": {"0": 4, "1": 6}},
        "node02": {"allocatable_cpus": 10, "ready": False, "pool_generation": 1, "cells": {"0": 4, "1": 6}}}
    assert dict(fact, nodes=None) == dict(detail, nodes=None)
    assert detail["nodes"]["node01"]["cells"][0]["devices"] == ["cpudevnuma000"]   # the detail is untouched
    individual = t.fact_of(build_topology(slices("reference_individual.yaml")))
    assert individual["nodes"]["node-a"]["cells"] == {"0": 4, "1": 6}


def test_grouped_socket_smt(slices):
    topo = build_topology(slices("grouped_socket_smt.yaml"))
    assert topo["group_by"] == "socket"
    node = topo["nodes"]["node01"]
    assert node["smt_enabled"] is True
    assert node["cells"] == [
        {"id": 0, "devices": ["cpudevsocket000"], "allocatable_cpus": 6},
        {"id": 1, "devices": ["cpudevsocket001"], "allocatable_cpus": 8},
    ]
    assert topo["max_vm_host_cpus"] == 8


def test_grouped_machine(slices):
    topo = build_topology(slices("grouped_machine.yaml"))
    assert topo["group_by"] == "machine"
    assert topo["nodes"]["node01"]["cells"] == [
        {"id": 0, "devices": ["cpudevmachine"], "allocatable_cpus": 10}]
    assert topo["largest_cell"] == topo["smallest_cell"] == {"node": "node01", "id": 0, "allocatable_cpus": 10}


def test_individual_smt_chunks(slices):
    items = slices("individual_smt_chunks.yaml")
    assert len(items) == 2
    pools = slice_pools.group_pools(items)
    assert pools["node01"]["published"] == 2
    assert pools["node01"]["resource_slice_count"] == 2
    assert pools["node01"]["complete"] is True
    topo = build_topology(items)
    node = topo["nodes"]["node01"]
    assert node["smt_enabled"] is True
    assert node["slices"] == 2
    assert [c["allocatable_cpus"] for c in node["cells"]] == [78, 80]
    assert node["cells"][0]["cpus"] == "2-39,80-119"
    assert node["cells"][1]["cpus"] == "40-79,120-159"
    assert node["allocatable_cpus"] == 158
    assert topo["largest_cell"] == {"node": "node01", "id": 1, "allocatable_cpus": 80}
    # one claim's allocation holds at most 32 devices (k8s.io/api resource/v1 AllocationResultsMaxSize)
    assert topo["max_vm_host_cpus"] == 32
    assert topo["max_node_host_cpus"] == 32
    assert topo["smallest_cell"] == {"node": "node01", "id": 0, "allocatable_cpus": 78}


def test_one_chunk_missing_is_incomplete(slices):
    items = slices("individual_smt_chunks.yaml")[:1]
    pools = slice_pools.group_pools(items)
    assert pools["node01"]["complete"] is False
    assert pools["node01"]["reason"] == "1 of 2 slices published at generation 1"
    assert build_topology(items)["nodes"] == {}
    assert slice_pools.pool_progress(items, ["node01"]) == {
        "complete": [], "missing": [], "incomplete": {"node01": "1 of 2 slices published at generation 1"}}


# ------------------------------------------------------------------ generations and names


def test_two_generations(slices):
    items = slices("two_generations.yaml")
    pools = slice_pools.group_pools(items)
    assert pools["node01"]["generation"] == 2
    assert pools["node01"]["stale_slices"] == 1
    assert pools["node01"]["complete"] is True
    assert pools["node02"]["generation"] == 3
    assert pools["node02"]["complete"] is False
    assert pools["node02"]["reason"] == "1 of 2 slices published at generation 3"
    topo = build_topology(items)
    # node01 uses generation 2 (reserved 0-3: cells 2 and 6), never generation 1 (4 and 6)
    assert topo["nodes"]["node01"]["pool_generation"] == 2
    assert [c["allocatable_cpus"] for c in topo["nodes"]["node01"]["cells"]] == [2, 6]
    # node02's older complete generation is not a fallback
    assert "node02" not in topo["nodes"]
    progress = slice_pools.pool_progress(items, ["node01", "node02", "node03"])
    assert progress["complete"] == ["node01"]
    assert progress["missing"] == ["node03"]
    assert list(progress["incomplete"]) == ["node02"]


def test_v010_names_and_other_drivers(slices):
    items = slices("v010_names_two_nodes.yaml")
    assert items[0]["metadata"]["name"].startswith("node01-dra.cpu-")
    topo = build_topology(items)
    assert sorted(topo["nodes"]) == ["node01", "node02"]
    assert topo["max_vm_host_cpus"] == 6
    assert topo["largest_cell"] == {"node": "node01", "id": 1, "allocatable_cpus": 6}
    assert topo["smallest_cell"] == {"node": "node01", "id": 0, "allocatable_cpus": 4}
    assert topo["total_allocatable_cpus"] == 20
    # the gpu driver's pool is not ours
    assert "gpu0" not in str(topo)
    only = build_topology(items, nodes=["node02"])
    assert list(only["nodes"]) == ["node02"]


def test_names_are_never_used(slices):
    items = copy.deepcopy(slices("reference_grouped_numanode.yaml"))
    items[0]["metadata"]["name"] = "something-else-entirely"
    assert build_topology(items)["nodes"]["node-a"]["allocatable_cpus"] == 10


def test_disagreeing_counts_and_surplus():
    def mk(gen, count, name):
        return {"metadata": {"name": name}, "spec": {"driver": "dra.cpu", "nodeName": "n",
                                                     "pool": {"name": "n", "generation": gen,
                                                              "resourceSliceCount": count},
                                                     "devices": []}}
    pools = slice_pools.group_pools([mk(1, 1, "a"), mk(1, 2, "b")])
    assert pools["n"]["reason"] == "slices at generation 1 disagree on resourceSliceCount (1, 2)"
    pools = slice_pools.group_pools([mk(1, 1, "a"), mk(1, 1, "b")])
    assert pools["n"]["reason"] == "2 slices at generation 1 but resourceSliceCount is 1"


def test_empty_topology():
    topo = build_topology([])
    assert topo["nodes"] == {}
    assert topo["max_vm_host_cpus"] == 0
    assert topo["max_node_host_cpus"] == 0
    assert topo["largest_cell"] is None
    assert topo["mode"] is None


# ------------------------------------------------------------------ device details


def test_unqualified_attributes_and_unknown_names():
    pool = {"name": "x", "generation": 4, "resourceSliceCount": 1}
    slice_ = {"spec": {"driver": "dra.cpu", "nodeName": "x", "pool": pool,
                       "devices": [{"name": "weird", "attributes": {"numaNodeID": {"int": 3}},
                                    "capacity": {"dra.cpu/cpu": {"value": "2000m"}}}]}}
    node = build_topology([slice_])["nodes"]["x"]
    assert node["group_by"] == "numanode"
    assert node["cells"] == [{"id": 3, "devices": ["weird"], "allocatable_cpus": 2}]


@pytest.mark.parametrize("value,expected", [
    ("4", 4), (4, 4), ("4000m", 4), ("1500m", 1.5), ({"value": "6"}, 6), ("2k", 2000),
])
def test_parse_quantity(value, expected):
    assert t.parse_quantity(value) == expected


@pytest.mark.parametrize("value", ["", "four", None, True, "4x"])
def test_parse_quantity_invalid(value):
    with pytest.raises(t.TopologyError):
        t.parse_quantity(value)


# ------------------------------------------------------------------ sizing


def test_sizing_matches(slices):
    for name in ("reference_grouped_numanode.yaml", "reference_individual.yaml"):
        topo = build_topology(slices(name))
        assert sizing.check_sizing(topo, 2, 12, [0, 1]) == []
        assert sizing.check_sizing(topo, None, 12, [0, 1]) == []
        assert sizing.check_sizing(topo, 2, None, [0, 1]) == []
        assert sizing.check_sizing(topo) == []


def test_sizing_mismatch_numbers(slices):
    topo = build_topology(slices("reference_grouped_numanode.yaml"))
    problems = sizing.check_sizing(topo, 2, 12, [0, 1, 2, 3])
    assert [p["message"] for p in problems] == [
        "node node-a publishes 10 allocatable CPUs, expected 8 (12 CPUs - 4 reserved)",
        "node node-a cell 0 has 4 allocatable CPUs, expected 2 (CPUs 0-5 minus reserved 0-3)",
    ]
    assert problems[1]["observed"] == 4 and problems[1]["expected"] == 2 and problems[1]["cell"] == 0
    problems = sizing.check_sizing(topo, 3, 12, [0, 1])
    assert problems[0]["message"].startswith("node node-a publishes cells [0, 1], expected cells [0, 1, 2]")
    problems = sizing.check_sizing(topo, 4, None, [])
    assert problems[0]["message"] == "node node-a publishes 2 NUMA cells, expected 4"


def test_sizing_fully_reserved_cell_is_omitted():
    # 4 vCPU over 2 cells, reserved 0-1: cell 0 empty -> not published in grouped mode
    pool = {"name": "n", "generation": 1, "resourceSliceCount": 1}
    slice_ = {"spec": {"driver": "dra.cpu", "nodeName": "n", "pool": pool,
                       "devices": [{"name": "cpudevnuma001",
                                    "attributes": {"dra.cpu/numaNodeID": {"int": 1}},
                                    "capacity": {"dra.cpu/cpu": {"value": "2"}}}]}}
    topo = build_topology([slice_])
    assert sizing.check_sizing(topo, 2, 4, [0, 1]) == []


def test_sizing_individual_contiguity(slices):
    items = copy.deepcopy(slices("reference_individual.yaml"))
    devices = items[0]["spec"]["devices"]
    # swap the CPU ids of a device in cell 0 and one in cell 1 (counts stay 4 and 6)
    devices[0]["attributes"]["dra.cpu/cpuID"] = {"int": 11}
    devices[9]["attributes"]["dra.cpu/cpuID"] = {"int": 2}
    topo = build_topology(items)
    messages = [p["message"] for p in sizing.check_sizing(topo, 2, 12, [0, 1])]
    assert messages == [
        "node node-a cell 0 holds CPUs 3-5,11, expected the contiguous CPUs 2-5",
        "node node-a cell 1 holds CPUs 2,6-10, expected the contiguous CPUs 6-11",
    ]


def test_sizing_reserved_outside_and_uneven(slices):
    topo = build_topology(slices("reference_grouped_numanode.yaml"))
    problems = sizing.check_sizing(topo, 5, 12, [0, 1])
    assert problems == [{"node": None, "cell": None, "observed": 12, "expected": "a multiple of 5",
                         "message": "12 vCPUs cannot be split evenly over 5 NUMA cells"}]
    problems = sizing.check_sizing(topo, None, 12, [0, 1, 12, 13])
    assert problems[0]["message"] == "reserved CPUs 12-13 do not exist on a node with 12 CPUs"


def test_sizing_machine_and_no_nodes(slices):
    topo = build_topology(slices("grouped_machine.yaml"))
    assert sizing.check_sizing(topo, 2, 12, [0, 1]) == []
    assert sizing.check_sizing(build_topology([]), 2, 12, [])[0]["message"] == "no node has published its CPUs"


def test_min_cell_cpus(slices):
    topo = build_topology(slices("reference_grouped_numanode.yaml"))
    assert sizing.check_min_cell_cpus(topo, 6) is None
    assert sizing.check_min_cell_cpus(topo, None) is None
    assert sizing.check_min_cell_cpus(topo, 7) == (
        "no cell can hold a VM of 7 host CPUs: the largest cell is node node-a cell 1 with 6 "
        "allocatable CPUs (nodes: node-a cells 0=4, 1=6); %s" % OFF)
    assert sizing.check_min_cell_cpus(build_topology([]), 1) == (
        "no cell can hold a VM of 1 host CPU: no Ready node publishes a CPU (nodes: no node has published "
        "its CPUs); %s" % OFF)
    # 0 (or '') turns the check off, also on a topology without a CPU
    assert sizing.check_min_cell_cpus(build_topology([]), 0) is None
    assert sizing.check_min_cell_cpus(build_topology([]), "") is None


def _no_cpu(node):
    """``node`` (a node_topology) once the driver publishes no CPU there (every CPU reserved)."""
    return dict(copy.deepcopy(node), cells=[], allocatable_cpus=0)


def test_min_cell_cpus_1_fails_when_no_cell_holds_a_cpu_naming_each_node(slices):
    """The role's default, 1: an install after which no cell can hold even one CPU fails, naming every
    node and what it publishes (a machine device of capacity 0, no device at all, not Ready)."""
    machine = build_topology(slices("grouped_machine.yaml"))["nodes"]["node01"]
    zero = dict(copy.deepcopy(machine), allocatable_cpus=0,
                cells=[dict(machine["cells"][0], allocatable_cpus=0)])
    good = build_topology(slices("reference_grouped_numanode.yaml"))["nodes"]["node-a"]
    topo = t.cluster_topology({"node01": zero, "node02": _no_cpu(good), "node03": copy.deepcopy(good)},
                              not_ready=["node03"])
    assert topo["max_vm_host_cpus"] == 0
    assert sizing.check_min_cell_cpus(topo, 1) == (
        "no cell can hold a VM of 1 host CPU: the largest cell is node node01 cell 0 with 0 allocatable CPUs "
        "(nodes: node01 cells 0=0; node02 no CPU; node03 not Ready); %s" % OFF)
    topo = t.cluster_topology({"node01": _no_cpu(good), "node02": _no_cpu(good)})
    assert sizing.check_min_cell_cpus(topo, 1) == (
        "no cell can hold a VM of 1 host CPU: no Ready node publishes a CPU (nodes: node01 no CPU; node02 no "
        "CPU); %s" % OFF)
    # one node with a CPU is enough
    topo = t.cluster_topology({"node01": _no_cpu(good), "node02": copy.deepcopy(good)})
    assert sizing.check_min_cell_cpus(topo, 1) is None


def test_min_cell_cpus_names_at_most_20_nodes(slices):
    good = build_topology(slices("reference_grouped_numanode.yaml"))["nodes"]["node-a"]
    topo = t.cluster_topology(dict(("node%02d" % i, _no_cpu(good)) for i in range(25)))
    message = sizing.check_min_cell_cpus(topo, 1)
    assert "node19 no CPU; and 5 more); " in message and "node20" not in message, message


def _keys(typed_dict):
    return typed_dict.__required_keys__ | typed_dict.__optional_keys__


@pytest.mark.parametrize("fixture", ["reference_grouped_numanode.yaml", "reference_individual.yaml",
                                     "v010_names_two_nodes.yaml"])
def test_the_topology_and_the_fact_have_the_declared_shapes(slices, fixture):
    """cluster_topology, node_topology, their cells and fact_of have exactly the keys fact.py's
    TypedDicts declare (a cell's ``cpus`` only in individual mode)."""
    detail = t.cluster_topology(t.complete_node_topologies(slices(fixture)))
    assert set(detail) == _keys(types.ClusterTopology)
    for node in detail["nodes"].values():
        assert set(node) == _keys(types.NodeTopology)
        for cell in node["cells"]:
            assert types.Cell.__required_keys__ <= set(cell) <= _keys(types.Cell)
    assert set(detail["largest_cell"]) == _keys(types.CellRef)
    fact = t.fact_of(detail)
    assert set(fact) == _keys(types.TopologyFact)
    assert list(fact) == list(detail)   # the same order of keys
    for node in fact["nodes"].values():
        assert types.NodeFact.__required_keys__ <= set(node) <= _keys(types.NodeFact)


def test_pools_and_progress_have_the_declared_shapes(slices):
    objs = slices("v010_names_two_nodes.yaml")
    pools = slice_pools.group_pools(objs)
    assert pools and all(set(pool) == _keys(types.Pool) for pool in pools.values())
    progress = slice_pools.pool_progress(objs, ["node01", "node09"])
    assert set(progress) == _keys(types.PoolProgress)
    assert progress["complete"] == ["node01"] and progress["missing"] == ["node09"]
