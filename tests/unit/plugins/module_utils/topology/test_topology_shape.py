# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""topology/sizing.py's check_shape: the device mode and grouping each node publishes against the ones
the release's values ask for. Upstream behaviour mirrored: after an upgrade to another mode or grouping
the driver's ResourceSlice controller (k8s.io/dynamic-resource-allocation resourceslice) keeps the old
pool, complete, until the restarted driver publishes, so a complete pool of the old shape is seen
first (found on a real kubelet: test_role_install's variants read the previous variant's cells)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology import sizing
from ansible_collections.kubevirtci.dra_cpu.plugins.modules import cpu_topology
from ansible_collections.kubevirtci.dra_cpu.tests.unit.conftest import load_slices
from ansible_collections.kubevirtci.dra_cpu.tests.unit.plugins.modules.fake_cluster import FakeCluster, pod, run_module
from ansible_collections.kubevirtci.dra_cpu.tests.unit.plugins.module_utils.topology.fact_helpers import build_topology

SLICES = "/apis/resource.k8s.io/v1/resourceslices"
PODS = "/api/v1/namespaces/dra-driver-cpu/pods"


@pytest.mark.parametrize("fixture, mode, group_by", [
    ("reference_grouped_numanode.yaml", "grouped", "numanode"),
    ("grouped_socket_smt.yaml", "grouped", "socket"),
    ("grouped_machine.yaml", "grouped", "machine"),
    ("reference_individual.yaml", "individual", ""),
    ("reference_individual.yaml", "individual", "socket"),   # a grouping means nothing in individual mode
    ("reference_grouped_numanode.yaml", "", ""),              # nothing asked, nothing checked
])
def test_the_shape_asked_for_passes(slices, fixture, mode, group_by):
    assert sizing.check_shape(build_topology(slices(fixture)), mode, group_by) == []


def test_a_stale_grouping_names_the_node_and_both_groupings(slices):
    problems = sizing.check_shape(build_topology(slices("reference_grouped_numanode.yaml")), "grouped", "machine")
    assert [(p["node"], p["observed"], p["expected"]) for p in problems] == [("node-a", "numanode", "machine")]
    assert problems[0]["message"] == "node node-a publishes devices grouped by numanode, the release asks for machine"


def test_a_stale_mode_names_the_node_and_both_modes(slices):
    problems = sizing.check_shape(build_topology(slices("reference_grouped_numanode.yaml")), "individual", "")
    assert [p["message"] for p in problems] == ["node node-a publishes grouped devices, the release asks for individual"]
    problems = sizing.check_shape(build_topology(slices("reference_individual.yaml")), "grouped", "numanode")
    assert [p["message"] for p in problems] == ["node node-a publishes individual devices, the release asks for grouped"]


def test_the_module_fails_on_a_stale_shape_as_on_a_stale_size_and_passes_on_the_one_asked_for():
    """cpu_topology with expected_group_by: the mismatch is the wait's failure (the one sizing_grace
    looks again for); the grouping asked for passes and sets the fact."""
    def module(extra):
        cluster = FakeCluster({PODS: {"items": [pod("drv-a", "node-a")]},
                               SLICES: {"kind": "ResourceSliceList", "metadata": {"resourceVersion": "100"},
                                        "items": load_slices("reference_grouped_numanode.yaml")}})
        return run_module(cpu_topology, extra, cluster)

    result, failed = module({"expected_mode": "grouped", "expected_group_by": "socket"})
    assert failed is True
    assert result["msg"] == ("the published CPU topology does not match: "
                             "node node-a publishes devices grouped by numanode, the release asks for socket")
    result, failed = module({"expected_mode": "grouped", "expected_group_by": "numanode"})
    assert not failed and result["ansible_facts"]["dra_cpu_topology"]["group_by"] == "numanode"
