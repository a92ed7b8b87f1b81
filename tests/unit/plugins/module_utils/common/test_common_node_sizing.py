# SPDX-License-Identifier: Apache-2.0
"""kubevirtci's node sizing rule, the one home validate and topology call."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.common import node_sizing as ns
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology import sizing
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.validate.settings import validate_inputs


def test_expected_cells_reference():
    assert ns.expected_cells(12, 2, [0, 1]) == [
        {"id": 0, "cpus": "0-5", "reserved": "0-1", "allocatable": "2-5", "allocatable_cpus": 4},
        {"id": 1, "cpus": "6-11", "reserved": "", "allocatable": "6-11", "allocatable_cpus": 6},
    ]
    with pytest.raises(ns.UnevenSplit) as exc:
        ns.expected_cells(12, 5)
    assert str(exc.value) == "12 vCPUs cannot be split evenly over 5 NUMA cells"
    with pytest.raises(ValueError):
        ns.expected_cells(0, 2)


def test_split_and_reserved_outside():
    assert ns.splits_evenly(12, 2) and not ns.splits_evenly(12, 5)
    assert ns.reserved_outside([0, 13, 12, 13], 12) == [12, 13]
    assert ns.reserved_outside([0, 11], 12) == []


@pytest.mark.parametrize("mode, group_by, numa", [
    ("individual", "", True), ("individual", "socket", True), ("grouped", "numanode", True),
    ("grouped", "socket", False), ("grouped", "machine", False), ("grouped", "", False), ("grouped", None, False),
])
def test_cells_are_numa_nodes(mode, group_by, numa):
    assert ns.cells_are_numa_nodes(mode, group_by) is numa


@pytest.mark.parametrize("vcpu, cells, reserved", [(12, 5, ""), (12, 2, "12-13"), (12, 2, "0-1")])
def test_validate_and_topology_agree_on_the_rule(vcpu, cells, reserved):
    """The same inputs are refused by both stages, or by neither."""
    settings, errors = validate_inputs({"num_vcpu": vcpu, "num_numa_nodes": cells, "reserved_cpus": reserved})
    sized = sizing.check_sizing({"nodes": {}}, cells, vcpu, settings["reserved_cpu_list"])
    refused = [p for p in sized if p["node"] is None and p["expected"] != "at least one node"]
    assert bool(errors) is bool(refused), (errors, sized)


@pytest.mark.parametrize("mode, group_by, numa", [
    ("grouped", "", True), ("grouped", "numanode", True), ("grouped", "socket", False), ("individual", "socket", True)])
def test_settings_say_whether_the_cells_are_numa_nodes(mode, group_by, numa):
    settings, errors = validate_inputs({"cpu_device_mode": mode, "group_by": group_by})
    assert errors == [] and settings["cells_are_numa_nodes"] is numa
