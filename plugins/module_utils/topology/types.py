# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""The shapes the topology stage hands on: a pool, a cell, a node's topology, the detailed topology,
the ``dra_cpu_topology`` fact and a sizing problem.

Declared once here; slice_pools.py and fact.py build them, the table, the sizing checks, the report
files and verify read them. Types only, no logic.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from typing import Dict, List, Optional, TypedDict, Union

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.types import K8sObject


class Pool(TypedDict):
    """A pool's slices at its highest ``generation``; ``reason`` why it is not complete ('' if it is)."""

    name: str
    node: Optional[str]
    generation: int
    resource_slice_count: int
    slices: List[K8sObject]
    published: int
    stale_slices: int
    complete: bool
    reason: str


class PoolProgress(TypedDict):
    """Where the target nodes stand: with a complete pool, without a slice, incomplete (and why)."""

    complete: List[str]
    missing: List[str]
    incomplete: Dict[str, str]


class _CellBase(TypedDict):
    id: int
    devices: List[str]
    allocatable_cpus: int


class Cell(_CellBase, total=False):
    """A cell of a node: its id (NUMA node, socket or 0), its devices' names, its allocatable CPUs
    and, in individual mode when the driver publishes ``cpuID``, ``cpus`` (a cpuset); where its CPUs
    sit when its devices publish it: ``pcie_roots`` (``resource.kubernetes.io/pcieRoot``, the union,
    sorted) and ``numa_node`` (``resource.kubernetes.io/numaNode``)."""

    cpus: str
    pcie_roots: List[str]
    numa_node: int


class NodeTopology(TypedDict):
    """Everything one complete pool says about its node (``node_topology``)."""

    pool: str
    pool_generation: int
    slices: int
    mode: str
    group_by: str
    smt_enabled: Optional[bool]
    allocatable_cpus: int
    cells: List[Cell]
    ready: bool
    node_allocatable_mapping: bool


class CellRef(TypedDict):
    """The largest or smallest cell of the cluster."""

    node: str
    id: int
    allocatable_cpus: int


class _NodeFactBase(TypedDict):
    allocatable_cpus: int
    ready: bool
    pool_generation: int
    cells: Dict[str, int]


class NodeFact(_NodeFactBase, total=False):
    """A node in the fact: ``cells`` maps a cell id (a string, as in JSON) to its CPUs; when the
    devices publish them, ``pcie_roots`` a cell id to its PCIe roots and ``numa_nodes`` to its standard
    NUMA node (cells that publish none are left out)."""

    pcie_roots: Dict[str, List[str]]
    numa_nodes: Dict[str, int]


class _ClusterFigures(TypedDict):
    driver: str
    mode: Optional[str]
    group_by: Optional[str]
    not_ready_nodes: List[str]
    total_allocatable_cpus: int
    max_vm_host_cpus: int
    max_node_host_cpus: int
    max_vm_vcpus: int
    max_vm_vcpus_isolated_emulator_thread: int
    max_vm_vcpus_even_parity: int
    claim_device_limit: int
    largest_cell: Optional[CellRef]
    smallest_cell: Optional[CellRef]
    node_allocatable_mapping: bool


class ClusterTopology(_ClusterFigures):
    """The detailed topology (``cluster_topology``): the figures and every node's ``NodeTopology``."""

    nodes: Dict[str, NodeTopology]


class SizingProblem(TypedDict):
    """A node (or one of its cells) that does not match what was asked for (sizing.py,
    node_allocatable.py): the cpu_topology module's ``sizing_problems``."""

    node: Optional[str]
    cell: Optional[int]
    observed: Union[int, str, List[int], None]
    expected: Union[int, str, List[int], None]
    message: str


class TopologyFact(_ClusterFigures):
    """The ``dra_cpu_topology`` fact (``fact_of``; plugins/modules/cpu_topology.py RETURN)."""

    nodes: Dict[str, NodeFact]
