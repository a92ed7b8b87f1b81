# SPDX-License-Identifier: Apache-2.0
"""The values mapping read from the chart itself (issue 11 item 1), over chart files shaped like
upstream v0.1.0, v0.2.0, main and a chart with neither key (tests/unit/fixtures/chart_layout)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest
import yaml

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.chart import layout as cl
from ansible_collections.kubevirtci.dra_cpu.tests.unit.conftest import FIXTURES as UNIT_FIXTURES

FIXTURES = os.path.join(UNIT_FIXTURES, "chart_layout")
SETTINGS = {"reserved_cpus": "0-1", "group_by": "", "cpu_device_mode": "grouped"}


def load(name):
    d = os.path.join(FIXTURES, name)
    with open(os.path.join(d, "Chart.yaml")) as fh:
        meta = yaml.safe_load(fh)
    with open(os.path.join(d, "values.yaml")) as fh:
        values = yaml.safe_load(fh)
    schema = None
    if os.path.exists(os.path.join(d, "values.schema.json")):
        with open(os.path.join(d, "values.schema.json")) as fh:
            schema = json.load(fh)
    return meta, values, schema


def layout(name, ref="oci://r/dra-driver-cpu"):
    meta, values, schema = load(name)
    return cl.chart_layout(meta, values, schema, ref)


def test_v020_maps_onto_args_without_node_placement():
    lay = layout("v0.2.0")
    assert lay["values_key"] == "args" and lay["source"] == "chart"
    assert lay["node_selector"] is False and lay["affinity"] is False
    assert cl.release_values(lay, dict(SETTINGS, group_by="socket")) == {
        "args": {"reservedCPUs": "0-1", "cpuDeviceMode": "grouped", "groupBy": "socket"}}


def test_main_maps_onto_driver_config_read_from_the_bundled_schema():
    # main's Chart.yaml still says 0.2.0: the version rule would pick args and the driver would
    # hand out the reserved CPUs; the chart says driverConfig
    lay = layout("main")
    assert lay["values_key"] == "driverConfig"
    assert "reservedCPUs" in lay["keys"] and "sysfsOverlay" in lay["keys"]
    assert lay["node_selector"] is True and lay["affinity"] is True
    assert cl.release_values(lay, SETTINGS) == {"driverConfig": {"reservedCPUs": "0-1", "cpuDeviceMode": "grouped"}}


def test_main_without_schema_takes_the_driver_config_keys():
    meta, values, _schema = load("main")
    lay = cl.chart_layout(meta, values, None)
    assert lay["values_key"] == "driverConfig" and "groupBy" in lay["keys"]


def test_v010_shape_has_no_group_by_key():
    lay = layout("v0.1.0")
    assert lay["values_key"] == "args"
    assert cl.release_values(lay, SETTINGS)["args"]["reservedCPUs"] == "0-1"
    with pytest.raises(cl.ChartLayoutError) as exc:
        cl.release_values(lay, dict(SETTINGS, group_by="socket"))
    assert str(exc.value) == ("chart oci://r/dra-driver-cpu 0.1.0 has no value args.groupBy, which the role "
                              "must set; nothing was installed")


def test_chart_with_neither_key_fails_naming_chart_version_and_key():
    lay = layout("neither", "oci://r/other")
    assert lay["values_key"] is None
    with pytest.raises(cl.ChartLayoutError) as exc:
        cl.release_values(lay, SETTINGS)
    assert "oci://r/other 1.0.0" in str(exc.value) and "driverConfig.reservedCPUs" in str(exc.value)


def test_user_values_merge_last_and_node_selector_only_where_the_chart_has_it():
    user = {"nodeSelector": {"kubernetes.io/os": "linux"}, "args": {"logLevel": 6}}
    lay = layout("v0.2.0")
    assert cl.release_values(lay, SETTINGS, user)["args"]["logLevel"] == 6
    assert cl.node_placement(lay, user) == {}
    assert cl.node_placement(layout("main"), user) == {"kubernetes.io/os": "linux"}


@pytest.mark.parametrize("name,image,user,expected", [
    ("v0.2.0", "", {}, "staging.example/dra-driver-cpu:v0.2.0"),
    ("main", "", {}, "registry.example/dra-driver-cpu/dra-driver-cpu:v0.2.0"),
    ("main", "mirror.local:5000/dra/driver:v9", {}, "mirror.local:5000/dra/driver:v9"),
    ("main", "mirror.local:5000/dra/driver", {}, "mirror.local:5000/dra/driver:v0.2.0"),
    ("v0.2.0", "", {"image": {"tag": "v0.2.1"}}, "staging.example/dra-driver-cpu:v0.2.1"),
    ("neither", "", {}, "registry.example/other:1.0"),
])
def test_image_the_release_will_run(name, image, user, expected):
    meta, values, schema = load(name)
    lay = cl.chart_layout(meta, values, schema)
    if lay["values_key"] is None:
        vals = user
    else:
        vals = cl.release_values(lay, SETTINGS, user, image)
    assert cl.image_of(values, meta, vals) == expected


def test_image_override_goes_through_image_keys():
    vals = cl.release_values(layout("v0.2.0"), SETTINGS, {}, "reg:5000/x/driver:v1")
    assert vals["image"] == {"repository": "reg:5000/x/driver", "tag": "v1"}
    lay = dict(layout("v0.2.0"), image_keys=["repository"])
    with pytest.raises(cl.ChartLayoutError, match="has no value image.tag"):
        cl.release_values(lay, SETTINGS, {}, "reg/x:v1")
    with pytest.raises(cl.ChartLayoutError, match="dra_cpu_image"):
        cl.release_values(layout("main"), SETTINGS, {}, "reg/x@sha256:abc")


@pytest.mark.parametrize("version,key,placement", [("0.2.0", "args", False), ("0.3.0", "driverConfig", True),
                                                   ("", "driverConfig", True)])
def test_fallback_is_the_version_rule_and_says_so(version, key, placement):
    lay = cl.fallback_layout(version, "oci://r/c")
    assert lay["values_key"] == key and lay["node_selector"] is placement
    assert "version rule" in cl.report_line(lay)


def test_report_line():
    assert cl.report_line(layout("v0.2.0")) == ("values mapped onto args.* (from chart); "
                                                "chart has no nodeSelector/affinity")
    assert cl.report_line(layout("main")).endswith("chart has nodeSelector, affinity")
