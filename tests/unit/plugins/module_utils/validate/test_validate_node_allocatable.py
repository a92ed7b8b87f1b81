# SPDX-License-Identifier: Apache-2.0
"""validate: dra_cpu_node_allocatable_mapping normalised once into settings.node_allocatable_mapping
(a bool; a string of one as an environment variable brings it), and a chart_values key of the same
meaning that disagrees with it refused, naming both variables and the values."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.validate import settings as i
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.validate.checks import VARIABLES
from ansible_collections.kubevirtci.dra_cpu.tests.unit.plugins.module_utils.validate.test_validate_settings import run


def test_the_variable_name():
    assert VARIABLES["node_allocatable_mapping"] == "dra_cpu_node_allocatable_mapping"
    assert i.argument_spec()["node_allocatable_mapping"]["default"] is False


@pytest.mark.parametrize("raw, want", [(None, False), (False, False), (True, True), ("true", True), (" Yes ", True),
                                       ("", False), ("false", False), ("0", False), ("on", True)])
def test_normalised_to_a_bool(raw, want):
    settings, errors = run(node_allocatable_mapping=raw)
    assert errors == [] and settings["node_allocatable_mapping"] is want


def test_not_a_boolean_names_the_variable_and_the_value():
    _settings, errors = run(node_allocatable_mapping="sometimes")
    assert errors == ["dra_cpu_node_allocatable_mapping: 'sometimes' is not a boolean; expected true or false"]


def test_default_is_off():
    settings, errors = run()
    assert errors == [] and settings["node_allocatable_mapping"] is False


@pytest.mark.parametrize("mapping, value, ok", [(True, True, True), (False, False, True),
                                                (False, True, False), (True, False, False)])
def test_chart_values_must_agree(mapping, value, ok):
    values = {"driverConfig": {"publishNodeAllocatableResourceMapping": value}}
    _settings, errors = run(node_allocatable_mapping=mapping, chart_values=values)
    if ok:
        assert errors == []
    else:
        assert errors == ["dra_cpu_chart_values: driverConfig.publishNodeAllocatableResourceMapping: %r disagrees with "
                          "dra_cpu_node_allocatable_mapping: %r; expected it set through "
                          "dra_cpu_node_allocatable_mapping only" % (value, mapping)]


@pytest.mark.parametrize("raw, want", [(None, False), (True, True), ("true", True), ("", False), ("false", False)])
def test_expose_pcie_roots_normalised_to_a_bool(raw, want):
    assert VARIABLES["expose_pcie_roots"] == "dra_cpu_expose_pcie_roots"
    assert i.argument_spec()["expose_pcie_roots"]["default"] is False
    settings, errors = run(expose_pcie_roots=raw)
    assert errors == [] and settings["expose_pcie_roots"] is want


@pytest.mark.parametrize("on, value, ok", [(True, True, True), (False, False, True),
                                           (False, True, False), (True, False, False)])
def test_chart_values_args_expose_pcie_roots_must_agree(on, value, ok):
    _settings, errors = run(expose_pcie_roots=on, chart_values={"args": {"exposePCIeRoots": value}})
    if ok:
        assert errors == []
    else:
        assert errors == ["dra_cpu_chart_values: args.exposePCIeRoots: %r disagrees with dra_cpu_expose_pcie_roots: "
                          "%r; expected it set through dra_cpu_expose_pcie_roots only" % (value, on)]
