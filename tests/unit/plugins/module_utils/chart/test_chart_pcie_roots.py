# SPDX-License-Identifier: Apache-2.0
"""chart/layout.py's release_values with dra_cpu_expose_pcie_roots: on, it sets args.exposePCIeRoots on
every chart that has the key, also on main's (0.3.0), whose other settings go under driverConfig
(upstream main refuses the key in its config file); a chart without the key (0.1.0) is refused naming
the variable, the chart and its version; off, it sets nothing (the negative control)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.chart import layout as cl
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.chart import stage
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.common import chart_values as cv
from ansible_collections.kubevirtci.dra_cpu.tests.unit.plugins.module_utils.chart.test_chart_layout import (
    FIXTURES, SETTINGS, layout)

ON = dict(SETTINGS, expose_pcie_roots=True)


def test_the_one_mapping_names_the_key():
    assert cv.DRIVER_VALUES["expose_pcie_roots"] == "exposePCIeRoots" and "exposePCIeRoots" in cv.ARGS_ONLY


def test_on_a_v020_chart_it_goes_under_args_with_the_other_settings():
    assert cl.release_values(layout("v0.2.0"), ON) == {"args": {
        "reservedCPUs": "0-1", "cpuDeviceMode": "grouped", "exposePCIeRoots": True}}


def test_on_main_it_goes_under_args_beside_driver_config():
    assert cl.release_values(layout("main"), ON) == {
        "driverConfig": {"reservedCPUs": "0-1", "cpuDeviceMode": "grouped"}, "args": {"exposePCIeRoots": True}}


@pytest.mark.parametrize("chart", ["v0.2.0", "main"])
def test_off_sets_nothing(chart):
    values = cl.release_values(layout(chart), dict(SETTINGS, expose_pcie_roots=False))
    assert "exposePCIeRoots" not in str(values)


def test_a_chart_without_the_key_is_refused_naming_variable_chart_and_version():
    with pytest.raises(cl.ChartLayoutError) as exc:
        cl.release_values(layout("v0.1.0", ref="oci://r/dra-driver-cpu"), ON)
    assert str(exc.value).startswith(
        "dra_cpu_expose_pcie_roots: true needs the chart value args.exposePCIeRoots (the driver's "
        "--expose-pcie-roots), which chart oci://r/dra-driver-cpu 0.1.0 does not have; nothing was installed")
    # the same chart without the setting is fine
    assert cl.release_values(layout("v0.1.0"), SETTINGS)["args"]["reservedCPUs"] == "0-1"


def test_the_layout_lists_the_args_keys():
    assert "exposePCIeRoots" in layout("main")["args_keys"] and "exposePCIeRoots" in layout("v0.2.0")["args_keys"]
    assert "exposePCIeRoots" not in layout("v0.1.0")["args_keys"]
    assert layout("neither")["args_keys"] == []


def test_the_version_rule_fallback_has_it_under_args():
    assert cl.release_values(cl.fallback_layout("0.3.0"), ON)["args"] == {"exposePCIeRoots": True}
    assert cl.release_values(cl.fallback_layout("0.2.0"), ON)["args"]["exposePCIeRoots"] is True


def _stage(path, on):
    args = {"path": os.path.join(FIXTURES, path), "chart": "oci://r/dra-driver-cpu", "reserved_cpus": "0-1",
            "expose_pcie_roots": on}
    p = ArgumentSpecValidator(stage.argument_spec()).validate(args).validated_parameters
    return stage.chart_result(p)


def test_the_stage_passes_the_option_through():
    got = _stage("main", True)
    assert "failed" not in got, got.get("msg")
    assert got["release_values"]["args"]["exposePCIeRoots"] is True
    got = _stage("v0.1.0", True)
    assert got["failed"] is True and got["msg"].startswith("dra_cpu_expose_pcie_roots: true needs")
    assert "release_values" not in got
    assert "failed" not in _stage("v0.1.0", False)
