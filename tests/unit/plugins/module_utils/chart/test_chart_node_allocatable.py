# SPDX-License-Identifier: Apache-2.0
"""chart/layout.py's release_values with dra_cpu_node_allocatable_mapping (KEP-5517): on, it sets
driverConfig.publishNodeAllocatableResourceMapping and refuses a chart without that key, naming the
variable, the value and the chart; off, it sets nothing (helm's upgrade then drops an earlier true)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import os

import pytest

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.chart import layout as cl
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.chart import stage
from ansible_collections.kubevirtci.dra_cpu.tests.unit.plugins.module_utils.chart.test_chart_layout import (
    FIXTURES, SETTINGS, layout, load)

ON = dict(SETTINGS, node_allocatable_mapping=True)


def test_on_maps_onto_the_driver_config_key():
    assert cl.release_values(layout("main"), ON) == {"driverConfig": {
        "reservedCPUs": "0-1", "cpuDeviceMode": "grouped", "publishNodeAllocatableResourceMapping": True}}


def test_off_sets_nothing():
    values = cl.release_values(layout("main"), dict(SETTINGS, node_allocatable_mapping=False))
    assert "publishNodeAllocatableResourceMapping" not in values["driverConfig"]
    assert cl.release_values(layout("v0.2.0"), dict(SETTINGS, node_allocatable_mapping=False)) == {
        "args": {"reservedCPUs": "0-1", "cpuDeviceMode": "grouped"}}


def test_a_chart_with_args_only_is_refused_naming_variable_value_and_chart():
    with pytest.raises(cl.ChartLayoutError) as exc:
        cl.release_values(layout("v0.2.0", ref="oci://r/dra-driver-cpu"), ON)
    text = str(exc.value)
    assert text.startswith("dra_cpu_node_allocatable_mapping: true needs the chart value "
                           "driverConfig.publishNodeAllocatableResourceMapping, which chart oci://r/dra-driver-cpu 0.2.0 "
                           "does not have (its driver settings are args.*); nothing was installed")


def test_a_driver_config_chart_whose_schema_lacks_the_key_is_refused():
    meta, values, schema = load("main")
    schema = copy.deepcopy(schema)
    found = []

    def drop(node):
        if isinstance(node, dict):
            props = node.get("properties")
            if isinstance(props, dict) and props.pop("publishNodeAllocatableResourceMapping", None) is not None:
                found.append(True)
            for value in node.values():
                drop(value)
        elif isinstance(node, list):
            for value in node:
                drop(value)
    drop(schema)
    assert found, "the fixture's schema names the key"
    lay = cl.chart_layout(meta, values, schema, "oci://r/c")
    assert lay["values_key"] == "driverConfig" and "publishNodeAllocatableResourceMapping" not in lay["keys"]
    with pytest.raises(cl.ChartLayoutError, match="which chart oci://r/c .* does not have .its driver settings are "
                                                  "driverConfig"):
        cl.release_values(lay, ON)
    # off, the same chart is fine
    assert cl.release_values(lay, SETTINGS)["driverConfig"]["reservedCPUs"] == "0-1"


def test_the_version_rule_fallback():
    assert cl.release_values(cl.fallback_layout("0.3.0"), ON)["driverConfig"][
        "publishNodeAllocatableResourceMapping"] is True
    with pytest.raises(cl.ChartLayoutError):
        cl.release_values(cl.fallback_layout("0.2.0"), ON)


def _stage(path, mapping):
    args = {"path": os.path.join(FIXTURES, path), "chart": "oci://r/dra-driver-cpu", "reserved_cpus": "0-1",
            "node_allocatable_mapping": mapping}
    p = ArgumentSpecValidator(stage.argument_spec()).validate(args).validated_parameters
    return stage.chart_result(p)


def test_the_stage_passes_the_option_through():
    got = _stage("main", True)
    assert "failed" not in got, got.get("msg")
    assert got["release_values"]["driverConfig"]["publishNodeAllocatableResourceMapping"] is True
    got = _stage("v0.2.0", True)
    assert got["failed"] is True and got["msg"].startswith("dra_cpu_node_allocatable_mapping: true needs")
    assert "release_values" not in got
    assert "failed" not in _stage("v0.2.0", False)
