# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""topology/node_allocatable.py and its place in fact.py and run.py (KEP-5517). Upstream behaviour
mirrored: main's pkg/device/builder.go puts nodeAllocatableResources on every device with
publishNodeAllocatableResourceMapping (grouped {cpu: {mapping: {capacityKey: dra.cpu/cpu,
capacityMultiplier: "1"}}}, individual {cpu: {mapping: {deviceMultiplier: "1"}}}); an API server
without the DRANodeAllocatableResources gate drops the field from the stored slice, so the pool is
complete but carries none: the stage fails saying so instead of waiting for its timeout."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

import pytest

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology import fact as t
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology import node_allocatable as na
from ansible_collections.kubevirtci.dra_cpu.plugins.modules import cpu_topology
from ansible_collections.kubevirtci.dra_cpu.tests.unit.conftest import load_slices
from ansible_collections.kubevirtci.dra_cpu.tests.unit.plugins.modules.fake_cluster import FakeCluster, pod, run_module
from ansible_collections.kubevirtci.dra_cpu.tests.unit.plugins.module_utils.topology.fact_helpers import build_topology

SLICES = "/apis/resource.k8s.io/v1/resourceslices"
PODS = "/api/v1/namespaces/dra-driver-cpu/pods"
GROUPED = {"cpu": {"mapping": {"capacityKey": "dra.cpu/cpu", "capacityMultiplier": "1"}}}
INDIVIDUAL = {"cpu": {"mapping": {"deviceMultiplier": "1"}}}


def mapped(name, mapping, only=None):
    """The fixture's slices with ``mapping`` on every device (``only``: on the first ``only`` devices)."""
    items = copy.deepcopy(load_slices(name))
    n = 0
    for item in items:
        for device in item["spec"]["devices"]:
            if only is None or n < only:
                device["nodeAllocatableResources"] = copy.deepcopy(mapping)
            n += 1
    return items


def test_carries_mapping():
    assert na.carries_mapping({"name": "d", "nodeAllocatableResources": GROUPED})
    assert na.carries_mapping({"name": "d", "basic": {"nodeAllocatableResources": INDIVIDUAL}})
    assert not na.carries_mapping({"name": "d"})
    assert not na.carries_mapping({"name": "d", "nodeAllocatableResources": {}})
    assert not na.all_carry([])


@pytest.mark.parametrize("fixture, mapping", [("reference_grouped_numanode.yaml", GROUPED),
                                              ("reference_individual.yaml", INDIVIDUAL)])
def test_the_fact_says_whether_every_device_carries_it(fixture, mapping):
    assert build_topology(load_slices(fixture))["node_allocatable_mapping"] is False
    on = build_topology(mapped(fixture, mapping))
    assert on["node_allocatable_mapping"] is True and on["nodes"]["node-a"]["node_allocatable_mapping"] is True
    # one device without it (a pool half published by an old driver, or stripped): not on
    assert build_topology(mapped(fixture, mapping, only=1))["node_allocatable_mapping"] is False
    # the fact keeps the key
    assert t.fact_of(on)["node_allocatable_mapping"] is True
    assert build_topology([])["node_allocatable_mapping"] is False


def test_check_mapping():
    off = build_topology(load_slices("reference_grouped_numanode.yaml"))
    on = build_topology(mapped("reference_grouped_numanode.yaml", GROUPED))
    assert na.check_mapping(off, None) == [] and na.check_mapping(on, None) == []
    assert na.check_mapping(on, True) == [] and na.check_mapping(off, False) == []
    (problem,) = na.check_mapping(off, True)
    assert (problem["node"], problem["observed"], problem["expected"]) == (
        "node-a", "without nodeAllocatableResources", "with nodeAllocatableResources")
    assert "the API server drops the field, so DRANodeAllocatableResources is off on kube-apiserver" in problem["message"]
    (problem,) = na.check_mapping(on, False)
    assert problem["message"] == ("node node-a still publishes nodeAllocatableResources, the release asks for none "
                                  "(dra_cpu_node_allocatable_mapping: false)")


def module(items, extra):
    cluster = FakeCluster({PODS: {"items": [pod("drv-a", "node-a")]},
                           SLICES: {"kind": "ResourceSliceList", "metadata": {"resourceVersion": "100"},
                                    "items": items}})
    return run_module(cpu_topology, extra, cluster)


def test_a_complete_pool_without_the_mapping_fails_at_once_saying_the_api_server_drops_it():
    result, failed = module(load_slices("reference_grouped_numanode.yaml"),
                            {"expected_node_allocatable_mapping": True, "timeout": 300})
    assert failed is True
    assert result["msg"].startswith("the published CPU topology does not match: node node-a publishes its CPU "
                                    "devices without nodeAllocatableResources although the release asks for them")
    assert "the API server drops the field" in result["msg"]
    assert "ansible_facts" not in result and result["topology"]["node_allocatable_mapping"] is False


def test_pools_with_the_mapping_pass_with_the_fact_and_the_report_line():
    result, failed = module(mapped("reference_grouped_numanode.yaml", GROUPED), {"expected_node_allocatable_mapping": True})
    assert not failed
    assert result["ansible_facts"]["dra_cpu_topology"]["node_allocatable_mapping"] is True
    assert result["report"][-1] == "node-allocatable mapping (KEP-5517): on"
    # off and not asked for: no line
    result, failed = module(load_slices("reference_grouped_numanode.yaml"), {"expected_node_allocatable_mapping": False})
    assert not failed and na.REPORT_ON not in result["report"]
    assert result["ansible_facts"]["dra_cpu_topology"]["node_allocatable_mapping"] is False
