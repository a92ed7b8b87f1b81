# SPDX-License-Identifier: Apache-2.0
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.common import chart_values as cv


@pytest.mark.parametrize("version,key,affinity", [
    ("0.2.0", "args", False),
    ("0.2.9", "args", False),
    ("0.3.0-rc.1", "driverConfig", True),  # a 0.3.0 pre-release has the 0.3.0 layout
    ("0.3.0", "driverConfig", True),
    ("0.4.1", "driverConfig", True),
    ("1.0.0", "driverConfig", True),
    ("", "driverConfig", True),
    (None, "driverConfig", True),
])
def test_values_key(version, key, affinity):
    assert cv.values_key(version) == key
    assert cv.supports_node_affinity(version) is affinity


def test_values_key_invalid():
    with pytest.raises(ValueError):
        cv.values_key("latest")


def test_build_values_020():
    assert cv.build_values("0.2.0", "0-1", "socket", "grouped") == {
        "args": {"reservedCPUs": "0-1", "groupBy": "socket", "cpuDeviceMode": "grouped"}}


def test_build_values_030_omits_empty_group_by():
    assert cv.build_values("0.3.0", "0-1", "", "individual") == {
        "driverConfig": {"reservedCPUs": "0-1", "cpuDeviceMode": "individual"}}


def test_user_values_merged_last():
    values = cv.build_values("0.3.0", "0-1", "numanode", "grouped",
                             user_values={"driverConfig": {"reservedCPUs": "0-3"},
                                          "image": {"tag": "v0.3.0"}, "tolerations": []})
    assert values == {"driverConfig": {"reservedCPUs": "0-3", "groupBy": "numanode", "cpuDeviceMode": "grouped"},
                      "image": {"tag": "v0.3.0"}, "tolerations": []}


def test_affinity():
    aff = {"nodeAffinity": {"x": 1}}
    assert cv.build_values("0.3.0", "", affinity=aff)["affinity"] == aff
    with pytest.raises(ValueError):
        cv.build_values("0.2.0", "", affinity=aff)


def test_deep_merge_does_not_mutate():
    base = {"a": {"b": 1, "c": [1]}}
    over = {"a": {"c": [2], "d": {"e": 1}}}
    assert cv.deep_merge(base, over) == {"a": {"b": 1, "c": [2], "d": {"e": 1}}}
    assert base == {"a": {"b": 1, "c": [1]}}


@pytest.mark.parametrize("values, shape", [
    ({"driverConfig": {"reservedCPUs": "", "cpuDeviceMode": "grouped", "groupBy": "socket"}},
     {"mode": "grouped", "group_by": "socket"}),
    ({"args": {"reservedCPUs": "", "cpuDeviceMode": "individual"}}, {"mode": "individual", "group_by": ""}),
    # 0.3.0: a deprecated args key that is set wins over driverConfig (the chart's rule)
    ({"args": {"groupBy": "Machine"}, "driverConfig": {"cpuDeviceMode": "grouped", "groupBy": "numanode"}},
     {"mode": "grouped", "group_by": "machine"}),
    ({"args": {"groupBy": ""}, "driverConfig": {"groupBy": "socket"}}, {"mode": "", "group_by": "socket"}),
    ({}, {"mode": "", "group_by": ""}),
    (None, {"mode": "", "group_by": ""}),
    # a value the driver does not know is not expected (the driver refuses its config)
    ({"driverConfig": {"cpuDeviceMode": "pinned", "groupBy": "rack"}}, {"mode": "", "group_by": ""}),
])
def test_driver_shape_reads_the_release_values(values, shape):
    assert cv.driver_shape(values) == shape


def test_driver_shape_of_built_values_with_the_users_override():
    values = cv.build_values("0.3.0", group_by="socket", user_values={"driverConfig": {"groupBy": "machine"}})
    assert cv.driver_shape(values) == {"mode": "grouped", "group_by": "machine"}
