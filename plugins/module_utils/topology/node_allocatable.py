# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""KEP-5517 node-allocatable mappings in the published devices (``dra_cpu_node_allocatable_mapping``).

Owns: whether a device, a node's pool or every pool carries ``nodeAllocatableResources`` (the fact's
``node_allocatable_mapping``), the check of a topology against what the release asks for (a pool
without the mapping the release asks for means the API server drops the field) and the report line.
Pure.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from collections.abc import Iterable
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.types import K8sObject
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology.types import (
    ClusterTopology,
    NodeTopology,
    SizingProblem,
)

FIELD = "nodeAllocatableResources"
GATE = "DRANodeAllocatableResources"
REPORT_ON = "node-allocatable mapping (KEP-5517): on"


def carries_mapping(device: K8sObject) -> bool:
    """The device has a non-empty ``nodeAllocatableResources`` (v1beta1: under ``basic``)."""
    value = (device or {}).get(FIELD)
    if value is None and isinstance((device or {}).get("basic"), dict):
        value = device["basic"].get(FIELD)
    return isinstance(value, dict) and bool(value)


def all_carry(devices: Iterable[K8sObject]) -> bool:
    """Every device carries the mapping (and there is at least one)."""
    devices = list(devices)
    return bool(devices) and all(carries_mapping(d) for d in devices)


def cluster_mapping(node_facts: dict[str, NodeTopology]) -> bool:
    """The fact's ``node_allocatable_mapping``: every device of every driver pool carries it (no
    pool: False)."""
    return bool(node_facts) and all(bool(n.get("node_allocatable_mapping")) for n in node_facts.values())


def check_mapping(topology: ClusterTopology, expected: bool | None) -> list[SizingProblem]:
    """Problems ``{node, cell, observed, expected, message}`` (as sizing.check_shape's) of the nodes
    whose devices do not match ``expected`` (None: not checked)."""
    if expected is None:
        return []
    problems: list[SizingProblem] = []
    for name in sorted(topology.get("nodes") or {}):
        has = bool(topology["nodes"][name].get("node_allocatable_mapping"))
        if has == bool(expected):
            continue
        if expected:
            message = ("node %s publishes its CPU devices without %s although the release asks for them "
                       "(dra_cpu_node_allocatable_mapping: true, driverConfig.publishNodeAllocatableResourceMapping): "
                       "the API server drops the field, so %s is off on kube-apiserver; enable it there "
                       "(--feature-gates=%s=true) and on the scheduler, controller-manager and kubelets, or "
                       "install with dra_cpu_node_allocatable_mapping: false" % (name, FIELD, GATE, GATE))
        else:
            message = ("node %s still publishes %s, the release asks for none "
                       "(dra_cpu_node_allocatable_mapping: false)" % (name, FIELD))
        problems.append({"node": name, "cell": None, "observed": "with %s" % FIELD if has else "without %s" % FIELD,
                         "expected": "with %s" % FIELD if expected else "without %s" % FIELD, "message": message})
    return problems


def report_lines(topology: ClusterTopology) -> list[str]:
    """The report's line when the mapping is on."""
    return [REPORT_ON] if topology.get("node_allocatable_mapping") else []
