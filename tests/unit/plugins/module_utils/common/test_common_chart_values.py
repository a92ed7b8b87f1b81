# SPDX-License-Identifier: Apache-2.0
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest
import yaml

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.chart import stage
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.common import chart_values as cv
from ansible_collections.kubevirtci.dra_cpu.tests.unit.conftest import REPO


def _read(rel):
    with open(os.path.join(REPO, rel)) as fh:
        return fh.read()


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


def test_driver_values_reserved_cpus_always_set_the_others_only_when_they_say_something():
    assert cv.driver_values({"reserved_cpus": "0-1", "group_by": "socket", "cpu_device_mode": "grouped",
                             "node_allocatable_mapping": True}) == {
        "reservedCPUs": "0-1", "groupBy": "socket", "cpuDeviceMode": "grouped",
        "publishNodeAllocatableResourceMapping": True}
    assert cv.driver_values({"reserved_cpus": "", "group_by": "", "cpu_device_mode": "individual",
                             "node_allocatable_mapping": False}) == {
        "reservedCPUs": "", "cpuDeviceMode": "individual"}
    assert cv.driver_values({}) == {"reservedCPUs": ""}


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


def test_driver_shape_of_the_values_with_the_users_override():
    values = cv.deep_merge({"driverConfig": cv.driver_values({"group_by": "socket", "cpu_device_mode": "grouped"})},
                           {"driverConfig": {"groupBy": "machine"}})
    assert cv.driver_shape(values) == {"mode": "grouped", "group_by": "machine"}


@pytest.mark.parametrize("setting", sorted(cv.DRIVER_VALUES))
def test_adding_a_chart_value_touches_the_mapping_and_the_variables_docs_only(setting):
    """Each setting DRIVER_VALUES maps is a documented role variable, an option of the chart stage,
    and passed to it from validate's settings: the chart stage builds the values from the mapping."""
    variable = "dra_cpu_" + setting
    specs = yaml.safe_load(_read("roles/dra_cpu/meta/argument_specs.yml"))["argument_specs"]["main"]["options"]
    assert variable in specs
    assert "| `%s` |" % variable in _read("docs/usage.md")
    assert setting in stage.argument_spec()
    task = yaml.safe_load(_read("roles/dra_cpu/tasks/chart.yml"))[0]["kubevirtci.dra_cpu.chart_layout"]
    assert "dra_cpu__settings.%s" % setting in task[setting]
    # the values the chart stage sets for the setting come from the mapping
    assert cv.DRIVER_VALUES[setting] in cv.driver_values({setting: True})
